"""The lab's CPU placement arithmetic (the cgroup writes themselves are tested on the lab:
tests/integration/test_lab.py), and how a campaign records and reports it."""

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
