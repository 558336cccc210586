"""The latency analysis at 1M, 10M and 100M samples, against naive pandas.

For each size a synthetic dataset (harness/_synth.py: 10 modes x 2 paths x 10 runs, warm-up
windows flagged) is written under a temporary directory and analysed in a fresh process:

- pipeline: exactly what notebooks/analysis/21-summarise-latency.ipynb calls,
  ``load_runs`` + ``load_cells`` + ``summarise(variants=LATENCY_METRICS, confidence=0.95)``;
  wall time of those calls and the process's peak RSS;
- naive: pandas reads the parquet, filters, groups by cell and run, takes each run's
  percentiles with ``np.quantile``, and per cell their geometric mean with scipy's t interval
  and the paired per-run shifts to native. Sizes above ``--naive-max`` are not run and are
  extrapolated from the largest measured one (linear in samples); the output says which.

Correctness: the naive percentiles and intervals must equal the pipeline's (to 1e-9
relative; the same per-run quantiles, summed in another order).

    python -m harness.analysis_scale [--sizes 1e6,1e7,1e8] [--naive-max 1e7]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from harness._proc import emit, run_child

GOAL_SECONDS, GOAL_GIB, GOAL_SPEEDUP = 60.0, 4.0, 10.0
CONFIDENCE = 0.95


# --- children --------------------------------------------------------------------------------


def generate(raw: Path, n: int) -> dict:
    from harness import _synth

    shape = _synth.Shape.for_samples(n)
    start = time.perf_counter()
    _synth.write_dataset(raw, shape)
    return {"seconds": time.perf_counter() - start, "n_measured": shape.n_measured}


def pipeline(raw: Path, out: Path) -> dict:
    from pipeline.analysis import latency as latency

    start = time.perf_counter()
    runs = latency.load_runs(raw, "latency")
    cells = latency.load_cells(raw, "latency", latency.LATENCY_METRICS)
    loaded = time.perf_counter()
    summary = latency.summarise(
        cells, runs, variants=latency.LATENCY_METRICS, confidence=CONFIDENCE
    )
    done = time.perf_counter()
    summary.to_parquet(out)
    return {
        "seconds": done - start,
        "load_s": loaded - start,
        "summarise_s": done - loaded,
        "n_samples": int(sum(c.n_samples for c in cells.values())),
        "n_cells": len(cells),
    }


def _naive_read(raw: Path):
    """The measured samples of ok runs as a pandas frame, the straightforward way."""
    import pandas as pd

    files = sorted((raw / "latency").glob("*/samples.parquet"))
    frames = []
    for f in files:
        s = pd.read_parquet(f)
        if "value_milli" in s.columns:  # the stored layout (pipeline/data/schema.py)
            exact = s["value_milli"].notna()
            s["value"] = np.where(exact, s["value_milli"] / 1000.0, s["value_float"])
        frames.append(s)
    s = pd.concat(frames, ignore_index=True)
    runs = pd.concat(pd.read_parquet(f) for f in sorted((raw / "latency").glob("*/runs.parquet")))
    keys = ["environment", "mode", "path", "variant"]
    ok = runs.loc[runs["status"] == "ok", [*keys, "run"]].drop_duplicates()
    s = s[~s["warmup"] & s["metric"].isin(["udp_rtt", "tcp_rtt"]) & s["value"].notna()]
    return s.merge(ok, on=[*keys, "run"])[[*keys, "run", "value"]]


def _q(values: np.ndarray, qs: np.ndarray) -> np.ndarray:
    return np.quantile(values, qs, method="inverted_cdf")


def naive(raw: Path, out: Path) -> dict:
    """The same per-cell percentiles, intervals and shifts to native, done naively."""
    from scipy import stats as st

    from pipeline.analysis import latency as latency

    qs, shift_qs = np.array(latency.QUANTILES), np.array(latency.OVERHEAD_QUANTILES)
    need = np.ceil(10 / (1 - qs) - 1e-9)  # 10 samples beyond a run's percentile
    start = time.perf_counter()
    frame = _naive_read(raw)
    cells = {}
    for key, part in frame.groupby(["environment", "mode", "path", "variant"]):
        cells[key] = {run: g["value"].to_numpy() for run, g in part.groupby("run")}
    points, shifts = {}, {}
    for key, c in cells.items():
        per_run = np.array([_q(v, qs) for v in c.values()])
        short = np.array([min(v.size for v in c.values()) < n for n in need])
        logs = np.log(per_run)
        ci = st.ttest_1samp(logs, 0.0, axis=0).confidence_interval(CONFIDENCE)
        value = np.where(short, np.nan, np.exp(logs.mean(axis=0)))
        points[key] = np.c_[value, np.exp(ci.low), np.exp(ci.high)].tolist()
        base = cells.get((key[0], "native", key[2], key[3]))
        if base is None or key[1] == "native":
            continue
        common = sorted(set(c) & set(base))
        d = np.array([_q(c[r], shift_qs) - _q(base[r], shift_qs) for r in common])
        shifts[key] = (d.mean(axis=0), st.ttest_1samp(d, 0.0, axis=0).confidence_interval())
    done = time.perf_counter()
    with open(out, "w") as fh:
        json.dump({"|".join(k): v for k, v in points.items()}, fh)
    return {"seconds": done - start, "n_shifts": len(shifts)}


# --- parent ----------------------------------------------------------------------------------


def _compare_points(summary_path: Path, naive_points: Path) -> int:
    """Cells whose pipeline p50..p99.9 or intervals differ from the naive ones (1e-9 relative;
    a level not reported is NaN in both)."""
    import pandas as pd

    from pipeline.analysis import latency as latency

    summary = pd.read_parquet(summary_path)
    naive_points = json.loads(naive_points.read_text())
    labs = [latency.q_label(q) for q in latency.QUANTILES]
    bad = 0
    for _, row in summary.iterrows():
        key = "|".join(row[["environment", "mode", "path", "variant"]])
        mine = np.array([[row[f"{b}_us"], row[f"{b}_lo_us"], row[f"{b}_hi_us"]] for b in labs])
        theirs = np.array(naive_points[key], dtype=float)
        theirs[np.isnan(theirs[:, 0])] = np.nan  # a level not reported has no interval either
        bad += int(not np.allclose(mine, theirs, rtol=1e-9, atol=0.0, equal_nan=True))
    return bad + abs(len(summary) - len(naive_points))


def _fmt_n(n: int) -> str:
    return f"{n / 1e6:g}M"


def main(argv: list[str] | None = None) -> list[str]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e6,1e7,1e8")
    ap.add_argument("--naive-max", type=float, default=1e7)
    ap.add_argument("--tmp", default=None, help="parent of the temporary dataset directory")
    ap.add_argument("--worker", choices=["generate", "pipeline", "naive"])
    ap.add_argument("--raw")
    ap.add_argument("--out")
    ap.add_argument("--n", type=float)
    args = ap.parse_args(argv)
    if args.worker == "generate":
        emit(generate(Path(args.raw), int(args.n)))
        return []
    if args.worker == "pipeline":
        emit(pipeline(Path(args.raw), Path(args.out)))
        return []
    if args.worker == "naive":
        emit(naive(Path(args.raw), Path(args.out)))
        return []

    sizes = [int(float(s)) for s in args.sizes.split(",")]
    me = "harness.analysis_scale"
    rows = []
    work = Path(tempfile.mkdtemp(prefix="co-bench-analysis-", dir=args.tmp))
    try:
        for n in sizes:
            raw = work / f"raw-{n}"
            gen = run_child(me, "--worker", "generate", "--raw", str(raw), "--n", str(n))
            row = {"n": gen["n_measured"], "gen_s": gen["wall_s"], "gen_gib": gen["maxrss_gib"]}
            pipe = run_child(me, "--worker", "pipeline", "--raw", str(raw), "--out",
                             str(work / f"summary-{n}.parquet"))  # fmt: skip
            row.update(pipe_s=pipe["seconds"], load_s=pipe["load_s"],
                       summarise_s=pipe["summarise_s"], pipe_gib=pipe["maxrss_gib"],
                       pipe_wall_s=pipe["wall_s"])  # fmt: skip
            if n <= args.naive_max:
                nv = run_child(me, "--worker", "naive", "--raw", str(raw), "--out",
                               str(work / f"naive-{n}.json"))  # fmt: skip
                row.update(naive_s=nv["seconds"], naive_gib=nv["maxrss_gib"],
                           naive_measured=True,
                           point_mismatches=_compare_points(work / f"summary-{n}.parquet",
                                                            work / f"naive-{n}.json"))  # fmt: skip
            rows.append(row)
            shutil.rmtree(raw)
            print(_row_text(row), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _extrapolate_naive(rows)
    return _report(rows)


def _extrapolate_naive(rows: list[dict]) -> None:
    """Sizes without a naive run: the largest measured naive time scaled linearly in samples."""
    measured = [r for r in rows if r.get("naive_measured")]
    if not measured:
        return
    ref = max(measured, key=lambda r: r["n"])
    for r in rows:
        if not r.get("naive_measured"):
            r["naive_s"] = ref["naive_s"] * r["n"] / ref["n"]
            r["naive_from"] = ref["n"]


def _row_text(r: dict) -> str:
    text = (
        f"{_fmt_n(r['n']):>5} samples: pipeline {r['pipe_s']:6.1f} s (load {r['load_s']:.1f} s, "
        f"summarise {r['summarise_s']:.1f} s; process {r['pipe_wall_s']:.1f} s), "
        f"peak {r['pipe_gib']:.2f} GiB | generator {r['gen_s']:.0f} s, {r['gen_gib']:.2f} GiB"
    )
    if r.get("naive_measured"):
        text += (
            f"\n       naive pandas: {r['naive_s']:.1f} s, peak {r['naive_gib']:.2f} GiB; "
            f"cells differing: {r['point_mismatches']}"
        )
    return text


def _report(rows: list[dict]) -> list[str]:
    lines = []
    for r in rows:
        speed = r["naive_s"] / r["pipe_s"] if "naive_s" in r else float("nan")
        how = (
            "naive measured"
            if r.get("naive_measured")
            else f"naive NOT run: extrapolated linearly from {_fmt_n(r['naive_from'])}"
        )
        ok = (r["pipe_s"] <= GOAL_SECONDS and r["pipe_gib"] <= GOAL_GIB) if r["n"] >= 1e8 else None
        goal = "" if ok is None else ("  [goal met]" if ok else "  [GOAL MISSED: <=60 s, <=4 GiB]")
        lines.append(
            f"analysis {_fmt_n(r['n'])}: {r['pipe_s']:.1f} s, {r['pipe_gib']:.2f} GiB peak; "
            f"naive ~{r['naive_s']:.0f} s -> speedup {speed:.0f}x ({how}){goal}"
        )
    for a, b in zip(rows, rows[1:], strict=False):
        lines.append(
            f"analysis growth {_fmt_n(a['n'])}->{_fmt_n(b['n'])} ({b['n'] / a['n']:g}x samples): "
            f"time x{b['pipe_s'] / a['pipe_s']:.2f}, memory x{b['pipe_gib'] / a['pipe_gib']:.2f}"
        )
    checked = [r for r in rows if r.get("naive_measured")]
    if checked:
        bad = sum(r["point_mismatches"] for r in checked)
        lines.append(
            "analysis correctness: pipeline == naive percentiles and t intervals (1e-9) at "
            f"{', '.join(_fmt_n(r['n']) for r in checked)}: "
            + ("identical" if bad == 0 else f"{bad} MISMATCHES")
        )
    return lines


if __name__ == "__main__":
    for line in main():
        print(f"summary: {line}")
