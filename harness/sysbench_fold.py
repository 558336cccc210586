"""Does taking the warm-up in the window's own sysbench run change what cpu and memory measure?

The campaign runs a sysbench variant's warm-up as the first seconds of the measured window's
run where that was shown to measure the same (``SysbenchBenchmark.folded``, ``unfolded``): one
run of warm-up + omitted start + window + the tail second, its first reports flagged. The
alternative is two runs, a warm-up run (its window and tail second) and then the window's run
(omitted start, window, tail second). This bench measures both for any variant. Both arms here
are the benchmark's own argv (``client_argv``) and parser, natively on this machine: per round,
each (variant, arm) once, a variant's arms back to back in a seeded random order, so a drift of
the machine hits both alike. ``--null-arm`` adds the two-run arm again, as a third arm: what it
differs from itself by is the floor under any difference this design can resolve.

Per variant the value of a window is the campaign's per-run headline (the median of its
per-second reports); the rounds' paired log ratios one-run/two-run give the geometric mean
ratio, its 95 % t interval and the study's verdict against +-2 % (``pipeline.analysis.stats``:
TOST, equivalent when the 90 % interval lies inside 0.98..1.02). Also each arm's wall time per
step: what folding saves.

The windows are the study profile's (conf/profiles/study.yaml: 1 s warm-up, 5 s window after
1 s omitted, ~17 s a round per variant). Single-thread variants run pinned to one CPU (the
last), all-threads ones unpinned, the same in both arms. Needs no lab and no root; every run
is bounded by --time and a timeout. Traffic: none.

    python -m harness.sysbench_fold                          # cpu 1thread, memory write
    python -m harness.sysbench_fold --variants cpu:1thread,cpu:allthreads,memory:read
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness._paired import paired_ratio  # noqa: E402
from pipeline.benchmarks import BENCHMARKS, Window  # noqa: E402
from pipeline.benchmarks.sysbench import (  # noqa: E402
    SYSBENCH,
    SysbenchBenchmark,
    folded_window,
)
from pipeline.params import PROFILES_DIR, read_yaml  # noqa: E402

MARGIN = 0.02
ARMS = ("one run", "two runs")


def study_windows(benchmark: str) -> tuple[Window, Window]:
    """The study profile's warm-up and measured windows for ``benchmark``."""
    profile = read_yaml(ROOT / PROFILES_DIR / "study.yaml", ROOT)
    entry = profile[benchmark]
    warm = Window(float(entry["warmup_seconds"]), 0.0, warmup=True)
    return warm, Window(float(entry["seconds"]), float(entry.get("omit_seconds", 0.0)))


def parse_variants(text: str) -> list[tuple[str, str]]:
    """``"cpu:1thread,memory:write"`` -> [("cpu", "1thread"), ("memory", "write")]; a name that
    is not a sysbench benchmark's variant is an error naming the known ones."""
    known = {
        (name, v) for name, cls in BENCHMARKS.items() if issubclass(cls, SysbenchBenchmark)
        for v in cls.variants if v != "compile"  # its warm-up is not sysbench
    }  # fmt: skip
    wanted = [tuple(item.strip().split(":", 1)) for item in text.split(",") if item.strip()]
    unknown = [":".join(w) for w in wanted if w not in known]
    if unknown or not wanted:
        names = ", ".join(sorted(":".join(k) for k in known))
        raise ValueError(f"unknown variants {unknown or text!r}: pick from {names}")
    return wanted


class Runner:
    """One benchmark variant's sysbench runs, with its argv and parser."""

    def __init__(self, benchmark: str, variant: str) -> None:
        self.bench = BENCHMARKS[benchmark]()
        self.variant = variant
        self.bench.host_cpus = os.cpu_count()  # cpu's allthreads: prepare() reads nproc
        self.pin = ["taskset", "-c", str(max(os.sched_getaffinity(0)))] if (
            "1thread" in variant or benchmark == "memory") else []  # fmt: skip
        self.warm, self.measured = study_windows(benchmark)

    def _run(self, window: Window) -> str:
        argv = self.pin + self.bench.client_argv(self.variant, "", window, "host")
        timeout = self.bench.client_timeout(window, "host", self.variant)
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if out.returncode != 0:
            raise SystemExit(f"sysbench exited {out.returncode}: {out.stdout[-400:]}{out.stderr}")
        return out.stdout

    def step(self, arm: str) -> tuple[float, float]:
        """One step as the campaign takes it in ``arm``: (the window's headline, wall s)."""
        start = time.perf_counter()
        if arm == "one run":
            folded = folded_window(self.warm, self.measured)  # as if the variant folded
            if folded is None:
                raise SystemExit(f"{self.variant}: a warm-up of whole seconds is needed")
            _, window = self.bench.split_folded(self.variant, self._run(folded), self.warm, folded)
        else:
            self.bench.parse(self.variant, self._run(self.warm), self.warm)
            window = self.bench.parse(self.variant, self._run(self.measured), self.measured)
        return float(np.median([s.value for s in window])), time.perf_counter() - start


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="harness.sysbench_fold")
    parser.add_argument("--rounds", type=int, default=20, help="windows per variant and arm")
    parser.add_argument("--variants", default="cpu:1thread,memory:write")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--null-arm", action="store_true",
                        help="a control arm: two runs again, the machine's own noise")
    args = parser.parse_args(argv)
    if not 2 <= args.rounds <= 200:
        parser.error("--rounds must be 2..200")
    try:
        variants = parse_variants(args.variants)
    except ValueError as exc:
        parser.error(str(exc))
    if shutil.which(SYSBENCH) is None:
        print(f"{SYSBENCH} is missing: run `make setup` (it installs sysbench)")
        return 1
    arms = [*ARMS, *(["two runs again"] if args.null_arm else [])]
    runners = {v: Runner(*v) for v in variants}
    rng = random.Random(args.seed)
    values = {(v, a): [] for v in variants for a in arms}
    walls = {(v, a): [] for v in variants for a in arms}
    for round_ in range(args.rounds):
        for v in rng.sample(variants, len(variants)):  # a variant's arms back to back
            for arm in rng.sample(arms, len(arms)):
                value, wall = runners[v].step("two runs" if arm == "two runs again" else arm)
                values[v, arm].append(value)
                walls[v, arm].append(wall)
        print(f"round {round_ + 1}/{args.rounds}: " + "; ".join(
            f"{':'.join(v)} " + "/".join(f"{values[v, a][-1]:,.1f}" for a in arms)
            for v in variants), flush=True)  # fmt: skip
    warm, measured = study_windows("cpu")
    print(f"summary: {args.rounds} rounds per variant and arm, natively, the arms of a variant "
          f"back to back in random order (seed {args.seed}); the study profile's windows "
          f"(cpu: {warm.seconds:g} s warm-up, {measured.seconds:g} s after "
          f"{measured.omit_seconds:g} s omitted); values: each window's median per-second rate")
    for v in variants:
        label = ":".join(v)
        for arm in [a for a in arms if a != "two runs"]:
            mine, base = values[v, arm], values[v, "two runs"]
            ratio = paired_ratio(mine, base, MARGIN, higher_is_better=True)
            print(f"summary: {label} {arm}/two runs {ratio}; medians {np.median(mine):,.2f} / "
                  f"{np.median(base):,.2f}")  # fmt: skip
        one, two = (np.median(walls[v, a]) for a in ARMS)
        print(f"summary: {label} wall per step: one run {one:.2f} s, two runs {two:.2f} s "
              f"({two - one:.2f} s, {1 - one / two:.0%} less)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
