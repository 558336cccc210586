"""`http`: nginx answering 1 KB over keep-alive, driven open-loop at a constant rate.

The client is co-loadgen (tools/loadgen, built by `make setup`): request i is due at
start + i/RATE whatever happened before it, and its latency counts from that due time, so a
stall shows up as latency of the requests due during it instead of as requests never sent
(the coordinated omission of closed-loop tools such as wrk). It prints one line per request.

Samples per window: one `http_latency` row per successful request (sample = request index,
t_ns = its due time from the window start); `http_errors` (non-2xx, wrong body length,
timeouts, connection errors: their latencies are not in `http_latency`, so a window with
errors under-states the tail and must be looked at); `http_late` (requests written more than
1 ms after their due time: the generator could not keep up or had no free connection);
`http_achieved_rate` (successful responses per second of window).
"""

from __future__ import annotations

import json

from pipeline.benchmarks.base import Benchmark, Sample, ToolOutputError, Window

PORT = 8080  # fixed in pipeline/collect/tool_conf/nginx-1k.conf
# 500 req/s on every path, so paths compare at the same load. The 2-core lab runs server,
# client, the container runtime's userspace proxies and the WAN emulator (one Python thread)
# on the same cores: at 1000 req/s the internet path queued in the emulator (p50 42 -> 62 ms,
# a third of the requests written late), at 500 it held its 42 ms with few late requests.
RATE = 500
# Opened before the window, in parallel: RATE x the WAN round trip (~45 ms) is ~23 requests
# in flight, so the pool never has to grow mid-window (the generator grows it if it must).
CONNECTIONS = 64
TIMEOUT = "2s"  # from the due time: a request without a full answer by then is an error
BODY_BYTES = 1024
FILES = "/tmp/container-overhead"
CONF = f"{FILES}/files/nginx-1k.conf"
LOADGEN = f"{FILES}/bin/co-loadgen"
NGINX = "/usr/sbin/nginx"
FORMAT = 1  # co-loadgen's output format this parser reads
# Where the embedded lab runs client and server (pipeline/lab/cpus.py): on disjoint CPUs. On
# one CPU the load generator's timers and nginx queue behind each other and a window's p50
# latency varied 2-3 times as much (docs/validation.md, "CPU placement"); left to the
# scheduler a window mixes the two.
PLACEMENT = "split"


class Http(Benchmark):
    title = "HTTP serving"
    analysis = "http"
    tables = ("http",)
    margin = "network"
    name = "http"
    tool = "nginx"  # the client, co-loadgen, names its own sha256 in every raw log
    binaries = (NGINX,)
    port = PORT
    paths = ("dc", "internet", "local")
    variants = ("1k",)
    summary_metric = "http_achieved_rate"
    uploads = {CONF: "pipeline/collect/tool_conf/nginx-1k.conf", LOADGEN: ".make/bin/co-loadgen"}
    server_scratch = tuple(
        f"/tmp/co-nginx-1k{suffix}"
        for suffix in (".pid", "-body", "-proxy", "-fastcgi", "-uwsgi", "-scgi")
    )  # as named in pipeline/collect/tool_conf/nginx-1k.conf
    options = {"placement": PLACEMENT}  # a profile may set another (Campaign's placement)

    def server_argv(self, variant: str) -> list[str]:
        # -e stderr: the compiled-in error log is opened before the conf is read
        return [NGINX, "-e", "stderr", "-c", CONF]

    def client_argv(
        self, variant: str, address: str, window: Window, path: str = "dc"
    ) -> list[str]:
        host = f"[{address}]" if ":" in address else address
        return [
            LOADGEN,
            "-url",
            f"http://{host}:{self.port}/",
            "-rate",
            str(RATE),
            "-duration",
            f"{round(window.seconds * 1000)}ms",
            "-warmup",
            f"{round(window.omit_seconds * 1000)}ms",
            "-connections",
            str(CONNECTIONS),
            "-timeout",
            TIMEOUT,
            "-body-bytes",
            str(BODY_BYTES),
        ]

    def version_argv(self) -> list[str]:
        return ["sh", "-c", f"{NGINX} -v 2>&1"]  # nginx prints its version on stderr

    def format_value(self, value: float) -> str:
        return f"{value:.0f} req/s"

    def is_connect_error(self, raw: str) -> bool:
        first = raw.strip().splitlines()[:1]
        try:
            return bool(first) and json.loads(first[0]).get("connect_error") is True
        except (ValueError, AttributeError):
            return False

    def parse(self, variant: str, raw: str, window: Window | None = None) -> list[Sample]:
        return parse_loadgen(raw)


def _json_line(line: str, what: str) -> dict:
    try:
        doc = json.loads(line)
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        raise ToolOutputError(f"co-loadgen {what} is not a JSON object: {line[:200]!r}")
    return doc


def parse_loadgen(raw: str) -> list[Sample]:
    """co-loadgen's report -> http_latency per ok request + the three per-window counts."""
    lines = raw.strip().splitlines()
    if not lines:
        raise ToolOutputError("co-loadgen printed nothing")
    header = _json_line(lines[0], "header")
    if "error" in header:
        raise ToolOutputError(f"co-loadgen failed: {header['error']}")
    if header.get("tool") != "co-loadgen" or header.get("format") != FORMAT:
        raise ToolOutputError(f"not a co-loadgen format {FORMAT} report: {lines[0][:200]!r}")
    try:
        summary = json.loads(lines[-1]).get("summary") if len(lines) > 1 else None
    except (ValueError, AttributeError):
        summary = None
    if not isinstance(summary, dict):
        raise ToolOutputError("co-loadgen report has no summary line: the output is truncated")

    latencies = []
    failed = 0
    for row in lines[1:-1]:
        try:
            index, intended_ns, latency_us, _issue_us, result = row.split()
            ok = result.isdigit() and 200 <= int(result) <= 299
            sample = Sample("http_latency", "us", int(index), float(latency_us), int(intended_ns))
        except ValueError:
            raise ToolOutputError(f"co-loadgen request line not understood: {row!r}") from None
        if ok:
            latencies.append(sample)
        else:
            failed += 1
    requests = len(lines) - 2
    if requests != summary["requests"] or len(latencies) != summary["ok"]:
        raise ToolOutputError(
            f"co-loadgen printed {requests} request lines ({len(latencies)} ok) but its "
            f"summary counts {summary['requests']} ({summary['ok']} ok)"
        )
    if len({s.sample for s in latencies}) != len(latencies):
        raise ToolOutputError("co-loadgen report repeats a request index")
    latencies.sort(key=lambda s: s.sample)
    return [
        *latencies,
        Sample("http_achieved_rate", "req/s", 0, float(summary["achieved_rate"])),
        Sample("http_errors", "count", 0, float(failed)),
        Sample("http_late", "count", 0, float(summary["late"])),
    ]
