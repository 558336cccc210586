"""Precision-planned campaigns: which cells get one more run, and when to stop adding runs.

A campaign first measures its pilot: every (mode, path, variant) cell in the profile's ``runs``
rounds. Each comparison (a mode against native on the same path and variant) then has paired
per-run log ratios ``d = log(mode) - log(native)``, whose Student t interval at
``analysis.confidence`` is the interval the analysis reports (``stats.log_ratio_ci``). Its
half-width ``t(n-1) * sd(d) / sqrt(n)`` is what planning drives down. After the pilot, each
round measures only the cells whose comparison is still too wide, native of their path and
variant with them (a run index then holds both sides of every pair), in a seeded random order
like a pilot round.

**The stop rule looks at precision only**: a comparison gets no more runs once its half-width
is at most ``target_half_width``, once it has ``max_runs`` runs, or once the budget cannot pay
for its next run. Never at the estimate itself, at which side of a margin it lies, or at a
verdict: the number of runs is chosen without looking at the effect, so the intervals and tests
at the end keep their meaning (stopping when a test first passes would not).

Allocation follows Kalibera and Jones ("Rigorous benchmarking in reasonable time", ISMM 2013):
repetitions go where they buy the most precision per unit of time. Each round, while the budget
lasts, the comparisons still going on are taken in order of the half-width one more run is
projected to remove (at the SD measured so far) per second of lab time it costs (its own run,
and native's when native is not yet in the round); one whose run the remaining budget cannot
pay waits, and when none fits, every one left stops for the budget.

The module is pure: measurements in, a decision out. ``Campaign`` (``campaign.py``) feeds it
the per-run headline of every committed step and each cell's seconds per run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats as _st

BASELINE = "native"
Cell = tuple[str, str, str]  # (mode, path, variant)
# why a comparison gets no more runs
TARGET, BUDGET, MAX_RUNS, UNMEASURED = "target", "budget", "max_runs", "unmeasured"


@dataclass(frozen=True)
class Settings:
    """params.yaml's ``planning`` section with ``analysis.confidence``; ``budget_s`` is the lab
    time the campaign may spend on runs beyond its pilot."""

    target_half_width: float
    budget_s: float
    max_runs: int
    confidence: float = 0.95

    @classmethod
    def from_params(cls, planning: Mapping | None) -> Settings | None:
        """The settings of a ``planning`` mapping (None when absent or not enabled): its keys
        are params.yaml's (``budget_minutes``) and ``confidence``."""
        if not planning or not planning.get("enabled"):
            return None
        return cls(
            target_half_width=float(planning["target_half_width"]),
            budget_s=60.0 * float(planning["budget_minutes"]),
            max_runs=int(planning["max_runs"]),
            confidence=float(planning.get("confidence", 0.95)),
        )


def half_width(sd: float, n: int, confidence: float) -> float:
    """Half-width of the Student t interval of a mean of ``n`` values of SD ``sd``; infinite
    below 2 values (no SD to go by)."""
    if n < 2 or not math.isfinite(sd):
        return math.inf
    return float(_st.t.ppf(0.5 + confidence / 2.0, n - 1) * sd / math.sqrt(n))


def runs_needed(sd: float, target: float, confidence: float, limit: int = 10**4) -> int | None:
    """The fewest runs (at least 2) whose interval's half-width at SD ``sd`` is at most
    ``target``; None beyond ``limit``."""
    if not math.isfinite(sd):
        return None
    for n in range(2, limit + 1):
        if half_width(sd, n, confidence) <= target:
            return n
    return None


@dataclass(frozen=True)
class Comparison:
    """One mode against native on one path and variant, as the data stand.

    ``runs``: runs with both measured (the pairs); ``half_width`` of the interval of the mean
    log ratio (inf below 2 pairs); ``runs_needed`` at the SD measured so far; ``stop``: why it
    gets no more runs (``target``, ``budget``, ``max_runs``, ``unmeasured``: no pair at all, e.g.
    a mode the host cannot run), None while it goes on."""

    mode: str
    path: str
    variant: str
    runs: int
    sd_log: float
    half_width: float
    runs_needed: int | None
    stop: str | None

    @property
    def cell(self) -> Cell:
        return (self.mode, self.path, self.variant)


@dataclass(frozen=True)
class Decision:
    """The next round: ``cells`` to measure once more (native included; none: planning stops),
    what each comparison stands at, the round's projected seconds and the budget left before
    it."""

    cells: tuple[Cell, ...]
    comparisons: tuple[Comparison, ...]
    cost_s: float
    remaining_s: float

    @property
    def done(self) -> bool:
        return not self.cells


def comparisons_of(cells: Iterable[Cell]) -> list[tuple[Cell, Cell]]:
    """Every (mode cell, its native cell): a mode's cell whose path and variant native has."""
    cells = list(dict.fromkeys(cells))
    natives = {(p, v) for m, p, v in cells if m == BASELINE}
    return [((m, p, v), (BASELINE, p, v)) for m, p, v in cells
            if m != BASELINE and (p, v) in natives]  # fmt: skip


def paired_log_ratios(values: Mapping[tuple[str, str, str, int], float], cell: Cell,
                      baseline: Cell) -> np.ndarray:  # fmt: skip
    """``log(cell) - log(baseline)`` for every run where both have a positive value, by run."""
    mine = _runs(values, cell)
    theirs = _runs(values, baseline)
    runs = sorted(set(mine) & set(theirs))
    return np.array([math.log(mine[r]) - math.log(theirs[r]) for r in runs], dtype=float)


def _runs(values: Mapping[tuple[str, str, str, int], float], cell: Cell) -> dict[int, float]:
    return {run: v for (m, p, var, run), v in values.items()
            if (m, p, var) == cell and v is not None and math.isfinite(v) and v > 0}  # fmt: skip


def standing(
    cells: Iterable[Cell],
    values: Mapping[tuple[str, str, str, int], float],
    settings: Settings,
) -> list[Comparison]:
    """Every comparison's pairs, SD and half-width, stopped (``target``, ``max_runs``,
    ``unmeasured``) or not (None) by the data alone; the budget is ``next_round``'s."""
    out = []
    for cell, baseline in comparisons_of(cells):
        d = paired_log_ratios(values, cell, baseline)
        n = int(d.size)
        sd = float(d.std(ddof=1)) if n >= 2 else math.nan
        hw = half_width(sd, n, settings.confidence)
        measured = sum(1 for key in values if key[:3] == cell)  # with a value or without
        stop = None
        if n == 0:
            stop = UNMEASURED
        elif hw <= settings.target_half_width:
            stop = TARGET
        elif measured >= settings.max_runs:
            stop = MAX_RUNS
        needed = runs_needed(sd, settings.target_half_width, settings.confidence)
        out.append(Comparison(*cell, runs=n, sd_log=sd, half_width=hw, runs_needed=needed,
                              stop=stop))  # fmt: skip
    return out


def next_round(
    cells: Iterable[Cell],
    values: Mapping[tuple[str, str, str, int], float],
    seconds: Mapping[Cell, float],
    settings: Settings,
    spent_s: float,
) -> Decision:
    """Which cells get one more run next round.

    ``values``: the per-run headline of every measured step, ``(mode, path, variant, run) ->
    value`` (None for a step measured without one: it counts as a run, not as a pair);
    ``seconds``: each cell's lab seconds per run so far; ``spent_s``: the lab seconds already
    spent beyond the pilot. The comparisons not yet stopped by precision or run count
    are taken in order of the projected half-width one more run removes per second it costs
    (a comparison with fewer than 2 pairs first: its SD is not known yet), as long as the
    remaining budget pays for the run; native of each chosen comparison's path and variant runs
    too. With none chosen, every comparison still going on stops for the budget. What a
    comparison's estimate is never enters (module docstring)."""
    cells = list(dict.fromkeys(cells))
    comparisons = standing(cells, values, settings)
    remaining = settings.budget_s - spent_s
    known = [s for s in seconds.values() if s is not None and math.isfinite(s)]
    fallback = float(np.mean(known)) if known else 0.0

    def cost(cell: Cell) -> float:
        s = seconds.get(cell)
        return float(s) if s is not None and math.isfinite(s) else fallback

    going = [c for c in comparisons if c.stop is None]
    chosen: list[Cell] = []
    left = remaining
    while True:
        best, best_key = None, None
        for c in going:
            if c.cell in chosen:
                continue
            native = (BASELINE, c.path, c.variant)
            marginal = cost(c.cell) + (0.0 if native in chosen else cost(native))
            if marginal > left:
                continue
            gain = c.half_width - half_width(c.sd_log, c.runs + 1, settings.confidence)
            per_s = math.inf if not math.isfinite(gain) else gain / max(marginal, 1e-9)
            key = (per_s, c.half_width)
            if best_key is None or key > best_key:  # ties: the first in the campaign's order
                best, best_key = (c, native, marginal), key
        if best is None:
            break
        c, native, marginal = best
        chosen += [native] if native not in chosen else []
        chosen.append(c.cell)
        left -= marginal
    if not chosen:
        comparisons = [c if c.stop else stopped(c, BUDGET) for c in comparisons]
    order = [cell for cell in cells if cell in chosen]
    return Decision(cells=tuple(order), comparisons=tuple(comparisons),
                    cost_s=remaining - left, remaining_s=remaining)  # fmt: skip


def stopped(c: Comparison, why: str) -> Comparison:
    """``c`` stopped for ``why``."""
    return Comparison(**{**asdict(c), "stop": why})


def record(
    cells: Iterable[Cell],
    values: Mapping[tuple[str, str, str, int], float],
    decision: Decision,
    settings: Settings,
    pilot_runs: int,
) -> dict:
    """What planning did, for the dataset's record: the settings, and per cell its runs
    measured, and for a comparison its half-width reached and why it stopped (None while it
    goes on); native runs while any comparison of its path and variant does."""
    by_cell = {c.cell: c for c in decision.comparisons}
    rows = []
    for cell in dict.fromkeys(cells):
        row = {"mode": cell[0], "path": cell[1], "variant": cell[2],
               "runs": sum(1 for key in values if key[:3] == cell)}  # fmt: skip
        c = by_cell.get(cell)
        if c is not None:
            row.update(pairs=c.runs, half_width=_finite(c.half_width), sd_log=_finite(c.sd_log),
                       runs_needed=c.runs_needed, stopped=c.stop)  # fmt: skip
        else:
            row["stopped"] = "baseline" if cell[0] == BASELINE else "no native to compare with"
        rows.append(row)
    return {
        "planned": True,
        "pilot_runs": pilot_runs,
        "target_half_width": settings.target_half_width,
        "confidence": settings.confidence,
        "budget_s": settings.budget_s,
        "max_runs": settings.max_runs,
        "spent_s": settings.budget_s - decision.remaining_s,
        "cells": rows,
    }


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


@dataclass(frozen=True)
class WindowsPerRun:
    """Kalibera and Jones's choice of measured windows per run for one comparison, from a
    campaign of ``runs`` runs of ``windows`` windows each.

    The paired log ratio of window ``w`` of run ``r`` is ``mu + b_r + e_rw``: ``b_r`` what a run
    (a deployment, a tool's process, the machine's state then) adds, SD ``sd_between``; ``e_rw``
    what varies from window to window within a run, SD ``sd_within``. The mean over ``n`` runs
    of ``k`` windows has variance ``(sd_between**2 + sd_within**2 / k) / n`` and costs
    ``n * (cost_run_s + k * cost_window_s)`` of lab time; the ``k`` that makes the product least
    is ``sqrt(cost_run_s / cost_window_s * sd_within**2 / sd_between**2)`` (their optimal
    repetition count, rounded up). With no run component measurable (``sd_between`` 0) every
    window is worth a run and costs less: ``best`` is then ``cap``."""

    runs: int
    windows: int
    sd_within: float
    sd_between: float
    cost_run_s: float
    cost_window_s: float
    optimum: float  # the unrounded optimum (inf when sd_between is 0)
    best: int  # windows per run: the optimum rounded up, within [1, cap]

    def lab_seconds_per_precision(self, k: int) -> float:
        """Lab seconds times the variance of the mean at ``k`` windows per run, per run: the
        lab time a given precision costs, up to a constant (smaller is better)."""
        var = self.sd_between**2 + self.sd_within**2 / k
        return var * (self.cost_run_s + k * self.cost_window_s)

    def gain(self, k: int, against: int = 1) -> float:
        """How many times less lab time ``k`` windows per run need than ``against`` for the
        same half-width."""
        return self.lab_seconds_per_precision(against) / self.lab_seconds_per_precision(k)


def windows_per_run(d: np.ndarray, cost_run_s: float, cost_window_s: float,
                    cap: int = 20) -> WindowsPerRun:  # fmt: skip
    """``d``: paired log ratios, one row per run and one column per window of that run (at
    least 2 of each, no gaps). The components are the nested analysis of variance's: the
    within-run variance is the mean of the runs' window variances, the run component the
    variance of the run means less its windows' share (at least 0)."""
    d = np.asarray(d, dtype=float)
    if d.ndim != 2 or d.shape[0] < 2 or d.shape[1] < 2 or not np.isfinite(d).all():
        raise ValueError(f"need at least 2 runs of at least 2 windows, no gaps; got {d.shape}")
    if not (cost_run_s >= 0 and cost_window_s > 0):
        raise ValueError(f"costs must be >= 0 (run) and > 0 (window): {cost_run_s}, "
                         f"{cost_window_s}")
    runs, k = d.shape
    within = float(d.var(axis=1, ddof=1).mean())
    between = max(float(d.mean(axis=1).var(ddof=1)) - within / k, 0.0)
    optimum = (math.sqrt(cost_run_s / cost_window_s * within / between) if between > 0
               else math.inf)  # fmt: skip
    best = cap if not math.isfinite(optimum) else min(max(math.ceil(optimum), 1), cap)
    return WindowsPerRun(runs, k, math.sqrt(within), math.sqrt(between), float(cost_run_s),
                         float(cost_window_s), optimum, best)  # fmt: skip
