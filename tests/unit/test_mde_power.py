"""The minimum detectable effect a table prints is the one its adjusted test finds 80% of the
time.

A table of ``m`` comparisons adjusts its difference tests together (Holm or Benjamini-Hochberg,
``stats.adjust_verdicts``). Here one comparison has a true effect equal to the MDE the table
states for it (``adjust_verdicts`` with ``mde``, at the true SD of the per-run log ratios), the
other ``m - 1`` none; the table's own adjustment (``stats.adjust_p``) is applied to the paired t
tests of simulated runs, and the comparison must be found (adjusted p below 5%, on the worse
side) 80% of the time, within 3 points. At 4,000 simulated tables per case the simulation's own
SE is 0.6 points.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from pipeline.analysis import stats

SD = 0.05  # the per-run log ratios' true SD
ALPHA = 0.05
N_SIM = 4000


def _adjust(p: np.ndarray, method: str) -> np.ndarray:
    """``stats.adjust_p`` of every row of ``p`` at once (Holm's step-down, Benjamini-Hochberg's
    step-up); ``test_the_vectorised_adjustment_is_the_tables`` holds it to ``adjust_p``."""
    m = p.shape[1]
    order = np.argsort(p, axis=1)
    ranked = np.take_along_axis(p, order, axis=1)
    k = np.arange(1, m + 1)
    if method == "holm":
        adj = np.maximum.accumulate(np.minimum((m - k + 1) * ranked, 1.0), axis=1)
    else:
        adj = np.minimum.accumulate(np.minimum(m / k * ranked, 1.0)[:, ::-1], axis=1)[:, ::-1]
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=1)
    return out


def test_the_vectorised_adjustment_is_the_tables():
    p = np.random.default_rng(3).uniform(0, 0.2, size=(50, 8))
    for method in ("holm", "bh"):
        want = np.array([stats.adjust_p(row, method) for row in p])
        np.testing.assert_allclose(_adjust(p, method), want, rtol=1e-12)


def _printed_mde(m: int, n: int, method: str) -> float:
    """The log-scale MDE ``adjust_verdicts`` states for a table of ``m`` comparisons (a rate:
    higher is better), each of ``n`` runs at SD ``SD``."""
    frame = pd.DataFrame({
        "verdict": ["inconclusive"] * m, "tost_p": np.full(m, 0.5), "diff_p": np.full(m, 0.5),
        "ratio": np.ones(m), "resolvable": np.nan, "sd_log": SD, "ratio_n_runs": n,
    })  # fmt: skip
    out = stats.adjust_verdicts(frame, method, ALPHA, True, mde=stats.ONE_MDE)
    assert set(out["resolvable_direction"]) == {"drop"}
    assert out["resolvable"].iloc[0] == pytest.approx(-np.expm1(-out["resolvable_log"].iloc[0]))
    return float(out["resolvable_log"].iloc[0])


def _found(m: int, n: int, method: str, seed: int) -> float:
    """How often the adjusted test finds the one comparison whose true effect is the printed
    MDE (a drop of the rate), among ``m - 1`` null ones."""
    effect = _printed_mde(m, n, method)
    rng = np.random.default_rng(seed)
    d = rng.normal(0.0, SD, size=(N_SIM, m, n))
    d[:, 0, :] -= effect
    t = d.mean(axis=2) / (d.std(axis=2, ddof=1) / np.sqrt(n))
    p = 2.0 * st.t.sf(np.abs(t), n - 1)
    adjusted = _adjust(p, method)[:, 0]
    return float(((adjusted < ALPHA) & (t[:, 0] < 0)).mean())


@pytest.mark.parametrize("method", ["holm", "bh"])
@pytest.mark.parametrize("n", [3, 6])
@pytest.mark.parametrize("m", [2, 8, 20])
def test_the_printed_mde_is_found_80_percent_of_the_time(m, n, method):
    found = _found(m, n, method, seed=1000 * m + 10 * n + (method == "bh"))
    assert found == pytest.approx(0.80, abs=0.03)


def test_the_unadjusted_mde_is_not_enough_in_a_table():
    """The control: the MDE of one unadjusted test, put in a table of 8 under Holm, is found
    far less often than 80%."""
    n, m = 3, 8
    effect = stats.resolvable(SD, n, ALPHA)
    rng = np.random.default_rng(7)
    d = rng.normal(0.0, SD, size=(N_SIM, m, n))
    d[:, 0, :] -= effect
    t = d.mean(axis=2) / (d.std(axis=2, ddof=1) / np.sqrt(n))
    p = 2.0 * st.t.sf(np.abs(t), n - 1)
    adjusted = _adjust(p, "holm")[:, 0]
    assert ((adjusted < ALPHA) & (t[:, 0] < 0)).mean() < 0.4


def test_no_adjustment_states_the_unadjusted_mde():
    assert _printed_mde(8, 3, "none") == pytest.approx(stats.resolvable(SD, 3, ALPHA))
