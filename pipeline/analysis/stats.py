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


# --- pooled percentiles with a cluster bootstrap over runs ---------------------------------
#
# Latency percentiles are taken from the pooled samples of all runs (never by averaging per-run
# percentiles), but their uncertainty comes from the runs: the bootstrap resamples whole runs,
# pools their samples and takes the percentile again. A replicate is a vector of multiplicities
# (how often each run was drawn), and the weighted pooled percentile is found exactly by
# bisection over the pooled sorted values, counting with ``searchsorted`` in each run's sorted
# array: no histogram, so no binning error, and no copy of the resampled data.


@dataclass(frozen=True)
class RunSamples:
    """The samples of one cell (e.g. one mode on one path), grouped by run and sorted.

    ``runs`` are the run ids in ascending order, ``values[i]`` the sorted samples of
    ``runs[i]`` and ``pooled`` all samples sorted. Build it with ``RunSamples.from_arrays``.
    """

    runs: np.ndarray
    values: tuple[np.ndarray, ...]
    pooled: np.ndarray

    _RANK_BLOCK = 32  # pooled positions per block of the cached rank index (not a field)

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
            return self  # immutable: nothing to copy, and its rank index stays cached
        values = tuple(v for v, k in zip(self.values, want, strict=True) if k)
        # A stable sort merges the already sorted runs instead of sorting from scratch.
        pooled = np.sort(np.concatenate(values), kind="stable") if values else np.empty(0)
        return RunSamples(runs=self.runs[want], values=values, pooled=pooled)

    def rank_index(self) -> tuple[np.ndarray, np.ndarray]:
        """``(labels, cum)``, built once per cell: ``labels[k]`` is the run (position in
        ``runs``) of the ``k``-th pooled sample, and ``cum[g, r]`` how many of the first
        ``g * _RANK_BLOCK`` pooled samples come from run ``r``. With them a weighted count of
        the pooled samples up to any position needs no search in the runs."""
        cached = self.__dict__.get("_rank")
        if cached is None:
            sizes = [v.size for v in self.values]
            order = np.argsort(np.concatenate(self.values), kind="stable") if sizes else []
            dtype = np.int8 if self.n_runs < 128 else np.int32
            labels = np.repeat(np.arange(self.n_runs, dtype=dtype), sizes)[order]
            n_blocks = -(-labels.size // self._RANK_BLOCK)
            code = np.arange(labels.size) // self._RANK_BLOCK * self.n_runs + labels
            counts = np.bincount(code, minlength=n_blocks * self.n_runs)
            wide = labels.size >= 2**31  # int32 counts otherwise: half the memory
            cum = np.zeros((n_blocks + 1, self.n_runs), dtype=np.int64 if wide else np.int32)
            cum[1:] = np.cumsum(counts.reshape(n_blocks, self.n_runs), axis=0)
            cached = (labels, cum)
            object.__setattr__(self, "_rank", cached)  # a cache, not state: frozen stays true
        return cached

    def run_quantiles(self, qs) -> np.ndarray:
        """``(n_runs, len(qs))`` per-run quantiles (inverted-CDF, as the pooled ones)."""
        qs = np.atleast_1d(np.asarray(qs, dtype=float))
        out = np.full((self.n_runs, qs.size), np.nan)
        for i, v in enumerate(self.values):
            if v.size:
                out[i] = np.quantile(v, qs, method="inverted_cdf")
        return out


def bootstrap_run_weights(n_runs: int, n_boot: int, seed: int | None) -> np.ndarray:
    """``(n_boot, n_runs)`` multiplicities of a with-replacement resample of the runs.

    Drawn as ``rng.integers(0, n_runs, (n_boot, n_runs))`` like ``ratio_ci``, then counted, so
    two cells given the same seed and number of runs are resampled over the same run sets.
    """
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_runs, size=(n_boot, n_runs))
    weights = np.zeros((n_boot, n_runs), dtype=np.int64)
    np.add.at(weights, (np.arange(n_boot)[:, None], idx), 1)
    return weights


def pooled_quantiles(cell: RunSamples, qs, weights: np.ndarray | None = None) -> np.ndarray:
    """Quantiles of the pooled samples, each run counted ``weights[b, run]`` times.

    The definition is numpy's ``inverted_cdf`` (the smallest sample ``x`` with
    ``count(<= x) >= q * M``, ``M`` the weighted total), so with unit weights the result equals
    ``np.quantile(all_samples, qs, method="inverted_cdf")`` exactly. Returns ``(len(qs),)``
    without ``weights`` and ``(n_boot, len(qs))`` with them.
    """
    qs = np.atleast_1d(np.asarray(qs, dtype=float))
    if np.any((qs <= 0) | (qs >= 1)):
        raise ValueError("quantile levels must be in (0, 1)")
    single = weights is None
    w = np.ones((1, cell.n_runs)) if single else np.asarray(weights, dtype=float)
    if w.ndim != 2 or w.shape[1] != cell.n_runs:
        raise ValueError(f"weights must have shape (n_boot, {cell.n_runs})")
    if cell.n_samples == 0:
        out = np.full((w.shape[0], qs.size), np.nan)
        return out[0] if single else out
    sizes = np.array([v.size for v in cell.values], dtype=float)
    total = w @ sizes  # weighted pooled sample size per replicate
    target = np.maximum(np.ceil(total[:, None] * qs[None, :]), 1.0)
    # The answer is pooled[k] for the smallest k whose weighted count of pooled[0..k] reaches
    # the target (ties included: every sample equal to pooled[k] but later in the order is
    # counted by a later k, which has the same value). Counted with the cell's rank index:
    # bisection over blocks, then a cumulative sum inside the block. The counts are integers
    # held exactly in float64, so the result does not depend on the order of the sums.
    labels, cum = cell.rank_index()
    block = cell._RANK_BLOCK
    lo = np.zeros(target.shape, dtype=np.int64)
    hi = np.full(target.shape, cum.shape[0] - 2, dtype=np.int64)
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        reached = (cum[mid + 1] * w[:, None, :]).sum(axis=-1) >= target
        active = lo < hi  # settled entries must not move again
        hi = np.where(active & reached, mid, hi)
        lo = np.where(active & ~reached, mid + 1, lo)
    before = (cum[lo] * w[:, None, :]).sum(axis=-1)
    pos = lo[..., None] * block + np.arange(block)
    inside = pos < cell.n_samples
    run_of = labels[np.minimum(pos, cell.n_samples - 1)]
    step = np.where(inside, w[np.arange(w.shape[0])[:, None, None], run_of], 0.0)
    reached = before[..., None] + np.cumsum(step, axis=-1) >= target[..., None]
    out = cell.pooled[lo * block + np.argmax(reached, axis=-1)]
    out[total == 0] = np.nan
    return out[0] if single else out


def _percentile_interval(boot: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    alpha = 1.0 - confidence
    lo, hi = np.nanquantile(boot, [alpha / 2, 1.0 - alpha / 2], axis=0)
    return lo, hi


def cluster_quantile_ci(
    cell: RunSamples,
    qs=(0.5, 0.9, 0.99, 0.999),
    confidence: float = 0.95,
    n_boot: int = 4000,
    seed: int | None = 0,
) -> pd.DataFrame:
    """Pooled quantiles with cluster-bootstrap percentile intervals (runs resampled).

    One row per level: ``q``, ``value`` (pooled quantile of all samples), ``lo``, ``hi``,
    ``n_runs``, ``n_samples``. With fewer than 2 runs there is nothing to resample: the interval
    is NaN. With few runs the bootstrap interval is known to be too narrow (it cannot see more
    run-to-run spread than the runs at hand show); report ``n_runs`` beside it.
    """
    qs = np.atleast_1d(np.asarray(qs, dtype=float))
    point = pooled_quantiles(cell, qs)
    lo = hi = np.full(qs.size, np.nan)
    if cell.n_runs >= 2:
        boot = pooled_quantiles(cell, qs, bootstrap_run_weights(cell.n_runs, n_boot, seed))
        lo, hi = _percentile_interval(boot, confidence)
    return pd.DataFrame(
        {
            "q": qs,
            "value": point,
            "lo": lo,
            "hi": hi,
            "n_runs": cell.n_runs,
            "n_samples": cell.n_samples,
        }
    )


def quantile_shift_ci(
    cell: RunSamples,
    baseline: RunSamples,
    qs=(0.5, 0.99),
    confidence: float = 0.95,
    n_boot: int = 4000,
    seed: int | None = 0,
    paired: bool = True,
) -> pd.DataFrame:
    """Difference of pooled quantiles ``cell - baseline`` with a paired cluster bootstrap.

    Only runs measured in both cells are used (for the point estimate too), and each bootstrap
    replicate gives a run the same multiplicity in both cells, so conditions shared inside a run
    (a slow moment of the machine, a congested WAN) cancel in the difference, as in
    ``ratio_ci``. With ``paired=False`` (cells from separate campaigns, whose run numbers share
    nothing) every run of each cell is used and each cell's runs are resampled independently.
    One row per level: ``q``, ``shift``, ``lo``, ``hi``, ``ratio`` (of the quantiles),
    ``ratio_lo``, ``ratio_hi``, ``n_runs`` (runs in both cells; unpaired: the smaller cell's).
    """
    qs = np.atleast_1d(np.asarray(qs, dtype=float))
    if paired:
        common = np.intersect1d(cell.runs, baseline.runs)
        a, b = cell.subset(common), baseline.subset(common)
    else:
        a, b = cell, baseline
    n_runs = min(a.n_runs, b.n_runs)
    nan = np.full(qs.size, np.nan)
    out = pd.DataFrame({"q": qs, "shift": nan, "lo": nan, "hi": nan})
    out = out.assign(ratio=nan, ratio_lo=nan, ratio_hi=nan, n_runs=int(n_runs))
    if n_runs == 0:
        return out
    pa, pb = pooled_quantiles(a, qs), pooled_quantiles(b, qs)
    out["shift"], out["ratio"] = pa - pb, pa / pb
    if n_runs >= 2:
        wa = bootstrap_run_weights(a.n_runs, n_boot, seed)
        wb = wa if paired else bootstrap_run_weights(b.n_runs, n_boot, _other_seed(seed))
        ba, bb = pooled_quantiles(a, qs, wa), pooled_quantiles(b, qs, wb)
        out["lo"], out["hi"] = _percentile_interval(ba - bb, confidence)
        out["ratio_lo"], out["ratio_hi"] = _percentile_interval(ba / bb, confidence)
    return out


def _other_seed(seed: int | None) -> int | None:
    """A second, independent stream for the baseline of an unpaired bootstrap."""
    if seed is None:
        return None
    return int(np.random.SeedSequence(seed).spawn(1)[0].generate_state(1)[0])


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


def _fit_mixed(y: np.ndarray, x: np.ndarray, groups: np.ndarray):
    """REML fit, warnings silenced (boundary fits are expected when the run SD is ~0)."""
    import warnings

    from statsmodels.regression.mixed_linear_model import MixedLM

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            res = MixedLM(y, x, groups=groups).fit(reml=True)
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
    ``(lo_eq, hi_eq)`` its ``1 - 2 alpha`` interval (90%, see ``equivalence_level``), both from
    the same bootstrap replicates. The rule, applied in this order:

    1. **equivalent** when ``1 - margin < lo_eq`` and ``hi_eq < 1 + margin``: the 90% interval
       lies strictly inside the margin, i.e. both one-sided tests at ``alpha`` reject a
       difference as large as the margin. When the caller has per-run values it passes the
       p-value of the paired TOST on them (``tost_log_ratio``), which must then agree
       (``tost_p < alpha``); NaN (the TOST could not be run, e.g. fewer than 3 paired runs)
       never agrees. With few runs the bootstrap percentile interval is too narrow, so "no
       meaningful overhead" is not claimed on its word alone. ``tost_p=None`` (no per-run
       values at all) applies the interval rule alone.
    2. **overhead** when the 95% interval lies strictly on the worse side of 1 (below 1 when
       ``higher_is_better``, as for throughput; above 1 for latency); **faster** when strictly
       on the better side. When the caller has per-run values it passes ``diff_p``, the
       two-sided paired t test of "no difference" on the per-run log ratios
       (``TostResult.diff_p``), which must agree (``diff_p < alpha``); NaN (fewer than 3 paired
       runs) never agrees. The same reason as in 1: with 2 or 3 runs the bootstrap percentile
       interval is about the range of the per-run ratios, so it excludes 1 whenever every run
       happens to fall on the same side, a false difference in a quarter of A/A comparisons
       with 3 runs (the instrument check, ``pipeline.analysis.instrument``, measures that rate).
       ``diff_p=None`` applies the interval rule alone.
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
    lo: float,
    hi: float,
    values,
    baseline_values,
    higher_is_better: bool = True,
    alpha: float = 0.05,
) -> str:
    """The verdict of a comparison for which no equivalence margin was fixed beforehand (cold
    start, a balancer against a direct connection, an engine's memory against another's): step
    2 of ``verdict`` alone, so never "equivalent". ``(lo, hi)`` is the ratio's ``1 - alpha``
    interval; ``values`` and ``baseline_values`` the per-run values paired by position, whose
    two-sided paired t test on log ratios (``tost_log_ratio``'s ``diff_p``) must agree; with
    fewer than ``TOST_MIN_RUNS`` pairs it cannot, and the verdict is "inconclusive"."""
    diff_p = tost_log_ratio(values, baseline_values, 0.5, alpha).diff_p
    if not bool(diff_p < alpha):  # NaN < alpha is False
        return "inconclusive"
    return difference(lo, hi, higher_is_better) or "inconclusive"


@dataclass(frozen=True)
class TostResult:
    """Paired two one-sided t tests (TOST) on per-run log ratios ``log(mode) - log(baseline)``.

    ``p_value`` is statsmodels' ``ttost_paired`` p-value of non-equivalence for the margin
    ``(1 - margin, 1 + margin)`` on the ratio; ``ratio`` the geometric mean of the per-run ratios
    and ``(lo, hi)`` its ``1 - 2 alpha`` t interval. ``equivalent`` is ``p_value < alpha``, or
    None with a ``reason`` when the test was not run. ``diff_p`` is the two-sided paired t test
    of the opposite question on the same log ratios, "is there any difference" (H0: ratio 1),
    which ``stats.verdict`` needs before it says "overhead" or "faster".
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

    def as_dict(self) -> dict:
        return asdict(self)


def tost_log_ratio(values, baseline_values, margin: float, alpha: float = 0.05) -> TostResult:
    """TOST of ``values / baseline_values`` (paired by position: one pair per run) in ``margin``.

    Used beside the bootstrap verdict where its assumptions hold: at least ``TOST_MIN_RUNS``
    paired runs (with 2 the t distribution has one degree of freedom and the test says nothing),
    positive values, runs independent of each other and per-run log ratios roughly normal (a
    ratio of two positive measurements of the same run is close to log-normal). The log makes
    the test one of ratios, as the margin is. Pairs with a NaN are dropped. When every run has
    the same ratio the t statistics are infinite and the result is their limit (p 0 inside the
    margin, 1 outside). ``stats.verdict`` only calls a comparison equivalent when this test
    was run and agrees.
    """
    x = np.asarray(values, dtype=float)
    y = np.asarray(baseline_values, dtype=float)
    if x.shape != y.shape:
        raise ValueError("values and baseline_values must be paired (same length)")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = int(x.size)
    nan = float("nan")

    def not_run(reason: str) -> TostResult:
        return TostResult(nan, nan, nan, nan, margin, alpha, n, None, reason)

    if n < TOST_MIN_RUNS:
        return not_run(f"{n} paired run(s): the TOST needs at least {TOST_MIN_RUNS}")
    if (x <= 0).any() or (y <= 0).any():
        return not_run("values not all positive: no log ratio")
    d = np.log(x) - np.log(y)
    if np.ptp(d) < 1e-12:  # equal ratios up to rounding (log(4) - log(2) != log(2) exactly)
        # Zero variance: the t statistics are infinite, the limit of the test is exact.
        r = float(np.exp(d.mean()))
        inside = bool(1.0 - margin < r < 1.0 + margin)
        same = bool(abs(d.mean()) < 1e-12)  # every run exactly at ratio 1: no difference at all
        diff_p = 1.0 if same else 0.0
        return TostResult(0.0 if inside else 1.0, r, r, r, margin, alpha, n, inside, None, diff_p)
    from statsmodels.stats.weightstats import DescrStatsW, ttost_paired

    p, _, _ = ttost_paired(x, y, 1.0 - margin, 1.0 + margin, transform=np.log)
    described = DescrStatsW(d)
    lo, hi = described.tconfint_mean(alpha=2.0 * alpha)
    _, diff_p, _ = described.ttest_mean(0.0)
    p = float(p)
    return TostResult(
        p, float(np.exp(d.mean())), float(np.exp(lo)), float(np.exp(hi)), margin, alpha, n,
        bool(p < alpha), None, float(diff_p),
    )  # fmt: skip


@dataclass(frozen=True)
class Equivalence:
    """One comparison with native: ratio, its 95% (``lo``/``hi``) and 90% (``lo_eq``/``hi_eq``)
    cluster-bootstrap intervals, the TOST beside them, and the verdict (see ``verdict``)."""

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


def ratio_equivalence(
    per_run: pd.DataFrame,
    mode: str,
    baseline: str = "native",
    margin: float = 0.05,
    confidence: float = 0.95,
    n_boot: int = 4000,
    seed: int | None = 0,
    higher_is_better: bool = True,
) -> Equivalence:
    """``ratio_ci`` at ``confidence`` and at ``equivalence_level(confidence)`` (the same seed,
    so the same replicates), the paired TOST on the per-run values, and the verdict.

    ``per_run`` as for ``ratio_ci``. With fewer than 3 paired runs there is no TOST and so no
    "equivalent"; with fewer than 2 there is no interval and the verdict is "inconclusive"; with
    none it is None.
    """
    eq_level = equivalence_level(confidence)
    r = ratio_ci(per_run, mode, baseline, confidence, n_boot, seed)
    r_eq = ratio_ci(per_run, mode, baseline, eq_level, n_boot, seed)
    lo, hi, lo_eq, hi_eq = r.lo, r.hi, r_eq.lo, r_eq.hi
    if r.n_runs < 2:  # one run resampled is that run: a zero-width interval, not a finding
        lo = hi = lo_eq = hi_eq = float("nan")
    pairs = _paired(per_run, mode, baseline)
    alpha = round(1.0 - confidence, 12)
    tost = tost_log_ratio(pairs[:, 0], pairs[:, 1], margin, alpha)
    said = verdict(
        r.ratio, lo, hi, lo_eq, hi_eq, margin, higher_is_better, tost.p_value, alpha, tost.diff_p
    )
    return Equivalence(
        r.ratio, lo, hi, lo_eq, hi_eq, confidence, eq_level, margin, r.n_runs, tost, said
    )


def quantile_equivalence(
    cell: RunSamples,
    baseline: RunSamples,
    qs=(0.5, 0.99),
    margin: float = 0.05,
    confidence: float = 0.95,
    n_boot: int = 4000,
    seed: int | None = 0,
    higher_is_better: bool = False,
) -> pd.DataFrame:
    """Verdicts for ratios of pooled quantiles ``cell / baseline`` (latency: lower is better).

    The ratio and its paired cluster-bootstrap intervals are those of ``quantile_shift_ci``
    (same runs, seed and replicates), at ``confidence`` and ``equivalence_level(confidence)``
    from one set of replicates. The TOST beside them is run on the per-run quantiles of the
    paired runs (its estimand is the geometric mean of per-run quantile ratios, close to but
    not the ratio of pooled quantiles). One row per level: ``q``, ``ratio``, ``lo``, ``hi``,
    ``lo_eq``, ``hi_eq``, ``n_runs``, ``margin``, ``tost_p``, ``tost_ratio``, ``tost_lo``,
    ``tost_hi``, ``tost_reason``, ``verdict``.
    """
    qs = np.atleast_1d(np.asarray(qs, dtype=float))
    alpha = round(1.0 - confidence, 12)
    common = np.intersect1d(cell.runs, baseline.runs)
    nan = np.full(qs.size, np.nan)
    ratio, lo, hi, lo_eq, hi_eq = nan.copy(), nan.copy(), nan.copy(), nan.copy(), nan.copy()
    per_run_a = per_run_b = np.full((0, qs.size), np.nan)
    if common.size:
        # Subsetting copies and sorts the pooled samples: skip it when every run is common.
        a = cell if np.array_equal(cell.runs, common) else cell.subset(common)
        b = baseline if np.array_equal(baseline.runs, common) else baseline.subset(common)
        ratio = pooled_quantiles(a, qs) / pooled_quantiles(b, qs)
        per_run_a, per_run_b = a.run_quantiles(qs), b.run_quantiles(qs)
        if common.size >= 2:
            w = bootstrap_run_weights(int(common.size), n_boot, seed)
            boot = pooled_quantiles(a, qs, w) / pooled_quantiles(b, qs, w)
            lo, hi = _percentile_interval(boot, confidence)
            lo_eq, hi_eq = _percentile_interval(boot, equivalence_level(confidence))
    rows = []
    for i, q in enumerate(qs):
        tost = tost_log_ratio(per_run_a[:, i], per_run_b[:, i], margin, alpha)
        said = verdict(
            ratio[i], lo[i], hi[i], lo_eq[i], hi_eq[i], margin, higher_is_better,
            tost.p_value, alpha, tost.diff_p,
        )  # fmt: skip
        rows.append(
            {
                "q": float(q),
                "ratio": ratio[i],
                "lo": lo[i],
                "hi": hi[i],
                "lo_eq": lo_eq[i],
                "hi_eq": hi_eq[i],
                "n_runs": int(common.size),
                "margin": margin,
                "tost_p": tost.p_value,
                "tost_ratio": tost.ratio,
                "tost_lo": tost.lo,
                "tost_hi": tost.hi,
                "tost_reason": tost.reason,
                "verdict": said,
            }
        )
    return pd.DataFrame(rows)
