"""footprint and density on the embedded lab, through the campaign loop (smoke settings, one
run): every engine ok or skipped with a reason, engine memory that grows with the container
count, one shim (docker) or conmon (podman) per container, readings that re-parse to the
stored samples, density reaching its cap, nothing left on any node."""

import re

import pandas as pd
import pytest

from pipeline.analysis.footprint import TOTAL_PSS, fit_line
from pipeline.benchmarks.footprint import engine_memory, parse_reading
from pipeline.data import rawlog
from tests.integration.lab_campaign import (
    ROOT_ONLY,
    assert_nothing_left,
    lab_session,
    smoke_settings,
)

pytestmark = [pytest.mark.lab, ROOT_ONLY]

SMOKE = {b: smoke_settings(b)[1] for b in ("footprint", "density")}  # params.yaml's smoke profile
ENGINES = {"docker-bridge", "rootless-docker", "podman", "rootless-podman"}
MUST_RUN = {"docker-bridge"}  # the lab always has rootful docker; the others may be skipped
PER_CONTAINER = {"docker-bridge": "shim", "rootless-docker": "shim", "podman": "conmon",
                 "rootless-podman": "conmon"}  # fmt: skip


@pytest.fixture(scope="module")
def collected(smoke_repo):
    return {b: smoke_repo.collected(b) for b in SMOKE}


def _measured(samples: pd.DataFrame, mode: str, metric: str) -> pd.Series:
    cell = samples[(samples["mode"] == mode) & (samples["metric"] == metric) & ~samples["warmup"]]
    return cell.set_index("sample")["value"].sort_index()


@pytest.mark.parametrize("benchmark", ["footprint", "density"])
def test_every_engine_ran_or_says_why_not(collected, benchmark):
    runs, _, _ = collected[benchmark]
    assert set(runs["mode"]) == ENGINES and set(runs["path"]) == {"host"}
    for row in runs.itertuples():
        assert row.status in ("ok", "skipped"), (row.mode, row.reason)
        if row.status == "skipped":
            assert row.mode not in MUST_RUN and len(row.reason) > 10, (row.mode, row.reason)
        else:
            assert row.server_host == "node1" and row.window_s > 0
    assert MUST_RUN <= set(runs.loc[runs["status"] == "ok", "mode"])


def test_footprint_grows_with_the_container_count_one_process_per_container(collected):
    runs, samples, _ = collected["footprint"]
    for mode in runs.loc[runs["status"] == "ok", "mode"]:
        total = _measured(samples, mode, TOTAL_PSS)
        assert list(total.index) == [0, 2, 4, 6], mode
        fit = fit_line(total.index, total.values, [1] * len(total))
        # KiB per container: a shim or conmon (+ slirp4netns) costs between 0.1 and 50 MiB
        assert 100 < fit.slope < 50_000, (mode, fit)
        assert total.iloc[-1] > total.iloc[0], mode
        per_container = _measured(samples, mode, f"footprint_processes_{PER_CONTAINER[mode]}")
        assert list(per_container.values) == list(per_container.index), (mode, per_container)
        daemons = _measured(samples, mode, "footprint_processes_daemon")
        assert set(daemons) == ({1} if "docker" in mode else {0}), mode
    docker = _measured(samples, "docker-bridge", "footprint_pss_kib_daemon")
    assert 10_000 < docker.iloc[0] < 500_000  # an idle dockerd: tens of MiB of PSS


def test_kept_readings_reparse_to_the_stored_samples(collected):
    runs, samples, root = collected["footprint"]
    row = runs[(runs["mode"] == "docker-bridge") & (runs["status"] == "ok")].iloc[0]
    log = rawlog.read_log(root, row["raw_log"])
    readings = re.findall(r"^== netns\n.*?(?=^# exit)", log, re.MULTILINE | re.DOTALL)
    last = engine_memory(parse_reading(readings[-1]), "docker", 0)
    assert last.count == 6
    assert _measured(samples, "docker-bridge", TOTAL_PSS).iloc[-1] == last.total_pss_kib
    assert "run --detach --name co-" in row["command"] and "--label" in row["command"]


def test_density_reaches_its_cap_and_says_so(collected):
    runs, samples, _ = collected["density"]
    for row in runs[runs["status"] == "ok"].itertuples():
        assert '"stopped": "limit of 10 containers reached"' in row.notes, row.notes
        reached = _measured(samples, row.mode, "density_containers_reached")
        assert list(reached.values) == [10]
        pss = _measured(samples, row.mode, "density_engine_pss_per_container_mib")
        assert list(pss.index) == [5, 10] and ((pss > 0.1) & (pss < 50)).all(), (row.mode, pss)
        # the MemAvailable drop is machine-wide (noisy here), but it exists at every reading
        assert list(_measured(samples, row.mode, "density_mem_used_mib").index) == [0, 5, 10]


def test_nothing_is_left_on_any_node(collected):
    assert_nothing_left()
    with lab_session() as (inv, pool, _):
        names = pool[inv.servers[0].name].run("docker ps -a --format '{{.Names}}'").stdout
        assert "-footprint-" not in names and "-density-" not in names
