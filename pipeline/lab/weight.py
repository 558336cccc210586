"""The lab's CPU weight: its hosts' processes ahead of everything else on this machine.

The lab shares this machine's CPUs with whatever else runs on it. With
``kernel.sched_autogroup_enabled=1`` a ``nice -n 19`` job in another session still takes its
session's fair share, up to a whole CPU, from a benchmark (``shared/LAB-NOTES.md``): niceness
only orders processes inside one autogroup. The lever that works across sessions is a cgroup
CPU weight: the lab's cgroup ``<CGROUP_PARENT>`` in the cpu hierarchy gets the largest weight
the kernel allows (cgroup v1 ``cpu.shares`` 262144, v2 ``cpu.weight`` 10000) against 1024
(v2: 100) for everything else, so whenever the lab's processes want a CPU they get about
256/257 (v2: 100/101) of it, and other work runs in what the lab leaves idle. It changes
nothing when nothing else runs.

What lies below the weighted group:

- each lab host's own processes (its sshd and what SSH sessions start, a node's dockerd and
  containerd, the rootless dockerd, a native benchmark's tools) in ``<CGROUP_PARENT>/<host>``:
  moved there on every bring-up (those in the hosts' network namespaces and their
  descendants), and their children inherit it;
- rootful Docker containers: each node's dockerd already puts them below
  ``/<CGROUP_PARENT>/<node>`` in every hierarchy (``--cgroup-parent``, cgroupfs driver);
- rootless containers stay in their engine's cgroup, the rootless dockerd's host's.

Not below it, so weighted on their own: rootful Podman's containers (``libpod_parent``, made
here if Podman has not yet) and the Kubernetes nodes' cgroup roots (``co-k8s-<node>``, when
the cluster runs). Each gets the same weight; ``release`` gives ``libpod_parent`` the default
back on down (it outlives the lab), the lab's own groups go with the lab's cgroups.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from pipeline.lab import processes
from pipeline.lab.commands import LabError
from pipeline.lab.topology import CGROUP_PARENT, HOSTS, NODES

ROOT = Path("/sys/fs/cgroup")
V1_NAMES = ("cpu", "cpu,cpuacct")  # where a v1 host mounts the cpu controller
V1_SHARES, V1_DEFAULT = 262144, 1024  # the kernel's largest cpu.shares, and the default
V2_WEIGHT, V2_DEFAULT = 10000, 100
PODMAN_PARENT = "libpod_parent"  # rootful podman's parent cgroup with cgroupfs


def hierarchy() -> tuple[Path, str] | None:
    """The cpu controller's hierarchy and its kind ("v1": cpu.shares, "v2": cpu.weight)."""
    for name in V1_NAMES:
        if (ROOT / name / "cpu.shares").is_file():
            return ROOT / name, "v1"
    with contextlib.suppress(OSError):
        if "cpu" in (ROOT / "cgroup.controllers").read_text().split():
            return ROOT, "v2"
    return None


def _file(kind: str) -> str:
    return "cpu.shares" if kind == "v1" else "cpu.weight"


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as exc:
        raise LabError(f"cannot write {value!r} to {path}: {exc.strerror}") from exc


def _cpu_cgroup(pid: int, kind: str) -> str | None:
    """The process's cgroup in the cpu hierarchy ("/" at its root), None when it is gone."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if (controllers == "") if kind == "v2" else ("cpu" in controllers.split(",")):
            return path
    return None


def _members() -> dict[str, set[int]]:
    """Lab host name -> the processes in its network namespace and their descendants."""
    return processes.namespace_members({h.name: h.netns for h in HOSTS})


def ensure() -> dict:
    """Give the lab its CPU weight and move its hosts' processes below it. Returns what a
    session records: the weight file, its value, the groups weighted and the processes moved;
    or {"weight": "unavailable", "reason": ...}."""
    found = hierarchy()
    if found is None:
        return {"weight": "unavailable", "reason": f"no cpu controller under {ROOT}"}
    base, kind = found
    value = str(V1_SHARES if kind == "v1" else V2_WEIGHT)
    if kind == "v2":  # the children of the root must have the cpu controller
        with contextlib.suppress(OSError):
            if "cpu" not in (base / "cgroup.subtree_control").read_text().split():
                _write(base / "cgroup.subtree_control", "+cpu")
    lab = base / CGROUP_PARENT
    try:
        lab.mkdir(exist_ok=True)
        (base / PODMAN_PARENT).mkdir(exist_ok=True)
        for host in HOSTS:
            (lab / host.name).mkdir(exist_ok=True)
    except OSError as exc:
        raise LabError(f"cannot make the lab's cpu cgroups under {base}: {exc}") from exc
    weighted = [lab, base / PODMAN_PARENT]
    weighted += [base / n.k8s_cgroup_root for n in NODES if (base / n.k8s_cgroup_root).is_dir()]
    for group in weighted:
        _write(group / _file(kind), value)
    moved = 0
    procs = "cgroup.procs"
    for name, members in _members().items():
        for pid in sorted(members):
            if _cpu_cgroup(pid, kind) == "/":
                with contextlib.suppress(ProcessLookupError, FileNotFoundError):
                    (lab / name / procs).write_text(str(pid))
                    moved += 1
    return {"weight": _file(kind), "value": int(value),
            "groups": [str(g.relative_to(base)) for g in weighted], "moved": moved}  # fmt: skip


def state() -> dict[str, int]:
    """The weight of each weighted group now (group path -> value); {} where none is set."""
    found = hierarchy()
    if found is None:
        return {}
    base, kind = found
    groups = [base / CGROUP_PARENT, base / PODMAN_PARENT,
              *(base / n.k8s_cgroup_root for n in NODES)]  # fmt: skip
    out = {}
    for group in groups:
        with contextlib.suppress(OSError, ValueError):
            out[str(group.relative_to(base))] = int((group / _file(kind)).read_text())
    return out


def release() -> None:
    """On down: podman's parent cgroup outlives the lab; it gets the default weight back."""
    found = hierarchy()
    if found is None:
        return
    base, kind = found
    default = str(V1_DEFAULT if kind == "v1" else V2_DEFAULT)
    with contextlib.suppress(FileNotFoundError):
        if (base / PODMAN_PARENT).is_dir():
            _write(base / PODMAN_PARENT / _file(kind), default)
