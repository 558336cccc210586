"""Measurement duty cycle of the campaigns in a raw data directory.

Every collection session records its wall time and the seconds its tools spent inside load
windows (warm-up, omitted start and measured window; a tool's own start-up excluded) in
`data/raw/<benchmark>/<environment>/campaign.json` (see `pipeline.collect.campaign.duty_cycle`).
This prints them per campaign and overall, with where the rest of the time went, and the
three-way split of the wall time: the measured windows the analysis keeps; the time the tool
itself needs beyond them (warm-ups, omitted starts, its own fixed start-up such as sockperf's
start-up sleep), which no harness can remove; and the harness (SSH, deploying and removing modes,
image checks, host facts, waits), whose share of each campaign's wall time should stay under 5 %.
A scenario benchmark's (cold start, orchestration, footprint, density, lb) timed spans count as
kept; the untimed steps it needs between them and measures itself (`Outcome.fixed_s`: cold
start's removals between starts, orchestration's removals, scale-backs and settling and its
teardown, footprint's and density's warm-up and final removal) as the tool's own time; the rest
as harness.

Datasets collected before that record existed are estimated from their run rows instead (each
row's start and end, windows from the profile's lengths); such lines are marked `estimated`
and exclude the preparation time, so they overstate the duty cycle slightly.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.analysis import interference  # noqa: E402
from pipeline.benchmarks import BENCHMARKS  # noqa: E402
from pipeline.benchmarks.base import Window  # noqa: E402
from pipeline.collect.campaign import Profile  # noqa: E402

GOAL = 0.85
HARNESS_GOAL = 0.05  # the harness's share of a campaign's wall time, at most


def from_record(path: Path) -> dict:
    return {"source": "recorded", **json.loads(path.read_text())}


def from_runs(dataset: Path, benchmark: str, profile: dict) -> dict:
    """Estimate from run rows: sum of each row's load windows over first start to last end."""
    runs = pq.read_table(dataset / "runs.parquet").to_pandas()
    bench = BENCHMARKS[benchmark]()
    p = profile
    warm = Window(p.get("warmup_seconds", 0.0), 0.0, p.get("warmup_count"), warmup=True)
    measured = Window(p["seconds"], p.get("omit_seconds", 0.0), p.get("count"))
    warms_up = Profile(p["runs"], measured.seconds, measured.omit_seconds, warm.seconds,
                       count=measured.count, warmup_count=warm.count).warms_up  # fmt: skip
    window_s = 0.0
    for row in runs[runs["status"] == "ok"].itertuples():
        folded = bench.folded(row.variant, warm, measured) if warms_up else None
        if folded is not None:  # as Campaign: one run holds both
            window_s += bench.load_seconds(folded, row.path)
        else:
            window_s += bench.load_seconds(warm, row.path) if warms_up else 0.0
            window_s += bench.load_seconds(measured, row.path)
    wall = (runs["ended_at"].max() - runs["started_at"].min()).total_seconds()
    loop = (runs["ended_at"] - runs["started_at"]).dt.total_seconds().sum()
    return {
        "source": "estimated",
        "campaign": runs["campaign"].iloc[0],
        "wall_s": wall,
        "window_s": window_s,
        "steps": len(runs),
        "per_step_overhead_s": (loop - window_s) / len(runs),
        "duty_cycle": window_s / wall,
    }


def ceiling(window_s: float, steps: int, benchmark: str) -> float | None:
    """The duty cycle left if the harness took no time at all: the windows against the windows
    plus the tool's own fixed time in every client run (`Benchmark.tool_fixed_seconds`); None
    when the tool has none."""
    bench = BENCHMARKS.get(benchmark)
    if bench is None or not bench.tool_fixed_seconds or not steps:
        return None
    runs = steps * (1 if bench.warmup_in_window else 2)  # a separate warm-up run otherwise
    return window_s / (window_s + runs * bench.tool_fixed_seconds)


def report(raw_dir: Path, profile: dict | None) -> list[dict]:
    """A row per campaign under ``raw_dir``: each benchmark's (``<benchmark>/<environment>``)
    and the instrument check's and the WAN calibration's (deeper, named with their collection
    as the interference table names them); earlier campaigns moved aside are not read."""
    rows = []
    for runs, parts in interference.campaigns(raw_dir):
        dataset = runs.parent
        benchmark, environment = parts[-3], parts[-2]  # <...>/<benchmark>/<env>/runs.parquet
        name = interference.campaign_label(benchmark, parts, environment)
        record = dataset / "campaign.json"
        if record.exists():
            rows.append({"benchmark": name, "tool_of": benchmark, **from_record(record)})
        elif profile is not None and benchmark in BENCHMARKS and name == benchmark:
            section = profile.get(benchmark, {})
            flat = {"runs": profile["runs"], "reps": profile.get("reps", 1), **section}
            rows.append({"benchmark": name, "tool_of": benchmark,
                         **from_runs(dataset, benchmark, flat)})  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raw-dir", type=Path, default=ROOT / "data" / "raw")
    parser.add_argument(
        "--profile-json",
        help="the profile the data was collected with, as JSON (only for datasets without "
        "campaign.json), e.g. conf/profiles/study.yaml",
    )
    args = parser.parse_args(argv)
    profile = json.loads(args.profile_json) if args.profile_json else None
    rows = report(args.raw_dir, profile)
    if not rows:
        print(f"duty cycle: no collected dataset under {args.raw_dir} (run `dvc repro` first)")
        return 0
    frame = pd.DataFrame(rows)
    w = max(16, int(frame["benchmark"].str.len().max()))  # the name column's width
    print(f"duty cycle (goal >= {GOAL}): seconds inside load windows / wall seconds")
    for r in frame.to_dict("records"):
        print(
            f"  {r['benchmark']:<{w}} {r['duty_cycle']:5.2f}  {r['window_s']:7.0f} s of "
            f"{r['wall_s']:7.0f} s, {r['steps']:4d} measurements, "
            f"{r['per_step_overhead_s']:4.1f} s overhead each  [{r['source']}]"
        )
        if pd.notna(r.get("client_s")):  # where the overhead went (older records lack it)
            steps = r["steps"]
            # the mean window per measurement that would reach the goal at this overhead
            needed = GOAL / (1 - GOAL) * (r["wall_s"] - r["window_s"]) / steps
            print(
                f"  {'':<{w}}        servers {(r['deploy_s'] + r['stop_s']) / steps:4.2f} s, "
                f"client commands beyond their windows {r['client_overhead_s'] / steps:4.2f} s, "
                f"other {r['other_s'] / steps:4.2f} s per measurement; goal needs windows of "
                f"{needed:.1f} s (now {r['window_s'] / steps:.1f} s)"
            )
        if pd.notna(r.get("harness_s")):
            wall = r["wall_s"]
            share = r["harness_s"] / wall
            print(
                f"  {'':<{w}}        split: kept windows {r['kept_s'] / wall:4.0%}, tool-fixed "
                f"{r['fixed_s'] / wall:4.0%} (warm-ups, omitted starts, the tool's own start-up), "
                f"harness {share:4.0%} ({'meets' if share <= HARNESS_GOAL else 'ABOVE'} goal "
                f"<= {HARNESS_GOAL:.0%})"
            )
        if (cap := ceiling(r["window_s"], r["steps"], r["tool_of"])) is not None:
            fixed = BENCHMARKS[r["tool_of"]].tool_fixed_seconds
            print(
                f"  {'':<{w}}        ceiling {cap:.2f}: {BENCHMARKS[r['tool_of']].tool}'s own "
                f"{fixed:.2f} s per run outside its window, with no harness time at all"
            )
    total = frame["window_s"].sum() / frame["wall_s"].sum()
    print(f"  {'all campaigns':<{w}} {total:5.2f}  {'meets' if total >= GOAL else 'BELOW'} goal")
    each = ", ".join(f"{b} {d:.2f}" for b, d in zip(frame["benchmark"], frame["duty_cycle"],
                                                    strict=True))
    verdict = "meets" if total >= GOAL else "BELOW"
    print(f"summary: duty cycle {total:.2f} over all campaigns ({verdict} goal >= {GOAL}): {each}")
    if "harness_s" in frame and frame["harness_s"].notna().any():
        split = frame[frame["harness_s"].notna()]
        shares = split["harness_s"] / split["wall_s"]
        over = [b for b, x in zip(split["benchmark"], shares, strict=True) if x > HARNESS_GOAL]
        each = ", ".join(f"{b} {x:.0%}" for b, x in zip(split["benchmark"], shares, strict=True))
        print(f"summary: harness share of wall time (goal <= {HARNESS_GOAL:.0%} per campaign): "
              f"{each}; above the goal: {', '.join(over) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
