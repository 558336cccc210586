"""How long must a latency window be on these hosts? The machine's own noise per window length.

One continuous sockperf UDP ping-pong run on the lab's dc path, started by hand (no SSH, no
pipeline; the lab's "split" placement, as the perturbation bench), with the study's flags. Its
round trips are cut into stretches of each window length; for pairs of stretches a fixed gap
apart (about one harness round between two arms), the log ratio of their p50s is what two
perfectly equal arms of a paired comparison would differ by. Its SD is the floor under any
difference such a comparison can resolve; the bench prints it per length, with the rounds a
paired test needs for a 90% interval of +-1% around the mean log ratio (room left inside a
2% margin).

    python -m harness window_noise [-- --seconds 120 --lengths 0.55,2,5,10 --gap 5]

It chose the perturbation bench's latency window (harness/perturbation.py). Needs root and the
embedded lab (brought up if it is down). Traffic stays in the lab.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness._lab import lab_inventory  # noqa: E402
from harness.perturbation import Nsenter, served  # noqa: E402
from pipeline.benchmarks.base import Window  # noqa: E402
from pipeline.benchmarks.latency import LOG_HEADER, Latency  # noqa: E402

HALF_WIDTH = 0.01  # the 90% interval's half-width a paired test should reach
Z90 = 1.645


def read_full_log(path: Path, client_output: str = "") -> tuple[np.ndarray, np.ndarray]:
    """(send time s, round trip us) of every row of a sockperf --full-log file."""
    header = None
    if path.exists():
        with path.open() as f:
            header = next((i for i, line in enumerate(f) if line.startswith(LOG_HEADER)), None)
    if header is None:
        raise RuntimeError(f"sockperf wrote no full log to {path}; its output: "
                           f"{client_output[-500:]!r}")  # fmt: skip
    try:
        log = pd.read_csv(path, skiprows=header + 1, header=None, usecols=[0, 1, 2],
                          names=["packet", "tx", "rx"], dtype=str)  # fmt: skip
        log = log[log["packet"].str.strip().str.isdigit()]  # drops the closing "---" lines
    except (pd.errors.ParserError, pd.errors.EmptyDataError):  # no row of three columns
        log = pd.DataFrame()
    if log.empty:
        raise RuntimeError(f"sockperf's full log {path} holds no round trip; its output: "
                           f"{client_output[-500:]!r}")  # fmt: skip
    tx, rx = log["tx"].astype(float).to_numpy(), log["rx"].astype(float).to_numpy()
    return tx - tx[0], (rx - tx) * 1e6


def stretch_noise(
    t: np.ndarray, rtt: np.ndarray, length: float, gap: float, pairs: int, seed: int = 0
) -> float:
    """SD of log(p50 of a stretch / p50 of the stretch ``gap`` s after it), over ``pairs``
    random pairs of ``length`` s stretches of one run (times ``t`` sorted, seconds)."""
    span = t[-1] - (2 * length + gap)
    if span <= 0:
        raise ValueError(f"a {t[-1]:.0f} s run holds no two {length} s stretches {gap} s apart")
    rng = np.random.default_rng(seed)
    logs = []
    for start in rng.uniform(0.0, span, pairs):
        a = np.searchsorted(t, [start, start + length])
        b = np.searchsorted(t, [start + length + gap, start + 2 * length + gap])
        logs.append(math.log(np.median(rtt[a[0] : a[1]]) / np.median(rtt[b[0] : b[1]])))
    return float(np.std(logs, ddof=1))


def rounds_needed(sd: float, half_width: float = HALF_WIDTH) -> int:
    """Paired rounds for a 90% interval of +-``half_width`` around a mean of log ratios."""
    return math.ceil((Z90 * sd / half_width) ** 2)


def continuous_run(seconds: int, log: Path) -> str:
    """sockperf ping-pong on the dc path for ``seconds``, its full log into ``log``; returns
    the client's own output."""
    inv = lab_inventory()
    bench, hand, window = Latency(), Nsenter(), Window(seconds, 0.0, None)
    server, client = inv.servers[0], inv.dc_client
    argv = bench.client_argv("udp", server.address, window, "dc")
    argv[argv.index("/dev/stdout")] = str(log)  # the same flags; the log into a file
    with served(hand, server, bench.server_argv("udp"), "split"):
        return hand.run(client, argv, bench.client_timeout(window))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=120, help="length of the one run")
    parser.add_argument("--lengths", default="0.55,2,5,10", help="window lengths, seconds")
    parser.add_argument("--gap", type=float, default=5.0, help="seconds between a pair's windows")
    parser.add_argument("--pairs", type=int, default=400, help="pairs drawn per length")
    args = parser.parse_args(argv)
    try:
        lengths = [float(x) for x in args.lengths.split(",")]
    except ValueError:
        parser.error(f"--lengths takes seconds separated by commas, got {args.lengths!r}")
    if args.seconds < 2 * max(lengths) + args.gap + 1:
        parser.error(f"--seconds {args.seconds} is too short for two {max(lengths)} s windows")
    with tempfile.TemporaryDirectory(prefix="co-window-noise-") as tmp:
        log = Path(tmp) / "full-log.csv"
        t, rtt = read_full_log(log, continuous_run(args.seconds, log))
    print(f"one sockperf UDP ping-pong run by hand, {t[-1]:.0f} s, {rtt.size:,} round trips, "
          f"p50 {np.median(rtt):.1f} us; pairs of windows {args.gap:g} s apart")  # fmt: skip
    for length in lengths:
        sd = stretch_noise(t, rtt, length, args.gap, args.pairs)
        print(f"summary: window noise {length:g} s: SD of the log ratio of two windows' p50 "
              f"{sd:.4f}; paired rounds for a 90% interval of +-{HALF_WIDTH:.0%}: "
              f"{rounds_needed(sd)}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
