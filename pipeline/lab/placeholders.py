"""Paths outside the lab directories that the lab creates, and removes again in down().

Two kinds:
- made by up() itself: sshd's privilege-separation directory /run/sshd, and an empty file
  /run/docker.sock as mount target for each node sshd's bind mount of its node's socket;
- made by the lab's daemons at paths compiled into them: dockerd's plugin directory,
  containerd's shim sockets, libnetwork's load-balancer sandbox files, libmount's utab.

Each path absent before up() is recorded before anything can create it, so an interrupted
up() is undone too; down() removes it only while it still holds nothing but what the lab
puts there (a root dockerd started meanwhile would make it someone else's).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from pipeline.lab.sshd import DEFAULT_DOCKER_SOCKET, PRIVSEP_DIR
from pipeline.lab.topology import CREATED_RECORD

log = logging.getLogger("pipeline.lab")

LB_FILES = Path("/var/lib/docker/network/files")

# path -> test for one entry below it (relative path, lstat) that only the lab makes
Allowed = Callable[[Path, os.stat_result], bool]


def _is_dir(rel: Path, info: os.stat_result) -> bool:
    return stat.S_ISDIR(info.st_mode)


def _shim_socket(rel: Path, info: os.stat_result) -> bool:
    return _is_dir(rel, info) or (rel.parts[0] == "s" and stat.S_ISSOCK(info.st_mode))


def _lb_sandbox_file(rel: Path, info: os.stat_result) -> bool:
    in_lb = rel.parts[:2] == ("network", "files") and len(rel.parts) > 2
    return _is_dir(rel, info) or (in_lb and rel.parts[2].startswith("lb_"))


def _utab(rel: Path, info: os.stat_result) -> bool:
    return rel.name.startswith("utab")


DAEMON_PATHS: dict[Path, Allowed] = {
    Path("/run/docker"): _is_dir,  # dockerd: plugins/
    Path("/run/containerd"): _shim_socket,  # containerd 1.6: s/<hash> shim sockets
    Path("/var/lib/docker"): _lb_sandbox_file,  # libnetwork: network/files/lb_<id>/
    Path("/run/mount"): _utab,  # libmount, after the sshds' bind mounts
}


def recorded() -> list[Path]:
    try:
        return [Path(p) for p in json.loads(CREATED_RECORD.read_text())]
    except (OSError, ValueError):
        return []


def record(paths: Iterable[Path]) -> None:
    merged = {str(p) for p in recorded()} | {str(p) for p in paths}
    CREATED_RECORD.parent.mkdir(parents=True, exist_ok=True)
    tmp = CREATED_RECORD.with_suffix(".tmp")
    tmp.write_text(json.dumps(sorted(merged)))
    os.replace(tmp, CREATED_RECORD)


def ensure() -> None:
    """Record the absent paths, then create the two that up() needs."""
    candidates = [PRIVSEP_DIR, DEFAULT_DOCKER_SOCKET, *DAEMON_PATHS]
    record(p for p in candidates if not os.path.lexists(p))
    if not PRIVSEP_DIR.exists():
        PRIVSEP_DIR.mkdir(mode=0o755)
    if not os.path.lexists(DEFAULT_DOCKER_SOCKET):
        DEFAULT_DOCKER_SOCKET.touch(mode=0o600)


def only_lab_content(root: Path, allowed: Allowed) -> bool:
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(directory, name)
            if not allowed(path.relative_to(root), path.lstat()):
                return False
    return True


def remove_path(path: Path) -> None:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if path in DAEMON_PATHS:
        if only_lab_content(path, DAEMON_PATHS[path]):
            shutil.rmtree(path)
        else:
            log.warning("leaving %s: it now holds more than the lab put there", path)
    elif stat.S_ISREG(info.st_mode) and info.st_size == 0:
        path.unlink()
    elif stat.S_ISDIR(info.st_mode) and not any(path.iterdir()):
        path.rmdir()
    else:
        log.warning("leaving %s: something else has taken it over", path)


def remove_lb_sandboxes(network_ids: Iterable[str]) -> None:
    """libnetwork's load-balancer files for the lab's overlay networks, for the case where
    /var/lib/docker existed before the lab (a root Docker is installed and in use)."""
    for network_id in network_ids:
        shutil.rmtree(LB_FILES / f"lb_{network_id}", ignore_errors=True)


def remove() -> None:
    for path in recorded():
        remove_path(path)
    CREATED_RECORD.unlink(missing_ok=True)
