"""`orchestration`: how long Docker Swarm takes until every replica accepts TCP connections.

Variants (the 000 article's table, Swarm column): ``create`` (``docker service create``, one
replica), ``scale-10`` and ``scale-50`` (``docker service scale`` from 1 to 10 / 50 replicas),
``update-10`` (a rolling update of 10 replicas to a new task definition). A variant's replica
count above the option ``max_replicas`` runs at the cap: the variant keeps its name (tables
line up across profiles) and the count actually reached is in the data, as the sample metric
``orchestration_replicas`` beside every ``orchestration_s``, and in the run's notes.

Each step creates, on the Swarm manager, a labelled attachable overlay network, a labelled
probe container on it, and services running ``iperf3 -s`` from the tool image (only as a TCP
server that accepts; the image must exist with the same tag on every Swarm node). The lab's
kernel has no IPVS, so the Swarm VIP and routing mesh do not work: services use
``--endpoint-mode dnsrr`` and the probe dials every task address Docker's DNS gives for
``tasks.<service>``. The probe (pipeline/collect/host_scripts/orchestration_probe.py, shipped to
the hosts) runs with the host's python3 inside the probe container's network namespace, starts the
clock,
runs the docker command and polls every 10 ms; every wait is bounded (TIMEOUT_S -> failed).

A sample is the seconds from just before the command to the moment the last of the wanted
replicas accepted a connection; ``repeats`` timed repetitions per step, one sample each:

- create: a fresh service per repetition (removed, and its containers gone, before the next).
- scale-N: a 1-replica service scaled to N; back to 1 (containers gone) between repetitions.
- update-N: an N-replica service whose argv changes to a new port at each repetition, with
  Docker's default update policy unless the options say otherwise (parallelism 1, delay 0 s,
  stop-first). Only the new tasks listen on the new port, so the probe counts new tasks only,
  whatever addresses the overlay's IPAM hands out.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pipeline.benchmarks.base import Benchmark, Outcome, Sample, Scenario, ToolOutputError
from pipeline.capabilities import serving
from pipeline.hosts import LABEL, SCRATCH_DIR, ModeUnavailable, NeedsRoot, RemoteError

IPERF3 = "/usr/bin/iperf3"
PROBE = "/tmp/container-overhead/files/orchestration_probe.py"
PROBE_PRIVILEGE = "enter the probe container's network namespace (nsenter)"
PORT = 5201  # the services' first port; update repetition k moves them to PORT + k
PROBE_PORT = 5200  # the probe container's own idle iperf3 (it only holds the namespace)
TIMEOUT_S = 120.0  # every wait: a replica count not reached by then fails the step
INTERVAL_S = 0.01
FORMAT = 1  # the probe output format this parser reads
METRIC = "orchestration_s"
KUBERNETES_MODE = "k8s-pod"  # the same variants as a Kubernetes Deployment (_KubeStep)
APP_LABEL = "org.container-overhead.app"  # a Deployment's pods, by the Deployment's name
# Each watch event as one line the probe's Watcher reads: TYPE NAME [POD-IP]
WATCH_TEMPLATE = 'jsonpath={.type} {.object.metadata.name} {.object.status.podIP}{"\\n"}'
_VARIANT = re.compile(r"^(create|scale|update)(?:-(\d+))?$")
_LINE = re.compile(r"^(probe|command|accept|done|timeout|command_failed) (\S+)(?: (.*))?$")


@dataclass(frozen=True)
class ProbeResult:
    seconds: float  # until the wanted number of replicas had accepted
    accepted: int
    want: int
    records: int  # addresses the service's DNS name had at the end
    polls: int
    accepts: list[tuple[float, str]]  # (seconds, address) in the order they accepted


def _fields(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in text.split() if "=" in part)


def parse_probe(raw: str) -> ProbeResult:
    """The probe's output -> the timed result; ToolOutputError for a timeout, a failed docker
    command or output that is not the probe's."""
    header = done = None
    accepts: list[tuple[float, str]] = []
    for line in raw.splitlines():
        match = _LINE.match(line.strip())
        if not match:
            continue
        kind, first, rest = match.group(1), match.group(2), match.group(3) or ""
        if kind == "probe":
            if first != str(FORMAT):
                raise ToolOutputError(f"probe output format {first}, this parser reads {FORMAT}")
            header = _fields(rest)
        elif kind == "accept":
            accepts.append((float(first), rest.strip()))
        elif kind == "done":
            done = (float(first), _fields(rest))
        elif kind == "timeout":
            f = _fields(rest)
            raise ToolOutputError(
                f"only {f.get('accepted')} of {f.get('want')} replicas accepted connections "
                f"within {float(first):.0f} s ({f.get('records')} DNS records)"
            )
        elif kind == "command_failed":
            raise ToolOutputError(f"docker command failed: {first} {rest}"[:600])
    if header is None or done is None:
        raise ToolOutputError(f"no probe result in the output: {raw.strip()[-400:]!r}")
    seconds, f = done
    result = ProbeResult(
        seconds=seconds,
        accepted=int(f["accepted"]),
        want=int(f["want"]),
        records=int(f["records"]),
        polls=int(f["polls"]),
        accepts=accepts,
    )
    if result.accepted < result.want or not 0 < seconds <= float(header["timeout_s"]) + 1:
        raise ToolOutputError(f"implausible probe result: {done}")
    return result


def replicas(variant: str, cap: int) -> int:
    """The replica count a variant aims at under the cap (create: 1)."""
    match = _VARIANT.match(variant)
    if not match or (match.group(1) != "create") != bool(match.group(2)):
        raise ValueError(f"orchestration variant {variant!r} is not create, scale-N or update-N")
    wanted = int(match.group(2) or 1)
    return max(1, min(wanted, cap))


def placement(text: str) -> str:
    """`docker service ps --format {{.Node}}` lines -> "node1=4,node2=3,node3=3"."""
    counts = Counter(line.strip() for line in text.splitlines() if line.strip())
    return ",".join(f"{node}={n}" for node, n in sorted(counts.items()))


class Orchestration(Benchmark):
    title = "Swarm orchestration"
    analysis = "orchestration"
    tables = ("orchestration",)
    name = "orchestration"
    tool = "docker swarm"
    kind = "scenario"
    modes = serving(name)
    paths = ("host",)
    variants = ("create", "scale-10", "scale-50", "update-10")
    binaries = (IPERF3,)
    uploads = {PROBE: "pipeline/collect/host_scripts/orchestration_probe.py"}
    summary_metric = METRIC
    options = {
        "max_replicas": 50,  # a variant's replica count above this runs at this
        "repeats": 3,  # timed repetitions per step
        "update_parallelism": 1,  # Docker's defaults for a rolling update
        "update_delay_s": 0.0,
        "update_order": "stop-first",
    }

    def __init__(self) -> None:
        # the Swarm's nodes and their images are checked once per campaign (first step)
        self._swarm_checked = False
        self._swarm_version = ""

    def version_argv(self) -> list[str]:
        return ["docker", "version", "--format", "docker {{.Server.Version}}"]

    def format_value(self, value: float) -> str:
        return f"{value:.2f} s"

    # -- one step --------------------------------------------------------------------------

    def measure(self, scenario: Scenario) -> Outcome:
        kubernetes = scenario.mode == KUBERNETES_MODE
        if scenario.engine != "docker" and not kubernetes:
            raise ModeUnavailable(f"orchestration drives Docker Swarm, not {scenario.engine}")
        cap = int(self.options["max_replicas"])
        repeats = int(self.options["repeats"])
        if cap < 1 or repeats < 1:
            raise ValueError(f"max_replicas and repeats must be >= 1: {self.options}")
        want = replicas(scenario.variant, cap)
        step: _Step | _KubeStep = (_KubeStep if kubernetes else _Step)(self, scenario)
        try:
            step.check()
            step.setup()
            kind = scenario.variant.split("-")[0]
            results = getattr(step, kind)(want, repeats)
        except RemoteError as exc:
            raise ToolOutputError(f"{step.what} step failed: {exc}") from exc
        finally:
            with step.untimed():
                step.teardown()
        samples = []
        for i, r in enumerate(results):
            samples.append(Sample(METRIC, "s", i, r.seconds))
            samples.append(Sample("orchestration_replicas", "count", i, float(r.accepted)))
        notes = {
            "max_replicas": str(cap),
            "replicas": str(want),
            "capped": str(want < replicas(scenario.variant, 10**6)).lower(),
            "repeats": str(repeats),
            "placement": step.placement,
            **step.notes(),
            "probe_interval_s": f"{INTERVAL_S:g}",
        }
        if kind == "update":
            notes["update"] = step.update_policy
        return Outcome(
            samples=samples,
            raw="\n".join(step.log),
            command=step.timed_command,
            window_s=sum(r.seconds for r in results),
            fixed_s=step.untimed_s,
            notes=notes,
        )


class _Commands:
    """Commands run on one host, each logged with when it started and how long it took (from
    the controller): where a step's overhead goes."""

    session: Any
    t0: float
    log: list[str]
    untimed_s: float = 0.0  # the removals and settling the scenario needs between timed spans

    @contextmanager
    def untimed(self) -> Iterator[None]:
        """Count what runs inside as the scenario's untimed steps (the split's tool-fixed time)."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.untimed_s += time.monotonic() - started

    def run(
        self, argv: list[str] | str, timeout: float = 60, check: bool = True,
        root: str | None = None, stdin: bytes | None = None,
    ):  # fmt: skip
        text = argv if isinstance(argv, str) else shlex.join(argv)
        started = time.monotonic() - self.t0
        result = self.session.run(text, timeout=timeout, check=check, root=root, stdin=stdin)
        took = time.monotonic() - self.t0 - started
        self.log.append(
            f"[{started:.2f} s +{took:.2f} s] $ {text}\n{result.stdout}{result.stderr}".rstrip()
        )
        return result


    # -- the variants, through the orchestrator's commands (the subclasses')

    def create_command(self, name: str, count: int, port: int) -> list[str]:
        raise NotImplementedError

    def scale_command(self, name: str, count: int) -> list[str]:
        raise NotImplementedError

    def update_command(self, name: str, port: int) -> list[str]:
        raise NotImplementedError

    def remove(self, name: str) -> None:
        raise NotImplementedError

    def record_placement(self, name: str) -> None:
        raise NotImplementedError

    def probe_run(
        self, name: str, want: int, port: int, command: list[str], mode: str = "accept"
    ) -> ProbeResult:
        raise NotImplementedError

    def scaled_to(self, name: str, count: int) -> None:
        """After an untimed scale: the replicas beyond ``count`` gone (a hook)."""

    def remove_all(self, names: list[str]) -> list[str]:
        """Remove every one of ``names`` (a teardown: one failure does not stop the others);
        what went wrong, one message each."""
        problems = []
        for name in list(names):
            try:
                self.remove(name)
            except (RemoteError, ToolOutputError) as exc:
                problems.append(str(exc))
        return problems

    def create(self, want: int, repeats: int) -> list[ProbeResult]:
        results = []
        for rep in range(1, repeats + 1):
            name = f"{self.s.prefix}-c{rep}"
            results.append(self.probe_run(name, want, PORT, self.create_command(name, 1, PORT)))
            self.record_placement(name)
            with self.untimed():
                self.remove(name)
        return results

    def scale(self, want: int, repeats: int) -> list[ProbeResult]:
        name = f"{self.s.prefix}-s"
        self.probe_run(name, 1, PORT, self.create_command(name, 1, PORT))
        results = []
        for rep in range(1, repeats + 1):
            results.append(self.probe_run(name, want, PORT, self.scale_command(name, want)))
            self.record_placement(name)
            if rep < repeats:  # back to one replica, the others gone
                with self.untimed():
                    self.run(self.scale_command(name, 1))
                    self.scaled_to(name, 1)
                    self.probe_run(name, 1, PORT, [], mode="settle")
        return results

    def update(self, want: int, repeats: int) -> list[ProbeResult]:
        name = f"{self.s.prefix}-u"
        self.probe_run(name, want, PORT, self.create_command(name, want, PORT))
        results = []
        for rep in range(1, repeats + 1):
            port = PORT + rep  # only the new replicas listen here
            results.append(self.probe_run(name, want, port, self.update_command(name, port)))
            self.record_placement(name)
            # the old replicas out of the address list before the next repetition
            with self.untimed():
                self.probe_run(name, want, port, [], mode="settle")
        return results

class _Step(_Commands):
    """The objects of one step and the commands that create, time and remove them."""

    what = "swarm"

    def __init__(self, bench: Orchestration, scenario: Scenario) -> None:
        self.bench = bench
        self.s = scenario
        self.ctx = scenario.ctx
        self.manager = scenario.host
        self.session = self.ctx.pool[self.manager.name]
        self.network = f"{scenario.prefix}-net"
        self.probe = f"{scenario.prefix}-probe"
        self.campaign_label = f"{LABEL}={self.ctx.campaign}"
        self.services: list[str] = []
        self.log: list[str] = []
        self.placement = ""
        self.version = ""
        self.timed_command = ""
        self.pid = ""
        self.t0 = time.monotonic()
        o = bench.options
        self.update_args = [
            "--update-parallelism", str(int(o["update_parallelism"])),
            "--update-delay", f"{float(o['update_delay_s']):g}s",
            "--update-order", str(o["update_order"]),
        ]  # fmt: skip
        self.update_policy = " ".join(self.update_args)

    # -- plumbing

    def notes(self) -> dict[str, str]:
        return {"docker_version": self.version,
                "endpoint_mode": "dnsrr (no IPVS: no VIP, no routing mesh)"}  # fmt: skip

    def check(self) -> None:
        """Every Swarm node that can take a task must be an inventory server with the same
        tool image tag: tasks find their image by tag, locally (no registry)."""
        if self.bench._swarm_checked:
            self.version = self.bench._swarm_version
            return
        servers = self.ctx.inventory.servers
        tags = {h.name: self.ctx.image(h).tag for h in servers}
        if len(set(tags.values())) != 1:
            raise ModeUnavailable(
                f"the tool image differs between the Swarm nodes ({tags}): every node needs "
                f"the same {IPERF3} build"
            )
        ids = {
            self.ctx.pool[h.name]
            .run(["docker", "info", "--format", "{{.Swarm.NodeID}}"], timeout=30)
            .stdout.strip()
            for h in servers
        }
        nodes = self.run(
            ["docker", "node", "ls", "--format", "{{.ID}} {{.Hostname}} {{.Status}} "
             "{{.Availability}}"]
        ).stdout.split("\n")  # fmt: skip
        foreign = [
            line.split()[1]
            for line in nodes
            if line.strip() and line.split()[0] not in ids and line.endswith("Ready Active")
        ]
        if foreign:
            raise ModeUnavailable(
                f"Swarm node(s) {foreign} take tasks but are not inventory servers, so their "
                "tool image cannot be built or checked"
            )
        self.version = self.run(["docker", "version", "--format", "{{.Server.Version}}"])
        self.version = self.version.stdout.strip()
        self.bench._swarm_checked = True
        self.bench._swarm_version = self.version

    def setup(self) -> None:
        ssh = self.manager.ssh
        if not ssh.privileged:  # before anything is made: the probe enters a namespace
            raise NeedsRoot(self.manager.name, ssh.user, PROBE_PRIVILEGE)
        self.image = self.ctx.image(self.manager).tag
        labels = list(self.s.labels)
        self.run(["docker", "network", "create", "--driver", "overlay", "--attachable",
                  *labels, self.network], timeout=120)  # fmt: skip
        self.run(["docker", "run", "--detach", "--name", self.probe, *labels,
                  "--network", self.network, self.image, IPERF3, "-s", "-p", str(PROBE_PORT)],
                 timeout=120)  # fmt: skip
        self.pid = self.run(["docker", "inspect", "--format", "{{.State.Pid}}", self.probe])
        self.pid = self.pid.stdout.strip()
        if not self.pid.isdigit() or self.pid == "0":
            raise ToolOutputError(f"probe container {self.probe} is not running")

    def create_command(self, name: str, count: int, port: int) -> list[str]:
        self.services.append(name)
        container_labels = ["--container-label", self.campaign_label]
        return [
            "docker", "service", "create", "--detach", "--no-resolve-image", "--name", name,
            "--endpoint-mode", "dnsrr", "--network", self.network, "--replicas", str(count),
            *self.update_args, *self.s.labels, *container_labels,
            self.image, IPERF3, "-s", "-p", str(port),
        ]  # fmt: skip

    def probe_run(
        self, name: str, want: int, port: int, command: list[str], mode: str = "accept"
    ) -> ProbeResult:
        """Run the probe on the manager in the probe container's network namespace."""
        argv = [
            "nsenter", f"--net=/proc/{self.pid}/ns/net", "python3", PROBE, "--mode", mode,
            "--name", f"tasks.{name}", "--port", str(port), "--want", str(want),
            "--timeout", f"{TIMEOUT_S:g}", "--interval", f"{INTERVAL_S:g}",
        ]  # fmt: skip
        if command:
            argv += ["--", *command]
        text = shlex.join(argv)
        # as root where the login is not (sudo starts before the probe's clock)
        result = self.run(text, timeout=TIMEOUT_S + 60, check=False, root=PROBE_PRIVILEGE)
        if command and mode == "accept":
            self.timed_command = f"{self.manager.name}$ {text}"
        return parse_probe(result.stdout)

    def containers(self, name: str) -> int:
        """The service's containers on every node, whatever their state."""
        total = 0
        for host in self.ctx.inventory.servers:
            out = self.ctx.pool[host.name].run(
                ["docker", "ps", "-aq", "--filter", f"label=com.docker.swarm.service.name={name}"],
                timeout=30,
            )
            total += len(out.stdout.split())
        return total

    def wait_containers(self, name: str, count: int) -> None:
        started = time.monotonic()
        while (have := self.containers(name)) != count:
            if time.monotonic() > started + TIMEOUT_S:
                raise ToolOutputError(
                    f"{name} still has {have} containers, not {count}, after {TIMEOUT_S:.0f} s"
                )
            time.sleep(0.3)
        waited = time.monotonic() - started
        self.log.append(f"[{started - self.t0:.2f} s +{waited:.2f} s] {count} containers of {name}")

    def remove(self, name: str) -> None:
        self.run(["docker", "service", "rm", name], check=False)
        self.wait_containers(name, 0)
        if name in self.services:
            self.services.remove(name)

    def record_placement(self, name: str) -> None:
        out = self.run(["docker", "service", "ps", name, "--filter", "desired-state=running",
                        "--format", "{{.Node}}"])  # fmt: skip
        self.placement = placement(out.stdout)

    def scale_command(self, name: str, count: int) -> list[str]:
        return ["docker", "service", "scale", "--detach", f"{name}={count}"]

    def update_command(self, name: str, port: int) -> list[str]:
        return ["docker", "service", "update", "--detach", "--no-resolve-image",
                "--args", shlex.join([IPERF3, "-s", "-p", str(port)]), name]  # fmt: skip

    def scaled_to(self, name: str, count: int) -> None:
        self.wait_containers(name, count)

    def teardown(self) -> None:
        """Remove what the step made, also after a failure; the campaign's cleanup_host finds
        anything this misses by the campaign label."""
        problems = self.remove_all(self.services)
        self.run(["docker", "rm", "--force", self.probe], check=False)
        deadline = time.monotonic() + 60
        # an overlay network keeps its task endpoints a moment after the containers are gone
        while self.run(["docker", "network", "rm", self.network], check=False).status != 0:
            gone = self.session.run(["docker", "network", "inspect", self.network], check=False)
            if gone.status != 0 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        self.wait_network_gone()
        if problems:
            self.log.append("teardown: " + "; ".join(problems))

    def wait_network_gone(self) -> None:
        """Workers drop their copy of the overlay a moment after the manager removes it."""
        deadline = time.monotonic() + 30
        for host in self.ctx.inventory.servers:
            while time.monotonic() < deadline:
                out = self.ctx.pool[host.name].run(
                    ["docker", "network", "ls", "-q", "--filter", f"name={self.network}"],
                    timeout=30,
                    check=False,
                )
                if not out.stdout.strip():
                    break
                time.sleep(0.3)


class _KubeStep(_Commands):
    """The same variants on the inventory's Kubernetes cluster: a Deployment of ``iperf3 -s``
    pods (the scheduler places them on any node), created, scaled and updated with kubectl.
    The probe runs on the kubectl host, where the pod addresses are routed, and learns them
    from a watch of the Deployment's pods (the cluster has no DNS add-on to ask). A rolling
    update uses Kubernetes' default strategy, as the Swarm step uses Docker's."""

    what = "kubernetes"

    def __init__(self, bench: Orchestration, scenario: Scenario) -> None:
        self.s = scenario
        self.ctx = scenario.ctx
        self.host, self.kubectl = self.ctx.kubectl()
        self.session = self.ctx.pool[self.host.name]
        self.deployments: list[str] = []
        self.files: list[str] = []
        self.log: list[str] = []
        self.placement = ""
        self.version = ""
        self.timed_command = ""
        self.t0 = time.monotonic()
        self.update_policy = "RollingUpdate maxSurge=25% maxUnavailable=25% (Kubernetes' default)"

    def notes(self) -> dict[str, str]:
        return {
            "kubernetes_version": self.version,
            "endpoint_mode": "pod addresses from a watch of the pods (no Service, no DNS)",
        }

    def check(self) -> None:
        """Every server's node holds the same tool image (pods find it locally, no registry)."""
        tags = {h.name: self.ctx.kubernetes_image(h).tag for h in self.ctx.inventory.servers}
        if len(set(tags.values())) != 1:
            raise ModeUnavailable(f"the tool image differs between the servers ({tags})")
        self.image = next(iter(tags.values()))
        version = self.run([*self.kubectl, "version", "--output", "json"], check=False)
        try:
            self.version = json.loads(version.stdout)["serverVersion"]["gitVersion"]
        except (ValueError, KeyError, TypeError):
            self.version = "unknown"

    def setup(self) -> None:
        return None

    def manifest(self, name: str, count: int, port: int) -> dict:
        labels = {LABEL: self.ctx.campaign, APP_LABEL: name}
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "labels": {LABEL: self.ctx.campaign}},
            "spec": {
                "replicas": count,
                "selector": {"matchLabels": {APP_LABEL: name}},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{
                        "name": "tool", "image": self.image, "imagePullPolicy": "Never",
                        "command": [IPERF3, "-s", "-p", str(port)],
                    }]},
                },
            },
        }  # fmt: skip

    def create_command(self, name: str, count: int, port: int) -> list[str]:
        """The timed command: `kubectl create` of a Deployment written to a file first."""
        path = f"{SCRATCH_DIR}/{name}.json"
        self.files.append(path)
        self.run(f"mkdir -p {SCRATCH_DIR} && cat > {shlex.quote(path)}",
                 stdin=json.dumps(self.manifest(name, count, port)).encode())  # fmt: skip
        self.deployments.append(name)
        return [*self.kubectl, "create", "--filename", path]

    def probe_run(
        self, name: str, want: int, port: int, command: list[str], mode: str = "accept"
    ) -> ProbeResult:
        watch = [*self.kubectl, "get", "pods", "--selector", f"{APP_LABEL}={name}", "--watch",
                 "--output-watch-events", "--output", WATCH_TEMPLATE]  # fmt: skip
        argv = [
            "python3", PROBE, "--mode", mode, "--watch", shlex.join(watch),
            "--port", str(port), "--want", str(want),
            "--timeout", f"{TIMEOUT_S:g}", "--interval", f"{INTERVAL_S:g}",
        ]  # fmt: skip
        if command:
            argv += ["--", *command]
        text = shlex.join(argv)
        result = self.run(text, timeout=TIMEOUT_S + 60, check=False)
        if command and mode == "accept":
            self.timed_command = f"{self.host.name}$ {text}"
        return parse_probe(result.stdout)

    def pods(self, name: str) -> list[str]:
        out = self.run([*self.kubectl, "get", "pods", "--selector", f"{APP_LABEL}={name}",
                        "--output", "name"], timeout=30)  # fmt: skip
        return out.stdout.split()

    def wait_pods(self, name: str, count: int) -> None:
        started = time.monotonic()
        while (have := len(self.pods(name))) != count:
            if time.monotonic() > started + TIMEOUT_S:
                raise ToolOutputError(f"{name} still has {have} pods, not {count}, after "
                                      f"{TIMEOUT_S:.0f} s")  # fmt: skip
            time.sleep(0.3)

    def remove(self, name: str) -> None:
        self.run([*self.kubectl, "delete", f"deployment/{name}", "--ignore-not-found",
                  "--wait=true"], timeout=TIMEOUT_S, check=False)  # fmt: skip
        self.wait_pods(name, 0)
        if name in self.deployments:
            self.deployments.remove(name)

    def record_placement(self, name: str) -> None:
        template = 'jsonpath={range .items[*]}{.spec.nodeName}{"\\n"}{end}'
        out = self.run([*self.kubectl, "get", "pods", "--selector", f"{APP_LABEL}={name}",
                        "--field-selector", "status.phase=Running", "--output",
                        template])  # fmt: skip
        self.placement = placement(out.stdout)

    def scale_command(self, name: str, count: int) -> list[str]:
        return [*self.kubectl, "scale", f"deployment/{name}", f"--replicas={count}"]

    def update_command(self, name: str, port: int) -> list[str]:
        patch = [{"op": "replace", "path": "/spec/template/spec/containers/0/command",
                  "value": [IPERF3, "-s", "-p", str(port)]}]  # fmt: skip
        return [*self.kubectl, "patch", f"deployment/{name}", "--type=json",
                "--patch", json.dumps(patch)]  # fmt: skip

    def teardown(self) -> None:
        """Remove the step's Deployments (and their pods) and files, also after a failure; the
        campaign's clean-up finds anything left by the campaign label."""
        problems = self.remove_all(self.deployments)
        if self.files:
            self.run(["rm", "-f", "--", *self.files], check=False)
        if problems:
            self.log.append("teardown: " + "; ".join(problems))
