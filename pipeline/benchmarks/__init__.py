"""Benchmarks by id. A new benchmark is a module here and one line in BENCHMARKS."""

from pipeline.benchmarks.base import (
    Benchmark,
    Outcome,
    Sample,
    Scenario,
    ToolOutputError,
    Window,
)
from pipeline.benchmarks.coldstart import Coldstart
from pipeline.benchmarks.cpu import Cpu
from pipeline.benchmarks.disk import Disk
from pipeline.benchmarks.footprint import Density, Footprint
from pipeline.benchmarks.http import Http
from pipeline.benchmarks.latency import Latency
from pipeline.benchmarks.lb import Lb
from pipeline.benchmarks.memory import Memory
from pipeline.benchmarks.orchestration import Orchestration
from pipeline.benchmarks.syscall import Syscall
from pipeline.benchmarks.throughput import Throughput

BENCHMARKS: dict[str, type[Benchmark]] = {
    "throughput": Throughput,
    "http": Http,
    "latency": Latency,
    "cpu": Cpu,
    "memory": Memory,
    "disk": Disk,
    "syscall": Syscall,
    "coldstart": Coldstart,
    "orchestration": Orchestration,
    "footprint": Footprint,
    "density": Density,
    "lb": Lb,
}

__all__ = [
    "BENCHMARKS",
    "Benchmark",
    "Outcome",
    "Sample",
    "Scenario",
    "ToolOutputError",
    "Window",
]
