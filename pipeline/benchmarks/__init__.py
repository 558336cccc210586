"""Benchmarks by id. A new benchmark is a module here and one line in BENCHMARKS."""

from pipeline.benchmarks.base import (
    Benchmark,
    Outcome,
    Sample,
    Scenario,
    ToolOutputError,
    Window,
)
from pipeline.benchmarks.cpu import Cpu
from pipeline.benchmarks.http import Http
from pipeline.benchmarks.latency import Latency
from pipeline.benchmarks.memory import Memory
from pipeline.benchmarks.throughput import Throughput

BENCHMARKS: dict[str, type[Benchmark]] = {
    "throughput": Throughput,
    "http": Http,
    "latency": Latency,
    "cpu": Cpu,
    "memory": Memory,
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
