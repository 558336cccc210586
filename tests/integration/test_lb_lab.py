"""The lb benchmark on the embedded lab's 3-node Swarm, through the campaign loop, on the smoke
profile: direct, HAProxy, nginx and dnsrr with 1 and 2 replicas measured without errors, the
VIP / routing mesh skipped with the IPVS reason (this kernel has none), wrk's own output kept
and re-parsable, and no container, service or network left on any node."""

import json
import os
import re

import pytest

from pipeline.benchmarks.lb import SHARED, variant_names
from tests.integration.lab_campaign import (
    ROOT_ONLY,
    assert_lb_windows_plausible,
    assert_nothing_left,
    measured_wrk_log,
    smoke_settings,
)

pytestmark = [pytest.mark.lab, ROOT_ONLY]

PROFILE, OPTIONS = smoke_settings("lb")
assert PROFILE.runs == 1, "the checks below read one run per variant"
MEASURED = ("direct", "haproxy", "nginx", "dnsrr")


@pytest.fixture(scope="module")
def collected(smoke_repo):
    return smoke_repo.collected("lb")


def _has_ipvs() -> bool:
    return os.path.exists("/proc/net/ip_vs")  # the lab's nodes share this kernel


def test_every_variant_is_planned_once_in_swarm_overlay(collected):
    runs, _, _ = collected
    counts = tuple(int(r) for r in OPTIONS["replicas"].split(","))
    assert sorted(runs["variant"]) == sorted(variant_names(counts))
    assert set(runs["mode"]) == {"swarm-overlay"} and set(runs["path"]) == {"dc"}


def test_balancers_ran_and_vip_says_why_not(collected):
    runs, _, _ = collected
    for row in runs.itertuples():
        balancer = row.variant.split("-")[0]
        if balancer == "vip" and not _has_ipvs():
            assert row.status == "skipped" and "IPVS" in row.reason, row.reason
            continue
        assert row.status == "ok", (row.variant, row.reason)
        assert row.image.startswith("container-overhead/tools:")
        notes = json.loads(row.notes)
        replicas = int(row.variant.split("-r")[1])
        assert notes["replicas"] == str(replicas)
        assert len(notes["placement"].split(",")) == replicas
        assert set(notes["placement"].split(",")) <= {"node1", "node2", "node3"}
        if balancer == "haproxy":
            assert notes["balancer_version"].startswith("HAProxy version 2.6")
        if balancer == "nginx":
            assert notes["balancer_version"].startswith("nginx version: nginx/")
        if balancer == "dnsrr":  # wrk's threads dialled every task address
            assert len(notes["client_addresses"].split(",")) == replicas
            assert notes["client_addresses"] == ",".join(sorted(
                f"{a}:8080" for a in notes["replica_addresses"].split(",")))  # fmt: skip
            assert "wrk" in row.command and "--network" in row.command
        elif balancer != "vip":  # load from the dc client, natively
            assert row.command.startswith("dc-client$ /usr/bin/wrk")
        # seconds under load: the warm-up and the window as wrk timed them (+ its last reads)
        assert 3.0 <= row.window_s <= 3.6, row.window_s


def test_balancers_of_one_replica_count_share_one_service_in_a_run(collected):
    runs, _, _ = collected
    ok = runs[runs["status"] == "ok"]
    notes = {row.variant: json.loads(row.notes) for row in ok.itertuples()}
    for n in (int(r) for r in OPTIONS["replicas"].split(",")):
        trio = [notes[f"{b}-r{n}"] for b in ("haproxy", "nginx", "dnsrr")]
        assert len({t["replica_service"] for t in trio}) == 1, trio
        assert len({t["replica_addresses"] for t in trio}) == 1  # the same tasks
        # named by the group and the ordinal of the step that started it
        assert re.search(rf"-dnsrr-service-r{n}-\d+-replicas$", trio[0]["replica_service"])
        # measured back to back (the campaign's random order inside the group)
        orders = sorted(ok[ok["variant"].isin([f"{b}-r{n}" for b in SHARED])]["order"])
        assert orders == list(range(orders[0], orders[0] + 3)), orders
    assert "replica_service" not in notes["direct-r1"]  # one plain container, no service


def test_rates_plausible_and_no_errors(collected):
    runs, samples, _ = collected
    assert assert_lb_windows_plausible(runs, samples) >= set(MEASURED)


def test_raw_log_holds_wrks_output(collected):
    raw = measured_wrk_log(*collected, "haproxy-r2")
    assert "balance roundrobin" in raw and raw.count("    server r") == 2  # the config used


def test_nothing_left_on_any_node(collected):
    assert_nothing_left()
