"""`dvc status` and the campaign agree on when a collection must measure again: in a clone of
HEAD whose throughput collection is recorded in dvc.lock (the committed fixture's raw data), an
edit to a file changes the campaign's code digest exactly when `dvc status` reports the stage's
deps changed. An edit to another benchmark or to the lab changes neither; an edit to the
benchmark, a mode it plans or the campaign changes both."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
STAGE = "collect-throughput@lab"
EDITS = {  # file -> whether throughput's campaign measures with it
    "pipeline/benchmarks/lb.py": False,
    "pipeline/lab/network.py": False,
    "pipeline/analysis/throughput.py": False,
    "pipeline/benchmarks/throughput.py": True,
    "pipeline/collect/modes/docker_bridge.py": True,
    "pipeline/collect/campaign.py": True,
    "pipeline/collect/steps.py": True,
    "pipeline/data/schema.py": True,
    "pipeline/analysis/interference.py": False,  # the rule collection applies is pipeline/data's
}

pytestmark = pytest.mark.skipif(shutil.which("dvc", path=str(VENV_BIN)) is None,
                                reason="dvc is not installed in the environment")  # fmt: skip


def _run(cwd: Path, *argv: str) -> str:
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1"}
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"{' '.join(argv)}:\n{result.stdout}{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("status") / "clone"
    _run(path.parent, "git", "clone", "--quiet", str(ROOT), str(path))
    shutil.copytree(path / "tests/fixtures/raw/throughput/lab", path / "data/raw/throughput/lab")
    # the raw data recorded as the stage's output; its executed notebook only a real run writes
    _run(path, sys.executable, "-c", "from dvc.repo import Repo\n"
         f"Repo('.').commit('{STAGE}', force=True, allow_missing=True)")  # fmt: skip
    return path


# Run in the clone, so that both read its files: for each edit, the digest over every mode
# throughput can plan (what its stage's deps cover) and the stage's changed deps by dvc status.
PROBE = """
import json, sys
from pathlib import Path
from dvc.repo import Repo
from pipeline.benchmarks import BENCHMARKS
from pipeline.collect.campaign import code_digest, plan
from pipeline.collect.modes import MODES

bench = BENCHMARKS["throughput"]()
modes = sorted({m for m, _, _ in plan(bench, list(MODES))})

def probe():
    with Repo(".") as repo:
        status = repo.status(targets=[sys.argv[1]])
    changed = {p: c for entry in status.get(sys.argv[1], []) if isinstance(entry, dict)
               for p, c in entry.get("changed deps", {}).items()}
    return code_digest(bench, modes)["digest"], changed

found = {"before": probe()}
for rel in sys.argv[2:]:
    path = Path(rel)
    original = path.read_bytes()
    path.write_bytes(original + b"\\n# an edit\\n")
    try:
        found[rel] = probe()
    finally:
        path.write_bytes(original)
found["after"] = probe()
print(json.dumps(found))
"""


def test_dvc_status_reports_a_collection_changed_exactly_when_its_digest_changes(clone):
    found = json.loads(_run(clone, sys.executable, "-c", PROBE, STAGE, *EDITS))
    digest, changed = found["before"]
    assert changed == {}
    for rel, measures in EDITS.items():
        assert (found[rel][0] != digest) == measures, rel
        assert found[rel][1] == ({rel: "modified"} if measures else {}), rel
    assert found["after"] == [digest, {}]  # every edit undone: up to date again
