"""Known-answer tests for pipeline.analysis.stats."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from pipeline.analysis import stats
from pipeline.analysis.stats import (
    order_statistic_ranks,
    per_run_summary,
    quantile_ci,
    ratio_ci,
    resolvable,
)

# --- order-statistic ranks -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "ranks", "coverage"),
    [
        # Textbook values for the median at 95% (e.g. Conover, Practical Nonparametric Statistics).
        (6, (1, 6), 1 - 2 / 64),
        (10, (2, 9), 1 - 22 / 1024),
        (20, (6, 15), None),
    ],
)
def test_median_ranks_textbook(n, ranks, coverage):
    lo, hi, cov = order_statistic_ranks(n, 0.5, 0.95)
    assert (lo, hi) == ranks
    expected = (
        coverage
        if coverage is not None
        else st.binom.cdf(hi - 1, n, 0.5) - st.binom.cdf(lo - 1, n, 0.5)
    )
    assert cov == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("q", [0.5, 0.25, 0.9, 0.99])
@pytest.mark.parametrize("n", [6, 7, 13, 30, 64, 101, 500])
def test_ranks_are_the_tightest_equal_tailed_binomial_ranks(n, q):
    conf = 0.95
    lo, hi, cov = order_statistic_ranks(n, q, conf)
    cdf = lambda k: st.binom.cdf(k, n, q)  # noqa: E731
    assert 1 <= lo < hi <= n
    assert cov == pytest.approx(cdf(hi - 1) - cdf(lo - 1), abs=1e-12)
    if cov >= conf:
        lower_tail, upper_tail = cdf(lo - 1), 1 - cdf(hi - 1)
        pinned_lo, pinned_hi = lo == 1 and cdf(0) > 0.025, hi == n and 1 - cdf(n - 1) > 0.025
        if not (pinned_lo or pinned_hi):
            # Equal-tailed: each tail at most alpha/2, and no rank can move inwards.
            assert lower_tail <= 0.025 + 1e-12 and upper_tail <= 0.025 + 1e-12
            assert lo == n or cdf(lo) > 0.025
            assert hi == 1 or 1 - cdf(hi - 2) > 0.025
        else:
            # One end pinned at the sample extreme: the other end is as tight as allowed.
            if pinned_lo:
                assert cdf(hi - 2) - cdf(0) < conf
            if pinned_hi:
                assert cdf(n - 1) - cdf(lo) < conf
    else:
        assert (lo, hi) == (1, n)


@pytest.mark.parametrize("n", range(6, 120, 7))
def test_median_ranks_agree_with_scipy_quantile_test(n):
    x = np.arange(1.0, n + 1)
    ci = st.quantile_test(x, q=float(np.median(x)), p=0.5).confidence_interval(0.95)
    lo, hi, _ = order_statistic_ranks(n, 0.5, 0.95)
    assert (lo, hi) == (int(ci.low), int(ci.high))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_median_too_few_values_gives_range_and_true_coverage(n):
    values = np.linspace(1.0, 2.0, n)[::-1]
    ci = quantile_ci(values, 0.5, 0.95)
    assert not ci.reached
    assert (ci.lo, ci.hi) == (1.0, 2.0) if n > 1 else (ci.lo, ci.hi) == (1.0, 1.0)
    # P(min <= median <= max) = 1 - 2 * 0.5**n for a continuous distribution.
    assert ci.coverage == pytest.approx(1 - 2 * 0.5**n if n > 1 else 0.0)
    assert ci.coverage < 0.95


def test_quantile_ci_point_and_nan_handling():
    ci = quantile_ci([4.0, 1.0, np.nan, 3.0, 2.0, 6.0, 5.0], 0.5)
    assert ci.n == 6 and ci.point == 3.5 and (ci.lo, ci.hi) == (1.0, 6.0) and ci.reached
    empty = quantile_ci([], 0.5)
    assert empty.n == 0 and np.isnan(empty.point) and not empty.reached


@pytest.mark.parametrize("n", [8, 15, 40])
def test_quantile_ci_coverage_simulation(n):
    rng = np.random.default_rng(20261121 + n)
    sims = 2000
    true_median = 1.0  # lognormal(0, s) has median exp(0) = 1
    data = rng.lognormal(0.0, 0.5, size=(sims, n))
    hits = 0
    for row in data:
        ci = quantile_ci(row, 0.5, 0.95)
        hits += ci.lo <= true_median <= ci.hi
    nominal = quantile_ci(data[0], 0.5, 0.95).coverage
    assert nominal >= 0.95
    # Three binomial standard errors below the exact coverage the function reports.
    tol = 3 * np.sqrt(nominal * (1 - nominal) / sims)
    assert hits / sims >= nominal - tol


def test_quantile_ci_reported_coverage_is_honest_when_not_reached():
    rng = np.random.default_rng(5)
    data = rng.normal(size=(4000, 5))
    hits = sum(quantile_ci(row).lo <= 0.0 <= quantile_ci(row).hi for row in data)
    reported = quantile_ci(data[0]).coverage
    assert reported == pytest.approx(0.9375)
    assert abs(hits / 4000 - reported) < 3 * np.sqrt(reported * (1 - reported) / 4000)


# --- ratio_ci ------------------------------------------------------------------------------


def _per_run(mode_values, base_values, mode="docker-bridge", baseline="native"):
    runs = np.arange(1, len(mode_values) + 1)
    return pd.DataFrame(
        {
            "run": np.r_[runs, runs],
            "mode": [mode] * len(runs) + [baseline] * len(runs),
            "value": np.r_[mode_values, base_values],
        }
    )


def test_ratio_ci_constant_ratio_is_degenerate_even_with_large_run_effects():
    base = np.array([9.4, 3.1, 7.7, 12.0, 5.5, 9.9, 1.2])
    r = ratio_ci(_per_run(0.8 * base, base), "docker-bridge", "native")
    assert r.ratio == pytest.approx(0.8)
    assert r.lo == pytest.approx(0.8) and r.hi == pytest.approx(0.8)
    assert r.n_runs == 7


def test_ratio_ci_pairing_matters():
    # Large between-run variation shared by both modes cancels in the per-run ratios.
    rng = np.random.default_rng(11)
    run_effect = rng.lognormal(0, 0.3, 12)
    base = 9.0 * run_effect * rng.lognormal(0, 0.01, 12)
    mode = 7.2 * run_effect * rng.lognormal(0, 0.01, 12)
    r = ratio_ci(_per_run(mode, base), "docker-bridge")
    assert r.lo < 0.8 < r.hi
    assert r.hi - r.lo < 0.1


def test_ratio_ci_uses_only_runs_with_both_modes():
    df = _per_run([8.0, 8.0, 8.0, 4.0], [10.0, 10.0, 10.0, np.nan])
    df = df.dropna()
    r = ratio_ci(df, "docker-bridge")
    assert r.n_runs == 3 and r.ratio == pytest.approx(0.8)
    missing = ratio_ci(df, "macvlan")
    assert missing.n_runs == 0 and np.isnan(missing.ratio)


def test_ratio_ci_rejects_unreduced_samples():
    df = pd.concat([_per_run([8.0, 8.1], [9.0, 9.1])] * 2)
    with pytest.raises(ValueError, match="one value per"):
        ratio_ci(df, "docker-bridge")


def test_ratio_ci_is_scipys_paired_t_interval_on_log_ratios():
    rng = np.random.default_rng(1)
    n = 7
    run_effect = rng.normal(0, 0.05, n)
    base = 9.4 * np.exp(run_effect + rng.normal(0, 0.02, n))
    mode = 0.85 * 9.4 * np.exp(run_effect + rng.normal(0, 0.02, n))
    ours = ratio_ci(_per_run(mode, base), "docker-bridge")
    ref = st.ttest_rel(np.log(mode), np.log(base)).confidence_interval(0.95)
    assert ours.ratio == pytest.approx(np.exp(np.mean(np.log(mode / base))), rel=1e-12)
    assert ours.lo == pytest.approx(np.exp(ref.low), rel=1e-12)
    assert ours.hi == pytest.approx(np.exp(ref.high), rel=1e-12)
    # the headline is the geometric mean of per-run ratios, not a ratio of medians
    assert ours.ratio != pytest.approx(np.median(mode) / np.median(base), rel=1e-6)


def test_resolvable_is_the_exact_noncentral_t_power_and_shrinks_with_runs():
    sd = 0.05
    got = resolvable(sd, 3)
    # at that shift the two-sided t test at 5% with 2 df rejects 80% of the time, exactly
    tc, nc = st.t.ppf(0.975, 2), got * np.sqrt(3) / sd
    assert st.nct.sf(tc, 2, nc) + st.nct.sf(tc, 2, -nc) == pytest.approx(0.8, abs=1e-9)
    # the normal planning formula with t quantiles is 5.4% short of it at 3 runs
    approx = (st.t.ppf(0.975, 2) + st.t.ppf(0.8, 2)) * sd / np.sqrt(3)
    assert got / approx == pytest.approx(1.054, abs=0.001)
    assert resolvable(sd, 10) < resolvable(sd, 5) < got
    assert np.isnan(resolvable(sd, 1))
    # the power it promises, by simulation at 3 runs: found 80% of the time (+-2.5 points:
    # 4 SE at 4000 draws)
    n = 3
    rng = np.random.default_rng(5)
    d = rng.normal(resolvable(sd, n), sd, size=(4000, n))
    p = st.ttest_1samp(d, 0.0, axis=1).pvalue
    assert abs((p < 0.05).mean() - 0.8) < 0.025


def test_resolvable_under_a_table_adjustment_is_the_colleague_measured_multiple():
    """At 3 runs the effect an adjusted test finds with 80% power is 1.5x, 3x and 4.7x the
    unadjusted planning formula's in tables of 2, 8 and 20 comparisons (Holm or BH: the level
    both guarantee is alpha / m); ``none`` leaves it unadjusted."""
    sd, n = 0.05, 3
    approx = (st.t.ppf(0.975, 2) + st.t.ppf(0.8, 2)) * sd / np.sqrt(3)
    for m, times in ((2, 1.494), (8, 2.991), (20, 4.73)):
        for method in ("holm", "bh"):
            assert resolvable(sd, n, m=m, method=method) / approx == pytest.approx(times, abs=2e-3)
        assert resolvable(sd, n, m=m, method="none") == resolvable(sd, n)
    assert stats.comparison_alpha(0.05, 8, "holm") == pytest.approx(0.05 / 8)
    with pytest.raises(ValueError):
        stats.comparison_alpha(0.05, 2, "bonferroni")


def test_minimum_detectable_reads_in_the_metric_direction():
    """A rate's detectable drop is 1 - exp(-d) (never above 100%), a time's rise exp(d) - 1;
    an absolute shift stays in its unit."""
    d = resolvable(0.3, 3)  # a wide one: exp(d) - 1 is above 100%
    rate = stats.minimum_detectable(0.3, 3, higher_is_better=True)
    time = stats.minimum_detectable(0.3, 3, higher_is_better=False)
    assert rate.log == time.log == pytest.approx(d)
    assert rate.fraction == pytest.approx(1 - np.exp(-d)) and rate.fraction < 1
    assert time.fraction == pytest.approx(np.expm1(d)) and time.fraction > 1
    assert (rate.direction, time.direction) == ("drop", "rise")
    us = stats.minimum_detectable(40.0, 5, m=4, method="holm", absolute=True,
                                  higher_is_better=False)  # fmt: skip
    assert us.fraction == us.log == pytest.approx(resolvable(40.0, 5, m=4, method="holm"))
    assert us.alpha == pytest.approx(0.0125) and us.m == 4


# --- per_run_summary -----------------------------------------------------------------------


def test_per_run_summary_excludes_warmup_and_reduces_per_run():
    samples = pd.DataFrame(
        {
            "environment": "lab",
            "mode": "native",
            "path": "dc",
            "metric": ["m", "m", "m", "m", "other"],
            "run": [1, 1, 1, 2, 1],
            "warmup": [True, False, False, False, False],
            "value": [100.0, 1.0, 3.0, 5.0, 7.0],
        }
    )
    out = per_run_summary(samples, "m")
    assert out["run"].tolist() == [1, 2]
    assert out["value"].tolist() == [2.0, 5.0]
