"""`coldstart`: time from the run command to nginx answering through the published port.

The 004 article's cold-start table (p50/p95/p99 of "docker run to container process ready")
as a distribution over many starts, per mode: `docker-bridge` (plain `docker run -d
--publish`, the default bridge), `podman`, `rootless-docker`, `rootless-podman`, and `native`
(the same nginx binary started as a plain process: the baseline). The server is the `http`
benchmark's nginx with its shipped config (port 8080), the same binary natively and in the
engine's tool image.

The timer runs on the server host (pipeline/collect/host_scripts/coldstart.py, shipped with
``uploads``): per start it takes a monotonic timestamp, runs the engine's `run -d` (native: nginx
itself), and
once that has returned probes ``<host address>:8080`` every ~1 ms until `GET /` is answered:
the published port at the host's address, through whatever forwards it there (iptables DNAT,
rootlesskit, rootlessport), which is what a user waits for. Removal and the wait for the port
to close again are not timed. The script's docstring says why probes wait for `run -d`.

Kubernetes (the inventory's cluster, ``kubernetes:``): the start command is `kubectl run` of a
pod pinned to the first server's node, from the same tool image imported into the node's
containerd, and the timer runs on the kubectl host:

- ``k8s-nodeport``: the pod on the cluster network behind a NodePort Service on port 8080,
  created before the starts (untimed): a start is answered once the pod runs, its endpoint is
  published and kube-proxy has programmed it, which is what a user of a Service waits for;
- ``k8s-hostnetwork``: the pod in the node's network namespace (``hostNetwork``), answering
  on the node's port itself once nginx listens.

Samples: ``coldstart_s`` (seconds), one per start; ``sample`` is the start's number, ``t_ns``
its start time from the first start of its group. The first ``warmup_starts`` starts of every
step are flagged warm-up (a first start after an image import, or after another engine ran,
pays cold caches). A start that fails or takes longer than ``TIMEOUT_S`` fails the step.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import time
from dataclasses import dataclass, field

from pipeline import kube_objects
from pipeline.benchmarks.base import Benchmark, Outcome, Sample, Scenario, ToolOutputError
from pipeline.benchmarks.http import CONF, NGINX, PORT
from pipeline.capabilities import serving
from pipeline.hosts import LABEL, PID_DIR, ModeUnavailable, RemoteError

SCRIPT = f"{PID_DIR}/bin/co-coldstart.py"
FORMAT = 1  # the first field after "coldstart" in the script's header
TIMEOUT_S = 30.0  # a start not answered within this failed
INTERVAL_MS = 1.0  # between probes
NAME_MARK = "@NAME@"  # the timer puts each start's name here (host_scripts/coldstart.py)
KILLED_SETTLE_S = 5.0  # after a killed timer, look for late containers that long
# nginx's own files outside the image (pid and temp paths named in
# pipeline/collect/tool_conf/nginx-1k.conf)
SCRATCH = tuple(
    f"/tmp/co-nginx-1k{s}" for s in (".pid", "-body", "-proxy", "-fastcgi", "-uwsgi", "-scgi")
)
ENGINE_VERSION = {  # how each engine names its server's version
    "docker": ["version", "--format", "{{.Server.Version}}"],
    "rootless-docker": ["version", "--format", "{{.Server.Version}}"],
    "podman": ["version", "--format", "{{.Version}}"],
    "rootless-podman": ["version", "--format", "{{.Version}}"],
}

# The Kubernetes modes: the Service kind in front of the started pod (None: hostNetwork)
KUBERNETES = {"k8s-nodeport": "NodePort", "k8s-hostnetwork": None}
POD_LABEL = "org.container-overhead.coldstart"  # a step's pods and Service, by its prefix
PROXY_SYNC_S = 2.0  # kube-proxy programs a new Service within this (its 1 s minimum period)

_HEADER = re.compile(r"^coldstart (\d+) (.*)$", re.MULTILINE)
_START = re.compile(r"^start (\d+) ([01]) (ok|failed) ?(.*)$")


@dataclass
class ColdstartLog:
    """The timer's report: its settings, the commands it ran, and every start's times."""

    settings: dict[str, str]
    start_cmd: str
    stop_cmd: str
    warmup: list[Sample] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    cli_s: list[float | None] = field(default_factory=list)  # when `run -d` returned
    at_ns: list[int] = field(default_factory=list)  # every start's launch, in the timer's clock

    @property
    def timed_s(self) -> float:
        """Seconds inside the timed part of every start (warm-up included)."""
        return sum(s.value for s in (*self.warmup, *self.samples))

    @property
    def untimed_s(self) -> float:
        """Seconds between one start's answer and the next start's launch: the untimed removal
        and the wait for the port to close, which the scenario needs between its starts (the
        last start's removal has no later launch to bound it and is not counted)."""
        ready = [s.value for s in (*self.warmup, *self.samples)]
        gaps = (b - a for a, b in zip(self.at_ns, self.at_ns[1:], strict=False))
        return sum(max(0.0, gap / 1e9 - r) for gap, r in zip(gaps, ready, strict=False))


def parse_coldstart(raw: str) -> ColdstartLog:
    """pipeline/collect/host_scripts/coldstart.py's output -> the warm-up and measured starts.

    Raises ToolOutputError on a failed start, a truncated report or an unknown format."""
    header = _HEADER.search(raw)
    if header is None:
        tail = raw.strip()[-400:] or "(no output)"
        raise ToolOutputError(f"not a coldstart timer report: {tail}")
    if int(header.group(1)) != FORMAT:
        raise ToolOutputError(f"coldstart report format {header.group(1)}, expected {FORMAT}")
    settings = dict(kv.split("=", 1) for kv in header.group(2).split())
    lines = raw[header.start() :].splitlines()
    commands = {k: v for k, _, v in (line.partition(" ") for line in lines[1:3])}
    log = ColdstartLog(settings, commands.get("start-cmd", ""), commands.get("stop-cmd", ""))
    expected_warmup, expected = int(settings["warmup"]), int(settings["starts"])
    firsts: dict[bool, int] = {}
    ended = False
    for line in lines[3:]:
        if line.startswith("end "):
            ended = line.split()[1] == "ok"
            break
        match = _START.match(line)
        if match is None:
            raise ToolOutputError(f"coldstart line not understood: {line!r}")
        index, warm, status, rest = match.groups()
        if status == "failed":
            raise ToolOutputError(f"coldstart start {index} failed: {rest}")
        fields = rest.split()
        extra = dict(f.split("=", 1) for f in fields[1:])
        ready_ns, at_ns = int(fields[0]), int(extra["at_ns"])
        warmup = warm == "1"
        group = log.warmup if warmup else log.samples
        if int(index) != len(log.warmup) + len(log.samples):
            raise ToolOutputError(f"coldstart start {index} out of order")
        first = firsts.setdefault(warmup, at_ns)
        group.append(Sample("coldstart_s", "s", len(group), ready_ns / 1e9, at_ns - first))
        log.at_ns.append(at_ns)
        cli_ns = int(extra["cli_ns"])
        log.cli_s.append(cli_ns / 1e9 if cli_ns >= 0 else None)  # native: no run command
    if not ended:
        raise ToolOutputError("coldstart report has no `end ok` line: the timer was cut short")
    if (len(log.warmup), len(log.samples)) != (expected_warmup, expected):
        raise ToolOutputError(
            f"coldstart reported {len(log.warmup)} warm-up and {len(log.samples)} measured "
            f"starts, expected {expected_warmup} and {expected}"
        )
    return log


class Coldstart(Benchmark):
    title = "Cold start"
    analysis = "coldstart"
    tables = ("coldstart",)
    name = "coldstart"
    tool = "nginx"
    kind = "scenario"
    binaries = (NGINX,)
    port = PORT
    paths = ("host",)
    # the "docker" is a plain `docker run`: the default bridge, a published port
    modes = serving(name)
    variants = ("nginx",)
    summary_metric = "coldstart_s"
    uploads = {
        CONF: "pipeline/collect/tool_conf/nginx-1k.conf",
        SCRIPT: "pipeline/collect/host_scripts/coldstart.py",
    }
    server_scratch = SCRATCH
    options = {"starts": 30, "warmup_starts": 2}

    def __init__(self) -> None:
        # (campaign, host) -> rootful podman's ulimit options and how to describe them
        self._ulimits: dict[tuple[str, str], tuple[list[str], str]] = {}

    def image_paths(self) -> list[str]:
        return [NGINX, CONF]  # the timer runs on the host, never in the container

    def version_argv(self) -> list[str]:
        return ["sh", "-c", f"{NGINX} -v 2>&1"]  # nginx prints its version on stderr

    def server_argv(self, variant: str = "nginx") -> list[str]:
        return [NGINX, "-e", "stderr", "-c", CONF]

    def format_value(self, value: float) -> str:
        return f"{value * 1000:.0f} ms"

    def timer_args(self, scenario: Scenario) -> list[str]:
        """The timer's options common to every mode."""
        return [
            "--address", scenario.host.address, "--port", str(PORT),
            "--starts", str(int(self.options["starts"])),
            "--warmup", str(int(self.options["warmup_starts"])),
            "--timeout", f"{TIMEOUT_S:g}", "--interval-ms", f"{INTERVAL_MS:g}",
            "--name-prefix", scenario.prefix,
        ]  # fmt: skip

    def container_args(self, scenario: Scenario, cli: list[str], image: str, extra: list[str]):
        """--start/--stop for an engine: a labelled, detached, published nginx per start."""
        run = [*cli, "run", "--detach", "--name", "@NAME@", *scenario.labels,
               "--publish", f"{PORT}:{PORT}/tcp", *extra, image, *self.server_argv()]  # fmt: skip
        stop = [*cli, "rm", "--force", "@NAME@"]
        return ["--start", json.dumps(run), "--stop", json.dumps(stop)]

    def measure(self, scenario: Scenario) -> Outcome:
        if scenario.mode in KUBERNETES:
            return _KubeStarts(self, scenario).measure()
        ctx, host, engine = scenario.ctx, scenario.host, scenario.engine
        session = ctx.pool[host.name]
        notes = {
            "polled": f"{host.address}:{PORT} from {host.name} itself (the published port at "
            "the host's address)",
            "ready": "GET / answered with HTTP/, probed every 1 ms once the run command returned",
        }
        args = self.timer_args(scenario)
        root = None
        if engine is None:
            stem = ctx.pidfile_stem(host, f"{self.name}-native")
            args += ["--start", json.dumps(self.server_argv()), "--pidfile-stem", stem]
            notes["engine"] = "none (nginx started as a plain process)"
        else:
            # An engine only root reaches: the whole timer runs as root, sudo outside the timing
            cli, via_sudo = ctx.without_sudo(ctx.engine_cli(host, engine))
            root = "time starts of an engine only root reaches" if via_sudo else None
            image = ctx.image(host, engine).tag
            extra = self._podman_ulimits(scenario, notes) if engine == "podman" else []
            extra += scenario.engine_options
            args += self.container_args(scenario, cli, image, extra)
            version = session.run([*cli, *ENGINE_VERSION[engine]], timeout=60, check=False,
                                  root=root)  # fmt: skip
            notes["engine"] = engine
            notes["engine_version"] = version.stdout.strip() or version.stderr.strip()[-200:]
        return self.run_timer(
            session,
            host,
            args,
            notes,
            root=root,
            cleanup=lambda killed: self._remove_leftovers(
                scenario, settle_s=KILLED_SETTLE_S if killed else 0.0
            ),
        )

    def run_timer(self, session, host, args: list[str], notes: dict[str, str], *, root=None,
                  cleanup) -> Outcome:  # fmt: skip
        """Run the timer with ``args`` on ``host`` (``session``); ``cleanup(killed)`` afterwards,
        whatever happened (``killed``: the timer did not return, it may have died inside a
        start)."""
        command = f"python3 {SCRIPT} {shlex.join(args)}"
        killed = True
        try:
            result = session.run(command, timeout=self.session_timeout(), check=False, root=root)
            killed = False
        except RemoteError as exc:
            raise ToolOutputError(f"coldstart timer on {host.name}: {exc}") from exc
        finally:
            cleanup(killed)
        raw = result.stdout + (f"\n# stderr\n{result.stderr}" if result.stderr.strip() else "")
        log = parse_coldstart(result.stdout)
        if result.status != 0:
            raise ToolOutputError(f"coldstart timer exited {result.status}: {result.stderr[-300:]}")
        return Outcome(
            samples=log.samples,
            warmup=log.warmup,
            raw=raw,
            command=f"{host.name}$ {command}",
            window_s=log.timed_s,
            fixed_s=log.untimed_s,
            notes=notes,
        )

    def session_timeout(self) -> float:
        """Seconds the timer may run: a backstop, the timer bounds every start itself (its
        timeout, the removal, the wait for the port to close)."""
        starts = int(self.options["starts"]) + int(self.options["warmup_starts"])
        return 120 + starts * (TIMEOUT_S + 30)

    def _podman_ulimits(self, scenario: Scenario, notes: dict[str, str]) -> list[str]:
        """Rootful podman's ulimit options here (pipeline/collect/modes/podman.py: runc may refuse
        podman's raised defaults without CAP_SYS_RESOURCE), probed once per campaign with a
        `podman run --rm ... nginx -v`."""
        ctx, host = scenario.ctx, scenario.host
        key = (ctx.campaign, host.name)
        if key not in self._ulimits:
            name = f"{scenario.prefix}-ulimits"
            self._ulimits[key] = ctx.probe_ulimits(host, name, (NGINX, "-v"))
        options, notes["ulimits"] = self._ulimits[key]
        return options

    def _remove_leftovers(self, scenario: Scenario, settle_s: float = 0.0) -> None:
        """Whatever a failed or interrupted timer left: containers named from the prefix and
        carrying the campaign label, or native nginx processes from their pidfiles.
        ``settle_s``: keep looking that long (a killed engine CLI's create or start request
        still completes in the daemon, after a first look may have found nothing)."""
        ctx, host, engine = scenario.ctx, scenario.host, scenario.engine
        session = ctx.pool[host.name]
        if engine is None:
            stem = ctx.pidfile_stem(host, f"{self.name}-native")
            found = session.run(f"ls {shlex.quote(stem)}-*.pid 2>/dev/null; true").stdout.split()
            if found:
                ctx.kill_pidfiles(host, found)
            session.run(["rm", "-rf", "--", *SCRATCH], timeout=30)
            return
        cli = shlex.join(ctx.engine_cli(host, engine))
        label = shlex.quote(f"label={LABEL}={ctx.campaign}")
        name = shlex.quote(f"name={scenario.prefix}-")
        remove = f'c=$({cli} ps -aq --filter {label} --filter {name}); '
        remove += f'[ -z "$c" ] || {cli} rm -f $c'
        if settle_s > 0:
            remove = (
                f"end=$(($(date +%s) + {math.ceil(settle_s)})); while :; do {remove}; "
                '[ "$(date +%s)" -ge "$end" ] && break; sleep 0.5; done'
            )
        session.run(remove, timeout=120 + settle_s)


class _KubeStarts:
    """One (run, Kubernetes mode): the timer on the kubectl host starts pods with `kubectl run`
    and probes the first server's address; the NodePort Service (k8s-nodeport) exists for the
    whole step. Everything carries the campaign label and the step's POD_LABEL, and goes when
    the step ends (the campaign's clean-up finds it by the label after a crash)."""

    def __init__(self, bench: Coldstart, scenario: Scenario) -> None:
        self.bench = bench
        self.s = scenario
        self.ctx = scenario.ctx
        self.kube_host, self.kubectl = self.ctx.kubectl()
        self.session = self.ctx.pool[self.kube_host.name]
        self.service = KUBERNETES[scenario.mode]
        self.labels = {LABEL: self.ctx.campaign, POD_LABEL: scenario.prefix}

    def pod(self, image: str, node: str) -> dict:
        """The started pod (``@NAME@``: the timer's name for the start), as `kubectl run`'s
        override: pinned to the node, the local image, nginx as in every other mode."""
        argv = self.bench.server_argv()
        return kube_objects.pinned_pod(NAME_MARK, node, image, argv, self.labels,
                                       host_network=self.service is None)  # fmt: skip

    def service_manifest(self) -> dict:
        name, selector = f"{self.s.prefix}-svc", {POD_LABEL: self.s.prefix}
        return kube_objects.service(name, selector, self.labels, self.service, PORT)

    def timer_args(self, image: str, node: str) -> list[str]:
        pod = json.dumps(self.pod(image, node), separators=(",", ":"))
        run = [*self.kubectl, "run", NAME_MARK, f"--image={image}", "--restart=Never",
               f"--overrides={pod}"]  # fmt: skip
        stop = [*self.kubectl, "delete", f"pod/{NAME_MARK}", "--ignore-not-found",
                "--wait=true", "--timeout=60s"]  # fmt: skip
        return [*self.bench.timer_args(self.s), "--start", json.dumps(run),
                "--stop", json.dumps(stop)]  # fmt: skip

    def measure(self) -> Outcome:
        host = self.s.host
        image = self.ctx.kubernetes_image(host).tag
        node = self.ctx.kubernetes_node(host)
        version = self.session.run([*self.kubectl, "version", "--output", "json"], check=False)
        try:
            server_version = json.loads(version.stdout)["serverVersion"]["gitVersion"]
        except (ValueError, KeyError, TypeError):
            server_version = "unknown"
        notes = {
            "engine": "kubernetes",
            "engine_version": server_version,
            "kubernetes_node": node,
            "start": "kubectl run of a pod pinned to the node (no scheduler), local image",
            "polled": f"{host.address}:{PORT} from {self.kube_host.name}",
            "ready": "GET / answered with HTTP/, probed every 1 ms once kubectl run returned",
        }
        if self.service:
            try:
                self._create_service()
            except BaseException:
                self._remove(killed=False)
                raise
            notes["service"] = f"{self.service} {self.service_manifest()['metadata']['name']}"
            notes["polled"] += " (the Service's node port: kube-proxy forwards to the pod)"
        else:
            notes["polled"] += " (the pod listens in the node's network namespace)"
        args = self.timer_args(image, node)  # the timer's clean-up removes the Service too
        return self.bench.run_timer(self.session, self.kube_host, args, notes, cleanup=self._remove)

    def _create_service(self) -> None:
        """The NodePort Service, before any start; its port refuses until a pod is ready."""
        self._remove(killed=False)  # one a killed step of the same name left
        created = self.session.run(
            [*self.kubectl, "create", "--filename", "-"],
            stdin=json.dumps(self.service_manifest()).encode(),
            timeout=60,
            check=False,
        )
        if created.status:
            text = (created.stderr or created.stdout).strip()
            if "provided port is not in the valid range" in text:
                raise ModeUnavailable(
                    f"the cluster refused node port {PORT}: its API server's "
                    "--service-node-port-range must include it (the lab's does)"
                )
            raise ToolOutputError(f"kubectl create of the NodePort Service failed: {text[-300:]}")
        time.sleep(PROXY_SYNC_S)

    def _remove(self, killed: bool) -> None:
        """The step's pods and Service (by POD_LABEL), waited for; after a killed timer, a
        `kubectl run` that was cut short may still create its pod, so look again once."""
        selector = f"{POD_LABEL}={self.s.prefix}"
        delete = [*self.kubectl, "delete", "pods,services", "--selector", selector,
                  "--ignore-not-found", "--wait=true", "--timeout=90s"]  # fmt: skip
        self.session.run(delete, timeout=150, check=False)
        if killed:
            time.sleep(KILLED_SETTLE_S)
            self.session.run(delete, timeout=150, check=False)
