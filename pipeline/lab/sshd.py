"""One sshd per lab host: keys, configuration, known_hosts, start and health."""

from __future__ import annotations

import os
import time
from pathlib import Path

from pipeline.lab import processes
from pipeline.lab.commands import LabError, in_netns, run
from pipeline.lab.topology import (
    AUTHORIZED_KEYS,
    CLIENT_KEY,
    KNOWN_HOSTS,
    RUN_DIR,
    SSH_DIR,
    SSH_HOSTS,
    STATE_DIR,
    Host,
)

SSHD = "/usr/sbin/sshd"  # sshd refuses to re-exec itself without an absolute path
PRIVSEP_DIR = Path("/run/sshd")
DEFAULT_DOCKER_SOCKET = Path("/run/docker.sock")  # /var/run is a symlink to /run
ROOT_BASHRC = "/root/.bashrc"  # masked in lab hosts (start_script)


def host_key(host: Host) -> Path:
    return host.state_dir / "ssh_host_ed25519_key"


def config_path(host: Host) -> Path:
    return host.state_dir / "sshd_config"


def pidfile(host: Host) -> Path:
    return host.run_dir / "sshd.pid"


def log_path(host: Host) -> Path:
    return host.state_dir / "sshd.log"


def generate_key(path: Path, comment: str) -> None:
    if path.exists() and path.with_suffix(".pub").exists():
        return
    path.unlink(missing_ok=True)
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path])


def write_private(path: Path, text: str) -> None:
    """Write atomically with mode 0600 (sshd's StrictModes and paramiko read these)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.chmod(0o600)
    os.replace(tmp, path)


def ensure_keys() -> None:
    """Client key, authorized_keys, one host key per sshd, and the matching known_hosts."""
    SSH_DIR.mkdir(parents=True, exist_ok=True, mode=0o700)
    generate_key(CLIENT_KEY, "container-overhead-lab")
    write_private(AUTHORIZED_KEYS, CLIENT_KEY.with_suffix(".pub").read_text())
    lines = []
    for host in SSH_HOSTS:
        host.state_dir.mkdir(parents=True, exist_ok=True)
        generate_key(host_key(host), host.name)
        key_type, key_b64 = host_key(host).with_suffix(".pub").read_text().split()[:2]
        lines.append(f"{host.address} {key_type} {key_b64}\n")
    # Exact entries only: the pipeline connects with paramiko's RejectPolicy.
    write_private(KNOWN_HOSTS, "".join(lines))


def write_config(host: Host) -> None:
    config = f"""\
# sshd for lab host {host.name}, written by `python -m pipeline.lab up`
ListenAddress {host.address}
Port 22
HostKey {host_key(host)}
PidFile {pidfile(host)}
AuthorizedKeysFile {AUTHORIZED_KEYS}
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
UseDNS no
PrintMotd no
PrintLastLog no
# Campaigns open several sessions at once (runs, monitors, file transfers).
MaxStartups 100:30:200
MaxSessions 64
Subsystem sftp /usr/lib/openssh/sftp-server
"""
    config_path(host).write_text(config)


def start_script(host: Host) -> str:
    """Shell run inside the host's private UTS + mount namespaces before sshd starts.

    It drops the namespace's copies of lab mounts (dockerd's overlay and netns mounts) so
    sshd does not pin them, then gives a node's sessions the node's docker socket at the
    default path.
    """
    lines = [f"hostname {host.name}"]
    lines.append(
        "awk '{print $5}' /proc/self/mountinfo"
        f" | grep -E '^({STATE_DIR}|{RUN_DIR})/' | sort -r"
        ' | while read -r m; do umount -l "$m" || true; done'
    )
    if host.is_node:
        lines.append(f"mount --bind {host.docker_socket} {DEFAULT_DOCKER_SOCKET}")
    # bash sources ~/.bashrc for every SSH command. The lab's hosts share the controller's
    # filesystem, so a developer's interactive set-up (here pyenv init: 100 ms per command,
    # and PATH entries a clean host would not have) would run before every command: masked
    # in the host's mount namespace only.
    lines.append(f"if [ -f {ROOT_BASHRC} ]; then mount --bind /dev/null {ROOT_BASHRC}; fi")
    lines.append(f"exec {SSHD} -f {config_path(host)} -E {log_path(host)}")
    return "set -e\n" + "\n".join(lines)


def start(host: Host) -> None:
    """Start (or restart) the host's sshd; it daemonizes itself and writes its pid file."""
    stop(host)
    write_config(host)
    host.run_dir.mkdir(parents=True, exist_ok=True)
    run([SSHD, "-t", "-f", config_path(host)])
    unshare = ["unshare", "--uts", "--mount", "--propagation", "private"]
    run(in_netns(host.name, [*unshare, "sh", "-c", start_script(host)]), timeout=15)
    deadline = time.monotonic() + 10
    while not processes.running_pid(pidfile(host), "sshd"):
        if time.monotonic() > deadline:
            raise LabError(f"sshd did not start; see {log_path(host)}")
        time.sleep(0.05)


def running(host: Host) -> bool:
    return processes.running_pid(pidfile(host), "sshd") is not None


def stop(host: Host) -> None:
    pid = processes.running_pid(pidfile(host), "sshd")
    if pid:
        processes.terminate([pid], timeout=5)
    pidfile(host).unlink(missing_ok=True)
