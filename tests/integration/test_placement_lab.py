"""CPU placement on the embedded lab: a latency campaign measures one latency level, and says so.

The lab's hosts share this machine's CPUs, and a sockperf round trip has two levels: client and
server waking each other on one CPU, or across two (docs/validation.md, "CPU placement: the two
latency levels"). The test measures both levels natively first (the "colocated" and "split"
placements, `pipeline/lab/cpus.py`), takes the threshold between them from that measurement
(their geometric midpoint, as harness/placement.py reports it), then runs a short latency
campaign, native and docker-bridge, UDP and TCP, under the placement the smoke profile gives the
latency benchmark, through the real collection path (provider, placer, campaign loop). It checks
that every run records the placement and the CPUs applied, that the tools ran only on those
CPUs (read from /proc while the campaign ran), and that every run's p50 lies on that
placement's side of the threshold. Needs root (it brings the lab up); about a minute and a half.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.benchmarks.latency import Latency
from pipeline.collect.campaign import Campaign, Profile
from pipeline.data import schema
from pipeline.environments import collect
from pipeline.lab import cpus
from tests.integration.lab_campaign import INVENTORY, ROOT, smoke_settings

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root"),
    pytest.mark.skipif(shutil.which("dockerd") is None, reason="dockerd is not installed"),
]

MODES = ["native", "docker-bridge"]
# 2,000 round trips a window: a p50 to well under 1 % (its order-statistic interval), and the
# whole test within its time budget
WINDOW = dict(seconds=1.0, omit_seconds=0.0, warmup_seconds=1.0, count=2000, warmup_count=200)
# The reference levels over a time, not a count: on a loaded machine the cross-CPU level's mean
# round trip can exceed what a counted window allows (harness/placement.py does the same).
LEVEL_WINDOW = dict(seconds=0.5, omit_seconds=0.0, warmup_seconds=0.0)  # sockperf --time 1
LEVEL_RUNS = 2  # native runs per placement for the two reference levels
# Each window once, whatever else the machine runs meanwhile: the test's time stays bounded, and a
# disturbed window must still show its placement's level
NO_RETRIES = {"interference_retries": 0}


def _p50s(out: Path) -> pd.DataFrame:
    """Per (run, mode, variant): the measured window's p50 round trip (us)."""
    samples = schema.read_samples(out / "samples.parquet")
    measured = samples[~samples["warmup"]]
    return (measured.groupby(["run", "mode", "variant"])["value"]
            .median().rename("p50").reset_index())  # fmt: skip


@pytest.fixture(scope="module")
def levels() -> dict[str, pd.Series]:
    """The two levels, measured now: native UDP p50 per run under "colocated" and "split"."""
    from pipeline import lab
    from pipeline.collect import inventory
    from pipeline.collect.modes import MODES as KNOWN

    lab.up()
    inv = inventory.load(ROOT / INVENTORY, known_modes=KNOWN)
    found = {}
    with tempfile.TemporaryDirectory(prefix="co-placement-levels-") as tmp:
        for placement in ("colocated", "split"):
            bench = Latency()
            bench.variants = ("udp",)
            out = Path(tmp) / placement
            Campaign(bench, inv, Profile(runs=LEVEL_RUNS, **LEVEL_WINDOW), out, 3, ["native"],
                     lambda _: None, ("dc",), placement=placement, placer=cpus.place,
                     interference=NO_RETRIES).run()  # fmt: skip
            found[placement] = _p50s(out)["p50"]
    print({p: v.round(1).tolist() for p, v in found.items()})
    return found


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> tuple[pd.DataFrame, pd.DataFrame, dict, str]:
    """The short campaign under the smoke profile's placement for latency: its runs, per-run
    p50s, the CPUs the tools were seen on and the placement."""
    _, options = smoke_settings("latency")
    placement = options.get("placement", Latency.options["placement"])
    raw = tmp_path_factory.mktemp("raw")
    with cpus.watching(["sockperf"]) as watch:
        collect("latency", ROOT / INVENTORY, raw, Profile(runs=2, **WINDOW), seed=7,
                modes=MODES, paths=("dc",), options=options, interference=NO_RETRIES)  # fmt: skip
    out = raw / "latency" / "lab"
    runs = pd.read_parquet(out / "runs.parquet")
    return runs, _p50s(out), watch.ran, placement


def test_the_two_levels_separate(levels):
    """The check below could fail: no window of one level reaches the other's threshold."""
    low, high = levels["colocated"], levels["split"]
    threshold = math.sqrt(low.median() * high.median())
    print(f"colocated {low.median():.1f} us, split {high.median():.1f} us, threshold "
          f"{threshold:.1f} us")  # fmt: skip
    assert (low < threshold).all() and (high > threshold).all()


def test_every_run_records_its_placement_and_cpus(campaign):
    runs, _, _, placement = campaign
    assert (runs["status"] == "ok").all(), runs[["mode", "variant", "status", "reason"]]
    assert sorted(set(runs["mode"])) == sorted(MODES)
    planned = {h: cpus.fmt(c) for h, c in cpus.plan(placement).items()}
    for row in runs.itertuples():
        notes = json.loads(row.notes)
        assert notes["placement"] == placement, (row.mode, notes)
        assert notes["placement_cpus"] == planned, (row.mode, notes)
        # the server's affinity, read from /proc on the server host when it started
        assert notes["server_cpus"] == planned[row.server_host], (row.mode, notes)


def test_the_tools_ran_only_on_their_hosts_cpus(campaign):
    _, _, ran, placement = campaign
    planned = cpus.plan(placement)
    print(ran)
    assert {h for h, _ in ran} >= {"node1", "dc-client"}  # server and client both seen
    for (host, comm), seen in ran.items():
        assert host in planned, (host, comm, seen)
        assert seen <= set(planned[host]), (host, comm, seen)


def test_every_runs_p50_is_at_the_placements_level(campaign, levels):
    _, p50s, _, placement = campaign
    low, high = levels["colocated"].median(), levels["split"].median()
    threshold = math.sqrt(low * high)
    print(p50s.round(1).to_string())
    assert placement in ("colocated", "split"), f"latency runs {placement}: no one level"
    expect_low = placement == "colocated"
    at_level = (p50s["p50"] < threshold) == expect_low
    assert at_level.all(), (threshold, p50s[~at_level])
    # and no mode mixes levels: within a mode the runs differ by less than half the levels'
    # separation (on the log scale), what one run of the other level would take
    for mode, by_mode in p50s.groupby("mode"):
        spread = np.log(by_mode["p50"].max() / by_mode["p50"].min())
        assert spread < 0.5 * math.log(high / low), (mode, by_mode["p50"].tolist())
