"""Run notebooks/analysis/34-compare-spectrum.ipynb with papermill on the committed fixture
summaries (tests/fixtures/processed), once as they are (one environment: no VM) and once beside
an environment comparison made from the fixture (tests/fixtures/make_second_environment.py:
native at 0.90 in lab-vm), and check the spectrum's numbers: the summaries' own ratios and
intervals, the modes not measured with their reasons, and the VM at 0.90."""

from __future__ import annotations

import shutil

import notebook_checks as nc
import numpy as np
import pandas as pd
import papermill
import pytest
from tests.fixtures import make_second_environment as MAKER  # noqa: N812

from pipeline.analysis import environments

NOTEBOOK = nc.ANALYSIS / "34-compare-spectrum.ipynb"
PARAMETERS = {"raw_dir", "summaries_dir", "processed_dir", "figures_dir", "tables_dir"}
MARGINS = {"network": 0.05, "cpu": 0.02, "memory": 0.02, "disk": 0.02}


def _run(out, summaries) -> dict:
    dirs = {d: out / d for d in nc.OUTPUT_DIRS}
    papermill.execute_notebook(
        str(NOTEBOOK), str(out / "executed.ipynb"),
        parameters={"raw_dir": str(nc.FIXTURE), "summaries_dir": str(summaries),
                    **{f"{d}_dir": str(p) for d, p in dirs.items()}},
        kernel_name="python3", cwd=str(nc.ROOT), progress_bar=False,
    )  # fmt: skip
    return {"notebook": out / "executed.ipynb", **dirs}


@pytest.fixture(scope="module")
def executed(tmp_path_factory) -> dict:
    return _run(tmp_path_factory.mktemp("compare-spectrum"), nc.ROOT / "tests/fixtures/processed")


@pytest.fixture(scope="module")
def with_vm(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("compare-spectrum-vm")
    summaries = out / "summaries"
    shutil.copytree(nc.ROOT / "tests/fixtures/processed", summaries)
    raw = MAKER.write_pair(out / "raw")
    comparison = environments.compare(environments.per_run_values(raw), ["lab", "lab-vm"],
                                      MARGINS)  # fmt: skip
    (summaries / "environments").mkdir()
    comparison.to_parquet(summaries / "environments" / "environments.parquet", index=False)
    return _run(out, summaries)


def test_headline_is_the_summaries_numbers(executed):
    table = pd.read_parquet(executed["processed"] / "spectrum.parquet")
    assert len(table) == 30 and spectrum_modes(table) == [
        "docker-bridge", "rootless-docker", "podman", "rootless-podman"]
    text = nc.headline_text(executed["notebook"], n_cells=None)
    assert "throughput dc tcp: docker-bridge 0.872 [0.866, 0.878]" in text
    assert ("cpu host compile: docker-bridge 1.030 [1.029, 1.031]; podman 1.010 [1.008, 1.012]; "
            "rootless-podman 1.000 [0.997, 1.002]") in text  # fmt: skip
    assert ("coldstart host nginx_p50: docker-bridge 11.667 [11.667, 11.667]; rootless-docker "
            "14.000 [13.950, 14.050]; podman 12.500 [12.500, 12.500]") in text  # fmt: skip
    assert len(text.strip().splitlines()) == 13  # the figure's panels


def spectrum_modes(table: pd.DataFrame) -> list[str]:
    return list(table.sort_values("rank")["mode"].drop_duplicates())


def test_modes_not_measured_are_said_with_their_reason(executed):
    missing = pd.read_parquet(executed["processed"] / "spectrum_not_measured.parquet")
    by = missing.set_index(["benchmark", "mode"])["status"]
    assert by[("cpu", "rootless-docker")] == "skipped"
    assert by[("coldstart", "rootless-podman")] == "skipped"
    assert (missing[missing["mode"].isin(["docker-crun", "docker-gvisor", "VM"])]["status"]
            == "not in the campaign").all()  # fmt: skip
    caption = (executed["figures"] / "spectrum.caption.md").read_text()
    assert "Docker bridge, gVisor (runsc): not measured" in caption
    assert "VM: not measured" in caption
    assert "skipped in cpu, memory (rootless Docker is not available on node1" in caption


def test_table_and_figure_are_written(executed):
    table = pd.read_csv(executed["tables"] / "spectrum.csv")
    assert len(table) == 30 and set(table["Isolation"]) == {"runc", "crun"}
    assert table.iloc[0]["Ratio to native [CI]"] == "0.872 [0.866, 0.878]"
    assert (executed["tables"] / "spectrum.md").read_text().count("\n|") > 30
    for ext in ("svg", "png", "caption.md", "vl.json"):
        assert (executed["figures"] / f"spectrum.{ext}").exists()


def test_the_vm_slots_in_from_the_environment_comparison(with_vm):
    table = pd.read_parquet(with_vm["processed"] / "spectrum.parquet")
    vm = table[table["isolation"] == "VM"]
    assert len(vm) == 13 and (vm["environment"] == "lab-vm").all()
    np.testing.assert_allclose(vm["ratio"], MAKER.NATIVE_FACTOR, rtol=1e-9)
    assert ((vm["lo"] < 0.9) & (vm["hi"] > 0.9)).all()
    assert vm["rank"].min() > table[table["isolation"] != "VM"]["rank"].max()
    missing = pd.read_parquet(with_vm["processed"] / "spectrum_not_measured.parquet")
    assert "VM" not in set(missing["mode"])
    caption = (with_vm["figures"] / "spectrum.caption.md").read_text()
    assert "VM: a second environment's native against the reference's" in caption


def test_source_notebook_is_clean_and_thin():
    nc.assert_source_clean_and_thin(NOTEBOOK, PARAMETERS)
