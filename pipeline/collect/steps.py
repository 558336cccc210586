"""How each kind of benchmark measures one step: a step runner per kind, one interface.

The campaign's loop (the order, resumption, the interference watch, retries, saving) is the same
for every benchmark; what differs between kinds is here:

- ``NetworkSteps``: a server the mode deploys (one per mode, run and ``server_group``, shared
  by that group's paths and variants), the tool's client on the path's client host; the lab's
  CPU placement applies.
- ``HostSteps``: the tool run to completion in the mode on the server host (``Mode.foreground``:
  the server host is the client host), one deployment per step, calibrated by the probe the
  mode ran.
- ``ScenarioSteps``: the benchmark drives the mode's engine itself (``Benchmark.measure``); it
  has no one per-run value for precision planning.

A runner measures with its campaign's shared services (the watch, the kept logs, the sample
records, the clock); ``runner_for`` picks a benchmark's. Every kind's step is measured inside a
``ClockWatch`` (``measure_checked``): a step during which a realtime clock was stepped is failed
with "clock stepped by ...", its samples dropped, and measured again as any failed step.
"""

from __future__ import annotations

import json
import shlex
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pipeline.benchmarks import Benchmark, Scenario, ToolOutputError, Window
from pipeline.capabilities import ORCHESTRATOR_SCENARIOS
from pipeline.collect.modes import MODES, Context, Mode, ModeUnavailable, Workload
from pipeline.collect.modes.base import LABEL, Deployment
from pipeline.collect.session import ClockWatch, describe_steps

if TYPE_CHECKING:
    from pipeline.collect.campaign import Campaign
    from pipeline.collect.plan import Step

Cell = tuple[str, str, str]  # (mode, path, variant)
Measured = tuple[list[dict], dict]  # a step's sample records and its runs row


class StepRunner:
    """What a kind of benchmark does differently: which cells it plans, which steps share a
    deployment, how one step is measured and what it keeps between steps."""

    kind: ClassVar[str]
    placed: ClassVar[bool] = False  # the lab's CPU placement (client and server CPUs) applies
    fixed_runs: ClassVar[str | None] = None  # why precision planning cannot apply, if it cannot

    def __init__(self, campaign: Campaign) -> None:
        self.campaign = campaign

    @property
    def benchmark(self) -> Benchmark:
        return self.campaign.benchmark

    @staticmethod
    def cells(benchmark: Benchmark, modes: list[str], paths: list[str],
              variants: list[str]) -> list[Cell]:  # fmt: skip
        """Every cell the benchmark measures on ``paths`` and ``variants`` with ``modes``."""
        raise NotImplementedError

    def server_group(self, mode: str, path: str, variant: str) -> tuple:
        """The cells one deployment serves within a run (``schedule`` orders them together)."""
        raise NotImplementedError

    def measure(self, ctx: Context, mode: Mode, step: Step, row: dict, keep: bool) -> Measured:
        """One measurement of ``step`` with ``mode`` available on its path; ``row`` is its runs
        row so far. ``keep``: the next step shares this step's deployment."""
        raise NotImplementedError

    def release(self) -> None:
        """Let go of what the runner itself keeps across steps (nothing, unless it says)."""

    def measure_checked(self, ctx: Context, mode: Mode, step: Step, row: dict,
                        keep: bool) -> Measured:  # fmt: skip
        """``measure`` inside a clock watch of this machine and of the hosts the interference
        watch reads (``Campaign._clocks``). A step during which a realtime clock was stepped
        keeps no sample: its durations may come from that clock (a tool's own timestamps,
        ``date``, the runs row's times). It is failed with the step's size, so it is measured
        again (``Campaign._measure_all``) and its attempt stays on record (attempts.parquet); a
        step that failed anyway says so too."""
        c = self.campaign
        c._clocks = {}
        with ClockWatch(lambda: c._clocks) as clock:
            samples, row = self.measure(ctx, mode, step, row, keep)
        stepped = clock.steps()
        if not stepped or row["status"] == "skipped":
            return samples, row
        said = describe_steps(stepped)
        if row["status"] == "failed":
            return [], {**row, "reason": f"{row['reason']} ({said})"}
        return [], c._finish(row, "failed", f"{said}: its timings are not kept")


class ClientSteps(StepRunner):
    """The tool's client against a deployment the mode starts: a warm-up, then the measured
    windows, each watched; the deployment stays up for the next step when it shares it."""

    def workload(self, step: Step) -> Workload:
        """What the mode runs for the step's deployment."""
        raise NotImplementedError

    def start(self, ctx: Context, mode: Mode, step: Step) -> Deployment:
        """A new deployment for ``step``."""
        raise NotImplementedError

    def deploy(self, ctx: Context, mode: Mode, step: Step, group: tuple) -> Deployment:
        """The step's deployment: the one the previous step kept when it is the same group's,
        or a new one (stopping what was kept)."""
        c = self.campaign
        if c._kept is not None and c._kept[0] == group:
            deployment = c._kept[1]
            c._kept = None
            return deployment
        c._stop_kept()
        return self.start(ctx, mode, step)

    def measure(self, ctx: Context, mode: Mode, step: Step, row: dict, keep: bool) -> Measured:
        c, bench = self.campaign, self.benchmark
        group = c._group_key(step)
        try:
            deployment = self.deploy(ctx, mode, step, group)
        except ModeUnavailable as exc:
            return [], c._finish(row, "skipped", str(exc))
        samples: list[dict] = []
        kept = False
        try:
            client = deployment.client_host(c.inv, step.path)
            address = deployment.target(step.path)
            row.update(server_host=deployment.server.name, client_host=client.name)
            binary = bench.main_binary(step.variant)
            if deployment.image is not None:
                image = deployment.image
                row.update(image=image.tag, image_digest=image.digest)
                row["binary_sha256"] = image.sha256_of(binary)
            else:
                row["binary_sha256"] = c.binary_sha[deployment.server.name][binary]
            run_client = partial(c._run_client, ctx, deployment, client, address, step, row)
            hosts = list(dict.fromkeys([deployment.server, client]))  # a window's, watched
            measured = Window(c.profile.seconds, c.profile.omit_seconds, c.profile.count)
            warm_window = Window(
                c.profile.warmup_seconds, 0.0, c.profile.warmup_count, warmup=True
            )
            folded = bench.folded(step.variant, warm_window, measured) if (
                c.profile.warms_up) else None  # fmt: skip
            if folded is not None:
                # One client run holds the warm-up and then the first window (its first part
                # flagged): a tool start and its fixed time fewer per step.
                kept_share = measured.count / folded.count if folded.count else 1.0
                raw, command = c._watch(ctx, hosts, 1, partial(
                    run_client, folded, retry=True, kept=kept_share))
                warm, window = c._parse(step, 1, raw, row, partial(
                    bench.split_folded, step.variant, raw, warm_window, folded))
                samples += c._records(step, 0, warm) + c._records(step, 1, window)
                row["raw_log"] = c._keep_log(step, 1, raw, {0: warm, 1: window})
                first = 2
            elif c.profile.warms_up:
                raw, command = run_client(warm_window, retry=True, kept=0.0)
                warm = c._parse(step, 0, raw, row, partial(
                    bench.parse, step.variant, raw, warm_window))
                samples += c._records(step, 0, warm)
                c._keep_log(step, 0, raw, {0: warm})
                first = 1
            else:  # the profile asks for no warm-up: the first run is the measured window
                first = 1
            for rep in range(first, c.profile.reps + 1):
                raw, command = c._watch(ctx, hosts, rep, partial(run_client, measured))
                window = c._parse(step, rep, raw, row, partial(
                    bench.parse, step.variant, raw, measured))
                samples += c._records(step, rep, window)
                row["raw_log"] = c._keep_log(step, rep, raw, {rep: window})
            row["command"] = command
            row["watch"] = c._watch_record()
            if deployment.notes or c.meta:
                row["notes"] = json.dumps({**c.meta, **deployment.notes}, sort_keys=True)
            if keep:
                c._kept, kept = (group, deployment), True
        except ToolOutputError as exc:
            unsupported = deployment.diagnose(str(exc)) if deployment.diagnose else None
            if unsupported:
                return [], c._finish(row, "skipped", unsupported)
            return [], c._finish(row, "failed", str(exc))
        finally:
            if not kept:
                c._timed("stop_s", deployment.stop)
        return samples, c._finish(row, "ok", "")


class NetworkSteps(ClientSteps):
    kind = "network"
    placed = True

    @staticmethod
    def cells(benchmark: Benchmark, modes: list[str], paths: list[str],
              variants: list[str]) -> list[Cell]:  # fmt: skip
        """Native first on every path a mode uses, so each mode is compared with native on its
        own path."""
        pairs = [(m, p) for m in modes for p in MODES[m].paths if p in paths]
        baselines = [("native", p) for p in paths if p in {p for _, p in pairs}]
        pairs = baselines + [pair for pair in pairs if pair not in baselines]
        return [(m, p, v) for m, p in pairs for v in variants]

    def server_group(self, mode: str, path: str, variant: str) -> tuple:
        """A server in one mode serves every path, and every variant of the same
        ``Benchmark.server_group``, so a container starts once per mode and run, not once per
        measurement. The tool, its flags and the client are those of a server started for the
        step alone."""
        return (mode, self.benchmark.server_group(variant))

    def workload(self, step: Step) -> Workload:
        """The server of the step's group: one argv for all its variants, every protocol."""
        bench = self.benchmark
        group = bench.server_group(step.variant)
        variants = [v for v in bench.variants if bench.server_group(v) == group]
        argvs = {tuple(bench.server_argv(v)) for v in variants}
        if len(argvs) != 1:
            raise ValueError(f"{bench.name}: variants {variants} share server group {group!r} "
                             f"but not a server argv: {sorted(argvs)}")  # fmt: skip
        return Workload(
            name=f"{bench.name}-{group}",
            argv=argvs.pop(),
            port=bench.port,
            udp=any(bench.server_udp(v) for v in variants),
            scratch=bench.server_scratch,
        )

    def start(self, ctx: Context, mode: Mode, step: Step) -> Deployment:
        """The server, and the CPUs its processes may run on (in its notes)."""
        c, workload = self.campaign, self.workload(step)
        deployment = c._timed("deploy_s", partial(mode.start, ctx, workload))
        try:
            cpus = c._timed("deploy_s", partial(server_cpus, ctx, deployment, workload))
        except Exception:
            c._timed("stop_s", deployment.stop)
            raise
        deployment.notes["server_cpus"] = cpus
        return deployment


class HostSteps(ClientSteps):
    kind = "host"

    @staticmethod
    def cells(benchmark: Benchmark, modes: list[str], paths: list[str],
              variants: list[str]) -> list[Cell]:  # fmt: skip
        """The modes the benchmark names; with native, the instrument's controls that run on
        the host (``Mode.control``)."""
        chosen = [m for m in benchmark.modes or () if m in modes]
        if "native" in chosen:
            chosen += [m for m in modes if MODES[m].control and "host" in MODES[m].paths]
        return [(m, p, v) for p in paths for m in chosen for v in variants]

    def server_group(self, mode: str, path: str, variant: str) -> tuple:
        return (mode, path, variant)  # a deployment per step

    def workload(self, step: Step) -> Workload:
        """No server: a quick run of the tool the mode may probe with."""
        bench = self.benchmark
        return Workload(f"{bench.name}-{step.variant}", tuple(bench.probe_argv(step.variant)),
                        bench.port, scratch=bench.server_scratch)  # fmt: skip

    def start(self, ctx: Context, mode: Mode, step: Step) -> Deployment:
        """The mode's foreground, calibrated by what its probe printed."""
        deployment = self.campaign._timed(
            "deploy_s", partial(mode.foreground, ctx, self.workload(step)))
        deployment.notes.update(self.benchmark.calibrate(step.variant, deployment.probe_output))
        return deployment


class ScenarioSteps(StepRunner):
    kind = "scenario"
    fixed_runs = "a scenario benchmark has no one per-run value to plan with"

    @staticmethod
    def cells(benchmark: Benchmark, modes: list[str], paths: list[str],
              variants: list[str]) -> list[Cell]:  # fmt: skip
        """The modes the benchmark names."""
        chosen = [m for m in benchmark.modes or () if m in modes]
        return [(m, p, v) for p in paths for m in chosen for v in variants]

    def server_group(self, mode: str, path: str, variant: str) -> tuple:
        """What the benchmark's ``server_group`` says (lb: one replica service for the
        balancers in front of it), per path."""
        return (mode, path, self.benchmark.server_group(variant))

    def measure(self, ctx: Context, mode: Mode, step: Step, row: dict, keep: bool) -> Measured:
        """The benchmark drives the mode's engine itself."""
        c, bench = self.campaign, self.benchmark
        host = c.inv.servers[0]
        scenario = Scenario(
            ctx=ctx,
            mode=step.mode,
            engine=mode.engine,
            host=host,
            variant=step.variant,
            run=step.run,
            window=Window(c.profile.seconds, c.profile.omit_seconds, c.profile.count),
            warmup=Window(c.profile.warmup_seconds, 0.0, c.profile.warmup_count),
            prefix=f"co-{c.id[:10]}-{bench.name}-{step.mode}",
            labels=["--label", f"{LABEL}={c.id}"],
            engine_options=mode.engine_options(ctx),
            keep=keep,
        )
        row.update(server_host=host.name, client_host=host.name)
        try:
            binary = bench.main_binary(step.variant) if bench.binaries else ""
            if mode.engine is not None and binary:
                image = ctx.image(host, mode.engine)
                row.update(image=image.tag, image_digest=image.digest)
                row["binary_sha256"] = image.sha256_of(binary)
            elif binary:
                row["binary_sha256"] = c.binary_sha[host.name][binary]
            swarm = self.swarm_servers(ctx, mode)
            nodes = swarm_nodes(ctx, swarm)
            try:
                outcome = c._watch(ctx, [host], 1, partial(bench.measure, scenario))
            finally:
                daemons_answer(ctx, swarm)
            outcome.notes = {**mode.run_notes(ctx), **outcome.notes}
            changed = swarm_changes(nodes, swarm_nodes(ctx, swarm))
            if changed:
                raise ToolOutputError(
                    f"a Swarm node changed state during the step ({changed}): Swarm reschedules "
                    "the tasks of a node that goes down, so the step's timing is not the "
                    "scenario's")
        except ModeUnavailable as exc:
            return [], c._finish(row, "skipped", str(exc))
        except ToolOutputError as exc:
            return [], c._finish(row, "failed", str(exc))
        row["raw_log"] = c._keep_log(step, 1, outcome.raw)
        row["command"] = outcome.command
        row["watch"] = c._watch_record()
        row["window_s"] = outcome.window_s
        if c._clock is not None:  # timed spans kept; untimed steps it needs: the tool's
            c._clock.kept_s += outcome.window_s
            c._clock.fixed_s += outcome.fixed_s
        if outcome.notes or c.meta:
            row["notes"] = json.dumps({**c.meta, **outcome.notes}, sort_keys=True)
        samples = c._records(step, 0, outcome.warmup) + c._records(step, 1, outcome.samples)
        return samples, c._finish(row, "ok", "")

    def release(self) -> None:
        """What the benchmark kept for the next step (``Scenario.keep``)."""
        self.campaign._timed("stop_s", self.benchmark.release)

    def swarm_servers(self, ctx: Context, mode: Mode) -> list:
        """The servers a Swarm scenario's tasks may run on (every one: the scheduler places
        them), whose daemons the step depends on; none for another scenario."""
        if self.benchmark.name in ORCHESTRATOR_SCENARIOS and mode.engine == "docker":
            return list(self.campaign.inv.servers)
        return []


def daemons_answer(ctx: Context, servers: list) -> None:
    """Every one of ``servers``' docker daemons answers, else the RemoteError of the first that
    does not (it names the host: "Is the docker daemon running?"). A daemon that died during a
    Swarm step took its node's tasks with it, and nothing more can be measured on the Swarm
    until it runs again: the campaign stops there, and the next session measures the step."""
    for host in servers:
        ctx.pool[host.name].run(["docker", "info", "--format", "{{.Swarm.LocalNodeState}}"],
                                timeout=30)  # fmt: skip


def swarm_nodes(ctx: Context, servers: list) -> dict[str, str]:
    """Each Swarm node's state (ready, down, unknown), by hostname, as the manager (the first
    server) sees it; {} when there is no Swarm to ask. A node whose daemon died goes down a few
    seconds later. (A node's object version is no sign of a restart: Swarm updates every node
    object dozens of times in an ordinary step.)"""
    if not servers:
        return {}
    listing = ('docker node inspect --format "{{.Description.Hostname}} {{.Status.State}}" '
               "$(docker node ls -q)")  # fmt: skip
    out = ctx.pool[servers[0].name].run(listing, timeout=30, check=False).stdout
    return {p[0]: p[1] for line in out.splitlines() if len(p := line.split()) == 2}


def swarm_changes(before: dict[str, str], after: dict[str, str]) -> str:
    """What changed between two ``swarm_nodes``: "node2 ready -> down", one per node; "" when
    nothing did (or nothing was read)."""
    if not before or not after:
        return ""
    changed = [f"{node} {before.get(node, 'absent')} -> {after.get(node, 'absent')}"
               for node in sorted(set(before) | set(after))
               if before.get(node) != after.get(node)]  # fmt: skip
    return "; ".join(changed)


RUNNERS: dict[str, type[StepRunner]] = {
    r.kind: r for r in (NetworkSteps, HostSteps, ScenarioSteps)}  # fmt: skip


def runner_for(benchmark: Benchmark) -> type[StepRunner]:
    """The step runner of the benchmark's ``kind``."""
    try:
        return RUNNERS[benchmark.kind]
    except KeyError:
        raise ValueError(f"{benchmark.name}: unknown kind {benchmark.kind!r}; known: "
                         f"{sorted(RUNNERS)}") from None


def server_cpus(ctx: Context, deployment: Deployment, workload: Workload) -> str:
    """The CPUs the server's processes may run on (their affinity), as the kernel lists them,
    distinct values space-separated: where the lab's placement put them, or any CPU. A container
    engine may return a moment before the tool has replaced the runtime's init process: look
    for up to 2 s."""
    name = shlex.quote(Path(workload.argv[0]).name)
    script = (
        f"for i in $(seq 20); do pids=$(pgrep -x {name}) && break; sleep 0.1; done; "
        "for p in $pids; do sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$p/status; "
        "done | sort -u"
    )
    out = ctx.pool[deployment.server.name].run(script, check=False, timeout=30).stdout
    return " ".join(out.split()) or f"no {name} process found"
