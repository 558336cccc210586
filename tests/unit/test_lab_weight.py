"""The lab's CPU weight (pipeline/lab/weight.py) on a fake cgroup tree: which groups get which
weight, which processes move, what down gives back."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.lab import weight
from pipeline.lab.topology import CGROUP_PARENT, HOSTS


@pytest.fixture
def v1(tmp_path, monkeypatch) -> Path:
    """A cgroup v1 root with a cpu hierarchy (cpu.shares at its root) and one Kubernetes node's
    cgroup root; no lab process runs (no network namespace exists)."""
    cpu = tmp_path / "cpu"
    cpu.mkdir()
    (cpu / "cpu.shares").write_text("1024\n")
    (cpu / "co-k8s-node2").mkdir()
    monkeypatch.setattr(weight, "ROOT", tmp_path)
    monkeypatch.setattr(weight, "_members", lambda: {})
    return cpu


def test_the_lab_podman_and_kubernetes_groups_get_the_largest_weight(v1):
    done = weight.ensure()
    assert done == {"weight": "cpu.shares", "value": 262144, "moved": 0,
                    "groups": [CGROUP_PARENT, "libpod_parent", "co-k8s-node2"]}  # fmt: skip
    assert (v1 / CGROUP_PARENT / "cpu.shares").read_text() == "262144"
    assert {p.name for p in (v1 / CGROUP_PARENT).iterdir()} >= {h.name for h in HOSTS}
    assert weight.state() == {CGROUP_PARENT: 262144, "libpod_parent": 262144,
                              "co-k8s-node2": 262144}  # fmt: skip
    weight.release()  # down: podman's group outlives the lab, at the default again
    assert (v1 / "libpod_parent" / "cpu.shares").read_text() == "1024"
    assert weight.ensure()["value"] == 262144  # idempotent


def test_a_host_s_processes_in_the_root_group_move_below_the_lab(v1, monkeypatch):
    host = HOSTS[0].name
    where = {101: "/", 102: f"/{CGROUP_PARENT}/{host}/abc", 103: "/"}
    monkeypatch.setattr(weight, "_members", lambda: {host: {101, 102}})
    monkeypatch.setattr(weight, "_cpu_cgroup", lambda pid, kind: where[pid])
    (v1 / CGROUP_PARENT / host).mkdir(parents=True)
    procs = v1 / CGROUP_PARENT / host / "cgroup.procs"
    written = []
    real_write = Path.write_text

    def record(self, text, *a, **k):  # a cgroup.procs file takes one pid per write
        if self == procs:
            written.append(int(text))
        return real_write(self, text, *a, **k)

    monkeypatch.setattr(Path, "write_text", record)
    assert weight.ensure()["moved"] == 1
    assert written == [101]  # not a container's process (102), not a stranger (103)


def test_the_cpu_line_of_proc_cgroup(tmp_path, monkeypatch):
    text = "10:hugetlb:/\n2:cpuacct:/\n1:cpu:/container-overhead-lab/node1\n0::/\n"
    real = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: text
                        if str(self) == "/proc/7/cgroup" else real(self, *a, **k))  # fmt: skip
    assert weight._cpu_cgroup(7, "v1") == "/container-overhead-lab/node1"
    assert weight._cpu_cgroup(7, "v2") == "/"


def test_no_cpu_controller_is_said(tmp_path, monkeypatch):
    monkeypatch.setattr(weight, "ROOT", tmp_path)
    assert weight.ensure() == {"weight": "unavailable", "reason": f"no cpu controller under "
                                                                  f"{tmp_path}"}  # fmt: skip
    assert weight.state() == {}
