"""`make demo`'s order: each benchmark's collection then its summary before the next benchmark,
every stage of dvc.yaml once, never before a stage whose outputs it reads; a failed stage stops
the run with a non-zero exit."""

from __future__ import annotations

import copy

import pytest

from pipeline import demo, stages
from pipeline import params as params_mod


@pytest.fixture(scope="module")
def params() -> params_mod.Params:
    return params_mod.load()


def test_each_summary_follows_its_own_collection(params):
    plan = [demo._name(s, e) for s, e in demo.order(stages.all_stages(params), ["lab"])]
    assert plan[:2] == ["collect-throughput@lab", "summarise-throughput"]
    assert plan.index("summarise-latency") == plan.index("collect-latency@lab") + 1
    footprint = plan.index("summarise-footprint")
    assert plan[footprint - 2:footprint] == ["collect-footprint@lab", "collect-density@lab"]
    assert plan.index("summarise-instrument") > plan.index("collect-wan-calibration")
    assert plan[-1] == "assemble-article"
    dvc_names = [s.name for s in stages.all_stages(params)]
    assert sorted({n.split("@")[0] for n in plan}) == sorted(dvc_names)
    assert len(plan) == len(set(plan))


def test_every_environment_gets_its_collections(params):
    plan = [demo._name(s, e) for s, e in demo.order(stages.all_stages(params), ["lab", "bm"])]
    assert plan[:3] == ["collect-throughput@lab", "collect-throughput@bm", "summarise-throughput"]


def test_an_order_that_reads_a_later_stage_is_refused(params):
    every = stages.all_stages(params)
    noise = next(s for s in every if s.name == "summarise-noise")
    broken = copy.copy(noise)
    broken.name = "summarise-throughput-early"
    with pytest.raises(RuntimeError, match="summarise-throughput-early would run before"):
        demo.order([broken, *every], ["lab"])


def test_a_failed_stage_stops_the_run(capsys, monkeypatch):
    monkeypatch.setattr(demo, "kubernetes_note", lambda params: None)  # whatever is built here
    lines = []
    code = demo.run(dvc="false", log=lambda text, **_: lines.append(text))
    assert code == 1
    assert lines[0].startswith("[stage 1/")
    assert "collect-throughput@lab" in lines[0]
    assert "stage collect-throughput@lab failed (exit 1)" in lines[-1]
    assert len(lines) == 2
