"""The interference watch: readings parsed and differenced with known answers, a real CPU
hog seen by a real reading of this machine's /proc, and the analysis's flags and counts."""

from __future__ import annotations

import json
import subprocess
import time

import pandas as pd
import pytest

from pipeline.analysis import interference
from pipeline.collect import watch
from pipeline.data import schema
from pipeline.data.interference import Thresholds

HZ = 100


def _text(t_s: float, probe_ms: float, busy: int, steal: int, softirq: int, procs: dict) -> str:
    """A reading as reading_command prints it, on 4 CPUs; procs: (pid, start) -> (ticks, comm)."""
    user = busy - steal - softirq
    lines = [f"cpu {HZ} 4 {int(t_s * 1e9)} {int(probe_ms * 1e6)} "
             f"{user} 0 0 9999 5 0 {softirq} {steal} 0 0"]  # fmt: skip
    lines += [f"pid {p} {s} {t} {c}" for (p, s), (t, c) in procs.items()]
    return "\n".join(lines) + "\n"


def test_parse_reads_the_counters_and_the_other_processes():
    r = watch.parse(_text(10, 12.5, 500, 20, 30, {(7, 100): (40, "make")}))
    assert (r.hz, r.cpus, r.t_ns, r.probe_ns) == (HZ, 4, 10_000_000_000, 12_500_000)
    assert (r.busy, r.steal, r.softirq) == (500, 20, 30)
    assert r.others == {(7, 100): (40, "make")}


@pytest.mark.parametrize("text", ["", "garbage\n", "pid 1 2 3 x\n", "cpu 0 4 1 1 0 0 0 0\n"])
def test_a_bad_reading_is_a_value_error(text):
    with pytest.raises(ValueError):
        watch.parse(text)


def test_interference_counts_what_others_used_in_the_window():
    before = watch.parse(_text(10, 10, 1000, 0, 0, {
        (7, 100): (40, "make"),       # runs through: +150 ticks
        (8, 101): (10, "idle-daemon"),  # runs through, no time
        (9, 102): (500, "gone"),      # exited in the window: not seen
        (11, 50): (70, "old"),        # its pid is reused by another process below
    }))  # fmt: skip
    after = watch.parse(_text(12, 30, 1800, 40, 80, {
        (7, 100): (190, "make"),
        (8, 101): (10, "idle-daemon"),
        (10, 1100): (50, "new"),      # started in the window: counts whole
        (11, 1150): (30, "reused"),   # a new process with an old pid: counts whole
    }))  # fmt: skip
    got = watch.interference(before, after)
    # (150 + 50 + 30) ticks over 2 s at 100 ticks/s = 1.15 CPUs
    assert got["other_cpus"] == pytest.approx(1.15)
    assert got["seconds"] == 2.0 and got["cpus"] == 4
    assert got["busy_share"] == pytest.approx(800 / (HZ * 2 * 4))
    assert got["steal_share"] == pytest.approx(40 / 800)
    assert got["softirq_share"] == pytest.approx(80 / 800)
    assert (got["probe_before_ms"], got["probe_after_ms"]) == (10, 30)
    assert got["top"] == "make 0.75, new 0.25, reused 0.15"


def test_interference_needs_time_to_pass():
    r = watch.parse(_text(10, 10, 1000, 0, 0, {}))
    with pytest.raises(ValueError):
        watch.interference(r, r)


def _read(study: set[str]) -> watch.Reading:
    out = subprocess.run(["bash", "-c", watch.reading_command(study)], capture_output=True,
                         text=True, timeout=30, check=True)  # fmt: skip
    return watch.parse(out.stdout)


def test_a_real_reading_sees_a_cpu_hog_and_not_a_study_process():
    """On this machine: a shell loop burning one CPU for ~1.5 s between two readings is seen
    as other work, by name; the same loop named as the study's is not."""
    hog = ["timeout", "1.5", "sh", "-c", "while :; do :; done"]
    for study, seen in ((set(), True), ({"sh"}, False)):
        before = _read(study)
        proc = subprocess.Popen(hog)
        time.sleep(1.0)
        after = _read(study)
        proc.wait(timeout=10)
        got = watch.interference(before, after)
        hog_cpus = sum(float(t.split()[1]) for t in got["top"].split(", ")
                       if t.startswith("sh "))  # fmt: skip
        if seen:
            assert hog_cpus > 0.3, got
        else:
            assert hog_cpus == 0, got
        # the clock and the counters are read a process start apart
        assert got["probe_before_ms"] > 0 and 0 <= got["busy_share"] <= 1.05


def test_the_study_list_holds_each_benchmarks_tools():
    from pipeline.benchmarks import BENCHMARKS

    names = {n: b().watch_commands() for n, b in BENCHMARKS.items()}
    assert "iperf3" in names["throughput"] and "sockperf" in names["latency"]
    assert {"co-loadgen", "nginx"} <= names["http"] and {"wrk", "haproxy"} <= names["lb"]
    assert "python3" in names["coldstart"]  # its timer is an uploaded script
    assert all(len(n) <= 15 for found in names.values() for n in found)
    assert "sshd" in watch.STUDY_COMMANDS and "sh" not in watch.STUDY_COMMANDS
    # the user-mode network helpers of the rootless and pasta modes, as the kernel names them
    assert {"passt.avx2", "rootlessport", "slirp4netns", "rootlesskit"} <= watch.STUDY_COMMANDS


# ---- the analysis ------------------------------------------------------------------------


def _entry(rep: int, host: str, t_s: float, other: float, probe: float = 10.0,
           steal: float = 0.0) -> dict:  # fmt: skip
    return {"rep": rep, "host": host, "t_ns": int(t_s * 1e9), "seconds": 1.0, "cpus": 2,
            "other_cpus": other, "busy_share": 0.5, "steal_share": steal, "softirq_share": 0.01,
            "probe_before_ms": probe, "probe_after_ms": probe,
            "top": f"hog {other:.2f}" if other else ""}  # fmt: skip


def _raw(tmp_path) -> None:
    """A throughput dataset of 4 steps, each watched on two hosts: step (2, docker-bridge)
    had a 1-CPU hog beside it, step (2, native) a slow probe on its client, step (1,
    docker-bridge) 10% steal; one reading failed."""
    rows = []
    for i, (run, mode) in enumerate([(1, "native"), (1, "docker-bridge"), (2, "native"),
                                     (2, "docker-bridge")]):  # fmt: skip
        hog = 1.0 if (run, mode) == (2, "docker-bridge") else 0.02
        slow = 50.0 if (run, mode) == (2, "native") else 10.0
        steal = 0.10 if (run, mode) == (1, "docker-bridge") else 0.0
        entries = [_entry(1, "node1", 10 * i, hog, steal=steal),
                   _entry(1, "dc-client", 10 * i, 0.01, probe=slow)]  # fmt: skip
        if i == 0:
            entries.append({"rep": 1, "host": "inet-client", "error": "no reading: timed out"})
        rows.append({"environment": "lab", "campaign": "c1", "benchmark": "throughput",
                     "run": run, "order": 1, "mode": mode, "path": "dc", "variant": "tcp",
                     "status": "ok", "watch": json.dumps(entries)})  # fmt: skip
    path = tmp_path / "throughput" / "lab" / "runs.parquet"
    schema.write_table(schema.to_table(rows, schema.RUNS), path)


def test_the_instrument_checks_campaigns_are_read_and_earlier_ones_are_not(tmp_path):
    _raw(tmp_path)
    nested = tmp_path / "instrument" / "lab" / "throughput" / "lab"
    nested.mkdir(parents=True)
    (tmp_path / "throughput" / "lab" / "runs.parquet").rename(nested / "runs.parquet")
    aside = tmp_path / "throughput" / "lab" / "superseded" / "c0"
    _raw(tmp_path)  # the main campaign again, and a copy moved aside
    aside.mkdir(parents=True)
    (aside / "runs.parquet").write_bytes((nested / "runs.parquet").read_bytes())
    calibration = tmp_path / "wan_calibration" / "delay_20ms" / "throughput" / "lab"
    calibration.mkdir(parents=True)
    (calibration / "runs.parquet").write_bytes((nested / "runs.parquet").read_bytes())
    watched = interference.windows(tmp_path)
    assert watched["benchmark"].value_counts().to_dict() == {
        "throughput": 9, "throughput (instrument check)": 9,
        "throughput (WAN calibration, delay_20ms)": 9}


def test_flags_follow_the_thresholds(tmp_path):
    _raw(tmp_path)
    watched = interference.windows(tmp_path)
    assert len(watched) == 9 and watched["error"].notna().sum() == 1
    flags = interference.flag(watched, cpus=0.25, steal=0.05, probe=2.0)
    per = interference.flagged_windows(flags).set_index(["run", "mode"])
    assert per.loc[(2, "docker-bridge"), "why"] == "other processes > 0.25 CPUs"
    assert per.loc[(2, "native"), "why"] == "probe > 2x its median"
    assert per.loc[(1, "docker-bridge"), "why"] == "steal > 5%"
    assert not per.loc[(1, "native"), "flagged"]
    # with looser thresholds only the hog remains
    loose = interference.flag(watched, cpus=0.25, steal=0.5, probe=10.0)
    per = interference.flagged_windows(loose).set_index(["run", "mode"])
    assert per["flagged"].sum() == 1 and per.loc[(2, "docker-bridge"), "flagged"]


def test_summary_table_and_figure(tmp_path):
    _raw(tmp_path)
    flags = interference.flag(interference.windows(tmp_path), cpus=0.25, steal=0.05, probe=2.0)
    summary = interference.summary(flags)
    (row,) = summary.itertuples()
    assert (row.windows, row.flagged, row.readings_failed) == (4, 3, 1)
    assert row.other_cpus_max == 1.0 and row.steal_share_max == 0.10
    assert row.probe_ratio_max == pytest.approx(5.0)
    assert row.beside_flagged.startswith("hog")
    table = interference.table(summary)
    assert table.loc[0, "Flagged"] == "3 (75%)" and table.loc[0, "Readings failed"] == 1
    chart, caption = interference.figure(flags, 0.25)
    spec = chart.to_dict()
    assert "0.25-CPU threshold" in caption and spec["facet"]["field"] == "benchmark"
    assert spec["columns"] == 3


def test_no_watch_gives_empty_frames(tmp_path):
    rows = [{"environment": "lab", "campaign": "c0", "benchmark": "cpu", "run": 1,
             "mode": "native", "path": "host", "variant": "1thread", "status": "ok"}]
    schema.write_table(schema.to_table(rows, schema.RUNS), tmp_path / "cpu" / "lab" /
                       "runs.parquet")  # fmt: skip
    watched = interference.windows(tmp_path)
    assert watched.empty and list(watched.columns) == interference.COLUMNS
    flags = interference.flag(watched, 0.25, 0.05, 2.0)
    assert interference.summary(flags).empty
    assert isinstance(flags, pd.DataFrame)


# ---- collection's decisions: re-measurement settings and the clean-window rule -------------


def test_retries_are_validated_and_reach_the_campaign_settings():
    import copy
    from pathlib import Path

    import yaml

    from pipeline import params

    root = Path(__file__).resolve().parents[2]
    raw = yaml.safe_load((root / "params.yaml").read_text())
    assert params.check_params(raw, root) == []
    loaded = params.load("params.yaml", root=root)
    assert loaded.interference()["interference_retries"] == 2
    assert Thresholds.from_params(loaded.interference()) == Thresholds(
        cpus=0.25, steal=0.05, probe=2.0, retries=2)
    for bad in (-1, 1.5, 11, "two"):
        wrong = copy.deepcopy(raw)
        wrong["analysis"]["interference_retries"] = bad
        problems = params.check_params(wrong, root)
        assert len(problems) == 1 and problems[0].startswith("analysis.interference_retries")
    del raw["analysis"]["interference_retries"]  # optional: the default applies
    assert params.check_params(raw, root) == []
    assert Thresholds.from_params(raw["analysis"]).retries == 2


def _decided(rep: int, attempt: int, why: str, host: str = "node1") -> dict:
    return {**_entry(rep, host, rep, 0.0), "attempt": attempt, "why": why}


def test_flagged_windows_are_left_out_only_where_their_step_has_a_clean_one():
    """Three steps of two windows each: (1, native) one flagged window and one clean, so the
    flagged one is left out; (2, native) both flagged, so both stay (kept flagged); (1,
    docker-bridge) a flag on one host of one window only, and a failed reading on the other."""
    hog = "other processes > 0.25 CPUs"
    watch_of = {
        (1, "native"): [_decided(1, 1, hog), _decided(1, 1, "", "dc-client"),
                        _decided(3, 2, ""), _decided(3, 2, "", "dc-client")],
        (2, "native"): [_decided(1, 1, hog), _decided(3, 2, hog)],
        (1, "docker-bridge"): [_decided(1, 1, ""), _decided(1, 1, hog, "dc-client"),
                               {"rep": 2, "host": "node1", "attempt": 1, "error": "timed out"},
                               _decided(2, 1, "", "dc-client")],
    }  # fmt: skip
    runs = pd.DataFrame([{"environment": "lab", "campaign": "c1", "benchmark": "throughput",
                          "run": run, "mode": mode, "path": "dc", "variant": "tcp",
                          "status": "ok", "watch": json.dumps(entries)}
                         for (run, mode), entries in watch_of.items()])  # fmt: skip
    flags = schema.window_flags(runs).set_index(["run", "mode", "rep"])
    assert flags["flagged"].to_dict() == {
        (1, "native", 1): True, (1, "native", 3): False, (2, "native", 1): True,
        (2, "native", 3): True, (1, "docker-bridge", 1): True, (1, "docker-bridge", 2): False}
    assert flags.loc[flags["excluded"]].index.tolist() == [
        (1, "native", 1), (1, "docker-bridge", 1)]
    samples = pd.DataFrame([
        {"environment": "lab", "campaign": "c1", "run": run, "mode": mode, "path": "dc",
         "variant": "tcp", "rep": rep, "metric": "m", "warmup": rep in (0, 2) and mode ==
         "native", "value": float(10 * run + rep)}
        for (run, mode, rep) in [(1, "native", 0), (1, "native", 1), (1, "native", 2),
                                 (1, "native", 3), (2, "native", 1), (2, "native", 3),
                                 (1, "docker-bridge", 1), (1, "docker-bridge", 2)]])  # fmt: skip
    kept = schema.without_excluded(samples, runs)
    assert sorted(zip(kept["run"], kept["mode"], kept["rep"], strict=True)) == [
        (1, "docker-bridge", 2), (1, "native", 0), (1, "native", 2), (1, "native", 3),
        (2, "native", 1), (2, "native", 3)]
    # a failed step's windows are not the estimate's business; no decisions, nothing left out
    failed = runs.assign(status="failed")
    assert schema.window_flags(failed).empty
    assert len(schema.without_excluded(samples, failed)) == len(samples)


def test_the_latency_loaders_leave_out_the_same_windows(tmp_path):
    """Latency reads its samples itself (batches, polars): the same windows are left out.
    One step of native measured twice: the first window flagged (round trips of 100 us), the
    second clean (10 us); docker-bridge flagged in its only window (kept flagged, 50 us)."""
    from pipeline.analysis import latency

    hog = "other processes > 0.25 CPUs"
    base = tmp_path / "latency" / "lab"
    runs, samples = [], []
    for mode, windows in (("native", [(1, 1, hog, 100.0), (3, 2, "", 10.0)]),
                          ("docker-bridge", [(1, 1, hog, 50.0)])):  # fmt: skip
        entries = [_decided(rep, attempt, why) for rep, attempt, why, _ in windows]
        runs.append({"environment": "lab", "campaign": "c1", "benchmark": "latency", "run": 1,
                     "order": 0, "mode": mode, "path": "dc", "variant": "udp", "status": "ok",
                     "watch": json.dumps(entries)})  # fmt: skip
        for rep, _, _, us in windows:
            for warm in (True, False):
                samples += [{"environment": "lab", "campaign": "c1", "benchmark": "latency",
                             "metric": "udp_rtt", "unit": "us", "mode": mode, "path": "dc",
                             "variant": "udp", "run": 1, "rep": rep - 1 if warm else rep,
                             "sample": i, "value": us + i / 1000, "warmup": warm,
                             "t_ns": 1000 * i} for i in range(5)]  # fmt: skip
    schema.write_table(schema.to_table(runs, schema.RUNS), base / "runs.parquet")
    schema.write_table(schema.to_table(samples, schema.SAMPLES), base / "samples.parquet")
    cells = latency.load_cells(tmp_path, "latency", {"udp": "udp_rtt"}, batch_rows=3)
    native = cells[("lab", "native", "dc", "udp")]
    assert native.pooled.min() == 10.0 and native.pooled.size == 5
    assert cells[("lab", "docker-bridge", "dc", "udp")].pooled.min() == 50.0
    windows = latency.load_window_metrics(tmp_path, "latency", ["udp_rtt"])
    assert sorted(set(zip(windows["mode"], windows["rep"], strict=True))) == [
        ("docker-bridge", 1), ("native", 3)]
    # the generic reader agrees
    read = schema.read_dataset(tmp_path, "latency", "samples")
    measured = read[~read["warmup"]]
    assert sorted(set(zip(measured["mode"], measured["rep"], strict=True))) == [
        ("docker-bridge", 1), ("native", 3)]


def test_the_summary_counts_the_windows_collection_flagged_and_measured_again(tmp_path):
    """Collection flagged a window on a probe slower than its host's median so far, which the
    campaign-wide median does not call slow: the summary counts the window collection flagged
    (the one measured again), so "flagged" and "re-measured" agree; what ran beside is read
    from that window."""
    slow = "probe > 2x its median"
    watch_of = {
        (1, "native"): [{**_entry(1, "node1", 0, 0.3), "attempt": 1, "why": slow},
                        {**_entry(3, "node1", 5, 0.0), "attempt": 2, "why": ""}],
        (1, "docker-bridge"): [{**_entry(1, "node1", 10, 0.0), "attempt": 1, "why": ""}],
    }  # fmt: skip
    rows = [{"environment": "lab", "campaign": "c1", "benchmark": "throughput", "run": run,
             "order": 1, "mode": mode, "path": "dc", "variant": "tcp", "status": "ok",
             "watch": json.dumps(entries)} for (run, mode), entries in watch_of.items()]
    schema.write_table(schema.to_table(rows, schema.RUNS),
                       tmp_path / "throughput" / "lab" / "runs.parquet")  # fmt: skip
    flags = interference.flag(interference.windows(tmp_path), cpus=0.5, steal=0.05, probe=2.0)
    assert not flags["flagged"].any()  # the thresholds, afterwards: nothing over them
    (row,) = interference.summary(flags).itertuples()
    assert (row.windows, row.flagged, row.remeasured, row.kept_flagged) == (3, 1, 1, 0)
    assert row.beside_flagged == "hog"
    assert interference.table(interference.summary(flags)).loc[0, "Flagged"] == "1 (33%)"


def test_a_probe_is_judged_against_readings_taken_with_the_same_hosts():
    """The hosts of a window are read at once: on hosts that share a CPU (the colocated
    placement) their probes share it and take about twice a lone reading's time. Judged
    against lone readings, every such window would read as slowed; judged against readings
    taken with the same hosts, only one slowed beyond them is."""
    from types import SimpleNamespace

    from pipeline.collect.campaign import Campaign

    campaign = SimpleNamespace(_probes={}, thresholds=Thresholds())
    alone, pair = ("node1",), ("dc-client", "node1")

    def why(probe: float, company: tuple[str, ...]) -> str:
        entry = {"probe_before_ms": probe, "probe_after_ms": probe, "other_cpus": 0.0,
                 "steal_share": 0.0}  # fmt: skip
        return Campaign._decide_flag(campaign, "node1", entry, company)

    assert [why(25.0, alone) for _ in range(5)] == [""] * 5
    assert [why(55.0, pair) for _ in range(5)] == [""] * 5  # 2.2x the lone median: their own
    assert why(120.0, pair) == "probe > 2x its median"  # slowed beyond its company
    assert why(60.0, alone) == "probe > 2x its median"
    # the analysis's after-the-fact flags group the same way
    rows = []
    for i, (hosts, probe) in enumerate([(alone, 25.0)] * 5 + [(pair, 55.0)] * 5
                                       + [(pair, 120.0)]):  # fmt: skip
        for host in hosts:
            rows.append({"environment": "lab", "benchmark": "latency", "campaign": "c1",
                         "run": i, "mode": "native", "path": "dc", "variant": "udp",
                         **_entry(1, host, i, 0.0, probe), "error": None, "attempt": 1,
                         "decided": ""})  # fmt: skip
    flags = interference.flag(pd.DataFrame(rows), cpus=0.25, steal=0.05, probe=2.0)
    slowed = flags[flags["flagged"]]
    assert set(zip(slowed["run"], slowed["host"], strict=True)) == {(10, "node1"),
                                                                     (10, "dc-client")}
