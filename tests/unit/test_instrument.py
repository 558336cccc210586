"""The instrument check's analysis against known answers: the committed cpu and throughput
fixtures with controls added whose truth is set here (an A/A twin that is native with tiny
noise, a CPU quota that halves the rate per thread, a tbf cap whose goodput is computed by
hand), run through ``pipeline.instrument.summarise``, which uses the study's own summaries."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline import instrument, schema
from pipeline.modes.controls import CPU_QUOTA, TBF_RATE_MBIT

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "raw"
MARGINS = {"network": 0.05, "cpu": 0.02, "memory": 0.02, "disk": 0.02}


def test_tbf_goodput_is_the_payload_share_of_the_frames_the_bucket_counts():
    # TCP at MTU 1500: 1448 payload bytes (timestamps on) per 1514-byte frame.
    assert instrument.tbf_goodput_mbit(100, 1500, "tcp") == pytest.approx(100 * 1448 / 1514)
    # UDP: the study's 1400-byte datagrams, + 8 UDP + 20 IP + 14 Ethernet.
    assert instrument.tbf_goodput_mbit(100, 1500, "udp") == pytest.approx(100 * 1400 / 1442)
    with pytest.raises(ValueError):
        instrument.tbf_goodput_mbit(100, 1500, "sctp")


def test_parse_benchmarks_keeps_the_check_order_and_names_the_known_ones():
    assert instrument.parse_benchmarks(" cpu, throughput") == ["throughput", "cpu"]
    with pytest.raises(ValueError, match="pick from"):
        instrument.parse_benchmarks("cpu,http")
    with pytest.raises(ValueError):
        instrument.parse_benchmarks(" , ")


def test_false_difference_rate_counts_only_decided_comparisons():
    aa = pd.DataFrame({"verdict": ["equivalent", "overhead", "inconclusive", None, "faster"]})
    rate = instrument.false_difference_rate(aa)
    assert rate["comparisons"] == 4 and rate["false_differences"] == 2
    assert rate["false_difference_rate"] == 0.5 and rate["equivalent"] == 1
    empty = instrument.false_difference_rate(pd.DataFrame({"verdict": []}))
    assert empty["comparisons"] == 0 and np.isnan(empty["false_difference_rate"])


def _write(raw: Path, benchmark: str, runs: pd.DataFrame, samples: pd.DataFrame) -> None:
    root = raw / benchmark / "lab"
    root.mkdir(parents=True, exist_ok=True)
    schema.write_table(schema.to_table(runs, schema.RUNS), root / "runs.parquet")
    schema.write_table(schema.to_table(samples, schema.SAMPLES), root / "samples.parquet")
    shutil.copy(FIXTURES / benchmark / "lab" / "hosts.parquet", root / "hosts.parquet")


def _twin(frame: pd.DataFrame, mode: str, source: str = "native") -> pd.DataFrame:
    out = frame[frame["mode"] == source].copy()
    out["mode"] = mode
    return out


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """cpu and throughput raw data with native-aa, native-cpuquota and native-tbf added."""
    raw = tmp_path_factory.mktemp("raw")
    rng = np.random.default_rng(5)
    # cpu: the twin is native x (1 + 0.1% noise per run); the quota halves the rate per thread.
    runs = schema.read_dataset(FIXTURES, "cpu", "runs")
    samples = schema.read_dataset(FIXTURES, "cpu", "samples")
    threads = {"1thread": 1, "allthreads": 2, "compile": None}
    runs["command"] = [
        f"sysbench cpu --threads={threads[v]} run" if threads[v] else "go build"
        for v in runs["variant"]
    ]
    aa, quota = _twin(samples, "native-aa"), _twin(samples, "native-cpuquota")
    noise = {r: np.exp(rng.normal(0, 0.001)) for r in sorted(samples["run"].unique())}
    aa["value"] = aa["value"] * aa["run"].map(noise)
    events = quota["metric"] == "cpu_events_per_s"
    per_thread = quota["variant"].map({"1thread": 1, "allthreads": 2, "compile": 1})
    quota.loc[events, "value"] = quota.loc[events, "value"] * CPU_QUOTA / per_thread[events]
    quota.loc[~events, "value"] = quota.loc[~events, "value"] * 2.0  # compile: twice as long
    cpu_runs = pd.concat([runs, _twin(runs, "native-aa"), _twin(runs, "native-cpuquota")])
    _write(raw, "cpu", cpu_runs, pd.concat([samples, aa, quota]))
    # throughput: the twin repeats native's values; tbf receives the computed goodput (+-0.2%).
    runs = schema.read_dataset(FIXTURES, "throughput", "runs")
    samples = schema.read_dataset(FIXTURES, "throughput", "samples")
    dc = (samples["mode"] == "native") & (samples["path"] == "dc")
    tbf = samples[dc].copy()
    tbf["mode"] = "native-tbf"
    for variant, metric in (("tcp", "tcp_throughput_received"), ("udp", "udp_throughput_received")):
        mine = (tbf["variant"] == variant) & (tbf["metric"] == metric)
        truth = instrument.tbf_goodput_mbit(TBF_RATE_MBIT, 1500, variant) * 1e6
        tbf.loc[mine, "value"] = truth * np.exp(rng.normal(0, 0.002, int(mine.sum())))
    tbf_runs = runs[(runs["mode"] == "native") & (runs["path"] == "dc")].copy()
    tbf_runs["mode"] = "native-tbf"
    tbf_runs["notes"] = json.dumps({"mtu": "1500", "tbf_rate_mbit": str(TBF_RATE_MBIT)})
    aa_runs, aa_samples = _twin(runs, "native-aa"), _twin(samples, "native-aa")
    _write(raw, "throughput", pd.concat([runs, aa_runs, tbf_runs]),
           pd.concat([samples, aa_samples, tbf]))  # fmt: skip
    return instrument.summarise(raw, MARGINS, n_boot=1000, seed=3)


def test_the_a_a_twin_is_never_called_different(checked):
    aa, _ = checked
    assert set(aa["benchmark"]) == {"cpu", "throughput"}
    # cpu: every variant and metric; throughput: tcp and udp on each path the fixture has
    cpu = {tuple(r) for r in aa[aa["benchmark"] == "cpu"][["variant", "statistic"]].values}
    assert cpu >= {("1thread", "cpu_events_per_s"), ("allthreads", "cpu_events_per_s"),
                   ("compile", "compile_s")}  # fmt: skip
    net = aa[aa["benchmark"] == "throughput"]
    assert {(p, v) for p, v in net[["path", "variant"]].values} == {
        ("dc", "tcp"), ("local", "tcp"), ("dc", "udp"), ("local", "udp")
    }  # fmt: skip
    assert not aa["verdict"].isin(instrument.DIFFERENCES).any(), aa
    # 0.1% noise on 6 runs against a 2% margin: equivalent; a copy of native: equivalent too
    assert (aa.loc[aa["benchmark"] == "cpu", "verdict"] == "equivalent").all(), aa
    rate = instrument.false_difference_rate(aa)
    assert rate["false_differences"] == 0 and rate["comparisons"] == len(aa)


def test_the_injected_overheads_are_recovered_within_their_intervals(checked):
    _, injected = checked
    quota = injected[injected["control"] == "native-cpuquota"].set_index("variant")
    assert set(quota.index) == {"1thread", "allthreads"}  # compile has no known answer
    assert quota.loc["1thread", "expected"] == CPU_QUOTA
    assert quota.loc["allthreads", "expected"] == CPU_QUOTA / 2
    for variant in quota.index:
        assert quota.loc[variant, "recovered"] == pytest.approx(quota.loc[variant, "expected"],
                                                                rel=0.01)  # fmt: skip
    tbf = injected[injected["control"] == "native-tbf"].set_index("variant")
    assert tbf.loc["tcp", "expected"] == pytest.approx(95.64, abs=0.01)
    assert tbf.loc["tcp", "recovered"] == pytest.approx(tbf.loc["tcp", "expected"], rel=0.01)
    assert tbf.loc["udp", "recovered"] == pytest.approx(tbf.loc["udp", "expected"], rel=0.01)
    assert injected["recovered_within"].all(), injected


def test_a_wrong_expectation_is_reported_as_not_recovered(checked):
    _, injected = checked
    broken = injected.copy()
    broken["expected"] = broken["expected"] * 1.5
    inside = (broken["recovered_lo"] <= broken["expected"]) & (
        broken["expected"] <= broken["recovered_hi"]
    )
    assert not inside.any()  # the intervals are tight enough to tell a 50% error
    table = instrument.injected_table(injected)
    assert list(table["Expected inside"]) == ["yes"] * len(injected)


def test_tables_sentence_and_files(checked, tmp_path):
    aa, injected = checked
    paths = instrument.write(aa, injected, tmp_path / "processed", tmp_path / "tables")
    assert all(p.exists() for p in paths)
    text = (tmp_path / "tables" / "instrument_sentence.md").read_text()
    assert f"gave {len(aa)} comparisons" in text and "false-difference rate 0.0%" in text
    assert f"in {len(injected)} of {len(injected)} cases" in text
    assert "(CPU quota, tbf rate cap)" in text  # only the controls measured are named
    rate = json.loads((tmp_path / "processed" / "instrument_rate.json").read_text())
    assert rate["false_differences"] == 0
    md = (tmp_path / "tables" / "instrument_injected.md").read_text()
    assert "tbf rate 100 Mbit/s (MTU 1500)" in md and "CFS quota 0.5 CPU, 2 thread(s)" in md
