"""The precision planner against known answers: Stein's run count from the pilot, budget and
max_runs stops, native always paired, a stop rule blind to the effect and to every run after
the pilot; and, by simulation, the coverage of the interval it is planned for."""

import math

import numpy as np
import pytest
from scipy import stats as st

from pipeline.analysis import stats
from pipeline.collect import planning
from pipeline.collect.planning import (
    Settings,
    half_width,
    next_round,
    runs_needed,
    stein_half_width,
    stein_runs,
)
from pipeline.data import schema

NATIVE = ("native", "dc", "tcp")
BRIDGE = ("docker-bridge", "dc", "tcp")
HOST = ("docker-host", "dc", "tcp")


def _constant_sd(sd: float, n: int) -> list[float]:
    """``n`` values whose first k (k >= 2) have sample SD exactly ``sd`` for every k: each new
    value lies sqrt((k+1)/k) SDs from the mean so far, alternating sides."""
    d = [-sd / math.sqrt(2), sd / math.sqrt(2)]
    while len(d) < n:
        k = len(d)
        d.append(float(np.mean(d)) + (-1) ** k * sd * math.sqrt((k + 1) / k))
    return d[:n]


def test_the_constant_sd_sequence_has_its_sd_at_every_length():
    d = _constant_sd(0.07, 12)
    assert [round(float(np.std(d[:k], ddof=1)), 12) for k in range(2, 13)] == [0.07] * 11


def test_half_width_and_runs_needed_known_answers():
    # t(0.975, 6) = 2.446912, sqrt(7) = 2.645751: 0.05 * 0.924847
    assert half_width(0.05, 7, 0.95) == pytest.approx(0.0462424, abs=1e-6)
    assert half_width(0.05, 6, 0.95) > 0.05 >= half_width(0.05, 7, 0.95)
    assert runs_needed(0.05, 0.05, 0.95) == 7
    assert runs_needed(0.05, 0.05, 0.90) == 5  # t(0.95, 4) / sqrt(5) = 0.954
    assert half_width(0.05, 1, 0.95) == math.inf and runs_needed(math.nan, 0.05, 0.95) is None


class _Lab:
    """Simulated campaign: per-run log ratios of each mode against native come from a fixed
    sequence (plus the mode's own effect); every cell costs ``seconds`` per run."""

    def __init__(self, ratios: dict, seconds: dict, pilot: int) -> None:
        self.ratios, self.seconds = ratios, seconds
        self.values: dict = {}
        self.spent = 0.0
        self.rounds: list[tuple] = []
        self.cells = [NATIVE, *ratios]
        for run in range(1, pilot + 1):
            self.measure(self.cells, run)
        self.pilot = pilot

    def measure(self, cells, run):
        for cell in cells:
            native = 1e9 * (1 + 0.01 * run)  # run-to-run drift that cancels in the ratios
            value = native if cell[0] == "native" else native * math.exp(self.ratios[cell][
                sum(1 for k in self.values if k[:3] == cell)])  # fmt: skip
            self.values[(*cell, run)] = value
            if run > getattr(self, "pilot", run):
                self.spent += self.seconds[cell]

    def plan(self, settings: Settings) -> planning.Decision:
        run = self.pilot
        while True:
            decision = next_round(self.cells, self.values, self.seconds, settings, self.spent,
                                  self.pilot)  # fmt: skip
            if decision.done:
                return decision
            run += 1
            self.rounds.append(decision.cells)
            self.measure(decision.cells, run)


def _runs(values, cell):
    return sorted(k[3] for k in values if k[:3] == cell)


def test_stein_run_count_known_answers():
    # t(0.975, 2) = 4.302653: (4.302653 * 0.05 / 0.05)**2 = 18.51 -> 19 runs
    assert stein_runs(0.05, 3, 0.05, 0.95) == 19
    assert stein_runs(0.05, 3, 0.05, 0.95, max_runs=10) == 10
    assert stein_runs(0.01, 3, 0.05, 0.95) == 3  # the pilot is already enough: 0.74 runs
    # t(0.975, 4) = 2.776445: (2.776445 * 0.1 / 0.05)**2 = 30.83 -> 31
    assert stein_runs(0.1, 5, 0.05, 0.95) == 31
    assert stein_runs(math.nan, 3, 0.05, 0.95) is None and stein_runs(0.05, 1, 0.05, 0.95) is None
    assert stein_half_width(0.05, 3, 19, 0.95) == pytest.approx(4.302653 * 0.05 / math.sqrt(19))
    assert stein_half_width(0.05, 3, 19, 0.95) <= 0.05 < stein_half_width(0.05, 3, 18, 0.95)


def test_a_cell_reaches_the_run_count_its_pilot_fixed():
    settings = Settings(target_half_width=0.05, budget_s=1e6, max_runs=50)
    lab = _Lab({BRIDGE: _constant_sd(0.05, 50)}, {NATIVE: 10.0, BRIDGE: 10.0}, pilot=3)
    decision = lab.plan(settings)
    (bridge,) = decision.comparisons
    assert bridge.stop == "target" and bridge.runs == bridge.runs_planned == 19
    assert (bridge.pilot, bridge.sd_pilot) == (3, pytest.approx(0.05))
    assert bridge.half_width == pytest.approx(stein_half_width(0.05, 3, 19, 0.95))
    assert len(lab.rounds) == 16 and lab.spent == 16 * 20.0
    assert _runs(lab.values, NATIVE) == _runs(lab.values, BRIDGE) == list(range(1, 20))


def test_runs_after_the_pilot_never_change_the_run_count():
    # the same pilot, then runs far noisier (or all equal): the count stays the pilot's 19
    settings = Settings(target_half_width=0.05, budget_s=1e6, max_runs=50)
    pilot = _constant_sd(0.05, 3)
    for later in ([0.0] * 47, _constant_sd(0.5, 47)):
        lab = _Lab({BRIDGE: pilot + later}, {NATIVE: 1.0, BRIDGE: 1.0}, pilot=3)
        (bridge,) = lab.plan(settings).comparisons
        assert (bridge.stop, bridge.runs, bridge.runs_planned) == ("target", 19, 19)


def test_budget_stops_the_campaign_and_says_so():
    # 25 s left after two extra rounds of 20 s: a third round does not fit
    settings = Settings(target_half_width=0.05, budget_s=65.0, max_runs=50)
    lab = _Lab({BRIDGE: _constant_sd(0.05, 50)}, {NATIVE: 10.0, BRIDGE: 10.0}, pilot=3)
    decision = lab.plan(settings)
    (bridge,) = decision.comparisons
    assert (bridge.stop, bridge.runs) == ("budget", 6)
    assert lab.spent == 60.0 <= settings.budget_s
    assert decision.remaining_s == pytest.approx(5.0)


def test_max_runs_stops_a_cell_that_cannot_reach_the_target():
    settings = Settings(target_half_width=0.01, budget_s=1e6, max_runs=5)
    lab = _Lab({BRIDGE: _constant_sd(0.2, 50)}, {NATIVE: 1.0, BRIDGE: 1.0}, pilot=3)
    (bridge,) = lab.plan(settings).comparisons
    assert (bridge.stop, bridge.runs) == ("max_runs", 5)
    assert len(lab.rounds) == 2


def test_native_runs_whenever_a_comparison_of_its_path_and_variant_does():
    precise, noisy = _constant_sd(0.001, 50), _constant_sd(0.1, 50)
    settings = Settings(target_half_width=0.05, budget_s=1e6, max_runs=40)
    lab = _Lab({BRIDGE: noisy, HOST: precise}, {NATIVE: 3.0, BRIDGE: 5.0, HOST: 5.0}, pilot=3)
    decision = lab.plan(settings)
    assert all(NATIVE in cells and HOST not in cells for cells in lab.rounds)
    stops = {c.mode: (c.stop, c.runs) for c in decision.comparisons}
    # bridge's pilot asks for 75 runs (t(0.975, 2) * 0.1 / 0.05 = 8.6, squared): capped at 40
    assert stops == {"docker-bridge": ("max_runs", 40), "docker-host": ("target", 3)}
    assert _runs(lab.values, NATIVE) == _runs(lab.values, BRIDGE)
    assert len(_runs(lab.values, HOST)) == 3


def test_the_stop_rule_ignores_the_effect():
    d = _constant_sd(0.08, 50)
    slow = [x + math.log(0.5) for x in d]  # half native's throughput
    same = [x + math.log(1.0) for x in d]
    other = ("docker-nat", "dc", "tcp")
    settings = Settings(target_half_width=0.05, budget_s=1e6, max_runs=40)
    lab = _Lab({BRIDGE: slow, other: same}, {NATIVE: 2.0, BRIDGE: 4.0, other: 4.0}, pilot=3)
    decision = lab.plan(settings)
    a, b = decision.comparisons
    assert (a.stop, a.runs) == (b.stop, b.runs) and a.half_width == pytest.approx(b.half_width)
    assert all((BRIDGE in cells) == (other in cells) for cells in lab.rounds)
    assert _runs(lab.values, BRIDGE) == _runs(lab.values, other)


def test_a_tight_budget_goes_where_a_second_buys_the_most_precision():
    # the same SD; one mode's runs cost five times the other's: the cheap one goes first
    cheap, dear = ("docker-host", "dc", "tcp"), ("docker-bridge", "dc", "tcp")
    d = _constant_sd(0.1, 50)
    settings = Settings(target_half_width=0.01, budget_s=12.0, max_runs=40)
    lab = _Lab({dear: d, cheap: d}, {NATIVE: 1.0, cheap: 1.0, dear: 5.0}, pilot=3)
    decision = lab.plan(settings)
    assert lab.rounds[0] == (NATIVE, dear, cheap)  # 7 s of 12: both fit
    assert lab.rounds[1] == (NATIVE, cheap)  # 5 s left: only the cheap one's run fits
    stops = {c.mode: (c.stop, c.runs) for c in decision.comparisons}
    assert stops == {"docker-host": ("budget", 6), "docker-bridge": ("budget", 4)}


def test_a_mode_never_measured_is_not_planned_and_says_so():
    settings = Settings(target_half_width=0.05, budget_s=1e6, max_runs=10)
    values = {(*NATIVE, r): 1e9 for r in (1, 2, 3)}
    decision = next_round([NATIVE, BRIDGE], values, {NATIVE: 1.0}, settings, 0.0, 3)
    assert decision.done and decision.comparisons[0].stop == "unmeasured"


def test_a_pilot_of_one_run_gets_a_second_to_learn_its_sd():
    settings = Settings(target_half_width=0.05, budget_s=1e6, max_runs=10)
    values = {(*NATIVE, 1): 1e9, (*BRIDGE, 1): 9e8}
    decision = next_round([NATIVE, BRIDGE], values, {NATIVE: 1.0, BRIDGE: 1.0}, settings, 0.0,
                          1)  # fmt: skip
    assert decision.cells == (NATIVE, BRIDGE)
    assert decision.comparisons[0].half_width == math.inf
    # a pilot whose second run failed for the mode: no SD to plan from, and it says so
    values |= {(*NATIVE, 2): 1e9, (*BRIDGE, 2): None}
    decision = next_round([NATIVE, BRIDGE], values, {NATIVE: 1.0, BRIDGE: 1.0}, settings, 0.0,
                          2)  # fmt: skip
    assert decision.done and decision.comparisons[0].stop == "pilot"


def test_settings_from_params():
    assert Settings.from_params({"enabled": False, "target_half_width": 0.05}) is None
    assert Settings.from_params(None) is None
    s = Settings.from_params({"enabled": True, "target_half_width": 0.05, "budget_minutes": 2,
                              "max_runs": 10, "confidence": 0.9})  # fmt: skip
    assert s == Settings(0.05, 120.0, 10, 0.9)



def test_the_planners_run_count_is_steins_from_the_pilot():
    rng = np.random.default_rng(5)
    d = rng.normal(0.0, 0.03, (25, 20))
    settings = Settings(0.05, 1e9, 20, 0.95)
    for row in d:
        n = 3
        while True:
            values = {(*NATIVE, r): 1.0 for r in range(1, n + 1)}
            values |= {(*BRIDGE, r): math.exp(x) for r, x in enumerate(row[:n], start=1)}
            if next_round([NATIVE, BRIDGE], values, {}, settings, 0.0, 3).done:
                break
            n += 1
        assert n == stein_runs(float(np.std(row[:3], ddof=1)), 3, 0.05, 0.95, 20)


def _planned(sd: float, max_runs: int, seed: int, n_sim: int = 20_000):
    """``n_sim`` simulated comparisons under the profiles' planning (a 3-run pilot, target
    half-width 0.05 at 95%, at most ``max_runs`` runs), true mean log ratio 0: the per-run log
    ratios, Stein's run count of each, and the pilot's SD."""
    d = np.random.default_rng(seed).normal(0.0, sd, (n_sim, max_runs))
    s0 = d[:, :3].std(axis=1, ddof=1)
    t0 = st.t.ppf(0.975, 2)
    n = np.minimum(np.maximum(3, np.ceil((t0 * s0 / 0.05) ** 2 - 1e-9)), max_runs).astype(int)
    return d, n, s0


SETTINGS = [(sd, cap) for cap in (10, 20) for sd in (0.01, 0.02, 0.05, 0.1)]


@pytest.mark.parametrize("sd, max_runs", SETTINGS)
def test_steins_interval_covers_95_percent_at_the_profiles_settings(sd, max_runs):
    """Stein's interval (the mean of all n runs +- t(2) * s0 / sqrt(n)) covers 95% +- 1 point
    whether the cap bites (SD 0.1: 75 runs wanted) or not (SD 0.01: the pilot suffices).
    20,000 comparisons per case: SE 0.15 points."""
    d, n, s0 = _planned(sd, max_runs, seed=int(1000 * sd) + max_runs)
    # the vectorised count is the planner's
    for k in range(5):
        assert n[k] == stein_runs(float(s0[k]), 3, 0.05, 0.95, max_runs)
    mask = np.arange(max_runs) < n[:, None]
    mean = (d * mask).sum(axis=1) / n
    half = st.t.ppf(0.975, 2) * s0 / np.sqrt(n)
    coverage = float(np.mean(np.abs(mean) <= half))
    assert coverage == pytest.approx(0.95, abs=0.01)
    if sd <= 0.02:  # uncapped: the width is the target's
        assert np.mean(half <= 0.05 + 1e-12) > 0.9


@pytest.mark.parametrize("sd, max_runs", [(0.05, 10), (0.05, 20), (0.1, 20)])
def test_the_usual_t_interval_after_a_pilot_chosen_count_covers_less(sd, max_runs):
    """The control: the same run counts with the usual t interval of all n runs (their own SD,
    n - 1 df) cover 91-93% here, below their 95% label: why the analysis uses Stein's."""
    d, n, _ = _planned(sd, max_runs, seed=7 + max_runs)
    mask = np.arange(max_runs) < n[:, None]
    mean = (d * mask).sum(axis=1) / n
    sd_all = np.sqrt((((d - mean[:, None]) * mask) ** 2).sum(axis=1) / (n - 1))
    cover = np.abs(mean) <= st.t.ppf(0.975, n - 1) * sd_all / np.sqrt(n)
    assert 0.90 <= float(np.mean(cover)) <= 0.935


def test_the_analysis_stein_interval_is_the_planned_one():
    """``stats.log_ratio_ci`` with ``pilot`` gives exactly the interval simulated above."""
    rng = np.random.default_rng(2)
    base = np.exp(rng.normal(0, 0.01, 12))
    mode = base * np.exp(rng.normal(-0.02, 0.04, 12))
    d = np.log(mode / base)
    ci = stats.log_ratio_ci(mode, base, 0.95, pilot=3)
    half = st.t.ppf(0.975, 2) * d[:3].std(ddof=1) / math.sqrt(12)
    assert (math.log(ci.lo), math.log(ci.hi)) == pytest.approx((d.mean() - half,
                                                                d.mean() + half))  # fmt: skip
    assert ci.sd_log == pytest.approx(d[:3].std(ddof=1))


def test_windows_per_run_known_answer():
    # within each run the windows differ by 0.1 (variance 0.005); the run means 0.05, 0.55,
    # 1.05 (variance 0.25, of which 0.005 / 2 is the windows')
    d = np.array([[0.0, 0.1], [0.5, 0.6], [1.0, 1.1]])
    plan = planning.windows_per_run(d, cost_run_s=4.0, cost_window_s=1.0)
    assert plan.sd_within == pytest.approx(math.sqrt(0.005))
    assert plan.sd_between == pytest.approx(math.sqrt(0.2475))
    assert plan.optimum == pytest.approx(math.sqrt(4.0 * 0.005 / 0.2475))
    assert plan.best == 1  # runs differ far more than windows: one window per run
    dear_runs = planning.windows_per_run(d, cost_run_s=100.0, cost_window_s=0.01)
    assert dear_runs.optimum == pytest.approx(math.sqrt(1e4 * 0.005 / 0.2475))
    assert dear_runs.best == 15  # ceil(14.2)


def test_windows_per_run_recovers_simulated_components_and_minimises_lab_time():
    rng = np.random.default_rng(3)
    sd_between, sd_within, runs, k = 0.05, 0.10, 2000, 4
    d = rng.normal(0, sd_between, (runs, 1)) + rng.normal(0, sd_within, (runs, k))
    plan = planning.windows_per_run(d, cost_run_s=3.0, cost_window_s=1.0)
    assert plan.sd_within == pytest.approx(sd_within, rel=0.05)
    assert plan.sd_between == pytest.approx(sd_between, rel=0.1)
    true_optimum = math.sqrt(3.0 * sd_within**2 / sd_between**2)  # 3.46
    assert plan.optimum == pytest.approx(true_optimum, rel=0.2)
    cost = {j: plan.lab_seconds_per_precision(j) for j in range(1, 21)}
    assert min(cost, key=cost.get) in (math.floor(plan.optimum), math.ceil(plan.optimum))
    assert plan.gain(plan.best) > 1.0 and plan.gain(1) == pytest.approx(1.0)


def test_windows_per_run_with_no_run_component_takes_the_cap():
    d = np.array([[0.0, 0.2], [0.2, 0.0], [0.1, 0.1]])  # run means equal: no run component
    plan = planning.windows_per_run(d, cost_run_s=2.0, cost_window_s=1.0, cap=12)
    assert plan.sd_between == 0.0 and math.isinf(plan.optimum) and plan.best == 12


@pytest.mark.parametrize("d", [np.zeros((5, 1)), np.zeros((1, 3)), np.array([[0.0, np.nan],
                                                                            [0.0, 0.1]])])
def test_windows_per_run_needs_two_runs_of_two_windows(d):
    with pytest.raises(ValueError, match="at least 2 runs"):
        planning.windows_per_run(d, 1.0, 1.0)


def test_the_analysis_reads_each_comparisons_pilot_from_the_planning_record():
    settings = Settings(target_half_width=0.05, budget_s=1e6, max_runs=10)
    lab = _Lab({BRIDGE: _constant_sd(0.05, 50)}, {NATIVE: 1.0, BRIDGE: 1.0}, pilot=3)
    decision = lab.plan(settings)
    record = planning.record(lab.cells, lab.values, decision, settings, 3)
    assert schema.record_pilots(record) == {BRIDGE: 3}
    assert schema.record_pilots({"planned": False, "reason": "fixed runs"}) == {}
    assert schema.record_pilots(None) == {}


def test_a_profiles_headline_comparisons_get_the_runs_the_others_keep_their_pilot():
    # docker-host is no headline question: same pilot SD, yet only docker-bridge gets runs
    settings = Settings(target_half_width=0.05, budget_s=1e6, max_runs=50,
                        headline=(("docker-bridge", "*", "tcp"),))  # fmt: skip
    lab = _Lab({BRIDGE: _constant_sd(0.05, 50), HOST: _constant_sd(0.05, 50)},
               {NATIVE: 10.0, BRIDGE: 10.0, HOST: 10.0}, pilot=3)  # fmt: skip
    by_mode = {c.mode: c for c in lab.plan(settings).comparisons}
    assert (by_mode["docker-bridge"].stop, by_mode["docker-bridge"].runs) == ("target", 19)
    assert (by_mode["docker-host"].stop, by_mode["docker-host"].runs) == (planning.OUTSIDE, 3)
    assert all(HOST not in cells for cells in lab.rounds)
    # a headline naming another variant or path plans neither
    other = Settings(target_half_width=0.05, budget_s=1e6, max_runs=50,
                     headline=(("docker-bridge", "internet", "*"), ("docker-host", "dc", "udp")))
    lab = _Lab({BRIDGE: _constant_sd(0.05, 50), HOST: _constant_sd(0.05, 50)},
               {NATIVE: 10.0, BRIDGE: 10.0, HOST: 10.0}, pilot=3)  # fmt: skip
    assert {c.stop for c in lab.plan(other).comparisons} == {planning.OUTSIDE}
    assert lab.rounds == []


def test_settings_read_the_headline_from_params():
    got = Settings.from_params({"enabled": True, "target_half_width": 0.03, "budget_minutes": 1.5,
                                "max_runs": 8, "headline": [["docker-host", "dc", "*"]]})
    assert got.headline == (("docker-host", "dc", "*"),) and got.budget_s == 90.0
    assert got.plans(("docker-host", "dc", "tcp")) and not got.plans(("docker-host", "internet",
                                                                      "tcp"))  # fmt: skip
    plain = {"enabled": True, "target_half_width": 0.05, "budget_minutes": 2, "max_runs": 10}
    assert Settings.from_params(plain).headline is None
    assert Settings.from_params(plain).plans(("podman", "local", "udp"))


def test_the_fixed_rule_gives_each_planned_comparison_max_runs_whatever_its_sd():
    """Under ``rule: fixed`` a comparison's run count is decided before any data: a quiet and
    a noisy headline comparison both get max_runs, the one outside the headline its pilot, and
    the record names no pilot (the analysis gives the t interval of all runs)."""
    settings = Settings(target_half_width=0.05, budget_s=1e6, max_runs=8, rule=planning.FIXED,
                        headline=(("docker-bridge", "*", "*"), ("docker-host", "*", "*")))
    podman = ("podman", "dc", "tcp")
    lab = _Lab({BRIDGE: _constant_sd(0.001, 50), HOST: _constant_sd(0.3, 50),
                podman: _constant_sd(0.3, 50)},
               {NATIVE: 1.0, BRIDGE: 1.0, HOST: 1.0, podman: 1.0}, pilot=3)  # fmt: skip
    decision = lab.plan(settings)
    by_mode = {c.mode: c for c in decision.comparisons}
    for mode in ("docker-bridge", "docker-host"):
        c = by_mode[mode]
        assert (c.stop, c.runs, c.runs_planned, c.runs_needed) == ("target", 8, 8, 8), mode
        assert c.half_width == pytest.approx(half_width(c.sd_log, 8, 0.95))
    assert (by_mode["podman"].stop, by_mode["podman"].runs) == (planning.OUTSIDE, 3)
    record = planning.record(lab.cells, lab.values, decision, settings, 3)
    assert record["rule"] == "fixed" and schema.record_pilots(record) == {}
    # the same data under Stein: the quiet comparison stops at its pilot, the noisy at the cap
    stein = Settings(target_half_width=0.05, budget_s=1e6, max_runs=8,
                     headline=settings.headline)  # fmt: skip
    lab = _Lab({BRIDGE: _constant_sd(0.001, 50), HOST: _constant_sd(0.3, 50)},
               {NATIVE: 1.0, BRIDGE: 1.0, HOST: 1.0}, pilot=3)  # fmt: skip
    got = {c.mode: (c.stop, c.runs) for c in lab.plan(stein).comparisons}
    assert got == {"docker-bridge": ("target", 3), "docker-host": ("max_runs", 8)}


@pytest.mark.parametrize("sd", [0.01, 0.1])
def test_the_fixed_rules_t_interval_covers_95_percent(sd):
    """A count fixed before the data: the t interval on all 8 runs covers 95% +- 1 point (20,000
    simulated comparisons, normal per-run log ratios), as the engine computes it (no pilot)."""
    rng = np.random.default_rng(7)
    d = rng.normal(0.0, sd, (20_000, 8))
    h = st.t.ppf(0.975, 7) * d.std(axis=1, ddof=1) / math.sqrt(8)
    assert abs(np.mean(np.abs(d.mean(axis=1)) <= h) - 0.95) <= 0.01
    lo, hi = stats._t_interval(d[0], 0.95, None)
    assert (lo, hi) == pytest.approx((d[0].mean() - h[0], d[0].mean() + h[0]))


def test_a_fixed_rule_needs_no_target_and_an_unknown_rule_is_refused():
    got = Settings.from_params({"enabled": True, "rule": "fixed", "target_half_width": 0.05,
                                "budget_minutes": 4, "max_runs": 8})  # fmt: skip
    assert (got.rule, got.max_runs, got.budget_s) == ("fixed", 8, 240.0)
    assert Settings.from_params({"enabled": True, "target_half_width": 0.05, "budget_minutes": 4,
                                 "max_runs": 8}).rule == "stein"  # fmt: skip
