"""notebooks/analysis/39-assemble-article.ipynb run by papermill on the committed fixture: it
writes the four outputs where its parameters say, metrics.json included, and shows the article
summary first."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import papermill

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
NOTEBOOK = ROOT / "notebooks" / "analysis" / "39-assemble-article.ipynb"


def test_the_notebook_writes_the_article_and_the_metrics(tmp_path):
    metrics = tmp_path / "dvc" / "metrics.json"
    parameters = {
        "processed_dir": str(FIXTURES / "processed"),
        "raw_dir": str(FIXTURES / "raw"),
        "tables_dir": str(tmp_path / "tables"),
        "figures_dir": str(tmp_path / "figures"),
        "out_dir": str(tmp_path / "reports"),
        "metrics_file": str(metrics),
    }
    papermill.execute_notebook(
        str(NOTEBOOK), str(tmp_path / "executed.ipynb"), parameters=parameters,
        kernel_name="python3", cwd=str(ROOT), progress_bar=False,
    )  # fmt: skip
    for name in ("numbers.json", "article.md", "article.html"):
        assert (tmp_path / "reports" / name).exists(), name
    flat = json.loads(metrics.read_text())
    legend = json.loads(metrics.with_name("verdicts.json").read_text())
    assert legend["codes"][str(flat["throughput.docker-bridge.dc.tcp.verdict"])] == "overhead"
    executed = nbformat.read(tmp_path / "executed.ipynb", 4)
    printed = "".join(o.get("text", "") for c in executed.cells for o in c.get("outputs", []))
    assert str(metrics) in printed  # where it wrote, said in the notebook
    shown = "".join(
        o.get("data", {}).get("text/markdown", "")
        for c in executed.cells for o in c.get("outputs", [])
    )  # fmt: skip
    assert shown.index("## Summary") < shown.index("## Network throughput")
