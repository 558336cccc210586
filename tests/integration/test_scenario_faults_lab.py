"""Faults during the scenario benchmarks, and the clock stepped mid-campaign, one test each.

- A worker's dockerd (node2, not the manager the harness talks to) SIGKILLed while an
  orchestration step scales a service across the Swarm, and while a load-balancing step's load
  runs against replicas on that worker. Swarm then marks the node down and reschedules its
  tasks: the step's timing is not the scenario's any more, so the step must not be kept as ok.
  The campaign stops with one message naming the host and the step; after `lab.up()` and the
  next session's clean-up nothing labelled is left, and the resumed campaign measures that step
  again (every step once, ok, with its full count of samples).
- CLOCK_REALTIME stepped forward by a few seconds and back during a step (in the lab every
  host is a network namespace of one kernel, so every host's clock steps): the step is failed
  with "clock stepped by ...", measured once more in the same session, its failed attempt
  kept (attempts.parquet) and none of its samples saved; every other step is ok. The clock is
  put back from the monotonic clock in a ``finally``, whatever happens.

The campaigns are the smallest each benchmark allows (one variant, two runs, short windows).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from pipeline.data import schema
from pipeline.hosts import LABEL
from tests.integration.lab_campaign import (
    INVENTORY,
    ROOT_ONLY,
    ChildCampaign,
    assert_nothing_left,
)
from tests.integration.test_faults_lab import (  # the lab up, and whole after each test
    BUDGET_S,
    STEP_KEY,
    _counts,
    _describe,
    _everything_left,
    _ok_steps,
    _rows_of,
    _saved,
    lab_is_up,  # noqa: F401
    lab_repaired_after,  # noqa: F401
)

pytestmark = [pytest.mark.lab, ROOT_ONLY]

STEP_S = 5  # the clock is stepped forward by this, then back


class ScenarioCampaign(ChildCampaign):
    """A small campaign of ``benchmark`` in a child process. ``per_step``: samples rows each
    ok step saves."""

    def __init__(self, raw: Path, benchmark: str, variant: str, options: dict, window: dict,
                 per_step: int, runs: int = 2, modes: tuple[str, ...] = ("swarm-overlay",),
                 path: str | None = None) -> None:  # fmt: skip
        self.raw, self.benchmark, self.per_step = raw, benchmark, per_step
        self.spec = dict(benchmark=benchmark, variant=variant, options=options, window=window,
                         per_step=per_step, runs=runs, modes=modes, path=path)  # fmt: skip
        self.steps = runs * len(modes)  # one path, one variant
        paths = f", paths=({path!r},)" if path else ""
        options = options or None
        code = textwrap.dedent(f"""
            from pipeline.collect.campaign import Profile, collect
            ONCE = {{'interference_retries': 0}}  # a flagged window is not measured again here
            profile = Profile(runs={runs}, **{window!r})
            collect({benchmark!r}, {INVENTORY!r}, {str(raw)!r}, profile, 11, {list(modes)!r},
                    variants=({variant!r},), options={options!r}, interference=ONCE{paths})
        """)  # fmt: skip
        super().__init__(code, raw / benchmark / "lab")

    def wait_for(self, what: str, ready: Callable[[], bool], budget: float = BUDGET_S) -> None:
        super().wait_for(what, ready, budget)

    def finish(self, timeout: float = 240) -> str:
        return super().finish(timeout)


def _stopped_at(output: str) -> tuple:
    """The step a stopped campaign's message names (a variant may hold a hyphen)."""
    found = re.search(r"The campaign stopped at run (\d+) ([\w-]+) \((\w+), ([\w-]+)\)\.", output)
    assert found, f"the message names no step:\n{output}"
    run, mode, path, variant = found.groups()
    return (int(run), mode, path, variant)


def _labelled_tasks(node) -> list[str]:  # noqa: ANN001
    """The campaign's Swarm task containers running on ``node``."""
    from pipeline.lab import dockerd

    try:
        out = dockerd.docker(node, "ps", "-q", "--filter", f"label={LABEL}",
                             "--filter", "label=com.docker.swarm.service.name")  # fmt: skip
    except (subprocess.SubprocessError, RuntimeError):
        return []
    return out.split()


def _resume(campaign: ScenarioCampaign, record_property, before) -> ScenarioCampaign:
    """The same campaign again (the next `dvc repro`): it completes, what was saved before is
    unchanged, every step is there once, ok, with its full count of samples; nothing is left."""
    runs_before, samples_before = before
    counts_before = _counts(runs_before, samples_before)
    again = ScenarioCampaign(campaign.raw, **campaign.spec)
    output = again.finish()
    runs_after, samples_after = _saved(again.root)
    counts_after = _counts(runs_after, samples_after)
    rows = f"{_describe('before', counts_before)}; {_describe('after', counts_after)}"
    print(rows)
    record_property("rows", rows)
    assert again.proc.returncode == 0, f"the resumed campaign failed ({rows}):\n{output}"
    done = len(_ok_steps(runs_before))
    assert f"{done} already measured, {again.steps - done} to go" in output, rows
    assert not list(again.root.glob("parts/*/*")), "parts left after the consolidation"
    assert len(runs_after) == again.steps and set(runs_after.status) == {"ok"}, rows
    assert set(counts_after.values()) == {(1, again.per_step)}, rows
    for key in _ok_steps(runs_before):
        assert counts_after[key] == counts_before[key], (key, rows)
        for table_before, table_after in ((runs_before, runs_after),
                                          (samples_before, samples_after)):  # fmt: skip
            old, new = (_rows_of(t, key) for t in (table_before, table_after))
            pd.testing.assert_frame_equal(old, new, check_dtype=False, obj=f"{key}")
    assert_nothing_left()
    return again


def _wrk_running() -> bool:
    """A wrk client is running on dc-client (its network namespace's processes)."""
    listed = subprocess.run(["ip", "netns", "pids", "dc-client"], capture_output=True,
                            text=True, timeout=10).stdout.split()  # fmt: skip
    for pid in listed:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:  # it ended meanwhile
            continue
        if argv and argv[0].endswith(b"/wrk"):
            return True
    return False


def _kill_worker_during_a_step(tmp_path, record_property, make,  # noqa: ANN001
                               busy: Callable[[], bool] = lambda: True) -> None:  # fmt: skip
    """``make(raw)`` starts the campaign; once a step is saved and the next step has a task on
    a worker (node2 or node3, whichever the scheduler gave one) and ``busy()``, that worker's
    dockerd is SIGKILLed."""
    from pipeline import lab
    from pipeline.lab import dockerd
    from pipeline.lab.topology import NODES

    workers = NODES[1:]
    campaign = make(tmp_path)
    campaign.wait_for("a saved step", lambda: campaign.saved_steps() >= 1)
    holding: list = []

    def a_worker_task() -> bool:
        holding[:] = [w for w in workers if _labelled_tasks(w)]
        return bool(holding) and busy()

    campaign.wait_for("the next step busy with a task on a worker", a_worker_task)
    worker = holding[0]
    os.kill(int(dockerd.pidfile(worker).read_text()), signal.SIGKILL)
    killed_at = time.monotonic()
    output = campaign.finish()
    print(f"{worker.name}'s dockerd killed; the campaign ended "
          f"{time.monotonic() - killed_at:.0f} s later")
    assert campaign.proc.returncode != 0, output
    stopped = _stopped_at(output)
    assert re.search(rf"on host {worker.name}\b.*Is the docker daemon running", output, re.S), \
        output
    assert output.count("The campaign stopped at") == 1, output
    before = _saved(campaign.root)
    assert stopped not in _ok_steps(before[0]), f"{stopped} is saved as ok, yet named as stopped"
    assert set(before[0].status) == {"ok"} and len(before[0]) >= 1, before[0]
    # the worker's containers come back with its daemon; the next session's clean-up removes
    # them
    lab.up()
    left = _everything_left()
    assert set(left) <= {worker.name}, left
    _resume(campaign, record_property, before)


def _orchestration(raw: Path) -> ScenarioCampaign:
    # scale-10 capped at 3 replicas: one task per node; two timed repetitions per step
    return ScenarioCampaign(raw, "orchestration", "scale-10", {"max_replicas": 3, "repeats": 2},
                            {"seconds": 1, "omit_seconds": 0, "warmup_seconds": 0},
                            per_step=4)  # fmt: skip


LB_WINDOW = {"seconds": 3, "omit_seconds": 0, "warmup_seconds": 1}


def _lb(raw: Path) -> ScenarioCampaign:
    # haproxy in front of 2 replicas (Swarm spreads them over the nodes); a warm-up window and
    # a measured one: 6 samples each (rate, errors, 4 latency percentiles)
    options = {"replicas": "2", "connections": 8}
    return ScenarioCampaign(raw, "lb", "haproxy-r2", options, LB_WINDOW, per_step=12)


def test_a_worker_dockerd_killed_during_orchestration(tmp_path, record_property):
    _kill_worker_during_a_step(tmp_path, record_property, _orchestration)


def test_a_worker_dockerd_killed_during_load_balancing(tmp_path, record_property):
    # while wrk loads the balancer (its warm-up or its window): the replica on the worker
    # goes on serving from its container, so only the daemons' check can tell
    _kill_worker_during_a_step(tmp_path, record_property, _lb, busy=_wrk_running)


# -- the clock stepped --------------------------------------------------------------------


def _step_clock_during_a_step(campaign: ScenarioCampaign, busy: Callable[[], bool]) -> None:
    """Once a step is saved and ``busy()`` says the next one is measuring: CLOCK_REALTIME
    forward by STEP_S, half a second, then back; the clock is set from the monotonic clock
    and the offset read before, so it is right again even if anything in between fails."""
    campaign.wait_for("a saved step", lambda: campaign.saved_steps() >= 1)
    campaign.wait_for("the next step measuring", busy)
    offset = time.time_ns() - time.monotonic_ns()
    try:
        time.clock_settime_ns(time.CLOCK_REALTIME, time.monotonic_ns() + offset + STEP_S * 10**9)
        time.sleep(0.5)
    finally:
        time.clock_settime_ns(time.CLOCK_REALTIME, time.monotonic_ns() + offset)
    assert abs(time.time_ns() - time.monotonic_ns() - offset) < 50_000_000


def _assert_stepped_step_measured_again(campaign: ScenarioCampaign, output: str) -> tuple:
    """The stepped step failed with the clock's reason, was measured once more in the same
    session, its attempt kept without samples; every step ends ok with its full samples."""
    assert campaign.proc.returncode == 0, output
    failed = re.search(r"run (\d+)/\d+ ([\w-]+) \(([\w]+), ([\w-]+)\): failed: clock stepped by "
                       r"\+(\d+\.\d+) s", output)  # fmt: skip
    assert failed, f"no step failed on the clock step:\n{output}"
    assert STEP_S - 0.5 < float(failed[5]) < STEP_S + 0.5, failed[0]
    assert "measuring the 1 failed step(s) once more" in output, output
    key = (int(failed[1]), failed[2], failed[3], failed[4])
    attempts = schema.read_table(campaign.root / "attempts.parquet", "runs").to_pandas()
    assert len(attempts) == 1 and tuple(attempts[STEP_KEY].iloc[0]) == key, attempts
    assert attempts.status.iloc[0] == "failed", attempts
    assert attempts.reason.iloc[0].startswith("clock stepped by +"), attempts.reason.iloc[0]
    runs = schema.read_table(campaign.root / "runs.parquet", "runs").to_pandas()
    samples = schema.read_samples(campaign.root / "samples.parquet")
    assert len(runs) == campaign.steps and set(runs.status) == {"ok"}, runs
    counts = _counts(runs, samples)
    assert set(counts.values()) == {(1, campaign.per_step)}, counts
    # the samples of the step are the new measurement's only: its timestamps after the attempt
    mine = runs[(runs[STEP_KEY] == pd.Series(key, index=STEP_KEY)).all(axis=1)]
    assert mine.started_at.iloc[0] > attempts.ended_at.iloc[0]
    assert_nothing_left()
    return key


def test_the_clock_stepped_during_an_orchestration_step(tmp_path, record_property):
    from pipeline.lab.topology import NODES

    campaign = _orchestration(tmp_path)
    _step_clock_during_a_step(campaign, lambda: bool(_labelled_tasks(NODES[0])))
    output = campaign.finish()
    key = _assert_stepped_step_measured_again(campaign, output)
    record_property("rows", f"clock stepped by +{STEP_S} s during r{key[0]} {key[1]} {key[3]}")


def test_the_clock_stepped_during_a_throughput_step(tmp_path, record_property):
    from tests.integration.test_faults_lab import _client_pids

    # the campaign of test_faults_lab.py: 1 s windows, a warm-up, 4 samples per step
    campaign = ScenarioCampaign(tmp_path, "throughput", "tcp", {},
                                {"seconds": 1, "omit_seconds": 0, "warmup_seconds": 1},
                                per_step=4, modes=("native", "docker-bridge"),
                                path="dc")  # fmt: skip
    _step_clock_during_a_step(campaign, lambda: bool(_client_pids()))
    output = campaign.finish()
    key = _assert_stepped_step_measured_again(campaign, output)
    record_property("rows", f"clock stepped by +{STEP_S} s during r{key[0]} {key[1]} {key[3]}")
