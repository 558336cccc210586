"""Running the system tools the lab is built from, with bounded time and readable errors."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

# Daemons look up helpers (containerd, runc, iptables, docker-proxy) on PATH, and the caller
# may be a notebook kernel whose PATH lacks the sbin directories.
ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
    "HOME": "/root",
}


class LabError(RuntimeError):
    """A lab step failed; the message names the component and what to do about it."""


def run(
    args: Sequence[str | Path],
    *,
    timeout: float = 30,
    check: bool = True,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a command to completion; raise LabError (with its stderr) if it fails or hangs."""
    argv = [str(a) for a in args]
    try:
        proc = subprocess.run(
            argv,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=ENV,
            stdin=None if input is not None else subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"`{' '.join(argv)}` did not finish within {timeout:g} s") from exc
    except FileNotFoundError as exc:
        raise LabError(f"`{argv[0]}` is not installed") from exc
    if check and proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise LabError(f"`{' '.join(argv)}` failed: {' / '.join(detail[-3:]) or proc.returncode}")
    return proc


def succeeds(args: Sequence[str | Path], *, timeout: float = 30) -> bool:
    """True when the command exits 0 (used for idempotency checks such as `iptables -C`)."""
    try:
        return run(args, timeout=timeout, check=False).returncode == 0
    except LabError:
        return False


def in_netns(netns: str, args: Sequence[str | Path]) -> list[str | Path]:
    """Prefix a command so it runs in a lab namespace.

    nsenter rather than `ip netns exec`: the latter remounts /sys, after which dockerd
    fails with "Devices cgroup isn't mounted".
    """
    return ["nsenter", f"--net=/run/netns/{netns}", *args]


@contextlib.contextmanager
def component(name: str, hint: str = "") -> Iterator[None]:
    """Prefix any LabError raised inside with the component it concerns (and a fix)."""
    try:
        yield
    except LabError as exc:
        message = f"{name}: {exc}"
        if hint and hint not in message:
            message += f" ({hint})"
        raise LabError(message) from exc
