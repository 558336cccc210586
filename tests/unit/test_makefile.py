"""The Makefile: `make help` lists every phony target with its `##` line, every phony target
has a rule, and `make clean-data` removes what a run made and nothing committed."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = (ROOT / "Makefile").read_text()


def phony() -> set[str]:
    declared = re.search(r"^\.PHONY:((?:.*\\\n)*.*)$", MAKEFILE, re.M)
    assert declared
    return set(declared[1].replace("\\\n", " ").split())


def make(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["make", "-s", "--no-print-directory", "-f", str(ROOT / "Makefile"),
                           *args], cwd=cwd, check=True, capture_output=True, text=True,
                          timeout=60).stdout  # fmt: skip


def test_every_phony_target_has_a_rule():
    rules = set(re.findall(r"^([a-zA-Z][a-zA-Z_-]*):", MAKEFILE, re.M))
    assert phony() - rules == set()
    assert {"help", "setup", "lock", "test", "clean-data", "kubernetes"} <= phony()


def test_help_lists_every_phony_target_with_its_comment():
    listed = dict(line.split(None, 1) for line in make("help").splitlines())
    assert set(listed) == phony()
    assert listed["lock"] == (
        "re-resolve requirements/lock.txt and environment.yml from pyproject.toml")
    assert listed["clean-data"].startswith("remove data/raw, data/processed, reports/ and figures/")


def test_clean_data_removes_the_runs_outputs_and_keeps_whats_committed(tmp_path):
    made = ["data/raw/latency/lab/samples.parquet", "data/processed/latency/ecdf.csv",
            "reports/tables/latency.md", "reports/executed/21.ipynb", "figures/latency/a.png"]
    kept = ["data/reference/published.csv", "figures/.gitkeep"]
    for name in made + kept:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    make("clean-data", cwd=tmp_path)
    left = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert left == sorted(kept)
    assert not (tmp_path / "reports").exists() and not (tmp_path / "figures/latency").exists()


def test_make_test_builds_kubernetes_between_the_two_phases():
    recipe = MAKEFILE[MAKEFILE.index("\ntest: "):MAKEFILE.index("\ntest-fast:")]
    steps = [line.strip() for line in recipe.splitlines()[1:] if line.strip()]
    order = [i for i, s in enumerate(steps) if '-m "not lab"' in s or "kubernetes" in s
             or "-m lab" in s]  # fmt: skip
    assert [steps[i].split("||")[0].strip() for i in order] == [
        '$(PY) -m pytest tests -m "not lab" -n auto --dist loadfile --durations=15',
        "$(MAKE) --no-print-directory kubernetes",
        "$(PY) -m pytest tests -m lab --durations=25",
    ]
