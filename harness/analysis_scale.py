"""The latency analysis at 1M, 10M and 100M samples, against naive pandas.

For each size a synthetic dataset (harness/_synth.py: 10 modes x 2 paths x 10 runs, warm-up
windows flagged) is written under a temporary directory and analysed in a fresh process:

- pipeline: exactly what notebooks/analysis/21-summarise-latency.ipynb calls,
  ``load_runs`` + ``load_cells`` + ``summarise(variants=LATENCY_METRICS, confidence=0.95,
  n_boot=4000)``; wall time of those calls and the process's peak RSS;
- naive: pandas reads the parquet, filters, groups by cell, takes the pooled percentiles with
  ``np.quantile`` and bootstraps by concatenating the resampled runs' samples for every
  replicate (percentiles of each cell and the paired shift to native). It runs only
  ``--naive-boot`` replicates and its time is extrapolated linearly per replicate to 4000;
  sizes above ``--naive-max`` are not run at all and are extrapolated from the largest measured
  one (linear in samples). The output says which numbers are measured and which extrapolated.

Correctness: the naive point percentiles must equal the pipeline's exactly (inverted-CDF), and
the naive replicates must equal ``stats.pooled_quantiles`` on the same run draws.

    python -m harness.analysis_scale [--sizes 1e6,1e7,1e8] [--naive-max 1e7] [--naive-boot 20]
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
N_BOOT, CONFIDENCE, SEED = 4000, 0.95, 20261121


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
        cells, runs, variants=latency.LATENCY_METRICS, confidence=CONFIDENCE, n_boot=N_BOOT,
        seed=SEED,
    )  # fmt: skip
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
        if "value_milli" in s.columns:  # the stored layout (pipeline/analysis/schema.py)
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


def _naive_ci(boot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    alpha = 1.0 - CONFIDENCE
    return tuple(np.nanquantile(boot, [alpha / 2, 1 - alpha / 2], axis=0))


def naive(raw: Path, out: Path, n_boot: int) -> dict:
    """The same per-cell percentiles, intervals and shifts to native, done naively; only the
    first ``n_boot`` of the 4000 run draws are bootstrapped (the draws are the pipeline's)."""
    from pipeline.analysis import latency as latency

    qs, shift_qs = np.array(latency.QUANTILES), np.array(latency.OVERHEAD_QUANTILES)
    start = time.perf_counter()
    frame = _naive_read(raw)
    cells = {}
    for key, part in frame.groupby(["environment", "mode", "path", "variant"]):
        cells[key] = {run: g["value"].to_numpy() for run, g in part.groupby("run")}
    points = {key: _q(np.concatenate(list(c.values())), qs) for key, c in cells.items()}
    fixed = time.perf_counter()
    boots, shifts = {}, {}
    for key, c in cells.items():
        runs = sorted(c)
        idx = np.random.default_rng(SEED).integers(0, len(runs), (N_BOOT, len(runs)))[:n_boot]
        boots[key] = np.array([_q(np.concatenate([c[runs[i]] for i in row]), qs) for row in idx])
        base = cells.get((key[0], "native", key[2], key[3]))
        if base is None or key[1] == "native":
            continue
        common = sorted(set(c) & set(base))
        idx = np.random.default_rng(SEED).integers(0, len(common), (N_BOOT, len(common)))
        rep = []
        for row in idx[:n_boot]:
            a = np.concatenate([c[common[i]] for i in row])
            b = np.concatenate([base[common[i]] for i in row])
            qa, qb = _q(a, shift_qs), _q(b, shift_qs)
            rep.append(np.r_[qa - qb, qa / qb])  # shift and ratio to native
        shifts[key] = np.array(rep)
    intervals = {key: _naive_ci(b) for key, b in boots.items()}  # noqa: F841 (the work counts)
    shift_ci = {key: _naive_ci(b) for key, b in shifts.items()}  # noqa: F841
    done = time.perf_counter()
    boot_s = done - fixed
    result = {
        "fixed_s": fixed - start,
        "boot_s": boot_s,
        "n_boot_run": n_boot,
        "seconds_4000": (fixed - start) + boot_s * N_BOOT / n_boot,
    }
    result.update(_check_replicates(cells, boots, qs))
    with open(out, "w") as fh:
        json.dump({"|".join(k): v.tolist() for k, v in points.items()}, fh)
    return result


def _check_replicates(cells: dict, boots: dict, qs: np.ndarray) -> dict:
    """Naive replicates against ``stats.pooled_quantiles`` on the same draws (not timed)."""
    from pipeline.analysis import stats

    worst = 0
    for key, c in cells.items():
        runs = sorted(c)
        cell = stats.RunSamples.from_arrays(
            np.concatenate([c[r] for r in runs]), np.repeat(runs, [c[r].size for r in runs])
        )
        weights = stats.bootstrap_run_weights(len(runs), N_BOOT, SEED)[: len(boots[key])]
        fast = stats.pooled_quantiles(cell, qs, weights)
        worst = max(worst, int(np.sum(fast != boots[key])))
    return {"replicate_mismatches": worst}


# --- parent ----------------------------------------------------------------------------------


def _compare_points(summary_path: Path, naive_points: Path) -> int:
    """Cells whose pipeline p50..p99.9 differ from the naive ones (exact comparison)."""
    import pandas as pd

    from pipeline.analysis import latency as latency

    summary = pd.read_parquet(summary_path)
    naive_points = json.loads(naive_points.read_text())
    cols = [f"{latency.q_label(q)}_us" for q in latency.QUANTILES]
    bad = 0
    for _, row in summary.iterrows():
        key = "|".join(row[["environment", "mode", "path", "variant"]])
        got = row[cols].to_numpy(dtype=float)
        bad += int(not np.array_equal(got, np.array(naive_points[key])))
    return bad + abs(len(summary) - len(naive_points))


def _fmt_n(n: int) -> str:
    return f"{n / 1e6:g}M"


def main(argv: list[str] | None = None) -> list[str]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e6,1e7,1e8")
    ap.add_argument("--naive-max", type=float, default=1e7)
    ap.add_argument("--naive-boot", type=int, default=20)
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
        emit(naive(Path(args.raw), Path(args.out), args.naive_boot))
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
                               str(work / f"naive-{n}.json"), "--naive-boot",
                               str(args.naive_boot))  # fmt: skip
                row.update(naive_s=nv["seconds_4000"], naive_fixed_s=nv["fixed_s"],
                           naive_boot_s=nv["boot_s"], naive_gib=nv["maxrss_gib"],
                           naive_measured=True,
                           point_mismatches=_compare_points(work / f"summary-{n}.parquet",
                                                            work / f"naive-{n}.json"),
                           replicate_mismatches=nv["replicate_mismatches"])  # fmt: skip
            rows.append(row)
            shutil.rmtree(raw)
            print(_row_text(row, args.naive_boot), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _extrapolate_naive(rows)
    return _report(rows, args.naive_boot)


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


def _row_text(r: dict, naive_boot: int) -> str:
    text = (
        f"{_fmt_n(r['n']):>5} samples: pipeline {r['pipe_s']:6.1f} s (load {r['load_s']:.1f} s, "
        f"summarise {r['summarise_s']:.1f} s; process {r['pipe_wall_s']:.1f} s), "
        f"peak {r['pipe_gib']:.2f} GiB | generator {r['gen_s']:.0f} s, {r['gen_gib']:.2f} GiB"
    )
    if r.get("naive_measured"):
        text += (
            f"\n       naive pandas: {r['naive_fixed_s']:.1f} s read+points + "
            f"{r['naive_boot_s']:.1f} s for {naive_boot} replicates -> {r['naive_s']:.0f} s "
            f"at {N_BOOT} (extrapolated per replicate), peak {r['naive_gib']:.2f} GiB; "
            f"point percentiles differing: {r['point_mismatches']} cells, "
            f"replicates differing: {r['replicate_mismatches']}"
        )
    return text


def _report(rows: list[dict], naive_boot: int) -> list[str]:
    lines = []
    for r in rows:
        speed = r["naive_s"] / r["pipe_s"] if "naive_s" in r else float("nan")
        how = (
            f"naive measured ({naive_boot} of {N_BOOT} replicates, per-replicate extrapolation)"
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
        bad = sum(r["point_mismatches"] + r["replicate_mismatches"] for r in checked)
        lines.append(
            "analysis correctness: pipeline == naive point percentiles (exact, inverted-CDF) and "
            f"bootstrap replicates at {', '.join(_fmt_n(r['n']) for r in checked)}: "
            + ("identical" if bad == 0 else f"{bad} MISMATCHES")
        )
    return lines


if __name__ == "__main__":
    for line in main():
        print(f"summary: {line}")
