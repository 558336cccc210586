"""The instrument's control modes (pipeline/collect/modes/controls.py) without the lab: the quota
script really confines a process here (root and a cgroup CPU controller needed), the tbf
commands are the study's marked qdisc, and clean-up and the leftovers check know both."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from pipeline.collect.modes import MODES, STUDY_MODES
from pipeline.collect.modes.base import CGROUP_PREFIX, TBF_HANDLE, remove_cgroups
from pipeline.collect.modes.controls import CFS_PERIOD_US, CPU_QUOTA, quota_script, tbf_commands

V1 = Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
V2 = Path("/sys/fs/cgroup/cgroup.controllers")
CAN_CGROUP = os.geteuid() == 0 and (V1.exists() or V2.exists())


def test_controls_are_registered_but_not_part_of_all():
    controls = {name for name, mode in MODES.items() if mode.control}
    assert controls == {"native-aa", "native-cpuquota", "native-tbf", "docker-cpuquota"}
    assert not controls & set(STUDY_MODES)
    assert MODES["native-tbf"].paths == ("dc",) and MODES["native-cpuquota"].paths == ("host",)
    assert MODES["docker-cpuquota"].paths == ("host",)


@pytest.mark.skipif(not CAN_CGROUP, reason="needs root and a cgroup CPU controller")
def test_the_quota_script_confines_the_command_it_execs():
    name = f"{CGROUP_PREFIX}unit-test-{os.getpid()}"
    try:
        out = subprocess.run(
            ["sh", "-c", quota_script(name), "sh", "cat", "/proc/self/cgroup"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout  # fmt: skip
        assert f"/{name}" in out  # the exec'd command itself runs in the control cgroup
        if V2.exists():
            limit = (Path("/sys/fs/cgroup") / name / "cpu.max").read_text().split()
            assert limit == [str(int(CPU_QUOTA * CFS_PERIOD_US)), str(CFS_PERIOD_US)]
        else:
            base = Path("/sys/fs/cgroup/cpu") / name
            assert int((base / "cpu.cfs_quota_us").read_text()) == int(CPU_QUOTA * CFS_PERIOD_US)
            assert int((base / "cpu.cfs_period_us").read_text()) == CFS_PERIOD_US
    finally:
        subprocess.run(["sh", "-c", remove_cgroups(name)], check=True, timeout=30)
    assert not (Path("/sys/fs/cgroup/cpu") / name).exists()
    assert not (Path("/sys/fs/cgroup") / name).exists()


@pytest.mark.skipif(not CAN_CGROUP, reason="needs root (to become nobody) and a cgroup")
def test_the_quota_script_fails_loudly_without_a_writable_cgroup():
    """As an unprivileged user the cgroup cannot be made: exit 3, the command never runs."""
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    run = subprocess.run(
        [*nobody, "sh", "-c", quota_script(f"{CGROUP_PREFIX}nope"), "sh", "echo", "ran"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert run.returncode == 3 and "ran" not in run.stdout


def test_tbf_commands_mark_the_qdisc_and_remove_only_it():
    add, remove = tbf_commands("eth7")
    assert add[:8] == ["tc", "qdisc", "replace", "dev", "eth7", "root", "handle", TBF_HANDLE]
    assert "tbf" in add and "rate" in add
    assert remove == ["tc", "qdisc", "del", "dev", "eth7", "root", "handle", TBF_HANDLE]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a veth pair and a qdisc)")
def test_cleanup_removes_a_left_qdisc_and_the_leftovers_check_sees_it_first():
    """The shell text cleanup_host and leftovers run, on this machine: a marked tbf on an
    unaddressed veth pair is reported, then removed; nobody else's qdisc is touched."""
    from pipeline.collect.modes.base import _tbf_interfaces

    name = f"co-unit{os.getpid() % 10000}"
    sh = lambda text: subprocess.run(["sh", "-c", text], capture_output=True, text=True,  # noqa: E731
                                     timeout=30).stdout  # fmt: skip
    subprocess.run(["ip", "link", "add", name, "type", "veth", "peer", "name", f"{name}p"],
                   check=True, timeout=30)  # fmt: skip
    try:
        add, _ = tbf_commands(name)
        subprocess.run(add, check=True, timeout=30)
        # somebody else's qdisc on the peer: not ours, never reported or removed
        subprocess.run(["tc", "qdisc", "replace", "dev", f"{name}p", "root", "handle", "1:",
                        "tbf", "rate", "1gbit", "burst", "64kb", "latency", "20ms"],
                       check=True, timeout=30)  # fmt: skip
        assert f"tbf:{name}" in sh(_tbf_interfaces('echo "tbf:$i"')).split()
        assert f"tbf:{name}p" not in sh(_tbf_interfaces('echo "tbf:$i"')).split()
        sh(_tbf_interfaces(f'tc qdisc del dev "$i" root handle {TBF_HANDLE} 2>/dev/null'))
        assert f"tbf:{name}" not in sh(_tbf_interfaces('echo "tbf:$i"')).split()
        assert "tbf 1:" in sh(f"tc qdisc show dev {name}p")
    finally:
        subprocess.run(["ip", "link", "del", name], timeout=30)


@pytest.mark.skipif(not CAN_CGROUP, reason="needs root and a cgroup CPU controller")
def test_removal_kills_what_an_interrupted_run_left_in_the_cgroup():
    """An interrupt can leave the tool running in its cgroup, and rmdir fails on a busy one:
    the removal kills what is inside and retries until the kernel has emptied it."""
    name = f"{CGROUP_PREFIX}unit-busy-{os.getpid()}"
    left = subprocess.Popen(["sh", "-c", quota_script(name), "sh", "sleep", "30"])
    try:
        # until the script has moved itself in (its pid listed in the group: a loaded machine
        # may take seconds to get there)
        procs = [Path(r, name, "cgroup.procs") for r in ("/sys/fs/cgroup", "/sys/fs/cgroup/cpu")]
        deadline = time.monotonic() + 60
        while not any(p.is_file() and str(left.pid) in p.read_text().split() for p in procs):
            assert left.poll() is None and time.monotonic() < deadline, "never moved in"
            time.sleep(0.1)
        subprocess.run(["sh", "-c", remove_cgroups(name)], check=True, timeout=30)
        assert left.wait(timeout=10) == -9  # killed, not finished
        assert not Path("/sys/fs/cgroup/cpu", name).exists()
        assert not Path("/sys/fs/cgroup", name).exists()
    finally:
        left.kill()
