"""Lab daemons as processes: start detached, find by pid file, stop within a bounded time."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from pipeline.lab.commands import ENV


def alive(pid: int | None) -> bool:
    """True for a running process; zombies count as dead (pid 1 here does not reap them)."""
    if not pid:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def read_pidfile(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def running_pid(pidfile: Path, expect: str) -> int | None:
    """The pid recorded in `pidfile` if that process still runs and is what we expect:
    the pid may have been reused since (after a reboot, /run here is not a tmpfs)."""
    pid = read_pidfile(pidfile)
    return pid if alive(pid) and expect in cmdline(pid) else None


def spawn(args: Sequence[str | Path], log: Path, env: dict[str, str] | None = None) -> int:
    """Start a long-running daemon in its own session, output appended to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [str(a) for a in args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            env=env or ENV,
        )
    return proc.pid


def reap(pids: Iterable[int]) -> None:
    """Collect exit statuses of our own children so they do not linger as zombies."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def wait_gone(pids: Iterable[int], timeout: float) -> set[int]:
    """Wait until the processes exit; return those still alive after `timeout` seconds."""
    remaining = {p for p in pids if alive(p)}
    deadline = time.monotonic() + timeout
    while remaining and time.monotonic() < deadline:
        time.sleep(0.1)
        reap(remaining)
        remaining = {p for p in remaining if alive(p)}
    return remaining


def signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def terminate(pids: Iterable[int], timeout: float) -> set[int]:
    """SIGTERM, wait up to `timeout`, then SIGKILL; return pids that survived even that."""
    pids = {p for p in pids if alive(p)}
    signal_all(pids, signal.SIGTERM)
    left = wait_gone(pids, timeout)
    signal_all(left, signal.SIGKILL)
    return wait_gone(left, 5)


def all_pids() -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace")


def parent(pid: int) -> int | None:
    """The process's parent pid (None when it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def netns_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def lab_pids(netns_inodes: set[int], needles: Sequence[str]) -> set[int]:
    """Processes that belong to the lab: inside a lab namespace or naming a lab path.

    The namespace test catches what no pid file lists: SSH sessions, containerd shims,
    host-network containers.
    """
    me = os.getpid()
    found = set()
    for pid in all_pids():
        if pid == me or not alive(pid):
            continue
        if netns_inode(pid) in netns_inodes or any(n in cmdline(pid) for n in needles):
            found.add(pid)
    return found


def namespace_members(netns: dict[str, Path]) -> dict[str, set[int]]:
    """Name -> the processes in that network namespace (``netns``: name -> its /run/netns
    file) and their descendants, whatever their namespace (the rootless dockerd's). A missing
    namespace is left out."""
    pids = all_pids()
    parents = {p: parent(p) for p in pids}
    inodes = {p: netns_inode(p) for p in pids}
    found = {}
    for name, path in netns.items():
        try:
            inode = os.stat(path).st_ino
        except OSError:
            continue
        members = {p for p, i in inodes.items() if i == inode}
        grown = True
        while grown:
            more = {p for p, up in parents.items() if up in members} - members
            members |= more
            grown = bool(more)
        found[name] = members
    return found
