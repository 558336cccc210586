"""The syscall benchmark (perf bench) on the embedded lab, through the campaign loop: every mode
it applies to ok (or skipped with a reason), the same perf bits in every mode, plausible costs,
one sample per second of the window, perf's own output kept and re-parsable, nothing left."""


import pytest

from pipeline.benchmarks import BENCHMARKS, Window
from pipeline.data import rawlog
from tests.integration.lab_campaign import (
    ROOT_ONLY,
    assert_nothing_left,
    smoke_modes,
    smoke_settings,
)

pytestmark = [pytest.mark.lab, ROOT_ONLY]

PROFILE, _ = smoke_settings("syscall")
MUST_RUN = {"native", "docker-bridge"}  # the lab always has these; the others may be skipped


@pytest.fixture(scope="module")
def collected(smoke_repo):
    return smoke_repo.collected("syscall")


def test_every_planned_mode_ran_or_says_why_not(collected):
    runs, samples, _ = collected
    bench = BENCHMARKS["syscall"]()
    assert set(runs["mode"]) == smoke_modes(bench.name) and set(runs["path"]) == {"host"}
    assert len(runs) == len(smoke_modes(bench.name)) * len(bench.variants) * PROFILE.runs
    for row in runs.itertuples():
        assert row.status in ("ok", "skipped"), (row.mode, row.variant, row.reason)
        if row.status == "skipped":
            assert row.mode not in MUST_RUN and len(row.reason) > 10, (row.mode, row.reason)
    ok = runs[runs["status"] == "ok"]
    assert MUST_RUN <= set(ok["mode"])
    measured = samples[~samples["warmup"]]
    per_window = measured.groupby(["run", "mode", "variant"]).size()
    assert per_window.eq(int(PROFILE.seconds)).all(), per_window  # one sample a second
    assert ok["binary_sha256"].nunique() == 1  # the same perf in every mode


def test_costs_are_plausible(collected):
    _, samples, _ = collected
    measured = samples[~samples["warmup"]]
    call = measured[measured["variant"] == "syscall-basic"].groupby("mode")["value"].median()
    pipe = measured[measured["variant"] == "sched-pipe"].groupby("mode")["value"].median()
    assert 10 < call["native"] < 5000, call  # ns per getppid(): ~120 here
    assert 0.3 < pipe["native"] < 500, pipe  # us per pipe round trip on one CPU: ~4.3 here
    # a container adds to a system call (seccomp), never takes a large part of it away
    assert call["docker-bridge"] / call["native"] > 0.8, call


def test_kept_perf_output_reparses_to_the_samples(collected):
    runs, samples, root = collected
    bench = BENCHMARKS["syscall"]()
    row = runs[(runs["mode"] == "docker-bridge") & (runs["status"] == "ok")].iloc[0]
    raw = rawlog.read_log(root, row["raw_log"])
    parsed = bench.parse(row["variant"], raw, Window(PROFILE.seconds, PROFILE.omit_seconds))
    stored = samples[
        (samples["mode"] == "docker-bridge") & (samples["variant"] == row["variant"])
        & (samples["run"] == row["run"]) & ~samples["warmup"]
    ].sort_values("sample")  # fmt: skip
    assert [s.value for s in parsed] == stored["value"].tolist()


def test_nothing_is_left_on_any_node(collected):
    assert_nothing_left()
