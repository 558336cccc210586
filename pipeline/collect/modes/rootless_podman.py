"""rootless-podman: podman run by an unprivileged user, a published port at the host's address.

Podman 4.3 puts a rootless container's network namespace behind slirp4netns (pasta arrived
in 4.4) and forwards published ports with `rootlessport` (rootlesskit's builtin port driver)
or, with port_handler=slirp4netns, with slirp4netns itself. The notes record the process
that holds the container's network namespace and the one that holds the published port, as
seen running, and podman's network stack (`podman info`: cni or netavark).

Paths: dc and internet dial the host address; local dials 127.0.0.1 on the server (the
rootlessport listener accepts loopback connections too).
"""

from pipeline.collect.modes.base import (
    Context,
    Deployment,
    Mode,
    ModeUnavailable,
    Snapshot,
    Workload,
    container_name,
    describe,
    engine_cli,
    engine_run,
    foreground_container,
    missing_tool,
    publish_options,
    remove_engine_container,
    rootless_problem,
    server_host,
    snapshot,
)
from pipeline.collect.modes.rootless_docker import NETWORK_BACKENDS

ENGINE = "rootless-podman"


def podman_notes(snap: Snapshot, sandbox: str) -> dict[str, str]:
    """The container's network-namespace helper (named by its netns path) and port holder."""
    if not snap.listeners:
        raise ModeUnavailable("nothing listens on the published port on the server host")
    comm, pid = snap.listeners[0]
    holders = [p for p in snap.matching(sandbox) if p.comm in NETWORK_BACKENDS] if sandbox else []
    return {
        "network_backend": holders[0].comm if holders else "none found",
        "network_backend_process": describe(holders[0]) if holders else "",
        "container_netns": sandbox,
        "port_handler": comm,
        "port_listener": describe(snap.table[pid]) if pid in snap.table else f"{comm} {pid}",
    }


class RootlessPodman(Mode):
    name = ENGINE
    engine = ENGINE

    def available(self, ctx: Context, path: str) -> str | None:
        host = server_host(ctx)
        return missing_tool(ctx, host, "podman") or rootless_problem(ctx, host)

    def start(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        name = container_name(ctx, self.name, workload)
        engine_run(ctx, host, ENGINE, name, publish_options(workload), workload.argv)
        stop = remove_engine_container(ctx, host, ENGINE, name)
        session = ctx.pool[host.name]
        cli = engine_cli(ctx, host, ENGINE)
        try:
            fmt = "{{.NetworkSettings.SandboxKey}}"
            sandbox = session.run([*cli, "inspect", "--format", fmt, name]).stdout.strip()
            notes = podman_notes(snapshot(ctx, host, workload.port), sandbox)
            fmt = "{{.Host.NetworkBackend}}"
            notes["network_stack"] = session.run([*cli, "info", "--format", fmt]).stdout.strip()
        except Exception:
            stop()
            raise
        notes["rootless_user"] = ctx.users[host.name].name
        return Deployment(
            server=host,
            address=host.address,
            stop=stop,
            image=ctx.image(host, ENGINE),
            notes=notes,
        )

    def foreground(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        name = container_name(ctx, self.name, workload)
        user = {"rootless_user": ctx.users[host.name].name}
        return foreground_container(ctx, host, ENGINE, name, notes=user)
