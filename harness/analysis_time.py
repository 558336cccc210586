"""The whole analysis of one raw data directory: wall time per stage and in all, and a digest of
every file it writes, so that two versions of the code can be set side by side on the same data.

Every analysis stage of dvc.yaml (the summaries, the WAN calibration, the instrument check, the
comparisons, the article), in `python -m pipeline.demo`'s order, runs as `python -m
pipeline.stages run <stage>`, one after the other, exactly as `dvc repro` runs it, in a scratch
copy of a checkout's tracked files with a copy of the raw data as data/raw: the checkout itself
is not written. A stage whose raw inputs are missing (no WAN calibration outside the lab) is
listed as skipped. Per stage the bench prints its wall time and the time its notebook's cells
took (the rest is the process, papermill and the kernel starting).

    python -m harness analysis_time                      # this checkout on data/raw (else the
                                                         # raw fixture, tests/fixtures/raw)
    python -m harness.analysis_time --raw DIR --code CHECKOUT --save before.json
    python -m harness.analysis_time --raw DIR --against before.json   # exit 1 if any table,
                                                         # processed file or metric differs

The digests cover reports/tables, data/processed, reports/{numbers,metrics}.json, the article
and the figures. Tables, processed data and metrics must be identical between two versions that
claim the same numbers; figures are listed apart (their files may differ in metadata alone).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_RAW = ROOT / "tests" / "fixtures" / "raw"
NUMBERS = ("reports/tables", "data/processed", "reports/numbers.json", "reports/metrics.json",
           "reports/article.md")  # fmt: skip
FIGURES = ("figures", "reports/article.html")  # the article's HTML holds the figures inline


def analysis_stages(code: Path) -> list[tuple[str, list[str]]]:
    """(stage, its data/raw/... deps) of every analysis stage, in pipeline.demo's order."""
    script = (
        "import json\n"
        "from pipeline.demo import order\n"
        "from pipeline.params import load\n"
        "from pipeline.stages import all_stages\n"
        "p = load()\n"
        "print(json.dumps([(s.name, [d for d in s.deps if d.startswith('data/raw')])\n"
        "    for s, _ in order(all_stages(p), list(p.environments))\n"
        "    if not s.name.startswith('collect-')]))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=code, env=_env(code), check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    return [(name, deps) for name, deps in json.loads(out)]


def _env(code: Path) -> dict[str, str]:
    # the copy's own package first (the virtualenv's editable install points at this checkout)
    return {**os.environ, "PYTHONPATH": str(code)}


def scratch_copy(code: Path, raw: Path, into: Path) -> Path:
    """The checkout's tracked files under ``into``, with a copy of ``raw`` as data/raw."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=code, check=True,
                           capture_output=True).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, files):
        source, target = code / name, into / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    # a copy, not a link: the article names its sources by their path in the repository
    shutil.rmtree(into / "data" / "raw", ignore_errors=True)
    shutil.copytree(raw, into / "data" / "raw", symlinks=True)
    return into


def cell_seconds(executed: Path) -> float | None:
    """The kernel's time in the notebook's cells, from papermill's per-cell metadata."""
    try:
        cells = json.loads(executed.read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return None
    return sum((c.get("metadata", {}).get("papermill", {}).get("duration") or 0.0)
               for c in cells)  # fmt: skip


def run_stages(work: Path, log=print) -> dict[str, dict]:
    """Run every analysis stage in ``work``; per stage its status, wall and cell seconds."""
    results = {}
    for name, raw_deps in analysis_stages(work):
        missing = [d for d in raw_deps if not (work / d).exists()]
        if missing:
            results[name] = {"status": f"skipped: no {', '.join(missing)}"}
            log(f"{name:32s} skipped (no {', '.join(missing)})", flush=True)
            continue
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pipeline.stages", "run", name], cwd=work,
                              env=_env(work), capture_output=True, text=True)  # fmt: skip
        wall = time.perf_counter() - start
        cells = cell_seconds(work / "reports" / "executed" / f"{name}.ipynb")
        status = "ok" if proc.returncode == 0 else f"failed (exit {proc.returncode})"
        results[name] = {"status": status, "wall_s": wall, "cells_s": cells}
        log(f"{name:32s} {wall:6.1f} s   cells {cells or 0:6.1f} s   {status}", flush=True)
        if proc.returncode:
            log(proc.stderr[-3000:], flush=True)
    return results


def digests(work: Path) -> dict[str, str]:
    """sha256 of every output file, by path relative to ``work``."""
    out = {}
    for top in (*NUMBERS, *FIGURES):
        path = work / top
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            if f.is_file():
                out[str(f.relative_to(work))] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def compare(ours: dict[str, str], theirs: dict[str, str]) -> tuple[list[str], list[str]]:
    """(numbers that differ or exist on one side only, figures that do)."""
    differ = sorted(p for p in ours.keys() | theirs.keys() if ours.get(p) != theirs.get(p))
    figures = [p for p in differ if p.startswith(FIGURES)]
    return [p for p in differ if p not in figures], figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_raw = ROOT / "data" / "raw"
    if not default_raw.is_dir() or not any(default_raw.iterdir()):
        default_raw = FIXTURE_RAW
    parser.add_argument("--raw", type=Path, default=default_raw, help="raw data directory")
    parser.add_argument("--code", type=Path, default=ROOT, help="checkout whose code runs")
    parser.add_argument("--save", type=Path, help="write times and digests to this JSON file")
    parser.add_argument("--against", type=Path, help="a --save file to compare outputs with")
    parser.add_argument("--keep", type=Path, help="run in this directory and keep it")
    args = parser.parse_args(argv)
    code, raw = args.code.resolve(), args.raw.resolve()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=code,
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    print(f"analysis of {raw} with {code} ({commit or 'no git'}), {os.cpu_count()} CPUs",
          flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="analysis-time-") as tmp:
        work = args.keep.resolve() if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        scratch_copy(code, raw, work)
        start = time.perf_counter()
        stages = run_stages(work)
        total = time.perf_counter() - start
        sums = digests(work)
    ran = [s for s in stages.values() if "wall_s" in s]
    failed = [n for n, s in stages.items() if s["status"].startswith("failed")]
    slowest = max(stages, key=lambda n: stages[n].get("wall_s", 0.0))
    print(f"summary: analysis of {raw.name}/ ({commit}): {len(ran)} stages in {total:.1f} s, "
          f"slowest {slowest} {stages[slowest].get('wall_s', 0.0):.1f} s"
          + (f"; FAILED: {', '.join(failed)}" if failed else ""), flush=True)  # fmt: skip
    result = {"raw": str(raw), "code": str(code), "commit": commit, "total_s": total,
              "stages": stages, "digests": sums}  # fmt: skip
    if args.save:
        args.save.write_text(json.dumps(result, indent=1) + "\n")
    code_ok = 0 if not failed else 1
    if args.against:
        before = json.loads(args.against.read_text())
        numbers, figures = compare(sums, before["digests"])
        print(f"summary: outputs against {args.against.name} ({before.get('commit')}): "
              f"{len(sums)} files, {len(numbers)} tables/processed/metrics differ, "
              f"{len(figures)} figure files differ", flush=True)  # fmt: skip
        for path in numbers + figures:
            print(f"  differs: {path}", flush=True)
        saved, this = str(before.get("commit"))[:9], (commit or "this run")[:9]
        print(f"{'stage':32s} {saved:>9s} {this:>9s}   (wall, saved run / this run)", flush=True)
        for name, s in stages.items():
            b = before["stages"].get(name, {}).get("wall_s")
            a = s.get("wall_s")
            cells = [f"{v:7.1f} s" if v is not None else f"{'skipped':>9s}" for v in (b, a)]
            print(f"{name:32s} {cells[0]} {cells[1]}", flush=True)
        print(f"{'total':32s} {before['total_s']:7.1f} s {total:7.1f} s", flush=True)
        code_ok = code_ok or (1 if numbers else 0)
    return code_ok


if __name__ == "__main__":
    sys.exit(main())
