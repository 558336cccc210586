"""One dockerd per Swarm node, each with its own data-root, exec-root, socket and hostname."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from functools import cache
from pathlib import Path

from pipeline.lab import processes
from pipeline.lab.commands import ENV, LabError, in_netns, run, succeeds
from pipeline.lab.topology import CGROUP_PARENT, RUN_DIR, Host

READY_TIMEOUT_S = 30
# dockerd gives containers this long to stop on SIGTERM before killing them (default 15).
SHUTDOWN_TIMEOUT_S = 5
# The gVisor platform `runsc` (the docker-gvisor mode) runs with where its probe works.
GVISOR_DEFAULT = "runsc-kvm"
# gVisor's network: the kernel's stack of the container's own (bridge) namespace, reached
# through the Sentry (hostinet). gVisor 20221219's own stack (netstack) refuses every network
# namespace on Linux >= 6.11 as "the root network namespace" (its check looks for a sysctl
# file those kernels show in every namespace: google/gvisor#10704).
GVISOR_NETWORK = ["--network=host"]
# Lets a bridge-network container be dialled directly from the dc-client (docker-bridge mode).
DOCKER_USER_RULE = ["DOCKER-USER", "-i", "eth0", "-o", "docker0", "-j", "ACCEPT"]


def data_root(node: Host) -> Path:
    return node.state_dir / "docker"


def pidfile(node: Host) -> Path:
    return node.run_dir / "docker.pid"


def log_path(node: Host) -> Path:
    return node.state_dir / "dockerd.log"


def docker(node: Host, *args: str, timeout: float = 30) -> str:
    """Run the docker CLI against this node's daemon; return its stdout."""
    return run(["docker", "-H", node.docker_host, *args], timeout=timeout).stdout.strip()


# A kvm sandbox that works boots `true` in about a second; in a VM without working nested
# virtualisation it hangs after setting up its vCPUs until killed.
KVM_PROBE_TIMEOUT_S = 15
KVM_RECORD = RUN_DIR / "gvisor-kvm"  # the probe's answer, for the lab's lifetime


@cache
def kvm_platform_works(runsc: str) -> bool:
    """gVisor's kvm platform starts a sandbox here (a usable /dev/kvm; in a VM, nested
    virtualisation): `runsc --platform=kvm do true`, in no network namespace of the lab's,
    asked once per lab (the answer is kept under the lab's run directory)."""
    if KVM_RECORD.exists():
        return KVM_RECORD.read_text().strip() == "yes"
    works = False
    if os.path.exists("/dev/kvm"):
        root = RUN_DIR / "runsc-probe"  # runsc's state while the probe runs, removed after it
        probe = [runsc, "--platform=kvm", "--network=none", "--root", root, "do", "true"]
        try:
            works = succeeds(probe, timeout=KVM_PROBE_TIMEOUT_S)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    KVM_RECORD.parent.mkdir(parents=True, exist_ok=True)
    KVM_RECORD.write_text("yes\n" if works else "no\n")
    return works


@cache
def runtimes() -> dict[str, dict]:
    """The OCI runtimes every node's dockerd offers besides runc (the docker-crun and
    docker-gvisor modes), those installed: crun; runsc with each gVisor platform that works
    here, and `runsc` itself with the one the docker-gvisor mode runs (kvm where it works,
    else ptrace, which works in any VM)."""
    found: dict[str, dict] = {}
    crun = shutil.which("crun", path=ENV["PATH"])
    if crun:
        found["crun"] = {"path": crun}
    runsc = shutil.which("runsc", path=ENV["PATH"])
    if runsc:
        for platform in ("ptrace", "kvm"):
            if platform == "ptrace" or kvm_platform_works(runsc):
                args = [f"--platform={platform}", *GVISOR_NETWORK]
                found[f"runsc-{platform}"] = {"path": runsc, "runtimeArgs": args}
        found["runsc"] = found[GVISOR_DEFAULT if GVISOR_DEFAULT in found else "runsc-ptrace"]
    return found


def daemon_config(node: Host) -> dict:
    """The key path keeps dockerd from creating /etc/docker/key.json in the root file system
    and gives every node its own engine ID."""
    return {"deprecated-key-path": str(node.state_dir / "key.json"), "runtimes": runtimes()}


def write_daemon_config(node: Host) -> Path:
    """A config file of our own, so /etc/docker/daemon.json cannot change the lab."""
    path = node.state_dir / "daemon.json"
    path.write_text(json.dumps(daemon_config(node)))
    return path


def registered_runtimes(node: Host) -> set[str]:
    out = docker(node, "info", "--format", "{{json .Runtimes}}")
    try:
        return set(json.loads(out))
    except ValueError:
        return set()


def ensure_runtimes(node: Host) -> None:
    """A daemon started before a runtime was installed (or by an older lab) learns it: the
    config is rewritten and dockerd reloads its runtimes on SIGHUP."""
    wanted = set(runtimes())
    if wanted <= registered_runtimes(node):
        return
    write_daemon_config(node)
    pid = processes.running_pid(pidfile(node), "dockerd")
    if pid is None:
        raise LabError(f"dockerd on {node.name} answers but has no pid file {pidfile(node)}")
    os.kill(pid, signal.SIGHUP)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not wanted <= registered_runtimes(node):
        if time.monotonic() > deadline:
            missing = ", ".join(sorted(wanted - registered_runtimes(node)))
            raise LabError(f"dockerd on {node.name} did not register {missing} on reload; "
                           f"see {log_path(node)}")  # fmt: skip
        time.sleep(0.2)


def command(node: Host) -> list[str | Path]:
    dockerd = [
        "dockerd",
        "--config-file", write_daemon_config(node),
        "--data-root", data_root(node),
        "--exec-root", node.run_dir / "exec",
        "--host", node.docker_host,
        "--pidfile", pidfile(node),
        "--bip", node.docker_bridge_ip,
        "--cgroup-parent", f"/{CGROUP_PARENT}/{node.name}",
        "--shutdown-timeout", str(SHUTDOWN_TIMEOUT_S),
    ]  # fmt: skip
    script = f"hostname {node.name}; exec " + " ".join(str(a) for a in dockerd)
    # Own UTS namespace: `docker info` reports the node's name, not the machine's.
    return in_netns(node.name, ["unshare", "--uts", "sh", "-c", script])


def leftovers_of_a_dead_daemon(node: Host) -> None:
    """The processes a killed dockerd of this node left (its containerd, which holds its
    state files): a new dockerd that meets them may exit during start-up."""
    needle = str(node.run_dir / "exec")
    pids = {p for p in processes.all_pids() if needle in processes.cmdline(p)}
    pids.discard(os.getpid())
    processes.terminate(pids, timeout=10)


def answers(node: Host) -> bool:
    return succeeds(["docker", "-H", node.docker_host, "info", "--format", "{{.Name}}"], timeout=5)


def start(node: Host) -> int:
    """Launch the daemon detached; return its pid (readiness is checked by wait_ready)."""
    node.state_dir.mkdir(parents=True, exist_ok=True)
    node.run_dir.mkdir(parents=True, exist_ok=True)
    pidfile(node).unlink(missing_ok=True)
    return processes.spawn(command(node), log_path(node))


def wait_ready(node: Host, pid: int) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not answers(node):
        if not processes.alive(pid):
            raise LabError(f"dockerd exited during start-up; see {log_path(node)}")
        if time.monotonic() > deadline:
            raise LabError(
                f"dockerd did not answer within {READY_TIMEOUT_S} s; see {log_path(node)}"
            )
        time.sleep(0.2)
    name = docker(node, "info", "--format", "{{.Name}}")
    if name != node.name:
        raise LabError(f"dockerd reports name {name!r}, expected {node.name!r}")


def ensure_forwarding_rule(node: Host) -> None:
    if not succeeds(in_netns(node.name, ["iptables", "-C", *DOCKER_USER_RULE])):
        run(in_netns(node.name, ["iptables", "-I", *DOCKER_USER_RULE]))


def stop_all(nodes: tuple[Host, ...]) -> None:
    """SIGTERM every daemon at once (they stop their containers), SIGKILL after a bound."""
    pids = [p for p in (processes.running_pid(pidfile(n), "dockerd") for n in nodes) if p]
    processes.terminate(pids, timeout=SHUTDOWN_TIMEOUT_S + 15)


def overlay_network_ids(node: Host) -> list[str]:
    """IDs of the overlay networks the node knows; empty if its daemon does not answer."""
    if not answers(node):
        return []
    out = docker(node, "network", "ls", "-q", "--no-trunc", "--filter", "driver=overlay")
    return out.split()
