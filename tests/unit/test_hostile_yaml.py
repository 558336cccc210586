"""Settings files read as DVC reads them, and refused when they are not what they should be:
one reader for params.yaml, the profiles and the inventories (pipeline.settings_yaml).

Known answers: DVC's own parser (dvc.utils.serialize.parse_yaml, ruamel's YAML 1.2 core
schema) on the same text; duplicate keys named with both lines; unknown keys named with
their line and never their value; links out of the repository, FIFOs and devices refused
before they are opened (a FIFO would block the reader forever)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline import params
from pipeline.collect import inventory as inventory_mod

ROOT = Path(__file__).resolve().parents[2]
DEMO = "conf/profiles/demo.yaml"


@pytest.fixture
def repo(settings_repo) -> Path:
    return settings_repo


def _problems(repo: Path) -> list[str]:
    with pytest.raises(params.ParamsError) as caught:
        params.load("params.yaml", root=repo)
    return caught.value.problems


def _inventory_problems(path: Path) -> str:
    with pytest.raises(inventory_mod.InventoryError) as caught:
        inventory_mod.load(path, ["native"], check_files=False)
    return str(caught.value)


# -- scalars as DVC reads them ---------------------------------------------------------------

# (YAML scalar, the value DVC reads): the YAML 1.2 core schema. PyYAML's YAML 1.1 reads the
# first as 8, the fourth to seventh as booleans and 1e3 as text.
SCALARS = [("010", 10), ("0o10", 8), ("0x1F", 31), ("yes", "yes"), ("no", "no"), ("on", "on"),
           ("off", "off"), ("1e3", 1000.0), ("~", None), ("true", True), ("3", 3)]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), SCALARS, ids=[s for s, _ in SCALARS])
def test_a_scalar_is_read_as_dvc_reads_it(text, expected, tmp_path) -> None:
    from dvc.utils.serialize import parse_yaml

    source = f"runs: {text}\n"
    dvc = parse_yaml(source, "p.yaml")["runs"]
    assert dvc == expected and type(dvc) is type(expected)  # the known answer is DVC's
    path = tmp_path / "p.yaml"
    path.write_text(source)
    ours = params.read_yaml(path)["runs"]
    assert ours == dvc and type(ours) is type(dvc)


def test_runs_010_is_ten_runs_for_the_profile_check(repo) -> None:
    text = (repo / DEMO).read_text()
    assert "\nruns: " in text
    lines = [("runs: 010" if line.startswith("runs: ") else line) for line in text.splitlines()]
    # planning's ceiling above the ten runs, so the pilot check (max_runs >= runs) holds
    text = "\n".join(lines).replace("max_runs: 8}", "max_runs: 12}")
    assert "max_runs: 12}" in text
    (repo / DEMO).write_text(text + "\n")
    loaded = params.load("params.yaml", root=repo)
    assert loaded.profile["runs"] == 10


# -- duplicate keys ---------------------------------------------------------------------------


def test_a_key_given_twice_in_params_is_refused_with_both_lines(repo) -> None:
    text = (repo / "params.yaml").read_text()
    n = text.count("\n")
    (repo / "params.yaml").write_text(text + "profile: study\n")
    first = next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith("profile:"))
    problems = _problems(repo)
    assert problems == [f"profile: key 'profile' is given twice (lines {first} and {n + 1}); DVC "
                        "refuses such a file and other readers keep one of the two silently: "
                        "remove or rename one"]  # fmt: skip


def test_a_key_given_twice_in_a_profile_is_refused_with_both_lines(repo) -> None:
    (repo / DEMO).write_text((repo / DEMO).read_text() + "reps: 7\n")
    problems = _problems(repo)
    assert len(problems) == 1
    assert problems[0].startswith(f"{DEMO}: reps: key 'reps' is given twice (lines ")
    from dvc.utils.serialize import YAMLFileCorruptedError, parse_yaml

    with pytest.raises(YAMLFileCorruptedError):  # DVC refuses the same file
        parse_yaml((repo / DEMO).read_text(), DEMO)


def test_a_nested_key_given_twice_in_an_inventory_names_its_path(tmp_path) -> None:
    path = tmp_path / "inv.yaml"
    path.write_text("environment: x\nssh:\n  user: a\n  port: 22\n  user: b\n")
    msg = _inventory_problems(path)
    assert "ssh.user: key 'user' is given twice (lines 3 and 5)" in msg


# -- unknown keys: named with their line, never their value -------------------------------


def test_an_unknown_params_key_is_named_with_its_line_and_not_its_value(repo) -> None:
    value = "correct-horse-battery-staple-9"  # not a known secret format: the key is the hint
    text = (repo / "params.yaml").read_text()
    (repo / "params.yaml").write_text(text + f"password: {value}\n")
    (problem,) = _problems(repo)
    line = text.count("\n") + 1
    assert problem.startswith(f"params.yaml.password: unknown setting, line {line};")
    assert value not in problem


def test_an_unknown_key_that_is_not_a_name_is_not_printed(tmp_path) -> None:
    line = "root:x9Kq2pLm7Vb3nR8s:19000:0:99999:7::: extra"  # a pasted line, not a setting
    path = tmp_path / "inv.yaml"
    path.write_text(f"environment: x\n{line!r}: 1\n")
    msg = _inventory_problems(path)
    assert "x9Kq2pLm7Vb3nR8s" not in msg
    assert "unknown key (a key of 46 characters, not shown) (line 2)" in msg


def test_an_unknown_profile_key_is_named_with_its_line(repo) -> None:
    text = (repo / DEMO).read_text()
    (repo / DEMO).write_text(text + "token: hunter2hunter2\n")
    (problem,) = _problems(repo)
    assert problem.startswith(f"{DEMO}.token: unknown setting, line {text.count(chr(10)) + 1};")
    assert "hunter2" not in problem


# -- files that are not regular files inside the repository -------------------------------


def test_params_as_a_link_out_of_the_repository_is_refused(repo, tmp_path) -> None:
    outside = tmp_path / "elsewhere.yaml"
    shutil.copy(repo / "params.yaml", outside)
    (repo / "params.yaml").unlink()
    (repo / "params.yaml").symlink_to(outside)
    (problem,) = _problems(repo)
    assert problem.startswith(f"is a symbolic link to {outside}, outside {repo}")
    assert "copy the content you mean into" in problem


def test_a_profile_linked_to_a_system_file_is_refused_and_not_quoted(repo) -> None:
    (repo / DEMO).unlink()
    (repo / DEMO).symlink_to("/etc/passwd")
    problems = _problems(repo)
    assert problems == [f"{DEMO}: is a symbolic link to /etc/passwd, outside {repo}: a settings "
                        "file is read only from a regular file inside the repository; copy the "
                        f"content you mean into {repo / DEMO} instead of linking to another "
                        "file"]  # fmt: skip


def test_a_link_inside_the_repository_is_read(repo) -> None:
    (repo / "conf" / "profiles" / "mine.yaml").symlink_to(repo / DEMO)
    text = (repo / "params.yaml").read_text().replace("profile: demo", "profile: mine", 1)
    (repo / "params.yaml").write_text(text)
    assert params.load("params.yaml", root=repo).raw["profile"] == "mine"


def test_an_inventory_linked_out_of_its_directory_is_refused(tmp_path) -> None:
    (tmp_path / "secret").mkdir()
    target = tmp_path / "secret" / "shadow"
    target.write_text("root:$y$j9T$abc$def:19000:0:99999:7:::\n")
    (tmp_path / "inv").mkdir()
    link = tmp_path / "inv" / "hosts.yaml"
    link.symlink_to(target)
    msg = _inventory_problems(link)
    assert f"{link}: is a symbolic link to {target}, outside {tmp_path / 'inv'}" in msg
    assert "$y$" not in msg


# The reader runs in a child with a deadline: a FIFO opened the ordinary way blocks until a
# writer appears, which would hang the test run rather than fail it.
CHILD = """
import sys
from pathlib import Path
from pipeline import params
from pipeline.collect import inventory
what, path = sys.argv[1], Path(sys.argv[2])
try:
    if what == "params":
        params.read_yaml(path)
    else:
        inventory.load(path, ["native"], check_files=False)
except (params.ParamsError, inventory.InventoryError) as e:
    print(e)
"""


def _child(what: str, path: Path) -> str:
    done = subprocess.run([sys.executable, "-c", CHILD, what, str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


@pytest.mark.parametrize("what", ["params", "inventory"])
def test_a_fifo_is_refused_without_blocking(what, tmp_path) -> None:
    fifo = tmp_path / "settings.yaml"
    os.mkfifo(fifo)
    try:
        out = _child(what, fifo)
    except subprocess.TimeoutExpired:
        pytest.fail("reading a FIFO blocked")
    assert "is a FIFO, not a" in out and "name a regular .yaml file" in out


@pytest.mark.parametrize("what", ["params", "inventory"])
def test_a_device_is_refused(what) -> None:
    out = _child(what, Path("/dev/zero"))
    assert out.startswith(("/dev/zero: 1 problem", "invalid inventory /dev/zero"))
    assert "is a device, not a" in out and "name a regular .yaml file" in out


def test_the_sysbench_harness_reads_the_study_profile_through_the_reader() -> None:
    sys.path.insert(0, str(ROOT))
    try:
        from harness import sysbench_fold
    finally:
        sys.path.remove(str(ROOT))
    study = yaml.safe_load((ROOT / "conf/profiles/study.yaml").read_text())
    warm, window = sysbench_fold.study_windows("cpu")
    assert window.seconds == float(study["cpu"]["seconds"])
    assert warm.seconds == float(study["cpu"]["warmup_seconds"]) and warm.warmup
