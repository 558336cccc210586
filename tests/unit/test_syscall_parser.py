"""The syscall benchmark (perf bench syscall basic / sched pipe under perf stat --null) without
hosts: its parser on verbatim linux-perf 6.1.187 output captured natively and in a Docker
container (tests/unit/data/syscall/README.md), its commands and time bounds."""

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from pipeline.benchmarks.base import ToolOutputError, Window
from pipeline.benchmarks.memory import Memory
from pipeline.benchmarks.syscall import Syscall

DATA = Path(__file__).parent / "data" / "syscall"
ROOT = Path(__file__).resolve().parents[2]


def _data(name: str) -> str:
    return (DATA / name).read_text()


# ---- parser on captured output (values read off the files) --------------------------------


def test_native_syscall_runs_are_ns_per_call_and_the_omitted_run_is_dropped():
    raw = _data("perf-syscall-basic-native-3runs.txt")  # usecs/op 0.122256, 0.126775, 0.127309
    samples = Syscall().parse("syscall-basic", raw, Window(2, 1))
    assert [s.value for s in samples] == [126.775, 127.309]
    assert [s.sample for s in samples] == [0, 1]
    assert {(s.metric, s.unit) for s in samples} == {("syscall_ns", "ns")}
    # the second kept run starts after the first's own time: 8e6 calls x 0.126775 us
    assert [s.t_ns for s in samples] == [0, 1_014_200_000]
    every = Syscall().parse("syscall-basic", raw)  # no window: every run
    assert [s.value for s in every] == [122.256, 126.775, 127.309]


def test_container_syscall_runs_parse_the_same_way():
    raw = _data("perf-syscall-basic-docker-3runs.txt")  # usecs/op 0.155513, 0.155476, 0.156420
    samples = Syscall().parse("syscall-basic", raw, Window(3, 0))
    assert [s.value for s in samples] == [155.513, 155.476, 156.42]
    assert [s.t_ns for s in samples][0] == 0


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("perf-sched-pipe-native-3runs.txt", [4.34745, 4.29345, 4.42893]),
        ("perf-sched-pipe-docker-3runs.txt", [4.986445, 4.97235, 5.23297]),
    ],
)
def test_sched_pipe_runs_are_us_per_round_trip(name, expected):
    raw = _data(name)
    samples = Syscall().parse("sched-pipe", raw, Window(3, 0))
    assert [s.value for s in samples] == expected
    assert {(s.metric, s.unit) for s in samples} == {("pipe_roundtrip_us", "us")}
    assert "between two processes" in raw  # the capture is perf's default (not -T threads)
    dropped = Syscall().parse("sched-pipe", raw, Window(2, 1))
    assert [s.value for s in dropped] == expected[1:]


def test_perf_stats_own_summary_is_ignored_if_stderr_is_merged():
    raw = _data("perf-sched-pipe-docker-3runs.txt")
    merged = raw + _data("perf-sched-pipe-docker-3runs.stderr")
    assert "Performance counter stats" in merged
    parse = Syscall().parse
    assert parse("sched-pipe", merged, Window(3, 0)) == parse("sched-pipe", raw, Window(3, 0))


def test_measured_seconds_are_the_runs_own_times():
    raw = _data("perf-syscall-basic-native-3runs.txt")  # Total time: 0.978, 1.014, 1.018 s
    seconds = Syscall().measured_seconds("syscall-basic", raw, Window(2, 1), "host")
    assert seconds == pytest.approx(8 * (0.122256 + 0.126775 + 0.127309))
    assert seconds == pytest.approx(0.978 + 1.014 + 1.018, abs=0.003)
    failed = _data("perf-bad-loop-failed.txt")
    assert Syscall().measured_seconds("syscall-basic", failed, Window(2, 0), "host") == 0.0


# ---- failed and garbled output ------------------------------------------------------------


def test_a_run_that_printed_no_result_is_a_tool_error():
    raw = _data("perf-bad-loop-failed.txt")  # --loop=x: perf bench refused it, twice
    with pytest.raises(ToolOutputError, match=r"run 1 of 2 printed no usecs/op result"):
        Syscall().parse("syscall-basic", raw, Window(2, 0))


def test_a_run_cut_short_is_a_tool_error():
    raw = _data("perf-sched-pipe-native-killed.txt")  # killed during its third run
    with pytest.raises(ToolOutputError, match=r"run 3 of 3 printed no usecs/op result"):
        Syscall().parse("sched-pipe", raw, Window(2, 1))


def test_counters_refused_in_a_container_is_a_tool_error_that_says_why():
    # perf stat without --null in Docker: stdout empty, the reason on stderr
    assert _data("perf-stat-counters-docker-failed.txt") == ""
    with pytest.raises(ToolOutputError, match=r"printed no result: \(no output\)"):
        Syscall().parse("syscall-basic", "", Window(2, 0))
    merged = _data("perf-stat-counters-docker-failed.stderr")
    with pytest.raises(ToolOutputError, match="No permission to enable task-clock event"):
        Syscall().parse("syscall-basic", merged, Window(2, 0))


def test_a_window_with_missing_or_extra_runs_is_a_tool_error():
    raw = _data("perf-syscall-basic-native-3runs.txt")
    with pytest.raises(ToolOutputError, match=r"printed 3 of the window's 4 results"):
        Syscall().parse("syscall-basic", raw, Window(3, 1))
    with pytest.raises(ToolOutputError, match=r"printed 3 of the window's 2 results"):
        Syscall().parse("syscall-basic", raw, Window(2, 0))


def test_another_benchmarks_output_is_a_tool_error():
    raw = _data("perf-syscall-basic-native-3runs.txt")
    with pytest.raises(ToolOutputError, match="ran the syscall/basic benchmark, not sched/pipe"):
        Syscall().parse("sched-pipe", raw, Window(2, 1))
    garbled = raw.replace("0.126775 usecs/op", "0.126775 usec/op")
    assert garbled != raw
    with pytest.raises(ToolOutputError, match="run 2 of 3 printed no usecs/op result"):
        Syscall().parse("syscall-basic", garbled, Window(2, 1))


# ---- commands, time bounds, declarations --------------------------------------------------


def _session(
    version: str = "perf version 6.1.187\n",
    status: int = 0,
    stderr: str = "",
    allowed: str = "Cpus_allowed_list:\t0-1\n",
) -> SimpleNamespace:
    """A server session answering `perf --version` and the affinity grep as the lab's does."""

    def run(argv, **kw):
        if argv == ["/usr/bin/perf", "--version"]:
            return SimpleNamespace(stdout=version, stderr=stderr, status=status)
        assert argv == ["grep", "^Cpus_allowed_list:", "/proc/self/status"]
        return SimpleNamespace(stdout=allowed, stderr="", status=0)

    return SimpleNamespace(run=run, host=SimpleNamespace(name="node1"))


def _prepared(**kw) -> Syscall:
    bench = Syscall()
    bench.prepare(_session(**kw))
    return bench


def test_commands_are_one_pinned_perf_stat_repeating_perf_bench_per_window():
    with pytest.raises(RuntimeError, match="call prepare"):
        Syscall().client_argv("syscall-basic", "", Window(2, 1))
    bench = _prepared()  # CPUs 0-1: every run on CPU 1
    assert bench.client_argv("syscall-basic", "", Window(2, 1)) == [
        "/usr/bin/taskset", "--cpu-list", "1",
        "/usr/bin/perf", "stat", "--null", "--repeat=3", "--",
        "/usr/bin/perf", "bench", "syscall", "basic", "--loop=8000000",
    ]  # fmt: skip
    assert bench.client_argv("sched-pipe", "", Window(5, 1)) == [
        "/usr/bin/taskset", "--cpu-list", "1",
        "/usr/bin/perf", "stat", "--null", "--repeat=6", "--",
        "/usr/bin/perf", "bench", "sched", "pipe", "--loop=200000",
    ]  # fmt: skip
    # the warm-up window: one run; a fractional second is a run of its own
    assert "--repeat=1" in bench.client_argv("sched-pipe", "", Window(1, 0, warmup=True))
    assert "--repeat=3" in bench.client_argv("syscall-basic", "", Window(2.5, 0))
    with pytest.raises(ValueError, match="variant"):
        bench.client_argv("sched-messaging", "", Window(2, 0))
    with pytest.raises(ValueError, match="variant"):
        bench.parse("sched-messaging", "", Window(2, 0))


def test_the_cpu_is_the_last_one_the_servers_sessions_may_use():
    assert _prepared(allowed="Cpus_allowed_list:\t0-3,6\n").cpu == 6
    assert _prepared(allowed="Cpus_allowed_list:\t2\n").cpu == 2
    with pytest.raises(ToolOutputError, match="no Cpus_allowed_list"):
        _prepared(allowed="")


def test_a_cpu_outside_the_containers_cpuset_is_a_tool_error_that_says_why():
    # taskset refused the CPU (a container limited to CPU 0): stdout empty, the reason on stderr
    assert _data("perf-taskset-outside-cpuset-docker-failed.txt") == ""
    merged = _data("perf-taskset-outside-cpuset-docker-failed.stderr")
    with pytest.raises(ToolOutputError, match="failed to set pid 1's affinity"):
        Syscall().parse("sched-pipe", merged, Window(2, 1))


def test_every_run_is_bounded_in_time():
    bench = Syscall()
    assert bench.load_seconds(Window(2, 1)) == 3.0
    assert bench.load_seconds(Window(30, 2)) == 32.0
    assert bench.client_timeout(Window(2, 1), "host", "syscall-basic") == 72.0
    assert bench.client_timeout(Window(30, 2), "host", "sched-pipe") == 188.0


def test_declarations_for_the_campaign_and_the_analysis():
    bench = Syscall()
    assert (bench.name, bench.tool, bench.kind) == ("syscall", "perf", "host")
    assert bench.paths == ("host",)
    assert bench.modes == Memory().modes
    # perf is what is measured (its sha256 in the runs table); taskset only pins it
    assert bench.binaries == ("/usr/bin/perf", "/usr/bin/taskset")
    assert bench.main_binary("sched-pipe") == "/usr/bin/perf"
    assert bench.image_paths() == ["/usr/bin/perf", "/usr/bin/taskset"]
    assert bench.version_argv() == ["/usr/bin/perf", "--version"]
    assert bench.variants == ("syscall-basic", "sched-pipe")
    assert set(bench.variant_titles) == set(bench.variants)
    assert bench.higher_is_better is False and bench.analysis == "host"
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert bench.margin in params["common"]["margins"]
    assert bench.format_value(126.775) == "126.8" and bench.format_value(4.34745) == "4.347"


def test_prepare_fails_early_when_perf_does_not_run():
    with pytest.raises(ToolOutputError, match="apt-get install linux-perf"):
        _prepared(version="", status=127, stderr="sh: 1: /usr/bin/perf: not found")
    # something else answering at that path (not perf): its words are in the error
    with pytest.raises(ToolOutputError, match="is not installed"):
        _prepared(version="", status=1, stderr="E: linux-perf-6.18 is not installed.")
