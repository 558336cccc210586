"""What every analysis-notebook test checks the same way, imported explicitly by each test file.

- ``executed_fixture``: a module-scoped fixture that runs a notebook with papermill on the
  committed fixture, with its executed copy's parameters, into a temporary directory;
- ``assert_source_clean_and_thin``: the source notebook is committed without outputs, holds no
  logic and has a literal-only ``parameters`` cell;
- ``assert_copy_matches_source``, ``headline_text``, ``run_nbval``: the executed fixture copy
  (committed WITH outputs, see make_executed.py) has not drifted, its ``# NBVAL_CHECK_OUTPUT``
  cells are there, and nbval reproduces them;
- ``assert_reproduces_copy``: the fixture's own run reproduces those cells (one execution per
  notebook; test_nbval_fixture.py runs nbval itself, on the throughput copy).
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import nbformat
import papermill
import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "raw"
ANALYSIS = ROOT / "notebooks" / "analysis"
OUTPUT_DIRS = ("processed", "figures", "tables")
# The parameters every analysis notebook has: where it reads and where it writes.
DIR_PARAMETERS = frozenset({"raw_dir", *(f"{d}_dir" for d in OUTPUT_DIRS)})
CHECKED = "# NBVAL_CHECK_OUTPUT"
# What make_fixture.py writes: the key of a cell in samples/runs, and swarm-ingress's reason.
KEYS = ["environment", "mode", "path", "variant"]
IPVS_REASON = (
    "skipped: kernel has no IPVS (ip_vs module missing), the Swarm routing mesh cannot work"
)
INJECTED = "injected-parameters"


def executed_fixture(name: str, fixture_name: str = "executed", **expected) -> Callable:
    """A module-scoped fixture ``executed``: {"notebook", "copy", "processed", "figures", "tables"}.

    It runs make_executed.NOTEBOOKS[name]: the notebook with the parameters of its committed
    executed copy, its outputs (the parameters under ``reports/executed/fixture/``) redirected to a
    temporary directory. ``expected`` are the parameters the test's own arithmetic rests on
    (confidence, margin, ...): a copy made with other values fails here, by name.
    """
    source, copy, parameters = make_executed().NOTEBOOKS[name]
    differ = {k: (v, parameters.get(k)) for k, v in expected.items() if parameters.get(k) != v}
    assert not differ, f"{name}: the test expects (value, copy's) {differ}; make them agree"

    @pytest.fixture(scope="module", name=fixture_name)
    def _executed(tmp_path_factory) -> dict[str, Path]:
        out = tmp_path_factory.mktemp(name)
        redirected = {k: _redirect(v, out) for k, v in parameters.items()}
        papermill.execute_notebook(
            str(source),
            str(out / "executed.ipynb"),
            parameters=redirected,
            kernel_name="python3",
            cwd=str(ROOT),
            progress_bar=False,
        )
        dirs = {d: Path(redirected[f"{d}_dir"]) for d in OUTPUT_DIRS if f"{d}_dir" in redirected}
        return {"notebook": out / "executed.ipynb", "copy": copy, **dirs}

    return _executed


def _redirect(value, out: Path):
    """``reports/executed/fixture/<name>/<rest>`` (where make_executed writes) -> ``out/<rest>``."""
    prefix = "reports/executed/fixture/"
    if not (isinstance(value, str) and value.startswith(prefix)):
        return value
    rest = value.removeprefix(prefix).partition("/")[2]
    return str(out / rest)


def assert_source_clean_and_thin(notebook: Path, parameter_names: set[str]) -> None:
    nb = nbformat.read(notebook, as_version=4)
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
    assert {s.target.id for s in params} == parameter_names
    for stmt in params:
        assert isinstance(stmt, ast.AnnAssign) and isinstance(stmt.value, ast.Constant)


def make_executed() -> ModuleType:
    """tests/notebooks/make_executed.py, the script that regenerates the executed copies."""
    spec = importlib.util.spec_from_file_location("make_executed", HERE / "make_executed.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _code_cells(nb) -> list[str]:
    return [
        c.source
        for c in nb.cells
        if c.cell_type == "code" and INJECTED not in c.metadata.get("tags", [])
    ]


def assert_copy_matches_source(source: Path, copy: Path, name: str) -> None:
    """``copy`` has the code of ``source`` and the parameters make_executed.NOTEBOOKS[name] has."""
    hint = f"regenerate it: python tests/notebooks/make_executed.py {name}"
    executed = nbformat.read(copy, as_version=4)
    stale = f"executed copy is stale: {hint}"
    assert _code_cells(executed) == _code_cells(nbformat.read(source, as_version=4)), stale
    injected = [c for c in executed.cells if INJECTED in c.metadata.get("tags", [])]
    assert len(injected) == 1
    values = {
        s.targets[0].id: ast.literal_eval(s.value) for s in ast.parse(injected[0].source).body
    }
    assert values == make_executed().NOTEBOOKS[name][2], f"parameters differ: {hint}"


def headline_text(executed: Path, n_cells: int | None = 2) -> str:
    """The stored outputs of the ``# NBVAL_CHECK_OUTPUT`` cells (there must be ``n_cells``,
    unless it is None)."""
    nb = nbformat.read(executed, as_version=4)
    checked = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(CHECKED)]
    assert n_cells is None or len(checked) == n_cells
    return "".join(o.get("text", "") for c in checked for o in c.outputs)


def checked_outputs(notebook: Path) -> list[list[tuple]]:
    """The outputs of the ``# NBVAL_CHECK_OUTPUT`` cells, as nbval --nbval-lax compares them:
    per cell, (output type, stream name, text) of every stream and text/plain result."""
    nb = nbformat.read(notebook, as_version=4)
    return [
        [
            (o.output_type, o.get("name"), o.get("text", o.get("data", {}).get("text/plain")))
            for o in c.outputs
        ]
        for c in nb.cells
        if c.cell_type == "code" and c.source.startswith(CHECKED)
    ]


def assert_reproduces_copy(executed: dict[str, Path]) -> None:
    """The fixture's fresh run prints what the committed copy stores in its checked cells: the
    copy has not drifted from the code (what nbval checks, without a second execution)."""
    fresh, stored = checked_outputs(executed["notebook"]), checked_outputs(executed["copy"])
    assert stored and all(stored), f"{executed['copy'].name}: no checked outputs stored"
    hint = "regenerate it: python tests/notebooks/make_executed.py (then review the diff)"
    for i, (got, want) in enumerate(zip(fresh, stored, strict=True)):
        assert got == want, f"{executed['copy'].name}: checked cell {i} differs, {hint}"


def run_nbval(path: Path) -> subprocess.CompletedProcess:
    """Re-execute ``path`` with nbval; only the ``# NBVAL_CHECK_OUTPUT`` cells are compared."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env"]
        + ["-p", "no:cacheprovider", "-q", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def assert_nbval_passes(path: Path) -> None:
    result = run_nbval(path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout
