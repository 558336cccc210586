"""Run notebooks/analysis/22-summarise-http.ipynb with papermill on the committed fixture and
check its outputs against numbers computed here, independently, from the fixture files; then that
this run reproduces the checked cells of the executed copy (22-summarise-http.fixture.ipynb)."""

from __future__ import annotations

import notebook_checks as nc
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from scipy import stats as st

NOTEBOOK = nc.ANALYSIS / "22-summarise-http.ipynb"
EXECUTED = nc.HERE / "22-summarise-http.fixture.ipynb"
LAB = nc.FIXTURE / "http" / "lab"
CONFIDENCE, MARGIN = 0.95, 0.05
# make_fixture.py's HTTP_SHIFT_US.
SHIFTS = {
    ("docker-bridge", "dc"): 30.0,
    ("docker-nat", "dc"): 40.0,
    ("swarm-overlay", "dc"): 90.0,
    ("docker-proxy", "local"): 120.0,
}


executed = nc.executed_fixture(
    "http", confidence=CONFIDENCE, margin=MARGIN, multiplicity="holm"
)


@pytest.fixture(scope="module")
def summary(executed) -> pd.DataFrame:
    return pd.read_parquet(executed["processed"] / "http_summary.parquet").set_index(
        ["mode", "path"]
    )


@pytest.fixture(scope="module")
def measured() -> pd.DataFrame:
    """Measured rows (requests and per-window counters) of ok runs, without the pipeline."""
    samples = pq.read_table(LAB / "samples.parquet").to_pandas()
    runs = pq.read_table(LAB / "runs.parquet").to_pandas()
    ok = runs.loc[runs["status"] == "ok", [*nc.KEYS, "run"]]
    return samples[~samples["warmup"]].merge(ok, on=[*nc.KEYS, "run"])


def _per_run(values: pd.DataFrame, q: float) -> pd.Series:
    return values.groupby("run")["value"].agg(lambda v: np.quantile(v, q, method="inverted_cdf"))


def test_percentiles_and_overheads(summary, measured):
    """Each run's own percentile, their geometric mean; overheads: the mean of the per-run
    differences over the runs both measured. The fixture's 1,000 requests per run are enough
    for p99 (1,000), not for p99.9 (10,000): n/a."""
    latency = measured[measured["metric"] == "http_latency"]
    for (mode, path), row in summary.iterrows():
        mine = latency[(latency["mode"] == mode) & (latency["path"] == path)]
        if not len(mine):
            assert row["status"] == "skipped"
            continue
        for q, lab in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99")):
            per_run = _per_run(mine, q)
            assert row[f"{lab}_us"] == pytest.approx(np.exp(np.log(per_run).mean()), rel=1e-12)
        assert np.isnan(row["p99.9_us"]) and "p99.9 needs 10,000" in row["tail_note"]
        assert row["n_samples"] == len(mine) == 5000
    for (mode, path), shift in SHIFTS.items():
        row = summary.loc[(mode, path)]
        assert row["d_p50_us"] == pytest.approx(shift, abs=2.0)
        assert row["d_p50_lo_us"] <= shift <= row["d_p50_hi_us"]
        native = latency[(latency["mode"] == "native") & (latency["path"] == path)]
        mine = latency[(latency["mode"] == mode) & (latency["path"] == path)]
        d = (_per_run(mine, 0.99) - _per_run(native, 0.99)).dropna()
        assert row["d_p99_us"] == pytest.approx(d.mean(), rel=1e-12)


def test_achieved_rate_errors_and_late(summary, measured):
    for (mode, path), row in summary.iterrows():
        cell = measured[(measured["mode"] == mode) & (measured["path"] == path)]
        if not len(cell):
            assert np.isnan(row["rate_rps"]) and np.isnan(row["errors"])
            continue
        rate = cell[cell["metric"] == "http_achieved_rate"].groupby("run")["value"].mean()
        assert row["rate_rps"] == pytest.approx(np.median(rate), abs=1e-9)
        # 5 runs: the interval of the median is the range, with its true coverage.
        assert (row["rate_lo_rps"], row["rate_hi_rps"]) == (rate.min(), rate.max())
        assert row["rate_coverage"] == pytest.approx(
            st.binom.cdf(4, 5, 0.5) - st.binom.cdf(0, 5, 0.5)
        )
        assert row["errors"] == cell.loc[cell["metric"] == "http_errors", "value"].sum()
        assert row["late"] == cell.loc[cell["metric"] == "http_late", "value"].sum()
    assert summary.loc[("docker-proxy", "local"), "errors"] == 3
    assert summary.loc[("native", "dc"), "errors"] == 0


def test_verdicts_follow_the_construction(executed, summary):
    # HTTP_SHIFT_US on a ~184 us (dc) / ~124 us (local) median: docker-host +10 us (+5.4%)
    # to docker-proxy +120 us: every mode is an overhead at the median, whatever the margin.
    for mode, path in [*SHIFTS, ("docker-host", "dc"), ("macvlan", "dc")]:
        assert summary.loc[(mode, path), "verdict_p50"] == "overhead", mode
    # At the p99 (~283 us) the large shifts (+30 to +120 us) stay overheads.
    for mode, path in SHIFTS:
        assert summary.loc[(mode, path), "verdict_p99"] == "overhead", mode
    assert pd.isna(summary.loc[("native", "dc"), "verdict_p50"])
    assert pd.isna(summary.loc[("swarm-ingress", "dc"), "verdict_p50"])
    table = pd.read_csv(executed["tables"] / "http.csv", keep_default_na=False)
    verdict = dict(zip(table["Configuration"], table["Verdict p50 (±5%)"], strict=True))
    assert verdict["Swarm overlay"] == "overhead"
    assert verdict["Swarm ingress (routing mesh)"] == "n/a"


def test_table_and_figures(executed, summary):
    table = pd.read_csv(executed["tables"] / "http.csv", keep_default_na=False)
    proxy = table[table["Configuration"] == "Docker proxy (localhost)"].iloc[0]
    row = summary.loc[("docker-proxy", "local")]
    assert proxy["Path"] == "localhost" and proxy["Errors"] == "3"
    assert proxy["p99 us [95% CI]"] == (
        f"{row['p99_us']:.1f} [{row['p99_lo_us']:.1f}, {row['p99_hi_us']:.1f}]"
    )
    ingress = table[table["Configuration"] == "Swarm ingress (routing mesh)"].iloc[0]
    assert ingress["p50 us [95% CI]"] == "n/a" and ingress["Note"] == nc.IPVS_REASON
    assert ingress["Runs"] == "0 of 5"
    for stem in ("http_ecdf", "http_percentiles"):
        assert (executed["figures"] / f"{stem}.svg").read_text().startswith("<svg")
        assert len((executed["figures"] / f"{stem}.png").read_bytes()) > 10_000
    assert (executed["tables"] / "http.md").read_text().startswith("Table: HTTP request latency")


def test_source_notebook_is_clean_and_thin():
    nc.assert_source_clean_and_thin(
        NOTEBOOK, {*nc.DIR_PARAMETERS, "confidence", "margin", "multiplicity", "internet_margin_us",
                  "headline"}
    )


# --- the executed copy ------------------------------------------------------------------


def test_executed_copy_matches_source():
    nc.assert_copy_matches_source(NOTEBOOK, EXECUTED, "http")


def test_executed_copy_has_checked_headline_outputs():
    text = nc.headline_text(EXECUTED, n_cells=2)
    assert "lab docker-proxy local 1k: ok, 5 runs, 5000 samples, p50 244.4" in text
    assert "errors 3" in text
    assert "lab swarm-ingress dc 1k: skipped, n/a (skipped: kernel has no IPVS" in text
    assert "| Swarm overlay | datacenter | 1k |" in text
    assert "p50 verdict overhead" in text


def test_a_fresh_run_reproduces_the_copys_checked_cells(executed):
    nc.assert_reproduces_copy(executed)
