"""What a campaign keeps on disk: sockperf's full log rebuilt byte for byte from the samples
table and a small residue (on verbatim captured logs), the other tools' output kept as it is,
parts folded into the tables and deleted, resume and crashes counting every step once, and
earlier campaigns kept apart."""

from __future__ import annotations

import gzip
import lzma
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.benchmarks import ToolOutputError, Window
from pipeline.benchmarks.latency import (
    BINARY,
    Latency,
    kept_log,
    log_residue,
    rebuild_log,
    rows_not_kept,
)
from pipeline.benchmarks.throughput import Throughput
from pipeline.collect.campaign import Dataset, Profile, Step
from pipeline.collect.modes import MODES
from pipeline.data import rawlog, schema

DATA = Path(__file__).parent / "data"
LOGS = [f"sockperf-{v}-{kind}.log" for v in ("udp", "tcp")
        for kind in ("pingpong-dc", "underload-inet")]  # fmt: skip


def _windows(samples, *bounds):
    """(values, t_ns) of consecutive windows of the parsed samples, each timed from its first
    sample as the campaign stores them."""
    out, start = [], 0
    for end in bounds:
        window = samples[start:end]
        t0 = window[0].t_ns
        out.append((np.array([s.value for s in window]), np.array([s.t_ns - t0 for s in window])))
        start = end
    return out


@pytest.mark.parametrize("name", LOGS)
def test_every_row_kept_rebuilds_the_log_byte_for_byte(name):
    raw = (DATA / name).read_text()
    samples = Latency().parse("tcp" if "tcp" in name else "udp", raw)
    windows = _windows(samples, 100, len(samples))  # a warm-up, then the window
    residue = log_residue(raw, windows)
    assert residue is not None
    assert rebuild_log(residue, windows) == raw
    # sockperf's banner and statistics, the windows' first send times and one bit per odd
    # round trip: well under a byte per row
    assert len(lzma.compress(residue)) < 1500 + len(samples) / 8


@pytest.mark.parametrize("name", LOGS)
def test_rows_after_the_count_are_not_kept_and_the_rest_is_exact(name):
    raw = (DATA / name).read_text()
    samples = Latency().parse("udp" if "udp" in name else "tcp", raw)
    windows = _windows(samples[:600], 100, 600)
    rebuilt = rebuild_log(log_residue(raw, windows), windows)
    assert rebuilt == kept_log(raw, 600)
    lines = raw.splitlines(keepends=True)
    header = next(i for i, line in enumerate(lines) if line.startswith("packet, txTime"))
    dropped = lines[header + 1 + 600 : header + 1 + len(samples)]
    assert rebuilt == "".join(lines[: header + 1 + 600] + lines[header + 1 + len(samples) :])
    assert len(dropped) == len(samples) - 600


def test_interleaved_messages_and_odd_rows_are_kept_exactly():
    raw = (DATA / "sockperf-udp-pingpong-dc.log").read_text()
    lines = raw.splitlines(keepends=True)
    header = next(i for i, line in enumerate(lines) if line.startswith("packet, txTime"))
    row = lines[header + 11]
    # sockperf's own message written into the middle of a row (two stdio buffers, one stdout),
    # one in the rows after the window, and a row whose last column is not RTT / 2
    lines[header + 11] = row[:9] + "sockperf: Test end (interrupted by timer)\n" + row[9:]
    lines[header + 2000] = lines[header + 2000][:5] + "sockperf: Test ended\n" + (
        lines[header + 2000][5:])
    packet, tx, rx, _ = lines[header + 30].split(", ")
    lines[header + 30] = f"{packet}, {tx}, {rx}, 0.001\n"
    edited = "".join(lines)
    samples = Latency().parse("udp", edited)
    full = _windows(samples, 100, len(samples))
    assert rebuild_log(log_residue(edited, full), full) == edited
    part = _windows(samples, 100, 1000)
    rebuilt = rebuild_log(log_residue(edited, part), part)
    assert rebuilt == kept_log(edited, 1000) and "sockperf: Test ended\n" in rebuilt


def test_samples_that_are_not_the_logs_rows_keep_the_log_itself():
    raw = (DATA / "sockperf-udp-pingpong-dc.log").read_text()
    samples = Latency().parse("udp", raw)
    values, t_ns = _windows(samples, 500)[0]
    assert log_residue(raw, [(values + 1.0, t_ns)]) is None
    assert log_residue("no full log here", [(values, t_ns)]) is None


# ---- through a campaign: kept files, the samples table, rebuilt logs ----------------------


class _Sockperf:
    """A pool whose every client command answers with one canned sockperf full log."""

    def __init__(self, raw: str) -> None:
        self.raw = raw

    def __getitem__(self, name):
        return self

    def run(self, command, **kwargs):
        from types import SimpleNamespace

        if "Cpus_allowed_list" in str(command):
            return SimpleNamespace(status=0, stdout="0-1\n", stderr="")
        return SimpleNamespace(status=0, stdout=self.raw, stderr="")


def _lab_inventory():
    from pipeline.collect import inventory

    return inventory.load(Path(__file__).parents[2] / "inventory" / "lab.yaml", MODES,
                          check_files=False)  # fmt: skip


def _run_campaign(out: Path, raw: str, monkeypatch, steps=None):
    """A latency campaign whose clients all print ``raw``: every step measured (or only the
    first ``steps``), then consolidated as at the end of a session."""
    from pipeline.collect.campaign import Campaign
    from pipeline.collect.modes import Context
    from pipeline.collect.modes.base import Deployment
    from pipeline.collect.session import SessionClock

    inv = _lab_inventory()
    profile = Profile(runs=2, seconds=1, omit_seconds=0, warmup_seconds=1, count=900,
                      warmup_count=100)  # fmt: skip
    campaign = Campaign(Latency(), inv, profile, out, seed=5, modes=["native"], log=lambda _: None,
                        paths=("dc",))  # fmt: skip
    campaign.tool_version, campaign.binary_sha = "sockperf 3.7", {"node1": {
        BINARY: "a" * 64}}  # fmt: skip
    deploy = lambda ctx, workload: Deployment(server=inv.servers[0], address="10.0.0.1",  # noqa: E731
                                              stop=lambda: None)  # fmt: skip
    monkeypatch.setattr(MODES["native"], "start", deploy)
    monkeypatch.setattr(MODES["native"], "available", lambda ctx, path: None)
    monkeypatch.setattr(campaign, "_host_rows", lambda ctx, run: [
        {"environment": "lab", "campaign": campaign.id, "run": run, "host": "node1"}])
    ctx = Context(inventory=inv, pool=_Sockperf(raw), campaign=campaign.id)
    todo = [s for s in campaign.steps if s.key not in campaign.data.done()][:steps]
    campaign._clock = SessionClock()
    campaign._measure_all(ctx, todo, campaign._clock)
    campaign.data.save_session(campaign._clock.record())
    return campaign


def _all_files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def test_a_latency_campaign_keeps_residues_that_rebuild_its_logs(tmp_path, monkeypatch):
    raw = (DATA / "sockperf-udp-pingpong-dc.log").read_text()
    campaign = _run_campaign(tmp_path, raw, monkeypatch)
    campaign.data.consolidate()
    runs = pd.read_parquet(tmp_path / "runs.parquet")
    assert len(runs) == 4 and (runs["status"] == "ok").all()
    stored = schema.read_samples(tmp_path / "samples.parquet")
    for row in runs.itertuples():
        assert row.raw_log.endswith(rawlog.RESIDUE_SUFFIX)
        rebuilt = rawlog.read_log(tmp_path, row.raw_log)
        assert rebuilt == kept_log(raw, 1000)  # warm-up + window
        # the rebuilt log parses to the stored samples, sockperf's own count still checked
        dropped = rows_not_kept(rawlog.read_residue(tmp_path, row.raw_log))
        assert dropped == 3100 - 1000
        parsed = Latency().parse("udp", rebuilt, Window(1, 0, 1000), rows_not_kept=dropped)
        step = stored[(stored["run"] == row.run) & (stored["variant"] == row.variant)]
        assert [s.value for s in parsed] == step.sort_values(["rep", "sample"])["value"].tolist()
        with pytest.raises(ToolOutputError, match="counted 3100"):
            Latency().parse("udp", rebuilt, Window(1, 0, 1000))
    files = _all_files(tmp_path)
    assert not [f for f in files if f.startswith("parts/")], files
    samples = schema.read_table(tmp_path / "samples.parquet").num_rows
    assert samples == 4 * 1000
    # everything the dataset holds per sample (this log's banner is most of it at 1,000), less
    # the campaign's record and its hosts' facts: one of each per campaign, whatever its size
    fixed = files["campaign.json"] + files["hosts.parquet"]
    assert (sum(files.values()) - fixed) / samples < 8


def test_a_residue_reads_back_before_consolidation_too(tmp_path, monkeypatch):
    raw = (DATA / "sockperf-tcp-underload-inet.log").read_text()
    campaign = _run_campaign(tmp_path, raw, monkeypatch, steps=1)
    (part,) = campaign.data.parts.glob("run-*.runs.parquet")
    log = pd.read_parquet(part)["raw_log"].iloc[0]
    assert rawlog.read_log(tmp_path, log) == kept_log(raw, 1000)


def test_a_failed_window_keeps_the_tools_output_as_it_is(tmp_path, monkeypatch):
    lines = (DATA / "sockperf-udp-pingpong-dc.log").read_text().splitlines(keepends=True)
    raw = "".join(lines[:100])  # the stream stopped inside the full log
    with pytest.raises(ToolOutputError, match="counted 3100"):
        Latency().parse("udp", raw)
    _run_campaign(tmp_path, raw, monkeypatch, steps=1).data.consolidate()
    runs = pd.read_parquet(tmp_path / "runs.parquet")
    assert runs["status"].tolist() == ["failed"]
    assert rawlog.read_log(tmp_path, runs["raw_log"].iloc[0]) == raw


def test_other_tools_output_is_kept_as_it_is_and_old_gzip_logs_still_read(tmp_path):
    report = (DATA / "iperf3-tcp-3s-omit1.json").read_text()
    path = rawlog.write_log(tmp_path / "logs" / "c", "run-001_native_dc_tcp_rep1", report)
    assert path.name.endswith((".log.xz", ".log.gz"))
    assert rawlog.read_log(tmp_path, str(path.relative_to(tmp_path))) == report
    assert len(path.read_bytes()) <= len(gzip.compress(report.encode(), mtime=0))
    old = tmp_path / "logs" / "c" / "run-002_native_dc_tcp_rep1.log.gz"
    old.write_bytes(gzip.compress(report.encode(), mtime=0))
    assert rawlog.read_log(tmp_path, "logs/c/run-002_native_dc_tcp_rep1.log.gz") == report
    tiny, suffix = rawlog.compress(b"ok\n")
    assert suffix == ".gz" and rawlog.decompress(tiny, "x.log.gz") == b"ok\n"


# ---- consolidation, resume and crashes ---------------------------------------------------


def _sample(step, value, campaign="c"):
    return {"environment": "lab", "campaign": campaign, "benchmark": "throughput",
            "metric": "tcp_throughput_received", "unit": "bit/s", "mode": step.mode,
            "path": step.path, "variant": step.variant, "run": step.run, "rep": 1,
            "sample": 0, "value": value, "warmup": False, "t_ns": None}  # fmt: skip


def _row(step, campaign="c"):
    now = pd.Timestamp.now(tz="UTC")
    return {"environment": "lab", "campaign": campaign, "benchmark": "throughput",
            "run": step.run, "order": step.order, "mode": step.mode, "path": step.path,
            "variant": step.variant, "status": "ok", "reason": "", "started_at": now,
            "ended_at": now}  # fmt: skip


STEPS = [Step(run, order, mode, "dc", "tcp") for run in (1, 2)
         for order, mode in enumerate(("native", "docker-host", "docker-bridge"))]  # fmt: skip


def _save(data: Dataset, steps, campaign="c") -> None:
    for step in steps:
        value = 1e9 * (STEPS.index(step) + 1)
        data.save(step, [_sample(step, value, campaign), _sample(step, value + 1, campaign)],
                  _row(step, campaign))  # fmt: skip
        if not data.has_hosts(step.run):
            data.save_hosts(step.run, [{"environment": "lab", "campaign": campaign,
                                        "run": step.run, "host": "node1"}])  # fmt: skip
    first = STEPS.index(steps[0])
    data.save_session({"started_at": f"2026-11-26T1{first}:00:00+00:00", "wall_s": 10.0,
                       "window_s": 5.0, "steps": len(steps)})  # fmt: skip


def _check_every_step_once(root: Path, steps) -> None:
    runs = pd.read_parquet(root / "runs.parquet")
    assert sorted(runs["mode"] + runs["run"].astype(str)) == sorted(
        s.mode + str(s.run) for s in steps)
    samples = schema.read_samples(root / "samples.parquet")
    expected = sorted(v for s in steps for v in (1e9 * (STEPS.index(s) + 1),
                                                 1e9 * (STEPS.index(s) + 1) + 1))  # fmt: skip
    assert sorted(samples["value"]) == expected
    hosts = pd.read_parquet(root / "hosts.parquet")
    assert sorted(hosts["run"]) == sorted({s.run for s in steps})


def test_consolidate_then_resume_then_consolidate_keeps_every_row_once(tmp_path):
    data = Dataset(tmp_path, "c")
    _save(data, STEPS[:2])
    assert data.consolidate() == {"samples": 4, "hosts": 1, "runs": 2}
    assert not data.parts.exists()  # the parts are gone once in the tables
    resumed = Dataset(tmp_path, "c")
    assert resumed.done() == {s.key for s in STEPS[:2]}  # resume reads the tables
    assert resumed.has_hosts(1) and not resumed.has_hosts(2)
    _save(resumed, STEPS[2:])
    assert resumed.done() == {s.key for s in STEPS}
    assert resumed.consolidate() == {"samples": 12, "hosts": 2, "runs": 6}
    _check_every_step_once(tmp_path, STEPS)
    assert [s["steps"] for s in resumed.sessions()] == [2, 4]  # both sessions' records
    record = pd.read_json(tmp_path / "campaign.json", typ="series")
    assert record["sessions"] == 2 and record["steps"] == 6
    again = Dataset(tmp_path, "c")  # nothing new: the tables are left alone
    before = (tmp_path / "samples.parquet").stat().st_mtime_ns
    assert again.consolidate() == {"samples": 12, "runs": 6, "hosts": 2}
    assert (tmp_path / "samples.parquet").stat().st_mtime_ns == before


@pytest.mark.parametrize("crash_after", ["samples", "hosts", "runs", "campaign.json",
                                         "first runs part deleted"])  # fmt: skip
def test_a_crash_inside_consolidation_loses_nothing_and_duplicates_nothing(
    tmp_path, monkeypatch, crash_after
):
    from pipeline.collect import dataset as dataset_module

    data = Dataset(tmp_path, "c")
    _save(data, STEPS[:3])
    data.consolidate()
    _save(data, STEPS[3:])

    class Crash(Exception):
        pass

    real_write, real_replace, real_unlink = schema.write_table, dataset_module.os.replace, (
        Path.unlink)

    def write_table(table, path, metadata=None):
        real_write(table, path, metadata)
        if path.name == f"{crash_after}.parquet":
            raise Crash

    def replace(src, dst):
        real_replace(src, dst)
        if Path(dst).name == crash_after:
            raise Crash

    def unlink(self, missing_ok=False):
        real_unlink(self, missing_ok=missing_ok)
        if self.name.endswith(".runs.parquet") and crash_after == "first runs part deleted":
            raise Crash

    monkeypatch.setattr(schema, "write_table", write_table)
    monkeypatch.setattr(dataset_module.os, "replace", replace)
    monkeypatch.setattr(Path, "unlink", unlink)
    with pytest.raises(Crash):
        data.consolidate()
    monkeypatch.undo()

    resumed = Dataset(tmp_path, "c")
    assert resumed.done() == {s.key for s in STEPS}  # nothing to measure again
    resumed.consolidate()
    _check_every_step_once(tmp_path, STEPS)
    assert not resumed.parts.exists()
    assert [s["steps"] for s in resumed.sessions()] == [3, 3]


def test_an_earlier_campaign_is_moved_aside_never_mixed_in_and_resumes_if_it_returns(tmp_path):
    old = Dataset(tmp_path, "old")
    _save(old, STEPS[:2], "old")
    old.consolidate()
    _save(old, STEPS[2:3], "old")  # measured after its last consolidation, still in parts
    new = Dataset(tmp_path, "new")
    assert new.done() == set() and new.superseded() == ["old"]
    _save(new, STEPS[3:], "new")
    new.consolidate()
    runs = pd.read_parquet(tmp_path / "runs.parquet")
    assert set(runs["campaign"]) == {"new"} and len(runs) == 3
    assert set(schema.read_samples(tmp_path / "samples.parquet")["campaign"]) == {"new"}
    aside = tmp_path / "superseded" / "old"
    assert sorted(p.name for p in aside.iterdir()) == [
        "campaign.json", "hosts.parquet", "runs.parquet", "samples.parquet"]
    assert (tmp_path / "parts" / "old").is_dir()  # its unconsolidated step stays apart too
    # the settings or code of "old" come back: it resumes from what it had, nothing lost
    back = Dataset(tmp_path, "old")
    assert back.done() == {s.key for s in STEPS[:3]} and back.superseded() == ["new"]
    back.consolidate()
    _check_every_step_once(tmp_path, STEPS[:3])
    assert not aside.exists() and (tmp_path / "superseded" / "new" / "runs.parquet").exists()


def test_a_crash_while_moving_an_earlier_campaign_aside_loses_neither(tmp_path, monkeypatch):
    from pipeline.collect import dataset as dataset_module

    old = Dataset(tmp_path, "old")
    _save(old, STEPS[:3], "old")
    old.consolidate()
    new = Dataset(tmp_path, "new")
    _save(new, STEPS[3:], "new")
    real_replace = dataset_module.os.replace

    def replace(src, dst):
        real_replace(src, dst)
        if "superseded" in str(dst) and Path(dst).name == "hosts.parquet":
            raise RuntimeError("power cut")

    monkeypatch.setattr(dataset_module.os, "replace", replace)
    with pytest.raises(RuntimeError):
        new.consolidate()
    monkeypatch.undo()
    assert Dataset(tmp_path, "old").done() == {s.key for s in STEPS[:3]}
    assert Dataset(tmp_path, "new").done() == {s.key for s in STEPS[3:]}
    Dataset(tmp_path, "new").consolidate()
    _check_every_step_once(tmp_path, STEPS[3:])
    back = Dataset(tmp_path, "old")
    back.consolidate()
    _check_every_step_once(tmp_path, STEPS[:3])


def test_a_dataset_of_the_earlier_layout_resumes_and_moves_aside(tmp_path):
    """Tables without a campaign in their metadata, and every part kept beside them."""
    data = Dataset(tmp_path, "c")
    _save(data, STEPS[:2])
    for name in ("samples", "runs", "hosts"):
        files = sorted(data.parts.glob(f"*{name}*.parquet"))
        files = [f for f in files if (name != "runs" or ".runs." in f.name)
                 and (name != "samples" or ".samples." in f.name)]  # fmt: skip
        table = pd.concat([schema.read_table(f, name).to_pandas() for f in files])
        schema.write_table(schema.to_table(table, schema.TABLES[name]),
                           tmp_path / f"{name}.parquet")  # fmt: skip
    assert Dataset(tmp_path, "c").done() == {s.key for s in STEPS[:2]}
    data.consolidate()
    _check_every_step_once(tmp_path, STEPS[:2])
    assert Dataset(tmp_path, "x").superseded() == ["c"]


def test_the_throughput_campaign_keeps_iperf3_reports_as_they_are(tmp_path):
    # Throughput has no residue: its report holds far more than the samples (CPU use,
    # retransmits, the socket's settings), and it is small.
    assert Throughput().log_residue("{}", []) is None


@contextmanager
def _file_size_limit(limit: int) -> Iterator[None]:
    """Writes past ``limit`` bytes of a file fail, as on a full disk (the kernel's own limit,
    RLIMIT_FSIZE: the write fails with EFBIG and what fitted stays in the file)."""
    import resource
    import signal

    old = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an error, not the signal's kill
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, old[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old)
        signal.signal(signal.SIGXFSZ, handler)


@pytest.mark.parametrize("writer", ["parquet", "log", "session"])
def test_a_failed_write_leaves_no_half_written_file_and_the_old_one_intact(tmp_path, writer):
    data = Dataset(tmp_path, "c")
    step = Step(1, 0, "native", "dc", "tcp")
    rows = [{"environment": "lab", "campaign": "c", "benchmark": "throughput", "metric": "m",
             "unit": "bit/s", "mode": "native", "path": "dc", "variant": "tcp", "run": 1,
             "rep": 1, "sample": i, "value": float(i), "warmup": False} for i in range(5000)]
    noise = np.random.default_rng(1).bytes(200_000).hex()  # does not compress below the limit
    write = {
        "parquet": lambda: schema.write_table(
            schema.to_table(rows, schema.SAMPLES), tmp_path / "samples.parquet"),
        "log": lambda: rawlog.write_log(tmp_path, step.stem, noise),
        "session": lambda: data.save_session({"started_at": "2026-01-01T00:00:00", "pad": noise}),
    }[writer]  # fmt: skip
    write()  # the old file, written with room to spare
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert before and max(len(b) for b in before.values()) > 10_000
    with _file_size_limit(4096), pytest.raises(OSError):
        write()
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    if writer == "log":  # a step measured again drops its earlier log first, by design
        before = {}
    assert after == before  # no temporary file left, the old file as it was
