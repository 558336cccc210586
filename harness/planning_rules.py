"""Which planning rule resolves more of the demo's headline comparisons: Stein's from a 3-run
pilot, or a run count fixed before the data.

A simulation, not a lab run. Each case is one comparison of a mode with native: the per-run log
ratio's SD, the true effect and the margin, at the values a fresh-clone demo measured on this
machine (throughput on the datacenter path, single-thread CPU, latency p50; the SD read back
from each comparison's interval and run count). Per case, 20,000 comparisons drawn as normal
per-run log ratios, each decided by the study's rule for one comparison: a difference when the
95% t interval excludes parity, equivalent when the 90% interval lies inside +-margin (the
TOST), else inconclusive (no multiplicity adjustment: one comparison alone).

- ``stein``: the demo's former planning: a 3-run pilot, Stein's count for a 0.03 half-width,
  at most 8 runs; the interval uses the pilot's SD with 2 degrees of freedom
  (``planning.stein_runs``, ``stats.log_ratio_ci`` with ``pilot``);
- ``fixed``: 8 runs decided before the data, the t interval of all 8 (``rule: fixed``).

It prints, per case, the share each rule resolves and its mean runs, side by side.

    python -m harness.planning_rules
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats as st

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.collect import planning  # noqa: E402

N_SIM = 20_000
PILOT, TARGET, MAX_RUNS = 3, 0.03, 8
# case -> (per-run SD of the log ratio, true ratio - 1, margin): a fresh-clone demo's values
CASES = {
    "throughput docker-host (tcp, dc)": (0.039, -0.006, 0.05),
    "throughput docker-bridge (tcp, dc)": (0.024, -0.038, 0.05),
    "cpu docker-bridge (1thread)": (0.0143, 0.0, 0.02),
    "latency p50 docker-host (tcp, dc)": (0.157, 0.0, 0.05),
    "latency p50 docker-bridge (tcp, dc)": (0.18, 0.275, 0.05),
    "latency p50 docker-host (udp, dc)": (0.014, 0.03, 0.05),
}


def resolved(mean: np.ndarray, sd: np.ndarray, n: np.ndarray, df: np.ndarray,
             margin: float) -> np.ndarray:  # fmt: skip
    """The study's rule for one comparison: a difference (95% interval excludes 0) or
    equivalence (90% interval inside +-log(1 + margin))."""
    se = sd / np.sqrt(n)
    differs = np.abs(mean) > st.t.ppf(0.975, df) * se
    equivalent = np.abs(mean) + st.t.ppf(0.95, df) * se < math.log1p(margin)
    return differs | equivalent


def simulate(sd: float, effect: float, margin: float, rng: np.random.Generator) -> dict:
    d = rng.normal(math.log1p(effect), sd, (N_SIM, MAX_RUNS))
    fixed = resolved(d.mean(1), d.std(1, ddof=1), np.full(N_SIM, MAX_RUNS),
                     np.full(N_SIM, MAX_RUNS - 1), margin)  # fmt: skip
    s0 = d[:, :PILOT].std(1, ddof=1)
    n = np.array([planning.stein_runs(s, PILOT, TARGET, 0.95, MAX_RUNS) for s in s0])
    means = np.array([row[:k].mean() for row, k in zip(d, n, strict=True)])
    stein = resolved(means, s0, n, np.full(N_SIM, PILOT - 1), margin)
    return {"stein": stein.mean(), "stein_runs": n.mean(), "fixed": fixed.mean()}


def main() -> int:
    rng = np.random.default_rng(20261129)
    width = max(map(len, CASES))
    print(f"resolved share of {N_SIM:,} simulated comparisons per case (a difference or "
          f"equivalence at the margin), Stein from a {PILOT}-run pilot (target {TARGET}, at most "
          f"{MAX_RUNS}) against {MAX_RUNS} runs fixed before the data")  # fmt: skip
    totals = {"stein": 0.0, "fixed": 0.0}
    for case, (sd, effect, margin) in CASES.items():
        got = simulate(sd, effect, margin, rng)
        totals["stein"] += got["stein"]
        totals["fixed"] += got["fixed"]
        print(f"  {case:<{width}}  SD {sd:5.3f}  effect {effect:+6.3f}  margin {margin:.2f}:  "
              f"stein {got['stein']:.2f} ({got['stein_runs']:.1f} runs)  fixed "
              f"{got['fixed']:.2f} ({MAX_RUNS} runs)")  # fmt: skip
    k = len(CASES)
    print(f"summary: expected resolved share over these {k} cases: stein "
          f"{totals['stein'] / k:.2f}, fixed {totals['fixed'] / k:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
