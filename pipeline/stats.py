"""Statistics for the study: per-run summaries, rank intervals for quantiles, ratio intervals.

Per-run summaries are the unit of inference: samples inside one run share the run's
conditions (placement, cache state, neighbours), so they are not independent draws and an
interval computed from pooled samples would be far too narrow. Intervals here are therefore
computed across runs (blocks), and the bootstrap resamples whole runs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats as _st


@dataclass(frozen=True)
class QuantileCI:
    """A quantile with a distribution-free interval.

    ``lo``/``hi`` are the order statistics ``x_(lo_rank)`` and ``x_(hi_rank)`` (1-based ranks);
    ``coverage`` is the exact probability that they enclose the true quantile for a continuous
    distribution. ``reached`` is False when ``n`` is too small for ``confidence``: the interval
    is then the full range ``(min, max)`` and ``coverage`` says what it really covers.
    """

    point: float
    lo: float
    hi: float
    coverage: float
    confidence: float
    n: int
    lo_rank: int
    hi_rank: int
    reached: bool

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class RatioCI:
    """Ratio of medians ``mode / baseline`` across paired runs with a cluster-bootstrap interval."""

    ratio: float
    lo: float
    hi: float
    confidence: float
    n_runs: int
    n_boot: int
    seed: int | None

    def as_dict(self) -> dict:
        return asdict(self)


def order_statistic_ranks(
    n: int, q: float = 0.5, confidence: float = 0.95
) -> tuple[int, int, float]:
    """1-based ranks ``(l, u)`` with ``P(x_(l) <= xi_q <= x_(u)) >= confidence``, and that coverage.

    The count of samples below the true ``q``-quantile is Binomial(n, q), so
    ``P(x_(l) <= xi_q < x_(u)) = B(u - 1) - B(l - 1)`` with ``B`` its CDF. The ranks are chosen
    equal-tailed (each tail at most ``alpha / 2``); when one tail cannot be bounded inside the
    sample (extreme ``q``, small ``n``), that end is pinned to the sample's extreme and the other
    end is moved inwards only as far as the confidence still allows. When no pair reaches the
    confidence the result is ``(1, n)`` with its actual, lower coverage.
    """
    if n < 1:
        raise ValueError("order_statistic_ranks needs n >= 1")
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be in (0, 1), got {q}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    alpha = 1.0 - confidence
    ranks = np.arange(1, n + 1)
    cdf_below = _st.binom.cdf(ranks - 1, n, q)  # cdf_below[k-1] = B(k - 1) = P(count < k)

    def coverage(lo: int, hi: int) -> float:
        return float(cdf_below[hi - 1] - cdf_below[lo - 1]) if hi > lo else 0.0

    # Tolerance so that exact binomial tail values (e.g. 1/64) are not lost to rounding.
    eps = 1e-12
    lo_ok = ranks[cdf_below <= alpha / 2 + eps]
    hi_ok = ranks[cdf_below >= 1.0 - alpha / 2 - eps]
    lo = int(lo_ok.max()) if lo_ok.size else 1
    hi = int(hi_ok.min()) if hi_ok.size else n
    if coverage(lo, hi) >= confidence - eps:
        return lo, hi, coverage(lo, hi)
    if not lo_ok.size and hi_ok.size:
        # The lower tail is pinned at x_(1): widen upwards until the confidence is met.
        for cand in range(hi, n + 1):
            if coverage(1, cand) >= confidence - eps:
                return 1, cand, coverage(1, cand)
    elif lo_ok.size and not hi_ok.size:
        for cand in range(lo, 0, -1):
            if coverage(cand, n) >= confidence - eps:
                return cand, n, coverage(cand, n)
    return 1, n, coverage(1, n)


def quantile_ci(values, q: float = 0.5, confidence: float = 0.95) -> QuantileCI:
    """Sample ``q``-quantile with a distribution-free (order-statistic) interval.

    The point is ``numpy.quantile`` (for the median: the mean of the two middle values when
    ``n`` is even). NaNs are dropped. With no values every number is NaN; with too few values
    for ``confidence`` the interval is ``(min, max)`` and ``reached`` is False.
    """
    x = np.sort(np.asarray(values, dtype=float))
    x = x[~np.isnan(x)]
    n = int(x.size)
    if n == 0:
        nan = float("nan")
        return QuantileCI(nan, nan, nan, nan, confidence, 0, 0, 0, False)
    lo, hi, cov = order_statistic_ranks(n, q, confidence)
    reached = cov >= confidence - 1e-12
    return QuantileCI(
        point=float(np.quantile(x, q)),
        lo=float(x[lo - 1]),
        hi=float(x[hi - 1]),
        coverage=cov,
        confidence=confidence,
        n=n,
        lo_rank=lo,
        hi_rank=hi,
        reached=bool(reached),
    )


def per_run_summary(
    samples: pd.DataFrame,
    metric: str,
    how: str = "median",
    keys: tuple[str, ...] = ("environment", "mode", "path", "run"),
) -> pd.DataFrame:
    """One value per (environment, mode, path, run) from the measured (non-warm-up) samples.

    Warm-up windows are recorded for transparency but never analysed. When a run holds several
    measured windows (or several samples), they are reduced with ``how`` (a pandas aggregation).
    """
    sel = samples[(samples["metric"] == metric) & ~samples["warmup"].astype(bool)]
    out = sel.groupby(list(keys), as_index=False, observed=True)["value"].agg(how)
    return out.sort_values(list(keys), ignore_index=True)


def _paired(per_run: pd.DataFrame, mode: str, baseline: str) -> np.ndarray:
    """Runs x 2 array ``[mode, baseline]`` restricted to runs where both were measured."""
    sel = per_run[per_run["mode"].isin([mode, baseline])]
    dup = sel.duplicated(["run", "mode"])
    if dup.any():
        raise ValueError(
            "ratio_ci needs one value per (run, mode); reduce samples with per_run_summary first"
        )
    wide = sel.pivot(index="run", columns="mode", values="value")
    for col in (mode, baseline):
        if col not in wide.columns:
            wide[col] = np.nan
    return wide[[mode, baseline]].dropna().to_numpy(dtype=float)


def ratio_ci(
    per_run: pd.DataFrame,
    mode: str,
    baseline: str = "native",
    confidence: float = 0.95,
    n_boot: int = 4000,
    seed: int | None = 0,
) -> RatioCI:
    """Ratio of medians ``median(mode) / median(baseline)`` across runs, with a bootstrap interval.

    ``per_run`` has columns ``run``, ``mode``, ``value`` (one value per run and mode, for one
    environment and path). Only runs where both modes were measured are used, and the bootstrap
    resamples those runs (blocks) with replacement, so each replicate keeps the two modes of a
    run together: conditions shared inside a run cancel in the ratio instead of inflating it.
    The interval is the percentile interval of the replicate ratios. Deterministic for a seed.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    pairs = _paired(per_run, mode, baseline)
    n = pairs.shape[0]
    nan = float("nan")
    if n == 0:
        return RatioCI(nan, nan, nan, confidence, 0, n_boot, seed)
    ratio = float(np.median(pairs[:, 0]) / np.median(pairs[:, 1]))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    boot = np.median(pairs[idx, 0], axis=1) / np.median(pairs[idx, 1], axis=1)
    alpha = 1.0 - confidence
    lo, hi = np.quantile(boot, [alpha / 2, 1.0 - alpha / 2])
    return RatioCI(ratio, float(lo), float(hi), confidence, n, n_boot, seed)
