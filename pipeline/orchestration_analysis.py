"""Orchestration times per variant: the median over every timed repetition of every run, with
a distribution-free interval from order statistics (pipeline.stats.quantile_ci).

Repetitions of one run share that run's Swarm state, so pooling them treats them as
independent draws: the interval is as wide as the data allow, not wider for the runs'
clustering. ``n_runs`` says how many runs the samples came from. A variant with no ok run is
kept as a row with no numbers and the reasons of its failed or skipped runs.
"""

from __future__ import annotations

import json

import pandas as pd

from pipeline.stats import quantile_ci

KEYS = ["environment", "mode", "variant"]
COLUMNS = [*KEYS, "replicas", "max_replicas", "n", "n_runs", "median_s", "lo_s", "hi_s",
           "coverage", "reached", "not_ok", "reason"]  # fmt: skip


def _replicas(samples: pd.DataFrame) -> str:
    """The replica count(s) reached, e.g. "10"; "3,10" if runs differ (changed cap)."""
    counts = samples.loc[samples["metric"] == "orchestration_replicas", "value"]
    return ",".join(str(int(v)) for v in sorted(counts.unique()))


def _cap(runs: pd.DataFrame) -> str:
    caps = {json.loads(n).get("max_replicas", "") for n in runs["notes"].dropna()}
    return ",".join(sorted(c for c in caps if c))


def summarise(samples: pd.DataFrame, runs: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """One row per (environment, mode, variant) the runs table plans."""
    measured = samples[~samples["warmup"]]
    rows = []
    for key, planned in runs.groupby(KEYS, sort=True):
        ok = planned[planned["status"] == "ok"]
        mine = measured.merge(ok[[*KEYS, "run"]], on=[*KEYS, "run"])
        times = mine.loc[mine["metric"] == "orchestration_s", "value"].to_numpy(float)
        bad = planned[planned["status"] != "ok"]
        reason = "; ".join(f"run {r.run} {r.status}: {r.reason}" for r in bad.itertuples())
        ci = quantile_ci(times, 0.5, confidence)
        rows.append(
            {
                **dict(zip(KEYS, key, strict=True)),
                "replicas": _replicas(mine),
                "max_replicas": _cap(ok),
                "n": int(times.size),
                "n_runs": int(mine.loc[mine["metric"] == "orchestration_s", "run"].nunique()),
                "median_s": ci.point,
                "lo_s": ci.lo,
                "hi_s": ci.hi,
                "coverage": ci.coverage,
                "reached": ci.reached,
                "not_ok": len(bad),
                "reason": reason,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)
