"""nbval on the executed fixture copy of the throughput notebook.

The copy (``20-summarise-throughput.fixture.ipynb``, committed with outputs) is re-executed by
nbval; the cells marked ``# NBVAL_CHECK_OUTPUT`` (the headline numbers and the article table)
must reproduce their stored output exactly. The copy must not drift from the source notebook.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SOURCE = ROOT / "notebooks" / "analysis" / "20-summarise-throughput.ipynb"
EXECUTED = HERE / "20-summarise-throughput.fixture.ipynb"
REGENERATE = "regenerate it: python tests/notebooks/make_executed.py"


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
        [
            sys.executable,
            "-m",
            "pytest",
            "--nbval-lax",
            "--nbval-current-env",
            "-p",
            "no:cacheprovider",
            "-q",
            str(path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_executed_copy_matches_source():
    source = nbformat.read(SOURCE, as_version=4)
    executed = nbformat.read(EXECUTED, as_version=4)
    assert _code_cells(executed) == _code_cells(source), f"executed copy is stale: {REGENERATE}"
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1
    values = {
        stmt.targets[0].id: ast.literal_eval(stmt.value)
        for stmt in ast.parse(injected[0].source).body
    }
    assert values == _make_executed().PARAMETERS, f"parameters differ: {REGENERATE}"


def test_executed_copy_has_checked_headline_outputs():
    executed = nbformat.read(EXECUTED, as_version=4)
    checked = [
        c
        for c in executed.cells
        if c.cell_type == "code" and c.source.startswith("# NBVAL_CHECK_OUTPUT")
    ]
    assert len(checked) == 2
    text = "".join(o.get("text", "") for c in checked for o in c.outputs)
    assert "lab docker-bridge dc: ok, 5 runs, median 8.200 Gbit/s [8.150, 8.300]" in text
    assert "lab swarm-ingress dc: skipped, n/a (skipped: kernel has no IPVS" in text
    assert "| Docker proxy (localhost) | localhost | 6.80 [6.65, 6.92] |" in text


def test_nbval_reproduces_headline_cells():
    result = _run_nbval(EXECUTED)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout


def test_nbval_catches_a_changed_number(tmp_path):
    # Negative control: the check must fail when a stored headline number is wrong.
    nb = nbformat.read(EXECUTED, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("# NBVAL_CHECK_OUTPUT"):
            for out in cell.outputs:
                if "8.200 Gbit/s" in out.get("text", ""):
                    out["text"] = out["text"].replace("8.200 Gbit/s", "8.201 Gbit/s")
                    break
            else:
                continue
            break
    else:
        pytest.fail("headline cell with the docker-bridge median not found")
    tampered = tmp_path / EXECUTED.name
    nbformat.write(nb, tampered)
    result = _run_nbval(tampered)
    assert result.returncode != 0
    assert "8.201" in result.stdout
