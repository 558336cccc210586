"""`memory`: sysbench memory bandwidth, one thread, 1 MiB blocks; variants `write` and `read`.

Sequential access over a 1 MiB buffer per thread, with a total size no run reaches
(``--memory-total-size``), so ``--time`` alone ends the run. Samples: ``memory_bandwidth``
(MiB/s), one per one-second report interval (sysbench 1.0 reports the memory test's rate per
interval too), intervals inside the omitted start dropped.
"""

from __future__ import annotations

import re

from pipeline.benchmarks.base import Sample, Window
from pipeline.benchmarks.sysbench import SYSBENCH, SysbenchBenchmark, interval_samples
from pipeline.capabilities import serving

BLOCK_SIZE = "1M"
TOTAL_SIZE = "1024T"  # never reached in a bounded window: --time ends the run
# "[ 1s ] 10364.43 MiB/sec"
_RATE = re.compile(r"^([0-9.]+) MiB/sec")


class Memory(SysbenchBenchmark):
    title = "Memory bandwidth"
    description = "sysbench memory bandwidth (1 MiB blocks, one thread)"
    variant_titles = {"write": "write", "read": "read"}
    metric_titles = {"memory_bandwidth": "MiB/s"}
    analysis = "host"
    tables = ("memory",)
    margin = "memory"
    name = "memory"
    modes = serving(name)
    variants = ("write", "read")
    unfolded = variants  # one run measured 1.6 % more than two: a warm-up run (sysbench.py)
    summary_metric = "memory_bandwidth"

    def client_argv(
        self, variant: str, address: str, window: Window, path: str = "host"
    ) -> list[str]:
        if variant not in self.variants:
            raise ValueError(f"memory variant must be one of {self.variants}, got {variant!r}")
        return [
            SYSBENCH,
            "memory",
            f"--memory-block-size={BLOCK_SIZE}",
            f"--memory-total-size={TOTAL_SIZE}",
            f"--memory-oper={variant}",
            "--threads=1",
            *self.common_options(window),
            "run",
        ]

    def format_value(self, value: float) -> str:
        return f"{value:.0f} MiB/s"

    def parse(self, variant: str, raw: str, window: Window | None = None) -> list[Sample]:
        return interval_samples(raw, _RATE, "memory_bandwidth", "MiB/s", window)
