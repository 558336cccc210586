"""Run notebooks/analysis/21-summarise-latency.ipynb with papermill on the committed fixture and
check its outputs against numbers computed here, independently, from the fixture files; then that
this run reproduces the checked cells of the executed copy (21-summarise-latency.fixture.ipynb)."""

from __future__ import annotations

import notebook_checks as nc
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from scipy import stats as st

NOTEBOOK = nc.ANALYSIS / "21-summarise-latency.ipynb"
EXECUTED = nc.HERE / "21-summarise-latency.fixture.ipynb"
LAB = nc.FIXTURE / "latency" / "lab"
CONFIDENCE, MARGIN = 0.95, 0.05
# make_fixture.py's MODE_SHIFT_US: what each mode adds to native, by construction.
SHIFTS = {
    ("docker-bridge", "dc"): 8.0,
    ("docker-nat", "dc"): 10.0,
    ("swarm-overlay", "dc"): 25.0,
    ("docker-proxy", "local"): 35.0,
}
# Shifts that stay inside the 5% margin by construction: +1 us (docker-host) and +2 us
# (macvlan) on a ~57-69 us datacenter median, and every shift (<= 10 us) on the ~40 ms
# Internet round trip.
SMALL = {("docker-host", "dc"): 1.0, ("macvlan", "dc"): 2.0}
INTERNET_MODES = ("docker-host", "docker-bridge", "docker-nat")


executed = nc.executed_fixture(
    "latency", confidence=CONFIDENCE, margin=MARGIN, multiplicity="holm"
)


@pytest.fixture(scope="module")
def summary(executed) -> pd.DataFrame:
    return pd.read_parquet(executed["processed"] / "latency_summary.parquet").set_index(
        ["mode", "path", "variant"]
    )


@pytest.fixture(scope="module")
def measured() -> pd.DataFrame:
    """Measured round trips straight from the parquet files, without the pipeline package."""
    samples = pq.read_table(LAB / "samples.parquet").to_pandas()
    runs = pq.read_table(LAB / "runs.parquet").to_pandas()
    rtt = samples[samples["metric"].isin(["udp_rtt", "tcp_rtt"]) & ~samples["warmup"]]
    ok = runs.loc[runs["status"] == "ok", [*nc.KEYS, "run"]]
    return rtt.merge(ok, on=[*nc.KEYS, "run"])


def _values(measured, mode, path, variant, runs=None) -> pd.DataFrame:
    sel = measured[
        (measured["mode"] == mode) & (measured["path"] == path) & (measured["variant"] == variant)
    ]
    return sel if runs is None else sel[sel["run"].isin(runs)]


def _run_quantiles(values: pd.DataFrame, q: float) -> pd.Series:
    return values.groupby("run")["value"].quantile(q, interpolation="lower").sort_index()


def test_percentiles_match_an_independent_computation(summary, measured):
    """Each run's own percentile, their geometric mean and scipy's t interval of the logs;
    p99.9 needs 10,000 samples per run and the fixture's runs have 1,000: n/a, with why."""
    for (mode, path, variant), row in summary.iterrows():
        values = _values(measured, mode, path, variant)
        if not len(values):
            assert row["n_runs"] == 0
            continue
        for q, lab in ((0.5, "p50"), (0.99, "p99")):
            per_run = np.array([np.quantile(g, q, method="inverted_cdf")
                                for _, g in values.groupby("run")["value"]])  # fmt: skip
            logs = np.log(per_run)
            ci = st.ttest_1samp(logs, 0.0).confidence_interval(CONFIDENCE)
            assert row[f"{lab}_us"] == pytest.approx(np.exp(logs.mean()), rel=1e-12)
            assert row[f"{lab}_lo_us"] == pytest.approx(np.exp(ci.low), rel=1e-12)
            assert row[f"{lab}_hi_us"] == pytest.approx(np.exp(ci.high), rel=1e-12)
        assert np.isnan(row["p99.9_us"]) and "p99.9 needs 10,000" in row["tail_note"]
        assert row["n_samples"] == len(values)


def test_overheads_recover_the_constructed_shifts(summary):
    for (mode, path), shift in SHIFTS.items():
        for variant in ("udp", "tcp"):
            row = summary.loc[(mode, path, variant)]
            assert row["d_p50_us"] == pytest.approx(shift, abs=1.0)
            assert row["d_p50_lo_us"] <= shift <= row["d_p50_hi_us"]
            assert row["d_p50_lo_us"] > 0  # clearly an overhead at these sizes
            assert row["d_p99_us"] == pytest.approx(shift, abs=3.0)


def test_overhead_interval_is_the_paired_t_interval_of_the_runs(summary, measured):
    row = summary.loc[("docker-bridge", "dc", "udp")]
    mode = _values(measured, "docker-bridge", "dc", "udp")
    base = _values(measured, "native", "dc", "udp")
    runs = np.intersect1d(mode["run"].unique(), base["run"].unique())

    def p99(cell, r):
        return np.quantile(cell.loc[cell["run"] == r, "value"], 0.99, method="inverted_cdf")

    qm, qb = np.array([p99(mode, r) for r in runs]), np.array([p99(base, r) for r in runs])
    ci = st.ttest_rel(qm, qb).confidence_interval(CONFIDENCE)
    assert row["d_p99_us"] == pytest.approx(np.mean(qm - qb), rel=1e-12)
    assert row["d_p99_lo_us"] == pytest.approx(ci.low, rel=1e-12)
    assert row["d_p99_hi_us"] == pytest.approx(ci.high, rel=1e-12)
    ratio = st.ttest_rel(np.log(qm), np.log(qb)).confidence_interval(CONFIDENCE)
    assert row["ratio_p99"] == pytest.approx(np.exp(np.mean(np.log(qm / qb))), rel=1e-12)
    assert row["ratio_p99_lo"] == pytest.approx(np.exp(ratio.low), rel=1e-12)
    assert row["overhead_n_runs"] == 6


def test_failed_run_and_warmups_are_excluded(summary, measured):
    samples = pq.read_table(LAB / "samples.parquet").to_pandas()
    macvlan = samples.query("mode == 'macvlan' and path == 'dc' and variant == 'udp'")
    assert macvlan["warmup"].sum() > 0 and (macvlan["run"] == 4).any()
    row = summary.loc[("macvlan", "dc", "udp")]
    assert row["n_runs"] == 5 and row["n_samples"] == 5000
    # The failed run's 300 samples sit near 900 us and warm-ups near 5000 us.
    assert row["p99_us"] < 200
    assert row["d_p50_us"] == pytest.approx(2.0, abs=1.0)
    assert row["overhead_n_runs"] == 5


def test_skipped_mode_is_reported_not_dropped(executed, summary):
    for variant in ("udp", "tcp"):
        row = summary.loc[("swarm-ingress", "dc", variant)]
        assert row["status"] == "skipped" and row["reason"] == nc.IPVS_REASON
        assert row["n_runs"] == 0 and np.isnan(row["p50_us"])
    md = (executed["tables"] / "latency.md").read_text()
    assert (
        "| Swarm ingress (routing mesh) | datacenter | udp | n/a | n/a | n/a | n/a | n/a | n/a "
        f"| n/a | n/a | 0 of 6 | {nc.IPVS_REASON} |" in md
    )
    caption = (executed["figures"] / "latency_percentiles.caption.md").read_text()
    assert "Not measured: Swarm ingress (routing mesh) (skipped: kernel has no IPVS" in caption


def test_article_table_rows(executed, summary):
    table = pd.read_csv(executed["tables"] / "latency.csv", keep_default_na=False)
    assert list(table.columns[:7]) == [
        "Configuration",
        "Path",
        "Variant",
        "p50 us [95% CI]",
        "p95 us [95% CI]",
        "p99 us [95% CI]",
        "p99.9 us [95% CI]",
    ]
    row = summary.loc[("docker-bridge", "dc", "udp")]
    bridge = table[(table["Configuration"] == "Docker bridge") & (table["Variant"] == "udp")]
    bridge = bridge[bridge["Path"] == "datacenter"].iloc[0]
    assert bridge["p50 us [95% CI]"] == (
        f"{row['p50_us']:.1f} [{row['p50_lo_us']:.1f}, {row['p50_hi_us']:.1f}]"
    )
    assert bridge["Overhead p50 us [95% CI]"].startswith(f"+{row['d_p50_us']:.1f} [+")
    internet = table[(table["Path"] == "internet") & (table["Configuration"] == "Native")]
    assert internet.iloc[0]["p50 us [95% CI]"].startswith("40")  # ~40 ms, whole microseconds
    macvlan = table[(table["Configuration"] == "Docker macvlan") & (table["Variant"] == "udp")]
    assert macvlan.iloc[0]["Runs"] == "5 of 6" and "failed: sockperf" in macvlan.iloc[0]["Note"]


def test_verdicts_follow_the_construction(summary, measured):
    for variant in ("udp", "tcp"):
        # 8-35 us on 25-70 us round trips: overheads far beyond the margin, at p50 and p99.
        for mode, path in SHIFTS:
            row = summary.loc[(mode, path, variant)]
            assert (row["verdict_p50"], row["verdict_p99"]) == ("overhead", "overhead")
        # 1-2 us at the median: real (the 95% interval of the ratio is above 1) and inside the
        # 5% margin by each comparison's own TOST; whether "equivalent" survives the table's
        # Holm adjustment is the next test's business.
        for mode, path in SMALL:
            row = summary.loc[(mode, path, variant)]
            assert row["tost_p50_p"] < 0.05 and row["ratio_p50_lo"] > 1.0
            assert row["ratio_p50_eq_hi"] < 1 + MARGIN
        # The Internet path is judged on the added microseconds (+-100 us): the fixture's
        # per-run medians move by a hundred microseconds with its jitter, so six runs cannot
        # tell a 10 us shift from none, and the table says what size they could.
        for mode in INTERNET_MODES:
            row = summary.loc[(mode, "internet", variant)]
            assert row["margin_us"] == 100.0 and pd.isna(row["margin"])
            assert (row["verdict_p50"], row["verdict_p99"]) == ("inconclusive", "inconclusive")
            assert row["d_p50_lo_us"] < 10.0 and row["d_p50_hi_us"] > 0.0
            assert row["resolvable_p50"] > 100.0
        for mode, path in (("native", "dc"), ("swarm-ingress", "dc")):
            assert pd.isna(summary.loc[(mode, path, variant), "verdict_p50"])
    row = summary.loc[("docker-bridge", "dc", "udp")]
    assert row["ratio_p50_lo"] <= row["ratio_p50_eq_lo"] <= row["ratio_p50_eq_hi"]
    assert row["ratio_p50_eq_hi"] <= row["ratio_p50_hi"]


def _holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjustment, written out: sorted p times (m - rank), running max."""
    order = np.argsort(p)
    m = p.size
    adjusted = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out


def test_verdicts_are_holm_adjusted_across_the_table(summary):
    compared = summary[summary["verdict_p50"].notna()]
    for kind in ("tost", "diff"):
        raw = np.r_[compared[f"{kind}_p50_p"], compared[f"{kind}_p99_p"]]
        adjusted = np.r_[compared[f"{kind}_p50_p_adj"], compared[f"{kind}_p99_p_adj"]]
        np.testing.assert_allclose(adjusted, _holm(raw), rtol=1e-12)
    assert set(summary["multiplicity"]) == {f"holm across {2 * len(compared)} comparisons"}
    for _, row in compared.iterrows():
        for lab in ("p50", "p99"):
            tost, diff = row[f"tost_{lab}_p_adj"], row[f"diff_{lab}_p_adj"]
            expected = ("equivalent" if tost < 0.05 else
                        ("overhead" if row[f"ratio_{lab}"] > 1 else "faster") if diff < 0.05
                        else "inconclusive")  # fmt: skip
            assert row[f"verdict_{lab}"] == expected


def test_tost_on_per_run_percentiles(summary, measured):
    # Recomputed by hand from the fixture: per-run p50 of each run both measured, log ratios,
    # two one-sided t tests against log(0.95) and log(1.05).
    mode = _values(measured, "docker-host", "dc", "udp")
    base = _values(measured, "native", "dc", "udp")
    runs = np.intersect1d(mode["run"].unique(), base["run"].unique())
    p50 = [
        [np.quantile(f.loc[f["run"] == r, "value"], 0.5, method="inverted_cdf") for r in runs]
        for f in (mode, base)
    ]
    d = np.log(p50[0]) - np.log(p50[1])
    se, df = d.std(ddof=1) / np.sqrt(d.size), d.size - 1
    p = max(
        st.t.sf((d.mean() - np.log(1 - MARGIN)) / se, df),
        st.t.cdf((d.mean() - np.log(1 + MARGIN)) / se, df),
    )
    row = summary.loc[("docker-host", "dc", "udp")]
    assert row["tost_p50_p"] == pytest.approx(p, rel=1e-9)
    assert row["ratio_p50"] == pytest.approx(np.exp(d.mean()))
    # On the Internet path the TOST is on the per-run shifts in microseconds, against +-100.
    mode = _values(measured, "docker-host", "internet", "udp")
    base = _values(measured, "native", "internet", "udp")
    d = np.array([
        np.quantile(mode.loc[mode["run"] == r, "value"], 0.5, method="inverted_cdf")
        - np.quantile(base.loc[base["run"] == r, "value"], 0.5, method="inverted_cdf")
        for r in runs
    ])  # fmt: skip
    se, df = d.std(ddof=1) / np.sqrt(d.size), d.size - 1
    p = max(st.t.sf((d.mean() + 100.0) / se, df), st.t.cdf((d.mean() - 100.0) / se, df))
    row = summary.loc[("docker-host", "internet", "udp")]
    assert row["tost_p50_p"] == pytest.approx(p, rel=1e-9)
    assert row["d_p50_us"] == pytest.approx(d.mean())


def test_verdict_in_the_article_table(executed):
    table = pd.read_csv(executed["tables"] / "latency.csv", keep_default_na=False)
    udp_dc = table[(table["Variant"] == "udp") & (table["Path"] == "datacenter")]
    verdict = dict(zip(udp_dc["Configuration"], udp_dc["Verdict p50 (±5%)"], strict=True))
    assert verdict["Docker bridge"] == "overhead"
    assert verdict["Docker host network"] == "equivalent (small overhead)"
    assert verdict["Native"] == "" and verdict["Swarm ingress (routing mesh)"] == "n/a"
    assert "Verdict p99 (±5%)" in table.columns
    md = (executed["tables"] / "latency.md").read_text()
    assert "margin of ±5% on the ratio fixed in params.yaml" in md
    assert "Multiplicity: Holm adjustment of the table's p-values (across" in md


def test_figure_and_table_files_exist(executed):
    for stem in ("latency_ecdf", "latency_percentiles"):
        svg = (executed["figures"] / f"{stem}.svg").read_text()
        assert svg.startswith("<svg") and "Docker bridge" in svg
        png = (executed["figures"] / f"{stem}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
        assert "t interval" in (executed["figures"] / f"{stem}.caption.md").read_text() or (
            "empirical CDF" in (executed["figures"] / f"{stem}.caption.md").read_text()
        )
    for suffix in ("md", "csv", "tex"):
        assert (executed["tables"] / f"latency.{suffix}").stat().st_size > 0


def test_source_notebook_is_clean_and_thin():
    nc.assert_source_clean_and_thin(
        NOTEBOOK, {*nc.DIR_PARAMETERS, "confidence", "margin", "multiplicity", "internet_margin_us",
                  "headline"}
    )


# --- the executed copy ------------------------------------------------------------------


def test_executed_copy_matches_source():
    nc.assert_copy_matches_source(NOTEBOOK, EXECUTED, "latency")


def test_executed_copy_has_checked_headline_outputs():
    text = nc.headline_text(EXECUTED, n_cells=2)
    assert "lab docker-bridge dc udp: ok, 6 runs, 6000 samples, p50 65.0" in text
    assert "lab swarm-ingress dc udp: skipped, n/a (skipped: kernel has no IPVS" in text
    assert "| Docker macvlan | datacenter | udp |" in text
    assert "p50 verdict overhead, p99 verdict overhead" in text
    assert "| equivalent (small overhead) |" in text


def test_a_fresh_run_reproduces_the_copys_checked_cells(executed):
    nc.assert_reproduces_copy(executed)
