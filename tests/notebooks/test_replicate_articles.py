"""Run notebooks/analysis/25-replicate-articles.ipynb with papermill on the committed processed
fixture and check specific verdicts against numbers computed here from the fixture files; then that
this run reproduces the checked cells of the executed copy (25-replicate-articles.fixture.ipynb).

The notebook reads what the summarise stages write, not raw data. Its fixture,
tests/fixtures/processed/<benchmark>/, is the output of notebooks 20-22 on the committed raw
fixture (tests/fixtures/make_processed.py), committed so that this test and the executed copy do
not depend on other tests having run. ``test_processed_fixture_is_current`` recomputes the
columns the replication reads from the raw fixture and fails when the committed files are stale.
"""

from __future__ import annotations

import notebook_checks as nc
import numpy as np
import pandas as pd
import pytest

from pipeline.analysis import coldstart as coldstart_analysis
from pipeline.analysis import footprint as footprint_analysis
from pipeline.analysis import host as host_analysis
from pipeline.analysis import latency as latency_analysis
from pipeline.analysis import lb as lb_analysis
from pipeline.analysis import orchestration as orchestration_analysis
from pipeline.analysis import throughput as throughput_analysis
from pipeline.data import schema

NOTEBOOK = nc.ANALYSIS / "25-replicate-articles.ipynb"
EXECUTED = nc.HERE / "25-replicate-articles.fixture.ipynb"
PROCESSED = nc.ROOT / "tests" / "fixtures" / "processed"
PUBLISHED = nc.ROOT / "data" / "reference" / "published.csv"
CONFIDENCE = 0.95
PARAMETERS = {"published_csv", "processed_dir", "tables_dir", "confidence"}
REGENERATE = "regenerate it: python tests/fixtures/make_processed.py"


executed = nc.executed_fixture(
    "replication", published_csv="data/reference/published.csv",
    processed_dir="tests/fixtures/processed", confidence=CONFIDENCE,
)  # fmt: skip


@pytest.fixture(scope="module")
def table(executed) -> pd.DataFrame:
    frame = pd.read_csv(executed["tables"] / "replication.csv", keep_default_na=False, dtype=str)
    return frame.set_index("ID")


def _summary(stem: str) -> pd.DataFrame:
    return pd.read_parquet(PROCESSED / stem.split("_")[0] / f"{stem}.parquet")


def _span(value: float, half: float) -> tuple[float, float]:
    return value - half, value + half


def _verdict(lo: float, hi: float, claim: tuple[float, float]) -> str:
    """The verdict rule, restated here: the study's interval inside, outside or across."""
    if claim[0] <= lo and hi <= claim[1]:
        return "reproduced"
    return "contradicted" if hi < claim[0] or lo > claim[1] else "not resolved"


def test_one_row_per_published_number(table):
    assert len(table) == len(pd.read_csv(PUBLISHED)) == 133
    assert set(table["Verdict"]) == {
        "reproduced", "contradicted", "not resolved", "not transferable here", "not measured",
    }  # fmt: skip


def test_throughput_ratio_from_the_summary(table):
    # 000: Swarm overlay (custom) 18.4 Gbit/s against bare metal 24.1 on 25 GbE: the study's
    # ratio is shown, the verdict is not transferable (a NIC-bound native there)
    s = _summary("throughput_summary").set_index(["mode", "path"]).loc[("swarm-overlay", "dc")]
    row = table.loc["000-tcp-overlay-custom"]
    assert row["Study [95% CI]"] == f"{s['ratio']:.3f} [{s['ratio_lo']:.3f}, {s['ratio_hi']:.3f}]"
    v, b = _span(18.4, 0.05), _span(24.1, 0.05)
    claim = (v[0] / b[1] - 0.05, v[1] / b[0] + 0.05)
    assert row["Claim"] == (
        f"= {18.4 / 24.1:.3f} ±0.05 ({claim[0]:.3f} to {claim[1]:.3f})"
    )
    assert row["Verdict"] == "not transferable here" and row["Runs"] == "5"
    assert row["Why"].startswith("the article's native is NIC-bound (24.1 Gbit/s on 25 GbE)")
    # 002: Docker host network 10.3 against host network 10.3, = 1 within 0.05 (and rounding)
    s = _summary("throughput_summary").set_index(["mode", "path"]).loc[("docker-host", "dc")]
    claim = (10.25 / 10.35 - 0.05, 10.35 / 10.25 + 0.05)
    expected = _verdict(s["ratio_lo"], s["ratio_hi"], claim)
    assert table.loc["002-tput-docker-host", "Verdict"] == expected == "reproduced"


def test_cross_path_ratio_from_per_run_values(table):
    # 002: docker-proxy over localhost against the host network measured across the network
    per_run = _summary("throughput_per_run")
    proxy = per_run[(per_run["mode"] == "docker-proxy") & (per_run["path"] == "local")]
    native = per_run[(per_run["mode"] == "native") & (per_run["path"] == "dc")]
    both = proxy.merge(native, on="run", suffixes=("", "_native"))
    ratio = np.exp(np.mean(np.log(both["value"] / both["value_native"])))  # geometric mean
    row = table.loc["002-tput-proxy"]
    assert row["Study [95% CI]"].startswith(f"{ratio:.3f} [")
    lo, hi = (float(x) for x in row["Study [95% CI]"].split("[")[1].rstrip("]").split(","))
    assert lo <= ratio <= hi
    # the proxy pegged the article's CPUs against a NIC-bound native: not transferable
    assert row["Verdict"] == "not transferable here" and "pegged" in row["Why"]


def test_latency_difference_from_the_summary(table):
    # 001: a p99 delta of ~5 us for Docker networking in a data center, = 5 us +-5 us
    s = _summary("latency_summary").set_index(["mode", "path", "variant"])
    s = s.loc[("docker-nat", "dc", "udp")]
    row = table.loc["001-udp-p99-delta"]
    assert row["Study [95% CI]"].startswith(f"+{s['d_p99_us']:.1f} us [")
    assert row["Scale"] == "added us"
    expected = _verdict(s["d_p99_lo_us"], s["d_p99_hi_us"], (4.5 - 5.0, 5.5 + 5.0))
    assert row["Verdict"] == expected == "not resolved"


def test_http_latency_as_added_microseconds(table):
    s = _summary("http_summary").set_index(["mode", "path"]).loc[("swarm-overlay", "dc")]
    # 0.19 vs 0.12 ms: +70 us, rounding 60..80, = within 10 us: 50..90
    row = table.loc["000-http-overlay-p50"]
    assert row["Claim"] == "= +70.0 us ±10 us (+50.0 us to +90.0 us)"
    expected = _verdict(s["d_p50_lo_us"], s["d_p50_hi_us"], (50.0, 90.0))
    assert row["Verdict"] == expected
    # the conclusion's "overlay adds 10-30% latency", as 10-30% of the article's 0.12 ms
    row = table.loc["000-bottom-overlay-latency"]
    claim = (0.095 * 115.0, 0.305 * 125.0)
    assert row["Verdict"] == _verdict(s["d_p50_lo_us"], s["d_p50_hi_us"], claim)
    assert row["Headline"] == "yes"
    p95 = table.loc["000-http-overlay-p95"]
    assert p95["Verdict"] == "not measured"
    assert p95["Why"].startswith("the http summary keeps differences to native at p50 and p99")


@pytest.mark.parametrize(
    ("row_id", "verdict", "note"),
    [
        ("000-tcp-overlay-ingress", "not transferable here", "the article's native is NIC-bound"),
        ("000-http-mesh-p50", "not measured", f"swarm-ingress on the dc path: {nc.IPVS_REASON}"),
        ("003-swarm-1", "not transferable here", "in the lab the client, the balancer"),
        (
            "004-tput-slirp4netns",
            "not measured",
            "rootless-docker was not measured on the local path (throughput data); the study "
            "profile measures it",
        ),
        ("004-start-podman-rootless-p50", "not measured", "rootless-podman on the host path: "),
        ("000-mem-dockerd-manager-idle", "not measured", "an absolute RSS in MB"),
        ("004-lat-pasta", "not measured", "a difference between two container modes"),
        ("003-order-haproxy-vip", "not measured", "the article compares with swarm-overlay"),
    ],
)
def test_rows_without_a_decided_verdict_say_why(table, row_id, verdict, note):
    row = table.loc[row_id]
    assert row["Verdict"] == verdict
    assert row["Why"].startswith(note), row["Why"]


def test_article_misprint_is_noted(table):
    assert table.loc["002-tput-bridge", "Why"].endswith(
        "the article prints 0.78 but its own numbers give 0.867"
    )


def test_table_files(executed):
    md = (executed["tables"] / "replication.md").read_text(encoding="utf-8")
    assert md.startswith("Table: Every claim of the five published articles")
    assert "absolute numbers are never compared" in md.splitlines()[0]
    tex = (executed["tables"] / "replication.tex").read_text(encoding="utf-8")
    assert r"\begin{tabular}" in tex and "002-tput-proxy" in tex


def test_processed_fixture_is_current():
    """The committed summaries are what the summarise stages give on the raw fixture today,
    in every column the replication reads."""
    samples, runs = throughput_analysis.load(nc.FIXTURE)
    fresh = throughput_analysis.summarise(
        samples, runs, confidence=CONFIDENCE
    )
    cols = ["mode", "path", "status", "ratio", "ratio_lo", "ratio_hi", "ratio_n_runs"]
    pd.testing.assert_frame_equal(
        fresh[cols], _summary("throughput_summary")[cols], obj=f"throughput ({REGENERATE})"
    )
    per_run = throughput_analysis.per_run_throughput(samples, runs)
    pd.testing.assert_frame_equal(
        per_run[["mode", "path", "run", "value"]],
        _summary("throughput_per_run")[["mode", "path", "run", "value"]],
        obj=f"throughput per run ({REGENERATE})",
    )
    cols = ["mode", "path", "variant", "status", "overhead_n_runs"]
    cols += [f"ratio_{q}{s}" for q in ("p50", "p99") for s in ("", "_lo", "_hi")]
    cols += ["d_p99_us", "d_p99_lo_us", "d_p99_hi_us"]
    for benchmark, metrics in (
        ("latency", latency_analysis.LATENCY_METRICS),
        ("http", latency_analysis.HTTP_METRICS),
    ):
        cells = latency_analysis.load_cells(nc.FIXTURE, benchmark, metrics)
        fresh = latency_analysis.summarise(
            cells,
            latency_analysis.load_runs(nc.FIXTURE, benchmark),
            variants=metrics,
            confidence=CONFIDENCE,
        )
        pd.testing.assert_frame_equal(
            fresh[cols].reset_index(drop=True),
            _summary(f"{benchmark}_summary")[cols].reset_index(drop=True),
            obj=f"{benchmark} ({REGENERATE})",
        )
    cols = ["mode", "path", "variant", "status", "ratio", "ratio_lo", "ratio_hi", "ratio_n_runs"]
    for benchmark in ("cpu", "memory"):
        samples, runs = host_analysis.load(nc.FIXTURE, benchmark)
        fresh = host_analysis.summarise(
            samples, runs, benchmark, confidence=CONFIDENCE
        )
        pd.testing.assert_frame_equal(
            fresh[cols], _summary(f"{benchmark}_summary")[cols], obj=f"{benchmark} ({REGENERATE})"
        )
    cols = ["mode", "path", "variant", "run", "value"]
    for benchmark in ("cpu", "memory"):
        samples, runs = host_analysis.load(nc.FIXTURE, benchmark)
        pd.testing.assert_frame_equal(
            host_analysis.per_run(samples, runs)[cols].reset_index(drop=True),
            _summary(f"{benchmark}_per_run")[cols].reset_index(drop=True),
            obj=f"{benchmark} per run ({REGENERATE})",
        )
    samples, runs = lb_analysis.load(nc.FIXTURE)
    cols = ["mode", "path", "variant", "run", "rps"]
    pd.testing.assert_frame_equal(
        lb_analysis.per_run(samples, runs)[cols].reset_index(drop=True),
        _summary("lb_per_run")[cols].reset_index(drop=True),
        obj=f"lb per run ({REGENERATE})",
    )
    fresh = lb_analysis.summarise(samples, runs, confidence=CONFIDENCE)
    cols = ["mode", "path", "variant", "status", "baseline_mode", "ratio", "ratio_lo"]
    cols += ["ratio_hi", "ratio_mean", "ratio_mean_lo", "ratio_mean_hi", "ratio_n_runs"]
    pd.testing.assert_frame_equal(
        fresh[cols], _summary("lb_summary")[cols], obj=f"lb ({REGENERATE})"
    )
    samples = schema.read_dataset(nc.FIXTURE, "coldstart", "samples")
    runs = schema.read_dataset(nc.FIXTURE, "coldstart", "runs")
    fresh = coldstart_analysis.summarise(
        samples, runs, confidence=CONFIDENCE
    )
    cols = ["mode", "path", "variant", "status", "overhead_n_runs", "rootful_mode"]
    cols += [f"{p}ratio_{q}{s}" for p in ("", "rootful_") for q in ("p50", "p95", "p99")
             for s in ("", "_lo", "_hi")]  # fmt: skip
    pd.testing.assert_frame_equal(
        fresh[cols], _summary("coldstart_summary")[cols], obj=f"coldstart ({REGENERATE})"
    )
    # footprint, density and orchestration (make_fixture_scaling.py; notebooks 28 and 30)
    cols = ["mode", "path", "variant", "status", "reference", "ratio", "ratio_lo", "ratio_hi"]
    cols += ["ratio_n_runs"]
    for benchmark, summarise in (
        ("footprint", footprint_analysis.cost_summary),
        ("density", footprint_analysis.density_table_summary),
    ):
        samples, runs = footprint_analysis.load(nc.FIXTURE, benchmark)
        fresh = summarise(samples, runs, confidence=CONFIDENCE)
        stored = pd.read_parquet(PROCESSED / "footprint" / f"{benchmark}_summary.parquet")
        pd.testing.assert_frame_equal(fresh[cols], stored[cols], obj=f"{benchmark} ({REGENERATE})")
    samples, runs = footprint_analysis.load(nc.FIXTURE, "orchestration")
    fresh = orchestration_analysis.stage_summary(samples, runs, confidence=CONFIDENCE)
    cols = ["mode", "path", "variant", "status", "n_runs", "median_s"]
    pd.testing.assert_frame_equal(
        fresh[cols], _summary("orchestration_summary")[cols], obj=f"orchestration ({REGENERATE})"
    )


def test_source_notebook_is_clean_and_thin():
    nc.assert_source_clean_and_thin(NOTEBOOK, PARAMETERS)


# --- the executed copy ------------------------------------------------------------------


def test_executed_copy_matches_source():
    nc.assert_copy_matches_source(NOTEBOOK, EXECUTED, "replication")


def test_executed_copy_has_checked_headline_outputs():
    text = nc.headline_text(EXECUTED, n_cells=2)
    assert (
        "reproduced: 11, contradicted: 14, not resolved: 3, not transferable here: 42, "
        "not measured: 63" in text
    )
    # make_fixture_scaling.py: rootless Docker's cost per container 1.5625 x rootful Docker's,
    # inside "~7 MB against ~4 MB" (rounding and the 0.05 tolerance: 1.394 to 2.193)
    assert (
        "lab 004-mem-docker-rootless: claim = 1.750 ±0.05 (1.394 to 2.193), study 1.562 "
        "[1.557, 1.568] (4 runs): reproduced" in text
    )
    # the cold-start and lb fixtures (make_fixture_coldstart_lb.py): rootless +20%, HAProxy 0.45;
    # 20 starts a run is too few for a p95, which the publication profile's 200 are not
    assert (
        "lab 004-start-docker-rootless-p50: claim = 1.183 ±0.05 (1.125 to 1.241), study "
        "1.200 [" in text
    )
    assert (
        "p95 is not reported: it needs 200 samples per run; the publication profile measures it"
        in text
    )
    assert "| 0.450 [0.448, 0.451] | 5 | not transferable here | in the lab the client" in text
    assert "| 002-tput-proxy | yes | Docker proxy |" in text
    assert "| 000-tcp-overlay-ingress |  | Swarm overlay (ingress) |" in text


def test_a_fresh_run_reproduces_the_copys_checked_cells(executed):
    nc.assert_reproduces_copy(executed)
