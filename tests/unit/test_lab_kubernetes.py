"""The lab's Kubernetes layout (pipeline/lab/kubernetes.py, topology.py) without bringing it up:
the facts other code relies on, the message when the build is missing, what the script gets."""

import ipaddress
from pathlib import Path

import pytest

from pipeline.lab import kubernetes as k8s
from pipeline.lab import topology as t


def test_addresses_do_not_overlap_the_lab_networks():
    ours = [t.K8S_POD_NETWORK, t.K8S_SERVICE_CIDR]
    lab = [t.LAB_SUBNET, t.WAN_SUBNET, t.DOCKER_BRIDGES, t.SWARM_ADDR_POOL, t.OVERLAY_SUBNET,
           t.BRIDGE_ADDRESS]  # fmt: skip
    for a in ours:
        for b in lab:
            assert not ipaddress.ip_network(a).overlaps(ipaddress.ip_network(b, strict=False))
    pods = ipaddress.ip_network(t.K8S_POD_NETWORK)
    assert [n.pod_subnet for n in t.NODES] == ["10.240.1.0/24", "10.240.2.0/24", "10.240.3.0/24"]
    assert all(ipaddress.ip_network(n.pod_subnet).subnet_of(pods) for n in t.NODES)
    assert ipaddress.ip_address(t.K8S_API_SERVICE_IP) in ipaddress.ip_network(t.K8S_SERVICE_CIDR)


def test_facts_other_code_relies_on():
    assert t.K8S_ADMIN_KUBECONFIG == Path(
        "/var/lib/container-overhead-lab/kubernetes/admin.kubeconfig"
    )
    assert t.K8S_API_SERVER == "https://10.77.0.11:6443"
    assert t.NODES[1].k8s_containerd_socket == Path(
        "/run/container-overhead-lab/node2/k8s-containerd.sock"
    )
    assert t.K8S_CRI_NAMESPACE == "k8s.io"
    assert k8s.kubectl() == k8s.CACHE / k8s.release() / "kubectl"
    assert k8s.release() == (k8s.TOOLS / "VERSION").read_text().strip()


def test_image_names_agree_with_the_script_that_builds_them():
    script = (k8s.TOOLS / "cluster.sh").read_text()
    assert f"PAUSE_IMAGE={t.K8S_PAUSE_IMAGE}\n" in script
    assert f"WORKLOAD_IMAGE={t.K8S_WORKLOAD_IMAGE}\n" in script


def test_missing_build_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(k8s, "CACHE", tmp_path)
    reason = k8s.missing_build()
    assert reason is not None
    assert "run `make kubernetes` (about 10 minutes)" in reason
    assert "kubelet" in reason and "images/pause" in reason
    (tmp_path / k8s.release()).mkdir()
    for binary in k8s.BINARIES:
        (tmp_path / k8s.release() / binary).touch()
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "pause").touch()
    assert k8s.missing_build() is None


def test_the_script_gets_one_line_per_node_control_plane_first():
    env = k8s.environment()
    lines = env["K8S_NODES"].splitlines()
    assert [line.split()[0] for line in lines] == ["node1", "node2", "node3"]
    assert lines[0] == (
        "node1 node1 10.77.0.11 10.240.1.0/24 /run/container-overhead-lab/node1/k8s-containerd.sock"
    )
    assert env["ROUTE_NETNS"] == "dc-client wan-router"
    assert env["ADMIN_KUBECONFIG"] == str(t.K8S_ADMIN_KUBECONFIG)


def test_a_node_that_stays_not_ready_gets_one_more_bring_up(monkeypatch, tmp_path):
    """cluster.sh's "nodes Ready: not ready" (a transient kubelet stall): down, then up once
    more, the first attempt's log kept; any other failure, or a second one, is the error."""
    from pipeline.lab.commands import LabError

    calls = []
    failures = [f"lab-cluster.sh up failed: {k8s.NOT_READY} 180s", None]

    def script(command, timeout):
        calls.append(command)
        if command == "up":
            k8s.UP_LOG.write_text(f"attempt {calls.count('up')}\n")
            failure = failures.pop(0) if failures else "lab-cluster.sh up failed: etcd"
            if failure:
                raise LabError(failure)
        return ""

    monkeypatch.setattr(k8s, "UP_LOG", tmp_path / "kubernetes-up.log")
    monkeypatch.setattr(k8s, "missing_build", lambda: None)
    monkeypatch.setattr(k8s, "ready_nodes", lambda: set())
    monkeypatch.setattr(k8s, "present", lambda: calls.count("up") > 0)
    monkeypatch.setattr(k8s, "script", script)
    k8s.up()
    assert calls == ["up", "down", "up"]
    assert (tmp_path / "kubernetes-up.first.log").read_text() == "attempt 1\n"
    calls.clear()
    failures[:] = ["lab-cluster.sh up failed: etcd: not ready after 60s"]
    with pytest.raises(LabError, match="etcd"):
        k8s.up()
    assert calls == ["up"]  # not the nodes' readiness: no second attempt
