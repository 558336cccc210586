"""`container-overhead`: each subcommand runs its module's main with the arguments the
`python -m` form takes, and returns its exit status; the console script is installed."""

import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import cli, demo, params, stages
from pipeline.lab import __main__ as lab_main

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).with_name("container-overhead")


@pytest.fixture
def calls(monkeypatch):
    """Every module main the CLI calls, recorded with its argv, answering 0 unless told."""
    seen: list[tuple[str, list[str]]] = []
    answers: dict[str, int] = {}

    def fake(name):
        def main(argv, **kwargs):
            seen.append((name, list(argv), *kwargs.values()))
            return answers.get(name, 0)
        return main

    monkeypatch.setattr(params, "main", fake("params"))
    monkeypatch.setattr(stages, "main", fake("stages"))
    monkeypatch.setattr(demo, "main", fake("demo"))
    monkeypatch.setattr(lab_main, "main", fake("lab"))
    return seen, answers


@pytest.mark.parametrize(("argv", "expected"), [
    (["params"], ("params", [])),
    (["params", "other.yaml"], ("params", ["other.yaml"])),
    (["stages"], ("stages", [])),
    (["stages", "--check"], ("stages", ["--check"])),
    (["stages", "run", "summarise-latency"], ("stages", ["run", "summarise-latency"])),
    (["stages", "run", "collect-latency", "lab"], ("stages", ["run", "collect-latency", "lab"])),
    (["demo"], ("demo", [])),
    (["demo", "--list"], ("demo", ["--list"])),
    (["lab", "up", "--inventory", "inventory/lab-operator.yaml", "--wan-delay-ms", "5"],
     ("lab", ["up", "--inventory", "inventory/lab-operator.yaml", "--wan-delay-ms", "5"],
      "container-overhead lab")),
    (["lab", "--help"], ("lab", ["--help"], "container-overhead lab")),
])  # fmt: skip
def test_each_subcommand_passes_the_python_m_arguments(calls, argv, expected):
    seen, _ = calls
    assert cli.main(argv) == 0
    assert seen == [expected]


@pytest.mark.parametrize("name", ["params", "stages", "demo", "lab"])
def test_the_modules_exit_status_is_the_commands(calls, name):
    seen, answers = calls
    answers[name] = 7
    argv = {"lab": ["lab", "status"]}.get(name, [name])
    assert cli.main(argv) == 7


def test_check_runs_params_then_stages_check_and_stops_at_the_first_failure(calls):
    seen, answers = calls
    assert cli.main(["check"]) == 0
    assert seen == [("params", []), ("stages", ["--check"])]
    seen.clear()
    answers["stages"] = 1
    assert cli.main(["check"]) == 1
    seen.clear()
    answers["params"] = 2
    assert cli.main(["check"]) == 2
    assert seen == [("params", [])]  # dvc.yaml is not checked against a params.yaml in error


def test_unknown_arguments_are_refused_with_the_usage(capsys):
    for argv in (["demo", "--lists"], ["stages", "--chek"], ["nonsense"], []):
        with pytest.raises(SystemExit) as exit:
            cli.main(argv)
        assert exit.value.code == 2
        assert "usage: container-overhead" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["params", "stages", "demo", "check", "reference"])
def test_each_subcommand_has_help(capsys, command):
    with pytest.raises(SystemExit) as exit:
        cli.main([command, "--help"])
    assert exit.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: container-overhead {command}")


def test_the_labs_help_is_its_own_parsers_under_the_cli_name(capsys):
    with pytest.raises(SystemExit) as exit:
        cli.main(["lab", "up", "--help"])
    assert exit.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: container-overhead lab up")
    assert "--kubernetes" in out and "--wan-delay-ms" in out


def test_params_checks_a_file_as_python_m_pipeline_params_does(tmp_path, capsys):
    bad = tmp_path / "params.yaml"
    bad.write_text("profile: nonesuch\n")
    assert cli.main(["params", str(bad)]) == params.main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("nonesuch") >= 2  # the same report, twice


def test_the_installed_script_and_the_python_m_form_agree():
    """The console script is installed (make setup's editable install of pyproject.toml) and
    gives the same answer as `python -m pipeline.demo --list`."""
    assert SCRIPT.is_file(), f"{SCRIPT} missing: run `make setup`"
    script = subprocess.run([str(SCRIPT), "demo", "--list"], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)  # fmt: skip
    module = subprocess.run([sys.executable, "-m", "pipeline.demo", "--list"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert script.returncode == module.returncode == 0, script.stderr + module.stderr
    assert script.stdout == module.stdout
    assert "summarise-throughput" in script.stdout
