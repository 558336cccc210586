"""Mounts left under the lab directories (dockerd's overlay and netns mounts) and the
cgroups the lab's containers ran in."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from pipeline.lab.commands import run
from pipeline.lab.topology import CGROUP_PARENT, RUN_DIR, STATE_DIR

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def lab_mounts() -> list[Path]:
    """Mount points inside STATE_DIR or RUN_DIR, deepest first."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = Path(_unescape(line.split()[4]))
        if any(point == d or d in point.parents for d in (STATE_DIR, RUN_DIR)):
            found.append(point)
    return sorted(set(found), key=lambda p: len(p.parts), reverse=True)


def unmount_all() -> None:
    """Lazily unmount everything under the lab directories, deepest first (bounded)."""
    for _ in range(5):  # stacked mounts need one pass per layer
        points = lab_mounts()
        if not points:
            return
        for point in points:
            run(["umount", "-l", point], check=False, timeout=10)


def lab_cgroups() -> list[Path]:
    """The lab's cgroup directories in every hierarchy, deepest first."""
    found = []
    with contextlib.suppress(OSError):
        for hierarchy in CGROUP_ROOT.iterdir():
            top = hierarchy / CGROUP_PARENT
            if top.is_dir():
                found += [Path(d) for d, _, _ in os.walk(top)]
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def cgroup_pids() -> set[int]:
    pids = set()
    for group in lab_cgroups():
        with contextlib.suppress(OSError, ValueError):
            pids |= {int(p) for p in (group / "cgroup.procs").read_text().split()}
    return pids


def remove_cgroups() -> None:
    for group in lab_cgroups():
        with contextlib.suppress(OSError):
            group.rmdir()
