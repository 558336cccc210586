"""The mode contract and the pieces modes share.

A mode is how the server side of a benchmark runs (a process, a container on some network, a
Swarm task). It starts the server, says which host the client runs on and which address it
dials, and stops everything it started. `available()` returns a reason when the mode cannot
run on these hosts; the campaign records that as `skipped`, never drops it.

Everything a mode creates carries the campaign label (containers, networks, services) or a
pidfile under PID_DIR (native processes), so `cleanup()` can remove it after a crash too.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from pipeline import images
from pipeline.images import ToolImage
from pipeline.inventory import Host, Inventory
from pipeline.remote import Pool, RemoteError

LABEL = "org.container-overhead.campaign"
PID_DIR = "/tmp/container-overhead"


@dataclass
class Context:
    inventory: Inventory
    pool: Pool
    campaign: str
    image_paths: list[str] = field(default_factory=list)  # what the tool image holds
    images: dict[tuple[str, str], ToolImage] = field(default_factory=dict)

    def image(self, host: Host, engine: str = "docker") -> ToolImage:
        """The host's tool image for this engine, built (or found) on first use."""
        key = (host.name, engine)
        if key not in self.images:
            self.images[key] = images.ensure(self.pool[host.name], self.image_paths, engine)
        return self.images[key]


@dataclass(frozen=True)
class Workload:
    """The server a benchmark needs: argv as run natively, the port, the protocols it serves."""

    name: str
    argv: tuple[str, ...]
    port: int
    udp: bool = False


@dataclass
class Deployment:
    """A running server and how to reach it."""

    server: Host
    address: str  # dialled from another host (dc, internet paths)
    stop: Callable[[], None]
    local_address: str = "127.0.0.1"  # dialled from the server host itself (local path)
    client: Host | None = None  # the mode insists on a client host (swarm-overlay)
    wrap_client: Callable[[list[str]], str] | None = None  # run the client argv differently
    notes: dict[str, str] = field(default_factory=dict)
    image: ToolImage | None = None  # the image the server runs from (None: native)

    def client_host(self, inventory: Inventory, path: str) -> Host:
        if self.client is not None:
            return self.client
        if path == "local":
            return self.server
        if path == "internet":
            if inventory.internet_client is None:
                raise ValueError("the inventory has no internet_client")
            return inventory.internet_client
        return inventory.dc_client

    def target(self, path: str) -> str:
        return self.local_address if path == "local" else self.address

    def client_command(self, argv: list[str]) -> str:
        return self.wrap_client(argv) if self.wrap_client else shlex.join(argv)


class ModeUnavailable(RuntimeError):
    """Raised by start() when a mode turns out not to be runnable here; recorded as skipped."""


class Mode:
    name: str = ""
    paths: tuple[str, ...] = ("dc", "internet")

    def available(self, ctx: Context, path: str) -> str | None:
        """None when the mode can run on this path here, else the reason it cannot."""
        return None

    def start(self, ctx: Context, workload: Workload) -> Deployment:  # pragma: no cover
        raise NotImplementedError


def server_host(ctx: Context) -> Host:
    return ctx.inventory.servers[0]


def container_name(ctx: Context, mode: str, workload: Workload) -> str:
    return f"co-{ctx.campaign[:10]}-{workload.name}-{mode}"


def docker_run(
    ctx: Context, host: Host, name: str, options: list[str], argv: tuple[str, ...]
) -> str:
    """Start a labelled, detached container of the host's tool image; returns its name."""
    session = ctx.pool[host.name]
    session.run(["docker", "rm", "-f", name], check=False, timeout=60)
    session.run(
        [
            "docker",
            "run",
            "--detach",
            "--name",
            name,
            "--label",
            f"{LABEL}={ctx.campaign}",
            *options,
            ctx.image(host).tag,
            *argv,
        ],
        timeout=120,
    )
    return name


def publish_options(workload: Workload) -> list[str]:
    port = workload.port
    options = ["--publish", f"{port}:{port}/tcp"]
    return options + (["--publish", f"{port}:{port}/udp"] if workload.udp else [])


def container_address(ctx: Context, host: Host, name: str, network: str | None = None) -> str:
    template = (
        f'{{{{(index .NetworkSettings.Networks "{network}").IPAddress}}}}'
        if network
        else "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}"
    )
    out = ctx.pool[host.name].run(["docker", "inspect", "--format", template, name]).stdout
    addresses = out.split()
    if not addresses:
        raise RemoteError(host.name, f"docker inspect {name}", 0, "container has no IP address")
    return addresses[0]


def remove_container(ctx: Context, host: Host, name: str) -> Callable[[], None]:
    return lambda: ctx.pool[host.name].run(["docker", "rm", "--force", name], timeout=60)


def ensure_network(ctx: Context, host: Host, name: str, create_args: list[str]) -> None:
    """Create a labelled docker network once per campaign (it is removed by cleanup)."""
    session = ctx.pool[host.name]
    if session.run(["docker", "network", "inspect", name], check=False).status == 0:
        return
    session.run(
        ["docker", "network", "create", "--label", f"{LABEL}={ctx.campaign}", *create_args, name],
        timeout=120,
    )


def start_process(ctx: Context, host: Host, name: str, argv: tuple[str, ...]) -> Callable[[], None]:
    """Start argv as a detached native process; the pidfile lets cleanup find it after a crash."""
    stem = f"{PID_DIR}/{ctx.campaign}/{host.name}-{name}"
    # Separate statements: `a && b &` would background the list, holding the SSH channel open.
    script = (
        f"mkdir -p {shlex.quote(PID_DIR + '/' + ctx.campaign)}\n"
        f"setsid {shlex.join(argv)} > {shlex.quote(stem + '.log')} 2>&1 < /dev/null &\n"
        f"echo $! > {shlex.quote(stem + '.pid')}"
    )
    ctx.pool[host.name].run(script, timeout=30)
    return lambda: ctx.pool[host.name].run(_kill_pidfiles(stem + ".pid"), timeout=30)


def _kill_pidfiles(pattern: str) -> str:
    """Shell text: TERM the processes named in the pidfiles, KILL what is left after 5 s."""
    return (
        f'for f in {pattern}; do [ -f "$f" ] || continue; p=$(cat "$f"); '
        'kill "$p" 2>/dev/null; i=0; '
        'while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done; '
        'kill -9 "$p" 2>/dev/null; rm -f "$f" "${f%.pid}.log"; done; true'
    )


def cleanup_host(ctx: Context, host: Host) -> str:
    """Remove everything any campaign labelled on this host; returns what was removed."""
    label = shlex.quote(f"label={LABEL}")
    script = "\n".join(
        [
            _kill_pidfiles(f"{PID_DIR}/*/{shlex.quote(host.name)}-*.pid"),
            "if docker info >/dev/null 2>&1; then",
            f'  c=$(docker ps -aq --filter {label}); [ -z "$c" ] || docker rm -f $c >/dev/null',
            f"  s=$(docker service ls -q --filter {label} 2>/dev/null); "
            '[ -z "$s" ] || docker service rm $s >/dev/null',
            f"  n=$(docker network ls -q --filter {label})",
            '  [ -z "$n" ] || docker network rm $n >/dev/null',
            "  echo containers=$(echo $c | wc -w) services=$(echo $s | wc -w)"
            " networks=$(echo $n | wc -w)",
            "fi",
        ]
    )
    return ctx.pool[host.name].run(script, timeout=180).stdout.strip()


def leftovers(ctx: Context, host: Host) -> list[str]:
    """Labelled objects and pidfiles still on a host (empty when clean)."""
    label = shlex.quote(f"label={LABEL}")
    script = (
        f"ls {PID_DIR}/*/{shlex.quote(host.name)}-*.pid 2>/dev/null; "
        "if docker info >/dev/null 2>&1; then "
        f"docker ps -aq --filter {label}; docker network ls -q --filter {label}; "
        f"docker service ls -q --filter {label} 2>/dev/null; fi; true"
    )
    return ctx.pool[host.name].run(script, timeout=60).stdout.split()
