"""The bench scripts' own logic: the duty cycle's ceiling, the lab benches' cases."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from harness import duty_cycle, precision
from pipeline.benchmarks import BENCHMARKS, Benchmark
from pipeline.benchmarks.latency import Latency
from pipeline.collect import planning


def test_latency_ceiling_is_windows_against_windows_plus_sockperfs_fixed_time():
    # 1094 s of windows over 168 measurements, one sockperf run each (warm-up in the window),
    # 0.15 s start-up + 0.45 s discarded + 0.1 s drain per run
    assert Latency.tool_fixed_seconds == pytest.approx(0.7)
    assert duty_cycle.ceiling(1094.0, 168, "latency") == pytest.approx(1094 / (1094 + 168 * 0.7))


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

    from harness import _lab

    monkeypatch.setattr(_lab.lab, "up", lambda: pytest.fail("the lab must not come up"))
    with pytest.raises(SystemExit) as exit_:
        _lab.cases_on_the_lab(argparse.ArgumentParser(prog="x"), "latency,nope", {"latency": 1})
    assert exit_.value.code == 2
    assert "unknown case(s) ['nope']; have latency" in capsys.readouterr().err


# A sockperf 3.7 --full-log file as the client writes it (a 180 s run on the lab, cut short).
FULL_LOG = """------------------------------
test was performed using the following parameters: --mps=600000 --burst=1 --reply-every=1 --msg-size=14 --time=180
------------------------------
sockperf: [Total Run] RunTime=180.000 sec; Warm up time=400 msec; SentMessages=3138344; ReceivedMessages=3138343
------------------------------
packet, txTime(sec), rxTime(sec), latency(usec)
0, 3.303628489, 3.303707246, 39.378
1, 3.303707286, 3.303830880, 61.797
2, 3.303830950, 3.303889137, 29.094
------------------------------
"""  # noqa: E501 (verbatim)


def test_window_noise_reads_every_round_trip_of_a_full_log(tmp_path):
    from harness import window_noise

    path = tmp_path / "log.csv"
    path.write_text(FULL_LOG)
    t, rtt = window_noise.read_full_log(path)
    assert t == pytest.approx([0.0, 3.303707286 - 3.303628489, 3.303830950 - 3.303628489])
    assert rtt == pytest.approx([78.757, 123.594, 58.187], abs=1e-3)  # rx - tx, not latency/2


def test_window_noise_is_zero_for_a_steady_run_and_grows_with_state_changes():
    import numpy as np

    from harness import window_noise

    t = np.arange(0, 100, 0.001)  # 1,000 round trips a second for 100 s
    assert window_noise.stretch_noise(t, np.full(t.size, 50.0), 1.0, 5.0, 50) == 0.0
    # 10 s states alternating 50 / 60 us: short windows often fall in different states,
    # windows longer than a state average over both
    noise = np.random.default_rng(0).normal(0, 1, t.size)
    states = np.where((t // 10) % 2 == 0, 50.0, 60.0) + noise
    short = window_noise.stretch_noise(t, states, 0.5, 5.0, 400)
    long = window_noise.stretch_noise(t, states, 20.0, 5.0, 400)
    assert short > 0.05 > long
    with pytest.raises(ValueError, match="no two 60.0 s stretches"):
        window_noise.stretch_noise(t, states, 60.0, 5.0, 10)


def test_rounds_needed_for_a_one_percent_half_width():
    from harness import window_noise

    # SD 0.027 (10 s windows here): (1.645 * 0.027 / 0.01)^2 = 19.7 -> 20 rounds
    assert window_noise.rounds_needed(0.027) == 20
    assert window_noise.rounds_needed(0.10) == 271


def test_window_noise_names_a_missing_full_log_with_the_clients_output(tmp_path):
    from harness import window_noise

    with pytest.raises(RuntimeError, match="no full log.*Connection refused"):
        window_noise.read_full_log(tmp_path / "absent.csv", "sockperf: ERROR: Connection refused")
    (tmp_path / "empty.csv").write_text("sockperf: no messages\n")
    with pytest.raises(RuntimeError, match="no full log"):
        window_noise.read_full_log(tmp_path / "empty.csv")
    header_only = FULL_LOG.split("0, 3.3036")[0] + "------------------------------\n"
    (tmp_path / "header.csv").write_text(header_only)
    with pytest.raises(RuntimeError, match="holds no round trip"):
        window_noise.read_full_log(tmp_path / "header.csv")


def test_window_noise_rejects_malformed_lengths_before_the_lab_comes_up(capsys):
    from harness import window_noise

    with pytest.raises(SystemExit) as exit_:
        window_noise.main(["--lengths", "1,two"])
    assert exit_.value.code == 2
    assert "--lengths takes seconds separated by commas" in capsys.readouterr().err


def test_analysis_time_tells_changed_numbers_from_changed_figures():
    from harness import analysis_time

    before = {"reports/tables/noise.csv": "a", "data/processed/noise/noise_summary.parquet": "b",
              "figures/cpu/cpu.png": "c", "reports/metrics.json": "d"}  # fmt: skip
    same = dict(before)
    assert analysis_time.compare(same, before) == ([], [])
    after = {**before, "reports/tables/noise.csv": "x", "figures/cpu/cpu.png": "y"}
    del after["reports/metrics.json"]
    numbers, figures = analysis_time.compare(after, before)
    assert numbers == ["reports/metrics.json", "reports/tables/noise.csv"]
    assert figures == ["figures/cpu/cpu.png"]


def _tcp_samples(windows: dict):
    """Samples of measured TCP windows: {(mode, run): (received bit/s, [interval bit/s])}."""
    import pandas as pd

    rows = []
    for (mode, run), (received, intervals) in windows.items():
        key = {"environment": "lab", "mode": mode, "path": "dc", "run": run, "rep": 1,
               "variant": "tcp", "warmup": False}  # fmt: skip
        rows.append({**key, "metric": "tcp_throughput_received", "sample": 0, "value": received})
        rows += [{**key, "metric": "tcp_throughput", "sample": i, "value": v}
                 for i, v in enumerate(intervals)]  # fmt: skip
    return pd.DataFrame(rows)


def test_throughput_estimators_treat_the_start_as_stated():
    from harness import throughput_estimators as te

    # a slow start (half rate for the first interval), then steady at 10
    samples = _tcp_samples({("native", 1): (9.0, [5.0, 10.0, 10.0, 10.0, 9.0])})
    (w,) = te.per_window(samples).itertuples()
    assert w.received == 9.0 and w.interval_median == 10.0
    assert w.trimmed_mean == pytest.approx(39 / 4) and w.steady_mean == pytest.approx(39 / 4)
    # a steady window is kept whole by the transient detector
    steady = _tcp_samples({("native", 1): (9.0, [10.0, 9.0, 10.0])})
    (w,) = te.per_window(steady).itertuples()
    assert w.steady_mean == pytest.approx(29 / 3) and w.trimmed_mean == pytest.approx(19 / 2)


def test_throughput_estimator_rule_needs_both_known_answers():
    import json

    import pandas as pd

    from harness import throughput_estimators as te
    from pipeline.analysis.instrument import tbf_goodput_mbit

    truth = tbf_goodput_mbit(100, 1500, "tcp") * 1e6
    windows = {}
    for run, (noise, start) in enumerate([(1.00, 0.5), (1.01, 0.6), (0.99, 0.5), (1.0, 0.7)], 1):
        # native and its twin: steady intervals, received totals noisier (slow starts)
        windows[("native", run)] = (10e9 * noise, [10e9, 10e9, 10e9])
        windows[("native-aa", run)] = (10e9 * (2 - noise), [10e9, 10e9, 10e9])
        # the cap: received at the truth, the sender's intervals over it at the start
        windows[("native-tbf", run)] = (truth, [truth / start, truth, truth])
    runs = pd.DataFrame([{"mode": "native-tbf", "variant": "tcp",
                          "notes": json.dumps({"mtu": 1500, "tbf_rate_mbit": 100})}])  # fmt: skip
    table = te.criteria(te.per_run(te.per_window(_tcp_samples(windows))), runs)
    assert table.loc["received", "tbf_error_pct"] == pytest.approx(0, abs=1e-9)
    assert table.loc["interval_median", "tbf_error_pct"] == pytest.approx(0, abs=1e-9)
    assert table.loc["trimmed_mean", "tbf_error_pct"] == pytest.approx(0, abs=1e-9)
    assert table.loc["steady_mean", "aa_sd_pct"] == 0 and table.loc["received", "aa_sd_pct"] > 0
    chosen, why = te.choose(table)
    assert chosen in ("interval_median", "trimmed_mean", "steady_mean"), why
    # too few A/A runs: no choice
    few = {k: v for k, v in windows.items() if k[1] <= 2}
    table = te.criteria(te.per_run(te.per_window(_tcp_samples(few))), runs)
    assert te.choose(table)[0] is None
    # no tbf cap in the campaign: no choice either (not a cap recovered by default)
    no_cap = {k: v for k, v in windows.items() if k[0] != "native-tbf"}
    table = te.criteria(te.per_run(te.per_window(_tcp_samples(no_cap))), runs.iloc[:0])
    assert te.choose(table) == (None, "no tbf cap measured: no choice")


def test_precision_pairs_only_runs_both_measured_and_the_block_asked_for():
    per_run = pd.DataFrame(
        {
            "mode": ["native", "native-aa", "native", "native-aa", "native"],
            "run": [1, 1, 2, 2, 3],
            "value": [10.0, 11.0, 20.0, 18.0, 30.0],
        }
    )
    x, y = precision.paired(per_run, "native-aa")
    assert x.tolist() == [11.0, 18.0] and y.tolist() == [10.0, 20.0]
    x, y = precision.paired(per_run, "native-aa", [2, 3])
    assert x.tolist() == [18.0] and y.tolist() == [20.0]


def test_precision_runs_for_the_margin_put_the_90_percent_interval_inside_half_the_margin():
    sd = 0.05
    n = precision.runs_for_margin(sd)
    room = math.log1p(precision.MARGIN) / 2
    assert planning.half_width(sd, n, 0.90) <= room < planning.half_width(sd, n - 1, 0.90)
    assert precision.runs_for_margin(float("nan")) is None


def test_precision_windows_cost_from_the_second_window_on_and_the_run_is_the_rest():
    # two steps of 3 windows: window 1 starts with the warm-up (longer), windows 2 -> 3 take
    # 4 s and 5 s; steps last 20 s and 22 s
    starts = pd.DataFrame({1: [0.0, 0.0], 2: [9e9, 9e9], 3: [13e9, 14e9]})
    run_s, window_s = precision.costs(starts, pd.Series([20.0, 22.0]))
    assert window_s == pytest.approx(4.5)
    assert run_s == pytest.approx(21.0 - 3 * 4.5)
    with pytest.raises(RuntimeError, match="at least 3 windows"):
        precision.costs(starts[[1, 2]], pd.Series([20.0, 22.0]))


def test_duty_cycle_reports_every_campaign_named_as_the_interference_table_names_it(tmp_path):
    record = {"wall_s": 10.0, "window_s": 8.0, "steps": 2, "per_step_overhead_s": 1.0,
              "duty_cycle": 0.8}  # fmt: skip
    for where in ("throughput/lab", "instrument/lab/throughput/lab",
                  "wan_calibration/delay_20ms/latency/lab", "latency/lab/superseded/abc"):
        (tmp_path / where).mkdir(parents=True)
        (tmp_path / where / "runs.parquet").write_bytes(b"")
        (tmp_path / where / "campaign.json").write_text(json.dumps(record))
    rows = duty_cycle.report(tmp_path, None)
    assert sorted((r["benchmark"], r["tool_of"]) for r in rows) == [
        ("latency (WAN calibration, delay_20ms)", "latency"),
        ("throughput", "throughput"),
        ("throughput (instrument check)", "throughput"),
    ]


def test_precision_fixed_campaign_of_the_same_lab_time(tmp_path):
    # a planned campaign: the cheap dc cell 6 runs of 10 s, the dear Internet one 3 of 30 s;
    # a whole round costs 40 s, so 150 s buy a fixed campaign of 4 runs (3.75)
    t0 = pd.Timestamp("2026-01-01", tz="UTC")
    rows = [("native", "dc", 10.0)] * 6 + [("native", "internet", 30.0)] * 3
    frame = pd.DataFrame({"mode": [r[0] for r in rows], "path": [r[1] for r in rows],
                          "variant": "udp", "started_at": t0,
                          "ended_at": [t0 + pd.Timedelta(seconds=r[2]) for r in rows]})  # fmt: skip
    frame.to_parquet(tmp_path / "runs.parquet")
    assert precision.same_lab_time_runs(tmp_path) == 4


def test_precision_half_widths_pair_within_each_path():
    values = pd.DataFrame({
        "mode": ["native", "native-aa"] * 6,
        "path": ["dc"] * 6 + ["internet"] * 6,
        "run": [1, 1, 2, 2, 3, 3] * 2,
        "value": [10.0, 10.0, 10.0, 11.0, 10.0, 12.0, 40.0, 40.0, 40.0, 40.0, 40.0, 40.0],
    })  # fmt: skip
    out = precision.half_widths(values, ["native", "native-aa"])
    d = np.log([1.0, 1.1, 1.2])
    assert out[("native-aa", "dc")] == (3, pytest.approx(planning.half_width(
        float(d.std(ddof=1)), 3, precision.CONFIDENCE)))  # fmt: skip
    assert out[("native-aa", "internet")] == (3, 0.0)


def test_latency_parse_bench_builds_a_log_the_parser_accepts_whole_and_counted():
    from harness import latency_parse
    from pipeline.benchmarks.latency import parse_sockperf_full_log

    text = latency_parse.output(5_000)
    whole = parse_sockperf_full_log(text, "udp_rtt")
    assert len(whole) == 5_000 and all(s.value == 20.0 for s in whole)  # 20 us each, by build
    assert parse_sockperf_full_log(text, "udp_rtt", limit=100) == whole[:100]
