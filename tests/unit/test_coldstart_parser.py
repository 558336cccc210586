"""The coldstart benchmark without hosts: its timer's verbatim output
(pipeline/collect/host_scripts/coldstart.py,
captured on the lab) parsed into samples, failed and truncated reports refused, the commands
it builds per mode, the campaign step around it, and the collection stage's wiring."""

import json
import re
import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from pipeline.benchmarks import BENCHMARKS, ToolOutputError
from pipeline.benchmarks.coldstart import SCRIPT, Coldstart, parse_coldstart
from pipeline.collect import inventory
from pipeline.collect.campaign import Campaign, Profile, Step, plan
from pipeline.collect.images import ToolImage
from pipeline.collect.modes import MODES, STUDY_MODES, Context
from pipeline.collect.modes.base import LABEL, PID_DIR
from pipeline.collect.remote import RemoteError
from pipeline.collect.session import SessionClock
from tests.unit import fake_watch

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[2]
MODES_ENGINES = {
    "native": None,
    "docker-bridge": "docker",
    "podman": "podman",
    "rootless-docker": "rootless-docker",
    "rootless-podman": "rootless-podman",
    "docker-crun": "docker",  # docker with another OCI runtime (--runtime)
    "docker-gvisor": "docker",
    "k8s-nodeport": None,  # kubectl run (pipeline/benchmarks/coldstart.py, _KubeStarts)
    "k8s-hostnetwork": None,
}


def _data(name: str) -> str:
    return (DATA / name).read_text()


def _printed(raw: str) -> list[tuple[int, int, float]]:
    """(start, warm-up flag, seconds) as printed, read independently of the parser."""
    return [
        (int(i), int(w), int(ns) / 1e9)
        for i, w, ns in re.findall(r"^start (\d+) ([01]) ok (\d+) ", raw, re.MULTILINE)
    ]


# ---- the timer's output ------------------------------------------------------------------


def test_docker_starts_are_the_samples_and_the_first_is_a_flagged_warmup():
    raw = _data("coldstart-docker-bridge-5.txt")
    printed = _printed(raw)
    assert len(printed) == 6 and printed[0][1] == 1 and all(w == 0 for _, w, _ in printed[1:])
    log = parse_coldstart(raw)
    assert [s.value for s in log.warmup] == [printed[0][2]]
    assert [s.value for s in log.samples] == [v for _, _, v in printed[1:]]
    assert [s.sample for s in log.samples] == [0, 1, 2, 3, 4]
    assert {(s.metric, s.unit) for s in log.samples} == {("coldstart_s", "s")}
    # t_ns: each start's launch from the first measured start, increasing
    assert log.samples[0].t_ns == 0 and log.warmup[0].t_ns == 0
    assert all(b.t_ns > a.t_ns for a, b in zip(log.samples, log.samples[1:], strict=False))
    assert log.timed_s == pytest.approx(sum(v for _, _, v in printed))
    # a docker start on this machine: hundreds of ms, never the 1 ms probe resolution
    assert all(0.05 < s.value < 30 for s in log.samples)
    assert log.settings["address"] == "10.77.0.11" and log.settings["port"] == "8080"
    run = json.loads(log.start_cmd)
    assert run[:2] == ["docker", "run"] and "--publish" in run and "@NAME@" in run
    assert f"{LABEL}=1d51ac34b799" in run  # the campaign label on every container
    assert json.loads(log.stop_cmd) == ["docker", "rm", "--force", "@NAME@"]
    # the run command returned before the answer came (probes start after it)
    assert all(0 < c <= s.value for c, s in zip(log.cli_s[1:], log.samples, strict=True))


def test_the_untimed_removals_between_starts_are_the_scenarios_fixed_time():
    """Between one start's answer and the next start's launch the timer removes the container
    and waits for the port to close: untimed, and the tool-fixed part of the duty-cycle split."""
    raw = _data("coldstart-docker-bridge-5.txt")
    found = re.findall(r"^start \d+ [01] ok (\d+) at_ns=(\d+) ", raw, re.MULTILINE)
    ready, at = [int(r) for r, _ in found], [int(a) for _, a in found]
    expected = sum((at[i + 1] - at[i] - ready[i]) / 1e9 for i in range(len(at) - 1))
    log = parse_coldstart(raw)
    assert log.untimed_s == pytest.approx(expected) and 5 * 0.05 < log.untimed_s < 5 * 30
    # one start: nothing after it bounds its removal
    one = re.sub(r"starts=5", "starts=0", raw.split("\nstart 1 ")[0]) + "\nend ok 1\n"
    assert parse_coldstart(one).untimed_s == 0.0


def test_native_starts_have_no_run_command_and_take_milliseconds():
    log = parse_coldstart(_data("coldstart-native-5.txt"))
    assert len(log.samples) == 5 and len(log.warmup) == 1
    assert log.cli_s == [None] * 6
    assert log.stop_cmd == "signal"
    assert all(0.0005 < s.value < 0.05 for s in log.samples)  # fork, exec, listen: ms


@pytest.mark.parametrize("mode", ["podman", "rootless-docker", "rootless-podman"])
def test_every_engine_report_parses_to_five_measured_starts(mode):
    raw = _data(f"coldstart-{mode}-5.txt")
    log = parse_coldstart(raw)
    assert [s.value for s in log.samples] == [v for _, w, v in _printed(raw) if w == 0]
    assert len(log.samples) == 5


def test_a_failed_start_fails_the_step_with_the_engines_reason():
    raw = _data("coldstart-podman-rlimit-failed.txt")
    with pytest.raises(ToolOutputError, match=r"start 0 failed: run command exited 126.*rlimit"):
        parse_coldstart(raw)


def test_a_server_that_never_answers_fails_the_step():
    with pytest.raises(ToolOutputError, match="no answer on 10.77.0.11:8080 within 2 s"):
        parse_coldstart(_data("coldstart-native-timeout-failed.txt"))


def test_a_truncated_report_is_refused():
    raw = _data("coldstart-docker-bridge-5.txt")
    cut = raw[: raw.index("end ok")]  # the timer was killed after its last start
    with pytest.raises(ToolOutputError, match="no `end ok`"):
        parse_coldstart(cut)
    fewer = raw.replace("starts=5", "starts=6")  # a start missing from the report
    with pytest.raises(ToolOutputError, match="expected 1 and 6"):
        parse_coldstart(fewer)
    with pytest.raises(ToolOutputError, match="not a coldstart timer report"):
        parse_coldstart("python3: can't open file\n")
    with pytest.raises(ToolOutputError, match="format 2"):
        parse_coldstart(raw.replace("coldstart 1 ", "coldstart 2 "))


# ---- the benchmark's contract and commands -------------------------------------------------


def test_coldstart_is_a_scenario_benchmark_in_the_engine_modes():
    bench = BENCHMARKS["coldstart"]()
    assert bench.kind == "scenario" and bench.paths == ("host",)
    assert plan(bench, STUDY_MODES) == [(m, "host", "nginx") for m in MODES_ENGINES]
    assert {m: MODES[m].engine for m in bench.modes} == MODES_ENGINES
    assert bench.uploads.get(SCRIPT) == "pipeline/collect/host_scripts/coldstart.py"
    assert SCRIPT not in bench.image_paths()  # the timer runs on the host only
    assert bench.binaries[0] in bench.image_paths()
    with pytest.raises(ValueError, match="no option"):
        bench.configure({"starts": 5, "count": 3})
    bench.configure({"starts": 5})
    assert bench.options == {"starts": 5, "warmup_starts": 2}


class FakeSession:
    """Answers the timer with a captured report and everything else with ``answers``."""

    def __init__(self, report: str, fail: bool = False):
        self.report = report
        self.fail = fail
        self.commands: list = []

    def run(self, command, **kwargs):
        reading = fake_watch.answer(command)  # the interference watch's: not recorded
        if reading is not None:
            return reading
        self.commands.append(command)
        text = command if isinstance(command, str) else " ".join(command)
        if SCRIPT in text:
            if self.fail:
                raise RemoteError("node1", text, None, reason="timed out after 300 s")
            return SimpleNamespace(status=0, stdout=self.report, stderr="")
        if " version " in f" {text} ":
            return SimpleNamespace(status=0, stdout="20.10.24+dfsg1\n", stderr="")
        return SimpleNamespace(status=0, stdout="", stderr="")


def _campaign(tmp_path: Path, mode: str, report: str, fail: bool = False):
    inv = inventory.load(ROOT / "inventory/lab.yaml", MODES, check_files=False)
    profile = Profile(runs=1, seconds=0, omit_seconds=0, warmup_seconds=0)
    bench = Coldstart()
    bench.configure({"starts": 5, "warmup_starts": 1})
    campaign = Campaign(bench, inv, profile, tmp_path, seed=1, modes=[mode], log=lambda _: None)
    campaign.tool_version = "nginx version: nginx/1.22.1"
    campaign.binary_sha = {"node1": {"/usr/sbin/nginx": "a" * 64}}
    campaign._availability[(mode, "host")] = None
    session = FakeSession(report, fail)
    ctx = Context(inventory=inv, pool={"node1": session}, campaign=campaign.id)
    ctx.images[("node1", "docker")] = ToolImage(
        "node1", "tools:x", "sha256:d1", {"/usr/sbin/nginx": "a" * 64}
    )
    return campaign, ctx, session


def _timer_argv(session: FakeSession) -> list[str]:
    text = next(c for c in session.commands if isinstance(c, str) and SCRIPT in c)
    return shlex.split(text)


def _option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_a_docker_step_runs_labelled_named_published_containers_and_cleans_up(tmp_path):
    report = _data("coldstart-docker-bridge-5.txt")
    campaign, ctx, session = _campaign(tmp_path, "docker-bridge", report)
    clock = campaign._clock = SessionClock()
    samples, row = campaign._measure(ctx, Step(1, 0, "docker-bridge", "host", "nginx"))
    assert row["status"] == "ok", row["reason"]
    # the split: the timed starts are kept, the removals between them the scenario's own time
    log = parse_coldstart(report)
    assert (clock.kept_s, clock.fixed_s) == (log.timed_s, log.untimed_s) and clock.fixed_s > 0
    argv = _timer_argv(session)
    prefix = f"co-{campaign.id[:10]}-coldstart-docker-bridge"
    assert _option(argv, "--name-prefix") == prefix
    assert _option(argv, "--address") == "10.77.0.11" and _option(argv, "--port") == "8080"
    assert (_option(argv, "--starts"), _option(argv, "--warmup")) == ("5", "1")
    run = json.loads(_option(argv, "--start"))
    assert run[:6] == ["docker", "run", "--detach", "--name", "@NAME@", "--label"]
    assert run[6] == f"{LABEL}={campaign.id}" and "tools:x" in run
    assert run[run.index("--publish") + 1] == "8080:8080/tcp"
    # the clean-up after the timer: containers of this prefix and campaign label only
    last = session.commands[-1]
    assert f"name={prefix}-" in last and f"label={LABEL}={campaign.id}" in last
    measured = [s for s in samples if not s["warmup"]]
    assert [s["value"] for s in measured] == [v for _, w, v in _printed(report) if w == 0]
    assert sum(s["warmup"] for s in samples) == 1
    assert row["window_s"] == pytest.approx(sum(v for _, _, v in _printed(report)))
    notes = json.loads(row["notes"])
    assert notes["polled"].startswith("10.77.0.11:8080") and notes["engine_version"]
    assert row["command"].startswith("node1$ python3 " + SCRIPT)
    assert (tmp_path / row["raw_log"]).exists()


def test_a_native_step_keeps_pidfiles_where_the_campaigns_cleanup_looks(tmp_path):
    campaign, ctx, session = _campaign(tmp_path, "native", _data("coldstart-native-5.txt"))
    _, row = campaign._measure(ctx, Step(1, 0, "native", "host", "nginx"))
    assert row["status"] == "ok", row["reason"]
    argv = _timer_argv(session)
    assert "--stop" not in argv
    assert json.loads(_option(argv, "--start"))[0] == "/usr/sbin/nginx"
    # cleanup_host kills {PID_DIR}/*/<host>-*.pid
    assert _option(argv, "--pidfile-stem") == f"{PID_DIR}/{campaign.id}/node1-coldstart-native"
    assert row["binary_sha256"] == "a" * 64


def test_a_hung_timer_fails_the_step_and_still_removes_the_containers(tmp_path):
    campaign, ctx, session = _campaign(tmp_path, "docker-bridge", "", fail=True)
    samples, row = campaign._measure(ctx, Step(1, 0, "docker-bridge", "host", "nginx"))
    assert row["status"] == "failed" and "timed out" in row["reason"] and samples == []
    assert "rm -f" in session.commands[-1]


def test_a_failed_start_fails_the_step(tmp_path):
    report = _data("coldstart-podman-rlimit-failed.txt")
    campaign, ctx, _ = _campaign(tmp_path, "docker-bridge", report)
    _, row = campaign._measure(ctx, Step(1, 0, "docker-bridge", "host", "nginx"))
    assert row["status"] == "failed" and "rlimit" in row["reason"]


# ---- wiring ---------------------------------------------------------------------------------


def _profiles() -> dict:
    return {p: yaml.safe_load((ROOT / f"conf/profiles/{p}.yaml").read_text())
            for p in ("smoke", "demo", "study", "publication")}


def test_profiles_size_the_starts():
    profiles = _profiles()
    for name in ("smoke", "demo", "study", "publication"):
        profile = profiles[name]["coldstart"]
        assert profile["starts"] >= 5 and profile["warmup_starts"] >= 1
    assert profiles["publication"]["coldstart"]["starts"] == 200
    assert profiles["study"]["coldstart"]["starts"] == 30
