"""The lab's rootless setup: an unprivileged user, a rootless dockerd for it on node1, and
the state rootful podman leaves behind.

up() makes (idempotently): the user `co-bench` (fixed uid, home under the lab's state
directory), its /etc/subuid and /etc/subgid ranges, its XDG_RUNTIME_DIR /run/user/<uid>,
/dev/net/tun readable by it (slirp4netns and pasta open it as the user), and Debian's
`dockerd-rootless.sh` for it inside node1's network namespace (rootlesskit with its default
slirp4netns network and builtin port driver; the modes record what actually runs). Rootless
podman needs no daemon; up() resets it when its pause process was killed.

down() removes all of it, restores /dev/net/tun's original mode, removes the rootful podman
containers and networks the campaigns labelled and, when /var/lib/containers and friends did
not exist before the first up(), the whole podman state the lab caused. What was there before
is recorded in RECORD before anything is changed, so an interrupted up() is undone too.
"""

from __future__ import annotations

import grp
import json
import logging
import os
import pwd
import shutil
import stat
import time
from pathlib import Path

from pipeline.lab import processes
from pipeline.lab.commands import ENV, LabError, in_netns, run, succeeds
from pipeline.lab.topology import NODES, ROOTLESS_UID, ROOTLESS_USER, RUN_DIR, STATE_DIR

log = logging.getLogger("pipeline.lab")

USER = ROOTLESS_USER
UID = ROOTLESS_UID
NODE = NODES[0]
GECOS = "container-overhead lab rootless user"  # marks the user as the lab's own
HOME = STATE_DIR / "rootless-home"
RUNTIME_DIR = Path(f"/run/user/{UID}")
PAUSE_PIDFILE = RUNTIME_DIR / "libpod" / "tmp" / "pause.pid"  # rootless podman's pause process
PODMAN_LOCKS = Path(f"/dev/shm/libpod_rootless_lock_{UID}")  # rootless podman's shared locks
DOCKER_SOCKET = RUNTIME_DIR / "docker.sock"  # dockerd-rootless.sh's default
DOCKERD_PIDFILE = RUNTIME_DIR / "docker.pid"  # the rootless dockerd's own
PIDFILE = RUN_DIR / "rootless-dockerd.pid"
DOCKERD_LOG = STATE_DIR / "rootless-dockerd.log"
RECORD = STATE_DIR / "rootless.json"
DOCKERD_ROOTLESS = Path("/usr/share/docker.io/contrib/dockerd-rootless.sh")
READY_TIMEOUT_S = 30
SUBID_START = 1_700_000_000  # far above login.defs' SUB_UID_MAX (600100000)
SUBID_COUNT = 65536
SUBID_FILES = (Path("/etc/subuid"), Path("/etc/subgid"))
TUN = Path("/dev/net/tun")
TUN_MODE = 0o666  # Debian's usual mode; slirp4netns fails with 0600 ("Permission denied")
TOOLS = ("useradd", "userdel", "groupadd", "setpriv", "newuidmap", "newgidmap",
         "rootlesskit", "slirp4netns", "podman")  # fmt: skip
# Created by rootful podman on first use (storage, runtime state, CNI lock and IPAM).
PODMAN_PATHS = (
    Path("/var/lib/containers"),
    Path("/run/containers"),
    Path("/run/libpod"),
    Path("/etc/cni/net.d/cni.lock"),
    Path("/var/lib/cni"),
    Path("/etc/containers/networks"),
    Path("/dev/shm/libpod_lock"),
)
PODMAN_STORAGE = Path("/var/lib/containers/storage")
LABEL = "org.container-overhead.campaign"  # pipeline.collect.modes.base.LABEL (no import: no cycle)
TOOL_IMAGES = "container-overhead/tools"  # pipeline.collect.images.REPOSITORY


def user_env() -> dict[str, str]:
    return {"PATH": ENV["PATH"], "LANG": "C.UTF-8", "HOME": str(HOME), "USER": USER,
            "LOGNAME": USER, "XDG_RUNTIME_DIR": str(RUNTIME_DIR)}  # fmt: skip


def as_user(args: list[str | Path]) -> list[str | Path]:
    """Run args as the rootless user with a clean environment of its own."""
    env = [f"{k}={v}" for k, v in user_env().items()]
    ids = [f"--reuid={UID}", f"--regid={UID}", "--clear-groups"]
    return ["setpriv", *ids, "env", "-i", *env, *args]


def missing_tools() -> list[str]:
    found = [t for t in TOOLS if shutil.which(t, path=ENV["PATH"])]
    missing = [t for t in TOOLS if t not in found]
    return missing + ([str(DOCKERD_ROOTLESS)] if not DOCKERD_ROOTLESS.exists() else [])


# ---- the record of what existed before -------------------------------------------------


def load_record() -> dict | None:
    try:
        return json.loads(RECORD.read_text())
    except (OSError, ValueError):
        return None


def ensure_record() -> dict:
    """Write, once, what up() may change: /dev/net/tun's mode and absent podman paths."""
    record = load_record()
    if record is None:
        record = {
            "tun_mode": stat.S_IMODE(TUN.stat().st_mode),
            "absent": [str(p) for p in PODMAN_PATHS if not os.path.lexists(p)],
        }
        RECORD.parent.mkdir(parents=True, exist_ok=True)
        tmp = RECORD.with_suffix(".tmp")
        tmp.write_text(json.dumps(record))
        os.replace(tmp, RECORD)
    return record


# ---- user, ids, devices ------------------------------------------------------------------


def lab_user() -> pwd.struct_passwd | None:
    """The lab's user if it exists; LabError if the name is taken by someone else's user."""
    try:
        pw = pwd.getpwnam(USER)
    except KeyError:
        return None
    if pw.pw_uid != UID or pw.pw_gecos != GECOS:
        raise LabError(
            f"a user {USER!r} (uid {pw.pw_uid}) exists that the lab did not create; "
            "remove it or change ROOTLESS_USER in pipeline/lab/topology.py and inventory/lab.yaml"
        )
    return pw


def ensure_user() -> None:
    if lab_user() is not None:
        return
    for taken, what in ((_uid_taken, "uid"), (_gid_taken, "gid")):
        if taken():
            raise LabError(f"{what} {UID} is already used on this machine; change ROOTLESS_UID")
    run(["groupadd", "--gid", str(UID), USER])
    # No automatic subordinate ids: the lab writes its own, far from useradd's ranges.
    run(["useradd", "--uid", str(UID), "--gid", str(UID), "--home-dir", HOME, "--create-home",
         "--shell", "/usr/sbin/nologin", "--comment", GECOS,
         "-K", "SUB_UID_COUNT=0", "-K", "SUB_GID_COUNT=0", USER])  # fmt: skip


def _uid_taken() -> bool:
    try:
        pwd.getpwuid(UID)
        return True
    except KeyError:
        return False


def _gid_taken() -> bool:
    try:
        grp.getgrgid(UID)
        return True
    except KeyError:
        return False


def subid_line() -> str:
    return f"{USER}:{SUBID_START}:{SUBID_COUNT}"


def ensure_subids() -> None:
    for path in SUBID_FILES:
        lines = path.read_text().splitlines() if path.exists() else []
        if subid_line() in lines:
            continue
        for line in lines:
            parts = line.split(":")
            if len(parts) == 3 and parts[0] != USER and parts[1].isdigit() and parts[2].isdigit():
                start, count = int(parts[1]), int(parts[2])
                if start < SUBID_START + SUBID_COUNT and SUBID_START < start + count:
                    raise LabError(f"{path}: {line!r} overlaps the lab's range {subid_line()}")
        kept = [line for line in lines if not line.startswith(f"{USER}:")]
        _write_lines(path, [*kept, subid_line()])


def _write_lines(path: Path, lines: list[str]) -> None:
    tmp = path.with_name(path.name + ".co-tmp")
    tmp.write_text("".join(f"{line}\n" for line in lines))
    tmp.chmod(0o644)
    os.replace(tmp, path)


def clear_stale_runtime() -> bool:
    """Empty the user's runtime directory when none of its processes is alive, as a reboot
    would: after the processes were killed (a session's SIGKILL to everything), it still holds
    the pid files of the rootless dockerd and its containerd, whose restart waits on a pid that
    exists while unreaped (pid 1 here does not reap), and podman's runtime state, which podman
    rebuilds from its store when the directory and its shared locks are gone. True when it
    was emptied."""
    if not RUNTIME_DIR.is_dir() or user_pids() or not any(RUNTIME_DIR.iterdir()):
        return False
    for path in [*RUNTIME_DIR.iterdir(), PODMAN_LOCKS]:
        _remove_created(path)
    return True


def ensure_dirs() -> None:
    HOME.mkdir(parents=True, exist_ok=True)
    RUNTIME_DIR.mkdir(mode=0o700, exist_ok=True)
    config = HOME / ".config" / "containers"
    config.mkdir(parents=True, exist_ok=True)
    # No systemd here: cgroupfs and a file event log, else podman warns on every call.
    (config / "containers.conf").write_text(
        '[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n'
    )
    # Kernel overlay works in a user namespace here (>= 5.13); podman 4.3 would pick vfs.
    (config / "storage.conf").write_text('[storage]\ndriver = "overlay"\n')
    for path in (HOME, RUNTIME_DIR, *_below(HOME / ".config")):
        os.chown(path, UID, UID)
    RUNTIME_DIR.chmod(0o700)


def _below(root: Path) -> list[Path]:
    return [root] + [Path(d, n) for d, dirs, files in os.walk(root) for n in dirs + files]


def ensure_tun() -> None:
    if stat.S_IMODE(TUN.stat().st_mode) != TUN_MODE:
        TUN.chmod(TUN_MODE)


# ---- the rootless dockerd -----------------------------------------------------------------


def dockerd_answers() -> bool:
    return succeeds(["docker", "-H", f"unix://{DOCKER_SOCKET}", "info", "--format", "{{.ID}}"],
                    timeout=5)  # fmt: skip


def ensure_dockerd() -> None:
    if dockerd_answers():
        return
    stale = processes.running_pid(PIDFILE, "rootlesskit")
    if stale:
        processes.terminate([stale], timeout=10)
    if not processes.running_pid(DOCKERD_PIDFILE, "dockerd"):
        # a killed dockerd's; a new one refuses to start while its pid exists (as a zombie too)
        DOCKERD_PIDFILE.unlink(missing_ok=True)
    log.info("starting the rootless dockerd of %s on %s", USER, NODE.name)
    # nsenter, setpriv, env and the script all exec: the pid is rootlesskit's.
    command = in_netns(NODE.name, as_user([DOCKERD_ROOTLESS, "--shutdown-timeout", "5"]))
    pid = processes.spawn(command, DOCKERD_LOG)
    PIDFILE.write_text(f"{pid}\n")
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not dockerd_answers():
        if not processes.alive(pid):
            raise LabError(f"rootless dockerd exited during start-up; see {DOCKERD_LOG}")
        if time.monotonic() > deadline:
            raise LabError(f"rootless dockerd did not answer within {READY_TIMEOUT_S} s; "
                           f"see {DOCKERD_LOG}")  # fmt: skip
        time.sleep(0.2)


# ---- rootful podman next to the node's dockerd ---------------------------------------------

# dockerd sets the FORWARD policy to DROP; podman's CNI firewall plugin only accepts replies
# to its containers, so a published port's DNATed connections would be dropped. Like the
# docker0 rule in dockerd.py, and gone with node1's namespace on down().
PODMAN_BRIDGES = ("cni-podman0", "podman0")  # CNI's and netavark's default bridge


def podman_forward_rule(bridge: str) -> list[str]:
    return ["DOCKER-USER", "-o", bridge, "-j", "ACCEPT"]


def ensure_podman_forwarding() -> None:
    for bridge in PODMAN_BRIDGES:
        rule = podman_forward_rule(bridge)
        if not succeeds(in_netns(NODE.name, ["iptables", "-C", *rule])):
            run(in_netns(NODE.name, ["iptables", "-I", *rule]))


# ---- up / down / status / leftovers --------------------------------------------------------


def ensure() -> None:
    """Create what is missing; a no-op (a few stat calls and one `docker info`) when up."""
    missing = missing_tools()
    if missing:
        log.warning("rootless modes unavailable: %s not installed (apt-get install podman "
                    "rootlesskit slirp4netns uidmap docker.io)", ", ".join(missing))  # fmt: skip
        return
    ensure_record()
    ensure_user()
    ensure_subids()
    ensure_tun()
    cleared = clear_stale_runtime()
    ensure_dirs()
    ensure_podman_forwarding()
    ensure_podman_state(cleared)
    ensure_dockerd()


def user_pids() -> set[int]:
    """Processes of the user and of its subordinate ids (container processes)."""
    found = set()
    for pid in processes.all_pids():
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        uid = next((int(line.split()[1]) for line in status.splitlines()
                    if line.startswith("Uid:")), -1)  # fmt: skip
        if uid == UID or SUBID_START <= uid < SUBID_START + SUBID_COUNT:
            found.add(pid)
    return {p for p in found if processes.alive(p)}


def podman(*args: str) -> list[str | Path]:
    """Rootful podman in node1's namespace, where the modes ran it (its CNI rules live there)."""
    prefix = ["nsenter", f"--net={NODE.netns}"] if NODE.netns.exists() else []
    return [*prefix, "podman", *args]


def ensure_podman_state(cleared: bool) -> None:
    """Reset rootless podman after a killed run and remove the containers the campaigns
    labelled. ``cleared``: its runtime directory was emptied (clear_stale_runtime). Else, when
    only its pause process died, podman (which keeps its user namespace alive in that process)
    fails every call with "invalid internal status" while it records containers as running:
    its own reset, `podman system migrate`, stops them (and exits 1 on those whose processes
    are already gone; the listing after it is the check)."""
    paused = PAUSE_PIDFILE.exists() and not processes.running_pid(PAUSE_PIDFILE, "podman")
    if not (cleared or paused):
        return
    def podman_of_user(*args: str) -> list[str | Path]:  # where the modes run it
        return in_netns(NODE.name, as_user(["podman", *args]))

    log.info("rootless podman of %s lost its processes: resetting it", USER)
    if paused:
        run(podman_of_user("system", "migrate"), timeout=120, check=False)
    ids = run(podman_of_user("ps", "-aq", "--filter", f"label={LABEL}"), timeout=60).stdout.split()
    if ids:
        run(podman_of_user("rm", "--force", *ids), timeout=120, check=False)


def remove_podman_objects(record: dict | None) -> None:
    """Labelled rootful podman containers and networks; the tool images too when the store
    was someone's before the lab (else the whole store goes in remove())."""
    if not PODMAN_STORAGE.is_dir() or not shutil.which("podman", path=ENV["PATH"]):
        return  # running podman now would create the store
    for kind in ("ps -a", "network ls"):
        ids = run(podman(*kind.split(), "-q", "--filter", f"label={LABEL}"), timeout=60,
                  check=False).stdout.split()  # fmt: skip
        if ids:
            rm = ["rm", "--force"] if kind == "ps -a" else ["network", "rm", "--force"]
            run(podman(*rm, *ids), timeout=120, check=False)
    if record is not None and str(PODMAN_STORAGE.parent) not in record["absent"]:
        images = run(podman("images", "-q", "--filter", f"reference={TOOL_IMAGES}"),
                     timeout=60, check=False).stdout.split()  # fmt: skip
        if images:
            run(podman("rmi", "--force", *sorted(set(images))), timeout=120, check=False)


def stop() -> None:
    """Before the lab's namespaces go: podman objects, the rootless dockerd, user processes."""
    record = load_record()
    remove_podman_objects(record)
    pid = processes.running_pid(PIDFILE, "rootlesskit")
    if pid:
        processes.terminate([pid], timeout=20)
    processes.terminate(user_pids(), timeout=5)


def remove() -> None:
    """Remove the user and everything made for it; restore /dev/net/tun. After stop()."""
    record = load_record()
    survivors = processes.terminate(user_pids(), timeout=5)
    if survivors:
        raise LabError(f"processes of {USER} survived SIGKILL: {sorted(survivors)}")
    if lab_user() is not None:
        run(["userdel", USER])
    if _gid_taken() and grp.getgrgid(UID).gr_name == USER:
        run(["groupdel", USER])
    for path in SUBID_FILES:
        if path.exists():
            lines = path.read_text().splitlines()
            kept = [line for line in lines if not line.startswith(f"{USER}:")]
            if kept != lines:
                _write_lines(path, kept)
    for directory in (HOME, RUNTIME_DIR):
        shutil.rmtree(directory, ignore_errors=True)
    PODMAN_LOCKS.unlink(missing_ok=True)
    if record is not None:
        for name in record["absent"]:
            _remove_created(Path(name))
        if stat.S_IMODE(TUN.stat().st_mode) != record["tun_mode"]:
            TUN.chmod(record["tun_mode"])
    PIDFILE.unlink(missing_ok=True)
    RECORD.unlink(missing_ok=True)


def _remove_created(path: Path) -> None:
    if not os.path.lexists(path):
        return
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4]
        if point == str(path) or point.startswith(f"{path}/"):
            run(["umount", "-l", point], check=False, timeout=10)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def status() -> dict[str, bool]:
    try:
        user_ok = lab_user() is not None
    except LabError:
        user_ok = False
    subids = all(p.exists() and subid_line() in p.read_text().splitlines() for p in SUBID_FILES)
    return {
        f"rootless user {USER} + subuid/subgid": user_ok and subids,
        f"{TUN} mode {TUN_MODE:04o}": stat.S_IMODE(TUN.stat().st_mode) == TUN_MODE,
        f"rootless dockerd {NODE.name} ({USER})": dockerd_answers(),
    }


def leftovers() -> list[str]:
    found = []
    try:
        if lab_user() is not None:
            found.append(f"user {USER}")
    except LabError:
        pass  # someone else's user of that name is not ours to report
    for path in SUBID_FILES:
        if path.exists() and any(line.startswith(f"{USER}:") for line in path.read_text().split()):
            found.append(f"{path} line for {USER}")
    found += [f"directory {d}" for d in (HOME, RUNTIME_DIR) if d.exists()]
    found += [f"podman locks {PODMAN_LOCKS}"] if PODMAN_LOCKS.exists() else []
    found += [f"process {p} ({USER} or its subordinate ids)" for p in sorted(user_pids())]
    found += [f"pidfile {PIDFILE}"] if PIDFILE.exists() else []
    record = load_record()
    if record is not None:
        found += [f"podman path {p}" for p in record["absent"] if os.path.lexists(p)]
    return found
