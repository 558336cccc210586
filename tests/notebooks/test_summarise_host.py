"""Run notebooks/analysis/26-summarise-host.ipynb with papermill on the committed cpu fixture and
check its outputs against numbers computed here from the fixture files; then that
runs of both reproduce the checked cells of the executed copies for cpu and memory
(26-summarise-host-<benchmark>.fixture.ipynb)."""

from __future__ import annotations

import json

import notebook_checks as nc
import numpy as np
import pandas as pd
import pytest

from pipeline.data import schema

NOTEBOOK = nc.ANALYSIS / "26-summarise-host.ipynb"
CONFIDENCE, MARGIN = 0.95, 0.02
SKIP_REASON = (
    "skipped: rootless Docker is not available on node1 (dockerd-rootless.sh: no user "
    "session for 'co-rootless')"
)

executed = nc.executed_fixture(
    "host_cpu", benchmark="cpu", confidence=CONFIDENCE, margin=MARGIN, multiplicity="holm"
)
executed_memory = nc.executed_fixture("host_memory", "executed_memory", benchmark="memory")


@pytest.fixture(scope="module")
def summary(executed) -> pd.DataFrame:
    frame = pd.read_parquet(executed["processed"] / "cpu_summary.parquet")
    return frame.set_index(["variant", "mode"])


@pytest.fixture(scope="module")
def expected_per_run() -> pd.DataFrame:
    """Per-run medians of the measured seconds, from the fixture files by hand."""
    lab = nc.FIXTURE / "cpu" / "lab"
    samples = schema.read_samples(lab / "samples.parquet")
    runs = schema.read_table(lab / "runs.parquet", "runs").to_pandas()
    ok = runs.loc[runs["status"] == "ok", ["mode", "variant", "run"]]
    measured = samples[~samples["warmup"]].merge(ok, on=["mode", "variant", "run"])
    return measured.groupby(["variant", "mode", "run"])["value"].median().reset_index()


def test_medians_and_ratios_match_the_fixture(summary, expected_per_run):
    for variant in ("1thread", "allthreads", "compile"):
        native = expected_per_run.query("variant == @variant and mode == 'native'")
        for mode in ("native", "docker-bridge", "podman", "rootless-podman"):
            mine = expected_per_run.query("variant == @variant and mode == @mode")
            row = summary.loc[(variant, mode)]
            assert row["median"] == pytest.approx(np.median(mine["value"]), abs=1e-9)
            assert row["n_runs"] == len(mine)
            pair = mine.merge(native, on="run", suffixes=("", "_native"))
            # the geometric mean of the per-run ratios over the runs both measured
            ratio = np.exp(np.mean(np.log(pair["value"] / pair["value_native"])))
            assert row["ratio"] == pytest.approx(ratio, rel=1e-12)
    # The fixture's docker-bridge runs at 0.97 of native: the interval covers it.
    bridge = summary.loc[("1thread", "docker-bridge")]
    assert bridge["ratio_lo"] <= 0.97 <= bridge["ratio_hi"]
    assert bridge["verdict"] == "overhead"
    assert summary.loc[("1thread", "rootless-podman"), "verdict"] == "equivalent"
    # The build takes 3% longer in docker-bridge: a time, so the ratio above 1 is the overhead.
    build = summary.loc[("compile", "docker-bridge")]
    assert build["ratio_lo"] <= 1.03 <= build["ratio_hi"] and build["verdict"] == "overhead"


def test_skipped_mode_is_reported_not_dropped(executed, summary):
    row = summary.loc[("1thread", "rootless-docker")]
    assert row["status"] == "skipped" and row["reason"] == SKIP_REASON
    table = pd.read_csv(executed["tables"] / "cpu.csv", keep_default_na=False)
    skipped = table[table["Mode"] == "Rootless Docker"]
    assert list(skipped["Median [95% CI]"]) == ["n/a"] * 3
    assert list(skipped["Note"]) == [SKIP_REASON] * 3
    md = (executed["tables"] / "cpu.md").read_text()
    assert (
        f"| 1 thread (events/s) | Rootless Docker | n/a | n/a | n/a | n/a | n/a | 0 of 6 | "
        f"{SKIP_REASON} |" in md
    )
    caption = (executed["figures"] / "cpu.caption.md").read_text()
    assert f"Not measured: Rootless Docker ({SKIP_REASON})." in caption


def test_table_figure_and_per_run_files(executed):
    tabs, figs = executed["tables"], executed["figures"]
    assert (tabs / "cpu.md").read_text().startswith("Table: CPU: sysbench cpu (primes up to")
    assert r"Verdict (±2\%)" in (tabs / "cpu.tex").read_text()
    table = pd.read_csv(tabs / "cpu.csv", keep_default_na=False)
    podman = table[(table["Mode"] == "Podman (rootful)") & (table["Test"] == "1 thread (events/s)")]
    assert podman.iloc[0]["Verdict (±2%)"] == "equivalent (small overhead)"
    assert podman.iloc[0]["Runs"] == "5 of 6"
    svg = (figs / "cpu.svg").read_text()
    assert svg.startswith("<svg") and "Rootless Podman" in svg
    png = (figs / "cpu.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    spec = json.loads((figs / "cpu.vl.json").read_text())
    assert len(spec["vconcat"]) == 3  # one row of panels per variant
    per_run = pd.read_parquet(executed["processed"] / "cpu_per_run.parquet")
    assert len(per_run) == 3 * (3 * 6 + 5)  # 3 variants x (3 modes x 6 runs + podman's 5)


def test_source_notebook_is_clean_and_thin():
    nc.assert_source_clean_and_thin(
        NOTEBOOK,
        {*nc.DIR_PARAMETERS, "benchmark", "confidence", "margin", "multiplicity", "headline"},
    )


# --- the executed copies ------------------------------------------------------------------

COPIES = {b: nc.HERE / f"26-summarise-host-{b}.fixture.ipynb" for b in ("cpu", "memory")}


@pytest.mark.parametrize("benchmark", list(COPIES))
def test_executed_copy_matches_source(benchmark):
    nc.assert_copy_matches_source(NOTEBOOK, COPIES[benchmark], f"host_{benchmark}")


def test_executed_copies_have_checked_headline_outputs():
    cpu = nc.headline_text(COPIES["cpu"], n_cells=2)
    assert "lab 1thread cpu_events_per_s native: ok, 6 runs, median 1000.50 [996.00, 1004.00]" in (
        cpu
    )
    assert "lab 1thread cpu_events_per_s docker-bridge: ok, 6 runs," in cpu
    assert "ratio 0.9700 [0.9685, 0.9715], verdict overhead (90% [" in cpu
    assert "| 1 thread (events/s) | Podman (rootful) | 990.0 [985.0, 995.0] |" in cpu
    memory = nc.headline_text(COPIES["memory"], n_cells=2)
    assert "lab write memory_bandwidth podman: ok, 4 runs," in memory
    assert "verdict inconclusive (90% [" in memory
    assert "| write (MiB/s) | Native | 10000 [9950, 10060] | 100 (baseline) |" in memory


def test_a_fresh_run_reproduces_the_copys_checked_cells(executed, executed_memory):
    nc.assert_reproduces_copy(executed)
    nc.assert_reproduces_copy(executed_memory)
