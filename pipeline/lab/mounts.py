"""Mounts left under the lab directories (dockerd's overlay and netns mounts) and the
cgroups the lab's containers ran in."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from pipeline.lab.commands import run
from pipeline.lab.topology import CGROUP_PARENT, RUN_DIR, STATE_DIR

CGROUP_ROOT = Path("/sys/fs/cgroup")
UNIFIED = CGROUP_ROOT / "unified"  # the cgroup2 mount of a hybrid (v1 + v2) layout
# The controllers up() bound to v1 hierarchies of their own, for down() to release.
V1_RECORD = RUN_DIR / "cgroup-v1-controllers.json"


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


def unified_controllers() -> list[str]:
    """The controllers a hybrid layout's unified hierarchy holds (none on a pure v1 or v2
    host: there is no /sys/fs/cgroup/unified)."""
    try:
        return (UNIFIED / "cgroup.controllers").read_text().split()
    except OSError:
        return []


def bind_controllers_to_v1() -> list[str]:
    """crun (the docker-crun mode, and podman's default runtime) refuses a hybrid layout whose
    unified hierarchy holds any controller ("cgroups in hybrid mode not supported, drop all
    controllers from cgroupv2"); runc does not mind. This machine kind mounts every v1
    controller but hugetlb, which the unified hierarchy then holds. Each such controller gets
    a v1 hierarchy of its own at /sys/fs/cgroup/<name>, as a systemd hybrid host mounts it;
    down() releases it. Returns the controllers bound."""
    bound = []
    for name in unified_controllers():
        point = CGROUP_ROOT / name
        if point.is_mount():
            continue
        _record_v1([*_recorded_v1(), name])  # before the mount: an interrupted up is undone
        point.mkdir(exist_ok=True)
        run(["mount", "-t", "cgroup", "-o", name, "cgroup", point], timeout=10)
        bound.append(name)
    return bound


def release_v1_controllers() -> None:
    """Unmount what bind_controllers_to_v1() mounted (the lab's cgroups are gone by then; a
    hierarchy something else still uses lives on unmounted until it is empty)."""
    for name in _recorded_v1():
        point = CGROUP_ROOT / name
        if point.is_mount():
            run(["umount", point], check=False, timeout=10)
        with contextlib.suppress(OSError):
            point.rmdir()
    V1_RECORD.unlink(missing_ok=True)


def _recorded_v1() -> list[str]:
    try:
        return [str(n) for n in json.loads(V1_RECORD.read_text())]
    except (OSError, ValueError):
        return []


def _record_v1(names: list[str]) -> None:
    V1_RECORD.parent.mkdir(parents=True, exist_ok=True)
    V1_RECORD.write_text(json.dumps(sorted(set(names))))
