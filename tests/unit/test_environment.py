"""The Python stack has one source, pyproject.toml: requirements/lock.txt pins it (with hashes)
for `make setup`, environment.yml installs that same lock for conda users, and the installed
venv is exactly the lock."""

import importlib.util
import re
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("lockfile", ROOT / "tools/lockfile.py")
lockfile = sys.modules["lockfile"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lockfile)

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
LINUX = {"sys_platform": "linux", "os_name": "posix", "platform_system": "Linux",
         "python_version": "3.11", "python_full_version": "3.11.7",
         "implementation_name": "cpython", "platform_python_implementation": "CPython",
         "platform_machine": "x86_64"}  # fmt: skip
MACOS = {**LINUX, "sys_platform": "darwin", "platform_system": "Darwin",
         "platform_machine": "arm64"}  # fmt: skip


def declared() -> list[Requirement]:
    """Every requirement the lock must satisfy: runtime, every extra, and the bootstrap tools."""
    extras = PROJECT["optional-dependencies"].values()
    lines = [*PROJECT["dependencies"], *(r for extra in extras for r in extra)]
    bootstrap = (ROOT / "requirements/bootstrap.in").read_text().splitlines()
    lines += [s for s in (line.split("#")[0].strip() for line in bootstrap) if s]
    return [Requirement(line) for line in lines]


def test_environment_yml_is_generated_from_pyproject_and_installs_the_lock():
    assert (ROOT / "environment.yml").read_text() == lockfile.environment_yml(), (
        "environment.yml is out of date: run `make lock` (or python tools/lockfile.py environment)")
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = [d["pip"] for d in env["dependencies"] if isinstance(d, dict)]
    assert pip == [["-r requirements/lock.txt"]]
    assert env["name"] == PROJECT["name"]
    # conda's Python is the one the lock was resolved for (make lock's --python-version)
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python="))
    recipe = (ROOT / "Makefile").read_text()
    assert f"--python-version {python.removeprefix('python=')} " in recipe
    assert PROJECT["requires-python"] == ">=" + python.removeprefix("python=")


def test_the_lock_satisfies_every_declared_requirement_on_linux_and_macos():
    pins = lockfile.read_lock()
    for environment in (LINUX, MACOS):
        chosen = lockfile.wanted(pins, environment)
        for req in declared():
            name = lockfile.canonical(req.name)
            assert name in chosen, f"{name} is declared but not locked"
            assert req.specifier.contains(chosen[name], prereleases=True), (
                f"{name}=={chosen[name]} in the lock does not satisfy {req}: run `make lock`")
    assert lockfile.canonical("altair") in lockfile.wanted(pins, LINUX)


def test_every_pin_is_exact_and_has_a_hash():
    text = (ROOT / "requirements/lock.txt").read_text()
    pins = lockfile.read_lock()
    requirement_lines = [line for line in text.splitlines() if re.match(r"^[A-Za-z0-9]", line)]
    assert len(pins) == len(requirement_lines) > 100  # every requirement line parsed as a pin
    assert [p for p in pins if p.hashes == 0] == []
    # pip's --require-hashes also refuses a link or an editable line
    assert not re.search(r"^(-e|--editable|\S+ @ )", text, re.M)


def test_docker_sdk_is_not_a_dependency_while_nothing_imports_it():
    imports = re.compile(r"^\s*(import docker\b|from docker\b)", re.M)
    users = [p for d in ("pipeline", "harness", "tests", "tools") for p in (ROOT / d).rglob("*.py")
             if imports.search(p.read_text(errors="replace"))]  # fmt: skip
    locked = lockfile.canonical("docker") in lockfile.wanted(lockfile.read_lock(), LINUX)
    assert locked == bool(users), f"docker SDK used by {users}: declare it in pyproject.toml"


LOCK_TEXT = """\
# header
numpy==2.4.6 \\
    --hash=sha256:{a}
    # via pandas
pywin32==312 ; sys_platform == 'win32' \\
    --hash=sha256:{a} \\
    --hash=sha256:{b}
scipy==1.17.1 ; python_full_version >= '3.12' \\
    --hash=sha256:{a}
scipy==1.16.0 ; python_full_version < '3.12' \\
    --hash=sha256:{b}
""".format(a="a" * 64, b="b" * 64)


def test_lock_parsing_markers_and_differences_on_a_known_lock(tmp_path):
    path = tmp_path / "lock.txt"
    path.write_text(LOCK_TEXT)
    pins = lockfile.read_lock(path)
    assert [(p.name, p.version, p.hashes) for p in pins] == [
        ("numpy", "2.4.6", 1), ("pywin32", "312", 2), ("scipy", "1.17.1", 1),
        ("scipy", "1.16.0", 1)]  # fmt: skip
    assert lockfile.wanted(pins, LINUX) == {"numpy": "2.4.6", "scipy": "1.16.0"}
    assert lockfile.wanted(pins, {**LINUX, "python_full_version": "3.12.1"})["scipy"] == "1.17.1"
    have = {"numpy": "2.4.5", "docker": "7.2.0"}
    assert lockfile.differences(lockfile.wanted(pins, LINUX), have) == [
        "docker: installed 7.2.0, not in the lock",
        "numpy: locked 2.4.6, installed 2.4.5",
        "scipy: locked 1.16.0, not installed",
    ]


def test_two_pins_of_one_package_that_both_apply_are_an_error(tmp_path):
    path = tmp_path / "lock.txt"
    path.write_text(LOCK_TEXT.replace("python_full_version < '3.12'", "sys_platform == 'linux'"))
    with pytest.raises(ValueError, match="scipy twice"):
        lockfile.wanted(lockfile.read_lock(path), {**LINUX, "python_full_version": "3.12.1"})


@pytest.mark.skipif(sys.prefix == sys.base_prefix,
                    reason="not a venv: the check is of `make setup`'s .venv")  # fmt: skip
def test_the_installed_set_is_exactly_the_lock():
    problems = lockfile.differences(lockfile.wanted(lockfile.read_lock()), lockfile.installed())
    assert problems == [], "\n".join(problems) + "\nrun `make setup`"
