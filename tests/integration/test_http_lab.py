"""The `http` benchmark on the embedded lab: nginx natively on node1, co-loadgen on dc-client,
inet-client (behind the WAN path) and node1 itself, through the real campaign loop.

Needs root (it brings the lab up) and co-loadgen built by `make setup`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.benchmarks.http import RATE
from pipeline.collect.campaign import Profile
from pipeline.collect.modes.base import PID_DIR
from pipeline.data import rawlog, schema
from pipeline.environments import collect

ROOT = Path(__file__).resolve().parents[2]
LOADGEN = ROOT / ".make/bin/co-loadgen"
SECONDS = 2.0

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root"),
    pytest.mark.skipif(shutil.which("dockerd") is None, reason="dockerd is not installed"),
]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    assert LOADGEN.is_file(), f"{LOADGEN} is missing: run `make setup` (it builds co-loadgen)"
    raw = tmp_path_factory.mktemp("raw")
    profile = Profile(runs=1, seconds=SECONDS, omit_seconds=0.5, warmup_seconds=1.0)
    collect("http", ROOT / "inventory/lab.yaml", raw, profile, seed=7, modes=["native"])
    return raw / "http" / "lab"


def test_every_path_measured_with_nginx(dataset):
    runs = pd.read_parquet(dataset / "runs.parquet")
    assert sorted(runs["path"]) == ["dc", "internet", "local"]
    assert (runs["status"] == "ok").all(), runs[["path", "status", "reason"]]
    assert runs["tool_version"].str.match(r"nginx version: nginx/\d").all()
    assert dict(zip(runs["path"], runs["client_host"], strict=True)) == {
        "dc": "dc-client", "internet": "inet-client", "local": "node1",
    }  # fmt: skip
    assert (runs["server_host"] == "node1").all()
    # the native server was stopped: no pidfile left
    assert not list(Path(PID_DIR, runs["campaign"].iloc[0]).glob("*.pid"))


def test_one_sample_per_request_at_its_due_time_and_no_errors(dataset):
    samples = schema.read_samples(dataset / "samples.parquet")
    for (path, rep), window in samples.groupby(["path", "rep"]):
        per = {m: g for m, g in window.groupby("metric")}
        counts = {m: per[m]["value"].iloc[0] for m in ("http_errors", "http_late")}
        assert counts["http_errors"] == 0, (path, rep)
        expected = round((1.0 if rep == 0 else SECONDS) * RATE)
        latency = per["http_latency"].sort_values("sample")
        assert latency["sample"].tolist() == list(range(expected)), (path, rep)
        assert (latency["t_ns"] == latency["sample"] * round(1e9 / RATE)).all()
        assert (latency["warmup"] == (rep == 0)).all()
        # a 2-core lab keeps up with the rate: few requests written late, all answered. The
        # warm-up window is there to absorb start-up (connection set-up, first-touch faults, a
        # busy CI host): one stall there puts a burst late (CI: 26 of 500 on local), so it gets a
        # looser bound; the measured windows keep the tight one.
        bound = 0.25 if rep == 0 else 0.05
        assert counts["http_late"] < bound * expected, (path, rep, counts)
        assert per["http_achieved_rate"]["value"].iloc[0] == pytest.approx(RATE, rel=0.02)


def test_latencies_are_plausible_per_path(dataset):
    samples = schema.read_samples(dataset / "samples.parquet")
    measured = samples[(samples["metric"] == "http_latency") & ~samples["warmup"]]
    p = {
        path: np.percentile(g["value"], [50, 99])
        for path, g in measured.groupby("path")
    }  # fmt: skip
    print({path: [round(v, 1) for v in values] for path, values in p.items()})
    assert 20 < p["dc"][0] < 2000 and 20 < p["local"][0] < 2000  # us, netns hops
    # the WAN path adds 20 ms each way (jitter 2 ms): the round trip is 40 ms and more
    assert 38_000 < p["internet"][0] < 60_000


def test_raw_logs_name_the_generator(dataset):
    runs = pd.read_parquet(dataset / "runs.parquet")
    digest = hashlib.sha256(LOADGEN.read_bytes()).hexdigest()
    for log in runs["raw_log"]:
        text = rawlog.read_log(dataset, log)
        header = json.loads(text.splitlines()[0])
        assert header["tool"] == "co-loadgen" and header["sha256"] == digest
        assert header["rate"] == RATE and header["warmup_s"] == 0.5
