"""Run-to-run noise of every benchmark measured against native, with the mixed model the
Internet-vs-datacenter comparison uses (``stats.variance_components``: mode fixed, run a random
intercept, per-run values as the unit). One row per (benchmark, environment, path, variant,
metric): the SD of the run effect every mode of a run shares, the residual SD, and their total
(how far one configuration's per-run value moves from run to run), each with its
parametric-bootstrap interval and relative to native's mean (``cv_*_pct``), so a reader can set
a reported overhead beside the noise it has to stand out from, and the smallest difference a
paired comparison with native resolves at the runs measured (``resolvable_pct``: the run effect
cancels in a paired ratio, so its per-run SD is about ``sqrt(2)`` residual SDs; relative SDs
stand in for SDs of logs; ``stats.resolvable``).

Per-run values are the ones each benchmark's summary compares (``engine.per_run``): iperf3's
receiver-side total (TCP) and received rate (UDP), the per-run p50 and p99 of latency and HTTP
round trips, the per-run median of the host benchmarks' per-second rates, compile time and
system-call costs (cpu, memory, disk, syscall), and the per-run percentiles of the cold-start
times; a percentile is left out where a run is too short for it (``stats.min_samples``), as
in the summaries. Benchmarks without a native baseline (footprint, density, orchestration, lb)
compare engines or balancers with each other and are not decomposed here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.analysis import engine, stats

BASELINE = "native"
KEYS = ["benchmark", "environment", "path", "variant", "metric"]
COLUMNS = [
    *KEYS, "status", "reason", "n_runs", "n_modes", "native_mean",
    *(f"{name}{suffix}" for name in ("sd_run", "sd_resid", "sd_within")
      for suffix in ("", "_lo", "_hi")),
    *(f"cv_{name}_pct" for name in ("sd_run", "sd_resid", "sd_within")),
    "cv_sd_within_lo_pct", "cv_sd_within_hi_pct", "resolvable_pct", "confidence", "n_sim",
    "seed",
]  # fmt: skip
CAPTION = (
    "Run-to-run noise per benchmark: the SD of one configuration's per-run value across runs "
    "(run effect and residual of a mixed model with mode fixed and run random), as % of "
    "native's mean, with a 95% parametric-bootstrap interval. Paired comparison resolves: the "
    "smallest difference from native a paired t test at 5% finds four times in five with the "
    "runs measured (the run effect cancels in a paired ratio; about sqrt(2) residual SDs)."
)


def per_run_values(raw_dir: str | Path) -> pd.DataFrame:
    """Every benchmark's per-run values in one frame (``engine.per_run``, as ratios:
    ``engine.relative``): ``benchmark``, ``environment``, ``mode``, ``path``, ``variant``,
    ``metric``, ``run``, ``value``."""
    columns = ["benchmark", "environment", "mode", "path", "variant", "metric", "run", "value"]
    return engine.relative(engine.per_run(raw_dir))[columns]


def decompose(
    values: pd.DataFrame, confidence: float = 0.95, n_sim: int = 200, seed: int = 20261121
) -> pd.DataFrame:
    """One row per (benchmark, environment, path, variant, metric) with ``COLUMNS``."""
    rows = []
    groups = list(values.groupby(KEYS, sort=False))
    fits = stats.variance_components_each([part for _, part in groups], BASELINE, confidence,
                                           n_sim, seed)  # fmt: skip
    for (key, part), vc in zip(groups, fits, strict=True):
        mean = float(part.loc[part["mode"] == BASELINE, "value"].mean())
        row = dict(zip(KEYS, key, strict=True))
        row.update({k: getattr(vc, k) for k in (
            "status", "reason", "n_runs", "n_modes", "sd_run", "sd_run_lo", "sd_run_hi",
            "sd_resid", "sd_resid_lo", "sd_resid_hi", "sd_within", "sd_within_lo",
            "sd_within_hi", "confidence", "n_sim", "seed")})  # fmt: skip
        row["native_mean"] = mean
        for name in ("sd_run", "sd_resid", "sd_within"):
            row[f"cv_{name}_pct"] = 100 * row[name] / abs(mean) if mean else float("nan")
        for end in ("lo", "hi"):
            row[f"cv_sd_within_{end}_pct"] = (
                100 * row[f"sd_within_{end}"] / abs(mean) if mean else float("nan"))  # fmt: skip
        paired_sd = np.sqrt(2.0) * row["cv_sd_resid_pct"] / 100.0
        alpha = round(1.0 - confidence, 12)
        row["resolvable_pct"] = 100.0 * np.expm1(stats.resolvable(paired_sd, vc.n_runs, alpha))
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def table(noise: pd.DataFrame) -> pd.DataFrame:
    """The article's table: run-to-run SD as % of native's mean, with its interval."""

    def pct(v) -> str:
        return "n/a" if pd.isna(v) else f"{v:.2f}"

    return pd.DataFrame(
        {
            "Benchmark": noise["benchmark"],
            "Environment": noise["environment"],
            "Path": noise["path"],
            "Variant": noise["variant"],
            "Statistic": noise["metric"],
            "Runs": noise["n_runs"],
            "Run-to-run SD, % of native [95% CI]": [
                "n/a" if pd.isna(r.cv_sd_within_pct) else
                f"{r.cv_sd_within_pct:.2f} [{pct(r.cv_sd_within_lo_pct)}, "
                f"{pct(r.cv_sd_within_hi_pct)}]"
                for r in noise.itertuples()
            ],  # fmt: skip
            "of it: run effect %": [pct(v) for v in noise["cv_sd_run_pct"]],
            "residual %": [pct(v) for v in noise["cv_sd_resid_pct"]],
            "Paired comparison resolves, %": [pct(v) for v in noise["resolvable_pct"]],
            "Note": [
                "" if r.status == "ok" else f"not fitted: {r.reason}" for r in noise.itertuples()
            ],
        }
    )
