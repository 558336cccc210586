"""Statistics for the study: per-run summaries, rank intervals for quantiles, ratio intervals.

Per-run summaries are the unit of inference: samples inside one run share the run's
conditions (placement, cache state, neighbours), so they are not independent draws and an
interval computed from pooled samples would be far too narrow. Intervals here are therefore
computed across runs: Student t intervals of per-run values (or of their logs, for ratios), the
median's rank interval across runs, and a parametric bootstrap for the variance components.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import NamedTuple

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


# --- paired per-run log ratios: the estimate, interval and tests of every comparison --------
#
# A comparison with native is made on the runs where both were measured: one log ratio
# ``d = log(mode) - log(native)`` per run. Conditions shared inside a run (a slow moment of the
# machine, a congested path) cancel in it. The headline is the geometric mean of the per-run
# ratios, ``exp(mean d)``, its interval the Student t interval of ``mean d``, and the verdict's
# two tests (the TOST against the margin, the t test of "no difference") are t tests on the
# same ``d``: the estimate printed is the one the verdict tests, and the interval's coverage is
# its label at every run count when the per-run log ratios are roughly normal (a ratio of two
# positive measurements of the same run is close to log-normal). A percentile bootstrap over
# runs cannot promise that: with 3 runs it has four distinct replicate values and its "95%"
# interval is the range of the runs, about a 75% interval (tests/unit/test_coverage.py).

#: Power at which ``resolvable`` is computed: the difference a campaign of this size finds
#: four times in five.
POWER = 0.8


def comparison_alpha(alpha: float, m: int = 1, method: str = "none") -> float:
    """The level one comparison is tested at, whatever the others of its table show, when
    ``m`` comparisons share the table's ``method`` adjustment (a key of ``MULTIPLICITY``).

    Holm's first step rejects at ``alpha / m``, and a p-value at or below ``alpha / m`` is
    rejected whatever the others are (every p-value before it in the step-down order is
    smaller, so no step stops). Benjamini-Hochberg's threshold for one comparison ranges from
    ``alpha / m`` (every other comparison null, the case an MDE is stated for) to ``alpha``
    (every other one rejected); a p-value at or below ``alpha / m`` is always rejected, so
    ``alpha / m`` is the level both methods guarantee, and the power computed at it is a lower
    bound (tests/unit/test_mde_power.py measures how close). ``none``: ``alpha``."""
    if method not in MULTIPLICITY:
        raise ValueError(f"multiplicity must be one of {sorted(MULTIPLICITY)}, got {method!r}")
    m = max(int(m), 1)
    return alpha if MULTIPLICITY[method] is None else alpha / m


@functools.lru_cache(maxsize=4096)
def _noncentrality(df: float, alpha: float, power: float) -> float:
    """The noncentrality ``delta`` at which a two-sided t test with ``df`` degrees of freedom
    at ``alpha`` rejects with probability ``power``: the exact noncentral t power, not the
    normal planning formula (which is 5% short at 3 runs)."""
    tc = _st.t.ppf(1.0 - alpha / 2.0, df)

    def shortfall(delta: float) -> float:
        below = _st.nct.sf(tc, df, -delta)  # P(T < -tc): scipy's cdf there is NaN far out
        return _st.nct.sf(tc, df, delta) + (below if np.isfinite(below) else 0.0) - power

    hi = 1.0
    while shortfall(hi) < 0.0:
        hi *= 2.0
    from scipy.optimize import brentq

    return float(brentq(shortfall, 0.0, hi, xtol=1e-10))


def resolvable(
    sd: float, n: int, alpha: float = 0.05, power: float = POWER, m: int = 1,
    method: str = "none", df: float | None = None,
) -> float:  # fmt: skip
    """Smallest true shift of ``mean d`` that the table's adjusted two-sided t test detects
    with probability ``power``, with ``n`` runs whose values ``d`` have SD ``sd`` (taken as the
    true SD): ``delta * sd / sqrt(n)``, ``delta`` the noncentrality of the noncentral t with
    ``df`` (default ``n - 1``) degrees of freedom at which the test at
    ``comparison_alpha(alpha, m, method)`` has that power. ``m`` is the number of comparisons
    adjusted together in the table and ``method`` its multiplicity method. The result is on the
    scale of ``d``: a log ratio for ratios (``minimum_detectable`` says it as a percentage),
    microseconds or points for a shift. NaN with fewer than 2 runs."""
    if n < 2 or not np.isfinite(sd):
        return float("nan")
    df = float(n - 1) if df is None else float(df)
    if not np.isfinite(df) or df <= 0:
        return float("nan")
    level = comparison_alpha(alpha, m, method)
    return float(_noncentrality(df, round(level, 15), power) * sd / np.sqrt(n))


@dataclass(frozen=True)
class Mde:
    """The minimum detectable effect of one comparison under its table's rule.

    ``log``: the smallest shift of the mean per-run log ratio found with power ``POWER``
    (for an absolute comparison, the shift in its unit); ``fraction``: the same on the
    reader's scale, the relative change in the direction that makes the mode worse:
    ``1 - exp(-log)`` (a ``drop``) for a metric where higher is better, ``exp(log) - 1`` (a
    ``rise``) where lower is; ``log`` itself for an absolute comparison. ``direction``:
    ``"drop"`` or ``"rise"``. ``alpha``: the level the comparison is tested at
    (``comparison_alpha``), ``m`` and ``method`` the table's adjustment."""

    log: float
    fraction: float
    direction: str
    alpha: float
    m: int
    method: str

    def as_dict(self) -> dict:
        return asdict(self)


def reader_fraction(log_shift: float, higher_is_better: bool = True) -> float:
    """A log-scale shift as the relative change a reader quotes in the worse direction:
    ``1 - exp(-x)`` (the drop of a rate) when higher is better, ``exp(x) - 1`` (the rise of a
    time) when lower is better."""
    return float(-np.expm1(-log_shift) if higher_is_better else np.expm1(log_shift))


def minimum_detectable(
    sd: float, n: int, m: int = 1, method: str = "none", alpha: float = 0.05,
    higher_is_better: bool = True, absolute: bool = False, df: float | None = None,
    power: float = POWER,
) -> Mde:  # fmt: skip
    """``resolvable`` under the table's rule (``m`` comparisons, ``method``), with the reader's
    percentage and its direction (``Mde``). ``absolute``: ``sd`` is of per-run differences in
    a unit (microseconds, points), not of log ratios."""
    log = resolvable(sd, n, alpha, power, m, method, df)
    fraction = log if absolute else reader_fraction(log, higher_is_better)
    return Mde(log, fraction, "drop" if higher_is_better else "rise",
               comparison_alpha(alpha, m, method), max(int(m), 1), method)  # fmt: skip


@dataclass(frozen=True)
class RatioCI:
    """Geometric mean of per-run ratios ``mode / baseline`` over paired runs, with its t interval.

    ``sd_log`` is the SD of the per-run log ratios; ``resolvable`` the smallest rise of the
    ratio (``0.05`` = 5%, ``exp(x) - 1``) one unadjusted paired t test at ``1 - confidence``
    would find with power ``POWER`` at these runs and that SD (``stats.resolvable``); a table
    restates it under its own adjustment and direction (``adjust_verdicts``'s ``mde``).
    Intervals need 2 runs.
    """

    ratio: float
    lo: float
    hi: float
    confidence: float
    n_runs: int
    sd_log: float
    resolvable: float

    def as_dict(self) -> dict:
        return asdict(self)


def log_ratio_ci(
    values, baseline_values, confidence: float = 0.95, pilot: int | None = None
) -> RatioCI:
    """``RatioCI`` of ``values / baseline_values`` paired by position (pairs with a NaN or a
    non-positive value dropped). One pair: the point only; none: NaN.

    ``pilot``: the comparison's run count was fixed by Stein's two-stage rule from its first
    ``pilot`` pairs (a precision-planned campaign, ``pipeline/collect/planning.py``; the pairs in
    run order). The interval is then Stein's, ``mean(d) +- t(pilot - 1) * s0 / sqrt(n)`` with
    ``s0`` the pilot's SD (``sd_log``), which keeps its confidence where the usual t interval
    on all runs would cover less; with ``n <= pilot`` it is the usual one."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    d = _log_ratios(values, baseline_values)
    n = int(d.size)
    nan = float("nan")
    if n == 0:
        return RatioCI(nan, nan, nan, confidence, 0, nan, nan)
    if n > 1 and np.ptp(d) < 1e-12:  # one ratio in every run: exactly that, not exp(log(.))
        x = np.asarray(values, dtype=float)
        y = np.asarray(baseline_values, dtype=float)
        keep = ~(np.isnan(x) | np.isnan(y)) & (x > 0) & (y > 0)
        r = float(np.median(x[keep] / y[keep]))
        return RatioCI(r, r, r, confidence, n, 0.0, 0.0)
    point = float(np.exp(d.mean()))
    if n < 2:
        return RatioCI(point, nan, nan, confidence, 1, nan, nan)
    if _stein(pilot, n):
        sd, df = float(d[:pilot].std(ddof=1)), float(pilot - 1)
        half = _st.t.ppf(0.5 + confidence / 2.0, df) * sd / np.sqrt(n)
        lo, hi = float(d.mean() - half), float(d.mean() + half)
    else:
        sd, df = float(d.std(ddof=1)), float(n - 1)
        lo, hi = _t_interval(d, confidence)
    mde = resolvable(sd, n, round(1.0 - confidence, 12), df=df)
    return RatioCI(point, float(np.exp(lo)), float(np.exp(hi)), confidence, n, sd,
                   float(np.expm1(mde)))  # fmt: skip


def _stein(pilot: int | None, n: int) -> bool:
    """Whether ``n`` pairs planned from a ``pilot``-pair pilot get Stein's interval and tests."""
    return pilot is not None and 2 <= pilot < n


def _log_ratios(values, baseline_values) -> np.ndarray:
    x = np.asarray(values, dtype=float)
    y = np.asarray(baseline_values, dtype=float)
    if x.shape != y.shape:
        raise ValueError("values and baseline_values must be paired (same length)")
    keep = ~(np.isnan(x) | np.isnan(y)) & (x > 0) & (y > 0)
    return np.log(x[keep]) - np.log(y[keep])


def _t_interval(d: np.ndarray, confidence: float, pilot: int | None = None) -> tuple[float, float]:
    """Student t interval of ``mean(d)`` (n >= 2); zero width when every value is equal. With a
    Stein ``pilot`` (``log_ratio_ci``): the pilot's SD with ``pilot - 1`` df."""
    n = d.size
    sd, df = (d[:pilot].std(ddof=1), pilot - 1) if _stein(pilot, n) else (d.std(ddof=1), n - 1)
    half = _st.t.ppf(0.5 + confidence / 2.0, df) * sd / np.sqrt(n)
    return float(d.mean() - half), float(d.mean() + half)


def ratio_of_means_ci(values, baseline_values, confidence: float = 0.95) -> tuple:
    """``mean(values) / mean(baseline_values)`` over paired runs (pairs with a NaN dropped),
    with a delta-method interval on the log scale and t quantiles with ``n - 1`` degrees of
    freedom: ``log r +- t * se``, ``se**2 = var(a)/a**2 + var(b)/b**2 - 2 cov(a, b)/(a b)`` over
    ``n`` (sample moments of the per-run values, ``a`` and ``b`` their means). Returns
    ``(ratio, lo, hi)``; NaN interval with fewer than 2 runs."""
    x = np.asarray(values, dtype=float)
    y = np.asarray(baseline_values, dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    nan = float("nan")
    n = x.size
    if n == 0 or y.mean() == 0:
        return nan, nan, nan
    point = float(x.mean() / y.mean())
    if n < 2 or point <= 0:
        return point, nan, nan
    a, b = x.mean(), y.mean()
    cov = np.cov(x, y, ddof=1)
    var = (cov[0, 0] / a**2 + cov[1, 1] / b**2 - 2 * cov[0, 1] / (a * b)) / n
    half = _st.t.ppf(0.5 + confidence / 2.0, n - 1) * np.sqrt(max(var, 0.0))
    return point, float(point * np.exp(-half)), float(point * np.exp(half))


def ratio_ci(
    per_run: pd.DataFrame, mode: str, baseline: str = "native", confidence: float = 0.95
) -> RatioCI:
    """``log_ratio_ci`` of ``mode`` against ``baseline`` over the runs where both were measured.

    ``per_run`` has columns ``run``, ``mode``, ``value`` (one value per run and mode, for one
    environment and path).
    """
    pairs = _paired(per_run, mode, baseline)
    return log_ratio_ci(pairs[:, 0], pairs[:, 1], confidence)


# --- the samples of a cell, by run -----------------------------------------------------------


@dataclass(frozen=True)
class RunSamples:
    """The samples of one cell (e.g. one mode on one path), grouped by run and sorted.

    ``runs`` are the run ids in ascending order, ``values[i]`` the sorted samples of
    ``runs[i]`` and ``pooled`` all samples sorted. Build it with ``RunSamples.from_arrays``.
    """

    runs: np.ndarray
    values: tuple[np.ndarray, ...]
    pooled: np.ndarray

    @classmethod
    def from_arrays(cls, values, run_ids, assume_sorted: bool = False) -> RunSamples:
        """Group ``values`` by ``run_ids``. With ``assume_sorted`` the input is already ordered
        by (run, value), as a polars sort leaves it, and no sorting is repeated."""
        v = np.asarray(values, dtype=float)
        r = np.asarray(run_ids)
        if v.shape != r.shape:
            raise ValueError("values and run_ids must have the same length")
        keep = ~np.isnan(v)
        v, r = v[keep], r[keep]
        if not assume_sorted:
            order = np.lexsort((v, r))
            v, r = v[order], r[order]
        runs, starts = np.unique(r, return_index=True)
        bounds = np.r_[starts, v.size]
        per_run = tuple(v[bounds[i] : bounds[i + 1]] for i in range(runs.size))
        return cls(runs=runs, values=per_run, pooled=np.sort(v))

    @property
    def n_runs(self) -> int:
        return int(self.runs.size)

    @property
    def n_samples(self) -> int:
        return int(self.pooled.size)

    def subset(self, run_ids) -> RunSamples:
        """The same cell restricted to ``run_ids`` (those not present are ignored)."""
        want = np.isin(self.runs, np.asarray(run_ids))
        if want.all():
            return self  # immutable: nothing to copy
        values = tuple(v for v, k in zip(self.values, want, strict=True) if k)
        # A stable sort merges the already sorted runs instead of sorting from scratch.
        pooled = np.sort(np.concatenate(values), kind="stable") if values else np.empty(0)
        return RunSamples(runs=self.runs[want], values=values, pooled=pooled)

    def run_quantiles(self, qs) -> np.ndarray:
        """``(n_runs, len(qs))`` per-run quantiles (inverted-CDF, as the pooled ones)."""
        qs = np.atleast_1d(np.asarray(qs, dtype=float))
        out = np.full((self.n_runs, qs.size), np.nan)
        for i, v in enumerate(self.values):
            if v.size:
                out[i] = np.quantile(v, qs, method="inverted_cdf")
        return out


def pooled_quantiles(cell: RunSamples, qs) -> np.ndarray:
    """Quantiles of all the cell's samples together (numpy's ``inverted_cdf``: the smallest
    sample ``x`` with ``count(<= x) >= q * n``), a description of the samples; NaN without
    any."""
    qs = np.atleast_1d(np.asarray(qs, dtype=float))
    if np.any((qs <= 0) | (qs >= 1)):
        raise ValueError("quantile levels must be in (0, 1)")
    if cell.n_samples == 0:
        return np.full(qs.size, np.nan)
    return np.quantile(cell.pooled, qs, method="inverted_cdf")


def _percentile_interval(boot: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    alpha = 1.0 - confidence
    lo, hi = np.nanquantile(boot, [alpha / 2, 1.0 - alpha / 2], axis=0)
    return lo, hi


# --- percentiles: per-run quantiles, their geometric mean and t intervals ------------------
#
# A run's samples share its conditions, so a percentile's uncertainty is read from the runs:
# each run gives its own ``q``-quantile, and a cell's value is the geometric mean of those,
# with the t interval of their logs (the same estimand as the ratios above: the ratio of two
# cells' values over the same runs is the geometric mean of their per-run ratios). The pooled
# quantile of all samples is kept beside it (``pooled``) as a description of the samples.

#: A run's upper-tail ``q``-quantile is used only when at least this many of the run's samples
#: lie beyond it, i.e. the run has ``min_samples(q)`` samples: p90 needs 100, p99 1,000, p99.9
#: 10,000. With fewer, the "p99.9" is the run's largest sample or so, and what varies between
#: runs is an extreme. A run's median (and anything below) is always its own.
TAIL_SAMPLES = 10


def min_samples(q: float) -> int:
    """Samples a run needs for its ``q``-quantile: one up to the median, else ``TAIL_SAMPLES``
    beyond it."""
    return 1 if q <= 0.5 else int(np.ceil(TAIL_SAMPLES / (1.0 - q) - 1e-9))


def short_runs_reason(cell: RunSamples, q: float) -> str | None:
    """Why ``q`` is not reported for ``cell`` (some run too short), or None."""
    sizes = [v.size for v in cell.values]
    need = min_samples(q)
    if sizes and min(sizes) < need:
        return (f"p{100 * q:g} needs {need:,} samples per run ({TAIL_SAMPLES} beyond it); "
                f"the shortest run has {min(sizes):,}")  # fmt: skip
    return None


def run_quantile_ci(
    cell: RunSamples, qs=(0.5, 0.9, 0.99, 0.999), confidence: float = 0.95
) -> pd.DataFrame:
    """One row per level: ``q``, ``value`` (geometric mean of the per-run quantiles), ``lo``,
    ``hi`` (its t interval, 2 runs or more), ``pooled`` (quantile of all samples), ``n_runs``,
    ``n_samples`` and ``reason`` (why a level is NaN: a run too short for it)."""
    qs = np.atleast_1d(np.asarray(qs, dtype=float))
    per_run = cell.run_quantiles(qs) if cell.n_runs else np.empty((0, qs.size))
    pooled = pooled_quantiles(cell, qs)
    rows = []
    for i, q in enumerate(qs):
        reason = short_runs_reason(cell, float(q))
        v = per_run[:, i]
        r = log_ratio_ci(v, np.ones_like(v), confidence)
        ok = reason is None and r.n_runs > 0
        nan = float("nan")
        rows.append({"q": float(q), "value": r.ratio if ok else nan, "lo": r.lo if ok else nan,
                     "hi": r.hi if ok else nan, "pooled": float(pooled[i]),
                     "n_runs": cell.n_runs, "n_samples": cell.n_samples,
                     "reason": reason})  # fmt: skip
    return pd.DataFrame(rows)


def _welch_interval(a: np.ndarray, b: np.ndarray, confidence: float) -> tuple[float, float]:
    """Welch t interval of ``mean(a) - mean(b)`` (independent samples, 2 or more each)."""
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = np.sqrt(va + vb)
    if se == 0:
        m = a.mean() - b.mean()
        return float(m), float(m)
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    half = _st.t.ppf(0.5 + confidence / 2.0, df) * se
    return float(a.mean() - b.mean() - half), float(a.mean() - b.mean() + half)


def quantile_shift_ci(
    cell: RunSamples,
    baseline: RunSamples,
    qs=(0.5, 0.99),
    confidence: float = 0.95,
    paired: bool = True,
    pilot: int | None = None,
) -> pd.DataFrame:
    """Shift ``cell - baseline`` of per-run quantiles, in the unit of the samples and as a ratio.
    ``pilot``: a Stein-planned comparison's pilot pairs (``log_ratio_ci``; paired only).

    Paired (the default): over the runs measured in both cells, ``shift`` is the mean of the
    per-run differences and ``ratio`` the geometric mean of the per-run ratios, each with its
    paired t interval, so conditions shared inside a run cancel. With ``paired=False`` (cells
    from separate campaigns, whose run numbers share nothing) every run of each cell is used
    and the intervals are Welch's. One row per level: ``q``, ``shift``, ``lo``, ``hi``,
    ``ratio``, ``ratio_lo``, ``ratio_hi``, ``n_runs`` (paired: runs in both; unpaired: the
    smaller cell's) and ``reason`` (why a level is NaN).
    """
    qs = np.atleast_1d(np.asarray(qs, dtype=float))
    if paired:
        common = np.intersect1d(cell.runs, baseline.runs)
        a, b = cell.subset(common), baseline.subset(common)
    else:
        a, b = cell, baseline
    n_runs = min(a.n_runs, b.n_runs)
    qa = a.run_quantiles(qs) if a.n_runs else np.empty((0, qs.size))
    qb = b.run_quantiles(qs) if b.n_runs else np.empty((0, qs.size))
    nan = float("nan")
    rows = []
    for i, q in enumerate(qs):
        reason = short_runs_reason(a, float(q)) or short_runs_reason(b, float(q))
        row = {
            "q": float(q),
            "shift": nan,
            "lo": nan,
            "hi": nan,
            "ratio": nan,
            "ratio_lo": nan,
            "ratio_hi": nan,
            "n_runs": int(n_runs),
            "reason": reason,
        }
        if n_runs and reason is None:
            x, y = qa[:, i], qb[:, i]
            if paired:
                row["shift"] = float(np.mean(x - y))
                r = log_ratio_ci(x, y, confidence, pilot)
                row.update(ratio=r.ratio, ratio_lo=r.lo, ratio_hi=r.hi)
                if n_runs >= 2:
                    row["lo"], row["hi"] = _t_interval(x - y, confidence, pilot)
            else:
                row["shift"] = float(x.mean() - y.mean())
                row["ratio"] = float(np.exp(np.log(x).mean() - np.log(y).mean()))
                if n_runs >= 2:
                    row["lo"], row["hi"] = _welch_interval(x, y, confidence)
                    lo, hi = _welch_interval(np.log(x), np.log(y), confidence)
                    row["ratio_lo"], row["ratio_hi"] = float(np.exp(lo)), float(np.exp(hi))
        rows.append(row)
    return pd.DataFrame(rows)


# --- variance decomposition: mode (fixed) beside run (random) and residual ------------------


@dataclass(frozen=True)
class VarianceComponents:
    """Per-run summaries decomposed as ``value = mode effect + run effect + residual``.

    Fitted by REML with statsmodels' ``MixedLM`` (mode fixed, run a random intercept). SDs are in
    the unit of the data:

    - ``sd_run``: SD of the run (block) effect shared by every mode measured in that run;
    - ``sd_resid``: residual SD (run x mode interaction and measurement noise together);
    - ``sd_within``: ``sqrt(sd_run**2 + sd_resid**2)``, how much one mode's per-run value moves
      from run to run: the "variance between tests of the same configuration";
    - ``mode_range``: largest difference between two modes' effects (native included, at 0);
      ``max_effect`` / ``max_effect_mode``: the largest effect relative to the baseline, signed.

    Intervals of the SDs, the range and the largest effect are parametric-bootstrap percentile
    intervals (``n_sim`` data sets simulated from the fit and refitted); each mode's effect in
    ``effects`` also has the model's Wald interval. The range and the largest effect are
    biased away from 0 when the true effects are tiny (the largest of noisy estimates); the
    bootstrap interval shows it. ``status`` is ``"not fitted"`` with a ``reason`` when the
    data cannot identify the model (too few runs or modes, or the fit failed).
    """

    status: str
    reason: str | None
    baseline: str
    n_obs: int
    n_runs: int
    n_modes: int
    sd_run: float
    sd_run_lo: float
    sd_run_hi: float
    sd_resid: float
    sd_resid_lo: float
    sd_resid_hi: float
    sd_within: float
    sd_within_lo: float
    sd_within_hi: float
    mode_range: float
    mode_range_lo: float
    mode_range_hi: float
    max_effect: float
    max_effect_lo: float
    max_effect_hi: float
    max_effect_mode: str | None
    confidence: float
    n_sim: int
    n_sim_ok: int
    seed: int | None
    converged: bool
    effects: pd.DataFrame

    def as_dict(self) -> dict:
        """Every scalar field (the per-mode ``effects`` frame is left out)."""
        return {k: v for k, v in asdict(self).items() if k != "effects"}


_EFFECT_COLUMNS = ["mode", "effect", "lo", "hi", "boot_lo", "boot_hi"]


@functools.cache
def _mixed_lm() -> type:
    """The mixed model class (imported on first use: statsmodels takes a second to import)."""
    from pipeline.analysis.mixed import MixedLM

    return MixedLM


def _fit_mixed(y: np.ndarray, x: np.ndarray, groups: np.ndarray):
    """REML fit, warnings silenced (boundary fits are expected when the run SD is ~0)."""
    import warnings

    model = _mixed_lm()  # imported outside: statsmodels sets its own warning filters on import
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            res = model(y, x, groups=groups).fit(reml=True)
        except (np.linalg.LinAlgError, ValueError):
            return None
    if not np.all(np.isfinite(res.fe_params)) or not np.isfinite(res.scale):
        return None
    return res


def _spread(beta: np.ndarray) -> tuple[float, float, int]:
    """(range of the mode effects with the baseline at 0, largest |effect|, its index)."""
    effects = np.r_[0.0, beta[1:]]
    k = int(np.argmax(np.abs(effects[1:]))) + 1 if effects.size > 1 else 0
    return float(effects.max() - effects.min()), float(effects[k]), k


def variance_components(
    per_run: pd.DataFrame,
    baseline: str = "native",
    confidence: float = 0.95,
    n_sim: int = 200,
    seed: int | None = 0,
) -> VarianceComponents:
    """Decompose per-run values (columns ``run``, ``mode``, ``value``) for one path and metric.

    Needs one value per (run, mode), the baseline among the modes, at least 3 runs, 2 modes and
    2 runs holding more than one mode; otherwise the result says why it was not fitted. The data
    are centred and scaled before fitting (Internet RTTs in microseconds are ~4e4 with SDs of
    ~1e3, which the optimiser handles badly) and the results scaled back.
    """
    nan = float("nan")
    data = per_run[["run", "mode", "value"]].dropna()
    if data.duplicated(["run", "mode"]).any():
        raise ValueError("variance_components needs one value per (run, mode)")
    modes = [baseline] + sorted(m for m in data["mode"].unique() if m != baseline)
    per_run_modes = data.groupby("run")["mode"].nunique()
    n_obs, n_runs, n_modes = len(data), int(per_run_modes.size), int(data["mode"].nunique())

    def not_fitted(reason: str) -> VarianceComponents:
        blank = dict.fromkeys(
            [
                f"{name}{suffix}"
                for name in ("sd_run", "sd_resid", "sd_within", "mode_range", "max_effect")
                for suffix in ("", "_lo", "_hi")
            ],
            nan,
        )
        return VarianceComponents(
            status="not fitted",
            reason=reason,
            baseline=baseline,
            n_obs=n_obs,
            n_runs=n_runs,
            n_modes=n_modes,
            max_effect_mode=None,
            confidence=confidence,
            n_sim=n_sim,
            n_sim_ok=0,
            seed=seed,
            converged=False,
            effects=pd.DataFrame(columns=_EFFECT_COLUMNS),
            **blank,
        )

    if baseline not in set(data["mode"]):
        return not_fitted(f"no {baseline} baseline measured")
    if n_modes < 2:
        return not_fitted("only one mode measured: no mode effect to compare")
    if n_runs < 3:
        return not_fitted(f"{n_runs} run(s): at least 3 are needed to estimate a run-to-run SD")
    if int((per_run_modes >= 2).sum()) < 2:
        return not_fitted("fewer than 2 runs measured more than one mode")

    center = float(data.loc[data["mode"] == baseline, "value"].mean())
    scale = float(data["value"].std(ddof=1)) or 1.0
    y = (data["value"].to_numpy(dtype=float) - center) / scale
    mode_index = data["mode"].map({m: i for i, m in enumerate(modes)}).to_numpy()
    x = np.zeros((n_obs, n_modes))
    x[:, 0] = 1.0
    x[np.arange(n_obs)[mode_index > 0], mode_index[mode_index > 0]] = 1.0
    run_codes, groups = np.unique(data["run"].to_numpy(), return_inverse=True)
    fit = _fit_mixed(y, x, groups)
    if fit is None:
        return not_fitted("the mixed model could not be fitted (singular design or no optimum)")

    beta = np.asarray(fit.fe_params, dtype=float)
    var_run = max(float(np.asarray(fit.cov_re).ravel()[0]), 0.0)
    var_res = float(fit.scale)
    rng_, max_eff, k = _spread(beta)
    z = _st.norm.ppf(0.5 + confidence / 2)
    bse = np.asarray(fit.bse_fe, dtype=float)

    # Parametric bootstrap: simulate from the fitted model, refit, keep what each refit says.
    rng = np.random.default_rng(seed)
    sims = []
    mean = x @ beta
    for _ in range(n_sim):
        ys = (
            mean
            + rng.normal(0.0, np.sqrt(var_run), run_codes.size)[groups]
            + rng.normal(0.0, np.sqrt(var_res), n_obs)
        )
        refit = _fit_mixed(ys, x, groups)
        if refit is None:
            continue
        b = np.asarray(refit.fe_params, dtype=float)
        vr = max(float(np.asarray(refit.cov_re).ravel()[0]), 0.0)
        ve = float(refit.scale)
        r_, _, _ = _spread(b)
        sims.append([np.sqrt(vr), np.sqrt(ve), np.sqrt(vr + ve), r_, b[k], *b[1:]])
    sims = np.asarray(sims).reshape(-1, 5 + n_modes - 1)
    if sims.shape[0] >= 2:
        lo, hi = _percentile_interval(sims, confidence)
    else:
        lo = hi = np.full(sims.shape[1], nan)

    effects = pd.DataFrame(
        {
            "mode": modes,
            "effect": np.r_[0.0, beta[1:]] * scale,
            "lo": np.r_[0.0, beta[1:] - z * bse[1:]] * scale,
            "hi": np.r_[0.0, beta[1:] + z * bse[1:]] * scale,
            "boot_lo": np.r_[0.0, lo[5:]] * scale,
            "boot_hi": np.r_[0.0, hi[5:]] * scale,
        }
    )
    return VarianceComponents(
        status="ok",
        reason=None,
        baseline=baseline,
        n_obs=n_obs,
        n_runs=n_runs,
        n_modes=n_modes,
        sd_run=np.sqrt(var_run) * scale,
        sd_run_lo=lo[0] * scale,
        sd_run_hi=hi[0] * scale,
        sd_resid=np.sqrt(var_res) * scale,
        sd_resid_lo=lo[1] * scale,
        sd_resid_hi=hi[1] * scale,
        sd_within=np.sqrt(var_run + var_res) * scale,
        sd_within_lo=lo[2] * scale,
        sd_within_hi=hi[2] * scale,
        mode_range=rng_ * scale,
        mode_range_lo=lo[3] * scale,
        mode_range_hi=hi[3] * scale,
        max_effect=max_eff * scale,
        max_effect_lo=lo[4] * scale,
        max_effect_hi=hi[4] * scale,
        max_effect_mode=modes[k],
        confidence=confidence,
        n_sim=n_sim,
        n_sim_ok=int(sims.shape[0]),
        seed=seed,
        converged=bool(fit.converged),
        effects=effects,
    )


def variance_components_each(
    parts: list[pd.DataFrame],
    baseline: str = "native",
    confidence: float = 0.95,
    n_sim: int = 200,
    seed: int | None = 0,
) -> list[VarianceComponents]:
    """``variance_components`` of each part, in order, the parts shared out over the CPUs this
    process may use. Each result depends only on its part and the seed, so they are the ones a
    loop gives, bit for bit; the bootstrap's refits are most of an analysis' time."""
    import multiprocessing
    import os
    import sys
    from concurrent.futures import ProcessPoolExecutor

    args = [(part, baseline, confidence, n_sim, seed) for part in parts]
    if not sys.platform.startswith("linux"):  # fork is Linux's safe default only
        return [variance_components(*a) for a in args]
    workers = min(len(parts), len(os.sched_getaffinity(0)))
    if workers < 2:
        return [variance_components(*a) for a in args]
    # fork: the workers start at once with statsmodels already imported (a Jupyter kernel's
    # own imports, such as __main__, cannot be re-imported by a spawned process)
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        return list(pool.map(_variance_components_star, args))


def _variance_components_star(args: tuple) -> VarianceComponents:
    return variance_components(*args)


# --- equivalence: a verdict for every comparison with native --------------------------------
#
# "No overhead" is a claim of its own: an interval that merely contains 1 says the runs could
# not tell the modes apart, not that they are alike. The claim is only made when the data put
# the ratio inside a margin (e.g. +-5% for network, +-2% for CPU and disk) that params.yaml
# fixed before any data was collected; the analysis never chooses it.

VERDICTS = ("overhead", "faster", "equivalent", "inconclusive")
TOST_MIN_RUNS = 3


def equivalence_level(confidence: float) -> float:
    """Level of the interval that decides equivalence, for tests at ``alpha = 1 - confidence``.

    Two one-sided tests at ``alpha`` each (TOST) reject "the difference is at least the margin"
    exactly when the ``1 - 2 alpha`` interval lies inside the margin: 0.95 -> 0.90.
    """
    if not 0.5 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0.5, 1), got {confidence}")
    return round(2.0 * confidence - 1.0, 12)


def difference(lo: float, hi: float, higher_is_better: bool = True) -> str | None:
    """``"overhead"`` or ``"faster"`` when the interval ``(lo, hi)`` of a ratio to native lies
    strictly on one side of 1, else None (also when an end is NaN).

    For throughput (``higher_is_better``) a ratio below 1 is an overhead; for latency, where
    lower is better, a ratio above 1 is.
    """
    if np.isnan(lo) or np.isnan(hi):
        return None
    worse, better = ("overhead", "faster") if higher_is_better else ("faster", "overhead")
    if hi < 1.0:
        return worse
    if lo > 1.0:
        return better
    return None


def verdict(
    ratio: float,
    lo: float,
    hi: float,
    lo_eq: float,
    hi_eq: float,
    margin: float,
    higher_is_better: bool = True,
    tost_p: float | None = None,
    alpha: float = 0.05,
    diff_p: float | None = None,
) -> str | None:
    """The verdict of one comparison with native: one of ``VERDICTS``, or None without a ratio.

    ``ratio`` is the mode's ratio to native, ``(lo, hi)`` its ``1 - alpha`` interval (95%) and
    ``(lo_eq, hi_eq)`` its ``1 - 2 alpha`` interval (90%, see ``equivalence_level``), both t
    intervals of the same per-run log ratios (``tost_log_ratio``). The rule, applied in this
    order:

    1. **equivalent** when ``1 - margin < lo_eq`` and ``hi_eq < 1 + margin``: the 90% interval
       lies strictly inside the margin, i.e. both one-sided tests at ``alpha`` reject a
       difference as large as the margin. The caller passes the TOST's p-value
       (``tost_log_ratio``), which must then agree (``tost_p < alpha``; with t intervals it
       does by construction); NaN (the TOST was not run: fewer than 3 paired runs) never
       agrees. ``tost_p=None`` applies the interval rule alone.
    2. **overhead** when the 95% interval lies strictly on the worse side of 1 (below 1 when
       ``higher_is_better``, as for throughput; above 1 for latency); **faster** when strictly
       on the better side. The caller passes ``diff_p``, the two-sided paired t test of "no
       difference" on the per-run log ratios (``TostResult.diff_p``), which must agree
       (``diff_p < alpha``); NaN (fewer than 3 paired runs) never agrees. ``diff_p=None``
       applies the interval rule alone.
    3. **inconclusive** otherwise, and whenever an interval is missing (fewer than 2 runs).

    Equivalence is decided first, so a difference that is real (the 95% interval excludes 1)
    but smaller than the margin is "equivalent": by the margin fixed beforehand it does not
    matter. ``difference`` on the 95% interval still tells it apart, and the tables show it as
    "equivalent (small overhead)" or "equivalent (slightly faster)". "overhead" says nothing
    about size: the ratio and its interval do.
    """
    if not 0.0 < margin < 1.0:
        raise ValueError(f"margin must be in (0, 1), got {margin}")
    if ratio is None or np.isnan(ratio):
        return None
    tost_agrees = tost_p is None or bool(tost_p < alpha)  # NaN < alpha is False
    inside = bool(1.0 - margin < lo_eq and hi_eq < 1.0 + margin)  # False when NaN
    if inside and tost_agrees:
        return "equivalent"
    if diff_p is not None and not bool(diff_p < alpha):  # NaN < alpha is False
        return "inconclusive"
    return difference(lo, hi, higher_is_better) or "inconclusive"


def difference_verdict(
    values, baseline_values, higher_is_better: bool = True, alpha: float = 0.05
) -> str:
    """The verdict of a comparison for which no equivalence margin was fixed beforehand (cold
    start, a balancer against a direct connection, an engine's memory against another's): step
    2 of ``verdict`` alone, so never "equivalent". ``values`` and ``baseline_values`` are the
    per-run values paired by position; the two-sided paired t test on their log ratios
    (``tost_log_ratio``'s ``diff_p``) decides, and its sign says which side; with fewer than
    ``TOST_MIN_RUNS`` pairs it cannot, and the verdict is "inconclusive"."""
    t = tost_log_ratio(values, baseline_values, 0.5, alpha)
    if not bool(t.diff_p < alpha):  # NaN < alpha is False
        return "inconclusive"
    return difference(t.ci_lo, t.ci_hi, higher_is_better) or "inconclusive"


@dataclass(frozen=True)
class TostResult:
    """Paired t analysis of per-run log ratios ``d = log(mode) - log(baseline)``.

    ``ratio`` is the geometric mean of the per-run ratios, ``(lo, hi)`` its ``1 - 2 alpha`` t
    interval (the equivalence interval) and ``(ci_lo, ci_hi)`` its ``1 - alpha`` one.
    ``p_value`` is the TOST's p-value of non-equivalence for the margin ``(1 - margin,
    1 + margin)``; ``equivalent`` is ``p_value < alpha``, or None with a ``reason`` when the
    tests were not run (fewer than ``TOST_MIN_RUNS`` pairs; the intervals need 2). ``diff_p``
    is the two-sided t test of "no difference" (ratio 1) on the same ``d``, which
    ``stats.verdict`` needs before it says "overhead" or "faster". ``sd_log`` is the SD of
    ``d``, ``df`` the tests' degrees of freedom, ``resolvable_log`` the smallest shift of
    ``mean d`` one unadjusted test finds with power ``POWER`` (``stats.resolvable``) and
    ``resolvable`` the same as a rise of the ratio, ``exp(x) - 1``; ``log_ratio_equivalence``
    states it in the metric's worse direction (``reader_fraction``), and a table under its
    adjustment (``adjust_verdicts``'s ``mde``).
    """

    p_value: float
    ratio: float
    lo: float
    hi: float
    margin: float
    alpha: float
    n_runs: int
    equivalent: bool | None
    reason: str | None
    diff_p: float = float("nan")
    ci_lo: float = float("nan")
    ci_hi: float = float("nan")
    sd_log: float = float("nan")
    resolvable: float = float("nan")
    df: float = float("nan")
    resolvable_log: float = float("nan")

    def as_dict(self) -> dict:
        return asdict(self)


def _paired_tests(
    d: np.ndarray, low: float, high: float, alpha: float, pilot: int | None = None
) -> tuple[float, float]:
    """``(p of the TOST for low < mean(d) < high, p of the two-sided test mean(d) = 0)`` from
    one-sample t statistics on ``d`` (n >= 2); with a Stein ``pilot`` (``log_ratio_ci``) the
    statistics use the pilot's SD and ``pilot - 1`` df. Zero spread: the limits of the tests
    (p 0 or 1)."""
    n, mean = d.size, d.mean()
    if np.ptp(d) < 1e-12:  # equal values up to rounding (log(4) - log(2) != log(2) exactly)
        inside = bool(low < mean < high)
        return (0.0 if inside else 1.0), (1.0 if abs(mean) < 1e-12 else 0.0)
    sd, df = (d[:pilot].std(ddof=1), pilot - 1) if _stein(pilot, n) else (d.std(ddof=1), n - 1)
    se = sd / np.sqrt(n)
    if se < 1e-300:  # a pilot of equal values: the limits, as for zero spread
        inside = bool(low < mean < high)
        return (0.0 if inside else 1.0), (1.0 if abs(mean) < 1e-12 else 0.0)
    t_low, t_high = (mean - low) / se, (mean - high) / se
    p_tost = max(_st.t.sf(t_low, df), _st.t.cdf(t_high, df))
    p_diff = 2.0 * _st.t.sf(abs(mean) / se, df)
    return float(p_tost), float(p_diff)


def tost_log_ratio(
    values, baseline_values, margin: float, alpha: float = 0.05, pilot: int | None = None
) -> TostResult:
    """Paired t analysis of ``values / baseline_values`` (paired by position: one pair per run)
    against ``margin``; see ``TostResult``. ``pilot``: a Stein-planned comparison's pilot pairs
    (``log_ratio_ci``): intervals and tests on the pilot's SD with ``pilot - 1`` df.

    Assumes positive values, runs independent of each other and per-run log ratios roughly
    normal. The tests need ``TOST_MIN_RUNS`` pairs: with 2 the t distribution has one degree
    of freedom and the verdict would rest on a single difference. Pairs with a NaN are dropped.
    """
    x = np.asarray(values, dtype=float)
    y = np.asarray(baseline_values, dtype=float)
    if x.shape != y.shape:
        raise ValueError("values and baseline_values must be paired (same length)")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = int(x.size)
    nan = float("nan")
    if (x <= 0).any() or (y <= 0).any():
        return TostResult(nan, nan, nan, nan, margin, alpha, n, None,
                          "values not all positive: no log ratio")  # fmt: skip
    ci = log_ratio_ci(x, y, round(1.0 - alpha, 12), pilot)
    eq = log_ratio_ci(x, y, round(1.0 - 2.0 * alpha, 12), pilot)
    common = dict(
        ratio=ci.ratio,
        lo=eq.lo,
        hi=eq.hi,
        margin=margin,
        alpha=alpha,
        n_runs=n,
        ci_lo=ci.lo,
        ci_hi=ci.hi,
        sd_log=ci.sd_log,
        resolvable=ci.resolvable,
        df=float((pilot if _stein(pilot, n) else n) - 1) if n >= 2 else nan,
        resolvable_log=float(np.log1p(ci.resolvable)),
    )
    if n < TOST_MIN_RUNS:
        why = f"{n} paired run(s): the TOST needs at least {TOST_MIN_RUNS}"
        return TostResult(p_value=nan, equivalent=None, reason=why, **common)
    d = np.log(x) - np.log(y)
    p, diff_p = _paired_tests(d, np.log1p(-margin), np.log1p(margin), alpha, pilot)
    return TostResult(p_value=p, equivalent=bool(p < alpha), reason=None, diff_p=diff_p,
                      **common)  # fmt: skip


def _welch_tests(a: np.ndarray, b: np.ndarray, low: float, high: float) -> tuple[float, float]:
    """``_paired_tests`` for ``mean(a) - mean(b)`` of two independent samples: Welch's t
    statistics with the Welch-Satterthwaite degrees of freedom. Zero spread: the limits."""
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se, diff = np.sqrt(va + vb), a.mean() - b.mean()
    if se < 1e-12:
        return (0.0 if low < diff < high else 1.0), (1.0 if abs(diff) < 1e-12 else 0.0)
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    p_tost = max(_st.t.sf((diff - low) / se, df), _st.t.cdf((diff - high) / se, df))
    return float(p_tost), float(2.0 * _st.t.sf(abs(diff) / se, df))


def welch_tost(values, baseline_values, margin: float, alpha: float = 0.05) -> TostResult:
    """``tost_log_ratio`` for two independent samples of per-run log values (two campaigns,
    whose run numbers share nothing): ``ratio`` is ``exp(mean(values) - mean(baseline_values))``,
    the intervals and both tests are Welch's (``_welch_interval``) on the log scale. ``n_runs``
    is the smaller sample; the tests need ``TOST_MIN_RUNS`` in each, the intervals 2.
    ``sd_log`` is the standard error of the difference times ``sqrt(n_runs)``, ``df`` the
    Welch-Satterthwaite degrees of freedom and ``resolvable`` the smallest relative difference
    one Welch t test at ``alpha`` finds with power ``POWER`` (``stats.resolvable`` at that
    ``df``). NaN values are dropped."""
    a = np.asarray(values, dtype=float)
    b = np.asarray(baseline_values, dtype=float)
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    n, nan = int(min(a.size, b.size)), float("nan")
    if n == 0:
        return TostResult(nan, nan, nan, nan, margin, alpha, 0, None, "no runs to compare")
    point = float(np.exp(a.mean() - b.mean()))
    lo = hi = ci_lo = ci_hi = sd = mde = df = nan
    if n >= 2:
        lo, hi = np.exp(_welch_interval(a, b, round(1.0 - 2.0 * alpha, 12)))
        ci_lo, ci_hi = np.exp(_welch_interval(a, b, round(1.0 - alpha, 12)))
        va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
        se = float(np.sqrt(va + vb))
        df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1)) if se else np.inf
        sd = se * np.sqrt(n)
        mde = resolvable(sd, n, alpha, df=df) if se else 0.0
    common = dict(ratio=point, lo=float(lo), hi=float(hi), margin=margin, alpha=alpha,
                  n_runs=n, ci_lo=float(ci_lo), ci_hi=float(ci_hi), sd_log=sd,
                  resolvable=float(np.expm1(mde)), df=float(df),
                  resolvable_log=float(mde))  # fmt: skip
    if n < TOST_MIN_RUNS:
        why = f"{n} run(s) in the smaller sample: the TOST needs at least {TOST_MIN_RUNS}"
        return TostResult(p_value=nan, equivalent=None, reason=why, **common)
    p, diff_p = _welch_tests(a, b, np.log1p(-margin), np.log1p(margin))
    return TostResult(p_value=p, equivalent=bool(p < alpha), reason=None, diff_p=diff_p,
                      **common)  # fmt: skip


@dataclass(frozen=True)
class Equivalence:
    """One comparison with native: the geometric mean of per-run ratios, its 95% (``lo``/``hi``)
    and 90% (``lo_eq``/``hi_eq``) t intervals, the tests (``tost``) and the verdict."""

    ratio: float
    lo: float
    hi: float
    lo_eq: float
    hi_eq: float
    confidence: float
    equivalence_confidence: float
    margin: float
    n_runs: int
    tost: TostResult
    verdict: str | None

    def as_dict(self) -> dict:
        """Flat: the TOST's fields prefixed with ``tost_``."""
        out = {k: v for k, v in asdict(self).items() if k != "tost"}
        return out | {f"tost_{k}": v for k, v in self.tost.as_dict().items()}


def log_ratio_equivalence(
    values, baseline_values, margin: float = 0.05, confidence: float = 0.95,
    higher_is_better: bool = True, pilot: int | None = None,
) -> Equivalence:  # fmt: skip
    """``tost_log_ratio`` of paired per-run values and the verdict (``stats.verdict``);
    ``pilot`` as for ``log_ratio_ci``."""
    return _equivalence(tost_log_ratio, values, baseline_values, margin, confidence,
                        higher_is_better, pilot=pilot)  # fmt: skip


def _equivalence(test, values, baseline_values, margin, confidence, higher_is_better, **kw):
    """``test`` (a TOST of the values against the baseline's) and its verdict."""
    alpha = round(1.0 - confidence, 12)
    t = test(values, baseline_values, margin, alpha, **kw)
    t = replace(t, resolvable=reader_fraction(t.resolvable_log, higher_is_better))
    said = verdict(t.ratio, t.ci_lo, t.ci_hi, t.lo, t.hi, margin, higher_is_better, t.p_value,
                   alpha, t.diff_p)  # fmt: skip
    return Equivalence(t.ratio, t.ci_lo, t.ci_hi, t.lo, t.hi, confidence,
                       equivalence_level(confidence), margin, t.n_runs, t, said)  # fmt: skip


def welch_equivalence(
    values, baseline_values, margin: float = 0.05, confidence: float = 0.95,
    higher_is_better: bool = True,
) -> Equivalence:  # fmt: skip
    """``welch_tost`` of two independent samples of per-run log values and the verdict
    (``stats.verdict``): ``log_ratio_equivalence`` for values from two separate campaigns."""
    return _equivalence(welch_tost, values, baseline_values, margin, confidence,
                        higher_is_better)  # fmt: skip


def ratio_equivalence(
    per_run: pd.DataFrame,
    mode: str,
    baseline: str = "native",
    margin: float = 0.05,
    confidence: float = 0.95,
    higher_is_better: bool = True,
    pilot: int | None = None,
) -> Equivalence:
    """``log_ratio_equivalence`` over the runs where both modes were measured (``per_run`` as
    for ``ratio_ci``; pairs in run order). With fewer than 3 paired runs there are no tests and
    so no verdict but "inconclusive"; with fewer than 2 no interval; with none the verdict is
    None. ``pilot``: the pilot's pairs of a Stein-planned comparison (``log_ratio_ci``; the
    campaign's ``planning`` record, ``pilot_pairs``)."""
    pairs = _paired(per_run, mode, baseline)
    return log_ratio_equivalence(pairs[:, 0], pairs[:, 1], margin, confidence, higher_is_better,
                                 pilot)  # fmt: skip


# --- many verdicts in one table ------------------------------------------------------------
#
# A table holds tens of comparisons; at 5% each, some would be called different by chance.
# Each table's p-values (the TOSTs' and the difference tests', each family on its own) are
# adjusted together with the method params.yaml names (``analysis.multiplicity``), and the
# verdicts follow the adjusted values. Intervals stay per comparison.

MULTIPLICITY = {"holm": "holm", "bh": "fdr_bh", "none": None}


def adjust_p(p, method: str) -> np.ndarray:
    """``p`` adjusted across its finite entries by ``method`` (a key of ``MULTIPLICITY``);
    NaN stays NaN."""
    if method not in MULTIPLICITY:
        raise ValueError(f"multiplicity must be one of {sorted(MULTIPLICITY)}, got {method!r}")
    p = np.asarray(p, dtype=float)
    out = p.copy()
    ok = np.isfinite(p)
    if MULTIPLICITY[method] is None or ok.sum() < 2:
        return out
    from statsmodels.stats.multitest import multipletests

    out[ok] = multipletests(p[ok], method=MULTIPLICITY[method])[1]
    return out


# verdict, TOST p, difference p, effect (a ratio); for a shift also its centre (0.0) and its own
# direction (higher is better), which then overrides the table's
VerdictColumns = tuple
ONE_VERDICT: tuple[VerdictColumns, ...] = (("verdict", "tost_p", "diff_p", "ratio"),)


class MdeColumns(NamedTuple):
    """Where a table keeps one verdict's minimum detectable effect and what it is made from:
    ``resolvable`` (rewritten under the table's rule), ``sd`` (SD of the per-run log ratios, or
    of the per-run differences for an absolute comparison), ``n`` (paired runs), ``absolute``
    (True: the comparison is on a unit, not a ratio; a column name: absolute on the rows where
    that column is not missing) and ``df`` (a column of the test's degrees of freedom, e.g.
    Welch's; None: ``n - 1``)."""

    resolvable: str
    sd: str
    n: str
    absolute: bool | str = False
    df: str | None = None


ONE_MDE: tuple[MdeColumns, ...] = (MdeColumns("resolvable", "sd_log", "ratio_n_runs"),)


def adjust_verdicts(
    frame: pd.DataFrame,
    method: str,
    alpha: float = 0.05,
    higher_is_better: bool | str = True,
    columns: tuple[VerdictColumns, ...] | list[VerdictColumns] = ONE_VERDICT,
    mde: Sequence[MdeColumns | None] | None = None,
) -> pd.DataFrame:
    """One table's verdicts adjusted together for multiplicity.

    ``columns`` names, per verdict a row carries (one, or one per percentile level), its
    verdict, TOST p, difference p and ratio columns; a verdict on a shift (a difference, not a
    ratio) adds a fifth element, ``0.0``, the shift's value at "no difference", and a sixth,
    its direction (``higher_is_better`` for that verdict alone). Every verdict
    of the table that was drawn (not None) enters the adjustment; each p column gets an
    ``_adj`` twin and each verdict is re-derived from the adjusted values (``verdict_from_p``).
    ``higher_is_better`` is a bool or the name of a boolean column. ``multiplicity`` says the
    method and how many comparisons.

    ``mde``, one ``MdeColumns`` (or None) per entry of ``columns``: each verdict's minimum
    detectable effect is restated under the rule the table applies (``minimum_detectable``
    with ``m`` the number of difference tests adjusted together, at the level ``method``
    guarantees each of them, ``comparison_alpha``): ``resolvable`` becomes the reader's
    fraction in the verdict's worse direction, ``<resolvable>_log`` the log-scale (or
    absolute) shift and ``<resolvable>_direction`` "drop" or "rise".
    """
    out = frame.copy()
    blocks, n_total = [], 0
    for verdict_col, tost_col, diff_col, ratio_col, *shift in columns:
        has = out[verdict_col].notna() & out[ratio_col].notna()
        blocks.append((verdict_col, tost_col, diff_col, ratio_col, has.to_numpy(), shift))
        n_total += int(has.sum())
    tost = np.concatenate([out[b[1]].to_numpy(float)[b[4]] for b in blocks])
    diff = np.concatenate([out[b[2]].to_numpy(float)[b[4]] for b in blocks])
    tost_adj, diff_adj = adjust_p(tost, method), adjust_p(diff, method)
    hib = (
        out[higher_is_better].to_numpy(bool)
        if isinstance(higher_is_better, str)
        else np.full(len(out), bool(higher_is_better))
    )
    m = max(int(np.isfinite(diff).sum()), 1)
    mde = list(mde) if mde is not None else [None] * len(blocks)
    if len(mde) != len(blocks):
        raise ValueError(f"mde names {len(mde)} verdicts, columns {len(blocks)}")
    start = 0
    for (verdict_col, tost_col, diff_col, ratio_col, has, shift), spec in zip(blocks, mde,
                                                                             strict=True):
        k = int(has.sum())
        t_adj = np.full(len(out), np.nan)
        d_adj = np.full(len(out), np.nan)
        t_adj[has], d_adj[has] = tost_adj[start : start + k], diff_adj[start : start + k]
        start += k
        out[f"{tost_col}_adj"], out[f"{diff_col}_adj"] = t_adj, d_adj
        # a shift is read as a ratio to its centre: the side of "no difference" is what counts
        ratios = out[ratio_col].to_numpy(float) + (1.0 - shift[0] if shift else 0.0)
        better = np.full(len(out), bool(shift[1])) if len(shift) > 1 else hib
        old = out[verdict_col].tolist()
        out[verdict_col] = [
            verdict_from_p(ratios[i], t_adj[i], d_adj[i], better[i], alpha) if has[i] else old[i]
            for i in range(len(out))
        ]
        if spec is not None:
            _restate_mde(out, spec, has, better, bool(shift), m, method, alpha)
    out["multiplicity"] = f"{method} across {n_total} comparisons"
    return out


def _restate_mde(out: pd.DataFrame, spec: MdeColumns, has: np.ndarray, better: np.ndarray,
                 shift: bool, m: int, method: str, alpha: float) -> None:  # fmt: skip
    """``spec``'s columns of ``out`` rewritten under the table's rule (``adjust_verdicts``)."""
    if isinstance(spec.absolute, str):
        absolute = out[spec.absolute].notna().to_numpy()
    else:
        absolute = np.full(len(out), bool(spec.absolute) or shift)
    sd = out[spec.sd].to_numpy(float)
    n = out[spec.n].to_numpy(float)
    df = out[spec.df].to_numpy(float) if spec.df else np.full(len(out), np.nan)
    frac = out[spec.resolvable].to_numpy(float).copy()
    log = np.full(len(out), np.nan)
    side: list[str | None] = [None] * len(out)
    for i in np.flatnonzero(has):
        if not (np.isfinite(sd[i]) and np.isfinite(n[i])):
            frac[i] = np.nan
            continue
        e = minimum_detectable(sd[i], int(n[i]), m, method, alpha, bool(better[i]),
                               bool(absolute[i]), df[i] if np.isfinite(df[i]) else None)
        frac[i], log[i], side[i] = e.fraction, e.log, e.direction
    out[spec.resolvable] = frac
    out[f"{spec.resolvable}_log"] = log
    out[f"{spec.resolvable}_direction"] = side


def verdict_from_p(
    ratio: float, tost_p: float, diff_p: float, higher_is_better: bool = True,
    alpha: float = 0.05,
) -> str:  # fmt: skip
    """The verdict rule on the tests alone (the t intervals agree with them by construction):
    equivalent when ``tost_p < alpha``, else overhead or faster (by the side of 1 the ratio
    is on) when ``diff_p < alpha``, else inconclusive. NaN p-values never reject."""
    if bool(tost_p < alpha):
        return "equivalent"
    if bool(diff_p < alpha):
        worse = ratio < 1.0 if higher_is_better else ratio > 1.0
        return "overhead" if worse else "faster"
    return "inconclusive"


@dataclass(frozen=True)
class ShiftEquivalence:
    """A comparison on an absolute scale (loss in percentage points, added latency in
    microseconds): the mean per-run difference ``values - baseline`` over paired runs, its
    ``1 - alpha`` (``lo``/``hi``) and ``1 - 2 alpha`` (``lo_eq``/``hi_eq``) t intervals, the TOST
    against ``(-margin, margin)`` in the same unit, the difference test, the smallest shift one
    unadjusted test resolves with power ``POWER`` (``resolvable``), the verdict, and ``sd``, the
    SD of the per-run differences (a table restates the smallest shift under its own
    adjustment from it: ``adjust_verdicts``'s ``mde``)."""

    shift: float
    lo: float
    hi: float
    lo_eq: float
    hi_eq: float
    margin: float
    n_runs: int
    tost_p: float
    diff_p: float
    resolvable: float
    reason: str | None
    verdict: str | None
    sd: float = float("nan")

    def as_dict(self) -> dict:
        return asdict(self)


def shift_equivalence(
    values, baseline_values, margin: float, confidence: float = 0.95,
    higher_is_better: bool = False, pilot: int | None = None,
) -> ShiftEquivalence:  # fmt: skip
    """``ShiftEquivalence`` of ``values - baseline_values`` paired by position (NaN pairs
    dropped); the verdict rule of ``verdict_from_p`` with the shift's side of 0. ``pilot``: a
    Stein-planned comparison's pilot pairs: intervals, tests and ``sd`` on the pilot's SD with
    ``pilot - 1`` df (``log_ratio_ci``)."""
    x = np.asarray(values, dtype=float)
    y = np.asarray(baseline_values, dtype=float)
    if x.shape != y.shape:
        raise ValueError("values and baseline_values must be paired (same length)")
    d = (x - y)[~(np.isnan(x) | np.isnan(y))]
    n, nan = int(d.size), float("nan")
    alpha = round(1.0 - confidence, 12)
    if n == 0:
        return ShiftEquivalence(nan, nan, nan, nan, nan, margin, 0, nan, nan, nan,
                                "no paired runs", None)  # fmt: skip
    shift = float(d.mean())
    lo = hi = lo_eq = hi_eq = mde = sd = nan
    if n >= 2:
        lo, hi = _t_interval(d, confidence, pilot)
        lo_eq, hi_eq = _t_interval(d, equivalence_level(confidence), pilot)
        stein = _stein(pilot, n)
        sd = float(d[:pilot].std(ddof=1) if stein else d.std(ddof=1))
        mde = resolvable(sd, n, alpha, df=float(pilot - 1) if stein else None)
    if n < TOST_MIN_RUNS:
        why = f"{n} paired run(s): the TOST needs at least {TOST_MIN_RUNS}"
        return ShiftEquivalence(shift, lo, hi, lo_eq, hi_eq, margin, n, nan, nan, mde, why,
                                "inconclusive", sd)  # fmt: skip
    tost_p, diff_p = _paired_tests(d, -margin, margin, alpha, pilot)
    said = verdict_from_p(1.0 + shift, tost_p, diff_p, higher_is_better, alpha)
    return ShiftEquivalence(shift, lo, hi, lo_eq, hi_eq, margin, n, tost_p, diff_p, mde, None,
                            said, sd)  # fmt: skip
