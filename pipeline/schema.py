"""The tidy data model shared by collection and analysis.

One dataset per benchmark under ``data/raw/<benchmark>/<environment>/`` with three tables:

- ``samples``: one row per measured value (per-interval throughput, per-ping RTT, ...).
- ``runs``: one row per (run, mode): status ok|failed|skipped, reason, the exact command,
  tool version, image digest and binary sha256, the raw log kept beside the parquet.
- ``hosts``: facts per host and run (kernel, CPU, versions, storage driver, MTU, ...).

Collection writes small part files per (run, mode) and consolidates them into
``samples.parquet``, ``runs.parquet`` and ``hosts.parquet``; analysis reads only those.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa

SAMPLES = pa.schema(
    [
        ("environment", pa.string()),
        ("campaign", pa.string()),
        ("benchmark", pa.string()),
        ("metric", pa.string()),
        ("unit", pa.string()),
        ("mode", pa.string()),
        ("path", pa.string()),  # dc | internet | local
        ("variant", pa.string()),  # the benchmark's variant (tcp, udp, ...)
        ("run", pa.int32()),  # the block: every mode is measured once per run, in random order
        ("rep", pa.int32()),  # 0 is the warm-up, measured windows are 1..reps
        ("sample", pa.int32()),  # index inside the window (interval, ping, request)
        ("value", pa.float64()),
        ("warmup", pa.bool_()),
        ("t_ns", pa.int64()),  # offset of the sample from the window start, when the tool gives it
    ]
)

RUNS = pa.schema(
    [
        ("environment", pa.string()),
        ("campaign", pa.string()),
        ("benchmark", pa.string()),
        ("run", pa.int32()),
        ("order", pa.int32()),  # position of the mode in this run's random permutation
        ("mode", pa.string()),
        ("path", pa.string()),
        ("variant", pa.string()),
        ("status", pa.string()),  # ok | failed | skipped
        ("reason", pa.string()),
        ("server_host", pa.string()),
        ("client_host", pa.string()),
        ("started_at", pa.timestamp("ns", tz="UTC")),
        ("ended_at", pa.timestamp("ns", tz="UTC")),
        ("tool", pa.string()),
        ("tool_version", pa.string()),
        ("command", pa.string()),
        ("image", pa.string()),
        ("image_digest", pa.string()),
        ("binary_sha256", pa.string()),
        ("raw_log", pa.string()),  # path relative to the dataset directory
        ("notes", pa.string()),  # JSON: what the mode observed (e.g. the network backend seen)
    ]
)

HOSTS = pa.schema(
    [
        ("environment", pa.string()),
        ("campaign", pa.string()),
        ("run", pa.int32()),
        ("host", pa.string()),
        ("role", pa.string()),
        ("hostname", pa.string()),
        ("kernel", pa.string()),
        ("cpu_model", pa.string()),
        ("cpu_count", pa.int32()),
        ("governor", pa.string()),
        ("mem_total_bytes", pa.int64()),
        ("docker_version", pa.string()),
        ("containerd_version", pa.string()),
        ("runc_version", pa.string()),
        ("storage_driver", pa.string()),
        ("cgroup_version", pa.string()),
        ("mtu", pa.int32()),
        ("iptables_backend", pa.string()),
        ("userland_proxy", pa.string()),
        ("ipvs", pa.string()),
        ("netem", pa.string()),
    ]
)

TABLES = {"samples": SAMPLES, "runs": RUNS, "hosts": HOSTS}
STATUSES = ("ok", "failed", "skipped")
PATHS = ("dc", "internet", "local")


def to_table(records: list[dict] | pd.DataFrame, schema: pa.Schema) -> pa.Table:
    """Records to an arrow table with exactly ``schema``: missing columns become nulls."""
    frame = records if isinstance(records, pd.DataFrame) else pd.DataFrame.from_records(records)
    for field in schema:
        if field.name not in frame.columns:
            frame[field.name] = None
    return pa.Table.from_pandas(frame[schema.names], schema=schema, preserve_index=False)


def write_table(table: pa.Table, path: Path) -> None:
    """Write parquet atomically: a reader sees the old file or the new one, never half of one."""
    import os

    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    pq.write_table(table, tmp, compression="zstd")
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_dataset(raw_dir: Path | str, benchmark: str, table: str) -> pd.DataFrame:
    """One table of a benchmark across every environment collected under ``raw_dir``."""
    import pyarrow.parquet as pq

    base = Path(raw_dir) / benchmark
    files = sorted(base.glob(f"*/{table}.parquet"))
    if not files:
        raise FileNotFoundError(
            f"no {table}.parquet under {base}/<environment>/: run the collection stage first "
            f"(dvc repro collect-{benchmark})"
        )
    return pa.concat_tables([pq.read_table(f, schema=TABLES[table]) for f in files]).to_pandas()
