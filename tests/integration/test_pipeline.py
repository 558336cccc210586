"""The pipeline end to end on the embedded lab: `dvc exp run -S profile=smoke`, in the
session's copy of the repository (conftest.py's `smoke_repo`, whose collection stages the
benchmark tests may have run already), then the DVC caching contract and an interrupted-and-
resumed campaign.

Needs root (it brings the lab up). The copy keeps the user's data, params and DVC cache alone.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from pipeline.benchmarks.throughput import Throughput
from pipeline.collect.campaign import plan
from pipeline.collect.modes import MODES, NETWORK_MODES, STUDY_MODES
from pipeline.collect.modes.base import LABEL, PID_DIR
from pipeline.data import rawlog, schema
from pipeline.lab import cpus
from tests.integration.lab_campaign import (
    ctrl_c_reaches_the_child,
    dvc,
    dvc_env,
    set_param,
    smoke_settings,
    smoke_without,
)

ROOT = Path(__file__).resolve().parents[2]
# What the smoke profile measures: every mode but its without_modes
SMOKE_MODES = [m for m in STUDY_MODES if m not in smoke_without()]
SMOKE_NETWORK = set(NETWORK_MODES) & set(SMOKE_MODES)

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root"),
    pytest.mark.skipif(shutil.which("dockerd") is None, reason="dockerd is not installed"),
]


@pytest.fixture(scope="module")
def workdir(smoke_repo) -> Path:
    """The session's smoke-profile copy of the repository (the benchmark tests may already have
    run some of its collection stages there; `dvc repro` then finds them done)."""
    return smoke_repo.path


def _raw(workdir: Path) -> Path:
    return workdir / "data" / "raw" / "throughput" / "lab"


def _node_docker(node: str, *args: str) -> str:
    from pipeline.lab import RUN_DIR

    sock = f"unix://{RUN_DIR}/{node}/docker.sock"
    return subprocess.run(
        ["docker", "-H", sock, *args], capture_output=True, text=True, check=True, timeout=60
    ).stdout


def _leftovers() -> list[str]:
    found = []
    for node in ("node1", "node2", "node3"):
        for kind in (["ps", "-aq"], ["network", "ls", "-q"]):
            ids = _node_docker(node, *kind, "--filter", f"label={LABEL}").split()
            found += [f"{node}: {kind[0]} {i}" for i in ids]
    servers = subprocess.run(["pgrep", "-af", "iperf3 --server"], capture_output=True, text=True)
    found += [f"process: {line}" for line in servers.stdout.splitlines()]
    found += [str(p) for p in Path(PID_DIR).glob("*/*.pid")]
    return found


def test_smoke_repro_measures_every_mode(workdir):
    started = time.monotonic()
    result = dvc(workdir, "exp", "run", "-S", "profile=smoke")
    print(f"smoke dvc exp run: {time.monotonic() - started:.0f} s")
    assert result.returncode == 0, result.stderr[-3000:]
    _check_dvc_metrics_and_plots(workdir)

    runs = pd.read_parquet(_raw(workdir) / "runs.parquet")
    samples = schema.read_samples(_raw(workdir) / "samples.parquet")
    hosts = pd.read_parquet(_raw(workdir) / "hosts.parquet")
    pairs = plan(Throughput(), SMOKE_MODES)
    assert len(runs) == 2 * len(pairs), "smoke profile: every (mode, path, variant) once per run"
    assert not runs.duplicated(["run", "mode", "path", "variant"]).any()
    assert set(runs["variant"]) == {"tcp", "udp"}
    assert set(runs["mode"]) == SMOKE_NETWORK  # storage modes: host benchmarks only

    skipped = runs[runs.status == "skipped"]
    assert set(skipped["mode"]) == {"swarm-ingress"}, runs[["mode", "status", "reason"]]
    assert skipped["reason"].str.contains("IPVS").all()
    # The core Docker modes must all work here; the newer ones may fail now and then (rootless UDP
    # through rootlesskit's port driver has), which is recorded with its reason.
    core = {"native", "docker-host", "docker-bridge", "docker-nat", "docker-proxy",
            "swarm-overlay", "macvlan"}  # fmt: skip
    failed = runs[runs.status == "failed"]
    assert not set(failed["mode"]) & core, failed[["mode", "path", "variant", "reason"]]
    assert failed["reason"].str.len().gt(10).all() and len(failed) <= 0.1 * len(runs)

    ok = runs[runs.status == "ok"]
    assert ok["binary_sha256"].str.fullmatch(r"[0-9a-f]{64}").all()
    if cpus.unavailable() is None:  # every engine's server on the CPUs the placement gives node1
        placement = smoke_settings("throughput")[1]["placement"]
        where = {(n.get("placement"), n["server_cpus"]) for n in ok["notes"].map(json.loads)}
        assert where == {(placement, cpus.fmt(cpus.plan(placement)["node1"]))}, where
    containers = ok[ok["image"].notna()]  # pasta runs the host binary in pasta's namespace
    assert set(containers["mode"]) >= {"docker-host", "podman", "rootless-docker"}
    assert containers["image_digest"].str.fullmatch(r"(sha256:)?[0-9a-f]{64}").all()
    # the image holds the very binary the native mode runs
    assert containers["binary_sha256"].nunique() == 1
    assert set(containers["binary_sha256"]) == set(ok.loc[ok["mode"] == "native", "binary_sha256"])
    for raw_log in ok["raw_log"]:  # the tool's own output, kept compressed
        assert json.loads(rawlog.read_log(_raw(workdir), raw_log))["end"]
    ok = ok[ok["variant"] == "tcp"]

    received = samples[samples.metric == "tcp_throughput_received"]
    assert received.groupby(["run", "mode", "path", "rep"]).size().eq(1).all()
    # a warm-up window is rep 0, flagged; the smoke profile's throughput has none
    warms_up = smoke_settings("throughput")[0].warms_up
    assert set(received.loc[received.warmup, "rep"]) == ({0} if warms_up else set())
    measured = received[~received.warmup]
    assert len(measured) == len(ok)
    per_mode = measured.groupby(["mode", "path"])["value"].median()
    native = per_mode[("native", "dc")]
    assert 1e8 < native < 1e12, f"native dc throughput {native} bit/s is not plausible"
    # Host networking is the native path: their best windows agree. Best, not median: on this
    # 2-core machine one window in a few dips to about half (CI saw native 9.5 and 14.3 Gbit/s
    # against docker-host 18.9 and 17.8), and a dip only ever lowers a window.
    best = measured.groupby(["mode", "path"])["value"].max()
    ratio_host = best[("docker-host", "dc")] / best[("native", "dc")]
    assert 0.5 < ratio_host < 1.5, f"docker-host / native = {ratio_host:.2f} (best windows)"
    assert ((per_mode / native) < 3).all() and ((per_mode / native) > 0.02).all()

    facts = hosts.drop_duplicates("host").set_index("host")
    # the operator's two servers and its client; node3 is drained for this inventory
    assert set(facts.index) >= {"node1", "node2", "dc-client"} and "node3" not in facts.index
    assert facts.loc["node2", "hostname"] == "node2"
    assert facts.loc["node1", "storage_driver"] not in ("", "n/a", None)
    assert facts.loc["node1", "ipvs"].startswith("no")

    _check_latency_and_http(workdir)
    _check_instrument(workdir)
    _check_interference(workdir)
    _check_article(workdir)
    table = (workdir / "reports" / "tables" / "throughput.md").read_text()
    for label in ("n/a", "IPVS"):
        assert label in table
    for suffix in (".svg", ".png"):
        assert list((workdir / "figures" / "throughput").glob(f"*{suffix}")), suffix
    assert not _leftovers()


def _check_dvc_metrics_and_plots(workdir: Path) -> None:
    """The run is a DVC experiment on the smoke profile; its verdicts are DVC metrics and its
    figures DVC plots, as a DVC user reads them."""
    shown = dvc(workdir, "exp", "show", "--csv")
    assert shown.returncode == 0, shown.stderr[-2000:]
    rows = {r["rev"]: r for r in csv.DictReader(io.StringIO(shown.stdout))}
    here = rows["workspace"]  # the experiment: the smoke profile's values, and only those
    assert here["profile"] == "smoke" and here["conf/profiles/smoke.yaml:runs"] == "2"
    assert not here.get("conf/profiles/demo.yaml:runs")
    metrics = dvc(workdir, "metrics", "show", "--json")
    assert metrics.returncode == 0, metrics.stderr[-2000:]
    shown_metrics = json.loads(metrics.stdout)
    ours = json.loads((workdir / "reports" / "metrics.json").read_text())
    assert any(k.startswith("throughput.docker-host.dc.") for k in ours)  # one flat level
    assert "reports/metrics.json" in json.dumps(shown_metrics)
    plots = dvc(workdir, "plots", "show", "-o", "dvc_plots")
    assert plots.returncode == 0, plots.stderr[-2000:]
    html = (workdir / "dvc_plots" / "index.html").read_text()
    assert "throughput" in html and "<img" in html


def _check_latency_and_http(workdir: Path) -> None:
    """Every mode of the network study is measured or skipped with a reason, on every path."""
    import yaml

    from pipeline.benchmarks.http import Http
    from pipeline.benchmarks.latency import Latency

    smoke = yaml.safe_load((workdir / "conf" / "profiles" / "smoke.yaml").read_text())
    count, warmup_count = smoke["latency"]["count"], smoke["latency"]["warmup_count"]
    for name, bench in (("latency", Latency()), ("http", Http())):
        raw = workdir / "data" / "raw" / name / "lab"
        runs = pd.read_parquet(raw / "runs.parquet")
        assert len(runs) == smoke_settings(name)[0].runs * len(plan(bench, SMOKE_MODES)), name
        assert set(runs["mode"]) == SMOKE_NETWORK
        assert {"dc", "internet", "local"} <= set(runs["path"])
        not_ok = runs[runs.status != "ok"]
        assert not_ok["reason"].str.len().gt(10).all(), not_ok[["mode", "path", "reason"]]
        assert set(runs.loc[runs.status == "skipped", "mode"]) == {"swarm-ingress"}
        assert (runs.status == "ok").mean() > 0.8, runs[["mode", "path", "status", "reason"]]
        samples = schema.read_samples(raw / "samples.parquet")
        if name == "latency":
            measured = samples[~samples.warmup]
            per_window = measured.groupby(["run", "mode", "path", "variant", "rep"]).size()
            assert (per_window == count).all(), per_window[per_window != count]
            warm = samples[samples.warmup].groupby(["run", "mode", "path", "variant"]).size()
            assert (warm == warmup_count).all() and len(warm) == len(per_window)
            med = measured.groupby(["path"])["value"].median()
            assert med["internet"] > 30_000 > 10 * med["dc"], med  # the WAN path adds ~40 ms
    answer = (workdir / "reports" / "tables" / "internet_vs_dc_answer.md").read_text()
    assert "| Internet |" in answer and "| datacenter |" in answer
    calibration = pd.read_csv(workdir / "reports" / "tables" / "wan_calibration.csv")
    # delays x protocols (the smoke profile calibrates UDP only) x (p50, p99)
    assert len(calibration) == 2 * 1 * 2 and set(calibration["Protocol"]) == {"UDP"}


def _check_instrument(workdir: Path) -> None:
    """The controls ran on the lab and the analysis recovered their known answers: the A/A
    twin is never called different, the CPU quota's known answer comes back (within 15% or
    inside its interval), the tbf cap's goodput within 5%, and no cgroup or qdisc is left."""
    from tests.integration.lab_campaign import assert_nothing_left

    processed = workdir / "data" / "processed" / "instrument"
    rate = json.loads((processed / "instrument_rate.json").read_text())
    # an A/A comparison per (benchmark, variant) of the check: throughput's tcp and udp, and the
    # cpu variants the smoke profile's check names (1thread, allthreads)
    assert rate["comparisons"] >= 4 and rate["false_differences"] == 0, rate
    injected = pd.read_parquet(processed / "instrument_injected_summary.parquet")
    rows = {(r.control, r.variant): r for r in injected.itertuples()}
    for variant in ("1thread", "allthreads"):
        # The quota was applied (the interval excludes native's rate) and its known answer came
        # back: within 15%, or inside the recovered interval. Either alone fails by chance on 2
        # smoke runs: throttled sysbench here now and then runs at ~60% of its speed per
        # CPU-second for a while (both runs in such a spell: 0.20, wide interval), and two runs
        # that agree closely give a t interval too narrow for the quota's few % of bias (0.258
        # [0.258, 0.259]).
        r = rows[("native-cpuquota", variant)]
        near = abs(r.recovered / r.expected - 1) < 0.15
        assert r.recovered_hi < 1 and (near or r.recovered_within), (
            variant, r.recovered_lo, r.recovered, r.recovered_hi, r.expected)
    for variant in ("tcp", "udp"):  # the rate cap is exact: its goodput within 5%
        r = rows[("native-tbf", variant)]
        assert abs(r.recovered / r.expected - 1) < 0.05, (variant, r.recovered, r.expected)
    assert {r.control for r in injected.itertuples()} >= {"wan-delay"}  # the calibration's
    assert_nothing_left()


def _check_interference(workdir: Path) -> None:
    """Every campaign's measured windows were watched on their hosts through the operator's
    login (no root needed), and no reading failed."""
    summary = pd.read_parquet(workdir / "data" / "processed" / "noise" /
                              "interference_summary.parquet")  # fmt: skip
    print(summary.to_string())
    watched = set(summary["benchmark"])
    assert {"throughput", "latency", "http", "cpu", "memory", "disk", "coldstart"} <= watched
    assert (summary["windows"] > 0).all() and (summary["readings_failed"] == 0).all(), summary
    assert (summary["other_cpus_max"] >= 0).all()


def _check_article(workdir: Path) -> None:
    """`dvc repro` assembled the article from the smoke outputs: every number the prose states
    has its numbers.json entry (tests/unit/test_article.py checks that rule on fixtures; here
    the stage's wiring), and the HTML carries its figures inline."""
    reports = workdir / "reports"
    numbers = json.loads((reports / "numbers.json").read_text())
    md = (reports / "article.md").read_text()
    html = (reports / "article.html").read_text()
    assert len(numbers) > 50, len(numbers)
    for title in ("## Network throughput", "## Latency", "## HTTP", "## Methods"):
        assert title in md, title
    assert "Instrument check, A/A" in md and "instrument_injected.md" in md
    # smoke has 1-2 runs: the noise model is not fitted, and the methods say why
    assert "Run-to-run noise: not estimated (" in md and "at least 3 are needed" in md
    assert numbers["throughput.lab.dc.native.median_gbps"]["value"] > 0.1
    images = re.findall(r'<img [^>]*src="([^"]+)"', html)
    assert images and all(src.startswith("data:image/") for src in images), images[:3]


def test_second_repro_does_nothing(workdir):
    result = dvc(workdir, "repro")
    assert result.returncode == 0
    assert "Running stage" not in result.stdout
    assert "up to date" in result.stdout


def test_analysis_parameter_reruns_only_analysis(workdir):
    set_param(workdir, r"(?<=disk: )0\.02(?=\})", "0.03")  # common.margins.disk
    result = dvc(workdir, "repro")
    assert result.returncode == 0
    ran = re.findall(r"Running stage '([^']+)'", result.stdout)
    # the summaries that decide with that margin and what reads their outputs; no collection
    assert ran[0] in ("summarise-disk", "summarise-instrument")
    assert set(ran) == {"summarise-disk", "summarise-instrument", "compare-spectrum",
                        "replicate-articles", "assemble-article"}, ran  # fmt: skip


def test_interrupted_campaign_resumes_without_loss_or_duplicates(workdir):
    # A new throughput campaign (other modes), so only that stage runs again.
    subset = ["native", "docker-bridge", "docker-nat"]  # a container each way, a NAT rule
    set_param(workdir, r"^modes: \{\}", f"modes: {{throughput: \"{','.join(subset)}\"}}")
    proc = subprocess.Popen(
        ["dvc", "repro", "collect-throughput@lab"],
        cwd=workdir,
        env=dvc_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=ctrl_c_reaches_the_child,
    )
    parts_root = _raw(workdir) / "parts"
    earlier = {d.name for d in parts_root.iterdir()} if parts_root.is_dir() else set()
    deadline = time.monotonic() + 600
    new: list[Path] = []
    while time.monotonic() < deadline and proc.poll() is None:
        new = [p for p in parts_root.glob("*/run-*.runs.parquet") if p.parent.name not in earlier]
        if len(new) >= 3:
            break
        time.sleep(0.5)
    assert proc.poll() is None, "the campaign ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
    output, _ = proc.communicate(timeout=300)
    print(output[-3000:])
    assert proc.returncode != 0
    assert not _leftovers(), "the interrupted campaign left containers, networks or processes"

    campaign_dir = new[0].parent
    key = ["run", "mode", "path", "variant"]
    saved = pd.concat([pd.read_parquet(p) for p in campaign_dir.glob("run-*.runs.parquet")])
    n_saved = len(saved)
    assert n_saved >= 3

    result = dvc(workdir, "repro", "collect-throughput@lab")
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"{n_saved} already measured" in result.stdout + result.stderr
    runs = pd.read_parquet(_raw(workdir) / "runs.parquet")
    assert len(runs) == 2 * len(plan(Throughput(), subset))
    assert not runs.duplicated(key).any()
    assert runs["campaign"].nunique() == 1 and runs["campaign"].iloc[0] == campaign_dir.name
    # nothing measured before was measured again: the same rows, started at the same time
    before = saved.set_index(key)["started_at"]
    assert (runs.set_index(key)["started_at"].loc[before.index] == before).all()
    assert not campaign_dir.exists()  # the parts are folded into the tables and deleted
    assert not _leftovers()


def test_one_campaign_at_a_time_and_stale_locks_are_taken_over(workdir):
    from pipeline.collect import inventory
    from pipeline.collect.campaign import CampaignError, HostLock
    from pipeline.collect.remote import Pool
    from pipeline.lab import up

    up()
    inv = inventory.load(ROOT / "inventory" / "lab.yaml", known_modes=MODES)
    with Pool(inv) as pool:
        session = pool[inv.manager.name]
        with HostLock(session, "first"):
            with pytest.raises(CampaignError, match="another campaign holds"):
                HostLock(session, "second").__enter__()
        # a lock whose owner process on this controller is gone is taken over
        dead = subprocess.Popen(["true"])
        dead.wait()
        session.run(
            f"mkdir -p {HostLock.PATH} && echo '{os.uname().nodename} {dead.pid} x' "
            f"> {HostLock.PATH}/owner"
        )
        with HostLock(session, "third") as lock:
            owner = session.run(["cat", f"{HostLock.PATH}/owner"]).stdout.strip()
            assert owner == lock.owner
        assert session.run(["test", "-e", HostLock.PATH], check=False).status == 1


@pytest.mark.runs_last
def test_lab_down_leaves_nothing(workdir):
    from pipeline.lab import down
    from pipeline.lab.lifecycle import leftovers

    down()
    assert leftovers() == []
