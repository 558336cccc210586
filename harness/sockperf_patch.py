"""Does removing sockperf's start-up pause change what it measures? Debian's sockperf 3.7 client
against the patched one the latency benchmark runs (`make setup` builds it into .make/bin with
tools/sockperf/no_startup_pause.py), on loopback.

One sockperf server per protocol on 127.0.0.1 (Debian's binary: the patch touches only the
client). Per round, each (build, protocol) client runs once, protocols in a seeded random order
and a protocol's builds back to back in random order, so a drift of the machine hits both
builds alike. ``--null-arm`` adds Debian's build again as a third arm: what Debian's build
differs from itself by is the floor under any difference this design can resolve. 40 rounds
(~9 min): with 20, one window caught by the machine's other work could decide a verdict. A run
is one window of the latency benchmark: its own argv (`Latency.client_argv`, --time sized from
the count) and its own parser, keeping the first COUNT round trips. Per protocol and
statistic (each window's p50 and p99 round trip), the rounds' paired log ratios patched/stock
give the geometric mean ratio, its 95% t interval and the study's verdict against +-2%
(`pipeline.analysis.stats`: TOST, equivalent when the 90% interval lies inside 0.98..1.02).
Also each build's wall time per client run and that less its --time: the fixed time
`SOCKPERF_STARTUP_S` and the drain in pipeline/benchmarks/latency.py account for.

Server and client are pinned, the same way for both builds: by default both on one CPU, where a
loopback round trip is a local wake-up (p50 ~10 us, window to window within ~2% here), so the
comparison resolves 2%; `--placement split` puts them on two CPUs as the lab's campaigns do,
where every round trip wakes the other (virtual) CPU and a window's p50 moves by tens of
percent from one run to the next on this 2-core VM. Left to the scheduler, the two placements
alternate by chance and move a window's p50 several-fold (pipeline/lab/cpus.py). Needs no lab
and no root; every run is bounded by its --time and a timeout.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness._paired import paired_ratio  # noqa: E402
from pipeline.benchmarks.base import Window  # noqa: E402
from pipeline.benchmarks.latency import Latency, sockperf_seconds  # noqa: E402

STOCK = "/usr/bin/sockperf"
PATCHED = str(ROOT / ".make/bin/sockperf")
ADDRESS = "127.0.0.1"  # loopback only
PORTS = {"udp": 11311, "tcp": 11312}  # away from sockperf's default, which the lab uses
MARGIN = 0.02
STATISTICS = {"p50": 0.5, "p99": 0.99}


def pinned(argv: list[str], cpu: int | None) -> list[str]:
    return argv if cpu is None else ["taskset", "-c", str(cpu), *argv]


def start_server(variant: str, cpu: int | None) -> subprocess.Popen:
    bench = Latency()
    bench.port = PORTS[variant]
    argv = [STOCK, *bench.server_argv(variant)[1:], "--ip", ADDRESS]
    server = subprocess.Popen(pinned(argv, cpu), stdout=subprocess.DEVNULL,
                              stderr=subprocess.STDOUT)  # fmt: skip
    time.sleep(0.5)
    if server.poll() is not None:
        raise SystemExit(f"sockperf server on {ADDRESS}:{PORTS[variant]} exited at once")
    return server


def client_run(binary: str, variant: str, window: Window, cpu: int | None) -> tuple[list, float]:
    """One window: (the first ``window.count`` round trips in us, the run's wall time in s)."""
    bench = Latency()
    bench.port = PORTS[variant]
    argv = [binary, *bench.client_argv(variant, ADDRESS, window, "dc")[1:]]
    start = time.perf_counter()
    out = subprocess.run(pinned(argv, cpu), capture_output=True, text=True,
                         timeout=bench.client_timeout(window))  # fmt: skip
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"{binary} exited {out.returncode}: {out.stdout[-500:]}{out.stderr}")
    return [s.value for s in bench.parse(variant, out.stdout, window)], wall


def compare(variant: str, name: str, arm: str, values: list[float], stock: list[float]) -> str:
    ratio = paired_ratio(values, stock, MARGIN, higher_is_better=False)
    return (
        f"{variant} {name} {arm}/stock {ratio}; medians {np.median(values):.2f} / "
        f"{np.median(stock):.2f} us"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="harness.sockperf_patch")
    parser.add_argument("--windows", type=int, default=40, help="windows per build and protocol")
    parser.add_argument("--count", type=int, default=2000, help="round trips per window")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--variants", default="udp,tcp")
    parser.add_argument("--placement", choices=("same", "split"), default="same",
                        help="server and client on one CPU (default) or on two")  # fmt: skip
    parser.add_argument("--null-arm", action="store_true",
                        help="a control arm: Debian's build again, the machine's own noise")
    args = parser.parse_args(argv)
    if not 2 <= args.windows <= 200 or not 100 <= args.count <= 100_000:
        parser.error("--windows must be 2..200 and --count 100..100,000")
    if not Path(PATCHED).is_file():
        print(f"{PATCHED} is missing: run `make setup` (it builds it)")
        return 1
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    cpus = sorted(os.sched_getaffinity(0))
    if args.placement == "split" and len(cpus) < 2:
        parser.error("--placement split needs two CPUs")
    server_cpu, client_cpu = (cpus[0], cpus[1]) if args.placement == "split" else cpus[-1:] * 2
    window = Window(seconds=0.0, count=args.count)
    seconds = sockperf_seconds(window, "dc")
    builds = {"stock": STOCK, "patched": PATCHED, **({"again": STOCK} if args.null_arm else {})}
    rng = random.Random(args.seed)
    p = {(b, v, s): [] for b in builds for v in variants for s in STATISTICS}
    walls = {b: [] for b in builds}  # "again" is the stock binary: its walls are stock's too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout still stops the servers
    servers = [start_server(v, server_cpu) for v in variants]
    try:
        for round_ in range(args.windows):
            # a protocol's builds back to back, in random order: pairs close in time
            order = []
            for variant in rng.sample(variants, len(variants)):
                order += [(b, variant) for b in rng.sample(list(builds), len(builds))]
            for build, variant in order:
                rtt, wall = client_run(builds[build], variant, window, client_cpu)
                walls[build].append(wall)
                for name, q in STATISTICS.items():
                    value = np.quantile(rtt, q, method="inverted_cdf")
                    p[build, variant, name].append(float(value))
            print(f"round {round_ + 1}/{args.windows}, {'/'.join(builds)}: " + ", ".join(
                f"{v} {name} " + "/".join(f"{p[b, v, name][-1]:.1f}" for b in builds) + " us"
                for v in variants for name in STATISTICS), flush=True)  # fmt: skip
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=10)
    print(f"summary: {args.windows} windows of {args.count:,} round trips per build and "
          f"protocol on {ADDRESS}, interleaved in random order (seed {args.seed}), server on "
          f"CPU {server_cpu}, client on CPU {client_cpu}")  # fmt: skip
    for arm in [b for b in builds if b != "stock"]:
        for variant in variants:
            for name in STATISTICS:
                line = compare(variant, name, arm, p[arm, variant, name], p["stock", variant, name])
                print(f"summary: {line}")
    for build, w in walls.items():
        w = np.asarray(w)
        print(f"summary: {build} client run wall time: median {np.median(w):.3f} s "
              f"(min {w.min():.3f}, max {w.max():.3f}, n {w.size}), --time {seconds} s: "
              f"{np.median(w) - seconds:.3f} s outside it")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
