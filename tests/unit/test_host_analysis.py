"""pipeline.analysis.host on the committed cpu/memory fixture, whose answers are known by
construction (tests/fixtures/make_fixture.py: ``HOST_NATIVE`` x ``HOST_FACTORS``), and on small
constructed datasets for what the fixture does not hold (a disk-like benchmark with several
metrics, a mode without a native baseline, a variant nobody measured)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from pipeline.analysis import host as host
from pipeline.data import schema

ROOT = Path(__file__).resolve().parents[2]
RAW = ROOT / "tests" / "fixtures" / "raw"
MARGIN = 0.02


def _make_fixture():
    spec = importlib.util.spec_from_file_location(
        "make_fixture", ROOT / "tests" / "fixtures" / "make_fixture.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MF = _make_fixture()


@pytest.fixture(scope="module")
def data() -> dict:
    out = {}
    for benchmark in ("cpu", "memory"):
        samples, runs = host.load(RAW, benchmark)
        out[benchmark] = {
            "samples": samples,
            "runs": runs,
            "per_run": host.per_run(samples, runs),
            "summary": host.summarise(
                samples, runs, benchmark, margin=MARGIN
            ).set_index(["variant", "mode"]),
        }
    return out


def _truth(benchmark: str, variant: str, mode: str) -> np.ndarray:
    """Per-run values the fixture was built around (NaN for podman's failed run)."""
    native = np.asarray(MF.HOST_NATIVE[benchmark][variant])
    compile_ = variant == "compile"
    factors = MF.HOST_COMPILE_FACTORS if compile_ else MF.HOST_FACTORS[benchmark]
    factor = 1.0 if mode == "native" else np.asarray(factors[mode])
    values = np.round(native * factor, 3 if compile_ else 2)
    failed_mode, failed_run = MF.HOST_FAILED[benchmark]
    if mode == failed_mode:
        values = values.astype(float)
        values[failed_run - 1] = np.nan
    return values


def test_the_fixture_answers_are_what_make_fixture_writes():
    """The committed parquet files are the generator's output (else regenerate them)."""
    for benchmark in ("cpu", "memory"):
        frames = MF.build_host(benchmark)
        for table in ("samples", "runs"):
            stored = schema.read_table(RAW / benchmark / "lab" / f"{table}.parquet", table)
            fresh = schema.to_table(frames[table], schema.TABLES[table])
            assert stored.equals(fresh), f"{benchmark} {table}: run make_fixture.py"


@pytest.mark.parametrize("benchmark", ["cpu", "memory"])
def test_per_run_value_is_the_median_of_the_runs_seconds(data, benchmark):
    per_run = data[benchmark]["per_run"]
    for variant in MF.HOST_NATIVE[benchmark]:
        for mode in ("native", "docker-bridge", "podman", "rootless-podman"):
            got = per_run.query("variant == @variant and mode == @mode").set_index("run")["value"]
            truth = _truth(benchmark, variant, mode)
            runs = np.flatnonzero(~np.isnan(truth)) + 1
            assert list(got.index) == list(runs)  # the failed run is not there
            np.testing.assert_array_equal(got.to_numpy(), truth[runs - 1])
    seconds = per_run[per_run["variant"] != "compile"]
    assert (seconds["n_samples"] == MF.HOST_PER_SECOND).all()
    assert (per_run.loc[per_run["variant"] == "compile", "n_samples"] == 1).all()
    assert set(per_run["path"]) == {"host"}
    assert "rootless-docker" not in set(per_run["mode"])


def test_warmups_and_the_failed_runs_samples_are_not_analysed(data):
    d = data["cpu"]
    cell = d["samples"].query("variant == '1thread' and mode == 'podman'")
    assert cell["warmup"].sum() == MF.HOST_WARMUP_SECONDS * 6
    rates = d["per_run"][d["per_run"]["variant"] != "compile"]
    assert (rates["value"] > 900.0).all()  # warm-ups are at ~500, the failed run ~100
    row = d["summary"].loc[("1thread", "podman")]
    assert row["n_runs"] == 5 and row["n_runs_planned"] == 6
    assert row["reason"] == f"1 of 6 runs not measured: {MF.HOST_FAILED_REASON}"
    # Counting the warm-ups, or the failed run's partial samples, would change the answer.
    unflagged = d["samples"].assign(warmup=False)
    with_warmups = host.summarise(unflagged, d["runs"], "cpu")
    with_warmups = with_warmups.set_index(["variant", "mode"]).loc[("1thread", "podman")]
    assert with_warmups["median"] < row["median"] - 1.0
    failed_ok = d["runs"].assign(status="ok", reason=None)
    failed_ok = failed_ok[failed_ok["mode"] != "rootless-docker"]
    with_failed = host.summarise(d["samples"], failed_ok, "cpu")
    with_failed = with_failed.set_index(["variant", "mode"]).loc[("1thread", "podman")]
    assert with_failed["n_runs"] == 6 and with_failed["median_lo"] < 200.0


@pytest.mark.parametrize("benchmark", ["cpu", "memory"])
def test_median_and_its_rank_interval(data, benchmark):
    summary = data[benchmark]["summary"]
    for variant in MF.HOST_NATIVE[benchmark]:
        for mode in ("native", "docker-bridge", "podman", "rootless-podman"):
            values = _truth(benchmark, variant, mode)
            values = np.sort(values[~np.isnan(values)])
            n = values.size
            row = summary.loc[(variant, mode)]
            assert row["median"] == pytest.approx(np.median(values), abs=1e-9)
            # 4-6 runs: the interval is (min, max); it reaches 95% only with 6 runs.
            assert (row["median_lo"], row["median_hi"]) == (values[0], values[-1])
            coverage = st.binom.cdf(n - 1, n, 0.5) - st.binom.cdf(0, n, 0.5)
            assert row["median_coverage"] == pytest.approx(coverage)
            assert row["median_ci_reached"] == (n >= 6)


def _paired_t(a: np.ndarray, b: np.ndarray, confidence: float) -> tuple[float, float]:
    """scipy's paired t interval of the per-run log ratios, back on the ratio scale."""
    ci = st.ttest_rel(np.log(a), np.log(b)).confidence_interval(confidence)
    return float(np.exp(ci.low)), float(np.exp(ci.high))


# Known truth of each ratio (the factor the fixture applied in every run); cpu's
# compile variant is a build time, HOST_COMPILE_FACTORS.
KNOWN_COMPILE = {"docker-bridge": 1.03, "podman": 1.01, "rootless-podman": 1.00}
KNOWN_RATIOS = {
    ("cpu", "docker-bridge"): 0.97,
    ("cpu", "podman"): 0.99,
    ("cpu", "rootless-podman"): 1.00,
    ("memory", "docker-bridge"): 0.97,
    ("memory", "rootless-podman"): 1.00,
}


@pytest.mark.parametrize(("benchmark", "mode"), list(KNOWN_RATIOS))
def test_ratio_to_native_and_its_paired_t_interval(data, benchmark, mode):
    summary = data[benchmark]["summary"]
    for variant in MF.HOST_NATIVE[benchmark]:
        a, b = _truth(benchmark, variant, mode), _truth(benchmark, variant, "native")
        both = ~np.isnan(a)
        row = summary.loc[(variant, mode)]
        ratio = np.exp(np.mean(np.log(a[both] / b[both])))  # geometric mean of run ratios
        assert row["ratio"] == pytest.approx(ratio, rel=1e-12)
        assert row["ratio_n_runs"] == both.sum()
        lo, hi = _paired_t(a[both], b[both], 0.95)
        assert (row["ratio_lo"], row["ratio_hi"]) == (pytest.approx(lo), pytest.approx(hi))
        eq_lo, eq_hi = _paired_t(a[both], b[both], 0.90)
        assert (row["ratio_eq_lo"], row["ratio_eq_hi"]) == (
            pytest.approx(eq_lo),
            pytest.approx(eq_hi),
        )
        # The interval covers the factor the data were built with (within a per-run jitter
        # of at most 0.3%).
        if variant == "compile":
            known = KNOWN_COMPILE[mode]
            # A time: overhead is 100 (ratio - 1), its interval the ratio's.
            assert not row["higher_is_better"]
            assert row["overhead_pct"] == pytest.approx(100 * (row["ratio"] - 1))
            assert row["overhead_lo_pct"] == pytest.approx(100 * (row["ratio_lo"] - 1))
            assert row["overhead_hi_pct"] == pytest.approx(100 * (row["ratio_hi"] - 1))
        else:
            known = KNOWN_RATIOS[(benchmark, mode)]
            # A rate: overhead is 100 (1 - ratio), its interval the ratio's mirrored.
            assert row["higher_is_better"]
            assert row["overhead_pct"] == pytest.approx(100 * (1 - row["ratio"]))
            assert row["overhead_lo_pct"] == pytest.approx(100 * (1 - row["ratio_hi"]))
            assert row["overhead_hi_pct"] == pytest.approx(100 * (1 - row["ratio_lo"]))
        assert row["ratio_lo"] - 1e-3 <= known <= row["ratio_hi"] + 1e-3
        assert abs(row["ratio"] - known) < 0.003


def test_verdicts_follow_the_construction(data):
    cpu, memory = data["cpu"]["summary"], data["memory"]["summary"]
    for variant in ("1thread", "allthreads"):
        assert cpu.loc[(variant, "docker-bridge"), "verdict"] == "overhead"  # 3% > 2% margin
        assert cpu.loc[(variant, "rootless-podman"), "verdict"] == "equivalent"
        # 1% below native in every run: real (95% interval below 1) but inside the margin.
        podman = cpu.loc[(variant, "podman")]
        assert podman["verdict"] == "equivalent" and podman["ratio_hi"] < 1.0
        assert pd.isna(cpu.loc[(variant, "native"), "verdict"])
        assert pd.isna(cpu.loc[(variant, "rootless-docker"), "verdict"])
    # The build takes 3% longer in docker-bridge (a time: above 1 is the overhead) and 1%
    # longer in podman (real, inside the margin).
    assert cpu.loc[("compile", "docker-bridge"), "verdict"] == "overhead"
    assert cpu.loc[("compile", "docker-bridge"), "ratio_lo"] > 1.0
    podman = cpu.loc[("compile", "podman")]
    assert podman["verdict"] == "equivalent" and podman["ratio_lo"] > 1.0
    assert cpu.loc[("compile", "rootless-podman"), "verdict"] == "equivalent"
    for variant in ("write", "read"):
        assert memory.loc[(variant, "docker-bridge"), "verdict"] == "overhead"
        assert memory.loc[(variant, "rootless-podman"), "verdict"] == "equivalent"
        # per-run ratios 0.92..1.07: neither inside the margin nor off parity
        podman = memory.loc[(variant, "podman")]
        assert podman["verdict"] == "inconclusive"
        assert podman["ratio_lo"] < 1.0 < podman["ratio_hi"]
        assert podman["tost_p"] > 0.05


def test_the_margin_decides(data):
    # Against a 5% margin docker-bridge's 3% loss is inside: equivalent, with a real overhead.
    d = data["cpu"]
    wide = host.summarise(d["samples"], d["runs"], "cpu", margin=0.05)
    row = wide.set_index(["variant", "mode"]).loc[("1thread", "docker-bridge")]
    assert row["verdict"] == "equivalent" and row["ratio_hi"] < 1.0
    assert row["margin"] == 0.05


def test_skipped_mode_is_a_row_with_its_reason(data):
    for benchmark, variants in (
        ("cpu", tuple(MF.HOST_NATIVE["cpu"])),
        ("memory", ("write", "read")),
    ):
        summary = data[benchmark]["summary"]
        for variant in variants:
            row = summary.loc[(variant, "rootless-docker")]
            assert row["status"] == "skipped" and row["reason"] == MF.HOST_SKIP_REASON
            assert row["n_runs"] == 0 and row["n_runs_planned"] == len(
                MF.HOST_NATIVE[benchmark][variant]
            )
            assert np.isnan(row["median"]) and np.isnan(row["ratio"])
    table = host.article_table(data["cpu"]["summary"].reset_index())
    skipped = table[table["Mode"] == "Rootless Docker"]
    assert len(skipped) == 3
    assert skipped["Median [95% CI]"].isna().all() and skipped["Verdict (±2%)"].isna().all()
    assert (skipped["Note"] == MF.HOST_SKIP_REASON).all()


def test_rows_are_in_variant_then_project_mode_order(data):
    summary = data["cpu"]["summary"].reset_index()
    assert list(summary["variant"]) == ["1thread"] * 5 + ["allthreads"] * 5 + ["compile"] * 5
    assert list(summary["mode"][:5]) == [
        "native", "docker-bridge", "podman", "rootless-docker", "rootless-podman"
    ]  # fmt: skip


def test_article_table_cells(data):
    table = host.article_table(data["cpu"]["summary"].reset_index())
    row = table[(table["Test"] == "1 thread (events/s)") & (table["Mode"] == "Docker bridge")]
    row = row.iloc[0]
    bridge = data["cpu"]["summary"].loc[("1thread", "docker-bridge")]
    assert row["Median [95% CI]"] == (
        f"{bridge['median']:.1f} [{bridge['median_lo']:.1f}, {bridge['median_hi']:.1f}]"
    )
    assert row["% of native [95% CI]"].startswith("97.0 [")
    assert row["Overhead vs native % [95% CI]"].startswith("+3.0 [")
    assert row["Verdict (±2%)"] == "overhead" and row["Runs"] == "6"
    podman = table[(table["Test"] == "1 thread (events/s)") & (table["Mode"] == "Podman (rootful)")]
    assert podman.iloc[0]["Verdict (±2%)"] == "equivalent (small overhead)"
    assert podman.iloc[0]["Runs"] == "5 of 6"
    memory = host.article_table(data["memory"]["summary"].reset_index())
    # MiB/s in the thousands: whole numbers (write, native)
    assert memory.iloc[0]["Median [95% CI]"] == "10000 [9950, 10060]"
    assert "coverage 93.8% < 95%" in memory.iloc[0]["Note"]


def test_headline_and_findings(data):
    summary = data["cpu"]["summary"].reset_index()
    text = host.headline(summary)
    assert "lab 1thread cpu_events_per_s rootless-docker: skipped, n/a (skipped: rootless" in text
    assert "lab 1thread cpu_events_per_s native: ok, 6 runs, median 1000.50 [996.00, 1004.00]" in (
        text
    )
    findings = host.findings(summary)
    assert "**Docker bridge**, 1 thread (events/s) loses 3.0% of native's rate" in findings
    assert "verdict: **equivalent (small overhead)** (margin ±2%" in findings
    assert "**Docker bridge**, compile (go build time, s) takes 3.0% longer than native" in findings


# --- generic over benchmarks: a constructed disk-like dataset -----------------------------


def _dataset(cells: dict, skipped: dict | None = None, n_runs: int = 4):
    """samples/runs for benchmark "disk": cells (variant, mode) -> {metric: per-run values};
    each run's window holds three seconds around the value (median exactly the value)."""
    samples, runs = [], []
    for run in range(1, n_runs + 1):
        for (variant, mode), metrics in cells.items():
            key = {"environment": "lab", "mode": mode, "path": "host", "variant": variant}
            runs.append({**key, "run": run, "status": "ok", "reason": None})
            for metric, values in metrics.items():
                v = values[run - 1]
                for rep, warm, seconds in ((0, True, [v / 3] * 2), (1, False, [v * 0.99, v, v])):
                    for i, x in enumerate(seconds):
                        samples.append(
                            {**key, "run": run, "rep": rep, "warmup": warm, "sample": i,
                             "metric": metric, "unit": "MiB/s", "value": x}
                        )  # fmt: skip
        for (variant, mode), reason in (skipped or {}).items():
            key = {"environment": "lab", "mode": mode, "path": "host", "variant": variant}
            runs.append({**key, "run": run, "status": "skipped", "reason": reason})
    return pd.DataFrame(samples), pd.DataFrame(runs)


def test_disk_like_benchmark_needs_no_new_code():
    native = [500.0, 510.0, 490.0, 505.0]
    zeros = [0.0] * 4
    cells = {
        ("seqread", "native"): {"disk_read_mib_per_s": native, "disk_write_mib_per_s": zeros},
        ("seqread", "overlay2"): {
            "disk_read_mib_per_s": [v * 0.9 for v in native],
            "disk_write_mib_per_s": zeros,
        },
        ("seqwrite", "native"): {"disk_read_mib_per_s": zeros, "disk_write_mib_per_s": native},
        ("seqwrite", "overlay2"): {
            "disk_read_mib_per_s": zeros,
            "disk_write_mib_per_s": [v * 1.1 for v in native],
        },
    }
    reason = "skipped: fuse-overlayfs is not installed on node1"
    samples, runs = _dataset(cells, {("seqread", "fuse-overlayfs"): reason})
    summary = host.summarise(samples, runs, "disk", margin=0.02)
    # Each variant is analysed on the direction it exercises only (the other is all zeros).
    assert host.variant_metrics(samples) == {
        "seqread": ["disk_read_mib_per_s"],
        "seqwrite": ["disk_write_mib_per_s"],
    }
    got = summary.set_index(["variant", "mode"])
    assert got.loc[("seqread", "overlay2"), "ratio"] == pytest.approx(0.9)
    assert got.loc[("seqread", "overlay2"), "verdict"] == "overhead"
    assert got.loc[("seqwrite", "overlay2"), "ratio"] == pytest.approx(1.1)
    assert got.loc[("seqwrite", "overlay2"), "verdict"] == "faster"
    assert got.loc[("seqwrite", "overlay2"), "overhead_pct"] == pytest.approx(-10.0)
    fuse = got.loc[("seqread", "fuse-overlayfs")]
    assert fuse["status"] == "skipped" and fuse["reason"] == reason
    assert fuse["metric"] == "disk_read_mib_per_s"
    assert len(summary) == 5
    table = host.article_table(summary)
    assert table["Test"].iloc[0] == "sequential read (read MiB/s)"
    chart, caption = host.figure(summary, host.per_run(samples, runs))
    assert "Not measured: fuse-overlayfs (skipped: fuse-overlayfs is not installed" in caption
    assert len(chart.vconcat) == 2  # one row of panels per test


def test_a_mode_without_native_is_measured_but_not_compared():
    cells = {
        ("read", "native"): {"memory_bandwidth": [100.0, 101.0, 99.0, 100.5]},
        ("read", "podman"): {"memory_bandwidth": [98.0, 99.0, 97.0, 98.5]},
        ("write", "podman"): {"memory_bandwidth": [50.0, 51.0, 49.0, 50.5]},
    }
    samples, runs = _dataset(cells, {("write", "native"): "failed: sysbench exited 1"})
    runs.loc[(runs["variant"] == "write") & (runs["mode"] == "native"), "status"] = "failed"
    summary = host.summarise(samples, runs, "memory").set_index(
        ["variant", "mode"]
    )
    assert list(summary.index.get_level_values("variant")) == ["write", "write", "read", "read"]
    row = summary.loc[("write", "podman")]
    assert row["median"] == pytest.approx(50.25) and np.isnan(row["ratio"])
    assert row["reason"] == "no native baseline measured on path host"
    assert pd.isna(row["verdict"])
    native = summary.loc[("write", "native")]
    assert native["status"] == "failed" and native["metric"] == "memory_bandwidth"


def test_a_variant_measured_nowhere_keeps_its_rows():
    cells = {("1thread", "native"): {"cpu_events_per_s": [10.0, 11.0, 9.0, 10.0]}}
    reason = "skipped: no such thing here"
    samples, runs = _dataset(cells, {("allthreads", "native"): reason})
    summary = host.summarise(samples, runs, "cpu")
    row = summary.set_index(["variant", "mode"]).loc[("allthreads", "native")]
    # Named after the benchmark's own metric (pipeline.benchmarks.Cpu.summary_metric).
    assert row["metric"] == "cpu_events_per_s" and row["reason"] == reason


def test_cells_with_different_run_counts_compare_over_the_runs_both_measured():
    # a planned campaign: native and overlay2 went on to 7 runs, podman stopped after 3
    native = [100.0, 104.0, 98.0, 101.0, 99.0, 103.0, 100.5]
    ratios = [0.90, 0.93, 0.88, 0.91, 0.92, 0.89, 0.90]
    overlay2 = [v * r for v, r in zip(native, ratios, strict=True)]
    cells = {
        ("read", "native"): {"memory_bandwidth": native},
        ("read", "overlay2"): {"memory_bandwidth": overlay2},
        ("read", "podman"): {"memory_bandwidth": [v * 0.97 for v in native]},
    }
    samples, runs = _dataset(cells, n_runs=7)
    planned_out = lambda t: (t["mode"] == "podman") & (t["run"] > 3)  # noqa: E731
    samples, runs = samples[~planned_out(samples)], runs[~planned_out(runs)]
    got = host.summarise(samples, runs, "memory").set_index("mode")
    overlay = got.loc["overlay2"]
    assert overlay["ratio_n_runs"] == 7 and overlay["n_runs"] == 7
    assert overlay["ratio"] == pytest.approx(np.exp(np.mean(np.log(ratios))))
    podman = got.loc["podman"]
    assert podman["ratio_n_runs"] == 3 and podman["ratio"] == pytest.approx(0.97)
    assert (podman["n_runs"], podman["n_runs_planned"]) == (3, 3)
    assert pd.isna(podman["reason"]) or not podman["reason"]  # nothing is missing
    assert got.loc["native", "n_runs"] == 7
    table = host.article_table(got.reset_index())
    assert "3 of" not in table.to_string()
    # a mode with more runs than native (native's later runs failed): the common runs only
    fewer = samples[~((samples["mode"] == "native") & (samples["run"] > 5))]
    fewer_runs = runs.copy()
    fewer_runs.loc[(runs["mode"] == "native") & (runs["run"] > 5), "status"] = "failed"
    got = host.summarise(fewer, fewer_runs, "memory").set_index("mode")
    assert got.loc["overlay2", "ratio_n_runs"] == 5
    assert got.loc["overlay2", "ratio"] == pytest.approx(np.exp(np.mean(np.log(ratios[:5]))))
