"""How fine a difference this machine lets the study see: the equivalence goal, the A/A
false-difference rate, and precision-planned runs against fixed runs of the same lab time.

Two cases on the embedded lab's dc path, with the study profile's windows: throughput (iperf3
TCP, the receiver's rate, 3 s windows after 1 s omitted) and latency (sockperf UDP, each run's
p50 round trip over 10,000 round trips). Each per-run value is the campaign's own headline (the
runs table's ``headline``), the value the planner and the analysis use.

``goal`` measures native, its A/A twin (``native-aa``) and docker-host in ``--runs`` fixed
runs of each case, and prints:

- for native-aa and docker-host against native, over every run: the ratio with its 95 % t
  interval of the paired per-run log ratios, and the study's verdict at the +-5 % margin
  (``stats.log_ratio_equivalence``);
- the runs the measured SD would need for that interval to sit inside +-5 %;
- the A/A false-difference rate: the runs cut into disjoint blocks of ``--block`` runs (the
  study profile's 3), each block one A/A comparison decided by the study's rule, and the share
  of them called a difference. Both cases together give the comparisons counted.

``planning`` measures the same modes plus docker-bridge and docker-nat, throughput only: a
precision-planned campaign (the profile's 3 runs as its pilot, then rounds of the comparisons
still wider than ``--target``, within ``--budget-min``), then a fixed campaign of as many runs
as fit in the lab time the planned one took, and prints each comparison's runs and half-width
under both, side by side.

A benchmark of the study's method on this machine, not a timed test: it prints what it measured
and passes no verdict of its own. Needs root and the embedded lab (brought up if it is down).
Traffic stays in the lab. Each step is bounded by the campaign's own timeouts.

    python -m harness.precision                          # both experiments
    python -m harness.precision --cases goal --runs 30
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness._lab import cases_on_the_lab, one_variant  # noqa: E402
from pipeline.analysis import stats  # noqa: E402
from pipeline.benchmarks.latency import Latency  # noqa: E402
from pipeline.benchmarks.throughput import Throughput  # noqa: E402
from pipeline.collect import planning  # noqa: E402
from pipeline.collect.campaign import Campaign, Profile  # noqa: E402
from pipeline.lab import cpus  # noqa: E402

MARGIN = 0.05
CONFIDENCE = 0.95
GOAL_MODES = ["native", "native-aa", "docker-host"]
PLANNING_MODES = ["native", "native-aa", "docker-host", "docker-bridge", "docker-nat"]
# case -> benchmark, variant, the study profile's window at `runs` runs, higher is better
CASES = {
    "throughput": (Throughput, "tcp", lambda runs: Profile(runs, 3.0, 1.0, 1.0), True),
    "latency": (Latency, "udp",
                lambda runs: Profile(runs, 30.0, 0.0, 1.0, 1, 10_000, 1_000), False),
}  # fmt: skip
EXPERIMENTS = ("goal", "planning")


def campaign(case: str, inv, runs: int, out: Path, seed: int, modes: list[str],
             plan: planning.Settings | None = None) -> tuple[pd.DataFrame, float]:  # fmt: skip
    """One campaign of ``case`` on the dc path: its per-run headlines (mode, run, value) and
    its wall time. A failed step stops the bench: a comparison with a hole is no comparison."""
    cls, variant, profile, _ = CASES[case]
    t0 = time.monotonic()
    Campaign(one_variant(cls, variant), inv, profile(runs), out, seed, modes, lambda _: None,
             ("dc",), placement="split", placer=cpus.place, planning=plan).run()  # fmt: skip
    wall = time.monotonic() - t0
    rows = pq.read_table(out / "runs.parquet").to_pandas()
    failed = rows[rows["status"] != "ok"]
    if len(failed):
        where = failed[["mode", "run", "reason"]].to_dict("records")
        raise RuntimeError(f"{case}: steps failed: {where}")
    return rows[["mode", "run", "headline"]].rename(columns={"headline": "value"}), wall


def paired(per_run: pd.DataFrame, mode: str, runs=None) -> tuple[np.ndarray, np.ndarray]:
    """The mode's and native's values in the runs both measured (of ``runs`` if given)."""
    wide = per_run.pivot_table(index="run", columns="mode", values="value", aggfunc="first")
    if runs is not None:
        wide = wide.loc[wide.index.isin(runs)]
    both = wide[[mode, "native"]].dropna()
    return both[mode].to_numpy(), both["native"].to_numpy()


def runs_for_margin(sd: float) -> int | None:
    """Runs whose 90 % interval (the equivalence test's) is at most half the margin wide on
    each side at SD ``sd``: room for an estimate up to half the margin off 1 to still be
    called equivalent."""
    level = stats.equivalence_level(CONFIDENCE)
    return planning.runs_needed(sd, math.log1p(MARGIN) / 2, level)


def goal(inv, runs: int, block: int, seed: int, work: Path) -> None:
    decided = []
    for case, (_, _, _, higher) in CASES.items():
        per_run, wall = campaign(case, inv, runs, work / f"goal-{case}", seed, GOAL_MODES)
        modes = ", ".join(GOAL_MODES)
        print(f"summary: goal {case}: {runs} runs of {modes} in {wall / 60:.1f} min")
        for mode in GOAL_MODES[1:]:
            x, y = paired(per_run, mode)
            eq = stats.log_ratio_equivalence(x, y, MARGIN, CONFIDENCE, higher)
            sd = float(np.std(np.log(x / y), ddof=1))
            need = runs_for_margin(sd)
            print(f"summary: goal {case} {mode}/native: {eq.ratio * 100:.1f}% "
                  f"[{eq.lo * 100:.1f}, {eq.hi * 100:.1f}] (95%), "
                  f"90% [{eq.lo_eq * 100:.1f}, {eq.hi_eq * 100:.1f}], n={eq.n_runs}, "
                  f"verdict at +-5%: {eq.verdict}; SD of log ratio {sd:.3f}; "
                  f"runs for a 90% interval of +-2.5%: {need}")  # fmt: skip
        all_runs = sorted(per_run["run"].unique())
        for start in range(0, len(all_runs) - block + 1, block):
            x, y = paired(per_run, "native-aa", all_runs[start : start + block])
            if len(x) < block:
                continue
            eq = stats.log_ratio_equivalence(x, y, MARGIN, CONFIDENCE, higher)
            decided.append({"case": case, "ratio": eq.ratio, "verdict": eq.verdict})
    aa = pd.DataFrame(decided)
    counts = aa["verdict"].value_counts().to_dict()
    false = counts.get("overhead", 0) + counts.get("faster", 0)
    print(
        f"summary: A/A in blocks of {block} runs: {len(aa)} comparisons, {counts}; "
        f"false-difference rate {false / len(aa) * 100:.1f}% ({false} of {len(aa)})"
    )
    for case, group in aa.groupby("case"):
        print(
            f"summary:   {case}: "
            + ", ".join(f"{r.ratio * 100:.1f}% {r.verdict[:5]}" for r in group.itertuples())
        )


def half_widths(per_run: pd.DataFrame) -> dict[str, tuple[int, float]]:
    """Each mode's (pairs, half-width of the 95 % interval of the mean log ratio to native)."""
    out = {}
    for mode in PLANNING_MODES[1:]:
        x, y = paired(per_run, mode)
        d = np.log(x / y)
        sd = float(d.std(ddof=1)) if len(d) > 1 else math.nan
        out[mode] = (len(d), planning.half_width(sd, len(d), CONFIDENCE))
    return out


def planned_vs_fixed(inv, target: float, budget_min: float, max_runs: int, seed: int,
                     work: Path) -> None:  # fmt: skip
    settings = planning.Settings(target, budget_min * 60.0, max_runs, CONFIDENCE)
    planned, wall_p = campaign("throughput", inv, 3, work / "planned", seed, PLANNING_MODES,
                               settings)  # fmt: skip
    steps = len(planned)
    per_step = wall_p / steps
    fixed_runs = max(3, round(wall_p / (per_step * len(PLANNING_MODES))))
    fixed, wall_f = campaign("throughput", inv, fixed_runs, work / "fixed", seed + 1,
                             PLANNING_MODES)  # fmt: skip
    record = json.loads((work / "planned" / "campaign.json").read_text()).get("planning", {})
    print(
        f"summary: planning throughput: planned {steps} steps in {wall_p / 60:.1f} min "
        f"(target +-{target * 100:g}%, budget {budget_min:g} min, max {max_runs} runs; "
        f"spent {record.get('spent_s', float('nan')) / 60:.1f} min beyond the pilot); "
        f"fixed {fixed_runs} runs, {len(fixed)} steps in {wall_f / 60:.1f} min"
    )
    a, b = half_widths(planned), half_widths(fixed)
    for mode in PLANNING_MODES[1:]:
        (na, ha), (nb, hb) = a[mode], b[mode]
        print(
            f"summary:   {mode}/native: planned {na} runs, half-width {ha * 100:.1f}% | "
            f"fixed {nb} runs, half-width {hb * 100:.1f}%"
        )
    worst_a = max(h for _, h in a.values())
    worst_b = max(h for _, h in b.values())
    print(f"summary:   widest half-width: planned {worst_a * 100:.1f}%, fixed {worst_b * 100:.1f}%")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(EXPERIMENTS))
    parser.add_argument("--runs", type=int, default=60, help="fixed runs of the goal (>= 3)")
    parser.add_argument("--block", type=int, default=3, help="runs per A/A comparison")
    parser.add_argument("--target", type=float, default=0.03, help="planning's half-width")
    parser.add_argument("--budget-min", type=float, default=8.0, help="planning's budget")
    parser.add_argument("--max-runs", type=int, default=15)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="keep the campaigns' data here")
    args = parser.parse_args(argv)
    if args.runs < 3 or args.block < 2 or args.runs < args.block:
        parser.error("--runs must be at least 3 and at least --block (at least 2)")
    chosen, inv = cases_on_the_lab(parser, args.cases, dict.fromkeys(EXPERIMENTS))
    with tempfile.TemporaryDirectory(prefix="co-precision-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        if "goal" in chosen:
            goal(inv, args.runs, args.block, args.seed, work)
        if "planning" in chosen:
            planned_vs_fixed(inv, args.target, args.budget_min, args.max_runs, args.seed, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
