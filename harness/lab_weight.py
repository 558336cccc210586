"""Does the lab's CPU weight protect its measurements from a busy loop outside the lab?

sysbench cpu (``--threads`` = the machine's CPUs, ``--time`` s) runs inside the lab: as a lab
host's process (node1's cgroup, where an SSH session's processes run) and, where node1 has the
cpu benchmark's tool image, in a docker-bridge container on node1 (below node1's cgroup). Each
runs alone and beside a busy loop outside the lab (``--hogs`` shell loops in a session of their
own, as a background job runs: its own autogroup, the root cpu cgroup), with the lab's weight
(``pipeline/lab/weight.py``: cpu.shares 262144) and without it (1024, everyone's default). The
four arms are interleaved and rotated over ``--rounds``. Per weight and place: the median
events/s alone and beside the loop, and their ratio (1 = fully protected; about
1 / (1 + hogs' share) unprotected).

A benchmark of the lab, not a timed test: it prints what it measured. Needs root and the
embedded lab (brought up if down; the weight is left as up() sets it); run it under the lab's
lock (`flock /tmp/lab.lock`). Every loop it starts is bounded in time and killed at the end.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline import lab  # noqa: E402
from pipeline.lab import dockerd, weight  # noqa: E402
from pipeline.lab.commands import LabError  # noqa: E402
from pipeline.lab.topology import CGROUP_PARENT, MANAGER  # noqa: E402


def events_per_s(out: str) -> float:
    found = re.search(r"events per second:\s*([\d.]+)", out)
    if not found:
        raise RuntimeError(f"no sysbench result in: {out[-400:]}")
    return float(found.group(1))


def sysbench_argv(threads: int, seconds: float) -> list[str]:
    return ["sysbench", "cpu", f"--threads={threads}", f"--time={seconds:g}",
            "--cpu-max-prime=10000", "run"]  # fmt: skip


def in_host(base: Path, argv: list[str]) -> float:
    """sysbench as one of node1's processes: moved into node1's cpu cgroup, then exec'd."""
    procs = base / CGROUP_PARENT / MANAGER.name / "cgroup.procs"
    script = f'echo $$ > {procs} && exec "$@"'
    out = subprocess.run(["sh", "-c", script, "sh", *argv], capture_output=True, text=True,
                         timeout=120, check=True).stdout  # fmt: skip
    return events_per_s(out)


def tool_image() -> str | None:
    """An image on node1's dockerd that holds sysbench (the cpu benchmark's tool image)."""
    for image in dockerd.docker(MANAGER, "images", "--format",
                                "{{.Repository}}:{{.Tag}}").split():  # fmt: skip
        try:
            dockerd.docker(MANAGER, "run", "--rm", image, "sysbench", "--version", timeout=60)
        except LabError:
            continue
        return image
    return None


def in_container(image: str, argv: list[str]) -> float:
    """sysbench in a docker-bridge container on node1 (its cgroup below node1's)."""
    out = dockerd.docker(MANAGER, "run", "--rm", "--network", "bridge", "--label",
                         "container-overhead.harness=lab_weight", image, *argv, timeout=120)
    return events_per_s(out)


def start_hogs(n: int, seconds: float) -> list[subprocess.Popen]:
    """``n`` busy shell loops in a new session, each ended by ``timeout`` after ``seconds``."""
    loop = ["timeout", f"{seconds:g}", "sh", "-c", "while :; do :; done"]
    return [subprocess.Popen(loop, start_new_session=True) for _ in range(n)]


def stop(hogs: list[subprocess.Popen]) -> None:
    for hog in hogs:
        if hog.poll() is None:
            os.killpg(hog.pid, signal.SIGKILL)
        hog.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--time", type=float, default=4.0, help="sysbench seconds per run")
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--no-container", action="store_true")
    args = parser.parse_args(argv)
    lab.up()
    found = weight.hierarchy()
    if found is None or found[1] != "v1":
        print("no cgroup v1 cpu hierarchy: this bench sets cpu.shares")
        return 1
    base, _ = found
    shares = base / CGROUP_PARENT / "cpu.shares"
    threads = os.cpu_count() or 2
    command = sysbench_argv(threads, args.time)
    places = {"lab host": lambda: in_host(base, command)}
    image = None if args.no_container else tool_image()
    if image:
        places["docker-bridge container"] = lambda: in_container(image, command)
    else:
        print("no image with sysbench on node1: the container arm is left out")
    arms = [(w, hog) for w in ("weight", "no weight") for hog in (False, True)]
    results: dict[tuple[str, str, bool], list[float]] = {}
    hogs: list[subprocess.Popen] = []
    try:
        for r in range(args.rounds):
            for w, hog in arms[r % len(arms):] + arms[: r % len(arms)]:
                shares.write_text(str(weight.V1_SHARES if w == "weight" else weight.V1_DEFAULT))
                for place, run in places.items():
                    if hog:
                        hogs = start_hogs(args.hogs, args.time + 30)
                        time.sleep(0.5)
                    try:
                        value = run()
                    finally:
                        stop(hogs)
                        hogs = []
                    results.setdefault((w, place, hog), []).append(value)
                    print(f"round {r + 1} {w:9} {place:24} {'loop' if hog else 'alone':5} "
                          f"{value:8.1f} events/s", flush=True)  # fmt: skip
    finally:
        stop(hogs)
        shares.write_text(str(weight.V1_SHARES))  # as up() leaves it
    print(f"\nsysbench cpu --threads={threads}, {args.time:g} s; {args.hogs} busy loop(s) "
          f"outside the lab; medians over {args.rounds} rounds")  # fmt: skip
    for w in ("weight", "no weight"):
        for place in places:
            alone = float(np.median(results[(w, place, False)]))
            loaded = float(np.median(results[(w, place, True)]))
            ratios = np.array(results[(w, place, True)]) / np.array(results[(w, place, False)])
            print(f"{w:9} {place:24} alone {alone:8.1f}  beside the loop {loaded:8.1f}  "
                  f"ratio {loaded / alone:.3f} (per round {', '.join(f'{x:.2f}' for x in ratios)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
