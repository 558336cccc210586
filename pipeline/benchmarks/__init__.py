"""Benchmarks by id. A new benchmark is a module here and one line in BENCHMARKS."""

from pipeline.benchmarks.base import Benchmark, Sample, ToolOutputError, Window
from pipeline.benchmarks.throughput import Throughput

BENCHMARKS: dict[str, type[Benchmark]] = {
    "throughput": Throughput,
}

__all__ = ["BENCHMARKS", "Benchmark", "Sample", "ToolOutputError", "Window"]
