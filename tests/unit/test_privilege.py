"""A login other than root: the inventory's `sudo`, which commands go through `sudo -n`, and
which are refused with the privilege they need. The wrapped commands run through the real
sudo and bash here (the suite runs as root, which sudo lets through without a rule)."""

from __future__ import annotations

import copy
import os
import shlex
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from pipeline.collect.inventory import load
from pipeline.collect.modes import MODES
from pipeline.collect.modes.base import RootlessUser, root_if_allowed, root_problem
from pipeline.collect.remote import NeedsRoot, Session
from pipeline.hosts import ModeUnavailable
from tests.unit.test_inventory import _bad, base, files, write  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = ["plain", "a b", "it's", '"q"', "$(touch /nonexistent/x)", "`id`", "a; false",
           "x\ny", "*", "\\", "-n", "$HOME", "%s"]  # fmt: skip


def _session(user: str, sudo: bool) -> Session:
    """A Session's privilege logic without a connection (no network is touched)."""
    inv = load(ROOT / "inventory" / "lab-operator.yaml", MODES, check_files=False)
    host = inv.servers[0]
    session = object.__new__(Session)
    session.host = replace(host, ssh=replace(host.ssh, user=user, sudo=sudo))
    return session


def test_root_runs_as_it_is_and_sudo_wraps_only_commands_that_need_root():
    root, operator = _session("root", False), _session("co-ops", True)
    assert not root._sudo("change the qdisc") and not root._sudo(None)
    assert operator._sudo("change the qdisc") and not operator._sudo(None)
    assert Session._as("tc qdisc show", False) == "tc qdisc show"
    assert Session._as("tc qdisc show", True) == "sudo -n -- bash -c 'tc qdisc show'"


def test_a_login_without_sudo_is_refused_with_the_privilege_it_lacks():
    guest = _session("co-guest", False)
    with pytest.raises(NeedsRoot) as err:
        guest._sudo("change the NIC's qdisc (tc)")
    text = str(err.value)
    assert "needs root on node1 to change the NIC's qdisc (tc)" in text
    assert "co-guest without sudo" in text and "sudo: true" in text
    assert isinstance(err.value, ModeUnavailable)  # the campaign records a skip, not a failure
    assert root_if_allowed(guest.host, "clean up") is None
    assert root_if_allowed(_session("co-ops", True).host, "clean up") == "clean up"
    assert root_problem(guest.host, "run rootful podman").startswith("needs root on node1")
    assert root_problem(_session("co-ops", True).host, "x") is None


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("sudo"), reason="needs root and sudo")
@pytest.mark.parametrize("value", HOSTILE)
def test_a_command_reaches_root_through_sudo_intact(value):
    text = f"export PIPELINE_RUN_ID=abc; printf %s {shlex.quote(value)}; printf '|%s' \"$(id -u)\""
    out = subprocess.run(["bash", "-c", Session._as(text, True)], capture_output=True,
                         text=True, timeout=30, check=True)  # fmt: skip
    assert out.stdout == f"{value}|0"


def test_the_rootless_user_is_reached_through_sudo_from_another_login():
    user = RootlessUser("co-bench", 60777, 60777, "/home/co-bench")
    assert user.command(["podman"])[0] == "setpriv"
    assert replace(user, sudo=True).command(["podman"])[:4] == ["sudo", "-n", "--", "setpriv"]


def test_inventory_sudo_must_be_a_boolean(files):  # noqa: F811 (the fixture)
    data = copy.deepcopy(base(files))
    data["ssh"]["sudo"] = True
    inv = load(write(files, data), MODES)
    client = inv.dc_client
    assert client.ssh.sudo and client.ssh.privileged  # from the global ssh mapping
    assert inv.servers[0].ssh.privileged  # srv1 logs in as root

    def bad(data):
        data["ssh"]["sudo"] = "yes"

    assert "ssh.sudo: must be true or false, got 'yes'" in _bad(files, bad)


def test_the_operator_inventory_is_a_non_root_login_on_two_servers():
    inv = load(ROOT / "inventory" / "lab-operator.yaml", MODES, check_files=False)
    ssh = inv.servers[0].ssh
    assert (ssh.user, ssh.port, ssh.sudo) == ("co-ops", 2222, True)
    assert [h.name for h in inv.servers] == ["node1", "node2"]
    assert inv.lab and inv.environment == "lab"


def test_a_lab_login_keeps_its_files_in_the_lab_and_its_port_unprivileged():
    from pipeline.lab.commands import LabError
    from pipeline.lab.logins import Login
    from pipeline.lab.topology import SSH_DIR

    Login("co-ops", 2222, SSH_DIR / "k", SSH_DIR / "kh", True).check()
    with pytest.raises(LabError, match=r"ssh.key_file must be a file in .*not /root/.ssh/id"):
        Login("co-ops", 2222, Path("/root/.ssh/id_ed25519"), SSH_DIR / "kh").check()
    with pytest.raises(LabError, match="port must be 22 or 1024..65535, not 80"):
        Login("co-ops", 80, SSH_DIR / "k", SSH_DIR / "kh").check()


def test_a_lab_inventory_s_servers_are_lab_nodes_with_the_manager_first():
    from pipeline.lab import swarm
    from pipeline.lab.commands import LabError

    for servers in (["node2", "node1"], ["node1", "node4"], []):
        with pytest.raises(LabError, match="must be lab nodes .*the manager node1 first"):
            swarm.ensure_active(servers)  # refused before any docker command
