"""Summarise the iperf3 throughput benchmark: one row per (environment, mode, path) and variant.

The per-run value is iperf3's receiver-side total of the measured window
(``tcp_throughput_received``): what actually arrived, not what the sender pushed into its
socket buffer. Each mode is compared with native on the *same path* (``docker-proxy`` is
measured over localhost, so its baseline is native over localhost), as the geometric mean of
the per-run ratios over the runs both measured, with its paired t interval.

The UDP variant (iperf3 ``-u`` at a fixed offered rate) has its own summary and table: per run
the received throughput (``udp_throughput_received``), the jitter (``udp_jitter``, ms) and the
datagram loss (``udp_loss``, percent) of the measured window; per mode their medians across runs
with distribution-free intervals, the received throughput as a percentage of native on the
same path as for TCP, and the loss against native's in percentage points, tested against its
own margin (at a fixed offered rate the received throughput hardly moves; the loss does).

Modes that were skipped or failed stay in every output with their reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from pipeline import catalogue
from pipeline.analysis import engine, figures, stats, tables
from pipeline.analysis.latency import PATH_LABELS, row_order
from pipeline.analysis.per_run import (
    TCP_METRIC as METRIC,
)
from pipeline.analysis.per_run import (
    TCP_VARIANT,
    UDP_METRICS,
    UDP_VARIANT,
    per_run_throughput,
    per_run_udp,
    throughput_long,
    variant_rows,
)
from pipeline.analysis.tables import as_text, cell_status, status_text
from pipeline.data import schema

BENCHMARK = "throughput"
BASELINE = "native"


# Columns of both summaries (TCP and UDP): the cell and its status, then the ratio to native and
# its verdict (``engine.RATIO_COLUMNS``, ``engine.VERDICT_COLUMNS``).
CELL_COLUMNS = ["environment", "mode", "path", "scenario", "status", "reason", "n_runs",
                "n_runs_planned"]  # fmt: skip
RATIO_COLUMNS = ["baseline", *engine.RATIO_COLUMNS]
SUMMARY_COLUMNS = [
    *CELL_COLUMNS, "median_gbps", "median_lo_gbps", "median_hi_gbps", "median_coverage",
    "median_ci_reached", *RATIO_COLUMNS, *engine.VERDICT_COLUMNS, "impact_pct", "impact_lo_pct",
    "impact_hi_pct", "confidence",
]  # fmt: skip


def scenario_label(mode: str, path: str) -> str:
    """Human-readable row label: what the reader should picture (the catalogue's scenario, in
    the words of the 002 article), else the mode's label with the path when unusual."""
    scenario = catalogue.scenario(mode, path)
    if scenario is not None:
        return scenario
    base = catalogue.label(mode)
    return base if path == "dc" else f"{base} ({PATH_LABELS.get(path, path)})"


def load(raw_dir: Path | str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(samples, runs)`` of the throughput benchmark across every environment in ``raw_dir``."""
    return (
        schema.read_dataset(raw_dir, BENCHMARK, "samples"),
        schema.read_dataset(raw_dir, BENCHMARK, "runs"),
    )


def _cells(per_run: pd.DataFrame, runs: pd.DataFrame):
    """``(environment, mode, path, per-run rows, runs rows)`` of every cell planned or measured."""
    keys = ["environment", "mode", "path"]
    cells = pd.concat([runs[keys], per_run[keys]]).drop_duplicates()
    for env, mode, path in cells.itertuples(index=False):
        cell = {"environment": env, "mode": mode, "path": path}
        yield env, mode, path, tables.rows_of(per_run, **cell), tables.rows_of(runs, **cell)


def _cell_row(cell: tuple, metric: str, confidence: float) -> dict:
    """The columns every summary row has: the cell, its label, status and reason, the settings."""
    env, mode, path, mine, run_rows = cell
    status, reason = cell_status(run_rows, len(mine), metric)
    return {
        "environment": env,
        "mode": mode,
        "path": path,
        "scenario": scenario_label(mode, path),
        "status": status,
        "reason": reason,
        "baseline": BASELINE,
        "confidence": confidence,
    }


def _compare(values: pd.DataFrame, runs: pd.DataFrame, margin: float, confidence: float,
             multiplicity: str, loss_margin: float | None = None,
             headline: Mapping | None = None) -> pd.DataFrame:  # fmt: skip
    """The engine's comparisons of one variant's table with native (``values``: its per-run
    values, ``_long``), adjusted across it: the received rate against ``margin``, UDP's loss
    against ``loss_margin``; the profile's ``headline`` questions as a family of their own."""

    # runs recorded before the UDP variant existed have none: they are TCP's
    tagged = runs.assign(variant=runs["variant"].fillna(TCP_VARIANT) if "variant" in runs
                         else TCP_VARIANT)  # fmt: skip
    values = engine.values_of(BENCHMARK, values, tagged)
    margins = {engine.MEASURES[BENCHMARK].margin: margin}
    if loss_margin is not None:
        margins["udp_loss"] = loss_margin
    return engine.compare(values, margins, confidence, multiplicity, headline=headline)


def _add_ratio(row: dict, found: dict, variant: str, margin: float) -> None:
    """The received rate's ratio to native and its verdict (``engine.add_comparison``)."""
    row.update(margin=margin, equivalence_confidence=stats.equivalence_level(row["confidence"]))
    key = (row["environment"], row["mode"], row["path"], variant, "received_gbps")
    engine.add_comparison(row, found, key)


def _finish(out: pd.DataFrame, multiplicity: str) -> pd.DataFrame:
    """Empty reasons as None, counts as integers, the table's multiplicity, rows in reading
    order."""
    out["reason"] = [as_text(r) or None for r in out["reason"]]
    for col in [c for c in out.columns if c.endswith(("verdict", "tost_reason", "_direction"))]:
        out[col] = [as_text(v) or None for v in out[col]]
    out["n_runs"] = out["n_runs"].astype("int64")
    out["ratio_n_runs"] = out["ratio_n_runs"].astype("int64")
    out["multiplicity"] = multiplicity
    return row_order(out)


def summarise(
    samples: pd.DataFrame,
    runs: pd.DataFrame,
    confidence: float = 0.95,
    margin: float = 0.05,
    multiplicity: str = "holm",
    headline: Mapping | None = None,
) -> pd.DataFrame:
    """One row per (environment, mode, path) with the columns of ``SUMMARY_COLUMNS``.

    ``median_*``: median across runs of the per-run throughput with a distribution-free
    interval; when there are too few runs for ``confidence`` it is the range of the runs and
    ``median_coverage`` (< confidence) says what it really covers. ``ratio*``: geometric mean
    of the per-run ratios to native on the same environment and path, with its paired t
    interval; ``impact_*`` is the same as a percentage change (ratio - 1).

    ``verdict``: ``stats.verdict`` against the equivalence ``margin`` on the ratio (fixed in
    params.yaml before the data): the paired TOST and difference test on per-run log ratios
    (with at least 3 paired runs; ``tost_reason`` says why they were not run), adjusted across
    the table by ``multiplicity`` (the profile's ``headline`` questions among themselves).
    ``resolvable``: the smallest relative difference the runs could resolve. None for native
    itself and for cells without a comparison. The comparisons are the engine's
    (``engine.compare``).
    """

    per_run = per_run_throughput(samples, runs)
    compared = _compare(throughput_long(per_run, None), runs, margin, confidence, multiplicity,
                        headline=headline)
    found = engine.by_comparison(compared)
    rows = []
    for cell in _cells(per_run, variant_rows(runs, TCP_VARIANT)):
        mine, run_rows = cell[3], cell[4]
        med = stats.quantile_ci(mine["value"].to_numpy(), 0.5, confidence)
        row = _cell_row(cell, METRIC, confidence)
        row.update(
            n_runs=med.n,
            n_runs_planned=int(max(run_rows["run"].nunique(), mine["run"].nunique())),
            median_gbps=med.point,
            median_lo_gbps=med.lo,
            median_hi_gbps=med.hi,
            median_coverage=med.coverage,
            median_ci_reached=med.reached,
        )
        _add_ratio(row, found, TCP_VARIANT, margin)
        rows.append(row)
    out = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    for col, src in (
        ("impact_pct", "ratio"),
        ("impact_lo_pct", "ratio_lo"),
        ("impact_hi_pct", "ratio_hi"),
    ):
        out[col] = (out[src] - 1.0) * 100.0
    return _finish(out, engine.multiplicity_text(compared, multiplicity))


def _margin(summary: pd.DataFrame) -> float:
    return float(summary["margin"].iloc[0]) if len(summary) else 0.05


def article_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The article's table: Scenario | Path | Throughput | % of native | Impact | Verdict |
    TOST p | Runs | Note.

    Same shape as the 002 article's "Scenario | Throughput | Performance impact", with every
    number carrying its interval and every comparison its verdict against the margin. Rows that
    were not measured show n/a (missing) and the reason.
    """
    conf = float(summary["confidence"].iloc[0]) if len(summary) else 0.95
    ci = f"[{conf:.0%} CI]"
    verdicts, p_values = tables.verdict_columns(summary, True)
    table = pd.DataFrame(
        {
            "Scenario": summary["scenario"],
            "Path": summary["path"].map(lambda p: PATH_LABELS.get(p, p)),
            f"Throughput Gbit/s {ci}": [
                tables.interval_text(r.median_gbps, r.median_lo_gbps, r.median_hi_gbps, ".2f")
                for r in summary.itertuples()
            ],
            f"% of native {ci}": [tables.percent_of_native(r) for r in summary.itertuples()],
            f"Impact % {ci}": [
                None
                if r.mode == BASELINE
                else tables.interval_text(r.impact_pct, r.impact_lo_pct, r.impact_hi_pct, "+.1f")
                for r in summary.itertuples()
            ],
            f"Verdict ({tables.margin_text(_margin(summary))})": verdicts,
            "TOST p": p_values,
            "Runs": [tables.runs_text(r.n_runs, r.n_runs_planned) for r in summary.itertuples()],
            "Note": [tables.note(row, interval="throughput interval is")
                     for _, row in summary.iterrows()],  # fmt: skip
        }
    )
    if summary["environment"].nunique() > 1:
        table.insert(0, "Environment", summary["environment"].to_numpy())
    # Native has no impact relative to itself: an empty cell rather than "n/a".
    impact_col = f"Impact % {ci}"
    table.loc[
        (summary["mode"] == BASELINE).to_numpy() & (summary["n_runs"] > 0).to_numpy(), impact_col
    ] = ""
    return table


def table_caption(summary: pd.DataFrame) -> str:
    conf = float(summary["confidence"].iloc[0])
    return (
        "iperf3 TCP throughput per execution mode (receiver-side total of each measured "
        "window, warm-up excluded). Throughput: median across runs with a "
        f"{conf:.0%} distribution-free (order-statistic) interval. % of native: on the same "
        "path. Impact = ratio - 1. "
        + tables.verdict_caption(
            _margin(summary), conf, "the throughputs", tables.first(summary, "multiplicity")
        )
        + " Modes that could not run are listed with n/a and their reason."
    )


def _figure_frame(summary: pd.DataFrame) -> pd.DataFrame:
    multi_env = summary["environment"].nunique() > 1
    frame = summary.copy()
    frame["row"] = [
        f"{e}: {s}" if multi_env else s
        for e, s in zip(frame["environment"], frame["scenario"], strict=True)
    ]
    frame["status_text"] = [
        "" if st == "ok" else status_text(st, r)
        for st, r in zip(frame["status"], frame["reason"], strict=True)
    ]
    return frame


def _forest(base: alt.Chart, x: alt.X, columns: tuple, y: alt.Y, color, runs: str) -> list:
    """Forest-plot marks: a bar from lo to hi and a diamond at the point, ``columns`` being
    (point, lo, hi); mode, estimate, interval and ``runs`` show on hover."""
    point, lo, hi = columns
    tooltip = [alt.Tooltip("scenario:N", title="mode"),
               alt.Tooltip(f"{point}:Q", format=".3f", title="estimate"),
               alt.Tooltip(f"{point}_interval:N", title="interval"),
               alt.Tooltip(f"{runs}:Q", title="runs")]  # fmt: skip
    return [
        base.mark_rule(strokeWidth=2).encode(
            x=alt.X(f"{lo}:Q"), x2=f"{hi}:Q", y=y, color=color, tooltip=tooltip),
        base.mark_point(shape="diamond", size=110).encode(x=x, y=y, color=color, tooltip=tooltip),
    ]  # fmt: skip


def figure(summary: pd.DataFrame, per_run: pd.DataFrame) -> tuple[alt.HConcatChart, str]:
    """Two panels sharing one row per scenario: median throughput, and ratio to native.

    Returns the chart and its caption (what points and bars mean, and what was not measured).
    """
    frame = _figure_frame(summary)
    frame["median_gbps_interval"] = figures.interval_text(
        frame["median_lo_gbps"], frame["median_hi_gbps"])  # fmt: skip
    frame["ratio_interval"] = figures.interval_text(frame["ratio_lo"], frame["ratio_hi"])
    order = frame["row"].tolist()
    conf = float(summary["confidence"].iloc[0])
    margin = _margin(summary)
    color = alt.Color("mode:N", scale=figures.mode_scale(frame["mode"]), legend=None)
    y = alt.Y("row:N", sort=order, title=None)
    y_bare = alt.Y("row:N", sort=order, title=None, axis=alt.Axis(labels=False, ticks=False))
    measured = frame[frame["n_runs"] > 0]
    not_measured = frame[frame["status"] != "ok"]

    runs_frame = per_run.merge(
        frame[["environment", "mode", "path", "row"]], on=["environment", "mode", "path"]
    )
    base = alt.Chart(measured)
    tput_max = float(np.nanmax(np.r_[measured["median_hi_gbps"], runs_frame["value"], 1.0]))
    x_tput = alt.X(
        "median_gbps:Q", title="Throughput (Gbit/s)", scale=alt.Scale(domain=[0, tput_max * 1.05])
    )
    left = alt.layer(
        alt.Chart(runs_frame)
        .mark_circle(size=22, color="#9a9a9a", opacity=0.7)
        .encode(x=alt.X("value:Q"), y=y, tooltip=["run:O", alt.Tooltip("value:Q", format=".3f")]),
        *_forest(
            base, x_tput, ("median_gbps", "median_lo_gbps", "median_hi_gbps"), y, color, "n_runs"
        ),
        alt.Chart(not_measured)
        .mark_text(align="left", dx=4, color="#b30000", fontStyle="italic", limit=300)
        .encode(x=alt.datum(0), y=y, text="status_text:N"),
    ).properties(title="Median throughput", width=340)

    ratios = measured[measured["ratio_n_runs"] > 0]
    band = [1.0 - margin, 1.0 + margin] if np.isfinite(margin) else [1.0, 1.0]
    lo = float(np.nanmin(np.r_[ratios["ratio_lo"], ratios["ratio"], band[0]]))
    hi = float(np.nanmax(np.r_[ratios["ratio_hi"], ratios["ratio"], band[1]]))
    pad = 0.05 * max(hi - lo, 0.1)
    ratio_domain = alt.Scale(domain=[max(0.0, lo - pad), hi + pad], zero=False, nice=False)
    x_ratio = alt.X("ratio:Q", title="Ratio to native on the same path", scale=ratio_domain,
                    axis=alt.Axis(labelOverlap="greedy", labelSeparation=4))  # fmt: skip
    rbase = alt.Chart(ratios)
    reference = [
        alt.Chart(pd.DataFrame({"one": [1.0]}))
        .mark_rule(color="#555555", strokeDash=[4, 3])
        .encode(x=alt.X("one:Q", scale=ratio_domain)),
    ]
    if np.isfinite(margin):
        # the equivalence margin fixed before the data, as on every ratio panel with a margin
        reference.insert(0, alt.Chart(pd.DataFrame({"lo": [band[0]], "hi": [band[1]]}))
                         .mark_rect(color="#e3e3e3")
                         .encode(x=alt.X("lo:Q", scale=ratio_domain), x2="hi:Q"))  # fmt: skip
    right = alt.layer(
        *reference,
        *_forest(rbase, x_ratio, ("ratio", "ratio_lo", "ratio_hi"), y_bare, color,
                 "ratio_n_runs"),  # fmt: skip
    ).properties(title="Relative to native", width=260)

    # A forest-plot text column: the bars are often narrower than the diamonds, the numbers not.
    frame["ratio_text"] = [tables.percent_text(r) for r in frame.itertuples()]
    numbers = (
        alt.Chart(frame)
        .mark_text(align="left", fontSize=12)
        .encode(y=alt.Y("row:N", sort=order, axis=None), text="ratio_text:N")
        .properties(title=f"% of native [{conf:.0%} CI]", width=150)
    )
    numbers = numbers.encode(x=alt.X(datum=0, scale=alt.Scale(domain=[0, 1]), axis=None))

    chart = (
        alt.hconcat(left, right, numbers, spacing=12)
        .resolve_scale(y="shared", color="shared", x="independent")
        .properties(title="iperf3 TCP throughput by execution mode")
    )
    skipped = [f"{r.scenario} ({r.reason})" for r in frame.itertuples() if r.status != "ok"]
    short_ci = [r.scenario for r in measured.itertuples() if not r.median_ci_reached]
    caption = (
        "iperf3 TCP throughput by execution mode. Left: diamonds are the median across runs of "
        "the per-run throughput (receiver-side total of the measured window, warm-up excluded), "
        f"bars its {conf:.0%} distribution-free order-statistic interval, grey dots the "
        "individual runs. Right: ratio to native on the same path (docker-proxy is compared "
        "with native over localhost); diamonds are the geometric mean of the per-run ratios, "
        f"bars its {conf:.0%} paired t interval, the dashed line marks parity with native"
        + (f" and the grey band the equivalence margin of {tables.margin_text(margin)} fixed "
           "before the data." if np.isfinite(margin) else ".")
    )
    caption += figures.outside_text(measured, "ratio", "ratio_lo", "ratio_hi",
                                    lambda r: r["row"])  # fmt: skip
    if short_ci:
        caption += (
            f" Where there are too few runs for a {conf:.0%} interval of the median (here: "
            + ", ".join(short_ci)
            + "), the bar spans all runs and the table gives its actual coverage."
        )
    if skipped:
        caption += " Not measured: " + "; ".join(skipped) + "."
    return chart, caption


def headline(summary: pd.DataFrame) -> str:
    """Deterministic plain-text digest of the headline numbers (checked by nbval)."""
    lines = []
    for r in summary.itertuples():
        if r.n_runs:
            cov = "" if r.median_ci_reached else f" (coverage {r.median_coverage:.4f})"
            lines.append(
                f"{r.environment} {r.mode} {r.path}: {r.status}, {r.n_runs} runs, "
                f"median {r.median_gbps:.3f} Gbit/s "
                f"[{r.median_lo_gbps:.3f}, {r.median_hi_gbps:.3f}]{cov}, "
                f"ratio {r.ratio:.4f} [{r.ratio_lo:.4f}, {r.ratio_hi:.4f}]"
                + tables.verdict_headline(r)
            )
        else:
            lines.append(f"{r.environment} {r.mode} {r.path}: {r.status}, n/a ({r.reason})")
    return "\n".join(lines)


def findings(summary: pd.DataFrame) -> str:
    """Markdown sentences that interpret the summary: which modes cost throughput, and how much.

    An overhead is only called one when the whole interval of the ratio lies below 1; an interval
    that contains 1 is "not distinguishable from native here", which is not a proof of no
    overhead: that is the verdict's job (``stats.verdict``, against the margin fixed before the
    data), given after each sentence.
    """
    out = []
    for r in summary.itertuples():
        if r.mode == BASELINE:
            continue
        label = f"**{r.scenario}**"
        if r.status != "ok":
            out.append(f"- {label}: not measured ({r.reason}).")
            continue
        if not r.ratio_n_runs:
            out.append(
                f"- {label}: no native baseline on the {PATH_LABELS.get(r.path, r.path)} path."
            )
            continue
        span = f"{100 * r.ratio:.1f}% of native [{100 * r.ratio_lo:.1f}, {100 * r.ratio_hi:.1f}]"
        if r.ratio_hi < 1.0:
            verdict = f"costs {-r.impact_pct:.1f}% of throughput ({span})"
        elif r.ratio_lo > 1.0:
            verdict = f"is faster than native ({span})"
        else:
            verdict = f"is not distinguishable from native with {r.ratio_n_runs} runs ({span})"
        said = tables.verdict_text(r.verdict, r.ratio_lo, r.ratio_hi, True)
        tost = "" if np.isnan(r.tost_p) else f", TOST p {tables.p_text(r.tost_p)}"
        margin = tables.margin_text(r.margin)
        out.append(f"- {label} {verdict}; verdict: **{said}** (margin {margin}{tost}).")
    return "\n".join(out)


def write_summary(
    summary: pd.DataFrame, per_run: pd.DataFrame, processed_dir: Path | str
) -> list[Path]:
    """Write ``throughput_summary.parquet`` (+ ``.csv``) and ``throughput_per_run.parquet``."""
    frames = {"throughput_summary": summary, "throughput_per_run": per_run}
    return tables.write_processed(frames, processed_dir)


# --- UDP -------------------------------------------------------------------------------------

UDP_SUMMARY_COLUMNS = [
    *CELL_COLUMNS,
    *(
        f"{name}{suffix}"
        for name, _ in UDP_METRICS.values()
        for suffix in ("", "_lo", "_hi", "_coverage", "_ci_reached")
    ),
    *RATIO_COLUMNS,
    *engine.VERDICT_COLUMNS,
    # datagram loss against native's, in percentage points, with its own margin
    "loss_margin_pp",
    "loss_shift_pp",
    "loss_shift_lo_pp",
    "loss_shift_hi_pp",
    "loss_tost_p",
    "loss_diff_p",
    "loss_tost_p_adj",
    "loss_diff_p_adj",
    "loss_resolvable_pp",
    "loss_sd_pp",
    "loss_tost_reason",
    "loss_verdict",
    "confidence",
]


def summarise_udp(
    samples: pd.DataFrame,
    runs: pd.DataFrame,
    confidence: float = 0.95,
    margin: float = 0.05,
    multiplicity: str = "holm",
    loss_margin: float = 0.005,
) -> pd.DataFrame:
    """One row per (environment, mode, path) of the UDP variant (``UDP_SUMMARY_COLUMNS``).

    Received throughput, jitter and loss: median across runs with a distribution-free interval
    (the range and its actual coverage when there are too few runs). ``ratio*``: received
    throughput as a ratio to native on the same path, as for TCP, with the same verdict
    columns against ``margin``. ``loss_*``: the mean per-run difference of the loss from
    native's in percentage points, with its paired t interval and a verdict against
    ``loss_margin`` (a fraction of the datagrams: 0.005 = 0.5 points; ``stats.shift_equivalence``;
    more loss is the overhead). Both verdicts are the engine's (``engine.compare``), adjusted
    together across the table. Empty (with the columns) when no UDP run was recorded.
    """

    per_run = per_run_udp(samples, runs)
    compared = _compare(throughput_long(None, per_run), runs, margin, confidence, multiplicity,
                        loss_margin)  # fmt: skip
    found = engine.by_comparison(compared)
    rows = []
    for cell in _cells(per_run, variant_rows(runs, UDP_VARIANT)):
        mine, run_rows = cell[3], cell[4]
        row = _cell_row(cell, "udp_throughput_received", confidence)
        row.update(n_runs=len(mine), n_runs_planned=int(max(run_rows["run"].nunique(), len(mine))))
        for name, _ in UDP_METRICS.values():
            q = stats.quantile_ci(mine[name].to_numpy(dtype=float), 0.5, confidence)
            row.update(
                {
                    name: q.point,
                    f"{name}_lo": q.lo,
                    f"{name}_hi": q.hi,
                    f"{name}_coverage": q.coverage,
                    f"{name}_ci_reached": q.reached,
                }
            )
        _add_ratio(row, found, UDP_VARIANT, margin)
        row["loss_margin_pp"] = 100.0 * loss_margin
        loss = found.get((row["environment"], row["mode"], row["path"], UDP_VARIANT, "loss_pct"))
        if loss is not None:
            row.update({ours: loss[theirs] for ours, theirs in LOSS_NAMES.items()})
        rows.append(row)
    mde = ["loss_resolvable_pp_log", "loss_resolvable_pp_direction"]
    out = pd.DataFrame(rows, columns=[*UDP_SUMMARY_COLUMNS, *mde])
    if out.empty:
        return out[UDP_SUMMARY_COLUMNS]
    return _finish(out, engine.multiplicity_text(compared, multiplicity))


# the loss columns of the UDP table and the engine's columns they hold
LOSS_NAMES = {
    "loss_shift_pp": "estimate", "loss_shift_lo_pp": "lo", "loss_shift_hi_pp": "hi",
    "loss_tost_p": "tost_p", "loss_diff_p": "diff_p", "loss_tost_p_adj": "tost_p_adj",
    "loss_diff_p_adj": "diff_p_adj", "loss_resolvable_pp": "resolvable", "loss_sd_pp": "sd",
    "loss_tost_reason": "tost_reason", "loss_verdict": "verdict",
    "loss_resolvable_pp_log": "resolvable_log",
    "loss_resolvable_pp_direction": "resolvable_direction",
}  # fmt: skip


def udp_article_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Scenario | Path | Received Gbit/s | % of native | Verdict | TOST p | Jitter ms | Loss % |
    Runs | Note."""
    conf = float(summary["confidence"].iloc[0]) if len(summary) else 0.95
    ci = f"[{conf:.0%} CI]"
    columns = {
        f"Received Gbit/s {ci}": ("received_gbps", 2),
        f"Jitter ms {ci}": ("jitter_ms", 3),
        f"Loss % {ci}": ("loss_pct", 2),
    }
    table = pd.DataFrame(
        {
            "Scenario": summary["scenario"],
            "Path": summary["path"].map(lambda p: PATH_LABELS.get(p, p)),
        }
    )
    first = next(iter(columns))
    for title, (name, digits) in columns.items():
        table[title] = [
            tables.interval_text(r[name], r[f"{name}_lo"], r[f"{name}_hi"], f".{digits}f")
            for _, r in summary.iterrows()
        ]
        if title == first:
            table[f"% of native {ci}"] = [tables.percent_of_native(r) for r in summary.itertuples()]
            verdicts, p_values = tables.verdict_columns(summary, True)
            table[f"Verdict ({tables.margin_text(_margin(summary))})"] = verdicts
            table["TOST p"] = p_values
    margin = float(summary["loss_margin_pp"].iloc[0]) if len(summary) else 0.5
    table[f"Loss vs native, points {ci}"] = [
        ("" if r.n_runs else None) if r.mode == BASELINE
        else tables.interval_text(r.loss_shift_pp, r.loss_shift_lo_pp, r.loss_shift_hi_pp, "+.2f")
        for r in summary.itertuples()
    ]  # fmt: skip
    table[f"Loss verdict (±{margin:g} points)"] = [
        ("" if r.n_runs else None) if r.mode == BASELINE
        else _loss_verdict_text(r)
        for r in summary.itertuples()
    ]  # fmt: skip
    table["Runs"] = [tables.runs_text(r.n_runs, r.n_runs_planned) for r in summary.itertuples()]
    table["Note"] = [tables.note(row, "received_gbps", "intervals of the medians are")
                     for _, row in summary.iterrows()]  # fmt: skip
    if len(summary) and summary["environment"].nunique() > 1:
        table.insert(0, "Environment", summary["environment"].to_numpy())
    return table


def _loss_verdict_text(r) -> str | None:
    """The loss verdict's cell: "more loss" for an overhead, the resolvable size when
    inconclusive."""
    if not as_text(r.loss_verdict):
        return None
    if r.loss_verdict == "inconclusive" and np.isfinite(r.loss_resolvable_pp):
        return (f"inconclusive (under {r.loss_resolvable_pp:.2g} points cannot be resolved with "
                f"{r.ratio_n_runs} runs)")  # fmt: skip
    return {"overhead": "more loss", "faster": "less loss"}.get(r.loss_verdict, r.loss_verdict)


def udp_table_caption(summary: pd.DataFrame) -> str:
    if summary.empty:
        return "iperf3 UDP: no UDP variant was measured in this dataset."
    conf = float(summary["confidence"].iloc[0])
    loss_margin = float(summary["loss_margin_pp"].iloc[0])
    return (
        "iperf3 UDP per execution mode (fixed offered rate; receiver-side values of each "
        "measured window, warm-up excluded). Received throughput, jitter and loss: medians "
        f"across runs with {conf:.0%} distribution-free (order-statistic) intervals. % of "
        "native: received throughput on the same path. "
        + tables.verdict_caption(
            _margin(summary), conf, "the received throughputs",
            tables.first(summary, "multiplicity"))  # fmt: skip
        + " At a fixed offered rate the received throughput barely moves, so the loss has its "
        "own verdict: Loss vs native is the mean per-run difference in percentage points with "
        f"its paired t interval, equivalent when its {stats.equivalence_level(conf):.0%} "
        f"interval lies inside ±{loss_margin:g} points (params.yaml), more loss when a paired "
        f"t test rejects no difference at {1 - conf:.0%}."
        + " Modes that could not run are listed with n/a and their reason."
    )


def udp_headline(summary: pd.DataFrame) -> str:
    """Deterministic digest of the UDP numbers (checked by nbval)."""
    if summary.empty:
        return "UDP: no UDP variant measured"
    lines = []
    for r in summary.itertuples():
        head = f"UDP {r.environment} {r.mode} {r.path}: {r.status}"
        if not r.n_runs:
            lines.append(f"{head}, n/a ({r.reason})")
            continue
        lines.append(
            f"{head}, {r.n_runs} runs, received {r.received_gbps:.3f} Gbit/s "
            f"[{r.received_gbps_lo:.3f}, {r.received_gbps_hi:.3f}], "
            f"ratio {r.ratio:.4f} [{r.ratio_lo:.4f}, {r.ratio_hi:.4f}], "
            f"jitter {r.jitter_ms:.3f} ms, loss {r.loss_pct:.2f}%" + tables.verdict_headline(r)
        )
    return "\n".join(lines)


def write_udp_summary(
    summary: pd.DataFrame, per_run: pd.DataFrame, processed_dir: Path | str
) -> list[Path]:
    """Write ``throughput_udp_summary.parquet`` (+ ``.csv``) and ``throughput_udp_per_run``."""
    frames = {"throughput_udp_summary": summary, "throughput_udp_per_run": per_run}
    return tables.write_processed(frames, processed_dir)
