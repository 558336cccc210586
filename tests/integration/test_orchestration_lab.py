"""The orchestration benchmark on the embedded lab's 3-node Swarm, through the campaign loop,
with the smoke cap: every variant ok, one sample per repetition, every wanted replica counted
as accepting, the cap recorded, and no service, network or probe container left behind."""

import json

import pytest

from pipeline.benchmarks.orchestration import TIMEOUT_S, replicas
from tests.integration.lab_campaign import (
    ROOT_ONLY,
    assert_nothing_left,
    lab_session,
    smoke_settings,
)

pytestmark = [pytest.mark.lab, ROOT_ONLY]

PROFILE, OPTIONS = smoke_settings("orchestration")
CAP = OPTIONS["max_replicas"]
assert PROFILE.runs == 1 and CAP < 10, "the checks below read one run, every scale capped"
VARIANTS = ("create", "scale-10", "scale-50", "update-10")


@pytest.fixture(scope="module")
def collected(smoke_repo):
    return smoke_repo.collected("orchestration")[:2]


def test_every_variant_ran_in_swarm_overlay(collected):
    runs, _ = collected
    assert sorted(runs["variant"]) == sorted(VARIANTS)
    assert set(runs["mode"]) == {"swarm-overlay"} and set(runs["path"]) == {"host"}
    for row in runs.itertuples():
        assert row.status == "ok", (row.variant, row.reason)
        assert row.server_host == "node1"  # the Swarm manager runs the probe and the clock
        assert "nsenter --net=/proc/" in row.command and "orchestration_probe.py" in row.command
        assert row.image.startswith("container-overhead/tools:")


def test_one_time_per_repetition_within_the_bound(collected):
    runs, samples = collected
    assert not samples["warmup"].any()
    times = samples[samples["metric"] == "orchestration_s"]
    assert set(times["unit"]) == {"s"}
    for variant in VARIANTS:
        mine = times[times["variant"] == variant]
        assert len(mine) == OPTIONS["repeats"], variant
        assert ((mine["value"] > 0) & (mine["value"] < TIMEOUT_S)).all(), mine["value"].tolist()
        # the duty cycle's numerator is the timed seconds themselves
        row = runs[runs["variant"] == variant].iloc[0]
        assert row.window_s == pytest.approx(mine["value"].sum(), abs=1e-9)


def test_every_wanted_replica_accepted_and_the_cap_is_recorded(collected):
    runs, samples = collected
    counts = samples[samples["metric"] == "orchestration_replicas"]
    for row in runs.itertuples():
        want = replicas(row.variant, CAP)
        assert want == (1 if row.variant == "create" else CAP)
        mine = counts[counts["variant"] == row.variant]
        assert mine["value"].tolist() == [want] * OPTIONS["repeats"], row.variant
        notes = json.loads(row.notes)
        assert notes["max_replicas"] == str(CAP) and notes["replicas"] == str(want)
        assert notes["capped"] == ("false" if row.variant == "create" else "true")
        assert notes["docker_version"] and notes["endpoint_mode"].startswith("dnsrr")
        placed = dict(p.split("=") for p in notes["placement"].split(","))
        assert set(placed) <= {"node1", "node2", "node3"}
        assert sum(int(n) for n in placed.values()) == want, notes["placement"]


def test_nothing_is_left_on_any_node(collected):
    assert_nothing_left()
    with lab_session() as (inv, pool, _):
        services = pool[inv.manager.name].run(["docker", "service", "ls", "--format", "{{.Name}}"])
        assert not [s for s in services.stdout.split() if "-orchestration-" in s]
