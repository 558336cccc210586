"""A Stein-planned campaign's summaries give each planned comparison Stein's interval.

A small synthetic campaign (native and docker-bridge, 8 runs; for cpu also podman) whose
campaign.json carries a planning record with a 3-run pilot for docker-bridge: the summary's
95% interval must be ``mean(d) +- t(0.975, 2) * sd(d[:3]) / sqrt(8)`` on the per-run log
ratios ``d``, computed here by hand, and not the usual t interval on all 8 runs. The same data
without the record (fixed runs) keeps the usual interval, as does a comparison the record did
not plan.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from pipeline.analysis import host, throughput
from pipeline.data import schema
from pipeline.data.schema import RUNS, SAMPLES, to_table, write_table

PILOT = 3
# Per-run values, run 1..8. The pilot's log ratios are close together (SD 0.0033) and the
# later runs spread more (SD of all 8: 0.0142), so Stein's interval is about 2.4 times narrower
# than the usual one: 0.8712 [0.8669, 0.8756] against [0.8609, 0.8816].
NATIVE = [9.40, 9.42, 9.38, 9.41, 9.39, 9.40, 9.43, 9.37]
BRIDGE = [8.20, 8.27, 8.22, 8.05, 8.35, 8.10, 8.31, 8.02]
PODMAN = [9.30, 9.29, 9.31, 9.10, 9.40, 9.20, 9.35, 9.12]  # cpu only: unplanned by the record


def _stein(mode: list[float], base: list[float], pilot: int, conf: float = 0.95):
    d = np.log(mode) - np.log(base)
    half = st.t.ppf(0.5 + conf / 2, pilot - 1) * d[:pilot].std(ddof=1) / math.sqrt(d.size)
    return math.exp(d.mean() - half), math.exp(d.mean() + half)


def _usual(mode: list[float], base: list[float], conf: float = 0.95):
    d = np.log(mode) - np.log(base)
    half = st.t.ppf(0.5 + conf / 2, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
    return math.exp(d.mean() - half), math.exp(d.mean() + half)


def _planning(cells: list[tuple[str, str, str]], planned: dict[tuple[str, str, str], int]):
    """A planning record as ``planning.record`` writes it (the fields the analysis reads)."""
    rows = []
    for cell in cells:
        row = {"mode": cell[0], "path": cell[1], "variant": cell[2], "runs": len(NATIVE)}
        if cell in planned:
            row.update(pairs=len(NATIVE), pilot_pairs=planned[cell], sd_pilot=0.006,
                       runs_needed=len(NATIVE), runs_planned=len(NATIVE), stopped="target")
        else:
            row["stopped"] = "baseline"
        rows.append(row)
    return {"planned": True, "rule": "stein", "pilot_runs": PILOT, "target_half_width": 0.01,
            "confidence": 0.95, "budget_s": 600.0, "max_runs": 20, "spent_s": 100.0,
            "cells": rows}  # fmt: skip


def _write(root: Path, benchmark: str, series: dict, metric: str, unit: str, path: str,
           variant: str, scale: float, planning: dict | None,
           samples_per_run: int = 1) -> Path:  # fmt: skip
    samples, runs = [], []
    t0 = pd.Timestamp("2026-11-28T08:00:00Z")
    for run in range(1, len(NATIVE) + 1):
        for order, (mode, values) in enumerate(series.items(), start=1):
            key = dict(environment="lab", campaign="planned", benchmark=benchmark, mode=mode,
                       path=path, variant=variant, run=run)  # fmt: skip
            started = t0 + pd.Timedelta(seconds=60 * run + order)
            runs.append({**key, "order": order, "status": "ok", "reason": None,
                         "started_at": started, "ended_at": started + pd.Timedelta(seconds=5),
                         "tool": "fixture", "command": "fixture"})  # fmt: skip
            samples += [{**key, "metric": metric, "unit": unit, "rep": 1, "sample": k,
                         "value": values[run - 1] * scale, "warmup": False}
                        for k in range(samples_per_run)]  # fmt: skip
    out = root / benchmark / "lab"
    write_table(to_table(pd.DataFrame(samples), SAMPLES), out / "samples.parquet")
    write_table(to_table(pd.DataFrame(runs), RUNS), out / "runs.parquet")
    if planning is not None:
        (out / "campaign.json").write_text(json.dumps({"planning": planning}))
    return root


def _throughput(root: Path, planned: bool) -> pd.Series:
    cells = [("native", "dc", "tcp"), ("docker-bridge", "dc", "tcp")]
    record = _planning(cells, {cells[1]: PILOT}) if planned else None
    _write(root, "throughput", {"native": NATIVE, "docker-bridge": BRIDGE},
           "tcp_throughput_received", "bit/s", "dc", "tcp", 1e9, record)  # fmt: skip
    summary = throughput.summarise(*throughput.load(root))
    return summary.set_index("mode").loc["docker-bridge"]


def test_the_planned_throughput_comparison_gets_steins_interval(tmp_path):
    row = _throughput(tmp_path, planned=True)
    lo, hi = _stein(BRIDGE, NATIVE, PILOT)
    assert (row["ratio_lo"], row["ratio_hi"]) == (pytest.approx(lo, rel=1e-12),
                                                  pytest.approx(hi, rel=1e-12))  # fmt: skip
    assert row["ratio"] == pytest.approx(math.exp(np.mean(np.log(BRIDGE) - np.log(NATIVE))))
    # the known answer, to 4 digits (t(0.975, 2) = 4.3027)
    assert (round(row["ratio_lo"], 4), round(row["ratio_hi"], 4)) == (0.8669, 0.8756)
    usual = _usual(BRIDGE, NATIVE)  # [0.8609, 0.8816]
    assert row["ratio_lo"] - usual[0] > 0.005 and usual[1] - row["ratio_hi"] > 0.005


def test_the_same_runs_without_a_planning_record_keep_the_usual_interval(tmp_path):
    row = _throughput(tmp_path, planned=False)
    lo, hi = _usual(BRIDGE, NATIVE)
    assert (row["ratio_lo"], row["ratio_hi"]) == (pytest.approx(lo, rel=1e-12),
                                                  pytest.approx(hi, rel=1e-12))  # fmt: skip
    assert schema.PILOT not in throughput.load(tmp_path)[1]


def test_a_fixed_runs_record_gives_no_pilot(tmp_path):
    cells = [("native", "dc", "tcp"), ("docker-bridge", "dc", "tcp")]
    _write(tmp_path, "throughput", {"native": NATIVE, "docker-bridge": BRIDGE},
           "tcp_throughput_received", "bit/s", "dc", "tcp", 1e9,
           {"planned": False, "reason": "fixed runs"})  # fmt: skip
    assert schema.planned_pilots(tmp_path / "throughput" / "lab") == {}
    runs = throughput.load(tmp_path)[1]
    assert schema.PILOT not in runs
    (tmp_path / "throughput" / "lab" / "campaign.json").write_text(
        json.dumps({"planning": _planning(cells, {cells[1]: PILOT})}))  # fmt: skip
    runs = throughput.load(tmp_path)[1]
    assert schema.pilot_of(runs[runs["mode"] == "docker-bridge"]) == PILOT
    assert schema.pilot_of(runs[runs["mode"] == "native"]) is None


def test_the_planned_host_comparison_gets_steins_interval_and_the_unplanned_one_does_not(
    tmp_path,
):
    cells = [("native", "host", "cpu"), ("docker-bridge", "host", "cpu"),
             ("podman", "host", "cpu")]  # fmt: skip
    _write(tmp_path, "cpu", {"native": NATIVE, "docker-bridge": BRIDGE, "podman": PODMAN},
           "cpu_events_per_s", "events/s", "host", "cpu", 1.0,
           _planning(cells, {cells[1]: PILOT}))  # fmt: skip
    summary = host.summarise(*host.load(tmp_path, "cpu"), "cpu").set_index("mode")
    planned, unplanned = summary.loc["docker-bridge"], summary.loc["podman"]
    lo, hi = _stein(BRIDGE, NATIVE, PILOT)
    assert planned["ratio_lo"] == pytest.approx(lo, rel=1e-12)
    assert planned["ratio_hi"] == pytest.approx(hi, rel=1e-12)
    lo, hi = _usual(PODMAN, NATIVE)
    assert unplanned["ratio_lo"] == pytest.approx(lo, rel=1e-12)
    assert unplanned["ratio_hi"] == pytest.approx(hi, rel=1e-12)


def _methods_planning(raw: Path) -> str:
    from pipeline.analysis.article.inputs import Inputs
    from pipeline.analysis.article.methods import _planning
    from pipeline.analysis.article.numbers import Numbers

    inputs = Inputs(processed=raw, raw=raw, tables=raw, figures=raw, out=raw, margins={},
                    confidence=0.95, root=raw)  # fmt: skip
    return "\n".join(_planning(inputs, Numbers(raw), ["throughput", "cpu"]))


def test_the_methods_say_steins_coverage_only_for_a_stein_planned_campaign(tmp_path):
    cells = [("native", "dc", "tcp"), ("docker-bridge", "dc", "tcp")]
    _write(tmp_path, "throughput", {"native": NATIVE, "docker-bridge": BRIDGE},
           "tcp_throughput_received", "bit/s", "dc", "tcp", 1e9, None)  # fmt: skip
    assert _methods_planning(tmp_path) == ""  # unplanned: nothing said
    record = tmp_path / "throughput" / "lab" / "campaign.json"
    record.write_text(json.dumps({"planning": _planning(cells, {cells[1]: PILOT})}))
    said = _methods_planning(tmp_path)
    assert "Stein's two-stage rule" in said and "covers exactly its 95%" in said
    assert "a cap widens it but does not lower its coverage" in said
    assert "95% +- 1 point" in said and "cover 90-93%" not in said
    assert "| `throughput` (`lab`) | 3 | " in said  # its row: a 3-run pilot


def test_a_fixed_rule_campaign_gets_the_usual_interval_and_says_why(tmp_path):
    """Planned under ``rule: fixed`` (the run count decided before the data): the record, as
    ``planning.record`` writes it, names no pilot, so the comparison keeps the usual t interval
    of all its runs, and Methods says the count was fixed, not Stein's coverage nor the earlier
    rule's shortfall."""
    from pipeline.collect import planning

    cells = [("native", "dc", "tcp"), ("docker-bridge", "dc", "tcp")]
    settings = planning.Settings(target_half_width=0.05, budget_s=600.0, max_runs=len(NATIVE),
                                 rule=planning.FIXED)  # fmt: skip
    values = {(m, p, v, run): (NATIVE if m == "native" else BRIDGE)[run - 1]
              for m, p, v in cells for run in range(1, len(NATIVE) + 1)}  # fmt: skip
    decision = planning.next_round(cells, values, {}, settings, 0.0, PILOT)
    record = planning.record(cells, values, decision, settings, PILOT)
    _write(tmp_path, "throughput", {"native": NATIVE, "docker-bridge": BRIDGE},
           "tcp_throughput_received", "bit/s", "dc", "tcp", 1e9, record)  # fmt: skip
    row = throughput.summarise(*throughput.load(tmp_path)).set_index("mode").loc["docker-bridge"]
    lo, hi = _usual(BRIDGE, NATIVE)
    assert (row["ratio_lo"], row["ratio_hi"]) == (pytest.approx(lo, rel=1e-12),
                                                  pytest.approx(hi, rel=1e-12))  # fmt: skip
    said = _methods_planning(tmp_path)
    assert "a run count fixed before any data" in said and "usual t intervals" in said
    assert f"| {len(NATIVE)} runs per headline comparison |" in said
    assert "Stein" not in said and "cover 90-93%" not in said


# latency (microseconds): every sample of a run's window at its run's value, so each run's own
# percentiles are that value exactly and the per-run log ratios are those of the lists above
NATIVE_US = [52.0, 51.5, 52.3, 51.8, 52.1, 51.9, 52.4, 51.6]
BRIDGE_US = [60.1, 59.7, 60.4, 62.0, 58.3, 61.5, 59.0, 62.6]


def _latency_samples(root: Path, planned: bool) -> pd.DataFrame:
    from pipeline.analysis import latency

    cells = [("native", "dc", "udp"), ("docker-bridge", "dc", "udp")]
    record = _planning(cells, {cells[1]: PILOT}) if planned else None
    _write(root, "latency", {"native": NATIVE_US, "docker-bridge": BRIDGE_US}, "udp_rtt", "us",
           "dc", "udp", 1.0, record, samples_per_run=1000)  # fmt: skip
    runs = latency.load_runs(root, "latency")
    cells_ = latency.load_cells(root, "latency", latency.LATENCY_METRICS)
    return latency.summarise(cells_, runs).set_index("mode").loc["docker-bridge"]


@pytest.mark.parametrize("planned", [True, False])
def test_the_planned_latency_comparison_gets_steins_intervals(tmp_path, planned):
    row = _latency_samples(tmp_path, planned)
    lo, hi = _stein(BRIDGE_US, NATIVE_US, PILOT) if planned else _usual(BRIDGE_US, NATIVE_US)
    for q in ("p50", "p99"):
        assert row[f"ratio_{q}_lo"] == pytest.approx(lo, rel=1e-9)
        assert row[f"ratio_{q}_hi"] == pytest.approx(hi, rel=1e-9)
    # the added microseconds: the same rule on the per-run differences
    d = np.subtract(BRIDGE_US, NATIVE_US)
    sd, df = (d[:PILOT].std(ddof=1), PILOT - 1) if planned else (d.std(ddof=1), d.size - 1)
    half = st.t.ppf(0.975, df) * sd / math.sqrt(d.size)
    assert row["d_p50_lo_us"] == pytest.approx(d.mean() - half, rel=1e-9)
    assert row["d_p50_hi_us"] == pytest.approx(d.mean() + half, rel=1e-9)
    assert row["sd_p50"] == pytest.approx(
        np.std((np.log(BRIDGE_US) - np.log(NATIVE_US))[:PILOT if planned else None], ddof=1))


def test_a_shift_comparison_with_a_pilot_uses_the_pilots_sd_and_degrees_of_freedom():
    from pipeline.analysis import stats

    d = np.subtract(BRIDGE_US, NATIVE_US)
    eq = stats.shift_equivalence(BRIDGE_US, NATIVE_US, 15.0, 0.95, pilot=PILOT)
    s0 = d[:PILOT].std(ddof=1)
    half = st.t.ppf(0.975, PILOT - 1) * s0 / math.sqrt(d.size)
    assert (eq.lo, eq.hi) == (pytest.approx(d.mean() - half), pytest.approx(d.mean() + half))
    assert eq.sd == pytest.approx(s0)
    # the TOST against +-15 us: the larger one-sided p, t on the pilot's SD with 2 df
    se = s0 / math.sqrt(d.size)
    p = max(st.t.sf((d.mean() + 15.0) / se, 2), st.t.cdf((d.mean() - 15.0) / se, 2))
    assert eq.tost_p == pytest.approx(p)
    usual = stats.shift_equivalence(BRIDGE_US, NATIVE_US, 15.0, 0.95)
    assert usual.sd == pytest.approx(d.std(ddof=1)) and usual.lo != pytest.approx(eq.lo)
