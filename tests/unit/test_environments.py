"""The environment comparison (pipeline/analysis/environments.py) against known answers: a
second environment made from the committed fixture (tests/fixtures/make_second_environment.py)
with native at 0.90 of the reference and docker-bridge's per-run log ratio to native doubled,
and the A/A case, an environment against an exact copy of itself."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.analysis import environments, stats, tables
from tests.fixtures import make_second_environment as MAKER  # noqa: N812

MARGINS = {"network": 0.05, "cpu": 0.02, "memory": 0.02, "disk": 0.02}


@pytest.fixture(scope="module")
def scaled(tmp_path_factory) -> pd.DataFrame:
    raw = MAKER.write_pair(tmp_path_factory.mktemp("pair") / "raw")
    values = environments.per_run_values(raw)
    return environments.compare(values, ["lab", "lab-vm"], MARGINS)


@pytest.fixture(scope="module")
def same(tmp_path_factory) -> pd.DataFrame:
    raw = MAKER.write_pair(tmp_path_factory.mktemp("aa") / "raw", name="lab-copy",
                           native_factor=1.0, double=False)  # fmt: skip
    values = environments.per_run_values(raw)
    return environments.compare(values, ["lab", "lab-copy"], MARGINS)


def test_every_covered_benchmark_is_compared(scaled):
    assert set(scaled["benchmark"]) == {"throughput", "latency", "http", "cpu", "memory"}
    assert set(scaled["path"]) == {"dc", "local", "host"}  # the Internet path is left out
    assert set(scaled["comparison"]) == {"native", "overhead"}
    assert (scaled["reference"] == "lab").all() and (scaled["environment"] == "lab-vm").all()
    assert scaled["multiplicity"].iloc[0] == f"holm across {len(scaled)} comparisons"


def test_native_ratio_is_the_scale_put_in(scaled):
    native = scaled[scaled["comparison"] == "native"]
    assert len(native) == 13
    np.testing.assert_allclose(native["ratio"], MAKER.NATIVE_FACTOR, rtol=1e-9)
    assert ((native["lo"] < 0.9) & (native["hi"] > 0.9)).all()
    # 10% less is "slower" for a rate and "faster" for a time, never equivalent at 2-5%
    expected = np.where(native["higher_is_better"], "overhead", "faster")
    assert list(native["verdict"]) == list(expected)
    cells = [environments.verdict_cell(r) for r in native.itertuples()]
    assert set(cells) == {"slower", "faster"}


def test_doubled_overhead_is_recovered(scaled):
    bridge = scaled[(scaled["comparison"] == "overhead") & (scaled["mode"] == "docker-bridge")]
    assert len(bridge) == 9
    # per-run log ratios doubled: the environment's ratio to native is the reference's squared,
    # and their ratio is the reference's ratio
    np.testing.assert_allclose(bridge["environment_ratio"], bridge["reference_ratio"] ** 2,
                               rtol=1e-9)  # fmt: skip
    np.testing.assert_allclose(bridge["ratio"], bridge["reference_ratio"], rtol=1e-9)
    tcp = bridge.set_index(["benchmark", "path", "variant"]).loc[("throughput", "dc", "tcp")]
    assert tcp["reference_ratio"] == pytest.approx(0.8723, abs=1e-4)  # 8.20 / 9.41 by runs
    assert tcp["environment_ratio"] == pytest.approx(0.8723**2, abs=2e-4)
    cpu = bridge[bridge["benchmark"] == "cpu"]
    # make_fixture.py: docker-bridge's rates at 0.97 of native, its compile time at 1.03
    expected = np.where(cpu["higher_is_better"], 0.97, 1.03)
    np.testing.assert_allclose(cpu["reference_ratio"], expected, atol=1e-5)
    np.testing.assert_allclose(cpu["environment_ratio"], expected**2, atol=2e-5)
    assert (bridge["verdict"] == "overhead").all()  # "more overhead", every one
    assert {environments.verdict_cell(r) for r in bridge.itertuples()} == {"more overhead"}


def test_unchanged_overheads_are_exactly_one_and_never_different(scaled):
    rest = scaled[(scaled["comparison"] == "overhead") & (scaled["mode"] != "docker-bridge")]
    np.testing.assert_allclose(rest["ratio"], 1.0, atol=1e-12)
    assert set(rest["verdict"]) <= {"equivalent", "inconclusive"}
    # memory's podman is noisy in the fixture (4 runs): inconclusive, the rest equivalent
    noisy = rest[rest["verdict"] == "inconclusive"]
    assert set(zip(noisy["benchmark"], noisy["mode"], strict=True)) == {("memory", "podman")}
    text = [environments.verdict_cell(r) for r in noisy.itertuples()]
    # memory bandwidth: higher is better, so the smallest resolvable effect is a drop
    assert all(t.startswith("inconclusive (a drop under ") and t.endswith("with 4 runs)")
               for t in text)  # fmt: skip


def test_a_copy_of_itself_is_never_different(same):
    np.testing.assert_allclose(same["ratio"], 1.0, atol=1e-12)
    assert set(same["verdict"]) <= {"equivalent", "inconclusive"}
    assert (same["verdict"] == "equivalent").sum() >= 40
    np.testing.assert_allclose(same["diff_p"], 1.0)


def test_welch_matches_scipy_on_the_log_scale():
    from scipy import stats as st

    rng = np.random.default_rng(1)
    a, b = rng.normal(0.1, 0.05, 6), rng.normal(0.0, 0.02, 4)
    t = stats.welch_tost(a, b, 0.05)
    ref = st.ttest_ind(a, b, equal_var=False)
    assert t.diff_p == pytest.approx(ref.pvalue, rel=1e-9)
    lo, hi = ref.confidence_interval(0.95)
    assert (t.ci_lo, t.ci_hi) == pytest.approx((np.exp(lo), np.exp(hi)), rel=1e-9)
    assert t.ratio == pytest.approx(np.exp(a.mean() - b.mean()))
    # TOST: the larger of the two one-sided p-values against log(1 -+ margin)
    up = st.ttest_ind(a - np.log1p(0.05), b, equal_var=False, alternative="less").pvalue
    down = st.ttest_ind(a - np.log1p(-0.05), b, equal_var=False, alternative="greater").pvalue
    assert t.p_value == pytest.approx(max(up, down), rel=1e-9)
    assert t.n_runs == 4 and t.resolvable > 0


def test_welch_needs_three_runs_in_each_for_a_verdict():
    eq = stats.welch_equivalence(np.log([1.0, 1.01]), np.log([1.0, 1.0, 1.01]), 0.05)
    assert eq.verdict == "inconclusive" and "TOST needs at least 3" in eq.tost.reason
    assert np.isfinite(eq.lo)


def test_one_environment_is_refused():
    with pytest.raises(ValueError, match="two or more"):
        environments.compare(pd.DataFrame(columns=environments.VALUE_COLUMNS), ["lab"], MARGINS)


def test_article_table_and_caption(scaled):
    table = environments.article_table(scaled)
    assert len(table) == len(scaled)
    row = table[(table["Benchmark"] == "throughput") & (table["Mode"] == "native")
                & (table["Path"] == "dc")].iloc[0]  # fmt: skip
    assert row["Ratio [95% CI]"].startswith("0.900 [") and row["Verdict"] == "slower"
    assert row["Runs"] == "5 / 5" and row["Margin"] == tables.margin_text(0.05)
    text = environments.caption(scaled)
    assert "Welch" in text and "Holm" in text and "throughput ±5%" in text
