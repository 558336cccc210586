"""Internet vs datacenter: is the container overhead visible beside the path's own variation?

The 001 article's question. On each path and variant, the per-run summaries of the round-trip
time (the per-run median and the per-run p99: per-run summaries are the unit of inference) are
decomposed with a linear mixed model, mode fixed and run random (``stats.variance_components``):
the between-mode spread (largest difference between modes, largest effect vs native) is set
beside the run-to-run SD of one configuration and its parts (run effect, residual). The answer
(``answer``) is one table: per variant, statistic and path, which of the two is larger and by how
much, "not resolved" where their intervals overlap, and native's own value beside them (the
Internet path's, with what it adds to the datacenter's).
"""

from __future__ import annotations

from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from pipeline.analysis import figures, stats, tables
from pipeline.analysis.latency import BASELINE, KEYS, PATH_LABELS, PATH_ORDER, q_label
from pipeline.analysis.per_run import STATISTICS, per_run_summaries  # noqa: F401

STAT_WORDS = {"p50": "median", "p99": "p99"}
COMPONENT_LABELS = {
    "sd_within": "run-to-run SD of one mode",
    "sd_run": "run effect SD",
    "sd_resid": "residual SD",
    "mode_range": "largest difference between modes",
}


def decompose(
    per_run: pd.DataFrame,
    confidence: float = 0.95,
    n_sim: int = 200,
    seed: int = 20261121,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(components, effects)``: one row per (environment, path, variant, statistic) with
    every field of ``stats.VarianceComponents``, and the per-mode effects vs native (Wald and
    parametric-bootstrap intervals) in long form."""
    rows, effects = [], []
    groups = list(per_run.groupby(["environment", "path", "variant", "statistic"], sort=False))
    fits = stats.variance_components_each([part for _, part in groups], BASELINE, confidence,
                                           n_sim, seed)  # fmt: skip
    for ((env, path, variant, stat), _), vc in zip(groups, fits, strict=True):
        keys = {"environment": env, "path": path, "variant": variant, "statistic": stat}
        rows.append({**keys, **vc.as_dict()})
        if len(vc.effects):
            effects.append(vc.effects.assign(**keys))
    comps = _containing(pd.DataFrame(rows))
    comps["ratio_within_to_range"] = comps["sd_within"] / comps["mode_range"]
    key = comps.assign(
        _p=comps["path"].map(lambda p: PATH_ORDER.index(p) if p in PATH_ORDER else 9)
    )
    comps = key.sort_values(["environment", "variant", "statistic", "_p"]).drop(columns="_p")
    eff = pd.concat(effects, ignore_index=True) if effects else pd.DataFrame()
    return comps.reset_index(drop=True), eff


# Non-negative estimates (SDs, the largest difference between modes) and the signed largest
# effect, each with its parametric-bootstrap percentile interval.
INTERVALS = {"sd_run": 0.0, "sd_resid": 0.0, "sd_within": 0.0, "mode_range": 0.0,
             "max_effect": None}  # fmt: skip


def _containing(comps: pd.DataFrame) -> pd.DataFrame:
    """Each interval widened to hold its own estimate. A percentile interval of a statistic
    that sits on a boundary (an SD fitted at 0) or is a maximum (the largest of several noisy
    differences, biased upwards) can lie wholly above the estimate: its lower end is then no
    lower bound, and the interval is taken down to the boundary (0), or to the estimate for a
    signed effect, so that it only says how large the quantity can be."""
    comps = comps.copy()
    for name, floor in INTERVALS.items():
        lo, hi = f"{name}_lo", f"{name}_hi"
        if not {name, lo, hi} <= set(comps.columns):
            continue
        below = comps[name] < comps[lo]
        comps.loc[below, lo] = comps.loc[below, name] if floor is None else floor
        above = comps[name] > comps[hi]
        comps.loc[above, hi] = comps.loc[above, name]
    return comps


def path_effects(per_run: pd.DataFrame) -> pd.DataFrame:
    """Native's median across runs of each per-run statistic, per path: the path's own cost."""
    native = per_run[per_run["mode"] == BASELINE]
    out = native.groupby(["environment", "variant", "statistic", "path"], as_index=False)[
        "value"
    ].median()
    return out.rename(columns={"value": "native_median_us"})


def fmt_time(us: float) -> str:
    """A duration in the unit a reader expects: ms from 1 ms up, us below."""
    if np.isnan(us):
        return "n/a"
    if abs(us) >= 1000:
        return f"{us / 1000:.2f} ms"
    return f"{us:.1f} us" if abs(us) >= 10 else f"{us:.2f} us"


def _factor(a: float, b: float) -> str:
    if b == 0 or np.isnan(a) or np.isnan(b):
        return "n/a"
    f = a / b
    return f"{f:.0f}x" if f >= 10 else f"{f:.1f}x"


def larger(r) -> str | None:
    """Which is larger on this path, the largest difference between modes or one mode's
    run-to-run SD, and by how much: decided only when their two intervals do not overlap
    (a difference of the two at least that clear), else "not resolved" with the estimates'
    factor. None for a model that was not fitted."""
    if r.status != "ok":
        return None
    modes = r.mode_range > r.sd_within
    factor = _factor(r.mode_range, r.sd_within) if modes else _factor(r.sd_within, r.mode_range)
    which = "modes" if modes else "run to run"
    if r.mode_range_lo > r.sd_within_hi or r.sd_within_lo > r.mode_range_hi:
        return f"{which}, {factor}"
    return f"not resolved ({which} {factor})"


def answer(components: pd.DataFrame, paths: pd.DataFrame | None = None) -> str:
    """The 001 article's question answered in one table (markdown): per variant, per-run
    statistic and path, the largest difference between modes beside one mode's run-to-run SD,
    which is larger (``larger``), and native's value (``paths``: ``path_effects``), the Internet
    path's with what it adds to the datacenter's."""
    if components.empty:
        return ""
    native = {} if paths is None else {
        (r.environment, r.variant, r.statistic, r.path): r.native_median_us
        for r in paths.itertuples()
    }  # fmt: skip
    several = components["environment"].nunique() > 1
    head = ["Variant", "Per-run statistic", "Path", "Largest difference between modes",
            "Run-to-run SD", "Larger", "Native"]  # fmt: skip
    rows = []
    for r in components.itertuples():
        key = (r.environment, r.variant, r.statistic)
        own = native.get((*key, r.path), np.nan)
        base = fmt_time(own)
        if r.path == "internet" and not np.isnan(dc := native.get((*key, "dc"), np.nan)):
            base += f" ({'+' if own >= dc else '-'}{fmt_time(abs(own - dc))})"
        where = "Internet" if r.path == "internet" else PATH_LABELS.get(r.path, r.path)
        ok = r.status == "ok"
        rows.append([
            f"`{r.variant}`", STAT_WORDS.get(r.statistic, r.statistic),
            f"`{r.environment}`, {where}" if several else where,
            (_ci(r.mode_range, r.mode_range_lo, r.mode_range_hi) if ok else None) or "n/a",
            (_ci(r.sd_within, r.sd_within_lo, r.sd_within_hi) if ok else None) or "n/a",
            larger(r) if ok else f"not fitted: {r.reason}", base,
        ])  # fmt: skip
    conf = float(components["confidence"].iloc[0])
    caption = (
        "On each path, the largest difference between two modes beside the run-to-run SD of "
        f"one mode ({conf:.0%} parametric-bootstrap intervals of a mixed model: mode fixed, run "
        "random), which is larger (not resolved where the two intervals overlap), and native's "
        "value (the Internet path's with what it adds to the datacenter's)."
    )
    return tables.to_markdown(pd.DataFrame(rows, columns=head), caption).rstrip("\n")


def _ci(point: float, lo: float, hi: float) -> str | None:
    if np.isnan(point):
        return None
    return f"{fmt_time(point)} [{fmt_time(lo)}, {fmt_time(hi)}]"


def article_table(components: pd.DataFrame) -> pd.DataFrame:
    """Path | Variant | Statistic | Runs | Modes | SDs and spread with intervals | Note."""
    conf = float(components["confidence"].iloc[0]) if len(components) else 0.95
    ci = f"[{conf:.0%} CI]"
    rows = []
    for r in components.itertuples():
        ok = r.status == "ok"
        rows.append(
            {
                "Path": PATH_LABELS.get(r.path, r.path),
                "Variant": r.variant,
                "Per-run statistic": STAT_WORDS.get(r.statistic, r.statistic),
                "Runs": r.n_runs,
                "Modes": r.n_modes,
                f"Run-to-run SD {ci}": _ci(r.sd_within, r.sd_within_lo, r.sd_within_hi),
                f"Run effect SD {ci}": _ci(r.sd_run, r.sd_run_lo, r.sd_run_hi),
                f"Residual SD {ci}": _ci(r.sd_resid, r.sd_resid_lo, r.sd_resid_hi),
                f"Largest mode difference {ci}": _ci(
                    r.mode_range, r.mode_range_lo, r.mode_range_hi
                ),
                "Largest vs native": (
                    f"{r.max_effect_mode} {r.max_effect:+.1f} us "
                    f"[{r.max_effect_lo:+.1f}, {r.max_effect_hi:+.1f}]"
                    if ok
                    else None
                ),
                "Larger": larger(r),
                "Note": "" if ok else f"not fitted: {r.reason}",
            }
        )
    table = pd.DataFrame(rows)
    if components["environment"].nunique() > 1:
        table.insert(0, "Environment", components["environment"].to_numpy())
    return table


def table_caption(components: pd.DataFrame) -> str:
    conf = float(components["confidence"].iloc[0])
    n_sim = int(components["n_sim"].iloc[0])
    return (
        "Internet vs datacenter: variance decomposition of the per-run median and p99 "
        "round-trip time with a linear mixed model (mode fixed, run random; REML, statsmodels "
        "MixedLM), per path and variant. Run-to-run SD: how much one mode's per-run value varies "
        "between runs (run effect and residual together); largest mode difference: range of "
        "the estimated mode effects, native included. Intervals: "
        f"{conf:.0%} parametric-bootstrap percentile intervals ({n_sim} data sets simulated "
        "from the fit and refitted); the largest difference is biased upwards when the true "
        "differences are smaller than the noise, and where an interval lay wholly above its "
        "estimate (an SD fitted at 0, a largest difference within the noise) it is taken down "
        "to 0: it then bounds the quantity from above only. Larger: which of the two is larger "
        "and by what factor of the estimates, decided only where their intervals do not "
        "overlap (else not resolved). Where the model could not be fitted, the note says why."
    )


def headline(components: pd.DataFrame) -> str:
    """Deterministic digest of the decomposition (checked by nbval)."""
    lines = []
    for r in components.itertuples():
        head = f"{r.environment} {r.path} {r.variant} {r.statistic}"
        if r.status != "ok":
            lines.append(f"{head}: not fitted ({r.reason})")
            continue
        lines.append(
            f"{head}: {r.n_runs} runs x {r.n_modes} modes, sd_within {r.sd_within:.1f} "
            f"[{r.sd_within_lo:.1f}, {r.sd_within_hi:.1f}], sd_run {r.sd_run:.1f}, "
            f"sd_resid {r.sd_resid:.1f}, mode_range {r.mode_range:.1f} "
            f"[{r.mode_range_lo:.1f}, {r.mode_range_hi:.1f}] us"
        )
    return "\n".join(lines)


# The Internet path's round trips are milliseconds long: its row is drawn in ms.
ROW_UNITS = {"internet": (1000.0, "ms")}
FIGURE_PANEL_WIDTH = 300


def _component_frame(components: pd.DataFrame) -> pd.DataFrame:
    ok = components[components["status"] == "ok"]
    frames = []
    for name, label in COMPONENT_LABELS.items():
        frames.append(
            ok[["environment", "path", "variant", "statistic", "n_runs"]].assign(
                component=label,
                kind="between modes" if name == "mode_range" else "run to run",
                value=ok[name],
                lo=ok[f"{name}_lo"],
                hi=ok[f"{name}_hi"],
            )
        )
    frame = pd.concat(frames, ignore_index=True)
    frame["path_label"] = frame["path"].map(lambda p: PATH_LABELS.get(p, p))
    frame["panel"] = [
        f"{STAT_WORDS.get(s, s)} RTT, {v}"
        for s, v in zip(frame["statistic"], frame["variant"], strict=True)
    ]
    return frame


def components_figure(components: pd.DataFrame) -> tuple[alt.VConcatChart, str]:
    """Per path (one row of panels each, its own log axis: µs, the Internet path in ms): the
    run-to-run SDs beside the largest mode difference, with their intervals. A value below
    the row's left edge (an SD fitted at 0) is drawn at that edge, and the caption says so."""
    frame = _component_frame(components)
    conf = float(components["confidence"].iloc[0])
    n_sim = int(components["n_sim"].iloc[0])
    row_y = alt.Y("component:N", sort=list(COMPONENT_LABELS.values()), title=None)
    color = alt.Color(
        "kind:N",
        scale=alt.Scale(domain=["run to run", "between modes"], range=["#969696", "#d6616b"]),
        legend=alt.Legend(title=None, orient="bottom"),
    )
    paths = sorted(set(frame["path"]),
                   key=lambda p: (PATH_ORDER.index(p) if p in PATH_ORDER else 9, p))  # fmt: skip
    panels = [f"{STAT_WORDS.get(s, s)} RTT, {v}" for s in STATISTICS
              for v in sorted(set(frame["variant"]))]  # fmt: skip
    rows, floors = [], []
    for i, path in enumerate(paths):
        factor, unit = ROW_UNITS.get(path, (1.0, "µs"))
        part = frame[frame["path"] == path].copy()
        for col in ("value", "lo", "hi"):
            part[col] = part[col] / factor
        values = part[["value", "lo", "hi"]].to_numpy(dtype=float).ravel()
        positive = values[np.isfinite(values) & (values > 0)]
        # Zero cannot sit on a log axis, and a lower bound a million times below the estimates
        # would squeeze them into a corner: the row starts three decades below its largest
        # estimate (or below its smallest value), and what lies below is drawn at that edge.
        top = float(np.nanmax(part["value"])) if len(part) else 1.0
        floor = max(float(positive.min()) / 3.0, top / 1000.0) if len(positive) else 0.01
        if (values[np.isfinite(values)] < floor).any():
            floors.append(f"{PATH_LABELS.get(path, path)}: {floor:.2g} {unit}")
        for col in ("value", "lo", "hi"):
            part[col] = part[col].clip(lower=floor)
        part["estimate"] = [f"{v:.3g} {unit}" for v in part["value"]]
        part["interval"] = figures.interval_text(part["lo"], part["hi"], "{:.3g}")
        domain = figures.log_domain([*part["lo"], *part["hi"], *part["value"]], pad=0.05)
        scale = figures.log_scale(domain)
        x = alt.X("value:Q", title=f"{unit} (log scale)", scale=scale,
                  axis=alt.Axis(values=figures.log_ticks(*domain, FIGURE_PANEL_WIDTH),
                                labelExpr="format(datum.value, '~g')"))  # fmt: skip
        tooltip = [alt.Tooltip("path_label:N", title="path"), "panel:N", "component:N",
                   "estimate:N", alt.Tooltip("interval:N", title=f"interval ({unit})"),
                   alt.Tooltip("n_runs:Q", title="runs")]  # fmt: skip
        base = alt.Chart(part)
        row = (
            alt.layer(
                base.mark_rule(strokeWidth=2).encode(
                    x=alt.X("lo:Q", scale=scale), x2="hi:Q", y=row_y, color=color,
                    tooltip=tooltip),
                base.mark_point(shape="diamond", size=90, filled=True).encode(
                    x=x, y=row_y, color=color, tooltip=tooltip),
            )
            .properties(width=FIGURE_PANEL_WIDTH, height=110)
            .facet(column=alt.Column("panel:N", title=None, sort=panels,
                                     header=alt.Header(labels=i == 0)))
            .properties(title=alt.TitleParams(PATH_LABELS.get(path, path), fontSize=13,
                                              anchor="start"))
        )  # fmt: skip
        rows.append(row)
    chart = alt.vconcat(*rows, spacing=14).properties(
        title="Run-to-run variation vs the differences between modes")  # fmt: skip
    caption = (
        "Internet vs datacenter. For each path (rows) and per-run statistic of the round-trip "
        "time (columns), diamonds are the mixed-model estimates: grey the run-to-run SD of one "
        "mode and its two parts (run effect shared by all modes of a run, residual), red the "
        "largest difference between two modes. Bars: "
        f"{conf:.0%} parametric-bootstrap intervals ({n_sim} refits). Each row has its own "
        "logarithmic axis, in µs, the Internet path's in ms; within a row the components "
        "compare directly."
    )
    if floors:
        caption += (" A value below a row's left edge (an SD fitted at 0, a lower bound near "
                    "0) is drawn at that edge (" + "; ".join(floors) + ").")  # fmt: skip
    caption += figures.outside_text(
        frame, "value", "lo", "hi",
        lambda r: f"{r['path_label']} {r['panel']}, {r['component']} (µs)")  # fmt: skip
    failed = components[components["status"] != "ok"]
    if len(failed):
        caption += " Not fitted: " + "; ".join(
            f"{PATH_LABELS.get(r.path, r.path)} {r.variant} {r.statistic} ({r.reason})"
            for r in failed.itertuples()
        )
        caption += "."
    return chart, caption


def runs_figure(per_run: pd.DataFrame) -> tuple[alt.FacetChart, str]:
    """The per-run values themselves: one dot per run and mode, one panel per path."""
    frame = per_run.copy()
    frame["path_label"] = frame["path"].map(lambda p: PATH_LABELS.get(p, p))
    frame["label"] = frame["mode"].map(lambda m: figures.MODE_LABELS.get(m, m))
    frame["panel"] = [
        f"{PATH_LABELS.get(p, p)}: {STAT_WORDS.get(s, s)} RTT, {v}"
        for p, s, v in zip(frame["path"], frame["statistic"], frame["variant"], strict=True)
    ]
    order = list(
        dict.fromkeys(
            frame.assign(
                _p=frame["path"].map(lambda p: PATH_ORDER.index(p) if p in PATH_ORDER else 9)
            ).sort_values(["_p", "statistic", "variant"])["panel"]
        )
    )
    modes = sorted(frame["mode"].unique(), key=lambda m: (figures.mode_rank(m), m))
    labels = [figures.MODE_LABELS.get(m, m) for m in modes]
    chart = (
        alt.Chart(frame)
        .mark_line(point=alt.OverlayMarkDef(size=40, filled=True), strokeWidth=0.8, opacity=0.8)
        .encode(
            x=alt.X("label:N", sort=labels, title=None, axis=alt.Axis(labelAngle=-35)),
            y=alt.Y("value:Q", title="Per-run RTT statistic", scale=alt.Scale(zero=False),
                    axis=alt.Axis(labelExpr=figures.TIME_US_LABEL)),  # the Internet path in ms
            color=alt.Color("run:O", title="Run", scale=alt.Scale(scheme="tableau10")),
            detail="run:O",
            tooltip=[alt.Tooltip("label:N", title="mode"), "run:O",
                     alt.Tooltip("value:Q", format=",.1f", title="µs")],
        )
        .properties(width=220, height=180)
        .facet(facet=alt.Facet("panel:N", title=None, sort=order), columns=4)
        .resolve_scale(y="independent", x="independent")
        .properties(title="Per-run RTT by mode: runs (lines) against modes (x)")
    )
    caption = (
        "Per-run median and p99 round-trip time by mode, one panel per path, statistic and "
        "variant (own y range; µs, the Internet path in ms). Each dot is one run of one mode; "
        "lines join the modes of the same run. Parallel lines mean a shared run effect; lines "
        "that move together by more than the modes differ are the 001 article's 'variance "
        "between tests is larger than the delta between configurations'."
    )
    return chart, caption


def write_outputs(
    per_run: pd.DataFrame,
    components: pd.DataFrame,
    effects: pd.DataFrame,
    processed_dir: Path | str,
) -> list[Path]:
    """Write the per-run summaries, the components and the mode effects (parquet + csv)."""
    out = Path(processed_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, frame in (
        ("latency_per_run", per_run),
        ("internet_vs_dc_components", components),
        ("internet_vs_dc_effects", effects),
    ):
        paths += [out / f"{name}.parquet", out / f"{name}.csv"]
        frame.to_parquet(paths[-2], index=False)
        frame.to_csv(paths[-1], index=False, lineterminator="\n")
    return paths


__all__ = [
    "KEYS",
    "STATISTICS",
    "answer",
    "article_table",
    "components_figure",
    "decompose",
    "headline",
    "larger",
    "path_effects",
    "per_run_summaries",
    "q_label",
    "runs_figure",
    "table_caption",
    "write_outputs",
]
