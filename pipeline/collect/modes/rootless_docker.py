"""rootless-docker: a rootless dockerd (rootlesskit), a published port at the host's address.

The daemon runs as an unprivileged user inside rootlesskit's user and network namespaces;
rootlesskit connects that namespace to the host with slirp4netns (or vpnkit, or pasta in
rootlesskit >= 2) and forwards published ports with its port driver: `builtin` (a listener in
the rootlesskit process) or `slirp4netns` (the listener is slirp4netns). The notes record
what was seen running, not what was configured.

Paths: dc and internet dial the host address; local dials 127.0.0.1 on the server, which
rootlesskit's listener accepts too: the rootless analogue of docker-proxy.
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
    publish_options,
    remove_engine_container,
    rootless_problem,
    server_host,
    snapshot,
)

NETWORK_BACKENDS = ("slirp4netns", "vpnkit", "pasta", "passt.avx2", "lxc-user-nic")
PORT_DRIVERS = {"rootlesskit": "builtin", "slirp4netns": "slirp4netns"}


def rootlesskit_notes(snap: Snapshot, port: int) -> dict[str, str]:
    """Which rootlesskit serves the published port, its network backend and port driver, and
    the docker-proxy that the builtin driver hands connections to inside the namespace."""
    if not snap.listeners:
        raise ModeUnavailable("nothing listens on the published port on the server host")
    comm, pid = snap.listeners[0]
    kit = next((p for p in snap.ancestry(pid) if p.comm == "rootlesskit"), None)
    if kit is None:
        raise ModeUnavailable(f"the published port is held by {comm} (pid {pid}), not by a "
                              "rootlesskit process: this is not a rootless dockerd")  # fmt: skip
    nets = [p for p in snap.children(kit.pid) if p.comm in NETWORK_BACKENDS]
    mtu = next((a.split("=", 1)[1] for a in kit.args.split() if a.startswith("--mtu=")), "")
    inner = [p for p in snap.matching(f"-host-port {port} ") if p.comm == "docker-proxy"]
    return {
        "network_backend": nets[0].comm if nets else "host (no network helper process)",
        "network_backend_process": describe(nets[0]) if nets else "",
        "port_driver": PORT_DRIVERS.get(comm, comm),
        "port_listener": describe(snap.table[pid]) if pid in snap.table else f"{comm} {pid}",
        "rootlesskit": describe(kit),
        "rootlesskit_mtu": mtu,
        "inner_proxy": ", ".join(describe(p) for p in inner) or "none",
    }


class RootlessDocker(Mode):
    name = "rootless-docker"
    engine = "rootless-docker"

    def available(self, ctx: Context, path: str) -> str | None:
        host = server_host(ctx)
        problem = rootless_problem(ctx, host)
        if problem:
            return problem
        user = ctx.users[host.name]
        cli = [*engine_cli(ctx, host, self.engine), "info", "--format", "{{.ID}}"]
        if ctx.pool[host.name].run(cli, check=False, timeout=30).status != 0:
            return (
                f"no rootless dockerd of {user.name} answers at {user.docker_socket} on "
                f"{host.name} (lab: python -m pipeline.lab up; elsewhere, as {user.name}: "
                "dockerd-rootless-setuptool.sh install)"
            )
        return None

    def start(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        engine = "rootless-docker"
        name = container_name(ctx, self.name, workload)
        engine_run(ctx, host, engine, name, publish_options(workload), workload.argv)
        stop = remove_engine_container(ctx, host, engine, name)
        try:
            notes = rootlesskit_notes(snapshot(ctx, host, workload.port), workload.port)
        except Exception:
            stop()
            raise
        notes["rootless_user"] = ctx.users[host.name].name
        return Deployment(
            server=host,
            address=host.address,
            stop=stop,
            image=ctx.image(host, engine),
            notes=notes,
        )

    def foreground(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        name = container_name(ctx, self.name, workload)
        user = {"rootless_user": ctx.users[host.name].name}
        return foreground_container(ctx, host, "rootless-docker", name, notes=user)
