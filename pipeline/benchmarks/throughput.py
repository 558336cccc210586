"""`throughput`: iperf3, one stream, JSON output; variants `tcp` and `udp`.

TCP samples: one `tcp_throughput` row per reporting interval (omitted intervals dropped) and
one `tcp_throughput_received` row per window, the receiver-side total, which is the per-run
value the analysis uses (what arrived, not what the sender queued).

UDP (`--udp --bitrate UDP_BITRATE --length UDP_LENGTH`): a fixed offered load, so the
per-window results are what the path did with it: `udp_throughput` per interval (sender side),
and per window from iperf3's end summary as the receiver saw it (`end.sum_received`, which
iperf 3.12's client JSON carries): `udp_throughput_received` (bit/s), `udp_jitter` (ms) and
`udp_loss` (percent of datagrams lost). The 001 article offered 25 Gbit/s on 25 GbE; the lab's
native dc path (2 cores, veth + bridge) lost ~0.2-0.3 % at 100-200 Mbit/s and 10-20 % from
300 Mbit/s up, so the rate is 200 Mbit/s: a load every mode can carry, where loss and jitter
show a mode's cost instead of the sender's overload.
"""

from __future__ import annotations

import json

from pipeline.benchmarks.base import Benchmark, Sample, ToolOutputError, Window

PORT = 5201
UDP_BITRATE = "200M"  # offered UDP load, bit/s (iperf3 suffixes): see the module docstring
# Datagram payload: the same on every mode and path (iperf3 would pick it from each path's
# MTU), and it fits the overlay network's 1450-byte MTU without fragmenting.
UDP_LENGTH = 1400
# How much longer than the sender's window the receiver's may last (the last segments in
# flight). A longer one means the path stalled (a partition, a dead link) past the window's end
# and the data waited undelivered: the window measured the outage, not the mode.
RECEIVER_LAG_S = 1.0
# Where the embedded lab runs client and server (pipeline/lab/cpus.py): on one CPU, as latency
# does, so every mode's rate is the CPU cost of both ends on one CPU; left to the scheduler a
# window moves between one CPU's rate and two's (docs/methods.md, "CPU placement").
PLACEMENT = "colocated"


class Throughput(Benchmark):
    title = "Network throughput"
    analysis = "throughput"
    tables = ("throughput", "throughput_udp")
    margin = "network"
    name = "throughput"
    tool = "iperf3"
    binaries = ("/usr/bin/iperf3",)
    port = PORT
    paths = ("dc", "local")
    variants = ("tcp", "udp")
    summary_metric = "{variant}_throughput_received"
    whole_seconds = ("seconds", "omit_seconds", "warmup_seconds")  # iperf3's --time, --omit
    options = {"placement": PLACEMENT}  # a profile may set another (Campaign's placement)

    def server_argv(self, variant: str) -> list[str]:
        return ["/usr/bin/iperf3", "--server", "--port", str(self.port)]

    def server_udp(self, variant: str) -> bool:
        return variant == "udp"

    def server_group(self, variant: str) -> str:
        return "iperf3"  # one `iperf3 --server` serves TCP and UDP tests, one after the other

    def client_argv(
        self, variant: str, address: str, window: Window, path: str = "dc"
    ) -> list[str]:
        if variant not in self.variants:
            raise ValueError(f"throughput variant must be one of {self.variants}, got {variant!r}")
        if any(not float(x).is_integer() for x in (window.seconds, window.omit_seconds)):
            raise ValueError(f"iperf3 takes whole seconds only, got {window}")
        udp = ["--udp", "--bitrate", UDP_BITRATE, "--length", str(UDP_LENGTH)]
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
            *(udp if variant == "udp" else []),
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

    def parse(self, variant: str, raw: str, window: Window | None = None) -> list[Sample]:
        return parse_iperf3_udp(raw) if variant == "udp" else parse_iperf3_tcp(raw)


def _load(raw: str) -> dict:
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise ToolOutputError(f"iperf3 output is not JSON ({exc}): {raw[:200]!r}") from None
    if not isinstance(doc, dict):
        raise ToolOutputError(f"iperf3 output is not a JSON report: {raw[:200]!r}")
    if doc.get("error"):
        raise ToolOutputError(f"iperf3 failed: {doc['error']}")
    return doc


def _interval_samples(intervals: list[dict], metric: str) -> list[Sample]:
    try:
        kept = [i["sum"] for i in intervals if not i["sum"].get("omitted", False)]
    except (KeyError, TypeError, AttributeError):
        raise ToolOutputError("iperf3 intervals are not interval reports") from None
    if not kept:
        raise ToolOutputError("iperf3 reported no measured interval (window shorter than --omit?)")
    first_start = kept[0]["start"]
    return [
        Sample(
            metric=metric,
            unit="bit/s",
            sample=index,
            value=float(interval["bits_per_second"]),
            t_ns=round((interval["start"] - first_start) * 1e9),
        )
        for index, interval in enumerate(kept)
    ]


def parse_iperf3_udp(raw: str) -> list[Sample]:
    doc = _load(raw)
    try:
        intervals = doc["intervals"]
        received = doc["end"]["sum_received"]
        jitter, lost = received["jitter_ms"], received["lost_percent"]
    except KeyError as exc:
        raise ToolOutputError(f"iperf3 JSON lacks {exc}: not a UDP client report") from None
    return [
        *_interval_samples(intervals, "udp_throughput"),
        Sample("udp_throughput_received", "bit/s", 0, float(received["bits_per_second"])),
        Sample("udp_jitter", "ms", 0, float(jitter)),
        Sample("udp_loss", "percent", 0, float(lost)),
    ]


def parse_iperf3_tcp(raw: str) -> list[Sample]:
    doc = _load(raw)
    try:
        intervals = doc["intervals"]
        received = doc["end"]["sum_received"]
    except KeyError as exc:
        raise ToolOutputError(f"iperf3 JSON lacks {exc}: not a TCP client report") from None
    sent_s = doc["end"].get("sum_sent", {}).get("seconds")
    received_s = received.get("seconds")
    if sent_s is not None and received_s is not None and received_s - sent_s > RECEIVER_LAG_S:
        raise ToolOutputError(
            f"iperf3's receiver took {received_s:.1f} s for the sender's {sent_s:.1f} s window: "
            "the path stalled (a partition or a dead link), so the window measured the outage"
        )
    return [
        *_interval_samples(intervals, "tcp_throughput"),
        Sample("tcp_throughput_received", "bit/s", 0, float(received["bits_per_second"])),
    ]
