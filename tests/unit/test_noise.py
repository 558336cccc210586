"""Run-to-run noise (pipeline/analysis/noise.py): the per-run values are each benchmark's own, the
decomposition recovers known SDs, and the article states each benchmark's range with entries."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.analysis import article, noise
from pipeline.analysis import host as host_analysis
from pipeline.analysis import throughput as throughput_analysis

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "raw"


@pytest.fixture(scope="module")
def values() -> pd.DataFrame:
    return noise.per_run_values(FIXTURE)


def test_per_run_values_are_the_summaries_own(values):
    assert set(values["benchmark"]) >= {"throughput", "latency", "http", "cpu", "memory",
                                        "coldstart"}  # fmt: skip
    samples, runs = throughput_analysis.load(FIXTURE)
    tcp = throughput_analysis.per_run_throughput(samples, runs)
    mine = values[(values["benchmark"] == "throughput") & (values["variant"] == "tcp")]
    merged = mine.merge(tcp, on=["environment", "mode", "path", "run"], suffixes=("", "_ref"))
    assert len(merged) == len(tcp) and np.allclose(merged["value"], merged["value_ref"])
    samples, runs = host_analysis.load(FIXTURE, "cpu")
    cpu = host_analysis.per_run(samples, runs)
    assert len(values[values["benchmark"] == "cpu"]) == len(cpu)
    lat = values[values["benchmark"] == "latency"]
    assert set(lat["metric"]) == {"p50", "p99"} and not lat["value"].isna().any()


def test_decompose_recovers_known_run_and_residual_sds():
    rng = np.random.default_rng(8)
    n_runs, modes = 40, ["native", "a", "b"]
    run_effect = rng.normal(0, 2.0, n_runs)
    rows = [
        {"benchmark": "x", "environment": "lab", "path": "host", "variant": "v", "metric": "m",
         "mode": m, "run": r, "value": 100 + 5 * i + run_effect[r] + rng.normal(0, 1.0)}
        for r in range(n_runs) for i, m in enumerate(modes)
    ]  # fmt: skip
    out = noise.decompose(pd.DataFrame(rows), n_sim=100, seed=1).iloc[0]
    assert out["status"] == "ok" and out["n_runs"] == n_runs and out["n_modes"] == 3
    truth = math.sqrt(2.0**2 + 1.0**2) / 100 * 100  # % of native's mean (100)
    assert out["cv_sd_within_lo_pct"] < truth < out["cv_sd_within_hi_pct"]
    assert out["sd_run"] == pytest.approx(2.0, rel=0.35)
    assert out["sd_resid"] == pytest.approx(1.0, rel=0.35)


def test_two_runs_are_not_fitted_and_say_why(values):
    two = values[values["run"] <= 2]
    out = noise.decompose(two, n_sim=10)
    assert (out["status"] == "not fitted").all() and out["reason"].str.contains("3").all()
    assert (noise.table(out)["Note"].str.startswith("not fitted")).all()


def test_the_article_states_each_benchmarks_range(values, tmp_path):
    from pipeline.analysis import tables

    summary = noise.decompose(values[values["benchmark"].isin(["cpu", "memory"])], n_sim=30)
    tables.write_processed({"noise_summary": summary}, tmp_path / "processed" / "noise")
    tables.write(noise.table(summary), tmp_path / "tables", "noise", noise.CAPTION)
    inputs = article.Inputs(
        processed=tmp_path / "processed", raw=tmp_path / "raw", tables=tmp_path / "tables",
        figures=tmp_path / "figures", out=tmp_path, margins={}, confidence=0.95, root=tmp_path,
    )  # fmt: skip
    numbers = article.Numbers(root=tmp_path)
    text = "\n\n".join(article._noise(inputs, numbers))
    cpu = summary[summary["benchmark"] == "cpu"]["cv_sd_within_pct"]
    lo = numbers.entries[next(k for k in numbers.entries if k.startswith("noise.cpu."))]
    assert lo.value == pytest.approx(cpu.min())
    assert f"cpu {cpu.min():.2f}% to {cpu.max():.2f}%" in text
    assert "tables/noise.md" in text
