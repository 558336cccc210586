"""A Swarm scenario step (lb, orchestration in swarm-overlay) whose servers' daemons or Swarm
nodes fail during it: a dead daemon stops the campaign naming the host and the step; a node that
went down (or re-registered after a restart) fails the step, which is measured again."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pipeline.benchmarks.base import Outcome, Sample
from pipeline.benchmarks.lb import Lb
from pipeline.collect.campaign import Campaign, Profile
from pipeline.collect.modes import MODES, Context
from pipeline.collect.remote import RemoteError
from pipeline.collect.session import SessionClock
from pipeline.collect.steps import swarm_changes, swarm_nodes
from tests.unit import fake_watch
from tests.unit.test_campaign import _lab_inventory

DEAD = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker " \
       "daemon running?"
NODES = "node1 ready\nnode2 ready\nnode3 ready\n"


class _Swarm:
    """The lab's servers as a fake pool: ``dead`` hosts' daemons do not answer; the manager
    lists the Swarm's nodes from ``listings`` in turn (the last one then stays)."""

    def __init__(self, listings: list[str], dead: set[str] = frozenset()) -> None:
        self.listings, self.dead, self.commands = list(listings), set(dead), []

    def __getitem__(self, name: str):
        return SimpleNamespace(run=lambda command, **kw: self.run(name, command, **kw))

    def run(self, host: str, command, check: bool = True, **kwargs):
        reading = fake_watch.answer(command)
        if reading is not None:
            return reading
        self.commands.append((host, command))
        if command[:2] == ["docker", "info"] and host in self.dead:
            if check:
                raise RemoteError(host, " ".join(command), 1, DEAD)
            return SimpleNamespace(status=1, stdout="", stderr=DEAD)
        if isinstance(command, str) and command.startswith("docker node inspect"):
            listing = self.listings.pop(0) if len(self.listings) > 1 else self.listings[0]
            return SimpleNamespace(status=0, stdout=listing, stderr="")
        return SimpleNamespace(status=0, stdout="active", stderr="")


def _lb_campaign(tmp_path, monkeypatch, pool: _Swarm, on_measure=None):
    """One run of lb's haproxy-r2 in swarm-overlay, its measure a stand-in."""
    bench = Lb()
    bench.configure({"replicas": "2", "connections": 4})
    campaign = Campaign(bench, _lab_inventory(), Profile(1, 2, 0, 1), tmp_path, seed=5,
                        modes=["swarm-overlay"], variants=("haproxy-r2",),
                        log=lambda _: None)  # fmt: skip
    campaign.tool_version, campaign.binary_sha = "wrk 4.1.0", {}
    monkeypatch.setattr(MODES["swarm-overlay"], "available", lambda ctx, path: None)
    monkeypatch.setattr(bench, "binaries", ())

    def measure(scenario):
        if on_measure is not None:
            on_measure()
        return Outcome(samples=[Sample("lb_requests_per_s", "1/s", 0, 5000.0)], window_s=2.0)

    monkeypatch.setattr(bench, "measure", measure)
    monkeypatch.setattr(bench, "release", lambda: None)
    monkeypatch.setattr(campaign, "_host_rows", lambda ctx, run: [])
    monkeypatch.setattr(campaign, "_headline", lambda row, samples: "")
    ctx = Context(inventory=campaign.inv, pool=pool, campaign=campaign.id)
    return campaign, ctx


def test_a_daemon_dead_after_a_swarm_step_stops_the_campaign_on_it(tmp_path, monkeypatch):
    pool = _Swarm([NODES])
    campaign, ctx = _lb_campaign(tmp_path, monkeypatch, pool,
                                 on_measure=lambda: pool.dead.add("node2"))  # fmt: skip
    with pytest.raises(RemoteError, match=r"on host node2: .*") as raised:
        campaign._measure_all(ctx, campaign.steps, SessionClock())
    assert "Is the docker daemon running?" in str(raised.value)
    assert campaign._current == campaign.steps[0]  # the step the stop names
    assert campaign.data.statuses() == {}  # nothing saved as measured
    # every server's daemon was asked, up to the dead one
    asked = [h for h, c in pool.commands if c[:2] == ["docker", "info"]]
    assert asked == ["node1", "node2"]


def test_a_swarm_node_down_during_the_step_fails_it_and_it_is_measured_again(
    tmp_path, monkeypatch
):
    down = "node1 ready\nnode2 down\nnode3 ready\n"
    # before and after the first attempt, then before and after the second
    pool = _Swarm([NODES, down, NODES, NODES])
    campaign, ctx = _lb_campaign(tmp_path, monkeypatch, pool)
    campaign._measure_all(ctx, campaign.steps, SessionClock())
    (step,) = campaign.steps
    assert campaign.data.statuses() == {step.key: "ok"}
    campaign.data.consolidate()
    from pipeline.data import schema

    (attempt,) = schema.read_table(tmp_path / "attempts.parquet", "runs").to_pylist()
    assert attempt["status"] == "failed"
    assert attempt["reason"].startswith(
        "a Swarm node changed state during the step (node2 ready -> down): Swarm reschedules "
        "the tasks of a node that goes down")


def test_swarm_changes_name_each_node_that_changed():
    before = swarm_nodes(_ctx(NODES), [SimpleNamespace(name="node1")])
    assert before == {"node1": "ready", "node2": "ready", "node3": "ready"}
    after = {**before, "node3": "down"}
    del after["node2"]
    assert swarm_changes(before, after) == "node2 ready -> absent; node3 ready -> down"
    assert swarm_changes(before, before) == ""
    assert swarm_changes({}, after) == "" and swarm_changes(before, {}) == ""  # not read


def test_a_scenario_without_swarm_asks_no_daemon(tmp_path, monkeypatch):
    from pipeline.benchmarks.coldstart import Coldstart

    campaign = Campaign(Coldstart(), _lab_inventory(), Profile(1, 1, 0, 0), tmp_path, seed=1,
                        modes=["docker-bridge"], log=lambda _: None)  # fmt: skip
    runner = campaign.runner
    assert runner.swarm_servers(None, MODES["docker-bridge"]) == []
    lb, _ = _lb_campaign(tmp_path / "lb", monkeypatch, _Swarm([NODES]))
    assert [h.name for h in lb.runner.swarm_servers(None, MODES["swarm-overlay"])] == [
        "node1", "node2", "node3"]  # fmt: skip


def _ctx(listing: str):
    return SimpleNamespace(pool=_Swarm([listing]))
