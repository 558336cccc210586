"""Known-answer tests for the latency statistics in pipeline.analysis.stats: pooled percentiles,
per-run percentiles with t intervals over runs, paired percentile shifts, the mixed-model
variance decomposition."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pipeline.analysis.stats import (
    RunSamples,
    min_samples,
    pooled_quantiles,
    quantile_shift_ci,
    run_quantile_ci,
    variance_components,
)

QS = np.array([0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999])


def _cell(per_run: list[np.ndarray], run_ids=None) -> RunSamples:
    run_ids = range(1, len(per_run) + 1) if run_ids is None else run_ids
    runs = np.concatenate([np.full(v.size, r) for r, v in zip(run_ids, per_run, strict=True)])
    return RunSamples.from_arrays(np.concatenate(per_run), runs)


# --- pooled quantiles ------------------------------------------------------------------------


@pytest.mark.parametrize("trial", range(10))
def test_pooled_quantiles_equal_numpy_on_all_samples(trial):
    rng = np.random.default_rng(trial)
    n_runs = int(rng.integers(1, 7))
    per_run = [np.round(rng.exponential(10, int(rng.integers(1, 60))), 1) for _ in range(n_runs)]
    cell = _cell(per_run)
    pooled = np.concatenate(per_run)
    np.testing.assert_array_equal(
        pooled_quantiles(cell, QS), np.quantile(pooled, QS, method="inverted_cdf")
    )


def test_run_samples_groups_by_run_and_drops_nan():
    cell = RunSamples.from_arrays([3.0, 1.0, np.nan, 2.0, 9.0], [7, 7, 7, 2, 2])
    assert cell.runs.tolist() == [2, 7]
    assert [v.tolist() for v in cell.values] == [[2.0, 9.0], [1.0, 3.0]]
    assert cell.pooled.tolist() == [1.0, 2.0, 3.0, 9.0]
    assert cell.subset([7]).pooled.tolist() == [1.0, 3.0]
    np.testing.assert_array_equal(cell.run_quantiles([0.5]), [[2.0], [1.0]])


def _t_interval(x, confidence=0.95):
    """Independent: scipy's one-sample t interval of the mean."""
    res = stats.ttest_1samp(np.asarray(x, float), 0.0)
    ci = res.confidence_interval(confidence)
    return ci.low, ci.high


def test_run_quantile_interval_is_the_t_interval_of_the_runs_log_quantiles():
    rng = np.random.default_rng(3)
    per_run = [rng.gamma(2.0, 5.0, 2000) + 50 + 3 * r for r in range(6)]
    got = run_quantile_ci(_cell(per_run), [0.5, 0.99], 0.95).set_index("q")
    for q in (0.5, 0.99):
        logs = np.log([np.quantile(v, q, method="inverted_cdf") for v in per_run])
        lo, hi = _t_interval(logs)
        assert got.loc[q, "value"] == pytest.approx(np.exp(logs.mean()), rel=1e-12)
        assert got.loc[q, "lo"] == pytest.approx(np.exp(lo), rel=1e-12)
        assert got.loc[q, "hi"] == pytest.approx(np.exp(hi), rel=1e-12)
        pooled = np.quantile(np.concatenate(per_run), q, method="inverted_cdf")
        assert got.loc[q, "pooled"] == pooled
    assert got["n_runs"].tolist() == [6, 6] and got["n_samples"].tolist() == [12000, 12000]


def test_a_tail_percentile_needs_enough_samples_in_every_run():
    assert min_samples(0.5) == 1 and min_samples(0.9) == 100 and min_samples(0.99) == 1000
    assert min_samples(0.999) == 10000
    rng = np.random.default_rng(4)
    per_run = [rng.exponential(10.0, 2000) for _ in range(3)]
    got = run_quantile_ci(_cell(per_run), [0.99, 0.999]).set_index("q")
    assert np.isfinite(got.loc[0.99, "value"]) and pd.isna(got.loc[0.99, "reason"])
    assert np.isnan(got.loc[0.999, "value"]) and np.isnan(got.loc[0.999, "lo"])
    assert "p99.9 needs 10,000 samples per run" in got.loc[0.999, "reason"]
    assert "2,000" in got.loc[0.999, "reason"]
    shift = quantile_shift_ci(_cell(per_run), _cell(per_run), [0.999])
    assert np.isnan(shift["shift"].iloc[0]) and "p99.9" in shift["reason"].iloc[0]


def test_one_run_has_no_interval():
    got = run_quantile_ci(_cell([np.arange(1.0, 101.0)]), [0.5])
    assert got["value"].iloc[0] == pytest.approx(50.0) and np.isnan(got["lo"].iloc[0])


# --- shifts (overhead vs native) ---------------------------------------------------------------


def test_exact_shift_is_recovered_exactly():
    rng = np.random.default_rng(1)
    base = [rng.gamma(2.0, 4.0, 20000) + 50 for _ in range(6)]
    mode = [v + 8.0 for v in base]  # the same packets, 8 us later
    got = quantile_shift_ci(_cell(mode), _cell(base), [0.5, 0.99, 0.999])
    np.testing.assert_allclose(got["shift"], 8.0, atol=1e-9)
    np.testing.assert_allclose(got["lo"], 8.0, atol=1e-9)
    np.testing.assert_allclose(got["hi"], 8.0, atol=1e-9)
    assert (got["n_runs"] == 6).all()


def test_shift_is_the_paired_t_interval_of_the_per_run_differences():
    rng = np.random.default_rng(7)
    offsets = rng.normal(0, 20.0, 12)  # large run effects, shared by both cells of a run
    base = [rng.gamma(2.0, 4.0, 3000) + 50 + o for o in offsets]
    mode = [rng.gamma(2.0, 4.0, 3000) + 55 + o for o in offsets]  # d = 5 us
    got = quantile_shift_ci(_cell(mode), _cell(base), [0.5, 0.99])
    for q, r in zip((0.5, 0.99), got.itertuples(), strict=True):
        d = [np.quantile(m, q, method="inverted_cdf") - np.quantile(b, q, method="inverted_cdf")
             for m, b in zip(mode, base, strict=True)]  # fmt: skip
        lo, hi = _t_interval(d)
        assert (r.shift, r.lo, r.hi) == pytest.approx((np.mean(d), lo, hi), rel=1e-12)
        assert r.lo <= 5.0 <= r.hi
    # Paired: the +-20 us run effects cancel, so the p50 interval is far narrower than them.
    assert got["hi"].iloc[0] - got["lo"].iloc[0] < 1.5


def test_pairing_is_respected():
    rng = np.random.default_rng(9)
    offsets = np.array([0.0, 40.0, -30.0, 60.0, -50.0, 20.0, 10.0, -20.0])
    base = [rng.gamma(2.0, 4.0, 1000) + 50 + o for o in offsets]
    mode = [rng.gamma(2.0, 4.0, 1000) + 53 + o for o in offsets]
    a, b = _cell(mode), _cell(base)
    paired = quantile_shift_ci(a, b, [0.5])
    unpaired = quantile_shift_ci(a, b, [0.5], paired=False)
    paired_width = paired["hi"].iloc[0] - paired["lo"].iloc[0]
    unpaired_width = unpaired["hi"].iloc[0] - unpaired["lo"].iloc[0]
    assert paired_width < 0.1 * unpaired_width
    assert paired["lo"].iloc[0] <= 3.0 <= paired["hi"].iloc[0]


def test_shift_uses_only_runs_both_cells_measured():
    base = _cell([np.full(20, 100.0), np.full(20, 200.0), np.full(20, 300.0)], [1, 2, 3])
    mode = _cell([np.full(20, 110.0), np.full(20, 310.0)], [1, 3])  # run 2 failed
    got = quantile_shift_ci(mode, base, [0.5])
    assert got["n_runs"].iloc[0] == 2
    # Over runs 1 and 3: per-run differences 10 and 10, ratios 1.1 and 310/300.
    assert got["shift"].iloc[0] == pytest.approx(10.0)
    assert got["ratio"].iloc[0] == pytest.approx(np.sqrt(1.1 * 310 / 300))
    none = quantile_shift_ci(mode, _cell([np.ones(30)], [9]), [0.5])
    assert none["n_runs"].iloc[0] == 0 and np.isnan(none["shift"].iloc[0])


def test_unpaired_shift_uses_every_run_of_each_cell_with_welchs_interval():
    """Cells of separate campaigns (the WAN calibration's delays): run numbers pair nothing."""
    rng = np.random.default_rng(11)
    base = [rng.gamma(2.0, 4.0, 800) + 50 + o for o in (0.0, 30.0, -20.0, 10.0)]
    mode = [rng.gamma(2.0, 4.0, 800) + 90 + o for o in (5.0, -25.0, 15.0)]  # d = 40 us
    a, b = _cell(mode, [1, 2, 3]), _cell(base, [1, 2, 5, 6])  # runs 5, 6: base only
    got = quantile_shift_ci(a, b, [0.5], paired=False)
    assert got["n_runs"].iloc[0] == 3  # the smaller cell's
    qa = [np.quantile(v, 0.5, method="inverted_cdf") for v in mode]
    qb = [np.quantile(v, 0.5, method="inverted_cdf") for v in base]
    assert got["shift"].iloc[0] == pytest.approx(np.mean(qa) - np.mean(qb))  # all 7 runs
    ci = stats.ttest_ind(qa, qb, equal_var=False).confidence_interval(0.95)
    assert got["lo"].iloc[0] == pytest.approx(ci.low, rel=1e-9)
    assert got["hi"].iloc[0] == pytest.approx(ci.high, rel=1e-9)
    # the +-30 us run effects do not cancel unpaired: the interval is as wide as they are
    assert ci.high - ci.low > 10 and got["lo"].iloc[0] <= 40.0 <= got["hi"].iloc[0]


# --- variance decomposition --------------------------------------------------------------------

EFFECTS = {"native": 0.0, "a": 1.0, "b": 5.0, "c": 10.0, "d": 2.0}


def _simulated(n_runs: int, sd_run: float, sd_resid: float, seed: int, scale=1.0, shift=0.0):
    rng = np.random.default_rng(seed)
    run_effect = rng.normal(0.0, sd_run, n_runs)
    rows = [
        {"run": r + 1, "mode": m, "value": 100 + e + run_effect[r] + rng.normal(0, sd_resid)}
        for r in range(n_runs)
        for m, e in EFFECTS.items()
    ]
    frame = pd.DataFrame(rows)
    frame["value"] = frame["value"] * scale + shift
    return frame


def test_mixed_model_recovers_known_components():
    vc = variance_components(_simulated(60, 3.0, 1.0, seed=3), n_sim=100, seed=1)
    assert vc.status == "ok" and vc.converged
    assert (vc.n_runs, vc.n_modes, vc.n_obs) == (60, 5, 300)
    assert vc.sd_run == pytest.approx(3.0, abs=0.6)
    assert vc.sd_resid == pytest.approx(1.0, abs=0.12)
    assert vc.sd_within == pytest.approx(np.hypot(vc.sd_run, vc.sd_resid))
    assert vc.sd_run_lo <= 3.0 <= vc.sd_run_hi
    assert vc.sd_resid_lo <= 1.0 <= vc.sd_resid_hi
    effects = vc.effects.set_index("mode")
    for mode, truth in EFFECTS.items():
        assert effects.loc[mode, "effect"] == pytest.approx(truth, abs=0.4)
        assert effects.loc[mode, "lo"] <= truth <= effects.loc[mode, "hi"]
    assert vc.max_effect_mode == "c"
    assert vc.mode_range == pytest.approx(10.0, abs=0.4)
    assert vc.mode_range_lo <= 10.0 <= vc.mode_range_hi


def test_mixed_model_is_unit_free():
    # Internet-like magnitudes (x1000, +40 ms) must scale every component by exactly 1000.
    small = variance_components(_simulated(10, 3.0, 1.0, seed=5), n_sim=20, seed=1)
    big = variance_components(
        _simulated(10, 3.0, 1.0, seed=5, scale=1000.0, shift=40_000.0), n_sim=20, seed=1
    )
    for name in ("sd_run", "sd_resid", "sd_within", "mode_range", "max_effect"):
        assert getattr(big, name) == pytest.approx(1000 * getattr(small, name), rel=1e-3)


def test_mixed_model_handles_missing_cells():
    data = _simulated(12, 3.0, 1.0, seed=8)
    data = data.drop(index=data.index[[3, 17, 40]])  # three (run, mode) measurements lost
    vc = variance_components(data, n_sim=20, seed=1)
    assert vc.status == "ok" and vc.n_obs == 57


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda d: d[d["run"] <= 2], "2 run(s): at least 3 are needed"),
        (lambda d: d[d["mode"] != "native"], "no native baseline measured"),
        (lambda d: d[d["mode"] == "native"], "only one mode measured"),
        (
            lambda d: d[(d["mode"] == "native") | ((d["mode"] == "a") & (d["run"] == 1))],
            "fewer than 2 runs measured more than one mode",
        ),
    ],
)
def test_mixed_model_says_why_it_was_not_fitted(mutate, reason):
    vc = variance_components(mutate(_simulated(6, 3.0, 1.0, seed=2)), n_sim=10)
    assert vc.status == "not fitted"
    assert reason in vc.reason
    assert np.isnan(vc.sd_run) and vc.effects.empty


def test_mixed_model_rejects_unreduced_samples():
    data = _simulated(5, 3.0, 1.0, seed=2)
    with pytest.raises(ValueError, match="one value per"):
        variance_components(pd.concat([data, data]))
