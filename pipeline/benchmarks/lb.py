"""`lb`: requests per second and latency as replicas grow behind a load balancer (003 article).

Variants are `<balancer>-r<replicas>` (the replica counts come from the ``replicas`` option):

- `direct-r1`: one nginx replica as a plain container on the first server's default bridge,
  dialled at its bridge address: the baseline without any balancer.
- `haproxy-rN`, `nginx-rN`: N replicas as a Swarm service on an attachable overlay
  (spread over the nodes by the scheduler; placement recorded), and HAProxy 2.6 or nginx as one
  container on the first server, on its default bridge (dialled there, like `direct`) and on the
  overlay. Its config (pipeline/collect/tool_conf/haproxy-lb.cfg, nginx-lb.conf) lists the
  tasks' overlay addresses read from the Docker API, and is copied into the container (`docker cp`
  of a tar
  on stdin, so no file is left on a host). Same policy for both: one worker/thread, keep-alive
  on both sides, per-request round robin, no health checks, no retries.
- `dnsrr-rN`: the service with `--endpoint-mode dnsrr`: there is no balancer, Docker's DNS
  answers the service name with every task's address and clients pick. So the client must sit
  inside the overlay: wrk runs in a container of the tool image on the first server, attached
  to the overlay (the lab's dc client has no container engine, and overlay addresses are not
  routed to it). Its script (pipeline/collect/tool_conf/lb-wrk.lua) resolves the name once and gives
  connection i address i mod N: client-side round robin over the DNS answer. The client's
  location differs from the other variants (recorded in the notes).
- `vip-rN`: the Swarm VIP and routing mesh, as the article measured it: the service published
  in ingress mode, dialled at the first server's address from the dc client. Both need IPVS in
  the kernel; without it the step is skipped with that reason (this machine kind has none).

Within a run, `haproxy-rN`, `nginx-rN` and `dnsrr-rN` share one overlay and one dnsrr service
of N replicas (``server_group``): the campaign measures the three one after the other in a
random order, the service and network are created by the first and removed after the last
(or when a step fails, or the loop ends). Each step starts its own balancer or client and its
own warm-up run; the notes name the shared service. `direct-r1` and `vip-rN` deploy alone.

Mode ``k8s-pod`` measures the same variants on the inventory's Kubernetes cluster (every object
carries the campaign label and is deleted at the end of its step; a Deployment's pods are waited
for, like a Swarm service's tasks, before the next step's load):

- `direct-r1`: one nginx pod (same image, same argv as the replicas) pinned to the first
  server's node, dialled from the dc client at its pod IP (the pod subnets are routed to it).
- `haproxy-rN`, `nginx-rN`: a Deployment of N replicas, placed by the scheduler on the servers'
  nodes (placement recorded), and the balancer as a pod pinned to the first server's node. Its
  config, rendered with the replicas' pod IPs, is a ConfigMap mounted at CONF_DIR (no file on a
  host); the dc client dials the balancer pod's IP.
- `vip-rN`: a NodePort Service (node port PORT) in front of the Deployment, dialled from the dc
  client at the first server's address: kube-proxy's rules (iptables mode: a replica chosen at
  random per connection) are Kubernetes' counterpart of Swarm's VIP and routing mesh. The load
  starts once the Service's EndpointSlice lists N ready endpoints and kube-proxy has synced.
- `dnsrr-rN`: skipped with its reason: client-side DNS round robin needs a headless Service and
  the cluster's DNS add-on, which the lab's cluster does not run.

Load: wrk (closed loop) from the dc client, `connections` connections, one per thread, for the
profile's window after a warm-up run of its warm-up window. wrk gives the saturation rate, the
article's metric (it used `ab -c 20 -k`); the open-loop co-loadgen of the `http` benchmark
measures latency at a fixed rate and cannot find the maximum rate. wrk's latencies are those of
a saturated closed loop (queueing included, coordinated omission): they compare variants at
their own maximum rate, not service times at a fixed load.

Samples per window: `lb_requests_per_s` (2xx responses per second of the wrk run),
`lb_errors` (connect/read/write/timeout errors and non-2xx responses: a balancer whose replica
is unreachable answers 502/503, and those count here, not in the rate), `lb_latency_us` at
the percentiles wrk reports (sample = the percentile x 10: 500, 900, 990, 999).

Everything runs on 2 shared cores in the lab: more replicas add no CPU, so the lab measures
what each balancer costs per request, not how a cluster of machines scales.
"""

from __future__ import annotations

import io
import json
import re
import shlex
import tarfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from importlib.resources import files
from typing import Any

from pipeline import kube_objects
from pipeline.benchmarks.base import Benchmark, Outcome, Sample, Scenario, ToolOutputError, Window
from pipeline.benchmarks.orchestration import APP_LABEL, KUBERNETES_MODE
from pipeline.capabilities import serving
from pipeline.hosts import LABEL, ModeUnavailable, RemoteError

PORT = 8080  # the replicas' (nginx-1k.conf), the balancers' and the published port
FILES = "/tmp/container-overhead/files"
BACKEND_CONF = f"{FILES}/nginx-1k.conf"
WRK_SCRIPT = f"{FILES}/lb-wrk.lua"
NGINX = "/usr/sbin/nginx"
HAPROXY = "/usr/sbin/haproxy"
WRK = "/usr/bin/wrk"
BALANCERS = ("direct", "haproxy", "nginx", "dnsrr", "vip")
BODY_BYTES = 1024
WRK_TIMEOUT = "2s"  # a response slower than this counts as a timeout error
READY_TIMEOUT_S = 60.0  # tasks running, balancer answering, DNS complete
CONF_DIR = "/tmp/co-lb"  # inside the balancer container only
WRK_LINE = "co-lb-wrk "
WRK_FORMAT = 1
PERCENTILES = ("50", "90", "99", "99.9")
IPVS_PROBE = (
    "if [ -e /proc/net/ip_vs ]; then echo yes; "
    "elif (zcat /proc/config.gz 2>/dev/null || cat /boot/config-$(uname -r) 2>/dev/null) "
    "| grep -q '^CONFIG_IP_VS=[ym]'; then echo yes; else echo no; fi"
)


# ---- variants and options ----------------------------------------------------------------


def parse_replicas(value: Any) -> tuple[int, ...]:
    """ "1,2,4" or [1, 2, 4] -> (1, 2, 4); each count 1..64, no repeats."""
    items = value.split(",") if isinstance(value, str) else list(value)
    try:
        counts = tuple(int(str(i).strip()) for i in items)
    except ValueError:
        raise ValueError(f"lb replicas must be integers like '1,2,4', got {value!r}") from None
    if not counts or any(not 1 <= n <= 64 for n in counts) or len(set(counts)) != len(counts):
        raise ValueError(f"lb replicas must be distinct counts 1..64, got {value!r}")
    return counts


def variant_names(replicas: tuple[int, ...]) -> tuple[str, ...]:
    balanced = [f"{b}-r{n}" for b in BALANCERS[1:] for n in replicas]
    return ("direct-r1", *balanced)


def parse_variant(variant: str) -> tuple[str, int]:
    match = re.fullmatch(r"([a-z]+)-r(\d+)", variant)
    if not match or match.group(1) not in BALANCERS:
        raise ValueError(f"lb variant must be <{'|'.join(BALANCERS)}>-r<N>, got {variant!r}")
    return match.group(1), int(match.group(2))


# ---- balancer configs --------------------------------------------------------------------


def render_config(balancer: str, addresses: list[str]) -> str:
    """The balancer's config with one server line per replica address."""
    if balancer == "haproxy":
        template = "haproxy-lb.cfg"
        lines = [f"server r{i} {a}:{PORT}" for i, a in enumerate(addresses, 1)]
    elif balancer == "nginx":
        template = "nginx-lb.conf"
        lines = [f"server {a}:{PORT} max_fails=0;" for a in addresses]
    else:
        raise ValueError(f"no config for balancer {balancer!r}")
    if not addresses:
        raise ValueError("a balancer needs at least one replica address")
    text = files("pipeline.collect.tool_conf").joinpath(template).read_text()
    markers = re.findall(r"^([ \t]*)@SERVERS@[ \t]*$", text, re.M)
    if len(markers) != 1:
        raise ValueError(f"{template} must hold exactly one @SERVERS@ line")
    block = "\n".join(markers[0] + line for line in lines)
    return re.sub(r"^[ \t]*@SERVERS@[ \t]*$", lambda _: block, text, flags=re.M)


def config_tar(name: str, text: str) -> bytes:
    """A tar holding ``co-lb/<name>`` for `docker cp - CONTAINER:/tmp`."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        folder = tarfile.TarInfo(CONF_DIR.rsplit("/", 1)[1])
        folder.type, folder.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(folder)
        data = text.encode()
        info = tarfile.TarInfo(f"{folder.name}/{name}")
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


# ---- wrk ---------------------------------------------------------------------------------


def wrk_argv(url: str, seconds: float, connections: int) -> list[str]:
    return [
        WRK,
        "--threads", str(connections),
        "--connections", str(connections),
        "--duration", f"{max(1, round(seconds))}s",
        "--timeout", WRK_TIMEOUT,
        "--latency",
        "--script", WRK_SCRIPT,
        url,
    ]  # fmt: skip


@dataclass(frozen=True)
class WrkResult:
    duration_s: float
    requests: int  # responses of any status
    bytes: int
    errors: dict[str, int]  # connect, read, write, status (non-2xx/3xx), timeout
    latency_us: dict[str, float]  # percentile -> us
    addresses: list[str] = field(default_factory=list)  # one per thread/connection

    @property
    def ok(self) -> int:
        return self.requests - self.errors["status"]

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    @property
    def rate(self) -> float:
        return self.ok / self.duration_s


_RPS = re.compile(r"^Requests/sec:\s+([0-9.]+)\s*$", re.M)


def parse_wrk(raw: str) -> WrkResult:
    """wrk's report with the lb-wrk.lua line -> WrkResult; ToolOutputError when it failed."""
    lines = [ln for ln in raw.splitlines() if ln.startswith(WRK_LINE)]
    if not lines:
        first = raw.strip().splitlines()[:1]
        why = first[0][:300] if first else "no output"
        raise ToolOutputError(f"wrk printed no {WRK_LINE.strip()} line: {why}")
    if len(lines) > 1:
        raise ToolOutputError(f"wrk printed {len(lines)} {WRK_LINE.strip()} lines, expected one")
    try:
        doc = json.loads(lines[0][len(WRK_LINE) :])
        if doc["format"] != WRK_FORMAT:
            raise ToolOutputError(f"lb-wrk.lua format {doc['format']}, expected {WRK_FORMAT}")
        latency = doc["latency_us"]
        result = WrkResult(
            duration_s=doc["duration_us"] / 1e6,
            requests=int(doc["requests"]),
            bytes=int(doc["bytes"]),
            errors={
                k: int(doc["errors"][k]) for k in ("connect", "read", "write", "status", "timeout")
            },  # fmt: skip
            latency_us={p: float(latency["percentiles"][p]) for p in PERCENTILES},
            addresses=list(doc["addresses"]),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise ToolOutputError(f"lb-wrk.lua line not understood ({exc}): {lines[0][:300]}") from None
    if result.duration_s <= 0 or len(result.addresses) != doc["threads"]:
        raise ToolOutputError(f"lb-wrk.lua line is inconsistent: {lines[0][:300]}")
    # wrk's own text line must agree with the script's numbers (same run, same counters)
    stated = _RPS.search(raw)
    if stated is None:
        raise ToolOutputError("wrk's report has no Requests/sec line: the output is truncated")
    if (
        abs(float(stated.group(1)) - result.requests / result.duration_s)
        > 0.01 * float(stated.group(1)) + 1
    ):
        raise ToolOutputError(
            f"wrk says {stated.group(1)} requests/s, its script {result.requests} requests "
            f"in {result.duration_s:.3f} s"
        )
    # (only when every response was a 2xx: error pages are shorter)
    if (
        result.requests
        and not result.errors["status"]
        and result.bytes / result.requests < BODY_BYTES
    ):
        raise ToolOutputError(
            f"responses average {result.bytes / result.requests:.0f} bytes, less than the "
            f"{BODY_BYTES}-byte body: not the benchmark's nginx"
        )
    return result


def wrk_samples(result: WrkResult) -> list[Sample]:
    return [
        Sample("lb_requests_per_s", "req/s", 0, result.rate),
        Sample("lb_errors", "count", 0, float(result.error_count)),
        *[
            Sample("lb_latency_us", "us", round(float(p) * 10), result.latency_us[p])
            for p in PERCENTILES
        ],
    ]


# ---- the benchmark -----------------------------------------------------------------------


class Lb(Benchmark):
    title = "Load balancing"
    analysis = "lb"
    tables = ("lb",)
    name = "lb"
    tool = "wrk"
    kind = "scenario"
    binaries = (NGINX, HAPROXY, WRK)  # nginx first: the replicas' binary_sha256
    port = PORT
    modes = serving(name)
    paths = ("dc",)
    summary_metric = "lb_requests_per_s"
    templates = ("pipeline/collect/tool_conf/haproxy-lb.cfg",
                 "pipeline/collect/tool_conf/nginx-lb.conf")  # render_config fills them in
    uploads = {
        BACKEND_CONF: "pipeline/collect/tool_conf/nginx-1k.conf",
        WRK_SCRIPT: "pipeline/collect/tool_conf/lb-wrk.lua",
    }
    options = {"replicas": "1,2", "connections": 24}

    def __init__(self) -> None:
        self.variants = variant_names(parse_replicas(self.options["replicas"]))
        self.versions: dict[str, str] = {}
        self.kept: _Backend | None = None  # left up by a step for the next one (keep)
        # Steps so far: a step's objects carry its ordinal, so a step that repeats the one
        # before (a retry, or the next run starting with the same variant) never takes the
        # name, or the labels, of objects that are still being removed.
        self.steps = 0
        # waits(log) for what steps removed to leave every node: Swarm stops a service's tasks
        # ~2 s after `service rm` returns (its gossip delay) and deletes them seconds later
        self.draining: list[Callable[[list[str]], None]] = []

    def configure(self, options: dict[str, Any]) -> None:
        super().configure(options)
        if int(self.options["connections"]) < 1:
            raise ValueError("lb connections must be at least 1")
        self.variants = variant_names(parse_replicas(self.options["replicas"]))

    def version_argv(self) -> list[str]:
        return ["sh", "-c", f"{WRK} -v 2>&1 | head -1"]  # wrk -v prints usage and exits 1

    def prepare(self, session) -> None:
        script = f"{HAPROXY} -v | head -1; {NGINX} -v 2>&1"
        out = session.run(["sh", "-c", script], timeout=30).stdout.splitlines()
        self.versions = {"haproxy": out[0].strip(), "nginx": out[-1].strip()}

    def format_value(self, value: float) -> str:
        return f"{value:.0f} req/s"

    def server_group(self, variant: str) -> str:
        balancer, replicas = parse_variant(variant)
        return f"dnsrr-service-r{replicas}" if balancer in SHARED else variant

    def measure(self, scenario: Scenario) -> Outcome:
        step = _KubeStep if scenario.mode == KUBERNETES_MODE else _Step
        return step(self, scenario).run()

    def release(self) -> None:
        """The campaign's loop ended: remove a kept service and wait until nothing is left."""
        self.release_kept([])
        self.drain([])

    def release_kept(self, log: list[str]) -> None:
        kept, self.kept = self.kept, None
        if kept is not None:
            kept.remove(log)

    def drain(self, log: list[str]) -> None:
        """Wait until what earlier steps removed has left every node. A step calls it once its
        own service and balancer are up, so the removal overlaps the deployment but never
        the load. A wait that fails leaves the ones after it for the next drain."""
        while self.draining:
            self.draining.pop(0)(log)


SHARED = ("haproxy", "nginx", "dnsrr")  # balancers in front of the same dnsrr service


@dataclass
class _Backend:
    """The replica service and its overlay, shared by a run's steps of one server group."""

    key: tuple[int, str]  # (run, server group)
    network: str
    service: str
    addresses: list[str]
    placement: str
    remove: Any  # remove(log): the service, then the network


class _Step:
    """One (run, variant): deploy, load, remove; every command and its output in the log."""

    def __init__(self, bench: Lb, scenario: Scenario) -> None:
        self.bench = bench
        self.s = scenario
        self.balancer, self.replicas = parse_variant(scenario.variant)
        inv = scenario.ctx.inventory
        self.manager = scenario.host  # the first server: Swarm manager, balancer's node
        self.client = inv.dc_client
        # the prefix names the mode; the variant (the group and run for a shared service) keeps
        # a step's objects apart from those of the step before, whose overlay network Swarm
        # may still be deleting
        bench.steps += 1
        self.ordinal = str(bench.steps)
        stem = f"{scenario.prefix}-{scenario.variant}-{self.ordinal}"
        self.group = bench.server_group(scenario.variant)
        shared = f"{scenario.prefix}-{self.group}-{self.ordinal}"  # unless a kept one is reused
        self.network = f"{shared if self.balancer in SHARED else stem}-net"
        self.service = f"{shared if self.balancer in SHARED else stem}-replicas"
        self.front = f"{stem}-{self.balancer}"  # the balancer or the direct replica
        self.client_name = f"{stem}-client"
        self.log: list[str] = []
        self.notes: dict[str, str] = {}
        self.created: list[tuple[str, str]] = []  # (kind, name) of what to remove

    # -- running commands, logged ----------------------------------------------------------

    def sh(self, host, command: str | list[str], timeout: float = 120, check: bool = True,
           stdin: bytes | None = None):  # fmt: skip
        session = self.s.ctx.pool[host.name]
        text = command if isinstance(command, str) else shlex.join(command)
        result = session.run(text, timeout=timeout, check=False, stdin=stdin)
        self.log.append(
            f"{host.name}$ {text}\n{result.stdout}{result.stderr}[exit {result.status}]"
        )
        if check and result.status != 0:
            raise ToolOutputError(
                f"{host.name}: {text[:200]} exited {result.status}: {result.stderr.strip()[-300:]}"
            )
        return result

    def docker(self, *args: str, timeout: float = 120, check: bool = True,
               stdin: bytes | None = None):  # fmt: skip
        return self.sh(self.manager, ["docker", *args], timeout, check, stdin)

    # -- the step --------------------------------------------------------------------------

    def run(self) -> Outcome:
        kept = self.bench.kept
        if kept is not None and kept.key != (self.s.run, self.group):
            self.bench.release_kept(self.log)  # its group ended without its last step
        self._check_available()
        image = self._image()
        measured_ok = False
        try:
            url, client_wrap = self._deploy(image)
            self.bench.drain(self.log)
            self._describe()
            warmup, measured, command, window_s = self._load(url, client_wrap)
            measured_ok = True
        finally:
            # the next step of this group reuses the service, unless this step failed: a
            # failed step may have left it broken
            self._remove(keep=measured_ok and self.s.keep)
        return Outcome(
            samples=measured,
            warmup=warmup,
            raw="\n".join(self.log),
            command=command,
            window_s=window_s,
            notes=self.notes,
        )

    def _describe(self, **more: str) -> None:
        """The step's notes: what is measured, with which versions."""
        self.notes.update(
            balancer=self.balancer,
            replicas=str(self.replicas),
            connections=str(self.bench.options["connections"]),
            replica_version=self.bench.versions.get("nginx", ""),
            **more,
        )
        if self.balancer in ("haproxy", "nginx"):
            self.notes["balancer_version"] = self.bench.versions.get(self.balancer, "")

    def _check_available(self) -> None:
        if self.balancer == "vip":
            for host in self.s.ctx.inventory.servers:
                if self.s.ctx.pool[host.name].run(IPVS_PROBE).stdout.strip() != "yes":
                    raise ModeUnavailable(
                        f"kernel on {host.name} has no IPVS (no /proc/net/ip_vs, CONFIG_IP_VS "
                        "not set): no Swarm service VIP and no routing mesh"
                    )
        if self.balancer != "dnsrr":
            problem = self.s.ctx.missing_tool(self.client, WRK, "curl")
            if problem:
                raise ModeUnavailable(f"the dc client needs wrk and curl: {problem}")

    def _image(self) -> str:
        """The tool image tag, the same on every server (a service runs it on any node)."""
        tags = {h.name: self.s.ctx.image(h, "docker").tag for h in self.s.ctx.inventory.servers}
        if len(set(tags.values())) != 1:
            raise ModeUnavailable(
                f"the servers' tool images differ ({tags}): their nginx/haproxy/wrk binaries "
                "are not identical, so one Swarm service cannot run the same bits everywhere"
            )
        return next(iter(tags.values()))

    def _deploy(self, image: str) -> tuple[str, Any]:
        """Start what the variant needs; returns the URL and how to wrap the client's argv."""
        labels = self.s.labels
        backend = [NGINX, "-e", "stderr", "-c", BACKEND_CONF]
        self.notes["client"] = f"wrk on {self.client.name}, natively"  # dnsrr: see below
        if self.balancer == "direct":
            self.created.append(("container", self.front))
            self.docker("run", "--detach", "--name", self.front, *labels, image, *backend)
            address = self._bridge_address(self.front)
            self.notes["placement"] = self.manager.name
            self._wait_http(f"http://{address}:{PORT}/", 1)
            return f"http://{address}:{PORT}/", None
        addresses = self._backend(image, backend)
        if self.balancer == "dnsrr":
            self.notes["client"] = (
                f"wrk in a container on {self.manager.name}, on the overlay (dnsrr is "
                "resolved inside it)"
            )
            return f"http://{self.service}:{PORT}/", self._in_overlay(image)
        if self.balancer == "vip":
            url = f"http://{self.manager.address}:{PORT}/"
            self._wait_http(url, self.replicas)
            return url, None
        self._start_balancer(image, addresses)
        address = self._bridge_address(self.front)
        url = f"http://{address}:{PORT}/"
        self._wait_http(url, self.replicas)
        return url, None

    def _backend(self, image: str, backend: list[str]) -> list[str]:
        """The replicas' service on its overlay: the one a previous step of this group kept,
        or a new one. Returns the replicas' overlay addresses."""
        kept, self.bench.kept = self.bench.kept, None
        if kept is not None:  # run() released any other group's; this step owns it now
            self.service, self.network = kept.service, kept.network
            self.created += [("service", kept.service), ("network", kept.network)]
            self.log.append(
                f"--- replicas: {kept.service} on {kept.network}, started by an earlier step "
                f"of this run's {self.group} group ---"
            )
            self.notes.update(placement=kept.placement, replica_addresses=",".join(kept.addresses),
                              replica_service=self.service)  # fmt: skip
            return kept.addresses
        self.notes["replica_service"] = self.service
        labels = self.s.labels
        self.created.append(("network", self.network))
        self.docker("network", "create", "--driver", "overlay", "--attachable", *labels,
                    self.network)  # fmt: skip
        mode = ["--endpoint-mode", "vip", "--publish",
                f"published={PORT},target={PORT},protocol=tcp,mode=ingress"]  # fmt: skip
        if self.balancer != "vip":
            # dnsrr: no VIP, so nothing needs IPVS; the balancers dial task addresses anyway
            mode = ["--endpoint-mode", "dnsrr"]
        self.created.append(("service", self.service))
        container_labels = [a.replace("--label", "--container-label") for a in labels]
        self.docker("service", "create", "--detach", "--quiet", "--no-resolve-image",
                    "--name", self.service, *labels, *container_labels,
                    "--network", self.network, "--replicas", str(self.replicas), *mode,
                    image, *backend)  # fmt: skip
        return self._wait_tasks()

    def _wait_tasks(self) -> list[str]:
        """Wait until every replica runs; returns their overlay addresses, notes placement."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        fmt = "{{.ID}} {{.Node}} {{.CurrentState}}"
        while True:
            out = self.docker("service", "ps", "--filter", "desired-state=running",
                              "--format", fmt, self.service).stdout  # fmt: skip
            rows = [line.split() for line in out.splitlines() if line.strip()]
            running = [r for r in rows if len(r) >= 3 and r[2] == "Running"]
            if len(running) == self.replicas:
                break
            if time.monotonic() > deadline:
                raise ToolOutputError(
                    f"{len(running)} of {self.replicas} replicas running after "
                    f"{READY_TIMEOUT_S:.0f} s:\n{out[-500:]}"
                )
            time.sleep(0.3)
        self.notes["placement"] = ",".join(sorted(r[1] for r in running))
        template = (
            "{{range .NetworksAttachments}}{{if eq .Network.Spec.Name "
            f'"{self.network}"' + "}}{{range .Addresses}}{{.}} {{end}}{{end}}{{end}}"
        )
        out = self.docker("inspect", "--format", template, *[r[0] for r in running]).stdout
        addresses = [a.split("/")[0] for a in out.split()]
        if len(addresses) != self.replicas:
            raise ToolOutputError(f"expected {self.replicas} task addresses, got {out!r}")
        self.notes["replica_addresses"] = ",".join(addresses)
        return addresses

    def _start_balancer(self, image: str, addresses: list[str]) -> None:
        conf = render_config(self.balancer, addresses)
        name = "haproxy.cfg" if self.balancer == "haproxy" else "nginx-lb.conf"
        path = f"{CONF_DIR}/{name}"
        argv = (
            [HAPROXY, "-db", "-f", path]
            if self.balancer == "haproxy"
            else [NGINX, "-e", "stderr", "-c", path]
        )
        self.created.append(("container", self.front))
        self.docker("create", "--name", self.front, *self.s.labels, image, *argv)
        self.docker("cp", "-", f"{self.front}:/tmp", stdin=config_tar(name, conf))
        self.docker("network", "connect", self.network, self.front)
        self.docker("start", self.front)
        self.log.append(f"--- {path} ---\n{conf}")

    def _bridge_address(self, name: str) -> str:
        fmt = '{{(index .NetworkSettings.Networks "bridge").IPAddress}}'
        address = self.docker("inspect", "--format", fmt, name).stdout.strip()
        if not address:
            raise ToolOutputError(f"{name} has no address on the default bridge")
        return address

    def _wait_http(self, url: str, replicas: int) -> None:
        """From the client: 2 x replicas consecutive 200s (round robin passes every replica
        twice), retrying while the balancer or the replicas behind it start."""
        want = 2 * replicas
        script = (
            f"ok=0; end=$(($(date +%s) + {int(READY_TIMEOUT_S)})); "
            f"while [ $(date +%s) -lt $end ]; do "
            f"c=$(curl -s -o /dev/null -m 2 -w '%{{http_code}}' {shlex.quote(url)}); "
            f'if [ "$c" = 200 ]; then ok=$((ok+1)); [ $ok -ge {want} ] && exit 0; '
            "else ok=0; sleep 0.2; fi; done; echo last status $c; exit 1"
        )
        result = self.sh(self.client, script, timeout=READY_TIMEOUT_S + 30, check=False)
        if result.status != 0:
            raise ToolOutputError(
                f"{url} did not answer {want} requests in a row with 200 within "
                f"{READY_TIMEOUT_S:.0f} s ({result.stdout.strip()})"
            )

    def _in_overlay(self, image: str):
        name = self.client_name
        cli = ["docker", "run", "--rm", "--name", name, *self.s.labels, "--network",
               self.network, image]  # fmt: skip

        def wrap(argv: list[str]) -> str:
            # a client a timeout left behind is removed by _remove (same name)
            return shlex.join([*cli, *argv])

        self.created.append(("container", name))
        return wrap

    def _load(self, url: str, wrap) -> tuple[list[Sample], list[Sample], str, float]:
        connections = int(self.bench.options["connections"])
        host = self.manager if wrap else self.client
        window_s = 0.0
        warm: list[Sample] = []
        if self.s.warmup.seconds > 0:
            result, _ = self._wrk(host, url, self.s.warmup, connections, wrap, retry=True)
            warm = wrk_samples(result)
            window_s += result.duration_s
        result, command = self._wrk(host, url, self.s.window, connections, wrap, retry=False)
        window_s += result.duration_s
        self.notes["client_addresses"] = ",".join(sorted(set(result.addresses)))
        return warm, wrk_samples(result), command, window_s

    def _wrk(self, host, url: str, window: Window, connections: int, wrap, retry: bool):
        """One wrk run. dnsrr: the DNS answer must hold every replica (the warm-up waits for
        Docker's DNS to list them all; the measured run must see them all)."""
        argv = wrk_argv(url, window.seconds, connections)
        command = wrap(argv) if wrap else shlex.join(argv)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            out = self.sh(host, command, timeout=window.seconds + 60, check=False)
            result = parse_wrk(out.stdout + out.stderr)
            seen = len(set(result.addresses))
            want = min(self.replicas, connections) if self.balancer == "dnsrr" else 1
            if seen == want:
                return result, f"{host.name}$ {command}"
            if not retry or time.monotonic() > deadline:
                raise ToolOutputError(
                    f"wrk dialled {seen} distinct address(es), expected {want}: "
                    f"{sorted(set(result.addresses))}"
                )
            time.sleep(0.5)

    def _remove(self, keep: bool = False) -> None:
        """Remove what the step created, client and balancer first, the network last (it
        can only go once the service's tasks have left it). ``keep``: the service and its
        network stay up for the next step of the group (the benchmark holds them)."""
        order = {"container": 0, "service": 1, "network": 2}
        created = sorted(self.created, key=lambda item: order[item[0]])
        for kind, name in created:
            if kind == "container":
                self.docker("rm", "--force", name, check=False, timeout=60)
        shared = [item for item in created if item[0] != "container"]
        if keep and shared:  # keep: the step measured, and its group (SHARED) goes on
            self.bench.kept = _Backend(
                key=(self.s.run, self.group),
                network=self.network,
                service=self.service,
                addresses=self.notes["replica_addresses"].split(","),
                placement=self.notes["placement"],
                remove=partial(self._remove_into, shared),
            )
            return
        self._remove_into(shared, self.log)

    def _remove_into(self, items: list[tuple[str, str]], log: list[str]) -> None:
        """Remove the service, then its network; the commands go to ``log`` (the step that
        ends the group's, when this step kept them)."""
        with self._logging_to(log):
            for kind, name in items:
                if kind == "service":
                    self.docker("service", "rm", name, check=False, timeout=60)
                    # a node stops a removed service's task ~2 s later (Swarm's gossip delay)
                    # and deletes it seconds after that: the drain removes them itself
                    tasks = shlex.quote(f"label=com.docker.swarm.service.name={name}")
                    listing = (
                        f'c=$(docker ps -aq --filter {tasks}); [ -z "$c" ] || '
                        f"docker rm --force $c >/dev/null; docker ps -aq --filter {tasks}"
                    )
                elif kind == "network":
                    self._remove_network(name)
                    listing = f"docker network ls -q --filter {shlex.quote(f'name=^{name}$')}"
                else:
                    continue
                self.bench.draining.append(partial(self._wait_gone, name, listing))

    @contextmanager
    def _logging_to(self, log: list[str]):
        own, self.log = self.log, log
        try:
            yield
        finally:
            self.log = own

    def _wait_gone(self, name: str, listing: str, log: list[str]) -> None:
        """Wait until the ``listing`` command prints nothing on every server: the nodes
        remove a service's containers and their copy of an overlay after the manager has."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        with self._logging_to(log):
            for host in self.s.ctx.inventory.servers:
                while self.sh(host, listing, timeout=30, check=False).stdout.strip():
                    if time.monotonic() > deadline:
                        raise ToolOutputError(
                            f"{name} still on {host.name} {READY_TIMEOUT_S:.0f} s after its removal"
                        )
                    time.sleep(0.2)

    def _remove_network(self, name: str) -> None:
        """`network rm` fails while the service's tasks still hold the network, and succeeds
        before Swarm has deleted it everywhere: retry, then wait until it is gone."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while self.docker("network", "inspect", name, check=False, timeout=30).status == 0:
            if time.monotonic() > deadline:
                raise ToolOutputError(f"network {name} still there {READY_TIMEOUT_S:.0f} s on")
            self.docker("network", "rm", name, check=False, timeout=60)
            time.sleep(0.3)


# ---- the same variants on Kubernetes (mode k8s-pod) --------------------------------------

KUBE_PROXY_MODE_URL = "http://127.0.0.1:10249/proxyMode"  # kube-proxy's metrics address
KUBE_DNSRR_REASON = (
    "client-side DNS round robin needs a headless Service and the cluster's DNS add-on to "
    "answer its name with every pod's address; the cluster has no DNS add-on"
)


def kube_name(*parts: str) -> str:
    """A DNS-1123 object name (at most 63 characters)."""
    return "-".join(parts).lower()[:63].rstrip("-")


def kube_labels(campaign: str, name: str) -> dict[str, str]:
    """The campaign label (clean-up finds the object by it) and the object's own name."""
    return {LABEL: campaign, APP_LABEL: name}


def kube_pod(name: str, node: str, image: str, argv: list[str], labels: dict[str, str],
             config: str | None = None) -> dict:  # fmt: skip
    """A pod pinned to ``node`` (as the Kubernetes modes' server pod); ``config``: a ConfigMap
    mounted read-only at CONF_DIR (the balancer's config, no file on a host)."""
    mount = (config, CONF_DIR) if config else None
    return kube_objects.pinned_pod(name, node, image, argv, labels, config=mount)


def kube_deployment(name: str, replicas: int, nodes: list[str], image: str, argv: list[str],
                    labels: dict[str, str]) -> dict:  # fmt: skip
    """``replicas`` pods of ``argv``, placed by the scheduler on ``nodes`` only (the servers'
    nodes, whose containerd holds the tool image)."""
    # one term per node (terms are ORed): a node-name field selector takes a single value
    on_nodes = [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        for node in nodes
    ]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {APP_LABEL: labels[APP_LABEL]}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    **kube_objects.pod_spec(kube_objects.container(image, argv)),
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                                  {"nodeSelectorTerms": on_nodes}}},
                },
            },
        },
    }  # fmt: skip


def kube_config_map(name: str, filename: str, text: str, labels: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels},
            "data": {filename: text}}  # fmt: skip


def kube_node_port(name: str, selector: dict[str, str], labels: dict[str, str]) -> dict:
    """A NodePort Service whose node port is PORT: the dc client dials a node's address."""
    return kube_objects.service(name, selector, labels, "NodePort", PORT)


def balancer_argv(balancer: str) -> tuple[str, list[str]]:
    """The balancer's config file name and its command line (the file under CONF_DIR)."""
    name = "haproxy.cfg" if balancer == "haproxy" else "nginx-lb.conf"
    path = f"{CONF_DIR}/{name}"
    if balancer == "haproxy":
        return name, [HAPROXY, "-db", "-f", path]
    return name, [NGINX, "-e", "stderr", "-c", path]


def parse_pods(text: str) -> list[tuple[str, str, str]]:
    """`name node podIP` lines -> (name, node, ip) of the pods that have an address."""
    rows = [line.split() for line in text.splitlines() if line.strip()]
    return [(r[0], r[1], r[2]) for r in rows if len(r) == 3]


POD_ROWS = 'jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.status.podIP}{"\\n"}{end}'


class _KubeStep(_Step):
    """One (run, variant) in mode k8s-pod: the replicas are a Deployment, the balancer a pod
    with its config from a ConfigMap, `vip` a NodePort Service (kube-proxy). The load, its
    parsing and the readiness check from the dc client are the Swarm step's."""

    def __init__(self, bench: Lb, scenario: Scenario) -> None:
        super().__init__(bench, scenario)
        ctx = scenario.ctx
        self.kube_host, self.kubectl = ctx.kubectl()
        stem = kube_name(scenario.prefix, scenario.variant, self.ordinal)
        self.replica_set = f"{stem}-replicas"  # the Deployment
        self.front = f"{stem}-{self.balancer}"  # the balancer pod, or the direct replica's
        self.config = f"{stem}-conf"
        self.service = f"{stem}-service"
        self.campaign = ctx.campaign

    def run(self) -> Outcome:
        self.bench.release_kept(self.log)  # a Swarm group's service, if one was kept
        self._check_available()
        image, nodes = self._image_and_nodes()
        cluster = self.s.ctx.kubernetes_cluster()
        removal = ""
        try:
            url = self._deploy_kube(cluster, image, nodes)
            self.bench.drain(self.log)
            self._describe(image=image)
            warmup, measured, command, window_s = self._load(url, None)
        except RemoteError as exc:
            raise ToolOutputError(f"kubernetes step failed: {exc}") from exc
        finally:
            removal = self._remove_kube(cluster)
        if removal:
            raise ToolOutputError(f"kubernetes objects not removed: {removal}")
        return Outcome(samples=measured, warmup=warmup, raw="\n".join(self.log), command=command,
                       window_s=window_s, notes=self.notes)  # fmt: skip

    def _check_available(self) -> None:
        if self.balancer == "dnsrr":
            raise ModeUnavailable(KUBE_DNSRR_REASON)
        problem = self.s.ctx.missing_tool(self.client, WRK, "curl")
        if problem:
            raise ModeUnavailable(f"the dc client needs wrk and curl: {problem}")

    def _image_and_nodes(self) -> tuple[str, list[str]]:
        """The tool image in the containerd of every node a pod of the step may run on (the
        first server's for `direct`, every server's for a Deployment), and those nodes."""
        ctx = self.s.ctx
        hosts = [self.manager] if self.balancer == "direct" else list(ctx.inventory.servers)
        tags = {h.name: ctx.kubernetes_image(h).tag for h in hosts}
        if len(set(tags.values())) != 1:
            raise ModeUnavailable(
                f"the servers' tool images differ ({tags}): the replicas would not run the "
                "same nginx on every node"
            )
        return next(iter(tags.values())), [ctx.kubernetes_node(h) for h in hosts]

    def kube(self, *args: str, timeout: float = 120, check: bool = True):
        return self.sh(self.kube_host, [*self.kubectl, *args], timeout, check)

    def _log_manifest(self, manifest: dict) -> None:
        kind, name = manifest["kind"], manifest["metadata"]["name"]
        self.log.append(f"--- kubectl create {kind}/{name} ---\n{json.dumps(manifest, indent=1)}")

    def _apply(self, cluster, manifest: dict) -> None:
        self._log_manifest(manifest)
        cluster.apply(manifest)

    def _running_pod(self, cluster, manifest: dict) -> str:
        """Create the pod, wait until it runs; its IP."""
        self._log_manifest(manifest)
        return cluster.running_pod(manifest)

    def _deploy_kube(self, cluster, image: str, nodes: list[str]) -> str:
        """Create what the variant needs, wait until it answers from the dc client; its URL."""
        backend = [NGINX, "-e", "stderr", "-c", BACKEND_CONF]
        first = self.s.ctx.kubernetes_node(self.manager)
        if self.balancer == "direct":
            labels = kube_labels(self.campaign, self.front)
            address = self._running_pod(cluster, kube_pod(self.front, first, image, backend,
                                                          labels))  # fmt: skip
            self.notes.update(placement=first, client=f"wrk on {self.client.name}, natively, "
                              f"dialling the pod's IP {address}")  # fmt: skip
            url = f"http://{address}:{PORT}/"
            self._wait_http(url, 1)
            return url
        labels = kube_labels(self.campaign, self.replica_set)
        self._apply(cluster, kube_deployment(self.replica_set, self.replicas, nodes, image,
                                             backend, labels))  # fmt: skip
        self.notes["replica_deployment"] = self.replica_set
        addresses = self._wait_replicas()
        if self.balancer == "vip":
            selector = {APP_LABEL: self.replica_set}
            self._apply(
                cluster,
                kube_node_port(self.service, selector, kube_labels(self.campaign, self.service)),
            )
            waited = cluster.wait_service(self.service, endpoints=self.replicas)
            self.notes.update(
                service=f"NodePort {self.service} (node port {PORT})",
                service_wait_s=f"{waited:.2f}",
                kube_proxy_mode=self._proxy_mode(),
                client=f"wrk on {self.client.name}, natively, dialling node {first}'s address "
                f"{self.manager.address} at the node port (kube-proxy picks a replica per "
                "connection)",
            )  # fmt: skip
            url = f"http://{self.manager.address}:{PORT}/"
            self._wait_http(url, self.replicas)
            return url
        name, argv = balancer_argv(self.balancer)
        conf = render_config(self.balancer, addresses)
        self._apply(
            cluster,
            kube_config_map(self.config, name, conf, kube_labels(self.campaign, self.config)),
        )
        self.log.append(f"--- {CONF_DIR}/{name} ---\n{conf}")
        pod = kube_pod(self.front, first, image, argv, kube_labels(self.campaign, self.front),
                       config=self.config)  # fmt: skip
        address = self._running_pod(cluster, pod)
        self.notes.update(balancer_node=first, client=f"wrk on {self.client.name}, natively, "
                          f"dialling the balancer pod's IP {address}")  # fmt: skip
        url = f"http://{address}:{PORT}/"
        self._wait_http(url, self.replicas)
        return url

    def _wait_replicas(self) -> list[str]:
        """Wait until every replica runs with an address; their pod IPs, placement noted."""
        self.kube("rollout", "status", f"deployment/{self.replica_set}",
                  f"--timeout={int(READY_TIMEOUT_S)}s", timeout=READY_TIMEOUT_S + 30)  # fmt: skip
        deadline = time.monotonic() + READY_TIMEOUT_S
        selector = f"{APP_LABEL}={self.replica_set}"
        while True:
            out = self.kube("get", "pods", "--selector", selector, "--field-selector",
                            "status.phase=Running", "--output", POD_ROWS).stdout  # fmt: skip
            pods = parse_pods(out)
            if len(pods) == self.replicas:
                break
            if time.monotonic() > deadline:
                raise ToolOutputError(
                    f"{len(pods)} of {self.replicas} replicas running with an address after "
                    f"{READY_TIMEOUT_S:.0f} s:\n{out[-500:]}"
                )
            time.sleep(0.3)
        self.notes["placement"] = ",".join(sorted(node for _, node, _ in pods))
        addresses = [ip for _, _, ip in pods]
        self.notes["replica_addresses"] = ",".join(addresses)
        return addresses

    def _proxy_mode(self) -> str:
        """kube-proxy's mode as it reports it on the first server's node."""
        probe = f"curl -s -m 2 {shlex.quote(KUBE_PROXY_MODE_URL)}"
        out = self.sh(self.manager, probe, timeout=30, check=False)
        mode = out.stdout.strip()
        return mode if out.status == 0 and mode.isalnum() else "unknown"

    def _remove_kube(self, cluster) -> str:
        """Delete what the step created (kubectl waits for each object); the Deployment's pods
        go afterwards, waited for by the next step's drain. Returns what went wrong, if any."""
        self.log.append(f"--- kubectl delete {' '.join(reversed(cluster.created))} ---")
        try:
            cluster.stop()
        except RemoteError as exc:
            self.log.append(f"removal failed: {exc}")
            return str(exc)
        if self.balancer != "direct":
            selector = f"{LABEL}={self.campaign},{APP_LABEL}={self.replica_set}"
            listing = shlex.join([*self.kubectl, "get", "pods", "--selector", selector,
                                  "--output", "name", "--request-timeout=20s"])  # fmt: skip
            self.bench.draining.append(partial(self._wait_pods_gone, listing))
        return ""

    def _wait_pods_gone(self, listing: str, log: list[str]) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        with self._logging_to(log):
            while self.sh(self.kube_host, listing, timeout=30, check=False).stdout.strip():
                if time.monotonic() > deadline:
                    raise ToolOutputError(
                        f"pods of {self.replica_set} still there {READY_TIMEOUT_S:.0f} s after "
                        "its removal"
                    )
                time.sleep(0.2)
