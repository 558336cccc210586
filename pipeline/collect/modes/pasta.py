"""pasta: the server runs natively in a network namespace of its own behind pasta (passt).

Podman 4.4 and later can put a container behind pasta (`--network pasta`); Podman 4.3, on
Debian 12, cannot. So this mode runs the same binary the native mode runs, as the rootless
user, under standalone `pasta --config-net -t PORT -u PORT -- ARGV`: pasta creates a user and
network namespace, copies the host's address into it and forwards the published ports with
plain sockets on the host side (no NAT, no userspace TCP/IP stack for the payload), which is
what makes it faster than slirp4netns. It isolates the network only: no image, no cgroup, so
it measures pasta's forwarding and nothing else.

Paths: dc and internet dial the host address; local dials 127.0.0.1 on the server (pasta
listens on the host's wildcard address, loopback included).
"""

import ipaddress
import shlex
import time

from pipeline.collect.modes.base import (
    Context,
    Deployment,
    Mode,
    ModeUnavailable,
    Snapshot,
    Workload,
    describe,
    host_interface,
    kill_pidfiles,
    missing_tool,
    pidfile_stem,
    rootless_problem,
    server_host,
    snapshot,
    start_process,
)

CHILD_WAIT_S = 10.0


def pasta_notes(snap: Snapshot, pasta_pid: int) -> dict[str, str]:
    """pasta holds the published port; the server runs in another network namespace."""
    holders = [pid for _, pid in snap.listeners]
    servers = snap.children(pasta_pid)
    # The server inherits pasta's listening socket (ss may list only the child): either counts.
    if not set(holders) & {pasta_pid, *(p.pid for p in servers)}:
        raise ModeUnavailable(
            f"neither pasta (pid {pasta_pid}) nor its child holds the published port "
            f"(holders: {holders})"
        )
    netns = servers[0].netns if servers else ""
    if netns == snap.netns:
        raise ModeUnavailable("the server runs in the host's network namespace, not pasta's")
    return {
        "network_backend": "pasta",
        "network_backend_process": describe(snap.table[pasta_pid]),
        "port_listener": describe(snap.table[pasta_pid]),
        "server_process": describe(servers[0]) if servers else "",
        "server_netns": netns,
        "host_netns": snap.netns,
    }


class Pasta(Mode):
    name = "pasta"

    def available(self, ctx: Context, path: str) -> str | None:
        host = server_host(ctx)
        problem = missing_tool(ctx, host, "pasta") or rootless_problem(ctx, host)
        if problem:
            return problem
        user = ctx.users[host.name]
        probe = user.command(["sh", "-c", "test -r /dev/net/tun -a -w /dev/net/tun"])
        if ctx.pool[host.name].run(probe, check=False).status != 0:
            return f"/dev/net/tun on {host.name} is not readable and writable by {user.name}"
        return None

    def start(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        user = ctx.rootless_user(host)
        nic = host_interface(ctx, host)
        # pasta copies the NIC's routes; without a default route (the lab's namespaces have
        # none) it refuses the NIC unless told a gateway. Inbound forwarding never uses it.
        gateway = nic.gateway or str(next(ipaddress.ip_network(nic.network).hosts()))
        ports = [arg for proto in ("-t", "-u") for arg in (proto, str(workload.port))]
        argv = user.command(["pasta", "--config-net", "--foreground", "--quiet",
                             "--interface", nic.name, "--gateway", gateway, *ports,
                             "--", *workload.argv])  # fmt: skip
        name = f"{workload.name}-pasta"
        stem = pidfile_stem(ctx, host, name)
        remove_scratch = start_process(ctx, host, name, tuple(argv), workload.scratch)
        pidfiles = [f"{stem}.pid", f"{stem}.server.pid"]

        def stop() -> None:
            kill_pidfiles(ctx, host, pidfiles)
            remove_scratch()  # its pidfile is gone already: this removes the server's files

        try:
            pasta_pid = self._record_server(ctx, host, stem)
            snap = snapshot(ctx, host, workload.port)
            notes = pasta_notes(snap, pasta_pid)
        except Exception:
            stop()
            raise
        source = "default route" if nic.gateway else "first host of subnet"
        notes.update(rootless_user=user.name, interface=nic.name, gateway=gateway,
                     gateway_from=source)  # fmt: skip
        return Deployment(server=host, address=host.address, stop=stop, notes=notes)

    @staticmethod
    def _record_server(ctx: Context, host, stem: str) -> int:
        """pasta's child (the server) outlives a killed pasta: give it a pidfile of its own."""
        session = ctx.pool[host.name]
        pasta_pid = int(session.run(["cat", f"{stem}.pid"]).stdout.strip())
        deadline = time.monotonic() + CHILD_WAIT_S
        while time.monotonic() < deadline:
            child = session.run(["pgrep", "-P", str(pasta_pid)], check=False).stdout.split()
            if child:
                session.run(f"echo {shlex.quote(child[0])} > {shlex.quote(stem + '.server.pid')}")
                return pasta_pid
            # not `kill -0`: pasta runs as the rootless user, which a non-root login may not signal
            if session.run(["test", "-d", f"/proc/{pasta_pid}"], check=False).status != 0:
                log = session.run(["cat", f"{stem}.log"], check=False).stdout.strip()
                raise ModeUnavailable(f"pasta exited at start: {log[-300:] or 'no output'}")
            time.sleep(0.1)
        raise ModeUnavailable(f"pasta started no server within {CHILD_WAIT_S:.0f} s")
