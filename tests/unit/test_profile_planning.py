"""A profile's own ``planning`` block: the study and publication profiles plan their campaigns,
the demo its headline comparisons, smoke keeps fixed runs; a profile's block is checked and wins
over params.yaml's."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from pipeline import params

ROOT = Path(__file__).resolve().parents[2]


def _load(tmp_path: Path, profile: str, edit=None, profile_edit=None) -> params.Params:
    """params.yaml with ``profile`` chosen (and ``edit`` applied), from a copy of the
    repository's conf/profiles (``profile_edit`` applied to the chosen one)."""
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["profile"] = profile
    if edit:
        edit(raw)
    shutil.copytree(ROOT / "inventory", tmp_path / "inventory")
    (tmp_path / "conf" / "profiles").mkdir(parents=True)
    for f in (ROOT / "conf" / "profiles").glob("*.yaml"):
        doc = yaml.safe_load(f.read_text())
        if f.stem == profile and profile_edit:
            profile_edit(doc)
        (tmp_path / "conf" / "profiles" / f.name).write_text(yaml.safe_dump(doc))
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    return params.load(tmp_path / "params.yaml", tmp_path)


@pytest.mark.parametrize(("profile", "enabled", "max_runs", "budget", "rule"),
                         [("demo", True, 8, 4, "fixed"), ("smoke", False, 10, 60, "stein"),
                          ("study", True, 10, 3, "stein"),
                          ("publication", True, 20, 120, "stein")])  # fmt: skip
def test_study_publication_and_demo_plan_smoke_does_not(tmp_path, profile, enabled, max_runs,
                                                        budget, rule):  # fmt: skip
    got = _load(tmp_path, profile).planning()
    assert (got["enabled"], got["max_runs"], got["budget_minutes"]) == (enabled, max_runs, budget)
    assert got.get("rule", "stein") == rule and got["confidence"] == 0.95
    assert got["target_half_width"] == 0.05  # the demo's fixed rule uses none: the default
    assert "headline" not in got  # no benchmark named: the profile's whole block


def test_the_demo_plans_its_headline_comparisons_only(tmp_path):
    demo = _load(tmp_path, "demo")
    latency = demo.planning("latency")
    assert latency["enabled"] is True
    assert sorted(map(tuple, latency["headline"])) == [("docker-bridge", "dc", "*"),
                                                      ("docker-host", "dc", "*")]  # fmt: skip
    assert demo.planning("cpu")["headline"] == [["docker-bridge", "*", "1thread"]]
    memory = demo.planning("memory")  # not a headline question: its pilot runs only
    assert memory["enabled"] is False and memory["headline"] == []
    for profile in ("smoke", "study", "publication"):  # no headline: every comparison planned
        got = _load(tmp_path / profile, profile).planning("latency")
        assert "headline" not in got and demo.headline("latency") is not None


@pytest.mark.parametrize(("entry", "said"), [
    ({"lb": {"modes": "k8s-pod"}}, "headline.lb"),  # the demo does not measure... it names lb
    ({"latency": {"modes": "podman"}}, "headline.latency.modes"),  # not among the demo's modes
    ({"latency": {"modes": "native"}}, "headline.latency.modes"),  # the baseline
    ({"latency": {"modes": "docker-host", "paths": "local"}}, "headline.latency.paths"),
    ({"cpu": {"variants": "1thread"}}, "headline.cpu.modes: missing"),
    ({"cpu": {"modes": "docker-bridge", "metric": "p50"}}, "headline.cpu.metric"),
    ({"cpus": {"modes": "docker-bridge"}}, "headline.cpus: not a benchmark"),
])  # fmt: skip
def test_a_headline_names_what_the_profile_measures(tmp_path, entry, said):
    def edit(doc):
        doc["headline"] = entry

    if "lb" in entry:  # lb runs every mode it applies to: k8s-pod is one, so no problem
        assert _load(tmp_path, "demo", profile_edit=edit).headline("lb") == [
            ("k8s-pod", "*", "*")]
        return
    with pytest.raises(params.ParamsError) as err:
        _load(tmp_path, "demo", profile_edit=edit)
    assert any(said in p for p in err.value.problems), err.value.problems


def test_the_profiles_block_wins_over_params_yaml(tmp_path):
    def off(raw):
        raw["planning"] = {"enabled": False, "target_half_width": 0.1, "budget_minutes": 5,
                           "max_runs": 4}  # fmt: skip

    got = _load(tmp_path, "study", edit=off).planning()
    assert (got["enabled"], got["target_half_width"], got["budget_minutes"]) == (True, 0.05, 3)


def test_a_profiles_planning_block_is_checked_by_name(tmp_path):
    def bad(doc):
        doc["planning"] = {"enabled": True, "max_runs": 1, "budget": 3}

    with pytest.raises(params.ParamsError) as err:
        _load(tmp_path, "study", profile_edit=bad)
    said = "\n".join(err.value.problems)
    assert "conf/profiles/study.yaml.planning.max_runs" in said
    assert "conf/profiles/study.yaml.planning.budget" in said  # not a planning key
    assert "conf/profiles/study.yaml.planning.target_half_width: missing" in said

    def unknown_rule(doc):
        doc["planning"] = {**doc["planning"], "rule": "sequential"}

    with pytest.raises(params.ParamsError) as err:
        _load(tmp_path / "rule", "study", profile_edit=unknown_rule)
    (said,) = err.value.problems
    assert said.startswith("conf/profiles/study.yaml.planning.rule: must be one of stein, fixed")


def test_a_profiles_max_runs_below_its_pilot_is_refused(tmp_path):
    def few(doc):
        doc["planning"] = {"enabled": True, "target_half_width": 0.05, "budget_minutes": 10,
                           "max_runs": 5}  # fmt: skip

    with pytest.raises(params.ParamsError) as err:
        _load(tmp_path, "publication", profile_edit=few)  # its pilot is 10 runs
    assert any("below the profile's 10 runs" in p for p in err.value.problems)
