"""The isolation spectrum: per benchmark and statistic, the modes that differ only in how the
server is isolated, from the bare process to a virtual machine, side by side.

The classes, in order: native (the line at 1), runc, crun, gVisor (runsc), then the VM; within
a runtime, rootful before rootless. The spectrum's modes are those that change only the
runtime or the privilege of the container (``SPECTRUM``); the network modes (host network, NAT,
proxy, overlay, macvlan) are another question and stay out.

Nothing is recomputed here. A container mode's ratio to native, its interval, verdict and runs
are the comparison engine's, as its benchmark's summary stage wrote them (``article.comparisons``
reads them in one shape). The VM enters when a second environment was measured: the environment
comparison's ``native`` row (``environments.compare``: that environment's native against the
reference's, Welch interval) is the VM's place on the spectrum, and the modes measured inside
that environment follow it, each against its own environment's native (the cost of the
container on top of the VM). A spectrum mode a summary lists as skipped is kept with its
reason, one it does not list is "not in the campaign"; neither is drawn.

A container's OCI runtime is the one its runs' notes record (``oci_runtime``: Docker's modes
and rootful Podman write it) where they do, else the mode's declared one (``SPECTRUM``): Podman
runs its default, crun where installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from pipeline import catalogue
from pipeline.analysis import figures
from pipeline.analysis.article.comparisons import MEASURES, comparisons, from_frame
from pipeline.analysis.article.inputs import path_label
from pipeline.benchmarks import BENCHMARKS
from pipeline.capabilities import serving
from pipeline.data import schema

BASELINE = "native"
VM = "VM"
ISOLATION_ORDER = ["native", "runc", "crun", "gVisor", VM]
PRIVILEGE_ORDER = ["rootful", "rootless"]
# mode -> (declared OCI runtime class, privilege): the modes of the spectrum, in their order.
# They are the container modes the host benchmarks run in (pipeline/capabilities.py) that add no
# orchestrator, with the runtime and privilege their catalogue entries declare.
SPECTRUM: dict[str, tuple[str, str]] = dict(sorted(
    ((m, (catalogue.CATALOGUE[m].runtime, "rootless" if catalogue.CATALOGUE[m].rootless
          else "rootful"))
     for m in serving("cpu") if catalogue.family(m) in ("network driver", "runtime", "rootless")),
    key=lambda kv: (ISOLATION_ORDER.index(kv[1][0]), PRIVILEGE_ORDER.index(kv[1][1]),
                    catalogue.rank(kv[0]))))  # fmt: skip
# What the runs' notes call a runtime -> its class
RUNTIME_CLASS = {"runc": "runc", "crun": "crun", "runsc": "gVisor"}
VM_COLOR = "#7b4173"
# The statistic the figure draws; the table keeps every one the summaries give (p99 too).
FIGURE_STATISTICS = (None, "p50")
PANEL_KEYS = ["benchmark", "path", "metric"]
COLUMNS = [
    "benchmark", "metric", "variant", "statistic", "path", "environment", "reference", "mode",
    "isolation", "privilege", "runtime_recorded", "rank", "ratio", "lo", "hi", "verdict",
    "n_runs", "n_runs_reference", "higher_is_better", "confidence", "margin", "source",
]  # fmt: skip
MISSING_COLUMNS = ["benchmark", "environment", "mode", "status", "reason"]


def _comparison_frame(found) -> pd.DataFrame:
    rows = [{"benchmark": c.benchmark, "environment": c.environment, "mode": c.mode,
             "path": c.path, "variant": c.variant, "statistic": c.statistic, "metric": c.key,
             "ratio": c.ratio, "lo": c.lo, "hi": c.hi, "verdict": c.verdict,
             "n_runs": c.n_runs, "higher_is_better": c.higher_is_better,
             "confidence": c.confidence, "margin": c.margin,
             "source": str(c.source)} for c in found]  # fmt: skip
    return pd.DataFrame(rows, columns=["benchmark", "environment", "mode", "path", "variant",
                                       "statistic", "metric", "ratio", "lo", "hi", "verdict",
                                       "n_runs", "higher_is_better", "confidence", "margin",
                                       "source"])


def load(
    processed_dir: Path | str, compared: pd.DataFrame | None = None, source: str = "engine"
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    """From the summaries under ``processed_dir``: every comparison with native (one row each,
    the columns ``spectrum`` reads), the spectrum modes the summaries list as not ok (skipped,
    failed) with their reason, and the environment comparison (None without one). With
    ``compared`` (``engine.compare``'s frame, from ``source``) the comparisons are its own."""
    processed = Path(processed_dir)
    found = _comparison_frame(comparisons(processed) if compared is None
                              else from_frame(compared, source))  # fmt: skip
    missing = []
    for path in sorted(processed.glob("*/*_summary.parquet")):
        directory = path.parent.name
        if not path.stem.startswith(directory):  # another stage's table in the same directory
            continue
        frame = pd.read_parquet(path)
        if not {"mode", "status"} <= set(frame.columns):
            continue
        frame = frame[frame["mode"].isin(SPECTRUM) & (frame["status"] != "ok")]
        for r in frame.to_dict("records"):
            missing.append({"benchmark": directory, "environment": str(r.get("environment", "")),
                            "mode": r["mode"], "status": r["status"],
                            "reason": r.get("reason")})  # fmt: skip
    missing = pd.DataFrame(missing, columns=MISSING_COLUMNS).drop_duplicates(
        ["benchmark", "environment", "mode"])  # fmt: skip
    env_file = processed / "environments" / "environments.parquet"
    env = pd.read_parquet(env_file).assign(source=str(env_file)) if env_file.exists() else None
    return found, missing, env


def recorded_runtimes(raw_dir: Path | str) -> dict[tuple[str, str, str], str]:
    """(environment, benchmark, mode) -> the OCI runtime the runs' notes record (``oci_runtime``),
    where every measured run of the cell that records one names the same."""
    raw = Path(raw_dir)
    seen: dict[tuple[str, str, str], set[str]] = {}
    names = sorted(p.name for p in raw.iterdir() if p.is_dir()) if raw.is_dir() else []
    for benchmark in names:
        if not schema.has_dataset(raw, benchmark):
            continue
        runs = schema.read_dataset(raw, benchmark, "runs")
        runs = runs[runs["mode"].isin(SPECTRUM) & (runs["status"] == "ok")]
        for r in runs[["environment", "mode", "notes"]].itertuples(index=False):
            try:
                notes = json.loads(r.notes) if isinstance(r.notes, str) and r.notes else {}
            except json.JSONDecodeError:
                continue
            runtime = notes.get("oci_runtime") if isinstance(notes, dict) else None
            if runtime in RUNTIME_CLASS:
                seen.setdefault((r.environment, benchmark, r.mode), set()).add(runtime)
    return {k: next(iter(v)) for k, v in seen.items() if len(v) == 1}


def _rank(isolation: str, privilege: str | None, mode: str) -> tuple:
    iso = ISOLATION_ORDER.index(isolation) if isolation in ISOLATION_ORDER else len(
        ISOLATION_ORDER) - 1  # an unknown runtime: after gVisor, before the VM  # fmt: skip
    priv = PRIVILEGE_ORDER.index(privilege) if privilege in PRIVILEGE_ORDER else 0
    return iso, priv, figures.mode_rank(mode)


def _vm_metric(row, keys: set[str]) -> tuple[str, str | None]:
    """The comparisons' metric key and statistic of an environment-comparison row (its
    ``metric`` is a percentile, or the summary's metric name, which the comparisons drop when a
    variant has only one)."""
    variant, metric = str(row["variant"]), str(row["metric"])
    if metric in ("p50", "p95", "p99"):
        return f"{variant}_{metric}", metric
    long = f"{variant}_{metric}".replace(".", "_")
    return (long if long in keys else variant), None


def spectrum(
    found: pd.DataFrame,
    environments: pd.DataFrame | None = None,
    runtimes: dict[tuple[str, str, str], str] | None = None,
) -> pd.DataFrame:
    """The tidy spectrum table (``COLUMNS``), in order: per benchmark (the benchmarks' order),
    path and metric, the spectrum's modes by ``rank``.

    ``found``: comparisons with native (``load``); only the ``SPECTRUM`` modes are kept.
    ``environments``: ``environments.compare``'s table; each ``native`` row is the VM (its
    environment against the reference's native), and the environment's own modes follow it.
    ``runtimes``: ``recorded_runtimes``. Only panels with a spectrum mode or the VM appear.
    """
    runtimes = runtimes or {}
    rows = found[found["mode"].isin(SPECTRUM)].copy()
    reference = None
    vm = pd.DataFrame()
    if environments is not None and len(environments):
        native = environments[environments["comparison"] == "native"]
        reference = str(environments["reference"].iloc[0])
        keys = set(found["metric"])
        vm_rows = []
        for r in native.to_dict("records"):
            metric, statistic = _vm_metric(r, keys)
            vm_rows.append({
                "benchmark": r["benchmark"], "environment": r["environment"],
                "reference": r["reference"], "mode": BASELINE, "path": r["path"],
                "variant": r["variant"], "statistic": statistic, "metric": metric,
                "ratio": r["ratio"], "lo": r["lo"], "hi": r["hi"], "verdict": r["verdict"],
                "n_runs": r["n_environment"], "n_runs_reference": r["n_reference"],
                "higher_is_better": bool(r["higher_is_better"]),
                "confidence": r.get("confidence"), "margin": r.get("margin"),
                "source": r.get("source"), "isolation": VM, "privilege": None,
                "runtime_recorded": None,
            })  # fmt: skip
        vm = pd.DataFrame(vm_rows)
    if reference is None:
        envs = list(dict.fromkeys(rows["environment"]))
        reference = envs[0] if envs else ""
    rows["reference"] = rows["environment"]
    rows["n_runs_reference"] = np.nan
    recorded = [runtimes.get((e, b, m)) for e, b, m in
                zip(rows["environment"], rows["benchmark"], rows["mode"], strict=True)]  # fmt: skip
    rows["runtime_recorded"] = recorded
    rows["isolation"] = [RUNTIME_CLASS[r] if r else SPECTRUM[m][0]
                         for r, m in zip(recorded, rows["mode"], strict=True)]  # fmt: skip
    rows["privilege"] = [SPECTRUM[m][1] for m in rows["mode"]]
    out = pd.concat([rows, vm], ignore_index=True) if len(vm) else rows
    if out.empty:
        return pd.DataFrame(columns=COLUMNS)
    # the reference's modes, then each other environment: its VM, then the modes inside it
    env_order = [reference, *sorted(set(out["environment"]) - {reference})]
    out["rank"] = [
        (env_order.index(e), *((0, 0, 0, 0) if i == VM else (1, *_rank(i, p, m))))
        for e, i, p, m in zip(out["environment"], out["isolation"], out["privilege"],
                              out["mode"], strict=True)
    ]  # fmt: skip
    order = {r: n for n, r in enumerate(sorted(set(out["rank"])))}
    out["rank"] = out["rank"].map(order).astype(int)
    bench_order = {b: n for n, b in enumerate(BENCHMARKS)}
    paths = ["dc", "local", "internet", "host"]
    out = out.assign(
        _b=out["benchmark"].map(lambda b: bench_order.get(b, len(bench_order))),
        _p=out["path"].map(lambda p: paths.index(p) if p in paths else len(paths)),
    ).sort_values(["_b", "benchmark", "_p", "metric", "rank"], kind="stable")
    out["n_runs"] = pd.to_numeric(out["n_runs"], errors="coerce")
    out["margin"] = pd.to_numeric(out.get("margin"), errors="coerce")
    return out[COLUMNS].reset_index(drop=True)


def not_measured(table: pd.DataFrame, missing: pd.DataFrame, has_vm: bool) -> pd.DataFrame:
    """Per spectrum mode and benchmark shown, why it is not on the figure: ``skipped`` (or
    failed) with the summary's reason, or ``not in the campaign``; the VM when no second
    environment was compared. Columns ``MISSING_COLUMNS``."""
    rows = []
    shown = list(dict.fromkeys(table["benchmark"]))
    for (benchmark, environment), part in table[table["isolation"] != VM].groupby(
            ["benchmark", "environment"], sort=False):  # fmt: skip
        for mode in SPECTRUM:
            if mode in set(part["mode"]):
                continue
            hit = missing[(missing["benchmark"] == benchmark) & (missing["mode"] == mode)
                          & (missing["environment"] == environment)]  # fmt: skip
            if len(hit):
                h = hit.iloc[0]
                rows.append([benchmark, environment, mode, h["status"], h["reason"]])
            else:
                rows.append([benchmark, environment, mode, "not in the campaign", None])
    if not has_vm:
        why = "one environment in params.yaml; a second, a VM's inventory, adds it"
        rows += [[b, None, VM, "not in the campaign", why] for b in shown]
    return pd.DataFrame(rows, columns=MISSING_COLUMNS)


def reference_environment(table: pd.DataFrame) -> str | None:
    """The environment whose modes come first: the VM rows' reference, else the only one."""
    vm = table[table["isolation"] == VM]
    if len(vm):
        return str(vm["reference"].iloc[0])
    return str(table["environment"].iloc[0]) if len(table) else None


def position(row, reference: str | None = None) -> str:
    """The y label of a row: the mode's label with the class words it lacks, and where it ran
    when that is not the ``reference`` environment."""
    if row["isolation"] == VM:
        return f"VM: {row['environment']}'s native (against {row['reference']}'s)"
    label = figures.MODE_LABELS.get(row["mode"], row["mode"])
    said = [w for w in (row["isolation"], row["privilege"]) if w.lower() not in label.lower()]
    text = " · ".join([label, ", ".join(said)]) if said else label
    inside = reference is not None and row["environment"] != reference
    return f"{text} in {row['environment']}" if inside else text


def panel(row) -> str:
    """A panel's title: what was measured, where, and which way is better."""
    what = MEASURES.get(row["benchmark"], row["benchmark"])
    stat = f" {row['statistic']}" if isinstance(row["statistic"], str) else ""
    metric = str(row["metric"])
    stat_suffix = f"_{row['statistic']}" if stat else ""
    variant = metric[: -len(stat_suffix)] if stat_suffix and metric.endswith(stat_suffix) \
        else metric  # fmt: skip
    kind = "rate" if row["higher_is_better"] else "time"
    where = "on the host" if row["path"] == "host" else path_label(row["path"])
    return f"{what}{stat} ({variant}), {where}: {kind}"


def figure_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows the figure draws: the summaries' one ratio or p50 per panel."""
    keep = table["statistic"].map(lambda s: s if isinstance(s, str) else None).isin(
        FIGURE_STATISTICS)  # fmt: skip
    return table[keep].reset_index(drop=True)


FIGURE_WIDTH = 520


def _num(value: float) -> str:
    return f"{value:.3f}" if abs(value) < 10 else f"{value:.2f}"


def _figure_frame(table: pd.DataFrame) -> pd.DataFrame:
    rows = figure_rows(table)
    reference = reference_environment(table)
    records = rows.to_dict("records")
    return rows.assign(
        position=[position(r, reference) for r in records],
        panel=[panel(r) for r in records],
        colour=[VM if i == VM else m for i, m in zip(rows["isolation"], rows["mode"],
                                                   strict=True)],  # fmt: skip
        privilege=rows["privilege"].fillna("VM"),
        verdict=rows["verdict"].fillna("none"),
        estimate=[f"{v:.3f}×" for v in rows["ratio"]],
        interval=figures.interval_text(rows["lo"], rows["hi"]),
        runs=["n/a" if pd.isna(n) else str(int(n)) for n in rows["n_runs"]],
        label=[f"{_num(v)}× [{_num(a)}, {_num(b)}]" if not (pd.isna(a) or pd.isna(b))
               else f"{_num(v)}×" for v, a, b in zip(rows["ratio"], rows["lo"], rows["hi"],
                                                     strict=True)],  # fmt: skip
        # The band of the equivalence margin, where the verdict is on this ratio (the Internet
        # path's is on the added microseconds, cold start's has no margin).
        margin_lo=1.0 - rows["margin"],
        margin_hi=1.0 + rows["margin"],
    )


def figure(table: pd.DataFrame) -> alt.FacetChart:
    """One forest plot on one log axis of the ratio to native: a row per benchmark and
    statistic (the summaries' one ratio or p50), in it one line per spectrum mode in spectrum
    order, coloured by mode. The interval is a rule, the estimate a point (rootless open, the VM
    a diamond), native the dashed line at 1×, the grey band the equivalence margin where the
    verdict is on this ratio. The estimate and interval are printed at the right; hovering a
    point (the HTML) shows mode, estimate, interval, runs and verdict."""
    frame = _figure_frame(table)[[
        "position", "panel", "colour", "privilege", "ratio", "lo", "hi", "verdict", "runs",
        "rank", "estimate", "interval", "label", "margin_lo", "margin_hi",
    ]]  # fmt: skip
    positions = list(dict.fromkeys(frame.sort_values("rank", kind="stable")["position"]))
    panels = list(dict.fromkeys(frame["panel"]))
    colours = list(dict.fromkeys(frame.sort_values("rank", kind="stable")["colour"]))
    scale = alt.Scale(domain=colours, range=[VM_COLOR if c == VM else figures.MODE_COLORS.get(
        c, figures.UNKNOWN_COLOR) for c in colours])  # fmt: skip
    domain = figures.log_domain([*frame["lo"], *frame["hi"], *frame["ratio"], 1.0,
                                 *frame["margin_lo"], *frame["margin_hi"]], pad=0.03)  # fmt: skip
    x = figures.ratio_x("ratio:Q", domain, FIGURE_WIDTH,
                        title="ratio to native (log scale; native = 1×)")  # fmt: skip
    xs = figures.log_scale(domain)
    y = alt.Y("position:N", title=None, sort=positions)
    colour = alt.Color("colour:N", scale=scale, legend=None)
    tooltip = [alt.Tooltip("position:N", title="mode"), alt.Tooltip("panel:N", title="measure"),
               "estimate:N", "interval:N", "runs:N", "verdict:N"]  # fmt: skip
    base = alt.Chart().properties(width=FIGURE_WIDTH, height=alt.Step(17))
    band = base.mark_rect(color="#e3e3e3").encode(
        x=alt.X("margin_lo:Q", scale=xs), x2="margin_hi:Q",
    ).transform_filter("isValid(datum.margin_lo)").transform_aggregate(
        margin_lo="min(margin_lo)", margin_hi="max(margin_hi)")  # fmt: skip
    one = base.mark_rule(strokeDash=[4, 4], color="#222222").encode(
        x=alt.datum(1.0, scale=xs))  # fmt: skip
    bar = base.mark_rule(strokeWidth=2.5).encode(
        x=alt.X("lo:Q", scale=xs), x2="hi:Q", y=y, color=colour, tooltip=tooltip)
    rootful = base.mark_point(size=60, filled=True, opacity=1).encode(
        x=x, y=y, color=colour, tooltip=tooltip,
        shape=alt.condition(alt.datum.privilege == "VM", alt.value("diamond"), alt.value("circle")),
    ).transform_filter(alt.datum.privilege != "rootless")  # fmt: skip
    rootless = base.mark_point(size=60, filled=False, strokeWidth=2, opacity=1).encode(
        x=x, y=y, color=colour, tooltip=tooltip,
    ).transform_filter(alt.datum.privilege == "rootless")  # fmt: skip
    numbers = base.mark_text(align="left", dx=10, fontSize=11, color="#333333").encode(
        x=alt.datum(domain[1], scale=xs), y=y, text="label:N")  # fmt: skip
    return alt.layer(band, one, bar, rootful, rootless, numbers, data=frame).facet(
        row=alt.Row("panel:N", title=None, sort=panels,
                    header=alt.Header(labelAngle=0, labelOrient="left", labelAlign="left",
                                      labelFontSize=12, labelFontWeight="bold", labelLimit=330,
                                      labelPadding=8)),
        spacing=6,
    ).resolve_scale(y="independent").properties(
        title="The isolation spectrum: ratio to native, per benchmark and statistic")  # fmt: skip


def _labels(modes) -> str:
    return "; ".join(VM if m == VM else figures.MODE_LABELS.get(m, m) for m in modes)


def caption(table: pd.DataFrame, missing: pd.DataFrame) -> str:
    """The figure's and table's caption: what is drawn, the intervals, and every spectrum mode
    that is not, with the summaries' reason."""
    conf = pd.to_numeric(table["confidence"], errors="coerce").dropna()
    level = f"{conf.iloc[0]:.0%}" if len(conf) else "95%"
    text = (
        "The isolation spectrum: each container mode that differs from Docker's bridge only in "
        "its OCI runtime (runc, crun, gVisor's runsc) or its privilege (rootful, rootless), as "
        "its benchmark's summary states it: the ratio to native (dashed line at 1×) with its "
        f"{level} interval (the geometric mean of the per-run ratios over the runs both "
        "measured, paired t interval; the numbers at the right), ordered from native to the VM; "
        "rootless modes are open points. Every row shares one logarithmic axis, so 0.5× and 2× "
        "are as far from native. The grey band is the benchmark's equivalence margin where its "
        "verdict is on this ratio (none on the Internet path, where latency and HTTP are judged "
        "on the added microseconds (Methods), nor for cold start, which has no margin). A rate "
        "(throughput, CPU and memory rates) below 1, or a time (latency, HTTP, cold start, "
        "compile time) above 1, costs. The figure "
        "shows each summary's one ratio or "
        "its p50, the table p99 too. A mode's runtime is the one its runs' notes record, else "
        "its declared one (Podman's default: crun where installed)."
    )
    reference = reference_environment(table)
    text += figures.outside_text(
        figure_rows(table), "ratio", "lo", "hi",
        lambda r: f"{position(r, reference)}, {panel(r)}")  # fmt: skip
    if (table["isolation"] == VM).any():
        text += (" VM: a second environment's native against the reference's (Welch interval "
                 "over the two campaigns' runs); the modes measured inside it follow, each "
                 "against that environment's own native.")  # fmt: skip
    if len(missing):
        parts = []
        drawn = set(table["mode"].where(table["isolation"] != VM, VM))
        several = table["environment"].nunique() > 1
        for mode, part in missing.groupby("mode", sort=False):
            if mode not in drawn and (part["status"] == "not in the campaign").all():
                why = part["reason"].dropna()
                parts.append(f"{_labels([mode])}: not measured"
                             + (f" ({why.iloc[0]})" if len(why) else ""))  # fmt: skip
                continue
            said = []
            for (status, reason), group in part.groupby(["status", "reason"], dropna=False,
                                                        sort=False):  # fmt: skip
                where = ", ".join(dict.fromkeys(
                    f"{b} ({e})" if several and isinstance(e, str) else b
                    for b, e in zip(group["benchmark"], group["environment"], strict=True)))
                reason = "" if reason is None or (isinstance(reason, float) and np.isnan(
                    reason)) else f" ({str(reason).removeprefix(f'{status}: ')})"  # fmt: skip
                said.append(f"{status} in {where}{reason}")
            parts.append(f"{_labels([mode])}: " + "; ".join(said))
        text += " Not on the figure: " + ". ".join(parts) + "."
    return text


def article_table(table: pd.DataFrame) -> pd.DataFrame:
    """The table for the article: one row per benchmark, metric, path and mode, in spectrum
    order, the ratio with its interval."""
    rows = []
    for r in table.to_dict("records"):
        interval = "" if pd.isna(r["lo"]) else f" [{r['lo']:.3f}, {r['hi']:.3f}]"
        runs = "n/a" if pd.isna(r["n_runs"]) else f"{int(r['n_runs'])}"
        if not pd.isna(r["n_runs_reference"]):
            runs += f" / {int(r['n_runs_reference'])}"
        rows.append({
            "Benchmark": r["benchmark"], "Metric": r["metric"], "Path": r["path"],
            "Mode": r["mode"] if r["isolation"] != VM else f"native ({r['environment']})",
            "Environment": r["environment"], "Isolation": r["isolation"],
            "Privilege": r["privilege"],
            "Ratio to native [CI]": f"{r['ratio']:.3f}{interval}",
            "Against": f"{r['reference']}'s native", "Verdict": r["verdict"], "Runs": runs,
        })  # fmt: skip
    return pd.DataFrame(rows)


def headline(table: pd.DataFrame) -> str:
    """One line per panel of the figure: each mode's ratio and interval in spectrum order."""
    lines = []
    rows = figure_rows(table)
    for _, part in rows.groupby(PANEL_KEYS, sort=False):
        first = part.iloc[0]
        cells = [f"{r['mode'] if r['isolation'] != VM else VM} {r['ratio']:.3f} "
                 f"[{r['lo']:.3f}, {r['hi']:.3f}]" for r in part.to_dict("records")]  # fmt: skip
        lines.append(f"{first['benchmark']} {first['path']} {first['metric']}: "
                     + "; ".join(cells))  # fmt: skip
    return "\n".join(lines)
