"""Cold-start analysis: the 004 article's p50/p95/p99 table per mode, with intervals, and the
overheads against native and of rootless against rootful.

Starts inside one run share that run's conditions (the engine's caches, what else the machine
was doing), so they are not independent draws: the unit of inference is the run.

- ``summarise``: per (environment, mode) and level q, each run's q-quantile of its measured
  starts, their geometric mean over runs with a t interval (``stats.run_quantile_ci``); a
  level a run has too few starts for (``stats.min_samples``) is n/a.
- ``overheads``: per-run q-quantiles of a mode against a baseline mode (native; or the rootful
  engine for a rootless one), mean difference and geometric-mean ratio with paired t intervals
  over the runs measured in both (the comparison engine's, ``engine.compare``), and ``plus_pct`` =
  (ratio - 1) x 100, the article's "+%". A level a run has too few starts for
  (``stats.min_samples``) is not compared.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from pipeline.analysis import engine, figures, stats, tables
from pipeline.analysis.per_run import (
    COLDSTART_METRIC as METRIC,
)
from pipeline.analysis.per_run import (
    COLDSTART_QUANTILES as QUANTILES,
)
from pipeline.analysis.per_run import (
    ROOTLESS_VS_ROOTFUL,
    ok_samples,
    per_run_percentiles,
    q_label,
)
from pipeline.analysis.per_run import (
    START_KEYS as KEYS,
)
from pipeline.analysis.per_run import measured_starts as measured
from pipeline.analysis.tables import as_text, cell_status, status_text


def _cell(group: pd.DataFrame) -> stats.RunSamples:
    return stats.RunSamples.from_arrays(group["value"].to_numpy(), group["run"].to_numpy())


def overheads(
    samples: pd.DataFrame,
    pairs: list[tuple[str, str]] | None = None,
    qs=QUANTILES,
    confidence: float = 0.95,
    multiplicity: str = "holm",
    headline: Mapping | None = None,
) -> pd.DataFrame:
    """Per environment, (mode, baseline) pair and q: per-run q-quantile difference (``shift``,
    seconds) and ratio with paired t intervals, ``plus_pct``, and the verdict (overhead, faster
    or inconclusive: no margin was fixed for start times, so nothing is called equivalent),
    adjusted across every comparison of the table by ``multiplicity``: the comparison engine's
    (``engine.compare``) under this table's names; ``reason`` why a level was not compared.

    ``pairs`` defaults to every measured mode against native, then each rootless mode against
    its rootful engine; pairs with a side not measured are left out."""

    values = per_run_percentiles(samples, qs)
    if values.empty:
        return pd.DataFrame()
    counts = measured(samples).groupby([*KEYS, "run"], observed=True).size()
    labels = {q_label(q): q for q in qs}
    values = values.assign(
        benchmark="coldstart", path="", variant="", metric=METRIC, unit="s", pilot=np.nan,
        statistic=[q_label(q) for q in values["q"]], higher_is_better=False,
        n_samples=counts.reindex(pd.MultiIndex.from_frame(values[[*KEYS, "run"]])).to_numpy(),
    )  # fmt: skip
    out = engine.compare(values[engine.PER_RUN_COLUMNS], {}, confidence, multiplicity, pairs,
                         headline)
    if out.empty:
        return pd.DataFrame()
    wanted = pairs
    if wanted is None:
        wanted = [(m, "native") for m in sorted(set(values["mode"])) if m != "native"]
        wanted += list(ROOTLESS_VS_ROOTFUL)
    rank = {pair: i for i, pair in reversed(list(enumerate(wanted)))}
    out = out.assign(
        q=out["statistic"].map(labels),
        _pair=[rank[p] for p in zip(out["mode"], out["baseline"], strict=True)],
    ).sort_values(["environment", "_pair", "q"], kind="stable", ignore_index=True)
    out = out.rename(columns={"diff": "shift", "estimate": "ratio", "lo": "ratio_lo",
                              "hi": "ratio_hi", "diff_lo": "lo", "diff_hi": "hi",
                              "tost_reason": "reason"})  # fmt: skip
    for col, src in (("plus_pct", "ratio"), ("plus_pct_lo", "ratio_lo"),
                     ("plus_pct_hi", "ratio_hi")):  # fmt: skip
        out[col] = (out[src] - 1.0) * 100.0
    return out[["environment", "mode", "baseline", "q", "shift", "lo", "hi", "ratio", "ratio_lo",
                "ratio_hi", "n_runs", "reason", "diff_p", "verdict", "tost_p", "plus_pct",
                "plus_pct_lo", "plus_pct_hi", "tost_p_adj", "diff_p_adj",
                "multiplicity"]]  # fmt: skip


# --- the article's table: one row per mode ----------------------------------------------------
#
# The article's p50/p95/p99 are quantiles of every start; here each run's own quantiles of its
# measured starts (runs with status ok), their geometric mean and its t interval over runs
# (``stats.run_quantile_ci``), so the interval reflects run-to-run spread, not the number of
# starts. Overheads as in ``overheads``: paired over common runs.

BASELINE = "native"
CELL = ("environment", "mode", "path", "variant")


def summarise(
    samples: pd.DataFrame,
    runs: pd.DataFrame,
    qs=QUANTILES,
    confidence: float = 0.95,
    multiplicity: str = "holm",
    headline: Mapping | None = None,
) -> pd.DataFrame:
    """One row per (environment, mode, path, variant) planned or measured, with for each level
    ``pXX_s`` (geometric mean of the per-run quantiles, seconds) and its t interval
    ``pXX_lo_s``/``pXX_hi_s`` (NaN for a level a run has too few starts for);
    ``ratio_pXX`` (and ``d_pXX_s``, ``plus_pct_pXX``) to native over common runs; for a rootless
    mode ``rootful_mode`` and ``rootful_ratio_pXX``/``rootful_plus_pct_pXX`` against it."""

    data = measured(ok_samples(samples, runs))
    shifts = overheads(data, None, qs, confidence, multiplicity, headline)
    rootful = dict(ROOTLESS_VS_ROOTFUL)
    cells = pd.concat([runs[list(CELL)], data[list(CELL)]]).drop_duplicates()
    rows = []
    for env, mode, path, variant in cells.itertuples(index=False):
        cell = {"environment": env, "mode": mode, "path": path, "variant": variant}
        mine, run_rows = tables.rows_of(data, **cell), tables.rows_of(runs, **cell)
        n_runs = int(mine["run"].nunique())
        status, reason = cell_status(run_rows, n_runs, METRIC)
        row = {
            "environment": env, "mode": mode, "path": path, "variant": variant,
            "configuration": figures.MODE_LABELS.get(mode, mode), "status": status,
            "reason": reason or None, "n_runs": n_runs,
            "n_runs_planned": int(max(run_rows["run"].nunique(), n_runs)),
            "n_starts": len(mine), "baseline": BASELINE, "rootful_mode": rootful.get(mode, ""),
        }  # fmt: skip
        ci = None
        if n_runs:
            ci = stats.run_quantile_ci(_cell(mine), qs, confidence)
        for i, q in enumerate(qs):
            lab = q_label(q)
            for col, src in (("", "value"), ("_lo", "lo"), ("_hi", "hi")):
                row[f"{lab}{col}_s"] = float(ci[src].iloc[i]) if ci is not None else np.nan
        _add_shifts(row, shifts, env, mode, BASELINE, qs, "", "overhead_n_runs")
        _add_shifts(row, shifts, env, mode, rootful.get(mode), qs, "rootful_", "rootful_n_runs")
        multiple = shifts["multiplicity"].iloc[0] if len(shifts) else None
        rows.append(row | {"confidence": confidence, "multiplicity": multiple})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    rank = out["mode"].map(figures.mode_rank)
    out = out.assign(_r=rank).sort_values(["environment", "path", "variant", "_r", "mode"])
    return out.drop(columns="_r").reset_index(drop=True)


def _add_shifts(
    row: dict, shifts: pd.DataFrame, env, mode, baseline, qs, prefix: str, count: str
) -> None:
    """The ratio, difference and "+%" of ``mode`` against ``baseline`` (NaN when not measured)."""
    mine = pd.DataFrame()
    if baseline is not None and not shifts.empty:
        mine = shifts[
            (shifts["environment"] == env) & (shifts["mode"] == mode)
            & (shifts["baseline"] == baseline)
        ]  # fmt: skip
    row[count] = int(mine["n_runs"].iloc[0]) if len(mine) else 0
    for q in qs:
        lab = q_label(q)
        sel = mine[np.isclose(mine["q"], q)] if len(mine) else mine
        r = sel.iloc[0] if len(sel) else None
        for col, src in (
            (f"ratio_{lab}", "ratio"), (f"ratio_{lab}_lo", "ratio_lo"),
            (f"ratio_{lab}_hi", "ratio_hi"), (f"d_{lab}_s", "shift"), (f"d_{lab}_lo_s", "lo"),
            (f"d_{lab}_hi_s", "hi"), (f"plus_pct_{lab}", "plus_pct"),
            (f"plus_pct_{lab}_lo", "plus_pct_lo"), (f"plus_pct_{lab}_hi", "plus_pct_hi"),
        ):  # fmt: skip
            row[f"{prefix}{col}"] = float(r[src]) if r is not None else np.nan
        row[f"{prefix}verdict_{lab}"] = r["verdict"] if r is not None else None
    if mode == baseline and row["n_runs"]:  # native against itself: the reference
        row[count] = row["n_runs"]


def _ms(point: float, lo: float, hi: float, sign: str = "") -> str | None:
    """Seconds as "142.0 [138.2, 147.9]" milliseconds; n/a (None) without a value."""
    if point is None or np.isnan(point):
        return None
    return tables.interval_text(1000 * point, 1000 * lo, 1000 * hi, f"{sign}.1f")


def _pct(point: float, lo: float, hi: float) -> str | None:
    return tables.interval_text(point, lo, hi, "+.1f")


# A start time is worse when longer: the verdict's "overhead" is said as "slower".
SAID = {"overhead": "slower", "faster": "faster", "inconclusive": "inconclusive"}


def _with_verdict(text: str | None, verdict: str | None) -> str | None:
    """An interval's text with its verdict ("+261.4 [261.0, 261.6], slower")."""
    if text is None or not verdict:
        return text
    return f"{text}, {SAID.get(verdict, verdict)}"


def _note(r) -> str:
    if r.status != "ok":
        return status_text(r.status, r.reason)
    parts = ["baseline"] if r.mode == BASELINE else []
    parts += [as_text(r.reason)] if as_text(r.reason) else []
    if r.n_runs < 2:
        parts.append("one run: no interval")
    if r.rootful_mode and r.rootful_n_runs == 0:
        parts.append(f"no {r.rootful_mode} run to compare with")
    return "; ".join(parts)


def article_table(summary: pd.DataFrame, qs=QUANTILES) -> pd.DataFrame:
    """Mode | p50 / p95 / p99 ms [CI] | Ratio to native p50 / p99 [CI] with its verdict and
    Overhead vs native p50 / p99 ms [CI] | Rootless vs rootful p50 / p95 / p99 "+%" [CI] | Runs
    | Starts | Note: the 004 article's cold-start table ("Configuration | p50 | p95 | p99") with
    intervals, native as the reference and the article's rootless "+%" against the rootful
    engine. n/a: not measured (see the note)."""
    conf = float(summary["confidence"].iloc[0]) if len(summary) else 0.95
    ci = f"[{conf:.0%} CI]"
    rows = list(summary.itertuples())
    table = pd.DataFrame({"Mode": summary["configuration"].to_numpy()})
    for q in qs:
        lab = q_label(q)
        table[f"{lab} ms {ci}"] = [
            _ms(getattr(r, f"{lab}_s"), getattr(r, f"{lab}_lo_s"), getattr(r, f"{lab}_hi_s"))
            for r in rows
        ]
    for q in (qs[0], qs[-1]):
        lab = q_label(q)
        # the verdict beside the estimate it tests (the ratio); the difference in ms beside
        # it, for scale, with its own interval and no verdict
        table[f"Ratio to native {lab} {ci}, verdict"] = [
            "" if r.mode == BASELINE and r.n_runs else _with_verdict(
                tables.interval_text(
                    *(r._asdict()[f"ratio_{lab}{s}"] for s in ("", "_lo", "_hi")), ".2f"
                ),
                r._asdict().get(f"verdict_{lab}"),
            )
            for r in rows
        ]
        table[f"Overhead vs native {lab} ms {ci}"] = [
            "" if r.mode == BASELINE and r.n_runs else _ms(
                r._asdict()[f"d_{lab}_s"], r._asdict()[f"d_{lab}_lo_s"],
                r._asdict()[f"d_{lab}_hi_s"], "+",
            )
            for r in rows
        ]  # fmt: skip
    for q in qs:
        lab = q_label(q)
        table[f"Rootless vs rootful {lab} +% {ci}, verdict"] = [
            (
                _with_verdict(
                    _pct(*(r._asdict()[f"rootful_plus_pct_{lab}{s}"] for s in ("", "_lo", "_hi"))),
                    r._asdict().get(f"rootful_verdict_{lab}"),
                )
                if r.rootful_mode
                else ""
            )
            for r in rows
        ]
    table["Runs"] = [tables.runs_text(r.n_runs, r.n_runs_planned) for r in rows]
    table["Starts"] = [str(r.n_starts) for r in rows]
    table["Note"] = [_note(r) for r in rows]
    if len(summary) and summary["environment"].nunique() > 1:
        table.insert(0, "Environment", summary["environment"].to_numpy())
    return table


def table_caption(summary: pd.DataFrame) -> str:
    conf = float(summary["confidence"].iloc[0]) if len(summary) else 0.95
    pairs = ", ".join(f"{a} against {b}" for a, b in ROOTLESS_VS_ROOTFUL)
    return (
        "Cold start: time from the engine's `run -d` (Kubernetes: `kubectl run` of a pod "
        "pinned to the node; native: nginx started as a plain process) until nginx answers "
        "`GET /` through the published port (Kubernetes: the NodePort Service's, or the node's "
        "own with the host network), per mode. p50, p95, "
        "p99: each run's own quantiles of its measured starts (warm-up starts excluded), their "
        f"geometric mean over runs with a {conf:.0%} t interval; a quantile needs "
        f"{stats.TAIL_SAMPLES} starts beyond it in every run (p95: {stats.min_samples(0.95)}, "
        f"p99: {stats.min_samples(0.99)} starts per run), n/a below that. Ratio to native: "
        "the geometric mean of the per-run ratios of the same quantile to native's over the "
        "runs both measured, with a paired t interval on their logs (the estimate the verdict "
        "tests). Overhead vs native: the mean per-run difference in ms, paired t interval. "
        "Rootless vs rootful: how much longer the rootless "
        f"engine's quantile is than its rootful engine's, in percent ({pairs}), the 004 "
        'article\'s "rootless adds ~18-25%". Modes that could not run are listed with n/a and '
        "their reason. Verdicts (no equivalence margin was fixed for start times, so none is "
        f"called equivalent): slower or faster when the ratio's {conf:.0%} interval lies wholly "
        "on one side of 1 and a paired t test on the runs' own quantiles agrees (at least 3 "
        "runs), else inconclusive."
    )


def headline(summary: pd.DataFrame, qs=QUANTILES) -> str:
    """Deterministic plain-text digest of the headline numbers (checked by nbval)."""
    lines = []
    for r in summary.itertuples():
        head = f"{r.environment} {r.mode}: {r.status}"
        if not r.n_runs:
            lines.append(f"{head}, n/a ({r.reason})")
            continue
        d = r._asdict()
        labs = [q_label(q) for q in qs]
        parts = [f"{b} {_ms(d[f'{b}_s'], d[f'{b}_lo_s'], d[f'{b}_hi_s'])} ms" for b in labs
                 if not np.isnan(d[f"{b}_s"])]  # fmt: skip
        parts += [f"{b} n/a" for b in labs if np.isnan(d[f"{b}_s"])]
        text = f"{head}, {r.n_runs} runs, {r.n_starts} starts, " + ", ".join(parts)
        if r.mode != BASELINE and not np.isnan(d["ratio_p50"]):
            text += f", p50 x{d['ratio_p50']:.3f} native ({SAID[d['verdict_p50']]})"
        if r.rootful_mode and r.rootful_n_runs:
            pct = _pct(d["rootful_plus_pct_p50"], d["rootful_plus_pct_p50_lo"],
                       d["rootful_plus_pct_p50_hi"])  # fmt: skip
            text += f", p50 {pct}% vs {r.rootful_mode} ({SAID[d['rootful_verdict_p50']]})"
        lines.append(text)
    return "\n".join(lines)


def findings(summary: pd.DataFrame, qs=QUANTILES) -> str:
    """Markdown: each engine's p50 against native, and each rootless engine's "+%" against its
    rootful engine per level, each with its verdict (slower, faster or inconclusive)."""

    out = []
    for r in summary.itertuples():
        d = r._asdict()
        if r.mode == BASELINE:
            continue
        label = f"**{r.configuration}**"
        if r.status != "ok":
            out.append(f"- {label}: not measured ({status_text(r.status, r.reason)}).")
            continue
        if not np.isnan(d["ratio_p50"]):
            ratio = tables.interval_text(d["ratio_p50"], d["ratio_p50_lo"], d["ratio_p50_hi"],
                                         ".2f")  # fmt: skip
            shift = _ms(d["d_p50_s"], d["d_p50_lo_s"], d["d_p50_hi_s"], "+")
            said = SAID.get(d["verdict_p50"], "inconclusive")
            out.append(f"- {label}: p50 {ratio} times native's ({shift} ms), {said} "
                       f"({r.n_runs} runs).")  # fmt: skip
        if not r.rootful_mode:
            continue
        if not r.rootful_n_runs:
            out.append(f"- {label}: no {r.rootful_mode} run to compare with.")
            continue
        said = []
        for q in qs:
            lab = q_label(q)
            pct = _pct(*(d[f"rootful_plus_pct_{lab}{s}"] for s in ("", "_lo", "_hi")))
            said.append(f"{lab} {pct}%, {SAID.get(d[f'rootful_verdict_{lab}'], 'inconclusive')}")
        out.append(f"- {label} against {r.rootful_mode}: " + "; ".join(said) + ".")
    return "\n".join(out)


FIGURE_WIDTH = 460


def figure(summary: pd.DataFrame, samples: pd.DataFrame, runs: pd.DataFrame, qs=QUANTILES):
    """Per mode (one row each, the project's order and colours): every measured start as a dot
    (log time axis), the p50 and p99 (geometric means of the runs' own) with their t intervals.
    Returns the chart and its caption."""

    conf = float(summary["confidence"].iloc[0])
    order = summary["configuration"].tolist()
    starts = measured(ok_samples(samples, runs)).merge(
        summary[["environment", "mode", "path", "variant", "configuration"]],
        on=["environment", "mode", "path", "variant"],
    )
    starts = starts.assign(ms=1000 * starts["value"])[["configuration", "mode", "run", "ms"]]
    marks = []
    for q in (qs[0], qs[-1]):
        lab = q_label(q)
        sel = summary[summary["n_runs"] > 0]
        marks.append(pd.DataFrame({
            "configuration": sel["configuration"], "mode": sel["mode"], "level": lab,
            "ms": 1000 * sel[f"{lab}_s"], "lo": 1000 * sel[f"{lab}_lo_s"],
            "hi": 1000 * sel[f"{lab}_hi_s"], "n_runs": sel["n_runs"],
        }))  # fmt: skip
    marks = pd.concat(marks, ignore_index=True)
    marks["estimate"] = [f"{v:,.1f} ms" for v in marks["ms"]]
    marks["interval"] = figures.interval_text(marks["lo"], marks["hi"], "{:,.1f}")
    not_measured = summary[summary["status"] != "ok"].assign(
        text=lambda f: [status_text(s, r) for s, r in zip(f["status"], f["reason"], strict=True)]
    )
    color = alt.Color("mode:N", scale=figures.mode_scale(summary["mode"]), legend=None)
    y = alt.Y("configuration:N", sort=order, title=None)
    low = max(float(np.nanmin(np.r_[starts["ms"], marks["lo"]])) * 0.8, 1e-3)
    high = float(np.nanmax(np.r_[starts["ms"], marks["hi"]])) * 1.25
    x = alt.X("ms:Q", title="Cold start, ms (log scale)",
              scale=alt.Scale(type="log", domain=[low, high], nice=False),
              axis=alt.Axis(values=figures.log_ticks(low, high, FIGURE_WIDTH),
                            labelExpr="format(datum.value, '~g')"))  # fmt: skip
    chart = alt.layer(
        alt.Chart(starts)
        .mark_tick(opacity=0.35, thickness=1, size=22)
        .encode(x=x, y=y, color=color),
        alt.Chart(marks).mark_rule(strokeWidth=2, color="#000000").encode(x="lo:Q", x2="hi:Q", y=y),
        alt.Chart(marks)
        .mark_point(filled=True, size=80)
        .encode(
            x="ms:Q",
            y=y,
            color=color,
            shape=alt.Shape("level:N", title="Quantile"),  # what it is: the caption
            tooltip=[
                alt.Tooltip("configuration:N", title="mode"),
                "level:N",
                "estimate:N",
                alt.Tooltip("interval:N", title="interval (ms)"),
                alt.Tooltip("n_runs:Q", title="runs"),
            ],
        ),  # fmt: skip
        alt.Chart(not_measured)
        .mark_text(align="left", dx=4, color="#b30000", fontStyle="italic", limit=420)
        .encode(x=alt.datum(low), y=y, text="text:N"),
    ).properties(
        width=FIGURE_WIDTH, height=alt.Step(40),
        title="Cold start: run command to nginx answering, per mode",
    )
    if summary["environment"].nunique() > 1:
        chart = chart.facet(row="environment:N")
    caption = (
        "Cold start per mode: time from the run command to nginx answering `GET /` through the "
        "published port (log scale). Faint ticks are every measured start (warm-up starts "
        f"excluded); the points mark p50 and {q_label(qs[-1])} (geometric mean of the runs' own "
        f"quantiles), the black bars their {conf:.0%} t intervals across runs (n/a where a run "
        "has too few starts for the quantile)."
    )
    caption += figures.outside_text(
        marks, "ms", "lo", "hi", lambda r: f"{r['configuration']} {r['level']} (ms)")  # fmt: skip
    skipped = [f"{r.configuration} ({status_text(r.status, r.reason)})"
               for r in summary.itertuples() if r.status != "ok"]  # fmt: skip
    if skipped:
        caption += " Not measured: " + "; ".join(skipped) + "."
    return chart, caption


def write_summary(
    summary: pd.DataFrame, shifts: pd.DataFrame, per_run: pd.DataFrame, processed_dir: Path | str
) -> list[Path]:
    """``coldstart_summary.{parquet,csv}``, ``coldstart_overheads.parquet`` (long: mode,
    baseline, q) and ``coldstart_per_run.parquet`` (each run's quantiles)."""
    frames = {
        "coldstart_summary": summary,
        "coldstart_overheads": shifts,
        "coldstart_per_run": per_run,
    }
    return tables.write_processed(frames, processed_dir)
