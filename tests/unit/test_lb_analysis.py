"""pipeline.analysis.lb on constructed samples with known answers, and on the committed fixture
(tests/fixtures/make_fixture_coldstart_lb.py): per-run values, the rank interval over runs, the
ratio to direct-r1 with its cluster bootstrap, latency medians, errors, skipped and failed
variants."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from pipeline.analysis import lb as lb
from pipeline.analysis import stats
from pipeline.data import schema

ROOT = Path(__file__).resolve().parents[2]
RAW = ROOT / "tests" / "fixtures" / "raw"


def _generator():
    path = ROOT / "tests" / "fixtures" / "make_fixture_coldstart_lb.py"
    spec = importlib.util.spec_from_file_location("make_fixture_coldstart_lb", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FX = _generator()


def _window(variant: str, run: int, rate: float, errors: float = 0.0, warmup: bool = False,
            mode: str = "swarm-overlay"):  # fmt: skip
    common = {"environment": "lab", "mode": mode, "path": "dc", "variant": variant,
              "run": run, "rep": 0 if warmup else 1, "warmup": warmup}  # fmt: skip
    rows = [{**common, "metric": lb.RATE, "sample": 0, "value": rate},
            {**common, "metric": lb.ERRORS, "sample": 0, "value": errors}]  # fmt: skip
    for sample, factor in ((500, 1.0), (900, 2.0), (990, 4.0), (999, 8.0)):
        rows.append(
            {**common, "metric": lb.LATENCY, "sample": sample, "value": 1e6 / rate * factor}
        )
    return rows


def _data(
    cells: dict, status: dict | None = None, mode: str = "swarm-overlay"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``cells``: variant -> per-run rates (None: no samples); ``status``: (variant, run) ->
    (status, reason) for runs that were not ok."""
    status = status or {}
    samples, runs = [], []
    for variant, rates in cells.items():
        for run, rate in enumerate(rates, start=1):
            st, reason = status.get((variant, run), ("ok", None))
            cell = {"environment": "lab", "mode": mode, "path": "dc"}
            runs.append({**cell, "variant": variant, "run": run, "status": st, "reason": reason})
            if rate is not None:
                samples += _window(variant, run, rate / 2, warmup=True, mode=mode)  # not analysed
                samples += _window(variant, run, rate, errors=float(run == 2), mode=mode)
    return pd.DataFrame(samples), pd.DataFrame(runs)


def test_per_run_values_are_the_windows_own():
    samples, runs = _data({"direct-r1": [100.0, 200.0], "haproxy-r2": [50.0, 80.0]})
    out = lb.per_run(samples, runs).set_index(["variant", "run"])
    assert out.loc[("direct-r1", 2), "rps"] == 200.0  # the warm-up at 100 is not added
    assert out.loc[("haproxy-r2", 1), "p50_us"] == pytest.approx(1e6 / 50)
    assert out.loc[("haproxy-r2", 1), "p99.9_us"] == pytest.approx(8e6 / 50)
    assert out.loc[("haproxy-r2", 2), "errors"] == 1.0
    assert (out.loc[("haproxy-r2", 1), "balancer"], out.loc[("haproxy-r2", 1), "replicas"]) == (
        "haproxy",
        2,
    )


def test_median_rank_interval_and_ratio_to_direct():
    # direct: 100..1000 (10 runs); haproxy is exactly half of direct in every run
    direct = [100.0 * r for r in range(1, 11)]
    samples, runs = _data({"direct-r1": direct, "haproxy-r1": [d / 2 for d in direct]})
    summary = lb.summarise(samples, runs).set_index("variant")
    row = summary.loc["haproxy-r1"]
    lo_rank, hi_rank, coverage = stats.order_statistic_ranks(10, 0.5, 0.95)
    assert row["rps"] == pytest.approx(275.0)  # median of 50..500
    assert (row["rps_lo"], row["rps_hi"]) == pytest.approx((50.0 * lo_rank, 50.0 * hi_rank))
    assert row["rps_coverage"] == pytest.approx(coverage) and bool(row["rps_ci_reached"])
    # paired runs: every replicate sees the same ratio
    assert (row["ratio"], row["ratio_lo"], row["ratio_hi"]) == pytest.approx((0.5, 0.5, 0.5))
    assert (row["ratio_mean"], row["ratio_mean_lo"]) == pytest.approx((0.5, 0.5))
    assert row["overhead_pct"] == pytest.approx(50.0) and row["ratio_n_runs"] == 10
    assert row["p50_us"] == pytest.approx(np.median([2e6 / d for d in direct]))
    assert row["errors_total"] == 1.0 and row["runs_with_errors"] == 1
    assert row["verdict"] == "overhead"  # the interval below 1 and the paired t test agree
    base = summary.loc["direct-r1"]
    assert base["ratio"] == 1.0 and base["baseline_mode"] == "docker-bridge"
    assert pd.isna(base["verdict"])  # the baseline is not compared with itself


def test_run_to_run_spread_of_the_ratio_widens_its_interval():
    direct = [1000.0] * 8
    shares = [0.40, 0.45, 0.50, 0.55, 0.42, 0.48, 0.52, 0.58]
    samples, runs = _data({"direct-r1": direct, "nginx-r4": [1000.0 * s for s in shares]})
    row = lb.summarise(samples, runs).set_index("variant").loc["nginx-r4"]
    assert row["ratio"] == pytest.approx(np.exp(np.mean(np.log(shares))))  # geometric mean
    assert min(shares) <= row["ratio_lo"] < row["ratio"] < row["ratio_hi"] <= max(shares)
    assert row["ratio_mean"] == pytest.approx(np.mean(shares))
    assert row["verdict"] == "overhead"


def test_a_balancer_within_run_noise_of_direct_is_inconclusive_never_equivalent():
    direct = [1000.0, 980.0, 1010.0, 1030.0, 990.0, 1000.0]
    shares = [1.01, 0.98, 1.02, 0.99, 1.00, 1.01]  # dnsrr: no cost, noise only
    dnsrr = [d * s for d, s in zip(direct, shares, strict=True)]
    samples, runs = _data({"direct-r1": direct, "dnsrr-r2": dnsrr})
    row = lb.summarise(samples, runs).set_index("variant").loc["dnsrr-r2"]
    assert row["verdict"] == "inconclusive"
    table = lb.article_table(lb.summarise(samples, runs))
    assert list(table["Verdict"]) == ["", "inconclusive"]


def test_ratio_of_means_has_a_delta_method_t_interval():
    pairs = np.array([[5.0, 10.0], [6.0, 10.0], [4.0, 9.0], [7.0, 11.0]])
    point, lo, hi = stats.ratio_of_means_ci(pairs[:, 0], pairs[:, 1], 0.9)
    assert point == pytest.approx(22.0 / 40.0)
    # by hand: the log ratio's standard error from the per-run moments, t with 3 df
    a, b = pairs.mean(axis=0)
    cov = np.cov(pairs[:, 0], pairs[:, 1])
    se = np.sqrt((cov[0, 0] / a**2 + cov[1, 1] / b**2 - 2 * cov[0, 1] / (a * b)) / 4)
    half = st.t.ppf(0.95, 3) * se
    assert (lo, hi) == pytest.approx((point * np.exp(-half), point * np.exp(half)))
    assert np.isnan(stats.ratio_of_means_ci(pairs[:1, 0], pairs[:1, 1], 0.9)[1])


def test_skipped_failed_and_baseline_less_variants_stay_with_their_reasons():
    why = "skipped: kernel has no IPVS"
    samples, runs = _data(
        {"direct-r1": [100.0, None], "vip-r1": [None, None], "dnsrr-r2": [90.0, 95.0]},
        status={
            ("vip-r1", 1): ("skipped", why),
            ("vip-r1", 2): ("skipped", why),
            ("direct-r1", 2): ("failed", "failed: wrk printed nothing"),
        },  # fmt: skip
    )
    summary = lb.summarise(samples, runs).set_index("variant")
    vip = summary.loc["vip-r1"]
    assert vip["status"] == "skipped" and vip["reason"] == why and vip["n_runs"] == 0
    table = lb.article_table(summary.reset_index()).set_index("Balancer")
    assert table.loc["Swarm VIP / routing mesh", "Note"] == why
    assert pd.isna(table.loc["Swarm VIP / routing mesh", "req/s [95% CI]"])  # written as n/a
    dnsrr = summary.loc["dnsrr-r2"]
    # one common run with direct: a ratio, no interval
    assert dnsrr["ratio"] == pytest.approx(0.9) and dnsrr["ratio_n_runs"] == 1
    assert np.isnan(dnsrr["ratio_lo"])
    direct = summary.loc["direct-r1"]
    assert direct["n_runs"] == 1 and "1 of 2 runs not measured" in direct["reason"]


def test_smoke_data_one_run_gives_no_interval_and_no_exception(tmp_path):
    samples, runs = _data({"direct-r1": [100.0], "haproxy-r1": [60.0]})
    summary = lb.summarise(samples, runs)
    assert np.isnan(summary.set_index("variant").loc["haproxy-r1", "ratio_lo"])
    chart, caption = lb.figure(summary, lb.per_run(samples, runs))
    assert "Requests per second" in caption and chart.to_dict()
    assert "(no interval)" in lb.article_table(summary).iloc[1, 3]


# --- Kubernetes beside Swarm ------------------------------------------------------------------

K8S_DNSRR = "client-side DNS round robin needs cluster DNS"


def _both_modes() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Swarm: haproxy at half of its direct container; Kubernetes: a direct pod twice as fast,
    haproxy at 3/4 and the NodePort Service at 3/5 of it, dnsrr skipped."""
    direct = [1000.0, 1100.0, 900.0, 1050.0]
    swarm = _data({"direct-r1": direct, "haproxy-r2": [d / 2 for d in direct]})
    pods = [2 * d for d in direct]
    k8s = _data(
        {"direct-r1": pods, "haproxy-r2": [0.75 * d for d in pods],
         "vip-r2": [0.6 * d for d in pods], "dnsrr-r2": [None] * 4},
        status={("dnsrr-r2", r): ("skipped", K8S_DNSRR) for r in range(1, 5)},
        mode="k8s-pod",
    )  # fmt: skip
    return pd.concat([swarm[0], k8s[0]]), pd.concat([swarm[1], k8s[1]])


def test_each_mode_is_compared_with_its_own_direct_replica():
    samples, runs = _both_modes()
    summary = lb.summarise(samples, runs).set_index(["mode", "variant"])
    assert summary.loc[("swarm-overlay", "haproxy-r2"), "ratio"] == pytest.approx(0.5)
    assert summary.loc[("k8s-pod", "haproxy-r2"), "ratio"] == pytest.approx(0.75)
    assert summary.loc[("k8s-pod", "vip-r2"), "ratio"] == pytest.approx(0.6)
    assert summary.loc[("k8s-pod", "direct-r1"), "rps"] == pytest.approx(2 * 1025.0)
    # the baseline stands for each mode's own single replica
    assert summary.loc[("swarm-overlay", "direct-r1"), "baseline_mode"] == "docker-bridge"
    assert summary.loc[("k8s-pod", "direct-r1"), "baseline_mode"] == "k8s-pod"
    dnsrr = summary.loc[("k8s-pod", "dnsrr-r2")]
    assert dnsrr["status"] == "skipped" and dnsrr["reason"] == K8S_DNSRR
    assert summary.loc[("k8s-pod", "vip-r2"), "configuration"] == (
        "Kubernetes Service (NodePort, kube-proxy iptables)"
    )
    assert summary.loc[("k8s-pod", "haproxy-r2"), "configuration"] == "HAProxy"
    assert summary.loc[("k8s-pod", "vip-r2"), "orchestrator"] == "Kubernetes"
    # Swarm's block first (the article's setting), then Kubernetes'
    assert list(dict.fromkeys(summary.index.get_level_values("mode"))) == [
        "swarm-overlay", "k8s-pod"]  # fmt: skip


def test_outputs_name_the_orchestrator_when_kubernetes_rows_are_present():
    samples, runs = _both_modes()
    summary = lb.summarise(samples, runs)
    table = lb.article_table(summary)
    assert table.columns[0] == "Orchestrator"
    assert list(table["Orchestrator"]) == ["Docker Swarm"] * 2 + ["Kubernetes"] * 4
    k8s = table[table["Orchestrator"] == "Kubernetes"].set_index("Balancer")
    assert k8s.loc["Direct (one replica, no balancer)", "% of direct [95% CI]"] == "100 (baseline)"
    assert k8s.loc["HAProxy", "% of direct [95% CI]"].startswith("75.0")
    assert "Kubernetes" in lb.table_caption(summary) and "kube-proxy" in lb.table_caption(summary)
    head = lb.headline(summary)
    assert "lab k8s-pod vip-r2: ok" in head and "lab swarm-overlay haproxy-r2: ok" in head
    said = lb.findings(summary)
    assert "**HAProxy** (Kubernetes), 2 replica(s)" in said
    assert "**HAProxy** (Docker Swarm), 2 replica(s)" in said
    chart, caption = lb.figure(summary, lb.per_run(samples, runs))
    spec = chart.to_dict()
    assert len(spec["hconcat"]) == 2  # one panel per orchestrator
    titles = [panel["title"] for panel in spec["hconcat"]]
    assert titles[0].startswith("Docker Swarm") and titles[1].startswith("Kubernetes")
    assert "One panel per orchestrator" in caption
    assert "(Kubernetes) with 2 replicas: not measured (skipped: " in caption
    assert caption.count(K8S_DNSRR) == 1


def test_swarm_alone_keeps_the_articles_layout():
    samples, runs = _data({"direct-r1": [100.0, 120.0], "vip-r1": [80.0, 90.0]})
    summary = lb.summarise(samples, runs)
    assert "Orchestrator" not in lb.article_table(summary).columns
    assert lb.headline(summary).startswith("lab direct-r1: ok")
    assert summary.set_index("variant").loc["vip-r1", "configuration"] == "Swarm VIP / routing mesh"
    assert "hconcat" not in lb.figure(summary, lb.per_run(samples, runs))[0].to_dict()


# --- the committed fixture ---------------------------------------------------------------------


def test_the_fixture_is_what_the_generator_writes():
    frames = FX.build_lb()
    for table in ("samples", "runs"):
        stored = schema.read_table(RAW / "lb" / "lab" / f"{table}.parquet", table)
        fresh = schema.to_table(frames[table], schema.TABLES[table])
        assert stored.equals(fresh), f"lb {table}: run make_fixture_coldstart_lb.py"


def test_fixture_known_answers():
    samples, runs = lb.load(RAW)
    summary = lb.summarise(samples, runs).set_index("variant")
    for balancer, shares in FX.LB_SHARE.items():
        for n, share in zip(FX.LB_REPLICAS, shares, strict=True):
            row = summary.loc[f"{balancer}-r{n}"]
            # each run's ratio is share x its own wobble (within ±0.4%)
            assert row["ratio"] == pytest.approx(share, rel=0.005)
            assert row["ratio_lo"] <= row["ratio"] <= row["ratio_hi"]
            assert row["ratio_hi"] < 1.0
    assert summary.loc["direct-r1", "rps"] == FX.LB_DIRECT_RPS
    assert summary.loc["nginx-r4", "n_runs"] == FX.LB_RUNS - 1
    assert FX.LB_FAILED_REASON in summary.loc["nginx-r4", "reason"]
    assert summary.loc["haproxy-r2", "errors_total"] == 12
    for n in FX.LB_REPLICAS:
        row = summary.loc[f"vip-r{n}"]
        assert row["status"] == "skipped" and row["reason"] == FX.LB_IPVS_REASON
    # 5 runs: no order-statistic interval reaches 95%; the range of the runs instead
    assert not summary["rps_ci_reached"].fillna(False).astype(bool).any()


def test_the_article_states_each_orchestrators_numbers_under_its_own_keys(tmp_path):
    from pipeline.analysis.article import sections
    from pipeline.analysis.article.inputs import Inputs
    from pipeline.analysis.article.numbers import Numbers

    samples, runs = _both_modes()
    (tmp_path / "lb").mkdir()
    lb.summarise(samples, runs).to_parquet(tmp_path / "lb" / "lb_summary.parquet")
    inputs = Inputs(processed=tmp_path, raw=tmp_path, tables=tmp_path, figures=tmp_path,
                    out=tmp_path, margins={}, confidence=0.95, root=tmp_path)  # fmt: skip
    numbers = Numbers(root=tmp_path)
    (text,) = sections._lb(inputs, numbers)
    assert text.startswith("One replica dialled directly served 1,025 req/s [")
    assert "2,050 req/s [" in text.split(" on Docker Swarm ")[1]  # Kubernetes' after Swarm's
    assert "| Kubernetes | Kubernetes Service (NodePort, kube-proxy iptables) | 60.0% [" in text
    assert numbers.entries["lb.lab.haproxy-r2.pct_of_direct"].value == pytest.approx(50.0)
    assert numbers.entries["lb.lab.k8s-pod.haproxy-r2.pct_of_direct"].value == pytest.approx(75.0)


def test_the_article_states_each_orchestrators_direct_replica_in_one_sentence(tmp_path):
    """Swarm and Kubernetes: one sentence names both direct replicas, one table holds both
    orchestrators' balancers (not a paragraph per orchestrator with only its numbers changed)."""
    from pipeline.analysis.article.inputs import Inputs
    from pipeline.analysis.article.numbers import Numbers
    from pipeline.analysis.article.sections import _lb

    samples, runs = _both_modes()
    (tmp_path / "lb").mkdir()
    lb.summarise(samples, runs).to_parquet(tmp_path / "lb" / "lb_summary.parquet", index=False)
    inputs = Inputs(tmp_path, tmp_path, tmp_path, tmp_path, tmp_path, {}, 0.95, tmp_path)
    numbers = Numbers(tmp_path)
    (text,) = _lb(inputs, numbers)
    assert text.count("One replica dialled directly served") == 1
    assert " on Docker Swarm (4 runs) and " in text and " on Kubernetes (4 runs) (medians" in text
    assert text.count("| Orchestrator | Balancer |") == 1
    assert "| Kubernetes | HAProxy | " in text and "| Docker Swarm | HAProxy | " in text
    assert {"lb.lab.direct-r1.rps", "lb.lab.k8s-pod.direct-r1.rps"} <= set(numbers.entries)
    # Swarm alone: its sentence as before, no orchestrator named
    swarm = samples[samples["mode"] == "swarm-overlay"], runs[runs["mode"] == "swarm-overlay"]
    lb.summarise(*swarm).to_parquet(tmp_path / "lb" / "lb_summary.parquet", index=False)
    (alone,) = _lb(inputs, Numbers(tmp_path))
    assert alone.startswith("One replica dialled directly served ") and "Orchestrator" not in alone
