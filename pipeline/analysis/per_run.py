"""Per-run values from raw data: what each benchmark compares per run, read from its dataset.

The comparison engine (``engine.MEASURES``) turns these into its per-run frame; the summary
modules read the same functions for their own tables. Nothing here compares or formats: a
run is the unit of inference, and each function below gives one value (or one sample array)
per run, from runs with status ok and measured windows only (warm-ups and the windows the
interference watch flagged are left out, ``schema.window_flags``).

- latency and HTTP (``load_cells``): each cell's per-sample values as ``stats.RunSamples``,
  written for the full profile (~1e8 samples): pyarrow reads the samples in batches with
  dictionary-encoded keys, keeps (cell, run, value) only, and each cell is handed to numpy as
  per-run sorted arrays; ``per_run_summaries`` their per-run percentiles;
- throughput: iperf3's receiver-side total per run (TCP) and the UDP window medians;
- the host benchmarks: the median of each run's per-second samples (``host_values``);
- cold start: each run's percentiles of its measured starts (``per_run_percentiles``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl

from pipeline import catalogue
from pipeline.analysis import stats
from pipeline.capabilities import serving
from pipeline.data import schema

KEYS = ["environment", "mode", "path", "variant"]
LATENCY_METRICS = {"udp": "udp_rtt", "tcp": "tcp_rtt"}
HTTP_METRICS = {"1k": "http_latency"}
HTTP_WINDOW_METRICS = ("http_achieved_rate", "http_errors", "http_late")
# cold start pairs its starts by (environment, mode, run)
START_KEYS = ("environment", "mode")


def q_label(q: float) -> str:
    """0.5 -> "p50", 0.999 -> "p99.9"."""
    return "p" + f"{100 * q:.4f}".rstrip("0").rstrip(".")


def _files(raw_dir: Path | str, benchmark: str, table: str) -> list[Path]:
    files = sorted((Path(raw_dir) / benchmark).glob(f"*/{table}.parquet"))
    if not files:
        raise FileNotFoundError(
            f"no {table}.parquet under {Path(raw_dir) / benchmark}/<environment>/: run the "
            f"collection stage first (dvc repro collect-{benchmark})"
        )
    return files


def load_runs(raw_dir: Path | str, benchmark: str) -> pd.DataFrame:
    """The runs table of ``benchmark`` across every environment (small: one row per run)."""
    return schema.read_dataset(raw_dir, benchmark, "runs")


def _measured(raw_dir: Path | str, benchmark: str, metrics: Iterable[str]) -> pl.LazyFrame:
    """Measured samples of ``metrics`` from runs with status ok, keys as categoricals."""
    metrics = list(metrics)
    runs = (
        pl.scan_parquet(_files(raw_dir, benchmark, "runs"))
        .filter(pl.col("status") == "ok")
        .select([*KEYS, "run"])
        .unique()
    )
    samples = pl.concat(
        [
            pl.scan_parquet(f)
            .filter(pl.col("metric").is_in(metrics) & ~pl.col("warmup"))
            .select([*KEYS, "metric", "run", "rep", _value_expr(f)])
            for f in _files(raw_dir, benchmark, "samples")
        ]
    )
    # A failed run can leave partial samples behind: they describe a broken measurement.
    samples = samples.join(runs, on=[*KEYS, "run"], how="semi")
    # the estimates rest on clean windows (schema.window_flags)
    flags = schema.window_flags(load_runs(raw_dir, benchmark))
    out = flags.loc[flags["excluded"], [*KEYS, "run", "rep"]]
    if out.empty:
        return samples
    out = pl.from_pandas(out).with_columns(pl.col("run", "rep").cast(pl.Int32))
    return samples.join(out.lazy(), on=[*KEYS, "run", "rep"], how="anti")


def _excluded(runs_file: Path) -> dict[tuple[str, str, str, str], set[tuple[int, int]]]:
    """The (run, rep) windows ``schema.window_flags`` leaves out, per cell, of one dataset."""
    if not runs_file.exists():
        return {}
    flags = schema.window_flags(schema.read_table(runs_file, "runs").to_pandas())
    out: dict[tuple[str, str, str, str], set[tuple[int, int]]] = {}
    for r in flags.loc[flags["excluded"]].itertuples():
        out.setdefault((r.environment, r.mode, r.path, r.variant), set()).add((r.run, r.rep))
    return out


def _value_expr(path: Path) -> pl.Expr:
    """``value`` of a samples file in either layout (``schema.to_storage``), as float64."""
    import pyarrow.parquet as pq

    if not schema.is_stored_layout(pq.read_schema(path).names):
        return pl.col("value")
    milli = pl.col("value_milli")
    exact = milli.cast(pl.Float64) / 1000.0
    return pl.when(milli.is_not_null()).then(exact).otherwise(pl.col("value_float")).alias("value")


def _sorted_by_run(chunks: dict[int, list[np.ndarray]]) -> stats.RunSamples:
    """RunSamples from one cell's value chunks per run: each run is joined, NaNs dropped and
    sorted on its own, and the chunks are released as soon as their run is built."""
    ids, per_run = [], []
    for run in sorted(chunks):
        values = np.concatenate(chunks.pop(run))
        values = values[~np.isnan(values)]
        if values.size:  # a run with no value left was not measured
            values.sort()
            ids.append(run)
            per_run.append(values)
    ids = np.array(ids, dtype=np.int64)
    # Stable: merges the sorted runs (several times faster than sorting the cell from scratch).
    pooled = np.sort(np.concatenate(per_run), kind="stable") if per_run else np.empty(0)
    return stats.RunSamples(runs=ids, values=tuple(per_run), pooled=pooled)


def _kept(batch, name: str, null, keep: np.ndarray) -> np.ndarray:
    """The ``keep`` rows of a batch column as numpy, nulls as ``null``."""
    return batch.column(name).fill_null(null).to_numpy(zero_copy_only=False)[keep]


def _scan_cells(path: Path, wanted: dict[tuple[str, str], int], batch_rows: int, drop=None):
    """The values of the measured samples of the ``wanted`` (variant, metric) pairs in one
    samples file, as ``{cell key: {run: [value chunks]}}``, read batch by batch with
    dictionary-encoded keys: 8 bytes per kept sample, whatever the width of the file.
    ``drop``: per cell key, the (run, rep) windows left out (``_excluded``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cell_ids: dict[tuple[str, str, str, str], int] = {}
    chunks: dict[int, dict[int, list[np.ndarray]]] = {}
    reader = pq.ParquetFile(path, read_dictionary=[*KEYS, "metric"])
    stored = schema.is_stored_layout(reader.schema_arrow.names)
    value_cols = ["value_float", "value_milli"] if stored else ["value"]
    columns = [*KEYS, "metric", "run", "warmup", *value_cols, *(["rep"] if drop else [])]
    for batch in reader.iter_batches(batch_size=batch_rows, columns=columns):
        if batch.num_rows == 0:
            continue
        # Rows are selected on numpy codes, not by filtering the batch: no string is decoded
        # and nothing copied but the kept rows. Per-batch dictionaries -> one small lookup
        # table of cell ids for this batch.
        cols = []
        for name in [*KEYS, "metric"]:
            col = batch.column(name)
            if not pa.types.is_dictionary(col.type):
                col = col.dictionary_encode()
            cols.append((col.indices.to_numpy(zero_copy_only=False), col.dictionary.to_pylist()))
        # Mixed-radix code of the five dictionary indices: the number of distinct key
        # combinations in a batch is tiny, so a lookup table indexed by the code is cheap.
        sizes = [len(d) for _, d in cols]
        code = np.zeros(batch.num_rows, dtype=np.int64)
        for (idx, _), n in zip(cols, sizes, strict=True):
            code = code * n + idx
        present = np.flatnonzero(np.bincount(code, minlength=1))
        lut = np.full(int(code.max()) + 1, -1, dtype=np.int32)
        for c in present:
            rest, labels = int(c), []
            for (_, dictionary), n in zip(reversed(cols), reversed(sizes), strict=True):
                labels.append(str(dictionary[rest % n]))
                rest //= n
            metric_name, variant, path_, mode, env = labels
            if (variant, metric_name) in wanted:
                lut[c] = cell_ids.setdefault((env, mode, path_, variant), len(cell_ids))
        cell = lut[code]
        warmup = batch.column("warmup").fill_null(False).to_numpy(zero_copy_only=False)
        keep = (cell >= 0) & ~warmup
        if not keep.any():
            continue
        value = _kept(batch, value_cols[0], np.nan, keep)
        if stored:
            milli = _kept(batch, "value_milli", 0, keep)
            has_milli = batch.column("value_milli").is_valid().to_numpy(zero_copy_only=False)
            value = schema.stored_value(value, milli, has_milli[keep])
        run = _kept(batch, "run", 0, keep).astype(np.int64)
        cell = cell[keep].astype(np.int64)
        if drop:
            rep = _kept(batch, "rep", 0, keep).astype(np.int64)
            out = np.zeros(cell.size, dtype=bool)
            for key, index in cell_ids.items():
                for r, w in drop.get(key, ()):
                    out |= (cell == index) & (run == r) & (rep == w)
            run, cell, value = run[~out], cell[~out], value[~out]
        # Collection writes window after window, so (cell, run) comes in long stretches; cut
        # there. An interleaved file is grouped first (a stable sort of small integer codes).
        pair = cell << 32 | (run & 0xFFFFFFFF)
        cuts = np.flatnonzero(pair[1:] != pair[:-1]) + 1
        if cuts.size > 1024:
            order = np.argsort(pair, kind="stable")
            pair, cell, run, value = pair[order], cell[order], run[order], value[order]
            cuts = np.flatnonzero(pair[1:] != pair[:-1]) + 1
        for a, b in zip(np.r_[0, cuts], np.r_[cuts, pair.size], strict=True):
            if b > a:
                per_run = chunks.setdefault(int(cell[a]), {})
                per_run.setdefault(int(run[a]), []).append(value[a:b])
    return {key: chunks[index] for key, index in cell_ids.items() if index in chunks}


def load_cells(
    raw_dir: Path | str,
    benchmark: str,
    metrics: dict[str, str],
    batch_rows: int = 4_000_000,
) -> dict[tuple[str, str, str, str], stats.RunSamples]:
    """Per-sample values of each (environment, mode, path, variant) as ``stats.RunSamples``.

    ``metrics`` maps a variant to the metric holding its per-sample latency (``udp`` ->
    ``udp_rtt``); other metrics of the same variant (per-window counters) are ignored. Only
    measured samples (``warmup`` false) of runs with status ok are kept.

    Built for ~1e8 samples: the file is read in batches of ``batch_rows`` with dictionary-
    encoded keys and reduced to value chunks per (cell, run) (8 bytes per sample); only each
    run's own samples are sorted, and the cell's pooled order is a merge of its sorted runs.
    Peak memory is about 17 bytes per sample (harness/analysis_scale.py measures it).
    """
    runs = load_runs(raw_dir, benchmark)
    ok_runs: dict[tuple, np.ndarray] = {
        tuple(str(k) for k in key): np.unique(part["run"].to_numpy())
        for key, part in runs[runs["status"] == "ok"].groupby(KEYS, sort=False)
    }
    wanted = {(v, m): 1 for v, m in metrics.items()}
    cells: dict[tuple[str, str, str, str], stats.RunSamples] = {}
    for path in _files(raw_dir, benchmark, "samples"):
        drop = _excluded(path.with_name("runs.parquet"))
        for key, per_run in _scan_cells(path, wanted, batch_rows, drop).items():
            ok = set(ok_runs.get(key, np.empty(0, np.int64)).tolist())
            per_run = {run: chunks for run, chunks in per_run.items() if run in ok}
            cell = _sorted_by_run(per_run)
            if cell.n_samples:
                cells[key] = cell
    return dict(sorted(cells.items()))


def load_window_metrics(
    raw_dir: Path | str, benchmark: str, metrics: Iterable[str] = HTTP_WINDOW_METRICS
) -> pd.DataFrame:
    """Per-window metrics (one row per measured window and metric) from runs with status ok."""
    return (
        _measured(raw_dir, benchmark, metrics)
        .select([*KEYS, "metric", "run", "rep", "value"])
        .collect()
        .to_pandas()
    )


# --- per-run percentiles of per-sample cells -----------------------------------------------


STATISTICS = {"p50": 0.5, "p99": 0.99}


def per_run_summaries(
    cells: dict[tuple, stats.RunSamples],
    statistics: dict[str, float] = STATISTICS,
    counts: bool = False,
) -> pd.DataFrame:
    """One row per (environment, mode, path, variant, run, statistic): the per-run percentile;
    with ``counts`` also ``n_samples``, the run's samples (a percentile needs
    ``stats.min_samples``)."""
    frames = []
    for (env, mode, path, variant), cell in cells.items():
        if not cell.n_runs:
            continue
        values = cell.run_quantiles(list(statistics.values()))
        sizes = {"n_samples": [v.size for v in cell.values]} if counts else {}
        for j, name in enumerate(statistics):
            frames.append(
                pd.DataFrame(
                    {
                        "environment": env,
                        "mode": mode,
                        "path": path,
                        "variant": variant,
                        "run": cell.runs,
                        "statistic": name,
                        "value": values[:, j],
                        **sizes,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


# --- throughput ---------------------------------------------------------------------------

TCP_METRIC = "tcp_throughput_received"
TCP_VARIANT = "tcp"
UDP_VARIANT = "udp"


def variant_rows(frame: pd.DataFrame, variant: str) -> pd.DataFrame:
    """Rows of one variant. TCP also keeps rows without a variant (data collected before the
    UDP variant existed), so older datasets read as they did."""
    if "variant" not in frame.columns:
        return frame if variant == TCP_VARIANT else frame.iloc[0:0]
    keep = frame["variant"] == variant
    if variant == TCP_VARIANT:
        keep |= frame["variant"].isna()
    return frame[keep]


def per_run_throughput(samples: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Per-run receiver-side throughput in Gbit/s, warm-ups excluded, runs with status ok only.

    A failed run can leave partial samples behind; they describe a broken measurement and are
    not analysed. Columns: environment, mode, path, run, value (Gbit/s).
    """
    per_run = stats.per_run_summary(samples, TCP_METRIC, how="median")
    runs = variant_rows(runs, TCP_VARIANT)
    ok = runs.loc[runs["status"] == "ok", ["environment", "mode", "path", "run"]].drop_duplicates()
    per_run = per_run.merge(ok, on=["environment", "mode", "path", "run"], how="inner")
    per_run["value"] = per_run["value"] / 1e9
    return per_run.sort_values(["environment", "mode", "path", "run"], ignore_index=True)


def throughput_values(samples: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The per-run values the comparisons rest on, long: TCP's received rate, UDP's received
    rate and loss (``engine.Measure.values``' columns)."""
    return throughput_long(per_run_throughput(samples, runs), per_run_udp(samples, runs))


def throughput_long(tcp: pd.DataFrame | None, udp: pd.DataFrame | None) -> pd.DataFrame:
    """``per_run_throughput``'s and ``per_run_udp``'s frames (either may be None) as one long
    frame of per-run values."""
    frames = []
    if tcp is not None:
        frames.append(tcp.assign(variant=TCP_VARIANT, metric="received_gbps", unit="Gbit/s"))
    if udp is not None:
        frames += [udp.rename(columns={"received_gbps": "value"}).assign(
                       variant=UDP_VARIANT, metric="received_gbps", unit="Gbit/s"),
                   udp.rename(columns={"loss_pct": "value"}).assign(
                       variant=UDP_VARIANT, metric="loss_pct", unit="%")]  # fmt: skip
    out = pd.concat(frames, ignore_index=True)
    return out.assign(statistic="median", n_samples=np.nan)


UDP_METRICS = {
    "udp_throughput_received": ("received_gbps", 1e-9),
    "udp_jitter": ("jitter_ms", 1.0),
    "udp_loss": ("loss_pct", 1.0),
}


def per_run_udp(samples: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Per-run UDP values of runs with status ok, warm-ups excluded: environment, mode, path,
    run, received_gbps, jitter_ms, loss_pct (the median over measured windows of each)."""
    udp_samples = variant_rows(samples, UDP_VARIANT)
    udp_runs = variant_rows(runs, UDP_VARIANT)
    ok = udp_runs.loc[udp_runs["status"] == "ok", ["environment", "mode", "path", "run"]]
    keys = ["environment", "mode", "path", "run"]
    out = ok.drop_duplicates()
    for metric, (name, factor) in UDP_METRICS.items():
        one = stats.per_run_summary(udp_samples, metric, how="median")
        one = one.rename(columns={"value": name})
        one[name] = one[name] * factor
        out = out.merge(one, on=keys, how="left")
    measured = out[[name for name, _ in UDP_METRICS.values()]].notna().any(axis=1)
    return out[measured].sort_values(keys, ignore_index=True)


# --- host benchmarks ----------------------------------------------------------------------

# Durations are better short; every other unit here is a rate (events/s, MiB/s, IOPS).
LOWER_IS_BETTER_UNITS = frozenset({"s", "ms", "us", "ns"})


def higher_is_better(unit: str | None) -> bool:
    """Whether a larger value of a metric in ``unit`` is the better one (rates: yes)."""
    return unit not in LOWER_IS_BETTER_UNITS


def load(raw_dir: Path | str, benchmark: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(samples, runs)`` of ``benchmark`` across every environment in ``raw_dir``."""
    return (
        schema.read_dataset(raw_dir, benchmark, "samples"),
        schema.read_dataset(raw_dir, benchmark, "runs"),
    )


def variant_metrics(samples: pd.DataFrame) -> dict[str, list[str]]:
    """Variant -> the metrics it is analysed on: those with a non-zero measured sample."""
    measured = samples[~samples["warmup"].astype(bool) & samples["value"].fillna(0.0).ne(0.0)]
    out: dict[str, list[str]] = {}
    for (variant, metric), _ in measured.groupby(["variant", "metric"], sort=True):
        out.setdefault(variant, []).append(metric)
    return out


def host_values(samples: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """One value per (environment, mode, path, variant, metric, run): the median of the run's
    measured per-second samples, for runs with status ok (a failed run's partial samples
    describe a broken measurement and are not analysed). Also ``n_samples`` and ``unit``."""
    keys = [*KEYS, "run"]
    ok = runs.loc[runs["status"] == "ok", keys].drop_duplicates()
    chosen = variant_metrics(samples)
    frames = []
    for metric in sorted({m for ms in chosen.values() for m in ms}):
        sel = samples[samples["metric"] == metric]
        value = stats.per_run_summary(sel, metric, how="median", keys=tuple(keys))
        count = stats.per_run_summary(sel, metric, how="count", keys=tuple(keys))
        value["n_samples"] = count["value"].astype("int64")
        value["metric"] = metric
        value["unit"] = sel["unit"].dropna().iloc[0] if sel["unit"].notna().any() else None
        # Only the variants this metric was chosen for (a zero-rate direction is not compared).
        value = value[[metric in chosen.get(v, ()) for v in value["variant"]]]
        frames.append(value.merge(ok, on=keys, how="inner"))
    columns = [*KEYS, "metric", "unit", "run", "value", "n_samples"]
    if not frames:
        return pd.DataFrame(columns=columns)
    out = pd.concat(frames, ignore_index=True)[columns]
    return out.sort_values([*KEYS, "metric", "run"], ignore_index=True)


# --- cold start ---------------------------------------------------------------------------

COLDSTART_METRIC = "coldstart_s"


COLDSTART_QUANTILES = (0.5, 0.95, 0.99)


# Rootless modes and the rootful mode of the same engine (the article's "rootless adds ~20%"),
# among the modes cold start runs in.
ROOTLESS_VS_ROOTFUL = tuple(
    (m, twin) for m in serving("coldstart")
    if (twin := catalogue.rootful_twin(m, serving("coldstart"))) is not None)  # fmt: skip


def measured_starts(samples: pd.DataFrame) -> pd.DataFrame:
    """The measured starts (warm-up starts are kept in the data, never analysed)."""
    return samples[(samples["metric"] == COLDSTART_METRIC) & ~samples["warmup"].astype(bool)]


def per_run_percentiles(samples: pd.DataFrame, qs=COLDSTART_QUANTILES) -> pd.DataFrame:
    """One row per (environment, mode, run, q): that run's q-quantile of its measured starts
    (numpy's inverted-CDF definition, as the pooled quantiles)."""
    rows = []
    for key, group in measured_starts(samples).groupby([*START_KEYS, "run"], observed=True):
        values = group["value"].to_numpy(dtype=float)
        for q, v in zip(qs, np.quantile(values, qs, method="inverted_cdf"), strict=True):
            rows.append({**dict(zip((*START_KEYS, "run"), key, strict=True)), "q": q, "value": v})
    columns = [*START_KEYS, "run", "q", "value"]
    return pd.DataFrame(rows, columns=columns).sort_values(columns[:4], ignore_index=True)


def ok_samples(samples: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The samples of runs whose status is ok (a failed run's starts describe a broken step)."""
    ok = runs.loc[runs["status"] == "ok", [*KEYS, "run"]].drop_duplicates()
    return samples.merge(ok, on=[*KEYS, "run"], how="inner")


# --- each benchmark's per-run values from its raw dataset (``engine.Measure.values``) -------


def throughput(raw: Path) -> pd.DataFrame:
    return throughput_values(*load(raw, "throughput"))


def cell_values(cells: dict[tuple, stats.RunSamples], statistics: dict[str, float],
                metrics: dict[str, str] | None = None) -> pd.DataFrame:  # fmt: skip
    """Per-run percentiles of per-sample cells, the metric named by ``metrics`` (variant ->
    metric; None: the variant itself)."""
    if not cells:
        return pd.DataFrame()
    frame = per_run_summaries(dict(cells), dict(statistics), counts=True)
    metric = frame["variant"].map(metrics) if metrics is not None else frame["variant"]
    return frame.assign(metric=metric, unit="us")


def quantiles(benchmark: str, metrics: dict[str, str]):
    """The per-run p50 and p99 of a per-sample benchmark (latency, HTTP)."""

    def values(raw: Path) -> pd.DataFrame:
        return cell_values(load_cells(raw, benchmark, metrics), {"p50": 0.5, "p99": 0.99}, metrics)

    return values


def host(benchmark: str):
    """The per-run medians of a host benchmark."""

    def values(raw: Path) -> pd.DataFrame:
        return host_values(*load(raw, benchmark)).assign(statistic="median")

    return values


def coldstart(raw: Path) -> pd.DataFrame:
    """Each run's percentiles of its measured starts, with the run's path, variant and count."""
    ok = measured_starts(ok_samples(*load(raw, "coldstart")))
    values = per_run_percentiles(ok, COLDSTART_QUANTILES)
    # the summary pairs cold starts by (environment, mode, run); path and variant ride along
    keys = [*START_KEYS, "run"]
    where = ok[[*keys, "path", "variant"]].drop_duplicates(keys)
    count = ok.groupby(keys, as_index=False).size().rename(columns={"size": "n_samples"})
    values = values.merge(where, on=keys).merge(count, on=keys)
    return values.assign(statistic=[q_label(q) for q in values["q"]], metric=COLDSTART_METRIC,
                         unit="s")  # fmt: skip
