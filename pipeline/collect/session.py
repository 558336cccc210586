"""A collection session's frame: its clock, its signals and the hosts' lock.

- ``SessionClock`` and ``duty_cycle``: where a session's wall time goes (load windows, the
  tools' own fixed time, preparing, per-measurement overhead, clean-up), summed over the
  sessions of a campaign.
- ``sigterm_as_interrupt`` and ``interrupts_deferred``: DVC's and papermill's SIGTERM stops a
  campaign as Ctrl-C does, and a clean-up once begun runs to its end.
- ``HostLock``: one campaign at a time on a set of hosts.
- ``ClockWatch``: whether a realtime clock was stepped during a step (the step's timings are
  then not kept).
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
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


# -- clock steps -----------------------------------------------------------------------------

# Realtime against a monotonic clock moving by more than this within one step: the realtime
# clock was stepped (NTP, chrony or a person setting it), not slewed. A slew moves it by at
# most 0.5 ms/s, 60 ms over a 2-minute step; a host's reading is good to ~15 ms (its uptime
# has centisecond resolution).
CLOCK_STEP_S = 0.1
SAMPLE_S = 0.02  # how often this machine's clocks are compared during a step
CONTROLLER = "this machine"
# One reading of a host's clocks, added to each interference-watch reading (before and after
# every measured window): realtime (ns) between two readings of boot time (s, centiseconds).
# Boot time is monotonic and, unlike CLOCK_MONOTONIC, counts a suspend as realtime does. The
# two boot-time readings bound when `date` ran: on a loaded host its fork can take longer than
# a clock step is allowed to move, and such a reading is no reading.
HOST_CLOCKS = ("read a _ < /proc/uptime; d=$(date +%s%N); read b _ < /proc/uptime; "
               "echo co-clock $d $a $b")  # fmt: skip
# A reading whose two monotonic bounds lie further apart than this says too little about when
# its realtime was read to judge a step of CLOCK_STEP_S.
READ_SPREAD_S = 0.03
READ_TRIES = 5


def realtime_offset_ns() -> int | None:
    """This machine's realtime minus its monotonic clock (constant until the clock is
    stepped), read between two monotonic readings; None when no try of ``READ_TRIES`` kept
    them within ``READ_SPREAD_S`` (the thread was descheduled or held off the GIL between
    them, which would pass for a step)."""
    best: tuple[int, int] | None = None
    for _ in range(READ_TRIES):
        before = time.monotonic_ns()
        realtime = time.time_ns()
        after = time.monotonic_ns()
        if best is None or after - before < best[0]:
            best = (after - before, realtime - (before + after) // 2)
        if best[0] <= READ_SPREAD_S * 1e9 / 10:
            break
    return best[1] if best[0] <= READ_SPREAD_S * 1e9 else None


def _seconds_ns(text: str) -> int:
    whole, _, fraction = text.partition(".")
    return int(whole) * 10**9 + int((fraction + "000000000")[:9])


def parse_host_clocks(text: str) -> int:
    """A host's realtime minus its boot time, ns, from the output of ``HOST_CLOCKS`` (boot time
    read once, or before and after realtime: their midpoint); ValueError when it is not one (a
    ``date`` without %N, no /proc/uptime) or its two boot times lie more than
    ``READ_SPREAD_S`` plus the uptime's centisecond apart."""
    for line in text.splitlines():
        parts = line.split()
        if parts[:1] == ["co-clock"] and len(parts) in (3, 4):
            realtime_ns = int(parts[1])
            bounds = [_seconds_ns(p) for p in parts[2:]]
            if bounds[-1] - bounds[0] > (READ_SPREAD_S + 0.01) * 10**9:
                raise ValueError(f"an uncertain clock reading (its date ran "
                                 f"{(bounds[-1] - bounds[0]) / 1e9:.2f} s late): {line!r}")
            return realtime_ns - (bounds[0] + bounds[-1]) // 2
    raise ValueError(f"not a clock reading: {text[:200]!r}")


def clock_steps(before: Mapping[str, int], after: Mapping[str, int],
                threshold_s: float = CLOCK_STEP_S) -> dict[str, float]:  # fmt: skip
    """Seconds each clock's realtime moved against its monotonic clock between two readings
    (offsets in ns, by where they were read), those beyond ``threshold_s`` only; a place
    read only once is not judged."""
    moved = {where: (after[where] - before[where]) / 1e9 for where in before if where in after}
    return {where: s for where, s in moved.items() if abs(s) > threshold_s}


def describe_steps(steps: Mapping[str, float]) -> str:
    """ "clock stepped by +5.00 s during the step (this machine, node1)": the largest step and
    where the clocks moved."""
    largest = max(steps.values(), key=abs)
    return f"clock stepped by {largest:+.2f} s during the step ({', '.join(steps)})"


class ClockWatch:
    """Whether a realtime clock was stepped during one step.

    This machine's realtime and monotonic clocks are compared every ``SAMPLE_S`` in a thread
    (a step and its undoing inside one step show too). Each host's realtime against its boot
    time is what ``hosts()`` returns as the step ends: its offsets (ns) at each reading taken
    during the step, in order (the interference watch's, before and after every measured
    window; a host with fewer than two is not judged). ``steps()`` lists, per clock, how far it
    moved beyond ``threshold_s``: durations taken from such a clock inside the step (the tools'
    own timestamps, ``date``, the controller's wall time) are not the step's."""

    def __init__(self, hosts: Callable[[], Mapping[str, list[int]]] | None = None,
                 threshold_s: float = CLOCK_STEP_S, sample_s: float = SAMPLE_S,
                 offset: Callable[[], int] | None = None) -> None:  # fmt: skip
        self.hosts = hosts or dict
        self.threshold_s = threshold_s
        self.sample_s = sample_s
        self.offset = offset or (lambda: realtime_offset_ns())  # looked up at each call
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start: int | None = None
        self._extreme = 0  # this machine's largest move so far, ns, with its sign

    def __enter__(self) -> ClockWatch:
        self._start = None
        self._note()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while True:
            self._note()
            if self._stop.wait(self.sample_s):
                return

    def _note(self) -> None:
        offset = self.offset()
        if offset is None:  # an uncertain reading: the next one says whether the clock moved
            return
        if self._start is None:  # the step's first certain reading
            self._start = offset
            return
        moved = offset - self._start
        if abs(moved) > abs(self._extreme):
            self._extreme = moved

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._note()

    def steps(self) -> dict[str, float]:
        """Seconds each clock moved beyond the threshold during the step (this machine's as
        ``CONTROLLER``, first); empty when none did."""
        found = clock_steps({CONTROLLER: 0}, {CONTROLLER: self._extreme}, self.threshold_s)
        for host, offsets in self.hosts().items():
            if len(offsets) > 1:
                moved = max((o - offsets[0] for o in offsets[1:]), key=abs)
                found.update(clock_steps({host: 0}, {host: moved}, self.threshold_s))
        return found
