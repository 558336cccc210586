"""The lab's CPU placement arithmetic (the cgroup writes themselves are tested on the lab:
tests/integration/test_lab.py), and how a campaign records and reports it."""

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from pipeline.analysis import article
from pipeline.collect.campaign import duty_cycle
from pipeline.lab import cpus


@pytest.mark.parametrize("text", ["0", "0-1", "0-2,4", "1,3,5-7"])
def test_cpu_lists_read_and_write_as_the_kernel_spells_them(text):
    assert cpus.fmt(cpus.parse(text)) == text


def test_parse_reads_ranges_and_single_cpus():
    assert cpus.parse("0-2,4\n") == [0, 1, 2, 4]
    assert cpus.parse("") == []


@pytest.mark.parametrize(
    ("machine", "server", "client"),
    [([0, 1], [0], [1]), ([0, 1, 2, 3], [0, 1], [2, 3]), ([0, 1, 2], [0], [1, 2])],
)
def test_split_gives_the_two_sides_disjoint_halves(monkeypatch, machine, server, client):
    monkeypatch.setattr(cpus, "machine_cpus", lambda: machine)
    split = cpus.plan("split")
    assert {split[h.name] == server for h in cpus.SERVER_SIDE} == {True}
    assert {split[h.name] == client for h in cpus.CLIENT_SIDE} == {True}
    assert all(v == machine for v in cpus.plan("shared").values())
    with pytest.raises(ValueError, match="placement must be one of"):
        cpus.plan("pinned")


def test_duty_cycle_lists_each_distinct_placement_once():
    split = {"placement": "split", "cpus": {"node1": "0", "dc-client": "1"}}
    sessions = [
        {"wall_s": 10, "window_s": 8, "steps": 1, "placement": split},
        {"wall_s": 10, "window_s": 8, "steps": 1, "placement": dict(split)},
        {"wall_s": 10, "window_s": 8, "steps": 1},  # recorded before placement existed
    ]
    assert duty_cycle(sessions)["placements"] == [split]


def test_methods_say_where_the_hosts_ran():
    split = {"placement": "split", "cpus": {"node1": "0", "dc-client": "1"}}
    assert article._placement([split]) == "; servers' hosts on CPU 0, clients' hosts on CPU 1"
    missing = {"placement": "unavailable", "reason": "no cgroup v1 cpuset hierarchy"}
    assert article._placement([missing]) == (
        "; CPU placement not applied: no cgroup v1 cpuset hierarchy"
    )
    assert article._placement([]) == ""


@pytest.mark.parametrize("machine", [[0, 1], [0, 1, 2, 3], [2, 5]])
def test_colocated_puts_every_host_on_the_last_cpu(monkeypatch, machine):
    monkeypatch.setattr(cpus, "machine_cpus", lambda: machine)
    placed = cpus.plan("colocated")
    assert set(placed) == {h.name for h in cpus.SSH_HOSTS}
    assert all(v == machine[-1:] for v in placed.values())


def test_the_methods_name_the_colocated_cpu():
    colocated = {"placement": "colocated", "cpus": {"node1": "1", "dc-client": "1"}}
    assert article._placement([colocated]) == "; every host on CPU 1"


@pytest.mark.parametrize(
    ("cpuset", "host"),
    [("/container-overhead-lab/node1", "node1"),
     ("/container-overhead-lab/node2/docker/0123abcd", "node2"),
     ("/libpod_parent/libpod-0123abcd", "node1"), ("/", ""), ("/user.slice", "")],
)  # fmt: skip
def test_a_process_belongs_to_the_host_whose_cpuset_group_holds_it(cpuset, host):
    assert cpus._host_of(cpuset + "\n") == host


def _pinned_sleeper(tmp_path, cpu: int):
    """A shell under a name of its own (the kernel names a process after the file it
    executed), pinned to ``cpu``: busy for a moment, then waiting for its `sleep`."""
    name = f"co-pin-{os.getpid() % 10**6}"
    exe = tmp_path / name
    exe.symlink_to(shutil.which("sh"))
    proc = subprocess.Popen([str(exe), "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done;"
                             " sleep 5"], preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    return name, proc


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_running_reads_the_cpu_a_pinned_process_runs_on(tmp_path):
    cpu = max(os.sched_getaffinity(0))
    name, proc = _pinned_sleeper(tmp_path, cpu)
    try:
        with cpus.watching([name], interval_s=0.01) as watch:
            time.sleep(0.3)
            seen = cpus.running([name])
    finally:
        proc.kill()
        proc.wait()
    assert seen and {c for h, n, c in seen if n == name} == {cpu}
    assert watch.samples >= 5 and watch.ran == {("", name): {cpu}}


def test_a_zombie_runs_nowhere(tmp_path):
    """An exited process its parent has not reaped yet (a stopped server awaiting the host's
    init) is not seen running, though /proc still lists it under its name."""
    name, proc = _pinned_sleeper(tmp_path, max(os.sched_getaffinity(0)))
    try:
        time.sleep(0.2)
        assert cpus.running([name])
        proc.kill()
        deadline = time.monotonic() + 5
        while Path(f"/proc/{proc.pid}/stat").read_text().rsplit(") ", 1)[1][0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert Path(f"/proc/{proc.pid}/comm").read_text().strip() == name  # still listed
        assert cpus.running([name]) == []
    finally:
        proc.kill()
        proc.wait()


class _Placer:
    """The lab's placer as a campaign sees it: it records what it was asked."""

    def __init__(self, reason: str | None = None) -> None:
        self.asked: list[str] = []
        self.reason = reason

    def __call__(self, placement: str) -> dict:
        self.asked.append(placement)
        if self.reason:
            return {"placement": "unavailable", "reason": self.reason}
        return {"placement": placement, "cpus": {"node1": "1", "dc-client": "1"}}


def _campaign(bench, placer, **kw):
    from pipeline.collect import inventory
    from pipeline.collect.campaign import Campaign, Profile
    from pipeline.collect.modes import MODES

    inv = inventory.load(Path(__file__).parents[2] / "inventory" / "lab.yaml", MODES,
                         check_files=False)  # fmt: skip
    return Campaign(bench, inv, Profile(2, 1, 0, 1, count=10), Path("/nonexistent"), seed=1,
                    modes=["native", "docker-bridge"], log=lambda _: None, placer=placer,
                    **kw)  # fmt: skip


def test_a_network_campaign_takes_its_placement_from_the_benchmark_and_records_it():
    from pipeline.benchmarks.cpu import Cpu
    from pipeline.benchmarks.latency import Latency

    bench = Latency()
    placer = _Placer()
    campaign = _campaign(bench, placer)
    assert campaign.placement == bench.options["placement"]
    assert campaign.meta["placement"] == bench.options["placement"]
    assert campaign._place()["placement"] == bench.options["placement"]
    # every run's notes ({**meta, **deployment notes}) carry what the session applied
    assert campaign.meta["placement_cpus"] == {"node1": "1", "dc-client": "1"}
    campaign._unplace()
    assert placer.asked == [bench.options["placement"], "shared"]
    ids = {p: _campaign(Latency(), _Placer(), placement=p).id for p in cpus.PLACEMENTS}
    assert len(set(ids.values())) == len(cpus.PLACEMENTS)  # part of the identity
    # a host benchmark sees every CPU and records no placement
    cpu = _campaign(Cpu(), _Placer(), placement="colocated")
    assert cpu.placement == "shared" and "placement" not in cpu.meta


def test_a_placement_not_applied_is_what_the_runs_record():
    from pipeline.benchmarks.latency import Latency

    campaign = _campaign(Latency(), _Placer(reason="no cgroup v1 cpuset hierarchy"))
    campaign._place()
    assert campaign.meta["placement_cpus"] == "not applied: no cgroup v1 cpuset hierarchy"


def test_an_unknown_placement_is_refused():
    from pipeline.benchmarks.latency import Latency
    from pipeline.collect.campaign import CampaignError

    with pytest.raises(CampaignError, match="placement must be"):
        _campaign(Latency(), _Placer(), placement="pinned")
    bench = Latency()
    bench.configure({"placement": "pinned"})
    with pytest.raises(CampaignError, match="placement must be"):
        _campaign(bench, _Placer())


def test_the_placement_bench_reports_each_level_its_ratio_and_threshold():
    import pandas as pd

    from harness import placement as bench

    rows = [
        {"placement": p, "round": r, "run": 1, "mode": "native", "variant": "udp", "value": v}
        for r, (low, high) in enumerate([(6.0, 54.0), (6.5, 60.0), (7.0, float("nan"))])
        for p, v in (("colocated", low), ("split", high))
    ]
    lines = bench.levels(pd.DataFrame(rows), ["colocated", "split"])
    assert lines[0].startswith("levels udp colocated: p50 6.5 us")
    assert "failed windows 0" in lines[0] and "range 6.0-7.0" in lines[0]
    assert lines[1].startswith("levels udp split: p50 57.0 us") and "failed windows 1" in lines[1]
    # the ratio pairs rounds both placements measured: 54/6 and 60/6.5, geometric mean
    ratio = (54 / 6 * 60 / 6.5) ** 0.5
    assert lines[2].startswith(f"levels udp split / colocated: {ratio:.2f} [")
    assert f"threshold (geometric midpoint) {(6.5 * 57.0) ** 0.5:.1f} us" in lines[2]
    assert f"slowest window is {54 / 7:.2f}x below the higher's fastest" in lines[2]
