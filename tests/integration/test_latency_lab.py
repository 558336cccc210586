"""The `latency` benchmark on the embedded lab: sockperf natively on node1, clients on
dc-client and inet-client (behind the WAN path), UDP and TCP.

Two checks: count-based windows through pipeline.collect.remote with the benchmark's own argv (exact
sample counts, plausible RTTs per path), and the wiring through the real campaign loop.
Needs root (it brings the lab up).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.benchmarks import ToolOutputError, Window
from pipeline.benchmarks.latency import BINARY, Latency
from pipeline.collect import inventory
from pipeline.collect.campaign import Profile, upload
from pipeline.collect.modes import MODES
from pipeline.collect.modes.base import PID_DIR
from pipeline.collect.remote import Pool
from pipeline.data import rawlog, schema
from pipeline.environments import collect

ROOT = Path(__file__).resolve().parents[2]
INVENTORY = ROOT / "inventory/lab.yaml"
SERVER = "node1"
PIDFILE = "/tmp/latency-lab-test-sockperf.pid"
COUNT = {"dc": 2000, "internet": 500}  # internet: 1 s at the paced rate

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root"),
    pytest.mark.skipif(shutil.which("dockerd") is None, reason="dockerd is not installed"),
]


@pytest.fixture(scope="module")
def pool():
    from pipeline import lab

    lab.up()
    with Pool(inventory.load(INVENTORY, known_modes=MODES)) as pool:
        # the benchmark's sockperf, as a campaign ships it before measuring
        hosts = [pool[name].host for name in (SERVER, "dc-client", "inet-client")]
        upload(pool, hosts, Latency.uploads)
        yield pool


def start_server(pool: Pool, variant: str) -> None:
    argv = shlex.join(Latency().server_argv(variant))
    pool[SERVER].run(
        f"setsid {argv} > /dev/null 2>&1 < /dev/null & echo $! > {PIDFILE}", timeout=30
    )
    time.sleep(0.5)


def stop_server(pool: Pool) -> None:
    pool[SERVER].run(f"kill $(cat {PIDFILE}) && rm -f {PIDFILE}", timeout=30, check=False)


def measure(pool: Pool, variant: str, client: str, path: str) -> list:
    bench = Latency()
    window = Window(1.0, 0.0, COUNT[path])
    argv = bench.client_argv(variant, pool[SERVER].host.address, window, path)
    deadline = time.monotonic() + 30
    while True:  # the server may still be binding: the campaign retries the same way
        raw = pool[client].run(argv, timeout=bench.client_seconds(window, path) + 30).stdout
        if not bench.is_connect_error(raw) or time.monotonic() > deadline:
            break
    return bench.parse(variant, raw, window)


@pytest.mark.parametrize("variant", ["udp", "tcp"])
def test_count_windows_native_dc_and_internet(pool, variant):
    start_server(pool, variant)
    try:
        dc = measure(pool, variant, "dc-client", "dc")
        internet = measure(pool, variant, "inet-client", "internet")
    finally:
        stop_server(pool)
    assert len(dc) == COUNT["dc"] and len(internet) == COUNT["internet"]
    assert [s.sample for s in dc] == list(range(COUNT["dc"]))
    assert {s.metric for s in dc + internet} == {f"{variant}_rtt"}
    rtt_dc = np.array([s.value for s in dc])
    rtt_inet = np.array([s.value for s in internet])
    print(variant, "dc p50/p99", np.percentile(rtt_dc, [50, 99]).round(1),
          "internet p50/p99", np.percentile(rtt_inet, [50, 99]).round(1))  # fmt: skip
    assert (rtt_dc > 0).all() and np.percentile(rtt_dc, 50) < 10_000  # us, netns hops
    # the WAN path adds its one-way delay twice: 20 ms each way in the default profile
    assert (rtt_inet > 10_000).all() and np.percentile(rtt_inet, 50) < 200_000
    # paced at INTERNET_MPS: the 500 sends span ~1 s, not 500 serial round trips (~20 s)
    assert internet[-1].t_ns < 1.5e9


def test_a_client_without_server_fails_fast_and_is_a_connect_error(pool):
    bench = Latency()
    raw = pool["dc-client"].run(bench.client_argv("tcp", "10.77.0.11", Window(1), "dc")).stdout
    assert bench.is_connect_error(raw)
    with pytest.raises(ToolOutputError, match="Connection refused"):
        bench.parse("tcp", raw)


@pytest.fixture(scope="module")
def dataset(pool, tmp_path_factory) -> Path:
    raw = tmp_path_factory.mktemp("raw")
    profile = Profile(runs=1, seconds=1.0, omit_seconds=0.0, warmup_seconds=1.0)
    collect("latency", INVENTORY, raw, profile, seed=11, modes=["native"])
    return raw / "latency" / "lab"


def test_campaign_measures_every_path_and_variant(dataset):
    runs = pd.read_parquet(dataset / "runs.parquet")
    assert (runs["status"] == "ok").all(), runs[["path", "variant", "status", "reason"]]
    assert sorted(zip(runs["path"], runs["variant"], strict=True)) == [
        (p, v) for p in ("dc", "internet", "local") for v in ("tcp", "udp")
    ]
    assert runs["tool_version"].str.startswith("sockperf, version 3.").all()
    assert runs["tool_version"].str.endswith(", patched: no start-up pause").all()
    built = hashlib.sha256((ROOT / Latency.uploads[BINARY]).read_bytes()).hexdigest()
    assert (runs["binary_sha256"] == built).all()
    assert runs["command"].str.contains("--full-log /dev/stdout").all()
    assert not list(Path(PID_DIR, runs["campaign"].iloc[0]).glob("*.pid"))
    # every path's runs under the benchmark's own placement, recorded with the CPUs applied
    notes = runs["notes"].map(json.loads)
    assert notes.map(lambda n: n["placement"]).eq(Latency.options["placement"]).all()
    assert notes.map(lambda n: isinstance(n["placement_cpus"], dict)).all()


def test_campaign_samples_are_full_round_trips(dataset):
    samples = schema.read_samples(dataset / "samples.parquet")
    assert set(samples["metric"]) == {"udp_rtt", "tcp_rtt"}
    assert (samples["unit"] == "us").all() and (samples["value"] > 0).all()
    for (path, variant, rep), window in samples.groupby(["path", "variant", "rep"]):
        metric = window["metric"].unique().tolist()
        assert metric == [f"{variant}_rtt"], (path, variant, rep)
        assert window["sample"].tolist() == list(range(len(window))), (path, variant, rep)
        assert window["t_ns"].iloc[0] == 0
    measured = samples[~samples["warmup"]]
    p50 = measured.groupby("path")["value"].median()
    print(p50.round(1).to_dict())
    assert p50["dc"] < 10_000 and p50["local"] < 10_000
    assert p50["internet"] > 10_000


def test_kept_logs_are_residues_that_rebuild_sockperfs_output(dataset):
    runs = pd.read_parquet(dataset / "runs.parquet")
    samples = schema.read_samples(dataset / "samples.parquet")
    bench = Latency()
    for row in runs.itertuples():
        assert row.raw_log.endswith(rawlog.RESIDUE_SUFFIX), row.raw_log
        rebuilt = rawlog.read_log(dataset, row.raw_log)  # time-based windows: every row kept
        values = [s.value for s in bench.parse(row.variant, rebuilt)]
        # the step's last window: a window the interference watch flagged is measured again
        # under the next rep, and the runs row names that one's log
        rep = int(re.search(r"_rep(\d+)", row.raw_log).group(1))
        stored = samples[(samples["path"] == row.path) & (samples["variant"] == row.variant)
                         & (samples["rep"] == rep)].sort_values("sample")  # fmt: skip
        assert values == stored["value"].tolist()
    assert not (dataset / "parts").exists()  # folded into the tables
    kept = sum(f.stat().st_size for f in dataset.rglob("*") if f.is_file())
    print(f"{kept} bytes for {len(samples)} samples: {kept / len(samples):.2f} bytes/sample")
