"""The three-node Swarm across the lab's dockerds and its attachable overlay network."""

from __future__ import annotations

import time

from pipeline.lab.commands import LabError
from pipeline.lab.dockerd import docker
from pipeline.lab.topology import (
    MANAGER,
    NODES,
    OVERLAY_NETWORK,
    OVERLAY_SUBNET,
    SWARM_ADDR_POOL,
    Host,
)

READY_TIMEOUT_S = 60


def local_state(node: Host) -> str:
    """inactive | pending | active | error | locked, as the node's daemon sees itself."""
    return docker(node, "info", "--format", "{{.Swarm.LocalNodeState}}")


def ready_nodes() -> set[str]:
    """Hostnames of the nodes the manager lists as Ready."""
    out = docker(MANAGER, "node", "ls", "--format", "{{.Hostname}} {{.Status}}")
    return {line.split()[0] for line in out.splitlines() if line.endswith(" Ready")}


def remove_down_nodes() -> None:
    """Forget entries left by earlier joins of the same node (they stay Down forever)."""
    out = docker(MANAGER, "node", "ls", "--format", "{{.ID}} {{.Status}}")
    for line in out.splitlines():
        node_id, status = line.split()[:2]
        if status == "Down":
            docker(MANAGER, "node", "rm", "--force", node_id)


def ensure_swarm() -> None:
    fresh = local_state(MANAGER) != "active"
    if fresh:
        if local_state(MANAGER) != "inactive":
            docker(MANAGER, "swarm", "leave", "--force")
        docker(
            MANAGER, "swarm", "init",
            "--advertise-addr", MANAGER.address,
            "--listen-addr", f"{MANAGER.address}:2377",
            "--default-addr-pool", SWARM_ADDR_POOL,
        )  # fmt: skip
    token = docker(MANAGER, "swarm", "join-token", "-q", "worker")
    for node in NODES[1:]:
        state = local_state(node)
        # After a fresh init a worker may still believe in the old swarm: rejoin.
        if state == "active" and not fresh:
            continue
        if state != "inactive":
            docker(node, "swarm", "leave", "--force")
        docker(node, "swarm", "join", "--token", token,
               "--advertise-addr", node.address, "--listen-addr", f"{node.address}:2377",
               f"{MANAGER.address}:2377", timeout=60)  # fmt: skip
    wait_ready()


def wait_ready() -> None:
    wanted = {n.name for n in NODES}
    deadline = time.monotonic() + READY_TIMEOUT_S
    while (ready := ready_nodes()) != wanted:
        if time.monotonic() > deadline:
            missing = ", ".join(sorted(wanted - ready))
            raise LabError(f"nodes not Ready after {READY_TIMEOUT_S} s: {missing}")
        time.sleep(0.5)
    remove_down_nodes()


def ensure_active(servers: list[str] | None) -> None:
    """Only ``servers`` (node names; None: every node) take Swarm tasks: the others are
    drained, so a lab inventory with fewer servers has a Swarm of its own size at work."""
    names = [n.name for n in NODES]
    wanted = names if servers is None else servers
    if wanted[:1] != [MANAGER.name] or not set(wanted) <= set(names):
        raise LabError(
            f"a lab inventory's servers must be lab nodes ({', '.join(names)}), the manager "
            f"{MANAGER.name} first; got {', '.join(wanted)}"
        )
    out = docker(MANAGER, "node", "ls", "--format", "{{.Hostname}} {{.Availability}}")
    for line in out.splitlines():
        name, availability = line.split()[:2]
        want = "active" if name in wanted else "drain"
        if availability.lower() != want:
            docker(MANAGER, "node", "update", "--availability", want, name)


def overlay_exists() -> bool:
    out = docker(MANAGER, "network", "ls", "--format", "{{.Name}} {{.Driver}}")
    return f"{OVERLAY_NETWORK} overlay" in out.splitlines()


def ensure_overlay() -> None:
    if not overlay_exists():
        docker(MANAGER, "network", "create", "--driver", "overlay", "--attachable",
               "--subnet", OVERLAY_SUBNET, OVERLAY_NETWORK)  # fmt: skip
