"""The Kubernetes modes: the server in a pod of the cluster the inventory names (`kubernetes:`).

- ``k8s-pod``: the server in a pod on the first server's node (the cluster's CNI network); the
  client on the dc host dials the pod IP.
- ``k8s-hostnetwork``: the pod shares the node's network namespace (``hostNetwork: true``); the
  client dials the node's address.
- ``k8s-nodeport``: a NodePort Service in front of the pod, its node port the benchmark's own
  port; the client dials the node's address and kube-proxy forwards to the pod.
- ``k8s-clusterip``: a ClusterIP Service in front of the pod; the client runs in a pod on the
  second server's node and dials the Service's address (kube-proxy's rules on that node).

kubectl runs on the inventory's ``kubernetes.host`` with its kubeconfig (a path there: the file
is never read by the study). Pods run the same tool image as the Docker modes, with one more
binary (``sleep``, what an idle pod runs), imported into each node's containerd through the
socket the inventory names, so no registry is needed and the measured binaries are the same
files. Everything the modes create carries the campaign label (``cleanup`` removes it).
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable

from pipeline import kube_objects
from pipeline.collect import images
from pipeline.collect.images import ToolImage
from pipeline.collect.inventory import Host, Kubernetes
from pipeline.collect.modes.base import (
    Context,
    Deployment,
    Mode,
    ModeUnavailable,
    Workload,
    as_root,
    server_host,
)
from pipeline.collect.remote import RemoteError
from pipeline.hosts import LABEL

IDLE = "/usr/bin/sleep"  # what an idle pod runs (a client pod, a host benchmark's pod)
CONTAINERD_NAMESPACE = "k8s.io"  # the CRI plugin's image namespace
READY_TIMEOUT_S = 120
# kube-proxy applies a change at most this often (its --iptables-min-sync-period, 1 s by
# default): a Service is dialled this long after its endpoint is ready.
PROXY_SYNC_S = 2.0
# Which workload and role (server, client, host) a pod or Service is for; clean-up selects by
# the campaign label (LABEL), which every object carries too.
WORKLOAD_LABEL = "org.container-overhead.workload"


def settings(ctx: Context) -> Kubernetes:
    k8s = ctx.inventory.kubernetes
    if k8s is None:
        raise ModeUnavailable(
            "the inventory names no Kubernetes cluster (add a `kubernetes:` section with its "
            "kubeconfig and namespace; see docs/methods.md, running on your own hosts)"
        )
    return k8s


def kubectl(k8s: Kubernetes, *argv: str) -> list[str]:
    return [k8s.kubectl, "--kubeconfig", k8s.kubeconfig, "--namespace", k8s.namespace, *argv]


def kubectl_host(ctx: Context) -> Host:
    k8s = settings(ctx)
    return ctx.inventory.hosts[k8s.host] if k8s.host else server_host(ctx)


def run_kubectl(
    ctx: Context, *argv: str, stdin: bytes | None = None, timeout: float = 60, check: bool = True
):  # noqa: ANN201 - a remote.Result
    host = kubectl_host(ctx)
    return ctx.pool[host.name].run(
        kubectl(settings(ctx), *argv), stdin=stdin, timeout=timeout, check=check
    )


def node_name(ctx: Context, host: Host) -> str:
    return settings(ctx).nodes.get(host.name, host.name)


def cluster_problem(ctx: Context) -> str | None:
    """Why the cluster cannot take the study's pods (None: it can): kubectl missing, the API
    server not answering, the node of a server missing or not Ready."""
    try:
        k8s = settings(ctx)
    except ModeUnavailable as exc:
        return str(exc)
    host = kubectl_host(ctx)
    session = ctx.pool[host.name]
    if session.run(["sh", "-c", f"command -v {shlex.quote(k8s.kubectl)}"], check=False).status:
        return (
            f"kubectl ({k8s.kubectl}) is not on {host.name}: for the lab, `make kubernetes` "
            "builds it (about 10 minutes); else install it or set kubernetes.kubectl"
        )
    nodes = session.run(kubectl(k8s, "get", "nodes", "--output", "json"), check=False, timeout=60)
    if nodes.status:
        detail = (nodes.stderr or nodes.stdout).strip().splitlines()
        return (
            f"the Kubernetes API does not answer kubectl on {host.name} "
            f"({detail[-1] if detail else 'no output'}): for the lab, `python -m "
            "pipeline.lab up --kubernetes` brings the cluster up"
        )
    try:
        ready = ready_nodes(nodes.stdout)
    except (ValueError, KeyError, TypeError, AttributeError):
        return f"kubectl get nodes on {host.name} printed no node list: {nodes.stdout[:200]!r}"
    namespace = session.run(kubectl(k8s, "get", "namespace", k8s.namespace), check=False)
    if namespace.status:
        return (
            f"namespace {k8s.namespace} does not exist in the cluster: create it (kubectl "
            f"create namespace {k8s.namespace}) or set kubernetes.namespace"
        )
    for server in ctx.inventory.servers[:2]:
        name = node_name(ctx, server)
        if name not in ready:
            return (
                f"Kubernetes node {name} (server {server.name}) is not Ready or not in the "
                f"cluster (Ready: {', '.join(sorted(ready)) or 'none'})"
            )
    return None


def ready_nodes(text: str) -> set[str]:
    """`kubectl get nodes -o json` -> the names of the nodes whose Ready condition is True."""
    found = set()
    for item in json.loads(text).get("items", []):
        conditions = item.get("status", {}).get("conditions", [])
        if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            found.add(item["metadata"]["name"])
    return found


def pod_image(ctx: Context, host: Host) -> ToolImage:
    """The tool image (and ``sleep``) in the containerd of ``host``'s node, imported from the
    host's docker when it is not there yet."""
    key = (host.name, "kubernetes")
    if key in ctx.images:
        return ctx.images[key]
    session = ctx.pool[host.name]
    image = images.ensure(session, [*ctx.image_paths, IDLE], "docker", "docker")
    socket = settings(ctx).containerd_socket.replace("{node}", host.name)
    ctr = as_root(
        ctx,
        host,
        ["ctr", "--address", socket, "--namespace", CONTAINERD_NAMESPACE],
        "import the tool image into the node's containerd",
    )
    ref = containerd_ref(image.tag)
    listed = session.run(
        [*ctr, "images", "list", "--quiet", f"name=={ref}"], check=False, timeout=60
    )
    if listed.status:
        raise ModeUnavailable(
            f"containerd does not answer at {socket} on {host.name} "
            f"({listed.stderr.strip()}): set kubernetes.containerd_socket"
        )
    if ref not in listed.stdout.split():
        save = shlex.join(["docker", "save", image.tag])
        session.run(f"{save} | {shlex.join([*ctr, 'images', 'import', '-'])}", timeout=300)
    ctx.images[key] = image
    return image


def containerd_ref(tag: str) -> str:
    """The name containerd (and the kubelet) give a Docker-style short tag."""
    first = tag.split("/")[0]
    if "/" not in tag:
        return f"docker.io/library/{tag}"
    if "." in first or ":" in first or first == "localhost":
        return tag
    return f"docker.io/{tag}"


def object_name(ctx: Context, mode: str, workload: Workload, role: str) -> str:
    """A DNS-1123 name for one of the mode's pods or Services (at most 63 characters)."""
    return f"co-{ctx.campaign[:10]}-{workload.name}-{mode}-{role}".lower()[:63].rstrip("-")


def labels(ctx: Context, workload: Workload, role: str) -> dict[str, str]:
    return {LABEL: ctx.campaign, WORKLOAD_LABEL: f"{workload.name}-{role}"}


def service_manifest(
    name: str, selector: dict[str, str], workload: Workload, kind: str, labels: dict[str, str]
) -> dict:
    """A Service of ``kind`` (ClusterIP, NodePort) on the workload's port, TCP and, for a UDP
    workload, UDP; a NodePort Service's node port is that same port."""
    protocols = ("TCP", "UDP") if workload.udp else ("TCP",)
    return kube_objects.service(name, selector, labels, kind, workload.port, protocols)


class Cluster:
    """What one Kubernetes step created, and how to remove it."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.created: list[str] = []  # kind/name

    def apply(self, manifest: dict) -> None:
        kind, name = manifest["kind"].lower(), manifest["metadata"]["name"]
        self.created.append(f"{kind}/{name}")
        run_kubectl(
            self.ctx, "delete", f"{kind}/{name}", "--ignore-not-found", "--wait=true", timeout=120
        )
        try:
            run_kubectl(
                self.ctx,
                "create",
                "--filename",
                "-",
                stdin=json.dumps(manifest).encode(),
                timeout=60,
            )
        except RemoteError as exc:
            if "provided port is not in the valid range" in str(exc):
                raise ModeUnavailable(
                    f"the cluster refused node port {manifest['spec']['ports'][0]['port']}: "
                    "its API server's --service-node-port-range must include the benchmark's "
                    "port (the lab's does)"
                ) from exc
            raise

    def running_pod(self, manifest: dict) -> str:
        """Create the pod, wait until it runs; its IP."""
        self.apply(manifest)
        name = manifest["metadata"]["name"]
        waited = run_kubectl(
            self.ctx,
            "wait",
            "--for=condition=Ready",
            f"pod/{name}",
            f"--timeout={READY_TIMEOUT_S}s",
            check=False,
            timeout=READY_TIMEOUT_S + 30,
        )
        if waited.status:
            state = run_kubectl(
                self.ctx, "get", f"pod/{name}", "--output", "json", check=False
            ).stdout
            raise RemoteError(
                kubectl_host(self.ctx).name,
                f"kubectl wait pod/{name}",
                None,
                reason=f"pod not Ready in {READY_TIMEOUT_S} s: {pod_problem(state)}",
            )
        return run_kubectl(
            self.ctx, "get", f"pod/{name}", "--output", "jsonpath={.status.podIP}"
        ).stdout.strip()

    def idle_pod(
        self, host: Host, mode: str, workload: Workload, role: str
    ) -> tuple[str, ToolImage]:
        """A running pod on ``host``'s node that only sleeps (tools run in it by `kubectl
        exec`): its name and image."""
        name = object_name(self.ctx, mode, workload, role)
        image = pod_image(self.ctx, host)
        node, tags = node_name(self.ctx, host), labels(self.ctx, workload, role)
        self.running_pod(kube_objects.pinned_pod(name, node, image.tag, [IDLE, "infinity"], tags))
        return name, image

    def wait_service(self, name: str, endpoints: int = 1) -> float:
        """Wait until the Service's endpoint (the server pod; ``endpoints``: that many pods) is
        ready in its EndpointSlice, then PROXY_SYNC_S for kube-proxy to program it on every
        node; the seconds waited.
        A client that dials sooner may be refused, or lose its connection while the rules
        change (measured on the lab: iperf3's control connection closed)."""
        started = time.monotonic()
        ready = "jsonpath={.items[*].endpoints[*].conditions.ready}"
        while True:
            out = run_kubectl(
                self.ctx,
                "get",
                "endpointslices",
                "--selector",
                f"kubernetes.io/service-name={name}",
                "--output",
                ready,
                check=False,
            ).stdout
            if out.split().count("true") >= endpoints:
                break
            if time.monotonic() > started + READY_TIMEOUT_S:
                raise RemoteError(
                    kubectl_host(self.ctx).name,
                    f"endpoints of {name}",
                    None,
                    reason=f"fewer than {endpoints} ready endpoint(s) in {READY_TIMEOUT_S} s",
                )
            time.sleep(0.2)
        time.sleep(PROXY_SYNC_S)
        return time.monotonic() - started

    def service_ip(self, name: str) -> str:
        return run_kubectl(
            self.ctx, "get", f"service/{name}", "--output", "jsonpath={.spec.clusterIP}"
        ).stdout.strip()

    def stop(self) -> None:
        if self.created:
            run_kubectl(
                self.ctx,
                "delete",
                *reversed(self.created),
                "--ignore-not-found",
                "--wait=true",
                timeout=180,
            )
            self.created = []

    def exec_in(self, pod: str) -> Callable[[list[str]], str]:
        """``wrap_client``: the argv run in ``pod`` through `kubectl exec` (its output and exit
        status are the tool's)."""
        k8s = settings(self.ctx)
        return lambda argv: shlex.join(
            kubectl(k8s, "exec", pod, "--container", "tool", "--", *argv)
        )


def pod_problem(state_json: str) -> str:
    """What a pod's status says is wrong (its phase and its container's waiting reason)."""
    try:
        status = json.loads(state_json).get("status", {})
    except ValueError:
        return "its status could not be read"
    parts = [f"phase {status.get('phase', '?')}"]
    for c in status.get("containerStatuses", []):
        for state in c.get("state", {}).values():
            if isinstance(state, dict) and (state.get("reason") or state.get("message")):
                parts.append(f"{state.get('reason', '')} {state.get('message', '')}".strip())
    for cond in status.get("conditions", []):
        if cond.get("status") != "True" and cond.get("message"):
            parts.append(cond["message"])
    return "; ".join(parts)


class KubernetesMode(Mode):
    """A server pod on the first server's node; subclasses say how the client reaches it."""

    engine = None
    cluster = "kubernetes"
    host_network = False
    service: str | None = None  # the Service kind in front of the pod, if any

    def available(self, ctx: Context, path: str) -> str | None:
        return cluster_problem(ctx)

    def start(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        cluster = Cluster(ctx)
        image = pod_image(ctx, host)
        try:
            server_labels = labels(ctx, workload, "server")
            pod = kube_objects.pinned_pod(
                object_name(ctx, self.name, workload, "server"),
                node_name(ctx, host),
                image.tag,
                list(workload.argv),
                server_labels,
                host_network=self.host_network,
            )
            pod_ip = cluster.running_pod(pod)
            deployment = Deployment(
                server=host,
                address=pod_ip,
                stop=cluster.stop,
                image=image,
                notes={"kubernetes_node": node_name(ctx, host)},
            )
            if self.service:
                name = object_name(ctx, self.name, workload, "service")
                cluster.apply(
                    service_manifest(
                        name,
                        server_labels,
                        workload,
                        self.service,
                        labels(ctx, workload, "service"),
                    )
                )
                deployment.notes["service"] = f"{self.service} {name}"
                waited = cluster.wait_service(name)
                deployment.notes["service_wait_s"] = f"{waited:.2f}"
                deployment.address = self.service_address(ctx, cluster, name, host)
            self.place_client(ctx, cluster, workload, deployment)
            return deployment
        except BaseException:
            cluster.stop()
            raise

    def service_address(self, ctx: Context, cluster: Cluster, name: str, host: Host) -> str:
        return cluster.service_ip(name)

    def place_client(
        self, ctx: Context, cluster: Cluster, workload: Workload, deployment: Deployment
    ) -> None:
        """Where the client runs: the path's own client host (the dc host) by default."""


class K8sPod(KubernetesMode):
    name = "k8s-pod"

    def foreground(self, ctx: Context, workload: Workload) -> Deployment:
        """A host benchmark's tool, run in an idle pod on the server's node by `kubectl exec`."""
        host = server_host(ctx)
        cluster = Cluster(ctx)
        try:
            name, image = cluster.idle_pod(host, self.name, workload, "host")
        except BaseException:
            cluster.stop()
            raise
        return Deployment(
            server=host,
            address=host.address,
            stop=cluster.stop,
            client=kubectl_host(ctx),
            wrap_client=cluster.exec_in(name),
            image=image,
            notes={"kubernetes_node": node_name(ctx, host)},
        )


class K8sHostNetwork(KubernetesMode):
    name = "k8s-hostnetwork"
    host_network = True

    def start(self, ctx: Context, workload: Workload) -> Deployment:
        deployment = super().start(ctx, workload)
        deployment.address = deployment.server.address  # the pod IP is the node's
        return deployment


class K8sNodePort(KubernetesMode):
    name = "k8s-nodeport"
    service = "NodePort"

    def service_address(self, ctx: Context, cluster: Cluster, name: str, host: Host) -> str:
        return host.address


class K8sClusterIP(KubernetesMode):
    name = "k8s-clusterip"
    service = "ClusterIP"

    def available(self, ctx: Context, path: str) -> str | None:
        if len(ctx.inventory.servers) < 2:
            return "needs at least two servers in the inventory (the client pod runs on the second)"
        return super().available(ctx, path)

    def place_client(
        self, ctx: Context, cluster: Cluster, workload: Workload, deployment: Deployment
    ) -> None:
        """An idle pod on the second server's node; the client runs in it (`kubectl exec`)."""
        host = ctx.inventory.servers[1]
        name, _ = cluster.idle_pod(host, self.name, workload, "client")
        deployment.client = kubectl_host(ctx)
        deployment.wrap_client = cluster.exec_in(name)
        deployment.notes["client_node"] = node_name(ctx, host)


# What the Kubernetes modes, orchestration's Deployments and lb's balancer configs create,
# listed for clean-up.
LABELLED_KINDS = "deployments.apps,pods,services,configmaps"


def _list_labelled(k8s: Kubernetes) -> str:
    """Shell text listing every object of LABELLED_KINDS with the campaign label (kind/name)."""
    argv = kubectl(k8s, "get", LABELLED_KINDS, "--selector", LABEL, "--output", "name",
                   "--request-timeout=20s")  # fmt: skip
    return shlex.join(argv)


def cleanup_script(k8s: Kubernetes) -> str:
    """Shell text: delete every labelled object of LABELLED_KINDS in the namespace (quiet
    when kubectl or the cluster is not there); prints how many it removed."""
    delete = shlex.join(
        kubectl(k8s, "delete", "--ignore-not-found", "--wait=true", "--request-timeout=60s")
    )
    return (
        f"if command -v {shlex.quote(k8s.kubectl)} >/dev/null 2>&1; then "
        f'o=$({_list_labelled(k8s)} 2>/dev/null); [ -z "$o" ] || {delete} $o >/dev/null 2>&1; '
        "echo kubernetes: objects=$(echo $o | wc -w); fi"
    )


def leftovers_script(k8s: Kubernetes) -> str:
    return (
        f"if command -v {shlex.quote(k8s.kubectl)} >/dev/null 2>&1; then "
        f"for i in $({_list_labelled(k8s)} 2>/dev/null); do echo kubernetes:$i; done; fi; "
    )
