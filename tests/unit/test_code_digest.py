"""A campaign's code digest covers every repository file its benchmark reads to measure: a
config named in the benchmark's module (shipped, or filled in per step) is in the digest, so an
edit to it measures again and marks the collection stage changed."""

import inspect
import re
from importlib.resources import files as package_files

import pytest

from pipeline.benchmarks import BENCHMARKS
from pipeline.collect.campaign import code_digest

TOOL_CONF = "pipeline/collect/tool_conf"


def _left_out(benchmark) -> list[str]:
    source = inspect.getsource(inspect.getmodule(type(benchmark)))
    named = set(re.findall(r"[\w.-]+\.(?:cfg|conf|lua)\b", source))
    existing = {p.name for p in package_files("pipeline.collect.tool_conf").iterdir()}
    digested = {f.rsplit("/", 1)[-1] for f in code_digest(benchmark, [])["files"]
                if f.startswith(TOOL_CONF)}  # fmt: skip
    return sorted((named & existing) - digested)


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_every_tool_config_the_benchmark_names_is_in_its_digest(name):
    assert not _left_out(BENCHMARKS[name]()), name


def test_without_its_templates_lb_would_leave_its_balancer_configs_out(monkeypatch):
    from pipeline.benchmarks.lb import Lb

    monkeypatch.setattr(Lb, "templates", ())
    assert _left_out(Lb()) == ["haproxy-lb.cfg", "nginx-lb.conf"]
