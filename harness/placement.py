"""Which CPU placement should the lab's network campaigns use? The same campaigns under each.

The embedded lab's hosts share this machine's CPUs (pipeline/lab/cpus.py): "colocated" puts
every host on one CPU, "split" the server's host on the first half of the CPUs and every client
host on the rest, "shared" leaves the scheduler free. Each case runs the same small campaign
(through `pipeline.collect.campaign.Campaign`, dc path) under each placement of
``--placements`` in turn, the order rotated every round so a drift of the machine hits all of
them. While a campaign runs, a thread reads from /proc which CPUs the tools' threads run on
(`cpus.Watch`), so every line says where the tools really ran.

Cases:

- ``levels``: native sockperf, UDP and TCP, every round trip of a 0.55 s window (a time, not a
  count, so that a slow level still gives its windows). Per placement and protocol: the
  windows' median p50 round trip with its 95% distribution-free interval, their range and CV;
  the ratio of the placements' levels (paired by round, 95% t interval); whether the levels'
  windows overlap; and the threshold between them
  (their geometric midpoint), which the lab test tests/integration/test_placement_lab.py derives
  the same way. docs/validation.md ("CPU placement: the two latency levels") quotes it.
- ``latency``, ``throughput`` and ``http``: native, docker-host and docker-bridge (sockperf UDP
  p50 round trip; iperf3 TCP received, 3 s windows after 1 s omitted; the p50 latency of the
  http benchmark's 500 requests/s, 4 s windows after 1 s omitted: the study profile's). Per
  placement and mode: the windows' median, min, max and CV, how many fell far from their
  mode's usual value (a dip: under 75% of the mode's median under that placement, for the
  latencies a p50 under 25% of it), and docker-host / native and docker-bridge / native per
  run with their spread.

A benchmark of the study's method, not a timed test: it prints what it measured, it passes no
verdict. Needs root and the embedded lab (brought up here if it is down); run it under the
lab's lock (`flock /tmp/lab.lock`). Traffic stays in the lab.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness._lab import cases_on_the_lab  # noqa: E402
from pipeline.analysis import stats  # noqa: E402
from pipeline.benchmarks import Benchmark  # noqa: E402
from pipeline.benchmarks.http import Http  # noqa: E402
from pipeline.benchmarks.latency import Latency  # noqa: E402
from pipeline.benchmarks.throughput import Throughput  # noqa: E402
from pipeline.collect.campaign import Campaign, CampaignError, Profile  # noqa: E402
from pipeline.data import schema  # noqa: E402
from pipeline.lab import cpus  # noqa: E402

RUNS = 2  # runs per campaign: each mode's windows in two independent runs
LATENCY_WINDOW = Profile(RUNS, 30.0, 0.0, 1.0, 1, 10_000, 1_000)  # the study's round trips
# A level is measured over a time, not a count: on a loaded machine the cross-CPU level's mean
# round trip can exceed the 250 us a counted window allows (it then fails, see latency.py).
LEVEL_WINDOW = Profile(RUNS, 0.5, 0.0, 0.0)  # sockperf --time 1: 0.55 s logged, no warm-up run
# Each window once: one disturbed by the machine's other work is part of what a placement is
# compared on, not a window to measure again (Campaign's interference retries).
NO_RETRIES = {"interference_retries": 0}
CASES = {
    # benchmark, variants, modes, profile, per-window statistic, unit scale, unit,
    # a dip: below this fraction of the mode's median
    "levels": (Latency, ("udp", "tcp"), ["native"], LEVEL_WINDOW, 0.5, 1.0, "us p50", None),
    "latency": (Latency, ("udp",), ["native", "docker-host", "docker-bridge"], LATENCY_WINDOW,
                0.5, 1.0, "us p50", 0.25),
    "throughput": (Throughput, ("tcp",), ["native", "docker-host", "docker-bridge"],
                   Profile(RUNS, 3.0, 1.0, 1.0), 0.5, 1e9, "Gbit/s", 0.75),
    "http": (Http, ("1k",), ["native", "docker-host", "docker-bridge"],
             Profile(RUNS, 4.0, 1.0, 1.0), 0.5, 1.0, "us p50", 0.25),
}  # fmt: skip
# the per-window value's metric where it is not the benchmark's summary metric
METRIC = {"http": "http_latency"}


def campaign_windows(case: str, inv, placement: str, out: Path, seed: int) -> tuple[list, dict]:
    """One campaign under ``placement``: a row per (run, mode, variant) window, and the CPUs
    the tool's threads were seen on, per (lab host, command)."""
    cls, variants, modes, profile, q, scale, *_ = CASES[case]
    bench: Benchmark = cls()
    bench.variants = variants
    tool = Path(bench.binaries[0]).name[:15]
    with cpus.watching([tool]) as watch:
        try:
            Campaign(bench, inv, profile, out, seed, modes, lambda _: None, ("dc",),
                     placement=placement, placer=cpus.place,
                     interference=NO_RETRIES).run()  # fmt: skip
        except CampaignError as exc:  # a window that failed is a result here: counted
            print(f"  {case} under {placement}: {str(exc).splitlines()[0]}", flush=True)
    runs = pq.read_table(out / "runs.parquet").to_pandas()
    failed = [
        {"placement": placement, "run": r.run, "mode": r.mode, "variant": r.variant,
         "value": float("nan"), "failed": r.reason}
        for r in runs[runs["status"] != "ok"].itertuples()
    ]  # fmt: skip
    samples = schema.read_samples(out / "samples.parquet")
    measured = samples[~samples["warmup"]]
    metrics = {METRIC.get(case) or bench.summary_metric.format(variant=v) for v in variants}
    measured = measured[measured["metric"].isin(metrics)]
    rows = [
        {"placement": placement, "run": run, "mode": mode, "variant": variant,
         "value": float(np.quantile(g["value"], q, method="inverted_cdf")) / scale}
        for (run, mode, variant), g in measured.groupby(["run", "mode", "variant"])
    ]  # fmt: skip
    return rows + failed, watch.ran


def ran_on(ran: dict) -> str:
    """Where the tools ran, as a progress line says it: "node1 sockperf 1; dc-client ..."."""
    return "; ".join(f"{host or 'outside the lab'} {comm} {cpus.fmt(sorted(cpu))}"
                     for (host, comm), cpu in sorted(ran.items()))  # fmt: skip


def _cv(v: pd.Series) -> float:
    v = v.dropna()
    return float(v.std(ddof=1) / v.mean()) if len(v) > 1 else float("nan")


def levels(frame: pd.DataFrame, placements: list[str]) -> list[str]:
    """The ``levels`` case's table and summary lines: each placement's level per protocol."""
    lines = []
    for variant, by_variant in frame.groupby("variant"):
        level = {}
        for placement in placements:
            every = by_variant[by_variant["placement"] == placement]["value"]
            v, failed = every.dropna(), int(every.isna().sum())
            ci = stats.quantile_ci(v.to_numpy())
            level[placement] = ci.point
            lines.append(
                f"levels {variant} {placement}: p50 {ci.point:.1f} us [{ci.coverage:.0%}: "
                f"{ci.lo:.1f}, {ci.hi:.1f}] (windows {ci.n}, range {v.min():.1f}-{v.max():.1f}, "
                f"CV {_cv(v):.1%}; failed windows {failed})"
            )
            print(lines[-1])
        for a, b in zip(placements, placements[1:], strict=False):
            wide = by_variant.pivot_table(index=["round", "run"], columns="placement",
                                          values="value")  # fmt: skip
            r = stats.log_ratio_ci(wide[b].to_numpy(), wide[a].to_numpy())
            va, vb = (by_variant[by_variant["placement"] == p]["value"].dropna() for p in (a, b))
            low, high = (va, vb) if level[a] < level[b] else (vb, va)
            gap = high.min() / low.max()
            lines.append(
                f"levels {variant} {b} / {a}: {r.ratio:.2f} [{r.lo:.2f}, {r.hi:.2f}] "
                f"(paired windows {r.n_runs}); threshold (geometric midpoint) "
                f"{math.sqrt(level[a] * level[b]):.1f} us; "
                + (f"the levels do not overlap: the lower's slowest window is {gap:.2f}x "
                   f"below the higher's fastest" if gap > 1 else
                   f"the levels overlap (lower's slowest / higher's fastest {1 / gap:.2f})")
            )  # fmt: skip
    return lines


def compare(case: str, frame: pd.DataFrame, placements: list[str]) -> list[str]:
    """The ``latency`` and ``throughput`` cases' table and summary lines."""
    *_, unit, dip_below = CASES[case]
    usual = frame.groupby(["placement", "mode"])["value"].transform("median")
    frame = frame.assign(dip=frame["value"] < dip_below * usual)
    table = frame.groupby(["placement", "mode"])["value"].agg(
        windows="count", median="median", min="min", max="max", cv=_cv,
    )  # fmt: skip
    table["dips"] = frame.groupby(["placement", "mode"])["dip"].sum()
    table["failed"] = frame["value"].isna().groupby([frame["placement"], frame["mode"]]).sum()
    print(f"{case} ({unit}), dip: below {dip_below:.0%} of the mode's median in its placement")
    print(table.round(3).to_string())
    wide = frame.pivot_table(index=["placement", "round", "run"], columns="mode", values="value")
    lines = []
    for placement in placements:
        t = table.loc[placement]
        w = wide.loc[placement]
        ratios = []
        for mode in ("docker-host", "docker-bridge"):
            r = stats.log_ratio_ci(w[mode].to_numpy(), w["native"].to_numpy())
            ratios.append(f"{mode} / native {r.ratio:.3f} [{r.lo:.3f}, {r.hi:.3f}]")
        lines.append(
            f"placement {case} {placement}: "
            + ", ".join(f"{m} median {t.loc[m, 'median']:.4g} CV {t.loc[m, 'cv']:.1%} dips "
                        f"{int(t.loc[m, 'dips'])}/{int(t.loc[m, 'windows'])} failed "
                        f"{int(t.loc[m, 'failed'])}" for m in t.index)
            + "; per run " + ", ".join(ratios)
        )  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="campaigns per placement")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated subset")
    parser.add_argument("--placements", default="colocated,split",
                        help=f"comma-separated, of {', '.join(cpus.PLACEMENTS)}")  # fmt: skip
    args = parser.parse_args(argv)
    placements = args.placements.split(",")
    if set(placements) - set(cpus.PLACEMENTS) or len(placements) < 2:
        parser.error(f"--placements: two or more of {', '.join(cpus.PLACEMENTS)}")
    cases, inv = cases_on_the_lab(parser, args.cases, CASES)
    print(f"placement: {' vs '.join(placements)}, {args.rounds} campaigns each of {RUNS} runs, "
          f"dc path, order rotated every round; cases {', '.join(cases)}")  # fmt: skip
    summary = []
    with tempfile.TemporaryDirectory(prefix="co-placement-") as tmp:
        for case in cases:
            rows = []
            for i in range(args.rounds):
                k = i % len(placements)
                for placement in placements[k:] + placements[:k]:
                    out = Path(tmp) / f"{case}-{placement}-{i}"
                    got, ran = campaign_windows(case, inv, placement, out, seed=i)
                    rows += [{**row, "round": i} for row in got]
                    print(f"  {case} round {i} {placement}: " + ", ".join(
                        f"{r['mode']} {r['variant']} {r['value']:.4g}" if "failed" not in r
                        else f"{r['mode']} {r['variant']} failed" for r in got)
                        + f" (ran on: {ran_on(ran)})", flush=True)  # fmt: skip
            frame = pd.DataFrame(rows)
            summary += levels(frame, placements) if case == "levels" else compare(
                case, frame, placements)  # fmt: skip
    for line in summary:
        print(f"summary: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
