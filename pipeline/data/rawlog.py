"""The tools' own output, kept beside a dataset's tables under ``logs/<campaign>/``.

A step's output is kept in one of two forms, named by the file's suffix:

- ``.log.xz`` (or ``.log.gz`` where gzip is smaller: a short output, for which xz's container
  costs more than it saves): the output itself. Earlier datasets kept every output as
  ``.log.gz``; they read the same way.
- ``.residue.xz``: for a benchmark whose samples rebuild its output (sockperf's full log,
  ``Benchmark.log_residue``), only what the samples do not hold, with a header naming the
  step. ``read_log`` rebuilds the output from it and the step's samples.

The runs table's ``raw_log`` names the file, relative to the dataset directory.
"""

from __future__ import annotations

import gzip
import json
import lzma
from pathlib import Path

import numpy as np
import pyarrow.compute as pc

from pipeline.data import schema

RESIDUE_SUFFIX = ".residue.xz"
_XZ = {"format": lzma.FORMAT_XZ, "check": lzma.CHECK_CRC32, "preset": 9 | lzma.PRESET_EXTREME}


def compress(data: bytes) -> tuple[bytes, str]:
    """``data`` compressed with xz, or with gzip where that is smaller: (bytes, suffix)."""
    xz = lzma.compress(data, **_XZ)
    gz = gzip.compress(data, compresslevel=9, mtime=0)
    return (gz, ".gz") if len(gz) < len(xz) else (xz, ".xz")


def decompress(data: bytes, name: str) -> bytes:
    if name.endswith(".gz"):
        return gzip.decompress(data)
    if name.endswith(".xz"):
        return lzma.decompress(data)
    return data


def _write(path: Path, data: bytes) -> None:
    """Atomically: a crash leaves the old file or the new one; a failed write (a full disk)
    leaves no half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_bytes(data)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _drop(directory: Path, stem: str) -> None:
    """A step measured again replaces what its earlier attempt kept, in either form."""
    for old in [*directory.glob(f"{stem}.log.*"), directory / f"{stem}{RESIDUE_SUFFIX}"]:
        old.unlink(missing_ok=True)


def write_log(directory: Path, stem: str, raw: str) -> Path:
    """Keep ``raw`` as it is, compressed; returns the file written."""
    data, suffix = compress(raw.encode())
    _drop(directory, stem)
    path = directory / f"{stem}.log{suffix}"
    _write(path, data)
    return path


def write_residue(directory: Path, stem: str, step: dict, residue: bytes) -> Path:
    """Keep a benchmark's residue of one output: ``step`` names the samples that rebuild it
    (benchmark, campaign, run, mode, path, variant, metric, reps: the windows in the output's
    order, part: the stem of the step's parts)."""
    _drop(directory, stem)
    path = directory / f"{stem}{RESIDUE_SUFFIX}"
    _write(path, lzma.compress(json.dumps(step, sort_keys=True).encode() + b"\n" + residue, **_XZ))
    return path


def read_log(root: Path | str, raw_log: str) -> str:
    """The output a runs row's ``raw_log`` names, as the tool wrote it (for a residue: rebuilt
    from the step's samples, which ``Benchmark.rebuild_log`` says how exactly)."""
    path = Path(root) / raw_log
    data = decompress(path.read_bytes(), path.name)
    if not path.name.endswith(RESIDUE_SUFFIX):
        return data.decode()
    head, _, residue = data.partition(b"\n")
    step = json.loads(head)
    from pipeline.benchmarks import BENCHMARKS

    windows = _windows(Path(root), step)
    return BENCHMARKS[step["benchmark"]]().rebuild_log(residue, windows)


def read_residue(root: Path | str, raw_log: str) -> bytes | None:
    """The benchmark's residue a kept file holds, or None where the output itself is kept (a
    rebuilt sockperf log is re-parsed with ``latency.rows_not_kept`` of it)."""
    path = Path(root) / raw_log
    if not path.name.endswith(RESIDUE_SUFFIX):
        return None
    return decompress(path.read_bytes(), path.name).partition(b"\n")[2]


def _windows(root: Path, step: dict) -> list[tuple[np.ndarray, np.ndarray]]:
    """(values, t_ns) of each window the residue's output holds, from the consolidated samples
    or, before consolidation, from the step's samples part."""
    part = root / "parts" / step["campaign"] / f"{step['part']}.samples.parquet"
    table = schema.read_table(part if part.exists() else root / "samples.parquet", "samples")
    mask = None
    for name in ("campaign", "run", "mode", "path", "variant", "metric"):
        eq = pc.equal(table.column(name), step[name])
        mask = eq if mask is None else pc.and_(mask, eq)
    rows = table.filter(mask).to_pandas().sort_values(["rep", "sample"])
    windows = []
    for rep in step["reps"]:
        window = rows[rows["rep"] == rep]
        windows.append((window["value"].to_numpy(), window["t_ns"].to_numpy(dtype=np.int64)))
    return windows
