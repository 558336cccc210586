"""Data shared through a DVC remote: what one clone analyses and pushes, a fresh clone pulls and
analyses again to the same bytes.

Clone A (a git clone of the repository's HEAD, through a bare "origin" as a team would share it)
gets the committed fixture's raw throughput data, records it as its collection stage's output,
runs the throughput summary stage with `dvc repro`, and pushes to a local directory
remote (`dvc remote add -d`, as the README's "Sharing data" says). Clone B, fresh from origin,
`dvc pull`s, finds the pipeline up to date, runs the same stages itself and must write
byte-identical tables, processed data and figures, and the same output hashes in dvc.lock.
One benchmark keeps it short (98 s with both cores busy with other work, 24 s of CPU: each
summary run is a kernel start and its imports); the throughput summary reads raw parquet and
writes every kind of output (processed data, tables, figures).

The fixture stands in for a campaign: no lab here. A collection stage's outputs are its raw
dataset and its executed notebook, and only a real collection writes the notebook, so A records
the raw dataset alone (DVC's `Repo.commit(..., allow_missing=True)`: the notebook stays without a
hash, the truth), runs the summaries with `--single-item` (plain `dvc repro` would try to
collect again for the missing notebook), and B pulls the raw dataset by its path (pulling the
collection stage by name fails on the notebook that was never made). After a real
`dvc repro` on a lab, a plain `dvc pull` brings everything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
BENCHMARKS = ("throughput",)
SUMMARIES = [f"summarise-{b}" for b in BENCHMARKS]
EXECUTED = "reports/executed/"

pytestmark = pytest.mark.skipif(shutil.which("dvc", path=str(VENV_BIN)) is None,
                                reason="dvc is not installed in the environment")  # fmt: skip


def _env() -> dict[str, str]:
    # git identities for the clones' commits; DVC quiet about analytics and updates
    return {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1",
            "GIT_AUTHOR_NAME": "dvc remote test", "GIT_AUTHOR_EMAIL": "dvc-test@localhost",
            "GIT_COMMITTER_NAME": "dvc remote test", "GIT_COMMITTER_EMAIL": "dvc-test@localhost"}


def _run(cwd: Path, *argv: str, timeout: float = 300) -> str:
    result = subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True,
                            timeout=timeout)  # fmt: skip
    output = result.stdout[-3000:] + result.stderr[-3000:]
    assert result.returncode == 0, f"{' '.join(argv)}:\n{output}"
    return result.stdout


def _outputs(clone: Path) -> dict[str, bytes]:
    """Every file the summary stages write, executed notebooks aside (they hold timings)."""
    stages = yaml.safe_load((clone / "dvc.yaml").read_text())["stages"]
    found = {}
    for name in SUMMARIES:
        for out in stages[name]["outs"]:
            rel = next(iter(out)) if isinstance(out, dict) else out
            if rel.startswith(EXECUTED):
                continue
            path = clone / rel
            files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
            found.update({str(p.relative_to(clone)): p.read_bytes() for p in files})
    return found


def _lock(clone: Path) -> dict:
    """dvc.lock's summary stages, each output's hash by path, executed notebooks aside."""
    stages = yaml.safe_load((clone / "dvc.lock").read_text())["stages"]
    return {name: {"deps": stages[name]["deps"],
                   "outs": [o for o in stages[name]["outs"] if not o["path"].startswith(EXECUTED)]}
            for name in SUMMARIES}  # fmt: skip


@pytest.fixture(scope="module")
def clones(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("dvc-remote")
    origin, a, b, remote = tmp / "origin.git", tmp / "a", tmp / "b", tmp / "remote"
    _run(tmp, "git", "clone", "--quiet", "--bare", str(ROOT), str(origin))
    _run(tmp, "git", "clone", "--quiet", str(origin), str(a))

    for name in BENCHMARKS:
        shutil.copytree(a / "tests/fixtures/raw" / name / "lab", a / "data/raw" / name / "lab")
    collected = ", ".join(f"'collect-{n}@lab'" for n in BENCHMARKS)
    _run(a, sys.executable, "-c", "from dvc.repo import Repo\n"
         f"for stage in [{collected}]:\n"
         "    Repo('.').commit(stage, force=True, allow_missing=True)")  # fmt: skip
    _run(a, "dvc", "repro", "--single-item", *SUMMARIES, timeout=600)

    _run(a, "dvc", "remote", "add", "-d", "shared", str(remote))
    tables = [next(iter(o)) for s in SUMMARIES
              for o in yaml.safe_load((a / "dvc.yaml").read_text())["stages"][s]["outs"]
              if isinstance(o, dict) and not o[next(iter(o))].get("cache", True)]  # fmt: skip
    ignores = [str(p.relative_to(a)) for p in (a / "data").rglob(".gitignore")]
    _run(a, "git", "add", "dvc.lock", ".dvc/config", *ignores, *tables)
    _run(a, "git", "commit", "--quiet", "-m", "throughput analysed")
    _run(a, "git", "push", "--quiet", "origin", "HEAD")
    _run(a, "dvc", "push")

    _run(tmp, "git", "clone", "--quiet", str(origin), str(b))
    return {"a": a, "b": b, "remote": remote}


def test_a_fresh_clone_pulls_what_the_other_pushed(clones):
    a, b = clones["a"], clones["b"]
    assert not (b / "data/raw").exists() or not any((b / "data/raw").rglob("*.parquet"))
    _run(b, "dvc", "pull", *(f"data/raw/{n}/lab" for n in BENCHMARKS), *SUMMARIES)
    for name in BENCHMARKS:
        for table in ("samples", "runs", "hosts"):
            rel = f"data/raw/{name}/lab/{table}.parquet"
            assert (b / rel).read_bytes() == (a / rel).read_bytes(), rel
    assert _outputs(b) == _outputs(a)
    status = _run(b, "dvc", "status", *SUMMARIES)
    assert "up to date" in status, status


def test_the_fresh_clone_analyses_the_pulled_data_to_the_same_bytes(clones):
    a, b = clones["a"], clones["b"]
    expected = _outputs(a)
    # throughput and throughput_udp, each as md, csv and tex
    assert len([f for f in expected if f.startswith("reports/tables/")]) == 2 * 3
    for rel in expected:  # B must write every output itself
        (b / rel).unlink()
    _run(b, "dvc", "repro", "--single-item", "--force", *SUMMARIES, timeout=600)
    assert _outputs(b).keys() == expected.keys()
    differ = [rel for rel, data in _outputs(b).items() if data != expected[rel]]
    assert differ == []
    assert _lock(b) == _lock(a)
    # the numbers are the fixture's (make_fixture.py's RECEIVED_GBPS): B analysed that raw data
    summary = pd.read_csv(b / "data/processed/throughput/throughput_summary.csv")
    native = summary.set_index(["mode", "path"]).loc[("native", "dc")]
    assert native["median_gbps"] == pytest.approx(9.41)
    assert summary.set_index(["mode", "path"]).loc[("docker-host", "dc"), "verdict"] == "equivalent"
