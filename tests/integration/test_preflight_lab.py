"""The preflight against the embedded lab: `check --connect` finds every host ready; a host
whose tool is gone, whose sudo rule is gone or whose host key was swapped is one line each,
a non-zero exit, and a collection stage that stops before its campaign writes anything; an
inventory the lab cannot be (a fourth server, a login per host) is refused naming it.

The lab's hosts share this machine's filesystem, so one host loses a tool or its sudo rule
through its own mount namespace (its sshd's, which every session on it inherits): a bind
mount over the file, undone in a finally. A swapped key is restored, and its sshd restarted,
in a finally too, with every known_hosts file the lab had."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from pipeline import environments
from pipeline.collect import preflight
from pipeline.collect.campaign import Profile
from pipeline.lab import processes, sshd
from pipeline.lab.commands import LabError
from pipeline.lab.logins import SUDOERS_DIR, SUDOERS_PREFIX
from pipeline.lab.topology import NODES, SSH_DIR, SSH_HOSTS
from tests.integration.lab_campaign import INVENTORY, OPERATOR_INVENTORY, ROOT, ROOT_ONLY

pytestmark = [pytest.mark.lab, ROOT_ONLY]

NODE2 = NODES[1]
IPERF3 = "/usr/bin/iperf3"
TINY = Profile(runs=1, seconds=1.0, omit_seconds=0.0, warmup_seconds=1.0)


def _check(inventory_file: Path | str) -> subprocess.CompletedProcess:
    """`python -m pipeline.inventory check --connect FILE`, as a user types it."""
    return subprocess.run(
        [sys.executable, "-m", "pipeline.inventory", "check", "--connect", str(inventory_file)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _problems(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in done.stderr.splitlines() if " PROBLEM " in f" {line}"]


def _ready(inventory_file: Path | str) -> None:
    environments.provider(inventory_file).ready(None, log=lambda _: None)


def _stage(inventory_file: Path | str, raw: Path) -> None:
    """What a collection stage runs (notebooks/collect/10-measure.ipynb), shortest window."""
    environments.collect("throughput", inventory_file, raw, TINY, 1, ["native"],
                         log=lambda _: None, paths=("dc",))  # fmt: skip


@contextmanager
def _over(host, target: str, content: str, mode: int, tmp_path: Path) -> Iterator[None]:
    """``target`` replaced by a file holding ``content`` for ``host``'s sessions only."""
    pid = processes.running_pid(sshd.pidfile(host), "sshd")
    assert pid, f"sshd on {host.name} does not run"
    stand_in = tmp_path / f"stand-in-{Path(target).name}"
    stand_in.write_text(content)
    stand_in.chmod(mode)
    enter = ["nsenter", f"--mount=/proc/{pid}/ns/mnt", "--"]
    subprocess.run([*enter, "mount", "--bind", stand_in, target], check=True)
    try:
        yield
    finally:
        subprocess.run([*enter, "umount", target], check=True)


@pytest.fixture(scope="module", autouse=True)
def lab_up():
    _ready(ROOT / INVENTORY)
    yield


def test_check_connect_on_the_lab_is_all_ok():
    done = _check(INVENTORY)
    assert done.returncode == 0, done.stderr
    assert _problems(done) == []
    ok = [line for line in done.stdout.splitlines() if ": ok " in line]
    assert sorted(line.split(": ok ")[1].split(":")[0] for line in ok) == [
        "dc-client", "inet-client", "node1", "node2", "node3"]  # fmt: skip
    node1 = next(line for line in ok if ": ok node1:" in line)
    assert "user root" in node1 and "cgroup v" in node1 and "iperf 3" in node1
    assert not any("macvlan" in line for line in done.stdout.splitlines())  # it works here


def test_a_host_without_its_tool_is_one_line_and_the_stage_writes_nothing(tmp_path):
    raw = tmp_path / "raw"
    with _over(NODE2, IPERF3, "", 0o644, tmp_path):
        done = _check(INVENTORY)
        with pytest.raises(preflight.PreflightError) as stopped:
            _stage(INVENTORY, raw)
    problems = _problems(done)
    assert done.returncode == 1
    assert len([p for p in problems if IPERF3 in p]) == 1, problems
    assert f"node2: {IPERF3} is missing or not executable" in problems[0]
    assert f"PROBLEM node2: {IPERF3} is missing" in str(stopped.value)
    assert not raw.exists()


def test_a_host_without_its_sudo_rule_is_one_line(tmp_path):
    _ready(ROOT / OPERATOR_INVENTORY)  # the lab serves the operator login (sudo: true)
    rule = SUDOERS_DIR / f"{SUDOERS_PREFIX}co-ops"
    assert rule.exists()
    try:
        with _over(NODE2, str(rule), "", 0o440, tmp_path):
            done = _check(OPERATOR_INVENTORY)
    finally:
        _ready(ROOT / INVENTORY)
    problems = _problems(done)
    assert done.returncode == 1
    assert len(problems) == 1, problems
    assert "node2: sudo -n true failed for co-ops" in problems[0]
    assert "pipeline.lab up --inventory" in problems[0]


@pytest.fixture
def swapped_key(tmp_path):
    """node2's host key replaced on disk and served by its sshd; every host key and known_hosts
    file put back after (and the sshds restarted with them)."""
    saved: dict[Path, Path] = {}
    for i, path in enumerate([*(p for h in SSH_HOSTS for p in (sshd.host_key(h),
                                sshd.host_key(h).with_suffix(".pub"))),
                              *SSH_DIR.glob("known_hosts*")]):  # fmt: skip
        saved[path] = tmp_path / f"saved-{i}"
        shutil.copy2(path, saved[path])
    key = sshd.host_key(NODE2)
    try:
        key.unlink()
        key.with_suffix(".pub").unlink()
        sshd.generate_key(key, "impostor")
        sshd.start(NODE2)
        yield
    finally:
        for path, copy in saved.items():
            shutil.copy2(copy, path)
        for host in SSH_HOSTS:
            sshd.start(host)


def test_a_swapped_host_key_is_one_line_and_the_next_stage_stops(swapped_key, tmp_path):
    known_before = {p.name: p.read_text() for p in SSH_DIR.glob("known_hosts*")}
    done = _check(INVENTORY)
    problems = _problems(done)
    assert done.returncode == 1
    assert len(problems) == 1, problems
    assert "node2: host key MISMATCH" in problems[0] and "lab reset" in problems[0]

    raw = tmp_path / "raw"
    with pytest.raises(LabError) as stopped:
        _stage(INVENTORY, raw)
    msg = str(stopped.value)
    assert "host key of lab host node2 (10.77.0.12) changed" in msg
    assert sshd.fingerprint(sshd.host_key_line(NODE2)) in msg
    assert "container-overhead lab reset" in msg
    assert not raw.exists()
    assert {p.name: p.read_text() for p in SSH_DIR.glob("known_hosts*")} == known_before


def test_lab_reset_is_the_way_to_new_keys(swapped_key):
    before = sshd.trusted()
    done = subprocess.run([sys.executable, "-m", "pipeline.lab", "reset"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    after = sshd.trusted()
    assert set(after) == set(before)
    assert all(after[a] != before[a] for a in before)  # every host has a new key
    assert after[NODE2.address] == sshd.host_key_line(NODE2)
    checked = _check(INVENTORY)
    assert checked.returncode == 0, checked.stderr
    for other in SSH_DIR.glob("known_hosts_*"):  # other logins' files follow the new record
        keys = {" ".join(line.split()[1:3]) for line in other.read_text().splitlines()}
        assert keys == set(after.values()), other.name


def _shaped(tmp_path: Path, change) -> Path:
    data = yaml.safe_load((ROOT / INVENTORY).read_text())
    change(data)
    path = tmp_path / "shaped.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _four_servers(data: dict) -> None:
    data["hosts"]["node4"] = {"address": "10.77.0.14"}
    data["roles"]["servers"].append("node4")


def _user_per_host(data: dict) -> None:
    data["hosts"]["node2"]["ssh"] = {"user": "co-other", "port": 2200}


@pytest.mark.parametrize("change, named", [
    (_four_servers, "the embedded lab has no host node4 at 10.77.0.14"),
    (_user_per_host, "hosts.node2.ssh: logs in with another user, port than node1"),
])  # fmt: skip
def test_a_shape_the_lab_cannot_be_is_refused_naming_it(tmp_path, change, named):
    path = _shaped(tmp_path, change)
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", "check", "--connect", str(path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert any(named in line for line in _problems(done)), done.stderr
    raw = tmp_path / "raw"
    with pytest.raises(ValueError, match=named.replace(".", r"\.")):
        _stage(path, raw)
    assert not raw.exists()
