"""Source notebooks reach git without outputs, through the nbstripout filter `make setup`
configures and .gitattributes applies to notebooks/ only; the `parameters` tag (papermill's)
and the cell ids survive it, and the executed fixture notebooks keep their outputs."""

import copy
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
SOURCE = sorted((ROOT / "notebooks").rglob("*.ipynb"))
FIXTURE = sorted((ROOT / "tests/notebooks").glob("*.fixture.ipynb"))


def strip_command() -> list[str]:
    """The clean filter's command as the Makefile configures it, run with this interpreter."""
    line = re.search(r"^NBSTRIPOUT := (.+)$", (ROOT / "Makefile").read_text(), re.M)
    assert line, "the Makefile no longer defines NBSTRIPOUT"
    return shlex.split(line[1].replace('"$(CURDIR)/$(PY)"', shlex.quote(sys.executable)))


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout  # fmt: skip


def executed(notebook: dict) -> dict:
    """``notebook`` as a run leaves it: counts and an output on every code cell."""
    nb = copy.deepcopy(notebook)
    for n, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
        cell["execution_count"] = n + 1
        cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": [f"out {n}\n"]}]
    return nb


def parameters_cell(nb: dict) -> dict:
    [cell] = [c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", [])]
    return cell


def test_the_filter_applies_to_source_notebooks_only():
    paths = [p.relative_to(ROOT).as_posix() for p in (*SOURCE, *FIXTURE)]
    out = git(ROOT, "check-attr", "filter", "--", *paths)
    filters = dict(line.rsplit(": filter: ", 1) for line in out.splitlines())
    assert len(SOURCE) > 10 and len(FIXTURE) > 5
    assert {filters[p.relative_to(ROOT).as_posix()] for p in SOURCE} == {"nbstripout"}
    assert {filters[p.relative_to(ROOT).as_posix()] for p in FIXTURE} == {"unspecified"}


def test_committed_source_notebooks_are_already_stripped(tmp_path):
    copies = []
    for n, path in enumerate(SOURCE):  # stripped in place, all in one run of the filter
        copies.append(tmp_path / f"{n}.ipynb")
        copies[-1].write_text(path.read_text())
    subprocess.run([*strip_command(), *map(str, copies)], check=True, capture_output=True)
    for path, stripped in zip(SOURCE, copies, strict=True):
        text = path.read_text()
        committed = json.loads(text)
        assert json.loads(stripped.read_text()) == committed, f"{path.name} holds outputs"
        assert parameters_cell(committed)["cell_type"] == "code"
        # byte for byte as the filter writes it (nbformat's key order), or a fresh clone shows
        # the notebook modified once `make setup` has configured the filter
        assert nbformat.writes(nbformat.reads(text, as_version=nbformat.NO_CONVERT)) + "\n" == text


def test_a_commit_strips_outputs_and_keeps_the_parameters_tag_and_ids(tmp_path):
    source = json.loads(SOURCE[0].read_text())
    fixture_text = FIXTURE[0].read_text()
    git(tmp_path, "init", "-q")
    (tmp_path / ".gitattributes").write_text((ROOT / ".gitattributes").read_text())
    command = shlex.join(strip_command())
    git(tmp_path, "config", "filter.nbstripout.clean", command)
    git(tmp_path, "config", "filter.nbstripout.smudge", "cat")
    git(tmp_path, "config", "filter.nbstripout.required", "true")
    (tmp_path / "notebooks/analysis").mkdir(parents=True)
    (tmp_path / "notebooks/analysis/run.ipynb").write_text(json.dumps(executed(source), indent=1))
    (tmp_path / "tests/notebooks").mkdir(parents=True)
    (tmp_path / "tests/notebooks/run.fixture.ipynb").write_text(fixture_text)
    git(tmp_path, "add", ".")

    committed = json.loads(git(tmp_path, "show", ":notebooks/analysis/run.ipynb"))
    code = [c for c in committed["cells"] if c["cell_type"] == "code"]
    assert code and all(c["outputs"] == [] and c["execution_count"] is None for c in code)
    assert parameters_cell(committed)["source"] == parameters_cell(source)["source"]
    assert [c["id"] for c in committed["cells"]] == [c["id"] for c in source["cells"]]
    assert committed == source
    # the fixture's outputs are its known answers: committed byte for byte
    assert git(tmp_path, "show", ":tests/notebooks/run.fixture.ipynb") == fixture_text
    assert any(c.get("outputs") for c in json.loads(fixture_text)["cells"])
