"""The orchestration probe's output (captured verbatim on the lab from
pipeline/collect/host_scripts/orchestration_probe.py) parsed into timed results; timeouts and
failed docker
commands are failures, not numbers."""

import struct
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipeline.benchmarks import BENCHMARKS, ToolOutputError, orchestration
from pipeline.benchmarks.orchestration import (
    ProbeResult,
    _Commands,
    parse_probe,
    placement,
    replicas,
)
from pipeline.collect.host_scripts import orchestration_probe as probe

DATA = Path(__file__).parent / "data"


def _raw(name: str) -> str:
    return (DATA / f"orchestration-{name}.txt").read_text()


def test_create_is_the_time_until_the_one_replica_accepts():
    r = parse_probe(_raw("create"))
    assert (r.seconds, r.accepted, r.want, r.records) == (2.3522, 1, 1, 1)
    assert r.accepts == [(2.3522, "10.201.2.60")]
    # the probe polled about every 10 ms while the name did not resolve yet
    assert 0.008 < r.seconds / r.polls < 0.03


def test_scale_counts_the_running_replica_and_ends_at_the_tenth():
    r = parse_probe(_raw("scale-10"))
    assert r.accepted == r.want == r.records == 10
    assert r.seconds == 3.2574 == max(t for t, _ in r.accepts)
    assert r.accepts[0] == (0.009, "10.201.2.60")  # the replica before the scale
    assert len({a for _, a in r.accepts}) == 10


def test_rolling_update_counts_the_new_tasks_one_after_another():
    r = parse_probe(_raw("update-10"))
    assert r.accepted == r.want == 10
    times = [t for t, _ in r.accepts]
    assert times == sorted(times) and r.seconds == times[-1]
    # parallelism 1, stop-first: replicas come up one at a time, never all at once
    assert min(b - a for a, b in zip(times, times[1:], strict=False)) > 0.1
    assert r.seconds > 10 * min(b - a for a, b in zip(times, times[1:], strict=False))


def test_settle_output_parses():
    r = parse_probe(_raw("settle"))
    assert (r.accepted, r.want, r.records, r.polls) == (1, 1, 1, 1)


def test_timeout_is_a_failure_naming_the_counts():
    with pytest.raises(ToolOutputError, match="only 10 of 12 replicas .* within 2 s"):
        parse_probe(_raw("timeout"))


def test_failed_docker_command_is_a_failure_with_its_error():
    with pytest.raises(ToolOutputError, match="service dev-orchestration-nosuch not found"):
        parse_probe(_raw("command-failed"))


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "done 1.0 accepted=1 want=1 records=1 polls=3\n",  # no header: not the probe's output
        _raw("create").replace("probe 1 ", "probe 2 "),  # another output format
        _raw("create").replace("accepted=1 want=1", "accepted=0 want=1"),
    ],
)
def test_output_that_is_not_a_result_is_rejected(raw):
    with pytest.raises(ToolOutputError):
        parse_probe(raw)


def test_variants_run_at_the_cap():
    assert replicas("create", 5) == 1
    assert replicas("scale-10", 50) == 10
    assert replicas("scale-50", 20) == 20
    assert replicas("update-10", 3) == 3
    for bad in ("scale", "create-3", "rollback-10"):
        with pytest.raises(ValueError):
            replicas(bad, 10)


def test_placement_counts_tasks_per_node():
    assert placement("node2\nnode1\nnode2\n\nnode3\n") == "node1=1,node2=2,node3=1"


def test_benchmark_contract():
    bench = BENCHMARKS["orchestration"]()
    assert bench.kind == "scenario" and bench.modes == ("swarm-overlay", "k8s-pod")
    assert bench.variants == ("create", "scale-10", "scale-50", "update-10")
    assert bench.uploads and all(p in bench.image_paths() for p in bench.uploads)
    bench.configure({"max_replicas": 5, "repeats": 1})
    assert bench.options["max_replicas"] == 5 and bench.options["update_order"] == "stop-first"
    with pytest.raises(ValueError):
        bench.configure({"replicas": 5})


def test_dns_answer_with_fifty_addresses_is_read_whole():
    """Docker answers tasks.<service> with one A record per task; 50 need EDNS0's 4096 bytes."""
    qid = 4242
    query = probe.dns_query("tasks.svc", qid)
    assert query[-11:-8] == b"\x00\x00\x29" and struct.unpack(">H", query[-8:-6]) == (4096,)
    question = query[12:-11]
    answers = b"".join(
        b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 600, 4) + bytes([10, 0, 1, i])
        for i in range(2, 52)
    )
    reply = struct.pack(">HHHHHH", qid, 0x8180, 1, 50, 0, 0) + question + answers
    assert len(reply) > 512
    found = probe.parse_a_records(reply, qid)
    assert found == [f"10.0.1.{i}" for i in range(2, 52)]
    assert probe.parse_a_records(reply, qid + 1) is None  # another query's answer
    truncated = struct.pack(">HHHHHH", qid, 0x8380, 1, 0, 0, 0) + question
    assert probe.parse_a_records(truncated, qid) is None
    nxdomain = struct.pack(">HHHHHH", qid, 0x8183, 1, 0, 0, 0) + question
    assert probe.parse_a_records(nxdomain, qid) == []


def test_watch_source_times_the_command_until_the_watched_addresses_accept(tmp_path):
    """The probe with ``--watch`` (the Kubernetes way), run for real: a fake watch prints a pod
    without an address, then with one, then a second pod, a pod that goes away and an event
    line it must ignore; two loopback listeners accept. The probe is done when both watched
    addresses accept, and the command after ``--`` ran."""
    import socket
    import subprocess
    import sys

    listeners = []
    for address in ("127.0.0.2", "127.0.0.3"):
        s = socket.socket()
        s.bind((address, 0 if not listeners else listeners[0].getsockname()[1]))
        s.listen()
        listeners.append(s)
    port = listeners[0].getsockname()[1]
    watch = tmp_path / "watch.sh"
    watch.write_text(
        "#!/bin/sh\n"
        "echo 'ADDED p1'; sleep 0.3; echo 'MODIFIED p1 127.0.0.2'\n"
        "echo 'ADDED gone 127.0.0.9'; echo 'DELETED gone 127.0.0.9'; echo 'BOOKMARK x'\n"
        "sleep 0.3; echo 'ADDED p2 127.0.0.3'; sleep 30\n"
    )
    watch.chmod(0o755)
    marker = tmp_path / "ran"
    script = Path(probe.__file__)
    argv = [sys.executable, str(script), "--watch", str(watch), "--watch-start", "0.1",
            "--port", str(port), "--want", "2", "--timeout", "10", "--interval", "0.01",
            "--", "touch", str(marker)]  # fmt: skip
    out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    for s in listeners:
        s.close()
    assert out.returncode == 0, out.stdout + out.stderr
    result = parse_probe(out.stdout)
    assert marker.exists()
    assert sorted(a for _, a in result.accepts) == ["127.0.0.2", "127.0.0.3"]
    assert result.records == 2  # the deleted pod is not counted
    assert 0.3 < result.seconds < 5
    assert "name=watch" in out.stdout.splitlines()[0]


class _Timeline(_Commands):
    """The variants' loops over an orchestrator whose every call takes ``cost`` seconds of a
    fake clock: timed operations report theirs, the steps between them advance the clock."""

    def __init__(self, cost: float):
        self.s, self.cost, self.calls, self.clock = SimpleNamespace(prefix="co-x"), cost, [], 0.0

    def _spend(self, what: str) -> None:
        self.calls.append(what)
        self.clock += self.cost

    def run(self, argv, **_):
        self._spend("run")

    def create_command(self, name, count, port):
        return ["create"]

    def scale_command(self, name, count):
        return ["scale"]

    def update_command(self, name, port):
        return ["update"]

    def remove(self, name):
        self._spend("remove")

    def record_placement(self, name):
        pass

    def probe_run(self, name, want, port, command, mode="accept"):
        self._spend(mode)
        return ProbeResult(self.cost, want, want, want, 1, [])


@pytest.mark.parametrize(("variant", "untimed"), [
    ("create", ["remove"] * 3),  # each service removed before the next create
    ("scale", ["run", "settle"] * 2),  # back to one replica between repetitions
    ("update", ["settle"] * 3),  # the old replicas out of the addresses
])  # fmt: skip
def test_the_steps_between_timed_operations_are_the_scenarios_own_time(monkeypatch, variant,
                                                                        untimed):  # fmt: skip
    step = _Timeline(cost=2.0)
    monkeypatch.setattr(orchestration.time, "monotonic", lambda: step.clock)
    results = getattr(step, variant)(10, 3)
    assert [r.seconds for r in results] == [2.0] * 3  # the timed spans, kept
    assert [c for c in step.calls if c != "accept"] == untimed  # what ran between them
    assert step.untimed_s == pytest.approx(2.0 * len(untimed))
    with step.untimed():  # the teardown is counted the same way (Orchestration.measure)
        step.remove("co-x-c1")
    assert step.untimed_s == pytest.approx(2.0 * (len(untimed) + 1))
