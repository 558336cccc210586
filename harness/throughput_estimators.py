"""Which per-run TCP throughput value recovers the instrument's known answers best.

A TCP window's value can be taken several ways from iperf3's output; they differ in how they
treat the connection's start (a new connection here now and then runs at half rate for its first
seconds). Candidates, each per measured window, then the median over a run's windows:

- ``received``: iperf3's receiver-side total of the window (the study's per-run value);
- ``interval_median``: the median of the window's per-interval rates (after the omitted start);
- ``trimmed_mean``: the mean of the per-interval rates without the first one;
- ``steady_mean``: the mean of the per-interval rates from the first one that reaches 90% of the
  window's median (a transient detector: a slow start is dropped, a steady window kept whole).

Criteria, from the instrument check's campaign (``data/raw/instrument``, dc path), fixed before
looking at any result: the A/A twin (native under a second name; truth 1) and the tbf rate cap
(truth: its goodput, ``pipeline.analysis.instrument.tbf_goodput_mbit``).

- tbf: the recovered goodput's error against the truth (median over runs).
- A/A: the SD over runs of log(native-aa / native), the noise a ratio to native carries, and the
  mean (the bias; truth 0).

Rule: among the estimators whose tbf error is within 2% and whose A/A mean lies inside its own
95% t interval's reach of 0, the one with the smallest A/A SD; ties (within 10% of the SD) go
to ``received``, the value the study reports. With fewer than 3 A/A runs the rule declines to
choose.

    python harness/throughput_estimators.py [RAW_DIR]   # default data/raw/instrument
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.analysis.instrument import tbf_goodput_mbit  # noqa: E402
from pipeline.data import schema  # noqa: E402

ESTIMATORS = ("received", "interval_median", "trimmed_mean", "steady_mean")
TBF_TOLERANCE = 0.02
TIE = 0.10
KEYS = ["environment", "mode", "path", "run", "rep"]


def _steady_mean(values: np.ndarray) -> float:
    reached = np.nonzero(values >= 0.9 * np.median(values))[0]
    return float(values[reached[0]:].mean())


def per_window(samples: pd.DataFrame) -> pd.DataFrame:
    """Each measured TCP window's value under every estimator, in bit/s."""
    measured = samples[~samples["warmup"].astype(bool)]
    received = measured[measured["metric"] == "tcp_throughput_received"]
    out = received.groupby(KEYS)["value"].median().rename("received").to_frame()
    intervals = measured[measured["metric"] == "tcp_throughput"].sort_values("sample")
    grouped = intervals.groupby(KEYS)["value"]
    out["interval_median"] = grouped.median()
    out["trimmed_mean"] = grouped.apply(lambda v: v.iloc[1:].mean() if len(v) > 1 else v.mean())
    out["steady_mean"] = grouped.apply(lambda v: _steady_mean(v.to_numpy()))
    return out.reset_index()


def per_run(windows: pd.DataFrame) -> pd.DataFrame:
    return windows.groupby(["environment", "mode", "path", "run"])[list(ESTIMATORS)].median()


def criteria(runs_values: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Per estimator: the A/A log ratio's mean, SD and runs, and the tbf error."""
    dc = runs_values.xs("dc", level="path")
    notes = [json.loads(n) for n in runs.loc[runs["mode"] == "native-tbf", "notes"].dropna()]
    truth = None
    if notes and {"mtu", "tbf_rate_mbit"} <= set(notes[0]):
        truth = tbf_goodput_mbit(float(notes[0]["tbf_rate_mbit"]), int(notes[0]["mtu"]), "tcp")
    rows = []
    for name in ESTIMATORS:
        wide = dc[name].unstack("mode")
        row = {"estimator": name}
        if {"native", "native-aa"} <= set(wide.columns):
            logs = np.log(wide["native-aa"] / wide["native"]).dropna().to_numpy()
            row.update(aa_runs=len(logs), aa_mean_pct=100 * logs.mean(),
                       aa_sd_pct=100 * logs.std(ddof=1) if len(logs) > 1 else np.nan)  # fmt: skip
            if len(logs) > 1:
                half = sps.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / np.sqrt(len(logs))
                row["aa_mean_inside"] = abs(logs.mean()) <= half
        if truth is not None and "native-tbf" in wide.columns:
            got = wide["native-tbf"].dropna().median() / 1e6
            row.update(tbf_truth_mbit=truth, tbf_mbit=got, tbf_error_pct=100 * (got / truth - 1))
        rows.append(row)
    return pd.DataFrame(rows).set_index("estimator")


def choose(table: pd.DataFrame) -> tuple[str | None, str]:
    """The rule of the module docstring: (estimator, why)."""
    if "aa_runs" not in table or table["aa_runs"].min() < 3:
        return None, "fewer than 3 A/A runs: no choice"
    if "tbf_error_pct" not in table or table["tbf_error_pct"].isna().any():
        return None, "no tbf cap measured: no choice"
    ok = table[(table["tbf_error_pct"].abs() <= 100 * TBF_TOLERANCE)
               & table["aa_mean_inside"].astype(bool)]  # fmt: skip
    if ok.empty:
        return None, "no estimator recovers both known answers"
    best = ok["aa_sd_pct"].idxmin()
    if "received" in ok.index and ok.loc["received", "aa_sd_pct"] <= (1 + TIE) * ok.loc[
            best, "aa_sd_pct"]:  # fmt: skip
        return "received", f"within {TIE:.0%} of the smallest A/A SD ({best})"
    return best, "the smallest A/A SD among those recovering the tbf cap"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("raw_dir", nargs="?", default=str(ROOT / "data/raw/instrument"))
    args = parser.parse_args(argv)
    samples = schema.read_dataset(args.raw_dir, "throughput", "samples")
    runs = schema.read_dataset(args.raw_dir, "throughput", "runs")
    samples = samples[samples["variant"] == "tcp"]
    table = criteria(per_run(per_window(samples)), runs[runs["variant"] == "tcp"])
    pd.set_option("display.width", 160)
    print(table.round(3).to_string())
    chosen, why = choose(table)
    print(f"chosen: {chosen or 'none'} ({why})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
