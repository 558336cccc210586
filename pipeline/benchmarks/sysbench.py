"""What the sysbench host benchmarks (`cpu`, `memory`) share: the command's time bound, the
modes they run in, and the per-second interval lines of sysbench 1.0's report.

sysbench runs to completion inside the mode on the server host and reports its own rate, so
the container's start-up never enters the metric. With ``--report-interval=1`` sysbench prints
one line per second of the run (``[ 3s ] ...``), each the rate over that second: those are the
samples, and the intervals inside the window's omitted start are dropped.

The report of the run's last second races the end of the run and is often missing (sysbench
1.0.20 here: ``--time=1`` printed no interval at all, ``memory --time=3`` two of three), so a
run lasts one tail second longer than its window and that second's report is never used: every
window yields exactly its own seconds' reports, and a missing one is an error.

For cpu's single-thread test the warm-up is the run's first seconds (``folded``): one sysbench
run per step, its first ``warmup_seconds`` reports flagged as the warm-up, then the omitted
start and the window, instead of a warm-up run and then the window's run (a tool start and a
tail second fewer; the same rates: harness/sysbench_fold.py, docs/validation.md). The memory
test in one run measured 1.6 % more than in two, so it keeps two runs, as do the variants not
measured that way.
"""

from __future__ import annotations

import math
import re

from pipeline.benchmarks.base import Benchmark, Sample, ToolOutputError, Window

SYSBENCH = "/usr/bin/sysbench"
# "[ 7s ] ..." at the start of an interval line; the rest is the test's own report
_INTERVAL = re.compile(r"^\[ *(\d+)s \] (.*)$", re.MULTILINE)


def window_seconds(window: Window) -> int:
    """The window and its omitted start in whole seconds (sysbench's --time takes integers)."""
    return max(1, math.ceil(window.seconds + window.omit_seconds))


def run_seconds(window: Window) -> int:
    """--time: the window plus the tail second whose report may be lost (module docstring)."""
    return window_seconds(window) + 1


class SysbenchBenchmark(Benchmark):
    """A sysbench test run to completion on the server host (no client host, no port)."""

    tool = "sysbench"
    kind = "host"
    binaries = (SYSBENCH,)
    paths = ("host",)
    # The "docker" is a plain `docker run`, which puts the container on the default
    # bridge; the network mode does not matter to a CPU or memory test.

    def version_argv(self) -> list[str]:
        return [SYSBENCH, "--version"]

    def common_options(self, window: Window) -> list[str]:
        return [f"--time={run_seconds(window)}", "--report-interval=1"]

    def load_seconds(self, window: Window, path: str = "dc") -> float:
        return float(run_seconds(window))

    # Variants that keep a warm-up run of their own: those whose warm-up is not the test's
    # first seconds (cpu's compile lists its packages), and those for which one run has not
    # been shown to measure what two runs do (harness/sysbench_fold.py, docs/validation.md).
    unfolded: tuple[str, ...] = ()

    def folded(self, variant: str, warmup: Window, measured: Window) -> Window | None:
        if variant in self.unfolded:
            return None
        return folded_window(warmup, measured)

    def split_folded(
        self, variant: str, raw: str, warmup: Window, folded: Window
    ) -> tuple[list[Sample], list[Sample]]:
        warm = self.parse(variant, raw, Window(warmup.seconds, 0.0, warmup=True))
        return warm, self.parse(variant, raw, folded)


def check_ran(raw: str) -> None:
    """Raise ToolOutputError unless sysbench started its worker threads and finished."""
    if "Threads started!" not in raw or "General statistics:" not in raw:
        tail = raw.strip()[-400:] or "(no output)"
        raise ToolOutputError(f"sysbench did not complete a run: {tail}")


def interval_samples(
    raw: str, value: re.Pattern[str], metric: str, unit: str, window: Window | None
) -> list[Sample]:
    """One sample per report interval of the window: ``value``'s first group in the line's
    report. Intervals that start inside the omitted seconds or end after the window (the tail
    second) are dropped; ``sample`` counts the kept intervals and ``t_ns`` is each one's start
    relative to the first kept one. Without a window every printed interval is kept."""
    check_ran(raw)
    omit = window.omit_seconds if window is not None else 0.0
    last = window_seconds(window) if window is not None else None
    kept = []
    for end, report in _INTERVAL.findall(raw):
        match = value.search(report)
        if match is None:
            raise ToolOutputError(f"unexpected sysbench interval line: [ {end}s ] {report}")
        start = int(end) - 1  # --report-interval=1: the line closes the second before it
        if start >= omit and (last is None or int(end) <= last):
            kept.append((start, float(match.group(1))))
    if last is not None and len(kept) != last - math.ceil(omit):
        raise ToolOutputError(
            f"sysbench printed {len(kept)} of the window's {last - math.ceil(omit)} interval "
            f"reports (seconds {math.ceil(omit) + 1}..{last} of the run)"
        )
    if not kept:
        raise ToolOutputError("sysbench printed no interval report")
    first = kept[0][0]
    return [
        Sample(metric=metric, unit=unit, sample=i, value=v, t_ns=(start - first) * 10**9)
        for i, (start, v) in enumerate(kept)
    ]


def folded_window(warmup: Window, measured: Window) -> Window | None:
    """One run: the warm-up's whole seconds, then the window (its omitted start first), then
    the tail second. Its warm-up seconds' reports are the warm-up's samples; the window's are
    those ``interval_samples`` keeps after them. A warm-up of a fraction of a second keeps its
    own run (sysbench's --time takes whole seconds)."""
    if warmup.seconds <= 0 or warmup.seconds % 1:
        return None
    return Window(measured.seconds, warmup.seconds + measured.omit_seconds, measured.count)
