"""`latency`: sockperf round-trip times, one sample per message, UDP and TCP.

Method (recorded in the argv the campaign stores):

- dc and local paths: `sockperf ping-pong`, strictly serial (one message in flight, the next
  sent when the reply is back), at sockperf's default maximum rate: the method the published
  articles use.
- internet path: `sockperf under-load --mps INTERNET_MPS --reply-every 1`, paced sends with
  several messages in flight and a reply to every message. Serial ping-pong over a ~40 ms
  path gives ~25 samples/s (10,000 samples = 400 s); paced at 500/s it takes 20 s. Each
  sample is still the round trip of one message. On the lab WAN emulator (FIFO, jitter
  sd 2 ms) pacing moves the median by about +1 ms (~2.5 %) against serial ping-pong, the
  same for every mode, so modes stay comparable on that path.

Samples: `<variant>_rtt` in microseconds, the FULL round trip of one message, computed from
the send and receive timestamps of `--full-log` (sockperf's own summary and the log's last
column are half the round trip). `sample` is the message's index in the window, `t_ns` its
send time from the window's first send. sockperf itself excludes its first 400 ms and last
50 ms (warm-up and cool-down) from the log. The log goes to stdout (`--full-log
/dev/stdout`), so the same single argv works natively, over SSH and inside a container.

sockperf 3.7 has no message-count option: a run is bounded by `--time`, sized from the
window's count (with a margin), and `parse(..., window)` keeps exactly the first `count`
samples, failing loudly if fewer arrived.

The binary is Debian's sockperf 3.7 less the client's fixed 2 s start-up pause
(tools/sockperf/no_startup_pause.py, built by `make setup`), shipped to every host and into the
tool images like the http benchmark's load generator: the same bits natively and in every
container, wherever sockperf is installed or not. Stock and patched measure the same round
trips (harness/sockperf_patch.py, docs/validation.md).
"""

from __future__ import annotations

import math
import re

from pipeline.benchmarks.base import Benchmark, Sample, ToolOutputError, Window

PORT = 11111  # sockperf's default port
BINARY = "/tmp/container-overhead/bin/sockperf"
BUILT = ".make/bin/sockperf"  # what `make setup` builds, shipped to BINARY
BUILD = "patched: no start-up pause"  # what the runs table's tool version says of the build
MSG_SIZE = 14  # bytes, sockperf's default and minimum: latency, not bandwidth
INTERNET_MPS = 1000  # paced rate on the internet path: 1 ms spacing, ~40 messages in flight
# Slowest serial ping-pong rate a mode may have and still fill its count (mean RTT <= 250 us);
# the lab's native dc path does ~20,000/s.
PINGPONG_MIN_RATE = 4000
COUNT_MARGIN = 1.1  # run 10 % longer than the count needs: losses, slow starts
SOCKPERF_DISCARD_S = 0.45  # sockperf drops its first 400 ms and last 50 ms of --time
# Seen on the Internet path: a 2 s paced run logged 1,152 of the ~1,550 round trips the rate
# promises, so count-based runs get half a second more.
SLACK_S = 0.5
# From its start to --time: a 100 ms sleep and the process start (Debian's build idles 2 s
# more here; the patched one does not: harness/sockperf_patch.py measures both)
SOCKPERF_STARTUP_S = 0.15
SOCKPERF_DRAIN_S = 0.1  # after its timer it waits 100 ms for the replies still on their way
LOG_HEADER = "packet, txTime(sec), rxTime(sec),"
VALID_RE = re.compile(r"\[Valid Duration\].*ReceivedMessages=(\d+)")
INTERLEAVED_MESSAGE = re.compile(r"sockperf: [^\n]*\n")


class Latency(Benchmark):
    title = "Network latency"
    analysis = "latency"
    tables = ("latency",)
    margin = "network"
    name = "latency"
    tool = "sockperf"
    binaries = (BINARY,)
    uploads = {BINARY: BUILT}
    port = PORT
    paths = ("dc", "internet", "local")
    variants = ("udp", "tcp")
    summary_metric = "{variant}_rtt"
    warmup_in_window = True  # every row of the full log is one round trip
    # sockperf starts up, drops 450 ms of its --time and drains 100 ms: per run, whatever
    # starts it
    tool_fixed_seconds = SOCKPERF_STARTUP_S + SOCKPERF_DISCARD_S + SOCKPERF_DRAIN_S

    def server_argv(self, variant: str) -> list[str]:
        return [BINARY, "server", "--port", str(self.port), *_protocol(variant)]

    def server_udp(self, variant: str) -> bool:
        return variant == "udp"

    def client_argv(
        self, variant: str, address: str, window: Window, path: str = "dc"
    ) -> list[str]:
        common = ["--ip", address, "--port", str(self.port), *_protocol(variant)]
        common += ["--msg-size", str(MSG_SIZE), "--time", str(sockperf_seconds(window, path))]
        if path == "internet":
            paced = ["--mps", str(INTERNET_MPS), "--reply-every", "1"]
            return [BINARY, "under-load", *common, *paced, "--full-log", "/dev/stdout"]
        return [BINARY, "ping-pong", *common, "--full-log", "/dev/stdout"]

    def client_seconds(self, window: Window, path: str = "dc") -> float:
        """Wall-clock length of one client run: what an SSH timeout must exceed."""
        return sockperf_seconds(window, path) + SOCKPERF_STARTUP_S

    def client_timeout(
        self, window: Window, path: str = "dc", variant: str | None = None
    ) -> float:
        return self.client_seconds(window, path) + 60

    def load_seconds(self, window: Window, path: str = "dc") -> float:
        # The span sockperf logs: its --time less the 450 ms it drops itself; its start-up is
        # not measurement. --time is sized for the slowest accepted rate, so a fast
        # mode logs more round trips than the window's count keeps.
        return sockperf_seconds(window, path) - SOCKPERF_DISCARD_S

    def version_argv(self) -> list[str]:
        return [BINARY, "--version"]

    def tool_version(self, output: str) -> str:
        return f"{super().tool_version(output)}, {BUILD}"

    def format_value(self, value: float) -> str:
        return f"{value:.1f} us"

    def is_connect_error(self, raw: str) -> bool:
        # TCP: the connect is refused. UDP has no connect: the client sends into the void for
        # its whole --time and then says nothing came back.
        return "Connection refused" in raw or "No messages were received" in raw

    def parse(self, variant: str, raw: str, window: Window | None = None) -> list[Sample]:
        samples = parse_sockperf_full_log(raw, f"{variant}_rtt")
        count = window.count if window is not None else None
        return samples if count is None else take(samples, count)


def _protocol(variant: str) -> list[str]:
    if variant not in ("udp", "tcp"):
        raise ValueError(f"latency variant must be udp or tcp, got {variant!r}")
    return ["--tcp"] if variant == "tcp" else []


def sockperf_seconds(window: Window, path: str) -> int:
    """sockperf's --time (whole seconds only): the window, or what its count needs."""
    if window.count is None:
        needed = window.seconds
    else:
        rate = INTERNET_MPS if path == "internet" else PINGPONG_MIN_RATE
        needed = window.count / rate * COUNT_MARGIN + SLACK_S
    return max(1, math.ceil(needed + SOCKPERF_DISCARD_S))


def take(samples: list[Sample], count: int) -> list[Sample]:
    """The first `count` samples of a window; fewer is a failed window, not a short one."""
    if len(samples) < count:
        raise ToolOutputError(
            f"sockperf logged {len(samples)} round trips, the window needs {count}: the mode "
            f"is slower than the rate the run length assumes (see pipeline/benchmarks/latency.py)"
        )
    return samples[:count]


def _ns(seconds: str) -> int:
    """'2.414344745' -> 2414344745, exactly (a float would round the last digits)."""
    whole, _, frac = seconds.strip().partition(".")
    return int(whole) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])


def parse_sockperf_full_log(raw: str, metric: str) -> list[Sample]:
    """Round trips from the `--full-log` section of a sockperf client's output."""
    lines = raw.splitlines()
    for line in lines:
        if "ERROR:" in line or "No messages were received" in line or "No valid obs" in line:
            raise ToolOutputError(f"sockperf failed: {line.removeprefix('sockperf: ').strip()}")
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith(LOG_HEADER)) + 1
    except StopIteration:
        raise ToolOutputError(
            f"sockperf output has no full log (no {LOG_HEADER!r} line): {raw[-300:]!r}"
        ) from None
    # sockperf writes the log and its own messages through two stdio buffers onto the same
    # stdout, so a whole "sockperf: ...\n" message can land inside a log line at the end of a
    # run. Cutting the messages out of the log section rejoins the split line exactly.
    log = INTERLEAVED_MESSAGE.sub("", "\n".join(lines[start:]))
    rows = []
    for line in log.splitlines():
        if line.startswith("---"):
            break
        fields = line.split(",")
        if len(fields) != 4:
            raise ToolOutputError(f"sockperf full log: unexpected line {line!r}")
        rows.append((_ns(fields[1]), _ns(fields[2])))
    if not rows:
        raise ToolOutputError("sockperf full log is empty")
    valid = VALID_RE.findall(raw)
    if valid and int(valid[-1]) != len(rows):  # a cut SSH stream or an interleaved write
        raise ToolOutputError(
            f"sockperf full log has {len(rows)} rows but sockperf counted {valid[-1]}"
        )
    first_tx = rows[0][0]
    return [
        Sample(metric=metric, unit="us", sample=i, value=(rx - tx) / 1000.0, t_ns=tx - first_tx)
        for i, (tx, rx) in enumerate(rows)
    ]
