"""Run a bench step in its own process and measure it: wall time and the child's own peak RSS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GiB = 1024**3


def run_child(module: str, *args: str) -> dict:
    """``python -m module args``; its last stdout line is JSON. Adds ``wall_s`` (parent's clock,
    interpreter start included) and ``maxrss_gib`` (``wait4``: this child alone, not the max over
    every child so far as ``RUSAGE_CHILDREN`` would give)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", module, *args], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{module} {' '.join(args)} exited {proc.returncode}:\n{out[-2000:]}")
    result = json.loads(out.strip().splitlines()[-1])
    result["wall_s"] = wall
    result["maxrss_gib"] = usage.ru_maxrss * 1024 / GiB  # ru_maxrss is in KiB on Linux
    return result


def emit(result: dict) -> None:
    """A child's result: one JSON line, last on stdout."""
    print(json.dumps(result), flush=True)
