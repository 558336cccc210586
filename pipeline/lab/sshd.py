"""One sshd per lab host: keys, configuration, known_hosts, start and health.

Host keys are trusted on first use, never after: KNOWN_HOSTS is written when a host's key is
made, and is from then on the record every login's known_hosts is written from. A bring-up that
finds a key file other than the one KNOWN_HOSTS holds refuses (HostKeyChanged) instead of
trusting it; `python -m pipeline.lab reset` (reset_keys) is the one way to new keys.
"""

from __future__ import annotations

import base64
import hashlib
import os
import time
from pathlib import Path

from pipeline.lab import logins, processes
from pipeline.lab.commands import LabError, in_netns, run
from pipeline.lab.topology import (
    AUTHORIZED_DIR,
    HOSTS,
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
# /etc/hosts as lab hosts see it: the machine's, plus every lab host's name, so a host resolves
# its own name as a real one does (sudo looks it up for every command).
HOSTS_FILE = STATE_DIR / "hosts"


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


def host_key_line(host: Host) -> str:
    """The host's public key as known_hosts writes it after the address: "type base64"."""
    key_type, key_b64 = host_key(host).with_suffix(".pub").read_text().split()[:2]
    return f"{key_type} {key_b64}"


RESET_FIX = "`container-overhead lab reset` (or `python -m pipeline.lab reset`)"


class HostKeyChanged(LabError):
    """A lab host's key file differs from the key KNOWN_HOSTS trusted when it was made."""


def fingerprint(line: str) -> str:
    """"type base64" -> "type SHA256:..." as `ssh-keygen -l` prints it."""
    key_type, blob = line.split()[:2]
    digest = hashlib.sha256(base64.b64decode(blob)).digest()
    return f"{key_type} SHA256:{base64.b64encode(digest).decode().rstrip('=')}"


def trusted() -> dict[str, str]:
    """KNOWN_HOSTS as address -> "type base64" (empty before the first keys are made)."""
    entries = {}
    try:
        text = KNOWN_HOSTS.read_text()
    except FileNotFoundError:
        return entries
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3 and not line.startswith("#"):
            entries[fields[0]] = f"{fields[1]} {fields[2]}"
    return entries


def changed_keys(record: dict[str, str]) -> list[str]:
    """One sentence per lab host whose key file is not the key ``record`` trusts."""
    found = []
    for host in SSH_HOSTS:
        known = record.get(host.address)
        if known is None or not host_key(host).with_suffix(".pub").exists():
            continue
        offered = host_key_line(host)
        if offered != known:
            found.append(
                f"host key of lab host {host.name} ({host.address}) changed: "
                f"{host_key(host)} holds {fingerprint(offered)}, but {KNOWN_HOSTS} has trusted "
                f"{fingerprint(known)} since the lab made it"
            )
    return found


def ensure_keys() -> None:
    """One host key per sshd, trusted when it is made (KNOWN_HOSTS); each login's client key,
    authorized_keys and known_hosts, written from that record. HostKeyChanged when a key file
    is not the trusted one: the lab never trusts a changed key by itself."""
    SSH_DIR.mkdir(parents=True, exist_ok=True, mode=0o700)
    record = trusted()
    made = []  # first use: the keys made now, and only those
    for host in SSH_HOSTS:
        host.state_dir.mkdir(parents=True, exist_ok=True)
        if not (host_key(host).exists() and host_key(host).with_suffix(".pub").exists()):
            made.append(host)
        generate_key(host_key(host), host.name)
    changed = changed_keys(record)
    if changed:
        raise HostKeyChanged(
            "; ".join(changed) + f". The lab does not trust a changed key again: if you "
            f"replaced it yourself, {RESET_FIX} makes new host keys and known_hosts files; "
            "otherwise find out what wrote the key file before anything logs in"
        )
    unrecorded = [h for h in SSH_HOSTS if h.address not in record and h not in made]
    if unrecorded:
        # A key that was on disk before and is in no record was never trusted here, or its
        # record was lost: either way nothing says it is the key the lab made.
        names = ", ".join(f"{h.name} ({h.address})" for h in unrecorded)
        raise HostKeyChanged(
            f"{KNOWN_HOSTS} holds no key for lab host(s) {names}, whose key files were made "
            f"earlier: the record of the keys the lab trusted is missing or cut, and the lab "
            f"does not trust a key it did not just make. If you removed the record yourself, "
            f"{RESET_FIX} makes new host keys and known_hosts files"
        )
    first_use = {h.address: host_key_line(h) for h in made}
    record.update(first_use)
    logins.ensure(lambda host: record[host.address])
    names = "".join(f"{h.address} {h.name}\n" for h in HOSTS)
    machine = Path("/etc/hosts").read_text() if Path("/etc/hosts").exists() else ""
    HOSTS_FILE.write_text(f"{machine.rstrip()}\n# the lab's hosts\n{names}")
    HOSTS_FILE.chmod(0o644)


def reset_keys() -> None:
    """New host keys and known_hosts files (`lab reset`): the explicit way past a changed key.
    Running sshds are restarted by the caller so that they serve the new keys."""
    for host in SSH_HOSTS:
        for path in (host_key(host), host_key(host).with_suffix(".pub")):
            path.unlink(missing_ok=True)
    KNOWN_HOSTS.unlink(missing_ok=True)
    ensure_keys()


def config(host: Host) -> str:
    ports = "\n".join(f"Port {p}" for p in logins.ports())  # every lab login's port
    return f"""\
# sshd for lab host {host.name}, written by `python -m pipeline.lab up`
ListenAddress {host.address}
{ports}
HostKey {host_key(host)}
PidFile {pidfile(host)}
AuthorizedKeysFile {AUTHORIZED_DIR}/%u
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


def write_config(host: Host) -> None:
    config_path(host).write_text(config(host))


def stale(host: Host) -> bool:
    """Whether the host's sshd runs with another configuration than the lab's logins need."""
    try:
        return config_path(host).read_text() != config(host)
    except OSError:
        return True


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
    lines.append(f"mount --bind {HOSTS_FILE} /etc/hosts")
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
