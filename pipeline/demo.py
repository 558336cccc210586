"""`make demo`'s run of the pipeline: one benchmark's chain at a time, a first figure early.

`dvc repro` alone runs every collection before any summary (it orders stages by their data
only), so a first figure waits for the last campaign. Here each benchmark's collection stage(s)
run, then its summary, before the next benchmark; the WAN calibration, the instrument check,
the comparisons and the article follow; a last `dvc repro` confirms that nothing is left. Each
stage is one `dvc repro --single-item <stage>` in an order that respects the stages' data (the
stages before it are done), so DVC still decides what is up to date and records every lock.
A progress line names the stage and its place in the whole; the figures and tables a stage
wrote are listed as they appear. A failed stage stops the run with its name and a non-zero exit.

    python -m pipeline.demo            # run every stage of dvc.yaml in that order
    python -m pipeline.demo --list     # the order only
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from pipeline.params import Params, ParamsError, load
from pipeline.stages import ROOT, Stage, all_stages

ARTICLE = ("reports/article.md", "reports/article.html")


def _name(stage: Stage, environment: str | None) -> str:
    return f"{stage.name}@{environment}" if environment else stage.name


def _writes(stage: Stage) -> list[str]:
    return [next(iter(o)) if isinstance(o, dict) else o for o in stage.outs]


def _reads(stage: Stage, producer: str) -> bool:
    """Whether the stage depends on what a stage writing ``producer`` makes (a path, or a
    directory holding or held by it)."""
    return any(d == producer or d.startswith(producer + "/") or producer.startswith(d + "/")
               for d in stage.deps)  # fmt: skip


def order(stages: list[Stage], environments: list[str]) -> list[tuple[Stage, str | None]]:
    """Every stage (per environment where it is), each summary right after the collections it
    reads, the rest in reading order; a stage never comes before one whose outputs it reads."""
    def expand(stage: Stage) -> list[tuple[Stage, str | None]]:
        return [(stage, e) for e in environments] if stage.per_environment else [(stage, None)]

    first = [s for s in stages if s.name.startswith("summarise-") and any(
        d.startswith("data/raw/") for d in s.deps) and not s.name.endswith(
        ("-instrument", "-wan-calibration"))]  # fmt: skip
    placed: list[Stage] = []
    for summary in first:
        feeding = [s for s in stages if s.per_environment and s not in placed and any(
            _reads(summary, o.replace("/{env}", "")) for o in _writes(s))]  # fmt: skip
        placed += [*feeding, summary]
    placed += [s for s in stages if s not in placed]
    for i, stage in enumerate(placed):  # a stage reading a later stage's outputs: wrong order
        later = [s.name for s in placed[i + 1:]
                 if any(_reads(stage, o.replace("/{env}", "")) for o in _writes(s))]
        if later:
            raise RuntimeError(f"{stage.name} would run before {', '.join(later)}, which it reads")
    return [pair for stage in placed for pair in expand(stage)]


def _made(stage: Stage) -> list[str]:
    """The figures and tables the stage wrote (those that exist)."""
    tables = [o for o in _writes(stage) if o.endswith(".md")]
    files = [*stage.figures, *tables] + (list(ARTICLE) if stage.name == "assemble-article" else [])
    return [f for f in files if (ROOT / f).exists()]


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


def kubernetes_note(params: Params) -> str | None:
    """One line, where an environment is the embedded lab, this machine lacks the Kubernetes
    build and the profile plans a Kubernetes mode: which campaigns skip them, and the fix (the
    campaigns themselves each say so deep in their output)."""
    from pipeline.benchmarks import BENCHMARKS
    from pipeline.collect.modes import MODES, STUDY_MODES
    from pipeline.environments import provider
    from pipeline.lab import kubernetes

    if not any(provider(ROOT / f) for f in params.environments.values()):
        return None
    if kubernetes.missing_build() is None:
        return None
    planning = sorted(
        name for name, bench in BENCHMARKS.items() if name in params.profile and any(
            MODES[m].cluster == "kubernetes" for m in params.modes(name) or STUDY_MODES
            if m in MODES and (bench.modes is None or m in bench.modes))
    )  # fmt: skip
    if not planning:
        return None
    return (f"Kubernetes modes: skipped in {', '.join(planning)} (Kubernetes is not built on "
            f"this machine); `make kubernetes` builds it once, in about 10 minutes.")  # fmt: skip


def run(dvc: str = "dvc", log=print) -> int:
    """Every stage in order, then `dvc repro`; 0, or the failed command's exit status."""
    params = load()
    plan = order(all_stages(params), list(params.environments))
    note = kubernetes_note(params)
    if note:
        log(note, flush=True)
    start = time.monotonic()
    for i, (stage, env) in enumerate(plan, 1):
        name = _name(stage, env)
        log(f"[stage {i}/{len(plan)}] {name}  ({_clock(time.monotonic() - start)} so far)",
            flush=True)  # fmt: skip
        code = subprocess.call([dvc, "repro", "--single-item", name], cwd=ROOT)
        if code != 0:
            log(f"\nstage {name} failed (exit {code}): its error is above (a campaign lists "
                "the steps that failed). Fix the cause and run `make demo` again, or "
                f"`dvc repro {name}` for this stage alone: finished stages are kept and a "
                "campaign measures only what is missing or failed.", flush=True)  # fmt: skip
            return code
        for path in _made(stage):
            log(f"  -> {path}", flush=True)
    log(f"[check] dvc repro: every stage up to date  ({_clock(time.monotonic() - start)})",
        flush=True)  # fmt: skip
    code = subprocess.call([dvc, "repro"], cwd=ROOT)
    if code != 0:
        log(f"\n`dvc repro` failed (exit {code}): its error is above.", flush=True)
        return code
    log(f"\nDone in {_clock(time.monotonic() - start)}: the article is {ARTICLE[0]} "
        f"({ARTICLE[1]} with the figures inline).", flush=True)  # fmt: skip
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        params = load()
    except ParamsError as exc:
        print(exc, file=sys.stderr)
        return 1
    if args == ["--list"]:
        plan = order(all_stages(params), list(params.environments))
        for i, (stage, env) in enumerate(plan, 1):
            print(f"{i:3d} {_name(stage, env)}")
        return 0
    if args:
        print(__doc__, file=sys.stderr)
        return 2
    return run(dvc=str(Path(sys.executable).with_name("dvc")))


if __name__ == "__main__":
    sys.exit(main())
