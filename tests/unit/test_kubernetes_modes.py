"""The Kubernetes modes without a cluster: the inventory section and its errors, the objects
the modes create, the image names containerd gives, node readiness and a pod's problem read
from kubectl's JSON, and the clean-up text (run against a fake kubectl)."""

import dataclasses
import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from pipeline import kube_objects
from pipeline.collect.inventory import InventoryError, load
from pipeline.collect.modes import MODES, NETWORK_MODES, STUDY_MODES, Workload
from pipeline.collect.modes import kubernetes as k8s
from pipeline.hosts import LABEL

ROOT = Path(__file__).resolve().parents[2]
K8S_MODES = ("k8s-pod", "k8s-hostnetwork", "k8s-nodeport", "k8s-clusterip")


def test_modes_registered_with_paths_and_the_cluster_they_need() -> None:
    assert {m: MODES[m].paths for m in K8S_MODES} == {
        "k8s-pod": ("dc",), "k8s-hostnetwork": ("dc", "internet"),
        "k8s-nodeport": ("dc", "internet"), "k8s-clusterip": ("dc",),
    }  # fmt: skip
    assert all(MODES[m].cluster == "kubernetes" for m in K8S_MODES)
    assert all(MODES[m].cluster is None for m in MODES if m not in K8S_MODES)
    assert set(K8S_MODES) <= set(NETWORK_MODES) and set(K8S_MODES) <= set(STUDY_MODES)
    assert hasattr(MODES["k8s-pod"], "foreground")  # cpu and memory run in a pod too


def _inventory(tmp_path: Path, section: object) -> Path:
    data = yaml.safe_load((ROOT / "inventory" / "lab.yaml").read_text())
    if section is None:
        data.pop("kubernetes")
    else:
        data["kubernetes"] = section
    path = tmp_path / "inv.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_lab_inventory_names_its_cluster() -> None:
    inv = load(ROOT / "inventory" / "lab.yaml", MODES, check_files=False)
    assert inv.kubernetes is not None
    assert inv.kubernetes.host == "node1" and inv.kubernetes.namespace == "default"
    version = (ROOT / "tools" / "kubernetes" / "VERSION").read_text().strip()
    assert inv.kubernetes.kubectl.endswith(f"/kubernetes/{version}/kubectl")  # the built release
    assert "{node}" in inv.kubernetes.containerd_socket


def test_section_defaults(tmp_path: Path) -> None:
    section = {"kubeconfig": "/root/.kube/config", "namespace": "co"}
    inv = load(_inventory(tmp_path, section), MODES, check_files=False)
    assert inv.kubernetes == k8s.Kubernetes(kubeconfig="/root/.kube/config", namespace="co")
    assert inv.kubernetes.kubectl == "kubectl" and inv.kubernetes.host is None
    assert inv.kubernetes.containerd_socket == "/run/containerd/containerd.sock"
    assert load(_inventory(tmp_path, None), MODES, check_files=False).kubernetes is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kubeconfig": "admin.conf"}, "kubernetes.kubeconfig: must be an absolute path"),
        ({"namespace": "Bench_1"}, "is not a Kubernetes namespace name"),
        ({"host": "node9"}, "kubernetes.host: names unknown host 'node9'"),
        ({"kubectl": "bin/kubectl"}, "kubernetes.kubectl: must be an absolute path"),
        ({"containerd_socket": "containerd.sock"}, "containerd_socket: must be an absolute"),
        ({"nodes": {"node1": "Worker_1"}}, "is not a Kubernetes node name"),
        ({"nodes": {"nodeX": "w1"}}, "kubernetes.nodes.nodeX: names unknown host"),
        ({"kubeconfg": "/x"}, "kubernetes.kubeconfg"),
    ],
)
def test_bad_section_names_the_key_and_the_fix(tmp_path: Path, change: dict, message: str):
    section = {"kubeconfig": "/etc/kubernetes/admin.conf", "namespace": "co", **change}
    with pytest.raises(InventoryError) as error:
        load(_inventory(tmp_path, section), MODES, check_files=False)
    assert message in str(error.value)


def test_missing_keys_and_a_host_without_a_role(tmp_path: Path) -> None:
    with pytest.raises(InventoryError) as error:
        load(_inventory(tmp_path, {"host": "node1"}), MODES, check_files=False)
    assert "kubernetes.kubeconfig: required key is missing" in str(error.value)
    assert "kubernetes.namespace: required key is missing" in str(error.value)
    path = _inventory(tmp_path, {"kubeconfig": "/k", "namespace": "co", "host": "wan-router"})
    data = yaml.safe_load(path.read_text())
    data["hosts"]["wan-router"] = {"address": "10.77.0.30"}
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(InventoryError) as error:
        load(path, MODES, check_files=False)
    assert "kubernetes.host: host 'wan-router' plays no role" in str(error.value)


WORKLOAD = Workload("throughput", ("/usr/bin/iperf3", "--server", "--port", "5201"), 5201)


def test_pod_is_pinned_local_and_labelled() -> None:
    labels = {LABEL: "c1", k8s.WORKLOAD_LABEL: "throughput-server"}
    pod = kube_objects.pinned_pod("co-x", "node1", "img:1", list(WORKLOAD.argv), labels)
    spec = pod["spec"]
    assert spec["nodeName"] == "node1" and spec["hostNetwork"] is False
    (container,) = spec["containers"]
    assert container["imagePullPolicy"] == "Never"  # no registry: the imported image only
    assert container["command"] == list(WORKLOAD.argv)  # the argv as run natively
    assert pod["metadata"]["labels"] == labels
    host = kube_objects.pinned_pod("h", "n", "i", ["x"], {}, host_network=True)
    assert host["spec"]["hostNetwork"]


def test_services_serve_the_benchmark_port_and_udp_when_it_does() -> None:
    sel = {"a": "b"}
    node = k8s.service_manifest("s", sel, WORKLOAD, "NodePort", {})
    assert node["spec"]["ports"] == [
        {"name": "tcp", "protocol": "TCP", "port": 5201, "targetPort": 5201, "nodePort": 5201}
    ]
    udp = Workload("latency", ("/x",), 11111, udp=True)
    cluster = k8s.service_manifest("s", sel, udp, "ClusterIP", {})
    assert [p["protocol"] for p in cluster["spec"]["ports"]] == ["TCP", "UDP"]
    assert all("nodePort" not in p for p in cluster["spec"]["ports"])
    assert cluster["spec"]["selector"] == sel and cluster["spec"]["type"] == "ClusterIP"


def test_object_names_are_dns_labels() -> None:
    ctx = type("C", (), {"campaign": "0123456789abcdef"})()
    name = k8s.object_name(ctx, "k8s-clusterip", Workload("A_very-long" * 8, ("/x",), 1), "c")
    assert len(name) <= 63 and name == name.lower() and not name.endswith("-")


@pytest.mark.parametrize(
    ("tag", "ref"),
    [
        ("container-overhead-tools:abc", "docker.io/library/container-overhead-tools:abc"),
        ("me/tools:1", "docker.io/me/tools:1"),
        ("registry.example:5000/tools:1", "registry.example:5000/tools:1"),
        ("localhost/tools:1", "localhost/tools:1"),
    ],
)
def test_containerd_names_docker_tags_as_the_kubelet_does(tag: str, ref: str) -> None:
    assert k8s.containerd_ref(tag) == ref


def _node(name: str, ready: str) -> dict:
    return {"metadata": {"name": name},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                                      {"type": "Ready", "status": ready}]}}  # fmt: skip


def test_ready_nodes_and_pod_problem() -> None:
    nodes = {"items": [_node("node1", "True"), _node("node2", "False"), _node("node3", "True")]}
    assert k8s.ready_nodes(json.dumps(nodes)) == {"node1", "node3"}
    waiting = {"reason": "ErrImageNeverPull", "message": "image not present with policy Never"}
    pod = {"status": {"phase": "Pending", "containerStatuses": [{"state": {"waiting": waiting}}],
                      "conditions": [{"type": "Ready", "status": "False",
                                      "message": "containers not ready"}]}}  # fmt: skip
    text = k8s.pod_problem(json.dumps(pod))
    assert "phase Pending" in text and "ErrImageNeverPull" in text and "not ready" in text
    assert k8s.pod_problem("not json") == "its status could not be read"


def test_cleanup_deletes_only_labelled_objects(tmp_path: Path) -> None:
    """The clean-up text against a fake kubectl that logs its arguments: it lists Deployments,
    pods and Services by the campaign label and deletes exactly what it listed; without
    kubectl it does nothing."""
    log = tmp_path / "calls"
    fake = tmp_path / "kubectl"
    listed = "echo deployment.apps/co-d; echo pod/co-a; echo service/co-b"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {log}\ncase "$*" in *" get "*) {listed};; esac\n')
    fake.chmod(0o755)
    settings = k8s.Kubernetes(kubeconfig="/k c", namespace="co", kubectl=str(fake))
    out = subprocess.run(["sh", "-c", k8s.cleanup_script(settings)], capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    assert out.strip() == "kubernetes: objects=3"
    get, delete = log.read_text().splitlines()
    # a Deployment too (its pods would come back without it), lb's ConfigMaps
    assert f"get deployments.apps,pods,services,configmaps --selector {LABEL}" in get
    assert "--kubeconfig /k c --namespace co" in get
    assert delete.endswith("deployment.apps/co-d pod/co-a service/co-b") and " delete " in delete
    left = subprocess.run(["sh", "-c", k8s.leftovers_script(settings)], capture_output=True,
                          text=True, check=True).stdout.split()  # fmt: skip
    assert left == ["kubernetes:deployment.apps/co-d", "kubernetes:pod/co-a",
                    "kubernetes:service/co-b"]  # fmt: skip
    gone = dataclasses.replace(settings, kubectl=str(tmp_path / "absent"))
    assert subprocess.run(["sh", "-c", k8s.cleanup_script(gone)], capture_output=True,
                          text=True, check=True).stdout == ""  # fmt: skip


class _Cluster:
    """A session on the kubectl host answering like a cluster would (``answers``: a word of
    the command -> (status, stdout))."""

    def __init__(self, answers: dict[str, tuple[int, str]]) -> None:
        self.answers = answers
        self.commands: list[str] = []

    def run(self, argv, **_):
        text = " ".join(argv) if isinstance(argv, list) else argv
        self.commands.append(text)
        for word, (status, out) in self.answers.items():
            if word in text:
                error = "refused" if status else ""
                return SimpleNamespace(status=status, stdout=out, stderr=error)
        return SimpleNamespace(status=0, stdout="", stderr="")


def _context(answers: dict[str, tuple[int, str]]):
    from pipeline.collect.modes import Context

    inv = load(ROOT / "inventory" / "lab.yaml", MODES, check_files=False)
    session = _Cluster(answers)
    return Context(inventory=inv, pool=dict.fromkeys(inv.hosts, session), campaign="c"), session


READY = json.dumps({"items": [_node("node1", "True"), _node("node2", "True")]})


@pytest.mark.parametrize(
    ("answers", "reason"),
    [
        ({"command -v": (1, "")}, "is not on node1: for the lab, `make kubernetes` builds it"),
        ({"get nodes": (1, "")}, "the Kubernetes API does not answer kubectl on node1 (refused)"),
        ({"get nodes": (0, "<html>")}, "printed no node list"),
        ({"get nodes": (0, READY), "get namespace": (1, "")},
         "namespace default does not exist in the cluster: create it"),
        ({"get nodes": (0, json.dumps({"items": [_node("node1", "True")]}))},
         "Kubernetes node node2 (server node2) is not Ready or not in the cluster (Ready: node1)"),
        ({"get nodes": (0, READY)}, None),
    ],
)  # fmt: skip
def test_the_cluster_check_names_what_is_missing(answers, reason):
    ctx, session = _context(answers)
    got = k8s.cluster_problem(ctx)
    assert got is None if reason is None else reason in got, got
    assert all("--kubeconfig" in c for c in session.commands[1:])  # kubectl, on the kubectl host
    inv_without = dataclasses.replace(ctx.inventory, kubernetes=None)
    ctx.inventory = inv_without
    assert "the inventory names no Kubernetes cluster" in k8s.cluster_problem(ctx)


def test_the_lab_runs_its_cluster_only_for_campaigns_that_plan_a_kubernetes_mode(monkeypatch):
    """collect() tells the provider which orchestrators the planned modes need; the lab then
    asks for its cluster (True) or takes a running one down (False), and never where the
    build is missing (the modes are skipped, saying so) or the inventory names no cluster."""
    from pipeline import environments, lab
    from pipeline.collect import campaign
    from pipeline.lab import kubernetes as cluster

    asked: list[set] = []

    class Stop(Exception):
        pass

    class Recorder:
        def ready(self, wan, log, clusters=()):
            asked.append(set(clusters))
            raise Stop

    inventory_file = ROOT / "inventory" / "lab.yaml"
    for benchmark, modes in (("throughput", ["k8s-pod"]), ("throughput", ["docker-host"]),
                             ("cpu", None), ("footprint", None)):  # fmt: skip
        with pytest.raises(Stop):
            campaign.collect(benchmark, inventory_file, "/nonexistent", None, 1, modes=modes,
                             provider=Recorder())  # fmt: skip
    assert asked == [{"kubernetes"}, set(), {"kubernetes"}, set()]  # footprint: no k8s mode

    calls, logs = [], []
    monkeypatch.setattr(lab, "up", lambda *a, **k: calls.append(k["kubernetes"]))
    monkeypatch.setattr(environments.EmbeddedLab, "login", lambda self: None)
    monkeypatch.setattr(cluster, "missing_build", lambda: None)
    # the preflight (its own tests: test_preflight*.py) needs the lab's keys and hosts
    monkeypatch.setattr(environments.preflight, "require", lambda *a, **k: None)
    inv = load(inventory_file, MODES, check_files=False)
    provider = environments.EmbeddedLab(inv)
    provider.ready(None, logs.append, {"kubernetes"})
    provider.ready(None, logs.append, set())
    environments.EmbeddedLab(dataclasses.replace(inv, kubernetes=None)).ready(
        None, logs.append, {"kubernetes"}
    )
    monkeypatch.setattr(cluster, "missing_build", lambda: "not cached: run `make kubernetes`")
    provider.ready(None, logs.append, {"kubernetes"})
    assert calls == [True, False, False, False]
    assert "the Kubernetes modes will be skipped: not cached: run `make kubernetes`" in logs
