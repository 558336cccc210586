"""The lab's network: bridge, namespaces, veth pairs, routes, the WAN TUN devices."""

from __future__ import annotations

import contextlib
from pathlib import Path

from pipeline.lab.commands import LabError, in_netns, run, succeeds
from pipeline.lab.topology import (
    BRIDGE,
    BRIDGE_ADDRESS,
    DOCKER_BRIDGES,
    HOSTS,
    INET_CLIENT,
    LAB_SUBNET,
    NETNS_DIR,
    NODES,
    RULE_COMMENT,
    WAN_ROUTER,
    WAN_ROUTER_ADDRESS,
    WAN_ROUTER_TUN_ADDRESS,
    WAN_SUBNET,
    WAN_TUN,
    Host,
)

# The root namespace has bridge-nf-call-iptables=1, so frames between two bridge ports
# traverse FORWARD; a root dockerd (if one ever runs) sets its policy to DROP.
FORWARD_RULE = [
    "FORWARD", "-i", BRIDGE, "-o", BRIDGE,
    "-m", "comment", "--comment", RULE_COMMENT, "-j", "ACCEPT",
]  # fmt: skip


def link_exists(name: str, netns: str | None = None) -> bool:
    prefix = ["-n", netns] if netns else []
    return succeeds(["ip", *prefix, "link", "show", "dev", name])


def ensure_bridge() -> None:
    if not link_exists(BRIDGE):
        run(["ip", "link", "add", BRIDGE, "type", "bridge"])
    run(["ip", "addr", "replace", BRIDGE_ADDRESS, "dev", BRIDGE])
    run(["ip", "link", "set", BRIDGE, "up"])
    if not succeeds(["iptables", "-C", *FORWARD_RULE]):
        run(["iptables", "-I", *FORWARD_RULE])
    run(["ip", "route", "replace", WAN_SUBNET, "via", WAN_ROUTER_ADDRESS, "dev", BRIDGE])


def ensure_namespace(host: Host) -> None:
    if not host.netns.exists():
        run(["ip", "netns", "add", host.name])
    run(["ip", "-n", host.name, "link", "set", "lo", "up"])


def ensure_veth(host: Host) -> None:
    """Plug the host into the bridge: `co-<host>` in the root namespace, `eth0` inside."""
    if not link_exists(host.veth):
        run(["ip", "link", "add", host.veth, "type", "veth",
             "peer", "name", "eth0", "netns", host.name])  # fmt: skip
    run(["ip", "link", "set", host.veth, "master", BRIDGE, "up"])
    run(["ip", "-n", host.name, "addr", "replace", f"{host.address}/24", "dev", "eth0"])
    run(["ip", "-n", host.name, "link", "set", "eth0", "up"])


def ensure_host_routes(host: Host) -> None:
    """Bridge hosts reach inet-client through wan-router; clients reach node containers."""
    if host is not WAN_ROUTER:
        route(host.name, WAN_SUBNET, "via", WAN_ROUTER_ADDRESS)
    if host.name in ("dc-client", WAN_ROUTER.name):
        for node in NODES:
            route(host.name, node.docker_bridge_subnet, "via", node.address)


def route(netns: str, prefix: str, *how: str) -> None:
    run(["ip", "-n", netns, "route", "replace", prefix, *how])


def ensure_wan_tuns() -> None:
    """The two ends of the WAN path; the userspace emulator (wan.py) shuttles between them.

    Persistent TUN devices without `pi` (IFF_NO_PI), so they survive emulator restarts.
    """
    for host in (WAN_ROUTER, INET_CLIENT):
        if not link_exists(WAN_TUN, host.name):
            run(["ip", "-n", host.name, "tuntap", "add", "dev", WAN_TUN, "mode", "tun"])
        run(["ip", "-n", host.name, "link", "set", WAN_TUN, "up"])
    run(["ip", "-n", WAN_ROUTER.name, "addr", "replace", f"{WAN_ROUTER_TUN_ADDRESS}/32",
         "dev", WAN_TUN])  # fmt: skip
    route(WAN_ROUTER.name, f"{INET_CLIENT.address}/32", "dev", WAN_TUN)
    # /proc/sys/net shows the namespace of the process that opens it.
    run(in_netns(WAN_ROUTER.name, ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"]))
    run(["ip", "-n", INET_CLIENT.name, "addr", "replace", f"{INET_CLIENT.address}/32",
         "dev", WAN_TUN])  # fmt: skip
    for prefix in (f"{WAN_ROUTER_TUN_ADDRESS}/32", LAB_SUBNET, DOCKER_BRIDGES):
        route(INET_CLIENT.name, prefix, "dev", WAN_TUN)


def ensure_network() -> None:
    ensure_bridge()
    for host in HOSTS:
        ensure_namespace(host)
        if host.on_bridge:
            ensure_veth(host)
    for host in HOSTS:
        if host.on_bridge:
            ensure_host_routes(host)
    ensure_wan_tuns()


def tun_attached(host: Host) -> bool:
    """A TUN device has carrier (LOWER_UP) only while a process holds it open."""
    proc = run(["ip", "-n", host.name, "-br", "link", "show", "dev", WAN_TUN], check=False)
    return proc.returncode == 0 and "LOWER_UP" in proc.stdout


def routed_through_lab(address: str) -> bool:
    """True when the kernel would send to `address` over the lab bridge.

    Without the lab, lab addresses would follow the default route off this machine.
    """
    proc = run(["ip", "-o", "route", "get", address], check=False)
    return proc.returncode == 0 and f" dev {BRIDGE} " in proc.stdout


def namespace_inodes() -> set[int]:
    """Inode numbers of the lab's network namespaces (for finding processes inside them)."""
    inodes = set()
    for host in HOSTS:
        with contextlib.suppress(OSError):
            inodes.add(host.netns.stat().st_ino)
    return inodes


# ---- teardown --------------------------------------------------------------------------


def remove_namespaces() -> None:
    """Delete the lab namespaces; their veth ends and TUN devices go with them."""
    for host in HOSTS:
        if host.netns.exists():
            run(["ip", "netns", "delete", host.name])
    # An interrupted `ip netns add` can leave the mount point file without a namespace.
    for host in HOSTS:
        with contextlib.suppress(FileNotFoundError):
            Path(NETNS_DIR, host.name).unlink()


def lab_root_links() -> list[str]:
    """The lab's links still present in the root namespace (veth ends and the bridge)."""
    ours = {h.veth for h in HOSTS} | {BRIDGE}
    proc = run(["ip", "-br", "link", "show"], check=False)
    names = [line.split()[0].split("@")[0] for line in proc.stdout.splitlines() if line.strip()]
    return [n for n in names if n in ours]


def remove_root_links() -> None:
    for name in lab_root_links():
        run(["ip", "link", "delete", name], check=False)


def remove_forward_rule() -> None:
    for _ in range(20):  # bounded: a rule inserted by several interrupted ups
        if not succeeds(["iptables", "-C", *FORWARD_RULE]):
            return
        run(["iptables", "-D", *FORWARD_RULE])
    raise LabError("could not remove the iptables FORWARD rule for colab0")


def remove_root_route() -> None:
    # Normally gone with colab0; a leftover would send 10.78.0.0/24 nowhere.
    run(["ip", "route", "delete", WAN_SUBNET], check=False)


def remove_network() -> None:
    remove_namespaces()
    remove_root_links()
    remove_forward_rule()
    remove_root_route()


def leftovers() -> list[str]:
    """What of the lab's network is still present (empty after a complete teardown)."""
    found = [f"netns {h.name}" for h in HOSTS if h.netns.exists()]
    found += [f"link {name}" for name in lab_root_links()]
    if succeeds(["iptables", "-C", *FORWARD_RULE]):
        found.append("iptables FORWARD rule")
    return found
