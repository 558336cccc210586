"""Orchestration times per variant: the median over every timed repetition of every run, with
a distribution-free interval from order statistics (pipeline.analysis.stats.quantile_ci).

Repetitions of one run share that run's Swarm state, so pooling them treats them as
independent draws: the interval is as wide as the data allow, not wider for the runs'
clustering. ``n_runs`` says how many runs the samples came from. A variant with no ok run is
kept as a row with no numbers and the reasons of its failed or skipped runs.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline import catalogue
from pipeline.analysis import tables
from pipeline.analysis.stats import log_ratio_ci, quantile_ci
from pipeline.analysis.tables import as_text, cell_status, status_text
from pipeline.capabilities import serving

KEYS = ["environment", "mode", "variant"]
COLUMNS = [*KEYS, "replicas", "max_replicas", "n", "n_runs", "median_s", "lo_s", "hi_s",
           "coverage", "reached", "not_ok", "reason"]  # fmt: skip


def _replicas(samples: pd.DataFrame) -> str:
    """The replica count(s) reached, e.g. "10"; "3,10" if runs differ (changed cap)."""
    counts = samples.loc[samples["metric"] == "orchestration_replicas", "value"]
    return ",".join(str(int(v)) for v in sorted(counts.unique()))


def _cap(runs: pd.DataFrame) -> str:
    caps = {json.loads(n).get("max_replicas", "") for n in runs["notes"].dropna()}
    return ",".join(sorted(c for c in caps if c))


def summarise(samples: pd.DataFrame, runs: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """One row per (environment, mode, variant) the runs table plans."""
    measured = samples[~samples["warmup"]]
    rows = []
    for key, planned in runs.groupby(KEYS, sort=True):
        ok = planned[planned["status"] == "ok"]
        mine = measured.merge(ok[[*KEYS, "run"]], on=[*KEYS, "run"])
        times = mine.loc[mine["metric"] == "orchestration_s", "value"].to_numpy(float)
        bad = planned[planned["status"] != "ok"]
        reason = "; ".join(f"run {r.run} {r.status}: {r.reason}" for r in bad.itertuples())
        ci = quantile_ci(times, 0.5, confidence)
        rows.append(
            {
                **dict(zip(KEYS, key, strict=True)),
                "replicas": _replicas(mine),
                "max_replicas": _cap(ok),
                "n": int(times.size),
                "n_runs": int(mine.loc[mine["metric"] == "orchestration_s", "run"].nunique()),
                "median_s": ci.point,
                "lo_s": ci.lo,
                "hi_s": ci.hi,
                "coverage": ci.coverage,
                "reached": ci.reached,
                "not_ok": len(bad),
                "reason": reason,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


# --- the summarise-orchestration stage: per-run statistics, article table, figure ------------
#
# ``summarise`` above pools every repetition. The stage reports runs as the unit of inference:
# each run's value is the median of its repetitions (they share the run's Swarm state), and the
# median over runs gets a distribution-free interval; the pooled numbers stay in the summary
# for comparison. With too few runs for the stated level the interval is the runs' range and
# its coverage is said (the study profile's 3 runs cover 75%).

METRIC_S = "orchestration_s"
CELL = ["environment", "mode", "path", "variant"]
# The 000 article's rows (Swarm column) and how many replicas each variant aims at.
OPERATIONS = {
    "create": ("Service create (first deploy)", 1),
    "scale-10": ("Scale 1 to 10 replicas", 10),
    "scale-50": ("Scale 1 to 50 replicas", 50),
    "update-10": ("Rolling update (10 replicas)", 10),
}
# The orchestrators, by the mode that drives each, and the one the other is compared with: the
# 000 article's "Docker Swarm vs Kubernetes (kubeadm)" table gives Swarm's time over Kubernetes'.
ORCHESTRATORS = {m: catalogue.platform(m) for m in serving("orchestration")}
REFERENCE = catalogue.on_platform(ORCHESTRATORS, "Kubernetes")
STAGE_COLUMNS = [
    *CELL, "benchmark", "operation", "status", "reason", "wanted", "replicas", "max_replicas",
    "capped", "n_runs", "n_runs_planned", "repeats", "n",
    "median_s", "median_lo_s", "median_hi_s", "median_coverage", "median_ci_reached",
    "pooled_median_s", "pooled_lo_s", "pooled_hi_s", "pooled_coverage",
    "reference", "ratio", "ratio_lo", "ratio_hi", "ratio_n_runs", "confidence",
]  # fmt: skip


def _variant_rank(variant: str) -> tuple[int, str]:
    order = list(OPERATIONS)
    return (order.index(variant) if variant in order else len(order), variant)


def per_run(samples: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per ok run and variant: the median of its timed repetitions (``value``, s),
    how many there were and the replicas reached."""
    ok = runs.loc[runs["status"] == "ok", [*CELL, "run"]].drop_duplicates()
    measured = samples[~samples["warmup"].astype(bool)].merge(ok, on=[*CELL, "run"])
    times = measured[measured["metric"] == METRIC_S]
    reps = measured[measured["metric"] == "orchestration_replicas"]
    out = times.groupby([*CELL, "run"], as_index=False)["value"].agg(["median", "count"])
    out = out.rename(columns={"median": "value", "count": "repeats"})
    reached = reps.groupby([*CELL, "run"], as_index=False)["value"].min()
    out = out.merge(reached.rename(columns={"value": "replicas"}), on=[*CELL, "run"], how="left")
    return out.sort_values([*CELL, "run"], key=_sort_key, ignore_index=True)


def _sort_key(col: pd.Series) -> pd.Series:
    return col.map(_variant_rank) if col.name == "variant" else col


def stage_summary(
    samples: pd.DataFrame, runs: pd.DataFrame, confidence: float = 0.95
) -> pd.DataFrame:
    """One row per planned (environment, mode, path, variant) with ``STAGE_COLUMNS``: the
    median over runs of the per-run medians with its order-statistic interval, the pooled
    median of ``summarise``, the replicas reached, the cap and whether it bit."""
    values = per_run(samples, runs)
    pooled = summarise(samples, runs, confidence).set_index(KEYS)
    cells = runs[CELL].drop_duplicates().itertuples(index=False, name=None)
    rows = []
    for key in sorted(cells, key=lambda c: (c[0], c[1], c[2], _variant_rank(c[3]))):
        env, mode, path, variant = key
        run_rows = runs[(runs[CELL] == pd.Series(key, index=CELL)).all(axis=1)]
        mine = values[(values[CELL] == pd.Series(key, index=CELL)).all(axis=1)]
        ci = quantile_ci(mine["value"].to_numpy(float), 0.5, confidence)
        if ci.n < 2:  # one run's value is not an interval
            ci = replace(ci, lo=np.nan, hi=np.nan)
        status, reason = cell_status(run_rows, ci.n, METRIC_S)
        p = pooled.loc[(env, mode, variant)] if (env, mode, variant) in pooled.index else None
        wanted = OPERATIONS.get(variant, ("", np.nan))[1]
        reached = sorted({int(v) for v in mine["replicas"].dropna()})
        rows.append({
            **dict(zip(CELL, key, strict=True)), "benchmark": "orchestration",
            "operation": OPERATIONS.get(variant, (variant, 0))[0], "status": status,
            "reason": reason, "wanted": wanted,
            "replicas": ",".join(str(r) for r in reached),
            "max_replicas": p["max_replicas"] if p is not None else "",
            "capped": bool(reached) and max(reached) < wanted,
            "n_runs": ci.n, "n_runs_planned": int(max(run_rows["run"].nunique(), ci.n)),
            "repeats": int(mine["repeats"].max()) if len(mine) else 0,
            "n": int(mine["repeats"].sum()),
            "median_s": ci.point, "median_lo_s": ci.lo, "median_hi_s": ci.hi,
            "median_coverage": ci.coverage, "median_ci_reached": ci.reached,
            "pooled_median_s": p["median_s"] if p is not None else np.nan,
            "pooled_lo_s": p["lo_s"] if p is not None else np.nan,
            "pooled_hi_s": p["hi_s"] if p is not None else np.nan,
            "pooled_coverage": p["coverage"] if p is not None else np.nan,
            **_reference_ratio(values, key, confidence),
            "confidence": confidence,
        })  # fmt: skip
    return pd.DataFrame(rows, columns=STAGE_COLUMNS)


def _reference_ratio(values: pd.DataFrame, key: tuple, confidence: float) -> dict:
    """A mode's time over the reference orchestrator's (REFERENCE) for the same operation:
    the geometric mean of the per-run ratios of run medians, paired by run (both ran in each
    run, interleaved), with its paired t interval (``stats.log_ratio_ci``). Empty for the
    reference itself and where it did not run."""
    env, mode, path, variant = key
    empty = {"reference": "", "ratio": np.nan, "ratio_lo": np.nan, "ratio_hi": np.nan,
             "ratio_n_runs": 0}  # fmt: skip
    cell = (values["environment"] == env) & (values["path"] == path) & (
        values["variant"] == variant
    )
    mine = values[cell & (values["mode"] == mode)].set_index("run")["value"]
    theirs = values[cell & (values["mode"] == REFERENCE)].set_index("run")["value"]
    if mode == REFERENCE or theirs.empty:
        return empty
    runs = mine.index.intersection(theirs.index)
    ci = log_ratio_ci(mine[runs].to_numpy(float), theirs[runs].to_numpy(float), confidence)
    return {"reference": REFERENCE, "ratio": ci.ratio, "ratio_lo": ci.lo, "ratio_hi": ci.hi,
            "ratio_n_runs": ci.n_runs}  # fmt: skip


def _seconds(point: float, lo: float, hi: float) -> str | None:
    if point is None or np.isnan(point):
        return None
    return tables.interval_text(point, lo, hi, ".2f" if point < 10 else ".1f")


def replicas_text(r) -> str | None:
    """ "10", or "20 (capped at 20; the article: 50)" when the profile's cap bit."""
    if not r.replicas:
        return None
    if r.capped:
        return f"{r.replicas} (capped at {r.max_replicas}; the article: {r.wanted})"
    return str(r.replicas)


def _note(r) -> str:
    parts = [as_text(r.reason) if r.status == "ok" else status_text(r.status, r.reason)]
    if r.status == "ok" and r.n_runs == 1:
        parts.append("one run: no interval")
    elif r.status == "ok" and r.n_runs and not r.median_ci_reached:
        parts.append(
            f"interval is the range of {r.n_runs} runs (coverage {r.median_coverage:.1%} < "
            f"{r.confidence:.0%})"
        )
    return "; ".join(p for p in parts if p)


def article_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The 000 article's "Scenario | Docker Swarm" table: Operation | Replicas reached |
    Median s [CI] | Runs x repetitions | Note; a variant that did not run shows n/a and why."""
    conf = float(summary["confidence"].iloc[0]) if len(summary) else 0.95
    table = pd.DataFrame(
        {
            "Operation": summary["operation"],
            "Replicas reached": [replicas_text(r) for r in summary.itertuples()],
            f"Median s [{conf:.0%} CI]": [
                _seconds(r.median_s, r.median_lo_s, r.median_hi_s) for r in summary.itertuples()
            ],
            "Runs x repetitions": [
                f"{r.n_runs} x {r.repeats}" if r.n_runs else f"0 of {r.n_runs_planned}"
                for r in summary.itertuples()
            ],
            "Note": [_note(r) for r in summary.itertuples()],
        }
    )
    if len(summary) and summary["mode"].nunique() > 1:
        table.insert(0, "Orchestrator", [ORCHESTRATORS.get(m, m) for m in summary["mode"]])
    references = summary.get("reference", pd.Series(dtype=str)).fillna("")
    if len(summary) and references.astype(bool).any():
        name = ORCHESTRATORS[REFERENCE]
        table[f"Time relative to {name} [{conf:.0%} CI]"] = [
            tables.interval_text(r.ratio, r.ratio_lo, r.ratio_hi, ".2f")
            if r.reference and not np.isnan(r.ratio) else None
            for r in summary.itertuples()
        ]  # fmt: skip
    if len(summary) and summary["environment"].nunique() > 1:
        table.insert(0, "Environment", summary["environment"].to_numpy())
    return table


def table_caption(summary: pd.DataFrame) -> str:
    conf = float(summary["confidence"].iloc[0]) if len(summary) else 0.95
    caps = sorted({str(c) for c in summary.get("max_replicas", []) if as_text(c)})
    cap = f" This profile caps replicas at {', '.join(caps)}." if caps else ""
    kubernetes = ""
    if REFERENCE in set(summary.get("mode", [])):
        kubernetes = (
            " Kubernetes (the article's other column): seconds from the `kubectl` command "
            "(create, scale, patch of a Deployment) to every wanted pod accepting TCP "
            "connections, dialled every 10 ms from the kubectl host, which learns the pod "
            "addresses from a watch of the pods; its rolling update uses Kubernetes' default "
            "strategy (25% surge, 25% unavailable), Swarm's Docker's (one at a time, stop "
            "first). Time relative to Kubernetes: the geometric mean of the per-run ratios of run "
            f"medians with its paired t interval ({conf:.0%})."
        )
    return (
        "Orchestration (the 000 article's table): for Docker Swarm, seconds from the "
        "`docker service` command to every wanted replica accepting TCP connections, dialled "
        "every 10 ms from a probe container on the service's overlay network (services use "
        f"`--endpoint-mode dnsrr`: this kernel has no IPVS).{kubernetes} Per run: the "
        "median of its timed "
        f"repetitions; median across runs with a {conf:.0%} distribution-free (order-statistic) "
        "interval. Replicas reached: the count every repetition waited for; a variant above the "
        f"profile's cap runs at the cap and keeps its name.{cap} Operations that could not run "
        "are listed with n/a and their reason."
    )


def headline(summary: pd.DataFrame) -> str:
    """Deterministic digest of the headline numbers (checked by nbval)."""
    lines = []
    for r in summary.itertuples():
        head = f"{r.environment} {r.mode} {r.variant}: {r.status}"
        if not r.n_runs:
            lines.append(f"{head}, n/a ({r.reason})")
            continue
        cov = "" if r.median_ci_reached else f" (coverage {r.median_coverage:.4f})"
        ratio = ""
        if getattr(r, "reference", "") and not np.isnan(r.ratio):
            ratio = (f"; over {r.reference} {r.ratio:.3f} [{r.ratio_lo:.3f}, "
                     f"{r.ratio_hi:.3f}] ({r.ratio_n_runs} runs)")  # fmt: skip
        lines.append(
            f"{head}, replicas {replicas_text(r)}, {r.n_runs} runs x {r.repeats}, median "
            f"{r.median_s:.3f} s [{r.median_lo_s:.3f}, {r.median_hi_s:.3f}]{cov}; pooled "
            f"{r.pooled_median_s:.3f} s [{r.pooled_lo_s:.3f}, {r.pooled_hi_s:.3f}]{ratio}"
        )
    return "\n".join(lines)


def figure(summary: pd.DataFrame, values: pd.DataFrame):
    """Seconds per operation: each run's median (grey dots), the median across runs (diamond)
    with its interval (bar), in the Swarm mode's colour; operations not measured say why.
    Returns the chart and its caption."""
    import altair as alt

    from pipeline.analysis import figures

    frame = summary.copy()
    several = frame["mode"].nunique() > 1
    frame["label"] = [
        (f"{r.operation} (capped: {r.replicas} reached)" if r.capped else r.operation)
        + (f", {ORCHESTRATORS.get(r.mode, r.mode)}" if several else "")
        for r in frame.itertuples()
    ]
    frame["status_text"] = [
        "" if st == "ok" else status_text(st, why)
        for st, why in zip(frame["status"], frame["reason"], strict=True)
    ]
    order = list(dict.fromkeys(frame["label"]))
    points = values.merge(frame[[*CELL, "label"]], on=CELL)
    measured = frame[frame["n_runs"] > 0]
    y = alt.Y("label:N", sort=order, title=None)
    color = alt.Color("mode:N", scale=figures.mode_scale(frame["mode"]), legend=None)
    top = float(np.nanmax(np.r_[measured["median_hi_s"], points["value"], 1.0]))
    x = alt.X("median_s:Q", title="seconds until every replica accepts",
              scale=alt.Scale(domain=[0, top * 1.08]))  # fmt: skip
    chart = alt.layer(
        alt.Chart(points).mark_circle(size=26, color="#9a9a9a", opacity=0.8)
        .encode(x="value:Q", y=y, tooltip=["run:O", alt.Tooltip("value:Q", format=".3f")]),
        alt.Chart(measured).mark_rule(strokeWidth=2)
        .encode(x="median_lo_s:Q", x2="median_hi_s:Q", y=y, color=color),
        alt.Chart(measured).mark_point(shape="diamond", size=120, filled=True)
        .encode(x=x, y=y, color=color, tooltip=["operation:N", "replicas:N", "n_runs:Q",
                alt.Tooltip("median_s:Q", format=".3f")]),
        alt.Chart(frame[frame["status"] != "ok"])
        .mark_text(align="left", dx=4, color="#b30000", fontStyle="italic", limit=420)
        .encode(x=alt.datum(0), y=y, text="status_text:N"),
    ).properties(title=_figure_title(frame), width=420)  # fmt: skip
    conf = float(frame["confidence"].iloc[0]) if len(frame) else 0.95
    short = [r.operation for r in measured.itertuples() if not r.median_ci_reached]
    names = [ORCHESTRATORS.get(m, m) for m in dict.fromkeys(frame["mode"])]
    caption = (
        f"{' and '.join(names)}: seconds from the command until every wanted replica "
        "accepts TCP connections, per operation. Grey dots: each run's median of its timed "
        "repetitions; diamonds: the median across runs, in the orchestrator's colour; bars: its "
        f"{conf:.0%} distribution-free order-statistic interval."
    )
    if short:
        caption += (
            f" With too few runs for {conf:.0%} ({', '.join(short)}) the bar spans all runs "
            "and the table gives its coverage."
        )
    capped = [f"{r.operation} at {r.replicas}" for r in frame.itertuples() if r.capped]
    if capped:
        caption += " Capped by the profile: " + "; ".join(capped) + " replicas."
    skipped = [f"{r.operation} ({r.status_text})" for r in frame.itertuples() if r.status != "ok"]
    if skipped:
        caption += " Not measured: " + "; ".join(skipped) + "."
    return chart, caption


def _figure_title(frame: pd.DataFrame) -> str:
    modes = list(dict.fromkeys(frame["mode"]))
    if modes == ["swarm-overlay"]:
        return "Docker Swarm orchestration (Swarm overlay, dnsrr)"
    return "Orchestration: " + " and ".join(ORCHESTRATORS.get(m, m) for m in modes)


def write_summary(
    summary: pd.DataFrame, values: pd.DataFrame, processed_dir: Path | str
) -> list[Path]:
    """``orchestration_summary.{parquet,csv}`` and ``orchestration_per_run.parquet``."""
    frames = {"orchestration_summary": summary, "orchestration_per_run": values}
    return tables.write_processed(frames, processed_dir)
