"""Precision-planned campaigns: how many runs each comparison gets, fixed from its pilot.

A campaign first measures its pilot: every (mode, path, variant) cell in the profile's ``runs``
rounds. Each comparison (a mode against native on the same path and variant) then has ``n0``
paired per-run log ratios ``d = log(mode) - log(native)`` and their SD ``s0``. **Stein's
two-stage rule** fixes the comparison's total run count from the pilot alone:
``n = max(n0, ceil((t(n0-1) * s0 / h) ** 2))`` with ``t(n0-1)`` the Student t quantile at
``analysis.confidence`` and ``h`` the ``target_half_width``, capped by ``max_runs`` and by the
budget. Its interval, ``mean(d over all n runs) +- t(n0-1) * s0 / sqrt(n)`` (the pilot's SD
with the pilot's degrees of freedom: ``stats.log_ratio_ci`` with ``pilot``), covers the true
mean log ratio with exactly its confidence when the per-run log ratios are normal (Stein 1945:
``n`` depends on ``s0`` only, and the mean of all runs is independent of ``s0``), and its
half-width is at most ``h`` unless a cap stopped it first. A cap changes the width, never the
coverage. The usual t interval on all ``n`` runs would not keep its label: with the SD of all
runs its coverage falls to 91-95% (tests/unit/test_planning.py, at a 3-run pilot, a 0.05 target,
10 or 20 runs at most, per-run SDs 0.01-0.1); so would stopping as soon as the running interval
is narrow enough (90-93%).

**The rule looks at the pilot's precision only**: never at the estimate, at which side of a
margin it lies, or at a verdict, and never at a run measured after the pilot. After the pilot,
each round measures the comparisons that have fewer runs than their ``n``, native of their path
and variant with them (a run index then holds both sides of every pair), in a seeded random
order like a pilot round.

Allocation follows Kalibera and Jones ("Rigorous benchmarking in reasonable time", ISMM 2013):
repetitions go where they buy the most precision per unit of time. Each round, while the budget
lasts, the comparisons still going on are taken in order of the half-width one more run is
projected to remove (at the pilot's SD) per second of lab time it costs (its own run, and
native's when native is not yet in the round); one whose run the remaining budget cannot pay
waits, and when none fits, every one left stops for the budget.

A profile that names its **headline comparisons** (``headline:``, e.g. the demo's) plans those
only: every other comparison keeps its pilot runs (stop ``not headline``), so the budget goes
to the questions the profile is for.

**The fixed rule** (``rule: fixed``, the demo's) gives each planned comparison ``max_runs`` runs,
decided before any data: its interval is then the ordinary t interval on all its runs, exact at
its confidence, with ``max_runs - 1`` degrees of freedom instead of Stein's pilot's. From a
3-run pilot Stein's interval carries ``t(2)`` (4.30 at 95%, against 2.36 for ``t(7)``): at the
same 8 runs, a fixed count resolves far more comparisons (``harness/planning_rules.py``). The
budget still caps the rounds (then the count depends on lab time, not on the data); Stein's
rule stays where the run count must adapt to each comparison's noise (the study's).

The module is pure: measurements in, a decision out. ``Campaign`` (``campaign.py``) feeds it
the per-run headline of every committed step, each cell's seconds per run and the pilot's run
count.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats as _st

BASELINE = "native"
Cell = tuple[str, str, str]  # (mode, path, variant)
# why a comparison gets no more runs ("pilot": fewer than 2 pilot pairs, no SD to plan from)
TARGET, BUDGET, MAX_RUNS, UNMEASURED, PILOT = ("target", "budget", "max_runs", "unmeasured",
                                               "pilot")  # fmt: skip
# how a planned comparison's run count is fixed: from its pilot's SD (Stein), or max_runs
STEIN, FIXED = "stein", "fixed"
# not one of the profile's headline comparisons: it keeps its pilot runs
OUTSIDE = "not headline"


@dataclass(frozen=True)
class Settings:
    """params.yaml's ``planning`` section with ``analysis.confidence``; ``budget_s`` is the lab
    time the campaign may spend on runs beyond its pilot."""

    target_half_width: float
    budget_s: float
    max_runs: int
    confidence: float = 0.95
    # the profile's headline comparisons, (mode, path, variant) with "*" for any path or
    # variant: only these are planned (None: every comparison)
    headline: tuple[tuple[str, str, str], ...] | None = None
    rule: str = STEIN  # STEIN: the run count from the pilot's SD; FIXED: max_runs for each

    def plans(self, cell: Cell) -> bool:
        """Whether the comparison of ``cell`` (mode, path, variant) gets runs beyond the
        pilot."""
        mode, path, variant = cell
        return self.headline is None or any(
            m == mode and p in ("*", path) and v in ("*", variant) for m, p, v in self.headline
        )

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
            headline=(None if planning.get("headline") is None else
                      tuple((str(m), str(p), str(v)) for m, p, v in planning["headline"])),
            rule=str(planning.get("rule", STEIN)),
        )


def half_width(sd: float, n: int, confidence: float) -> float:
    """Half-width of the Student t interval of a mean of ``n`` values of SD ``sd``; infinite
    below 2 values (no SD to go by)."""
    if n < 2 or not math.isfinite(sd):
        return math.inf
    return float(_st.t.ppf(0.5 + confidence / 2.0, n - 1) * sd / math.sqrt(n))


def stein_half_width(sd_pilot: float, pilot: int, n: int, confidence: float) -> float:
    """Half-width of Stein's interval after ``n`` runs: ``t(pilot - 1) * sd_pilot / sqrt(n)``,
    the pilot's SD with the pilot's degrees of freedom; infinite below 2 pilot values."""
    if pilot < 2 or n < 1 or not math.isfinite(sd_pilot):
        return math.inf
    return float(_st.t.ppf(0.5 + confidence / 2.0, pilot - 1) * sd_pilot / math.sqrt(n))


def stein_runs(sd_pilot: float, pilot: int, target: float, confidence: float,
               max_runs: int | None = None) -> int | None:  # fmt: skip
    """Stein's total run count: ``max(pilot, ceil((t(pilot-1) * sd_pilot / target) ** 2))``,
    at most ``max_runs``; None below 2 pilot values (no SD to plan from)."""
    if pilot < 2 or not math.isfinite(sd_pilot):
        return None
    t = _st.t.ppf(0.5 + confidence / 2.0, pilot - 1)
    # the rounding guard keeps an exact square (e.g. 49.000000000001) at its integer
    n = max(pilot, math.ceil((t * sd_pilot / target) ** 2 - 1e-9))
    return n if max_runs is None else min(n, max_runs)


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

    ``runs``: runs with both measured (the pairs); ``sd_log`` the SD of all pairs' log ratios;
    ``pilot``: the pairs among the pilot's runs, ``sd_pilot`` their SD (what planning goes by);
    ``half_width``: Stein's half-width at ``runs`` (``stein_half_width``; inf below 2 pilot
    pairs; the fixed rule: the t interval's over all runs); ``runs_needed``: Stein's run count for
    the target, uncapped (``stein_runs``; the fixed rule: ``max_runs``); ``runs_planned``: the
    same capped by ``max_runs``; ``stop``: why it gets no more runs (``target``: it has its
    planned run count; ``budget``; ``max_runs``; ``unmeasured``: no pair
    at all, e.g. a mode the host cannot run; ``pilot``: fewer than 2 pilot pairs), None while
    it goes on."""

    mode: str
    path: str
    variant: str
    runs: int
    sd_log: float
    half_width: float
    runs_needed: int | None
    stop: str | None
    pilot: int = 0
    sd_pilot: float = math.nan
    runs_planned: int | None = None

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
                      baseline: Cell, until: int | None = None) -> np.ndarray:  # fmt: skip
    """``log(cell) - log(baseline)`` for every run (up to run ``until``, when given) where both
    have a positive value, by run."""
    mine = _runs(values, cell)
    theirs = _runs(values, baseline)
    runs = sorted(r for r in set(mine) & set(theirs) if until is None or r <= until)
    return np.array([math.log(mine[r]) - math.log(theirs[r]) for r in runs], dtype=float)


def _runs(values: Mapping[tuple[str, str, str, int], float], cell: Cell) -> dict[int, float]:
    return {run: v for (m, p, var, run), v in values.items()
            if (m, p, var) == cell and v is not None and math.isfinite(v) and v > 0}  # fmt: skip


def standing(
    cells: Iterable[Cell],
    values: Mapping[tuple[str, str, str, int], float],
    settings: Settings,
    pilot_runs: int,
) -> list[Comparison]:
    """Every comparison's pairs, pilot SD, Stein run count and half-width, stopped
    (``target``, ``max_runs``, ``unmeasured``, ``pilot``) or not (None); runs up to
    ``pilot_runs`` (at least 2) are the pilot. The budget is ``next_round``'s."""
    pilot_runs = max(int(pilot_runs), 2)
    out = []
    for cell, baseline in comparisons_of(cells):
        d = paired_log_ratios(values, cell, baseline)
        first = paired_log_ratios(values, cell, baseline, until=pilot_runs)
        n, n0 = int(d.size), int(first.size)
        sd = float(d.std(ddof=1)) if n >= 2 else math.nan
        s0 = float(first.std(ddof=1)) if n0 >= 2 else math.nan
        h, conf = settings.target_half_width, settings.confidence
        if settings.rule == FIXED:  # decided before any data: no SD enters
            needed = planned = settings.max_runs
        else:
            needed = stein_runs(s0, n0, h, conf)
            planned = stein_runs(s0, n0, h, conf, settings.max_runs)
        measured = sum(1 for key in values if key[:3] == cell)  # with a value or without
        stop = None
        if n == 0:
            stop = UNMEASURED
        elif not settings.plans(cell) and measured >= pilot_runs:
            stop = OUTSIDE
        elif planned is None:
            # a pilot still short of its runs goes on (first: its half-width is infinite)
            stop = PILOT if measured >= pilot_runs else None
        elif n >= planned:
            stop = TARGET if needed is not None and needed <= planned else MAX_RUNS
        elif measured >= settings.max_runs:
            stop = MAX_RUNS
        out.append(Comparison(*cell, runs=n, sd_log=sd, half_width=_width(settings, s0, n0, sd, n),
                              runs_needed=needed, stop=stop, pilot=n0, sd_pilot=s0,
                              runs_planned=planned))  # fmt: skip
    return out


def _width(settings: Settings, sd_pilot: float, pilot: int, sd: float, n: int) -> float:
    """The half-width the analysis gives a comparison of ``n`` runs under the rule: Stein's
    (the pilot's SD and degrees of freedom), or the t interval of all ``n`` runs."""
    if settings.rule == FIXED:
        return half_width(sd, n, settings.confidence)
    return stein_half_width(sd_pilot, pilot, n, settings.confidence)


def next_round(
    cells: Iterable[Cell],
    values: Mapping[tuple[str, str, str, int], float],
    seconds: Mapping[Cell, float],
    settings: Settings,
    spent_s: float,
    pilot_runs: int,
) -> Decision:
    """Which cells get one more run next round.

    ``values``: the per-run headline of every measured step, ``(mode, path, variant, run) ->
    value`` (None for a step measured without one: it counts as a run, not as a pair);
    ``seconds``: each cell's lab seconds per run so far; ``spent_s``: the lab seconds already
    spent beyond the pilot; ``pilot_runs``: the pilot's rounds (runs 1 to ``pilot_runs``, at
    least 2: a one-run pilot gets its second run before anything is planned). The
    comparisons short of their Stein run count are taken in order of the projected half-width
    one more run removes (at the pilot's SD) per second it costs, as long as the remaining
    budget pays for the run; native of each chosen comparison's path and variant runs too. With
    none chosen, every comparison still going on stops for the budget. What a comparison's
    estimate is, and any run after the pilot, never enter (module docstring)."""
    cells = list(dict.fromkeys(cells))
    comparisons = standing(cells, values, settings, pilot_runs)
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
            gain = c.half_width - _width(settings, c.sd_pilot, c.pilot, c.sd_log, c.runs + 1)
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
    measured, and for a comparison its pairs, its pilot's pairs and SD (``pilot_pairs``,
    ``sd_pilot``: what the analysis's Stein interval needs), its Stein run count uncapped and
    capped (``runs_needed``, ``runs_planned``), the half-width reached and why it stopped (None
    while it goes on); native runs while any comparison of its path and variant does.
    ``rule`` names the rule (``stein`` or ``fixed``)."""
    by_cell = {c.cell: c for c in decision.comparisons}
    rows = []
    for cell in dict.fromkeys(cells):
        row = {"mode": cell[0], "path": cell[1], "variant": cell[2],
               "runs": sum(1 for key in values if key[:3] == cell)}  # fmt: skip
        c = by_cell.get(cell)
        if c is not None:
            # the analysis gives a comparison with pilot pairs Stein's interval: none under the
            # fixed rule, whose interval is the t interval of all its runs
            stein = settings.rule == STEIN
            row.update(pairs=c.runs, half_width=_finite(c.half_width), sd_log=_finite(c.sd_log),
                       pilot_pairs=c.pilot if stein else None,
                       sd_pilot=_finite(c.sd_pilot) if stein else None,
                       runs_needed=c.runs_needed, runs_planned=c.runs_planned,
                       stopped=c.stop)  # fmt: skip
        else:
            row["stopped"] = "baseline" if cell[0] == BASELINE else "no native to compare with"
        rows.append(row)
    return {
        "planned": True,
        "rule": settings.rule,
        "pilot_runs": pilot_runs,
        "target_half_width": settings.target_half_width,
        "confidence": settings.confidence,
        "budget_s": settings.budget_s,
        "max_runs": settings.max_runs,
        "headline": None if settings.headline is None else [list(h) for h in settings.headline],
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
