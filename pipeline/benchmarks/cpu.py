"""`cpu`: sysbench cpu (primes up to 20000), variants `1thread` and `allthreads`.

`allthreads` runs one thread per CPU of the server host (``nproc`` there, read once per
campaign in ``prepare``), the same count in every mode, and the count is in the recorded
command. Samples: ``cpu_events_per_s`` (events/s), one per one-second report interval (the
rate over that second), intervals inside the omitted start dropped. The 000 article's
sysbench cpu runs used the same prime limit.
"""

from __future__ import annotations

import re

from pipeline.benchmarks.base import Sample, Window
from pipeline.benchmarks.sysbench import SYSBENCH, SysbenchBenchmark, interval_samples

MAX_PRIME = 20000
# "thds: 2 eps: 1035.52 lat (ms,95%): 2.11": eps is events per second over the interval
_EPS = re.compile(r"\beps: ([0-9.]+)")


class Cpu(SysbenchBenchmark):
    name = "cpu"
    variants = ("1thread", "allthreads")
    summary_metric = "cpu_events_per_s"

    def __init__(self) -> None:
        self.host_cpus: int | None = None  # the server host's CPU count, set by prepare()

    def prepare(self, session) -> None:
        self.host_cpus = int(session.run(["nproc"], timeout=30).stdout.strip())

    def threads(self, variant: str) -> int:
        if variant == "1thread":
            return 1
        if variant == "allthreads":
            if self.host_cpus is None:
                raise RuntimeError("cpu allthreads needs the host's CPU count: call prepare()")
            return self.host_cpus
        raise ValueError(f"cpu variant must be one of {self.variants}, got {variant!r}")

    def client_argv(
        self, variant: str, address: str, window: Window, path: str = "host"
    ) -> list[str]:
        return [
            SYSBENCH,
            "cpu",
            f"--cpu-max-prime={MAX_PRIME}",
            f"--threads={self.threads(variant)}",
            *self.common_options(window),
            "run",
        ]

    def format_value(self, value: float) -> str:
        return f"{value:.1f} events/s"

    def parse(self, variant: str, raw: str, window: Window | None = None) -> list[Sample]:
        return interval_samples(raw, _EPS, "cpu_events_per_s", "events/s", window)
