"""Ctrl-C in the middle of a campaign leaves nothing on any node: for each benchmark that
creates its own objects (services, networks, batches of containers, pidfiles, control
cgroups, a qdisc), a campaign is started in a child process, interrupted with SIGINT as soon as
the lab shows something it created, and every host is then checked with the campaign's own
leftovers check (labelled containers, services, networks and volumes in every engine, pidfiles,
test files, control cgroups and qdiscs)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from pipeline.collect.modes.base import cleanup_host, leftovers
from tests.integration.lab_campaign import (
    INVENTORY,
    ROOT_ONLY,
    ctrl_c_reaches_the_child,
    lab_session,
)

pytestmark = [pytest.mark.lab, ROOT_ONLY]

# benchmark -> (options, modes) for a campaign that runs long enough to be interrupted
CASES = {
    "orchestration": ({"max_replicas": 3, "repeats": 2}, None),
    "footprint": ({"max_containers": 6, "step": 2, "settle_seconds": 2, "max_seconds": 120}, None),
    "cpu": ({"compile_packages": "fmt"}, ["native", "native-cpuquota"]),
    "throughput": (None, ["native", "native-tbf"]),
    # a replica service kept from one balancer's step for the next (Scenario.keep)
    "lb": ({"replicas": "2", "connections": 4}, None),
}
BUDGET_S = 240  # longest wait for the campaign to create something


@pytest.fixture(scope="module", autouse=True)
def lab_is_up():
    """The lab, brought up (idempotent) before the first "is it clean" check."""
    from pipeline import lab

    lab.up()


def _child(benchmark: str, raw: str) -> subprocess.Popen:
    options, modes = CASES[benchmark]
    code = textwrap.dedent(f"""
        from pipeline.collect.campaign import Profile, collect
        ONCE = {{'interference_retries': 0}}  # a flagged window is not measured again here
        profile = Profile(runs=3, seconds=2, omit_seconds=0, warmup_seconds=1)
        collect({benchmark!r}, {INVENTORY!r}, {raw!r}, profile, 11, {modes!r},
                paths={('dc', 'host')!r}, options={options!r}, interference=ONCE)
    """)  # fmt: skip
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True, preexec_fn=ctrl_c_reaches_the_child,
    )  # fmt: skip


def _clean_as_a_campaign_starts() -> None:
    """What every campaign does first (cleanup_host on every host), so what the check finds
    afterwards is this test's own."""
    with lab_session() as (inv, _, ctx):
        for host in (*inv.servers, inv.dc_client):
            cleanup_host(ctx, host)


def _everything_left() -> dict[str, list[str]]:
    with lab_session() as (inv, _, ctx):
        found = {h.name: leftovers(ctx, h) for h in (*inv.servers, inv.dc_client)}
    return {name: items for name, items in found.items() if items}


@pytest.mark.parametrize("benchmark", list(CASES))
def test_an_interrupted_campaign_leaves_nothing(benchmark, tmp_path):
    _clean_as_a_campaign_starts()
    assert _everything_left() == {}, "the lab was not clean before the test"
    proc = _child(benchmark, str(tmp_path))
    deadline = time.monotonic() + BUDGET_S
    seen: dict[str, list[str]] = {}
    while time.monotonic() < deadline and proc.poll() is None and not seen:
        time.sleep(1.0)
        seen = _everything_left()
    assert proc.poll() is None, "the campaign ended before it created anything:\n" + (
        proc.communicate()[0][-3000:]
    )
    assert seen, f"nothing of the campaign appeared within {BUDGET_S} s"
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
    output, _ = proc.communicate(timeout=300)
    print(f"{benchmark}: interrupted while the lab held {seen}\n{output[-2000:]}")
    assert proc.returncode != 0, "the interrupted campaign claimed success"
    assert "interrupted: cleaned up" in output
    # Swarm workers drop their copy of a removed overlay network a few seconds late.
    deadline = time.monotonic() + 30
    left = _everything_left()
    while left and time.monotonic() < deadline:
        time.sleep(2.0)
        left = _everything_left()
    assert left == {}, left
