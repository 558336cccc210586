"""The lab's Kubernetes cluster, brought up after the rest of the lab and down before it.

The cluster itself is tools/kubernetes/cluster.sh, which the single-node cluster
(`make kubernetes-up`) shares; tools/kubernetes/lab-cluster.sh runs it with the lab's layout
(topology.py), which this module passes in the environment. Control plane (etcd,
kube-apiserver, controller-manager, scheduler) in node1's namespace; a kubelet with a
containerd of its own and kube-proxy (iptables) in every node's; Debian's bridge CNI plugin with
a pod subnet per node, routed through the node's lab address from the other nodes, dc-client
and wan-router. The binaries come from `make kubernetes` (tools/kubernetes/build.sh), cached
under /var/cache/container-overhead-lab/kubernetes/<release>/.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from functools import cache
from pathlib import Path

from pipeline.lab.commands import ENV, LabError, in_netns, run
from pipeline.lab.topology import (
    DC_CLIENT,
    K8S_ADMIN_KUBECONFIG,
    K8S_API_SERVICE_IP,
    K8S_DIR,
    K8S_POD_NETWORK,
    K8S_RUN_DIR,
    K8S_SERVICE_CIDR,
    NODES,
    RUN_DIR,
    WAN_ROUTER,
)

log = logging.getLogger("pipeline.lab")

TOOLS = Path(__file__).resolve().parents[2] / "tools" / "kubernetes"
SCRIPT = TOOLS / "lab-cluster.sh"
CACHE = Path("/var/cache/container-overhead-lab/kubernetes")
BINARIES = ("kubelet", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
            "kube-proxy", "kubectl")  # fmt: skip
BUILD_HINT = "run `make kubernetes` (about 10 minutes)"
# Lab hosts on colab0 besides the nodes that get a route to every pod subnet.
ROUTED_CLIENTS = (DC_CLIENT, WAN_ROUTER)
UP_LOG = RUN_DIR / "kubernetes-up.log"
NOT_READY = "nodes Ready: not ready after"  # cluster.sh's message when a node stays NotReady
UP_TIMEOUT_S = 420
DOWN_TIMEOUT_S = 240


@cache
def release() -> str:
    """The Kubernetes release the study builds (tools/kubernetes/VERSION)."""
    return (TOOLS / "VERSION").read_text().strip()


def kubectl() -> Path:
    """The cached build's kubectl."""
    return CACHE / release() / "kubectl"


def missing_build() -> str | None:
    """Why the cluster cannot come up from what is cached here, with the fix; None if it can."""
    missing = [b for b in BINARIES if not (CACHE / release() / b).is_file()]
    if not (CACHE / "images" / "pause").is_file():
        missing.append("images/pause")
    if not missing:
        return None
    return (
        f"the Kubernetes {release()} build is not cached ({CACHE} lacks "
        f"{', '.join(missing)}): {BUILD_HINT}"
    )


def environment() -> dict[str, str]:
    """The layout lab-cluster.sh brings up: one line per node, the control plane's first."""
    specs = [
        f"{n.name} {n.name} {n.address} {n.pod_subnet} {n.k8s_containerd_socket}" for n in NODES
    ]
    return {
        **ENV,
        "K8S_DIR": str(K8S_DIR),
        "K8S_RUN": str(K8S_RUN_DIR),
        "K8S_NODES": "\n".join(specs),
        "CLUSTER_CIDR": K8S_POD_NETWORK,
        "SERVICE_CIDR": K8S_SERVICE_CIDR,
        "API_SERVICE_IP": K8S_API_SERVICE_IP,
        "ROUTE_NETNS": " ".join(h.name for h in ROUTED_CLIENTS),
        "ADMIN_KUBECONFIG": str(K8S_ADMIN_KUBECONFIG),
    }


def script(command: str, timeout: float) -> str:
    """Run lab-cluster.sh COMMAND; its output, kept in UP_LOG as well for `up`."""
    try:
        proc = subprocess.run(
            ["bash", str(SCRIPT), command],
            env=environment(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"lab-cluster.sh {command} did not finish within {timeout:g} s") from exc
    output = proc.stdout + proc.stderr
    if command == "up":
        UP_LOG.parent.mkdir(parents=True, exist_ok=True)
        UP_LOG.write_text(output)
    if proc.returncode != 0:
        tail = " / ".join(output.strip().splitlines()[-4:])
        raise LabError(f"lab-cluster.sh {command} failed: {tail}")
    return output


def present() -> bool:
    """Any part of the cluster exists (its directories, a node's cgroup root or socket)."""
    if K8S_DIR.exists() or K8S_RUN_DIR.exists():
        return True
    for node in NODES:
        if node.k8s_containerd_socket.exists():
            return True
        if any(Path("/sys/fs/cgroup").glob(f"*/{node.k8s_cgroup_root}")):
            return True
    return False


def ready_nodes() -> set[str]:
    """The Kubernetes nodes whose Ready condition is True, asked from dc-client."""
    if not (K8S_ADMIN_KUBECONFIG.exists() and kubectl().exists()):
        return set()
    ready = '{.status.conditions[?(@.type=="Ready")].status}'
    template = f"{{range .items[*]}}{{.metadata.name}}={ready} {{end}}"
    args = [kubectl(), "--kubeconfig", K8S_ADMIN_KUBECONFIG, "--request-timeout", "5s",
            "get", "nodes", "-o", f"jsonpath={template}"]  # fmt: skip
    proc = run(in_netns(DC_CLIENT.name, args), check=False, timeout=15)
    if proc.returncode != 0:
        return set()
    pairs = (item.partition("=") for item in proc.stdout.split())
    return {name for name, _, status in pairs if status == "True"}


def up() -> None:
    """Bring the cluster up; quick when every node is Ready; a broken one is made again."""
    reason = missing_build()
    if reason:
        raise LabError(reason)
    if ready_nodes() == {n.name for n in NODES}:
        log.info("kubernetes: already up")
        return
    if present():
        log.info("kubernetes: a part of the cluster is not up: down first")
        down()
    log.info("kubernetes: bringing the cluster up (log %s)", UP_LOG)
    try:
        script("up", UP_TIMEOUT_S)
    except LabError as exc:
        if NOT_READY not in str(exc):
            raise
        # A node whose kubelet never reported Ready in time (seen now and then on the 2-core
        # lab; the next bring-up worked): the cluster is made once more from nothing. The
        # first attempt's log is kept beside the second's.
        log.warning("kubernetes: %s; taking it down and up once more", exc)
        shutil.copyfile(UP_LOG, UP_LOG.with_suffix(".first.log"))
        down()
        script("up", UP_TIMEOUT_S)


def down() -> None:
    """Stop the cluster and remove everything it made; nothing to do when no part exists."""
    if not present():
        return
    log.info("kubernetes: taking the cluster down")
    script("down", DOWN_TIMEOUT_S)


def leftovers() -> list[str]:
    found = [f"directory {d}" for d in (K8S_DIR, K8S_RUN_DIR) if d.exists()]
    for node in NODES:
        found += [f"cgroup {c}" for c in Path("/sys/fs/cgroup").glob(f"*/{node.k8s_cgroup_root}")]
        if node.k8s_containerd_socket.exists():
            found.append(f"socket {node.k8s_containerd_socket}")
    return found


def status() -> dict[str, bool]:
    """The cluster's health when any part of it exists (else nothing: it was not asked for)."""
    if not present():
        return {}
    names = ", ".join(n.name for n in NODES)
    return {f"kubernetes: {names} Ready": ready_nodes() == {n.name for n in NODES}}
