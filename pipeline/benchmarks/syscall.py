"""`syscall`: the cost of entering the kernel and of switching between processes, inside each
mode, with Linux's own `perf bench` (Debian 12's linux-perf); variants `syscall-basic` and
`sched-pipe`.

sysbench's cpu and memory loops never leave user space, so they cannot see what a container
may add on the way into the kernel: the seccomp filter every system call of a Docker or Podman
container passes through, and the cgroup and namespace bookkeeping of a scheduler switch.
`syscall-basic` (``perf bench syscall basic``: getppid(2) in a loop, the cheapest call there
is) prices the first, in ns per call; `sched-pipe` (``perf bench sched pipe``: two processes
passing a token through a pair of pipes, perf's default of processes rather than threads, so
each switch changes address space as a service's processes do) prices the second, in us per
round trip. Both figures are perf's own clock over a fixed number of operations divided by
that number; the container's start and perf's own start stay outside it.

Everything runs on one CPU (``taskset --cpu-list``, the same binary in the image): left to the
scheduler, sched-pipe's two processes sometimes share a CPU (a round trip is two context
switches, ~4.4 us on the 2-core lab) and sometimes not (a cross-CPU wake-up each way, 7 to
34 us there), and which one a run gets would decide the comparison. The CPU is the last one
the server host's sessions may use (read once per campaign in ``prepare``), so it is the same
in every mode and inside every container's cpuset while host benchmarks share all CPUs.

One window is one command without a shell, so the samples come from perf itself:
``perf stat --null --repeat N -- perf bench ...`` runs the benchmark N times and each run
prints its own result. ``--null`` opens no counters: perf_event_open is outside Docker's
default seccomp profile, and without it perf stat fails in a container ("No permission to
enable task-clock event"). Each run does the same fixed number of operations in every mode
(``LOOPS``: about one second on the 2-core lab, natively), so a window of ``seconds`` takes one
sample per second of it plus one per second of its omitted start, which are dropped; a host
where the operations are cheaper has shorter samples, not fewer. The exception is a mode whose
probe (``probe_argv``, run by docker-gvisor) shows a run of LOOPS would take more than
``SLOW_RUN_SECONDS``: gVisor serves getppid() in ~14 us on the lab's ptrace platform, so a run
would take ~110 s. There a run does as many operations as take about a second (``calibrate``),
and the run's notes say so; a sample is per operation either way. The time actually spent is
read back from perf's results (``measured_seconds``). The binary is the one linux-perf
installs as ``/usr/bin/perf`` (a real binary there, not the kernel-version wrapper of older
Debian packaging; ``prepare`` checks it runs). In a container its start-up probe of NUMA
policies (get_mempolicy) is refused by the seccomp profile and it carries on without: nothing
either benchmark uses.
"""

from __future__ import annotations

import math
import re

from pipeline.benchmarks.base import Benchmark, Sample, ToolOutputError, Window
from pipeline.capabilities import serving

PERF = "/usr/bin/perf"
TASKSET = "/usr/bin/taskset"  # util-linux
SAMPLE_SECONDS = 1.0  # what one run of LOOPS operations takes on the lab, natively
# Operations per run: 8e6 getppid() at ~123 ns, 2e5 pipe round trips at ~4.5 us on the lab.
LOOPS = {"syscall-basic": 8_000_000, "sched-pipe": 200_000}
PROBE_LOOPS = 10_000  # a probe's operations (probe_argv): whether it runs, at what cost
# A mode where a run of LOOPS would take longer than this (gVisor: ~110 s for syscall-basic)
# runs as many operations as take SAMPLE_SECONDS there, by its probe (calibrate).
SLOW_RUN_SECONDS = 4.0
# perf bench's collection and benchmark, and the metric a variant's samples carry
BENCHES = {"syscall-basic": ("syscall", "basic"), "sched-pipe": ("sched", "pipe")}
METRICS = {"syscall-basic": ("syscall_ns", "ns"), "sched-pipe": ("pipe_roundtrip_us", "us")}
# A run may take this many times its nominal length (a loaded host, the instrument check's CPU
# quota) before the window counts as hung.
TIMEOUT_FACTOR = 4

# One run's result in perf bench's default format:
#   # Running 'syscall/basic' benchmark:
#   # Executed 8000000 getppid() calls
#        Total time: 0.985 [sec]
#
#          0.123125 usecs/op
#           8121827 ops/sec
_RUNNING = re.compile(r"^# Running '([a-z]+/[a-z]+)' benchmark:$", re.MULTILINE)
_EXECUTED = re.compile(r"^# Executed ([0-9][0-9,.' ]*) ", re.MULTILINE)
_PER_OP = re.compile(r"^ *([0-9]+\.[0-9]+) usecs/op$", re.MULTILINE)
_ALLOWED = re.compile(r"^Cpus_allowed_list:\s*([0-9][0-9,-]*)\s*$", re.MULTILINE)


def sample_counts(window: Window) -> tuple[int, int]:
    """(runs dropped as the omitted start, runs kept): one per started second of each."""
    omitted = math.ceil(window.omit_seconds / SAMPLE_SECONDS - 1e-9)
    kept = max(1, math.ceil(window.seconds / SAMPLE_SECONDS - 1e-9))
    return omitted, kept


class Syscall(Benchmark):
    name = "syscall"
    tool = "perf"
    kind = "host"
    binaries = (PERF, TASKSET)
    paths = ("host",)
    # The same modes as the sysbench host benchmarks: the network mode does not matter here.
    modes = serving(name)
    variants = ("syscall-basic", "sched-pipe")
    # sched-pipe's samples carry their own metric (pipe_roundtrip_us): the progress line falls
    # back to it.
    summary_metric = "syscall_ns"
    title = "System calls and context switches"
    description = "System calls and context switches: perf bench, pinned to one CPU"
    analysis = "host"
    tables = ("syscall",)
    margin = "cpu"
    metric_titles = {"syscall_ns": "ns per call", "pipe_roundtrip_us": "us per round trip"}
    variant_titles = {
        "syscall-basic": "getppid() system call",
        "sched-pipe": "pipe round trip between two processes",
    }
    higher_is_better = False

    def __init__(self) -> None:
        self.cpu: int | None = None  # the CPU every run is pinned to, set by prepare()
        self.loops = dict(LOOPS)  # operations per run in the current step (calibrate)

    def prepare(self, session) -> None:
        found = session.run(self.version_argv(), check=False, timeout=30)
        if found.status != 0 or not found.stdout.startswith("perf version "):
            said = (found.stdout + found.stderr).strip()[-300:] or "(no output)"
            raise ToolOutputError(
                f"{PERF} does not run on {session.host.name} (apt-get install linux-perf): {said}"
            )
        status = session.run(["grep", "^Cpus_allowed_list:", "/proc/self/status"], timeout=30)
        allowed = _ALLOWED.search(status.stdout)
        if allowed is None:
            raise ToolOutputError(
                f"no Cpus_allowed_list in /proc/self/status on {session.host.name}: "
                f"{status.stdout.strip()[-200:]}"
            )
        self.cpu = max(cpu_list(allowed.group(1)))

    def version_argv(self) -> list[str]:
        return [PERF, "--version"]

    def probe_argv(self, variant: str) -> list[str]:
        """One short run of the variant's benchmark, pinned and under perf stat as measured."""
        if self.cpu is None:
            return self.version_argv()
        return [TASKSET, "--cpu-list", str(self.cpu), PERF, "stat", "--null", "--repeat=1",
                "--", PERF, "bench", *BENCHES[variant], f"--loop={PROBE_LOOPS}"]  # fmt: skip

    def client_argv(
        self, variant: str, address: str, window: Window, path: str = "host"
    ) -> list[str]:
        if variant not in self.variants:
            raise ValueError(f"syscall variant must be one of {self.variants}, got {variant!r}")
        if self.cpu is None:
            raise RuntimeError("syscall pins its runs to a CPU of the server: call prepare()")
        omitted, kept = sample_counts(window)
        return [
            TASKSET, "--cpu-list", str(self.cpu),
            PERF, "stat", "--null", f"--repeat={omitted + kept}", "--",
            PERF, "bench", *BENCHES[variant], f"--loop={self.loops[variant]}",
        ]  # fmt: skip

    def calibrate(self, variant: str, probe_output: str) -> dict[str, str]:
        """LOOPS operations per run, unless the mode's probe says a run of them would take
        longer than SLOW_RUN_SECONDS there: then as many as take about SAMPLE_SECONDS (two
        significant digits), so a window still takes a sample a second. Samples are per
        operation either way; the notes say when a step ran fewer."""
        self.loops[variant] = LOOPS[variant]
        try:
            usecs = results(probe_output, BENCHES[variant])[0][0] if probe_output else 0.0
        except ToolOutputError:
            return {}
        seconds = usecs * LOOPS[variant] / 1e6
        if seconds <= SLOW_RUN_SECONDS:
            return {}
        wanted = SAMPLE_SECONDS * 1e6 / usecs
        loops = max(PROBE_LOOPS, int(float(f"{wanted:.2g}")))
        self.loops[variant] = loops
        return {"loops": f"{loops} per run, not {LOOPS[variant]}: the probe's {usecs:g} us "
                         f"per operation would make a run of {LOOPS[variant]} take "
                         f"{seconds:.0f} s"}  # fmt: skip

    def load_seconds(self, window: Window, path: str = "dc") -> float:
        return sum(sample_counts(window)) * SAMPLE_SECONDS

    def client_timeout(
        self, window: Window, path: str = "host", variant: str | None = None
    ) -> float:
        return 60 + TIMEOUT_FACTOR * self.load_seconds(window, path)

    def measured_seconds(self, variant: str, raw: str, window: Window, path: str) -> float:
        """The runs' own times, the omitted ones included (perf's start between them not)."""
        try:
            runs = results(raw, BENCHES[variant])
        except ToolOutputError:
            return 0.0  # parse() reports it
        return sum(seconds for _, seconds in runs)

    def format_value(self, value: float) -> str:
        return f"{value:.4g}"

    def parse(self, variant: str, raw: str, window: Window | None = None) -> list[Sample]:
        """One sample per run of perf bench: ns per call (syscall-basic) or us per round trip
        (sched-pipe). With a window, the runs of its omitted start are dropped and the rest
        must be exactly its runs; ``t_ns`` is each kept run's start after the first kept one,
        from the runs' own times."""
        if variant not in self.variants:
            raise ValueError(f"syscall variant must be one of {self.variants}, got {variant!r}")
        runs = results(raw, BENCHES[variant])
        if window is not None:
            omitted, kept = sample_counts(window)
            if len(runs) != omitted + kept:
                raise ToolOutputError(
                    f"perf printed {len(runs)} of the window's {omitted + kept} results "
                    f"({omitted} omitted + {kept} measured)"
                )
            runs = runs[omitted:]
        metric, unit = METRICS[variant]
        scale = 1000.0 if unit == "ns" else 1.0  # perf prints microseconds per operation
        samples, start_ns = [], 0
        for i, (usecs_per_op, seconds) in enumerate(runs):
            value = round(usecs_per_op * scale, 6)
            samples.append(Sample(metric=metric, unit=unit, sample=i, value=value, t_ns=start_ns))
            start_ns += round(seconds * 1e9)
        return samples


def cpu_list(text: str) -> list[int]:
    """A kernel CPU list ("0-2,4") as its CPU numbers."""
    cpus = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


def results(raw: str, bench: tuple[str, str]) -> list[tuple[float, float]]:
    """(microseconds per operation, seconds) of every complete run of ``bench`` in perf's
    output, in order. Anything else perf may interleave (perf stat's summary, if stderr was
    merged) is ignored; a run that started and printed no result is an error."""
    expected = "/".join(bench)
    starts = list(_RUNNING.finditer(raw))
    if not starts:
        tail = raw.strip()[-400:] or "(no output)"
        raise ToolOutputError(f"perf bench {' '.join(bench)} printed no result: {tail}")
    found = []
    for n, start in enumerate(starts):
        if start.group(1) != expected:
            raise ToolOutputError(f"perf ran the {start.group(1)} benchmark, not {expected}")
        end = starts[n + 1].start() if n + 1 < len(starts) else len(raw)
        block = raw[start.start() : end]
        executed, per_op = _EXECUTED.search(block), _PER_OP.search(block)
        if executed is None or per_op is None:
            text = block.strip()[-300:]
            raise ToolOutputError(
                f"perf bench {' '.join(bench)} run {n + 1} of {len(starts)} printed no "
                f"usecs/op result (it failed or was cut short): {text}"
            )
        operations = int(re.sub(r"[^0-9]", "", executed.group(1)))
        usecs = float(per_op.group(1))
        found.append((usecs, usecs * operations / 1e6))
    return found
