"""Per-container memory cost and idle footprint of each engine (the `footprint` benchmark), and
how far `density` got.

The model, per (environment, mode): the engine's total memory (PSS by default; RSS too) at a
reading is ``intercept + slope * containers + error``. ``slope`` is the cost of one more idle
container (KiB per container: its shim or conmon, a rootless podman container's slirp4netns,
and what the daemon keeps per container), ``intercept`` the idle engine.

Runs are the unit of inference: the readings of one run share that run's daemon state (heap
size after garbage collection, what the warm-up allocated), so their errors are correlated and
an ordinary least-squares interval from pooled readings would be too narrow. The fit is
therefore ordinary least squares on every reading, with standard errors that are
cluster-robust by run (statsmodels' ``cov_type="cluster"``, with its small-sample correction)
and t quantiles with (runs - 1) degrees of freedom. With two runs that is one degree of
freedom: honest, wide intervals. With a single run there is no between-run information and
the interval is the classical OLS one (``method`` says so): it only reflects the scatter of
the readings inside that run.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass

import altair as alt
import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy import stats as _st

from pipeline.analysis import figures, tables
from pipeline.analysis.stats import difference_verdict, log_ratio_ci, quantile_ci, ratio_ci
from pipeline.analysis.tables import as_text, cell_status, status_text
from pipeline.data import schema

TOTAL_PSS = "footprint_pss_kib_total"
TOTAL_RSS = "footprint_rss_kib_total"
KINDS = ("daemon", "containerd", "shim", "conmon", "helper")


@dataclass(frozen=True)
class LineFit:
    """``value = intercept + slope * count`` with intervals at ``confidence``."""
    slope: float
    slope_lo: float
    slope_hi: float
    intercept: float
    intercept_lo: float
    intercept_hi: float
    at: int  # a container count the total is predicted at (the articles' "at 100 containers")
    total_at: float
    total_at_lo: float
    total_at_hi: float
    runs: int
    points: int
    confidence: float
    method: str

    def as_dict(self) -> dict:
        return asdict(self)


def fit_line(count, value, run, confidence: float = 0.95, at: int = 100) -> LineFit:
    """OLS of ``value`` on ``count`` with run-clustered intervals (module docstring)."""
    count = np.asarray(count, dtype=float)
    value = np.asarray(value, dtype=float)
    run = np.asarray(run)
    runs = len(np.unique(run))
    if len(count) < 3 or len(np.unique(count)) < 2:
        raise ValueError(f"a line needs 3 readings at 2 counts or more, got {len(count)}")
    X = sm.add_constant(count, has_constant="add")
    if runs >= 2:
        groups = pd.factorize(run)[0]
        fit = sm.OLS(value, X).fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)
        df = runs - 1
        method = f"OLS, standard errors clustered by run, t with {df} df"
    else:
        fit = sm.OLS(value, X).fit()
        df = int(fit.df_resid)
        method = "OLS within one run (no between-run information)"
    params = np.asarray(fit.params)
    cov = np.asarray(fit.cov_params())
    t = _st.t.ppf(0.5 + confidence / 2, df)
    point = np.array([1.0, float(at)])
    total = float(point @ params)
    total_se = float(np.sqrt(max(point @ cov @ point, 0.0)))
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    return LineFit(
        slope=float(params[1]),
        slope_lo=float(params[1] - t * se[1]),
        slope_hi=float(params[1] + t * se[1]),
        intercept=float(params[0]),
        intercept_lo=float(params[0] - t * se[0]),
        intercept_hi=float(params[0] + t * se[0]),
        at=at,
        total_at=total,
        total_at_lo=total - t * total_se,
        total_at_hi=total + t * total_se,
        runs=runs,
        points=len(count),
        confidence=confidence,
        method=method,
    )


def _measured(samples: pd.DataFrame, metrics) -> pd.DataFrame:
    keep = samples["metric"].isin(list(metrics)) & ~samples["warmup"].astype(bool)
    return samples.loc[keep]


def density_summary(samples: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Per (environment, mode): containers reached (least and most over runs), why the runs
    stopped, and the memory per container at the count reached (median over runs): the
    host's MemAvailable drop and the engine's PSS growth."""
    ok = runs[runs["status"] == "ok"]
    measured = _measured(
        samples, ("density_containers_reached", "density_mem_per_container_mib",
                  "density_engine_pss_per_container_mib")
    )  # fmt: skip
    rows = []
    for (env, mode), cell in ok.groupby(["environment", "mode"]):
        mine = measured[(measured["environment"] == env) & (measured["mode"] == mode)]
        reached = mine[mine["metric"] == "density_containers_reached"].set_index("run")["value"]
        last = []
        for run, count in reached.items():
            at = mine[(mine["run"] == run) & (mine["sample"] == count)]
            last.append(at.set_index("metric")["value"])
        at_top = pd.DataFrame(last)
        stops = sorted({json.loads(n or "{}").get("stopped", "") for n in cell["notes"]})
        rows.append({
            "environment": env, "mode": mode, "runs": len(reached),
            "reached_min": reached.min(), "reached_max": reached.max(),
            "mem_per_container_mib": at_top.get("density_mem_per_container_mib",
                                                 pd.Series(dtype=float)).median(),
            "engine_pss_per_container_mib": at_top.get("density_engine_pss_per_container_mib",
                                                        pd.Series(dtype=float)).median(),
            "stopped": "; ".join(s for s in stops if s),
        })  # fmt: skip
    return pd.DataFrame(rows)


# --- the summarise-footprint stage: summaries, article tables, figures ----------------------
#
# What follows turns the statistics above into the stage's outputs. Every planned (environment,
# mode) stays a row, with its status and reason when it was skipped or failed; only readings of
# runs with status ok are analysed (a failed run's partial ramp describes a broken step).

REFERENCE = "docker-bridge"  # the 004 article's baseline for rootless engines: rootful Docker
MIB = 1024.0
CELL = ["environment", "mode", "path", "variant"]
KIND_LABELS = {
    "daemon": "dockerd",
    "containerd": "containerd",
    "shim": "containerd-shim (all)",
    "conmon": "conmon (all)",
    "helper": "rootless helpers (rootlesskit, slirp4netns, pause)",
    "total": "total",
}
COST_COLUMNS = [
    *CELL, "benchmark", "configuration", "status", "reason", "n_runs", "n_runs_planned",
    "points", "max_count", "at",
    "pss_idle_kib", "pss_idle_lo_kib", "pss_idle_hi_kib",
    "pss_per_container_kib", "pss_per_container_lo_kib", "pss_per_container_hi_kib",
    "pss_at_kib", "pss_at_lo_kib", "pss_at_hi_kib",
    "rss_idle_kib", "rss_idle_lo_kib", "rss_idle_hi_kib",
    "rss_per_container_kib", "rss_per_container_lo_kib", "rss_per_container_hi_kib",
    "rss_at_kib", "rss_at_lo_kib", "rss_at_hi_kib",
    "method", "reference", "ratio", "ratio_lo", "ratio_hi", "ratio_n_runs", "verdict",
    "confidence",
]  # fmt: skip


def load(raw_dir, benchmark: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(samples, runs)`` of ``benchmark`` across environments; empty frames (with the
    schema's columns) when it was never collected, so the stage reports it instead of failing."""
    try:
        return (
            schema.read_dataset(raw_dir, benchmark, "samples"),
            schema.read_dataset(raw_dir, benchmark, "runs"),
        )
    except FileNotFoundError:
        return (
            pd.DataFrame(columns=schema.SAMPLES.names),
            pd.DataFrame(columns=schema.RUNS.names),
        )


def ok_samples(samples: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Measured (non-warm-up) samples of the runs with status ok."""
    ok = runs.loc[runs["status"] == "ok", [*CELL, "run"]].drop_duplicates()
    measured = samples[~samples["warmup"].astype(bool)]
    return measured.merge(ok, on=[*CELL, "run"], how="inner")


def _planned_cells(runs: pd.DataFrame) -> list[tuple]:
    cells = runs[CELL].drop_duplicates().itertuples(index=False, name=None)
    return sorted(cells, key=lambda c: (c[0], figures.mode_rank(c[1]), c[1], c[2], c[3]))


def _run_sums(cell: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per run: (run ids, [n, sum x, sum y, sum xx, sum xy]) of count x and value y."""
    x, y = cell["sample"].astype(float), cell["value"].astype(float)
    parts = pd.DataFrame({"run": cell["run"], "n": 1.0, "x": x, "y": y, "xx": x * x, "xy": x * y})
    sums = parts.groupby("run")[["n", "x", "y", "xx", "xy"]].sum()
    return sums.index.to_numpy(), sums.to_numpy()


def _slopes(sums: np.ndarray) -> np.ndarray:
    """OLS slopes from summed [n, x, y, xx, xy] (last axis); NaN where x does not vary."""
    n, x, y, xx, xy = (sums[..., i] for i in range(5))
    den = n * xx - x * x
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 1e-9 * np.maximum(n * xx, 1.0), (n * xy - x * y) / den, np.nan)


def _common_run_sums(cell: pd.DataFrame, reference: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """``_run_sums`` of both, restricted to the runs both measured, in the same run order."""
    ids_c, sums_c = _run_sums(cell)
    ids_r, sums_r = _run_sums(reference)
    common = np.intersect1d(ids_c, ids_r)
    return sums_c[np.searchsorted(ids_c, common)], sums_r[np.searchsorted(ids_r, common)]


def slope_ratio(
    cell: pd.DataFrame, reference: pd.DataFrame, confidence: float = 0.95
) -> tuple[float, float, float, int]:
    """Per-container cost of ``cell`` over that of ``reference`` (each: samples of one metric
    with ``run``, ``sample`` = count, ``value``): ``(ratio, lo, hi, runs)``.

    Over the runs both measured: each run's own line for each engine, and the geometric mean
    of the per-run slope ratios with its paired t interval (``stats.log_ratio_ci``), the
    estimate the verdict's t test is about. When a run's slope is not positive (no growth
    measured) there is no log ratio: the ratio of the pooled slopes, without an interval."""
    nan = float("nan")
    a, b = _common_run_sums(cell, reference)
    n = len(a)
    if n == 0:
        return nan, nan, nan, 0
    per_a, per_b = _slopes(a), _slopes(b)
    if not (np.all(per_a > 0) and np.all(per_b > 0)):
        return float(_slopes(a.sum(axis=0)) / _slopes(b.sum(axis=0))), nan, nan, n
    r = log_ratio_ci(per_a, per_b, confidence)
    return r.ratio, r.lo, r.hi, n


def _fit_columns(prefix: str, fit: LineFit | None) -> dict:
    names = ("idle", "per_container", "at")
    if fit is None:
        return {f"{prefix}_{n}{s}_kib": np.nan for n in names for s in ("", "_lo", "_hi")}
    values = {
        "idle": (fit.intercept, fit.intercept_lo, fit.intercept_hi),
        "per_container": (fit.slope, fit.slope_lo, fit.slope_hi),
        "at": (fit.total_at, fit.total_at_lo, fit.total_at_hi),
    }
    return {
        f"{prefix}_{n}{s}_kib": v
        for n, triple in values.items()
        for s, v in zip(("", "_lo", "_hi"), triple, strict=True)
    }


def cost_summary(
    samples: pd.DataFrame,
    runs: pd.DataFrame,
    confidence: float = 0.95,
    at: int = 100,
) -> pd.DataFrame:
    """One row per planned (environment, mode, path, variant) with ``COST_COLUMNS``: the idle
    engine (intercept), the per-container cost (slope) and the total predicted at ``at``
    containers, for PSS and RSS, each with its ``fit_line`` interval; and the PSS cost per
    container as a ratio to rootful Docker's (``REFERENCE``) over common runs (``slope_ratio``).

    ``at`` beyond the counts measured is an extrapolation of the line (the caption says so)."""
    measured = ok_samples(samples, runs)
    rows = []
    for env, mode, path, variant in _planned_cells(runs):
        key = (env, mode, path, variant)
        run_rows = runs[(runs[CELL] == pd.Series(key, index=CELL)).all(axis=1)]
        mine = measured[(measured[CELL] == pd.Series(key, index=CELL)).all(axis=1)]
        pss = mine[mine["metric"] == TOTAL_PSS]
        n_runs = int(pss["run"].nunique())
        status, reason = cell_status(run_rows, n_runs, TOTAL_PSS)
        fits, why = {}, []
        for prefix, metric in (("pss", TOTAL_PSS), ("rss", TOTAL_RSS)):
            sel = mine[mine["metric"] == metric]
            try:
                fits[prefix] = fit_line(sel["sample"], sel["value"], sel["run"], confidence, at)
            except ValueError as exc:
                fits[prefix] = None
                if status == "ok":
                    why.append(f"no {prefix.upper()} line: {exc}")
        if why:
            reason = "; ".join([*([reason] if reason else []), *dict.fromkeys(why)])
        top = pss.groupby("run")["sample"].max()
        row = {
            "environment": env, "mode": mode, "path": path, "variant": variant,
            "benchmark": "footprint", "configuration": figures.MODE_LABELS.get(mode, mode),
            "status": status, "reason": reason, "n_runs": n_runs,
            "n_runs_planned": int(max(run_rows["run"].nunique(), n_runs)),
            "points": int(len(pss)), "max_count": int(top.min()) if len(top) else 0, "at": at,
            **_fit_columns("pss", fits["pss"]), **_fit_columns("rss", fits["rss"]),
            "method": fits["pss"].method if fits["pss"] else None,
            "reference": REFERENCE, "confidence": confidence,
        }  # fmt: skip
        fitted = pss if fits["pss"] is not None else pss.iloc[:0]  # no line, no ratio
        row.update(_reference_ratio(mode, fitted, measured, env, confidence))
        rows.append(row)
    return pd.DataFrame(rows, columns=COST_COLUMNS)


def _reference_ratio(mode, pss, measured, env, confidence) -> dict:
    nan = float("nan")
    ref = measured[
        (measured["environment"] == env)
        & (measured["mode"] == REFERENCE)
        & (measured["metric"] == TOTAL_PSS)
    ]
    if pss.empty or ref.empty:
        return {"ratio": nan, "ratio_lo": nan, "ratio_hi": nan, "ratio_n_runs": 0, "verdict": None}
    if mode == REFERENCE:
        n = int(pss["run"].nunique())
        return {"ratio": 1.0, "ratio_lo": 1.0, "ratio_hi": 1.0, "ratio_n_runs": n, "verdict": None}
    r, lo, hi, n = slope_ratio(pss, ref, confidence)
    return {"ratio": r, "ratio_lo": lo, "ratio_hi": hi, "ratio_n_runs": n,
            "verdict": _slope_verdict(pss, ref)}  # fmt: skip


# More memory per container is worse: the verdicts' words for a cost against the reference's.
SAID = {"overhead": "more", "faster": "less", "inconclusive": "inconclusive"}


def _slope_verdict(cell: pd.DataFrame, reference: pd.DataFrame) -> str:
    """More, less (``SAID``) or inconclusive: ``stats.difference_verdict`` on the slope ratio's
    interval and the runs' own slopes (no margin was fixed for an engine's memory)."""
    a, b = _common_run_sums(cell, reference)
    return difference_verdict(_slopes(a), _slopes(b), higher_is_better=False)


def process_table(
    samples: pd.DataFrame, runs: pd.DataFrame, measure: str = "rss", confidence: float = 0.95
) -> pd.DataFrame:
    """The 000 article's per-process table with intervals: per (environment, mode, kind) the
    memory at idle and at the highest count every ok run reached (``containers``), each the
    median over runs with a distribution-free interval (``stats.quantile_ci``), and the growth
    per container between the two (median over runs of each run's own growth). Kinds an engine
    never has (all zeros) are left out; the total is always kept."""
    metrics = [f"footprint_{measure}_kib_{k}" for k in (*KINDS, "total")]
    measured = _measured(ok_samples(samples, runs), metrics)
    rows = []
    for (env, mode), cell in measured.groupby(["environment", "mode"], sort=False):
        top = int(cell.groupby("run")["sample"].max().min())
        for metric, per_metric in cell.groupby("metric", sort=False):
            kind = metric.rsplit("_", 1)[1]
            if kind != "total" and not per_metric["value"].abs().gt(0).any():
                continue
            wide = per_metric.pivot_table(index="run", columns="sample", values="value")
            if 0 not in wide.columns or top not in wide.columns:
                continue
            idle = quantile_ci(wide[0].to_numpy(float), 0.5, confidence)
            loaded = quantile_ci(wide[top].to_numpy(float), 0.5, confidence)
            growth = quantile_ci(((wide[top] - wide[0]) / top).to_numpy(float), 0.5, confidence)
            rows.append({
                "environment": env, "mode": mode, "kind": kind, "measure": measure,
                "containers": top, "n_runs": idle.n,
                "idle_kib": idle.point, "idle_lo_kib": idle.lo, "idle_hi_kib": idle.hi,
                "loaded_kib": loaded.point, "loaded_lo_kib": loaded.lo,
                "loaded_hi_kib": loaded.hi,
                "per_container_kib": growth.point if top else np.nan,
                "per_container_lo_kib": growth.lo if top else np.nan,
                "per_container_hi_kib": growth.hi if top else np.nan,
                "coverage": idle.coverage, "reached": idle.reached, "confidence": confidence,
            })  # fmt: skip
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    kind_rank = {k: i for i, k in enumerate((*KINDS, "total"))}

    order = out.assign(_m=out["mode"].map(figures.mode_rank), _k=out["kind"].map(kind_rank))
    return (
        order.sort_values(["environment", "_m", "_k"])
        .drop(columns=["_m", "_k"])
        .reset_index(drop=True)
    )


DENSITY_COLUMNS = [
    *CELL, "benchmark", "configuration", "status", "reason", "n_runs", "n_runs_planned",
    "cap", "capped", "reached_median", "reached_lo", "reached_hi", "reached_min", "reached_max",
    "reached_coverage", "mem_per_container_mib", "mem_per_container_lo_mib",
    "mem_per_container_hi_mib", "engine_pss_per_container_mib",
    "engine_pss_per_container_lo_mib", "engine_pss_per_container_hi_mib", "stopped",
    "reference", "ratio", "ratio_lo", "ratio_hi", "ratio_n_runs", "confidence",
]  # fmt: skip


def _density_per_run(measured: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per ok run: containers reached, why it stopped, the cap, and the memory per
    container at the count reached (host MemAvailable drop, engine PSS growth)."""
    reached = measured[measured["metric"] == "density_containers_reached"]
    notes = runs.set_index([*CELL, "run"])["notes"]
    rows = []
    for r in reached.itertuples():
        key = (r.environment, r.mode, r.path, r.variant, r.run)
        note = json.loads(notes.get(key) or "{}") if key in notes.index else {}
        at = measured[
            (measured[CELL] == pd.Series(key[:4], index=CELL)).all(axis=1)
            & (measured["run"] == r.run)
            & (measured["sample"] == int(r.value))
        ].set_index("metric")["value"]
        options = dict(
            part.split("=", 1) for part in note.get("options", "").split(", ") if "=" in part
        )
        stopped = note.get("stopped", "")
        if "cap" not in options and (limit := re.match(r"limit of (\d+) containers", stopped)):
            options["cap"] = limit.group(1)
        rows.append({
            **dict(zip([*CELL, "run"], key, strict=True)), "reached": float(r.value),
            "stopped": stopped, "cap": float(options["cap"]) if "cap" in options else np.nan,
            "at_cap": stopped.startswith("limit of"),
            "mem_per_container_mib": at.get("density_mem_per_container_mib", np.nan),
            "engine_pss_per_container_mib": at.get("density_engine_pss_per_container_mib",
                                                   np.nan),
        })  # fmt: skip
    return pd.DataFrame(
        rows,
        columns=[*CELL, "run", "reached", "stopped", "cap", "at_cap", "mem_per_container_mib",
                 "engine_pss_per_container_mib"],
    )  # fmt: skip


def density_per_run(samples: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """``_density_per_run`` of the ok runs' measured samples (the figure's points)."""
    return _density_per_run(ok_samples(samples, runs), runs)


def density_table_summary(
    samples: pd.DataFrame,
    runs: pd.DataFrame,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """One row per planned (environment, mode, path, variant) with ``DENSITY_COLUMNS``: the
    containers reached (median over runs with a distribution-free interval, least and most),
    why the runs stopped, and the memory per container at the count reached (medians with
    intervals). ``ratio``: containers reached over rootful Docker's (geometric mean of the
    per-run ratios over common runs, paired t interval), left empty with the reason when
    either engine stopped at the cap in every run: a cap says nothing about where the limit
    is."""
    per_run = density_per_run(samples, runs)
    rows = []
    for key in _planned_cells(runs):
        run_rows = runs[(runs[CELL] == pd.Series(key, index=CELL)).all(axis=1)]
        mine = per_run[(per_run[CELL] == pd.Series(key, index=CELL)).all(axis=1)]
        status, reason = cell_status(run_rows, len(mine), "density_containers_reached")
        reached = quantile_ci(mine["reached"].to_numpy(float), 0.5, confidence)
        mem = quantile_ci(mine["mem_per_container_mib"].to_numpy(float), 0.5, confidence)
        eng = quantile_ci(mine["engine_pss_per_container_mib"].to_numpy(float), 0.5, confidence)
        caps = sorted({int(c) for c in mine["cap"].dropna()})
        row = {
            **dict(zip(CELL, key, strict=True)), "benchmark": "density",
            "configuration": figures.MODE_LABELS.get(key[1], key[1]), "status": status,
            "reason": reason, "n_runs": len(mine),
            "n_runs_planned": int(max(run_rows["run"].nunique(), len(mine))),
            "cap": float(caps[-1]) if caps else np.nan,
            "capped": bool(len(mine)) and bool(mine["at_cap"].all()),
            "reached_median": reached.point, "reached_lo": reached.lo, "reached_hi": reached.hi,
            "reached_min": mine["reached"].min(), "reached_max": mine["reached"].max(),
            "reached_coverage": reached.coverage,
            "mem_per_container_mib": mem.point, "mem_per_container_lo_mib": mem.lo,
            "mem_per_container_hi_mib": mem.hi,
            "engine_pss_per_container_mib": eng.point, "engine_pss_per_container_lo_mib": eng.lo,
            "engine_pss_per_container_hi_mib": eng.hi,
            "stopped": "; ".join(s for s in dict.fromkeys(mine["stopped"]) if s),
            "reference": REFERENCE, "confidence": confidence,
        }  # fmt: skip
        ratio = _density_ratio(key, per_run, confidence, ratio_ci)
        notes = [reason] if reason else []
        if row["capped"]:
            notes.append(f"every run stopped at the cap of {row['cap']:.0f} containers")
        if why := ratio.pop("why"):
            notes.append(why)
        row.update(ratio, reason="; ".join(notes) or None)
        rows.append(row)
    return pd.DataFrame(rows, columns=DENSITY_COLUMNS)


def _density_ratio(key, per_run, confidence, ratio_ci) -> dict:
    nan = float("nan")
    empty = {"ratio": nan, "ratio_lo": nan, "ratio_hi": nan, "ratio_n_runs": 0, "why": ""}
    env, mode, path, variant = key
    both = per_run[
        (per_run["environment"] == env)
        & (per_run["path"] == path)
        & (per_run["variant"] == variant)
        & per_run["mode"].isin([mode, REFERENCE])
    ]
    if mode == REFERENCE or both.empty:
        return empty
    for m in (mode, REFERENCE):
        sel = both[both["mode"] == m]
        if sel.empty:
            return empty
        if sel["at_cap"].all():  # a cap says nothing about where the limit is
            who = "it" if m == mode else figures_label(REFERENCE)
            return {**empty, "why": f"no ratio to {figures_label(REFERENCE)}: {who} stopped at "
                    "the cap in every run"}  # fmt: skip
    r = ratio_ci(both.rename(columns={"reached": "value"}), mode, REFERENCE, confidence)
    return {"ratio": r.ratio, "ratio_lo": r.lo, "ratio_hi": r.hi, "ratio_n_runs": r.n_runs,
            "why": ""}  # fmt: skip


def figures_label(mode: str) -> str:
    return figures.MODE_LABELS.get(mode, mode)


# --- text: tables, captions, headline ---------------------------------------------------------


def _mib(point, lo=np.nan, hi=np.nan, digits: int = 1) -> str | None:
    """KiB -> "12.3 [11.0, 13.1]" MiB; None (n/a) without a point."""
    if point is None or pd.isna(point):
        return None

    def fmt(v: float) -> str:
        text = f"{v / MIB:.{digits}f}"
        return text.lstrip("-") if float(text) == 0 else text  # no "-0.0" from rounding

    if pd.isna(lo) or pd.isna(hi):
        return f"{fmt(point)} (no interval)"
    return f"{fmt(point)} [{fmt(lo)}, {fmt(hi)}]"


def _ratio(r) -> str | None:
    if r.mode == REFERENCE and r.ratio_n_runs:
        return "1 (reference)"
    if pd.isna(r.ratio):
        return None
    if pd.isna(r.ratio_lo):
        return f"{r.ratio:.2f} (no interval)"
    said = SAID.get(getattr(r, "verdict", None) or "")
    return f"{r.ratio:.2f} [{r.ratio_lo:.2f}, {r.ratio_hi:.2f}]" + (f", {said}" if said else "")


def _cost_note(r) -> str:
    parts = [as_text(r.reason) if r.status == "ok" else status_text(r.status, r.reason)]
    if r.status == "ok" and r.n_runs == 1:
        parts.append("one run: the interval reflects only that run's readings")
    return "; ".join(p for p in parts if p)


def cost_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The 004 article's "Overhead per container | At 100 containers" per engine, with the idle
    engine, RSS beside PSS, the ratio to rootful Docker and every interval."""
    conf = float(summary["confidence"].iloc[0]) if len(summary) else 0.95
    at = int(summary["at"].iloc[0]) if len(summary) else 100
    ci = f"[{conf:.0%} CI]"
    rows = list(summary.itertuples())
    table = pd.DataFrame(
        {
            "Engine": summary["configuration"],
            f"Idle PSS MiB {ci}": [_mib(r.pss_idle_kib, r.pss_idle_lo_kib, r.pss_idle_hi_kib)
                                   for r in rows],
            f"Per container PSS MiB {ci}": [
                _mib(r.pss_per_container_kib, r.pss_per_container_lo_kib,
                     r.pss_per_container_hi_kib, 2) for r in rows],
            f"Per container RSS MiB {ci}": [
                _mib(r.rss_per_container_kib, r.rss_per_container_lo_kib,
                     r.rss_per_container_hi_kib, 2) for r in rows],
            f"PSS at {at} containers MiB {ci}": [
                _mib(r.pss_at_kib, r.pss_at_lo_kib, r.pss_at_hi_kib) for r in rows],
            f"Per container vs rootful Docker {ci}": [_ratio(r) for r in rows],
            "Containers measured": [f"0-{r.max_count}" if r.n_runs else None for r in rows],
            "Runs": [tables.runs_text(r.n_runs, r.n_runs_planned) for r in rows],
            "Note": [_cost_note(r) for r in rows],
        }
    )  # fmt: skip
    if len(summary) and summary["environment"].nunique() > 1:
        table.insert(0, "Environment", summary["environment"].to_numpy())
    return table


def cost_caption(summary: pd.DataFrame) -> str:
    conf = float(summary["confidence"].iloc[0]) if len(summary) else 0.95
    at = int(summary["at"].iloc[0]) if len(summary) else 100
    top = int(summary.loc[summary["n_runs"] > 0, "max_count"].max()) if len(summary) else 0
    beyond = (
        f" {at} containers lies beyond the {top} measured: that column extends the line."
        if top < at
        else ""
    )
    return (
        "Memory of each container engine's own processes (dockerd, containerd, the shims, "
        "conmon, rootless helpers; the containers' workloads excluded) as idle containers are "
        "added (the 000 and 004 articles' memory tables). A line per engine, total PSS "
        "(proportional set size: shared pages split among the processes, so it adds up) or "
        "RSS against the container count, fitted by least squares on every reading of the ok "
        f"runs; {conf:.0%} intervals with standard errors clustered by run and t quantiles with "
        "runs - 1 degrees of freedom (the readings of one run share its daemon's state). Idle: "
        "the intercept; per container: the slope; at "
        f"{at} containers: the line's value there.{beyond} Per container vs rootful Docker "
        f"({figures_label(REFERENCE)}): each run's PSS slope over rootful Docker's in the same "
        f"run, their geometric mean with its {conf:.0%} paired t interval, then its verdict (no "
        "margin was fixed for an engine's memory, so none is called equal): more or less when "
        "a paired t test on the runs' own slopes rejects equality (at least 3 runs), else "
        "inconclusive. Engines that could not run are listed with n/a and their reason."
    )


def process_table_text(frame: pd.DataFrame, costs: pd.DataFrame) -> pd.DataFrame:
    """The 000 article's "Component | RSS (idle) | RSS (100 containers)" per engine and process
    kind at the highest count every run reached, with intervals; skipped engines as n/a."""
    conf = float(frame["confidence"].iloc[0]) if len(frame) else 0.95
    ci = f"[{conf:.0%} CI]"
    rows = []
    for r in frame.itertuples():
        note = ""
        if not r.reached:
            note = f"interval is the range of {r.n_runs} runs (coverage {r.coverage:.1%})"
        rows.append({
            "Engine": figures_label(r.mode), "Process": KIND_LABELS.get(r.kind, r.kind),
            f"RSS idle MiB {ci}": _mib(r.idle_kib, r.idle_lo_kib, r.idle_hi_kib),
            "Containers": str(int(r.containers)),
            f"RSS loaded MiB {ci}": _mib(r.loaded_kib, r.loaded_lo_kib, r.loaded_hi_kib),
            f"Growth per container MiB {ci}": _mib(r.per_container_kib, r.per_container_lo_kib,
                                                   r.per_container_hi_kib, 2),
            "Runs": r.n_runs, "Note": note,
        })  # fmt: skip
    for r in costs[costs["n_runs"] == 0].itertuples():

        rows.append({"Engine": figures_label(r.mode), "Process": "total",
                     "Runs": 0, "Note": status_text(r.status, r.reason)})  # fmt: skip
    columns = ["Engine", "Process", f"RSS idle MiB {ci}", "Containers", f"RSS loaded MiB {ci}",
               f"Growth per container MiB {ci}", "Runs", "Note"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def process_caption(frame: pd.DataFrame) -> str:
    conf = float(frame["confidence"].iloc[0]) if len(frame) else 0.95
    return (
        "RSS of each engine's processes by kind (the 000 article's table: dockerd, containerd "
        "and the containerd-shims, here also conmon and the rootless helpers), idle and at the "
        "highest container count every ok run reached. RSS counts shared pages in every process, "
        "so kinds do not add up to the PSS totals of the footprint table. Each: the median over "
        f"runs with a {conf:.0%} distribution-free (order-statistic) interval; growth per "
        "container: each run's (loaded - idle) / containers, median over runs. Kinds an engine "
        "does not have are left out."
    )


def density_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The 004 article's "Max containers | Limiting factor" per engine, within this profile's
    cap, with the memory each container cost at the count reached."""
    conf = float(summary["confidence"].iloc[0]) if len(summary) else 0.95
    ci = f"[{conf:.0%} CI]"
    rows = []
    for r in summary.itertuples():
        ok = r.status == "ok" and r.n_runs > 0
        reached = None
        if ok:
            reached = f"{r.reached_median:.0f} [{r.reached_lo:.0f}, {r.reached_hi:.0f}]"
        note = as_text(r.reason) if r.status == "ok" else status_text(r.status, r.reason)
        if ok and r.reached_coverage < conf - 1e-12:
            short = f"interval is the range of {r.n_runs} runs (coverage {r.reached_coverage:.1%})"
            note = "; ".join(p for p in (note, short) if p)
        rows.append({
            "Engine": r.configuration, f"Containers reached {ci}": reached,
            "Cap": None if pd.isna(r.cap) else f"{r.cap:.0f}",
            "Stopped because": as_text(r.stopped) or None,
            f"Host memory taken per container MiB {ci}": _mib(
                r.mem_per_container_mib * MIB, r.mem_per_container_lo_mib * MIB,
                r.mem_per_container_hi_mib * MIB, 2) if ok else None,
            f"Engine PSS per container MiB {ci}": _mib(
                r.engine_pss_per_container_mib * MIB, r.engine_pss_per_container_lo_mib * MIB,
                r.engine_pss_per_container_hi_mib * MIB, 2) if ok else None,
            "Runs": tables.runs_text(r.n_runs, r.n_runs_planned),
            "Note": note,
        })  # fmt: skip
    table = pd.DataFrame(rows)
    if len(summary) and summary["environment"].nunique() > 1:
        table.insert(0, "Environment", summary["environment"].to_numpy())
    return table


def density_caption(summary: pd.DataFrame) -> str:
    conf = float(summary["confidence"].iloc[0]) if len(summary) else 0.95
    return (
        "Container density (the 004 article's table, bounded): idle containers started in "
        "batches until the profile's cap, a failed start or the time bound. Containers "
        f"reached: median over runs with a {conf:.0%} distribution-free interval (the runs' "
        "range when there are too few runs for that level). An engine that stops at the cap "
        "has not met its limit: the cap is far below the articles' thousands. Memory per "
        "container at the count reached: the host's MemAvailable drop (kernel memory and "
        "the containers' own processes included, and anything else the machine did meanwhile; "
        "negative when MemAvailable rose, which resolves no cost per container) and the growth "
        "of the engine's own processes' PSS, each divided by the count; medians "
        "over runs with the same intervals. Engines that could not run are listed with n/a and "
        "their reason."
    )


def headline(costs: pd.DataFrame, density: pd.DataFrame) -> str:
    """Deterministic digest of the headline numbers (checked by nbval)."""
    lines = []
    for r in costs.itertuples():
        head = f"footprint {r.environment} {r.mode}: {r.status}"
        if not r.n_runs or pd.isna(r.pss_per_container_kib):
            lines.append(f"{head}, n/a ({r.reason})")
            continue
        lines.append(
            f"{head}, {r.n_runs} runs, PSS idle {r.pss_idle_kib:.1f} KiB "
            f"[{r.pss_idle_lo_kib:.1f}, {r.pss_idle_hi_kib:.1f}], per container "
            f"{r.pss_per_container_kib:.1f} KiB [{r.pss_per_container_lo_kib:.1f}, "
            f"{r.pss_per_container_hi_kib:.1f}], at {r.at} {r.pss_at_kib:.1f} KiB, RSS per "
            f"container {r.rss_per_container_kib:.1f} KiB, vs rootful Docker {r.ratio:.4f} "
            f"[{r.ratio_lo:.4f}, {r.ratio_hi:.4f}]"
        )
    for r in density.itertuples():
        head = f"density {r.environment} {r.mode}: {r.status}"
        if not r.n_runs:
            lines.append(f"{head}, n/a ({r.reason})")
            continue
        lines.append(
            f"{head}, {r.n_runs} runs, reached {r.reached_median:.0f} [{r.reached_min:.0f}, "
            f"{r.reached_max:.0f}] of cap {r.cap:.0f}, host {r.mem_per_container_mib:.2f} MiB "
            f"and engine PSS {r.engine_pss_per_container_mib:.2f} MiB per container"
        )
    return "\n".join(lines)


# --- figures ----------------------------------------------------------------------------------


def fitted_band(
    samples: pd.DataFrame, runs: pd.DataFrame, costs: pd.DataFrame, steps: int = 21
) -> pd.DataFrame:
    """Per measured engine, the fitted total PSS line and its pointwise interval (MiB) on a grid
    of counts from 0 to the highest count measured: ``fit_line`` predicted at each count."""
    measured = _measured(ok_samples(samples, runs), (TOTAL_PSS,))
    rows = []
    for r in costs[costs["n_runs"] > 0].itertuples():
        cell = measured[(measured["environment"] == r.environment) & (measured["mode"] == r.mode)]
        top = int(cell["sample"].max()) if len(cell) else 0
        if pd.isna(r.pss_per_container_kib) or top == 0:
            continue
        for x in np.unique(np.linspace(0, top, steps).round().astype(int)):
            fit = fit_line(cell["sample"], cell["value"], cell["run"], r.confidence, int(x))
            rows.append({"environment": r.environment, "mode": r.mode, "count": int(x),
                         "fit_mib": fit.total_at / MIB, "lo_mib": fit.total_at_lo / MIB,
                         "hi_mib": fit.total_at_hi / MIB})  # fmt: skip
    return pd.DataFrame(rows, columns=["environment", "mode", "count", "fit_mib", "lo_mib",
                                       "hi_mib"])  # fmt: skip


def footprint_figure(samples: pd.DataFrame, runs: pd.DataFrame, costs: pd.DataFrame):
    """Total PSS of the engine's processes against the container count: every reading (dots),
    the fitted line per engine and its pointwise interval (band). Returns (chart, caption)."""
    measured = _measured(ok_samples(samples, runs), (TOTAL_PSS,)).copy()
    measured["mib"] = measured["value"] / MIB
    band = fitted_band(samples, runs, costs)
    modes = list(costs.loc[costs["n_runs"] > 0, "mode"])
    scale = figures.mode_scale(modes)
    legend = alt.Legend(labelExpr=_label_expr(modes), symbolType="stroke", symbolStrokeWidth=3)
    color = alt.Color("mode:N", scale=scale, title="Engine", legend=legend)
    # One legend, the lines': Vega-Lite takes a shared legend from the first layer.
    quiet = alt.Color("mode:N", scale=scale, legend=None)
    x = alt.X("count:Q", title="idle containers running")
    chart = alt.layer(
        alt.Chart(band)
        .mark_line(strokeWidth=2)
        .encode(x=x, y=alt.Y("fit_mib:Q", title="engine processes' total PSS (MiB)"), color=color),
        alt.Chart(band)
        .mark_area(opacity=0.18)
        .encode(x=x, y="lo_mib:Q", y2="hi_mib:Q", color=quiet),
        alt.Chart(measured.rename(columns={"sample": "count"}))
        .mark_circle(size=28, opacity=0.7)
        .encode(
            x=x,
            y="mib:Q",
            color=quiet,
            tooltip=["mode:N", "run:O", "count:Q", alt.Tooltip("mib:Q", format=".1f")],
        ),
    ).properties(title="Engine memory as idle containers are added", width=420, height=280)
    conf = float(costs["confidence"].iloc[0]) if len(costs) else 0.95
    caption = (
        "Total PSS of each container engine's own processes against the number of idle "
        "containers running. Dots: every reading of every ok run; lines: the least-squares fit "
        f"per engine (its slope is the per-container cost); bands: the line's {conf:.0%} "
        "pointwise interval, standard errors clustered by run (t with runs - 1 degrees of "
        "freedom)."
    )
    skipped = [f"{figures_label(r.mode)} ({status_text(r.status, r.reason)})"
               for r in costs.itertuples() if r.n_runs == 0]  # fmt: skip
    if skipped:
        caption += " Not measured: " + "; ".join(skipped) + "."
    return chart, caption


def _label_expr(modes) -> str:
    """Vega expression showing the modes' labels in the legend instead of their ids."""
    parts = [f"datum.label == '{m}' ? '{figures.MODE_LABELS.get(m, m)}'" for m in modes]
    return " : ".join(parts + ["datum.label"])


def density_figure(per_run: pd.DataFrame, summary: pd.DataFrame):
    """Containers reached per engine: each run (dots), the median over runs (diamond) with its
    interval (bar), the cap (tick); engines not measured say why. Returns (chart, caption)."""
    frame = summary.copy()
    frame["status_text"] = [
        "" if st == "ok" else status_text(st, why)
        for st, why in zip(frame["status"], frame["reason"], strict=True)
    ]
    order = list(dict.fromkeys(frame["configuration"]))
    points = per_run.merge(frame[[*CELL, "configuration"]], on=CELL)
    measured = frame[frame["n_runs"] > 0]
    y = alt.Y("configuration:N", sort=order, title=None)
    color = alt.Color("mode:N", scale=figures.mode_scale(frame["mode"]), legend=None)
    top = float(np.nanmax(np.r_[measured["reached_hi"], measured["cap"], 1.0]))
    x = alt.X("reached_median:Q", title="containers running when the step stopped",
              scale=alt.Scale(domain=[0, top * 1.08]))  # fmt: skip
    chart = alt.layer(
        alt.Chart(measured).mark_tick(color="#b0b0b0", thickness=2, size=22)
        .encode(x="cap:Q", y=y),
        alt.Chart(points).mark_circle(size=26, color="#7a7a7a", opacity=0.8)
        .encode(x="reached:Q", y=y, tooltip=["run:O", "reached:Q", "stopped:N"]),
        alt.Chart(measured).mark_rule(strokeWidth=2)
        .encode(x="reached_lo:Q", x2="reached_hi:Q", y=y, color=color),
        alt.Chart(measured).mark_point(shape="diamond", size=120, filled=True)
        .encode(x=x, y=y, color=color, tooltip=["configuration:N", "reached_median:Q",
                                                "stopped:N"]),
        alt.Chart(frame[frame["status"] != "ok"])
        .mark_text(align="left", dx=4, color="#b30000", fontStyle="italic", limit=420)
        .encode(x=alt.datum(0), y=y, text="status_text:N"),
    ).properties(title="Container density within the profile's cap", width=420)  # fmt: skip
    conf = float(frame["confidence"].iloc[0]) if len(frame) else 0.95
    caption = (
        "Containers each engine was running when its density step stopped. Dots: each run; "
        f"diamonds: the median over runs; bars: its {conf:.0%} distribution-free interval (the "
        "runs' range when there are too few runs); grey ticks: the profile's cap. A diamond on "
        "the tick means every run stopped at the cap, not at a limit of the engine."
    )
    skipped = [f"{r.configuration} ({r.status_text})" for r in frame.itertuples()
               if r.status != "ok"]  # fmt: skip
    if skipped:
        caption += " Not measured: " + "; ".join(skipped) + "."
    return chart, caption


# --- files ------------------------------------------------------------------------------------


def write_processed(frames: dict[str, pd.DataFrame], processed_dir) -> list:
    """Each frame as ``<name>.parquet`` (summaries also as ``.csv``): ``tables.write_processed``."""
    return tables.write_processed(frames, processed_dir)
