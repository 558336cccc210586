"""The stored layout of the consolidated samples file: exact round trip, size, every reader."""

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.analysis import latency as latency_analysis
from pipeline.analysis import stats
from pipeline.data import schema

PING_MEDIAN_NS, INTERNET_NS = 55_000, 42_000_000


def _window(mode, path, run, rep, rtt_ns, t_ns, metric="udp_rtt", unit="us"):
    n = len(rtt_ns)
    return pd.DataFrame(
        {
            "environment": "lab", "campaign": "c", "benchmark": "latency", "metric": metric,
            "unit": unit, "mode": mode, "path": path, "variant": metric.split("_")[0],
            "run": run, "rep": rep, "sample": np.arange(n), "value": np.asarray(rtt_ns) / 1000.0,
            "warmup": rep == 0, "t_ns": t_ns,
        }
    )  # fmt: skip


def _sockperf_like(seed=0, n=20_000) -> pa.Table:
    """Windows as the lab's sockperf logs look: dc ping-pong (next send 20-140 ns after the
    reply) and paced internet sends (every 1 ms, ~100 ns jitter), integer-ns timestamps."""
    rng = np.random.default_rng(seed)
    frames = []
    for run in (1, 2):
        for mode in ("docker-bridge", "native"):
            for rep, size in ((0, n // 100), (1, n)):
                rtt = np.rint(PING_MEDIAN_NS * rng.lognormal(0, 0.25, size)).astype(np.int64)
                gap = 20 + np.rint(rng.exponential(30, size)).astype(np.int64)
                t = np.r_[0, np.cumsum(rtt[:-1] + gap[1:])]
                frames.append(_window(mode, "dc", run, rep, rtt, t))
                rtt = np.rint(INTERNET_NS + rng.normal(0, 2e6, size)).astype(np.int64)
                t = np.arange(size) * 1_000_000 + np.rint(rng.normal(0, 100, size)).astype(int)
                frames.append(_window(mode, "internet", run, rep, rtt, t - t[0]))
    return schema.to_table(pd.concat(frames, ignore_index=True), schema.SAMPLES)


def _bits(table: pa.Table, name: str) -> np.ndarray:
    col = table.column(name).combine_chunks()
    return np.where(col.is_null(), -1, col.fill_null(0.0).to_numpy().view(np.int64))


def _assert_identical(a: pa.Table, b: pa.Table) -> None:
    assert a.schema == b.schema == schema.SAMPLES
    np.testing.assert_array_equal(_bits(a, "value"), _bits(b, "value"))
    for name in schema.SAMPLES.names:
        if name != "value":
            assert a.column(name).equals(b.column(name)), name


def test_known_encoding_of_a_ping_pong_and_a_paced_window():
    ping = _window("native", "dc", 1, 1, [53_217, 54_001, 60_000], [0, 53_247, 107_288])
    paced = _window("native", "internet", 1, 1, [42_000_001, 41_000_000, 43_000_000],
                    [0, 1_000_010, 1_999_990])  # fmt: skip
    table = schema.to_table(pd.concat([ping, paced], ignore_index=True), schema.SAMPLES)
    stored = schema.to_storage(table)
    assert stored.column("value_float").null_count == 6  # every value is a whole number of ns
    assert "value" not in stored.column_names and "t_ns" not in stored.column_names
    assert stored.column("value_milli").to_pylist() == [
        53_217, 54_001, 60_000, 42_000_001, 41_000_000, 43_000_000
    ]  # fmt: skip
    # ping-pong: what remains after the previous round trip is the turnaround (30 ns, 40 ns);
    # paced: the plain step (the send period); a window's first row keeps its own offset
    assert stored.column("t_after_reply").to_pylist() == [False, True, True, False, False, False]
    assert stored.column("t_step_ns").to_pylist() == [0, 30, 40, 0, 1_000_010, 999_980]
    _assert_identical(schema.from_storage(stored), table)


def test_values_that_are_not_whole_ns_stay_floats_and_nulls_survive():
    tput = _window("native", "dc", 1, 1, [0, 0, 0], [0, 10**9, None], "tcp_throughput", "bit/s")
    tput["value"] = [9.41e9, 9.123456789012345e9, np.nan]
    odd = _window("native", "dc", 1, 2, [1, 2, 3], [None, None, None])
    odd["value"] = [0.1 + 0.2, -0.0, None]  # 0.30000000000000004 is not k / 1000
    table = schema.to_table(pd.concat([tput, odd], ignore_index=True), schema.SAMPLES)
    stored = schema.to_storage(table)
    assert stored.column("value_milli").null_count == 6  # only unit "us" is stored as ints
    _assert_identical(schema.from_storage(stored), table)
    assert np.signbit(schema.from_storage(stored).column("value").to_numpy()[4])


def test_written_file_reads_back_identical_and_under_4_bytes_per_sample(tmp_path):
    table = _sockperf_like()
    path = tmp_path / "latency" / "lab" / "samples.parquet"
    schema.write_table(table, path)
    assert schema.is_stored_layout(pq.read_schema(path).names)
    _assert_identical(schema.read_table(path), table)
    read = schema.read_dataset(tmp_path, "latency", "samples")
    np.testing.assert_array_equal(read["value"].to_numpy(), table.column("value").to_numpy())
    measured = int((~table.column("warmup").to_numpy()).sum())
    assert path.stat().st_size / measured <= 4.0
    plain = tmp_path / "plain.parquet"
    pq.write_table(table, plain, compression="zstd")
    assert plain.stat().st_size > 2 * path.stat().st_size  # what the layout is for


def test_part_files_keep_the_plain_layout(tmp_path):
    # the campaign re-reads parts with pq.read_table(schema=SAMPLES): they must stay plain
    table = _sockperf_like(n=200)
    part = tmp_path / "run-001_native_dc_udp.samples.parquet"
    schema.write_table(table, part)
    assert not schema.is_stored_layout(pq.read_schema(part).names)
    _assert_identical(pq.read_table(part, schema=schema.SAMPLES), table)


@pytest.mark.parametrize("shuffle", [False, True])
def test_analysis_loads_the_same_cells_from_either_layout(tmp_path, shuffle):
    table = _sockperf_like(seed=3, n=3_000)
    if shuffle:  # rows in any order: every row then starts its own window
        table = table.take(np.random.default_rng(1).permutation(table.num_rows))
    runs = pd.DataFrame(
        [{"environment": "lab", "campaign": "c", "benchmark": "latency", "run": r,
          "mode": m, "path": p, "variant": "udp", "status": "ok" if r == 1 or p == "dc" else
          "failed"}
         for r in (1, 2) for m in ("native", "docker-bridge") for p in ("dc", "internet")]
    )  # fmt: skip
    cells = {}
    for layout in ("plain", "stored"):
        raw = tmp_path / layout / "latency" / "lab"
        raw.mkdir(parents=True)
        if layout == "plain":
            pq.write_table(table, raw / "samples.parquet", compression="zstd")
        else:
            schema.write_table(table, raw / "samples.parquet")
        schema.write_table(schema.to_table(runs, schema.RUNS), raw / "runs.parquet")
        cells[layout] = latency_analysis.load_cells(
            tmp_path / layout, "latency", latency_analysis.LATENCY_METRICS, batch_rows=5_000
        )
    assert list(cells["plain"]) == list(cells["stored"]) and len(cells["plain"]) == 4
    frame = table.to_pandas()
    for key, cell in cells["stored"].items():
        other = cells["plain"][key]
        np.testing.assert_array_equal(cell.pooled, other.pooled)
        np.testing.assert_array_equal(cell.runs, other.runs)
        # known answer: the failed internet run 2 is left out, warm-up windows too
        env, mode, path, variant = key
        want = frame[(frame["mode"] == mode) & (frame["path"] == path) & ~frame["warmup"]]
        if path == "internet":
            want = want[want["run"] == 1]
        np.testing.assert_array_equal(cell.pooled, np.sort(want["value"].to_numpy()))
        assert [v.size for v in cell.values] == want.groupby("run").size().tolist()


def test_subset_of_every_run_is_the_cell_itself():
    cell = stats.RunSamples.from_arrays([3.0, 1.0, 2.0, 5.0], [1, 1, 2, 2])
    assert cell.subset([1, 2, 7]) is cell
    part = cell.subset([2])
    np.testing.assert_array_equal(part.pooled, [2.0, 5.0])


FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "raw"


@pytest.mark.parametrize("benchmark", ["http", "throughput", "latency"])
def test_committed_fixtures_read_the_same_once_rewritten(tmp_path, benchmark):
    # the fixtures stay in the plain layout; rewritten by today's writer they must read the same
    src = FIXTURE / benchmark / "lab"
    dst = tmp_path / benchmark / "lab"
    dst.mkdir(parents=True)
    schema.write_table(schema.read_table(src / "samples.parquet"), dst / "samples.parquet")
    for name in ("runs.parquet", "hosts.parquet"):
        shutil.copy(src / name, dst / name)
    assert schema.is_stored_layout(pq.read_schema(dst / "samples.parquet").names)
    old = schema.read_dataset(FIXTURE, benchmark, "samples")
    new = schema.read_dataset(tmp_path, benchmark, "samples")
    pd.testing.assert_frame_equal(old, new, check_exact=True)
    if benchmark == "http":
        pd.testing.assert_frame_equal(
            latency_analysis.load_window_metrics(FIXTURE, benchmark),
            latency_analysis.load_window_metrics(tmp_path, benchmark),
            check_exact=True,
        )
