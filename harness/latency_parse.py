"""What parsing a counted latency window costs: the whole sockperf log converted, or only the
window's rows (``limit``), the rest counted and checked.

sockperf runs for a time sized from the slowest accepted rate, so a fast mode logs many more
round trips than a counted window keeps (about 30 to 130 per kept one on the lab). The script
builds such an output from the captured dc log's format (``--rows`` rows, ``--count`` kept),
times both parses in alternating rounds and prints their ratio. Needs no lab; traffic: none.

    python -m harness.latency_parse                      # 130,000 rows, a 1,000-row window
    python -m harness.latency_parse --rows 300000 --count 10000 --rounds 7
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.benchmarks.latency import LOG_HEADER, parse_sockperf_full_log  # noqa: E402

CAPTURED = ROOT / "tests" / "unit" / "data" / "sockperf-udp-pingpong-dc.log"


def output(rows: int) -> str:
    """A sockperf client output with ``rows`` full-log rows, its banner and trailer taken from
    the captured dc log (its valid-message count set to match)."""
    lines = CAPTURED.read_text().splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith(LOG_HEADER)) + 1
    tail = next(i for i in range(head, len(lines)) if lines[i].startswith("---"))
    banner = "\n".join(lines[:head]).replace("ReceivedMessages=3100", f"ReceivedMessages={rows}")
    body = "".join(
        f"{i}, {2 + i // 40000}.{(i % 40000) * 25000:09d}, "
        f"{2 + i // 40000}.{(i % 40000) * 25000 + 20000:09d}, 10.000\n" for i in range(rows)
    )
    return f"{banner}\n{body}" + "\n".join(lines[tail:]) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=130_000)
    parser.add_argument("--count", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    text = output(args.rows)
    whole, counted = [], []
    for _ in range(args.rounds):  # alternating, so drift hits both alike
        for times, limit in ((whole, None), (counted, args.count)):
            start = time.perf_counter()
            samples = parse_sockperf_full_log(text, "udp_rtt", limit=limit)
            times.append(time.perf_counter() - start)
            assert len(samples) == (args.rows if limit is None else args.count)
    w, c = statistics.median(whole), statistics.median(counted)
    print(f"summary: latency parse, {args.rows:,} rows, a {args.count:,}-row window, median of "
          f"{args.rounds} rounds: "
          f"whole log {w * 1e3:.0f} ms, window only {c * 1e3:.0f} ms, ratio {w / c:.1f}x")


if __name__ == "__main__":
    main()
