"""The disk benchmark (fio) on the embedded lab, through the campaign loop: every storage mode x
variant ok (or skipped with a reason), the same fio bits and the same fio command line in every
mode, plausible rates, fio's output kept and re-parsable, nothing left on any node (no
containers, no volumes, no test directories)."""

import json
import re

import pytest

from pipeline.benchmarks import BENCHMARKS, Window
from pipeline.collect.modes.base import SCRATCH_DIR
from pipeline.data import rawlog
from tests.integration.lab_campaign import (
    ROOT_ONLY,
    assert_nothing_left,
    lab_session,
    smoke_modes,
    smoke_settings,
)

pytestmark = [pytest.mark.lab, ROOT_ONLY]

# The smoke profile's disk settings: 6 modes x 4 variants once in ~3 min.
PROFILE, OPTIONS = smoke_settings("disk")
FILE_MIB = OPTIONS["file_mib"]
# The lab always has these; rootless Docker and fuse-overlayfs may be skipped with a reason.
MUST_RUN = {"native", "docker-overlay2", "docker-bind", "docker-volume"}
_FIO = re.compile(r"(/usr/bin/fio .*--output-format=json)")


@pytest.fixture(scope="module")
def collected(smoke_repo):
    return smoke_repo.collected("disk")


def test_every_storage_mode_and_variant_ran_or_says_why_not(collected):
    runs, samples, _ = collected
    bench = BENCHMARKS["disk"]()
    assert len(runs) == len(smoke_modes(bench.name)) * len(bench.variants) * PROFILE.runs
    assert set(runs["mode"]) == smoke_modes(bench.name) and set(runs["path"]) == {"host"}
    for row in runs.itertuples():
        assert row.status in ("ok", "skipped"), (row.mode, row.variant, row.reason)
        if row.status == "skipped":
            assert row.mode not in MUST_RUN and len(row.reason) > 10, (row.mode, row.reason)
        else:
            assert row.server_host == row.client_host == "node1"
            # the warm-up (if the profile has one) and the window, each with fio's tail second
            # (pipeline/benchmarks/disk.py)
            warmup = PROFILE.warmup_seconds + 1 if PROFILE.warms_up else 0
            assert row.window_s == warmup + (PROFILE.seconds + 1)
    ok = runs[runs["status"] == "ok"]
    assert MUST_RUN <= set(ok["mode"])
    for (mode, variant), mine in samples.groupby(["mode", "variant"]):
        warm = int(PROFILE.warms_up)
        assert mine["warmup"].sum() == warm and (~mine["warmup"]).sum() == 1, (mode, variant)


def test_every_mode_runs_the_same_fio_bits_and_command_line(collected):
    runs, _, _ = collected
    ok = runs[runs["status"] == "ok"]
    assert ok["binary_sha256"].nunique() == 1 and len(ok["binary_sha256"].iloc[0]) == 64
    for variant, rows in ok.groupby("variant"):
        fio = {_FIO.search(c).group(1) for c in rows["command"]}
        assert len(fio) == 1, (variant, fio)  # byte-identical: only the storage differs
        (command,) = fio
        assert "--direct=1" in command and f"--size={FILE_MIB}M" in command
        assert f"--filename={SCRATCH_DIR}/disk/fio.dat" in command
    containers = ok[ok["mode"] != "native"]
    assert containers["command"].str.contains(" run --rm --name co-", regex=False).all()
    bind = ok.loc[ok["mode"] == "docker-bind", "command"].iloc[0]
    assert f"type=bind,source={SCRATCH_DIR}/disk,target={SCRATCH_DIR}/disk" in bind
    volume = ok.loc[ok["mode"] == "docker-volume", "command"].iloc[0]
    assert re.search(r"--mount type=volume,source=co-\S+-docker-volume,target=", volume)


def test_rates_are_physically_plausible(collected):
    _, samples, _ = collected
    measured = samples[~samples["warmup"]]
    assert (measured["value"] > 0).all()
    units = {"seqread": "MiB/s", "seqwrite": "MiB/s", "randread": "IOPS", "randwrite": "IOPS"}
    for variant, unit in units.items():
        assert set(measured.loc[measured["variant"] == variant, "unit"]) == {unit}
    seq = measured[measured["unit"] == "MiB/s"]["value"]
    assert seq.between(5, 50_000).all(), seq.describe()  # a disk, not a bus or a stall
    iops = measured[measured["unit"] == "IOPS"]["value"]
    assert iops.between(100, 5_000_000).all(), iops.describe()


def test_storage_modes_record_their_storage_and_direct_io(collected):
    runs, _, _ = collected
    ok = runs[(runs["status"] == "ok") & (runs["mode"] != "native")]
    notes = {m: json.loads(n) for m, n in zip(ok["mode"], ok["notes"], strict=True)}
    for mode, note in notes.items():
        assert note["direct_io"].startswith("O_DIRECT (fio --direct=1)"), (mode, note)
        assert note["options"] == {"file_mib": FILE_MIB}
    assert notes["docker-overlay2"]["storage_driver"] == "overlay2"
    for mode in ("docker-overlay2", "docker-bind", "docker-volume"):  # kernel paths to ext4
        assert "bypassed the host page cache" in notes[mode]["direct_io"], notes[mode]
    if "rootless-docker-layer" in notes:
        assert notes["rootless-docker-layer"]["storage_driver"], notes["rootless-docker-layer"]


def test_kept_fio_output_reparses_to_the_samples(collected):
    runs, samples, root = collected
    bench = BENCHMARKS["disk"]()
    row = runs[(runs["mode"] == "docker-volume") & (runs["variant"] == "randwrite")].iloc[0]
    raw = rawlog.read_log(root, row["raw_log"])
    parsed = bench.parse("randwrite", raw, Window(PROFILE.seconds, PROFILE.omit_seconds))
    stored = samples[
        (samples["mode"] == "docker-volume")
        & (samples["variant"] == "randwrite")
        & ~samples["warmup"]
    ].sort_values("sample")
    assert [s.value for s in parsed] == stored["value"].tolist()


def test_nothing_is_left_on_any_node(collected):
    assert_nothing_left()  # containers, volumes, test dirs
    with lab_session() as (inv, pool, _):
        out = pool[inv.servers[0].name].run(f"ls -A {SCRATCH_DIR} 2>/dev/null; true").stdout
        assert out.strip() == ""
