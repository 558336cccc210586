"""The interference watch: what else ran on a host while a window was measured.

Before and after every measured window the campaign takes a *reading* on each host the window
involves (the server's and the client's), over the login's own SSH session, no root needed:

- the kernel's CPU counters (``/proc/stat``: busy, steal and softirq time of all CPUs);
- the CPU time (user + system) of every process that is not the study's: not a kernel thread,
  not one of the study's tools (the benchmark's ``watch_commands``), engines or the harness's
  own sshd/sudo (``STUDY_COMMANDS``), keyed by pid and start time so a reused pid is a new
  process;
- a fixed piece of work timed (the *probe*: a loop of ``PROBE_ITERATIONS`` in awk).

Two readings give the window's interference (``interference``): the CPUs the other processes
used on average (per-process time differences; a process that started in the window counts
whole; one that exited inside the window is not seen: a parent's time of reaped children
would count a child's whole life in the window it ended, so it is left out), the steal and softirq
shares of the host's CPU capacity, the probe's two times and the busiest other processes by
name. The analysis flags windows above the thresholds of ``params.yaml``
(``pipeline.data.interference``). A reading that fails is recorded as such and never fails
the step.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

MARK = ": co-watch reading; "  # how a reading's command begins (a no-op)
PROBE_ITERATIONS = 1_000_000  # ~10-40 ms of one CPU: cheap next to a window, long next to a tick
TOP = 3  # the busiest other processes named per window and host

# Processes that are the study's own wherever they run: container engines and runtimes, the
# harness's login, and the lab's own daemons. A benchmark adds its tools (watch_commands).
# Names as /proc/<pid>/stat gives them: at most 15 characters.
STUDY_COMMANDS = frozenset({
    "sshd", "sudo", "dockerd", "containerd", "containerd-shim", "runc", "crun", "runsc",
    "runsc-gofer", "runsc-sandbox", "exe", "conmon", "podman", "slirp4netns", "pasta",
    "pasta.avx2", "passt", "passt.avx2", "rootlessport", "rootlessport-ch", "rootlesskit",
    "docker-proxy", "docker-init", "tini", "fuse-overlayfs", "catatonit", "docker", "netavark",
    "aardvark-dns", "dockerd-rootles", "vpnkit", "lxc-user-nic",
    # the Kubernetes modes' cluster (the lab runs it only for the campaigns that plan them)
    "kubelet", "kube-apiserver", "kube-controller", "kube-scheduler", "kube-proxy", "etcd",
    "kubectl", "pause",
})  # fmt: skip


def reading_command(study: frozenset[str] | set[str]) -> str:
    """Shell text printing one reading: ``cpu <ticks per s> <ncpu> <t_ns> <probe_ns> <the
    /proc/stat cpu fields>``, then ``pid <pid> <start> <ticks> <comm>`` per other process."""
    names = shlex.quote(" ".join(sorted(study)))
    program = (
        "BEGIN { n = split(names, s, \" \"); for (i = 1; i <= n; i++) S[s[i]] = 1 } "
        "{ if (!match($0, /\\(.*\\)/)) next; comm = substr($0, RSTART + 1, RLENGTH - 2); "
        "split(substr($0, RSTART + RLENGTH + 1), f, \" \"); pid = $1 + 0; "
        "if (pid == 2 || f[2] == 2 || (comm in S)) next; gsub(/[ \\t]/, \"_\", comm); "
        "print \"pid\", pid, f[20], f[12] + f[13], comm }"
    )
    probe = f"awk 'BEGIN {{ for (i = 0; i < {PROBE_ITERATIONS}; i++) s += i }}'"
    return (
        MARK + "t0=$(date +%s%N); " + probe + "; t1=$(date +%s%N); "
        'set -- $(head -n 1 /proc/stat); t2=$(date +%s%N); shift; '
        'echo "cpu $(getconf CLK_TCK) $(getconf _NPROCESSORS_ONLN) $t2 $((t1 - t0)) $*"; '
        f"cat /proc/[0-9]*/stat 2>/dev/null | awk -v names={names} {shlex.quote(program)}"
    )


def is_reading(command: str | list[str]) -> bool:
    """Whether ``command`` is a reading of the watch (``reading_command``)."""
    return isinstance(command, str) and command.startswith(MARK)


@dataclass
class Reading:
    """One host's state at one instant."""

    hz: int  # clock ticks per second (USER_HZ)
    cpus: int
    t_ns: int
    probe_ns: int
    busy: int  # ticks: user + nice + system + irq + softirq + steal
    steal: int
    softirq: int
    others: dict[tuple[int, int], tuple[int, str]] = field(default_factory=dict)


def parse(text: str) -> Reading:
    """A reading from the output of ``reading_command``; ValueError when it is not one."""
    reading = None
    for line in text.splitlines():
        parts = line.split()
        if parts[:1] == ["cpu"] and reading is None:
            hz, cpus, t_ns, probe_ns, *ticks = (int(p) for p in parts[1:])
            user, nice, system, _idle, _iowait, irq, softirq, steal = (ticks + [0] * 8)[:8]
            busy = user + nice + system + irq + softirq + steal
            reading = Reading(hz, cpus, t_ns, probe_ns, busy, steal, softirq)
        elif parts[:1] == ["pid"] and reading is not None and len(parts) == 5:
            reading.others[(int(parts[1]), int(parts[2]))] = (int(parts[3]), parts[4])
    if reading is None or reading.hz <= 0 or reading.cpus <= 0:
        raise ValueError(f"not an interference reading: {text[:200]!r}")
    return reading


def interference(before: Reading, after: Reading) -> dict:
    """What happened on the host between two readings: CPUs used by other processes on
    average, steal and softirq as shares of the host's CPU capacity, the probe's times."""
    seconds = (after.t_ns - before.t_ns) / 1e9
    if seconds <= 0:
        raise ValueError("the second reading is not later than the first")
    by_name: dict[str, int] = {}
    for key, (ticks, comm) in after.others.items():
        earlier = before.others.get(key, (0, comm))[0]
        by_name[comm] = by_name.get(comm, 0) + max(0, ticks - earlier)
    capacity = after.hz * seconds * after.cpus
    cpus_of = {comm: t / (after.hz * seconds) for comm, t in by_name.items()}
    top = sorted(((c, n) for n, c in cpus_of.items() if c > 0), reverse=True)[:TOP]
    return {
        "seconds": round(seconds, 3),
        "cpus": after.cpus,
        "other_cpus": round(sum(cpus_of.values()), 4),
        "busy_share": round((after.busy - before.busy) / capacity, 4),
        "steal_share": round((after.steal - before.steal) / capacity, 4),
        "softirq_share": round((after.softirq - before.softirq) / capacity, 4),
        "probe_before_ms": round(before.probe_ns / 1e6, 3),
        "probe_after_ms": round(after.probe_ns / 1e6, 3),
        "top": ", ".join(f"{n} {c:.2f}" for c, n in top),
    }
