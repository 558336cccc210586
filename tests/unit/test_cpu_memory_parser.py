"""The sysbench host benchmarks (cpu, memory) without hosts: parsers on verbatim captured
sysbench 1.0.20 output, their commands, how the campaign plans and runs them, and the per-run
summary + ratio code on their samples."""

import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml

from pipeline.analysis import stats
from pipeline.benchmarks import BENCHMARKS, ToolOutputError, Window
from pipeline.benchmarks.cpu import Cpu
from pipeline.benchmarks.memory import Memory
from pipeline.benchmarks.sysbench import folded_window
from pipeline.collect import inventory
from pipeline.collect.campaign import Campaign, Profile, Step, plan
from pipeline.collect.images import ToolImage
from pipeline.collect.modes import MODES, STUDY_MODES, Context
from tests.unit import fake_watch

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[2]
HOST_MODES = ("native", "docker-bridge", "podman", "rootless-docker", "rootless-podman",
              "docker-crun", "docker-gvisor", "k8s-pod")


def _data(name: str) -> str:
    return (DATA / name).read_text()


def _interval_values(raw: str, pattern: str) -> list[float]:
    """The per-second values as printed, read independently of the parser under test."""
    return [float(v) for v in re.findall(pattern, raw)]


# ---- parsers on captured output ----------------------------------------------------------


def test_cpu_window_intervals_are_the_samples_and_the_tail_second_is_dropped():
    raw = _data("sysbench-cpu-1thread-3s.txt")  # --time=3: a 2 s window and its tail second
    printed = _interval_values(raw, r"eps: ([0-9.]+)")
    assert printed == [1593.38, 1612.68, 1636.08]
    samples = Cpu().parse("1thread", raw, Window(2, 0))
    assert [s.value for s in samples] == [1593.38, 1612.68]
    assert [s.sample for s in samples] == [0, 1]
    assert [s.t_ns for s in samples] == [0, 1_000_000_000]
    assert {(s.metric, s.unit) for s in samples} == {("cpu_events_per_s", "events/s")}
    assert [s.value for s in Cpu().parse("1thread", raw)] == printed  # no window: all of them


def test_cpu_omitted_seconds_are_dropped_and_time_starts_after_them():
    raw = _data("sysbench-cpu-1thread-3s.txt")
    samples = Cpu().parse("1thread", raw, Window(2, 1))  # seconds 2 and 3 of the run
    assert [s.value for s in samples] == [1612.68, 1636.08]
    assert [s.t_ns for s in samples] == [0, 1_000_000_000]


def test_a_missing_report_inside_the_window_is_an_error():
    # --time=1: sysbench ended before its only report (the race the tail second avoids)
    raw = _data("sysbench-cpu-1thread-1s.txt")
    with pytest.raises(ToolOutputError, match="printed 0 of the window's 1 interval"):
        Cpu().parse("1thread", raw, Window(1, 0))
    one = Cpu().parse("1thread", _data("sysbench-cpu-1thread-2s.txt"), Window(1, 0))
    assert [s.value for s in one] == [1608.44]  # a 1 s warm-up run with --time=2
    with pytest.raises(ToolOutputError, match="printed 2 of the window's 3"):
        Memory().parse("write", _data("sysbench-memory-write-3s.txt"), Window(3, 0))


def test_cpu_all_threads_output_parses_the_same_way():
    raw = _data("sysbench-cpu-2threads-3s.txt")
    samples = Cpu().parse("allthreads", raw, Window(2, 0))
    assert "Number of threads: 2" in raw
    assert [s.value for s in samples] == [1847.73, 1744.45]


@pytest.mark.parametrize(
    ("name", "variant", "expected"),
    [
        # the last second's report lost: two of three printed, both inside the 2 s window
        ("sysbench-memory-write-3s.txt", "write", [31294.86, 29965.31]),
        ("sysbench-memory-read-3s.txt", "read", [50540.46, 50910.62]),
    ],
)
def test_memory_intervals_are_the_samples(name, variant, expected):
    raw = _data(name)
    samples = Memory().parse(variant, raw, Window(2, 0))
    assert [s.value for s in samples] == expected
    assert {(s.metric, s.unit) for s in samples} == {("memory_bandwidth", "MiB/s")}
    assert f"operation: {variant}" in raw  # the capture is what it says


def test_sysbench_failure_is_a_tool_error():
    raw = _data("sysbench-unknown-option.txt")  # its stdout; "invalid option" went to stderr
    with pytest.raises(ToolOutputError, match="did not complete a run"):
        Cpu().parse("1thread", raw, Window(2, 0))
    with pytest.raises(ToolOutputError, match=r"\(no output\)"):
        Memory().parse("write", "", Window(2, 0))


def test_an_unexpected_interval_line_is_a_tool_error():
    raw = _data("sysbench-cpu-1thread-3s.txt")
    # a memory report read as a cpu one: the interval lines lack "eps:"
    with pytest.raises(ToolOutputError, match="unexpected sysbench interval line"):
        Memory().parse("write", raw, Window(2, 0))


# ---- commands -----------------------------------------------------------------------------


def test_cpu_command_carries_threads_and_a_whole_second_time_bound():
    cpu = Cpu()
    with pytest.raises(RuntimeError, match="call prepare"):
        cpu.client_argv("allthreads", "", Window(2, 0))
    cpu.prepare(_host_with_go())
    # --time: 3.5 s of window and omitted start rounded up to 4, and the tail second
    assert cpu.client_argv("allthreads", "", Window(2.5, 1)) == [
        "/usr/bin/sysbench", "cpu", "--cpu-max-prime=20000", "--threads=8",
        "--time=5", "--report-interval=1", "run",
    ]  # fmt: skip
    assert "--threads=1" in cpu.client_argv("1thread", "", Window(2, 0))
    assert cpu.load_seconds(Window(2.5, 1)) == 5.0
    with pytest.raises(ValueError, match="variant"):
        cpu.client_argv("4threads", "", Window(2, 0))


def _host_with_go(cpus: int = 8, go: str | None = "/usr/lib/go-1.19/bin/go") -> SimpleNamespace:
    """A session answering `nproc` and `readlink -e /usr/bin/go` as a Debian host does."""

    def run(argv, **kw):
        if argv[0] == "nproc":
            return SimpleNamespace(stdout=f"{cpus}\n", status=0)
        return SimpleNamespace(stdout=f"{go}\n" if go else "", status=0 if go else 1)

    return SimpleNamespace(run=run, host=SimpleNamespace(name="node1"))


def test_compile_builds_the_hosts_go_tree_with_an_empty_cache():
    cpu = Cpu()
    with pytest.raises(RuntimeError, match="call prepare"):
        cpu.client_argv("compile", "", Window(2, 0))
    cpu.prepare(_host_with_go())
    assert cpu.main_binary("compile") == "/usr/lib/go-1.19/bin/go"
    assert cpu.main_binary("1thread") == "/usr/bin/sysbench"
    # the image holds the toolchain and the source tree it compiles, at the host's paths
    assert "/usr/lib/go-1.19/src" in cpu.image_paths()
    assert "/usr/lib/go-1.19/pkg/tool" in cpu.image_paths()
    argv = cpu.client_argv("compile", "", Window(2, 0))
    assert argv[:2] == ["/bin/sh", "-c"]
    script = argv[2]
    assert "/usr/lib/go-1.19/bin/go build -a -p 8 std cmd;" in script
    assert 'GOCACHE="$c/cache"' in script and "CGO_ENABLED=0" in script
    assert "mktemp -d" in script and "rm -rf" in script  # a fresh cache, removed afterwards
    warm = cpu.client_argv("compile", "", Window(1, 0, warmup=True))[2]
    assert "list -deps std cmd" in warm and " build " not in warm
    cpu.configure({"compile_packages": "fmt"})
    assert "build -a -p 8 fmt;" in cpu.client_argv("compile", "", Window(2, 0))[2]


def test_compile_without_go_on_the_host_says_how_to_fix_it():
    with pytest.raises(ToolOutputError, match="golang-go"):
        Cpu().prepare(_host_with_go(go=None))


def test_compile_sample_is_the_build_time_measured_inside_the_mode():
    raw = _data("cpu-compile-fmt.txt")  # verbatim: `go build -a fmt` natively on the lab
    cpu = Cpu()
    [sample] = cpu.parse("compile", raw, Window(2, 0))
    assert (sample.metric, sample.unit, sample.value) == ("compile_s", "s", 6.169396376)
    assert cpu.measured_seconds("compile", raw, Window(2, 0), "host") == 6.169396376
    # the warm-up lists packages to /dev/null: no sample, no time inside the window
    assert cpu.parse("compile", "", Window(1, 0, warmup=True)) == []
    assert cpu.measured_seconds("compile", "", Window(1, 0, warmup=True), "host") == 0.0
    with pytest.raises(ToolOutputError, match="did not finish"):
        cpu.parse("compile", "", Window(2, 0))
    with pytest.raises(ToolOutputError, match="go list failed"):
        cpu.parse("compile", "can't load package: foo", Window(1, 0, warmup=True))


def test_unknown_benchmark_options_are_refused():
    with pytest.raises(ValueError, match="compile_packages"):
        Cpu().configure({"compile_pkgs": "fmt"})


def test_memory_command_is_bounded_by_time_not_size():
    argv = Memory().client_argv("read", "", Window(5, 1))
    assert argv == [
        "/usr/bin/sysbench", "memory", "--memory-block-size=1M", "--memory-total-size=1024T",
        "--memory-oper=read", "--threads=1", "--time=7", "--report-interval=1", "run",
    ]  # fmt: skip


# ---- planning and the campaign loop -------------------------------------------------------


@pytest.mark.parametrize("name", ["cpu", "memory"])
def test_host_benchmarks_plan_only_their_modes_on_the_host_path(name):
    bench = BENCHMARKS[name]()
    triples = plan(bench, STUDY_MODES)
    assert triples == [(m, "host", v) for m in HOST_MODES for v in bench.variants]
    assert plan(bench, ["native", "macvlan", "podman"]) == [
        (m, "host", v) for m in ("native", "podman") for v in bench.variants
    ]
    assert plan(bench, STUDY_MODES, paths=("dc",)) == []


class CapturedSession:
    """Answers each command with the next captured output (then nothing); records them."""

    def __init__(self, outputs: list[str]):
        self.outputs = list(outputs)
        self.commands: list[str] = []

    def run(self, command, **kwargs):
        reading = fake_watch.answer(command)  # the interference watch's: not recorded
        if reading is not None:
            return reading
        self.commands.append(command)
        out = self.outputs.pop(0) if self.outputs else ""
        return SimpleNamespace(status=0, stdout=out, stderr="")


def _campaign(
    tmp_path: Path, mode: str, warmup_seconds: float = 0.5, outputs: tuple[str, ...] = (
        "sysbench-cpu-1thread-2s.txt", "sysbench-cpu-1thread-3s.txt")
) -> tuple[Campaign, Context, CapturedSession]:  # fmt: skip
    """A cpu campaign whose commands get the captured ``outputs`` in turn; a warm-up of a
    fraction of a second is a run of its own (two runs per step), a whole second's shares the
    window's run."""
    inv = inventory.load(ROOT / "inventory/lab.yaml", MODES, check_files=False)
    profile = Profile(runs=1, seconds=2, omit_seconds=0, warmup_seconds=warmup_seconds)
    campaign = Campaign(Cpu(), inv, profile, tmp_path, seed=1, modes=[mode], log=lambda _: None)
    campaign.tool_version = "sysbench 1.0.20"
    campaign.binary_sha = {"node1": {"/usr/bin/sysbench": "a" * 64}}
    session = CapturedSession([_data(name) for name in outputs])
    ctx = Context(inventory=inv, pool={"node1": session}, campaign=campaign.id)
    image = ToolImage("node1", "tools:x", "sha256:d1", {"/usr/bin/sysbench": "a" * 64})
    ctx.images[("node1", "docker")] = image
    return campaign, ctx, session


@pytest.mark.parametrize("mode", ["native", "docker-bridge"])
def test_a_host_benchmark_runs_in_the_foreground_on_the_server(tmp_path, mode):
    campaign, ctx, session = _campaign(tmp_path, mode)
    step = Step(1, 0, mode, "host", "1thread")
    samples, row = campaign._measure(ctx, step)
    assert row["status"] == "ok", row["reason"]
    assert row["server_host"] == row["client_host"] == "node1"
    assert row["window_s"] == 5.0  # (1 s warm-up + 1) + (2 s window + 1): the tail seconds
    assert row["binary_sha256"] == "a" * 64
    assert (row.get("image_digest") == "sha256:d1") == (mode == "docker-bridge")
    assert "--time=2 " in session.commands[0] and "--time=3 " in session.commands[1]
    assert row["command"] == f"node1$ {session.commands[1]}"
    if mode == "docker-bridge":  # stop(): remove a container a crash left under the name
        assert session.commands[2:] == [session.commands[1].split("; ")[0]]
    else:
        assert len(session.commands) == 2  # native: nothing to stop
    warm = [s["value"] for s in samples if s["warmup"]]
    measured = [s["value"] for s in samples if not s["warmup"]]
    assert warm == [1608.44] and measured == [1593.38, 1612.68]
    assert {s["path"] for s in samples} == {"host"}
    assert (tmp_path / row["raw_log"]).exists()
    # the measured window (not the warm-up) was watched on its one host: the fake's readings
    # are a second apart with no other process
    (watched,) = json.loads(row["watch"])
    assert (watched["rep"], watched["host"], watched["other_cpus"]) == (1, "node1", 0)
    assert watched["seconds"] == 1.0 and "error" not in watched


@pytest.mark.parametrize("mode", ["native", "docker-bridge"])
def test_a_whole_second_warm_up_is_the_first_second_of_the_windows_run(tmp_path, mode):
    """Warm-up 1 s, window 2 s: one sysbench run of 1 + 2 s and the tail second (--time=4),
    whose first report is the flagged warm-up and the next two the window (the tail's report,
    often lost, is never read: the 3 s capture stands for it)."""
    campaign, ctx, session = _campaign(tmp_path, mode, 1.0, ("sysbench-cpu-1thread-3s.txt",))
    samples, row = campaign._measure(ctx, Step(1, 0, mode, "host", "1thread"))
    assert row["status"] == "ok", row["reason"]
    assert row["window_s"] == 4.0  # one run: 1 s warm-up + 2 s window + the tail second
    assert "--time=4 " in session.commands[0] and row["command"] == f"node1$ {session.commands[0]}"
    assert len(session.commands) == (2 if mode == "docker-bridge" else 1)  # + the stop
    warm = [(s["rep"], s["sample"], s["value"]) for s in samples if s["warmup"]]
    measured = [(s["rep"], s["sample"], s["value"], s["t_ns"]) for s in samples if not s["warmup"]]
    assert warm == [(0, 0, 1593.38)]
    assert measured == [(1, 0, 1612.68, 0), (1, 1, 1636.08, 1_000_000_000)]
    (watched,) = json.loads(row["watch"])  # the one run, watched
    assert watched["rep"] == 1


def test_folding_takes_whole_warm_up_seconds_and_only_the_variants_shown_equivalent():
    cpu, memory = Cpu(), Memory()
    warm, measured = Window(1, 0, warmup=True), Window(5, 1)
    assert cpu.folded("1thread", warm, measured) == Window(5, 2)  # warm-up, omitted, window
    assert folded_window(Window(2, 0, warmup=True), measured) == Window(5, 3)
    # compile's warm-up lists the packages; allthreads and memory keep two runs
    assert cpu.folded("compile", warm, measured) is None
    assert cpu.folded("allthreads", warm, measured) is None
    assert memory.folded("write", warm, measured) is None
    assert cpu.folded("1thread", Window(0.5, 0, warmup=True), measured) is None
    assert cpu.folded("1thread", Window(0, 0, warmup=True), measured) is None
    raw = _data("sysbench-memory-read-3s.txt")  # the split itself, on any sysbench output
    printed = _interval_values(raw, r"([0-9.]+) MiB/sec")
    warm_samples, window = memory.split_folded("read", raw, warm, Window(1, 1))
    assert [s.value for s in warm_samples] == printed[:1]
    assert [s.value for s in window] == printed[1:2] and window[0].t_ns == 0
    with pytest.raises(ToolOutputError):  # a window longer than the run printed: an error
        memory.split_folded("read", raw, warm, Window(3, 1))


# ---- the analysis code on cpu samples -----------------------------------------------------


def test_per_run_medians_and_ratio_to_native_work_on_cpu_samples():
    rows = []
    # events/s per second of each window: docker-bridge is exactly 2 % slower in every run
    for run, base in enumerate([1000.0, 1010.0, 990.0, 1005.0, 995.0], start=1):
        for mode, factor in (("native", 1.0), ("docker-bridge", 0.98)):
            for variant, threads in (("1thread", 1), ("allthreads", 2)):
                for sample, wiggle in enumerate([-3.0, 0.0, 3.0]):  # median = the middle one
                    rows.append({"environment": "lab", "mode": mode, "path": "host",
                                 "variant": variant, "run": run, "sample": sample,
                                 "metric": "cpu_events_per_s",
                                 "value": (base + wiggle) * factor * threads,
                                 "warmup": False})  # fmt: skip
                rows.append({**rows[-1], "value": 1.0, "warmup": True})  # never analysed
    samples = pd.DataFrame(rows)
    keys = ("environment", "mode", "path", "variant", "run")
    per_run = stats.per_run_summary(samples, "cpu_events_per_s", keys=keys)
    assert len(per_run) == 5 * 2 * 2
    one = per_run[per_run["variant"] == "1thread"]
    native = one.loc[one["mode"] == "native"].sort_values("run")["value"].to_numpy()
    assert native == pytest.approx([1000.0, 1010.0, 990.0, 1005.0, 995.0])
    ratio = stats.ratio_ci(one, "docker-bridge", "native")
    assert ratio.ratio == pytest.approx(0.98) and ratio.n_runs == 5
    assert ratio.lo == pytest.approx(0.98) and ratio.hi == pytest.approx(0.98)
    both = per_run[per_run["variant"] == "allthreads"]
    assert np.median(both.loc[both["mode"] == "native", "value"]) == pytest.approx(2000.0)


# ---- wiring -------------------------------------------------------------------------------


def _parameters(notebook: Path) -> set[str]:
    cells = json.loads(notebook.read_text())["cells"]
    cell = next(c for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
    return {line.split("=")[0].strip() for line in "".join(cell["source"]).splitlines()}


def _profiles() -> dict:
    return {p: yaml.safe_load((ROOT / f"conf/profiles/{p}.yaml").read_text())
            for p in ("smoke", "demo", "study", "publication")}


@pytest.mark.parametrize("name", ["cpu", "memory"])
def test_profiles_give_a_window_per_host_benchmark(name):
    for profile in _profiles().values():
        section = profile[name]
        extra = {"compile_packages"} if name == "cpu" else set()
        planned = set(section) & {"modes", "paths"}  # a profile may plan fewer (the demo)
        assert set(section) - planned == {"seconds", "omit_seconds", "warmup_seconds", *extra}
        assert section["seconds"] > section["omit_seconds"] >= 0
