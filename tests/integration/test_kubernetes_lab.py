"""The lab's Kubernetes cluster end to end: `up(kubernetes=True)` gives three Ready nodes named
after the lab nodes; a busybox httpd pod pinned to each node answers dc-client on its pod IP; a
pod on node2 reaches a pod on node3; a ClusterIP Service answers a pod, a NodePort answers
dc-client on every node's address; `down()` leaves nothing of the cluster.

Needs root and the cached build (`make kubernetes`, about 10 minutes; skipped without it).
Brings the lab up and down, so not while a campaign uses the lab.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from pipeline.lab import down, up
from pipeline.lab import kubernetes as k8s
from pipeline.lab.topology import (
    DC_CLIENT,
    K8S_ADMIN_KUBECONFIG,
    K8S_CRI_NAMESPACE,
    K8S_DIR,
    K8S_RUN_DIR,
    K8S_WORKLOAD_IMAGE,
    NODES,
)

pytestmark = [
    pytest.mark.lab,
    pytest.mark.runs_last,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root"),
    pytest.mark.skipif(
        k8s.missing_build() is not None, reason=f"{k8s.missing_build()} (make kubernetes)"
    ),
]

NODE_PORT = 30080


def in_netns(netns: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["nsenter", f"--net=/run/netns/{netns}", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def kubectl(*args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(
        ["nsenter", f"--net=/run/netns/{DC_CLIENT.name}", str(k8s.kubectl()),
         "--kubeconfig", str(K8S_ADMIN_KUBECONFIG), *args],
        input=stdin, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def fetch(netns: str, url: str) -> str:
    """A page fetched with curl from a lab namespace, retried for a few seconds (kube-proxy
    writes a new Service's rules within a second or two)."""
    deadline = time.monotonic() + 20
    while True:
        proc = in_netns(netns, "curl", "-sf", "--max-time", "2", url)
        if proc.returncode == 0 or time.monotonic() > deadline:
            assert proc.returncode == 0, f"{netns} -> {url}: curl exit {proc.returncode}"
            return proc.stdout
        time.sleep(0.5)


def pod_fetch(name: str, address: str, port: int) -> str:
    """A page fetched from inside pod `name`. With busybox's nc: the static busybox's wget
    crashes (SIGSEGV) in a root holding nothing but busybox."""
    request = f"printf 'GET / HTTP/1.0\\r\\n\\r\\n' | busybox nc -w 5 {address} {port}"
    return kubectl("exec", name, "--", "busybox", "sh", "-c", request)


def pod(name: str, node: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {
            "nodeName": node,
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "httpd", "image": K8S_WORKLOAD_IMAGE, "imagePullPolicy": "Never",
                "ports": [{"containerPort": 8080}],
                "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
            }],
        },
    }  # fmt: skip


def service(name: str, kind: str) -> dict:
    port = {"port": 80, "targetPort": 8080}
    if kind == "NodePort":
        port["nodePort"] = NODE_PORT
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"type": kind, "selector": {"app": "web"}, "ports": [port]},
    }


TUNABLES = ("vm.overcommit_memory", "kernel.panic", "kernel.panic_on_oops")


def sysctls() -> dict[str, str]:
    return {k: Path("/proc/sys", *k.split(".")).read_text().strip() for k in TUNABLES}


@pytest.fixture(scope="module")
def before() -> dict[str, str]:
    """The host-wide sysctls before the cluster (the kubelet changes them): a cluster an
    earlier campaign left up is taken down first, or they would be the kubelet's."""
    k8s.down()
    return sysctls()


@pytest.fixture(scope="module")
def cluster(before):
    started = time.monotonic()
    up(kubernetes=True)
    print(f"\nlab up with kubernetes: {time.monotonic() - started:.1f} s")
    try:
        yield
    finally:
        started = time.monotonic()
        down()
        print(f"lab down: {time.monotonic() - started:.1f} s")


def test_three_nodes_ready_and_pods_everywhere_reachable(cluster):
    assert k8s.ready_nodes() == {"node1", "node2", "node3"}
    for node in NODES:
        images = subprocess.run(
            ["ctr", "--address", str(node.k8s_containerd_socket), "-n", K8S_CRI_NAMESPACE,
             "images", "ls", "-q"], capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        assert K8S_WORKLOAD_IMAGE in images

    items = [pod(f"web-{n.name}", n.name) for n in NODES]
    items += [service("web", "ClusterIP"), service("web-np", "NodePort")]
    kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List",
                                                  "items": items}))  # fmt: skip
    kubectl("wait", "--for=condition=Ready", "pod", "-l", "app=web", "--timeout=60s")
    pods = json.loads(kubectl("get", "pods", "-l", "app=web", "-o", "json"))["items"]
    ips = {p["spec"]["nodeName"]: p["status"]["podIP"] for p in pods}
    assert set(ips) == {n.name for n in NODES}
    for node in NODES:
        assert ips[node.name].startswith(node.pod_subnet.rsplit(".", 2)[0] + ".")
        # dc-client reaches every pod through the owning node's lab address.
        assert "hello from" in fetch(DC_CLIENT.name, f"http://{ips[node.name]}:8080/")

    # node2's pod to node3's pod, and a pod to the ClusterIP Service.
    assert "hello from" in pod_fetch("web-node2", ips["node3"], 8080)
    cluster_ip = kubectl("get", "service", "web", "-o", "jsonpath={.spec.clusterIP}")
    assert "hello from" in pod_fetch("web-node1", cluster_ip, 80)
    # The NodePort on every node's address, from dc-client.
    for node in NODES:
        assert "hello from" in fetch(DC_CLIENT.name, f"http://{node.address}:{NODE_PORT}/")


def test_down_leaves_nothing_of_the_cluster(cluster, before):
    # The cluster alone first, while the lab's namespaces (which outlive it) stand.
    started = time.monotonic()
    k8s.down()
    print(f"kubernetes down: {time.monotonic() - started:.1f} s")
    for node in NODES:
        rules = in_netns(node.name, "iptables-save").stdout
        assert "KUBE-" not in rules and "co-k8s" not in rules, node.name
        assert in_netns(node.name, "ip", "link", "show", "cni0").returncode != 0
        assert "10.240." not in in_netns(node.name, "ip", "route").stdout
    assert "10.240." not in in_netns(DC_CLIENT.name, "ip", "route").stdout
    assert sysctls() == before
    assert k8s.status() == {}

    started = time.monotonic()
    down()
    print(f"lab down: {time.monotonic() - started:.1f} s")
    assert not k8s.present()
    assert k8s.leftovers() == []
    assert not (K8S_DIR.exists() or K8S_RUN_DIR.exists())
    mounts = Path("/proc/self/mounts").read_text()
    assert "/kubernetes/" not in mounts and "co-k8s" not in mounts
    assert not list(Path("/sys/fs/cgroup").glob("*/co-k8s-*"))
    for node in NODES:
        assert not node.netns.exists()
    binaries = ("kubelet", "kube-apiserver", "kube-proxy", "etcd", "containerd-shim")
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        assert not (any(b in cmd for b in binaries) and str(K8S_DIR.parent) in cmd), cmd
    assert not Path("/var/lib/cni").exists() or not list(Path("/var/lib/cni").rglob("co-k8s-*"))
