"""Summarise the host benchmarks (cpu, memory, disk): one row per (environment, variant, metric,
mode, path), whatever the benchmark.

A host benchmark runs a tool to completion inside each mode on the server host and records one
sample per second of its measured window (events/s, MiB/s, IOPS: higher is better), or one
time per window (cpu's compile, in seconds: lower is better; the direction follows the unit,
``higher_is_better``). The unit of inference is the run: each run's value is the **median of
its samples** (warm-ups excluded, runs with status ok only), the median across runs gets a
distribution-free (order-statistic) interval, and each mode is compared with native on the
same path and variant as the geometric mean of the per-run ratios with its paired t
interval, plus the verdict against the benchmark's margin: the comparison engine's
(``engine.compare``).

Nothing here is specific to one benchmark: the variants come from the data (in the benchmark's
own order when it is registered), and so do the metrics of each variant (every metric with a
non-zero measured sample: a direction a variant does not exercise, e.g. fio's read rate in a
write test, is all zeros and carries no comparison). Modes that were skipped or failed stay in
every output with their reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from pipeline.analysis import engine, figures, stats, tables
from pipeline.analysis.per_run import (
    higher_is_better,
    load,  # noqa: F401  (notebooks and tests read it here)
    variant_metrics,
)
from pipeline.analysis.per_run import host_values as per_run
from pipeline.analysis.tables import as_text, cell_status, status_text
from pipeline.benchmarks import BENCHMARKS

BASELINE = "native"

# How captions and tables name what was run, as each benchmark declares it (its description,
# variant_titles, metric_titles); unknown benchmarks, variants and metrics show their ids.
TITLES = {n: c.description or c.title or n for n, c in BENCHMARKS.items()}
VARIANT_LABELS = {v: t for c in BENCHMARKS.values() for v, t in c.variant_titles.items()}
METRIC_LABELS = {m: t for c in BENCHMARKS.values() for m, t in c.metric_titles.items()}

KEYS = ["environment", "mode", "path", "variant"]
SUMMARY_COLUMNS = [
    "environment", "benchmark", "variant", "metric", "unit", "mode", "path", "configuration",
    "status", "reason", "n_runs", "n_runs_planned", "n_samples", "median", "median_lo",
    "median_hi", "median_coverage", "median_ci_reached", "baseline", "higher_is_better",
    *engine.RATIO_COLUMNS, "overhead_pct", "overhead_lo_pct", "overhead_hi_pct",
    *engine.VERDICT_COLUMNS, "confidence",
]  # fmt: skip


def variant_label(variant: str) -> str:
    return VARIANT_LABELS.get(variant, variant)


def metric_label(metric: str, unit: str | None = None) -> str:
    return METRIC_LABELS.get(metric, unit or metric)


def _variant_order(benchmark: str, variants) -> list[str]:
    """The benchmark's own variant order when it is registered, then the rest by name."""
    known = list(getattr(BENCHMARKS.get(benchmark), "variants", ()))
    rank = {v: i for i, v in enumerate(known)}
    return sorted(dict.fromkeys(variants), key=lambda v: (rank.get(v, len(known)), v))


def _cells(per_run_values: pd.DataFrame, runs: pd.DataFrame, samples: pd.DataFrame, benchmark):
    """``(environment, mode, path, variant, metric)`` of every cell planned or measured: a
    variant's skipped modes get one row per metric the variant was measured on."""
    metrics = variant_metrics(samples)
    fallback = _fallback_metric(benchmark)
    seen = pd.concat([runs[KEYS], per_run_values[KEYS]]).drop_duplicates()
    cells = []
    for env, mode, path, variant in seen.itertuples(index=False):
        for metric in metrics.get(variant) or [fallback]:
            cells.append((env, mode, path, variant, metric))
    return cells


def _fallback_metric(benchmark: str) -> str | None:
    """The metric a variant measured in no mode is reported under: the benchmark's own."""
    cls = BENCHMARKS.get(benchmark)
    return (getattr(cls, "summary_metric", "") or None) if cls else None


def summarise(
    samples: pd.DataFrame,
    runs: pd.DataFrame,
    benchmark: str,
    confidence: float = 0.95,
    margin: float = 0.02,
    multiplicity: str = "holm",
    headline: Mapping | None = None,
) -> pd.DataFrame:
    """One row per (environment, variant, metric, mode, path) with ``SUMMARY_COLUMNS``.

    ``median*``: median across runs of the per-run medians, with a distribution-free interval
    (the range of the runs when there are too few for ``confidence``; ``median_coverage`` says
    what it covers then). ``ratio*``: geometric mean of the per-run ratios to native on the
    same environment, path, variant and metric, over the runs both measured, with its paired t
    interval. ``overhead_*_pct``: how much worse than
    native in percent (the 000 article's "Overhead"), 100 (1 - ratio) for a rate (the share of
    native's rate lost) and 100 (ratio - 1) for a time (``higher_is_better`` False), its
    interval from the ratio's; negative when the mode does better. ``verdict``:
    ``stats.verdict`` against ``margin`` in the metric's direction, adjusted across the
    benchmark's table by ``multiplicity`` (``engine.compare``); None for native itself and for
    cells without a comparison.
    """

    values = per_run(samples, runs)
    compared = engine.compare(engine.values_of(benchmark, values.assign(statistic="median"), runs),
                              {engine.MEASURES[benchmark].margin: margin}, confidence,
                              multiplicity, headline=headline)  # fmt: skip
    found = engine.by_comparison(compared)
    rows = []
    for env, mode, path, variant, metric in _cells(values, runs, samples, benchmark):
        cell = {"environment": env, "mode": mode, "path": path, "variant": variant}
        mine = tables.rows_of(values, **cell, metric=metric)
        run_rows = tables.rows_of(runs, **cell)
        med = stats.quantile_ci(mine["value"].to_numpy(dtype=float), 0.5, confidence)
        status, reason = cell_status(run_rows, med.n, metric)
        unit = samples.loc[samples["metric"] == metric, "unit"].dropna()
        row = {
            "environment": env,
            "benchmark": benchmark,
            "variant": variant,
            "metric": metric,
            "unit": unit.iloc[0] if len(unit) else None,
            "mode": mode,
            "path": path,
            "configuration": figures.MODE_LABELS.get(mode, mode),
            "status": status,
            "reason": reason,
            "n_runs": med.n,
            "n_runs_planned": int(max(run_rows["run"].nunique(), med.n)),
            "n_samples": int(mine["n_samples"].sum()),
            "median": med.point,
            "median_lo": med.lo,
            "median_hi": med.hi,
            "median_coverage": med.coverage,
            "median_ci_reached": med.reached,
            "baseline": BASELINE,
            "higher_is_better": higher_is_better(unit.iloc[0] if len(unit) else None),
            "margin": margin,
            "equivalence_confidence": stats.equivalence_level(confidence),
            "confidence": confidence,
        }
        _add_comparison(row, found)
        rows.append(row)
    out = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    # Worse than native, in percent: a rate's larger ratio loses less, a time's costs more.
    sign = np.where(out["higher_is_better"].astype(bool), -1.0, 1.0)
    worse_lo = np.where(sign < 0, out["ratio_hi"], out["ratio_lo"])
    worse_hi = np.where(sign < 0, out["ratio_lo"], out["ratio_hi"])
    out["overhead_pct"] = 100.0 * sign * (out["ratio"] - 1.0)
    out["overhead_lo_pct"] = 100.0 * sign * (worse_lo - 1.0)
    out["overhead_hi_pct"] = 100.0 * sign * (worse_hi - 1.0)
    for col in ("reason", "verdict", "tost_reason", "resolvable_direction"):
        out[col] = [as_text(v) or None for v in out[col]]
    for col in ("n_runs", "n_runs_planned", "n_samples", "ratio_n_runs"):
        out[col] = out[col].astype("int64")
    out["multiplicity"] = engine.multiplicity_text(compared, multiplicity)
    return _row_order(out, benchmark)


def _add_comparison(row: dict, found: dict) -> None:
    """The ratio to native and the verdict columns (``engine.add_comparison``)."""
    nan = float("nan")
    row.update(
        ratio=nan, ratio_lo=nan, ratio_hi=nan, ratio_eq_lo=nan, ratio_eq_hi=nan, tost_p=nan,
        diff_p=nan, resolvable=nan, sd_log=nan, tost_reason=None, verdict=None,
    )  # fmt: skip
    key = ("environment", "mode", "path", "variant", "metric")
    engine.add_comparison(row, found, tuple(row[k] for k in key))


def _row_order(frame: pd.DataFrame, benchmark: str) -> pd.DataFrame:
    """Environment, variant (the benchmark's order), metric, then the project's mode order."""
    variants = _variant_order(benchmark, frame["variant"])
    key = frame.assign(
        _v=frame["variant"].map(variants.index),
        _m=frame["mode"].map(figures.mode_rank),
    )
    return (
        key.sort_values(["environment", "_v", "metric", "path", "_m", "mode"])
        .drop(columns=["_v", "_m"])
        .reset_index(drop=True)
    )


# --- text: table, caption, headline, findings ------------------------------------------------


def _digits(values) -> int:
    """Decimals for a metric's numbers: 1 below 5000 (events/s), none above (MiB/s, IOPS)."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    return 0 if finite.size and np.nanmedian(finite) >= 5_000 else 1


def _ci(point: float, lo: float, hi: float, digits: int, sign: str = "") -> str | None:
    return tables.interval_text(point, lo, hi, f"{sign}.{digits}f")


def _margin(summary: pd.DataFrame) -> float:
    return float(summary["margin"].iloc[0]) if len(summary) else 0.02


def article_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Test | Mode | Median [CI] | % of native [CI] | Overhead vs native % [CI] | Verdict |
    TOST p | Runs | Note.

    The 000 article's "Test | Bare Metal | Swarm | Overhead" turned on its side (one row per
    test and mode, so every number has room for its interval), with the 004 article's modes.
    Rows that were not measured show n/a and the reason.
    """
    conf = float(summary["confidence"].iloc[0]) if len(summary) else 0.95
    ci = f"[{conf:.0%} CI]"
    medians = {}
    for _, group in summary.groupby(["variant", "metric"], sort=False):
        digits = _digits(group["median"])
        medians |= {r.Index: _ci(r.median, r.median_lo, r.median_hi, digits)
                    for r in group.itertuples()}  # fmt: skip
    verdicts, p_values = tables.verdict_columns(summary)
    rows = list(summary.itertuples())
    table = pd.DataFrame(
        {
            "Test": [
                f"{variant_label(v)} ({metric_label(m, u)})"
                for v, m, u in zip(
                    summary["variant"], summary["metric"], summary["unit"], strict=True
                )
            ],
            "Mode": summary["configuration"],
            f"Median {ci}": [medians[i] for i in summary.index],
            f"% of native {ci}": [tables.percent_of_native(r) for r in rows],
            f"Overhead vs native % {ci}": [
                "" if r.mode == BASELINE and r.n_runs > 0
                else _ci(r.overhead_pct, r.overhead_lo_pct, r.overhead_hi_pct, 1, "+")
                for r in rows
            ],  # fmt: skip
            f"Verdict ({tables.margin_text(_margin(summary))})": verdicts,
            "TOST p": p_values,
            "Runs": [tables.runs_text(r.n_runs, r.n_runs_planned) for r in rows],
            "Note": [tables.note(row) for _, row in summary.iterrows()],
        }
    )
    if len(summary) and summary["environment"].nunique() > 1:
        table.insert(0, "Environment", summary["environment"].to_numpy())
    return table


def table_caption(summary: pd.DataFrame) -> str:
    benchmark = str(summary["benchmark"].iloc[0]) if len(summary) else "host benchmark"
    conf = float(summary["confidence"].iloc[0]) if len(summary) else 0.95
    multiplicity = summary["multiplicity"].iloc[0] if len(summary) else None
    return (
        f"{TITLES.get(benchmark, benchmark)} per execution mode, run on the server host. Per "
        "run: the median of the measured window's per-second rates (warm-up excluded). Median: "
        f"across runs, with a {conf:.0%} distribution-free (order-statistic) interval. % of "
        "native: over the runs both measured. "
        "Overhead vs native: how much worse than native in percent, 100 (1 - ratio) for a rate "
        "(the share of native's rate lost), 100 (ratio - 1) for a time (negative: better than "
        "native). "
        + tables.verdict_caption(
            _margin(summary), conf, "the per-run medians", multiplicity
        )
        + " Modes that could not run are listed with n/a and their reason."
    )


def headline(summary: pd.DataFrame) -> str:
    """Deterministic plain-text digest of the headline numbers (checked by nbval)."""
    lines = []
    for r in summary.itertuples():
        head = f"{r.environment} {r.variant} {r.metric} {r.mode}: {r.status}"
        if not r.n_runs:
            lines.append(f"{head}, n/a ({r.reason})")
            continue
        cov = "" if r.median_ci_reached else f" (coverage {r.median_coverage:.4f})"
        ratio = (
            "no ratio"
            if np.isnan(r.ratio)
            else f"ratio {r.ratio:.4f} [{r.ratio_lo:.4f}, {r.ratio_hi:.4f}]"
        )
        lines.append(
            f"{head}, {r.n_runs} runs, median {r.median:.2f} [{r.median_lo:.2f}, "
            f"{r.median_hi:.2f}]{cov}, {ratio}" + tables.verdict_headline(r)
        )
    return "\n".join(lines)


def findings(summary: pd.DataFrame) -> str:
    """Markdown sentences: per test, what each mode costs, and the verdict against the margin.

    "costs" only when the whole interval of the ratio lies below 1; an interval containing 1
    is "not distinguishable from native", which is not a claim of no overhead (the verdict's).
    """
    out = []
    for r in summary.itertuples():
        if r.mode == BASELINE:
            continue
        label = f"**{r.configuration}**, {variant_label(r.variant)} ({metric_label(r.metric)})"
        if r.status != "ok":
            out.append(f"- {label}: not measured ({status_text(r.status, r.reason)}).")
            continue
        if not r.ratio_n_runs:
            out.append(f"- {label}: no native baseline to compare with.")
            continue
        span = f"{100 * r.ratio:.1f}% of native [{100 * r.ratio_lo:.1f}, {100 * r.ratio_hi:.1f}]"
        side = stats.difference(r.ratio_lo, r.ratio_hi, r.higher_is_better)
        if side == "overhead" and r.higher_is_better:
            said = f"loses {r.overhead_pct:.1f}% of native's rate ({span})"
        elif side == "overhead":
            said = f"takes {r.overhead_pct:.1f}% longer than native ({span})"
        elif side == "faster":
            said = f"is faster than native ({span})"
        else:
            said = f"is not distinguishable from native with {r.ratio_n_runs} runs ({span})"
        word = tables.verdict_text(r.verdict, r.ratio_lo, r.ratio_hi, r.higher_is_better) or "none"
        tost = "" if np.isnan(r.tost_p) else f", TOST p {tables.p_text(r.tost_p)}"
        out.append(
            f"- {label} {said}; verdict: **{word}** (margin {tables.margin_text(r.margin)}{tost})."
        )
    return "\n".join(out)


# --- figure ----------------------------------------------------------------------------------


def _panel(frame: pd.DataFrame, values: pd.DataFrame, ratio_domain, conf: float):
    """One test (variant, metric): medians with intervals and runs, ratios, ratios as text."""
    order = frame["configuration"].tolist()
    color = alt.Color("mode:N", scale=figures.mode_scale(frame["mode"]), legend=None)
    y = alt.Y("configuration:N", sort=order, title=None)
    y_bare = alt.Y(
        "configuration:N", sort=order, title=None, axis=alt.Axis(labels=False, ticks=False)
    )
    measured = frame[frame["n_runs"] > 0]
    not_measured = frame[frame["status"] != "ok"]
    top = float(np.nanmax(np.r_[measured["median_hi"], values["value"], 1.0]))
    unit = metric_label(frame["metric"].iloc[0], frame["unit"].iloc[0])
    tip = [alt.Tooltip(f"{c}:Q", format=",.1f") for c in ("median", "median_lo", "median_hi")]
    left = alt.layer(
        alt.Chart(values)
        .mark_circle(size=22, color="#9a9a9a", opacity=0.7)
        .encode(x=alt.X("value:Q"), y=y, tooltip=["run:O", alt.Tooltip("value:Q", format=",.1f")]),
        alt.Chart(measured)
        .mark_rule(strokeWidth=2)
        .encode(x="median_lo:Q", x2="median_hi:Q", y=y, color=color),
        alt.Chart(measured)
        .mark_point(shape="diamond", size=110)
        .encode(
            x=alt.X("median:Q", title=unit, scale=alt.Scale(domain=[0, top * 1.05])),
            y=y,
            color=color,
            tooltip=["configuration:N", *tip, "n_runs:Q"],
        ),
        alt.Chart(not_measured)
        .mark_text(align="left", dx=4, color="#b30000", fontStyle="italic", limit=300)
        .encode(x=alt.datum(0), y=y, text="status_text:N"),
    )
    better = "" if bool(frame["higher_is_better"].iloc[0]) else ", lower is better"
    title = f"{variant_label(frame['variant'].iloc[0])}: median ({unit}{better})"
    left = left.properties(title=title, width=300)
    ratios = measured[(measured["ratio_n_runs"] > 0) & (measured["mode"] != BASELINE)]
    x_ratio = alt.X(
        "ratio:Q", title="Ratio to native", scale=alt.Scale(domain=ratio_domain, zero=False)
    )
    rtip = [alt.Tooltip("ratio:Q", format=".4f", title="estimate"),
            alt.Tooltip("ratio_interval:N", title="interval"),
            alt.Tooltip("ratio_n_runs:Q", title="runs")]  # fmt: skip
    margin = float(frame["margin"].iloc[0])
    right = alt.layer(
        alt.Chart(pd.DataFrame({"lo": [1.0 - margin], "hi": [1.0 + margin]}))
        .mark_rect(color="#e8e8e8")
        .encode(x=alt.X("lo:Q", scale=alt.Scale(domain=ratio_domain)), x2="hi:Q"),
        alt.Chart(pd.DataFrame({"one": [1.0]}))
        .mark_rule(color="#555555", strokeDash=[4, 3])
        .encode(x=alt.X("one:Q", scale=alt.Scale(domain=ratio_domain))),
        alt.Chart(ratios)
        .mark_rule(strokeWidth=2)
        .encode(x="ratio_lo:Q", x2="ratio_hi:Q", y=y_bare, color=color),
        alt.Chart(ratios)
        .mark_point(shape="diamond", size=110)
        .encode(x=x_ratio, y=y_bare, color=color,
                tooltip=[alt.Tooltip("configuration:N", title="mode"), *rtip]),
    ).properties(title="Relative to native", width=240)
    numbers = (
        alt.Chart(frame)
        .mark_text(align="left", fontSize=12)
        .encode(
            y=alt.Y("configuration:N", sort=order, axis=None),
            text="ratio_text:N",
            x=alt.X(datum=0, scale=alt.Scale(domain=[0, 1]), axis=None),
        )
        .properties(title=f"% of native [{conf:.0%} CI]", width=150)
    )
    return alt.hconcat(left, right, numbers, spacing=12).resolve_scale(
        y="shared", color="shared", x="independent"
    )


def figure(summary: pd.DataFrame, per_run_values: pd.DataFrame) -> tuple[alt.VConcatChart, str]:
    """One figure per benchmark: a row of panels per test (variant and metric), one line per
    mode in the project's order and colours. Returns the chart and its caption."""
    benchmark = str(summary["benchmark"].iloc[0])
    conf = float(summary["confidence"].iloc[0])
    frame = summary.copy()
    frame["status_text"] = [
        "" if st == "ok" else status_text(st, r)
        for st, r in zip(frame["status"], frame["reason"], strict=True)
    ]
    frame["ratio_text"] = [tables.percent_text(r) for r in frame.itertuples()]
    frame["ratio_interval"] = figures.interval_text(frame["ratio_lo"], frame["ratio_hi"], "{:.4f}")
    compared = frame[(frame["ratio_n_runs"] > 0) & (frame["mode"] != BASELINE)]
    margin = float(frame["margin"].iloc[0])
    lo = float(np.nanmin(np.r_[compared["ratio_lo"], compared["ratio"], 1.0 - margin]))
    hi = float(np.nanmax(np.r_[compared["ratio_hi"], compared["ratio"], 1.0 + margin]))
    pad = 0.05 * max(hi - lo, 0.02)
    domain = [max(0.0, lo - pad), hi + pad]
    rows = []
    for (env, variant, metric), group in frame.groupby(
        ["environment", "variant", "metric"], sort=False
    ):
        values = per_run_values[
            (per_run_values["environment"] == env)
            & (per_run_values["variant"] == variant)
            & (per_run_values["metric"] == metric)
        ].merge(group[["mode", "path", "configuration"]], on=["mode", "path"])
        panel = _panel(group.reset_index(drop=True), values, domain, conf)
        if frame["environment"].nunique() > 1:
            panel = panel.properties(title=str(env))
        rows.append(panel)
    title = f"{TITLES.get(benchmark, benchmark)} by execution mode"
    chart = alt.vconcat(*rows, spacing=18).properties(title=title)
    skipped = sorted(
        {
            f"{r.configuration} ({status_text(r.status, r.reason)})"
            for r in frame.itertuples()
            if r.status != "ok"
        }
    )
    short = sorted(
        {r.configuration for r in frame.itertuples() if r.n_runs and not r.median_ci_reached}
    )
    caption = (
        f"{TITLES.get(benchmark, benchmark)} by execution mode, one row of panels per test. "
        "Left: diamonds are the median across runs of the per-run value (the median of the "
        "run's per-second rates, warm-up excluded), bars its "
        f"{conf:.0%} distribution-free order-statistic interval, grey dots the individual runs. "
        "Middle: ratio to native over the runs both measured; diamonds are the geometric mean "
        f"of the per-run ratios, bars its {conf:.0%} paired t interval, the dashed line "
        "marks parity with native and the grey band the "
        f"equivalence margin of {tables.margin_text(margin)} fixed before the data (the same "
        "scale in every row). Right: the same ratios as numbers. Higher is better for rates, "
        "lower for times (a panel says so where lower is better)."
    )
    if short:
        caption += (
            f" Where there are too few runs for a {conf:.0%} interval of the median (here: "
            + ", ".join(short)
            + "), the bar spans all runs and the table gives its actual coverage."
        )
    caption += figures.outside_text(
        compared, "ratio", "ratio_lo", "ratio_hi",
        lambda r: f"{r['configuration']}, {variant_label(r['variant'])}")  # fmt: skip
    if skipped:
        caption += " Not measured: " + "; ".join(skipped) + "."
    return chart, caption


# --- files -----------------------------------------------------------------------------------


def write_summary(
    summary: pd.DataFrame, per_run_values: pd.DataFrame, processed_dir: Path | str, benchmark: str
) -> list[Path]:
    """Write ``<benchmark>_summary.parquet`` (+ ``.csv``) and ``<benchmark>_per_run.parquet``."""
    frames = {f"{benchmark}_summary": summary, f"{benchmark}_per_run": per_run_values}
    return tables.write_processed(frames, processed_dir)
