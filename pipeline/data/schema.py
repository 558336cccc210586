"""The tidy data model shared by collection and analysis.

One dataset per benchmark under ``data/raw/<benchmark>/<environment>/`` with three tables:

- ``samples``: one row per measured value (per-interval throughput, per-ping RTT, ...).
- ``runs``: one row per (run, mode): status ok|failed|skipped, reason, the exact command,
  tool version, image digest and binary sha256, the raw log kept beside the parquet.
- ``hosts``: facts per host and run (kernel, CPU, versions, storage driver, MTU, ...).

A measured window the interference watch flagged stays in ``samples`` and its step is measured
again; the readers here leave it out where its step has a clean window (``window_flags``).

Collection writes small part files per (run, mode), consolidates them into
``samples.parquet``, ``runs.parquet`` and ``hosts.parquet`` and deletes them; analysis reads
only those. The tools' own output is kept under ``logs/`` (``pipeline.data.rawlog``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
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
        ("path", pa.string()),  # dc | internet | local | host
        ("variant", pa.string()),  # the benchmark's variant (tcp, udp, ...)
        ("run", pa.int32()),  # the block: every mode is measured once per run, in random order
        # 0 is the warm-up, measured windows are 1..reps; a step measured again (the
        # interference watch flagged a window) goes on numbering: its warm-up, its windows
        ("rep", pa.int32()),
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
        ("window_s", pa.float64()),  # seconds inside load windows, warm-up included (duty cycle)
        # JSON: the interference watch per measured window and host, every attempt of the step
        # (``attempt``), with collection's decision (``why``: "" for a clean window)
        ("watch", pa.string()),
        # the step's headline: the median of its measured samples of the benchmark's summary
        # metric (the progress line's value, and the per-run value precision planning reads)
        ("headline", pa.float64()),
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
        ("virtualization", pa.string()),  # "vm: kvm; container: none" (systemd-detect-virt)
    ]
)

# attempts: the runs rows of steps that failed and were measured again (the record keeps them)
TABLES = {"samples": SAMPLES, "runs": RUNS, "hosts": HOSTS, "attempts": RUNS}
STATUSES = ("ok", "failed", "skipped")
PATHS = ("dc", "internet", "local", "host")  # host: a tool run on the server host itself


# --- the stored layout of the consolidated samples file ---------------------------------------
#
# Per-sample latency is most of the data (1e6 round trips per window in the full profile), and
# stored as written (float64 microseconds, int64 send offsets) it costs ~9 bytes per sample with
# zstd: the float of ``ns / 1000`` has 52 noisy mantissa bits, and ``t_ns`` grows by a whole
# round trip per sample. sockperf's timestamps are integer nanoseconds, so the same information
# fits exactly in small integers:
#
# - ``value_milli``: a value in thousandths of its unit (microseconds -> integer nanoseconds),
#   for rows with unit "us" whose value survives ``round(v * 1000) / 1000`` bit for bit;
#   every other value (throughput, rates, NaN) is in ``value_float``.
# - ``t_step_ns``: ``t_ns`` minus the previous sample's ``t_ns`` in the same window, and, where
#   ``t_after_reply`` is set, minus the previous round trip too. Serial ping-pong sends the next
#   message right after the reply, so that remainder is the client's turnaround (tens of ns);
#   paced windows (the internet path) keep the plain step (their send period). The writer picks
#   whichever is tighter per window. A window's first sample stores its ``t_ns`` itself.
#
# Both are undone exactly by ``from_storage`` (integer arithmetic, then one division by 1000.0,
# the same operation the parser did), so readers see the SAMPLES schema with identical values.
# Only the consolidated ``samples.parquet`` uses it: part files are re-read by the campaign.
# The file has no ``value`` or ``t_ns`` column on purpose: a reader that bypasses
# ``read_table`` (``pd.read_parquet``) fails on the missing column instead of reading nulls.

SAMPLES_STORED = pa.schema(
    [f for f in SAMPLES if f.name not in ("value", "t_ns")]
    + [
        ("value_float", pa.float64()),
        ("value_milli", pa.int64()),
        ("t_step_ns", pa.int64()),
        ("t_after_reply", pa.bool_()),
    ],
    metadata={b"container_overhead.layout": b"samples-compact-1"},
)
_WINDOW_KEYS = [
    "environment", "campaign", "benchmark", "metric", "mode", "path", "variant", "run", "rep"
]  # fmt: skip
_EXACT_UNITS = ("us",)  # values computed as integer nanoseconds / 1000
_MAX_MILLI = 2**53  # integers a float64 holds exactly


def parquet_options(stored: pa.Schema) -> dict:
    """``pyarrow.parquet`` writer options for a table of schema ``stored``: zstd; the monotone
    sample index delta-encoded; the two integer columns of the stored layout byte-stream-split
    (their high bytes are nearly constant and zstd removes them; measured on lab sockperf data
    and harness/storage.py: smaller than a dictionary, which overflows on ns-resolution values);
    every other column dictionary-encoded (the keys repeat)."""
    delta = [c for c in ("sample",) if c in stored.names]
    split = [c for c in ("value_milli", "t_step_ns") if c in stored.names]
    return {
        "compression": "zstd",
        "use_dictionary": [c for c in stored.names if c not in delta + split],
        "column_encoding": {
            **dict.fromkeys(delta, "DELTA_BINARY_PACKED"),
            **dict.fromkeys(split, "BYTE_STREAM_SPLIT"),
        },
    }


def _window_starts(table: pa.Table, has_t: np.ndarray) -> np.ndarray:
    """True where a row does not continue the previous row's window: another key, a sample
    index that is not the previous one's + 1, or no send time on either row."""
    import pyarrow.compute as pc

    n = table.num_rows
    start = np.ones(n, dtype=bool)
    if n < 2:
        return start
    same = np.ones(n - 1, dtype=bool)
    for name in [*_WINDOW_KEYS, "sample"]:
        col = table.column(name)
        nxt, prev = col.slice(1), col.slice(0, n - 1)
        if name == "sample":
            prev = pc.add(prev, 1)
        eq = pc.fill_null(pc.equal(nxt, prev), False)
        same &= eq.to_numpy(zero_copy_only=False)
    start[1:] = ~(same & has_t[1:] & has_t[:-1])
    return start


def _int_or_zero(col: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(values with nulls as 0, validity) of an integer column."""
    import pyarrow.compute as pc

    valid = pc.is_valid(col).to_numpy(zero_copy_only=False)
    return pc.fill_null(col, 0).to_numpy(zero_copy_only=False).astype(np.int64), valid


def to_storage(table: pa.Table) -> pa.Table:
    """A SAMPLES table in the stored layout (``SAMPLES_STORED``); rows keep their order."""
    import pyarrow.compute as pc

    table = table.cast(SAMPLES)
    value = pc.fill_null(table.column("value"), np.nan).to_numpy(zero_copy_only=False)
    exact_unit = pc.fill_null(pc.is_in(table.column("unit"), pa.array(_EXACT_UNITS)), False)
    milli = np.zeros(value.size, dtype=np.int64)
    ok = exact_unit.to_numpy(zero_copy_only=False) & (np.abs(value) < _MAX_MILLI / 1000)
    milli[ok] = np.round(value[ok] * 1000).astype(np.int64)
    # Exact means the same bits back, so -0.0 and anything not a whole number of thousandths
    # stay floats.
    ok &= (milli / 1000.0).view(np.int64) == value.view(np.int64)
    t, has_t = _int_or_zero(table.column("t_ns"))
    start = _window_starts(table, has_t)
    step = np.where(start, t, t - np.r_[0, t[:-1]])
    reply = np.r_[0, milli[:-1]]  # the previous row's round trip in ns
    after = ~start & np.r_[False, ok[:-1]]
    # Per window: subtract the previous round trip when that leaves the tighter spread.
    window = np.cumsum(start) - 1
    n_win = int(window[-1]) + 1 if window.size else 0

    def spread(x: np.ndarray) -> np.ndarray:
        x = x.astype(float)
        w = (~start).astype(float)  # the first sample's absolute offset is not a step
        cnt = np.maximum(np.bincount(window, w, n_win), 1)
        mean = np.bincount(window, w * x, n_win) / cnt
        return np.bincount(window, w * np.abs(x - mean[window]), n_win) / cnt

    use = spread(step - reply) < spread(step)
    after &= use[window] if n_win else after
    step = np.where(after, step - reply, step)
    columns = {f.name: table.column(f.name) for f in SAMPLES if f.name not in ("value", "t_ns")}
    columns["value_float"] = pa.array(
        np.where(ok, np.nan, value), mask=ok | ~_valid(table, "value")
    )
    columns["value_milli"] = pa.array(milli, mask=~ok)
    columns["t_step_ns"] = pa.array(step, mask=~has_t)
    columns["t_after_reply"] = pa.array(after)
    return pa.table(columns, schema=SAMPLES_STORED)


def _valid(table: pa.Table, name: str) -> np.ndarray:
    import pyarrow.compute as pc

    return pc.is_valid(table.column(name)).to_numpy(zero_copy_only=False)


def is_stored_layout(names) -> bool:
    """Whether a samples file with these column names is in the stored (compact) layout."""
    return "value_milli" in names


def stored_value(value: np.ndarray, milli: np.ndarray, has_milli: np.ndarray) -> np.ndarray:
    """The float64 value of each row from the stored ``value_float`` and ``value_milli``."""
    return np.where(has_milli, milli / 1000.0, value)


def from_storage(table: pa.Table) -> pa.Table:
    """A stored-layout samples table back to SAMPLES, values bit-identical to what was written."""
    import pyarrow.compute as pc

    if not is_stored_layout(table.column_names):
        return table.cast(SAMPLES)
    milli, has_milli = _int_or_zero(table.column("value_milli"))
    value = pc.fill_null(table.column("value_float"), np.nan).to_numpy(zero_copy_only=False)
    value_valid = has_milli | _valid(table, "value_float")
    step, has_t = _int_or_zero(table.column("t_step_ns"))
    after = pc.fill_null(table.column("t_after_reply"), False).to_numpy(zero_copy_only=False)
    start = _window_starts(table, has_t)
    inc = np.where(after, step + np.r_[0, milli[:-1]], step)
    # Cumulative sum restarted at every window start: t_ns = sum of the window's increments.
    total = np.cumsum(inc)
    base = (total - inc)[start]
    t = total - base[np.cumsum(start) - 1] if total.size else total
    columns = {f.name: table.column(f.name) for f in SAMPLES if f.name not in ("value", "t_ns")}
    columns["value"] = pa.array(stored_value(value, milli, has_milli), mask=~value_valid)
    columns["t_ns"] = pa.array(t, mask=~has_t)
    return pa.table({f.name: columns[f.name] for f in SAMPLES}, schema=SAMPLES)


def read_table(path: Path | str, table: str = "samples") -> pa.Table:
    """One parquet file of ``table`` with exactly its schema, whatever layout it was stored in."""
    import pyarrow.parquet as pq

    if table == "samples" and is_stored_layout(pq.read_schema(path).names):
        return from_storage(pq.read_table(path))
    return pq.read_table(path, schema=TABLES[table])


def read_samples(path: Path | str) -> pd.DataFrame:
    """A samples file as a DataFrame in the SAMPLES schema (use it instead of
    ``pd.read_parquet``, which would show the stored layout's columns)."""
    return read_table(path, "samples").to_pandas()


def to_table(records: list[dict] | pd.DataFrame, schema: pa.Schema) -> pa.Table:
    """Records to an arrow table with exactly ``schema``: missing columns become nulls."""
    frame = records if isinstance(records, pd.DataFrame) else pd.DataFrame.from_records(records)
    for field in schema:
        if field.name not in frame.columns:
            frame[field.name] = None
    return pa.Table.from_pandas(frame[schema.names], schema=schema, preserve_index=False)


def write_table(table: pa.Table, path: Path, metadata: dict[str, str] | None = None) -> None:
    """Write parquet atomically: a reader sees the old file or the new one, never half of one.

    The consolidated ``samples.parquet`` is written in the stored layout (``to_storage``);
    read it back with ``read_table``/``read_samples``/``read_dataset``. ``metadata`` goes into
    the file's key-value metadata (the campaign whose consolidated table it is).
    """
    import os

    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    if path.name == "samples.parquet" and table.schema.remove_metadata().equals(SAMPLES):
        table = to_storage(table)
    if metadata:
        extra = {k.encode(): v.encode() for k, v in metadata.items()}
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **extra})
    try:
        pq.write_table(table, tmp, **parquet_options(table.schema))
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:  # a full disk: no half-written file stays behind
        tmp.unlink(missing_ok=True)
        raise


WINDOW_KEYS = ["environment", "campaign", "run", "mode", "path", "variant", "rep"]
FLAG_COLUMNS = [*WINDOW_KEYS, "attempt", "flagged", "why", "excluded"]


def window_flags(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per measured window of the ok steps in ``runs`` whose watch recorded
    collection's decision: its ``attempt`` (1, then each measurement again), ``flagged`` (on any
    of its hosts) with ``why``, and ``excluded``: flagged while its step has a clean window, so
    the per-run values leave it out. A step whose every window was flagged keeps them all.
    Windows watched before decisions were recorded (no ``why``) are not listed."""
    rows = []
    ok = runs.loc[(runs["status"] == "ok") & runs["watch"].notna()] if "watch" in runs else runs[:0]
    for r in ok.itertuples():
        per: dict[int, dict] = {}
        for entry in json.loads(r.watch):
            if "why" not in entry:
                continue
            window = per.setdefault(int(entry["rep"]), {
                "attempt": int(entry.get("attempt", 1)), "why": set()})  # fmt: skip
            if entry["why"]:
                window["why"].add(entry["why"])
        for rep, window in sorted(per.items()):
            rows.append({**{k: getattr(r, k) for k in WINDOW_KEYS if k != "rep"}, "rep": rep,
                         "attempt": window["attempt"], "flagged": bool(window["why"]),
                         "why": "; ".join(sorted(window["why"]))})  # fmt: skip
    frame = pd.DataFrame(rows, columns=FLAG_COLUMNS[:-1])
    step = [k for k in WINDOW_KEYS if k != "rep"]
    clean = (~frame["flagged"].astype(bool)).groupby([frame[k] for k in step]).transform("any") \
        if len(frame) else pd.Series([], dtype=bool)
    frame["excluded"] = frame["flagged"].astype(bool) & clean.astype(bool)
    return frame


def without_excluded(samples: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """``samples`` less the windows ``window_flags`` excludes (flagged where their step has a
    clean window); samples of other steps, warm-ups and unflagged windows as they are."""
    flags = window_flags(runs)
    out = flags.loc[flags["excluded"], WINDOW_KEYS]
    if out.empty or samples.empty:
        return samples
    def index(frame: pd.DataFrame) -> pd.MultiIndex:
        return pd.MultiIndex.from_frame(frame[WINDOW_KEYS].astype(
            {k: "int64" if k in ("run", "rep") else "object" for k in WINDOW_KEYS}))

    return samples.loc[~index(samples).isin(index(out))].reset_index(drop=True)


def has_dataset(raw_dir: Path | str, benchmark: str) -> bool:
    """Whether ``raw_dir`` holds a collected ``benchmark`` (any environment's runs table)."""
    return any((Path(raw_dir) / benchmark).glob("*/runs.parquet"))


# The runs column a Stein-planned campaign adds (``read_dataset``): each comparison's pilot pairs.
PILOT = "pilot_pairs"


def record_pilots(planning: dict | None) -> dict[tuple[str, str, str], int]:
    """Each Stein-planned comparison's pilot pairs, by (mode, path, variant), from a campaign's
    ``planning`` record (campaign.json, ``pipeline/collect/planning.py``'s ``record``): what
    ``stats.log_ratio_ci``'s ``pilot`` needs. Empty when the campaign was not planned by
    Stein's rule (fixed runs keep the usual interval)."""
    if not planning or not planning.get("planned") or planning.get("rule") != "stein":
        return {}
    return {(c["mode"], c["path"], c["variant"]): int(c["pilot_pairs"])
            for c in planning.get("cells", []) if c.get("pilot_pairs")}  # fmt: skip


def planned_pilots(dataset_dir: Path | str) -> dict[tuple[str, str, str], int]:
    """``record_pilots`` of the campaign.json in ``dataset_dir``; empty without one."""
    path = Path(dataset_dir) / "campaign.json"
    return record_pilots(json.loads(path.read_text()).get("planning")) if path.exists() else {}


def _pilot_column(runs: pa.Table, pilots: dict[tuple[str, str, str], int]) -> list[float]:
    """Each row's pilot pairs in ``runs`` (NaN where its cell was not planned)."""
    keys = zip(*(runs.column(k).to_pylist() for k in ("mode", "path", "variant")), strict=True)
    return [float(pilots.get(k, np.nan)) for k in keys]


def pilot_of(run_rows: pd.DataFrame) -> int | None:
    """The pilot pairs Stein's rule planned one comparison's runs from (``run_rows``: its runs
    rows, as ``read_dataset`` gives them): what ``stats.ratio_equivalence``'s ``pilot`` takes.
    None for a cell whose run count was fixed (an unplanned campaign, native, no record)."""
    if PILOT not in run_rows or not run_rows[PILOT].notna().any():
        return None
    found = run_rows[PILOT].dropna().unique()
    if found.size != 1:
        raise ValueError(f"one comparison, several pilots: {sorted(found)}")
    return int(found[0])


def read_dataset(raw_dir: Path | str, benchmark: str, table: str) -> pd.DataFrame:
    """One table of a benchmark across every environment collected under ``raw_dir``.

    The runs of a Stein-planned campaign (its campaign.json's ``planning`` record) get the
    ``PILOT`` column: every comparison's pilot pairs, so each summary gives that comparison
    Stein's interval (``pilot_of``); other campaigns' runs are read exactly as stored."""
    base = Path(raw_dir) / benchmark
    files = sorted(base.glob(f"*/{table}.parquet"))
    if not files:
        raise FileNotFoundError(
            f"no {table}.parquet under {base}/<environment>/: run the collection stage first "
            f"(dvc repro collect-{benchmark})"
        )
    if table != "samples":
        tables = [read_table(f, table) for f in files]
        out = pa.concat_tables(tables).to_pandas()
        pilots = [planned_pilots(f.parent) for f in files] if table == "runs" else []
        if any(pilots):
            out[PILOT] = [x for t, p in zip(tables, pilots, strict=True)
                          for x in _pilot_column(t, p)]  # fmt: skip
        return out
    # the estimates rest on clean windows: each environment's flagged windows left out where
    # their step has a clean one (window_flags)
    frames = [without_excluded(read_table(f, "samples").to_pandas(),
                               read_table(f.with_name("runs.parquet"), "runs").to_pandas())
              if f.with_name("runs.parquet").exists() else read_table(f, "samples").to_pandas()
              for f in files]  # fmt: skip
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
