"""The coldstart benchmark on the embedded lab, through the campaign loop (the smoke profile):
every mode ok (or skipped with a reason), the configured number of starts per step, physically
plausible times (a plain process starts faster than any container engine's median start), the
timer's own report kept and re-parsable, and nothing left on any node, also after a timer that
was killed mid-start."""

import json

import pytest

from pipeline.benchmarks import BENCHMARKS, Scenario, ToolOutputError, Window
from pipeline.benchmarks.coldstart import parse_coldstart
from pipeline.collect import inventory
from pipeline.collect.campaign import Campaign
from pipeline.collect.modes import MODES, Context
from pipeline.collect.modes.base import LABEL
from pipeline.collect.remote import Pool
from pipeline.data import rawlog
from tests.integration.lab_campaign import (
    INVENTORY,
    ROOT_ONLY,
    assert_nothing_left,
    smoke_modes,
    smoke_settings,
)

pytestmark = [pytest.mark.lab, ROOT_ONLY]

PROFILE, OPTIONS = smoke_settings("coldstart")
MUST_RUN = {"native", "docker-bridge"}  # the lab always has these; the others may be skipped
SEED = 5


@pytest.fixture(scope="module")
def collected(smoke_repo):
    return smoke_repo.collected("coldstart")


def test_every_mode_ran_or_says_why_not(collected):
    runs, samples, _ = collected
    bench = BENCHMARKS["coldstart"]()
    assert set(runs["mode"]) == smoke_modes(bench.name) and set(runs["path"]) == {"host"}
    assert len(runs) == len(smoke_modes(bench.name)) * PROFILE.runs
    for row in runs.itertuples():
        assert row.status in ("ok", "skipped"), (row.mode, row.reason)
        if row.status == "skipped":
            assert row.mode not in MUST_RUN and len(row.reason) > 10, (row.mode, row.reason)
    ok = runs[runs["status"] == "ok"]
    assert MUST_RUN <= set(ok["mode"])
    per_step = samples.groupby(["mode", "run", "warmup"]).size()
    for row in ok.itertuples():
        assert per_step[(row.mode, row.run, False)] == OPTIONS["starts"], row.mode
        assert per_step[(row.mode, row.run, True)] == OPTIONS["warmup_starts"], row.mode
    assert samples["metric"].eq("coldstart_s").all() and samples["unit"].eq("s").all()


def test_start_times_are_physically_plausible(collected):
    runs, samples, _ = collected
    measured = samples[~samples["warmup"]]
    p50 = measured.groupby("mode")["value"].median()
    print("p50 ms:", (p50 * 1000).round(1).to_dict())
    docker = measured.loc[measured["mode"] == "docker-bridge", "value"]
    # a container start: namespaces, a cgroup, a veth, NAT rules, the CLI and daemon round trip
    assert docker.between(0.05, 30).all(), docker.tolist()
    native = measured.loc[measured["mode"] == "native", "value"]
    assert native.between(0.0002, 1.0).all(), native.tolist()  # fork + exec + listen
    for mode, median in p50.items():
        if mode != "native":
            assert p50["native"] < median, (mode, p50.to_dict())
    # the summed timed starts are the step's window
    ok = runs[runs["status"] == "ok"].set_index(["mode", "run"])
    sums = samples.groupby(["mode", "run"])["value"].sum()
    for key, window in ok["window_s"].items():
        assert window == pytest.approx(sums[key]), key


def test_the_report_names_the_engine_command_and_the_polled_address(collected):
    runs, samples, root = collected
    row = runs[(runs["mode"] == "docker-bridge") & (runs["status"] == "ok")].iloc[0]
    raw = rawlog.read_log(root, row["raw_log"])
    log = parse_coldstart(raw)
    stored = samples[
        (samples["mode"] == "docker-bridge") & (samples["run"] == row["run"]) & ~samples["warmup"]
    ].sort_values("sample")
    assert [s.value for s in log.samples] == pytest.approx(stored["value"].tolist())
    run = json.loads(log.start_cmd)
    assert run[:3] == ["docker", "run", "--detach"] and f"{LABEL}={row['campaign']}" in run
    assert log.settings["address"] == "10.77.0.11" and log.settings["port"] == "8080"
    notes = json.loads(row["notes"])
    assert notes["polled"].startswith("10.77.0.11:8080") and notes["engine_version"]
    assert notes["options"] == OPTIONS


def test_a_killed_timer_leaves_nothing_behind(collected, tmp_path):
    """The SSH command times out mid-campaign-step: the remote side kills the timer (SIGKILL,
    no clean-up of its own) and the benchmark's finally removes what it had started."""
    inv = inventory.load(INVENTORY, known_modes=MODES)
    bench = BENCHMARKS["coldstart"]()
    bench.configure({"starts": 50, "warmup_starts": 0})
    bench.session_timeout = lambda: 2.0  # killed after ~2 starts of 50
    campaign = Campaign(bench, inv, PROFILE, tmp_path, SEED, ["docker-bridge"])
    host = inv.servers[0]
    with Pool(inv) as pool:
        ctx = Context(inventory=inv, pool=pool, campaign=campaign.id)
        ctx.image_paths = bench.image_paths()
        prefix = f"co-{campaign.id[:10]}-coldstart-killed"
        scenario = Scenario(ctx, "docker-bridge", "docker", host, "nginx", 1, Window(0),
                            Window(0), prefix, ["--label", f"{LABEL}={campaign.id}"])  # fmt: skip
        with pytest.raises(ToolOutputError, match="timed out"):
            bench.measure(scenario)
        names = pool[host.name].run(["docker", "ps", "-a", "--format", "{{.Names}}"]).stdout
        assert prefix not in names
        assert campaign.leftovers(ctx) == {h.name: [] for h in campaign._hosts()}


def test_nothing_is_left_on_any_node(collected):
    assert_nothing_left()
