"""docker-cpuquota, the instrument's small injected overhead on a container: the tool runs in
docker-bridge's container with the CFS quota as options of the same `docker run`, the run's notes
say what was injected and against which mode, and a daemon that would ignore the quota makes
the mode skip with the daemon's words rather than measure an unlimited container."""

from __future__ import annotations

import shlex
from pathlib import Path
from types import SimpleNamespace

from pipeline.collect import inventory
from pipeline.collect.images import ToolImage
from pipeline.collect.modes import MODES
from pipeline.collect.modes.base import Context, Workload
from pipeline.collect.modes.controls import (
    CFS_PERIOD_US,
    CONTAINER_CPU_QUOTA,
    container_quota_options,
)

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = Workload("cpu-1thread", ("/usr/bin/sysbench", "--version"), 0)


class Session:
    """Answers every command with ``status`` and ``stderr``; records the commands."""

    def __init__(self, status: int = 0, stderr: str = "") -> None:
        self.status, self.stderr, self.commands = status, stderr, []

    def run(self, command, **kwargs):
        self.commands.append(command)
        return SimpleNamespace(status=self.status, stdout="", stderr=self.stderr)


def _ctx(session: Session, campaign: str = "test") -> Context:
    """A lab context on ``session``; the mode keeps its probe's answer per campaign."""
    inv = inventory.load(ROOT / "inventory/lab.yaml", known_modes=MODES, check_files=False)
    ctx = Context(inventory=inv, pool={name: session for name in inv.hosts}, campaign=campaign)
    ctx.image_paths = ["/usr/bin/sysbench"]
    for name in inv.hosts:  # no image build: the tag the daemon would have
        ctx.images[(name, "docker")] = ToolImage(name, "co-tools:test", "sha256:0", {})
    return ctx


def test_the_quota_is_the_kernel_s_period_and_quota_in_microseconds():
    assert container_quota_options() == ["--cpu-period", "100000", "--cpu-quota", "94000"]
    assert round(CONTAINER_CPU_QUOTA * CFS_PERIOD_US) == 94_000


def test_the_tool_runs_in_the_bridge_container_with_the_quota_and_says_so():
    session = Session()
    deployment = MODES["docker-cpuquota"].foreground(_ctx(session), WORKLOAD)
    command = deployment.client_command(["/usr/bin/sysbench", "cpu", "--threads=1", "run"])
    run = shlex.split(command.split("; ", 1)[1])  # after the clean-up of a left container
    assert run[:3] == ["docker", "run", "--rm"]
    quota = run.index("--cpu-quota")
    assert run[quota - 2 : quota + 2] == ["--cpu-period", "100000", "--cpu-quota", "94000"]
    assert run[-5:] == ["co-tools:test", "/usr/bin/sysbench", "cpu", "--threads=1", "run"]
    assert "--network" not in run  # the default bridge, as docker-bridge's own foreground
    assert deployment.notes == {"cpu_quota": "0.94", "cfs_period_us": "100000",
                                "baseline": "docker-bridge"}  # fmt: skip
    # docker-bridge's foreground is the same command without the two options
    bridge = MODES["docker-bridge"].foreground(_ctx(Session()), WORKLOAD)
    plain = shlex.split(bridge.client_command(["x"]).split("; ", 1)[1])
    assert [a for a in run[:-4] if a not in container_quota_options()] == [
        a.replace("docker-bridge", "docker-cpuquota") for a in plain[:-1]
    ]


def test_a_daemon_that_would_ignore_the_quota_makes_the_mode_skip_with_its_words():
    ignored = Session(stderr="WARNING: Your kernel does not support CPU CFS scheduler or the "
                             "cgroup is not mounted. Quota discarded.")  # fmt: skip
    reason = MODES["docker-cpuquota"].available(_ctx(ignored, "ignored"), "host")
    assert reason and "cannot set a CFS quota" in reason and "Quota discarded" in reason
    probe = ignored.commands[-1]
    assert "--cpu-quota" in probe and probe[-2:] == ["/usr/bin/sysbench", "--version"]
    assert MODES["docker-cpuquota"].available(_ctx(Session(), "applied"), "host") is None
    failed = Session(status=125, stderr="docker: Error response from daemon: oci runtime error")
    assert "oci runtime error" in MODES["docker-cpuquota"].available(_ctx(failed, "failed"), "host")
