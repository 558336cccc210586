"""The podman, rootless, pasta and overlay-MTU modes on the embedded lab, read from the smoke
throughput campaign (every mode next to native, collected once per session by `smoke_repo`):
each measured, the backend seen recorded in the notes, nothing left behind."""

import json
import os

import pytest

from pipeline.collect import inventory
from pipeline.collect.modes import MODES, Context
from pipeline.collect.modes.base import leftovers
from pipeline.collect.remote import Pool
from pipeline.lab import cpus
from tests.integration.lab_campaign import smoke_settings

pytestmark = pytest.mark.lab

INVENTORY = "inventory/lab.yaml"
# mode -> (note key, the values this lab must show)
BACKENDS = {
    "podman": ("network_stack", {"cni", "netavark"}),
    "rootless-docker": ("network_backend", {"slirp4netns"}),
    "rootless-podman": ("network_backend", {"slirp4netns"}),
    "pasta": ("network_backend", {"pasta"}),
}


def inv_server() -> str:
    return inventory.load(INVENTORY, known_modes=MODES).servers[0].name


@pytest.fixture(scope="module", autouse=True)
def needs_root():
    if os.geteuid() != 0:
        pytest.skip("the lab needs root")


@pytest.fixture(scope="module")
def collected(smoke_repo):
    return smoke_repo.collected("throughput")


@pytest.mark.parametrize("mode", [*sorted(BACKENDS), "swarm-overlay-mtu"])
def test_mode_runs_next_to_native_and_leaves_nothing(collected, mode):
    runs, samples, _ = collected
    assert (runs.loc[runs["mode"] == "native", "status"] == "ok").all()
    everything = runs[runs["mode"] == mode]
    assert len(everything)
    assert set(everything["path"]) == set(MODES[mode].paths) & {"dc", "local"}
    # every (path, variant) measured; a newer mode may fail a window now and then (rootless UDP
    # through rootlesskit's port driver has), recorded with its reason, as the pipeline test allows
    mine = everything[everything["status"] == "ok"]
    cells = ["path", "variant"]
    assert len(mine.drop_duplicates(cells)) == len(everything.drop_duplicates(cells)), everything
    failed = everything[everything["status"] != "ok"]
    assert failed["reason"].str.len().gt(10).all() and len(failed) <= len(everything) // 4, failed
    # the smoke profile's placement, seen on the server's own processes in every engine
    placement = smoke_settings("throughput")[1]["placement"]
    every = cpus.fmt(cpus.plan(placement)[inv_server()])
    pair = runs[runs["mode"].isin(["native", mode]) & (runs["status"] == "ok")]
    for notes in map(json.loads, pair["notes"]):
        assert notes["placement"] == placement and notes["server_cpus"] == every, notes
    for notes in map(json.loads, mine["notes"]):
        if mode == "swarm-overlay-mtu":
            assert int(notes["overlay_mtu"]) == int(notes["underlay_mtu"]) - 50
            # Docker 20.10 subtracts VXLAN's 50 from the option once more (see the module).
            assert int(notes["overlay_mtu_in_container"]) == int(notes["overlay_mtu"]) - 50
        else:
            key, allowed = BACKENDS[mode]
            assert notes[key] in allowed
    if mode != "pasta":  # pasta runs the native binary: no image
        assert mine["image_digest"].str.len().min() > 10
    measured = samples[(samples["mode"] == mode) & ~samples["warmup"]]
    assert len(measured) > 0 and (measured["value"] >= 0).all()
    inv = inventory.load(INVENTORY, known_modes=MODES)
    with Pool(inv) as pool:
        ctx = Context(inventory=inv, pool=pool, campaign="check")
        for host in (*inv.servers, inv.dc_client):
            assert leftovers(ctx, host) == [], host.name
