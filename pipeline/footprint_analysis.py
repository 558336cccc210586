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
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy import stats as _st

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


def per_container_cost(
    samples: pd.DataFrame,
    metrics: tuple[str, ...] = (TOTAL_PSS, TOTAL_RSS),
    confidence: float = 0.95,
    at: int = 100,
) -> pd.DataFrame:
    """One row per (environment, mode, metric): ``fit_line`` of the metric on the container
    count (the samples' ``sample`` index), in KiB and KiB per container."""
    rows = []
    measured = _measured(samples, metrics)
    for (env, mode, metric), cell in measured.groupby(["environment", "mode", "metric"]):
        fit = fit_line(cell["sample"], cell["value"], cell["run"], confidence, at)
        rows.append({"environment": env, "mode": mode, "metric": metric, **fit.as_dict()})
    return pd.DataFrame(rows)


def idle_and_loaded(samples: pd.DataFrame, measure: str = "rss") -> pd.DataFrame:
    """The 000 article's table: per (environment, mode, kind) the memory (KiB, median over
    runs) at idle and at the highest container count every run reached, and per container
    at that count."""
    metrics = [f"footprint_{measure}_kib_{k}" for k in (*KINDS, "total")]
    measured = _measured(samples, metrics)
    rows = []
    for (env, mode), cell in measured.groupby(["environment", "mode"]):
        top = int(cell.groupby("run")["sample"].max().min())
        for metric, per_metric in cell.groupby("metric"):
            idle = per_metric.loc[per_metric["sample"] == 0, "value"].median()
            loaded = per_metric.loc[per_metric["sample"] == top, "value"].median()
            rows.append({
                "environment": env, "mode": mode,
                "kind": metric.rsplit("_", 1)[1], "idle_kib": idle,
                "containers": top, "loaded_kib": loaded,
                "per_container_kib": (loaded - idle) / top if top else np.nan,
            })  # fmt: skip
    return pd.DataFrame(rows)


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
