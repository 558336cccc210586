"""The study's verdict on paired rounds of two arms, as the bench scripts print it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.analysis import stats  # noqa: E402


def paired_ratio(values: list[float], base: list[float], margin: float,
                 higher_is_better: bool) -> str:  # fmt: skip
    """``values`` / ``base`` over paired rounds: the geometric mean ratio with its 95 % and
    90 % t intervals, the TOST p value and the study's verdict at +-``margin``."""
    tost = stats.tost_log_ratio(values, base, margin)
    verdict = stats.verdict(tost.ratio, tost.ci_lo, tost.ci_hi, tost.lo, tost.hi, margin,
                            higher_is_better=higher_is_better, tost_p=tost.p_value,
                            diff_p=tost.diff_p)  # fmt: skip
    return (
        f"{tost.ratio:.4f} [95%: {tost.ci_lo:.4f}, {tost.ci_hi:.4f}; 90%: {tost.lo:.4f}, "
        f"{tost.hi:.4f}], TOST p {tost.p_value:.3g} -> {verdict} (+-{margin:.0%}); "
        f"{tost.n_runs} rounds"
    )
