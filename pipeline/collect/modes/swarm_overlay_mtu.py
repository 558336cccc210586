"""swarm-overlay-mtu: swarm-overlay on an overlay whose MTU is the underlay's minus VXLAN's 50.

The tuning tip of the Swarm networking article: VXLAN adds 50 bytes of headers, so an overlay
on jumbo frames (9000) should be created with `--opt com.docker.network.driver.mtu=8950`
instead of Docker's fixed default of 1450. The underlay MTU is read from the server's NIC that
carries its inventory address. The notes record both MTUs and the MTU the container's eth0
actually got: Docker 20.10's overlay driver treats the option as the underlay MTU and
subtracts VXLAN's 50 itself, so the tip, applied literally, gives containers 100 bytes less
than the underlay (1400 on a 1500-byte underlay, where swarm-overlay's default gives 1450).
"""

import re

from pipeline.collect import engine_api
from pipeline.collect.modes.base import (
    Context,
    Deployment,
    Mode,
    Workload,
    container_address,
    container_name,
    docker_run,
    ensure_network,
    host_interface,
    inspect_container,
    overlay_client,
    remove_container,
    server_host,
)
from pipeline.collect.modes.swarm_overlay import swarm_problem

VXLAN_OVERHEAD = 50
DOCKER_DEFAULT_OVERLAY_MTU = 1450


def overlay_mtu(underlay_mtu: int) -> int:
    return underlay_mtu - VXLAN_OVERHEAD


def parse_link_mtu(text: str) -> int:
    """`ip -o link show DEV` -> its MTU."""
    found = re.search(r"\bmtu (\d+)\b", text)
    if not found:
        raise ValueError(f"no mtu in {text!r}")
    return int(found.group(1))


class SwarmOverlayMtu(Mode):
    name = "swarm-overlay-mtu"
    host_engine = "docker"

    def available(self, ctx: Context, path: str) -> str | None:
        return swarm_problem(ctx)

    def start(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        client = ctx.inventory.servers[1]
        underlay = host_interface(ctx, host)
        mtu = overlay_mtu(underlay.mtu)
        network = f"co-overlay-mtu{mtu}"  # one network per MTU: an existing one keeps its own
        options = {engine_api.MTU_OPTION: str(mtu)}
        ensure_network(ctx, host, network, "overlay", options=options, attachable=True)
        name = docker_run(
            ctx, host, container_name(ctx, self.name, workload), ["--network", network],
            workload.argv,
        )  # fmt: skip
        stop = remove_container(ctx, host, name)
        session = ctx.pool[host.name]
        try:
            address = container_address(ctx, host, name, network)
            pid = str(inspect_container(ctx, host, name).pid)
            link = session.run(["nsenter", "-t", pid, "-n", "ip", "-o", "link", "show",
                                "eth0"],
                               root="enter the container's network namespace").stdout  # fmt: skip
            seen = parse_link_mtu(link)
            client_underlay = host_interface(ctx, client).mtu
        except Exception:
            stop()
            raise
        return Deployment(
            server=host,
            address=address,
            client=client,
            wrap_client=overlay_client(ctx, network, ctx.image(client).tag),
            stop=stop,
            image=ctx.image(host),
            notes={
                "underlay_interface": underlay.name,
                "underlay_mtu": str(underlay.mtu),
                "client_underlay_mtu": str(client_underlay),
                "overlay_mtu": str(mtu),
                "overlay_mtu_in_container": str(seen),
                "docker_default_overlay_mtu": str(DOCKER_DEFAULT_OVERLAY_MTU),
                "network": network,
            },
        )
