"""A synthetic raw latency dataset in the project's own schema, written as collection writes it.

Shape: ``modes x paths x runs`` measured windows (one UDP round-trip window each, rep 1) plus a
warm-up window (rep 0, ``warmup`` true, 1 % of the count as in the publication profile),
consolidated into ``<root>/latency/<environment>/{samples,runs,hosts}.parquet`` in the order the
campaign's part files sort in, through ``pipeline.data.schema``'s stored layout and writer
options.

The distributions copy what the lab's sockperf logs show (integer-nanosecond timestamps):

- dc, serial ping-pong: RTT lognormal around 55 us (sd of log 0.25) times a per-mode factor
  and a per-run factor; the next message leaves 20 ns plus an exponential(30 ns) turnaround
  after the reply, so ``t_ns`` advances by RTT + turnaround;
- internet, paced at 1000 messages/s: RTT 38.5 ms + gamma(4, 1 ms) (median ~42 ms, sd 2 ms)
  plus the mode's shift; sends every 1 ms with 100 ns of jitter.

Generation streams whole windows into a ``ParquetWriter`` in 1 Mi-row groups, so memory stays
at a few windows whatever the size.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.data import schema

MODES = (
    "native", "docker-host", "docker-bridge", "docker-nat", "swarm-overlay", "macvlan",
    "rootless-docker", "rootless-podman", "podman", "docker-proxy",
)  # fmt: skip
# Relative RTT of each mode on the dc path and its added ms on the internet path.
FACTORS = (1.0, 1.01, 1.08, 1.12, 1.35, 1.03, 1.6, 1.7, 1.09, 1.5)
MODE_FACTOR = dict(zip(MODES, FACTORS, strict=True))
PATHS = ("dc", "internet")
ENVIRONMENT = "bench"
CAMPAIGN = "synthetic"
ROW_GROUP = 1 << 20  # pyarrow's default row group when collection writes one table


@dataclass(frozen=True)
class Shape:
    modes: int = 10
    paths: int = 2
    runs: int = 10
    per_window: int = 5_000  # measured samples per window

    @property
    def n_measured(self) -> int:
        return self.modes * self.paths * self.runs * self.per_window

    @classmethod
    def for_samples(cls, n: int, modes: int = 10, paths: int = 2, runs: int = 10) -> Shape:
        return cls(modes, paths, runs, max(1, n // (modes * paths * runs)))


def _window(rng: np.random.Generator, mode: str, path: str, run_factor: float, n: int):
    """(RTT ns, send offset ns) of one window of ``n`` round trips."""
    if path == "dc":
        median = 55_000 * MODE_FACTOR[mode] * run_factor
        rtt = np.rint(median * rng.lognormal(0.0, 0.25, n)).astype(np.int64)
        turnaround = 20 + np.rint(rng.exponential(30.0, n)).astype(np.int64)
        t = np.r_[0, np.cumsum(rtt[:-1] + turnaround[1:])]
    else:
        shift = (MODE_FACTOR[mode] - 1.0) * 200_000  # a few hundred us over a 42 ms path
        base = 38_500_000 * run_factor + shift
        rtt = np.rint(base + rng.gamma(4.0, 1_000_000.0, n)).astype(np.int64)
        t = np.arange(n, dtype=np.int64) * 1_000_000 + np.rint(rng.normal(0, 100, n)).astype(
            np.int64
        )
        t -= t[0]
    return rtt, t


def _samples(mode: str, path: str, run: int, rep: int, rtt, t) -> pa.Table:
    n = rtt.size

    def same(text: str) -> pa.Array:
        return pa.repeat(pa.scalar(text), n)

    return pa.table(
        {
            "environment": same(ENVIRONMENT),
            "campaign": same(CAMPAIGN),
            "benchmark": same("latency"),
            "metric": same("udp_rtt"),
            "unit": same("us"),
            "mode": same(mode),
            "path": same(path),
            "variant": same("udp"),
            "run": np.full(n, run, np.int32),
            "rep": np.full(n, rep, np.int32),
            "sample": np.arange(n, dtype=np.int32),
            "value": rtt / 1000.0,  # exactly what the sockperf parser computes
            "warmup": np.full(n, rep == 0),
            "t_ns": t,
        },
        schema=schema.SAMPLES,
    )


def windows(shape: Shape, seed: int = 1):
    """Yield the logical SAMPLES tables of every window, in the consolidated file's order."""
    rng = np.random.default_rng(seed)
    modes = MODES[: shape.modes]
    warm = max(1, shape.per_window // 100)
    for run in range(1, shape.runs + 1):
        run_factor = float(np.exp(rng.normal(0.0, 0.03)))
        # Part files sort by run, then mode, path and variant in their names.
        for mode in sorted(modes):
            for path in PATHS[: shape.paths]:
                for rep, n in ((0, warm), (1, shape.per_window)):
                    rtt, t = _window(rng, mode, path, run_factor, n)
                    yield _samples(mode, path, run, rep, rtt, t)


def write_samples(path: Path, tables, layout: str = "stored") -> int:
    """Stream ``tables`` into one parquet file in 1 Mi-row groups; returns the rows written.

    ``layout="stored"``: ``schema.to_storage`` per window and ``schema.parquet_options``, as
    ``schema.write_table`` writes the consolidated file; ``"plain"``: the SAMPLES columns with
    zstd only, as the writer did before the stored layout."""
    path.parent.mkdir(parents=True, exist_ok=True)
    out_schema = schema.SAMPLES_STORED if layout == "stored" else schema.SAMPLES
    options = schema.parquet_options(out_schema) if layout == "stored" else {"compression": "zstd"}
    rows, pending, n_pending = 0, [], 0
    with pq.ParquetWriter(path, out_schema, **options) as writer:
        for table in tables:
            # Windows are encoded whole: a window's first row is where its steps restart.
            pending.append(schema.to_storage(table) if layout == "stored" else table)
            n_pending += table.num_rows
            while n_pending >= ROW_GROUP:
                merged = pa.concat_tables(pending).combine_chunks()
                writer.write_table(merged.slice(0, ROW_GROUP), row_group_size=ROW_GROUP)
                pending, n_pending = [merged.slice(ROW_GROUP)], n_pending - ROW_GROUP
                rows += ROW_GROUP
        if n_pending:
            writer.write_table(pa.concat_tables(pending), row_group_size=ROW_GROUP)
            rows += n_pending
    return rows


def runs_table(shape: Shape) -> pa.Table:
    start = pd.Timestamp("2026-11-21T00:00:00Z")
    rows = []
    for run in range(1, shape.runs + 1):
        for order, mode in enumerate(sorted(MODES[: shape.modes])):
            for path in PATHS[: shape.paths]:
                rows.append(
                    {
                        "environment": ENVIRONMENT, "campaign": CAMPAIGN, "benchmark": "latency",
                        "run": run, "order": order, "mode": mode, "path": path, "variant": "udp",
                        "status": "ok", "reason": "", "server_host": "node1",
                        "client_host": "dc-client" if path == "dc" else "inet-client",
                        "started_at": start, "ended_at": start, "tool": "sockperf",
                        "tool_version": "sockperf, version 3.7", "command": "sockperf ...",
                    }
                )  # fmt: skip
    return schema.to_table(rows, schema.RUNS)


def hosts_table(shape: Shape) -> pa.Table:
    rows = [
        {"environment": ENVIRONMENT, "campaign": CAMPAIGN, "run": run, "host": host,
         "role": role, "hostname": host, "kernel": "6.1.0", "cpu_count": 2, "mtu": 1500}
        for run in range(1, shape.runs + 1)
        for host, role in (("node1", "server"), ("dc-client", "client"))
    ]  # fmt: skip
    return schema.to_table(rows, schema.HOSTS)


def write_dataset(root: Path, shape: Shape, seed: int = 1) -> Path:
    """The consolidated dataset under ``root/latency/<environment>/``; returns that directory."""
    out = Path(root) / "latency" / ENVIRONMENT
    write_samples(out / "samples.parquet", windows(shape, seed))
    schema.write_table(runs_table(shape), out / "runs.parquet")
    schema.write_table(hosts_table(shape), out / "hosts.parquet")
    return out
