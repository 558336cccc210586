"""Run notebooks/analysis/28-summarise-footprint.ipynb with papermill on the committed footprint
and density fixture (tests/fixtures/make_fixture_scaling.py) and check its outputs against the
lines the fixture was built from; then that this run reproduces the checked cells of the executed copy
(28-summarise-footprint.fixture.ipynb)."""

from __future__ import annotations

import json
import sys

import notebook_checks as nc
import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(nc.ROOT / "tests" / "fixtures"))
import make_fixture_scaling as fx  # noqa: E402

NOTEBOOK = nc.ANALYSIS / "28-summarise-footprint.ipynb"
COPY = nc.HERE / "28-summarise-footprint.fixture.ipynb"
MIB = 1024.0

executed = nc.executed_fixture("footprint", confidence=0.95, predict_at=100)


@pytest.fixture(scope="module")
def costs(executed) -> pd.DataFrame:
    return pd.read_parquet(executed["processed"] / "footprint_summary.parquet").set_index("mode")


@pytest.fixture(scope="module")
def density(executed) -> pd.DataFrame:
    return pd.read_parquet(executed["processed"] / "density_summary.parquet").set_index("mode")


def _known(mode: str, measure: str = "pss") -> tuple[float, float]:
    """(idle KiB, KiB per container) of the fixture's construction."""
    table = fx.FP_PSS if measure == "pss" else fx.FP_RSS
    idle = sum(i for i, _ in table[mode].values()) * MIB
    per = sum(p for _, p in table[mode].values()) * MIB
    return idle, per


@pytest.mark.parametrize("mode", ["docker-bridge", "rootless-docker", "podman"])
def test_lines_are_the_constructed_ones_and_intervals_cover_them(costs, mode):
    row = costs.loc[mode]
    for measure in ("pss", "rss"):
        idle, per = _known(mode, measure)
        assert row[f"{measure}_per_container_kib"] == pytest.approx(per, abs=1e-6)
        assert row[f"{measure}_idle_kib"] == pytest.approx(idle, abs=1e-6)
        lo, hi = row[f"{measure}_per_container_lo_kib"], row[f"{measure}_per_container_hi_kib"]
        assert lo < per < hi and hi - lo < 0.1 * per  # the runs' tilts give it its width
        assert row[f"{measure}_at_kib"] == pytest.approx(idle + 100 * per, abs=1e-6)
    assert row["n_runs"] == (3 if mode == "podman" else 4)  # podman's run 3 failed
    assert "warm" not in str(row["reason"])


def test_ratio_to_rootful_docker(costs):
    assert costs.loc["rootless-docker", "ratio"] == pytest.approx(5.0 / 3.2, rel=1e-5)  # per-run slopes: jitter
    assert costs.loc["podman", "ratio"] == pytest.approx(1.8 / 3.2, rel=1e-4)
    r = costs.loc["rootless-docker"]
    assert r["ratio_lo"] < 5.0 / 3.2 < r["ratio_hi"] and r["ratio_n_runs"] == 4
    assert costs.loc["podman", "ratio_n_runs"] == 3


def test_skipped_engine_and_failed_run_are_reported(executed, costs, density):
    assert costs.loc["rootless-podman", "status"] == "skipped"
    assert costs.loc["rootless-podman", "reason"] == fx.ROOTLESS_PODMAN_REASON
    assert fx.FP_FAILED_REASON in costs.loc["podman", "reason"]
    table = pd.read_csv(executed["tables"] / "footprint.csv", keep_default_na=False)
    row = table.set_index("Engine").loc["Rootless Podman"]
    assert row["Per container PSS MiB [95% CI]"] == "n/a"
    assert row["Note"] == fx.ROOTLESS_PODMAN_REASON and row["Runs"] == "0 of 4"
    assert table.set_index("Engine").loc["Podman (rootful)", "Runs"] == "3 of 4"
    caption = (executed["figures"] / "footprint.caption.md").read_text()
    assert f"Not measured: Rootless Podman ({fx.ROOTLESS_PODMAN_REASON})." in caption
    assert density.loc["rootless-podman", "status"] == "skipped"


def test_article_tables(executed):
    md = (executed["tables"] / "footprint.md").read_text()
    assert "| Docker bridge | 90.0 [" in md and "| 3.20 [" in md and "| 410.0 [" in md
    assert "| 1 (reference) |" in md and "| 1.56 [" in md
    procs = pd.read_csv(executed["tables"] / "footprint_processes.csv", keep_default_na=False)
    shim = procs[(procs["Engine"] == "Docker bridge") & procs["Process"].str.startswith("contain")]
    assert list(shim["Process"]) == ["containerd", "containerd-shim (all)"]
    dockerd = procs[(procs["Engine"] == "Docker bridge") & (procs["Process"] == "dockerd")].iloc[0]
    # dockerd's RSS: 64 MiB idle + 0.5 MiB per container, median over the runs' offsets
    assert dockerd["RSS idle MiB [95% CI]"].startswith("64.0 [")
    assert dockerd["RSS loaded MiB [95% CI]"].startswith("74.0 [")
    assert dockerd["Containers"] == "20"
    assert (executed["tables"] / "footprint.tex").read_text().count(r"\%") >= 5


def test_density_reached_caps_and_memory(executed, density):
    bridge, rootless = density.loc["docker-bridge"], density.loc["rootless-docker"]
    assert bridge["capped"] and bridge["cap"] == fx.DENSITY_CAP
    assert bridge["reached_median"] == 50 and bridge["mem_per_container_mib"] == 6.0
    assert not rootless["capped"] and rootless["reached_min"] == 40
    assert rootless["mem_per_container_mib"] == 9.0
    assert rootless["engine_pss_per_container_mib"] == pytest.approx(5.0)
    # A cap in every run says nothing about a limit: no ratio, and the reason says why.
    assert np.isnan(rootless["ratio"]) and "stopped at the cap" in rootless["reason"]
    assert density.loc["podman", "n_runs"] == 2  # run 2 failed
    table = pd.read_csv(executed["tables"] / "density.csv", keep_default_na=False)
    row = table.set_index("Engine").loc["Rootless Docker"]
    assert row["Containers reached [95% CI]"] == "50 [40, 50]"


def test_figures_and_processed_files(executed):
    figs, proc = executed["figures"], executed["processed"]
    for stem in ("footprint", "density"):
        assert (figs / f"{stem}.svg").read_text().startswith("<svg")
        assert (figs / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        json.loads((figs / f"{stem}.vl.json").read_text())
    fit = pd.read_parquet(proc / "footprint_fit.parquet")
    at20 = fit[(fit["mode"] == "docker-bridge") & (fit["count"] == 20)].iloc[0]
    assert at20["fit_mib"] == pytest.approx(90 + 20 * 3.2) and at20["lo_mib"] < at20["fit_mib"]
    assert set(fit["mode"]) == {"docker-bridge", "rootless-docker", "podman"}


def test_source_notebook_is_clean_and_thin():
    nc.assert_source_clean_and_thin(
        NOTEBOOK, {*nc.DIR_PARAMETERS, "confidence", "predict_at"}
    )


def test_executed_copy_matches_source():
    nc.assert_copy_matches_source(NOTEBOOK, COPY, "footprint")


def test_executed_copy_has_checked_headline_outputs():
    text = nc.headline_text(COPY, n_cells=2)
    assert (
        "footprint lab docker-bridge: ok, 4 runs, PSS idle 92160.0 KiB [91476.6, 92843.4], per "
        "container 3276.8 KiB [3253.7, 3299.9], at 100 419840.0 KiB" in text
    )
    assert "footprint lab rootless-docker: ok, 4 runs," in text and "1.5625 [" in text
    assert "footprint lab rootless-podman: skipped, n/a (skipped: rootless Podman" in text
    assert "density lab rootless-docker: ok, 3 runs, reached 50 [40, 50] of cap 50" in text
    assert "| Rootless Podman | n/a | n/a | n/a | n/a | n/a | n/a | 0 of 4 |" in text


def test_a_fresh_run_reproduces_the_copys_checked_cells(executed):
    nc.assert_reproduces_copy(executed)


def test_smoke_sized_data_gives_na_with_reasons_not_errors(tmp_path):
    """One run with two readings (a smoke campaign cut short), density never collected: every
    output is still written; what cannot be estimated is n/a with the reason."""
    from pipeline.analysis import figures, tables
    from pipeline.analysis import footprint as fa
    from pipeline.data.schema import RUNS, SAMPLES, to_table, write_table

    s, r = fa.load(nc.FIXTURE, "footprint")
    s, r = s[(s["run"] == 1) & (s["sample"] <= 5)], r[r["run"] == 1]
    for name, frame, schema in (("samples", s, SAMPLES), ("runs", r, RUNS)):
        write_table(to_table(frame, schema), tmp_path / "footprint" / "lab" / f"{name}.parquet")
    s, r = fa.load(tmp_path, "footprint")
    costs = fa.cost_summary(s, r)
    bridge = costs.set_index("mode").loc["docker-bridge"]
    assert bridge["status"] == "ok" and np.isnan(bridge["pss_per_container_kib"])
    assert "a line needs 3 readings" in bridge["reason"] and np.isnan(bridge["ratio"])
    ds, dr = fa.load(tmp_path, "density")
    assert ds.empty and dr.empty
    dsum = fa.density_table_summary(ds, dr)
    table = fa.cost_table(costs)
    assert table.set_index("Engine").loc["Docker bridge", "Per container PSS MiB [95% CI]"] is None
    tables.write(table, tmp_path / "t", "footprint", fa.cost_caption(costs))
    tables.write(fa.density_table(dsum), tmp_path / "t", "density", fa.density_caption(dsum))
    figures.save(fa.footprint_figure(s, r, costs)[0], tmp_path / "f", "footprint")
    figures.save(fa.density_figure(fa.density_per_run(ds, dr), dsum)[0], tmp_path / "f", "d")
    assert "n/a" in (tmp_path / "t" / "footprint.md").read_text()


def test_replication_reads_the_ratio_to_rootful_docker():
    """The committed processed fixture (make_processed.py) through pipeline.analysis.replication: the 004
    article's 7 MB vs 4 MB per container against the fixture's 1.5625, and density's cap."""
    from pipeline.analysis import replication as rp

    published = rp.load_published(nc.ROOT / "data" / "reference" / "published.csv")
    study = rp.load_study(nc.ROOT / "tests" / "fixtures" / "processed")
    result = rp.replicate(published, study).set_index("id")
    row = result.loc["004-mem-docker-rootless"]
    assert row["study_point"] == pytest.approx(1.5625, rel=1e-5) and row["verdict"] == rp.REPRODUCED
    assert row["study_n_runs"] == 4
    assert "skipped: rootless Podman" in result.loc["004-mem-podman-rootless", "reason"]
    # the article's density limits bind at thousands of containers (why_not); read anyway,
    # the density summary's own reason comes through
    assert result.loc["004-density-rootless", "verdict"] == rp.NOT_MEASURED
    density = published.set_index("id").loc["004-density-rootless"].copy()
    density["why_not"] = ""
    reason = rp.study_figure(density, study, "lab").reason
    assert "Docker bridge stopped at the cap in every run" in reason
    # the fixture's orchestration is Swarm only: the article's Kubernetes baseline did not run
    assert result.loc["000-start-scale50", "reason"] == (
        "the article compares with k8s-pod: k8s-pod was not measured on the host path "
        "(orchestration data); the publication profile measures it"
    )
