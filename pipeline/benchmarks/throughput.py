"""`throughput`: iperf3 TCP, one stream, JSON output.

Samples: one `tcp_throughput` row per reporting interval (omitted intervals dropped) and one
`tcp_throughput_received` row per window, the receiver-side total, which is the per-run value
the analysis uses (what arrived, not what the sender queued).
"""

from __future__ import annotations

import json

from pipeline.benchmarks.base import Benchmark, Sample, ToolOutputError, Window

PORT = 5201


class Throughput(Benchmark):
    name = "throughput"
    tool = "iperf3"
    binaries = ("/usr/bin/iperf3",)
    port = PORT
    paths = ("dc", "local")
    variants = ("tcp",)
    summary_metric = "tcp_throughput_received"

    def server_argv(self, variant: str) -> list[str]:
        return ["/usr/bin/iperf3", "--server", "--port", str(self.port)]

    def client_argv(self, variant: str, address: str, window: Window) -> list[str]:
        return [
            "/usr/bin/iperf3",
            "--client",
            address,
            "--port",
            str(self.port),
            "--time",
            f"{window.seconds:g}",
            "--omit",
            f"{window.omit_seconds:g}",
            "--interval",
            "1",
            "--json",
        ]

    def version_argv(self) -> list[str]:
        return ["/usr/bin/iperf3", "--version"]

    def format_value(self, value: float) -> str:
        return f"{value / 1e9:.2f} Gbit/s"

    def is_connect_error(self, raw: str) -> bool:
        try:
            error = json.loads(raw).get("error", "")
        except ValueError:
            return False
        return "unable to connect" in error or "unable to receive" in error

    def parse(self, variant: str, raw: str) -> list[Sample]:
        return parse_iperf3_tcp(raw)


def parse_iperf3_tcp(raw: str) -> list[Sample]:
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise ToolOutputError(f"iperf3 output is not JSON ({exc}): {raw[:200]!r}") from None
    if doc.get("error"):
        raise ToolOutputError(f"iperf3 failed: {doc['error']}")
    try:
        intervals = doc["intervals"]
        received = doc["end"]["sum_received"]
    except KeyError as exc:
        raise ToolOutputError(f"iperf3 JSON lacks {exc}: not a TCP client report") from None
    samples = []
    kept = [i["sum"] for i in intervals if not i["sum"].get("omitted", False)]
    if not kept:
        raise ToolOutputError("iperf3 reported no measured interval (window shorter than --omit?)")
    first_start = kept[0]["start"]
    for index, interval in enumerate(kept):
        samples.append(
            Sample(
                metric="tcp_throughput",
                unit="bit/s",
                sample=index,
                value=float(interval["bits_per_second"]),
                t_ns=round((interval["start"] - first_start) * 1e9),
            )
        )
    samples.append(
        Sample("tcp_throughput_received", "bit/s", 0, float(received["bits_per_second"]))
    )
    return samples
