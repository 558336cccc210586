"""The bench scripts' own logic: the duty cycle's ceiling, the lab benches' cases."""

import pytest

from bench import duty_cycle
from pipeline.benchmarks import BENCHMARKS, Benchmark
from pipeline.benchmarks.latency import Latency


def test_latency_ceiling_is_windows_against_windows_plus_sockperfs_fixed_time():
    # session 7's quick latency campaign: 1094 s of windows over 168 measurements, one sockperf
    # run each (warm-up in the window), 2.0 s sleep + 0.45 s discarded + 0.1 s drain per run
    assert Latency.tool_fixed_seconds == pytest.approx(2.55)
    assert duty_cycle.ceiling(1094.0, 168, "latency") == pytest.approx(1094 / (1094 + 168 * 2.55))


def test_no_ceiling_without_fixed_tool_time_or_measurements():
    assert duty_cycle.ceiling(510.0, 108, "throughput") is None
    assert duty_cycle.ceiling(0.0, 0, "latency") is None
    assert duty_cycle.ceiling(10.0, 1, "not-a-benchmark") is None


def test_a_separate_warmup_run_pays_the_fixed_time_twice(monkeypatch):
    class Slow(Benchmark):
        name = "slow"
        tool_fixed_seconds = 1.0  # warmup_in_window False: warm-up and window are two runs

    monkeypatch.setitem(BENCHMARKS, "slow", Slow)
    assert duty_cycle.ceiling(10.0, 5, "slow") == pytest.approx(10 / (10 + 5 * 2 * 1.0))


def test_an_unknown_lab_bench_case_is_a_usage_error_before_the_lab_comes_up(monkeypatch, capsys):
    import argparse

    from bench import _lab

    monkeypatch.setattr(_lab.lab, "up", lambda: pytest.fail("the lab must not come up"))
    with pytest.raises(SystemExit) as exit_:
        _lab.cases_on_the_lab(argparse.ArgumentParser(prog="x"), "latency,nope", {"latency": 1})
    assert exit_.value.code == 2
    assert "unknown case(s) ['nope']; have latency" in capsys.readouterr().err
