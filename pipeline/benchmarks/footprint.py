"""`footprint` and `density`: the memory a container engine's own processes take, idle and as
idle containers are added (the 000 and 004 articles' memory tables and 004's density table).

Both are scenario benchmarks: one step starts long-running idle containers of the engine's tool
image (``sleep``, bounded: it ends by itself after ``max_seconds`` + 10 min) in batches of
``step``, on the engine's default network, and reads the engine's memory after each batch.
The containers are named ``<scenario.prefix>-NNN``, carry the campaign label and are all
removed at the end of the step (also on error), so the campaign's cleanup finds what a crash
leaves.

A reading is one shell command on the server host (``reading_command``): the session's
network namespace, /proc/meminfo, the step's containers (``inspect``: id and network sandbox
path) and, for every process whose name an engine uses, its parent, uid, network namespace,
command line and the ``Rss``/``Pss`` of /proc/PID/smaps_rollup. ``engine_processes`` then picks
the engine's own processes by their relation to the engine, not by name alone (in the lab three
rootful dockerds and a rootless one share the machine, and other containers may run):

- shared processes: the engine's root process running as the engine's user in the session's
  network namespace (rootful docker: ``dockerd`` uid 0; rootless docker: ``rootlesskit``
  started for ``dockerd-rootless.sh``; rootless podman: its ``podman pause`` process; rootful
  podman has no daemon) and its descendants (containerd, rootlesskit's child, slirp4netns);
- per-container processes (``containerd-shim-runc-v2``, ``conmon``, rootless podman's
  slirp4netns): those of the engine's user whose command line names one of the step's
  containers (its id or its network sandbox path). Shims are re-parented to init, so their
  parent says nothing; another container's shim on the same daemon is not counted. A
  runtime that stays running beside the container counts with its shim: under gVisor
  (docker-gvisor) the shim's children, the sandbox (the Sentry, gVisor's kernel) and the
  gofer, `runsc` re-executed as `exe`.

Kinds: ``daemon`` (dockerd), ``containerd``, ``shim``, ``conmon``, ``helper`` (rootlesskit and
its child, slirp4netns, the podman pause process, docker-proxy). PSS (proportional set size)
splits pages shared between processes (the shims' code) among them, so it adds up across
processes and a regression per container uses it; RSS counts shared pages in every process.
Neither includes kernel memory (namespaces, cgroups, mounts): ``density`` adds the host's
MemAvailable drop, which does, but also counts everything else the machine does meanwhile.

Samples (``sample`` = the number of the step's containers running at the reading, ``t_ns`` =
time since the idle reading): ``footprint_{pss,rss}_kib_<kind>`` and ``..._total`` (KiB),
``footprint_processes_<kind>`` and ``footprint_host_used_kib`` (MemTotal - MemAvailable). The
flagged warm-up is one reading before the step starts any container (a start and removal
of one container comes between it and the idle reading, so one-time allocations of the first
start are not mistaken for per-container cost). ``density`` stores ``density_*`` samples, see
``Density``. Every reading is taken once the engine's total PSS settles (two readings
``SETTLE_PAUSE_S`` apart within ``SETTLE_TOLERANCE``), or after ``settle_seconds``.
"""

from __future__ import annotations

import re
import shlex
import time
from dataclasses import dataclass, field

from pipeline.benchmarks.base import Benchmark, Outcome, Sample, Scenario, ToolOutputError
from pipeline.capabilities import serving
from pipeline.hosts import ModeUnavailable, RemoteError, UnreachableHost

SLEEP = "/usr/bin/sleep"
KINDS = ("daemon", "containerd", "shim", "conmon", "helper")
SETTLE_PAUSE_S = 0.5
SETTLE_TOLERANCE = 0.02  # relative change of total PSS between two readings
SLEEP_MARGIN_S = 600  # the containers outlive the step's time bound by this much, then exit
# Process names (/proc/PID/comm, at most 15 characters) an engine's processes may have: the
# reading's shell loop reads smaps_rollup of these only. Relations decide which are counted.
CANDIDATES = (
    "dockerd|containerd|containerd-shim*|conmon|rootlesskit|exe|slirp4netns|'podman pause'"
    "|catatonit|docker-proxy|rootlessport*|fuse-overlayfs|pasta*|runsc*"
)
_HEX_ID = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    uid: int
    netns: str
    comm: str
    rss_kib: int
    pss_kib: int
    args: str


@dataclass(frozen=True)
class Reading:
    """One reading command's output, parsed."""

    netns: str  # the SSH session's network namespace (= the host's)
    mem_total_kib: int
    mem_available_kib: int
    containers: dict[str, str]  # the step's containers: id -> network sandbox path ("" if none)
    processes: dict[int, Proc]


@dataclass
class EngineMemory:
    """The engine's processes in one reading, summed per kind."""

    count: int  # the step's containers
    pss_kib: dict[str, int] = field(default_factory=dict)
    rss_kib: dict[str, int] = field(default_factory=dict)
    processes: dict[str, int] = field(default_factory=dict)
    names: dict[str, list[str]] = field(default_factory=dict)  # kind -> process names
    host_used_kib: int = 0
    mem_available_kib: int = 0

    @property
    def total_pss_kib(self) -> int:
        return sum(self.pss_kib.values())

    @property
    def total_rss_kib(self) -> int:
        return sum(self.rss_kib.values())


def reading_command(cli: list[str], names: list[str]) -> str:
    """The shell text of one reading (module docstring); ``names`` are the step's containers."""
    inspect = "true"
    if names:
        template = "{{.Id}} {{.NetworkSettings.SandboxKey}}"
        inspect = f"{shlex.join([*cli, 'inspect', '--format', template, *names])} 2>/dev/null"
    status = "/^PPid:/ {pp=$2} /^Uid:/ {u=$2} /^Rss:/ {r=$2} /^Pss:/ {p=$2}"
    status += r' END {printf "%s\t%s\t%s\t%s", pp, u, r, p}'
    return "\n".join(
        [
            "echo '== netns'; readlink /proc/self/ns/net",
            "echo '== meminfo'; grep -E '^(MemTotal|MemAvailable):' /proc/meminfo",
            f"echo '== containers'; {inspect}",
            "echo '== processes'",
            'for d in /proc/[0-9]*; do read -r c < "$d/comm" || continue',
            f'  case "$c" in {CANDIDATES}) ;; *) continue ;; esac',
            f'  s=$(awk {shlex.quote(status)} "$d/status" "$d/smaps_rollup") || continue',
            '  n=$(readlink "$d/ns/net"); a=$(tr "\\0" " " < "$d/cmdline")',
            r"""  printf '%s\t%s\t%s\t%s\t%s\n' "${d#/proc/}" "$c" "$n" "$s" "$a" """.rstrip(),
            "done 2>/dev/null; true",
        ]
    )


def parse_reading(text: str) -> Reading:
    """A reading command's output -> Reading; ToolOutputError if a section is missing."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("== "):
            current = line[3:].strip()
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    missing = {"netns", "meminfo", "containers", "processes"} - set(sections)
    if missing or not sections["netns"]:
        raise ToolOutputError(f"reading lacks {sorted(missing) or ['netns']}: {text[-400:]!r}")
    meminfo = {}
    for line in sections["meminfo"]:
        key, _, value = line.partition(":")
        meminfo[key] = int(value.split()[0])
    containers = {}
    for line in sections["containers"]:
        parts = line.split()
        if parts and _HEX_ID.match(parts[0]):
            containers[parts[0]] = parts[1] if len(parts) > 1 else ""
    processes = {}
    for line in sections["processes"]:
        proc = _parse_process(line)
        if proc is not None:
            processes[proc.pid] = proc
    return Reading(
        netns=sections["netns"][0].strip(),
        mem_total_kib=meminfo["MemTotal"],
        mem_available_kib=meminfo["MemAvailable"],
        containers=containers,
        processes=processes,
    )


def _parse_process(line: str) -> Proc | None:
    """One process line; None for a process that ended while it was read (empty fields)."""
    parts = line.split("\t", 7)
    if len(parts) < 7 or not all(parts[i].strip().isdigit() for i in (0, 3, 4, 5, 6)):
        return None
    pid, comm, netns, ppid, uid, rss, pss = parts[:7]
    args = parts[7].strip() if len(parts) == 8 else ""
    return Proc(int(pid), int(ppid), int(uid), netns, comm, int(rss), int(pss), args)


def kind_of(proc: Proc) -> str:
    if proc.comm == "dockerd":
        return "daemon"
    if proc.comm == "containerd":
        return "containerd"
    if proc.comm.startswith("containerd-shim"):
        return "shim"
    if proc.comm == "conmon":
        return "conmon"
    return "helper"


PER_CONTAINER_KINDS = ("shim", "conmon")


def _roots(reading: Reading, engine: str, uid: int) -> list[Proc]:
    """The engine's long-lived root process(es), as the engine's user in this host's netns."""
    here = [p for p in reading.processes.values() if p.uid == uid and p.netns == reading.netns]
    if engine == "docker":
        return [p for p in here if p.comm == "dockerd"]
    if engine == "rootless-docker":
        return [p for p in here if p.comm == "rootlesskit" and "dockerd" in p.args]
    if engine == "rootless-podman":
        return [p for p in here if p.comm in ("podman pause", "catatonit")]
    if engine == "podman":
        return []  # no daemon: conmon per container is all podman leaves running
    raise ValueError(f"footprint knows no engine {engine!r}")


def engine_processes(reading: Reading, engine: str, uid: int) -> list[Proc]:
    """The engine's processes in a reading (module docstring); ToolOutputError when a daemon
    engine's root process is not found exactly once."""
    roots = _roots(reading, engine, uid)
    if engine in ("docker", "rootless-docker") and len(roots) != 1:
        found = ", ".join(f"{p.comm} {p.pid}" for p in roots) or "none"
        raise ToolOutputError(
            f"expected one {engine} daemon of uid {uid} in network namespace {reading.netns}, "
            f"found {found}"
        )
    chosen = {p.pid: p for p in roots}
    frontier = [p.pid for p in roots]
    while frontier:  # descendants, not entering per-container processes (matched below)
        pid = frontier.pop()
        for child in reading.processes.values():
            if child.ppid == pid and child.pid not in chosen:
                if kind_of(child) not in PER_CONTAINER_KINDS:
                    chosen[child.pid] = child
                    frontier.append(child.pid)
    tokens = {t for pair in reading.containers.items() for t in pair if t}
    for proc in reading.processes.values():
        if proc.uid == uid and tokens.intersection(proc.args.split()):
            chosen.setdefault(proc.pid, proc)
    chosen.update(runtime_children(reading, chosen.values()))
    return sorted(chosen.values(), key=lambda p: p.pid)


def runtime_children(reading: Reading, procs) -> dict[int, Proc]:
    """The descendants of the per-container processes among ``procs`` (gVisor's sandbox and
    gofer under the shim, runsc re-executed as `exe`; the container's own process is no
    candidate name and is never read), by pid."""
    found: dict[int, Proc] = {}
    frontier = [p.pid for p in procs if kind_of(p) in PER_CONTAINER_KINDS]
    while frontier:
        pid = frontier.pop()
        for child in reading.processes.values():
            if child.ppid == pid and child.pid not in found:
                found[child.pid] = child
                frontier.append(child.pid)
    return found


def engine_memory(reading: Reading, engine: str, uid: int) -> EngineMemory:
    """Sum the engine's processes per kind; every kind is present (0 where it has none)."""
    result = EngineMemory(
        count=len(reading.containers),
        host_used_kib=reading.mem_total_kib - reading.mem_available_kib,
        mem_available_kib=reading.mem_available_kib,
    )
    for kind in KINDS:
        result.pss_kib[kind] = result.rss_kib[kind] = result.processes[kind] = 0
        result.names[kind] = []
    procs = engine_processes(reading, engine, uid)
    kinds = {p.pid: kind_of(p) for p in procs}
    for proc in sorted(procs, key=lambda p: p.pid):  # a runtime's child counts as its shim
        if proc.ppid in kinds and kinds[proc.ppid] in PER_CONTAINER_KINDS:
            kinds[proc.pid] = kinds[proc.ppid]
    for proc in procs:
        kind = kinds[proc.pid]
        result.pss_kib[kind] += proc.pss_kib
        result.rss_kib[kind] += proc.rss_kib
        result.processes[kind] += 1
        if proc.comm not in result.names[kind]:
            result.names[kind].append(proc.comm)
    return result


def footprint_samples(fp: EngineMemory, count: int, t_ns: int) -> list[Sample]:
    """The footprint benchmark's samples of one reading (module docstring)."""
    rows = [(f"footprint_pss_kib_{k}", "KiB", fp.pss_kib[k]) for k in KINDS]
    rows += [(f"footprint_rss_kib_{k}", "KiB", fp.rss_kib[k]) for k in KINDS]
    rows += [(f"footprint_processes_{k}", "processes", fp.processes[k]) for k in KINDS]
    rows += [
        ("footprint_pss_kib_total", "KiB", fp.total_pss_kib),
        ("footprint_rss_kib_total", "KiB", fp.total_rss_kib),
        ("footprint_host_used_kib", "KiB", fp.host_used_kib),
    ]
    return [Sample(m, u, count, float(v), t_ns) for m, u, v in rows]


# ---- one step: the engine on the server host ---------------------------------------------


class EngineHandle:
    """One step's access to the engine on the server host: its CLI, the uid its processes run
    as, container starts, readings and removal, and a log of every command and its output."""

    def __init__(self, scenario: Scenario, sleep_seconds: int) -> None:
        if scenario.engine is None:
            raise ModeUnavailable(f"mode {scenario.mode} runs no container engine")
        self.scenario = scenario
        self.engine = scenario.engine
        ctx, host = scenario.ctx, scenario.host
        self.cli = ctx.engine_cli(host, self.engine)  # ModeUnavailable without a rootless user
        rootless = self.engine.startswith("rootless-")
        self.uid = ctx.rootless_user(host).uid if rootless else 0
        self.session = ctx.pool[host.name]
        self.image = ctx.image(host, self.engine).tag
        self.argv = (SLEEP, str(sleep_seconds))
        self.log: list[str] = []
        self.options: list[str] = []
        if self.engine == "podman":
            # rootful podman raises rlimits runc may not set here: probe what works, once
            probe = f"{scenario.prefix}-probe"
            self.options, ulimits = ctx.probe_ulimits(host, probe, self.argv[:1] + ("0",))
            self.log.append(f"# podman ulimits: {ulimits}")
        self.options += scenario.engine_options

    def run(self, command: str, timeout: float, check: bool = True, root: str | None = None):
        result = self.session.run(command, timeout=timeout, check=False, root=root)
        self.log.append(f"$ {command}\n{result.stdout}{result.stderr}# exit {result.status}")
        if check and result.status != 0:
            raise ToolOutputError(
                f"{self.engine} on {self.scenario.host.name}: {command[:200]} exited "
                f"{result.status}: {result.stderr.strip()[-400:]}"
            )
        return result

    def run_command(self, name: str) -> str:
        labels = self.scenario.labels
        return shlex.join([*self.cli, "run", "--detach", "--name", name, *labels, *self.options,
                           self.image, *self.argv])  # fmt: skip

    def start(self, names: list[str]) -> tuple[list[str], str]:
        """Start containers one after another until one fails: (started, why it failed).
        Each ``run --detach`` prints the new container's id, so the ids printed count the
        started ones, also when the batch times out."""
        lines = [f"{self.run_command(n)} || exit 1" for n in names]
        try:
            result = self.run("\n".join(lines), timeout=60 + 30 * len(names), check=False)
            out, status, err = result.stdout, result.status, result.stderr
        except RemoteError as exc:
            if isinstance(exc, UnreachableHost):
                raise
            out, status, err = exc.stdout, None, exc.reason
            self.log.append(f"# batch start: {exc.reason}\n{exc.stdout}{exc.stderr}")
        started = sum(1 for line in out.splitlines() if _HEX_ID.match(line.strip()))
        if started >= len(names) and status == 0:
            return list(names), ""
        started = min(started, len(names) - 1)
        why = (err.strip().splitlines() or [f"exit status {status}"])[-1][-300:]
        return list(names[:started]), f"start of {names[started]} failed: {why}"

    def read(self, names: list[str]) -> EngineMemory:
        # root: the engine's daemons are root's, and /proc hides their smaps from others
        privilege = "read the engine's memory (/proc/PID/smaps_rollup)"
        text = self.run(reading_command(self.cli, names), timeout=120, root=privilege).stdout
        reading = parse_reading(text)
        return engine_memory(reading, self.engine, self.uid)

    def settled(self, names: list[str], seconds: float) -> tuple[EngineMemory, bool]:
        """A reading once total PSS changes by less than SETTLE_TOLERANCE between two
        readings SETTLE_PAUSE_S apart, or the last one after ``seconds``: (it, settled?)."""
        deadline = time.monotonic() + seconds
        previous = self.read(names)
        while True:
            time.sleep(SETTLE_PAUSE_S)
            current = self.read(names)
            change = abs(current.total_pss_kib - previous.total_pss_kib)
            if change <= SETTLE_TOLERANCE * max(previous.total_pss_kib, 1):
                return current, True
            if time.monotonic() > deadline:
                return current, False
            previous = current

    def remove(self, names: list[str]) -> list[str]:
        """Remove the containers; returns those still there afterwards (normally none).

        podman 4.3's ``rm --force`` removes nothing and exits 0 when one of the names does
        not exist (seen on the lab), hence its ``--ignore``; what is left is checked."""
        if not names:
            return []
        force = ["--force", "--ignore", "--time", "0"] if "podman" in self.engine else ["--force"]
        self.run(shlex.join([*self.cli, "rm", *force, *names]), timeout=120 + 2 * len(names),
                 check=False)  # fmt: skip
        listing = shlex.join([*self.cli, "ps", "--all", "--format", "{{.Names}}"])
        present = set(self.run(listing, timeout=120).stdout.split())
        return [n for n in names if n in present]


@dataclass
class Ramp:
    """What one step did: readings at each count, why it stopped."""

    # (containers running, ns since the idle reading, the reading)
    readings: list[tuple[int, int, EngineMemory]] = field(default_factory=list)
    warmup: EngineMemory | None = None
    stopped: str = ""
    unsettled: int = 0
    window_s: float = 0.0
    warmup_s: float = 0.0  # the warm-up: its reading and one container started and removed


class ContainerRamp(Benchmark):
    """What footprint and density share: start idle containers in batches and read the
    engine's memory after each batch (module docstring). Subclasses set the options, the
    limit (``limit()``), whether a failed start ends the step as failed, and the samples."""

    tool = "container engine"
    kind = "scenario"
    binaries = (SLEEP,)
    paths = ("host",)
    variants = ("idle",)
    failure_is_error = True

    def version_argv(self) -> list[str]:
        versions = (
            "echo dockerd $(docker version --format '{{.Server.Version}}' 2>/dev/null || "
            "echo none), containerd $(containerd --version 2>/dev/null | awk '{print $3}'), "
            "podman $(podman --version 2>/dev/null | awk '{print $3}')"
        )
        return ["sh", "-c", versions]

    def limit(self) -> int:  # pragma: no cover - contract
        raise NotImplementedError

    def configure(self, options: dict) -> None:
        super().configure(options)
        for key in ("step", "settle_seconds", "max_seconds"):
            if not float(self.options[key]) > 0:
                raise ValueError(f"{self.name}: {key} must be > 0, got {self.options[key]!r}")
        if int(self.limit()) < 1:
            raise ValueError(f"{self.name}: the container limit must be at least 1")

    def ramp(self, scenario: Scenario, handle: EngineHandle, attempted: list[str]) -> Ramp:
        """Warm-up reading, one container started and removed, the idle reading, then batches
        of ``step`` until the limit, a failed start or ``max_seconds``. ``attempted`` collects
        every name a start was tried for (the caller removes them)."""
        o = self.options
        step, limit, settle = int(o["step"]), int(self.limit()), float(o["settle_seconds"])
        began = time.monotonic()
        ramp = Ramp(warmup=handle.read([]))
        warm = f"{scenario.prefix}-warm"
        attempted.append(warm)
        _, error = handle.start([warm])
        if error:
            raise ToolOutputError(error)  # not even one container: the mode fails here
        if handle.remove([warm]):
            raise ToolOutputError(f"{warm} could not be removed")
        t0 = time.monotonic()
        ramp.warmup_s = t0 - began
        names: list[str] = []

        def read() -> None:
            memory, settled = handle.settled(names, settle)
            ramp.unsettled += not settled
            ramp.readings.append((len(names), int((time.monotonic() - t0) * 1e9), memory))

        read()
        while not ramp.stopped:
            if len(names) >= limit:
                ramp.stopped = f"limit of {limit} containers reached"
            elif time.monotonic() - t0 > float(o["max_seconds"]):
                ramp.stopped = f"time bound of {o['max_seconds']} s reached at {len(names)}"
            else:
                batch = [f"{scenario.prefix}-{i:03d}" for i in range(len(names), limit)][:step]
                attempted.extend(batch)
                started, error = handle.start(batch)
                names += started
                if error and self.failure_is_error:
                    raise ToolOutputError(error)
                ramp.stopped = error
                if started or not error:
                    read()
        ramp.window_s = time.monotonic() - t0
        return ramp

    def handle(self, scenario: Scenario) -> EngineHandle:
        sleep_seconds = int(float(self.options["max_seconds"])) + SLEEP_MARGIN_S
        return EngineHandle(scenario, sleep_seconds)

    def measure(self, scenario: Scenario) -> Outcome:
        handle = self.handle(scenario)
        attempted: list[str] = []
        left: list[str] = []
        try:
            ramp = self.ramp(scenario, handle, attempted)
        finally:
            removing = time.monotonic()
            left = handle.remove(attempted)
            removal_s = time.monotonic() - removing
        if left:  # a next run would find the names taken
            raise ToolOutputError(f"{len(left)} containers could not be removed: {left[:3]}")
        return Outcome(
            samples=self.samples(ramp),
            warmup=self.warmup_samples(ramp.warmup),
            raw="\n".join(handle.log),
            command=f"{scenario.host.name}$ {handle.run_command(scenario.prefix + '-NNN')}",
            window_s=ramp.window_s,
            fixed_s=ramp.warmup_s + removal_s,  # the warm-up and the removal the ramp needs
            notes=self.notes(ramp),
        )

    def warmup_samples(self, memory: EngineMemory) -> list[Sample]:
        """The reading before the step's first container, flagged as warm-up."""
        return footprint_samples(memory, 0, 0)

    def samples(self, ramp: Ramp) -> list[Sample]:  # pragma: no cover - contract
        raise NotImplementedError

    def notes(self, ramp: Ramp) -> dict[str, str]:
        idle = ramp.readings[0][2]
        return {
            "containers_reached": str(ramp.readings[-1][0]),
            "stopped": ramp.stopped,
            "unsettled_readings": f"{ramp.unsettled} of {len(ramp.readings)}",
            "idle_processes": "; ".join(
                f"{k}: {', '.join(idle.names[k])}" for k in KINDS if idle.names[k]
            )
            or "none",
            "options": ", ".join(f"{k}={v}" for k, v in sorted(self.options.items())),
        }


class Footprint(ContainerRamp):
    """``footprint``: readings at 0, step, 2*step, ... ``max_containers`` containers; any
    failed start fails the step (a regression needs the whole ramp)."""

    title = "Engine memory footprint"
    analysis = "footprint"
    tables = ("footprint", "footprint_processes", "density")
    name = "footprint"
    modes = serving(name)
    summary_metric = "footprint_pss_kib_total"
    options = {"max_containers": 20, "step": 5, "settle_seconds": 5.0, "max_seconds": 600.0}

    def limit(self) -> int:
        return int(self.options["max_containers"])

    def samples(self, ramp: Ramp) -> list[Sample]:
        return [s for count, t, fp in ramp.readings for s in footprint_samples(fp, count, t)]

    def format_value(self, value: float) -> str:
        return f"{value / 1024:.1f} MiB engine PSS (median over counts)"


class Density(ContainerRamp):
    """``density``: containers until ``cap``, a failed start or ``max_seconds``; the count
    reached and why it stopped are in the notes and ``density_containers_reached``.

    Samples at each reading (``sample`` = containers running): ``density_mem_used_mib``, the
    host's MemAvailable drop since the idle reading (MiB; includes kernel memory and the
    containers' own processes, and anything else the machine did meanwhile),
    ``density_mem_per_container_mib`` (that drop / count, from one container on),
    ``density_engine_pss_mib`` (the engine's processes' total PSS) and
    ``density_engine_pss_per_container_mib`` (its growth since idle / count)."""

    title = "Container density"
    analysis = "footprint"  # summarised with footprint (one stage, one notebook)
    name = "density"
    modes = serving(name)
    summary_metric = "density_containers_reached"
    failure_is_error = False
    options = {"cap": 50, "step": 5, "settle_seconds": 3.0, "max_seconds": 600.0}

    def limit(self) -> int:
        return int(self.options["cap"])

    def warmup_samples(self, memory: EngineMemory) -> list[Sample]:
        return [Sample("density_engine_pss_mib", "MiB", 0, memory.total_pss_kib / 1024, 0)]

    def samples(self, ramp: Ramp) -> list[Sample]:
        idle = ramp.readings[0][2]
        out = []
        for count, t, fp in ramp.readings:
            drop = (idle.mem_available_kib - fp.mem_available_kib) / 1024
            pss = fp.total_pss_kib / 1024
            out += [Sample("density_mem_used_mib", "MiB", count, drop, t),
                    Sample("density_engine_pss_mib", "MiB", count, pss, t)]  # fmt: skip
            if count:
                growth = pss - idle.total_pss_kib / 1024
                out += [Sample("density_mem_per_container_mib", "MiB", count, drop / count, t),
                        Sample("density_engine_pss_per_container_mib", "MiB", count,
                               growth / count, t)]  # fmt: skip
        reached = ramp.readings[-1][0]
        return out + [Sample("density_containers_reached", "containers", 0, float(reached))]

    def format_value(self, value: float) -> str:
        return f"{value:.0f} containers"
