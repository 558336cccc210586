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

from pipeline.inventory import Host
from pipeline.modes.base import Context, host_interface
from pipeline.modes.swarm_overlay import SwarmOverlay

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


class SwarmOverlayMtu(SwarmOverlay):
    name = "swarm-overlay-mtu"

    def network(self, ctx: Context, host: Host) -> tuple[str, list[str], dict[str, str]]:
        underlay = host_interface(ctx, host)
        mtu = overlay_mtu(underlay.mtu)
        option = f"com.docker.network.driver.mtu={mtu}"
        notes = {
            "underlay_interface": underlay.name,
            "underlay_mtu": str(underlay.mtu),
            "overlay_mtu": str(mtu),
            "docker_default_overlay_mtu": str(DOCKER_DEFAULT_OVERLAY_MTU),
            "network": f"co-overlay-mtu{mtu}",
        }
        # one network per MTU: an existing network keeps the MTU it was made with
        return notes["network"], ["--driver", "overlay", "--attachable", "--opt", option], notes

    def observe(self, ctx: Context, host: Host, client: Host, container: str) -> dict[str, str]:
        session = ctx.pool[host.name]
        pid = session.run(["docker", "inspect", "--format", "{{.State.Pid}}", container]).stdout
        link = session.run(["nsenter", "-t", pid.strip(), "-n", "ip", "-o", "link", "show",
                            "eth0"]).stdout  # fmt: skip
        return {
            "overlay_mtu_in_container": str(parse_link_mtu(link)),
            "client_underlay_mtu": str(host_interface(ctx, client).mtu),
        }
