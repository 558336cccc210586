"""The clock-step detection (pipeline/collect/session.py ``ClockWatch``) and what a campaign does
with a step during which a realtime clock was stepped: failed, no sample kept, measured again,
its attempt on record."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from pipeline.collect import session
from pipeline.collect.campaign import Profile
from pipeline.collect.modes import MODES
from pipeline.collect.modes.base import Deployment
from pipeline.collect.session import (
    CLOCK_STEP_S,
    CONTROLLER,
    HOST_CLOCKS,
    ClockWatch,
    clock_steps,
    describe_steps,
    parse_host_clocks,
)
from pipeline.data import schema
from tests.unit.test_campaign import _CannedClients, _throughput_campaign

S = 10**9  # ns per second


def test_a_host_reading_is_realtime_minus_boot_time():
    out = "cpu 100 2 ...\nco-clock 1764400000123456789 12345.67\n"
    assert parse_host_clocks(out) == 1764400000123456789 - 12345_670_000_000
    # one decimal, or none, is read as the seconds it says
    assert parse_host_clocks("co-clock 2000000000 1.5") == 2000000000 - 1_500_000_000
    assert parse_host_clocks("co-clock 2000000000 7") == 2000000000 - 7 * S


def test_a_bracketed_host_reading_takes_the_midpoint_and_refuses_a_late_date():
    assert parse_host_clocks("co-clock 2000000000 1.00 1.02") == 2000000000 - 1_010_000_000
    with pytest.raises(ValueError, match="its date ran 0.29 s late"):
        parse_host_clocks("co-clock 2000000000 1.00 1.29")  # a fork that waited for a CPU


def _timeline(monkeypatch, readings: list[tuple[int, int, int]]) -> None:
    """time.monotonic_ns and time.time_ns as the tries of ``readings`` (before, realtime,
    after) give them, in that order: a realtime that is monotonic + 1,000 s throughout."""
    mono = iter([v for before, _, after in readings for v in (before, after)])
    real = iter([realtime for _, realtime, _ in readings])
    monkeypatch.setattr(session.time, "monotonic_ns", lambda: next(mono))
    monkeypatch.setattr(session.time, "time_ns", lambda: next(real))


def test_this_machines_reading_is_bounded_by_two_monotonic_ones(monkeypatch):
    """A thread held off between its two clock readings (descheduled on a loaded host, or
    waiting for the GIL) read one 0.29 s after the other, which a plain difference takes for a
    step of -0.29 s: the reading is retried, and kept only when its bounds are close."""
    late = 290_000_000
    _timeline(monkeypatch, [(0, 1000 * S + late, late), (late, 1000 * S + late + 10, late + 20)])
    assert session.realtime_offset_ns() == 1000 * S  # the second, tight try
    _timeline(monkeypatch, [(i * late, 1000 * S + (i + 1) * late, (i + 1) * late)
                            for i in range(session.READ_TRIES)])  # fmt: skip
    assert session.realtime_offset_ns() is None
    monkeypatch.undo()
    assert session.realtime_offset_ns() is not None  # this machine, now


def test_uncertain_readings_are_no_step(monkeypatch):
    readings = iter([5 * S, None, None, 5 * S, None, 5 * S])
    watch = ClockWatch(offset=lambda: next(readings, 5 * S), sample_s=0.005)
    with watch:
        time.sleep(0.05)
    assert watch.steps() == {}
    readings = iter([None, 5 * S, 5 * S, 8 * S])  # the first certain reading is the start
    watch = ClockWatch(offset=lambda: next(readings, 8 * S), sample_s=0.005)
    with watch:
        time.sleep(0.05)
    assert watch.steps() == {CONTROLLER: 3.0}


@pytest.mark.parametrize("text", ["", "co-clock 1764400000%N 12.00",  # a date without %N
                                  "co-clock 1764400000123456789", "cpu 100 2 5 6"])
def test_what_is_not_a_host_reading_is_refused(text):
    with pytest.raises(ValueError):
        parse_host_clocks(text)


def test_the_host_reading_is_a_shell_command_that_prints_one(tmp_path):
    """The command itself, run here: a reading whose offset is this machine's realtime minus
    boot time, within the uptime's centisecond and the command's own run."""
    import subprocess

    out = subprocess.run(["sh", "-c", HOST_CLOCKS], capture_output=True, text=True,
                         check=True, timeout=10).stdout  # fmt: skip
    boot = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
    assert abs(parse_host_clocks(out) - (time.time_ns() - boot)) < 0.05 * S


def test_only_moves_beyond_the_threshold_are_steps():
    before = {"node1": 0, "node2": 0, "node3": 0, "dc-client": 0}
    after = {"node1": int(0.05 * S), "node2": int(0.15 * S), "node3": -3 * S}
    # node1 slewed (50 ms), node2 and node3 stepped (forward, back); dc-client read once
    assert clock_steps(before, after) == {"node2": 0.15, "node3": -3.0}
    assert CLOCK_STEP_S == 0.1
    assert clock_steps(before, after, threshold_s=5) == {}


def test_the_step_is_described_by_its_largest_move_and_where():
    text = describe_steps({CONTROLLER: 5.002, "node1": -0.2})
    assert text == "clock stepped by +5.00 s during the step (this machine, node1)"
    assert describe_steps({"node2": -3.0}).startswith("clock stepped by -3.00 s")


class _Clock:
    """A realtime-minus-monotonic offset that the test steps."""

    def __init__(self) -> None:
        self.offset = 1_000 * S

    def __call__(self) -> int:
        return self.offset


def test_a_step_undone_inside_the_step_is_seen_on_this_machine():
    clock = _Clock()
    with ClockWatch(offset=clock, sample_s=0.005) as watch:
        clock.offset += 5 * S
        time.sleep(0.05)  # ten samples
        clock.offset -= 5 * S
    assert watch.steps() == {CONTROLLER: 5.0}


def test_a_slewed_clock_and_a_steady_one_are_no_step():
    clock = _Clock()
    with ClockWatch(offset=clock, sample_s=0.005) as watch:
        for _ in range(10):  # 0.5 ms/s over a 2-minute step, in ten moves
            clock.offset += 6_000_000
            time.sleep(0.005)
    assert watch.steps() == {}


def test_a_host_clock_is_judged_on_its_readings_during_the_step():
    readings = {"node1": [10 * S, 10 * S + 2_000_000],  # 2 ms: the readings' own jitter
                "node2": [10 * S, 12 * S, 12 * S],  # stepped forward 2 s and left there
                "node3": [10 * S],  # read once: not judged
                "dc-client": [10 * S, 10 * S - int(0.3 * S), 10 * S]}  # back and forth
    with ClockWatch(lambda: readings, offset=_Clock()) as watch:
        pass
    assert watch.steps() == {"node2": 2.0, "dc-client": -0.3}


def test_the_sampler_stops_with_the_step_even_when_it_raises():
    before = threading.active_count()
    with pytest.raises(RuntimeError), ClockWatch(offset=_Clock(), sample_s=0.005):
        raise RuntimeError("the step failed")
    assert threading.active_count() == before


# -- in a campaign ---------------------------------------------------------------------------


def _stepping_campaign(tmp_path, monkeypatch, stepped_attempts: int):
    """A 1-run native throughput campaign (dc and local, tcp and udp: 4 steps), one sample per
    window; its first step's measured window steps this machine's clock by +5 s and back, on
    the step's first ``stepped_attempts`` measurements. Returns the campaign and that step."""
    campaign = _throughput_campaign(tmp_path, ["native"], Profile(1, 1, 0, 1), 3)
    clock = _Clock()
    monkeypatch.setattr(session, "realtime_offset_ns", clock)
    started = lambda ctx, workload: Deployment(  # noqa: E731
        server=campaign.inv.servers[0], address="10.0.0.1", stop=lambda: None)
    monkeypatch.setattr(MODES["native"], "start", started)
    monkeypatch.setattr(MODES["native"], "available", lambda ctx, path: None)
    monkeypatch.setattr("pipeline.collect.steps.server_cpus", lambda *a: "0-1")
    sample = SimpleNamespace(metric="throughput_bps", unit="bit/s", sample=0, value=1e9, t_ns=None)
    first = campaign.steps[0]
    runs = {"n": 0}

    def run_client(ctx, deployment, client, address, step, row, window, retry=False, kept=1.0):
        if step == first and not window.warmup:
            runs["n"] += 1
            if runs["n"] <= stepped_attempts:
                clock.offset += 5 * S
                time.sleep(0.03)  # the sampler sees it
                clock.offset -= 5 * S
        return "raw", "iperf3 --client 10.0.0.1"

    from pipeline.collect.modes import Context
    from pipeline.collect.session import SessionClock

    monkeypatch.setattr(campaign, "_run_client", run_client)
    monkeypatch.setattr(campaign.benchmark, "parse", lambda variant, raw, window: [sample])
    monkeypatch.setattr(campaign, "_host_rows", lambda ctx, run: [])
    monkeypatch.setattr(campaign, "_headline", lambda row, samples: "")
    ctx = Context(inventory=campaign.inv, pool=_CannedClients(""), campaign=campaign.id)
    campaign._measure_all(ctx, campaign.steps, SessionClock())
    return campaign, first


def test_a_stepped_step_is_failed_without_samples_and_measured_again(tmp_path, monkeypatch):
    campaign, first = _stepping_campaign(tmp_path, monkeypatch, stepped_attempts=1)
    statuses = campaign.data.statuses()
    assert set(statuses.values()) == {"ok"} and len(statuses) == 4
    counts = campaign.data.consolidate()
    attempts = schema.read_table(tmp_path / "attempts.parquet", "runs").to_pylist()
    assert [(a["status"], a["mode"], a["path"]) for a in attempts] == [
        ("failed", first.mode, first.path)]  # fmt: skip
    assert attempts[0]["reason"] == (
        "clock stepped by +5.00 s during the step (this machine): its timings are not kept")
    # each step's samples are one measurement's: a warm-up and a window, one sample each
    samples = schema.read_samples(tmp_path / "samples.parquet")
    assert counts["samples"] == 8 and len(samples) == 8
    key = (samples["path"] == first.path) & (samples["variant"] == first.variant)
    mine = samples[key]
    assert sorted(mine["rep"]) == [0, 1] and sorted(mine["warmup"]) == [False, True]


def test_a_step_stepped_on_every_attempt_stays_failed(tmp_path, monkeypatch):
    """Measured again once in the session, like any failed step: the campaign then stops on
    it (the next session tries again); no sample of it is saved."""
    campaign, first = _stepping_campaign(tmp_path, monkeypatch, stepped_attempts=2)
    assert campaign.data.failed() == [first.key]
    row, samples = campaign.data.earlier(first)
    assert row["reason"].startswith("clock stepped by +5.00 s") and samples == []


def test_the_watch_readings_carry_each_host_clock(tmp_path):
    """A reading's output holds the host's clocks after the interference watch's own lines;
    ``_read`` keeps them for the step's ClockWatch and parses the watch's reading as before."""
    campaign = _throughput_campaign(tmp_path, ["native"], Profile(1, 1, 0, 1), 3)
    campaign._reading = "reading"
    text = "cpu 100 2 5000000000 10000000 10 0 5 900 0 0 0 0\nco-clock 7000000000 2.00\n"
    pool = {"node1": SimpleNamespace(run=lambda *a, **k: SimpleNamespace(stdout=text))}
    host = campaign.inv.servers[0]
    reading = campaign._read(SimpleNamespace(pool=pool), host)
    assert reading.t_ns == 5 * S
    assert campaign._clocks == {"node1": [5 * S]}
