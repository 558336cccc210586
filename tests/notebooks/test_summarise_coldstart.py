"""Run notebooks/analysis/27-summarise-coldstart.ipynb with papermill on the committed cold-start
fixture (tests/fixtures/make_fixture_coldstart_lb.py) and check its outputs against the answers
the fixture was built around; then that this run reproduces the checked cells of the executed copy
(27-summarise-coldstart.fixture.ipynb)."""

from __future__ import annotations

import json

import notebook_checks as nc
import numpy as np
import pandas as pd
import pytest

NOTEBOOK = nc.ANALYSIS / "27-summarise-coldstart.ipynb"
COPY = nc.HERE / "27-summarise-coldstart.fixture.ipynb"
SKIP_REASON = (
    "skipped: rootless Podman is not available on node1 (podman info as co-bench: "
    "cannot set up namespace using newuidmap)"
)

executed = nc.executed_fixture("coldstart", confidence=0.95, multiplicity="holm")


@pytest.fixture(scope="module")
def summary(executed) -> pd.DataFrame:
    return pd.read_parquet(executed["processed"] / "coldstart_summary.parquet").set_index("mode")


def test_headline_numbers_match_the_construction(summary):
    # docker-bridge: 140 ms x run factor x 0.90..1.09, 20 starts a run; each run's p50 is its
    # 10th start, and the cell's p50 the geometric mean of those
    shape = 0.90 + 0.01 * np.arange(20)
    factors = np.array([1.00, 1.02, 0.98, 1.01, 0.99, 1.00])
    per_run = 140.0 * factors * np.quantile(shape, 0.5, method="inverted_cdf") / 1000
    row = summary.loc["docker-bridge"]
    assert row["p50_s"] == pytest.approx(np.exp(np.log(per_run).mean()), rel=1e-9)
    assert row["p50_lo_s"] < row["p50_s"] < row["p50_hi_s"]
    # p95 and p99 need 200 and 1,000 starts per run, the fixture has 20: not reported
    assert np.isnan(row["p95_s"]) and np.isnan(row["p99_s"])
    rootless = summary.loc["rootless-docker"]
    assert rootless["rootful_mode"] == "docker-bridge"
    assert rootless["rootful_plus_pct_p50"] == pytest.approx(20.0, abs=0.7)
    assert summary.loc["podman", "n_runs"] == 5  # run 4 failed


def test_skipped_mode_is_reported_not_dropped(executed, summary):
    assert summary.loc["rootless-podman", "status"] == "skipped"
    table = pd.read_csv(executed["tables"] / "coldstart.csv", keep_default_na=False)
    row = table.set_index("Mode").loc["Rootless Podman"]
    assert row["p50 ms [95% CI]"] == "n/a" and row["Note"] == SKIP_REASON
    caption = (executed["figures"] / "coldstart.caption.md").read_text()
    assert f"Not measured: Rootless Podman ({SKIP_REASON})." in caption


def test_each_verdict_stands_beside_the_estimate_it_tests(executed, summary):
    """The verdict tests the ratio to native: its cell is the ratio and its interval; the
    difference in ms has a column of its own, without a verdict."""
    table = pd.read_csv(executed["tables"] / "coldstart.csv", keep_default_na=False)
    table = table.set_index("Mode")
    compared = summary[(summary.index != "native") & summary["ratio_p50"].notna()]
    assert len(compared) >= 3
    said = {"overhead": "slower", "faster": "faster", "inconclusive": "inconclusive"}
    for r in compared.itertuples():
        cell = table.loc[r.configuration, "Ratio to native p50 [95% CI], verdict"]
        interval = f"{r.ratio_p50:.2f} [{r.ratio_p50_lo:.2f}, {r.ratio_p50_hi:.2f}]"
        assert cell == f"{interval}, {said[r.verdict_p50]}"
        # slower: the ratio's interval lies wholly above 1
        assert (r.verdict_p50 != "overhead") or r.ratio_p50_lo > 1
        ms = table.loc[r.configuration, "Overhead vs native p50 ms [95% CI]"]
        lo, point, hi = (1000 * v for v in (r.d_p50_lo_s, r.d_p50_s, r.d_p50_hi_s))
        assert ms == f"{point:+.1f} [{lo:+.1f}, {hi:+.1f}]"


def test_table_figure_and_long_files(executed):
    tabs, figs, proc = executed["tables"], executed["figures"], executed["processed"]
    assert (tabs / "coldstart.md").read_text().startswith("Table: Cold start: time from")
    assert r"Rootless vs rootful p50 +\%" in (tabs / "coldstart.tex").read_text()
    assert (figs / "coldstart.svg").read_text().startswith("<svg")
    assert (figs / "coldstart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((figs / "coldstart.vl.json").read_text())["layer"]
    shifts = pd.read_parquet(proc / "coldstart_overheads.parquet")
    # 3 engines against native, rootless-docker against docker-bridge, 3 levels each
    assert len(shifts) == (3 + 1) * 3
    per_run = pd.read_parquet(proc / "coldstart_per_run.parquet")
    assert len(per_run) == (6 + 6 + 5 + 6) * 3


def test_source_notebook_is_clean_and_thin():
    nc.assert_source_clean_and_thin(
        NOTEBOOK, {*nc.DIR_PARAMETERS, "confidence", "multiplicity", "headline"}
    )


def test_executed_copy_matches_source():
    nc.assert_copy_matches_source(NOTEBOOK, COPY, "coldstart")


def test_executed_copy_has_checked_headline_outputs():
    text = nc.headline_text(COPY, n_cells=2)
    assert "lab docker-bridge: ok, 6 runs, 120 starts, p50 138.6 [" in text
    assert "p50 +20.0 [" in text and "% vs docker-bridge (slower)" in text  # the constructed 20%
    assert "native (slower)" in text  # every engine starts slower than a process, verdict said
    assert f"lab rootless-podman: skipped, n/a ({SKIP_REASON})" in text
    assert "| Rootless Podman | n/a | n/a | n/a |" in text


def test_a_fresh_run_reproduces_the_copys_checked_cells(executed):
    nc.assert_reproduces_copy(executed)
