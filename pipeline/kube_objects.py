"""The Kubernetes objects the study creates, as manifests for `kubectl create`: shared by the
Kubernetes modes (pipeline/collect/modes/kubernetes.py) and the benchmarks that drive the cluster
themselves (cold start, load balancing). Pure: no SSH, standard library only, so a benchmark
module can build them without the collection machinery."""

from __future__ import annotations


def container(image: str, argv: list[str], mounts: list[dict] | None = None) -> dict:
    """The one container of a study pod: ``argv`` from the local tool image (no registry)."""
    found = {"name": "tool", "image": image, "imagePullPolicy": "Never", "command": argv}
    if mounts:
        found["volumeMounts"] = mounts
    return found


def pod_spec(*containers: dict) -> dict:
    """What every study pod's spec says: a quick stop, no API token, no Service variables."""
    return {
        "terminationGracePeriodSeconds": 1,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "containers": list(containers),
    }


def pinned_pod(
    name: str,
    node: str,
    image: str,
    argv: list[str],
    labels: dict[str, str],
    *,
    host_network: bool = False,
    config: tuple[str, str] | None = None,
) -> dict:
    """A pod pinned to ``node`` (no scheduler involved) running ``argv`` from the local image;
    ``config``: (ConfigMap, directory) mounted read-only there."""
    mounts = [{"name": "conf", "mountPath": config[1], "readOnly": True}] if config else None
    spec = {"nodeName": node, "hostNetwork": host_network, "restartPolicy": "Never",
            **pod_spec(container(image, argv, mounts))}  # fmt: skip
    if config:
        spec["volumes"] = [{"name": "conf", "configMap": {"name": config[0]}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": spec}  # fmt: skip


def service(
    name: str,
    selector: dict[str, str],
    labels: dict[str, str],
    kind: str,
    port: int,
    protocols: tuple[str, ...] = ("TCP",),
) -> dict:
    """A Service of ``kind`` (ClusterIP, NodePort) on ``port`` for each protocol; a NodePort
    Service's node port is that same port, so a client dials it unchanged."""
    ports = []
    for protocol in protocols:
        entry = {"name": protocol.lower(), "protocol": protocol, "port": port, "targetPort": port}
        if kind == "NodePort":
            entry["nodePort"] = port
        ports.append(entry)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": labels},
        "spec": {"type": kind, "selector": selector, "ports": ports},
    }
