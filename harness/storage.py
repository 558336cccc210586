"""Bytes per latency sample in the raw parquet, before and after the stored layout.

The same synthetic windows (harness/_synth.py, 10 modes x 2 paths x 10 runs, warm-up included in
the file) are written twice: as the writer did before (the SAMPLES columns, zstd only) and as
``pipeline.data.schema.write_table`` writes the consolidated file now (``schema.to_storage`` and
``schema.parquet_options``). Bytes per sample = file size / measured samples. The stored file
is read back with ``schema.read_table`` and compared with the plain one column by column:
``value`` bit for bit, ``t_ns`` and every other column exactly.

Collected datasets under data/raw/latency/*/ (or the files given with --collected) are
measured the same way: their logical table written plain and stored. Each is also measured all
in: every file under its directory (tables, kept logs, parts, campaigns moved aside) over the
rows of its samples table, warm-up included.

    python -m harness.storage [--n 1e7] [--collected PATH/samples.parquet ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from harness import _synth
from harness._proc import ROOT
from pipeline.data import schema

GOAL = 4.0


def identical(a: pa.Table, b: pa.Table) -> bool:
    """Same schema, same nulls, same values; floats compared by their bits."""
    if a.schema != b.schema or a.num_rows != b.num_rows:
        return False
    for name in a.column_names:
        x, y = a.column(name).combine_chunks(), b.column(name).combine_chunks()
        if pa.types.is_floating(x.type):
            if not x.is_null().equals(y.is_null()):
                return False
            fx = x.fill_null(0.0).to_numpy(zero_copy_only=False)
            fy = y.fill_null(0.0).to_numpy(zero_copy_only=False)
            if not np.array_equal(fx.view(np.int64), fy.view(np.int64)):
                return False
        elif not x.equals(y):
            return False
    return True


def synthetic(work: Path, n: int) -> dict:
    shape = _synth.Shape.for_samples(n)
    plain, stored = work / "plain" / "samples.parquet", work / "stored" / "samples.parquet"
    _synth.write_samples(plain, _synth.windows(shape), layout="plain")
    _synth.write_samples(stored, _synth.windows(shape), layout="stored")
    same = identical(pq.read_table(plain), schema.read_table(stored))
    return {
        "n": shape.n_measured,
        "rows": pq.ParquetFile(stored).metadata.num_rows,
        "plain": os.path.getsize(plain) / shape.n_measured,
        "stored": os.path.getsize(stored) / shape.n_measured,
        "identical": same,
        "columns": _column_bytes(stored, shape.n_measured),
    }


def collected(work: Path, path: Path) -> dict:
    """A collected samples file: its logical table written plain and through the writer."""
    table = schema.read_table(path)
    measured = int((~table.column("warmup").to_numpy(zero_copy_only=False)).sum())
    plain, stored = work / "c-plain.parquet", work / "c" / "samples.parquet"
    pq.write_table(table, plain, compression="zstd")
    schema.write_table(table, stored)
    return {
        "path": str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path),
        "n": measured,
        "plain": os.path.getsize(plain) / measured,
        "stored": os.path.getsize(stored) / measured,
        "identical": identical(table, schema.read_table(stored)),
    }


def all_in(directory: Path) -> dict:
    """Every file under a dataset directory, by what it is, and per row of its samples table."""
    rows = schema.read_table(directory / "samples.parquet").num_rows
    kinds: dict[str, int] = {}
    for f in directory.rglob("*"):
        if f.is_file():
            top = f.relative_to(directory).parts[0]
            kind = top if f.parent != directory else "tables"
            kinds[kind] = kinds.get(kind, 0) + f.stat().st_size
    total = sum(kinds.values())
    return {"rows": rows, "bytes": total, "per_sample": total / rows if rows else None,
            "kinds": dict(sorted(kinds.items()))}  # fmt: skip


def _column_bytes(path: Path, n: int) -> dict[str, float]:
    md = pq.ParquetFile(path).metadata
    out: dict[str, float] = {}
    for g in range(md.num_row_groups):
        for i in range(md.num_columns):
            col = md.row_group(g).column(i)
            out[col.path_in_schema] = out.get(col.path_in_schema, 0) + col.total_compressed_size / n
    return out


def main(argv: list[str] | None = None) -> list[str]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=float, default=1e7, help="measured samples (default 10M)")
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--collected", nargs="*", type=Path, help="samples.parquet files to measure")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="co-bench-storage-", dir=args.tmp))
    lines = []
    try:
        r = synthetic(work, int(args.n))
        big = {k: round(v, 2) for k, v in r["columns"].items() if v >= 0.05}
        print(f"synthetic: {r['n']} measured samples ({r['rows']} rows with warm-up)")
        print(f"  stored layout, bytes per sample by column: {big}")
        verdict = "goal met" if r["stored"] <= GOAL else f"GOAL MISSED (<= {GOAL:g})"
        lines.append(
            f"storage {r['n'] / 1e6:g}M synthetic samples: {r['plain']:.2f} B/sample as written "
            f"before (float64 us + int64 t_ns, zstd) -> {r['stored']:.2f} B/sample stored layout "
            f"(x{r['plain'] / r['stored']:.1f} smaller) [{verdict}]; read back "
            + ("bit-identical" if r["identical"] else "NOT IDENTICAL")
        )
        found = sorted((ROOT / "data" / "raw" / "latency").glob("*/samples.parquet"))
        for path in args.collected if args.collected is not None else found:
            c = collected(work, path)
            lines.append(
                f"storage collected {c['path']} ({c['n']} samples): {c['plain']:.2f} -> "
                f"{c['stored']:.2f} B/sample; read back "
                + ("bit-identical" if c["identical"] else "NOT IDENTICAL")
            )
            a = all_in(path.parent)
            lines.append(
                f"storage all in {c['path']}: {a['bytes']} bytes / {a['rows']} samples (warm-up "
                f"included) = {a['per_sample']:.2f} B/sample; by kind {a['kinds']}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return lines


if __name__ == "__main__":
    for line in main():
        print(f"summary: {line}")
