"""swarm-overlay: server and client containers on an attachable Swarm overlay (VXLAN).

The client runs in a container on the second server node, so the traffic crosses hosts
inside the overlay, as service-to-service traffic does in a Swarm.
"""

from pipeline.collect.modes.base import (
    Context,
    Deployment,
    Mode,
    Workload,
    container_address,
    container_name,
    docker_run,
    ensure_network,
    overlay_client,
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
    engine = "docker"

    def available(self, ctx: Context, path: str) -> str | None:
        return swarm_problem(ctx)

    def start(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        client = ctx.inventory.servers[1]
        ensure_network(ctx, host, NETWORK, "overlay", attachable=True)
        name = docker_run(
            ctx,
            host,
            container_name(ctx, self.name, workload),
            ["--network", NETWORK],
            workload.argv,
        )
        address = container_address(ctx, host, name, NETWORK)
        return Deployment(
            server=host,
            address=address,
            client=client,
            wrap_client=overlay_client(ctx, NETWORK, ctx.image(client).tag),
            stop=remove_container(ctx, host, name),
            image=ctx.image(host),
        )
