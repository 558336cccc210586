"""Orchestration summary: the median and its order-statistic interval over all repetitions of
all ok runs, the replica count reached and the cap, failed runs kept with their reason."""

import json

import numpy as np
import pandas as pd
import pytest

from pipeline.analysis.orchestration import summarise


def _tables():
    samples, runs = [], []
    times = {
        "scale-10": [[2.0, 2.4, 2.2], [2.6, 2.1, 2.3], [2.5, 2.7, 2.8]],  # 9 values, median 2.4
        "update-10": [[40.0, 41.0, 42.0], None, [43.0, 44.0, 45.0]],  # run 2 failed
    }
    for variant, per_run in times.items():
        for run, values in enumerate(per_run, start=1):
            status = "ok" if values else "failed"
            runs.append(
                {
                    "environment": "lab",
                    "mode": "swarm-overlay",
                    "variant": variant,
                    "run": run,
                    "status": status,
                    "reason": "" if values else "only 7 of 10 replicas accepted",
                    "notes": json.dumps({"max_replicas": "20"}) if values else None,
                }
            )
            for i, v in enumerate(values or []):
                for metric, value in (("orchestration_s", v), ("orchestration_replicas", 10.0)):
                    samples.append(
                        {
                            "environment": "lab",
                            "mode": "swarm-overlay",
                            "variant": variant,
                            "run": run,
                            "sample": i,
                            "metric": metric,
                            "value": value,
                            "warmup": False,
                        }
                    )
    # a stray warm-up sample must not count
    samples.append({**samples[0], "value": 99.0, "warmup": True})
    return pd.DataFrame(samples), pd.DataFrame(runs)


def test_median_and_rank_interval_over_repetitions_and_runs():
    table = summarise(*_tables()).set_index("variant")
    scale = table.loc["scale-10"]
    assert (scale.n, scale.n_runs, scale.replicas, scale.max_replicas) == (9, 3, "10", "20")
    assert scale.median_s == 2.4
    # n = 9 at 95%: ranks 2 and 8 (coverage 0.961) -> 2.1 and 2.7 of the sorted values
    assert (scale.lo_s, scale.hi_s) == (2.1, 2.7)
    assert scale.coverage == pytest.approx(0.9609375) and scale.reached
    assert scale.not_ok == 0 and scale.reason == ""


def test_failed_run_is_left_out_and_named():
    update = summarise(*_tables()).set_index("variant").loc["update-10"]
    assert (update.n, update.n_runs, update.median_s) == (6, 2, 42.5)
    # six values: only the range covers 95% (1 - 2/64 = 0.96875)
    assert (update.lo_s, update.hi_s) == (40.0, 45.0) and update.reached
    assert update.coverage == pytest.approx(0.96875)
    assert update.not_ok == 1 and "run 2 failed: only 7 of 10" in update.reason


def test_stage_summary_takes_runs_as_the_unit():
    from pipeline.analysis.orchestration import stage_summary

    samples, runs = _tables()
    samples["path"], runs["path"] = "host", "host"
    table = stage_summary(samples, runs).set_index("variant")
    scale = table.loc["scale-10"]
    # per-run medians 2.2, 2.3, 2.7 -> median 2.3, range as the interval (3 runs: 75%)
    assert scale.median_s == pytest.approx(2.3) and (scale.median_lo_s, scale.median_hi_s) == (
        2.2,
        2.7,
    )
    assert not scale.median_ci_reached and scale.median_coverage == pytest.approx(0.75)
    assert scale.pooled_median_s == 2.4 and (scale.n_runs, scale.repeats, scale.n) == (3, 3, 9)
    update = table.loc["update-10"]
    assert update.n_runs == 2 and "only 7 of 10" in update.reason and update.status == "ok"
    assert scale.operation == "Scale 1 to 10 replicas" and not scale.capped


def test_swarm_over_kubernetes_is_the_paired_per_run_ratio():
    """Swarm's run medians over Kubernetes' in the same runs: 0.5, 0.4, 0.25 ->
    their geometric mean with the t interval of the log ratios; none for Kubernetes itself,
    none where Kubernetes did not run, and only the runs both have are paired."""
    from scipy import stats as st

    from pipeline.analysis.orchestration import _reference_ratio

    rows = []
    for run, (swarm, kube) in enumerate([(1.0, 2.0), (1.2, 3.0), (1.0, 4.0)], start=1):
        rows += [("lab", "swarm-overlay", "host", "scale-10", run, swarm),
                 ("lab", "k8s-pod", "host", "scale-10", run, kube)]  # fmt: skip
    rows.append(("lab", "swarm-overlay", "host", "scale-10", 4, 9.0))  # no Kubernetes run 4
    rows.append(("lab", "swarm-overlay", "host", "create", 1, 1.0))  # no Kubernetes create
    values = pd.DataFrame(rows, columns=["environment", "mode", "path", "variant", "run", "value"])
    got = _reference_ratio(values, ("lab", "swarm-overlay", "host", "scale-10"), 0.95)
    d = np.log([0.5, 0.4, 0.25])
    half = st.t.ppf(0.975, 2) * d.std(ddof=1) / np.sqrt(3)
    assert got["reference"] == "k8s-pod" and got["ratio_n_runs"] == 3
    assert got["ratio"] == pytest.approx(np.exp(d.mean()))
    assert (got["ratio_lo"], got["ratio_hi"]) == pytest.approx(
        (np.exp(d.mean() - half), np.exp(d.mean() + half))
    )
    kube = _reference_ratio(values, ("lab", "k8s-pod", "host", "scale-10"), 0.95)
    assert kube["reference"] == "" and np.isnan(kube["ratio"])
    alone = _reference_ratio(values, ("lab", "swarm-overlay", "host", "create"), 0.95)
    assert alone["reference"] == "" and np.isnan(alone["ratio"])
