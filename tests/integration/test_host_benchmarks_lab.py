"""The host benchmarks (sysbench cpu and memory) on the embedded lab, through the campaign loop:
every mode they apply to ok (or skipped with a reason), the same sysbench bits in every mode,
plausible rates, sysbench's own output kept and re-parsable, nothing left on any node."""

import os
import shlex

import pandas as pd
import pytest

from pipeline.benchmarks import BENCHMARKS, Window
from pipeline.benchmarks.sysbench import run_seconds
from pipeline.data import rawlog
from tests.integration.lab_campaign import (
    ROOT_ONLY,
    assert_nothing_left,
    smoke_modes,
    smoke_settings,
)

pytestmark = [pytest.mark.lab, ROOT_ONLY]

# The smoke profile's windows and runs: two benchmarks x five modes x 2-3 variants.
PROFILE, OPTIONS = smoke_settings("cpu")
assert smoke_settings("memory")[0] == PROFILE
MUST_RUN = {"native", "docker-bridge"}  # the lab always has these; the others may be skipped
COMPILE = OPTIONS["compile_packages"]  # smoke: errors and its dependencies (~3 s here)


@pytest.fixture(scope="module")
def collected(smoke_repo):
    return {b: smoke_repo.collected(b) for b in ("cpu", "memory")}


def _medians(samples: pd.DataFrame, variant: str) -> dict[str, float]:
    measured = samples[~samples["warmup"] & (samples["variant"] == variant)]
    return measured.groupby("mode")["value"].median().to_dict()


@pytest.mark.parametrize("benchmark", ["cpu", "memory"])
def test_every_planned_mode_ran_or_says_why_not(collected, benchmark):
    runs, samples, _ = collected[benchmark]
    bench = BENCHMARKS[benchmark]()
    assert set(runs["mode"]) == smoke_modes(bench.name)  # planned: exactly the modes it applies to
    assert set(runs["path"]) == {"host"}
    assert len(runs) == len(smoke_modes(bench.name)) * len(bench.variants) * PROFILE.runs
    for row in runs.itertuples():
        assert row.status in ("ok", "skipped"), (row.mode, row.variant, row.reason)
        if row.status == "skipped":
            assert row.mode not in MUST_RUN and len(row.reason) > 10, (row.mode, row.reason)
        elif row.variant == "compile":  # the window is the build, measured inside the mode
            build = samples[
                (samples["mode"] == row.mode) & (samples["variant"] == "compile")
                & (samples["run"] == row.run)
            ]  # fmt: skip
            assert row.window_s == pytest.approx(build["value"].sum(), rel=1e-9)
        else:
            assert row.server_host == row.client_host == "node1"
            # the warm-up (if the profile has one) and the window, each with sysbench's tail
            # second (pipeline/benchmarks/sysbench.py)
            warmup = PROFILE.warmup_seconds + 1 if PROFILE.warms_up else 0
            assert row.window_s == warmup + (PROFILE.seconds + 1)
    ok = runs[runs["status"] == "ok"]
    assert MUST_RUN <= set(ok["mode"])
    for mode in set(ok["mode"]):  # a measured window per ok run, a flagged warm-up if planned
        mine = samples[(samples["mode"] == mode) & (samples["variant"] != "compile")]
        assert (~mine["warmup"]).any() and mine["warmup"].any() == PROFILE.warms_up, mode


@pytest.mark.parametrize("benchmark", ["cpu", "memory"])
def test_every_mode_runs_the_native_sysbench_bits(collected, benchmark):
    runs, _, _ = collected[benchmark]
    ok = runs[runs["status"] == "ok"]
    for variant, rows in ok.groupby("variant"):  # compile's binary is go, the others sysbench
        native = rows.loc[rows["mode"] == "native", "binary_sha256"].unique()
        assert len(native) == 1 and len(native[0]) == 64, variant
        assert set(rows["binary_sha256"]) == {native[0]}, variant
    assert ok.groupby("variant")["binary_sha256"].first().nunique() == (
        2 if benchmark == "cpu" else 1
    )
    containers = ok[ok["mode"] != "native"]
    # docker prints "sha256:<hex>", podman the bare hex
    assert containers["image_digest"].str.fullmatch(r"(sha256:)?[0-9a-f]{64}").all()
    assert ok.loc[ok["mode"] == "native", "image_digest"].isna().all()


def test_cpu_rates_are_plausible(collected):
    runs, samples, _ = collected["cpu"]
    one = _medians(samples, "1thread")
    assert one["native"] > 100  # sysbench's primes to 20000: ~1000 events/s per core here
    assert abs(one["docker-bridge"] / one["native"] - 1) < 0.30, one
    every = _medians(samples, "allthreads")
    assert every["native"] > one["native"]  # more threads on a multi-core host do more
    cpus = os.cpu_count()  # the lab's nodes share this machine's CPUs
    commands = runs.loc[runs["variant"] == "allthreads", "command"]
    assert commands.str.contains(f"--threads={cpus} ", regex=False).all()
    rates = samples[samples["variant"] != "compile"]
    assert rates["unit"].eq("events/s").all() and rates["metric"].eq("cpu_events_per_s").all()


def test_compile_times_are_plausible_and_one_per_run(collected):
    runs, samples, _ = collected["cpu"]
    build = samples[samples["variant"] == "compile"]
    assert not build["warmup"].any()  # the warm-up lists packages: it yields no sample
    assert build["metric"].eq("compile_s").all() and build["unit"].eq("s").all()
    assert build.groupby(["run", "mode"]).size().eq(1).all()
    seconds = build.groupby("mode")["value"].median()
    assert 0.5 < seconds["native"] < 300, seconds  # go build -a fmt: seconds, not minutes
    assert 0.5 < seconds["docker-bridge"] / seconds["native"] < 2.0, seconds
    commands = runs.loc[(runs["variant"] == "compile") & (runs["status"] == "ok"), "command"]
    assert commands.str.contains(f"build -a -p {os.cpu_count()} {COMPILE};", regex=False).all()


def test_memory_rates_are_plausible(collected):
    _, samples, _ = collected["memory"]
    for variant in ("write", "read"):
        rates = _medians(samples, variant)
        assert rates["native"] > 500, rates  # MiB/s: any machine's RAM moves more than this
        assert abs(rates["docker-bridge"] / rates["native"] - 1) < 0.30, (variant, rates)
    assert samples["unit"].eq("MiB/s").all()


@pytest.mark.parametrize("benchmark", ["cpu", "memory"])
def test_kept_sysbench_output_reparses_to_the_samples(collected, benchmark):
    runs, samples, root = collected[benchmark]
    bench = BENCHMARKS[benchmark]()
    ok = runs[(runs["mode"] == "docker-bridge") & (runs["status"] == "ok")]
    row = ok[ok["variant"] != "compile"].iloc[0]
    raw = rawlog.read_log(root, row["raw_log"])
    window = Window(PROFILE.seconds, PROFILE.omit_seconds)
    parsed = bench.parse(row["variant"], raw, window)
    stored = samples[
        (samples["mode"] == "docker-bridge")
        & (samples["variant"] == row["variant"])
        & (samples["run"] == row["run"])
        & ~samples["warmup"]
    ].sort_values("sample")
    assert [s.value for s in parsed] == stored["value"].tolist()
    command = row["command"].split("$ ", 1)[1]
    assert "run --rm --name" in command and "--label" in command
    # the window and the tail second whose report sysbench may lose
    assert shlex.split(command)[-1] == "run" and f"--time={run_seconds(window)} " in command


def test_nothing_is_left_on_any_node(collected):
    assert_nothing_left()
