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

import hashlib
import json
import math
import re
from typing import Any

import numpy as np

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
# promises, so count-based paced runs get half a second more. Ping-pong runs need none: the
# slowest accepted rate above already leaves them room.
SLACK_S = 0.5
# From its start to --time: a 100 ms sleep and the process start (Debian's build idles 2 s
# more here; the patched one does not: harness/sockperf_patch.py measures both)
SOCKPERF_STARTUP_S = 0.15
SOCKPERF_DRAIN_S = 0.1  # after its timer it waits 100 ms for the replies still on their way
LOG_HEADER = "packet, txTime(sec), rxTime(sec),"
VALID_RE = re.compile(r"\[Valid Duration\].*ReceivedMessages=(\d+)")
INTERLEAVED_MESSAGE = re.compile(r"sockperf: [^\n]*\n")
# Where the embedded lab runs the client and the server (pipeline/lab/cpus.py): on one CPU,
# whose round trips stay at one level window after window; across two CPUs every round trip pays
# a cross-CPU wake-up several times the rest of it, and left to the scheduler a run mixes the
# two (docs/methods.md, "CPU placement"; docs/validation.md measures both levels).
PLACEMENT = "colocated"


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
    options = {"placement": PLACEMENT}  # a profile may set another (Campaign's placement)

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
        # TCP: the connect is refused, or finds no route to the container's address for a
        # moment after the container started (seen on the lab with crun). UDP has no connect:
        # the client sends into the void for its whole --time and then says nothing came back.
        return any(said in raw for said in
                   ("Connection refused", "No route to host", "No messages were received"))

    def parse(
        self, variant: str, raw: str, window: Window | None = None, rows_not_kept: int = 0
    ) -> list[Sample]:
        """``rows_not_kept``: for a log rebuilt from its residue, the rows it no longer holds
        (``rows_not_kept(residue)``), which sockperf's own count still includes."""
        count = window.count if window is not None else None
        samples = parse_sockperf_full_log(raw, f"{variant}_rtt", rows_not_kept, limit=count)
        return samples if count is None else take(samples, count)

    def log_residue(self, raw: str, windows: list[tuple[Any, Any]]) -> bytes | None:
        return log_residue(raw, windows)

    def rebuild_log(self, residue: bytes, windows: list[tuple[Any, Any]]) -> str:
        return rebuild_log(residue, windows)


def _protocol(variant: str) -> list[str]:
    if variant not in ("udp", "tcp"):
        raise ValueError(f"latency variant must be udp or tcp, got {variant!r}")
    return ["--tcp"] if variant == "tcp" else []


def sockperf_seconds(window: Window, path: str) -> int:
    """sockperf's --time (whole seconds only): the window, or what its count needs."""
    if window.count is None:
        needed = window.seconds
    else:
        paced = path == "internet"
        rate = INTERNET_MPS if paced else PINGPONG_MIN_RATE
        needed = window.count / rate * COUNT_MARGIN + (SLACK_S if paced else 0.0)
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


def parse_sockperf_full_log(
    raw: str, metric: str, rows_not_kept: int = 0, limit: int | None = None
) -> list[Sample]:
    """Round trips from the `--full-log` section of a sockperf client's output (for a log
    rebuilt from its residue, ``rows_not_kept`` is the number of rows it no longer holds).
    ``limit``: the first rows only become samples (a counted window's); every row is still
    counted and checked for its four fields, so sockperf's own count is checked as before."""
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
    rows, logged = [], 0
    for line in log.splitlines():
        if line.startswith("---"):
            break
        if limit is not None and logged >= limit:  # beyond the window: counted, not converted
            if line.count(",") != 3:
                raise ToolOutputError(f"sockperf full log: unexpected line {line!r}")
            logged += 1
            continue
        fields = line.split(",")
        if len(fields) != 4:
            raise ToolOutputError(f"sockperf full log: unexpected line {line!r}")
        rows.append((_ns(fields[1]), _ns(fields[2])))
        logged += 1
    if not rows:
        raise ToolOutputError("sockperf full log is empty")
    valid = VALID_RE.findall(raw)
    if valid and int(valid[-1]) != logged + rows_not_kept:  # a cut stream, a mixed write
        raise ToolOutputError(
            f"sockperf full log has {logged} rows but sockperf counted {valid[-1]}"
        )
    first_tx = rows[0][0]
    return [
        Sample(metric=metric, unit="us", sample=i, value=(rx - tx) / 1000.0, t_ns=tx - first_tx)
        for i, (tx, rx) in enumerate(rows)
    ]


# --- the kept log: what of sockperf's output the samples do not hold ---------------------------
#
# A full-log row is "<packet>, <tx s>, <rx s>, <half RTT us>". The samples hold each row's round
# trip (rx - tx, exact in ns) and its send time from its window's first send, so a row is
# rebuilt from them with its window's absolute first send time and one bit: sockperf computes
# the half round trip from sub-nanosecond clock readings, so for an odd number of nanoseconds
# its last digit is rounded up or down by information the printed times do not carry. The rest
# of the output (banner, sockperf's own statistics, the trailer) is kept as text. Rows after
# the window's count (sockperf runs for a time sized for the slowest accepted rate, so a fast
# mode logs many more round trips than the window takes) are outside the measurement and are
# not kept: the residue records how many there were and the sha256 of the whole output.

RESIDUE_FORMAT = "sockperf-full-log-residue-1"
_HEADER_LINE = re.compile("^" + re.escape(LOG_HEADER) + r"[^\n]*\n", re.M)
_TRAILER = re.compile(r"^---", re.M)
MAX_EXCEPTION_SHARE = 0.01  # more rows than this that the samples do not rebuild: keep the log


def _secs(ns: int) -> str:
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"


def _usec3(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def _row(index: int, tx: int, rtt: int, half: int) -> str:
    return f"{index}, {_secs(tx)}, {_secs(tx + rtt)}, {_usec3(half)}\n"


def _split_log(raw: str) -> tuple[int, str, list[tuple[int, str]], int] | None:
    """(where the rows start in ``raw``, the rows section without sockperf's interleaved
    messages, those messages as (position in that section, text), where the rows end in it)."""
    header = _HEADER_LINE.search(raw)
    if header is None:
        return None
    start = header.end()
    tail = raw[start:]
    pieces, messages, last, length = [], [], 0, 0
    for m in INTERLEAVED_MESSAGE.finditer(tail):
        pieces.append(tail[last : m.start()])
        length += m.start() - last
        messages.append((length, m.group()))
        last = m.end()
    rows = "".join([*pieces, tail[last:]]) if messages else tail
    trailer = _TRAILER.search(rows)
    return start, rows, messages, trailer.start() if trailer else len(rows)


def _raw_offset(position: int, messages: list[tuple[int, str]]) -> int:
    """A position in the rows section without messages, as an offset in the raw rows section
    (messages inserted at that position come before it)."""
    return position + sum(len(text) for at, text in messages if at <= position)


def _with_messages(rows: str, messages: list[tuple[int, str]]) -> str:
    out, last = [], 0
    for at, text in messages:
        out += [rows[last:at], text]
        last = at
    return "".join([*out, rows[last:]])


def _rows(windows: list[tuple[Any, Any]], starts: list[int], halves_up: Any) -> list[str]:
    """The rows the windows' samples give, the half round trip of odd ones rounded up where
    ``halves_up`` (one entry per odd row, in order) says so."""
    lines, index, odd = [], 0, 0
    for (values, t_ns), tx0 in zip(windows, starts, strict=True):
        rtts = np.rint(np.asarray(values, dtype=np.float64) * 1000).astype(np.int64)
        for rtt, t in zip(rtts.tolist(), np.asarray(t_ns, dtype=np.int64).tolist(), strict=True):
            if rtt % 2:
                half = (rtt + (1 if halves_up[odd] else -1)) // 2
                odd += 1
            else:
                half = rtt // 2
            lines.append(_row(index, tx0 + t, rtt, half))
            index += 1
    return lines


def _cut(section: str, end: int, rows: int) -> int | None:
    """Where the first ``rows`` lines of ``section[:end]`` end (None: it has fewer)."""
    position = 0
    for _ in range(rows):
        newline = section.find("\n", position, end)
        if newline < 0:
            return None
        position = newline + 1
    return position


def kept_log(raw: str, rows: int) -> str:
    """sockperf's output without its full-log rows after the first ``rows``: what a residue
    and the samples of those rows rebuild (``rebuild_log``)."""
    split = _split_log(raw)
    if split is None:
        return raw
    start, section, messages, end = split
    cut = _cut(section, end, rows)
    if cut is None:
        return raw
    moved = "".join(text for at, text in messages if cut < at <= end)
    tail = raw[start:]
    return raw[: start + _raw_offset(cut, messages)] + moved + tail[_raw_offset(end, messages) :]


def log_residue(raw: str, windows: list[tuple[Any, Any]]) -> bytes | None:
    """What of a sockperf client's output its samples cannot rebuild, or None when the
    samples are not its rows (keep the output itself). ``windows``: (values, t_ns) of each
    window the output holds, in order (the warm-up, then the measured window), as stored."""
    split = _split_log(raw)
    if split is None:
        return None
    start, section, messages, end = split
    n_rows = sum(len(values) for values, _ in windows)
    cut = _cut(section, end, n_rows)
    if n_rows == 0 or cut is None:
        return None
    lines = [line + "\n" for line in section[:cut].split("\n")[:-1]]
    starts, offset = [], 0
    for values, t_ns in windows:
        if len(values) == 0:
            return None
        fields = lines[offset].split(",")
        if len(fields) != 4:
            return None
        starts.append(_ns(fields[1]) - int(np.asarray(t_ns)[0]))
        offset += len(values)
    # First pass with every odd half rounded up, second with each one down where that is what
    # sockperf printed.
    up = _rows(windows, starts, np.ones(n_rows, dtype=bool))
    down = _rows(windows, starts, np.zeros(n_rows, dtype=bool))
    halves_up, exceptions = [], {}
    for i, (line, a, b) in enumerate(zip(lines, up, down, strict=True)):
        if a != b:  # an odd round trip
            halves_up.append(line == a)
        if line not in (a, b):
            exceptions[i] = line
    if len(exceptions) > MAX_EXCEPTION_SHARE * n_rows:
        return None
    meta = {
        "format": RESIDUE_FORMAT,
        "prefix": raw[:start],
        "messages": [[at, text] for at, text in messages if at <= cut],
        "moved": "".join(text for at, text in messages if cut < at <= end),
        "suffix": raw[start + _raw_offset(end, messages) :],
        "starts": starts,
        "exceptions": {str(i): line for i, line in exceptions.items()},
        "halves_up": len(halves_up),
        "rows_not_kept": section.count("\n", cut, end),
        "sha256": hashlib.sha256(raw.encode()).hexdigest(),
    }
    bits = np.packbits(np.array(halves_up, dtype=bool)).tobytes()
    residue = json.dumps(meta, sort_keys=True).encode() + b"\n" + bits
    if rebuild_log(residue, windows) != kept_log(raw, n_rows):
        return None
    return residue


def rows_not_kept(residue: bytes) -> int:
    """The rows after the window's count that the log had and its rebuilt copy has not."""
    return int(json.loads(residue.partition(b"\n")[0])["rows_not_kept"])


def rebuild_log(residue: bytes, windows: list[tuple[Any, Any]]) -> str:
    """sockperf's output, byte for byte but for the rows after the window's count, from its
    residue and the samples of its windows (``log_residue``)."""
    head, _, bits = residue.partition(b"\n")
    meta = json.loads(head)
    if meta.get("format") != RESIDUE_FORMAT:
        raise ValueError(f"not a sockperf residue: {meta.get('format')!r}")
    halves_up = np.unpackbits(np.frombuffer(bits, dtype=np.uint8), count=meta["halves_up"])
    lines = _rows(windows, meta["starts"], halves_up.astype(bool))
    for i, line in meta["exceptions"].items():
        lines[int(i)] = line
    rows = _with_messages("".join(lines), [(at, text) for at, text in meta["messages"]])
    return meta["prefix"] + rows + meta["moved"] + meta["suffix"]
