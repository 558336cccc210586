"""The lb benchmark in mode k8s-pod on the lab's Kubernetes cluster, through the real campaign
loop (the collection brings the cluster up itself): direct, HAProxy, nginx and the NodePort
Service with 1 and 2 replicas measured without errors at plausible rates, dnsrr skipped with
its reason (no cluster DNS), wrk's own output kept and re-parsable, and nothing left in the
cluster or on any node. Skipped, with the fix, where Kubernetes is not built (`make
kubernetes`, about 10 minutes: CI does not build it)."""

from __future__ import annotations

import ipaddress
import json

import pytest

from pipeline.analysis import lb as analysis
from pipeline.benchmarks.lb import KUBE_DNSRR_REASON, variant_names
from pipeline.lab import kubernetes as cluster
from tests.integration.lab_campaign import (
    ROOT_ONLY,
    ShortCampaigns,
    assert_lb_windows_plausible,
    assert_nothing_left,
    measured_wrk_log,
)

MISSING = cluster.missing_build()
# runs last: the cluster it brings up stays up (the next Kubernetes test reuses it)
pytestmark = [
    pytest.mark.lab, pytest.mark.runs_last, ROOT_ONLY,
    pytest.mark.skipif(bool(MISSING), reason=str(MISSING)),
]

OPTIONS = {"lb": {"replicas": "1,2", "connections": 24}}
MEASURED = ("direct", "haproxy", "nginx", "vip")
POD_NETWORK = ipaddress.ip_network("10.240.0.0/16")
NODES = {"node1", "node2", "node3"}


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    campaigns = ShortCampaigns(tmp_path_factory.mktemp("raw"), ["k8s-pod"], OPTIONS,
                               "kubernetes lb")  # fmt: skip
    runs, samples = campaigns("lb")
    yield runs, samples, campaigns.raw / "lb" / "lab"
    campaigns.report()


def _notes(row) -> dict:
    return json.loads(row.notes)


def test_every_variant_planned_and_dnsrr_says_why_not(collected):
    runs, _, _ = collected
    assert sorted(runs["variant"]) == sorted(variant_names((1, 2)))
    assert set(runs["mode"]) == {"k8s-pod"} and set(runs["path"]) == {"dc"}
    for row in runs.itertuples():
        if row.variant.startswith("dnsrr-"):
            assert row.status == "skipped" and row.reason == KUBE_DNSRR_REASON, row.reason
        else:
            assert row.status == "ok", (row.variant, row.reason)


def test_each_variant_deploys_and_dials_what_it_says(collected):
    runs, _, _ = collected
    for row in runs[runs["status"] == "ok"].itertuples():
        notes = _notes(row)
        balancer, replicas = row.variant.split("-r")[0], int(row.variant.split("-r")[1])
        assert notes["replicas"] == str(replicas) and notes["balancer"] == balancer
        placement = notes["placement"].split(",")
        assert len(placement) == replicas and set(placement) <= NODES, notes
        url = row.command.split()[-1]
        assert row.command.startswith("dc-client$ /usr/bin/wrk"), row.command
        host = url.split("//")[1].split(":")[0]
        if balancer == "vip":  # the first server's address, the node port
            assert url == "http://10.77.0.11:8080/", url
            assert notes["service"].startswith("NodePort ")
            assert notes["kube_proxy_mode"] == "iptables", notes
        else:  # the direct pod's or the balancer pod's IP, on the first server's node
            assert ipaddress.ip_address(host) in POD_NETWORK, url
            assert notes.get("balancer_node", notes["placement"]) == "node1", notes
        if balancer in ("haproxy", "nginx"):
            addresses = notes["replica_addresses"].split(",")
            assert all(ipaddress.ip_address(a) in POD_NETWORK for a in addresses)
            assert host not in addresses  # the balancer is a pod of its own
        assert 2.0 <= row.window_s <= 2.6, row.window_s  # warm-up and window as wrk timed them


def test_rates_plausible_and_no_errors(collected):
    runs, samples, _ = collected
    assert assert_lb_windows_plausible(runs, samples) == set(MEASURED)
    rates = samples[~samples["warmup"] & (samples["metric"] == "lb_requests_per_s")]
    print("k8s-pod req/s:", rates.set_index("variant")["value"].round().to_dict())


def test_the_analysis_gives_kubernetes_rows_against_its_own_direct_pod(collected):
    runs, samples, _ = collected
    summary = analysis.summarise(samples, runs)
    assert set(summary["mode"]) == {"k8s-pod"}
    ok = summary[summary["status"] == "ok"].set_index("variant")
    assert ok.loc["direct-r1", "ratio"] == 1.0
    assert ok.loc["direct-r1", "baseline_mode"] == "k8s-pod"
    assert ok.loc["vip-r2", "configuration"].startswith("Kubernetes Service (NodePort")


def test_raw_log_holds_the_config_and_wrks_output(collected):
    raw = measured_wrk_log(*collected, "haproxy-r2")
    assert "kubectl create ConfigMap/" in raw and raw.count("    server r") >= 2


def test_nothing_left_in_the_cluster_or_on_the_hosts(collected):
    assert_nothing_left()
