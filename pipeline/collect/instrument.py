"""The instrument check's collection: controls with known answers measured beside native in
randomised campaigns of their own (``pipeline.analysis.instrument`` decides them)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pipeline.collect import campaign

AA = "native-aa"
# benchmark -> the modes its check campaign measures (native and its A/A twin first). cpu also
# measures the small injected overhead, docker-cpuquota, beside the container it is compared
# with, docker-bridge (pipeline/collect/modes/controls.py says why that baseline).
CHECKS: dict[str, tuple[str, ...]] = {
    "throughput": ("native", AA, "native-tbf"),
    "latency": ("native", AA),
    "cpu": ("native", AA, "native-cpuquota", "docker-bridge", "docker-cpuquota"),
    "memory": ("native", AA),
    "disk": ("native", AA),
}
HOST_BENCHMARKS = ("cpu", "memory", "disk")
NETWORK_PATHS = ("dc",)  # the network checks run on the datacenter path only


def parse_benchmarks(text: str) -> list[str]:
    """``"throughput,cpu"`` -> the checks to run, in ``CHECKS`` order; unknown names are an
    error that names the known ones."""
    wanted = [b.strip() for b in text.split(",") if b.strip()]
    unknown = [b for b in wanted if b not in CHECKS]
    if unknown or not wanted:
        known = list(CHECKS)
        raise ValueError(f"instrument check benchmarks {unknown or wanted}: pick from {known}")
    return [b for b in CHECKS if b in wanted]


def collect(
    inventory_file: str | Path,
    raw_dir: str | Path,
    profiles: dict[str, campaign.Profile],
    seed: int,
    wan: dict | None = None,
    options: dict[str, dict] | None = None,
    log: Callable[[str], None] = print,
    provider: campaign.Provider | None = None,
    variants: dict[str, tuple[str, ...]] | None = None,
) -> dict[str, dict[str, int]]:
    """One campaign per benchmark in ``profiles`` (its window settings), with the modes of
    ``CHECKS``, into ``<raw_dir>/<benchmark>/<environment>/``; ``options`` per benchmark;
    ``variants`` per benchmark keeps only those of its variants (None: all)."""
    counts = {}
    for benchmark, profile in profiles.items():
        log(f"instrument check: {benchmark} in {', '.join(CHECKS[benchmark])}")
        paths = None if benchmark in HOST_BENCHMARKS else NETWORK_PATHS
        counts[benchmark] = campaign.collect(
            benchmark, inventory_file, raw_dir, profile, seed, list(CHECKS[benchmark]), wan,
            log, paths=paths, options=(options or {}).get(benchmark), provider=provider,
            variants=(variants or {}).get(benchmark),
        )  # fmt: skip
    return counts
