"""up(), down() and status() of the embedded lab."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from pipeline.lab import (
    cpus,
    dockerd,
    emulator,
    logins,
    mounts,
    network,
    placeholders,
    processes,
    rootless,
    sshd,
    swarm,
    weight,
)
from pipeline.lab import kubernetes as k8s
from pipeline.lab.commands import ENV, LabError, component, succeeds
from pipeline.lab.emulator import WanProfile
from pipeline.lab.topology import (
    BRIDGE,
    HOSTS,
    INET_CLIENT,
    NODES,
    OVERLAY_NETWORK,
    RUN_DIR,
    SSH_HOSTS,
    STATE_DIR,
    WAN_ROUTER,
    WAN_TUN,
    Host,
)

log = logging.getLogger("pipeline.lab")

# Serialises up/down across processes (a campaign and a test may both bring the lab up).
LOCK_FILE = Path("/run/lock/container-overhead-lab.lock")
LOCK_TIMEOUT_S = 600
TOOLS = ("ip", "iptables", "nsenter", "unshare", "sysctl", "mount", "umount",
         "dockerd", "docker", "containerd", "runc", "ssh-keygen", sshd.SSHD)  # fmt: skip
RECOVER_HINT = "run `python -m pipeline.lab down`, then `up` again"


@contextlib.contextmanager
def exclusive() -> Iterator[None]:
    LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK_FILE, "w") as lock:
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise LabError(
                        f"another lab up/down held {LOCK_FILE} for {LOCK_TIMEOUT_S} s"
                    ) from None
                time.sleep(0.5)
        yield


def require_root() -> None:
    if os.geteuid() != 0:
        raise LabError("the lab needs root (network namespaces, dockerd); run it with sudo")


def preflight() -> None:
    require_root()
    missing = [t for t in TOOLS if not shutil.which(t, path=ENV["PATH"])]
    if missing:
        raise LabError(
            f"missing tools: {', '.join(missing)}; install docker.io, openssh-server, "
            "iproute2, iptables and util-linux"
        )
    if not Path("/dev/net/tun").exists():
        raise LabError("/dev/net/tun is missing; the WAN path needs TUN support")


# ---- up ------------------------------------------------------------------------------


def up(
    wan: WanProfile | None = None,
    login: logins.Login | None = None,
    servers: list[str] | None = None,
    kubernetes: bool | None = None,
) -> None:
    """Bring the lab up, or repair what is missing; quick when everything already runs.

    `wan` replaces the WAN profile (the emulator restarts if it differs); None keeps the
    running profile, or the last one used, or the default. `login` is a lab inventory's way
    in (user, port, keys, sudo), served from now on beside root's (pipeline/lab/logins.py).
    `servers` are the nodes that take Swarm tasks (the inventory's servers); None: all.
    `kubernetes`: True also brings the lab's Kubernetes cluster up, last
    (pipeline/lab/kubernetes.py); False takes a cluster that runs down (a campaign without a
    Kubernetes mode: its idle control plane and kubelets would load the hosts); None leaves it.
    """
    preflight()
    if kubernetes:
        reason = k8s.missing_build()
        if reason:
            raise LabError(f"kubernetes: {reason}")
    with exclusive():
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        STATE_DIR.chmod(0o755)  # lab logins' homes and authorized keys lie below it
        RUN_DIR.mkdir(parents=True, exist_ok=True)
        new_login = False
        if login is not None:
            with component("lab login", "fix the lab inventory's ssh settings"):
                new_login = logins.add(login)
        with component("placeholder paths"):
            placeholders.ensure()
        with component("lab network", RECOVER_HINT):
            network.ensure_network()
        with component("ssh keys and logins", sshd.RESET_FIX):
            sshd.ensure_keys()
        with component("cgroup controllers for crun", RECOVER_HINT):
            mounts.bind_controllers_to_v1()
        started = ensure_dockerds()
        ensure_sshds(restart=set(SSH_HOSTS) if new_login else started)
        with component("swarm", f"see {dockerd.log_path(NODES[0])}; {RECOVER_HINT}"):
            swarm.ensure_swarm()
            swarm.ensure_overlay()
            swarm.ensure_active(servers)
        ensure_emulator(wan)
        with component("rootless setup", f"see {rootless.DOCKERD_LOG}; {RECOVER_HINT}"):
            rootless.ensure()
        with component("CPU placement groups", RECOVER_HINT):
            reason = cpus.ensure()  # each host's processes in its cpuset group
        if reason:
            log.warning("CPU placement unavailable (network campaigns run unplaced): %s", reason)
        if kubernetes:
            with component("kubernetes", f"see {k8s.UP_LOG}; {RECOVER_HINT}"):
                k8s.up()
        elif kubernetes is False and k8s.present():
            with component("kubernetes down", RECOVER_HINT):
                k8s.down()
        with component("CPU weight", RECOVER_HINT):  # last: the cluster's groups exist by now
            log.info("lab CPU weight: %s", weight.ensure())


def ensure_dockerds() -> set[Host]:
    """Start the dockerds that do not answer, in parallel; return the nodes started."""
    started: dict[Host, int] = {}
    for node in NODES:
        if dockerd.answers(node):
            continue
        pid = processes.running_pid(dockerd.pidfile(node), "dockerd")
        if pid is None:
            log.info("starting dockerd on %s", node.name)
            with component(f"dockerd on {node.name}"):
                pid = dockerd.start(node)
        started[node] = pid
    for node, pid in started.items():
        with component(f"dockerd on {node.name}", RECOVER_HINT):
            try:
                dockerd.wait_ready(node, pid)
            except LabError:
                if processes.alive(pid):
                    raise
                # A daemon that was killed leaves its containerd behind, which a new one may
                # trip over: once more, without it.
                log.info("dockerd on %s exited during start-up: once more", node.name)
                dockerd.leftovers_of_a_dead_daemon(node)
                dockerd.wait_ready(node, dockerd.start(node))
    for node in NODES:
        with component(f"dockerd on {node.name}"):
            dockerd.ensure_forwarding_rule(node)
            dockerd.ensure_runtimes(node)
    return set(started)


def ensure_sshds(restart: set[Host]) -> None:
    """Start missing sshds; restart a node's sshd when its dockerd restarted, because the
    sshd's bind mount still points at the old daemon's socket file."""
    for host in SSH_HOSTS:
        if host in restart or not sshd.running(host) or sshd.stale(host):
            log.info("starting sshd on %s", host.name)
            with component(f"sshd on {host.name}", f"see {sshd.log_path(host)}"):
                sshd.start(host)


def ensure_emulator(wan: WanProfile | None) -> None:
    wanted = wan or emulator.saved_profile() or WanProfile()
    attached = network.tun_attached(INET_CLIENT) and network.tun_attached(WAN_ROUTER)
    if emulator.running_pid() and attached and emulator.saved_profile() == wanted:
        return
    log.info("starting the WAN emulator: %s", wanted)
    with component("WAN emulator", "check the WAN profile (--wan-* options)"):
        emulator.start(wanted)


# ---- reset ---------------------------------------------------------------------------


def reset() -> None:
    """New host keys and known_hosts files for every lab host (the keys are trusted on first
    use and never again by up()); the sshds that run are restarted to serve the new keys."""
    require_root()
    with exclusive():
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        with component("ssh keys and logins"):
            sshd.reset_keys()
        for host in SSH_HOSTS:
            if sshd.running(host):
                log.info("restarting sshd on %s with its new key", host.name)
                with component(f"sshd on {host.name}", f"see {sshd.log_path(host)}"):
                    sshd.start(host)


# ---- down ----------------------------------------------------------------------------


def down() -> None:
    """Remove everything up() made; safe on a half-built lab and when already down."""
    require_root()
    with exclusive():
        # First, while the nodes' namespaces stand: its rules and bridges live in them.
        try:
            k8s.down()
        except LabError as exc:
            log.warning("kubernetes down: %s (the rest of down goes on)", exc)
        with component("docker networks"):
            network_ids = {i for node in NODES for i in dockerd.overlay_network_ids(node)}
        with component("rootless setup"):
            rootless.stop()
        stop_processes()
        with component("rootless setup"):
            rootless.remove()
        with component("lab logins"):
            logins.remove()
        with component("lab mounts"):
            mounts.unmount_all()
            cpus.release()
            weight.release()
            mounts.remove_cgroups()
            mounts.release_v1_controllers()
        with component("lab network"):
            network.remove_network()
        placeholders.remove_lb_sandboxes(network_ids)
        placeholders.remove()
        remove_directories()
        remaining = leftovers()
        if remaining:
            raise LabError(f"down left behind: {'; '.join(remaining)}")


def stop_processes() -> None:
    emulator.stop()
    for host in SSH_HOSTS:
        sshd.stop(host)
    log.info("stopping the dockerds")
    dockerd.stop_all(NODES)
    # Whatever is left: SSH sessions, shims, containers, daemons of an interrupted up.
    stray = lab_processes()
    if stray:
        survivors = processes.terminate(stray, timeout=5)
        if survivors:
            raise LabError(f"processes {sorted(survivors)} survived SIGKILL")


def ancestors() -> set[int]:
    """Our own process and its parents, which may mention lab paths in their command line."""
    pids, pid = set(), os.getpid()
    while pid and pid > 1:
        pids.add(pid)
        pid = processes.parent(pid)
    return pids


def lab_processes() -> set[int]:
    needles = (str(STATE_DIR), str(RUN_DIR))
    found = processes.lab_pids(network.namespace_inodes(), needles) | mounts.cgroup_pids()
    return {p for p in found if processes.alive(p)} - ancestors()


def remove_directories() -> None:
    if mounts.lab_mounts():
        raise LabError(f"mounts remain under the lab directories: {mounts.lab_mounts()}")
    for directory in (RUN_DIR, STATE_DIR):
        shutil.rmtree(directory, ignore_errors=True)


def leftovers() -> list[str]:
    found = network.leftovers()
    found += [f"process {p}" for p in sorted(lab_processes())]
    found += [f"mount {m}" for m in mounts.lab_mounts()]
    found += [f"cgroup {c}" for c in mounts.lab_cgroups()]
    found += [f"directory {d}" for d in (STATE_DIR, RUN_DIR) if d.exists()]
    found += rootless.leftovers()
    found += logins.leftovers()
    found += k8s.leftovers()
    return found


# ---- status --------------------------------------------------------------------------


def ssh_banner(address: str, timeout: float = 3.0) -> bool:
    """True when an sshd answers at `address` (through the WAN path for inet-client)."""
    if not network.routed_through_lab(address):
        return False
    try:
        with socket.create_connection((address, 22), timeout=timeout) as conn:
            return conn.recv(64).startswith(b"SSH-")
    except OSError:
        return False


def quietly(check: Callable[[], object]) -> bool:
    try:
        return bool(check())
    except LabError:
        return False


def status() -> dict[str, bool]:
    """Component name -> healthy, in the order up() builds them."""
    health: dict[str, bool] = {
        f"bridge {BRIDGE}": network.link_exists(BRIDGE),
        "iptables FORWARD rule": succeeds(["iptables", "-C", *network.FORWARD_RULE]),
    }
    for host in HOSTS:
        health[f"netns {host.name}"] = host.netns.exists()
    for host in (WAN_ROUTER, INET_CLIENT):
        health[f"tun {host.name}:{WAN_TUN}"] = network.link_exists(WAN_TUN, host.name)
    for login in logins.current():
        health[f"login {login.user} (port {login.port}): key + known_hosts"] = (
            login.key_file.exists() and login.known_hosts.exists()
        )
    for node in NODES:
        health[f"dockerd {node.name}"] = dockerd.answers(node)
    for host in SSH_HOSTS:
        reachable = host.on_bridge and ssh_banner(host.address)
        health[f"sshd {host.name}"] = sshd.running(host) and (reachable or not host.on_bridge)
    health["swarm: 3 nodes Ready"] = quietly(lambda: swarm.ready_nodes() == {n.name for n in NODES})
    health[f"overlay network {OVERLAY_NETWORK}"] = quietly(swarm.overlay_exists)
    health["WAN emulator"] = emulator.running_pid() is not None and network.tun_attached(
        INET_CLIENT
    )
    health["WAN path to inet-client sshd"] = ssh_banner(INET_CLIENT.address)
    health.update(rootless.status())
    health.update(k8s.status())
    return health
