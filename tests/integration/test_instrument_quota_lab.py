"""The instrument's smallest injected overhead on the embedded lab: the cpu check campaign
(native, its A/A twin, the half-CPU quota, docker-bridge and docker-cpuquota) through the real
campaign loop, sysbench cpu at 1 thread only, and its analysis: the interval of docker-cpuquota's
ratio to docker-bridge holds the injected 0.94, a 6% cut is never called "equivalent" at the
cpu margin of +-2%, and the A/A twin is not called different (the first and the last at 99.9%,
so that chance alone fails CI 1 time in 1,000, not 1 in 20). Nothing is left on any node.

Short by design (CI's time): INSTRUMENT_QUOTA_RUNS runs (default 5, the study profile's
instrument runs) of 3-second windows, five steps a run, about 3 minutes on the 2-core lab. The
verdict is printed, not asserted: at the lab's run-to-run spread five runs find a 6% cut with
about the power docs/validation.md states, not always (tests/unit/test_instrument_power.py)."""

from __future__ import annotations

import os

import pytest

from pipeline.analysis import instrument as analysis
from pipeline.collect import instrument
from pipeline.collect.modes.controls import CONTAINER_CPU_QUOTA
from pipeline.collect.plan import Profile
from pipeline.environments import provider
from tests.integration.lab_campaign import INVENTORY, ROOT, ROOT_ONLY, assert_nothing_left

pytestmark = [pytest.mark.lab, ROOT_ONLY]

RUNS = int(os.environ.get("INSTRUMENT_QUOTA_RUNS", "5"))
WINDOW = Profile(runs=RUNS, seconds=3.0, omit_seconds=1.0, warmup_seconds=1.0)
MARGINS = {"network": 0.05, "cpu": 0.02, "memory": 0.02, "disk": 0.02}


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    raw = tmp_path_factory.mktemp("instrument")
    inventory_file = ROOT / INVENTORY
    instrument.collect(inventory_file, raw / "lab", {"cpu": WINDOW}, seed=7,
                       options={"cpu": {"compile_packages": "errors"}},
                       provider=provider(inventory_file),
                       variants={"cpu": ("1thread",)})  # fmt: skip
    aa, injected = analysis.summarise(raw, MARGINS)
    print(analysis.aa_table(aa).to_string(index=False))
    print(analysis.injected_table(injected).to_string(index=False))
    print(analysis.sentence(aa, injected))
    # The checks that hold by chance at 95% (the known answer inside its interval, the A/A
    # twin not called different) run at 99.9%: at 95% each fails 1 run in 20 by design (the
    # rates themselves are pinned by simulation in tests/unit), which CI would read as a failure.
    aa_wide, wide = analysis.summarise(raw, MARGINS, confidence=CONTAINMENT)
    return aa_wide, injected, wide


CONTAINMENT = 0.999


def test_the_small_quota_on_the_container_is_recovered_inside_its_interval(checked):
    _, injected, wide = checked
    row = injected[injected["control"] == "docker-cpuquota"].set_index("variant").loc["1thread"]
    assert row["expected"] == pytest.approx(CONTAINER_CPU_QUOTA)
    assert row["baseline"] == "docker-bridge" and row["n_runs"] == RUNS
    held = wide[wide["control"] == "docker-cpuquota"].set_index("variant").loc["1thread"]
    assert held["coverage"] == CONTAINMENT and held["recovered"] == pytest.approx(row["recovered"])
    assert held["recovered_within"], (held["recovered_lo"], held["recovered"], held["recovered_hi"])
    # a real 6% cut is three cpu margins: the rule may say "overhead" or, short of power,
    # "inconclusive", never that it does not matter
    assert row["verdict"] in ("overhead", "inconclusive"), row["verdict"]
    half = injected[injected["control"] == "native-cpuquota"].set_index("variant").loc["1thread"]
    assert half["recovered_hi"] < 1 and half["verdict"] == "overhead"  # the large one, as before


def test_the_a_a_twin_is_not_called_different(checked):
    aa, _, _ = checked  # at 99.9%
    assert len(aa) == 1 and aa["verdict"].iloc[0] in ("equivalent", "inconclusive"), aa
    assert_nothing_left()
