"""Simulation of the instrument check's smallest injected overhead at the study profile's
instrument runs: does the study's own rule find a 6% cut (docker-cpuquota, 0.94 of
docker-bridge) four times in five, does its interval cover the truth 95% of the time, and does
the A/A twin get a difference verdict no more than 5% of the time?

Each simulated campaign has the profile's runs; in each run both modes share the run's level
(the machine's state that run: the lab's native rate moved by a third between campaigns, and
pairing cancels it) and each window has its own noise, so the per-run log ratio has SD
``sd``. ``LAB_SD`` and ``LAB_SD_AA`` are the SDs of the per-run log ratios measured on the
embedded lab in the cpu check campaign at 1 thread, 5 runs, docker-cpuquota to docker-bridge
and native-aa to native (docs/validation.md#the-instrument-check). ``EDGE_SD`` is the largest
spread at which 5 runs still find a 6% cut with 80% power (0.037 by the noncentral t), the
spread beyond which the profile's claim would not hold. Every decision goes through
``stats.ratio_equivalence`` at the cpu margin, as ``instrument.container_quota_rows`` calls it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats as st

from pipeline.analysis import instrument, stats
from pipeline.collect.modes.controls import CONTAINER_CPU_QUOTA

ROOT = Path(__file__).resolve().parents[2]
STUDY = yaml.safe_load((ROOT / "conf" / "profiles" / "study.yaml").read_text())
RUNS = int(STUDY["instrument"]["runs"])
MARGIN = yaml.safe_load((ROOT / "params.yaml").read_text())["common"]["margins"]["cpu"]
LAB_SD = 0.0053
LAB_SD_AA = 0.0108
EDGE_SD = 0.035
RUN_LEVEL_SD = 0.15  # shared by both modes of a run: the machine's load that run
SIMULATIONS = 3000


def _campaigns(truth: float, sd: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(mode, baseline) per-run rates, SIMULATIONS x RUNS, paired by run."""
    rng = np.random.default_rng(seed)
    level = 1000 * np.exp(rng.normal(0, RUN_LEVEL_SD, (SIMULATIONS, RUNS)))
    window = sd / np.sqrt(2)  # two windows a run: their log ratio has SD ``sd``
    baseline = level * np.exp(rng.normal(0, window, level.shape))
    mode = truth * level * np.exp(rng.normal(0, window, level.shape))
    return mode, baseline


def _decide(mode: np.ndarray, baseline: np.ndarray) -> pd.DataFrame:
    rows = []
    for m, b in zip(mode, baseline, strict=True):
        eq = stats.log_ratio_equivalence(m, b, MARGIN, 0.95, higher_is_better=True)
        rows.append({"verdict": eq.verdict, "lo": eq.lo, "hi": eq.hi, "diff_p": eq.tost.diff_p})
    return pd.DataFrame(rows)


def test_the_study_profile_checks_the_instrument_at_five_runs_and_the_cpu_margin_is_2_pct():
    # the simulation's settings are the profile's and params.yaml's, read above
    assert RUNS == 5 and MARGIN == 0.02
    # 6% is three margins out: a real cut of this size must never be called "equivalent"
    assert 1 - CONTAINER_CPU_QUOTA == pytest.approx(3 * MARGIN)


@pytest.mark.parametrize("sd", [LAB_SD, EDGE_SD])
def test_a_6_pct_cut_is_called_overhead_with_80_pct_power_and_its_interval_covers(sd):
    mode, baseline = _campaigns(CONTAINER_CPU_QUOTA, sd, seed=94)
    found = _decide(mode, baseline)
    power = (found["verdict"] == "overhead").mean()
    # the noncentral t's power of the paired t test at this spread: the simulation agrees
    n, df = RUNS, RUNS - 1
    shift = abs(np.log(CONTAINER_CPU_QUOTA)) / (sd / np.sqrt(n))
    exact = st.nct.sf(st.t.ppf(0.975, df), df, shift)
    assert power == pytest.approx(exact, abs=0.025), (power, exact)
    assert power >= 0.80, power
    assert not (found["verdict"] == "equivalent").any()  # 6% is never "does not matter"
    assert not (found["verdict"] == "faster").any()
    covered = ((found["lo"] <= CONTAINER_CPU_QUOTA) & (CONTAINER_CPU_QUOTA <= found["hi"])).mean()
    assert covered == pytest.approx(0.95, abs=0.015), covered


def test_beyond_the_edge_the_claim_would_fail():
    """The check can fail: at twice the edge spread five runs find a 6% cut about a third of
    the time (noncentral t: 0.32), what a campaign in a noisy spell of the machine gives."""
    found = _decide(*_campaigns(CONTAINER_CPU_QUOTA, 2 * EDGE_SD, seed=95))
    assert 0.25 < (found["verdict"] == "overhead").mean() < 0.4


@pytest.mark.parametrize("sd", [LAB_SD_AA, EDGE_SD])
def test_the_a_a_twin_is_called_different_at_most_5_pct_of_the_time(sd):
    found = _decide(*_campaigns(1.0, sd, seed=96))
    false = found["verdict"].isin(instrument.DIFFERENCES).mean()
    assert false <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / SIMULATIONS), false
    # the difference test itself rejects at its level (so the twin could be called different);
    # fewer verdicts say so because a difference inside the margin is "equivalent" first
    rejected = (found["diff_p"] < 0.05).mean()
    assert rejected == pytest.approx(0.05, abs=0.015), rejected


def test_the_analysis_row_is_the_same_decision():
    """instrument.container_quota_rows on one simulated campaign, as raw tables, gives the
    verdict and interval ``stats.log_ratio_equivalence`` gives on its per-run values."""
    mode, baseline = _campaigns(CONTAINER_CPU_QUOTA, LAB_SD, seed=97)
    m, b = mode[0], baseline[0]
    samples, runs = [], []
    for name, values in (("docker-cpuquota", m), ("docker-bridge", b)):
        for run, value in enumerate(values, start=1):
            for second in range(3):  # the run's value is the median of its seconds
                samples.append({"environment": "lab", "mode": name, "path": "host",
                                "variant": "1thread", "run": run, "metric": "cpu_events_per_s",
                                "unit": "events/s", "value": value * (1 + (second - 1) * 1e-3),
                                "warmup": False})  # fmt: skip
            notes = '{"cpu_quota": "0.94", "baseline": "docker-bridge"}'
            runs.append({"environment": "lab", "mode": name, "path": "host", "variant": "1thread",
                         "run": run, "status": "ok", "notes": notes,
                         "command": "sysbench cpu --threads=1 run"})  # fmt: skip
    (row,) = instrument.container_quota_rows(pd.DataFrame(samples), pd.DataFrame(runs), MARGIN)
    eq = stats.log_ratio_equivalence(m, b, MARGIN, 0.95)
    assert (row["recovered"], row["recovered_lo"], row["recovered_hi"]) == pytest.approx(
        (eq.ratio, eq.lo, eq.hi), rel=1e-12
    )
    assert row["verdict"] == eq.verdict and row["n_runs"] == RUNS
