"""Run notebooks/analysis/22-summarise-http.ipynb with papermill on the committed fixture and
check its outputs against numbers computed here, independently, from the fixture files; then
nbval on the executed copy (22-summarise-http.fixture.ipynb)."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import papermill
import pyarrow.parquet as pq
import pytest
from scipy import stats as st

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
NOTEBOOK = ROOT / "notebooks" / "analysis" / "22-summarise-http.ipynb"
EXECUTED = HERE / "22-summarise-http.fixture.ipynb"
FIXTURE = ROOT / "tests" / "fixtures" / "raw"
LAB = FIXTURE / "http" / "lab"
CONFIDENCE, N_BOOT, SEED = 0.95, 4000, 20261121
KEYS = ["environment", "mode", "path", "variant"]
IPVS_REASON = (
    "skipped: kernel has no IPVS (ip_vs module missing), the Swarm routing mesh cannot work"
)
# make_fixture.py's HTTP_SHIFT_US.
SHIFTS = {
    ("docker-bridge", "dc"): 30.0,
    ("docker-nat", "dc"): 40.0,
    ("swarm-overlay", "dc"): 90.0,
    ("docker-proxy", "local"): 120.0,
}
REGENERATE = "regenerate it: python tests/notebooks/make_executed.py http"


@pytest.fixture(scope="module")
def executed(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("summarise-http")
    dirs = {name: out / name for name in ("processed", "figures", "tables")}
    papermill.execute_notebook(
        str(NOTEBOOK),
        str(out / "executed.ipynb"),
        parameters={
            "raw_dir": str(FIXTURE),
            "processed_dir": str(dirs["processed"]),
            "figures_dir": str(dirs["figures"]),
            "tables_dir": str(dirs["tables"]),
            "confidence": CONFIDENCE,
            "n_boot": N_BOOT,
            "seed": SEED,
        },
        kernel_name="python3",
        cwd=str(ROOT),
        progress_bar=False,
    )
    return {"notebook": out / "executed.ipynb", **dirs}


@pytest.fixture(scope="module")
def summary(executed) -> pd.DataFrame:
    return pd.read_parquet(executed["processed"] / "http_summary.parquet").set_index(
        ["mode", "path"]
    )


@pytest.fixture(scope="module")
def measured() -> pd.DataFrame:
    """Measured rows (requests and per-window counters) of ok runs, without the pipeline."""
    samples = pq.read_table(LAB / "samples.parquet").to_pandas()
    runs = pq.read_table(LAB / "runs.parquet").to_pandas()
    ok = runs.loc[runs["status"] == "ok", [*KEYS, "run"]]
    return samples[~samples["warmup"]].merge(ok, on=[*KEYS, "run"])


def test_percentiles_and_overheads(summary, measured):
    latency = measured[measured["metric"] == "http_latency"]
    for (mode, path), row in summary.iterrows():
        mine = latency[(latency["mode"] == mode) & (latency["path"] == path)]["value"]
        if not len(mine):
            assert row["status"] == "skipped"
            continue
        p50, p95, p99 = np.quantile(mine, [0.5, 0.95, 0.99], method="inverted_cdf")
        assert (row["p50_us"], row["p95_us"], row["p99_us"]) == (p50, p95, p99)
        assert row["n_samples"] == len(mine) == 5000
    for (mode, path), shift in SHIFTS.items():
        row = summary.loc[(mode, path)]
        assert row["d_p50_us"] == pytest.approx(shift, abs=2.0)
        assert row["d_p50_lo_us"] <= shift <= row["d_p50_hi_us"]
        native = latency[(latency["mode"] == "native") & (latency["path"] == path)]["value"]
        mine = latency[(latency["mode"] == mode) & (latency["path"] == path)]["value"]
        assert row["d_p99_us"] == pytest.approx(
            np.quantile(mine, 0.99, method="inverted_cdf")
            - np.quantile(native, 0.99, method="inverted_cdf")
        )


def test_achieved_rate_errors_and_late(summary, measured):
    for (mode, path), row in summary.iterrows():
        cell = measured[(measured["mode"] == mode) & (measured["path"] == path)]
        if not len(cell):
            assert np.isnan(row["rate_rps"]) and np.isnan(row["errors"])
            continue
        rate = cell[cell["metric"] == "http_achieved_rate"].groupby("run")["value"].mean()
        assert row["rate_rps"] == pytest.approx(np.median(rate), abs=1e-9)
        # 5 runs: the interval of the median is the range, with its true coverage.
        assert (row["rate_lo_rps"], row["rate_hi_rps"]) == (rate.min(), rate.max())
        assert row["rate_coverage"] == pytest.approx(
            st.binom.cdf(4, 5, 0.5) - st.binom.cdf(0, 5, 0.5)
        )
        assert row["errors"] == cell.loc[cell["metric"] == "http_errors", "value"].sum()
        assert row["late"] == cell.loc[cell["metric"] == "http_late", "value"].sum()
    assert summary.loc[("docker-proxy", "local"), "errors"] == 3
    assert summary.loc[("native", "dc"), "errors"] == 0


def test_table_and_figures(executed, summary):
    table = pd.read_csv(executed["tables"] / "http.csv", keep_default_na=False)
    proxy = table[table["Configuration"] == "Docker proxy (localhost)"].iloc[0]
    row = summary.loc[("docker-proxy", "local")]
    assert proxy["Path"] == "localhost" and proxy["Errors"] == "3"
    assert proxy["p99 us [95% CI]"] == (
        f"{row['p99_us']:.1f} [{row['p99_lo_us']:.1f}, {row['p99_hi_us']:.1f}]"
    )
    ingress = table[table["Configuration"] == "Swarm ingress (routing mesh)"].iloc[0]
    assert ingress["p50 us [95% CI]"] == "n/a" and ingress["Note"] == IPVS_REASON
    assert ingress["Runs"] == "0 of 5"
    for stem in ("http_ecdf", "http_percentiles"):
        assert (executed["figures"] / f"{stem}.svg").read_text().startswith("<svg")
        assert len((executed["figures"] / f"{stem}.png").read_bytes()) > 10_000
    assert (executed["tables"] / "http.md").read_text().startswith("Table: HTTP request latency")


def test_source_notebook_is_clean_and_thin():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].metadata.get("tags") == ["parameters"]
    for cell in code:
        assert cell.outputs == [] and cell.execution_count is None, "commit it without outputs"
        for node in ast.walk(ast.parse(cell.source)):
            assert not isinstance(
                node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda
            ), "logic belongs in pipeline/, not in the notebook"
    params = ast.parse(code[0].source).body
    assert {s.target.id for s in params} == {
        "raw_dir",
        "processed_dir",
        "figures_dir",
        "tables_dir",
        "confidence",
        "n_boot",
        "seed",
    }
    for stmt in params:
        assert isinstance(stmt, ast.AnnAssign) and isinstance(stmt.value, ast.Constant)


# --- nbval on the executed copy ------------------------------------------------------------


def _make_executed():
    spec = importlib.util.spec_from_file_location("make_executed", HERE / "make_executed.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _code_cells(nb) -> list[str]:
    return [
        c.source
        for c in nb.cells
        if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])
    ]


def _run_nbval(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env"]
        + ["-p", "no:cacheprovider", "-q", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_executed_copy_matches_source():
    executed = nbformat.read(EXECUTED, as_version=4)
    assert _code_cells(executed) == _code_cells(nbformat.read(NOTEBOOK, as_version=4)), REGENERATE
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    values = {
        s.targets[0].id: ast.literal_eval(s.value) for s in ast.parse(injected[0].source).body
    }
    assert values == _make_executed().NOTEBOOKS["http"][2], REGENERATE


def test_executed_copy_has_checked_headline_outputs():
    executed = nbformat.read(EXECUTED, as_version=4)
    checked = [
        c
        for c in executed.cells
        if c.cell_type == "code" and c.source.startswith("# NBVAL_CHECK_OUTPUT")
    ]
    assert len(checked) == 2
    text = "".join(o.get("text", "") for c in checked for o in c.outputs)
    assert "lab docker-proxy local 1k: ok, 5 runs, 5000 samples, p50 244.3" in text
    assert "errors 3" in text
    assert "lab swarm-ingress dc 1k: skipped, n/a (skipped: kernel has no IPVS" in text
    assert "| Swarm overlay | datacenter | 1k |" in text


def test_nbval_reproduces_headline_cells():
    result = _run_nbval(EXECUTED)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout
