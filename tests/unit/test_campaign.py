"""Campaign planning, scheduling and resumable storage, without hosts."""

import json
from collections import Counter
from functools import partial
from pathlib import Path

import pandas as pd
import pytest

from pipeline.benchmarks.base import Window
from pipeline.benchmarks.cpu import Cpu
from pipeline.benchmarks.throughput import Throughput
from pipeline.collect import hostfacts, images
from pipeline.collect.campaign import (
    Dataset,
    Profile,
    Step,
    campaign_id,
    duty_cycle,
    plan,
    schedule,
)
from pipeline.collect.modes import MODES, NETWORK_MODES, STUDY_MODES
from tests.unit import fake_watch


def _lab_inventory():
    from pipeline.collect import inventory

    return inventory.load(Path(__file__).parents[2] / "inventory" / "lab.yaml", MODES,
                          check_files=False)  # fmt: skip


def _throughput_campaign(tmp_path, modes, profile, seed=1):
    """A throughput campaign on the lab's inventory, its prepare() answers filled in."""
    from pipeline.collect.campaign import Campaign

    campaign = Campaign(Throughput(), _lab_inventory(), profile, tmp_path, seed=seed,
                        modes=modes, log=lambda _: None)  # fmt: skip
    campaign.tool_version = "iperf 3.12"
    campaign.binary_sha = {"node1": {"/usr/bin/iperf3": "a" * 64}}
    return campaign


def test_plan_has_a_native_baseline_on_every_path_it_uses():
    pairs = plan(Throughput(), STUDY_MODES)
    assert ("native", "dc", "tcp") in pairs and ("native", "local", "tcp") in pairs
    assert ("docker-proxy", "local", "tcp") in pairs
    assert ("docker-proxy", "dc", "tcp") not in pairs
    assert len(pairs) == len(set(pairs))
    assert {m for m, _, _ in pairs} == set(NETWORK_MODES)  # not the host-only storage modes


def test_controls_are_planned_only_where_named_and_where_they_run():
    assert not {m for m, mode in MODES.items() if mode.control} & set(STUDY_MODES)
    named = ["native", "native-aa", "native-cpuquota", "native-tbf"]
    network = {(m, p) for m, p, _ in plan(Throughput(), named)}
    assert ("native-aa", "dc") in network and ("native-aa", "local") in network
    assert ("native-tbf", "dc") in network and ("native-tbf", "local") not in network
    assert "native-cpuquota" not in {m for m, _ in network}  # a host benchmark's control
    host = {m for m, _, _ in plan(Cpu(), named)}
    assert host == {"native", "native-aa", "native-cpuquota"}
    # no native, no control: a control is only ever compared with the native it imitates
    assert {m for m, _, _ in plan(Cpu(), ["docker-bridge", "native-aa"])} == {"docker-bridge"}


def test_plan_restricted_to_paths_drops_modes_without_them():
    pairs = plan(Throughput(), STUDY_MODES, paths=("dc",))
    assert {p for _, p, _ in pairs} == {"dc"}
    assert "docker-proxy" not in {m for m, _, _ in pairs}


def test_plan_restricted_to_variants_keeps_every_mode_and_path():
    every = plan(Throughput(), STUDY_MODES)
    tcp = plan(Throughput(), STUDY_MODES, variants=("tcp",))
    assert tcp == [t for t in every if t[2] == "tcp"] and tcp
    assert plan(Cpu(), ["native"], variants=("1thread",)) == [("native", "host", "1thread")]


def test_schedule_is_seeded_random_and_complete_per_run():
    pairs = plan(Throughput(), STUDY_MODES)
    a, b = schedule(pairs, 4, seed=7), schedule(pairs, 4, seed=7)
    assert a == b
    assert schedule(pairs, 4, seed=8) != a
    per_run = Counter(s.run for s in a)
    assert set(per_run.values()) == {len(pairs)}
    orders = [tuple(s.key[1:] for s in a if s.run == r) for r in range(1, 5)]
    assert len(set(orders)) > 1, "every run got the same order: not randomised per run"
    for r in range(1, 5):
        assert sorted(s.order for s in a if s.run == r) == list(range(len(pairs)))


def test_schedule_without_groups_is_a_plain_permutation_per_run():
    import numpy as np

    pairs = plan(Throughput(), STUDY_MODES)
    for run in (1, 2):
        rng = np.random.default_rng([7, run])
        expected = [pairs[i] for i in rng.permutation(len(pairs))]
        assert [s.key[1:] for s in schedule(pairs, 2, seed=7) if s.run == run] == [
            (m, p, v) for m, p, v in expected
        ]


def test_schedule_keeps_a_group_together_in_random_orders():
    pairs = plan(Throughput(), STUDY_MODES)
    steps = schedule(pairs, 4, seed=7, group=lambda t: t[0])  # one group per mode
    runs = []
    for r in range(1, 5):
        modes = [s.mode for s in steps if s.run == r]
        blocks = [m for i, m in enumerate(modes) if i == 0 or modes[i - 1] != m]
        assert len(blocks) == len(set(blocks)), f"run {r}: a mode's steps are split: {modes}"
        assert sorted(s.order for s in steps if s.run == r) == list(range(len(pairs)))
        runs.append((tuple(blocks), tuple(s.key[1:] for s in steps if s.run == r)))
    assert len({blocks for blocks, _ in runs}) > 1, "the modes came in the same order every run"
    native = {tuple(k for k in keys if k[0] == "native") for _, keys in runs}
    assert len(native) > 1, "inside a group the order never changed"
    assert Counter(s.key[1:] for s in steps) == Counter({t: 4 for t in pairs})


def test_network_servers_are_shared_by_paths_and_by_variants_with_one_server():
    from pipeline.benchmarks.latency import Latency
    from pipeline.collect.campaign import Campaign

    inv = _lab_inventory()
    kw = dict(seed=1, modes=["native", "docker-bridge"], log=lambda _: None)
    iperf = _throughput_campaign(Path("/nonexistent"), kw["modes"], Profile(2, 1, 0, 1))
    assert {iperf._server_group(*t) for t in iperf.triples} == {
        ("native", "iperf3"), ("docker-bridge", "iperf3")}  # fmt: skip
    workload = iperf.runner.workload(iperf.steps[0])
    assert workload.udp and workload.name == "throughput-iperf3"  # TCP and UDP tests
    sock = Campaign(Latency(), inv, Profile(2, 1, 0, 1, count=10), Path("/nonexistent"), **kw)
    groups = {sock._server_group(*t) for t in sock.triples}
    assert ("native", "udp") in groups and ("native", "tcp") in groups  # sockperf --tcp or not
    assert sock.runner.workload(Step(1, 0, "native", "dc", "tcp")).udp is False
    cpu = Campaign(Cpu(), inv, Profile(2, 1, 0, 1), Path("/nonexistent"), **kw)
    assert len({cpu._server_group(*t) for t in cpu.triples}) == len(cpu.triples)
    # sharing is part of the campaign's identity; per-step benchmarks keep theirs
    code = {"code": iperf.code["digest"]}
    assert iperf.id != campaign_id("lab", "throughput", iperf.profile,
                                   [iperf.triples, iperf.meta, code], 1)  # fmt: skip
    code = {"code": cpu.code["digest"]}
    assert cpu.id == campaign_id("lab", "cpu", cpu.profile, [cpu.triples, cpu.meta, code], 1)


class _CannedClients:
    """A pool whose every command answers with one canned iperf3 report."""

    def __init__(self, raw: str) -> None:
        self.raw, self.commands = raw, []

    def __getitem__(self, name):
        return self

    def run(self, command, **kwargs):
        reading = fake_watch.answer(command)  # the interference watch's: not recorded
        if reading is not None:
            return reading
        from types import SimpleNamespace

        self.commands.append(command)
        return SimpleNamespace(status=0, stdout=self.raw, stderr="")


def _measure_with_client(monkeypatch, campaign, run_client) -> None:
    """Every step of ``campaign`` measured with ``run_client`` standing in for the tool's
    client runs (no parsing, no host facts)."""
    from pipeline.collect.modes import Context
    from pipeline.collect.session import SessionClock

    monkeypatch.setattr(campaign, "_run_client", run_client)
    monkeypatch.setattr(campaign.benchmark, "parse", lambda variant, raw, window: [])
    monkeypatch.setattr(campaign, "_host_rows", lambda ctx, run: [])
    monkeypatch.setattr(campaign, "_headline", lambda row, samples: "")
    ctx = Context(inventory=campaign.inv, pool=_CannedClients(""), campaign=campaign.id)
    campaign._measure_all(ctx, campaign.steps, SessionClock())


def test_a_mode_server_starts_once_per_run_and_stops_when_its_group_ends(tmp_path, monkeypatch):
    from pipeline.collect.modes import Context
    from pipeline.collect.modes.base import Deployment
    from pipeline.collect.session import SessionClock

    campaign = _throughput_campaign(tmp_path, ["native", "docker-bridge"], Profile(2, 3, 1, 1), 3)
    inv = campaign.inv
    events = []

    def start(mode):
        def started(ctx, workload):
            events.append(("start", mode))
            stop = lambda: events.append(("stop", mode))  # noqa: E731
            return Deployment(server=inv.servers[0], address="10.0.0.1", stop=stop)
        return started

    for name in ("native", "docker-bridge"):
        monkeypatch.setattr(MODES[name], "start", start(name))
        monkeypatch.setattr(MODES[name], "available", lambda ctx, path: None)
    raw = (Path(__file__).parent / "data" / "iperf3-tcp-3s-omit1.json").read_text()
    pool = _CannedClients(raw)
    ctx = Context(inventory=inv, pool=pool, campaign=campaign.id)
    monkeypatch.setattr(campaign, "_host_rows", lambda ctx, run: [])
    monkeypatch.setattr(campaign.benchmark, "parse", lambda variant, raw, window: [])
    monkeypatch.setattr(campaign, "_headline", lambda row, samples: "")
    clock = campaign._clock = SessionClock()
    campaign._measure_all(ctx, campaign.steps, clock)

    starts = [e for e in events if e[0] == "start"]
    assert len(starts) == 2 * 2  # 2 runs x 2 modes, not one per (path, variant) measured
    assert len(campaign.steps) == 2 * 2 * 4
    assert events[0::2] == starts and [e[0] for e in events[1::2]] == ["stop"] * 4
    pairs = zip(events[0::2], events[1::2], strict=True)
    assert all(a[1] == b[1] for a, b in pairs)  # each server stopped before the next starts
    assert campaign._kept is None
    lookups = [c for c in pool.commands if "Cpus_allowed_list" in str(c)]
    assert len(lookups) == len(starts)  # where the server may run: read once per start
    assert len(pool.commands) - len(lookups) == 2 * len(campaign.steps)  # warm-up, window
    record = clock.record()
    assert record["deploy_s"] >= 0 and record["stop_s"] >= 0 and record["client_s"] >= 0
    # the three-way split: per step a 1 s warm-up (the tool's, discarded) and a 3 s window
    # after 1 s omitted (3 s kept, 1 s the tool's)
    steps = len(campaign.steps)
    assert record["kept_s"] == 3.0 * steps and record["fixed_s"] == 2.0 * steps
    assert record["window_s"] == record["kept_s"] + record["fixed_s"]
    assert len(campaign.data.done()) == len(campaign.steps)


def test_a_warm_up_of_zero_seconds_is_no_warm_up_run(tmp_path, monkeypatch):
    """warmup_seconds 0: each step runs its tool once, the measured window, and no sample is
    flagged as a warm-up (a tool run of 0 s would be iperf3's "forever")."""
    from pipeline.collect.modes.base import Deployment

    campaign = _throughput_campaign(tmp_path, ["native"], Profile(1, 2, 0, 0), 3)
    assert not campaign.profile.warms_up and Profile(1, 2, 0, 0.5).warms_up
    windows = []

    def run_client(ctx, deployment, client, address, step, row, window, retry=False, kept=1.0):
        windows.append(window)
        return "raw", "iperf3 --client 10.0.0.1"

    started = lambda ctx, workload: Deployment(  # noqa: E731
        server=campaign.inv.servers[0], address="10.0.0.1", stop=lambda: None)
    monkeypatch.setattr(MODES["native"], "start", started)
    monkeypatch.setattr(MODES["native"], "available", lambda ctx, path: None)
    monkeypatch.setattr("pipeline.collect.steps.server_cpus", lambda *a: "0-1")
    _measure_with_client(monkeypatch, campaign, run_client)

    assert len(windows) == len(campaign.steps) and len(campaign.steps) == 2 * 2  # dc, local
    assert all(not w.warmup and w.seconds == 2 for w in windows)
    assert len(campaign.data.done()) == len(campaign.steps)
    assert len(campaign.data.statuses()) == len(campaign.steps)


def test_a_failed_step_does_not_hand_its_server_on(tmp_path, monkeypatch):
    from pipeline.benchmarks import ToolOutputError
    from pipeline.collect.modes.base import Deployment

    campaign = _throughput_campaign(tmp_path, ["native"], Profile(1, 3, 1, 1), 3)
    inv = campaign.inv
    events = []

    def started(ctx, workload):
        events.append("start")
        return Deployment(server=inv.servers[0], address="10.0.0.1",
                          stop=lambda: events.append("stop"))  # fmt: skip

    monkeypatch.setattr(MODES["native"], "start", started)

    def run_client(ctx, deployment, client, address, step, row, window, retry=False, kept=1.0):
        if step == campaign.steps[1]:
            raise ToolOutputError("iperf3 said nothing")
        return "{}", "cmd"

    _measure_with_client(monkeypatch, campaign, run_client)
    # step 1 ok (kept), step 2 fails (stopped), steps 3-4 on a new server; then step 2 once more
    assert events == ["start", "stop", "start", "stop", "start", "stop"]


def test_lb_balancers_share_their_replicas_within_a_run_and_the_last_step_releases(
    tmp_path, monkeypatch
):
    from pipeline.benchmarks.base import Outcome
    from pipeline.benchmarks.lb import Lb
    from pipeline.collect.campaign import Campaign
    from pipeline.collect.modes import Context
    from pipeline.collect.session import SessionClock

    bench = Lb()
    bench.configure({"replicas": "1,2", "connections": 4})
    campaign = Campaign(bench, _lab_inventory(), Profile(2, 2, 0, 1), tmp_path, seed=5,
                        modes=["swarm-overlay"], log=lambda _: None)  # fmt: skip
    campaign.tool_version, campaign.binary_sha = "wrk 4.1.0", {}
    groups = {t[2]: campaign._server_group(*t) for t in campaign.triples}
    assert groups["haproxy-r2"] == groups["nginx-r2"] == groups["dnsrr-r2"]
    assert groups["haproxy-r1"] != groups["haproxy-r2"]
    assert len({groups["direct-r1"], groups["vip-r1"], groups["vip-r2"], groups["dnsrr-r1"]}) == 4
    assert campaign.id != campaign_id("lab", "lb", campaign.profile,
                                      [campaign.triples, campaign.meta], 5)  # fmt: skip

    calls = []
    monkeypatch.setattr(MODES["swarm-overlay"], "available", lambda ctx, path: None)
    monkeypatch.setattr(bench, "binaries", ())
    monkeypatch.setattr(bench, "measure", lambda sc: calls.append((sc.run, sc.variant, sc.keep))
                        or Outcome(samples=[], window_s=1.0))  # fmt: skip
    monkeypatch.setattr(bench, "release", lambda: calls.append("release"))
    monkeypatch.setattr(campaign, "_host_rows", lambda ctx, run: [])
    monkeypatch.setattr(campaign, "_headline", lambda row, samples: "")
    ctx = Context(inventory=campaign.inv, pool=_CannedClients(""), campaign=campaign.id)
    campaign._measure_all(ctx, campaign.steps, SessionClock())

    assert calls[-1] == "release" and calls.count("release") == 1  # the loop's end
    steps = calls[:-1]
    assert len(steps) == 2 * 9
    for i, (run, variant, keep) in enumerate(steps):
        nxt = steps[i + 1] if i + 1 < len(steps) else None
        same = nxt is not None and (nxt[0], groups[nxt[1]]) == (run, groups[variant])
        assert keep == same, (i, steps)
    # each run: one haproxy/nginx/dnsrr trio per replica count, measured back to back
    for run in (1, 2):
        order = [groups[v] for r, v, _ in steps if r == run]
        changes = sum(a != b for a, b in zip(order, order[1:], strict=False))
        assert changes == 4  # 5 blocks: 2 trios, 3 alone


def test_campaign_id_changes_with_the_profile():
    pairs = plan(Throughput(), ["native"])
    p1, p2 = Profile(2, 2, 0, 1), Profile(3, 2, 0, 1)
    first = campaign_id("lab", "throughput", p1, pairs, 1)
    assert first == campaign_id("lab", "throughput", p1, pairs, 1)
    assert first != campaign_id("lab", "throughput", p2, pairs, 1)
    assert first != campaign_id("lab", "throughput", p1, pairs, 2)


def _sample(step, value):
    return {"environment": "lab", "campaign": "c", "benchmark": "throughput",
            "metric": "tcp_throughput_received", "unit": "bit/s", "mode": step.mode,
            "path": step.path, "variant": step.variant, "run": step.run, "rep": 1, "sample": 0,
            "value": value,
            "warmup": False, "t_ns": None}


def _row(step):
    now = pd.Timestamp.now(tz="UTC")
    return {"environment": "lab", "campaign": "c", "benchmark": "throughput", "run": step.run,
            "order": step.order, "mode": step.mode, "path": step.path,
            "variant": step.variant, "status": "ok",
            "reason": "", "started_at": now, "ended_at": now}


def test_dataset_commits_by_runs_part_and_consolidates_without_duplicates(tmp_path):
    data = Dataset(tmp_path, "c")
    s1, s2 = Step(1, 0, "native", "dc", "tcp"), Step(1, 1, "docker-host", "dc", "tcp")
    data.save(s1, [_sample(s1, 1e9)], _row(s1))
    data.save(s2, [_sample(s2, 2e9)], _row(s2))
    # a crash between the samples part and its runs part leaves an orphan that must not count
    s3 = Step(2, 0, "native", "dc", "tcp")
    from pipeline.data import schema
    schema.write_table(schema.to_table([_sample(s3, 9e9)], schema.SAMPLES),
                       data.parts / f"{s3.stem}.samples.parquet")
    assert data.done() == {(1, "native", "dc", "tcp"), (1, "docker-host", "dc", "tcp")}
    data.save(s1, [_sample(s1, 1e9)], _row(s1))  # re-saving replaces, never appends
    counts = data.consolidate()
    assert counts["runs"] == 2 and counts["samples"] == 2
    samples = schema.read_samples(tmp_path / "samples.parquet")
    assert sorted(samples.value) == [1e9, 2e9]


def test_hostfacts_parse_types_and_missing_values():
    facts = hostfacts.parse("kernel=6.1.0\ncpu_count=2\nmtu=n/a\nmem_total_bytes=1024\n"
                            "ipvs=no (CONFIG_IP_VS is not set)\ngarbage line\ngovernor=\n")
    assert facts == {"kernel": "6.1.0", "cpu_count": 2, "mtu": None, "mem_total_bytes": 1024,
                     "ipvs": "no (CONFIG_IP_VS is not set)", "governor": "n/a"}


def test_image_build_output_parse():
    text = ("binary 3f0a  /usr/bin/iperf3\n".replace("  ", " ")
            + "image container-overhead/tools:abc sha256:def\n")
    image = images.parse_build_output("node1", text)
    assert image.tag == "container-overhead/tools:abc" and image.digest == "sha256:def"
    assert image.sha256_of("/usr/bin/iperf3") == "3f0a"


def test_availability_is_asked_once_per_mode_and_path(tmp_path, monkeypatch):
    campaign = _throughput_campaign(tmp_path, ["native", "swarm-ingress"], Profile(2, 1, 0, 1))
    calls = []

    def available(ctx, path):
        calls.append(path)
        return "no IPVS here"

    monkeypatch.setattr(MODES["swarm-ingress"], "available", available)
    steps = [s for s in campaign.steps if s.mode == "swarm-ingress"]
    assert len(steps) == 4  # 2 runs x (tcp, udp) on the dc path
    rows = [campaign._measure(None, step)[1] for step in steps]
    assert calls == ["dc"]
    assert {r["status"] for r in rows} == {"skipped"} and rows[0]["reason"] == "no IPVS here"


def test_duty_cycle_adds_up_resumed_sessions_and_splits_the_overhead(tmp_path):
    data = Dataset(tmp_path, "c")
    first = {"started_at": "2026-11-21T10:00:00+00:00", "wall_s": 100.0, "window_s": 80.0,
             "prepare_s": 6.0, "loop_s": 92.0, "cleanup_s": 2.0, "steps": 8}  # fmt: skip
    resumed = {"started_at": "2026-11-21T11:00:00+00:00", "wall_s": 50.0, "window_s": 40.0,
               "prepare_s": 2.0, "loop_s": 47.0, "cleanup_s": 1.0, "steps": 4}  # fmt: skip
    data.save_session(first)
    data.save_session(resumed)
    data.consolidate()
    summary = json.loads((tmp_path / "campaign.json").read_text())
    assert summary["campaign"] == "c" and summary["sessions"] == 2
    assert summary["wall_s"] == 150.0 and summary["window_s"] == 120.0
    assert summary["duty_cycle"] == 0.8
    assert summary["per_step_overhead_s"] == (139.0 - 120.0) / 12
    assert summary["steps"] == 12
    assert summary["kept_s"] is None and "harness_s" not in summary  # not recorded: unknown


def test_the_three_way_split_adds_up_to_the_wall_time(tmp_path):
    data = Dataset(tmp_path, "c")
    data.save_session({"started_at": "2026-11-21T10:00:00+00:00", "wall_s": 100.0,
                       "window_s": 80.0, "kept_s": 60.0, "fixed_s": 30.0, "steps": 8})
    data.save_session({"started_at": "2026-11-21T11:00:00+00:00", "wall_s": 50.0,
                       "window_s": 40.0, "kept_s": 30.0, "fixed_s": 15.0, "steps": 4})
    summary = duty_cycle(data.sessions())
    assert (summary["kept_s"], summary["fixed_s"], summary["harness_s"]) == (90.0, 45.0, 15.0)


def test_duty_cycle_of_no_session_is_unknown_not_zero():
    assert duty_cycle([])["duty_cycle"] is None


def test_load_seconds_count_the_tool_window_not_its_start_up():
    from pipeline.benchmarks.latency import Latency
    from pipeline.benchmarks.throughput import Throughput

    assert Throughput().load_seconds(Window(3.0, 1.0)) == 4.0
    # 11,000 round trips at the slowest accepted rate (4000/s) + 10 % + the 0.45 s
    # sockperf drops -> --time 4, of which 3.55 s are logged
    assert Latency().load_seconds(Window(30.0, 0.0, 11_000), "dc") == pytest.approx(3.55)


def test_an_inventory_that_allows_native_allows_its_controls(tmp_path):
    import dataclasses
    from pathlib import Path

    from pipeline.collect import inventory
    from pipeline.collect.campaign import Campaign

    inv = inventory.load(Path(__file__).parents[2] / "inventory" / "lab.yaml", MODES,
                         check_files=False)  # fmt: skip
    named = ["native", "native-aa", "native-tbf", "docker-host"]
    only_native = dataclasses.replace(inv, modes=["native"])
    campaign = Campaign(Throughput(), only_native, Profile(1, 1, 0, 1), tmp_path, seed=1,
                        modes=named, log=lambda _: None)  # fmt: skip
    assert {m for m, _, _ in campaign.triples} == {"native", "native-aa", "native-tbf"}
    no_native = dataclasses.replace(inv, modes=["docker-host"])
    campaign = Campaign(Throughput(), no_native, Profile(1, 1, 0, 1), tmp_path, seed=1,
                        modes=named, log=lambda _: None)  # fmt: skip
    assert "native-aa" not in {m for m, _, _ in campaign.triples}


# ---- provenance: the code that measures is part of a campaign's identity -------------------


@pytest.fixture
def code_copy(tmp_path, monkeypatch):
    """A copy of the repository's code the campaign reads its measuring code from."""
    import shutil

    from pipeline import imports
    from pipeline.collect import campaign

    root = tmp_path / "repo"
    shutil.copytree(Path(__file__).parents[2] / "pipeline", root / "pipeline",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    monkeypatch.setattr(imports, "ROOT", root)
    monkeypatch.setattr(campaign, "ROOT", root)
    imports.direct.cache_clear()
    yield root
    imports.direct.cache_clear()


def _edit(path: Path, old: str, new: str) -> None:
    from pipeline import imports

    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    imports.direct.cache_clear()


def test_a_parser_change_measures_again_and_keeps_the_old_parts_apart(code_copy, tmp_path):
    profile = Profile(1, 1, 0, 1)
    out = tmp_path / "raw"
    first = _throughput_campaign(out, ["native", "docker-host"], profile)
    step = first.steps[0]
    first.data.save(step, [], {"run": step.run, "mode": step.mode, "path": step.path,
                               "variant": step.variant, "status": "ok"})  # fmt: skip
    again = _throughput_campaign(out, ["native", "docker-host"], profile)
    assert again.id == first.id and again.data.done() == {step.key}  # unchanged code resumes

    # code that does not measure throughput in these modes leaves the identity alone
    _edit(code_copy / "pipeline/benchmarks/lb.py", "def parse_variant(", "def parse_variant(  ")
    _edit(code_copy / "pipeline/analysis/stats.py", '"""', '""" ')
    _edit(code_copy / "pipeline/collect/modes/swarm_overlay.py", "class SwarmOverlay(",
          "class SwarmOverlay(  ")
    assert _throughput_campaign(out, ["native", "docker-host"], profile).id == first.id

    # the benchmark's parser, one of its modes, each module of the campaign and the data model
    # it writes with: each measures again
    seen = {first.id}
    for path, old in (("pipeline/benchmarks/throughput.py", "def parse("),
                      ("pipeline/collect/modes/docker_host.py", "class DockerHost("),
                      ("pipeline/collect/campaign.py", "class Campaign:"),
                      ("pipeline/collect/dataset.py", "class Dataset:"),
                      ("pipeline/collect/plan.py", "def schedule("),
                      ("pipeline/collect/session.py", "class HostLock:"),
                      ("pipeline/collect/steps.py", "class NetworkSteps("),
                      ("pipeline/data/schema.py", "def write_table(")):  # fmt: skip
        _edit(code_copy / path, old, old.replace("(", " (", 1) if "(" in old else old + " ")
        changed = _throughput_campaign(out, ["native", "docker-host"], profile)
        assert changed.id not in seen, path
        assert changed.data.done() == set()  # nothing resumed from parts the old code made
        assert first.id in changed.data.superseded()  # the old parts stay, apart
        assert (out / "parts" / first.id / f"{step.stem}.runs.parquet").exists()
        seen.add(changed.id)
    assert changed.code["files"] and "pipeline/benchmarks/throughput.py" in changed.code["files"]
    assert "pipeline/benchmarks/lb.py" not in changed.code["files"]


def test_an_interrupt_during_clean_up_waits_for_its_end():
    import os
    import signal

    from pipeline.collect.session import interrupts_deferred

    # what SIGINT did before: Python's handler, or SIG_IGN when the suite was started as a
    # shell's background job (which starts its children with SIGINT ignored)
    before = signal.getsignal(signal.SIGINT)
    said, done = [], []
    with pytest.raises(KeyboardInterrupt, match="during clean-up"):
        with interrupts_deferred(said.append):
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)  # the impatient second Ctrl-C
            done.append("cleaned")
    assert done == ["cleaned"] and len(said) == 1
    assert signal.getsignal(signal.SIGINT) is before  # restored
    with interrupts_deferred(said.append):
        pass  # no interrupt: nothing raised, nothing said
    assert len(said) == 1


def _failed(step, reason="docker: Cannot connect to the Docker daemon"):
    return {**_row(step), "status": "failed", "reason": reason}


def test_a_failed_step_is_measured_again_and_its_failure_kept(tmp_path):
    from pipeline.data import schema

    data = Dataset(tmp_path, "c")
    s1, s2 = Step(1, 0, "native", "dc", "tcp"), Step(1, 1, "docker-bridge", "dc", "tcp")
    data.save(s1, [_sample(s1, 1e9)], _row(s1))
    data.save(s2, [], _failed(s2))
    assert data.done() == {s1.key} and data.failed() == [s2.key]
    data.consolidate()  # the failure reaches the tables: still not done
    assert data.done() == {s1.key} and data.failed() == [s2.key]
    data.save(s2, [], _failed(s2, "again"))  # a second session fails it too, in the parts
    data.save(s2, [_sample(s2, 2e9)], _row(s2))  # a third measures it
    assert data.failed() == [] and data.done() == {s1.key, s2.key}
    for _ in range(2):  # a second consolidation changes nothing
        counts = data.consolidate()
        assert counts["runs"] == 2 and counts["samples"] == 2
        runs = schema.read_table(tmp_path / "runs.parquet", "runs").to_pandas()
        assert set(runs.status) == {"ok"}
        attempts = schema.read_table(tmp_path / "attempts.parquet", "attempts").to_pandas()
        assert sorted(attempts.reason) == ["again", "docker: Cannot connect to the Docker daemon"]
        assert set(attempts["mode"]) == {"docker-bridge"}
    assert not data.parts.exists()


def test_a_step_that_keeps_failing_is_retried_once_and_stops_the_stage(tmp_path, monkeypatch):
    from pipeline.benchmarks import ToolOutputError
    from pipeline.collect.campaign import CampaignError
    from pipeline.collect.modes.base import Deployment

    campaign = _throughput_campaign(tmp_path, ["native"], Profile(2, 3, 1, 1), 3)
    inv = campaign.inv
    monkeypatch.setattr(MODES["native"], "start", lambda ctx, workload: Deployment(
        server=inv.servers[0], address="10.0.0.1", stop=lambda: None))  # fmt: skip
    flaky, broken = campaign.steps[1], campaign.steps[2]
    calls = Counter()

    def run_client(ctx, deployment, client, address, step, row, window, retry=False, kept=1.0):
        calls[step.key] += 1
        if step == broken or (step == flaky and calls[step.key] == 1):  # its first warm-up
            raise ToolOutputError(f"iperf3 on {client.name}: connection reset")
        return "{}", "cmd"

    _measure_with_client(monkeypatch, campaign, run_client)
    assert calls[flaky.key] == 3 and calls[broken.key] == 2  # each failed step once more
    with pytest.raises(CampaignError) as caught:
        campaign._conclude()
    message = str(caught.value)
    assert f"1 of {len(campaign.steps)} measurements of throughput on lab failed" in message
    assert f"run {broken.run} native ({broken.path}, {broken.variant}): iperf3 on" in message
    hosts = "(on node1)" if broken.path == "local" else "(client dc-client, server node1)"
    assert f"connection reset {hosts}" in message  # the step's hosts
    assert "`dvc repro` again: it measures only these steps" in message
    from pipeline.data import schema
    runs = schema.read_table(tmp_path / "runs.parquet", "runs").to_pandas()
    assert len(runs) == len(campaign.steps) and (runs.status == "failed").sum() == 1
    assert len(schema.read_table(tmp_path / "attempts.parquet", "attempts")) == 2
    assert campaign.data.done() == {s.key for s in campaign.steps} - {broken.key}


def test_a_stop_in_a_runs_host_facts_names_the_step_about_to_be_measured(
    tmp_path, monkeypatch
):
    from pipeline.collect.modes import Context
    from pipeline.collect.modes.base import Deployment
    from pipeline.collect.session import SessionClock
    from pipeline.hosts import RemoteError

    campaign = _throughput_campaign(tmp_path, ["native"], Profile(2, 3, 1, 1), 3)
    inv = campaign.inv
    monkeypatch.setattr(MODES["native"], "start", lambda ctx, workload: Deployment(
        server=inv.servers[0], address="10.0.0.1", stop=lambda: None))  # fmt: skip
    monkeypatch.setattr(campaign, "_run_client", lambda *args, **kwargs: ("{}", "cmd"))
    monkeypatch.setattr(campaign.benchmark, "parse", lambda variant, raw, window: [])
    monkeypatch.setattr(campaign, "_headline", lambda row, samples: "")

    def host_rows(ctx, run):
        if run == 2:  # e.g. the dc client's sshd died after run 1
            raise RemoteError("dc-client", "uname -r", None, reason="could not be started")
        return []

    monkeypatch.setattr(campaign, "_host_rows", host_rows)
    assert campaign._where() == " before its first measurement"
    ctx = Context(inventory=inv, pool=_CannedClients(""), campaign=campaign.id)
    with pytest.raises(RemoteError):
        campaign._measure_all(ctx, campaign.steps, SessionClock())
    first = next(s for s in campaign.steps if s.run == 2)
    assert campaign._where() == f" at run 2 native ({first.path}, {first.variant})"
    assert campaign.data.done() == {s.key for s in campaign.steps if s.run == 1}


def test_sigterm_is_an_interrupt_inside_a_campaign_only():
    import os
    import signal
    import time

    from pipeline.collect.session import sigterm_as_interrupt

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt, match="signal 15"):
        with sigterm_as_interrupt():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)  # the handler raises before this ends
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_failed_attempt_keeps_its_own_output_beside_the_step_s(tmp_path):
    from pipeline.benchmarks import ToolOutputError, Window
    from pipeline.data import rawlog

    campaign = _throughput_campaign(tmp_path, ["native"], Profile(1, 1, 0, 1))
    step = campaign.steps[0]
    failed = {"started_at": pd.Timestamp("2026-01-02 03:04:05.678901", tz="UTC")}
    raw = "not iperf3 output"
    with pytest.raises(ToolOutputError):
        parse = partial(campaign.benchmark.parse, step.variant, raw, Window(1, 0, None))
        campaign._parse(step, 1, raw, failed, parse)
    ok = campaign._keep_log(step, 1, "the step's own output")
    assert failed["raw_log"] != ok and "_failed-20260102T030405678901" in failed["raw_log"]
    assert rawlog.read_log(campaign.data.root, failed["raw_log"]) == "not iperf3 output"
    assert rawlog.read_log(campaign.data.root, ok) == "the step's own output"


# -- precision planning: the pilot, planned rounds, the record, resume ----------------------


def _constant_sd(sd, n):
    """Log ratios whose first k (k >= 2) have sample SD exactly ``sd`` (test_planning's)."""
    import math

    d = [-sd / math.sqrt(2), sd / math.sqrt(2)]
    while len(d) < n:
        k = len(d)
        d.append(sum(d) / k + (-1) ** k * sd * math.sqrt((k + 1) / k))
    return d


def _planned_campaign(tmp_path, monkeypatch, budget_s, measured, stop_at=None):
    """A throughput campaign (native and docker-bridge, dc, tcp; a pilot of 3 runs) whose
    whole ``run()`` goes through fakes: no hosts, every step 10 s of lab time, docker-bridge's
    per-run log ratio to native from a sequence of SD 0.05 (target 0.05: 7 runs). ``measured``
    counts each step's measurements; ``stop_at``: a step key whose measurement is Ctrl-C."""
    import contextlib
    import math

    from pipeline.benchmarks.base import Sample
    from pipeline.collect import campaign as campaign_module
    from pipeline.collect.modes.base import Deployment
    from pipeline.collect.planning import Settings

    settings = Settings(target_half_width=0.05, budget_s=budget_s, max_runs=20)
    campaign = campaign_module.Campaign(
        Throughput(), _lab_inventory(), Profile(3, 3, 1, 1), tmp_path, seed=7,
        modes=["native", "docker-bridge"], log=lambda _: None, paths=("dc",),
        variants=("tcp",), planning=settings)  # fmt: skip
    inv = campaign.inv
    ratios = _constant_sd(0.05, 30)

    class _Pool(_CannedClients):
        def __init__(self, inv):
            super().__init__("")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def prepare(ctx):
        campaign.tool_version = "iperf 3.12"
        campaign.binary_sha = {"node1": {"/usr/bin/iperf3": "a" * 64}}

    def run_client(ctx, deployment, client, address, step, row, window, retry=False, kept=1.0):
        if step.key == stop_at:
            raise KeyboardInterrupt("Ctrl-C")
        if window.warmup:
            return "1", "cmd"
        measured[step.key] += 1
        native = 1e9 * (1 + 0.01 * step.run)  # drift shared by the run: it cancels
        value = native if step.mode == "native" else native * math.exp(ratios[step.run - 1])
        return repr(value), "cmd"

    def finish(row, status, reason):  # every step takes 10 s of lab time
        return {**row, "status": status, "reason": reason,
                "ended_at": row["started_at"] + pd.Timedelta(seconds=10)}  # fmt: skip

    monkeypatch.setattr(campaign_module, "Pool", _Pool)
    monkeypatch.setattr(campaign_module, "HostLock", lambda *a: contextlib.nullcontext())
    monkeypatch.setattr(campaign_module, "own_work_dirs", lambda ctx, host: None)
    monkeypatch.setattr(campaign, "_prepare", prepare)
    monkeypatch.setattr(campaign, "_cleanup", lambda ctx: None)
    monkeypatch.setattr(campaign, "_host_rows", lambda ctx, run: [])
    monkeypatch.setattr(campaign, "_run_client", run_client)
    monkeypatch.setattr(campaign, "_finish", finish)
    monkeypatch.setattr(campaign.benchmark, "parse", lambda variant, raw, window: [
        Sample(f"{variant}_throughput_received", "bit/s", 0, float(raw))])  # fmt: skip
    for name in ("native", "docker-bridge"):
        monkeypatch.setattr(MODES[name], "available", lambda ctx, path: None)
        monkeypatch.setattr(MODES[name], "start", lambda ctx, workload: Deployment(
            server=inv.servers[0], address="10.0.0.1", stop=lambda: None))  # fmt: skip
    return campaign


def test_a_planned_campaign_adds_rounds_records_them_and_resumes_with_a_bigger_budget(
    tmp_path, monkeypatch
):
    from pipeline.collect.planning import stein_half_width
    from pipeline.data import schema

    measured = Counter()
    native, bridge = ("native", "dc", "tcp"), ("docker-bridge", "dc", "tcp")
    # 1. budget 45 s: two planned rounds of 20 s fit, a third does not; Ctrl-C in the second
    stop = (5, "docker-bridge", "dc", "tcp")
    first = _planned_campaign(tmp_path, monkeypatch, 45.0, measured, stop_at=stop)
    with pytest.raises(KeyboardInterrupt):
        first.run()
    assert first.data.rounds() == {4: [native, bridge], 5: [native, bridge]}
    # 2. resumed: the interrupted round is finished as planned, then the budget stops it
    again = _planned_campaign(tmp_path, monkeypatch, 45.0, measured)
    assert again.id == first.id and stop in {s.key for s in again.steps}
    again.run()
    record = json.loads((tmp_path / "campaign.json").read_text())
    assert [r["run"] for r in record["rounds"]] == [4, 5]
    plan_record = record["planning"]
    cells = {(c["mode"], c["path"], c["variant"]): c for c in plan_record["cells"]}
    assert cells[bridge]["runs"] == 5 and cells[bridge]["stopped"] == "budget"
    # Stein's half-width: the 3-run pilot's SD with 2 df, over the 5 runs measured
    assert cells[bridge]["half_width"] == pytest.approx(stein_half_width(0.05, 3, 5, 0.95))
    assert cells[bridge]["pilot_pairs"] == 3 and cells[bridge]["runs_planned"] == 19
    assert cells[native] == {"mode": "native", "path": "dc", "variant": "tcp", "runs": 5,
                             "stopped": "baseline"}  # fmt: skip
    assert plan_record["spent_s"] == 40.0 and plan_record["pilot_runs"] == 3
    # 3. a bigger budget: the same campaign goes on to the run count Stein's rule fixed from
    # its pilot (19), measuring only new runs
    more = _planned_campaign(tmp_path, monkeypatch, 1e6, measured)
    assert more.id == first.id
    said = []
    more.log = said.append
    more.run()
    assert said[-1] == "planning: 16 round(s) beyond the 3-run pilot, 5m20s of " \
                       "16666m40s budget; comparisons: 1 target"
    cells = {(c["mode"], c["path"], c["variant"]): c
             for c in json.loads((tmp_path / "campaign.json").read_text())["planning"]["cells"]}
    assert (cells[bridge]["runs"], cells[bridge]["stopped"]) == (19, "target")
    assert set(measured.values()) == {1}  # no step measured twice, none lost
    assert sorted(measured) == sorted((r, *c) for r in range(1, 20) for c in (native, bridge))
    runs = schema.read_table(tmp_path / "runs.parquet", "runs").to_pandas()
    assert len(runs) == 38 and not runs.duplicated(["run", "mode", "path", "variant"]).any()
    assert runs["headline"].notna().all()
    assert set(runs.loc[runs.run > 3, "order"]) == {0, 1}  # a round ordered like a pilot's
    # 4. nothing more to do: a re-run measures nothing and plans nothing
    done = _planned_campaign(tmp_path, monkeypatch, 1e6, measured)
    done.run()
    assert set(measured.values()) == {1} and len(done.data.rounds()) == 16


def test_a_scenario_benchmark_keeps_fixed_runs_and_says_so(tmp_path):
    from pipeline.benchmarks.lb import Lb
    from pipeline.collect.campaign import Campaign
    from pipeline.collect.planning import Settings

    settings = Settings(target_half_width=0.05, budget_s=600.0, max_runs=10)
    campaign = Campaign(Lb(), _lab_inventory(), Profile(2, 1, 0, 1), tmp_path, seed=1,
                        log=lambda _: None, planning=settings)  # fmt: skip
    assert campaign.planning is None and {s.run for s in campaign.steps} == {1, 2}
    assert campaign._plan_record() == {"planned": False, "reason": "fixed runs: a scenario "
                                       "benchmark has no one per-run value to plan with"}


# ---- windows the interference watch flags: measured again later, bounded, resumable --------


def _watched_campaign(tmp_path, monkeypatch, hog, measured, stop_at=None, interference=None):
    """A throughput campaign (native and docker-bridge, dc, tcp, 3 runs, one window per step)
    whose whole ``run()`` goes through fakes. The fake hosts answer the interference watch
    quietly, except that ``hog(step key, attempt)`` puts a process using one whole CPU beside
    the step's window; a hogged window measures 0.5e9 bit/s, a clean one 1e9. ``measured``
    lists each measured window's (step key, attempt) in order; ``stop_at``: a (step key,
    attempt) whose measurement is Ctrl-C."""
    import contextlib
    import re
    from types import SimpleNamespace

    from pipeline.benchmarks.base import Sample
    from pipeline.collect import campaign as campaign_module
    from pipeline.collect.modes.base import Deployment

    campaign = campaign_module.Campaign(
        Throughput(), _lab_inventory(), Profile(3, 3, 1, 1), tmp_path, seed=7,
        modes=["native", "docker-bridge"], log=lambda _: None, paths=("dc",),
        variants=("tcp",), interference=interference)  # fmt: skip
    inv = campaign.inv

    class _Pool(_CannedClients):
        def __init__(self, inv):
            super().__init__("")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def run(self, command, **kwargs):
            reading = fake_watch.answer(command)
            step = campaign._current
            if reading is None or step is None or not hog(step.key, campaign._attempt):
                return super().run(command, **kwargs)
            t_s = int(re.match(r"cpu \d+ \d+ (\d+)", reading.stdout).group(1)) / 1e9
            hogged = reading.stdout + f"pid 4242 1 {int(100 * t_s)} hog\n"  # one CPU, always
            return SimpleNamespace(status=0, stdout=hogged, stderr="")

    def prepare(ctx):
        campaign.tool_version = "iperf 3.12"
        campaign.binary_sha = {"node1": {"/usr/bin/iperf3": "a" * 64}}

    def run_client(ctx, deployment, client, address, step, row, window, retry=False, kept=1.0):
        if window.warmup:
            return "1", "cmd"
        if (step.key, campaign._attempt) == stop_at:
            raise KeyboardInterrupt("Ctrl-C")
        measured.append((step.key, campaign._attempt))
        return ("0.5e9" if hog(step.key, campaign._attempt) else "1e9"), "cmd"

    monkeypatch.setattr(campaign_module, "Pool", _Pool)
    monkeypatch.setattr(campaign_module, "HostLock", lambda *a: contextlib.nullcontext())
    monkeypatch.setattr(campaign_module, "own_work_dirs", lambda ctx, host: None)
    monkeypatch.setattr(campaign, "_prepare", prepare)
    monkeypatch.setattr(campaign, "_cleanup", lambda ctx: None)
    monkeypatch.setattr(campaign, "_host_rows", lambda ctx, run: [])
    monkeypatch.setattr(campaign, "_run_client", run_client)
    monkeypatch.setattr(campaign.benchmark, "parse", lambda variant, raw, window: [
        Sample(f"{variant}_throughput_received", "bit/s", 0, float(raw))])  # fmt: skip
    for name in ("native", "docker-bridge"):
        monkeypatch.setattr(MODES[name], "available", lambda ctx, path: None)
        monkeypatch.setattr(MODES[name], "start", lambda ctx, workload: Deployment(
            server=inv.servers[0], address="10.0.0.1", stop=lambda: None))  # fmt: skip
    return campaign


def _per_run(raw) -> dict:
    """The per-run values the analysis reads (schema.read_dataset, then per_run_summary)."""
    from pipeline.analysis import stats
    from pipeline.data import schema

    samples = schema.read_dataset(raw, "throughput", "samples")
    per_run = stats.per_run_summary(samples, "tcp_throughput_received", how="median")
    return {(r.run, r.mode): r.value for r in per_run.itertuples()}


def test_a_flagged_window_is_measured_again_after_the_other_steps(tmp_path, monkeypatch):
    from pipeline.analysis import interference
    from pipeline.data import schema

    data = tmp_path / "throughput" / "lab"
    hogged = (2, "docker-bridge", "dc", "tcp")
    measured = []
    campaign = _watched_campaign(data, monkeypatch,
                                 lambda key, attempt: key == hogged and attempt == 1, measured)
    said = []
    campaign.log = said.append
    campaign.run()
    steps = [s.key for s in campaign.steps]
    # every step once in the scheduled order, then the flagged one again, at the end
    assert measured == [(k, 1) for k in steps] + [(hogged, 2)]
    assert steps.index(hogged) < len(steps) - 1, "the seed must not put it last already"
    assert any("(flagged: other processes > 0.25 CPUs; measured again later)" in s
               for s in said)  # fmt: skip
    assert "measuring again the 1 step(s) whose window the interference watch flagged" in said
    # the raw data keep both windows (reps numbered on) and the first attempt's runs row
    samples = schema.read_samples(data / "samples.parquet")
    mine = samples[(samples["run"] == 2) & (samples["mode"] == "docker-bridge")]
    assert sorted(zip(mine["rep"], mine["warmup"], mine["value"], strict=True)) == [
        (0, True, 1.0), (1, False, 0.5e9), (2, True, 1.0), (3, False, 1e9)]
    attempts = schema.read_table(data / "attempts.parquet", "attempts").to_pandas()
    assert list(zip(attempts["run"], attempts["mode"], attempts["status"], strict=True)) == [
        (2, "docker-bridge", "ok")]
    runs = schema.read_table(data / "runs.parquet", "runs").to_pandas()
    assert len(runs) == 6 and set(runs["status"]) == {"ok"}
    watched = json.loads(runs.set_index(["run", "mode"]).loc[(2, "docker-bridge"), "watch"])
    assert sorted({(e["rep"], e["attempt"], e["why"]) for e in watched}) == [
        (1, 1, "other processes > 0.25 CPUs"), (3, 2, "")]  # on server and client alike
    # the estimate rests on the clean window: 1e9, not the flagged 0.5e9 nor their mean
    assert _per_run(tmp_path)[(2, "docker-bridge")] == 1e9
    assert set(_per_run(tmp_path).values()) == {1e9}
    counts = interference.retry_counts(tmp_path).iloc[0]
    assert (counts.windows, counts.flagged_measured, counts.remeasured, counts.kept_flagged) == (
        7, 1, 1, 0)
    assert campaign.data.done() == set(steps) and campaign.data.flagged() == []


@pytest.mark.parametrize("retries", [2, 1, 0])
def test_a_step_flagged_every_time_is_measured_a_bounded_number_of_times(
    tmp_path, monkeypatch, retries
):
    from pipeline.analysis import interference

    data = tmp_path / "throughput" / "lab"
    hogged = (1, "native", "dc", "tcp")
    measured = []
    campaign = _watched_campaign(data, monkeypatch, lambda key, attempt: key == hogged,
                                 measured, interference={"interference_retries": retries})
    campaign.run()
    assert Counter(k for k, _ in measured)[hogged] == 1 + retries
    assert [a for k, a in measured if k == hogged] == list(range(1, retries + 2))
    assert campaign.data.flagged() == [] and hogged in campaign.data.done()
    # every attempt flagged: the flagged value stays in the estimate, and is counted so
    assert _per_run(tmp_path)[(1, "native")] == 0.5e9
    counts = interference.retry_counts(tmp_path).iloc[0]
    assert (counts.flagged_measured, counts.remeasured, counts.kept_flagged) == (
        1 + retries, retries, 1 + retries)
    # a later session with the same settings measures nothing more
    again = _watched_campaign(data, monkeypatch, lambda key, attempt: key == hogged, measured,
                              interference={"interference_retries": retries})
    n = len(measured)
    again.run()
    assert len(measured) == n


@pytest.mark.parametrize("consolidated", [False, True])
def test_an_interrupted_re_measurement_resumes_where_it_stopped(
    tmp_path, monkeypatch, consolidated
):
    from pipeline.data import schema

    data = tmp_path / "throughput" / "lab"
    hogged = (3, "native", "dc", "tcp")

    def hog(key, attempt):
        return key == hogged and attempt < 3  # flagged twice, clean the third time

    measured = []
    first = _watched_campaign(data, monkeypatch, hog, measured, stop_at=(hogged, 2))
    with pytest.raises(KeyboardInterrupt):
        first.run()
    assert measured == [(s.key, 1) for s in first.steps]
    assert first.data.flagged() == [hogged] and hogged not in first.data.done()
    if consolidated:  # the earlier attempt then comes from the tables, not the parts
        first.data.consolidate()
    again = _watched_campaign(data, monkeypatch, hog, measured)
    assert again.id == first.id
    again.run()
    assert measured[len(first.steps):] == [(hogged, 2), (hogged, 3)]
    samples = schema.read_samples(data / "samples.parquet")
    mine = samples[(samples["run"] == 3) & (samples["mode"] == "native") & ~samples["warmup"]]
    assert sorted(zip(mine["rep"], mine["value"], strict=True)) == [
        (1, 0.5e9), (3, 0.5e9), (5, 1e9)]
    attempts = schema.read_table(data / "attempts.parquet", "attempts").to_pandas()
    assert len(attempts) == 2 and set(attempts["status"]) == {"ok"}
    assert _per_run(tmp_path)[(3, "native")] == 1e9
    assert len(schema.read_table(data / "runs.parquet", "runs")) == 6
