"""The footprint reading: its parser on verbatim output captured on the lab's node1 (three
rootful dockerds, a rootless dockerd and other helpers' containers running on the same
machine), which processes count for which engine, the reading command itself on this machine,
and the ramp of container starts with a fake engine."""

import os
import shutil
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipeline.benchmarks import BENCHMARKS, ToolOutputError, footprint
from pipeline.benchmarks.footprint import (
    KINDS,
    Density,
    EngineMemory,
    Footprint,
    engine_memory,
    engine_processes,
    footprint_samples,
    parse_reading,
    reading_command,
)

DATA = Path(__file__).parent / "data"
UID = 60777  # the lab's rootless user (co-bench)
# Read from the daemons' pidfiles when the fixtures were captured:
NODE1_DOCKERD = 13421  # /run/container-overhead-lab/node1/docker.pid
ROOTLESSKIT = 14273  # /run/container-overhead-lab/rootless-dockerd.pid
NODE1_NETNS = "net:[4026532178]"


def _reading(name: str):
    return parse_reading((DATA / f"footprint-{name}.txt").read_text())


def _lines(name: str) -> list[list[str]]:
    """The fixture's process lines split by tab: read independently of the parser."""
    text = (DATA / f"footprint-{name}.txt").read_text()
    body = text.split("== processes\n", 1)[1]
    return [line.split("\t") for line in body.splitlines() if line.count("\t") >= 7]


def test_sections_are_parsed_verbatim():
    reading = _reading("docker-3")
    assert reading.netns == NODE1_NETNS
    assert (reading.mem_total_kib, reading.mem_available_kib) == (24684096, 23585460)
    assert len(reading.containers) == 3
    assert all(path.startswith("/run/container-overhead-lab/node1/exec/netns/")
               for path in reading.containers.values())  # fmt: skip
    assert len(reading.processes) == len(_lines("docker-3")) == 22
    dockerd = reading.processes[NODE1_DOCKERD]
    assert (dockerd.comm, dockerd.uid, dockerd.ppid) == ("dockerd", 0, 1)
    assert (dockerd.rss_kib, dockerd.pss_kib) == (102892, 61184)
    assert "--exec-root /run/container-overhead-lab/node1/exec" in dockerd.args
    # a process name with a space survives (tab-separated fields)
    assert any(p.comm == "podman pause" for p in reading.processes.values())


def test_rootful_docker_counts_node1s_daemon_and_only_the_steps_shims():
    reading = _reading("docker-3")
    procs = engine_processes(reading, "docker", 0)
    by_comm = {}
    for proc in procs:
        by_comm.setdefault(proc.comm, []).append(proc.pid)
    assert by_comm["dockerd"] == [NODE1_DOCKERD]  # not node2's or node3's, not the rootless one
    assert len(by_comm["containerd"]) == 1
    assert reading.processes[by_comm["containerd"][0]].ppid == NODE1_DOCKERD
    # 10 shims run on the machine (other helpers' containers on all three nodes): 3 are ours
    assert sum(1 for f in _lines("docker-3") if f[1] == "containerd-shim") == 10
    assert len(by_comm["containerd-shim"]) == 3
    assert set(by_comm) == {"dockerd", "containerd", "containerd-shim"}
    memory = engine_memory(reading, "docker", 0)
    ours = [f for f in _lines("docker-3") if any(i in f[7] for i in reading.containers)]
    shim_pss = sum(int(f[6]) for f in ours if f[1] == "containerd-shim")
    assert memory.pss_kib["shim"] == shim_pss == 9432
    assert memory.processes == {"daemon": 1, "containerd": 1, "shim": 3, "conmon": 0, "helper": 0}
    assert memory.total_pss_kib == 61184 + 20382 + 9432
    assert memory.host_used_kib == 24684096 - 23585460


def test_an_idle_docker_has_its_daemon_and_containerd_only():
    memory = engine_memory(_reading("docker-idle"), "docker", 0)
    assert memory.count == 0
    assert memory.processes == {"daemon": 1, "containerd": 1, "shim": 0, "conmon": 0, "helper": 0}
    assert memory.rss_kib["daemon"] > memory.pss_kib["daemon"] > 10_000  # Go daemon: tens of MB


def test_rootless_docker_counts_rootlesskit_its_tree_and_its_own_shims():
    reading = _reading("rootless-docker-3")
    memory = engine_memory(reading, "rootless-docker", UID)
    comms = {p.comm for p in engine_processes(reading, "rootless-docker", UID)}
    assert comms == {"rootlesskit", "exe", "slirp4netns", "dockerd", "containerd",
                     "containerd-shim"}  # fmt: skip
    assert memory.processes == {"daemon": 1, "containerd": 1, "shim": 3, "conmon": 0, "helper": 3}
    pids = {p.pid for p in engine_processes(reading, "rootless-docker", UID)}
    assert ROOTLESSKIT in pids and NODE1_DOCKERD not in pids
    # the rootless daemon lives in rootlesskit's network namespace, not node1's
    daemon = next(p for p in reading.processes.values() if p.pid in pids and p.comm == "dockerd")
    assert daemon.netns != NODE1_NETNS and daemon.uid == UID


def test_rootful_podman_has_no_daemon_and_one_conmon_per_container():
    reading = _reading("podman-3")
    memory = engine_memory(reading, "podman", 0)
    assert memory.processes == {"daemon": 0, "containerd": 0, "shim": 0, "conmon": 3, "helper": 0}
    conmon = sum(int(f[6]) for f in _lines("podman-3") if f[1] == "conmon")
    assert memory.pss_kib["conmon"] == memory.total_pss_kib == conmon


def test_rootless_podman_counts_pause_conmon_and_its_own_slirp4netns_only():
    reading = _reading("rootless-podman-3")
    procs = engine_processes(reading, "rootless-podman", UID)
    slirps = [p for p in procs if p.comm == "slirp4netns"]
    # four slirp4netns of the user run: one is rootless docker's (rootlesskit's child)
    assert sum(1 for f in _lines("rootless-podman-3") if f[1] == "slirp4netns") == 4
    assert len(slirps) == 3 and all(p.ppid != ROOTLESSKIT for p in slirps)
    assert {p.args.split()[-2] for p in slirps} == set(reading.containers.values())
    memory = engine_memory(reading, "rootless-podman", UID)
    assert memory.processes == {"daemon": 0, "containerd": 0, "shim": 0, "conmon": 3, "helper": 4}
    assert memory.names["helper"] == ["podman pause", "slirp4netns"]


def test_two_daemons_in_the_host_namespace_are_an_error_not_a_sum():
    text = (DATA / "footprint-docker-3.txt").read_text()
    text = text.replace("net:[4026532249]", NODE1_NETNS)  # node2's dockerd now looks like ours
    with pytest.raises(ToolOutputError, match="expected one docker daemon"):
        engine_memory(parse_reading(text), "docker", 0)
    with pytest.raises(ToolOutputError, match="reading lacks"):
        parse_reading("== netns\nnet:[1]\n")


def test_samples_have_every_kind_and_the_totals():
    memory = engine_memory(_reading("docker-3"), "docker", 0)
    samples = {s.metric: s for s in footprint_samples(memory, 3, 7)}
    assert set(samples) == {f"footprint_{m}_kib_{k}" for m in ("pss", "rss")
                            for k in (*KINDS, "total")} | {
        f"footprint_processes_{k}" for k in KINDS} | {"footprint_host_used_kib"}  # fmt: skip
    assert samples["footprint_pss_kib_total"].value == memory.total_pss_kib
    assert samples["footprint_processes_shim"].value == 3
    assert {s.sample for s in samples.values()} == {3} and samples[
        "footprint_rss_kib_shim"
    ].t_ns == 7


@pytest.mark.skipif(shutil.which("awk") is None, reason="needs awk")
def test_the_reading_command_runs_here_and_parses(tmp_path):
    """The real command on this machine: a process named conmon appears with its own pid, uid,
    memory and arguments (a token in its args makes it one of the 'containers')."""
    fake = tmp_path / "conmon"
    shutil.copy("/usr/bin/sleep", fake)
    proc = subprocess.Popen([str(fake), "30"])
    try:
        time.sleep(0.2)
        text = subprocess.run(["sh", "-c", reading_command(["true"], [])], capture_output=True,
                              text=True, timeout=60, check=True).stdout  # fmt: skip
        reading = parse_reading(text)
        assert reading.netns == os.readlink("/proc/self/ns/net")
        total = int(Path("/proc/meminfo").read_text().split()[1])
        assert reading.mem_total_kib == total
        mine = reading.processes[proc.pid]
        assert (mine.comm, mine.uid, mine.ppid) == ("conmon", os.getuid(), os.getpid())
        assert mine.args == f"{fake} 30" and 0 < mine.pss_kib <= mine.rss_kib
        # a container token in its arguments makes it a per-container process of "podman"
        reading.containers["30"] = ""
        assert [p.pid for p in engine_processes(reading, "podman", os.getuid())] == [proc.pid]
    finally:
        proc.kill()
        proc.wait()


# ---- the ramp of container starts, with a fake engine ------------------------------------


class FakeHandle:
    """Starts succeed until ``fail_at`` containers; each container costs 3000 KiB of PSS."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.fail_at = fail_at
        self.running: list[str] = []
        self.removed: list[str] = []
        self.reads: list[int] = []
        self.stuck: set[str] = set()  # names remove() cannot remove

    def start(self, names):
        ok = [n for i, n in enumerate(names)
              if self.fail_at is None or len(self.running) + i < self.fail_at]  # fmt: skip
        self.running += ok
        error = "" if len(ok) == len(names) else f"start of {names[len(ok)]} failed: full"
        return ok, error

    def remove(self, names):
        self.removed += names
        self.running = [n for n in self.running if n not in names or n in self.stuck]
        return [n for n in names if n in self.running]

    def run_command(self, name):
        return f"docker run --detach --name {name} sleep"

    log = ["# fake"]

    def read(self, names):
        memory = EngineMemory(count=len(names), mem_available_kib=10**7 - 5000 * len(names))
        for kind in KINDS:
            memory.pss_kib[kind] = memory.rss_kib[kind] = memory.processes[kind] = 0
            memory.names[kind] = []
        memory.pss_kib["daemon"], memory.pss_kib["shim"] = 60000, 3000 * len(names)
        self.reads.append(len(names))
        return memory

    def settled(self, names, seconds):
        return self.read(names), True


def _scenario():
    return SimpleNamespace(prefix="co-x-footprint-docker-bridge", labels=["--label", "k=v"],
                           host=SimpleNamespace(name="node1"))  # fmt: skip


def _measure(bench, handle):
    """bench.measure with a fake engine handle."""
    bench.handle = lambda scenario: handle
    return bench.measure(_scenario())


def test_footprint_reads_at_each_step_and_removes_every_container():
    bench = Footprint()
    bench.configure({"max_containers": 6, "step": 4})
    handle, attempted = FakeHandle(), []
    ramp = bench.ramp(_scenario(), handle, attempted)
    assert [count for count, _, _ in ramp.readings] == [0, 4, 6]  # the last batch is short
    assert ramp.stopped == "limit of 6 containers reached"
    assert attempted[0].endswith("-warm") and len(attempted) == 7
    assert handle.running == [f"co-x-footprint-docker-bridge-{i:03d}" for i in range(6)]
    pss = [s.value for s in bench.samples(ramp) if s.metric == "footprint_pss_kib_total"]
    assert pss == [60000, 72000, 78000]


def test_the_warm_up_and_the_final_removal_are_the_scenarios_own_time(monkeypatch):
    """Every engine call takes 1 s of a fake clock: the ramp's span is kept (window_s), its
    warm-up (a reading, one container started and removed) and the removal of every container
    at the end are the scenario's own time (fixed_s), the split's tool-fixed part."""
    clock = [0.0]
    monkeypatch.setattr(footprint.time, "monotonic", lambda: clock[0])

    class Timed(FakeHandle):
        def __getattribute__(self, name):
            attr = super().__getattribute__(name)
            if name in ("read", "start", "remove"):
                clock[0] += 1.0
            return attr

    bench = Footprint()
    bench.configure({"max_containers": 6, "step": 4})
    outcome = _measure(bench, Timed())
    # kept: the idle reading, two batches and a reading after each (read() via settled())
    assert outcome.window_s == 5.0
    assert outcome.fixed_s == 3.0 + 1.0  # warm-up reading, start, removal; the final removal


def test_a_failed_start_fails_footprint_but_ends_density_with_the_reason():
    with pytest.raises(ToolOutputError, match="failed: full"):
        Footprint().ramp(_scenario(), FakeHandle(fail_at=3), [])
    density = Density()
    density.configure({"cap": 10, "step": 2})
    ramp = density.ramp(_scenario(), FakeHandle(fail_at=5), [])
    assert [count for count, _, _ in ramp.readings] == [0, 2, 4, 5]
    assert ramp.stopped == "start of co-x-footprint-docker-bridge-005 failed: full"
    samples = {(s.metric, s.sample): s.value for s in density.samples(ramp)}
    assert samples[("density_containers_reached", 0)] == 5
    assert samples[("density_mem_used_mib", 4)] == pytest.approx(4 * 5000 / 1024)
    assert samples[("density_mem_per_container_mib", 5)] == pytest.approx(5000 / 1024)
    assert samples[("density_engine_pss_per_container_mib", 5)] == pytest.approx(3000 / 1024)
    assert ("density_mem_per_container_mib", 0) not in samples  # no division by zero


def test_options_are_checked_and_registered():
    assert BENCHMARKS["footprint"] is Footprint and BENCHMARKS["density"] is Density
    with pytest.raises(ValueError, match="no option"):
        Footprint().configure({"cap": 3})
    with pytest.raises(ValueError, match="step must be > 0"):
        Density().configure({"step": 0})
    assert Footprint.kind == Density.kind == "scenario"


def test_measure_removes_every_container_also_after_a_failure():
    handle = FakeHandle(fail_at=3)
    with pytest.raises(ToolOutputError, match="failed: full"):
        _measure(Footprint(), handle)
    assert handle.running == [] and "co-x-footprint-docker-bridge-003" in handle.removed
    bench = Footprint()
    bench.configure({"max_containers": 4, "step": 2})
    outcome = _measure(bench, FakeHandle())
    assert outcome.notes["stopped"] == "limit of 4 containers reached"
    assert outcome.notes["containers_reached"] == "4"
    assert {s.sample for s in outcome.samples} == {0, 2, 4}
    assert {s.sample for s in outcome.warmup} == {0}  # the reading before any container
    assert (
        outcome.command
        == "node1$ docker run --detach --name co-x-footprint-docker-bridge-NNN sleep"
    )


def test_a_container_that_cannot_be_removed_fails_the_step():
    handle = FakeHandle()
    handle.stuck = {"co-x-footprint-docker-bridge-001"}
    with pytest.raises(ToolOutputError, match="1 containers could not be removed"):
        _measure(Footprint(), handle)
