"""Equivalence verdicts, the TOST beside them, and the interval code checked against scipy.

- ``stats.verdict``: every verdict reachable, for throughput (higher is better) and latency
  (lower is better), and the boundaries of the rule (strict inequalities);
- ``stats.tost_log_ratio``: against a TOST computed by hand with the closed-form t
  distribution of 2 degrees of freedom;
- ``stats.quantile_ci`` against ``scipy.stats.quantile_test(...).confidence_interval``, and the
  cluster bootstraps (``ratio_ci``, ``cluster_quantile_ci``, ``quantile_shift_ci``) against
  ``scipy.stats.bootstrap`` resampling the same unit (runs), within Monte-Carlo tolerance.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from pipeline.analysis import stats, tables

M = 0.05  # the network margin of params.yaml


# --- the verdict rule ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ratio", "ci95", "ci90", "higher_is_better", "expected"),
    [
        # Throughput: below 1 is worse.
        (0.80, (0.78, 0.82), (0.785, 0.815), True, "overhead"),
        (1.20, (1.18, 1.22), (1.185, 1.215), True, "faster"),
        (1.00, (0.99, 1.01), (0.992, 1.008), True, "equivalent"),
        (0.97, (0.90, 1.04), (0.91, 1.03), True, "inconclusive"),
        # Latency: above 1 is worse.
        (1.20, (1.18, 1.22), (1.185, 1.215), False, "overhead"),
        (0.80, (0.78, 0.82), (0.785, 0.815), False, "faster"),
        (1.00, (0.99, 1.01), (0.992, 1.008), False, "equivalent"),
        (1.03, (0.96, 1.10), (0.97, 1.09), False, "inconclusive"),
    ],
)
def test_every_verdict_is_reachable(ratio, ci95, ci90, higher_is_better, expected):
    assert stats.verdict(ratio, *ci95, *ci90, M, higher_is_better) == expected


def test_equivalence_boundaries_are_strict():
    # The 90% interval touching the margin is not inside it...
    assert stats.verdict(1.0, 0.94, 1.04, 0.95, 1.03, M) == "inconclusive"
    assert stats.verdict(1.0, 0.96, 1.06, 0.97, 1.05, M) == "inconclusive"
    # ...a hair inside it is.
    assert stats.verdict(1.0, 0.94, 1.04, 0.95 + 1e-9, 1.03, M) == "equivalent"
    assert stats.verdict(1.0, 0.96, 1.06, 0.97, 1.05 - 1e-9, M) == "equivalent"
    # A 95% interval ending exactly at 1 is not a difference.
    assert stats.verdict(0.9, 0.8, 1.0, 0.82, 0.99, M) == "inconclusive"
    assert stats.verdict(0.9, 0.8, 1.0 - 1e-9, 0.82, 0.99, M) == "overhead"
    assert stats.verdict(1.1, 1.0, 1.2, 1.01, 1.18, M, higher_is_better=False) == "inconclusive"


def test_equivalence_is_decided_before_a_small_real_difference():
    # 98.5% of native, 95% interval [0.980, 0.990] excludes 1, 90% interval inside +-5%.
    said = stats.verdict(0.985, 0.980, 0.990, 0.981, 0.989, M)
    assert said == "equivalent"
    assert stats.difference(0.980, 0.990, higher_is_better=True) == "overhead"
    assert tables.verdict_text(said, 0.980, 0.990, True) == "equivalent (small overhead)"
    # Latency 1.5% above native: the same, with the worse side above 1.
    said = stats.verdict(1.015, 1.010, 1.020, 1.011, 1.019, M, higher_is_better=False)
    assert tables.verdict_text(said, 1.010, 1.020, False) == "equivalent (small overhead)"
    assert tables.verdict_text("equivalent", 0.99, 1.01, True) == "equivalent"
    assert tables.verdict_text("equivalent", 1.01, 1.02, True) == "equivalent (slightly faster)"
    # The same interval against a margin of 1% is a plain overhead.
    assert stats.verdict(0.985, 0.980, 0.990, 0.981, 0.989, 0.01) == "overhead"


def test_tost_must_agree_before_equivalence_is_claimed():
    inside = (1.0, 0.99, 1.01, 0.992, 1.008, M)
    assert stats.verdict(*inside, tost_p=0.01) == "equivalent"
    assert stats.verdict(*inside, tost_p=0.20) == "inconclusive"
    assert stats.verdict(*inside, tost_p=0.05) == "inconclusive"  # p must be below alpha
    # A TOST that could not be run (fewer than 3 paired runs) never supports equivalence...
    assert stats.verdict(*inside, tost_p=float("nan")) == "inconclusive"
    # ...while a caller without per-run values (None) applies the interval rule alone.
    assert stats.verdict(*inside, tost_p=None) == "equivalent"
    # A TOST that disagrees leaves a real difference standing.
    assert stats.verdict(0.985, 0.980, 0.990, 0.981, 0.989, M, tost_p=0.3) == "overhead"


def test_a_difference_needs_the_paired_t_test_too():
    outside = (0.9, 0.85, 0.95, 0.86, 0.94, M)  # both intervals below 1 and outside the margin
    assert stats.verdict(*outside) == "overhead"  # no per-run values: the interval alone
    assert stats.verdict(*outside, tost_p=0.9, diff_p=0.01) == "overhead"
    assert stats.verdict(*outside, tost_p=0.9, diff_p=0.2) == "inconclusive"
    assert stats.verdict(*outside, tost_p=0.9, diff_p=0.05) == "inconclusive"  # below alpha
    # No t test (fewer than 3 paired runs) never supports a difference, as for equivalence.
    assert stats.verdict(*outside, tost_p=float("nan"), diff_p=float("nan")) == "inconclusive"
    # Equivalence is still decided first: a significant but small difference is equivalent.
    assert stats.verdict(0.985, 0.980, 0.990, 0.981, 0.989, M, 0.01, diff_p=0.001) == "equivalent"


def test_difference_verdict_has_no_equivalence_and_needs_the_t_test():
    """Comparisons without a margin fixed beforehand: overhead/faster by the paired t test on
    the runs (scipy's ttest_rel on log values) and its side, otherwise inconclusive."""
    slow = [2.0, 2.1, 1.9, 2.05]  # a time, e.g. a start: twice the baseline in every run
    base = [1.0, 1.02, 0.97, 1.01]
    assert st.ttest_rel(np.log(slow), np.log(base)).pvalue < 0.05
    assert stats.difference_verdict(slow, base, higher_is_better=False) == "overhead"
    assert stats.difference_verdict(slow, base, higher_is_better=True) == "faster"
    # a ratio of exactly 1.0 in every run: no difference, and still not "equivalent"
    assert stats.difference_verdict(base, base) == "inconclusive"
    # the runs disagree in sign: the t test does not reject
    mixed = [1.3, 0.8, 1.25, 0.85]
    assert not st.ttest_rel(np.log(mixed), np.log(base)).pvalue < 0.05
    assert stats.difference_verdict(mixed, base) == "inconclusive"
    # two runs: the test is not run
    assert stats.difference_verdict(slow[:2], base[:2], False) == "inconclusive"


def test_tost_difference_p_matches_scipy_and_the_flat_limits():
    rng = np.random.default_rng(11)
    base = 10 * np.exp(rng.normal(0, 0.02, 5))
    mode = base * np.exp(rng.normal(-0.03, 0.01, 5))
    res = stats.tost_log_ratio(mode, base, M)
    expected = st.ttest_1samp(np.log(mode) - np.log(base), 0.0).pvalue
    assert res.diff_p == pytest.approx(expected, rel=1e-9)
    assert stats.tost_log_ratio([2.0, 4.0, 6.0], [1.0, 2.0, 3.0], M).diff_p == 0.0
    assert stats.tost_log_ratio([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], M).diff_p == 1.0
    assert np.isnan(stats.tost_log_ratio([1.0, 1.01], [1.0, 1.0], M).diff_p)


def test_a_a_comparisons_call_a_difference_at_the_stated_rate():
    """One mode under two names: per-run noise only. With 3 runs the range of the per-run
    ratios (what a 3-run percentile bootstrap gives) excludes 1 in a quarter of them (all
    three runs on one side: 2/8); the t interval the study uses does so in 5%."""
    rng = np.random.default_rng(2026)
    n, trials = 3, 2000
    range_only = with_t = said = 0
    for _ in range(trials):
        base = 100 * np.exp(rng.normal(0, 0.03, n))
        same = 100 * np.exp(rng.normal(0, 0.03, n))
        ratios = same / base
        range_only += ratios.min() > 1 or ratios.max() < 1
        eq = stats.ratio_equivalence(_per_run(same, base), "m", margin=M)
        with_t += stats.difference(eq.lo, eq.hi) is not None
        said += eq.verdict in ("overhead", "faster")
    assert 0.2 < range_only / trials < 0.3, range_only
    assert abs(with_t / trials - 0.05) < 0.015, with_t
    # a verdict of a difference is rarer still: a small one inside the margin is "equivalent"
    assert said <= with_t


def test_missing_comparison_and_missing_interval():
    nan = float("nan")
    assert stats.verdict(nan, nan, nan, nan, nan, M) is None
    assert stats.verdict(0.9, nan, nan, nan, nan, M) == "inconclusive"
    assert tables.verdict_text(None, nan, nan) is None
    assert tables.verdict_text(nan, nan, nan) is None
    with pytest.raises(ValueError):
        stats.verdict(1.0, 0.99, 1.01, 0.99, 1.01, 0.0)
    with pytest.raises(ValueError):
        stats.verdict(1.0, 0.99, 1.01, 0.99, 1.01, 1.5)


def test_equivalence_level_is_one_minus_two_alpha():
    assert stats.equivalence_level(0.95) == 0.9
    assert stats.equivalence_level(0.99) == 0.98
    with pytest.raises(ValueError):
        stats.equivalence_level(0.4)


def test_margin_and_p_text():
    assert tables.margin_text(0.05) == "±5%"
    assert tables.margin_text(0.025) == "±2.5%"
    assert tables.p_text(0.0004) == "<0.001"
    assert tables.p_text(0.01234) == "0.012"
    assert tables.p_text(float("nan")) is None


def test_resolvable_text_never_prints_an_exponent_or_an_absurd_percentage():
    said = {x: tables.resolvable_text(x, 3, "rise") for x in (0.0734, 0.53, 1.0, 5.3, 9.0,
                                                               304602.88)}  # fmt: skip
    assert said[0.0734] == "a rise under 7.3% cannot be resolved with 3 runs"
    assert said[0.53] == "a rise under 53% cannot be resolved with 3 runs"
    assert said[1.0] == "a rise under 2x cannot be resolved with 3 runs"  # a doubling
    assert said[5.3] == "a rise under 6.3x cannot be resolved with 3 runs"
    assert said[9.0] == said[304602.88] == "not even a tenfold rise can be resolved with 3 runs"
    plain = tables.resolvable_text(0.53, 3)
    assert plain == "a difference under 53% cannot be resolved with 3 runs"
    assert tables.resolvable_text(float("nan"), 3) is None
    assert tables.resolvable_text(0.1, 1) is None  # one run: no SD


# --- TOST against a hand computation -------------------------------------------------------


def _t2_sf(t: float) -> float:
    """Survival function of Student's t with 2 degrees of freedom, in closed form."""
    return 0.5 * (1.0 - t / math.sqrt(t * t + 2.0))


def _t2_ppf(p: float) -> float:
    """Quantile of Student's t with 2 degrees of freedom, in closed form."""
    return (2.0 * p - 1.0) / math.sqrt(2.0 * p * (1.0 - p))


@pytest.mark.parametrize(
    ("log_ratios", "equivalent"),
    [((0.01, 0.03, 0.02), True), ((0.01, 0.05, 0.03), False)],
)
def test_tost_matches_a_hand_computation(log_ratios, equivalent):
    d = np.array(log_ratios)
    base = np.array([10.0, 20.0, 40.0])
    mode = base * np.exp(d)
    mean, se = d.mean(), d.std(ddof=1) / math.sqrt(3)
    t_low = (mean - math.log(1 - M)) / se  # H0: ratio <= 0.95
    t_upp = (mean - math.log(1 + M)) / se  # H0: ratio >= 1.05
    p = max(_t2_sf(t_low), _t2_sf(-t_upp))
    res = stats.tost_log_ratio(mode, base, M, alpha=0.05)
    assert res.p_value == pytest.approx(p, rel=1e-9)
    assert res.equivalent is equivalent and res.n_runs == 3 and res.reason is None
    assert res.ratio == pytest.approx(math.exp(mean), rel=1e-12)
    half = _t2_ppf(0.95) * se
    assert (res.lo, res.hi) == pytest.approx((math.exp(mean - half), math.exp(mean + half)))


def test_tost_first_case_known_p_value():
    # d = (0.01, 0.03, 0.02): mean 0.02, sd 0.01, the upper test decides: t = -4.9865, p = 0.0190.
    res = stats.tost_log_ratio(np.exp([0.01, 0.03, 0.02]), np.ones(3), M)
    assert res.p_value == pytest.approx(0.01898, abs=5e-5)


def test_tost_is_not_run_where_its_assumptions_fail():
    two = stats.tost_log_ratio([1.0, 1.01], [1.0, 1.0], M)
    assert two.equivalent is None and np.isnan(two.p_value) and "at least 3" in two.reason
    # The same ratio in every run: infinite t statistics, the test's limit.
    flat = stats.tost_log_ratio([2.0, 4.0, 6.0], [1.0, 2.0, 3.0], M)
    assert (flat.p_value, flat.equivalent, flat.ratio) == (1.0, False, pytest.approx(2.0))
    flat = stats.tost_log_ratio([1.01, 2.02, 3.03], [1.0, 2.0, 3.0], M)
    assert (flat.p_value, flat.equivalent, flat.reason) == (0.0, True, None)
    neg = stats.tost_log_ratio([1.0, -1.0, 2.0], [1.0, 1.0, 1.0], M)
    assert neg.equivalent is None and "positive" in neg.reason
    # NaN pairs are dropped before counting runs.
    nan = stats.tost_log_ratio([1.0, np.nan, 1.01, 0.99], [1.0, 1.0, 1.0, 1.0], M)
    assert nan.n_runs == 3 and nan.reason is None


# --- ratio and quantile equivalence --------------------------------------------------------


def _per_run(mode_values, base_values) -> pd.DataFrame:
    n = len(base_values)
    return pd.DataFrame(
        {
            "run": np.r_[np.arange(1, n + 1), np.arange(1, len(mode_values) + 1)],
            "mode": ["native"] * n + ["m"] * len(mode_values),
            "value": np.r_[base_values, mode_values],
        }
    )


def test_ratio_equivalence_is_the_paired_t_analysis_at_both_levels():
    rng = np.random.default_rng(3)
    base = 9.4 * np.exp(rng.normal(0, 0.01, 8))
    mode = base * 0.99 * np.exp(rng.normal(0, 0.005, 8))
    per_run = _per_run(mode, base)
    eq = stats.ratio_equivalence(per_run, "m", margin=M)
    r95 = stats.ratio_ci(per_run, "m", confidence=0.95)
    r90 = stats.ratio_ci(per_run, "m", confidence=0.90)
    assert (eq.ratio, eq.lo, eq.hi) == (r95.ratio, r95.lo, r95.hi)
    assert (eq.lo_eq, eq.hi_eq) == (r90.lo, r90.hi)
    assert eq.lo <= eq.lo_eq <= eq.hi_eq <= eq.hi
    assert eq.equivalence_confidence == 0.9 and eq.n_runs == 8
    assert eq.verdict == "equivalent" and eq.tost.equivalent
    assert eq.as_dict()["tost_p_value"] == eq.tost.p_value
    # the same smallest shift, read as the drop of a rate (higher is better) rather than a rise
    assert eq.tost.resolvable_log == pytest.approx(np.log1p(r95.resolvable))
    assert eq.tost.resolvable == pytest.approx(-np.expm1(-np.log1p(r95.resolvable)))
    # The same data against a 0.5% margin: a 1% cost is an overhead.
    tight = stats.ratio_equivalence(per_run, "m", margin=0.005)
    assert tight.verdict == "overhead"


def test_ratio_equivalence_with_one_run_is_inconclusive():
    eq = stats.ratio_equivalence(_per_run([8.0], [9.0]), "m", margin=M)
    assert eq.ratio == pytest.approx(8.0 / 9.0)
    assert np.isnan(eq.lo) and np.isnan(eq.lo_eq)
    assert eq.verdict == "inconclusive" and "at least 3" in eq.tost.reason
    # Two runs well inside the margin: an interval, but no tests, so not "equivalent".
    two = stats.ratio_equivalence(_per_run([9.0, 9.1], [9.01, 9.09]), "m", margin=M)
    assert np.isfinite(two.lo_eq) and np.isfinite(two.hi_eq)
    assert two.verdict == "inconclusive"
    none = stats.ratio_equivalence(_per_run([], [9.0]), "m", margin=M)
    assert none.verdict is None and none.n_runs == 0


# --- cross-checks against independent implementations (scipy) ------------------------------


def test_quantile_ci_agrees_with_scipy_quantile_test():
    rng = np.random.default_rng(0)
    both = one_sided = 0
    for n in range(1, 160):
        x = rng.normal(size=n)
        for q in (0.1, 0.5, 0.9, 0.99):
            for conf in (0.90, 0.95, 0.99):
                ours = stats.quantile_ci(x, q, conf)
                ci = st.quantile_test(x, q=0.0, p=q).confidence_interval(conf)
                if np.isfinite(ci.low) and np.isfinite(ci.high):
                    # The same order statistics: equal-tailed ranks from the binomial CDF.
                    assert (ours.lo, ours.hi) == (ci.low, ci.high), (n, q, conf)
                    assert ours.reached and ours.coverage >= conf - 1e-12
                    both += 1
                    continue
                # scipy has no bound where the tail cannot be bounded inside the sample (NaN);
                # ours pins that end to the sample's extreme and keeps the other end at least
                # as wide as scipy's, so it contains every finite scipy bound.
                one_sided += 1
                if not np.isfinite(ci.low):
                    assert ours.lo == x.min()
                else:
                    assert ours.lo <= ci.low
                if not np.isfinite(ci.high):
                    assert ours.hi == x.max()
                else:
                    assert ours.hi >= ci.high
    assert both > 1000 and one_sided > 100  # both regimes were exercised


def _runs_with_offsets(n_runs=8, n=300, seed=4):
    rng = np.random.default_rng(seed)
    base, mode = [], []
    for _ in range(n_runs):
        offset = rng.normal(0.0, 3.0)
        base.append(50.0 + offset + rng.gamma(2.0, 4.0, n))
        mode.append(58.0 + offset + rng.gamma(2.0, 4.0, n))
    return mode, base


def _cell(per_run: list[np.ndarray]) -> stats.RunSamples:
    runs = np.concatenate([np.full(len(v), i) for i, v in enumerate(per_run)])
    return stats.RunSamples.from_arrays(np.concatenate(per_run), runs)


def _pooled(per_run, idx, q):
    return np.quantile(np.concatenate([per_run[i] for i in idx]), q, method="inverted_cdf")


def test_two_runs_are_never_called_equivalent_in_the_latency_summary():
    # The smoke profile's 2 runs: with no TOST possible the verdict stays inconclusive, the
    # table says what size the runs could resolve and the note why there is no test.
    from pipeline.analysis import latency as la

    rng = np.random.default_rng(0)
    cells, rows = {}, []
    for mode, shift in (("native", 0.0), ("docker-host", 0.2)):
        values = [50.0 + shift + rng.gamma(2.0, 4.0, 500) for _ in (1, 2)]
        runs = [np.full(500, r) for r in (1, 2)]
        cells[("lab", mode, "dc", "udp")] = stats.RunSamples.from_arrays(
            np.concatenate(values), np.concatenate(runs)
        )
        rows += [
            {"environment": "lab", "mode": mode, "path": "dc", "variant": "udp", "run": r,
             "status": "ok", "reason": None}
            for r in (1, 2)
        ]  # fmt: skip
    summary = la.summarise(cells, pd.DataFrame(rows), margin=M)
    host = summary.set_index("mode").loc["docker-host"]
    assert host["verdict_p50"] == "inconclusive"
    table = la.article_table(summary).set_index("Configuration")
    cell = table.loc["Docker host network", "Verdict p50 (±5%)"]
    assert cell.startswith("inconclusive (a rise under ")  # latency: lower is better
    assert cell.endswith("cannot be resolved with 2 runs)")
    assert "no TOST: 2 paired run(s)" in table.loc["Docker host network", "Note"]
