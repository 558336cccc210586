"""How fine a difference this machine lets the study see: the equivalence goal, the A/A
false-difference rate, and precision-planned runs against fixed runs of the same lab time.

Two cases on the embedded lab's dc path, with the study profile's windows: throughput (iperf3
TCP, the receiver's rate, 3 s windows after 1 s omitted) and latency (sockperf UDP, each run's
p50 round trip over 10,000 round trips). Each per-run value is the campaign's own headline (the
runs table's ``headline``), the value the planner and the analysis use.

``goal`` measures native, its A/A twin (``native-aa``) and docker-host in ``--runs`` fixed
runs of each case, and prints:

- for native-aa and docker-host against native: the ratio with its 95 % t interval of the
  paired per-run log ratios, and the study's verdict at the +-5 % margin
  (``stats.log_ratio_equivalence``), once over every run and once over the runs none of whose
  windows the interference watch flagged (params.yaml's thresholds);
- the runs the measured SD would need for the 90 % interval to leave room for equivalence;
- the A/A false-difference rate: the runs cut into disjoint blocks of ``--block`` runs (the
  study profile's 3), each block one A/A comparison decided by the study's rule, and the share
  of them called a difference, both ways. Both cases together give the comparisons counted.

``windows`` chooses the measured windows per run (the profiles' ``reps``) as Kalibera and
Jones choose repetitions per level: ``--window-runs`` runs of ``--windows`` windows each of
native, its A/A twin and docker-bridge in both cases; per comparison, the paired log ratio's
variation between runs and between the windows of a run (``planning.windows_per_run``), what a
run and a window cost in lab time (``costs``), and the windows per run that buy a given
precision in the least lab time, with an interval for it over the runs resampled.

``planning`` measures the same modes plus docker-bridge and docker-nat, throughput on the dc
path: a precision-planned campaign (the profile's 3 runs as its pilot, then rounds of the
comparisons still wider than ``--target``, within ``--budget-min``), then a fixed campaign of
the same lab time (``same_lab_time_runs``), and prints each comparison's runs and half-width
under both, side by side. ``planning-latency`` does the same for latency with native, its twin
and docker-bridge on the dc and Internet paths, whose comparisons differ in noise.

A benchmark of the study's method on this machine, not a timed test: it prints what it measured
and passes no verdict of its own. Needs root and the embedded lab (brought up if it is down).
Traffic stays in the lab. Each step is bounded by the campaign's own timeouts.

    python -m harness.precision                          # every experiment
    python -m harness.precision --cases goal --runs 30
    python -m harness.precision --cases windows --window-runs 10 --windows 3
    python -m harness.precision --report DIR             # re-read campaigns kept with --keep
"""

from __future__ import annotations

import argparse
import dataclasses
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
from pipeline import params  # noqa: E402
from pipeline.analysis import interference, stats  # noqa: E402
from pipeline.benchmarks.latency import Latency  # noqa: E402
from pipeline.benchmarks.throughput import Throughput  # noqa: E402
from pipeline.collect import planning  # noqa: E402
from pipeline.collect.campaign import Campaign, Profile  # noqa: E402
from pipeline.data import schema  # noqa: E402
from pipeline.lab import cpus  # noqa: E402

MARGIN = 0.05
CONFIDENCE = 0.95
GOAL_MODES = ["native", "native-aa", "docker-host"]
PLANNING_MODES = ["native", "native-aa", "docker-host", "docker-bridge", "docker-nat"]
WINDOWS_MODES = ["native", "native-aa", "docker-bridge"]
# planning experiment -> case, paths, modes: throughput's comparisons have about equal noise;
# latency's dc and Internet paths do not (the planner's allocation matters only then)
PLANNING = {
    "planning": ("throughput", ("dc",), PLANNING_MODES),
    "planning-latency": ("latency", ("dc", "internet"), WINDOWS_MODES),
}
# case -> benchmark, variant, the study profile's window at `runs` runs, higher is better
CASES = {
    "throughput": (Throughput, "tcp", lambda runs: Profile(runs, 3.0, 1.0, 1.0), True),
    "latency": (Latency, "udp",
                lambda runs: Profile(runs, 30.0, 0.0, 1.0, 1, 10_000, 1_000), False),
}  # fmt: skip
EXPERIMENTS = ("goal", *PLANNING, "windows")


def campaign(case: str, inv, runs: int, out: Path, seed: int, modes: list[str],
             plan: planning.Settings | None = None, reps: int = 1,
             paths: tuple[str, ...] = ("dc",)) -> float:  # fmt: skip
    """One campaign of ``case`` on ``paths`` into ``out`` (``reps`` measured windows per step);
    its wall time. A failed step stops the bench: a comparison with a hole is no
    comparison."""
    cls, variant, profile, _ = CASES[case]
    t0 = time.monotonic()
    chosen = dataclasses.replace(profile(runs), reps=reps)
    Campaign(one_variant(cls, variant), inv, chosen, out, seed, modes, lambda _: None,
             paths, placement="split", placer=cpus.place, planning=plan).run()  # fmt: skip
    return time.monotonic() - t0


def per_run(out: Path) -> pd.DataFrame:
    """A saved campaign's per-run headlines (mode, run, value) and whether the interference
    watch flagged the window (``flagged``: params.yaml's thresholds, pipeline.analysis.
    interference)."""
    rows = pq.read_table(out / "runs.parquet").to_pandas()
    failed = rows[rows["status"] != "ok"]
    if len(failed):
        where = failed[["mode", "run", "reason"]].to_dict("records")
        raise RuntimeError(f"{out.name}: steps failed: {where}")
    limits = params.load().raw["analysis"]  # checked, as every stage reads it
    flags = interference.flagged_windows(interference.flag(
        interference.windows(out), limits["interference_cpus"], limits["interference_steal"],
        limits["interference_probe"]))  # fmt: skip
    hit = flags[flags["flagged"]]
    flagged = set(zip(hit["run"], hit["mode"], hit["path"], strict=True))
    values = rows[["mode", "path", "run", "headline"]].rename(columns={"headline": "value"})
    values["flagged"] = [key in flagged for key in zip(values["run"], values["mode"],
                                                       values["path"], strict=True)]  # fmt: skip
    return values


def clean_runs(values: pd.DataFrame) -> list[int]:
    """The runs none of whose windows the watch flagged."""
    dirty = set(values.loc[values["flagged"], "run"])
    return sorted(set(values["run"]) - dirty)


def paired(values: pd.DataFrame, mode: str, runs=None) -> tuple[np.ndarray, np.ndarray]:
    """The mode's and native's values in the runs both measured (of ``runs`` if given), paired
    as every comparison of the study pairs them."""
    if runs is not None:
        values = values[values["run"].isin(runs)]
    both = stats._paired(values, mode, "native")  # noqa: SLF001 - the study's own pairing
    return both[:, 0], both[:, 1]


def runs_for_margin(sd: float) -> int | None:
    """Runs whose 90 % interval (the equivalence test's) is at most half the margin wide on
    each side at SD ``sd``: room for an estimate up to half the margin off 1 to still be
    called equivalent."""
    level = stats.equivalence_level(CONFIDENCE)
    return planning.runs_needed(sd, math.log1p(MARGIN) / 2, level)


def measure_goal(inv, runs: int, seed: int, work: Path) -> None:
    for case in CASES:
        wall = campaign(case, inv, runs, work / f"goal-{case}", seed, GOAL_MODES)
        modes = ", ".join(GOAL_MODES)
        print(f"summary: goal {case}: {runs} runs of {modes} in {wall / 60:.1f} min")


def report_goal(work: Path, block: int) -> None:
    """The goal's comparisons over every run and over the runs the watch left unflagged, and
    the A/A false-difference rate in blocks of ``block`` runs, both ways."""
    decided = []
    for case, (_, _, _, higher) in CASES.items():
        values = per_run(work / f"goal-{case}")
        every = sorted(values["run"].unique())
        clean = clean_runs(values)
        print(f"summary: goal {case}: {len(every)} runs, {len(every) - len(clean)} with a "
              "window the interference watch flagged")  # fmt: skip
        for label, runs in (("every run", every), ("unflagged runs", clean)):
            for mode in GOAL_MODES[1:]:
                x, y = paired(values, mode, runs)
                if len(x) < 3:
                    continue
                eq = stats.log_ratio_equivalence(x, y, MARGIN, CONFIDENCE, higher)
                sd = float(np.std(np.log(x / y), ddof=1))
                print(f"summary:   {case} {mode}/native, {label}: {eq.ratio * 100:.1f}% "
                      f"[{eq.lo * 100:.1f}, {eq.hi * 100:.1f}] (95%), "
                      f"90% [{eq.lo_eq * 100:.1f}, {eq.hi_eq * 100:.1f}], n={eq.n_runs}, "
                      f"at +-5%: {eq.verdict}; SD of log ratio {sd:.3f}; runs for a 90% "
                      f"interval of +-2.5%: {runs_for_margin(sd)}")  # fmt: skip
            for first in range(0, len(runs) - block + 1, block):
                x, y = paired(values, "native-aa", runs[first : first + block])
                if len(x) == block:
                    eq = stats.log_ratio_equivalence(x, y, MARGIN, CONFIDENCE, higher)
                    decided.append({"case": case, "runs": label, "ratio": eq.ratio,
                                    "verdict": eq.verdict})  # fmt: skip
    aa = pd.DataFrame(decided)
    for label, group in aa.groupby("runs", sort=False):
        counts = group["verdict"].value_counts().to_dict()
        false = counts.get("overhead", 0) + counts.get("faster", 0)
        print(f"summary: A/A, {label}, blocks of {block} runs: {len(group)} comparisons, "
              f"{counts}; false-difference rate {false / len(group) * 100:.1f}% "
              f"({false} of {len(group)})")  # fmt: skip


def half_widths(values: pd.DataFrame, modes: list[str]) -> dict[tuple[str, str], tuple[int, float]]:
    """Each (mode, path)'s pairs and half-width of the 95 % interval of its mean log ratio to
    native on that path."""
    out = {}
    for path, on_path in values.groupby("path", sort=True):
        for mode in modes[1:]:
            x, y = paired(on_path, mode)
            d = np.log(x / y)
            sd = float(d.std(ddof=1)) if len(d) > 1 else math.nan
            out[(mode, path)] = (len(d), planning.half_width(sd, len(d), CONFIDENCE))
    return out


def same_lab_time_runs(out: Path) -> int:
    """The runs of a fixed campaign of the same lab time as the campaign saved in ``out``: its
    steps' seconds over a whole round's (each cell's mean step seconds, summed)."""
    steps = pq.read_table(out / "runs.parquet").to_pandas()
    seconds = (steps["ended_at"] - steps["started_at"]).dt.total_seconds()
    per_round = seconds.groupby([steps["mode"], steps["path"], steps["variant"]]).mean().sum()
    return max(3, round(float(seconds.sum()) / float(per_round)))


def measure_planning(name: str, inv, target: float, budget_min: float, max_runs: int, seed: int,
                     work: Path) -> None:  # fmt: skip
    """The planned campaign (the study profile's 3 runs as its pilot), then a fixed one of the
    same lab time."""
    case, paths, modes = PLANNING[name]
    settings = planning.Settings(target, budget_min * 60.0, max_runs, CONFIDENCE)
    planned, fixed = planning_dirs(work, name)
    wall = campaign(case, inv, 3, planned, seed, modes, settings, paths=paths)
    fixed_runs = same_lab_time_runs(planned)
    print(f"summary: {name}: planned campaign {wall / 60:.1f} min, {len(per_run(planned))} "
          f"steps; a fixed campaign of {fixed_runs} runs follows")  # fmt: skip
    wall = campaign(case, inv, fixed_runs, fixed, seed + 1, modes, paths=paths)
    print(f"summary: {name}: fixed campaign {wall / 60:.1f} min")


def planning_dirs(work: Path, name: str) -> tuple[Path, Path]:
    suffix = name.removeprefix("planning")  # "" (throughput, as kept before) or "-latency"
    return work / f"planned{suffix}", work / f"fixed{suffix}"


def report_planning(name: str, work: Path) -> None:
    case, paths, modes = PLANNING[name]
    planned_dir, fixed_dir = planning_dirs(work, name)
    planned, fixed = per_run(planned_dir), per_run(fixed_dir)
    record = json.loads((planned_dir / "campaign.json").read_text()).get("planning", {})
    print(
        f"summary: {name}: {case} on {', '.join(paths)} (target "
        f"+-{record.get('target_half_width', 0) * 100:g}%, budget "
        f"{record.get('budget_s', 0) / 60:g} min, at most {record.get('max_runs')} runs): planned "
        f"{len(planned)} steps, fixed {len(fixed)} steps; flagged windows "
        f"{int(planned['flagged'].sum())} / {int(fixed['flagged'].sum())}"
    )
    a, b = half_widths(planned, modes), half_widths(fixed, modes)
    for key in a:
        (na, ha), (nb, hb) = a[key], b.get(key, (0, math.inf))
        print(f"summary:   {key[0]}/native ({key[1]}): planned {na} runs, half-width "
              f"{ha * 100:.1f}% | fixed {nb} runs, half-width {hb * 100:.1f}%")  # fmt: skip
    worst_a = max(h for _, h in a.values())
    worst_b = max(h for _, h in b.values())
    print(f"summary:   widest half-width: planned {worst_a * 100:.1f}%, fixed {worst_b * 100:.1f}%")


def measure_windows(inv, runs: int, windows: int, seed: int, work: Path) -> None:
    for case in CASES:
        wall = campaign(case, inv, runs, work / f"windows-{case}", seed, WINDOWS_MODES,
                        reps=windows)  # fmt: skip
        print(f"summary: windows {case}: {runs} runs of {windows} windows of "
              f"{', '.join(WINDOWS_MODES)} in {wall / 60:.1f} min")  # fmt: skip


def window_values(out: Path, case: str) -> pd.DataFrame:
    """Each measured window's headline (mode, run, rep, value): the median of its samples of
    the benchmark's summary metric, as a step's headline is over its windows."""
    cls, variant, _, _ = CASES[case]
    metric = cls.summary_metric.format(variant=variant)
    samples = schema.read_samples(out / "samples.parquet")
    measured = samples[~samples["warmup"].astype(bool) & (samples["metric"] == metric)]
    return measured.groupby(["mode", "run", "rep"])["value"].median().reset_index()


def window_costs(out: Path) -> tuple[float, float]:
    """(a run's lab seconds beyond its windows, a window's lab seconds) of a saved campaign
    (``costs``)."""
    watched = interference.windows(out)
    starts = watched.groupby(["run", "mode", "rep"])["t_ns"].min().unstack("rep")
    steps = pq.read_table(out / "runs.parquet").to_pandas()
    return costs(starts, (steps["ended_at"] - steps["started_at"]).dt.total_seconds())


def costs(starts: pd.DataFrame, step_s: pd.Series) -> tuple[float, float]:
    """Medians over the steps. ``starts``: each step's (row) windows' first watch reading in ns,
    a column per window; ``step_s``: each step's wall seconds. A window costs from its first
    reading to the next window's, windows 2 on (the first may share its tool run with the
    warm-up); a run, the step's wall time less its windows (deploying, the warm-up, removing)."""
    later = starts[[c for c in sorted(starts.columns) if c >= 2]]
    if later.shape[1] < 2:
        raise RuntimeError("at least 3 windows per step are needed to time one")
    window_s = float(np.nanmedian(later.diff(axis=1).iloc[:, 1:].to_numpy()) / 1e9)
    return max(float(step_s.median()) - starts.shape[1] * window_s, 0.0), window_s


def report_windows(work: Path, resamples: int = 2000, seed: int = 7) -> None:
    """Per case and comparison: the two levels' SDs, the costs, the windows per run that buy a
    precision in the least lab time (Kalibera and Jones) with the middle 80 % of that choice
    over the runs resampled, and the lab time it saves against one window per run."""
    rng = np.random.default_rng(seed)
    for case in CASES:
        out = work / f"windows-{case}"
        flagged = int(per_run(out)["flagged"].sum())  # also: no failed step
        values = window_values(out, case).pivot_table(index=["run", "rep"], columns="mode",
                                                      values="value")  # fmt: skip
        cost_run, cost_window = window_costs(out)
        print(f"summary: windows {case}: a run {cost_run:.2f} s beyond its windows, a window "
              f"{cost_window:.2f} s; {flagged} steps with a flagged window")  # fmt: skip
        for mode in WINDOWS_MODES[1:]:
            d = np.log(values[mode] / values["native"]).unstack("rep").dropna().to_numpy()
            plan = planning.windows_per_run(d, cost_run, cost_window)
            picks = [planning.windows_per_run(d[rng.integers(0, len(d), len(d))], cost_run,
                                              cost_window).best for _ in range(resamples)]
            lo, hi = np.percentile(picks, [10, 90])
            optimum = "inf" if math.isinf(plan.optimum) else f"{plan.optimum:.2f}"
            print(f"summary:   {mode}/native: {plan.runs} runs x {plan.windows} windows; SD of "
                  f"the log ratio between runs {plan.sd_between:.4f}, between a run's windows "
                  f"{plan.sd_within:.4f}; windows per run: {plan.best} (optimum {optimum}; "
                  f"80% of resampled runs: {lo:.0f}-{hi:.0f}); lab time for a given precision "
                  f"against 1 window per run: x{1 / plan.gain(plan.best):.2f}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(EXPERIMENTS))
    parser.add_argument("--runs", type=int, default=60, help="fixed runs of the goal (>= 3)")
    parser.add_argument("--block", type=int, default=3, help="runs per A/A comparison")
    parser.add_argument("--target", type=float, default=0.03, help="planning's half-width")
    parser.add_argument("--budget-min", type=float, default=8.0, help="planning's budget")
    parser.add_argument("--max-runs", type=int, default=15)
    parser.add_argument("--windows", type=int, default=3, help="windows per run (>= 3)")
    parser.add_argument("--window-runs", type=int, default=10, help="runs of the windows case")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="keep the campaigns' data here")
    parser.add_argument("--report", type=Path, metavar="DIR",
                        help="report on the campaigns kept in DIR; measure nothing")  # fmt: skip
    args = parser.parse_args(argv)
    if args.runs < 3 or args.block < 2 or args.runs < args.block:
        parser.error("--runs must be at least 3 and at least --block (at least 2)")
    if args.windows < 3 or args.window_runs < 3:
        parser.error("--windows and --window-runs must be at least 3 (a window's cost is timed "
                     "from the second window on)")
    if args.report:
        chosen = args.cases.split(",")
        wanted = [args.report / f"goal-{c}" for c in CASES] if "goal" in chosen else []
        for name in set(PLANNING) & set(chosen):
            wanted += planning_dirs(args.report, name)
        wanted += [args.report / f"windows-{c}" for c in CASES] if "windows" in chosen else []
        if missing := [str(d) for d in wanted if not (d / "runs.parquet").is_file()]:
            parser.error(f"no kept campaign in {', '.join(missing)} (measure with --keep DIR)")
        if "goal" in chosen:
            report_goal(args.report, args.block)
        for name in (n for n in PLANNING if n in chosen):
            report_planning(name, args.report)
        if "windows" in chosen:
            report_windows(args.report)
        return 0
    chosen, inv = cases_on_the_lab(parser, args.cases, dict.fromkeys(EXPERIMENTS))
    with tempfile.TemporaryDirectory(prefix="co-precision-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        if "goal" in chosen:
            measure_goal(inv, args.runs, args.seed, work)
            report_goal(work, args.block)
        for name in (n for n in PLANNING if n in chosen):
            measure_planning(name, inv, args.target, args.budget_min, args.max_runs, args.seed,
                             work)  # fmt: skip
            report_planning(name, work)
        if "windows" in chosen:
            measure_windows(inv, args.window_runs, args.windows, args.seed, work)
            report_windows(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
