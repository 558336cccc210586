"""Summarise per-sample latency benchmarks: round-trip times (sockperf-like ping-pong, UDP and
TCP) and HTTP request latency, one row per (environment, mode, path, variant).

A run is the unit of inference: each run gives its own percentiles, a cell's percentile is
their geometric mean with a t interval (``stats.run_quantile_ci``), and a percentile a run has
too few samples for is not reported (``stats.min_samples``). The overhead of a mode is the
per-run difference (and ratio) to native on the same path and variant, over the runs both
measured, with paired t intervals: the comparison engine's (``engine.compare``). Warm-up
windows and runs whose status is not ``ok`` are never analysed; modes that were skipped or
failed stay in every output with their reason.

The per-sample cells come from ``per_run.load_cells`` (written for the full profile, ~1e8
samples); the names notebooks read here (``load_cells``, ``load_runs``, ``LATENCY_METRICS``...)
are that module's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from pipeline.analysis import engine, figures, stats, tables
from pipeline.analysis.per_run import (  # the others are read here by notebooks and tests
    HTTP_METRICS,  # noqa: F401
    HTTP_WINDOW_METRICS,
    KEYS,
    LATENCY_METRICS,  # noqa: F401
    load_cells,  # noqa: F401
    load_runs,  # noqa: F401
    load_window_metrics,  # noqa: F401
    q_label,
)
from pipeline.analysis.tables import as_text, cell_status, note_parts, status_text

BASELINE = "native"
PATH_ORDER = ["dc", "local", "internet"]
INTERNET = "internet"
PATH_LABELS = {
    "dc": "datacenter",
    "local": "localhost",
    "internet": "internet",
    "host": "on the host",
}
QUANTILES = (0.5, 0.9, 0.95, 0.99, 0.999)
OVERHEAD_QUANTILES = (0.5, 0.99)


# --- loading ---------------------------------------------------------------------------------


# --- statuses --------------------------------------------------------------------------------


# --- summary ---------------------------------------------------------------------------------


def configuration_label(mode: str, path: str) -> str:
    """Row label: the mode's name (the path has its own column and panel)."""
    return figures.MODE_LABELS.get(mode, mode)


# The engine's comparison columns under the summary's names, per overhead level: the shift and
# ratio to native, the verdict's columns, and the minimum detectable effect's scale.
_SHIFT = {"d_{}_us": "diff", "d_{}_lo_us": "diff_lo", "d_{}_hi_us": "diff_hi",
          "ratio_{}": "estimate", "ratio_{}_lo": "lo", "ratio_{}_hi": "hi"}  # fmt: skip
_VERDICT = {"ratio_{}_eq_lo": "lo_eq", "ratio_{}_eq_hi": "hi_eq", "tost_{}_p": "tost_p",
            "diff_{}_p": "diff_p", "tost_{}_p_adj": "tost_p_adj", "diff_{}_p_adj": "diff_p_adj",
            "resolvable_{}": "resolvable", "sd_{}": "sd", "tost_{}_reason": "tost_reason",
            "verdict_{}": "verdict"}  # fmt: skip
_MDE = {"resolvable_{}_log": "resolvable_log", "resolvable_{}_direction": "resolvable_direction"}
_ENGINE = {**_SHIFT, **_VERDICT, **_MDE}


def summary_columns(quantiles=QUANTILES, overhead=OVERHEAD_QUANTILES) -> list[str]:
    def each(names: dict) -> list[str]:
        return [name.format(q_label(q)) for q in overhead for name in names]

    cols = [*KEYS, "configuration", "status", "reason", "n_runs", "n_runs_planned", "n_samples"]
    for q in quantiles:
        cols += [f"{q_label(q)}_us", f"{q_label(q)}_lo_us", f"{q_label(q)}_hi_us"]
    cols += ["baseline", "overhead_n_runs", *each(_SHIFT), "tail_note", "margin", "margin_us"]
    return [*cols, "equivalence_confidence", *each(_VERDICT), "multiplicity", "confidence"]


def row_order(frame: pd.DataFrame) -> pd.DataFrame:
    """Environment, path (each baseline directly above its modes), variant where the frame has
    one, then the project's mode order."""
    key = frame.assign(
        _p=frame["path"].map(lambda p: PATH_ORDER.index(p) if p in PATH_ORDER else 99),
        _m=frame["mode"].map(figures.mode_rank),
    )
    by = ["environment", "_p", *(["variant"] if "variant" in frame else []), "_m", "mode"]
    return key.sort_values(by).drop(columns=["_p", "_m"]).reset_index(drop=True)


def _self_shift(cell: stats.RunSamples, overhead) -> dict:
    """Native against itself: no shift, a ratio of 1, intervals from two runs on; a level
    its runs are too short for is left out."""
    nan = float("nan")
    out = {}
    for q in overhead:
        if stats.short_runs_reason(cell, q) is not None:
            continue
        ends = (0.0, 1.0) if cell.n_runs >= 2 else (nan, nan)
        lab = q_label(q)
        out |= {f"d_{lab}_us": 0.0, f"d_{lab}_lo_us": ends[0], f"d_{lab}_hi_us": ends[0],
                f"ratio_{lab}": 1.0, f"ratio_{lab}_lo": ends[1], f"ratio_{lab}_hi": ends[1]}
    return out


def summarise(
    cells: dict[tuple, stats.RunSamples],
    runs: pd.DataFrame,
    variants: Iterable[str] | None = None,
    quantiles=QUANTILES,
    overhead=OVERHEAD_QUANTILES,
    confidence: float = 0.95,
    margin: float = 0.05,
    multiplicity: str = "holm",
    internet_margin_us: float | None = None,
    headline: Mapping | None = None,
) -> pd.DataFrame:
    """One row per (environment, mode, path, variant) with the columns of ``summary_columns``.

    ``pXX_us`` (+ ``_lo_us``/``_hi_us``): geometric mean of the runs' own percentiles with its
    t interval (``stats.run_quantile_ci``); a level some run has too few samples for is NaN and
    ``tail_note`` says why. ``variants`` restricts the cells (e.g. to the variants whose
    per-sample metric was loaded); by default every variant in ``runs`` or ``cells``.

    The comparison with native on the same environment, path and variant is the comparison
    engine's (``engine.compare`` of the per-run percentiles, the table's comparisons adjusted
    together by ``multiplicity``), under the summary's names: ``d_pXX_us`` its mean per-run
    difference (``diff``), ``ratio_pXX`` the geometric mean of the per-run ratios
    (``estimate``), both with paired t intervals; ``verdict_pXX`` against the equivalence
    ``margin`` (fixed in params.yaml before the data), None for native itself and for cells
    without a comparison; ``resolvable_pXX`` the smallest difference these runs could resolve.

    With ``internet_margin_us``, rows on the Internet path are judged on the added
    microseconds instead: their ``margin`` is NaN, ``margin_us`` that margin, and
    ``resolvable_pXX`` in microseconds.
    """
    run_cells = runs[KEYS].drop_duplicates().itertuples(index=False, name=None)
    all_cells = list(dict.fromkeys([*run_cells, *cells]))
    if variants is not None:
        all_cells = [c for c in all_cells if c[3] in set(variants)]

    mine = {key: cells[key] for key in all_cells if key in cells}
    values = engine.cell_values("latency", mine, runs, {q_label(q): q for q in overhead})
    margins = {engine.MEASURES["latency"].margin: margin}
    if internet_margin_us is not None:
        margins["internet_us"] = internet_margin_us
    compared = engine.compare(values, margins, confidence, multiplicity, headline=headline)
    found = compared.set_index(["environment", "mode", "path", "variant", "statistic"])
    rows = []
    for env, mode, path, variant in all_cells:
        cell = cells.get((env, mode, path, variant))
        run_rows = tables.rows_of(runs, environment=env, mode=mode, path=path, variant=variant)
        n_measured = cell.n_runs if cell is not None else 0
        status, reason = cell_status(run_rows, n_measured)
        row = {
            "environment": env,
            "mode": mode,
            "path": path,
            "variant": variant,
            "configuration": configuration_label(mode, path),
            "status": status,
            "reason": reason,
            "n_runs": n_measured,
            "n_runs_planned": int(max(run_rows["run"].nunique(), n_measured)),
            "n_samples": cell.n_samples if cell is not None else 0,
            "baseline": BASELINE,
            "overhead_n_runs": 0,
            "confidence": confidence,
            "margin": margin,
            "equivalence_confidence": stats.equivalence_level(confidence),
        }
        if cell is not None and cell.n_samples:
            pct = stats.run_quantile_ci(cell, quantiles, confidence)
            for r in pct.itertuples():
                lab = q_label(r.q)
                row.update({f"{lab}_us": r.value, f"{lab}_lo_us": r.lo, f"{lab}_hi_us": r.hi})
            row["tail_note"] = "; ".join(r for r in pct["reason"].dropna().unique()) or None
            base = cells.get((env, BASELINE, path, variant))
            if mode == BASELINE:
                row |= _self_shift(cell, overhead)
                row["overhead_n_runs"] = cell.n_runs
            elif base is not None and base.n_samples:
                for q in overhead:
                    key = (env, mode, path, variant, q_label(q))
                    if key not in found.index:
                        continue
                    c = found.loc[key]
                    row |= {k.format(q_label(q)): c[v] for k, v in _ENGINE.items()}
                    row["overhead_n_runs"] = int(c["n_runs"])
                if path == INTERNET and internet_margin_us is not None:
                    row |= {"margin": np.nan, "margin_us": internet_margin_us}
            elif status == "ok":
                extra = f"no {BASELINE} baseline measured on path {path} ({variant})"
                row["reason"] = f"{reason}; {extra}" if reason else extra
        rows.append(row)
    mde = [name.format(q_label(q)) for q in overhead for name in _MDE]
    out = pd.DataFrame(rows, columns=[*summary_columns(quantiles, overhead), *mde])
    for col in ("n_runs", "n_runs_planned", "n_samples", "overhead_n_runs"):
        out[col] = out[col].astype("int64")
    float_cols = [c for c in out.columns if c.endswith("_us") or c.startswith("ratio_")]
    float_cols += [c for c in out.columns if c.startswith("tost_") and not c.endswith("_reason")]
    float_cols += [c for c in out.columns if c.startswith(("diff_", "resolvable_", "sd_"))
                   and not c.endswith("_direction")]  # fmt: skip
    out[float_cols] = out[float_cols].astype(float)
    for col in [c for c in out.columns if c.startswith("verdict_")
                or c.endswith(("_reason", "_direction"))]:  # fmt: skip
        out[col] = [as_text(v) or None for v in out[col]]
    out["tail_note"] = [as_text(v) or None for v in out["tail_note"]]
    out["multiplicity"] = engine.multiplicity_text(compared, multiplicity)
    return row_order(out)


def add_http_rates(summary: pd.DataFrame, windows: pd.DataFrame) -> pd.DataFrame:
    """Add achieved request rate and error / late counts per cell to an HTTP summary.

    Per run: the mean achieved rate of its measured windows and the summed counters. Per cell:
    the median rate across runs with its distribution-free interval (range and actual coverage
    when there are too few runs), and the totals of errors and late requests over all runs.
    """
    conf = float(summary["confidence"].iloc[0]) if len(summary) else 0.95
    per_run = windows.pivot_table(
        index=[*KEYS, "run"], columns="metric", values="value", aggfunc="sum", observed=True
    )
    n_windows = (
        windows[windows["metric"] == "http_achieved_rate"]
        .groupby([*KEYS, "run"], observed=True)["value"]
        .size()
    )
    per_run = per_run.reindex(columns=list(HTTP_WINDOW_METRICS))
    per_run["http_achieved_rate"] = per_run["http_achieved_rate"] / n_windows
    per_run = per_run.reset_index()
    by_cell = {
        tuple(str(k) for k in key): part
        for key, part in per_run.groupby(KEYS, observed=True, sort=False)
    }
    empty = per_run.iloc[0:0]
    extra = []
    for key in summary[KEYS].itertuples(index=False, name=None):
        mine = by_cell.get(tuple(str(k) for k in key), empty)
        rate = stats.quantile_ci(mine["http_achieved_rate"].to_numpy(), 0.5, conf)
        has = len(mine) > 0
        extra.append(
            {
                "rate_rps": rate.point,
                "rate_lo_rps": rate.lo,
                "rate_hi_rps": rate.hi,
                "rate_coverage": rate.coverage,
                "rate_ci_reached": rate.reached,
                "errors": float(mine["http_errors"].sum()) if has else np.nan,
                "late": float(mine["http_late"].sum()) if has else np.nan,
            }
        )
    return pd.concat([summary, pd.DataFrame(extra, index=summary.index)], axis=1)


def write_summary(summary: pd.DataFrame, processed_dir: Path | str, stem: str) -> list[Path]:
    """Write ``<stem>_summary.parquet`` and ``.csv``."""
    return tables.write_processed({f"{stem}_summary": summary}, processed_dir)


# --- text ------------------------------------------------------------------------------------


def fmt_us(value: float) -> str:
    """Microseconds: one decimal below 1 ms, whole microseconds above."""
    return f"{value:.1f}" if abs(value) < 1000 else f"{value:.0f}"


def _fmt_ci(point: float, lo: float, hi: float) -> str | None:
    if np.isnan(point):
        return None
    if np.isnan(lo):
        return fmt_us(point)
    return f"{fmt_us(point)} [{fmt_us(lo)}, {fmt_us(hi)}]"


def _fmt_shift(point: float, lo: float, hi: float) -> str | None:
    if np.isnan(point):
        return None
    sign = lambda v: ("+" if v >= 0 else "") + fmt_us(v)  # noqa: E731
    return sign(point) if np.isnan(lo) else f"{sign(point)} [{sign(lo)}, {sign(hi)}]"


def _note(row: pd.Series) -> str:
    parts = note_parts(row)
    if row["status"] == "ok" and row["n_runs"] < 2:
        parts.append("one run: no interval")
    tost = dict.fromkeys(as_text(row.get(f"tost_{q_label(q)}_reason")) for q in OVERHEAD_QUANTILES)
    tost.pop("", None)
    if row["status"] == "ok" and tost:
        parts.append("no TOST: " + "; ".join(tost))
    if row["status"] == "ok" and as_text(row.get("tail_note")):
        parts.append(as_text(row.get("tail_note")))
    return "; ".join(parts)


def article_table(
    summary: pd.DataFrame, columns=(0.5, 0.95, 0.99, 0.999), overhead=OVERHEAD_QUANTILES
) -> pd.DataFrame:
    """The 000 article's "Configuration | p50 | p95 | p99" with intervals, overheads, a verdict
    per overhead level (on the ratio of percentiles to native) and notes.

    Every latency is in microseconds; a skipped or failed mode shows n/a and its reason.
    """
    conf = float(summary["confidence"].iloc[0]) if len(summary) else 0.95
    ci = f"[{conf:.0%} CI]"
    table = pd.DataFrame(
        {
            "Configuration": summary["configuration"],
            "Path": summary["path"].map(lambda p: PATH_LABELS.get(p, p)),
            "Variant": summary["variant"],
        }
    )
    for q in columns:
        lab = q_label(q)
        table[f"{lab} us {ci}"] = [
            _fmt_ci(r[f"{lab}_us"], r[f"{lab}_lo_us"], r[f"{lab}_hi_us"])
            for _, r in summary.iterrows()
        ]
    for q in overhead:
        lab = q_label(q)
        table[f"Overhead {lab} us {ci}"] = [
            ("" if r["mode"] == BASELINE and r["n_runs"] else None)
            if r["mode"] == BASELINE
            else _fmt_shift(r[f"d_{lab}_us"], r[f"d_{lab}_lo_us"], r[f"d_{lab}_hi_us"])
            for _, r in summary.iterrows()
        ]
    margin = _margin(summary)
    for q in overhead:
        lab = q_label(q)
        table[f"Verdict {lab} ({tables.margin_text(margin)})"] = [
            ("" if r["n_runs"] else None) if r["mode"] == BASELINE else _verdict_cell(r, lab)
            for _, r in summary.iterrows()
        ]
    if "rate_rps" in summary.columns:
        table[f"Achieved req/s {ci}"] = [
            None
            if np.isnan(r.rate_rps)
            else f"{r.rate_rps:.1f} [{r.rate_lo_rps:.1f}, {r.rate_hi_rps:.1f}]"
            for r in summary.itertuples()
        ]
        table["Errors"] = [None if np.isnan(v) else f"{v:.0f}" for v in summary["errors"]]
        table["Late"] = [None if np.isnan(v) else f"{v:.0f}" for v in summary["late"]]
    table["Runs"] = [tables.runs_text(r.n_runs, r.n_runs_planned) for r in summary.itertuples()]
    table["Note"] = [_note(row) for _, row in summary.iterrows()]
    if summary["environment"].nunique() > 1:
        table.insert(0, "Environment", summary["environment"].to_numpy())
    return table


def _margin(summary: pd.DataFrame) -> float:
    """The table's relative margin (rows judged in microseconds have none)."""
    found = summary["margin"].dropna() if "margin" in summary.columns else pd.Series([])
    return float(found.iloc[0]) if len(found) else 0.05


def _on_shift(row) -> bool:
    """Whether the row's verdict is on the added microseconds (the Internet path)."""
    return "margin_us" in row.index and not pd.isna(row["margin_us"])


def _verdict_cell(r: pd.Series, lab: str) -> str | None:
    """A verdict cell; on a row judged in microseconds the resolvable size is in microseconds
    and the margin is named."""
    if not _on_shift(r):
        return tables.verdict_text(
            r[f"verdict_{lab}"], r[f"ratio_{lab}_lo"], r[f"ratio_{lab}_hi"], False,
            r[f"resolvable_{lab}"], r["overhead_n_runs"],
        )  # fmt: skip
    said = as_text(r[f"verdict_{lab}"])
    if not said:
        return None
    if said == "inconclusive" and np.isfinite(r[f"resolvable_{lab}"]):
        said += (f" (a shift under {fmt_us(r[f'resolvable_{lab}'])} us cannot be resolved "
                 f"with {r['overhead_n_runs']} runs)")  # fmt: skip
    return f"{said} (±{fmt_us(r['margin_us'])} us)"


def _shift_caption(summary: pd.DataFrame, confidence: float) -> str:
    """The sentence for rows judged on the added microseconds, when there are any."""
    margins = summary["margin_us"].dropna() if "margin_us" in summary.columns else []
    if not len(margins):
        return ""
    eq = stats.equivalence_level(confidence)
    return (
        " On the Internet path a margin relative to the round trip could not fail (a few "
        "percent of tens of milliseconds is milliseconds, against container effects of "
        "microseconds): there the verdict is on the mean "
        f"per-run shift in microseconds, equivalent when its {eq:.0%} t interval lies inside "
        f"±{fmt_us(float(margins.iloc[0]))} us (params.yaml, analysis.internet_margin_us), "
        "overhead (faster) when a paired t test rejects no shift."
    )


def table_caption(summary: pd.DataFrame, what: str) -> str:
    conf = float(summary["confidence"].iloc[0])
    text = (
        f"{what} per execution mode, in microseconds. Each run's own percentiles of its "
        f"measured samples (warm-up excluded); per mode their geometric mean with a {conf:.0%} "
        f"t interval. A percentile needs {stats.TAIL_SAMPLES} samples beyond it in every run "
        f"(p99: {stats.min_samples(0.99):,} per run, p99.9: {stats.min_samples(0.999):,}); "
        "below that it is n/a. Overhead: the mean per-run difference from native on the same "
        "path and variant, over the runs both measured, with its paired t interval. "
        + tables.verdict_caption(
            _margin(summary),
            conf,
            "the percentile",
            tables.first(summary, "multiplicity"),
        )
        + _shift_caption(summary, conf)
        + " Modes that could not run are listed with n/a and their reason."
    )
    if "rate_rps" in summary.columns:
        text += (
            f" Achieved req/s: median across runs of each run's mean achieved rate, {conf:.0%} "
            "distribution-free interval (the range of the runs when there are too few for it); "
            "errors and late requests are totals over all measured runs."
        )
    return text


def headline(summary: pd.DataFrame) -> str:
    """Deterministic plain-text digest of the headline numbers (checked by nbval)."""
    lines = []
    for _, r in summary.iterrows():
        head = f"{r['environment']} {r['mode']} {r['path']} {r['variant']}: {r['status']}"
        if not r["n_runs"]:
            lines.append(f"{head}, n/a ({r['reason']})")
            continue
        parts = [f"{r['n_runs']} runs", f"{r['n_samples']} samples"]
        for lab in ("p50", "p99"):
            parts.append(
                f"{lab} {r[f'{lab}_us']:.1f} [{r[f'{lab}_lo_us']:.1f}, {r[f'{lab}_hi_us']:.1f}] us"
            )
        if r["mode"] != BASELINE and r["overhead_n_runs"]:
            for lab in ("p50", "p99"):
                parts.append(
                    f"d{lab} {r[f'd_{lab}_us']:+.1f} "
                    f"[{r[f'd_{lab}_lo_us']:+.1f}, {r[f'd_{lab}_hi_us']:+.1f}]"
                )
            for lab in ("p50", "p99"):
                parts.append(f"{lab} verdict {r[f'verdict_{lab}']}")
        if "rate_rps" in summary.columns:
            parts.append(f"rate {r['rate_rps']:.1f} req/s, errors {r['errors']:.0f}")
        lines.append(f"{head}, " + ", ".join(parts))
    return "\n".join(lines)


def findings(summary: pd.DataFrame) -> str:
    """Markdown sentences: which modes add latency at the median and the p99, and how much.

    An overhead is only called one when its whole interval lies above 0; an interval that
    contains 0 is "not distinguishable from native here", which is not a proof of no overhead:
    that is the verdict's job (``stats.verdict`` on the ratio, against the margin fixed before
    the data), given after each statement.
    """
    out = []
    for _, r in summary.iterrows():
        if r["mode"] == BASELINE:
            continue
        where = PATH_LABELS.get(r["path"], r["path"])
        label = f"**{r['configuration']}** ({where}, {r['variant']})"
        if r["status"] != "ok":
            out.append(f"- {label}: not measured ({r['reason']}).")
            continue
        if not r["overhead_n_runs"]:
            out.append(f"- {label}: no native baseline on this path.")
            continue
        said = []
        for lab in ("p50", "p99"):
            d, lo, hi = r[f"d_{lab}_us"], r[f"d_{lab}_lo_us"], r[f"d_{lab}_hi_us"]
            span = f"{_fmt_shift(d, lo, hi)} us"
            if lo > 0:
                said.append(f"adds {fmt_us(d)} us at the {lab} ({span})")
            elif hi < 0:
                said.append(f"is {fmt_us(-d)} us faster at the {lab} ({span})")
            else:
                said.append(f"is not distinguishable from native at the {lab} ({span})")
            text = tables.verdict_text(
                r[f"verdict_{lab}"], r[f"ratio_{lab}_lo"], r[f"ratio_{lab}_hi"], False
            )
            p = tables.p_text(r[f"tost_{lab}_p"])
            said[-1] += f", verdict **{text}**" + (f" (TOST p {p})" if p else "")
        margin = (f"±{fmt_us(r['margin_us'])} us" if _on_shift(r)
                  else tables.margin_text(r["margin"]))  # fmt: skip
        out.append(
            f"- {label} " + "; ".join(said) + f" [{r['overhead_n_runs']} paired runs, "
            f"margin {margin}]."
        )
    return "\n".join(out)


# --- figures ---------------------------------------------------------------------------------


def ecdf_frame(
    cells: dict[tuple, stats.RunSamples], probs: np.ndarray | None = None
) -> pd.DataFrame:
    """The pooled ECDF of every cell at fixed probability levels (exact quantiles, not a
    sample of points), so a figure of 1e8 samples stays a few thousand points."""
    if probs is None:
        probs = np.unique(np.r_[np.linspace(0.005, 0.995, 100), 0.999, 0.9995, 0.9999])
    frames = []
    for (env, mode, path, variant), cell in cells.items():
        if not cell.n_samples:
            continue
        frames.append(
            pd.DataFrame(
                {
                    "environment": env,
                    "mode": mode,
                    "path": path,
                    "variant": variant,
                    "p": probs,
                    "value": stats.pooled_quantiles(cell, probs),
                }
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*KEYS, "p"])


def write_ecdf(ecdf: pd.DataFrame, processed_dir: Path | str, stem: str) -> Path:
    """``ecdf_frame``'s rows as ``<stem>_ecdf.csv`` (the value as ``value_us``): the ECDF
    figure's data, tidy, which dvc.yaml plots so that `dvc plots diff` overlays two revisions."""
    out = Path(processed_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{stem}_ecdf.csv"
    ecdf.rename(columns={"value": "value_us"}).to_csv(path, index=False, lineterminator="\n")
    return path


def _panel(frame: pd.DataFrame) -> pd.Series:
    multi_env = frame["environment"].nunique() > 1
    return pd.Series(
        [
            (f"{e}, " if multi_env else "") + f"{PATH_LABELS.get(p, p)}, {v}"
            for e, p, v in zip(frame["environment"], frame["path"], frame["variant"], strict=True)
        ],
        index=frame.index,
    )


def _panel_order(summary: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(_panel(summary)))


def ecdf_figure(
    ecdf: pd.DataFrame, summary: pd.DataFrame, what: str = "Round-trip time"
) -> tuple[alt.FacetChart, str]:
    """One panel per (path, variant): the pooled ECDF of every mode, log x."""
    frame = ecdf.copy()
    frame["panel"] = _panel(frame)
    frame["label"] = frame["mode"].map(lambda m: figures.MODE_LABELS.get(m, m))
    modes = sorted(frame["mode"].unique(), key=lambda m: (figures.mode_rank(m), m))
    scale = figures.mode_scale(modes)
    # Inline values: a study of ~50 cells exceeds altair's 5000-row guard, which is meant for
    # raw samples, not for these few quantiles per cell.
    values = frame[["mode", "panel", "p", "value"]].to_dict("records")
    chart = (
        alt.Chart(alt.Data(values=values))
        .mark_line(strokeWidth=1.8, interpolate="step-after")
        .encode(
            x=alt.X(
                "value:Q",
                title=f"{what} (log scale)",
                scale=alt.Scale(type="log", nice=False),
                # greedy overlap removal with a gap: "70 µs" and "80 µs" never touch
                axis=alt.Axis(tickCount=5, labelOverlap="greedy", labelSeparation=8,
                              labelExpr=figures.TIME_US_LABEL),
            ),
            y=alt.Y("p:Q", title="Fraction of samples ≤ x", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color(
                "mode:N",
                scale=scale,
                sort=modes,
                legend=alt.Legend(title="Mode", labelExpr=_label_expr(modes)),
            ),
            detail="mode:N",
            tooltip=[
                "mode:N",
                alt.Tooltip("p:Q", format=".4f", title="fraction of samples"),
                alt.Tooltip("value:Q", format=",.1f", title="µs"),
            ],
        )
        .properties(width=330, height=220)
        .facet(facet=alt.Facet("panel:N", title=None, sort=_panel_order(summary)), columns=2)
        .resolve_scale(x="independent")
        .properties(title=f"{what}: distribution of all measured samples per mode")
    )
    skipped = _not_measured(summary)
    caption = (
        f"{what} by execution mode: empirical CDF of the pooled samples of all measured runs "
        "(warm-up excluded), one line per mode, one panel per path and variant; x is "
        "logarithmic and each panel has its own x range (the Internet path is ~1000x slower, "
        "in ms). "
        "Lines are drawn through exact pooled quantiles at 100 levels plus the 99.9, 99.95 "
        "and 99.99th percentiles."
    )
    if skipped:
        caption += " Not measured: " + skipped + "."
    return chart, caption


def _label_expr(modes: list[str]) -> str:
    """Vega expression mapping mode ids to their labels in a legend."""
    pairs = ", ".join(f"'{m}': '{figures.MODE_LABELS.get(m, m)}'" for m in modes)
    return f"({{{pairs}}})[datum.label] || datum.label"


def _not_measured(summary: pd.DataFrame) -> str:
    rows = summary[summary["status"] != "ok"]
    seen = dict.fromkeys(
        f"{r.configuration} ({status_text(r.status, r.reason)})" for r in rows.itertuples()
    )
    return "; ".join(seen)


def percentiles_long(summary: pd.DataFrame, quantiles=QUANTILES) -> pd.DataFrame:
    """Long frame for plots: one row per (cell, percentile) with value, lo, hi."""
    frames = []
    ok = summary[summary["n_runs"] > 0]
    for q in quantiles:
        lab = q_label(q)
        frames.append(
            ok[[*KEYS, "configuration"]].assign(
                percentile=lab,
                q=q,
                value=ok[f"{lab}_us"],
                lo=ok[f"{lab}_lo_us"],
                hi=ok[f"{lab}_hi_us"],
            )
        )
    return pd.concat(frames, ignore_index=True)


def percentile_figure(
    summary: pd.DataFrame, what: str = "Round-trip time", quantiles=QUANTILES
) -> tuple[alt.FacetChart, str]:
    """Percentiles p50..p99.9 per mode with their intervals, one panel per (path, variant)."""
    frame = percentiles_long(summary, quantiles)
    frame["panel"] = _panel(frame)
    # A percentile a cell's runs are too short for is n/a (the tables say why): not drawn, and
    # a percentile no cell has leaves no empty column.
    frame = frame[np.isfinite(frame["value"].astype(float))]
    if "n_runs" in summary.columns:
        frame = frame.merge(summary[[*KEYS, "n_runs"]], on=KEYS, how="left")
    frame["label"] = frame["mode"].map(lambda m: figures.MODE_LABELS.get(m, m))
    frame["estimate"] = [f"{v:,.1f} µs" for v in frame["value"]]
    frame["interval"] = figures.interval_text(frame["lo"], frame["hi"], "{:,.1f}")
    modes = sorted(frame["mode"].unique(), key=lambda m: (figures.mode_rank(m), m))
    order = [q_label(q) for q in quantiles if q_label(q) in set(frame["percentile"])]
    conf = float(summary["confidence"].iloc[0])
    color = alt.Color(
        "mode:N",
        scale=figures.mode_scale(modes),
        sort=modes,
        legend=alt.Legend(title="Mode", labelExpr=_label_expr(modes)),
    )
    x = alt.X("percentile:N", sort=order, title="Percentile", axis=alt.Axis(labelAngle=0))
    offset = alt.XOffset("mode:N", sort=modes)
    log = alt.Scale(type="log", nice=False, zero=False, padding=6)
    y = alt.Y("value:Q", title=f"{what} (log scale)", scale=log,
              axis=alt.Axis(labelExpr=figures.TIME_US_LABEL, labelOverlap="greedy",
                            labelSeparation=4))  # fmt: skip
    base = alt.Chart(frame)
    chart = (
        alt.layer(
            base.mark_rule(strokeWidth=1.6).encode(
                x=x,
                xOffset=offset,
                y=alt.Y("lo:Q", scale=log),
                y2="hi:Q",
                color=color,
            ),
            base.mark_point(shape="diamond", size=45).encode(
                x=x,
                xOffset=offset,
                y=y,
                color=color,
                tooltip=[
                    alt.Tooltip("label:N", title="mode"),
                    "percentile:N",
                    "estimate:N",
                    alt.Tooltip("interval:N", title="interval (µs)"),
                    *([alt.Tooltip("n_runs:Q", title="runs")] if "n_runs" in frame else []),
                ],
            ),
        )
        .properties(width=330, height=220)
        .facet(facet=alt.Facet("panel:N", title=None, sort=_panel_order(summary)), columns=2)
        .resolve_scale(y="independent")
        .properties(title=f"{what}: percentiles per mode")
    )
    caption = (
        f"{what} percentiles by execution mode, one panel per path and variant (own y range, "
        "logarithmic, the Internet path in ms). A percentile a cell's runs are too short for "
        "(the tables say why) is not drawn. Diamonds: geometric mean of the runs' own "
        f"percentiles; bars: its {conf:.0%} t interval across runs (often narrower than the "
        "marker). Modes are in the same order and colour in every panel."
    )
    skipped = _not_measured(summary)
    if skipped:
        caption += " Not measured: " + skipped + "."
    return chart, caption
