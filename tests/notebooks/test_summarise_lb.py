"""Run notebooks/analysis/31-summarise-lb.ipynb with papermill on the committed lb fixture
(tests/fixtures/make_fixture_coldstart_lb.py) and check its outputs against the answers the
fixture was built around; then that this run reproduces the checked cells of the executed copy
(31-summarise-lb.fixture.ipynb)."""

from __future__ import annotations

import json

import notebook_checks as nc
import numpy as np
import pandas as pd
import pytest

NOTEBOOK = nc.ANALYSIS / "31-summarise-lb.ipynb"
COPY = nc.HERE / "31-summarise-lb.fixture.ipynb"
IPVS = (
    "skipped: kernel on node1 has no IPVS (no /proc/net/ip_vs, CONFIG_IP_VS not set): no Swarm "
    "service VIP and no routing mesh"
)
# By construction: req/s as a share of direct-r1's (20,000 req/s) at 1, 2, 4 replicas.
SHARES = {"haproxy": (0.45, 0.475, 0.49), "nginx": (0.55, 0.575, 0.59), "dnsrr": (0.9, 0.925, 0.93)}

executed = nc.executed_fixture("lb", confidence=0.95, multiplicity="holm")


@pytest.fixture(scope="module")
def summary(executed) -> pd.DataFrame:
    return pd.read_parquet(executed["processed"] / "lb_summary.parquet").set_index("variant")


def test_ratios_to_direct_match_the_construction(summary):
    assert summary.loc["direct-r1", "rps"] == 20000.0
    for balancer, shares in SHARES.items():
        for n, share in zip((1, 2, 4), shares, strict=True):
            row = summary.loc[f"{balancer}-r{n}"]
            assert row["ratio"] == pytest.approx(share, rel=0.005)
            assert row["ratio_lo"] <= row["ratio"] <= row["ratio_hi"] < 1.0
            assert row["overhead_pct"] == pytest.approx(100 * (1 - row["ratio"]))
    # per-run medians by hand: haproxy-r1's five rates
    per_run = pd.read_parquet(
        nc.ROOT / "tests" / "fixtures" / "raw" / "lb" / "lab" / "runs.parquet"
    )
    assert len(per_run) == 5 * 13
    assert summary.loc["haproxy-r2", "errors_total"] == 12


def test_skipped_and_failed_variants_are_reported(executed, summary):
    for n in (1, 2, 4):
        assert summary.loc[f"vip-r{n}", "status"] == "skipped"
        assert summary.loc[f"vip-r{n}", "reason"] == IPVS
    assert summary.loc["nginx-r4", "n_runs"] == 4
    table = pd.read_csv(executed["tables"] / "lb.csv", keep_default_na=False)
    vip = table[table["Balancer"] == "Swarm VIP / routing mesh"]
    assert list(vip["req/s [95% CI]"]) == ["n/a"] * 3 and list(vip["Note"]) == [IPVS] * 3
    caption = (executed["figures"] / "lb.caption.md").read_text()
    # the reason once, with every replica count it stopped
    assert "Swarm VIP / routing mesh with 1, 2 or 4 replicas: not measured (skipped: " in caption
    assert caption.count(IPVS) == 1


def test_table_and_figure_files(executed):
    tabs, figs = executed["tables"], executed["figures"]
    md = (tabs / "lb.md").read_text()
    assert md.startswith("Table: Load balancing: requests per second")
    assert (
        "| Direct (one replica, no balancer) | 1 | 20,000 [19,600, 20,400] | 100 (baseline) |" in md
    )
    assert r"Overhead vs direct \%" in (tabs / "lb.tex").read_text()
    assert (figs / "lb.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    spec = json.loads((figs / "lb.vl.json").read_text())
    assert len(spec["layer"]) == 7  # direct band, line, label + the balancers' four layers
    per_run = pd.read_parquet(executed["processed"] / "lb_per_run.parquet")
    assert len(per_run) == 10 * 5 - 1 and not np.isnan(per_run["p99.9_us"]).any()


def test_source_notebook_is_clean_and_thin():
    nc.assert_source_clean_and_thin(NOTEBOOK, {*nc.DIR_PARAMETERS, "confidence", "multiplicity"})


def test_executed_copy_matches_source():
    nc.assert_copy_matches_source(NOTEBOOK, COPY, "lb")


def test_executed_copy_has_checked_headline_outputs():
    text = nc.headline_text(COPY, n_cells=2)
    assert "lab direct-r1: ok, 5 runs, 20000.0 req/s [19600.0, 20400.0] (coverage 0.9375)" in text
    assert "lab haproxy-r1: ok, 5 runs, 8973.0 req/s" in text and "ratio 0.4497 [" in text
    assert f"lab vip-r4: skipped, n/a ({IPVS})" in text
    assert "| nginx | 4 | 11,829 [11,552, 11,988] |" in text and "| 4 of 5 |" in text
    assert "| +55.0 [+54.9, +55.2] | overhead |" in text  # HAProxy, 1 replica: its verdict


def test_a_fresh_run_reproduces_the_copys_checked_cells(executed):
    nc.assert_reproduces_copy(executed)
