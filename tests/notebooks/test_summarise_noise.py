"""Run notebooks/analysis/32-summarise-noise.ipynb with papermill on the committed raw fixture
and check the noise table against the fixture's construction; then that
this run reproduces the checked cells of the executed copy (32-summarise-noise.fixture.ipynb)."""

from __future__ import annotations

import notebook_checks as nc
import pandas as pd

NOTEBOOK = nc.ANALYSIS / "32-summarise-noise.ipynb"
COPY = nc.HERE / "32-summarise-noise.fixture.ipynb"

executed = nc.executed_fixture("noise", confidence=0.95, n_sim=20)


def test_every_benchmark_with_native_is_decomposed(executed):
    summary = pd.read_parquet(executed["processed"] / "noise_summary.parquet")
    assert set(summary["benchmark"]) == {"throughput", "latency", "http", "cpu", "memory",
                                         "coldstart"}  # fmt: skip
    assert (summary["status"] == "ok").all(), summary[["benchmark", "reason"]]
    # the fixture's cold starts vary far more from run to run than its CPU rates
    cv = summary.groupby("benchmark")["cv_sd_within_pct"].max()
    assert cv["coldstart"] > 5 * cv["cpu"]
    table = pd.read_csv(executed["tables"] / "noise.csv", keep_default_na=False)
    assert len(table) == len(summary) and (table["Note"] == "").all()


def test_the_interference_watch_flags_the_planted_hog(executed):
    """The fixture's throughput windows were watched; one had a 1-CPU hog beside it
    (tests/fixtures/make_fixture.py WATCH_HOG): that window and no other is flagged, in the
    study's campaign and in the instrument check's copy of its rows (the same campaign id, a
    collection of its own: each counted apart)."""
    flags = pd.read_parquet(executed["processed"] / "interference_windows.parquet")
    flagged = flags.loc[flags["flagged"]]
    assert sorted(flagged["benchmark"]) == ["throughput", "throughput (instrument check)"]
    for _, window in flagged.iterrows():
        assert tuple(window[["run", "mode", "path", "variant", "host"]]) == (
            2, "docker-bridge", "dc", "tcp", "node1")
        assert window["why"] == "other processes > 0.25 CPUs"
    table = pd.read_csv(executed["tables"] / "interference.csv", keep_default_na=False)
    study, check = table.itertuples()
    assert (study.Benchmark, study.Windows, study.Flagged) == ("throughput", 74, "1 (1%)")
    assert (check.Benchmark, check.Windows, check.Flagged) == (
        "throughput (instrument check)", 104, "1 (1%)")
    assert study._8 == check._8 == "stress-ng"  # what ran beside the flagged window
    assert (executed["figures"] / "interference.svg").exists()


def test_source_notebook_is_clean_and_thin():
    names = {"raw_dir", "processed_dir", "tables_dir", "figures_dir", "confidence", "n_sim",
             "seed", "interference_cpus", "interference_steal", "interference_probe"}
    nc.assert_source_clean_and_thin(NOTEBOOK, names)


def test_executed_copy_matches_source():
    nc.assert_copy_matches_source(NOTEBOOK, COPY, "noise")


def test_executed_copy_has_checked_headline_outputs():
    text = nc.headline_text(COPY, n_cells=2)
    assert "Run-to-run SD, % of native [95% CI]" in text and "coldstart" in text
    assert "stress-ng" in text


def test_a_fresh_run_reproduces_the_copys_checked_cells(executed):
    nc.assert_reproduces_copy(executed)
