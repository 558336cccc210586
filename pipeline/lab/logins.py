"""The ways into the lab's hosts: root on port 22 with the lab's own key, and any login a lab
inventory asks for (another user, port, key or known_hosts file, with or without sudo).

A login other than root is made the way a fleet's operator account usually is: an unprivileged
user (marked by its GECOS, uid from LOGIN_UIDS) in the `docker` group, so it reaches each
node's dockerd through the socket's group; with `sudo: true` a NOPASSWD rule in
/etc/sudoers.d lets it run the steps that need root through `sudo -n`; without it there is no
rule and those steps are skipped. Every lab sshd listens on every login's port, and each
login's known_hosts file holds the hosts' keys at its port.

What up() made is recorded in RECORD (users, sudoers files, ports), so down() removes exactly
that, and an inventory that changes its login replaces the old one.
"""

from __future__ import annotations

import grp
import json
import os
import pwd
from dataclasses import asdict, dataclass
from pathlib import Path

from pipeline.lab.commands import LabError, run
from pipeline.lab.topology import (
    AUTHORIZED_DIR,
    CLIENT_KEY,
    KNOWN_HOSTS,
    SSH_DIR,
    SSH_HOSTS,
    STATE_DIR,
)

GECOS = "container-overhead lab login"  # marks the users this module made
LOGIN_UIDS = range(60780, 60800)  # above login.defs' UID_MAX, below the rootless user's range
SUDOERS_DIR = Path("/etc/sudoers.d")
SUDOERS_PREFIX = "container-overhead-lab-"
DOCKER_GROUP = "docker"  # the group dockerd gives its socket (dockerd --group's default)
HOMES = STATE_DIR / "homes"
RECORD = STATE_DIR / "logins.json"
DEFAULT_PORT = 22


@dataclass(frozen=True)
class Login:
    """How a lab inventory logs in: what its `ssh` mapping says."""

    user: str = "root"
    port: int = DEFAULT_PORT
    key_file: Path = CLIENT_KEY
    known_hosts: Path = KNOWN_HOSTS
    sudo: bool = False

    def check(self) -> None:
        """The lab makes the key and known_hosts files itself, so they must lie in its
        ssh directory (it never writes a user's own ~/.ssh)."""
        for what, path in (("key_file", self.key_file), ("known_hosts", self.known_hosts)):
            if SSH_DIR not in Path(path).parents:
                raise LabError(
                    f"a lab inventory's ssh.{what} must be a file in {SSH_DIR} (the lab creates "
                    f"it), not {path}"
                )
        if Path(self.known_hosts) == KNOWN_HOSTS and self.port != DEFAULT_PORT:
            raise LabError(
                f"{KNOWN_HOSTS} is root's known_hosts on port {DEFAULT_PORT} (the record the lab "
                f"trusts its host keys from): a login on port {self.port} names a file of its own"
            )
        if self.port != DEFAULT_PORT and not 1024 <= self.port <= 65535:
            raise LabError(f"a lab login's port must be 22 or 1024..65535, not {self.port}")


ROOT = Login()


def _record() -> list[Login]:
    try:
        raw = json.loads(RECORD.read_text())
    except (OSError, ValueError):
        return []
    return [
        Login(r["user"], r["port"], Path(r["key_file"]), Path(r["known_hosts"]), r["sudo"])
        for r in raw
    ]


def _save(logins: list[Login]) -> None:
    tmp = RECORD.with_suffix(".tmp")
    tmp.write_text(json.dumps([{**asdict(x), "key_file": str(x.key_file),
                                "known_hosts": str(x.known_hosts)} for x in logins]))  # fmt: skip
    os.replace(tmp, RECORD)


def current() -> list[Login]:
    """Every login the lab serves: root's, then those lab inventories added."""
    return [ROOT, *[x for x in _record() if x != ROOT]]


def ports() -> list[int]:
    return sorted({x.port for x in current()})


def add(login: Login) -> bool:
    """Serve ``login`` from now on (replacing an earlier login of the same user); True when
    the set of logins changed, so the sshds must be restarted."""
    login.check()
    before = _record()
    if login == ROOT or login in before:
        return False
    others = [x for x in before if x.user != login.user]
    for old in before:
        if old.user == login.user and old.sudo and not login.sudo:
            _sudoers(old.user).unlink(missing_ok=True)
    _save([*others, login])
    return True


def _sudoers(user: str) -> Path:
    return SUDOERS_DIR / f"{SUDOERS_PREFIX}{user}"


def _lab_user(name: str) -> pwd.struct_passwd | None:
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        return None
    if pw.pw_gecos != GECOS:
        raise LabError(
            f"a user {name!r} exists that the lab did not create; a lab inventory's ssh.user "
            "must be root or a name the lab can create and remove"
        )
    return pw


def _free_uid() -> int:
    for uid in LOGIN_UIDS:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            try:
                grp.getgrgid(uid)
            except KeyError:
                return uid
    raise LabError(f"no free uid in {LOGIN_UIDS.start}..{LOGIN_UIDS.stop - 1} for a lab login")


def _ensure_user(login: Login) -> None:
    if login.user == "root":
        return
    try:
        grp.getgrnam(DOCKER_GROUP)
    except KeyError:
        raise LabError(
            f"group {DOCKER_GROUP!r} does not exist: install docker.io (it creates the group "
            "dockerd gives its socket)"
        ) from None
    if _lab_user(login.user) is None:
        uid = _free_uid()
        HOMES.mkdir(parents=True, exist_ok=True)
        HOMES.chmod(0o755)
        run(["groupadd", "--gid", str(uid), login.user])
        run(["useradd", "--uid", str(uid), "--gid", str(uid), "--groups", DOCKER_GROUP,
             "--home-dir", HOMES / login.user, "--create-home", "--shell", "/bin/bash",
             # "*": no password can log in, yet the account is not locked ("!"), which sshd
             # would refuse even for a key
             "--password", "*",
             "--comment", GECOS, "-K", "SUB_UID_COUNT=0", "-K", "SUB_GID_COUNT=0",
             login.user])  # fmt: skip
    rule = _sudoers(login.user)
    if login.sudo:
        text = f"# {GECOS}: {login.user} may run the study's root steps\n" \
               f"{login.user} ALL=(root) NOPASSWD: ALL\n"  # fmt: skip
        if not rule.exists() or rule.read_text() != text:
            SUDOERS_DIR.mkdir(parents=True, exist_ok=True)
            tmp = SUDOERS_DIR / f".{rule.name}.tmp"  # sudo skips names with a dot
            tmp.write_text(text)
            tmp.chmod(0o440)
            run(["visudo", "-cqf", tmp])
            os.replace(tmp, rule)
    else:
        rule.unlink(missing_ok=True)


def _write(path: Path, text: str, mode: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.chmod(mode)
    os.replace(tmp, path)


def ensure(host_key_line) -> None:  # noqa: ANN001 - (Host) -> "type base64"
    """Users, sudo rules, authorized keys and known_hosts files of every login.

    ``host_key_line(host)`` is the host's public key as "type base64"."""
    from pipeline.lab.sshd import generate_key

    AUTHORIZED_DIR.mkdir(parents=True, exist_ok=True)
    AUTHORIZED_DIR.chmod(0o755)  # sshd reads a user's file as that user
    authorized: dict[str, list[str]] = {}
    for login in current():
        _ensure_user(login)
        generate_key(login.key_file, f"container-overhead-lab {login.user}")
        authorized.setdefault(login.user, []).append(login.key_file.with_suffix(".pub").read_text())
        lines = []
        for host in SSH_HOSTS:
            where = host.address if login.port == DEFAULT_PORT else f"[{host.address}]:{login.port}"
            lines.append(f"{where} {host_key_line(host)}\n")
        # Exact entries only: the pipeline connects with paramiko's RejectPolicy.
        _write(login.known_hosts, "".join(lines), 0o600)
    for user, keys in authorized.items():
        _write(AUTHORIZED_DIR / user, "".join(sorted(set(keys))), 0o644)
    for stale in AUTHORIZED_DIR.iterdir():
        if stale.name not in authorized:
            stale.unlink()


def remove() -> None:
    """Remove the users and sudo rules the lab made (the files go with STATE_DIR)."""
    for rule in SUDOERS_DIR.glob(f"{SUDOERS_PREFIX}*"):
        rule.unlink(missing_ok=True)
    for pw in pwd.getpwall():
        if pw.pw_gecos == GECOS:
            run(["userdel", pw.pw_name])
            if _group_exists(pw.pw_name):
                run(["groupdel", pw.pw_name])
    RECORD.unlink(missing_ok=True)


def _group_exists(name: str) -> bool:
    try:
        grp.getgrnam(name)
    except KeyError:
        return False
    return True


def leftovers() -> list[str]:
    found = [f"user {pw.pw_name}" for pw in pwd.getpwall() if pw.pw_gecos == GECOS]
    found += [f"sudoers file {p}" for p in SUDOERS_DIR.glob(f"{SUDOERS_PREFIX}*")]
    return found
