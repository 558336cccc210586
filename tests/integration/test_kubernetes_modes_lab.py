"""The Kubernetes modes on the lab's cluster: one short campaign of each benchmark they apply
to, through the real campaign loop (the collection brings the cluster up itself, since the
campaign plans a Kubernetes mode). Every step is ok; the pods run the native binary; the
client dials what the mode says (pod IP, node address, Service address from a client pod);
orchestration's Deployment answers at every replica count; nothing is left in the cluster or
on any node. Skipped, with the fix, where Kubernetes is not built (`make kubernetes`, about
10 minutes: CI does not build it)."""

from __future__ import annotations

import ipaddress
import json
import os

import pandas as pd
import pytest

from pipeline.lab import kubernetes as cluster
from tests.integration.lab_campaign import ROOT_ONLY, ShortCampaigns, assert_nothing_left

MISSING = cluster.missing_build()
# runs last: the cluster it brings up stays up (the next Kubernetes test reuses it)
pytestmark = [
    pytest.mark.lab, pytest.mark.runs_last, ROOT_ONLY,
    pytest.mark.skipif(bool(MISSING), reason=str(MISSING)),
]

MODES = ["k8s-pod", "k8s-hostnetwork", "k8s-nodeport", "k8s-clusterip"]
# By default one benchmark per way a Kubernetes mode runs a tool: a network server with a TCP
# and a UDP client (throughput), a host tool in a pod (cpu, its compile too; disk, in the pod's
# container layer), the Deployment (orchestration), pods started by the cold-start timer: about
# 3 minutes. CONTAINER_OVERHEAD_K8S_BENCHMARKS=all adds latency, HTTP,
# memory and syscall (about 3.5 minutes).
EVERY = os.environ.get("CONTAINER_OVERHEAD_K8S_BENCHMARKS") == "all"
NETWORK = ("throughput", "latency", "http") if EVERY else ("throughput",)
HOST = ("cpu", "disk", "memory", "syscall") if EVERY else ("cpu", "disk")
OPTIONS = {
    "cpu": {"compile_packages": "errors"},
    "disk": {"file_mib": 8},
    "coldstart": {"starts": 3, "warmup_starts": 1},
    "orchestration": {"max_replicas": 3, "repeats": 1},
}
HEADLINE = {"throughput": "tcp_throughput_received", "latency": "udp_rtt", "http": "http_latency"}
POD_NETWORK = ipaddress.ip_network("10.240.0.0/16")
SERVICES = ipaddress.ip_network("10.241.0.0/24")


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    campaigns = ShortCampaigns(tmp_path_factory.mktemp("raw"), MODES, OPTIONS, "kubernetes modes")
    yield campaigns
    campaigns.report()


def _ok(runs: pd.DataFrame) -> pd.DataFrame:
    bad = runs[runs["status"] != "ok"]
    assert bad.empty, bad[["mode", "variant", "status", "reason"]].to_string()
    return runs


@pytest.mark.parametrize("benchmark", NETWORK)
def test_network_benchmark_runs_in_every_kubernetes_mode(collected, benchmark):
    runs, samples = collected(benchmark)
    runs = _ok(runs)
    assert set(runs["mode"]) == {"native", *MODES}  # native planned beside them
    native = runs.loc[runs["mode"] == "native", "binary_sha256"].iloc[0]
    for row in runs[runs["mode"] != "native"].itertuples():
        assert row.binary_sha256 == native, row  # the pods run the native binary
        assert row.server_host == "node1", row
        # the client pod is reached through kubectl on node1; the others dial from dc-client
        assert row.client_host == ("node1" if row.mode == "k8s-clusterip" else "dc-client"), row
    measured = samples[~samples["warmup"]]
    assert set(measured["mode"]) == {"native", *MODES}
    headline = measured[measured["metric"] == HEADLINE[benchmark]]
    medians = headline.groupby("mode")["value"].median()
    assert set(medians.index) == {"native", *MODES} and (medians > 0).all(), medians


def test_each_mode_dials_what_it_says(collected):
    runs, _ = collected("throughput")
    commands = dict(zip(runs["mode"], runs["command"], strict=False))
    address = {m: next(w for w in commands[m].split() if w.count(".") == 3 and
                       w.replace(".", "").isdigit()) for m in MODES}  # fmt: skip
    assert ipaddress.ip_address(address["k8s-pod"]) in POD_NETWORK
    assert address["k8s-hostnetwork"] == address["k8s-nodeport"] == "10.77.0.11"
    assert ipaddress.ip_address(address["k8s-clusterip"]) in SERVICES
    assert "kubectl" in commands["k8s-clusterip"] and " exec " in commands["k8s-clusterip"]


@pytest.mark.parametrize("benchmark", HOST)
def test_host_benchmark_runs_in_a_pod(collected, benchmark):
    runs, samples = collected(benchmark)
    runs = _ok(runs)
    assert set(runs["mode"]) == {"k8s-pod"}  # host benchmarks plan only the named modes
    assert runs["command"].str.contains(" exec ").all()
    measured = samples[~samples["warmup"]]
    assert (measured.groupby("metric")["value"].median() > 0).all()


def test_orchestration_scales_and_updates_a_deployment(collected):
    runs, samples = collected("orchestration")
    runs = _ok(runs)
    assert set(runs["mode"]) == {"k8s-pod"}
    assert set(runs["variant"]) == {"create", "scale-10", "scale-50", "update-10"}
    timed = samples[samples["metric"] == "orchestration_s"]
    assert ((timed["value"] > 0) & (timed["value"] < 120)).all()
    reached = samples[samples["metric"] == "orchestration_replicas"]
    by_variant = reached.groupby("variant")["value"].max().to_dict()
    assert by_variant == {"create": 1, "scale-10": 3, "scale-50": 3, "update-10": 3}


def test_coldstart_times_pods_to_their_first_answer(collected):
    runs, samples = collected("coldstart")
    runs = _ok(runs)
    assert set(runs["mode"]) == {"k8s-nodeport", "k8s-hostnetwork"}
    assert runs["command"].str.contains("kubectl").all()
    for row in runs.itertuples():
        notes = json.loads(row.notes)
        assert notes["engine"] == "kubernetes" and notes["kubernetes_node"] == "node1", notes
        assert ("service" in notes) == (row.mode == "k8s-nodeport"), notes
    starts = samples[(samples["metric"] == "coldstart_s") & ~samples["warmup"]]
    assert starts.groupby("mode").size().to_dict() == {"k8s-nodeport": 3, "k8s-hostnetwork": 3}
    assert ((starts["value"] > 0.05) & (starts["value"] < 30)).all(), starts["value"]


def test_nothing_left_in_the_cluster_or_on_the_hosts(collected):
    for benchmark in (*NETWORK, *HOST, "orchestration", "coldstart"):
        collected(benchmark)
    assert_nothing_left()
