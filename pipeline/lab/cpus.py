"""Which CPUs the lab's hosts run on: cpuset cgroups (cgroup v1).

The lab's hosts share this machine's CPUs. Left to the scheduler, a network benchmark's client
and server run on one CPU in some windows and on two in others, and the two cases measure
different things: a sockperf round trip whose wake-ups stay on one CPU is a fraction of one that
crosses CPUs (docs/validation.md, "CPU placement: the two latency levels", measures both), and
iperf3 on one CPU moves about half of what it moves on two. A run's value then depends on the
mix the scheduler chose. A network campaign's placement (`Campaign(placement=...)`, from the
benchmark's ``placement`` option, which the profiles set) fixes it:

- "colocated": every lab host on the machine's last CPU, so a client and its server always
  wake each other on one CPU;
- "split": the server's host (node1) and the clients' hosts (dc-client, inet-client, and
  node2, where the overlay modes run their client container) on disjoint CPUs, like separate
  machines (on 2 cores: node1 on CPU 0, the others on CPU 1);
- "shared": every host on every CPU (the scheduler decides); every non-network campaign's, so a
  host benchmark's allthreads variant and a scenario's engines see all CPUs.

The local path's client runs on the server's host, so in "split" it shares the server's CPUs.

Each SSH host's processes (its sshd and what SSH sessions start, a node's dockerd, containerd
and shims, the rootless dockerd) live in the cpuset cgroup ``<CGROUP_PARENT>/<host>``. A rootful
docker container's cgroup lies below its node's (dockerd's ``--cgroup-parent``), rootless
containers stay in their engine's cgroup, rootful podman's go under podman's own
``libpod_parent``, which follows node1 (the only host running podman). The WAN emulator (the
Internet between the sides) stays on every CPU.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Collection, Iterator
from pathlib import Path

from pipeline.hosts import PLACEMENTS
from pipeline.lab import processes
from pipeline.lab.commands import LabError
from pipeline.lab.topology import CGROUP_PARENT, MANAGER, SSH_HOSTS

CPUSET = Path("/sys/fs/cgroup/cpuset")
LAB = CPUSET / CGROUP_PARENT
PODMAN_PARENT = CPUSET / "libpod_parent"  # rootful podman's parent cgroup with cgroupfs
# Every network benchmark's server runs on the inventory's first server (inventory/lab.yaml:
# node1, the Swarm manager; swarm-ingress pins its task there). Clients run on dc-client,
# inet-client, node2 (the overlay modes' client container) and node1 itself (the local path).
SERVER_SIDE = (MANAGER,)
CLIENT_SIDE = tuple(h for h in SSH_HOSTS if h not in SERVER_SIDE)


def parse(text: str) -> list[int]:
    """A cpuset list ("0-2,4") as sorted CPU numbers."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return sorted(cpus)


def fmt(cpus: list[int]) -> str:
    """CPU numbers as the kernel lists them ("0-2,4")."""
    runs: list[list[int]] = []
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def unavailable() -> str | None:
    """Why placement cannot be applied here, or None."""
    if not (CPUSET / "cpuset.cpus").is_file():
        return f"no cgroup v1 cpuset hierarchy at {CPUSET} (cgroup v2 is not supported)"
    if len(machine_cpus()) < 2:
        return "one CPU: nothing to place"
    return None


def machine_cpus() -> list[int]:
    return parse((CPUSET / "cpuset.effective_cpus").read_text())


def group(host) -> Path:
    return LAB / host.name


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except FileNotFoundError:
        pass  # a container's cgroup removed meanwhile
    except OSError as exc:
        raise LabError(f"cannot write {value!r} to {path}: {exc.strerror}") from exc


def _make(path: Path) -> None:
    """A cpuset cgroup with every CPU and the machine's memory nodes (v1 starts them empty)."""
    path.mkdir(exist_ok=True)
    for name in ("cpuset.cpus", "cpuset.mems"):
        if not (path / name).read_text().strip():
            _write(path / name, (CPUSET / name).read_text().strip())


def _tree(root: Path) -> list[Path]:
    """The cgroup and every cgroup below it, parents first."""
    return [Path(d) for d, _, _ in os.walk(root)]


def _set_tree(root: Path, cpus: list[int]) -> None:
    """Put a cgroup and everything below it on `cpus`. In v1 a child's CPUs must lie within its
    parent's: first every CPU, parents first, then the target, children first."""
    groups = _tree(root)
    every = fmt(machine_cpus())
    for path in groups:
        _write(path / "cpuset.cpus", every)
    for path in reversed(groups):
        _write(path / "cpuset.cpus", fmt(cpus))


def _cpuset_of(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/cpuset").read_text().strip()
    except OSError:
        return None


def adopt() -> None:
    """Move each SSH host's processes still in the root cpuset (started before the host had
    its group, or by an older lab) into the host's group: those in the host's network
    namespace and their descendants (the rootless dockerd runs in a namespace of its own).
    Container processes already sit in a cgroup of their engine and stay there."""
    found = processes.namespace_members({h.name: h.netns for h in SSH_HOSTS})
    for host in SSH_HOSTS:
        for pid in sorted(found.get(host.name, ())):
            if _cpuset_of(pid) == "/":
                with contextlib.suppress(ProcessLookupError, FileNotFoundError):
                    (group(host) / "cgroup.procs").write_text(str(pid))


def ensure() -> str | None:
    """Create the hosts' groups and move their processes in; None, or why not possible."""
    reason = unavailable()
    if reason:
        return reason
    try:
        _make(LAB)
        for host in SSH_HOSTS:
            _make(group(host))
        adopt()
    except OSError as exc:
        raise LabError(f"cannot set up the hosts' cpuset groups under {LAB}: {exc}") from exc
    return None


def plan(placement: str) -> dict[str, list[int]]:
    """Host name -> CPUs for a placement: "colocated" puts every host on the machine's last CPU
    (the first tends to take more of the machine's interrupts); "split" puts the server's host
    on the first half of the machine's CPUs and every other host on the rest; "shared" gives
    every host all of them."""
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
    every = machine_cpus()
    if placement == "shared":
        return {h.name: every for h in SSH_HOSTS}
    if placement == "colocated":
        return {h.name: every[-1:] for h in SSH_HOSTS}
    half = len(every) // 2
    cpus = {h.name: every[:half] for h in SERVER_SIDE}
    cpus |= {h.name: every[half:] for h in CLIENT_SIDE}
    return cpus


def place(placement: str) -> dict:
    """Apply a placement to the lab's hosts (their processes and containers, now and later).
    Returns what a campaign records: {"placement": ..., "cpus": {host: "0"}}, or
    {"placement": "unavailable", "reason": ...} where it cannot be applied (the campaign then
    runs wherever the scheduler puts it)."""
    reason = ensure()
    if reason:
        return {"placement": "unavailable", "reason": reason}
    cpus = plan(placement)
    for host in SSH_HOSTS:
        _set_tree(group(host), cpus[host.name])
    if PODMAN_PARENT.is_dir() or placement != "shared":
        _make(PODMAN_PARENT)
        _set_tree(PODMAN_PARENT, cpus[MANAGER.name])
    return {"placement": placement, "cpus": {name: fmt(c) for name, c in cpus.items()}}


def release() -> None:
    """On down: podman's parent cgroup outlives the lab; give it every CPU again."""
    if unavailable() is None and PODMAN_PARENT.is_dir():
        _set_tree(PODMAN_PARENT, machine_cpus())


def join(host) -> None:
    """preexec_fn: put the calling (child) process into the host's group, as if an SSH session
    on the host had started it."""
    if unavailable() is None:
        (group(host) / "cgroup.procs").write_text(str(os.getpid()))


def _host_of(cpuset: str) -> str:
    """The lab host a process's cpuset cgroup belongs to ("" outside the lab's groups); rootful
    podman's containers are node1's."""
    parts = cpuset.strip().strip("/").split("/")
    if parts[0] == CGROUP_PARENT and len(parts) > 1:
        return parts[1]
    return MANAGER.name if parts[0] == PODMAN_PARENT.name else ""


def running(names: Collection[str]) -> list[tuple[str, str, int]]:
    """(lab host, command, CPU) of every live thread of the processes named ``names`` (the
    kernel's 15-character names): the CPU each thread last ran on, /proc's ``stat`` field 39.
    The lab's hosts share this machine's /proc, containers' processes included. A zombie is
    left out: a server stopped by an earlier campaign, on that campaign's CPUs, may wait for
    its reaper after the next one has started."""
    seen = []
    for pid in processes.all_pids():
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
            if comm not in names:
                continue
            host = _host_of(Path(f"/proc/{pid}/cpuset").read_text())
            for task in Path(f"/proc/{pid}/task").iterdir():
                stat = (task / "stat").read_text()
                fields = stat[stat.rindex(")") + 2 :].split()
                if fields[0] == "Z":  # exited, awaiting its reaper: it runs nowhere
                    continue
                seen.append((host, comm, int(fields[36])))  # field 39 counts from pid's 1
        except (OSError, ValueError, IndexError):
            continue  # the process ended meanwhile
    return seen


class Watch:
    """Where the named tools actually run, sampled in a thread every ``interval_s`` while the
    context is open: ``ran`` maps (lab host, command) to the CPUs its threads were seen on."""

    def __init__(self, names: Collection[str], interval_s: float = 0.05) -> None:
        self.names = frozenset(names)
        self.interval_s = interval_s
        self.ran: dict[tuple[str, str], set[int]] = {}
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            for host, comm, cpu in running(self.names):
                self.ran.setdefault((host, comm), set()).add(cpu)
            self.samples += 1

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@contextlib.contextmanager
def watching(names: Collection[str], interval_s: float = 0.05) -> Iterator[Watch]:
    """``Watch`` as a context: the CPUs the named tools ran on while it was open."""
    with Watch(names, interval_s) as watch:
        yield watch
