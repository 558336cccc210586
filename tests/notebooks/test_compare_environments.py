"""Run notebooks/analysis/33-compare-environments.ipynb with papermill on the committed fixture
beside a second environment made from it in a temporary directory
(tests/fixtures/make_second_environment.py: native at 0.90, docker-bridge's per-run log ratio to
native doubled) and check the table's headline numbers against that construction."""

from __future__ import annotations

import notebook_checks as nc
import numpy as np
import pandas as pd
import papermill
import pytest
from tests.fixtures import make_second_environment as MAKER  # noqa: N812

NOTEBOOK = nc.ANALYSIS / "33-compare-environments.ipynb"
PARAMETERS = {"raw_dir", "processed_dir", "figures_dir", "tables_dir", "environments",
              "confidence", "multiplicity", "margin_network", "margin_cpu", "margin_memory",
              "margin_disk"}  # fmt: skip



@pytest.fixture(scope="module")
def executed(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("compare-environments")
    raw = MAKER.write_pair(out / "raw")
    dirs = {d: out / d for d in nc.OUTPUT_DIRS}
    papermill.execute_notebook(
        str(NOTEBOOK), str(out / "executed.ipynb"),
        parameters={"raw_dir": str(raw), **{f"{d}_dir": str(p) for d, p in dirs.items()},
                    "environments": "lab,lab-vm", "confidence": 0.95, "multiplicity": "holm"},
        kernel_name="python3", cwd=str(nc.ROOT), progress_bar=False,
    )  # fmt: skip
    return {"notebook": out / "executed.ipynb", **dirs}


def test_headline_numbers_are_the_known_answers(executed):
    frame = pd.read_parquet(executed["processed"] / "environments.parquet")
    native = frame[frame["comparison"] == "native"]
    np.testing.assert_allclose(native["ratio"], 0.90, rtol=1e-9)
    bridge = frame[frame["mode"] == "docker-bridge"]
    np.testing.assert_allclose(bridge["environment_ratio"], bridge["reference_ratio"] ** 2,
                               rtol=1e-9)  # fmt: skip
    assert (bridge["verdict"] == "overhead").all()
    text = nc.headline_text(executed["notebook"], n_cells=None)
    assert "throughput dc tcp received_gbps native: lab-vm/lab 0.900 [0.897, 0.903], slower" in text
    assert ("throughput dc tcp received_gbps docker-bridge overhead: lab-vm/lab 0.872 "
            "[0.861, 0.884], more overhead") in text  # fmt: skip
    assert "cpu host compile compile_s native: lab-vm/lab 0.900 [0.892, 0.908], faster" in text


def test_table_and_figure_are_written(executed):
    table = pd.read_csv(executed["tables"] / "environments.csv")
    assert len(table) == 52 and set(table["Environments"]) == {"lab-vm / lab"}
    assert (executed["tables"] / "environments.md").read_text().count("\n|") > 52
    assert (executed["tables"] / "environments.tex").exists()
    for ext in ("svg", "png", "caption.md"):
        assert (executed["figures"] / f"environments.{ext}").exists()


def test_source_notebook_is_clean_and_thin():
    nc.assert_source_clean_and_thin(NOTEBOOK, PARAMETERS)
