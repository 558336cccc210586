"""dvc.yaml is what the benchmarks and params.yaml give, its code deps are the notebooks' import
closures (a collection stage's: what its campaign's code digest covers), and every stage hands its
notebook exactly the parameters the notebook declares."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import yaml

from pipeline import params as params_mod
from pipeline import stages
from pipeline.benchmarks import BENCHMARKS
from pipeline.collect.campaign import code_digest, plan
from pipeline.collect.instrument import CHECKS
from pipeline.collect.modes import MODES

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def params() -> params_mod.Params:
    return params_mod.load()


def _declared(notebook: Path) -> set[str]:
    cells = json.loads(notebook.read_text())["cells"]
    (cell,) = [c for c in cells if "parameters" in c["metadata"].get("tags", [])]
    return set(re.findall(r"^(\w+)(?:: [\w\[\], ]+)? = ", "".join(cell["source"]), re.M))


def test_dvc_yaml_is_generated_from_the_benchmarks(params):
    assert (ROOT / "dvc.yaml").read_text() == stages.render(params), (
        "dvc.yaml is out of date: run `python -m pipeline.stages`")


# Collection stages whose code deps are their campaigns' code digests, not their notebooks' imports.
CAMPAIGN_STAGES = {f"collect-{name}" for name in BENCHMARKS} | {"collect-instrument"}


def drift(dvc: dict) -> list[str]:
    """The stages (collection aside) whose deps lack a file their notebook's code imports."""
    problems = []
    for name, spec in dvc["stages"].items():
        if name in CAMPAIGN_STAGES:
            continue
        body = spec.get("do", spec)
        notebook = body["deps"][0]
        missing = set(stages.code_deps(notebook)) - set(body["deps"])
        problems += [f"{name}: {m} is imported but not a dep" for m in sorted(missing)]
    return problems


def test_every_stage_depends_on_the_code_it_imports():
    assert drift(yaml.safe_load((ROOT / "dvc.yaml").read_text())) == []


def test_the_drift_check_fails_when_a_dep_is_dropped():
    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    broken = copy.deepcopy(dvc)
    deps = broken["stages"]["summarise-throughput"]["deps"]
    deps.remove("pipeline/analysis/latency.py")  # throughput's analysis imports it
    assert drift(broken) == [
        "summarise-throughput: pipeline/analysis/latency.py is imported but not a dep"]


def test_a_collection_stage_per_benchmark_and_environment(params):
    dvc = yaml.safe_load(stages.render(params))["stages"]
    for name in BENCHMARKS:
        stage = dvc[f"collect-{name}"]
        assert stage["foreach"] == params.environments
        assert stage["do"]["cmd"] == f"python -m pipeline.stages run collect-{name} ${{key}}"
        assert {f"data/raw/{name}/${{key}}": {"persist": True}} in stage["do"]["outs"]


def test_no_stage_command_carries_a_params_value(params):
    for name, spec in yaml.safe_load(stages.render(params))["stages"].items():
        cmd = spec.get("do", spec)["cmd"]
        assert re.fullmatch(rf"python -m pipeline\.stages run {re.escape(name)}( \$\{{key\}})?",
                            cmd), cmd


@pytest.mark.parametrize("environment", ["lab"])
def test_every_stage_passes_exactly_the_notebooks_parameters(params, environment):
    for stage in stages.all_stages(params):
        env = environment if stage.per_environment else None
        given = set(stages.parameters(stage, params, env))
        assert given == _declared(ROOT / stage.notebook), stage.name


def test_collection_parameters_come_from_the_profile(params):
    stage = stages.find("collect-cpu", params)
    values = stages.parameters(stage, params, "lab")
    entry = params.profile["cpu"]
    assert values["window"]["seconds"] == entry["seconds"]
    assert values["window"]["runs"] == params.profile["runs"]
    assert values["options"] == {"compile_packages": entry["compile_packages"]}
    assert values["inventory_file"] == params.environments["lab"]
    latency = stages.parameters(stages.find("collect-latency", params), params, "lab")["window"]
    assert latency["count"] == params.profile["latency"]["count"]


def test_the_instrument_checks_variants_reach_its_campaign(params):
    profile = copy.deepcopy(params.profile)
    profile["instrument"].update(benchmarks="throughput,cpu", variants={"cpu": "1thread"})
    other = params_mod.Params(raw=params.raw, profile=profile)
    values = stages.parameters(stages.find("collect-instrument", other), other, "lab")
    assert values["variants"] == {"cpu": ["1thread"]} and set(values["windows"]) == {
        "throughput", "cpu"}
    profile["instrument"].pop("variants")
    values = stages.parameters(stages.find("collect-instrument", other), other, "lab")
    assert values["variants"] == {}  # every variant


def test_a_profiles_modes_and_paths_reach_the_campaign(params):
    raw, profile = copy.deepcopy(params.raw), copy.deepcopy(params.profile)
    profile["throughput"].update(modes="native,docker-bridge", paths="dc")
    profile["http"].pop("modes", None)
    profile["http"].pop("paths", None)
    raw["modes"] = {}
    other = params_mod.Params(raw=raw, profile=profile)
    values = stages.parameters(stages.find("collect-throughput", other), other, "lab")
    assert (values["modes"], values["paths"]) == ("native,docker-bridge", "dc")
    assert "modes" not in values["options"] and "paths" not in values["options"]
    values = stages.parameters(stages.find("collect-http", other), other, "lab")
    assert (values["modes"], values["paths"]) == ("all", "all")
    article = stages.parameters(stages.find("assemble-article", other), other, None)
    assert article["leaves_out"].splitlines() == profile.get("leaves_out", [])


def test_a_new_environment_needs_its_stages(tmp_path, params, capsys):
    raw = copy.deepcopy(params.raw)
    raw["environments"]["bare-metal"] = "inventory/example-hosts.yaml"
    other = params_mod.Params(raw=raw, profile=params.profile)
    assert stages.render(other) != (ROOT / "dvc.yaml").read_text()
    assert "bare-metal: inventory/example-hosts.yaml" in stages.render(other)


def test_environments_are_compared_only_when_there_are_two(params):
    assert "compare-environments" not in {s.name for s in stages.all_stages(params)}
    raw = copy.deepcopy(params.raw)
    raw["environments"] = {"lab": raw["environments"]["lab"],
                           "lab-vm": "inventory/example-hosts.yaml"}  # fmt: skip
    other = params_mod.Params(raw=raw, profile=params.profile)
    stage = stages.find("compare-environments", other)
    values = stages.parameters(stage, other, None)
    assert set(values) == _declared(ROOT / stage.notebook)
    assert values["environments"] == "lab,lab-vm"  # the first listed is the reference
    assert values["margin_cpu"] == raw["common"]["margins"]["cpu"]
    spec = yaml.safe_load(stages.render(other))["stages"]["compare-environments"]
    assert spec["cmd"] == "python -m pipeline.stages run compare-environments"
    assert "data/raw/throughput" in spec["deps"]
    assert "pipeline/analysis/environments.py" in spec["deps"]
    assert "environments" in spec["params"]


def test_the_spectrum_reads_every_summary_and_the_vm_when_compared(params):
    spec = yaml.safe_load(stages.render(params))["stages"]["compare-spectrum"]
    summaries = {f"data/processed/{s.name.removeprefix('summarise-')}"
                 for s in stages.summary_stages()}  # fmt: skip
    assert summaries <= set(spec["deps"]) and "data/processed/environments" not in spec["deps"]
    assert "pipeline/analysis/spectrum.py" in spec["deps"]
    assert "data/processed/spectrum" in spec["outs"]
    raw = copy.deepcopy(params.raw)
    raw["environments"] = {"lab": raw["environments"]["lab"],
                           "lab-vm": "inventory/example-hosts.yaml"}  # fmt: skip
    other = params_mod.Params(raw=raw, profile=params.profile)
    spec = yaml.safe_load(stages.render(other))["stages"]["compare-spectrum"]
    assert "data/processed/environments" in spec["deps"]
    stage = stages.find("compare-spectrum", other)
    assert set(stages.parameters(stage, other, None)) == _declared(ROOT / stage.notebook)


def _digest_files(name: str, modes: list[str]) -> set[str]:
    """The files campaign.code_digest hashes for benchmark ``name`` planned in ``modes``, a built
    upload named by its source (dvc.yaml cannot name a file `make setup` builds) whether or not
    it is built here."""
    bench = BENCHMARKS[name]()
    planned = sorted({m for m, _, _ in plan(bench, modes)})
    files = set(code_digest(bench, planned)["files"]) | set(bench.uploads.values())
    return {stages.BUILT_FROM.get(f, f) for f in files}


def _code_deps(dvc: dict, stage: str) -> set[str]:
    body = dvc["stages"][stage]["do"]
    notebook, item, *code = body["deps"]
    assert notebook.startswith("notebooks/collect/") and item == "${item}"
    return set(code)


def test_a_collection_stage_depends_on_exactly_what_its_campaign_digest_covers(params):
    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    for name in BENCHMARKS:
        assert _code_deps(dvc, f"collect-{name}") == _digest_files(name, list(MODES)), name
    checked = set().union(*(_digest_files(b, list(modes)) for b, modes in CHECKS.items()))
    assert _code_deps(dvc, "collect-instrument") == checked


@pytest.mark.parametrize("profile", sorted(p.stem for p in (ROOT / "conf/profiles").glob("*.yaml")))
def test_whatever_a_profile_measures_afresh_dvc_calls_changed(params, profile):
    """A profile plans a subset of the modes: every file its campaigns' digests hash is a dep,
    so an edit that makes a campaign measure afresh also makes `dvc status` report the stage."""
    raw = copy.deepcopy(params.raw)
    raw["profile"] = profile
    profile_yaml = yaml.safe_load((ROOT / "conf/profiles" / f"{profile}.yaml").read_text())
    other = params_mod.Params(raw=raw, profile=profile_yaml)
    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    for name in BENCHMARKS:
        modes = other.modes(name) or list(MODES)
        assert _digest_files(name, modes) <= _code_deps(dvc, f"collect-{name}"), name


def test_collection_deps_are_the_measuring_code_not_the_notebooks_imports():
    """An edit to the load-balancing benchmark re-runs its own collection, not the other eleven
    (the notebook imports every benchmark through the registry); the lab that hosts a campaign
    is not code that measures."""
    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    lb = "pipeline/benchmarks/lb.py"
    assert {n for n in BENCHMARKS if lb in _code_deps(dvc, f"collect-{n}")} == {"lb"}
    assert "pipeline/benchmarks/http.py" in _code_deps(dvc, "collect-coldstart")  # it imports it
    assert "tools/sockperf" in _code_deps(dvc, "collect-latency")
    assert "tools/loadgen" in _code_deps(dvc, "collect-http")
    for name in BENCHMARKS:
        deps = _code_deps(dvc, f"collect-{name}")
        assert not [d for d in deps if d.startswith(("pipeline/lab/", "pipeline/environments"))]
        assert "pipeline/collect/modes/__init__.py" not in deps  # the registry of every mode
