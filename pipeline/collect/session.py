"""A collection session's frame: its clock, its signals and the hosts' lock.

- ``SessionClock`` and ``duty_cycle``: where a session's wall time goes (load windows, the
  tools' own fixed time, preparing, per-measurement overhead, clean-up), summed over the
  sessions of a campaign.
- ``sigterm_as_interrupt`` and ``interrupts_deferred``: DVC's and papermill's SIGTERM stops a
  campaign as Ctrl-C does, and a clean-up once begun runs to its end.
- ``HostLock``: one campaign at a time on a set of hosts.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pandas as pd

from pipeline.collect.modes.base import PID_DIR
from pipeline.collect.remote import Session


class CampaignError(RuntimeError):
    """The campaign stopped; what is saved stays saved and `dvc repro` resumes from it."""


def duty_cycle(sessions: list[dict]) -> dict:
    """Wall time of every collection session against the seconds spent inside load windows.

    ``duty_cycle`` = window seconds / wall seconds over all sessions of the campaign (resumed
    sessions add up). The rest of the wall time is split into where it went: preparation
    (reachability, uploads, tool images, hashes), per-measurement overhead (deploying and
    removing the mode, SSH round trips, the tools' own start-up, host facts) and clean-up.
    """
    keys = ("wall_s", "window_s", "prepare_s", "loop_s", "cleanup_s", "steps")
    total = {k: float(sum(s.get(k, 0) for s in sessions)) for k in keys}
    total["steps"] = int(total["steps"])
    total["per_step_overhead_s"] = (
        (total["loop_s"] - total["window_s"]) / total["steps"] if total["steps"] else None
    )
    # Inside the loop (sessions since these were recorded; None if any session lacks them):
    # starting and stopping servers, client commands (their wall time beyond the window is SSH
    # and the tool's own start-up, e.g. sockperf's start-up sleep), the rest (host facts,
    # parsing, saving).
    for k in ("deploy_s", "stop_s", "client_s", "kept_s", "fixed_s"):
        known = sessions and all(k in s for s in sessions)
        total[k] = float(sum(s[k] for s in sessions)) if known else None
    if total["client_s"] is not None:
        total["client_overhead_s"] = total["client_s"] - total["window_s"]
        total["other_s"] = total["loop_s"] - total["client_s"] - total["deploy_s"] - total["stop_s"]
    if total["kept_s"] is not None and total["fixed_s"] is not None:
        total["harness_s"] = total["wall_s"] - total["kept_s"] - total["fixed_s"]
    total["duty_cycle"] = total["window_s"] / total["wall_s"] if total["wall_s"] else None
    total["sessions"] = len(sessions)
    # The lab's CPU placement of each session that recorded one (pipeline/lab/cpus.py).
    placements = [s["placement"] for s in sessions if s.get("placement")]
    total["placements"] = [p for i, p in enumerate(placements) if p not in placements[:i]]
    return total


@contextmanager
def _signals_to(handler: Callable, signals: tuple[int, ...]) -> Iterator[None]:
    """``handler`` for ``signals`` inside the block, the previous handlers after it (outside
    the main thread, where no handler can be set, the block runs as it is)."""
    try:
        previous = {sig: signal.signal(sig, handler) for sig in signals}
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def sigterm_as_interrupt():
    """DVC and papermill stop a stage with SIGTERM; clean up exactly as for Ctrl-C."""

    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    return _signals_to(handler, (signal.SIGTERM,))


@contextmanager
def interrupts_deferred(log: Callable[[str], None]) -> Iterator[None]:
    """Clean-up runs to its end: a Ctrl-C (or SIGTERM) arriving during it is held, said once,
    and raised as KeyboardInterrupt when the clean-up is done (a second Ctrl-C would otherwise
    leave labelled objects on the hosts)."""
    held: list[int] = []

    def hold(signum, frame):
        if not held:
            log("cleaning up: the interrupt takes effect when the hosts are clean")
        held.append(signum)

    with _signals_to(hold, (signal.SIGINT, signal.SIGTERM)):
        yield
    if held:
        raise KeyboardInterrupt(f"signal {held[0]} during clean-up")


class HostLock:
    """One campaign at a time on a set of hosts, held on the Swarm manager.

    Two campaigns would perturb each other's measurements, and each one's cleanup removes the
    other's containers. A lock left by a killed campaign on this controller is taken over.
    """

    PATH = f"{PID_DIR}/campaign.lock"

    def __init__(self, session: Session, campaign: str) -> None:
        self.session = session
        self.owner = f"{socket.gethostname()} {os.getpid()} {campaign}"

    def __enter__(self) -> HostLock:
        for _ in range(2):
            held = self._try()
            if held is None:
                return self
            host, pid, *_ = (held.split() + ["", ""])[:3]
            if host == socket.gethostname() and pid.isdigit() and not _alive(int(pid)):
                self.session.run(["rm", "-rf", self.PATH])  # its campaign died: take over
                continue
            break
        raise CampaignError(
            f"another campaign holds {self.PATH} on {self.session.host.name} ({held!r}: "
            "controller host, pid, campaign). Wait for it to finish; if it is dead, remove "
            "that directory and run again."
        )

    def _try(self) -> str | None:
        """None when acquired, else the current owner's line."""
        script = (
            f"mkdir -p {PID_DIR} && if mkdir {self.PATH} 2>/dev/null; then "
            f"echo {shlex.quote(self.owner)} > {self.PATH}/owner; echo acquired; "
            f"else cat {self.PATH}/owner 2>/dev/null || echo unknown; fi"
        )
        out = self.session.run(script, timeout=30).stdout.strip()
        return None if out == "acquired" else out

    def __exit__(self, *exc: object) -> None:
        owner = shlex.quote(self.owner)
        self.session.run(
            f'[ "$(cat {self.PATH}/owner 2>/dev/null)" = {owner} ] && rm -rf {self.PATH}; true',
            timeout=30,
        )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True



class SessionClock:
    """Where one collection session's wall time goes, for the campaign's duty cycle."""

    def __init__(self) -> None:
        self.started_at = pd.Timestamp.now(tz="UTC")
        self.t0 = time.monotonic()
        self.phases: dict[str, float] = {}
        self.steps = 0
        self.window_s = 0.0
        # The three-way split of the wall time (harness/duty_cycle.py): the measured windows
        # the analysis keeps, and the time the tool itself needs beyond them (warm-ups, omitted
        # starts, its own fixed start-up); everything else is the harness's.
        self.kept_s = 0.0
        self.fixed_s = 0.0
        self.placement: dict | None = None  # the lab's CPU placement (Campaign._place)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t = time.monotonic()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.monotonic() - t

    def record(self) -> dict:
        return {
            "started_at": self.started_at.isoformat(),
            "wall_s": time.monotonic() - self.t0,
            "window_s": self.window_s,
            "kept_s": self.kept_s,
            "fixed_s": self.fixed_s,
            "steps": self.steps,
            **self.phases,
            **({"placement": self.placement} if self.placement is not None else {}),
        }



def fmt_duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s"
