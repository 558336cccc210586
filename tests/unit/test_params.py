"""params.yaml and its profiles are checked before any stage runs: every problem at once, one
line each, naming the key and the fix; values quoted briefly."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from pipeline import params

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def repo(tmp_path) -> Path:
    """A copy of the settings: params.yaml, the profiles, the inventories."""
    for name in ("params.yaml", "conf", "inventory"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    return tmp_path


def _edit(path: Path, change) -> None:
    doc = yaml.safe_load(path.read_text())
    change(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def _problems(repo: Path) -> list[str]:
    with pytest.raises(params.ParamsError) as caught:
        params.load("params.yaml", root=repo)
    return caught.value.problems


def test_the_committed_settings_are_valid_for_every_profile(repo):
    for profile in ("smoke", "demo", "study", "publication"):
        _edit(repo / "params.yaml", lambda d, p=profile: d.update(profile=p))
        loaded = params.load("params.yaml", root=repo)
        assert loaded.profile["runs"] >= 1


def test_every_problem_at_once_with_key_and_rule(repo):
    def broken(d):
        d["common"]["margins"]["cpu"] = "two percent"
        d["common"]["margins"]["disk"] = 1.5
        d["analysis"]["confidence"] = 95
        d["lab"]["wan"]["jitter_dist"] = "pareto"
        d["modes"] = {"throughput": "native,docker-hots", "thruput": "all"}
        d["analysiss"] = {}
        d["analysis"]["multiplicity"] = "bonferoni"
        d["analysis"]["internet_margin_us"] = -5
        d["analysis"]["udp_loss_margin"] = 2

    _edit(repo / "params.yaml", broken)
    problems = _problems(repo)
    assert "common.margins.cpu: must be a number in (0, 1), got 'two percent'" in problems
    assert "common.margins.disk: must be a number in (0, 1), got 1.5" in problems
    assert "analysis.confidence: must be a number in [0.5, 1), got 95" in problems
    assert any(p.startswith("lab.wan.jitter_dist: must be one of normal, uniform")
               for p in problems)
    assert any(p.startswith("modes.throughput:") and "'docker-hots'" in p for p in problems)
    assert any(p.startswith("modes.thruput: not a benchmark (did you mean 'throughput'?)")
               for p in problems)
    assert any(p.startswith("params.yaml.analysiss: unknown setting (did you mean 'analysis'?)")
               for p in problems)
    assert "analysis.multiplicity: must be one of holm, bh, none, got 'bonferoni'" in problems
    assert "analysis.internet_margin_us: must be a number in (0, 1e+06], got -5" in problems
    assert "analysis.udp_loss_margin: must be a number in (0, 1), got 2" in problems
    assert len(problems) == 10


def test_profile_windows_runs_and_options(repo):
    def broken(d):
        d["runs"] = 0
        d["throughput"]["seconds"] = -3
        d["http"]["omit_seconds"] = 9
        d["latency"].pop("count")
        d["cpu"]["compile_packages"] = ""
        d["coldstart"]["starts"] = 2.5
        d["lb"]["wrk_threads"] = 4
        d["latency"]["placement"] = "colocted"

    _edit(repo / "conf/profiles/demo.yaml", broken)
    problems = _problems(repo)
    src = "conf/profiles/demo.yaml"
    assert f"{src}.runs: must be a whole number in [1, 1000], got 0" in problems
    assert f"{src}.throughput.seconds: must be a number in (0, 86400], got -3" in problems
    assert f"{src}.http.omit_seconds: must be shorter than the window (2 s): got 9" in problems
    assert f"{src}.latency.count: missing: samples per window (a count-based tool)" in problems
    assert f"{src}.cpu.compile_packages: must be a non-empty text, got ''" in problems
    assert f"{src}.coldstart.starts: must be a whole number in [1, 1e+09], got 2.5" in problems
    assert any(p.startswith(f"{src}.lb.wrk_threads: unknown setting") for p in problems)
    assert (f"{src}.latency.placement: must be one of colocated, split, shared, got 'colocted'"
            in problems)


def test_a_profile_plans_fewer_modes_and_paths_and_says_so(repo):
    def broken(d):
        d["throughput"]["modes"] = "native,docker-hots"
        d["latency"]["paths"] = "dc,wan"
        d["cpu"]["modes"] = "swarm-overlay"
        d["http"]["variants"] = "64k"
        d["throughput"]["omit_seconds"] = 0.5
        d["wan_calibration"] = {"variants": "udp,quic"}
        d["leaves_out"] = "everything"
        d["headline"] = {}  # it names the modes changed above (a problem of its own)

    _edit(repo / "conf/profiles/demo.yaml", broken)
    problems = _problems(repo)
    src = "conf/profiles/demo.yaml"
    assert any(p.startswith(f"{src}.throughput.modes: must be comma-separated mode names; "
                            "unknown: 'docker-hots' (did you mean 'docker-host'?)")
               for p in problems), problems
    assert f"{src}.latency.paths: must be comma-separated paths of latency: dc, internet, " \
           "local; got 'dc,wan'" in problems
    assert any(p.startswith(f"{src}.cpu.modes: none of them is a mode cpu runs in")
               for p in problems), problems
    assert any(p.startswith(f"{src}.leaves_out: must be a list of sentences") for p in problems)
    assert any(p.startswith(f"{src}.http.variants: must be comma-separated variants of http: ")
               and p.endswith("got '64k'") for p in problems), problems
    assert f"{src}.wan_calibration.variants: must be comma-separated variants of latency: " \
           "udp, tcp; got 'udp,quic'" in problems
    assert f"{src}.throughput.omit_seconds: must be whole seconds (iperf3 reads it as an " \
           "integer and would cut it), got 0.5" in problems
    assert len(problems) == 7
    _edit(repo / "conf/profiles/demo.yaml", lambda d: d.pop("wan_calibration"))
    assert any(p.startswith(f"{src}.wan_calibration: missing") for p in _problems(repo))


def test_params_yaml_modes_win_over_the_profiles(repo):
    _edit(repo / "conf/profiles/demo.yaml", lambda d: (
        d["throughput"].update(modes="native,docker-bridge", paths="dc"),
        d["headline"]["throughput"].update(modes="docker-bridge"),
        d["http"].pop("modes", None), d["http"].pop("paths", None)))
    loaded = params.load("params.yaml", root=repo)
    assert loaded.modes("throughput") == ["native", "docker-bridge"]
    assert loaded.paths("throughput") == ["dc"]
    assert loaded.modes("http") is None and loaded.paths("http") is None
    assert not {"modes", "paths"} & set(loaded.options("throughput"))
    assert loaded.variants("wan_calibration") == ["udp"] and loaded.variants("http") is None
    _edit(repo / "params.yaml", lambda d: d.update(modes={"throughput": "native,macvlan"}))
    assert params.load("params.yaml", root=repo).modes("throughput") == ["native", "macvlan"]


def test_every_comparison_with_native_has_three_runs_beyond_smoke(repo):
    """A verdict needs runs: every profile but CI's gives each benchmark compared with native
    (a margin, or native among its modes) at least three runs, native planned."""
    from pipeline.benchmarks import BENCHMARKS

    for profile in ("demo", "study", "publication"):
        _edit(repo / "params.yaml", lambda d, p=profile: d.update(profile=p))
        loaded = params.load("params.yaml", root=repo)
        for name, cls in BENCHMARKS.items():
            planned = loaded.modes(name)
            if cls.margin is None and "native" not in (cls.modes or ()):
                continue
            assert loaded.window(name)["runs"] >= 3, (profile, name)
            assert planned is None or "native" in planned, (profile, name)
            assert planned is None or len(planned) >= 2, (profile, name)
        if profile == "demo":
            assert loaded.leaves_out, "the demo says what it leaves out"
        else:
            assert loaded.leaves_out == []


def test_a_missing_benchmark_entry_and_an_unknown_profile(repo):
    _edit(repo / "conf/profiles/demo.yaml", lambda d: d.pop("memory"))
    assert any(p.startswith("conf/profiles/demo.yaml.memory: missing") for p in _problems(repo))
    _edit(repo / "params.yaml", lambda d: d.update(profile="studdy"))
    assert any("no file conf/profiles/studdy.yaml (did you mean 'study'?)" in p
               for p in _problems(repo))


def test_names_and_paths_that_reach_a_command_line_are_plain(repo):
    _edit(repo / "params.yaml", lambda d: d["environments"].update({
        "lab; touch /tmp/x": "inventory/lab.yaml", "other": "inventory/$(id).yaml",
        "far": "../outside.yaml"}))
    problems = _problems(repo)
    starts = [
        "environments.'lab; touch /tmp/x': an environment name is",
        "environments.other: must be a relative path inside",
        "environments.far: must be a relative path inside",
    ]
    for start in starts:
        assert any(p.startswith(start) for p in problems), (start, problems)


def test_yaml_aliases_and_bad_yaml_are_refused_clearly(repo):
    text = (repo / "params.yaml").read_text()
    (repo / "params.yaml").write_text(text + "\nx: &a [*a]\n")
    line = text.count("\n") + 2
    assert _problems(repo) == [
        f"not valid YAML at line {line}, column 8: aliases (*name) are not allowed here: write "
        "the value out"]
    (repo / "params.yaml").write_text("common: [unclosed\n")
    (problem,) = _problems(repo)
    assert problem.startswith("not valid YAML at line ")


def test_long_values_are_quoted_briefly(repo):
    secret = "-----BEGIN OPENSSH PRIVATE KEY-----" + "A" * 400
    _edit(repo / "params.yaml", lambda d: d["common"].update(seed=secret))
    (problem,) = _problems(repo)
    assert "AAAA" * 20 not in problem and "the value is not shown" in problem
    _edit(repo / "params.yaml", lambda d: d["common"].update(seed="many words " * 40))
    (problem,) = _problems(repo)
    assert "words " * 5 not in problem and problem.endswith("...")


def test_the_command_line_check(repo, monkeypatch, capsys):
    monkeypatch.setattr(params, "ROOT", repo)
    assert params.main([]) == 0
    _edit(repo / "conf/profiles/demo.yaml", lambda d: d.update(runs=-1))
    assert params.main([]) == 2
    assert "conf/profiles/demo.yaml.runs: must be a whole number" in capsys.readouterr().err


def test_planning_is_checked_and_defaults_to_fixed_runs(repo):
    # a profile without a planning block of its own (the demo's, emptied)
    _edit(repo / "conf/profiles/demo.yaml", lambda d: d.update(planning={}))
    loaded = params.load("params.yaml", root=repo)
    assert loaded.planning()["enabled"] is False
    assert loaded.planning()["confidence"] == loaded.raw["analysis"]["confidence"]
    _edit(repo / "params.yaml", lambda d: d.pop("planning"))
    assert params.load("params.yaml", root=repo).planning() == {
        **params.PLANNING, "confidence": loaded.raw["analysis"]["confidence"]}

    def broken(d):
        d["planning"] = {"enabled": "yes", "target_half_width": 0, "budget_minutes": -1,
                         "max_runs": 1.5, "max_run": 3}

    _edit(repo / "params.yaml", broken)
    line = next(n for n, text in enumerate((repo / "params.yaml").read_text().splitlines(), 1)
                if text.strip().startswith("max_run:"))  # fmt: skip
    problems = _problems(repo)
    assert problems == [
        f"planning.max_run: unknown setting (did you mean 'max_runs'?), line {line}; known: "
        "enabled, target_half_width, budget_minutes, max_runs, rule",
        "planning.enabled: must be true or false, got 'yes'",
        "planning.target_half_width: must be a number in (0, 1], got 0",
        "planning.budget_minutes: must be a number in [0, 1e+06], got -1",
        "planning.max_runs: must be a whole number in [2, 1000], got 1.5",
    ]
    # the demo's block is empty: params.yaml's applies (study's own would win)
    _edit(repo / "params.yaml", lambda d: d.update(
        planning={"enabled": True, "max_runs": 2}, profile="demo"))
    problems = _problems(repo)
    assert "planning.target_half_width: missing: planning is enabled (e.g. " \
           "target_half_width: 0.05)" in problems
    assert "planning.max_runs: 2 is below the profile's 3 runs (its pilot), so planning would " \
           "add no run; set it to 3 or more, or planning.enabled: false" in problems
