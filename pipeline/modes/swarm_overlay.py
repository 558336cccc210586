"""swarm-overlay: server and client containers on an attachable Swarm overlay (VXLAN).

The client runs in a container on the second server node, so the traffic crosses hosts
inside the overlay, as service-to-service traffic does in a Swarm.
"""

import shlex

from pipeline.inventory import Host
from pipeline.modes.base import (
    LABEL,
    Context,
    Deployment,
    Mode,
    Workload,
    container_address,
    container_name,
    docker_run,
    ensure_network,
    remove_container,
    server_host,
)

NETWORK = "co-overlay"


def swarm_problem(ctx: Context) -> str | None:
    """Why the first two servers are not manager and worker of one Swarm, or None."""
    servers = ctx.inventory.servers
    if len(servers) < 2:
        return "needs at least two servers in the inventory (one Swarm manager and one worker)"
    manager, worker = (ctx.pool[h.name] for h in servers[:2])
    fmt = "{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}} {{.Swarm.NodeID}}"
    states = [s.run(["docker", "info", "--format", fmt], check=False) for s in (manager, worker)]
    for host, state in zip(servers, states, strict=False):
        if state.status != 0 or not state.stdout.startswith("active"):
            return f"{host.name} is not in an active Swarm ({state.stdout.strip() or state.stderr})"
    if states[0].stdout.split()[1] != "true":
        return f"{servers[0].name}, the first server, is not a Swarm manager"
    nodes = manager.run(["docker", "node", "ls", "--quiet"]).stdout.split()
    if states[1].stdout.split()[2] not in nodes:
        return f"{servers[1].name} is in another Swarm than the manager {servers[0].name}"
    return None


class SwarmOverlay(Mode):
    name = "swarm-overlay"
    paths = ("dc",)

    def available(self, ctx: Context, path: str) -> str | None:
        return swarm_problem(ctx)

    def network(self, ctx: Context, host: Host) -> tuple[str, list[str], dict[str, str]]:
        """The overlay to use: its name, its `docker network create` options, notes."""
        return NETWORK, ["--driver", "overlay", "--attachable"], {}

    def observe(self, ctx: Context, host: Host, client: Host, container: str) -> dict[str, str]:
        """What a variant wants recorded about the running server (nothing here)."""
        return {}

    def start(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        client = ctx.inventory.servers[1]
        network, create, notes = self.network(ctx, host)
        ensure_network(ctx, host, network, create)
        name = container_name(ctx, self.name, workload)
        docker_run(ctx, host, name, ["--network", network], workload.argv)
        stop = remove_container(ctx, host, name)
        try:
            address = container_address(ctx, host, name, network)
            notes = {**notes, **self.observe(ctx, host, client, name)}
        except Exception:
            stop()
            raise
        client_cmd = ["docker", "run", "--rm", "--network", network,
                      "--label", f"{LABEL}={ctx.campaign}", ctx.image(client).tag]  # fmt: skip
        return Deployment(
            server=host,
            address=address,
            client=client,
            wrap_client=lambda argv: shlex.join([*client_cmd, *argv]),
            stop=stop,
            image=ctx.image(host),
            notes=notes,
        )
