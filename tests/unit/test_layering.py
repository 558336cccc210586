"""The package's layering holds: analysis never reaches collection or the lab, benchmarks never
reach the modes, collection never reaches the lab (pipeline/imports.py's LAYERS). Read from the
source, so a lazy import inside a function counts too."""

from pipeline import imports


def test_no_module_crosses_a_layer():
    assert imports.layer_violations(imports.package_modules()) == []


def test_the_check_fails_on_a_violation_even_through_another_module():
    graph = {
        "pipeline.analysis.widget": {"pipeline.benchmarks.gadget"},
        "pipeline.benchmarks.gadget": {"pipeline.collect.modes.base"},
        "pipeline.collect.modes.base": set(),
        "pipeline.collect.campaign": {"pipeline.lab.cpus"},
        "pipeline.lab.cpus": set(),
    }
    found = imports.layer_violations(list(graph), reach=lambda m: graph.get(m, set()))
    assert any(line.startswith("pipeline.analysis.widget imports pipeline.benchmarks.gadget, "
                               "which reaches pipeline.collect.modes.base") for line in found)
    assert any(line.startswith("pipeline.benchmarks.gadget imports pipeline.collect.modes.base")
               for line in found)
    assert any(line.startswith("pipeline.collect.campaign imports pipeline.lab.cpus")
               for line in found)


def test_analysis_loads_no_ssh_or_docker_client():
    analysis = [m for m in imports.package_modules() if m.startswith("pipeline.analysis")]
    loaded = set().union(*(imports.third_party(m) for m in imports.closure(analysis)))
    assert not loaded & set(imports.ANALYSIS_FORBIDDEN_THIRD_PARTY), loaded


def test_the_closure_follows_lazy_imports():
    # campaign.collect reaches the lab only through a provider it is handed, never by import
    reached = imports.closure(["pipeline.collect.campaign"])
    assert not any(m.startswith("pipeline.lab") for m in reached)
    assert "pipeline.lab" in imports.closure(["pipeline.environments"])
