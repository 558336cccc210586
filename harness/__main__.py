"""`make bench`: run every bench script in harness/, one process each, and print one summary.

A bench script is any ``harness/<name>.py`` whose name does not start with ``_``; it runs as
``python -m harness.<name>`` and prints its result lines prefixed with ``summary: `` (everything
else it prints is shown as progress). Adding a script is all it takes to add a figure.

    python -m harness                       # every script, in name order
    python -m harness storage               # only these
    python -m harness storage -- --n 1e6    # arguments after -- go to every script run
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from harness._proc import ROOT

PREFIX = "summary: "


def scripts() -> list[str]:
    return sorted(p.stem for p in Path(__file__).parent.glob("*.py") if not p.stem.startswith("_"))


def run(name: str, extra: list[str]) -> tuple[list[str], float, int]:
    """Run one script, echo its output, return (summary lines, seconds, exit code)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", f"harness.{name}", *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    lines = []
    for line in proc.stdout:
        print(f"  [{name}] {line}", end="", flush=True)
        if line.startswith(PREFIX):
            lines.append(line[len(PREFIX) :].rstrip())
    return lines, time.perf_counter() - start, proc.wait()


def main(argv: list[str]) -> int:
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    chosen = (argv[: argv.index("--")] if "--" in argv else argv) or scripts()
    unknown = sorted(set(chosen) - set(scripts()))
    if unknown:
        print(f"unknown bench script(s): {', '.join(unknown)}; have: {', '.join(scripts())}")
        return 2
    results, failed, start = [], [], time.perf_counter()
    for name in chosen:
        print(f"== harness/{name}.py", flush=True)
        lines, seconds, code = run(name, extra)
        results.append((name, lines, seconds, code))
        if code:
            failed.append(name)
    print(f"\n==== bench summary ({time.perf_counter() - start:.0f} s) ====")
    for name, lines, seconds, code in results:
        status = "" if code == 0 else f", FAILED exit {code}"
        print(f"{name} ({seconds:.0f} s{status})")
        for line in lines:
            print(f"  {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
