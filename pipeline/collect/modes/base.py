"""The mode contract and the pieces modes share.

A mode is how the server side of a benchmark runs (a process, a container on some network, a
Swarm task). It starts the server, says which host the client runs on and which address it
dials, and stops everything it started. `available()` returns a reason when the mode cannot
run on these hosts; the campaign records that as `skipped`, never drops it.

Everything a mode creates carries the campaign label (containers, networks, services) or a
pidfile under PID_DIR (native processes), so `cleanup()` can remove it after a crash too.
"""

from __future__ import annotations

import ipaddress
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

import docker

from pipeline import capabilities
from pipeline.collect import engine_api, images
from pipeline.collect.images import ToolImage
from pipeline.collect.inventory import Host, Inventory
from pipeline.collect.remote import Pool, RemoteError
from pipeline.hosts import LABEL, PID_DIR, SCRATCH_DIR, ModeUnavailable, NeedsRoot

# Rootful podman with a store of its own whose overlay layers are mounted by fuse-overlayfs
# (overlay.mount_program), so the default store (the podman mode's) is left as it is.
FUSE_STORE = "/var/lib/container-overhead-fuse/storage"
FUSE_RUNROOT = "/run/container-overhead-fuse"
FUSE_OVERLAYFS = "/usr/bin/fuse-overlayfs"
ENGINES = ("docker", "podman", "rootless-docker", "rootless-podman", "podman-fuse-overlayfs")
# The engines with Docker's API: inspected, listed and cleaned through the SDK (engine_api).
DOCKER_ENGINES = ("docker", "rootless-docker")
# What the instrument's control modes (pipeline/collect/modes/controls.py) leave on a host while
# they run: CPU cgroups named CGROUP_PREFIX* (v2 or v1 cpu hierarchy), a qdisc with TBF_HANDLE.
CGROUP_PREFIX = "co-control-"
CGROUP_ROOTS = ("/sys/fs/cgroup", "/sys/fs/cgroup/cpu")
TBF_HANDLE = "c0de:"  # marks the study's qdisc, so clean-up never removes somebody else's
USER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SUBID_FILES = ("/etc/subuid", "/etc/subgid")


@dataclass(frozen=True)
class RootlessUser:
    """The unprivileged user the rootless modes run as on one host (inventory: rootless.user)."""

    name: str
    uid: int
    gid: int
    home: str
    sudo: bool = False  # the login is not root: setpriv runs through `sudo -n`

    @property
    def runtime_dir(self) -> str:
        return f"/run/user/{self.uid}"

    @property
    def docker_socket(self) -> str:
        return f"{self.runtime_dir}/docker.sock"  # dockerd-rootless.sh's default

    def command(self, argv: list[str]) -> list[str]:
        """argv run as the user from the host's login (root, or sudo), with the environment
        rootless tools need."""
        env = [f"HOME={self.home}", f"USER={self.name}", f"LOGNAME={self.name}",
               f"XDG_RUNTIME_DIR={self.runtime_dir}", f"PATH={USER_PATH}"]  # fmt: skip
        # setpriv execs (runuser forks and would stand between a pidfile and the process);
        # -C: the root session's working directory (/root) is not readable by the user.
        ids = [f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups"]
        via = SUDO if self.sudo else []
        return [*via, "setpriv", *ids, "env", "-C", self.home, "-i", *env, *argv]


@dataclass
class Context:
    inventory: Inventory
    pool: Pool
    campaign: str
    image_paths: list[str] = field(default_factory=list)  # what the tool image holds
    images: dict[tuple[str, str], ToolImage] = field(default_factory=dict)
    users: dict[str, RootlessUser] = field(default_factory=dict)
    apis: dict[tuple[str, str], docker.DockerClient] = field(default_factory=dict)

    def engine_api(self, host: Host, engine: str = "docker") -> docker.DockerClient:
        """The Docker SDK client of ``engine`` (docker or rootless-docker) on ``host``, over the
        host's SSH session (pipeline/collect/engine_api.py); made on first use.
        docker.errors.DockerException when no such engine answers there."""
        if engine not in DOCKER_ENGINES:
            raise ValueError(f"{engine!r} has no Docker API; Docker engines: {DOCKER_ENGINES}")
        key = (host.name, engine)
        if key not in self.apis:
            cli = engine_cli(self, host, engine)
            self.apis[key] = engine_api.connect(lambda: self.pool[host.name].transport, cli)
        return self.apis[key]

    def image(self, host: Host, engine: str = "docker") -> ToolImage:
        """The host's tool image for this engine (one of ENGINES), built or found on first use."""
        key = (host.name, engine)
        if key not in self.images:
            cli = shlex.join(engine_cli(self, host, engine))
            self.images[key] = images.ensure(self.pool[host.name], self.image_paths, engine, cli)
        return self.images[key]

    # The engine operations a scenario benchmark needs, offered on the context so a benchmark
    # module never imports the modes.
    def engine_cli(self, host: Host, engine: str) -> list[str]:
        return engine_cli(self, host, engine)

    def missing_tool(self, host: Host, *tools: str) -> str | None:
        return missing_tool(self, host, *tools)

    @staticmethod
    def without_sudo(argv: list[str]) -> tuple[list[str], bool]:
        return without_sudo(argv)

    def pidfile_stem(self, host: Host, name: str) -> str:
        return pidfile_stem(self, host, name)

    def kill_pidfiles(self, host: Host, pidfiles: list[str]) -> None:
        kill_pidfiles(self, host, pidfiles)

    def probe_ulimits(self, host: Host, name: str, argv: tuple[str, ...]) -> tuple[list[str], str]:
        from pipeline.collect.modes.podman import probe_ulimits

        return probe_ulimits(self, host, name, argv)

    def kubectl(self) -> tuple[Host, list[str]]:
        """The host kubectl runs on and its command line for the inventory's cluster and
        namespace (ModeUnavailable when the inventory names none)."""
        from pipeline.collect.modes import kubernetes

        return kubernetes.kubectl_host(self), kubernetes.kubectl(kubernetes.settings(self))

    def kubernetes_image(self, host: Host) -> ToolImage:
        """The tool image in the containerd of ``host``'s Kubernetes node, imported if needed."""
        from pipeline.collect.modes import kubernetes

        return kubernetes.pod_image(self, host)

    def kubernetes_node(self, host: Host) -> str:
        from pipeline.collect.modes import kubernetes

        return kubernetes.node_name(self, host)

    def kubernetes_cluster(self):  # noqa: ANN201 - a kubernetes.Cluster
        """What one step creates in the inventory's cluster (``apply``, ``running_pod``,
        ``wait_service``, ``stop``): pipeline/collect/modes/kubernetes.py's Cluster."""
        from pipeline.collect.modes import kubernetes

        return kubernetes.Cluster(self)

    def rootless_user(self, host: Host) -> RootlessUser:
        """The host's rootless user as it exists there; ModeUnavailable says what is missing."""
        if host.name not in self.users:
            problem = rootless_problem(self, host)
            if problem:
                raise ModeUnavailable(problem)
        return self.users[host.name]


@dataclass(frozen=True)
class Workload:
    """The server a benchmark needs: argv as run natively, the port, the protocols it serves."""

    name: str
    argv: tuple[str, ...]
    port: int
    udp: bool = False
    scratch: tuple[str, ...] = ()  # files the server leaves on the host (Benchmark.server_scratch)


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
    probe_output: str = ""  # what the mode's run of the tool's probe printed (host benchmarks)
    # Why a step failed, when the mode can tell it was the mode's doing (a tool the mode cannot
    # run): the campaign then records the step as skipped with that reason. None: no account.
    diagnose: Callable[[str], str | None] | None = None

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


class Mode:
    name: str = ""
    # The container engine (one of ENGINES) a scenario benchmark drives in this mode; None for
    # native and for modes no scenario benchmark runs in.
    engine: str | None = None
    # The engine whose daemon must answer on the mode's hosts when that is not ``engine`` (a
    # mode that runs Docker containers but no scenario benchmark): what the preflight checks.
    host_engine: str | None = None
    # The orchestrator the mode needs running beside the hosts' engines ("kubernetes"), which
    # an environment that provides its hosts brings up for the campaigns that plan the mode.
    cluster: str | None = None

    @property
    def daemon(self) -> str | None:
        """The engine that must answer on the mode's hosts (None: none, as for native)."""
        return self.host_engine or self.engine

    # What the mode serves is its row in pipeline/capabilities.py, which the benchmarks read too.
    @property
    def paths(self) -> tuple[str, ...]:
        """The paths a network benchmark plans this mode on (``("host",)``: none)."""
        return capabilities.serves(self.name).paths

    @property
    def control(self) -> bool:
        """A control of the instrument (pipeline/collect/modes/controls.py): never part of
        "all", planned only where a campaign names it."""
        return capabilities.serves(self.name).control

    def available(self, ctx: Context, path: str) -> str | None:
        """None when the mode can run on this path here, else the reason it cannot."""
        return None

    def engine_options(self, ctx: Context) -> list[str]:
        """Options every `run` of this mode's engine takes (an OCI runtime): a scenario
        benchmark adds them to the containers it starts itself."""
        return []

    def run_notes(self, ctx: Context) -> dict[str, str]:
        """What a scenario benchmark's run records about the mode (the OCI runtime it used)."""
        return {}

    def start(self, ctx: Context, workload: Workload) -> Deployment:  # pragma: no cover
        raise NotImplementedError

    def foreground(self, ctx: Context, workload: Workload) -> Deployment:  # pragma: no cover
        """A Deployment whose client host is the server host and whose ``wrap_client`` runs a
        tool's argv to completion in this mode there (host benchmarks: cpu, memory). Nothing
        runs yet; ``workload.argv`` is a quick run of the tool a mode may use as a probe."""
        raise NotImplementedError(f"mode {self.name} cannot run a tool in the foreground")


def server_host(ctx: Context) -> Host:
    return ctx.inventory.servers[0]


# `docker run` exits 125 when the daemon could not run the container at all (the tool never
# started). Attaching a container to an attachable overlay network on a worker sometimes fails
# that way ("attaching to network failed ... context deadline exceeded", moby/moby#41841):
# the overlay modes' client containers try up to this many times, 2 s apart.
ATTACH_ATTEMPTS = 3


def overlay_client(ctx: Context, network: str, image: str) -> Callable[[list[str]], str]:
    """``wrap_client`` for a client container on an overlay network: ``docker run --rm``,
    run again (bounded) when Docker itself failed to start it, never when the tool ran."""

    def in_container(argv: list[str]) -> str:
        run = shlex.join(["docker", "run", "--rm", "--network", network,
                          "--label", f"{LABEL}={ctx.campaign}", image, *argv])  # fmt: skip
        return (  # a subshell: the command composes like a simple one (`... 2>&1`)
            f"(i=1; while :; do {run}; rc=$?; "
            f'if [ "$rc" -ne 125 ] || [ "$i" -ge {ATTACH_ATTEMPTS} ]; then exit "$rc"; fi; '
            "i=$((i + 1)); sleep 2; done)"
        )

    return in_container


def container_name(ctx: Context, mode: str, workload: Workload) -> str:
    return f"co-{ctx.campaign[:10]}-{workload.name}-{mode}"


def docker_run(
    ctx: Context,
    host: Host,
    name: str,
    options: list[str],
    argv: tuple[str, ...],
    runtime: str | None = None,
) -> str:
    """Start a labelled, detached container of the host's tool image; returns its name.
    Starting stays the `docker run` a user types (as do the timed starts of the cold-start and
    orchestration benchmarks); what follows it (addresses, clean-up) uses the engine's API."""
    return engine_run(ctx, host, "docker", name, options, argv, runtime)


def runtime_options(runtime: str | None) -> list[str]:
    """`run` options for an OCI runtime registered with the engine (None: the engine's default)."""
    return ["--runtime", runtime] if runtime else []


# OCI runtimes the runtime modes ask dockerd for: the Debian package and binary that provide
# each, for the reason a host without it gets.
RUNTIME_PACKAGES = {"crun": ("crun", "/usr/bin/crun"), "runsc": ("runsc", "/usr/bin/runsc")}
# Arguments a runtime needs registered with (runsc: the network, see docker_gvisor.py).
RUNTIME_ARGS = {"runsc": ["--platform=ptrace", "--network=host"]}


def parse_runtimes(text: str) -> dict[str, list[str]]:
    """`docker info --format '{{json .Runtimes}}'` -> runtime name -> its runtime arguments."""
    try:
        table = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(table, dict):
        return {}
    found = {}
    for name, spec in table.items():
        args = spec.get("runtimeArgs") if isinstance(spec, dict) else None
        found[str(name)] = [str(a) for a in args] if isinstance(args, list) else []
    return found


def docker_runtimes(ctx: Context, host: Host) -> dict[str, list[str]] | None:
    """The OCI runtimes the host's dockerd has registered (None: docker does not answer)."""
    probe = ["docker", "info", "--format", "{{json .Runtimes}}"]
    result = ctx.pool[host.name].run(probe, check=False, timeout=30)
    return parse_runtimes(result.stdout) if result.status == 0 else None


def runtime_problem(ctx: Context, host: Host, runtime: str) -> str | None:
    """Why dockerd on ``host`` cannot run containers with ``runtime`` (None when it can): the
    reason names the runtime and the fix."""
    runtimes = docker_runtimes(ctx, host)
    if runtimes is None:
        return f"docker does not answer on {host.name} (docker info failed)"
    if runtime in runtimes:
        return None
    package, path = RUNTIME_PACKAGES.get(runtime.split("-")[0], (runtime, f"/usr/bin/{runtime}"))
    spec: dict = {"path": path}
    if runtime in RUNTIME_ARGS:
        spec["runtimeArgs"] = RUNTIME_ARGS[runtime]
    snippet = json.dumps({"runtimes": {runtime: spec}})
    return (
        f"OCI runtime {runtime} is not registered with dockerd on {host.name} (registered: "
        f"{', '.join(sorted(runtimes)) or 'none'}): install it (Debian: apt-get install "
        f"{package}), add {snippet} to /etc/docker/daemon.json and reload dockerd "
        "(systemctl reload docker); the lab registers it at `python -m pipeline.lab up`"
    )


def as_root(ctx: Context, host: Host, argv: list[str], privilege: str) -> list[str]:
    """``argv`` run as root from the host's login: as it is for root, through `sudo -n` where
    the inventory allows it, else NeedsRoot (the step is skipped with ``privilege``)."""
    if host.ssh.user == "root":
        return argv
    if host.ssh.sudo:
        return [*SUDO, *argv]
    raise NeedsRoot(host.name, host.ssh.user, privilege)


def root_if_allowed(host: Host, privilege: str) -> str | None:
    """``root=`` for a command that runs as root where the login may, else as the login
    (clean-up and checks, which then see what the login can)."""
    return privilege if host.ssh.privileged else None


def root_problem(host: Host, privilege: str) -> str | None:
    """Why a mode that needs root cannot run from the host's login (None: it can)."""
    if host.ssh.privileged:
        return None
    return str(NeedsRoot(host.name, host.ssh.user, privilege))


SUDO = ["sudo", "-n", "--"]


def without_sudo(argv: list[str]) -> tuple[list[str], bool]:
    """``argv`` less the `sudo -n --` that as_root() put in front, and whether it was there: a
    timed command runs its whole timer as root instead, so sudo's own start-up is not timed."""
    if argv[: len(SUDO)] == SUDO:
        return argv[len(SUDO):], True
    return argv, False


def force_remove(cli: list[str], engine: str, *names: str) -> list[str]:
    """``cli rm --force NAME...``, which kills at once in every engine. Podman's ``--force``
    first sends SIGTERM and waits 10 s: a tool that is the container's PID 1 without a handler
    for it (sockperf, iperf3) ignores it, so every podman teardown would wait those 10 s."""
    at_once = ["--time", "0"] if "podman" in engine else []
    return [*cli, "rm", "--force", *at_once, *names]


def engine_cli(ctx: Context, host: Host, engine: str) -> list[str]:
    """The command line that talks to ``engine`` on ``host`` from the host's login. Docker's
    socket is open to its group; every other engine needs root (rootful podman's store, the
    rootless user's socket and namespaces)."""
    if engine == "docker":
        return ["docker"]
    if engine == "podman":
        return as_root(ctx, host, ["podman"], "run rootful podman")
    if engine == "rootless-docker":
        socket = f"unix://{ctx.rootless_user(host).docker_socket}"
        return as_root(ctx, host, ["docker", "-H", socket],
                       "reach the rootless user's dockerd socket")  # fmt: skip
    if engine == "rootless-podman":
        return ctx.rootless_user(host).command(["podman"])  # through sudo where needed
    if engine == "podman-fuse-overlayfs":
        return as_root(ctx, host, fuse_podman_cli(), "run rootful podman")
    raise ValueError(f"unknown engine {engine!r}; known: {ENGINES}")


def fuse_podman_cli() -> list[str]:
    """Rootful podman on its fuse-overlayfs store (no argument may contain a space: the tool
    image builder splits the command line on spaces)."""
    return ["podman", "--root", FUSE_STORE, "--runroot", FUSE_RUNROOT,
            "--storage-driver", "overlay",
            "--storage-opt", f"overlay.mount_program={FUSE_OVERLAYFS}"]  # fmt: skip


def engine_run(
    ctx: Context,
    host: Host,
    engine: str,
    name: str,
    options: list[str],
    argv: tuple[str, ...],
    runtime: str | None = None,
) -> str:
    """`docker run` for any engine: a labelled, detached container of the engine's tool image,
    run by the OCI ``runtime`` registered with the engine (None: the engine's default)."""
    cli = engine_cli(ctx, host, engine)
    session = ctx.pool[host.name]
    session.run(force_remove(cli, engine, name), check=False, timeout=60)
    common = ["--label", f"{LABEL}={ctx.campaign}", *runtime_options(runtime)]
    image = ctx.image(host, engine).tag
    session.run([*cli, "run", "--detach", "--name", name, *common, *options, image, *argv],
                timeout=120)  # fmt: skip
    return name


def foreground_container(
    ctx: Context,
    host: Host,
    engine: str,
    name: str,
    options: list[str] | None = None,
    notes: dict[str, str] | None = None,
    runtime: str | None = None,
) -> Deployment:
    """A host benchmark's Deployment on ``host``: its ``wrap_client`` runs a tool to completion
    in a labelled ``--rm`` container of the engine's tool image (run by the OCI ``runtime``, None:
    the engine's default), its ``stop`` removes a container a crash or a timeout left under
    that name (--rm has normally removed it)."""
    cli = engine_cli(ctx, host, engine)
    common = ["--label", f"{LABEL}={ctx.campaign}", *runtime_options(runtime)]
    image = ctx.image(host, engine)
    remove = f"{shlex.join(force_remove(cli, engine, name))} >/dev/null 2>&1"

    def wrap(argv: list[str]) -> str:
        run = [*cli, "run", "--rm", "--name", name, *common, *(options or []), image.tag, *argv]
        return f"{remove}; {shlex.join(run)}"

    return Deployment(
        server=host,
        address=host.address,
        stop=lambda: ctx.pool[host.name].run(remove, check=False, timeout=60),
        client=host,
        wrap_client=wrap,
        image=image,
        notes=dict(notes or {}),
    )


def remove_engine_container(ctx: Context, host: Host, engine: str, name: str) -> Callable[[], None]:
    cli = engine_cli(ctx, host, engine)
    return lambda: ctx.pool[host.name].run(force_remove(cli, engine, name), timeout=60)


def rootless_problem(ctx: Context, host: Host) -> str | None:
    """Why the host has no usable rootless user (and caches it when it has one)."""
    if host.rootless is None:
        return (
            f"no rootless user configured for {host.name} in the inventory "
            f"(hosts.{host.name}.rootless.user)"
        )
    name = host.rootless.user
    problem = root_problem(host, f"act as the rootless user {name} (setpriv)")
    if problem:
        return problem
    entry = ctx.pool[host.name].run(["getent", "passwd", name], check=False)
    if entry.status != 0:
        return f"rootless user {name!r} does not exist on {host.name} (useradd it; see README)"
    fields = entry.stdout.strip().split(":")
    user = RootlessUser(name=name, uid=int(fields[2]), gid=int(fields[3]), home=fields[5],
                        sudo=host.ssh.user != "root")  # fmt: skip
    if ctx.pool[host.name].run(rootless_probe(user), check=False).status != 0:
        return (
            f"rootless user {name!r} on {host.name} lacks {user.runtime_dir} (loginctl "
            "enable-linger) or /etc/subuid + /etc/subgid ranges"
        )
    ctx.users[host.name] = user
    return None


def rootless_probe(user: RootlessUser, files: tuple[str, ...] = SUBID_FILES) -> str:
    """Shell test: the user's runtime directory exists and a subordinate-id file names it.
    Every value is quoted, and the name is matched literally (a '.' in it is no wildcard)."""
    pattern = "^" + "".join(c if c.isalnum() else f"[{c}]" for c in user.name) + ":"
    return (f"[ -d {shlex.quote(user.runtime_dir)} ] && grep -q -e {shlex.quote(pattern)} "
            f"{shlex.join(files)}")  # fmt: skip


def missing_tool(ctx: Context, host: Host, *tools: str) -> str | None:
    """A reason naming the first of ``tools`` not on the host's PATH, else None."""
    for tool in tools:
        probe = ["sh", "-c", f"command -v {shlex.quote(tool)}"]
        if ctx.pool[host.name].run(probe, check=False).status:
            return f"{tool} is not installed on {host.name}"
    return None


# ---- which network backend actually runs -------------------------------------------------


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    uid: int
    netns: str
    comm: str
    args: str


PS_FORMAT = "pid=,ppid=,uid=,netns=,comm=,args="
_USERS_RE = re.compile(r'\("([^"]+)",pid=(\d+),fd=\d+\)')


def parse_ps(text: str) -> dict[int, Proc]:
    """`ps -eo pid=,ppid=,uid=,netns=,comm=,args=` -> processes by pid."""
    table = {}
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 5 or not parts[0].isdigit():
            continue
        args = parts[5] if len(parts) == 6 else ""
        proc = Proc(int(parts[0]), int(parts[1]), int(parts[2]), parts[3], parts[4], args)
        table[proc.pid] = proc
    return table


def parse_ss_listeners(text: str) -> list[tuple[str, int]]:
    """`ss -Htlnp` lines -> (process name, pid) of every socket holder, in order, no repeats."""
    found: list[tuple[str, int]] = []
    for comm, pid in _USERS_RE.findall(text):
        if (comm, int(pid)) not in found:
            found.append((comm, int(pid)))
    return found


@dataclass(frozen=True)
class Snapshot:
    """What runs on the server host: the published port's listeners and the process table."""

    listeners: list[tuple[str, int]]
    table: dict[int, Proc]
    netns: str  # the SSH session's (= the host's) network namespace inode

    def ancestry(self, pid: int) -> list[Proc]:
        chain, seen = [], set()
        while pid in self.table and pid not in seen:
            seen.add(pid)
            chain.append(self.table[pid])
            pid = self.table[pid].ppid
        return chain

    def children(self, pid: int) -> list[Proc]:
        return [p for p in self.table.values() if p.ppid == pid]

    def matching(self, text: str) -> list[Proc]:
        return [p for p in self.table.values() if text in p.args]


def snapshot(ctx: Context, host: Host, port: int) -> Snapshot:
    out = (
        ctx.pool[host.name]
        .run(
            f"ss -Htlnp 'sport = :{port}'; echo ---; ps -eo {PS_FORMAT}; echo ---; "
            "stat -L -c %i /proc/self/ns/net",
            timeout=30, root="see which process holds the port (ss -p)",
        )
        .stdout
    )
    ss_text, ps_text, netns = out.split("\n---\n")
    return Snapshot(parse_ss_listeners(ss_text), parse_ps(ps_text), netns.strip())


def describe(proc: Proc) -> str:
    return f"{proc.comm} (pid {proc.pid}, uid {proc.uid})"


def publish_options(workload: Workload) -> list[str]:
    port = workload.port
    options = ["--publish", f"{port}:{port}/tcp"]
    return options + (["--publish", f"{port}:{port}/udp"] if workload.udp else [])


def inspect_container(ctx: Context, host: Host, name: str,
                      engine: str = "docker") -> engine_api.ContainerFacts:  # fmt: skip
    """A container's facts from its engine's API (RemoteError when the engine cannot say)."""
    try:
        return engine_api.container(ctx.engine_api(host, engine), name)
    except engine_api.ERRORS as e:
        raise RemoteError(host.name, f"inspect container {name}", None, reason=str(e)) from None


def container_address(ctx: Context, host: Host, name: str, network: str | None = None) -> str:
    """The container's address on ``network`` (None: its first network with one), read from
    the engine's API."""
    address = engine_api.address(inspect_container(ctx, host, name), network)
    if not address:
        where = f" on network {network}" if network else ""
        raise RemoteError(host.name, f"inspect container {name}", 0,
                          reason=f"container has no IP address{where}")  # fmt: skip
    return address


def remove_container(ctx: Context, host: Host, name: str) -> Callable[[], None]:
    return lambda: ctx.pool[host.name].run(["docker", "rm", "--force", name], timeout=60)


def ensure_network(ctx: Context, host: Host, name: str, driver: str,
                   options: dict[str, str] | None = None, attachable: bool = False,
                   ipam: dict[str, str] | None = None) -> engine_api.NetworkFacts:  # fmt: skip
    """A labelled docker network, created once per campaign (cleanup removes it); ``ipam``:
    subnet, gateway, iprange."""
    labels = {LABEL: ctx.campaign}
    try:
        return engine_api.ensure_network(ctx.engine_api(host), name, driver, labels, options,
                                         attachable, ipam)  # fmt: skip
    except engine_api.ERRORS as e:
        raise RemoteError(host.name, f"create network {name}", None, reason=str(e)) from None


def start_process(
    ctx: Context, host: Host, name: str, argv: tuple[str, ...], scratch: tuple[str, ...] = ()
) -> Callable[[], None]:
    """Start argv as a detached native process; the pidfile lets cleanup find it after a crash.
    ``scratch`` paths the server writes on the host are removed before the start and after
    the stop."""
    stem = f"{PID_DIR}/{ctx.campaign}/{host.name}-{name}"
    remove = f"rm -rf -- {shlex.join(scratch)}" if scratch else "true"
    # A command as_root() put sudo in front of starts from a root shell instead: sudo would
    # stand between the pidfile and the process (it forks and waits).
    command, via_sudo = without_sudo(list(argv))
    # Separate statements: `a && b &` would background the list, holding the SSH channel open.
    script = (
        f"{remove}\n"
        f"mkdir -p {shlex.quote(PID_DIR + '/' + ctx.campaign)}\n"
        f"setsid {shlex.join(command)} > {shlex.quote(stem + '.log')} 2>&1 < /dev/null &\n"
        f"echo $! > {shlex.quote(stem + '.pid')}"
    )
    root = "start a process as another user" if via_sudo else None
    ctx.pool[host.name].run(script, timeout=30, root=root)
    stop = f"{_kill_pidfiles(shlex.quote(stem + '.pid'))}\n{remove}"
    session = ctx.pool[host.name]
    # root where allowed: a server started as another user (the rootless user's pasta)
    root = root_if_allowed(host, "stop a process another user runs")
    return lambda: session.run(stop, timeout=30, root=root)


def _kill_pidfiles(pattern: str) -> str:
    """Shell text: TERM the processes named in the pidfiles, KILL what is left after 5 s.

    A process that has exited is gone even while it waits, a zombie, for its reaper (its
    sockets and files are closed): a detached server's reaper is the host's init, and a
    container's init may reap only once a second, which the wait for `kill -0` to fail cost
    every stop."""
    alive = ('kill -0 "$p" 2>/dev/null && '
             '[ "$(sed "s/.*) //" /proc/$p/stat 2>/dev/null | cut -c1)" != Z ]')  # fmt: skip
    return (
        f'for f in {pattern}; do [ -f "$f" ] || continue; p=$(cat "$f"); '
        'kill "$p" 2>/dev/null; i=0; '
        f'while {alive} && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; '
        'kill -9 "$p" 2>/dev/null; rm -f "$f" "${f%.pid}.log"; done; true'
    )


def remove_cgroups(pattern: str = f"{CGROUP_PREFIX}*") -> str:
    """Shell text: remove the control modes' CPU cgroups in either hierarchy. A tool an
    interrupted campaign left running in one is killed first, and the removal is retried for
    up to 5 s while the kernel empties the group (rmdir fails on a busy cgroup)."""
    dirs = " ".join(f"{root}/{pattern}" for root in CGROUP_ROOTS)
    return (
        f'for d in {dirs}; do [ -d "$d" ] || continue; '
        'kill -9 $(cat "$d/cgroup.procs" 2>/dev/null) 2>/dev/null; i=0; '
        'while ! rmdir "$d" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done; '
        "done; true"
    )


def _tbf_interfaces(action: str) -> str:
    """Shell text running ``action`` (with ``$i``) for each interface with the study's qdisc."""
    find = f"tc qdisc show 2>/dev/null | awk '$3 == \"{TBF_HANDLE}\" {{print $5}}'"
    return f"for i in $({find}); do {action}; done; true"


def cleanup_host(ctx: Context, host: Host) -> str:
    """Remove everything any campaign labelled on this host; returns what was removed."""
    script = "\n".join(
        [
            _kill_pidfiles(f"{PID_DIR}/*/{shlex.quote(host.name)}-*.pid"),
            f"rmdir {PID_DIR}/*/ 2>/dev/null",  # campaign directories left empty
            f"rm -rf -- {SCRATCH_DIR}/* 2>/dev/null",  # benchmarks' test files (disk)
            remove_cgroups(),  # control modes: CPU cgroups
            _tbf_interfaces(f'tc qdisc del dev "$i" root handle {TBF_HANDLE} 2>/dev/null'),
            *[_engine_cleanup(cli, guard, name) for name, cli, guard in _other_engines(ctx, host)],
            *[_cluster_script(ctx, host, "cleanup_script")],
        ]
    )
    session = ctx.pool[host.name]
    root = root_if_allowed(host, "remove what root-run steps left (cgroups, qdiscs, files)")
    removed = [_docker_cleanup(ctx, host, engine) for engine in _docker_engines(ctx, host)]
    removed.append(session.run(script, timeout=180, root=root).stdout.strip())
    return "\n".join(line for line in removed if line)


def _docker_engines(ctx: Context, host: Host) -> list[str]:
    """The Docker engines clean-up and leftovers reach on this host: the rootful one always
    (absent: nothing to do), the rootless user's where its socket can be reached (as root)."""
    engines = ["docker"]
    if (host.rootless is not None and host.ssh.privileged
            and rootless_problem(ctx, host) is None):  # fmt: skip
        engines.append("rootless-docker")
    return engines


def _docker_api(ctx: Context, host: Host, engine: str) -> docker.DockerClient | None:
    """The engine's API client, None where the engine does not answer (not installed, not
    running: nothing of the study's can be in it)."""
    try:
        return ctx.engine_api(host, engine)
    except docker.errors.DockerException:
        return None


def _docker_cleanup(ctx: Context, host: Host, engine: str) -> str:
    """Remove the labelled objects of a Docker engine through its API; what was removed."""
    client = _docker_api(ctx, host, engine)
    if client is None:
        return ""
    try:
        removed = engine_api.cleanup(client, LABEL)
    except engine_api.ERRORS as e:
        raise RemoteError(host.name, f"{engine}: remove labelled objects", None,
                          reason=str(e)) from None  # fmt: skip
    counts = " ".join(f"{kind}={len(getattr(removed, kind))}"
                      for kind in ("containers", "services", "networks", "volumes"))  # fmt: skip
    return f"{engine}: {counts}"


WORK_DIRS = (PID_DIR, SCRATCH_DIR)


def own_work_dirs(ctx: Context, host: Host) -> None:
    """A login other than root must own the study's directories on the host (pidfiles, tools,
    test files), which an earlier campaign of another login may have made: with sudo they are
    handed over, without it the fix is named. Nothing to do for root."""
    if host.ssh.user == "root":
        return
    session = ctx.pool[host.name]
    dirs = " ".join(WORK_DIRS)
    found = session.run(
        f'for d in {dirs}; do [ ! -e "$d" ] || find "$d" ! -user "$(id -un)" -print -quit; '
        "done 2>/dev/null; true", timeout=60,
    ).stdout.split()  # fmt: skip
    if found:
        user = shlex.quote(host.ssh.user)
        if not host.ssh.privileged:
            raise RemoteError(
                host.name, "check the study's directories", None,
                reason=f"found {found[0]}, which {host.ssh.user} does not own (an earlier "
                f"campaign of another login made it): run `sudo chown -R {user}: {dirs}` on "
                f"{host.name}, or `sudo rm -rf {dirs}`",
            )  # fmt: skip
        session.run(f"chown -R {user}: {dirs}", timeout=120,
                    root="hand the study's directories to the login")  # fmt: skip
    session.run(["mkdir", "-p", *WORK_DIRS], timeout=30)


def _other_engines(ctx: Context, host: Host) -> list[tuple[str, str, str]]:
    """(engine, command line as root, shell guard) of the engines without Docker's API (the
    podman stores) a mode may have used on this host: none for a login that cannot act as
    root, since only root reaches them (cleanup_host and leftovers run as root where the login
    may). Docker's engines go through their API (_docker_engines). Guards keep cleanup
    quiet where an engine is absent and never create a store: running rootful podman once
    creates /var/lib/containers."""
    if not host.ssh.privileged:
        return []
    found = []
    if host.name == ctx.inventory.servers[0].name:
        # Only the first server: in the lab all nodes share one rootful store (one file system).
        guard = "command -v podman >/dev/null 2>&1 && [ -d /var/lib/containers/storage ]"
        found.append(("podman", "podman", guard))
        guard = f"command -v podman >/dev/null 2>&1 && [ -d {FUSE_STORE} ]"
        found.append(("podman-fuse-overlayfs", shlex.join(fuse_podman_cli()), guard))
    if host.rootless is not None and rootless_problem(ctx, host) is None:
        user = ctx.users[host.name]
        podman = shlex.join(user.command(["podman"]))
        found.append(("rootless-podman", podman, "command -v podman >/dev/null 2>&1"))
    return found


def _engine_cleanup(cli: str, guard: str, engine: str) -> str:
    label = shlex.quote(f"label={LABEL}")
    return "\n".join(
        [
            f"if {guard}; then",
            f"  c=$({cli} ps -aq --filter {label} 2>/dev/null); "
            f'[ -z "$c" ] || {cli} rm -f{" --time 0" if "podman" in engine else ""} $c '
            ">/dev/null 2>&1",
            f"  n=$({cli} network ls -q --filter {label} 2>/dev/null); "
            f'[ -z "$n" ] || {cli} network rm $n >/dev/null 2>&1',
            f"  v=$({cli} volume ls -q --filter {label} 2>/dev/null); "
            f'[ -z "$v" ] || {cli} volume rm -f $v >/dev/null 2>&1',
            f"  echo {engine}: containers=$(echo $c | wc -w) networks=$(echo $n | wc -w)"
            " volumes=$(echo $v | wc -w)",
            "fi",
        ]
    )


def leftovers(ctx: Context, host: Host) -> list[str]:
    """Labelled objects, pidfiles and test files still on a host (empty when clean); a Docker
    engine's objects as ``kind:name`` (rootless Docker's as ``rootless-docker:kind:name``)."""
    label = shlex.quote(f"label={LABEL}")
    script = (
        f"ls {PID_DIR}/*/{shlex.quote(host.name)}-*.pid 2>/dev/null; "
        f"ls -d {SCRATCH_DIR}/* 2>/dev/null; "
        + " ".join(f"ls -d {root}/{CGROUP_PREFIX}* 2>/dev/null;" for root in CGROUP_ROOTS)
        + _tbf_interfaces('echo "tbf:$i"')
        + "; "
    )
    for engine, cli, guard in _other_engines(ctx, host):
        script += (
            f"if {guard}; then for i in $({cli} ps -aq --filter {label} 2>/dev/null) "
            f"$({cli} network ls -q --filter {label} 2>/dev/null) "
            f"$({cli} volume ls -q --filter {label} 2>/dev/null); do echo {engine}:$i; done; fi; "
        )
    script += _cluster_script(ctx, host, "leftovers_script")
    found: list[str] = []
    for engine in _docker_engines(ctx, host):
        client = _docker_api(ctx, host, engine)
        if client is not None:
            prefix = "" if engine == "docker" else f"{engine}:"
            try:
                found += engine_api.labelled(client, LABEL).entries(prefix)
            except engine_api.ERRORS as e:
                raise RemoteError(host.name, f"{engine}: list labelled objects", None,
                                  reason=str(e)) from None  # fmt: skip
    session = ctx.pool[host.name]
    root = root_if_allowed(host, "see what root-run steps left (cgroups, qdiscs, files)")
    return found + session.run(script + "true", timeout=60, root=root).stdout.split()


def _cluster_script(ctx: Context, host: Host, which: str) -> str:
    """The Kubernetes modes' clean-up (or leftovers) shell text where kubectl runs, else none."""
    from pipeline.collect.modes import kubernetes  # the modes import this module

    k8s = ctx.inventory.kubernetes
    if k8s is None or host.name != (k8s.host or ctx.inventory.servers[0].name):
        return ""
    return getattr(kubernetes, which)(k8s)


@dataclass(frozen=True)
class Interface:
    """The server's NIC that carries its inventory address."""

    name: str
    mtu: int
    network: str  # e.g. 10.77.0.0/24
    gateway: str | None  # the default route's gateway on that NIC, if there is one


def parse_interface(addr_text: str, mtu_text: str, route_text: str) -> Interface:
    """`ip -o addr show to ADDR`, the NIC's sysfs mtu and `ip route show default dev NIC`."""
    fields = addr_text.split()
    if len(fields) < 4:
        raise ValueError(f"no interface carries the address: {addr_text!r}")
    network = str(ipaddress.ip_interface(fields[3]).network)
    via = route_text.split()
    gateway = via[via.index("via") + 1] if "via" in via else None
    return Interface(fields[1].split("@")[0], int(mtu_text), network, gateway)


def host_interface(ctx: Context, host: Host) -> Interface:
    session = ctx.pool[host.name]
    addr = session.run(["ip", "-o", "addr", "show", "to", host.address], timeout=30).stdout
    name = addr.split()[1].split("@")[0] if len(addr.split()) > 1 else ""
    if not name:
        raise RemoteError(host.name, "ip addr", 0, f"no interface carries {host.address}")
    mtu = session.run(["cat", f"/sys/class/net/{name}/mtu"], timeout=30).stdout
    route = session.run(["ip", "route", "show", "default", "dev", name], timeout=30).stdout
    return parse_interface(addr, mtu, route)


def pidfile_stem(ctx: Context, host: Host, name: str) -> str:
    """start_process's pidfile path without `.pid`: extra pidfiles `<stem>.<what>.pid` next to
    it are found by cleanup_host too."""
    return f"{PID_DIR}/{ctx.campaign}/{host.name}-{name}"


def kill_pidfiles(ctx: Context, host: Host, pidfiles: list[str]) -> None:
    session = ctx.pool[host.name]
    root = root_if_allowed(host, "stop a process another user runs")
    session.run(_kill_pidfiles(" ".join(shlex.quote(p) for p in pidfiles)), timeout=60,
                root=root)  # fmt: skip
