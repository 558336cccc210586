"""The instrument check's analysis against known answers: the committed cpu and throughput
fixtures with controls added whose truth is set here (an A/A twin that is native with tiny
noise, a CPU quota that halves the rate per thread, a tbf cap whose goodput is computed by
hand), run through ``pipeline.analysis.instrument.summarise``, which uses the study's own
summaries."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.analysis import instrument
from pipeline.collect.modes.controls import CONTAINER_CPU_QUOTA, CPU_QUOTA

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
import make_fixture_instrument as fx  # noqa: E402

MARGINS = {"network": 0.05, "cpu": 0.02, "memory": 0.02, "disk": 0.02}


def test_tbf_goodput_is_the_payload_share_of_the_frames_the_bucket_counts():
    # TCP at MTU 1500: 1448 payload bytes (timestamps on) per 1514-byte frame.
    assert instrument.tbf_goodput_mbit(100, 1500, "tcp") == pytest.approx(100 * 1448 / 1514)
    # UDP: the study's 1400-byte datagrams, + 8 UDP + 20 IP + 14 Ethernet.
    assert instrument.tbf_goodput_mbit(100, 1500, "udp") == pytest.approx(100 * 1400 / 1442)
    with pytest.raises(ValueError):
        instrument.tbf_goodput_mbit(100, 1500, "sctp")


def test_parse_benchmarks_keeps_the_check_order_and_names_the_known_ones():
    from pipeline.collect.instrument import parse_benchmarks

    assert parse_benchmarks(" cpu, throughput") == ["throughput", "cpu"]
    with pytest.raises(ValueError, match="pick from"):
        parse_benchmarks("cpu,http")
    with pytest.raises(ValueError):
        parse_benchmarks(" , ")


def test_false_difference_rate_counts_only_decided_comparisons():
    aa = pd.DataFrame({"verdict": ["equivalent", "overhead", "inconclusive", None, "faster"]})
    rate = instrument.false_difference_rate(aa)
    assert rate["comparisons"] == 4 and rate["false_differences"] == 2
    assert rate["false_difference_rate"] == 0.5 and rate["equivalent"] == 1
    empty = instrument.false_difference_rate(pd.DataFrame({"verdict": []}))
    assert empty["comparisons"] == 0 and np.isnan(empty["false_difference_rate"])


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """The instrument fixture (cpu and throughput with native-aa, native-cpuquota and
    native-tbf added, tests/fixtures/make_fixture_instrument.py), built afresh and summarised."""
    raw = tmp_path_factory.mktemp("raw")
    fx.build(raw)
    return instrument.summarise(raw, MARGINS)


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


def test_the_small_quota_on_a_container_is_its_ratio_to_the_same_container(checked):
    """docker-cpuquota against docker-bridge: the geometric mean of the per-run ratios is the
    quota times the fixture's own per-run factors, whatever docker-bridge costs against native
    (3% in the fixture), and the study's rule at the cpu margin calls it "overhead"."""
    _, injected = checked
    small = injected[injected["control"] == "docker-cpuquota"].set_index("variant")
    assert set(small.index) == {"1thread", "allthreads"}  # compile has no known answer
    rng = np.random.default_rng([fx.SEED, 94])
    factors = rng.normal(0, fx.CONTAINER_SD, 6)  # one per run of the cpu fixture, in run order
    for variant, threads in (("1thread", 1), ("allthreads", 2)):
        row = small.loc[variant]
        assert row["expected"] == pytest.approx(CONTAINER_CPU_QUOTA / threads)
        assert row["recovered"] == pytest.approx(row["expected"] * np.exp(factors.mean()),
                                                 rel=1e-9)  # fmt: skip
        assert row["baseline"] == "docker-bridge" and row["margin"] == MARGINS["cpu"]
        assert row["verdict"] == "overhead" and row["recovered_within"] and row["n_runs"] == 6
        assert row["recovered_lo"] < row["recovered"] < row["recovered_hi"] < 1


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
    # only the controls measured are named
    assert "(CPU quota, CPU quota on a container, tbf rate cap)" in text
    assert ('a 6% CPU cut on a container (1thread, against docker-bridge), was called "overhead" '
            "by the study's rule at ±2% with 6 runs.") in text  # fmt: skip
    rate = json.loads((tmp_path / "processed" / "instrument_rate.json").read_text())
    assert rate["false_differences"] == 0
    md = (tmp_path / "tables" / "instrument_injected.md").read_text()
    assert "tbf rate 100 Mbit/s (MTU 1500)" in md and "CFS quota 0.5 CPU, 2 thread(s)" in md
    assert "CFS quota 0.94 CPU on docker-bridge's container, 1 thread(s)" in md
    table = instrument.injected_table(injected).set_index(["Control", "Variant"])
    assert table.loc[("docker-cpuquota", "1thread"), "Verdict (margin)"] == "overhead (±2%)"
    assert table.loc[("native-tbf", "tcp"), "Verdict (margin)"] == "n/a"  # no ratio, no rule


def test_the_methods_section_states_the_check_from_the_generated_files(checked, tmp_path):
    from pipeline.analysis import article

    aa, injected = checked
    instrument.write(aa, injected, tmp_path / "processed" / "instrument", tmp_path / "tables")
    inputs = article.Inputs(
        processed=tmp_path / "processed", raw=tmp_path / "raw", tables=tmp_path / "tables",
        figures=tmp_path / "figures", out=tmp_path, margins=MARGINS, confidence=0.95,
        root=tmp_path,
    )  # fmt: skip
    numbers = article.Numbers(root=tmp_path)
    text = "\n\n".join(article._instrument(inputs, numbers))
    assert f"gave {len(aa)} comparisons" in text and "(false-difference rate 0.0%)" in text
    assert text.count("| yes |") == len(injected)  # each expected value inside its interval
    assert "instrument_aa.md" in text and "instrument_injected.md" in text  # tables included
    quota = numbers.entries["instrument.injected.lab.native-cpuquota.1thread.recovered"]
    assert quota.value == pytest.approx(0.5, rel=0.01) and quota.lo <= 0.5 <= quota.hi
    assert numbers.entries["instrument.aa.false_differences"].value == 0
    # Without the check's outputs the section says which stages produce them.
    empty = article.Inputs(**{**inputs.__dict__, "processed": tmp_path / "none"})
    assert "not measured" in article._instrument(empty, article.Numbers(root=tmp_path))[0]


def test_the_profiles_name_known_checks():
    import yaml

    from pipeline.collect.instrument import CHECKS, parse_benchmarks

    root = Path(__file__).resolve().parents[2]
    profiles = {p: yaml.safe_load((root / f"conf/profiles/{p}.yaml").read_text())
                for p in ("smoke", "demo", "study", "publication")}
    for profile in profiles.values():
        section = profile["instrument"]
        assert {"runs", "benchmarks", "compile_packages"} <= set(section) <= {
            "runs", "benchmarks", "compile_packages", "variants"}
        checked = parse_benchmarks(section["benchmarks"])  # only known checks
        assert set(section.get("variants", {})) <= set(checked)
        assert section["runs"] >= 2
    # study and publication run the A/A in every benchmark of the check, with enough runs for
    # a TOST; the demo in fewer, three runs
    assert profiles["demo"]["instrument"]["runs"] >= 3
    for profile in ("study", "publication"):
        section = profiles[profile]["instrument"]
        assert parse_benchmarks(section["benchmarks"]) == list(CHECKS)
        assert section["runs"] >= 5


def test_the_wan_delay_is_recovered_against_the_same_path_at_delay_zero(tmp_path, monkeypatch):
    """The configured delay's own contribution: Internet path at 20 ms minus Internet path at
    0 ms, so the emulator's hop (here 40 us, also on the zero-delay path) cancels; delays are
    separate campaigns, resampled independently. Without delay 0: Internet minus dc, hop
    included, and the row says so."""
    from pipeline.analysis import calibration, stats
    from pipeline.analysis import latency as latency_analysis

    rng = np.random.default_rng(3)
    hop = 40.0

    def cell(offset: float, runs=(1, 2, 3)) -> stats.RunSamples:
        per_run = [rng.gamma(2.0, 5.0, 2000) + 100 + offset + rng.normal(0, 3) for _ in runs]
        ids = np.concatenate([np.full(v.size, r) for r, v in zip(runs, per_run, strict=True)])
        return stats.RunSamples.from_arrays(np.concatenate(per_run), ids)

    data = {}
    for delay in (0, 20):
        for variant in ("udp", "tcp"):
            data[(delay, "dc", variant)] = cell(0.0)
            data[(delay, "internet", variant)] = cell(hop + 2 * delay * 1000)

    def fake_load(raw_dir, benchmark, metrics):
        delay = 0 if Path(raw_dir).name == calibration.label(0) else 20
        return {("lab", "native", p, v): c for (d, p, v), c in data.items() if d == delay}

    monkeypatch.setattr(latency_analysis, "load_cells", fake_load)
    (tmp_path / "wan").mkdir()
    rows = instrument.wan_rows(tmp_path / "wan", [0, 20], 0.95)
    assert len(rows) == 4  # udp, tcp x p50, p99; delay 0 injects nothing
    for r in rows:
        assert r["expected"] == 40_000 and "delay 0" in r["injected"], r
        assert r["recovered_lo"] <= 40_000 <= r["recovered_hi"], r  # the hop cancelled
        assert abs(r["recovered"] - 40_000) < 25, r
    hop_included = instrument.wan_rows(tmp_path / "wan", [20], 0.95)
    assert {r["variant"] for r in hop_included} == {r["variant"] for r in rows}
    p50 = [r for r in hop_included if r["variant"] == "udp p50"][0]
    assert "emulator hop included" in p50["injected"]
    assert p50["recovered"] == pytest.approx(40_000 + hop, abs=5)  # the hop is in it
