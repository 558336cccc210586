"""A throwaway sshd on 127.0.0.1 for the remote.py tests (imported explicitly by them).

Everything lives in a tmp dir: host key, client key, authorized_keys, known_hosts, config,
pid file and log. The daemon is always stopped by the fixture's finalizer.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from pipeline.collect.inventory import Host, SshSettings

SSHD = "/usr/sbin/sshd"
START_TIMEOUT_S = 10.0


def free_port() -> int:
    """A port nothing listens on right now (the kernel picks it; tiny reuse race accepted)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def keygen(path: Path) -> str:
    """Make an ed25519 key pair at ``path``; return the public key line."""
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f", str(path)],
        check=True, timeout=30,
    )
    return path.with_suffix(".pub").read_text().strip()


@dataclass
class Sshd:
    dir: Path
    port: int
    host_pub: str          # "ssh-ed25519 AAAA..." of the daemon's host key
    client_key: Path
    known_hosts: Path      # holds the right host key for [127.0.0.1]:port
    log: Path

    def host(self, name: str = "testhost", **ssh_overrides: object) -> Host:
        ssh = SshSettings(
            user="root", port=self.port, key_file=self.client_key,
            known_hosts=self.known_hosts, connect_timeout_s=5.0,
        )
        return Host(name=name, address="127.0.0.1", ssh=replace(ssh, **ssh_overrides))

    def known_hosts_line(self, pub: str) -> str:
        return f"[127.0.0.1]:{self.port} {' '.join(pub.split()[:2])}\n"


def _wait_listening(port: int, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited with {proc.returncode}:\n{log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"sshd did not listen on 127.0.0.1:{port} in {START_TIMEOUT_S} s")


@pytest.fixture(name="sshd")
def sshd_fixture(tmp_path: Path) -> Iterator[Sshd]:
    if os.geteuid() != 0:
        pytest.skip("needs root (sshd logs in as root)")
    if not os.path.exists(SSHD) or shutil.which("ssh-keygen") is None:
        pytest.skip("needs openssh-server and ssh-keygen")
    d = tmp_path / "sshd"
    d.mkdir()
    host_pub = keygen(d / "host_ed25519")
    client_pub = keygen(d / "client_ed25519")
    (d / "authorized_keys").write_text(client_pub + "\n")
    port = free_port()
    known_hosts = d / "known_hosts"
    cfg = d / "sshd_config"
    cfg.write_text(
        "\n".join(
            [
                f"Port {port}",
                "ListenAddress 127.0.0.1",
                f"HostKey {d / 'host_ed25519'}",
                f"PidFile {d / 'sshd.pid'}",
                f"AuthorizedKeysFile {d / 'authorized_keys'}",
                "PermitRootLogin prohibit-password",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "StrictModes no",  # pytest's tmp dirs sit under world-writable /tmp
                "Subsystem sftp internal-sftp",
                "MaxSessions 20",
                "LogLevel VERBOSE",
            ]
        )
        + "\n"
    )
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
    subprocess.run([SSHD, "-t", "-f", str(cfg)], check=True, timeout=30)
    log = d / "sshd.log"
    with open(log, "wb") as logf:
        proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(cfg)], stderr=logf)
    try:
        _wait_listening(port, proc, log)
        server = Sshd(d, port, host_pub, d / "client_ed25519", known_hosts, log)
        known_hosts.write_text(server.known_hosts_line(host_pub))
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
