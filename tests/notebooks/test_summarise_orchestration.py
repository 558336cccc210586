"""Run notebooks/analysis/30-summarise-orchestration.ipynb with papermill on the committed
orchestration fixture (tests/fixtures/make_fixture_scaling.py) and check its outputs against the
per-run times the fixture was built from; then that this run reproduces the checked cells of the executed copy
(30-summarise-orchestration.fixture.ipynb)."""

from __future__ import annotations

import sys

import notebook_checks as nc
import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(nc.ROOT / "tests" / "fixtures"))
import make_fixture_scaling as fx  # noqa: E402

NOTEBOOK = nc.ANALYSIS / "30-summarise-orchestration.ipynb"
COPY = nc.HERE / "30-summarise-orchestration.fixture.ipynb"

executed = nc.executed_fixture("orchestration", confidence=0.95)


@pytest.fixture(scope="module")
def summary(executed) -> pd.DataFrame:
    frame = pd.read_parquet(executed["processed"] / "orchestration_summary.parquet")
    return frame.set_index("variant")


@pytest.mark.parametrize("variant", fx.ORCH_VARIANTS)
def test_medians_over_runs_are_the_constructed_ones(summary, variant):
    per_run = [v for v in fx.ORCH_RUN_S[variant] if v is not None]
    row = summary.loc[variant]
    assert row["median_s"] == pytest.approx(np.median(per_run), abs=1e-9)
    # too few runs for 95%: the interval is the runs' range, and the coverage says so
    assert row["median_lo_s"] == pytest.approx(min(per_run), abs=1e-9)
    assert row["median_hi_s"] == pytest.approx(max(per_run), abs=1e-9)
    assert not row["median_ci_reached"] and row["median_coverage"] < 0.95
    assert row["n_runs"] == len(per_run) and row["repeats"] == fx.ORCH_REPEATS


def test_capped_scale_and_failed_run(executed, summary):
    capped = summary.loc["scale-50"]
    assert capped["capped"] and capped["replicas"] == "20" and capped["max_replicas"] == "20"
    assert not summary.loc["scale-10", "capped"]
    assert summary.loc["update-10", "reason"].endswith(fx.ORCH_FAILED_REASON)
    table = pd.read_csv(executed["tables"] / "orchestration.csv", keep_default_na=False)
    rows = table.set_index("Operation")
    assert rows.loc["Scale 1 to 50 replicas", "Replicas reached"] == (
        "20 (capped at 20; the article: 50)"
    )
    assert rows.loc["Scale 1 to 50 replicas", "Median s [95% CI]"] == "4.40 [4.00, 4.80]"
    assert rows.loc["Rolling update (10 replicas)", "Runs x repetitions"] == "2 x 2"
    assert fx.ORCH_FAILED_REASON in rows.loc["Rolling update (10 replicas)", "Note"]
    caption = (executed["figures"] / "orchestration.caption.md").read_text()
    assert "Capped by the profile: Scale 1 to 50 replicas at 20 replicas." in caption
    assert (executed["figures"] / "orchestration.svg").read_text().startswith("<svg")


def test_source_notebook_is_clean_and_thin():
    nc.assert_source_clean_and_thin(NOTEBOOK, {*nc.DIR_PARAMETERS, "confidence"})


def test_executed_copy_matches_source():
    nc.assert_copy_matches_source(NOTEBOOK, COPY, "orchestration")


def test_executed_copy_has_checked_headline_outputs():
    text = nc.headline_text(COPY, n_cells=2)
    assert "lab swarm-overlay scale-10: ok, replicas 10, 3 runs x 2, median 2.800 s" in text
    assert "replicas 20 (capped at 20; the article: 50), 3 runs x 2, median 4.400 s" in text
    assert "| Rolling update (10 replicas) | 10 | 18.5 [18.0, 19.0] | 2 x 2 |" in text


def test_a_fresh_run_reproduces_the_copys_checked_cells(executed):
    nc.assert_reproduces_copy(executed)
