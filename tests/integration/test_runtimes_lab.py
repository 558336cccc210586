"""The OCI runtime modes (docker-crun, docker-gvisor) on the embedded lab: one short campaign of
each benchmark they apply to, through the real campaign loop. Every step is ok or skipped with
a reason that names what to do; crun runs everything; the runtime and gVisor's platform and
network are in the notes; gVisor's system calls are sized by its probe; the same binary runs
in every mode; nothing is left on any node.

The smoke profile leaves these modes out (conf/profiles/smoke.yaml, ``without_modes``), so
this is where CI measures them: one run, the shortest windows the tools take, the dc path, the
two modes alone (the network benchmarks plan native beside them). CI's time is tight, so by
default the test takes one benchmark per way a runtime mode can run a tool: throughput (a
network server; gVisor's skip when a tool fails its client), http (a network server gVisor
serves), syscall (a host tool behind gVisor's probe, sized by it), coldstart and footprint (the
engine driven by the benchmark). With CONTAINER_OVERHEAD_RUNTIME_BENCHMARKS=all it takes every
benchmark the modes apply to (about five minutes on the 2-core lab, against one and a half)."""

from __future__ import annotations

import json
import os

import pytest

from pipeline.benchmarks import BENCHMARKS
from tests.integration.lab_campaign import (
    ROOT_ONLY,
    ShortCampaigns,
    assert_nothing_left,
)

pytestmark = [pytest.mark.lab, ROOT_ONLY]

RUNTIMES = {"docker-crun": "crun", "docker-gvisor": "runsc"}
NETWORK = ("throughput", "latency", "http")
HOST = ("cpu", "memory", "disk", "syscall")
SCENARIO = ("coldstart", "footprint", "density")
OPTIONS = {
    "cpu": {"compile_packages": "errors"},
    "disk": {"file_mib": 8},
    "coldstart": {"starts": 2, "warmup_starts": 1},
    "footprint": {"max_containers": 2, "step": 2, "settle_seconds": 1, "max_seconds": 60},
    "density": {"cap": 2, "step": 2, "settle_seconds": 1, "max_seconds": 60},
}
EVERY = (*NETWORK, *HOST, *SCENARIO)
CI = ("throughput", "http", "syscall", "coldstart", "footprint")
CHOSEN = EVERY if os.environ.get("CONTAINER_OVERHEAD_RUNTIME_BENCHMARKS") == "all" else CI


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    campaigns = ShortCampaigns(tmp_path_factory.mktemp("raw"), list(RUNTIMES), OPTIONS,
                               "runtime modes")  # fmt: skip
    yield campaigns
    campaigns.report()


@pytest.mark.parametrize("benchmark", CHOSEN)
def test_every_step_ok_or_skipped_with_a_reason(collected, benchmark):
    runs, samples = collected(benchmark)
    bench = BENCHMARKS[benchmark]()
    assert set(RUNTIMES) <= set(runs["mode"])
    assert len(runs) == len(runs.drop_duplicates(["mode", "path", "variant"]))  # one run each
    for row in runs.itertuples():
        assert row.status in ("ok", "skipped"), (row.mode, row.variant, row.reason)
        if row.status == "skipped":
            # only gVisor may lack what a tool needs; the reason says what and what to do
            assert row.mode == "docker-gvisor", (row.mode, row.variant, row.reason)
            assert "gVisor" in row.reason and "leave docker-gvisor out" in row.reason, row.reason
            continue
        measured = samples[(samples["mode"] == row.mode) & (samples["variant"] == row.variant)
                           & ~samples["warmup"]]  # fmt: skip
        # (density's growth per container may be negative at one count: memory is noisy)
        assert len(measured) > 0 and measured["value"].notna().all(), (row.mode, row.variant)
        if row.mode in RUNTIMES:
            notes = json.loads(row.notes)
            assert notes["oci_runtime"] == RUNTIMES[row.mode], notes
            assert notes["oci_runtime_version"] not in ("", "n/a"), notes
            if row.mode == "docker-gvisor":
                assert notes["gvisor_platform"].split()[0] in ("ptrace", "kvm"), notes
                assert notes["gvisor_network"].startswith("hostinet"), notes  # lab: see module
    ok = runs[runs["status"] == "ok"]
    assert set(ok["mode"]) >= {"docker-crun"}  # crun runs every tool runc runs
    assert (ok[ok["mode"] == "docker-crun"]["variant"].nunique()) == len(bench.variants)
    if bench.binaries and len(ok):
        # the same binary in every mode: the image is built from the host's own files
        for _, group in ok.groupby("variant"):
            assert group["binary_sha256"].nunique() == 1, group[["mode", "binary_sha256"]]


def test_gvisor_system_calls_are_sized_by_its_probe(collected):
    runs, samples = collected("syscall")
    gvisor = runs[(runs["mode"] == "docker-gvisor") & (runs["variant"] == "syscall-basic")]
    if (gvisor["status"] == "skipped").all():
        pytest.skip(f"gVisor skipped syscall here: {gvisor['reason'].iloc[0]}")
    notes = json.loads(gvisor["notes"].iloc[0])
    assert notes["loops"].split()[0].isdigit() and "per run, not 8000000" in notes["loops"], notes
    per_call = samples[~samples["warmup"] & (samples["variant"] == "syscall-basic")]
    ns = per_call.groupby("mode")["value"].median()
    # the Sentry serves getppid(): microseconds, not runc's and crun's ~150 ns
    assert ns["docker-gvisor"] > 5 * ns["docker-crun"], ns


def test_nothing_left_on_any_node(collected):
    for benchmark in CHOSEN:
        collected(benchmark)
    assert_nothing_left()
