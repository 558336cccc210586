"""Faults in the middle of a campaign, one test each: a node's dockerd killed, the dc client's
sshd killed, a partition between the dc client and the servers, the raw data's disk full, and
Ctrl-C twice.

A small throughput campaign (native and docker-bridge, 2 runs, 4 steps) runs in a child
process; the test injects the fault once the campaign is mid-way (a step saved, the next one
measuring) and then checks that:
- the campaign's message names the host and the step;
- nothing labelled is left on any node;
- after the repair (`pipeline.lab.up()` restarts dead daemons and sshds), the same campaign
  run again resumes and completes: what was saved before is unchanged, and every step is
  there exactly once with its full count of samples.
Each test records its rows per step before and after (`record_property("rows", ...)`), which
tests/integration/conftest.py prints in the summary of every run.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from pipeline.collect.modes.base import leftovers
from pipeline.data import schema
from pipeline.hosts import LABEL
from tests.integration.lab_campaign import (
    INVENTORY,
    ROOT_ONLY,
    ChildCampaign,
    assert_nothing_left,
    lab_session,
)

pytestmark = [pytest.mark.lab, ROOT_ONLY]

BENCHMARK = "throughput"
MODES = ["native", "docker-bridge"]
RUNS = 2
STEPS = RUNS * len(MODES)  # one path (dc), one variant (tcp)
# Per step, the warm-up and the measured window (1 s each) give one interval and the
# receiver's total each.
SAMPLES_PER_STEP = 4
BUDGET_S = 90  # longest wait for the campaign to reach the moment of the fault
STEP_KEY = ["run", "mode", "path", "variant"]


@pytest.fixture(scope="module", autouse=True)
def lab_is_up():
    from pipeline import lab

    lab.up()


@pytest.fixture(autouse=True)
def lab_repaired_after():
    """Whatever a test broke, the lab is whole again for the next test."""
    yield
    from pipeline import lab

    lab.up()


class Campaign(ChildCampaign):
    """The small throughput campaign in a child process."""

    def __init__(self, raw: Path) -> None:
        self.raw = raw
        code = textwrap.dedent(f"""
            from pipeline.collect.campaign import Profile, collect
            ONCE = {{'interference_retries': 0}}  # a flagged window is not measured again here
            profile = Profile(runs={RUNS}, seconds=1, omit_seconds=0, warmup_seconds=1)
            collect({BENCHMARK!r}, {INVENTORY!r}, {str(raw)!r}, profile, 11, {MODES!r},
                    paths=("dc",), variants=("tcp",), interference=ONCE)
        """)  # fmt: skip
        super().__init__(code, raw / BENCHMARK / "lab")

    def wait_for(self, what: str, ready: Callable[[], bool], budget: float = BUDGET_S) -> None:
        super().wait_for(what, ready, budget)


def _client_pids() -> set[int]:
    """The iperf3 clients running on dc-client (its network namespace's processes)."""
    listed = subprocess.run(["ip", "netns", "pids", "dc-client"], capture_output=True,
                            text=True, timeout=10).stdout.split()  # fmt: skip
    found = set()
    for pid in listed:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:  # it ended meanwhile
            continue
        if argv and argv[0].endswith(b"iperf3") and b"--client" in argv:
            found.add(int(pid))
    return found


def _mid_step(campaign: Campaign) -> None:
    """Until a step is saved and the client of a later one has just started (seen within
    one poll of its start)."""
    campaign.wait_for("a saved step", lambda: campaign.saved_steps() >= 1)
    seen = _client_pids()

    def a_new_client() -> bool:
        nonlocal seen
        now = _client_pids()
        new, seen = now - seen, now
        return bool(new)

    campaign.wait_for("a new iperf3 client on dc-client", a_new_client)


def _saved(root: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The campaign's saved runs and samples rows, wherever they are: the consolidated tables
    and the parts committed since (a parts file counts when its runs part, the commit marker,
    exists). A step is in one or the other, never both."""
    runs, samples = [], []
    for name, into in (("runs", runs), ("samples", samples)):
        if (root / f"{name}.parquet").exists():
            into.append(schema.read_table(root / f"{name}.parquet", name).to_pandas())
    for part in sorted(root.glob("parts/*/run-*.runs.parquet")):
        runs.append(schema.read_table(part, "runs").to_pandas())
        twin = part.with_name(part.name.replace(".runs.", ".samples."))
        samples.append(schema.read_table(twin, "samples").to_pandas())
    runs_df = pd.concat(runs, ignore_index=True) if runs else pd.DataFrame(columns=STEP_KEY)
    samples_df = (
        pd.concat(samples, ignore_index=True) if samples else pd.DataFrame(columns=STEP_KEY)
    )
    return runs_df, samples_df


def _counts(runs: pd.DataFrame, samples: pd.DataFrame) -> dict[tuple, tuple[int, int]]:
    """(runs rows, samples rows) per step."""
    per_step = {tuple(k): [n, 0] for k, n in runs.groupby(STEP_KEY).size().items()}
    for key, n in samples.groupby(STEP_KEY).size().items():
        per_step.setdefault(tuple(key), [0, 0])[1] = n
    return {k: tuple(v) for k, v in sorted(per_step.items())}


def _describe(label: str, counts: dict[tuple, tuple[int, int]]) -> str:
    steps = ", ".join(f"r{k[0]} {k[1]} {r}/{s}" for k, (r, s) in counts.items())
    total_runs = sum(r for r, _ in counts.values())
    total_samples = sum(s for _, s in counts.values())
    return (f"{label}: {len(counts)} steps, runs rows {total_runs}, samples rows "
            f"{total_samples} [runs/samples per step: {steps}]")  # fmt: skip


def _everything_left() -> dict[str, list[str]]:
    with lab_session() as (inv, _, ctx):
        found = {h.name: leftovers(ctx, h) for h in (*inv.servers, inv.dc_client)}
    return {name: items for name, items in found.items() if items}


def _resume_and_check(
    raw: Path, record_property, before: tuple[pd.DataFrame, pd.DataFrame]
) -> None:
    """The same campaign again (what the next `dvc repro` does): it completes, the rows saved
    before are unchanged, every step is there once with all its samples, nothing is left."""
    runs_before, samples_before = before
    counts_before = _counts(runs_before, samples_before)
    second = Campaign(raw)
    output = second.finish()
    runs_after, samples_after = _saved(second.root)
    counts_after = _counts(runs_after, samples_after)
    rows = f"{_describe('before', counts_before)}; {_describe('after', counts_after)}"
    print(rows)
    record_property("rows", rows)
    assert second.proc.returncode == 0, f"the resumed campaign failed ({rows}):\n{output}"
    done = len(_ok_steps(runs_before))
    assert f"{done} already measured, {STEPS - done} to go" in output, rows
    assert not list(second.root.glob("parts/*/*")), "parts left after the consolidation"
    # every step once, ok, with its full count of samples
    assert len(runs_after) == STEPS and set(runs_after.status) == {"ok"}, rows
    assert set(counts_after.values()) == {(1, SAMPLES_PER_STEP)}, rows
    # what was saved before is unchanged: the same rows, value for value
    for key in _ok_steps(runs_before):
        assert counts_after[key] == counts_before[key], (key, rows)
        for table_before, table_after in ((runs_before, runs_after),
                                          (samples_before, samples_after)):  # fmt: skip
            old, new = (_rows_of(t, key) for t in (table_before, table_after))
            pd.testing.assert_frame_equal(old, new, check_dtype=False, obj=f"{key}")
    assert_nothing_left()


def _ok_steps(runs: pd.DataFrame) -> set[tuple]:
    return {tuple(r) for r in runs[runs.status == "ok"][STEP_KEY].itertuples(index=False)}


def _rows_of(table: pd.DataFrame, key: tuple) -> pd.DataFrame:
    mask = (table[STEP_KEY] == pd.Series(key, index=STEP_KEY)).all(axis=1)
    order = [c for c in ("metric", "rep", "sample") if c in table.columns]
    return table[mask].sort_values(order or STEP_KEY).reset_index(drop=True)


def _stopped_at(output: str) -> tuple:
    """The step a stopped campaign's message names."""
    found = re.search(r"The campaign stopped at run (\d+) ([\w-]+) \((\w+), (\w+)\)\.", output)
    assert found, f"the message names no step:\n{output}"
    run, mode, path, variant = found.groups()
    return (int(run), mode, path, variant)


def test_a_node_dockerd_killed(tmp_path, record_property):
    from pipeline.lab import dockerd
    from pipeline.lab.topology import NODES

    node1 = NODES[0]  # the server of every step (servers[0])
    campaign = Campaign(tmp_path)
    campaign.wait_for("a saved step", lambda: campaign.saved_steps() >= 1)
    campaign.wait_for("a labelled container on node1", lambda: bool(dockerd.docker(
        node1, "ps", "-q", "--filter", f"label={LABEL}")))  # fmt: skip
    pid = int(dockerd.pidfile(node1).read_text())
    os.kill(pid, signal.SIGKILL)
    output = campaign.finish()
    assert campaign.proc.returncode != 0, output
    assert "on host node1: command exited" in output and "Is the docker daemon running?" in output
    stopped = _stopped_at(output)
    assert stopped[1] == "docker-bridge", output
    before = _saved(campaign.root)
    assert stopped not in _ok_steps(before[0]), f"{stopped} is saved, yet named as stopped"
    assert set(before[0].status) == {"ok"} and len(before[0]) >= 1
    # What the dead daemon held comes back with it; the next session's clean-up (before it
    # measures) removes it. Nothing is left anywhere else.
    from pipeline import lab

    lab.up()
    left = _everything_left()
    assert set(left) <= {"node1"}, left
    _resume_and_check(tmp_path, record_property, before)


def test_the_dc_client_sshd_killed(tmp_path, record_property):
    from pipeline.lab import processes
    from pipeline.lab import sshd as lab_sshd
    from pipeline.lab.topology import DC_CLIENT

    campaign = Campaign(tmp_path)
    _mid_step(campaign)
    # The listener and the sessions it forked (the campaign's connection among them): the
    # host's sshd gone, as on a crash or a reboot.
    listener = processes.running_pid(lab_sshd.pidfile(DC_CLIENT), "sshd")
    assert listener, "dc-client's sshd is not running"
    sessions = subprocess.run(["ps", "-o", "pid=", "--ppid", str(listener)], capture_output=True,
                              text=True, timeout=10).stdout.split()  # fmt: skip
    for pid in [listener, *map(int, sessions)]:
        os.kill(pid, signal.SIGKILL)
    output = campaign.finish()
    assert campaign.proc.returncode != 0, output
    assert "cannot reach host dc-client (10.77.0.21:22)" in output, output
    stopped = _stopped_at(output)
    before = _saved(campaign.root)
    assert stopped not in _ok_steps(before[0]), f"{stopped} is saved, yet named as stopped"
    assert set(before[0].status) == {"ok"} and len(before[0]) >= 1
    from pipeline import lab

    lab.up()
    assert _everything_left() == {}
    _resume_and_check(tmp_path, record_property, before)


def test_a_partition_between_the_dc_client_and_the_servers(tmp_path, record_property):
    from pipeline.lab.topology import DOCKER_BRIDGES, NODES

    # the nodes and their containers' bridges (docker-bridge's client dials the container)
    servers = ",".join([*(n.address for n in NODES), DOCKER_BRIDGES])
    rule = ["OUTPUT", "-d", servers, "-m", "comment", "--comment", "co-fault-test", "-j", "DROP"]
    iptables = ["ip", "netns", "exec", "dc-client", "iptables"]
    campaign = Campaign(tmp_path)
    _mid_step(campaign)
    time.sleep(0.4)  # into the client's 1 s window, past its connection
    try:
        subprocess.run([*iptables, "-I", *rule], check=True, timeout=30)
        time.sleep(5)
    finally:
        for _ in range(5):  # -D removes one copy per call
            if subprocess.run([*iptables, "-D", *rule], capture_output=True,
                              timeout=30).returncode:  # fmt: skip
                break
    output = campaign.finish()
    # The stalled window is a failed step, measured once more at the end of the session.
    failed = re.search(r"run (\d+)/\d+ ([\w-]+) \((\w+), (\w+)\): failed: iperf3's receiver took "
                       r"[\d.]+ s for the sender's [\d.]+ s window: the path stalled.*"
                       r"\(client dc-client, server node1\)", output)  # fmt: skip
    assert failed, f"no failed step names the stall and its hosts:\n{output}"
    assert "measuring the 1 failed step(s) once more" in output
    assert campaign.proc.returncode == 0, output
    key = (int(failed[1]), failed[2], failed[3], failed[4])
    attempts = schema.read_table(campaign.root / "attempts.parquet", "runs").to_pandas()
    assert len(attempts) == 1 and tuple(attempts[STEP_KEY].iloc[0]) == key, attempts
    assert attempts.client_host.iloc[0] == "dc-client" and attempts.status.iloc[0] == "failed"
    assert _everything_left() == {}
    _resume_and_check(tmp_path, record_property, _saved(campaign.root))


def test_the_raw_data_disk_full(tmp_path, record_property):
    raw = tmp_path / "raw"
    raw.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "co-fault-test", str(raw)],
                   check=True, timeout=30)  # fmt: skip
    try:
        campaign = Campaign(raw)
        _mid_step(campaign)
        filler = raw / "filler"
        with open(filler, "wb") as fh:  # bounded by the file system's 4 MB
            try:
                while True:
                    fh.write(b"\0" * 65536)
                    fh.flush()
            except OSError:
                pass
        output = campaign.finish()
        assert campaign.proc.returncode != 0, output
        assert "on this machine: [Errno 28] No space left on device" in output, output
        stopped = _stopped_at(output)
        before = _saved(campaign.root)
        assert stopped not in _ok_steps(before[0]), f"{stopped} is saved, yet named as stopped"
        assert set(before[0].status) == {"ok"} and len(before[0]) >= 1
        assert _everything_left() == {}
        # no half-written file among what was saved
        leftover_tmp = [p.name for p in campaign.root.rglob(".*tmp*")]
        assert leftover_tmp == [], leftover_tmp
        filler.unlink()  # the repair: space again
        _resume_and_check(raw, record_property, before)
    finally:
        subprocess.run(["umount", str(raw)], check=True, timeout=60)


def test_ctrl_c_twice(tmp_path, record_property):
    campaign = Campaign(tmp_path)
    _mid_step(campaign)
    os.killpg(campaign.proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
    campaign.wait_for("its clean-up", lambda: "cleaning up the hosts" in campaign.output, 60)
    os.killpg(campaign.proc.pid, signal.SIGINT)  # the impatient second Ctrl-C
    output = campaign.finish()
    assert campaign.proc.returncode != 0, output
    found = re.search(r"interrupted at run (\d+) ([\w-]+) \((\w+), (\w+)\): cleaning up the hosts",
                      output)  # fmt: skip
    assert found, output
    assert "cleaning up: the interrupt takes effect when the hosts are clean" in output
    assert "interrupted: cleaned up; what was measured is saved" in output
    stopped = (int(found[1]), found[2], found[3], found[4])
    before = _saved(campaign.root)
    assert stopped not in _ok_steps(before[0]), f"{stopped} is saved, yet named as stopped"
    assert set(before[0].status) == {"ok"} and len(before[0]) >= 1
    assert _everything_left() == {}
    _resume_and_check(tmp_path, record_property, before)


def test_a_cpu_hog_flags_its_window_and_no_other(tmp_path, record_property):
    """A shell loop burning a CPU on node1 (the server) from the moment one step is saved
    until the next is: the interference watch flags that step's window and no other, with the
    thresholds of params.yaml."""
    import yaml

    from pipeline.analysis import interference
    from tests.integration.lab_campaign import ROOT

    campaign = Campaign(tmp_path)
    campaign.wait_for("a saved step", lambda: campaign.saved_steps() >= 1)
    first = {p.name for p in campaign.root.glob("parts/*/run-*.runs.parquet")}
    hog = subprocess.Popen(["ip", "netns", "exec", "node1", "timeout", "60", "sh", "-c",
                            "while :; do :; done"], start_new_session=True)  # fmt: skip
    try:
        campaign.wait_for("the next step saved", lambda: campaign.saved_steps() >= 2)
    finally:
        os.killpg(hog.pid, signal.SIGKILL)
        hog.wait(timeout=30)
    (hogged_part,) = {p for p in campaign.root.glob("parts/*/run-*.runs.parquet")
                      if p.name not in first}  # fmt: skip
    hogged = tuple(schema.read_table(hogged_part, "runs").to_pandas()[STEP_KEY].iloc[0])
    output = campaign.finish()
    assert campaign.proc.returncode == 0, output
    analysis = yaml.safe_load((ROOT / "params.yaml").read_text())["analysis"]
    flags = interference.flag(interference.windows(tmp_path), analysis["interference_cpus"],
                              analysis["interference_steal"], analysis["interference_probe"])
    per = interference.flagged_windows(flags)
    described = "; ".join(f"r{r.run} {r.mode}: other CPUs {r.other_cpus:.2f}"
                          f"{' FLAGGED (' + r.why + ')' if r.flagged else ''}"
                          for r in per.itertuples())  # fmt: skip
    print(described)
    record_property("rows", f"hog beside r{hogged[0]} {hogged[1]}: {described}")
    assert len(per) == STEPS and flags["error"].isna().all(), flags
    flagged = {tuple(k) for k in per.loc[per["flagged"], STEP_KEY].itertuples(index=False)}
    assert flagged == {hogged}, described
    top = flags.loc[flags["flagged"], "top"]
    assert top.str.contains(r"\bsh \d").all(), top
