"""The WAN emulator daemon between inet-client and wan-router (this kernel has no netem).

The emulator itself is `pipeline/lab/wan.py`; this module starts it detached with a
profile, remembers that profile, and stops it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from pipeline.lab import processes
from pipeline.lab.commands import ENV, LabError
from pipeline.lab.network import tun_attached
from pipeline.lab.topology import INET_CLIENT, RUN_DIR, WAN_ROUTER, WAN_TUN

PIDFILE = RUN_DIR / "wan-emulator.pid"
LOG = RUN_DIR / "wan-emulator.log"
PROFILE_FILE = RUN_DIR / "wan-emulator.json"
STATS_FILE = RUN_DIR / "wan-emulator-stats.json"
ATTACH_TIMEOUT_S = 10
# The directory holding the `pipeline` package, so the daemon imports this same tree.
SOURCE_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class WanProfile:
    """Wide-area path between inet-client and the lab; delay is one-way, in each direction."""

    delay_ms: float = 20.0
    jitter_ms: float = 2.0
    jitter_dist: str = "normal"
    loss_pct: float = 0.0
    seed: int = 1

    def __post_init__(self) -> None:
        # One set of rules: the emulator's own profile validates the values. Imported here
        # because `python -m pipeline.lab.wan` must not find the module already imported.
        from pipeline.lab import wan

        wan.Profile(self.delay_ms, self.jitter_ms, self.jitter_dist, self.loss_pct)  # type: ignore[arg-type]

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> WanProfile:
        return cls(**json.loads(text))


def command(profile: WanProfile) -> list[str]:
    return [
        sys.executable, "-m", "pipeline.lab.wan",
        "--a", f"{INET_CLIENT.name}:{WAN_TUN}",
        "--b", f"{WAN_ROUTER.name}:{WAN_TUN}",
        "--delay-ms", f"{profile.delay_ms:g}",
        "--jitter-ms", f"{profile.jitter_ms:g}",
        "--jitter-dist", profile.jitter_dist,
        "--loss-pct", f"{profile.loss_pct:g}",
        "--seed", str(profile.seed),
        "--stats-file", str(STATS_FILE),
    ]  # fmt: skip


def running_pid() -> int | None:
    return processes.running_pid(PIDFILE, "pipeline.lab.wan")


def saved_profile() -> WanProfile | None:
    """The profile the emulator was last started with (None if unknown or unreadable)."""
    try:
        return WanProfile.from_json(PROFILE_FILE.read_text())
    except (OSError, ValueError, TypeError):
        return None


def start(profile: WanProfile) -> None:
    if importlib.util.find_spec("pipeline.lab.wan") is None:
        raise LabError("pipeline/lab/wan.py is missing from this checkout")
    stop()
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    env = {**ENV, "PYTHONPATH": str(SOURCE_ROOT)}
    log_start = LOG.stat().st_size if LOG.exists() else 0
    pid = processes.spawn(command(profile), LOG, env=env)
    PIDFILE.write_text(f"{pid}\n")
    deadline = time.monotonic() + ATTACH_TIMEOUT_S
    while not (tun_attached(INET_CLIENT) and tun_attached(WAN_ROUTER)):
        if not processes.alive(pid):
            processes.reap([pid])
            raise LabError(f"the emulator exited at start-up: {last_line(log_start)} "
                           f"(full log: {LOG})")  # fmt: skip
        if time.monotonic() > deadline:
            stop()
            raise LabError(f"the emulator did not open both TUN devices within "
                           f"{ATTACH_TIMEOUT_S} s; see {LOG}")  # fmt: skip
        time.sleep(0.1)
    # Saved only once it runs, so a rejected profile is not reused by the next up().
    PROFILE_FILE.write_text(profile.to_json())


def last_line(offset: int) -> str:
    """The last line the emulator wrote to its log since `offset`."""
    try:
        with open(LOG, "rb") as log:
            log.seek(offset)
            lines = log.read().decode(errors="replace").strip().splitlines()
    except OSError:
        return "no output"
    return lines[-1] if lines else "no output"


def stop() -> None:
    pid = running_pid()
    if pid:
        processes.terminate([pid], timeout=5)
        processes.reap([pid])
    PIDFILE.unlink(missing_ok=True)
