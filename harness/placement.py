"""Which CPU placement should the lab's network campaigns use? The same campaign under both.

The embedded lab's hosts share this machine's CPUs (pipeline/lab/cpus.py). "shared" leaves the
scheduler free; "split" puts the server's host on the first half of the CPUs and every client
host on the rest. This runs the same small campaign (native, docker-host, docker-bridge, dc
path, through `pipeline.collect.campaign.Campaign`) under each placement in turn, the order swapped
every round so a drift of the machine hits both, and prints per placement and mode: the
windows' median, min, max and coefficient of variation, how many windows fell far below their
mode's usual value (a dip: under 75 % of the mode's median over both placements, for latency
a p50 under 25 % of it, the client and server on one CPU), and docker-host / native per run.

Cases: throughput (iperf3 TCP received, 3 s windows after 1 s omitted) and latency (sockperf
UDP p50 round trip, the study profile's 10,000 measured round trips). A benchmark of the
study's method, not a timed test: it prints what it measured, it passes no verdict.

Needs root and the embedded lab (brought up here if it is down). Traffic stays in the lab.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness._lab import cases_on_the_lab, measured_samples, one_variant  # noqa: E402
from pipeline.benchmarks.latency import Latency  # noqa: E402
from pipeline.benchmarks.throughput import Throughput  # noqa: E402
from pipeline.collect.campaign import Profile  # noqa: E402

PLACEMENTS = ("shared", "split")
MODES_COMPARED = ["native", "docker-host", "docker-bridge"]
RUNS = 2  # runs per campaign: each mode's windows in two independent runs
CASES = {
    # benchmark, variant, profile, metric, per-window statistic, unit scale, unit,
    # a dip: below this fraction of the mode's median
    "throughput": (Throughput, "tcp", Profile(RUNS, 3.0, 1.0, 1.0),
                   "tcp_throughput_received", 0.5, 1e9, "Gbit/s", 0.75),
    "latency": (Latency, "udp", Profile(RUNS, 30.0, 0.0, 1.0, 1, 10_000, 1_000),
                "udp_rtt", 0.5, 1.0, "us p50", 0.25),
}  # fmt: skip


def campaign_windows(case: str, inv, placement: str, out: Path, seed: int) -> list[dict]:
    """One campaign under ``placement``: a row per (run, mode) window."""
    cls, variant, profile, metric, q, scale, _, _ = CASES[case]
    bench = one_variant(cls, variant)
    measured = measured_samples(bench, inv, profile, out, seed, MODES_COMPARED, metric, placement)
    return [
        {"placement": placement, "run": run, "mode": mode,
         "value": float(np.quantile(g["value"], q, method="inverted_cdf")) / scale}
        for (run, mode), g in measured.groupby(["run", "mode"])
    ]  # fmt: skip


def summarise(case: str, frame: pd.DataFrame) -> list[str]:
    """Print the per-placement table; return the summary lines."""
    *_, unit, dip_below = CASES[case]
    usual = frame.groupby("mode")["value"].median()
    frame = frame.assign(dip=frame["value"] < dip_below * frame["mode"].map(usual))
    table = frame.groupby(["placement", "mode"])["value"].agg(
        windows="count", median="median", min="min", max="max",
        cv=lambda v: v.std(ddof=1) / v.mean(),
    )  # fmt: skip
    table["dips"] = frame.groupby(["placement", "mode"])["dip"].sum()
    print(f"{case} ({unit}), dip: below {dip_below:.0%} of the mode's median over both")
    print(table.round(3).to_string())
    wide = frame.pivot_table(index=["placement", "round", "run"], columns="mode", values="value")
    ratio = (wide["docker-host"] / wide["native"]).groupby(level="placement")
    lines = []
    for placement in PLACEMENTS:
        t = table.loc[placement]
        r = ratio.get_group(placement)
        lines.append(
            f"placement {case} {placement}: "
            + ", ".join(f"{m} median {t.loc[m, 'median']:.4g} CV {t.loc[m, 'cv']:.1%} dips "
                        f"{int(t.loc[m, 'dips'])}/{int(t.loc[m, 'windows'])}" for m in t.index)
            + f"; docker-host / native per run {r.median():.3f} [{r.min():.2f}..{r.max():.2f}]"
        )  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8, help="campaigns per placement")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated subset")
    args = parser.parse_args(argv)
    cases, inv = cases_on_the_lab(parser, args.cases, CASES)
    print(f"placement: {' vs '.join(PLACEMENTS)}, {args.rounds} campaigns each of {RUNS} runs, "
          f"modes {', '.join(MODES_COMPARED)}, dc path, order swapped every round")  # fmt: skip
    summary = []
    with tempfile.TemporaryDirectory(prefix="co-placement-") as tmp:
        for case in cases:
            rows = []
            for i in range(args.rounds):
                for placement in PLACEMENTS if i % 2 == 0 else PLACEMENTS[::-1]:
                    out = Path(tmp) / f"{case}-{placement}-{i}"
                    got = campaign_windows(case, inv, placement, out, seed=i)
                    rows += [{**row, "round": i} for row in got]
                    print(f"  {case} round {i} {placement}: " + ", ".join(
                        f"{r['mode']} {r['value']:.4g}" for r in got), flush=True)  # fmt: skip
            summary += summarise(case, pd.DataFrame(rows))
    for line in summary:
        print(f"summary: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
