"""Host conventions that collection (the campaign, the modes) and the benchmarks share: the label
every created object carries, where pid files live, the errors a host or a mode reports. Pure:
no SSH, no third-party imports, so a benchmark module can use them without pulling in the
collection machinery, and analysis can import a benchmark's declarations."""

from __future__ import annotations

LABEL = "org.container-overhead.campaign"
PID_DIR = "/tmp/container-overhead"
# Test files benchmarks write on a host (disk's directory, bind-mount sources): every campaign
# empties it at its start and end, so a crash leaves nothing there for long.
SCRATCH_DIR = "/var/tmp/container-overhead"
STORAGE_DIR = f"{SCRATCH_DIR}/disk"  # the disk benchmark's test directory, in every mode
STDERR_TAIL_LINES = 20
MAX_COMMAND_CHARS = 2000  # in error messages; the full command stays on the exception
# Where a network benchmark's client and server run on a machine whose CPUs the hosts share
# (the embedded lab, pipeline/lab/cpus.py): one CPU for both, disjoint CPUs, or any CPU.
PLACEMENTS = ("colocated", "split", "shared")


class ModeUnavailable(RuntimeError):
    """Raised by start() when a mode turns out not to be runnable here; recorded as skipped."""


class NeedsRoot(ModeUnavailable):
    """A step needs root on a host whose login is not root and may not use sudo: the step is
    recorded as skipped with the privilege it needs."""

    def __init__(self, host: str, user: str, privilege: str):
        self.host = host
        self.privilege = privilege
        super().__init__(
            f"needs root on {host} to {privilege}; the inventory logs in as {user} without "
            "sudo: set `ssh: {sudo: true}` with a NOPASSWD sudo rule for that user, or log "
            "in as root"
        )


def _tail(text: str, lines: int = STDERR_TAIL_LINES) -> str:
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


def _short(command: str) -> str:
    if len(command) <= MAX_COMMAND_CHARS:
        return command
    return command[:MAX_COMMAND_CHARS] + f"... [{len(command) - MAX_COMMAND_CHARS} more chars]"


class RemoteError(RuntimeError):
    """A remote command failed: nonzero exit, timeout, or a failed transfer."""

    def __init__(
        self,
        host: str,
        command: str,
        status: int | None,
        stderr: str = "",
        *,
        stdout: str = "",
        reason: str | None = None,
    ):
        self.host = host
        self.command = command
        self.status = status
        self.stderr = stderr
        self.stdout = stdout
        self.reason = reason or f"exited with status {status}"
        super().__init__(self._render())

    def _render(self) -> str:
        msg = f"on host {self.host}: command {self.reason}:\n  $ {_short(self.command)}"
        tail = _tail(self.stderr)
        if tail:
            indented = "\n".join("    " + line for line in tail.splitlines())
            msg += f"\n  stderr (last {STDERR_TAIL_LINES} lines):\n{indented}"
        return msg


class UnreachableHost(RemoteError):
    """Cannot connect or authenticate to a host, or the connection died."""

    def __init__(
        self, host: str, address: str, cause: str, fix: str, *, command: str = ""
    ):
        self.address = address
        self.cause = cause
        self.fix = fix
        RuntimeError.__init__(
            self, f"cannot reach host {host} ({address}): {cause}. Fix: {fix}"
        )
        self.host = host
        self.command = command
        self.status = None
        self.stderr = ""
        self.stdout = ""
        self.reason = cause
