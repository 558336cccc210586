"""The comparison engine: every benchmark's per-run values in one long frame, and every
comparison with a baseline (native, or a rootless engine's rootful twin) in one standard frame.

A benchmark declares here what it measures per run (``Measure``): the function of the module
``per_run`` that turns its raw dataset into per-run values, the statistics it compares (a
per-run median, or per-run percentiles of its samples), which way is better, the unit, its
margin (a ``common.margins`` key, or an absolute one in the measure's unit) and the statistic a
reader quotes (``headline``). ``per_run()`` applies them; ``compare`` turns the per-run values
into one row per comparison with the functions of ``stats`` (``log_ratio_equivalence`` on the
paired per-run log ratios, ``shift_equivalence`` where the verdict is on an absolute difference,
``adjust_verdicts`` across each summary table's comparisons). The latency, HTTP, cold-start,
throughput and host summaries hand it their own per-run values (``values_of``,
``cell_values``) and copy its columns under their table's names (``SUMMARY_NAMES``): no
summary tests a comparison itself. The engine imports no summary module.

Per-run values rest on clean windows (``schema.read_dataset`` leaves out the windows the
interference watch flagged where their step has a clean one) and on runs with status ok.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.analysis import per_run as loaders
from pipeline.analysis import stats
from pipeline.benchmarks import BENCHMARKS
from pipeline.data import schema

BASELINE = "native"
CELL = ["environment", "benchmark", "mode", "path", "variant"]
# A per-run value's identity besides its cell: the metric it is computed from and the per-run
# statistic ("median" of a run's windows or samples, or a percentile "p50", "p99", ...).
PER_RUN_COLUMNS = [
    *CELL, "metric", "statistic", "run", "value", "unit", "higher_is_better", "n_samples",
    "pilot",
]  # fmt: skip
KEYS = ["family", "environment", "benchmark", "path", "variant", "metric", "statistic"]
COMPARE_COLUMNS = [
    *KEYS, "mode", "baseline", "unit", "higher_is_better", "scale", "estimate", "lo", "hi",
    "lo_eq", "hi_eq", "bound", "diff", "diff_lo", "diff_hi", "margin", "margin_abs",
    "tost_p", "diff_p", "tost_p_adj", "diff_p_adj", "sd", "resolvable", "resolvable_log",
    "resolvable_direction", "n_runs", "tost_reason", "verdict", "headline", "confidence",
    "multiplicity",
]  # fmt: skip
PERCENTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}


@dataclass(frozen=True)
class Measure:
    """What one benchmark compares per run.

    ``values(raw_dir)``: the per-run values of the benchmark, columns ``environment``, ``mode``,
    ``path``, ``variant``, ``metric``, ``statistic``, ``run``, ``value``, ``unit`` and
    ``n_samples`` (samples behind a percentile; a run too short for one is not compared, as
    ``stats.min_samples`` rules). ``higher_is_better``: the direction, or None when it follows
    the unit (``host.higher_is_better``). ``margin``: a ``common.margins`` key (a relative
    margin on the ratio); None: no margin, a difference test only (a metric judged on an
    absolute scale is in ``ABSOLUTE``). ``internet``: the key of the absolute margin
    (microseconds) the Internet path is judged on instead of the ratio. ``family(variant)``:
    the summary table whose verdicts are adjusted together. ``headline``: the statistic a
    reader quotes (the others are kept, not quoted). ``pairs(modes)``: comparisons beyond
    every mode against native, as (mode, baseline).
    ``fixed``: variants measured at a rate the setup fixes (UDP at an offered load), whose
    comparisons are kept but never a headline."""

    benchmark: str
    values: Callable[[Path], pd.DataFrame]
    higher_is_better: bool | None
    margin: str | None
    headline: str = "median"
    internet: str | None = None
    family: Callable[[str], str] | None = None  # variant -> table; None: the benchmark's
    pairs: Callable[[Iterable[str]], list[tuple[str, str]]] | None = None
    fixed: frozenset[str] = frozenset()  # variants whose rate the setup fixes: never quoted


def _throughput_family(variant: str) -> str:
    return "throughput-udp" if variant == loaders.UDP_VARIANT else "throughput"


def _rootful_pairs(modes: Iterable[str]) -> list[tuple[str, str]]:
    return list(loaders.ROOTLESS_VS_ROOTFUL)


def _registry() -> dict[str, Measure]:
    def margin(name: str) -> str | None:
        declared = BENCHMARKS.get(name)
        return declared.margin if declared is not None else None

    out = {
        "throughput": Measure("throughput", loaders.throughput, True, margin("throughput"),
                              family=_throughput_family,
                              fixed=frozenset({loaders.UDP_VARIANT})),
        "latency": Measure("latency", loaders.quantiles("latency", loaders.LATENCY_METRICS),
                           False, margin("latency"), "p50", internet="internet_us"),
        "http": Measure("http", loaders.quantiles("http", loaders.HTTP_METRICS), False,
                        margin("http"), "p50", internet="internet_us"),
    }  # fmt: skip
    for name, declared in BENCHMARKS.items():
        if declared.analysis == "host":
            out[name] = Measure(name, loaders.host(name), None, declared.margin)
    out["coldstart"] = Measure("coldstart", loaders.coldstart, False, None, "p50",
                               pairs=_rootful_pairs)
    return out


MEASURES: dict[str, Measure] = _registry()
# The UDP loss is judged on percentage points against ``udp_loss`` (params.yaml's
# udp_loss_margin, a fraction of the datagrams), in the UDP table with the received rate.
ABSOLUTE = {("throughput", "loss_pct"): "udp_loss"}


def _pilots(runs: pd.DataFrame) -> pd.DataFrame | None:
    """Each cell's Stein pilot (``schema.pilot_of``) from its runs table, or None for an
    unplanned campaign."""
    if schema.PILOT not in runs or not runs[schema.PILOT].notna().any():
        return None
    keys = ["environment", "mode", "path", "variant"]
    rows = [(*key, schema.pilot_of(part)) for key, part in runs.groupby(keys, dropna=False)]
    return pd.DataFrame(rows, columns=[*keys, "pilot"])


def per_run(raw_dir: Path | str, benchmarks: Iterable[str] | None = None) -> pd.DataFrame:
    """Every (or each named) benchmark's per-run values under ``raw_dir`` in one long frame,
    ``PER_RUN_COLUMNS``: one row per (environment, benchmark, mode, path, variant, metric,
    statistic, run), benchmarks in ``MEASURES``' order, each in its summary's own order.
    ``pilot``: the cell's Stein pilot pairs (NaN for fixed runs)."""
    raw = Path(raw_dir)
    names = list(MEASURES) if benchmarks is None else list(benchmarks)
    frames = []
    for name in names:
        measure = MEASURES[name]
        if not schema.has_dataset(raw, name):
            continue
        frame = measure.values(raw)
        if not frame.empty:
            frames.append(_standard(frame, measure, schema.read_dataset(raw, name, "runs")))
    if not frames:
        return pd.DataFrame(columns=PER_RUN_COLUMNS)
    out = pd.concat(frames, ignore_index=True).dropna(subset=["value"])
    out["higher_is_better"] = out["higher_is_better"].astype(bool)
    return out.reset_index(drop=True)


def values_of(benchmark: str, frame: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """``per_run``'s frame for one benchmark's per-run values already computed by its summary
    (``Measure.values``' columns), its direction and margin the benchmark's, pilots from
    ``runs``."""
    if frame.empty:
        return pd.DataFrame(columns=PER_RUN_COLUMNS)
    out = _standard(frame, MEASURES[benchmark], runs).dropna(subset=["value"])
    return out.astype({"higher_is_better": bool}).reset_index(drop=True)


def cell_values(
    benchmark: str,
    cells: Mapping[tuple, stats.RunSamples],
    runs: pd.DataFrame,
    statistics: Mapping[str, float],
) -> pd.DataFrame:
    """``per_run``'s frame for per-sample cells already loaded (``per_run.load_cells``): each
    run's ``statistics`` (label -> quantile) of each (environment, mode, path, variant) cell,
    the metric named by the variant, pilots from ``runs``."""
    return values_of(benchmark, loaders.cell_values(dict(cells), dict(statistics)), runs)


def _standard(frame: pd.DataFrame, measure: Measure, runs: pd.DataFrame) -> pd.DataFrame:
    """A benchmark's per-run values with its direction and pilots, in ``PER_RUN_COLUMNS``."""
    name = measure.benchmark
    frame = frame.assign(benchmark=name)
    hib = measure.higher_is_better
    frame["higher_is_better"] = (
        [loaders.higher_is_better(u) for u in frame["unit"]] if hib is None else hib)
    if (name, "loss_pct") in ABSOLUTE:
        frame.loc[frame["metric"] == "loss_pct", "higher_is_better"] = False
    pilots = _pilots(runs)
    if pilots is None:
        frame["pilot"] = np.nan
    else:
        frame = frame.merge(pilots, on=["environment", "mode", "path", "variant"], how="left")
    return frame.reindex(columns=PER_RUN_COLUMNS)


def _family(measure: Measure, variant: str) -> str:
    return measure.family(variant) if measure.family else measure.benchmark


def _headline(measure: Measure, variant: str, statistic: str) -> bool:
    return statistic == measure.headline and variant not in measure.fixed


def _quantile(statistic: str) -> float | None:
    """The quantile a per-run statistic names ("p99.9" -> 0.999), None for a median of
    windows."""
    if statistic in PERCENTILES:
        return PERCENTILES[statistic]
    if statistic.startswith("p"):
        try:
            return round(float(statistic[1:]) / 100.0, 12)  # "p99.9": 0.999, not 0.999...01
        except ValueError:
            return None
    return None


def _long_enough(part: pd.DataFrame, statistic: str) -> pd.Series:
    """Per run, whether it has the samples its percentile needs (``stats.min_samples``)."""
    q = _quantile(statistic)
    if q is None:
        return pd.Series(True, index=part.index)
    return part["n_samples"].fillna(np.inf) >= stats.min_samples(q)


def _comparison(key: dict, part: pd.DataFrame, mode: str, baseline: str, measure: Measure,
                margins: Mapping[str, float], confidence: float) -> dict | None:  # fmt: skip
    """One row of ``compare`` (before the table's adjustment), or None: a side not measured."""
    if not {mode, baseline} <= set(part["mode"]):
        return None
    wide = part[part["mode"].isin([mode, baseline])].pivot(
        index="run", columns="mode", values=["value", "ok", "n_samples"])  # fmt: skip
    both = wide["value"][[mode, baseline]].dropna().sort_index()
    if both.empty:
        return None
    x, y = both[mode].to_numpy(float), both[baseline].to_numpy(float)
    hib = bool(part["higher_is_better"].iloc[0])
    pilot = part.loc[part["mode"] == mode, "pilot"].dropna()
    pilot = int(pilot.iloc[0]) if len(pilot) else None
    short = not bool(wide["ok"].loc[both.index, [mode, baseline]].astype(bool).all().all())
    path, metric = key["path"], key["metric"]
    absolute = ABSOLUTE.get((measure.benchmark, metric))
    if absolute is None and path == "internet" and measure.internet in margins:
        absolute = measure.internet
    relative = margins.get(measure.margin) if measure.margin else None
    nan = float("nan")
    scale = "shift" if (measure.benchmark, metric) in ABSOLUTE else "ratio"
    row = {**key, "mode": mode, "baseline": baseline, "unit": part["unit"].iloc[0],
           "higher_is_better": hib, "scale": scale, "margin": nan, "margin_abs": nan,
           "n_runs": int(x.size), "confidence": confidence,
           "headline": _headline(measure, key["variant"], key["statistic"])}  # fmt: skip
    if short:  # the reason names the mode's shortest run, else the baseline's
        q = _quantile(key["statistic"])
        sizes = wide["n_samples"].loc[both.index]
        shortest = min(int(sizes[m].min()) for m in (mode, baseline)
                       if sizes[m].min() < stats.min_samples(q))  # fmt: skip
        why = (f"p{100 * q:g} needs {stats.min_samples(q):,} samples per run "
               f"({stats.TAIL_SAMPLES} beyond it); the shortest run has {shortest:,}")  # fmt: skip
        return row | {"estimate": nan, "verdict": None, "tost_reason": why}
    d = x - y
    row["diff"] = float(d.mean())
    if d.size >= 2:
        row["diff_lo"], row["diff_hi"] = stats._t_interval(d, confidence, pilot)
    if scale == "shift":
        margin_abs = 100.0 * margins[absolute]  # a fraction of the datagrams, in points
        eq = stats.shift_equivalence(x, y, margin_abs, confidence, hib, pilot)
        return row | {"estimate": eq.shift, "lo": eq.lo, "hi": eq.hi, "lo_eq": eq.lo_eq,
                      "hi_eq": eq.hi_eq, "margin_abs": margin_abs, "tost_p": eq.tost_p,
                      "diff_p": eq.diff_p, "sd": eq.sd, "resolvable": eq.resolvable,
                      "tost_reason": eq.reason, "verdict": eq.verdict}  # fmt: skip
    if relative is None and absolute is None:  # no margin fixed: the difference test alone
        alpha = round(1.0 - confidence, 12)
        t = stats.tost_log_ratio(x, y, 0.5, alpha, pilot)
        return row | {"estimate": t.ratio, "lo": t.ci_lo, "hi": t.ci_hi,
                      "tost_p": nan, "diff_p": t.diff_p, "sd": t.sd_log,
                      "resolvable": t.resolvable,
                      "verdict": stats.difference_verdict(x, y, hib, alpha)}  # fmt: skip
    # without a relative margin (the Internet path's verdict is on microseconds) the ratio's
    # interval is all that is kept of this test, and it does not depend on the margin
    eq = stats.log_ratio_equivalence(x, y, relative or 0.05, confidence, hib, pilot)
    row |= {"estimate": eq.ratio, "lo": eq.lo, "hi": eq.hi, "lo_eq": eq.lo_eq, "hi_eq": eq.hi_eq,
            "margin": relative if relative is not None else nan, "tost_p": eq.tost.p_value,
            "diff_p": eq.tost.diff_p, "sd": eq.tost.sd_log, "resolvable": eq.tost.resolvable,
            "tost_reason": eq.tost.reason, "verdict": eq.verdict}  # fmt: skip
    if absolute is not None:  # the ratio is kept, the verdict is on the added microseconds
        eq = stats.shift_equivalence(x, y, margins[absolute], confidence, hib, pilot)
        row |= {"lo_eq": nan, "hi_eq": nan, "margin": nan, "margin_abs": margins[absolute],
                "tost_p": eq.tost_p, "diff_p": eq.diff_p, "sd": eq.sd,
                "resolvable": eq.resolvable, "tost_reason": eq.reason,
                "verdict": eq.verdict}  # fmt: skip
    return row


def _names(value: object) -> list[str]:
    return [v.strip() for v in str(value).split(",") if v.strip()] if value else []


def asks(headline: Mapping | None, benchmark: str, mode: str, path: str, variant: str) -> bool:
    """Whether a profile's ``headline`` (params: benchmark -> comma-separated ``modes``, and
    optionally ``paths`` and ``variants``; every path or variant when not given) names the
    comparison of ``mode`` with native on this path and variant as one of its questions."""
    entry = (headline or {}).get(benchmark)
    if not entry or mode not in _names(entry.get("modes")):
        return False
    paths, variants = _names(entry.get("paths")), _names(entry.get("variants"))
    return (not paths or path in paths) and (not variants or variant in variants)


# The family of a profile's headline questions in a table: "<benchmark> headline".
HEADLINE_FAMILY = "{benchmark} headline"


def compare(
    per_run_values: pd.DataFrame,
    margins: Mapping[str, float],
    confidence: float = 0.95,
    multiplicity: str = "holm",
    pairs: Sequence[tuple[str, str]] | None = None,
    headline: Mapping | None = None,
) -> pd.DataFrame:
    """The standard comparison frame (``COMPARE_COLUMNS``): one row per (environment,
    benchmark, path, variant, metric, statistic) and mode against its baseline (native on the
    same path and variant; for cold start also each rootless engine against its rootful twin).

    ``estimate``: the geometric mean of the per-run ratios over the runs both measured
    (``scale`` "ratio"), or the mean per-run difference in the unit (``scale`` "shift": UDP
    loss in points), with its ``confidence`` t interval ``lo``/``hi``; ``bound``: the end of
    that interval on the worse side, the most a reader can say the mode costs; ``diff``: the
    mean per-run difference in the unit with its interval. ``verdict``: the study's rule against
    the benchmark's margin (``margins``: ``common.margins`` keys, ``udp_loss`` a fraction of the
    datagrams, ``internet_us`` the Internet path's margin in microseconds; a benchmark without
    one gets the difference test alone), adjusted with the other comparisons of its summary
    table (``family``) by ``multiplicity``; ``resolvable`` the minimum detectable effect under
    that rule. A percentile some paired run is too short for has no estimate. ``pairs``:
    only these (mode, baseline) comparisons, in this order, where both sides were measured.
    ``headline``: the profile's headline questions (``asks``), named before any data: the
    statistic a reader quotes of each is adjusted with the benchmark's other headline
    questions only (family ``HEADLINE_FAMILY``), the rest of the table without them."""
    data = per_run_values.assign(ok=lambda f: [bool(v) for v in _ok(f)])
    rows = []
    groups = ["environment", "benchmark", "path", "variant", "metric", "statistic"]
    for key, part in data.groupby(groups, sort=False, dropna=False):
        key = dict(zip(groups, key, strict=True))
        measure = MEASURES[key["benchmark"]]
        key = {"family": _family(measure, key["variant"]), **key}
        modes = sorted(set(part["mode"]))
        wanted = [(m, BASELINE) for m in modes if m != BASELINE]
        wanted += [p for p in (measure.pairs(modes) if measure.pairs else []) if p not in wanted]
        for mode, baseline in wanted if pairs is None else pairs:
            row = _comparison(key, part, mode, baseline, measure, margins, confidence)
            if row is not None:
                rows.append(row)
    out = pd.DataFrame(rows, columns=COMPARE_COLUMNS)
    if out.empty:
        return out
    own: set[str] = set()  # the headline families
    if headline:
        asked = out["headline"].astype(bool) & (out["baseline"] == BASELINE) & np.array(
            [asks(headline, *r) for r in out[["benchmark", "mode", "path", "variant"]].itertuples(
                index=False)], dtype=bool)  # fmt: skip
        out.loc[asked, "family"] = [HEADLINE_FAMILY.format(benchmark=b)
                                    for b in out.loc[asked, "benchmark"]]  # fmt: skip
        own = set(out.loc[asked, "family"])
    adjusted = []
    alpha = round(1.0 - confidence, 12)
    for family, table in out.groupby("family", sort=False):
        # a shift is read as a ratio to its centre: the side of "no difference" is what counts
        side = np.where(table["scale"] == "shift", 1.0 + table["estimate"], table["estimate"])
        table = table.assign(_side=side)
        table = stats.adjust_verdicts(
            table, multiplicity, alpha, "higher_is_better", (("verdict", "tost_p", "diff_p",
                                                               "_side"),),
            mde=[stats.MdeColumns("resolvable", "sd", "n_runs", "margin_abs")])  # fmt: skip
        if family in own:
            table["multiplicity"] = table["multiplicity"].str.replace(
                " comparisons", " headline comparisons")  # fmt: skip
        adjusted.append(table.drop(columns="_side"))
    out = pd.concat(adjusted, ignore_index=True)
    worse_high = ~out["higher_is_better"].astype(bool)
    out["bound"] = np.where(worse_high, out["hi"], out["lo"])
    return out[COMPARE_COLUMNS]


# Each summary stage writes its benchmark's rows of the frame as
# ``data/processed/<benchmark>/<stem>_compared.parquet``; the article, metrics.json and the
# spectrum read them there (``compared_files``) instead of the summaries' own columns.
COMPARED_SUFFIX = "_compared.parquet"


def write_compared(compared: pd.DataFrame, processed_dir: Path | str, stem: str) -> Path:
    """Write ``compare``'s frame to ``<processed_dir>/<stem>_compared.parquet``."""
    out = Path(processed_dir) / f"{stem}{COMPARED_SUFFIX}"
    out.parent.mkdir(parents=True, exist_ok=True)
    compared[COMPARE_COLUMNS].to_parquet(out, index=False)
    return out


def compared_files(processed_dir: Path | str) -> list[Path]:
    """Every frame a summary stage wrote under ``processed_dir``, in directory order."""
    return sorted(Path(processed_dir).glob(f"*/*{COMPARED_SUFFIX}"))


def _ok(frame: pd.DataFrame) -> pd.Series:
    """Per row, whether the run has the samples its statistic needs."""
    ok = pd.Series(True, index=frame.index)
    for statistic, part in frame.groupby("statistic"):
        ok.loc[part.index] = _long_enough(part, statistic)
    return ok


def relative(per_run_values: pd.DataFrame, headline: bool = False) -> pd.DataFrame:
    """The per-run values judged as ratios, each named by what a table calls it: a percentile
    by its statistic ("p50"), a per-run median by its metric. Runs too short for their
    percentile (``stats.min_samples``) and values judged on an absolute scale (UDP loss in
    points) are left out; with ``headline`` also every statistic but the one a reader quotes
    and the variants whose rate the setup fixes (``Measure``)."""
    absolute = [m for (_, m) in ABSOLUTE]
    keep = _ok(per_run_values).to_numpy(bool) & ~per_run_values["metric"].isin(absolute)
    if headline:
        keep &= np.array([_headline(MEASURES[b], v, s) for b, v, s in zip(
            per_run_values["benchmark"], per_run_values["variant"],
            per_run_values["statistic"], strict=True)], dtype=bool)  # fmt: skip
    out = per_run_values[keep]
    name = out["statistic"].where(out["statistic"].isin(list(PERCENTILES)), out["metric"])
    return out.assign(metric=name).reset_index(drop=True)


def margins_of(
    margins: Mapping[str, float], udp_loss_margin: float | None = None,
    internet_margin_us: float | None = None,
) -> dict[str, float]:  # fmt: skip
    """``compare``'s margins: params.yaml's ``common.margins`` plus the absolute ones of its
    ``analysis`` section where set (``udp_loss``, ``internet_us``)."""
    out = {k: float(v) for k, v in margins.items()}
    if udp_loss_margin is not None:
        out["udp_loss"] = float(udp_loss_margin)
    if internet_margin_us is not None:
        out["internet_us"] = float(internet_margin_us)
    return out


# A summary table's names for ``compare``'s columns (a ratio judged against a relative margin).
SUMMARY_NAMES = {
    "estimate": "ratio", "lo": "ratio_lo", "hi": "ratio_hi", "n_runs": "ratio_n_runs",
    "lo_eq": "ratio_eq_lo", "hi_eq": "ratio_eq_hi", "tost_p": "tost_p", "diff_p": "diff_p",
    "tost_p_adj": "tost_p_adj", "diff_p_adj": "diff_p_adj", "resolvable": "resolvable",
    "resolvable_log": "resolvable_log", "resolvable_direction": "resolvable_direction",
    "sd": "sd_log", "tost_reason": "tost_reason", "verdict": "verdict",
}  # fmt: skip


# A one-ratio summary's comparison columns, in its order: the ratio to native, then the verdict
# against the margin (the ratio's interval at the equivalence level, the paired tests adjusted
# across the table, the smallest difference the runs could resolve).
RATIO_COLUMNS = ["ratio", "ratio_lo", "ratio_hi", "ratio_n_runs"]
VERDICT_COLUMNS = [
    "margin", "equivalence_confidence", "ratio_eq_lo", "ratio_eq_hi", "tost_p", "diff_p",
    "tost_p_adj", "diff_p_adj", "resolvable", "resolvable_log", "resolvable_direction",
    "sd_log", "tost_reason", "verdict", "multiplicity",
]  # fmt: skip


def by_comparison(compared: pd.DataFrame) -> dict[tuple, pd.Series]:
    """``compare``'s rows against native by (environment, mode, path, variant, metric)."""
    native = compared[compared["baseline"] == BASELINE]
    keys = ["environment", "mode", "path", "variant", "metric"]
    return {tuple(r[keys]): r for _, r in native.iterrows()}


def add_comparison(row: dict, found: dict[tuple, pd.Series], key: tuple) -> None:
    """Fill a summary row (``mode``, ``path``, ``n_runs``, ``reason``) with its comparison to
    native under the summary's names (``SUMMARY_NAMES``), from ``found`` (``by_comparison``)
    at ``key``: a ratio of 1 for native itself where it was measured; a measured mode whose
    path has no native run says so in its reason."""
    row["ratio_n_runs"] = 0
    if row["mode"] == BASELINE:
        if row["n_runs"]:
            row.update(ratio=1.0, ratio_lo=1.0, ratio_hi=1.0, ratio_n_runs=row["n_runs"])
        return
    c = found.get(key)
    if c is not None:
        row.update({ours: c[theirs] for theirs, ours in SUMMARY_NAMES.items()})
    elif row["n_runs"]:
        extra = f"no {BASELINE} baseline measured on path {row['path']}"
        row["reason"] = f"{row['reason']}; {extra}" if row["reason"] else extra


def multiplicity_text(compared: pd.DataFrame, method: str) -> str:
    """The table's "holm across N comparisons" (``stats.adjust_verdicts``), also for none; a
    table with headline questions names both families ("holm across 2 headline comparisons;
    holm across 6 comparisons")."""
    if len(compared):
        return "; ".join(dict.fromkeys(compared["multiplicity"].astype(str)))
    return f"{method} across 0 comparisons"

