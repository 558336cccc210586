"""podman: rootful podman, a published port dialled at the host's address.

Rootful podman forwards published ports with iptables DNAT from its network stack (CNI's
portmap plugin or netavark; `podman info` says which, and the notes record it) and holds the
host port open in conmon so nothing else takes it. Only the first server runs podman: in the
lab every node shares /var/lib/containers, so more would share one store.

Rootful podman raises the container's nofile and nproc limits above the host's (docker leaves
them as inherited). Where root lacks CAP_SYS_RESOURCE (this lab's VM) the runtime (runc or
crun) refuses that, so
the mode retries with the host's nofile limit and a lower nproc limit, and notes it. Host
benchmarks (cpu, memory) run in a `podman run --rm` on podman's default network; the limits
they need are probed once per campaign with a quick run of the tool.

The OCI runtime is podman's default: crun where it is installed (containers.conf's default;
`make setup` installs it, and Debian's podman package prefers it), runc otherwise. The notes
record the one `podman info` names (``oci_runtime``). So this mode is already podman with
crun, and there is no separate podman-crun mode; docker-crun is its Docker counterpart, the
comparison of runc and crun under one engine.
"""

from collections.abc import Callable

from pipeline.collect.modes.base import (
    LABEL,
    Context,
    Deployment,
    Host,
    Mode,
    Workload,
    container_name,
    describe,
    engine_cli,
    engine_run,
    force_remove,
    foreground_container,
    missing_tool,
    publish_options,
    remove_engine_container,
    root_if_allowed,
    server_host,
    snapshot,
)
from pipeline.collect.remote import RemoteError

FALLBACK_NPROC = 16384  # the highest power of two runc could set in the lab without the cap
# What the OCI runtimes say when they may not raise a limit (runc, crun).
RLIMIT_REFUSALS = ("error setting rlimit", "setrlimit `RLIMIT_")


class Podman(Mode):
    name = "podman"
    engine = "podman"

    def __init__(self) -> None:
        # (campaign, host) -> the ulimit options foreground containers need and their note
        self._ulimits: dict[tuple[str, str], tuple[list[str], str]] = {}
        self._runtimes: dict[tuple[str, str], str] = {}  # (campaign, host) -> podman's runtime

    def available(self, ctx: Context, path: str) -> str | None:
        return missing_tool(ctx, server_host(ctx), "podman")

    def start(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        name = container_name(ctx, self.name, workload)
        ulimits = start_container(ctx, host, name, workload)
        stop = remove_engine_container(ctx, host, "podman", name)
        try:
            fmt = "{{.Host.NetworkBackend}} {{.Host.OCIRuntime.Name}}"
            podman = engine_cli(ctx, host, "podman")
            info = ctx.pool[host.name].run([*podman, "info", "--format", fmt]).stdout.split()
            stack, runtime = (info + ["n/a", "n/a"])[:2]
            snap = snapshot(ctx, host, workload.port)
        except Exception:
            stop()
            raise
        holders = [describe(snap.table[pid]) for _, pid in snap.listeners if pid in snap.table]
        return Deployment(
            server=host,
            address=host.address,
            stop=stop,
            image=ctx.image(host, "podman"),
            notes={
                "network_stack": stack,
                "port_forwarding": f"iptables DNAT ({stack})",
                "port_holders": ", ".join(holders) or "none",
                "ulimits": ulimits,
                "oci_runtime": runtime,
            },
        )

    def foreground(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        name = container_name(ctx, self.name, workload)
        key = (ctx.campaign, host.name)
        if key not in self._ulimits:  # one probe per campaign and host, not per measurement
            self._ulimits[key] = probe_ulimits(ctx, host, name, workload.argv)
            self._runtimes[key] = oci_runtime(ctx, host)
        options, ulimits = self._ulimits[key]
        notes = {"ulimits": ulimits, "oci_runtime": self._runtimes[key]}
        return foreground_container(ctx, host, "podman", name, options, notes)


def oci_runtime(ctx: Context, host: Host) -> str:
    """The OCI runtime rootful podman runs containers with on the host (crun or runc)."""
    fmt = "{{.Host.OCIRuntime.Name}}"
    podman = engine_cli(ctx, host, "podman")
    result = ctx.pool[host.name].run([*podman, "info", "--format", fmt], check=False, timeout=60)
    return result.stdout.strip() or "n/a"


def start_container(ctx: Context, host: Host, name: str, workload: Workload) -> str:
    """Run the server container; returns the ulimits it got ("podman defaults" or the fallback)."""
    options = publish_options(workload)

    def run(ulimits: list[str]) -> None:
        engine_run(ctx, host, "podman", name, [*ulimits, *options], workload.argv)

    return with_ulimit_fallback(ctx, host, run)[1]


def with_ulimit_fallback(
    ctx: Context, host: Host, run: Callable[[list[str]], None]
) -> tuple[list[str], str]:
    """run(ulimit options) with podman's defaults, then, if its OCI runtime refuses them (runc:
    "error setting rlimit", crun: "setrlimit `RLIMIT_NOFILE`: Operation not permitted"), with
    the fallback; returns the options that worked and how to describe them."""
    try:
        run([])
        return [], "podman defaults"
    except RemoteError as exc:
        if not any(refusal in str(exc) for refusal in RLIMIT_REFUSALS):
            raise
    session = ctx.pool[host.name]
    # podman's own limit: through sudo where the login is not root
    nofile = session.run("ulimit -Hn", root=root_if_allowed(host, "read root's limits")).stdout
    nofile = nofile.strip()
    limits = [f"nofile={nofile}:{nofile}", f"nproc={FALLBACK_NPROC}:{FALLBACK_NPROC}"]
    fallback = [arg for limit in limits for arg in ("--ulimit", limit)]
    run(fallback)
    return fallback, " ".join(limits) + " (podman's defaults refused: no CAP_SYS_RESOURCE)"


def probe_ulimits(
    ctx: Context, host: Host, name: str, argv: tuple[str, ...]
) -> tuple[list[str], str]:
    """The ulimit options a foreground container needs here, found by running ``argv`` (a
    quick run of the tool) to completion once."""
    image = ctx.image(host, "podman").tag
    label = ["--label", f"{LABEL}={ctx.campaign}"]
    session = ctx.pool[host.name]
    podman = engine_cli(ctx, host, "podman")

    def run(ulimits: list[str]) -> None:
        session.run(force_remove(podman, "podman", name), check=False, timeout=60)
        session.run([*podman, "run", "--rm", "--name", name, *label, *ulimits, image, *argv],
                    timeout=120)  # fmt: skip

    return with_ulimit_fallback(ctx, host, run)
