"""The step runners: one per benchmark kind, picked by the benchmark's ``kind``, each planning
its own cells and grouping its own deployments (the campaign loop has no kind switch)."""

from pathlib import Path

import pytest

from pipeline.benchmarks import BENCHMARKS
from pipeline.benchmarks.cpu import Cpu
from pipeline.benchmarks.lb import Lb
from pipeline.benchmarks.throughput import Throughput
from pipeline.collect import inventory, steps
from pipeline.collect.campaign import Campaign, Profile
from pipeline.collect.modes import MODES
from pipeline.collect.plan import plan

LAB = Path(__file__).parents[2] / "inventory" / "lab.yaml"


def _campaign(benchmark, modes):
    inv = inventory.load(LAB, MODES, check_files=False)
    return Campaign(benchmark, inv, Profile(1, 1, 0, 1), Path("/nonexistent"), seed=1,
                    modes=modes, log=lambda _: None)  # fmt: skip


def test_every_benchmark_has_the_runner_of_its_kind():
    kinds = {name: steps.runner_for(b()).kind for name, b in BENCHMARKS.items()}
    assert kinds == {name: b.kind for name, b in BENCHMARKS.items()}
    assert {steps.runner_for(BENCHMARKS[n]()) for n in ("throughput", "cpu", "lb")} == {
        steps.NetworkSteps, steps.HostSteps, steps.ScenarioSteps}  # fmt: skip


def test_an_unknown_kind_is_refused_with_the_known_ones():
    bench = Throughput()
    bench.kind = "quantum"
    with pytest.raises(ValueError, match=r"unknown kind 'quantum'; known: \['host', 'network', "
                                         r"'scenario'\]"):  # fmt: skip
        plan(bench, ["native"])


def test_only_a_network_campaign_is_placed_and_only_a_scenario_runs_fixed():
    assert [r.placed for r in (steps.NetworkSteps, steps.HostSteps, steps.ScenarioSteps)] == [
        True, False, False]  # fmt: skip
    assert [r.fixed_runs is None
            for r in (steps.NetworkSteps, steps.HostSteps, steps.ScenarioSteps)] == [
        True, True, False]  # fmt: skip


def test_each_kind_plans_its_cells():
    modes = ["native", "docker-bridge", "docker-host", "native-aa"]
    # network: native first on each path a mode uses, then the modes in the order given
    net = plan(Throughput(), ["docker-bridge", "native-aa", "native"], paths=("dc",),
               variants=("tcp",))  # fmt: skip
    assert net == [("native", "dc", "tcp"), ("docker-bridge", "dc", "tcp"),
                   ("native-aa", "dc", "tcp")]  # fmt: skip
    # host: the benchmark's own modes (cpu names no docker-host), and with native the
    # instrument's control on the host
    cpu = plan(Cpu(), modes, variants=(Cpu.variants[0],))
    assert [m for m, _, _ in cpu] == ["native", "docker-bridge", "native-aa"]
    assert {p for _, p, _ in cpu} == {"host"}
    # scenario: the benchmark's own modes only, no control
    lb = plan(Lb(), modes)
    assert {m for m, _, _ in lb} <= set(Lb.modes) and "native-aa" not in {m for m, _, _ in lb}


def test_deployments_are_shared_as_each_kind_says():
    net = _campaign(Throughput(), ["native", "docker-bridge"])
    assert len({net._server_group(*t) for t in net.triples}) == 2  # one server per mode
    host = _campaign(Cpu(), ["native", "docker-bridge"])
    assert len({host._server_group(*t) for t in host.triples}) == len(host.triples)
    assert net.runner.campaign is net and isinstance(host.runner, steps.HostSteps)
