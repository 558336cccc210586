"""Cold-start analysis: the 004 article's p50/p95/p99 table per mode, with intervals, and the
overheads against native and of rootless against rootful.

Starts inside one run share that run's conditions (the engine's caches, what else the machine
was doing), so they are not independent draws: the unit of inference is the run.

- ``percentile_table``: per (environment, mode) and level q, each run's q-quantile of its
  measured starts (the per-run summary); the point is the median of those per-run values and
  its interval the distribution-free order-statistic interval (``stats.quantile_ci``) over
  runs, with its exact coverage (``reached`` is False when there are too few runs for the
  confidence: then the interval is the per-run range and ``coverage`` says what it covers).
  ``pooled`` is the q-quantile of all measured starts together, the number the article's table
  shows.
- ``overheads``: pooled q-quantile of a mode against a baseline mode (native; or the rootful
  engine for a rootless one), difference and ratio with a paired cluster bootstrap over runs
  (``stats.quantile_shift_ci``: only runs measured in both, a run drawn the same number of
  times in both), and ``plus_pct`` = (ratio - 1) x 100, the article's "+%".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipeline import stats

METRIC = "coldstart_s"
QUANTILES = (0.5, 0.95, 0.99)
KEYS = ("environment", "mode")
# Rootless modes and the rootful mode of the same engine (the article's "rootless adds ~20%").
ROOTLESS_VS_ROOTFUL = (("rootless-docker", "docker-bridge"), ("rootless-podman", "podman"))


def measured(samples: pd.DataFrame) -> pd.DataFrame:
    """The measured starts (warm-up starts are kept in the data, never analysed)."""
    return samples[(samples["metric"] == METRIC) & ~samples["warmup"].astype(bool)]


def per_run_percentiles(samples: pd.DataFrame, qs=QUANTILES) -> pd.DataFrame:
    """One row per (environment, mode, run, q): that run's q-quantile of its measured starts
    (numpy's inverted-CDF definition, as the pooled quantiles)."""
    rows = []
    for key, group in measured(samples).groupby([*KEYS, "run"], observed=True):
        values = group["value"].to_numpy(dtype=float)
        for q, v in zip(qs, np.quantile(values, qs, method="inverted_cdf"), strict=True):
            rows.append({**dict(zip((*KEYS, "run"), key, strict=True)), "q": q, "value": v})
    columns = [*KEYS, "run", "q", "value"]
    return pd.DataFrame(rows, columns=columns).sort_values(columns[:4], ignore_index=True)


def _cell(group: pd.DataFrame) -> stats.RunSamples:
    return stats.RunSamples.from_arrays(group["value"].to_numpy(), group["run"].to_numpy())


def percentile_table(samples: pd.DataFrame, qs=QUANTILES, confidence: float = 0.95) -> pd.DataFrame:
    """Per (environment, mode, q): the median over runs of the per-run q-quantile with its
    rank interval over runs, and the pooled q-quantile of every measured start."""
    per_run = per_run_percentiles(samples, qs)
    rows = []
    for key, group in measured(samples).groupby(list(KEYS), observed=True):
        pooled = stats.pooled_quantiles(_cell(group), qs)
        mine = per_run[(per_run[list(KEYS)] == pd.Series(key, index=list(KEYS))).all(axis=1)]
        for q, pooled_q in zip(qs, pooled, strict=True):
            ci = stats.quantile_ci(mine.loc[mine["q"] == q, "value"], 0.5, confidence)
            rows.append({
                **dict(zip(KEYS, key, strict=True)), "q": q, "value": ci.point, "lo": ci.lo,
                "hi": ci.hi, "coverage": ci.coverage, "reached": ci.reached, "pooled": pooled_q,
                "n_runs": ci.n, "n_starts": len(group),
            })  # fmt: skip
    return pd.DataFrame(rows)


def overheads(
    samples: pd.DataFrame,
    pairs: list[tuple[str, str]] | None = None,
    qs=QUANTILES,
    confidence: float = 0.95,
    n_boot: int = 4000,
    seed: int | None = 0,
) -> pd.DataFrame:
    """Per environment, (mode, baseline) pair and q: pooled q-quantile difference (``shift``,
    seconds) and ratio with paired cluster-bootstrap intervals, and ``plus_pct``.

    ``pairs`` defaults to every measured mode against native, then each rootless mode against
    its rootful engine; pairs with a side not measured are left out."""
    data = measured(samples)
    rows = []
    for environment, env in data.groupby("environment", observed=True):
        cells = {mode: _cell(group) for mode, group in env.groupby("mode", observed=True)}
        wanted = pairs
        if wanted is None:
            wanted = [(m, "native") for m in sorted(cells) if m != "native"]
            wanted += list(ROOTLESS_VS_ROOTFUL)
        for mode, baseline in wanted:
            if mode not in cells or baseline not in cells:
                continue
            shift = stats.quantile_shift_ci(
                cells[mode], cells[baseline], qs, confidence, n_boot, seed
            )
            shift.insert(0, "baseline", baseline)
            shift.insert(0, "mode", mode)
            shift.insert(0, "environment", environment)
            rows.append(shift)
    if not rows:
        return pd.DataFrame()
    out = pd.concat(rows, ignore_index=True)
    for col, src in (
        ("plus_pct", "ratio"),
        ("plus_pct_lo", "ratio_lo"),
        ("plus_pct_hi", "ratio_hi"),
    ):
        out[col] = (out[src] - 1.0) * 100.0
    return out
