"""Key files and known_hosts files as hostile input: a key file that is a symbolic link is
looked at, not followed, and no message suggests changing a file that is not the user's; a
known_hosts file with markers (@revoked, @cert-authority) or host patterns gets a project
message naming the line and what to write instead, from the inventory check and from the
SSH session, never a paramiko exception."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from pipeline.collect import inventory as inventory_mod
from pipeline.collect.inventory import Host, SshSettings
from pipeline.collect.remote import Session, UnreachableHost

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None,
                                reason="ssh-keygen is not installed")  # fmt: skip
ADDRESS = "192.0.2.10"  # TEST-NET-1: nothing answers there, and no test gets that far


@pytest.fixture
def keys(tmp_path) -> dict[str, Path]:
    """A key pair in the inventory's directory and a "system" directory outside the places
    the user controls (their home, the repository, the inventory's directory)."""
    inv = tmp_path / "inv"
    system = tmp_path / "system"
    inv.mkdir()
    system.mkdir()
    key = inv / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", str(key)],
                   check=True, timeout=60)  # fmt: skip
    public = key.with_suffix(".pub").read_text().split()
    kh = inv / "known_hosts"
    kh.write_text(f"{ADDRESS} {public[0]} {public[1]}\n")
    return {"inv": inv, "system": system, "key": key, "known_hosts": kh,
            "line": f"{public[0]} {public[1]}"}  # fmt: skip


def _inventory(keys: dict[str, Path], key_file: Path, known_hosts: Path) -> Path:
    doc = {"environment": "bare-metal",
           "ssh": {"user": "bench", "key_file": str(key_file), "known_hosts": str(known_hosts)},
           "hosts": {"srv1": {"address": ADDRESS}, "client1": {"address": "192.0.2.20"}},
           "roles": {"servers": ["srv1"], "dc_client": "client1"}}  # fmt: skip
    path = keys["inv"] / "inv.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _problems(path: Path) -> str:
    with pytest.raises(inventory_mod.InventoryError) as caught:
        inventory_mod.load(path, ["native"])
    return str(caught.value)


def _session(keys: dict[str, Path], known_hosts: Path) -> str:
    ssh = SshSettings(user="bench", port=22, key_file=keys["key"], known_hosts=known_hosts,
                      connect_timeout_s=1)  # fmt: skip
    with pytest.raises(UnreachableHost) as caught:
        Session(Host(name="srv1", address=ADDRESS, ssh=ssh))
    return str(caught.value)


# -- key files that are symbolic links ---------------------------------------------------


def test_a_key_linked_to_a_file_outside_the_users_control_suggests_a_copy(keys) -> None:
    target = keys["system"] / "ssh_host_ed25519_key"
    shutil.copy(keys["key"], target)
    target.chmod(0o644)
    link = keys["inv"] / "study_key"
    link.symlink_to(target)
    msg = _problems(_inventory(keys, link, keys["known_hosts"]))
    assert f"ssh.key_file: {link} is a symbolic link to {target}, a file that is not yours " \
           "to change" in msg
    assert "point key_file at a copy you own" in msg
    assert "chmod" not in msg
    assert oct(target.stat().st_mode & 0o777) == "0o644"  # nothing changed it


def test_a_key_linked_to_a_system_public_key_suggests_no_chmod(keys) -> None:
    system_key = Path("/etc/ssh/ssh_host_ed25519_key.pub")
    if not system_key.is_file():
        pytest.skip("no system host key here")
    link = keys["inv"] / "id_study"
    link.symlink_to(system_key)
    msg = _problems(_inventory(keys, link, keys["known_hosts"]))
    assert "point key_file at a copy you own" in msg and "chmod" not in msg


def test_a_key_not_owned_by_the_user_suggests_a_copy_not_chmod(keys) -> None:
    if os.getuid() != 0:
        pytest.skip("giving a file to another user needs root")
    key = keys["inv"] / "theirs"
    shutil.copy(keys["key"], key)
    key.chmod(0o644)
    os.chown(key, 65534, 65534)
    msg = _problems(_inventory(keys, key, keys["known_hosts"]))
    assert f"private key {key} is accessible by group/others (mode 0644)" in msg
    assert "point key_file at a copy you own" in msg and "chmod" not in msg


def test_a_link_to_the_users_own_key_names_the_real_file_in_the_fix(keys) -> None:
    keys["key"].chmod(0o640)
    link = keys["inv"] / "study_key"
    link.symlink_to(keys["key"])
    msg = _problems(_inventory(keys, link, keys["known_hosts"]))
    assert f"private key {link} is accessible by group/others (mode 0640); ssh refuses such " \
           f"keys: chmod 600 {keys['key']}" in msg


def test_a_link_to_the_users_own_good_key_is_valid(keys) -> None:
    link = keys["inv"] / "study_key"
    link.symlink_to(keys["key"])
    inv = inventory_mod.load(_inventory(keys, link, keys["known_hosts"]), ["native"])
    assert inv.servers[0].ssh.key_file == link


def test_a_dangling_key_link_is_named(keys) -> None:
    link = keys["inv"] / "study_key"
    link.symlink_to(keys["system"] / "gone")
    msg = _problems(_inventory(keys, link, keys["known_hosts"]))
    assert f"{link} is a symbolic link to {keys['system'] / 'gone'}, which does not exist" in msg


# -- known_hosts features the study does not support -------------------------------------


@pytest.mark.parametrize(("marker", "fix"), [
    ("@revoked", "remove the line: a key the study does not list is never trusted"),
    ("@cert-authority", "host certificates are not supported: list each host's own key"),
])  # fmt: skip
def test_a_known_hosts_marker_is_named_by_the_check_and_the_session(marker, fix, keys) -> None:
    kh = keys["known_hosts"]
    kh.write_text(kh.read_text() + f"{marker} 192.0.2.99 {keys['line']}\n")
    msg = _problems(_inventory(keys, keys["key"], kh))
    assert f"ssh.known_hosts: {kh} line 2: the {marker} marker is not supported" in msg
    assert fix in msg and "ssh-keyscan [-H] -p PORT ADDRESS" in msg
    msg = _session(keys, kh)
    assert msg.startswith(f"cannot reach host srv1 ({ADDRESS}:22): known_hosts {kh} holds what "
                          f"the study does not support: the {marker} marker")  # fmt: skip
    assert "InvalidHostKey" not in msg and "Incorrect padding" not in msg


def test_a_host_listed_only_through_a_pattern_is_named(keys) -> None:
    kh = keys["known_hosts"]
    kh.write_text(f"192.0.2.* {keys['line']}\n")
    msg = _problems(_inventory(keys, keys["key"], kh))
    assert f"hosts.srv1: {kh} line 1 names the host only through the pattern '192.0.2.*': " \
           "host patterns are not supported: add a line for the host itself" in msg
    assert "hosts.client1:" in msg  # 192.0.2.20 is covered by the same pattern
    msg = _session(keys, kh)
    assert "names the host only through the pattern '192.0.2.*'" in msg
    assert f"ssh-keyscan -p 22 {ADDRESS} >> {kh}" in msg


def test_a_pattern_beside_each_hosts_own_line_is_accepted(keys) -> None:
    kh = keys["known_hosts"]
    kh.write_text(f"*.corp.example {keys['line']}\n{ADDRESS} {keys['line']}\n"
                  f"192.0.2.20 {keys['line']}\n")  # fmt: skip
    inventory_mod.load(_inventory(keys, keys["key"], kh), ["native"])


def test_hashed_lines_are_found_beside_a_pattern(keys) -> None:
    kh = keys["known_hosts"]
    kh.write_text(f"{ADDRESS} {keys['line']}\n192.0.2.20 {keys['line']}\n")
    subprocess.run(["ssh-keygen", "-H", "-f", str(kh)], check=True, capture_output=True,
                   timeout=60)  # fmt: skip
    assert ADDRESS not in kh.read_text()  # hashed now
    kh.write_text(kh.read_text() + f"10.* {keys['line']}\n")
    inventory_mod.load(_inventory(keys, keys["key"], kh), ["native"])
    # a pattern that covers client1 too: its own (hashed) line is what the study uses
    kh.write_text(kh.read_text() + f"192.0.2.2? {keys['line']}\n")
    inventory_mod.load(_inventory(keys, keys["key"], kh), ["native"])


def test_a_damaged_known_hosts_line_is_named(keys) -> None:
    kh = keys["known_hosts"]
    kh.write_text(kh.read_text() + f"192.0.2.20 {keys['line'].split()[0]} AAAA%%%broken\n")
    msg = _problems(_inventory(keys, keys["key"], kh))
    assert f"{kh} line 2: the key is not valid base64 (a damaged line): remove it" in msg
    assert "damaged line" in _session(keys, kh)
