"""macvlan: a container with its own MAC and address on the host's NIC (no bridge, no NAT).

Needs the host's `macvlan` settings in the inventory (parent NIC, subnet, gateway and an
address range nobody else uses). A host cannot reach its own macvlan children, so there is no
local path.
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
    remove_container,
    server_host,
)

NETWORK = "co-macvlan"


class Macvlan(Mode):
    name = "macvlan"
    host_engine = "docker"

    def available(self, ctx: Context, path: str) -> str | None:
        if server_host(ctx).macvlan is None:
            return (
                f"no macvlan settings for {server_host(ctx).name} in the inventory "
                "(parent, subnet, gateway, ip_range)"
            )
        return None

    def start(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        m = host.macvlan
        assert m is not None
        ensure_network(ctx, host, NETWORK, "macvlan", options={"parent": m.parent},
                       ipam={"subnet": m.subnet, "gateway": m.gateway, "iprange": m.ip_range})
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
            stop=remove_container(ctx, host, name),
            image=ctx.image(host),
        )
