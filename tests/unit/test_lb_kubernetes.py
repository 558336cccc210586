"""The `lb` benchmark in mode k8s-pod without a cluster: the manifests it creates (the same pod
settings as the Kubernetes modes' pods, the campaign label on every object, the balancer's
config as a ConfigMap), which variants are skipped and why, and a whole step against a fake
kubectl: what it dials, what it notes, and that everything it created is deleted, also when
the load fails."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipeline import kube_objects
from pipeline.benchmarks import ToolOutputError
from pipeline.benchmarks.base import Scenario, Window
from pipeline.benchmarks.lb import (
    BACKEND_CONF,
    CONF_DIR,
    KUBE_DNSRR_REASON,
    NGINX,
    PORT,
    Lb,
    balancer_argv,
    kube_config_map,
    kube_deployment,
    kube_labels,
    kube_name,
    kube_node_port,
    kube_pod,
    parse_pods,
    render_config,
)
from pipeline.benchmarks.orchestration import APP_LABEL
from pipeline.collect import inventory
from pipeline.collect.modes import MODES, Context, Workload
from pipeline.collect.modes import kubernetes as k8s
from pipeline.hosts import LABEL, ModeUnavailable

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
BACKEND = [NGINX, "-e", "stderr", "-c", BACKEND_CONF]
PODS = "co-x-replicas-1 node2 10.240.2.7\nco-x-replicas-2 node3 10.240.3.9\n"


# ---- manifests ---------------------------------------------------------------------------


def test_a_pinned_pod_is_the_kubernetes_modes_pod():
    labels = kube_labels("c0ffee", "co-x-direct")
    assert labels == {LABEL: "c0ffee", APP_LABEL: "co-x-direct"}
    mine = kube_pod("co-x-direct", "node1", "tools:1", BACKEND, labels)
    assert mine == kube_objects.pinned_pod("co-x-direct", "node1", "tools:1", BACKEND, labels)


def test_the_balancer_pod_reads_its_config_from_the_config_map():
    name, argv = balancer_argv("haproxy")
    assert argv[-1] == f"{CONF_DIR}/{name}" == "/tmp/co-lb/haproxy.cfg"
    assert balancer_argv("nginx")[1][-1] == f"{CONF_DIR}/nginx-lb.conf"
    pod = kube_pod("co-x-haproxy", "node1", "tools:1", argv, {LABEL: "c"}, config="co-x-conf")
    spec = pod["spec"]
    assert spec["nodeName"] == "node1" and spec["containers"][0]["command"] == argv
    assert spec["volumes"] == [{"name": "conf", "configMap": {"name": "co-x-conf"}}]
    assert spec["containers"][0]["volumeMounts"] == [
        {"name": "conf", "mountPath": CONF_DIR, "readOnly": True}
    ]
    conf = render_config("haproxy", ["10.240.2.7", "10.240.3.9"])
    cm = kube_config_map("co-x-conf", name, conf, {LABEL: "c"})
    assert cm["kind"] == "ConfigMap" and cm["data"] == {"haproxy.cfg": conf}
    assert cm["metadata"]["labels"] == {LABEL: "c"}


def test_the_deployment_places_replicas_on_the_servers_nodes_only():
    labels = kube_labels("c0ffee", "co-x-replicas")
    d = kube_deployment("co-x-replicas", 4, ["node1", "node2"], "tools:1", BACKEND, labels)
    assert d["spec"]["replicas"] == 4 and d["metadata"]["labels"] == labels
    assert d["spec"]["selector"] == {"matchLabels": {APP_LABEL: "co-x-replicas"}}
    template = d["spec"]["template"]
    assert template["metadata"]["labels"][LABEL] == "c0ffee"  # the pods carry it too
    container = template["spec"]["containers"][0]
    assert container["command"] == BACKEND and container["imagePullPolicy"] == "Never"
    terms = template["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]  # fmt: skip
    assert terms == [  # one term per node: a node-name field selector takes one value
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        for node in ("node1", "node2")
    ]


def test_the_node_port_service_is_the_nodeport_modes_service():
    selector, labels = {APP_LABEL: "co-x-replicas"}, kube_labels("c", "co-x-service")
    mine = kube_node_port("co-x-service", selector, labels)
    workload = Workload(name="lb", argv=(), port=PORT)
    assert mine == k8s.service_manifest("co-x-service", selector, workload, "NodePort", labels)
    assert mine["spec"]["ports"][0]["nodePort"] == PORT


def test_names_are_dns_labels_and_pod_rows_need_an_address():
    name = kube_name("co-C0FFEE1234-lb-k8s-pod", "haproxy-r64", "x" * 60)
    assert len(name) <= 63 and name == name.lower() and not name.endswith("-")
    assert parse_pods(PODS + "co-x-replicas-3 node1\n") == [
        ("co-x-replicas-1", "node2", "10.240.2.7"),
        ("co-x-replicas-2", "node3", "10.240.3.9"),
    ]
    assert "configmaps" in k8s.LABELLED_KINDS.split(",")  # clean-up and leftovers see them


# ---- a step against a fake kubectl -------------------------------------------------------


class _FakeCluster:
    """Answers kubectl (and the dc client's curl and wrk) as a healthy 3-node cluster would;
    keeps the manifests created and the objects deleted."""

    def __init__(self, wrk: str) -> None:
        self.wrk, self.commands = wrk, []
        self.created: list[dict] = []
        self.deleted: list[str] = []
        self.lingering = 0  # polls that still list the Deployment's pods after its removal

    def __getitem__(self, host_name):
        return self

    def run(self, command, timeout=None, check=True, stdin=None, root=None):
        text = command if isinstance(command, str) else " ".join(command)
        self.commands.append(text)
        out = ""
        if " create --filename -" in text:
            self.created.append(json.loads(stdin))
        elif " delete " in text and "--wait=true" in text:
            self.deleted += [w for w in text.split() if "/" in w and not w.startswith("/")]
        elif "jsonpath={.status.podIP}" in text:
            out = "10.240.1.5\n"
        elif "get pods" in text and "status.phase=Running" in text:
            wanted = next(m["spec"]["replicas"] for m in self.created if m["kind"] == "Deployment")
            out = "".join(PODS.splitlines(keepends=True)[:wanted])
        elif "get pods" in text and "--output name" in text:
            if self.lingering:
                self.lingering -= 1
                out = "pod/co-x-replicas-1\n"
        elif "endpointslices" in text:
            out = "true true"
        elif "proxyMode" in text:
            out = "iptables"
        elif text.startswith("/usr/bin/wrk"):
            out = self.wrk
        return SimpleNamespace(status=0, stdout=out, stderr="")

    def kinds(self) -> list[str]:
        return [m["kind"] for m in self.created]


def _step(fake, bench, variant, monkeypatch):
    monkeypatch.setattr(k8s, "PROXY_SYNC_S", 0.0)
    inv = inventory.load(ROOT / "inventory" / "lab.yaml", MODES, check_files=False)
    ctx = Context(inventory=inv, pool=fake, campaign="c0ffee")
    ctx.kubernetes_image = lambda host: SimpleNamespace(tag="tools:1")
    ctx.missing_tool = lambda host, *tools: None
    scenario = Scenario(ctx, "k8s-pod", None, inv.servers[0], variant, 1, Window(2), Window(1),
                        "co-c0ffee-lb-k8s-pod")  # fmt: skip
    return bench.measure(scenario)


def _data(name: str) -> str:
    return (DATA / name).read_text()


def test_dnsrr_is_skipped_with_its_reason_before_anything_is_created(monkeypatch):
    fake = _FakeCluster(_data("lb-wrk-haproxy-r2-2s.txt"))
    with pytest.raises(ModeUnavailable) as found:
        _step(fake, Lb(), "dnsrr-r2", monkeypatch)
    assert str(found.value) == KUBE_DNSRR_REASON and "DNS" in KUBE_DNSRR_REASON
    assert fake.created == [] and fake.commands == []


def test_a_balancer_step_creates_replicas_config_and_pod_and_deletes_them(monkeypatch):
    fake, bench = _FakeCluster(_data("lb-wrk-haproxy-r2-2s.txt")), Lb()
    fake.lingering = 2
    out = _step(fake, bench, "haproxy-r2", monkeypatch)
    assert fake.kinds() == ["Deployment", "ConfigMap", "Pod"]
    for manifest in fake.created:
        assert manifest["metadata"]["labels"][LABEL] == "c0ffee", manifest
    deployment, config, pod = fake.created
    assert deployment["spec"]["replicas"] == 2
    # the config lists the replicas' pod IPs, and the balancer pod mounts it
    assert config["data"]["haproxy.cfg"] == render_config("haproxy", ["10.240.2.7", "10.240.3.9"])
    assert pod["spec"]["nodeName"] == "node1"
    assert pod["spec"]["volumes"][0]["configMap"]["name"] == config["metadata"]["name"]
    assert (
        out.command.startswith("dc-client$ /usr/bin/wrk")
        and "http://10.240.1.5:8080/" in out.command
    )
    assert out.notes["placement"] == "node2,node3" and out.notes["balancer_node"] == "node1"
    assert out.notes["replica_addresses"] == "10.240.2.7,10.240.3.9"
    assert "balancer pod's IP 10.240.1.5" in out.notes["client"]
    # every object deleted, the balancer first; the replicas' pods waited for at the loop end
    assert fake.deleted[-3:] == [f"pod/{pod['metadata']['name']}",
                                 f"configmap/{config['metadata']['name']}",
                                 f"deployment/{deployment['metadata']['name']}"]  # fmt: skip
    assert len(bench.draining) == 1
    bench.release()
    assert bench.draining == [] and fake.lingering == 0
    assert "kubectl create ConfigMap/" in out.raw and "server r2 10.240.3.9:8080" in out.raw


def test_vip_is_a_node_port_service_dialled_at_the_first_servers_address(monkeypatch):
    fake = _FakeCluster(_data("lb-wrk-haproxy-r2-2s.txt"))
    out = _step(fake, Lb(), "vip-r2", monkeypatch)
    assert fake.kinds() == ["Deployment", "Service"]
    service = fake.created[1]
    assert service["spec"]["type"] == "NodePort"
    assert service["spec"]["selector"] == {APP_LABEL: fake.created[0]["metadata"]["name"]}
    assert "http://10.77.0.11:8080/" in out.command
    assert out.notes["kube_proxy_mode"] == "iptables"
    assert any("endpointslices" in c for c in fake.commands)
    assert set(fake.deleted) >= {f"service/{service['metadata']['name']}"}


def test_direct_is_one_pinned_pod_dialled_at_its_ip(monkeypatch):
    fake = _FakeCluster(_data("lb-wrk-haproxy-r2-2s.txt"))
    out = _step(fake, Lb(), "direct-r1", monkeypatch)
    assert fake.kinds() == ["Pod"]
    pod = fake.created[0]
    assert pod["spec"]["nodeName"] == "node1"
    assert pod["spec"]["containers"][0]["command"] == BACKEND
    assert out.notes["placement"] == "node1" and "http://10.240.1.5:8080/" in out.command


def test_a_failed_load_still_deletes_everything(monkeypatch):
    fake, bench = _FakeCluster(_data("lb-wrk-refused.txt")), Lb()
    with pytest.raises(ToolOutputError):
        _step(fake, bench, "nginx-r1", monkeypatch)
    names = {f"{m['kind'].lower()}/{m['metadata']['name']}" for m in fake.created}
    assert len(names) == 3 and names <= set(fake.deleted)
