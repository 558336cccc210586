"""How a detached server is stopped (pipeline/collect/modes/base.py, ``_kill_pidfiles``): the
shell text run on the host, run here against real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pipeline.collect.modes.base import _kill_pidfiles

BOUND_S = 5  # the stop's longest wait before SIGKILL


def _stop(pidfile: Path) -> float:
    started = time.monotonic()
    subprocess.run(["bash", "-c", _kill_pidfiles(str(pidfile))], check=True, timeout=30)
    return time.monotonic() - started


def test_an_exited_server_awaiting_its_reaper_is_gone_at_once(tmp_path):
    """The server exits on TERM, and its parent (this test, as a host's init that reaps late)
    has not reaped it: a zombie holds no socket, so the stop does not wait for the reaping."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    pidfile = tmp_path / "server.pid"
    pidfile.write_text(f"{child.pid}\n")
    (tmp_path / "server.log").write_text("log")
    took = _stop(pidfile)
    state = Path(f"/proc/{child.pid}/stat").read_text().rsplit(") ", 1)[1][0]
    assert state == "Z"  # exited, not yet reaped: the case the stop must not wait for
    assert took < BOUND_S / 2, f"the stop waited {took:.1f} s for a zombie"
    assert not pidfile.exists() and not (tmp_path / "server.log").exists()
    assert child.wait(timeout=5) == -signal.SIGTERM


def test_a_server_that_ignores_term_is_killed_after_the_bound(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "import signal, time; "
                              "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"])
    time.sleep(0.5)  # its handler is set
    pidfile = tmp_path / "server.pid"
    pidfile.write_text(f"{child.pid}\n")
    took = _stop(pidfile)
    assert child.wait(timeout=5) == -signal.SIGKILL
    assert took >= BOUND_S * 0.9 and not pidfile.exists()


def test_a_missing_pidfile_and_a_dead_pid_are_no_error(tmp_path):
    _stop(tmp_path / "none.pid")
    pidfile = tmp_path / "gone.pid"
    pidfile.write_text(f"{os.getpid() + 10_000_000}\n")  # beyond pid_max: no such process
    _stop(pidfile)
    assert not pidfile.exists()
