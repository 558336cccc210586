"""The campaign loop: every mode of a benchmark, in a seeded random order per run, resumable.

For each run (block) 1..R the (mode, path, variant) triples are measured in a fresh random
permutation (``plan``), each with a flagged warm-up before its measured windows, each measured
by its benchmark kind's step runner (``steps``) between two readings of the interference watch.
Each finished triple is committed at once (``dataset``), so an interrupted campaign resumes
where it stopped and never measures a pair twice. A session holds the hosts' lock, counts where
its time goes and turns SIGTERM into Ctrl-C (``session``). Everything the campaign starts is
labelled and removed on success, error and Ctrl-C. Precision planning adds rounds of runs
(``planning``).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from pipeline import imports
from pipeline.benchmarks import BENCHMARKS, Benchmark, ToolOutputError
from pipeline.collect import hostfacts, images, inventory, watch
from pipeline.collect import planning as planner
from pipeline.collect.dataset import STEP_KEY, Dataset, window_decisions
from pipeline.collect.modes import MODES, Context, Mode, ModeUnavailable
from pipeline.collect.modes.base import Deployment, cleanup_host, leftovers, own_work_dirs
from pipeline.collect.plan import Profile, Step, campaign_id, plan, schedule, selected_modes
from pipeline.collect.remote import Pool, RemoteError
from pipeline.collect.session import (
    HOST_CLOCKS,
    CampaignError,
    HostLock,
    SessionClock,
    duty_cycle,
    fmt_duration,
    interrupts_deferred,
    parse_host_clocks,
    sigterm_as_interrupt,
)
from pipeline.collect.steps import runner_for
from pipeline.data import interference as interference_rule
from pipeline.data import rawlog, schema
from pipeline.hosts import PLACEMENTS

# The names a campaign's callers use, wherever they are defined.
__all__ = [
    "Campaign", "CampaignError", "Dataset", "HostLock", "Profile", "Provider", "Step",
    "campaign_id", "code_digest", "collect", "duty_cycle", "plan", "schedule", "selected_modes",
    "upload",
]  # fmt: skip

ROOT = Path(__file__).resolve().parents[2]  # the repository, for shipped files
WARMUP_CONNECT_BUDGET_S = 30.0  # a server that accepts nothing within this is a failed start


class Provider(Protocol):
    """What provides an inventory's hosts (the embedded lab): makes them ready, places CPUs."""

    def ready(
        self, wan: dict | None, log: Callable[[str], None], clusters: Collection[str] = ()
    ) -> None:
        """``clusters``: the orchestrators the campaign's modes need (Mode.cluster)."""

    def place(self, placement: str) -> dict: ...


# What a campaign's measurements depend on besides the benchmark's and the modes' own modules.
MEASURING_FILES = ("pipeline/collect/host_scripts/build_tool_image.sh",)


def code_digest(benchmark: Benchmark, modes: list[str]) -> dict:
    """The code that measures: the benchmark's module, the planned modes' modules and the
    campaign, with what they import (registries aside), the tool-image recipe and the files the
    benchmark ships to the hosts or fills in (``templates``). Part of a campaign's identity, so
    that a changed parser or mode measures again instead of resuming parts the old code made."""
    modules = [type(benchmark).__module__, __name__, *(type(MODES[m]).__module__ for m in modes)]
    files = [f for f in imports.files(imports.own_closure(modules)) if f != "pipeline/imports.py"]
    shipped = (*MEASURING_FILES, *benchmark.uploads.values(), *benchmark.templates)
    files += [f for f in shipped if (ROOT / f).is_file()]
    digest = hashlib.sha256()
    for name in sorted(set(files)):
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes() + b"\0")
    return {"digest": digest.hexdigest()[:16], "files": sorted(set(files))}




def upload(pool: Pool, hosts: list[inventory.Host], files: dict[str, str]) -> None:
    """Ship a benchmark's files (``uploads``: remote path -> repository path) to every host,
    skipping hosts that already have them."""
    for remote, local in files.items():
        path = ROOT / local
        if not path.is_file():
            raise CampaignError(f"{path} is missing: run `make setup` (it builds it)")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        for host in hosts:
            session = pool[host.name]
            have = session.run(["sha256sum", remote], check=False).stdout.split()[:1]
            if have != [digest]:
                session.run(["mkdir", "-p", str(Path(remote).parent)])
                session.put(path, remote)
                session.run(["chmod", "0755", remote])



def _hosts_of(row: dict) -> str:
    """The hosts a failed step ran on, for its messages (its reason is often the tool's own)."""
    client, server = row.get("client_host"), row.get("server_host")
    if not server:
        return ""
    if not client or client == server:
        return f" (on {server})"
    return f" (client {client}, server {server})"




class Campaign:
    def __init__(
        self,
        benchmark: Benchmark,
        inv: inventory.Inventory,
        profile: Profile,
        out_dir: Path,
        seed: int,
        modes: list[str] | None = None,
        log: Callable[[str], None] = print,
        paths: tuple[str, ...] | None = None,
        meta: dict | None = None,
        placement: str | None = None,
        placer: Callable[[str], dict] | None = None,
        variants: tuple[str, ...] | None = None,
        planning: planner.Settings | None = None,
        interference: dict | None = None,
    ) -> None:
        """``placement``: where a network campaign's hosts run on a machine they share
        ("colocated", "split" or "shared"; by default the benchmark's ``placement`` option, else
        "shared"). ``placer`` applies it (the embedded lab has one; separate machines do not
        share CPUs): called with the placement, it returns what it did.
        ``planning``: precision planning (``pipeline.collect.planning``): the profile's runs
        are the pilot, then rounds of the cells whose comparisons are still too wide. Not part
        of the campaign's identity: a bigger budget resumes the campaign and adds runs.
        ``interference``: params.yaml's ``analysis.interference_*`` settings (the flagging
        thresholds and how many times a flagged step is measured again; defaults
        ``pipeline.data.interference.Thresholds``). Not part of the campaign's identity either:
        more retries resume the campaign and measure the steps still flagged."""
        placement = placement or benchmark.options.get("placement", "shared")
        if placement not in PLACEMENTS:
            raise CampaignError(
                f"placement must be 'colocated', 'split' or 'shared', got {placement!r}"
            )
        selected = selected_modes(inv, modes)
        unknown = [m for m in selected if m not in MODES]
        if unknown:
            raise CampaignError(f"unknown mode(s) {unknown}; known: {sorted(MODES)}")
        self.benchmark = benchmark
        self.inv = inv
        self.profile = profile
        self.seed = seed
        self.log = log
        usable = tuple(
            p
            for p in benchmark.paths
            if (paths is None or p in paths) and (p != "internet" or inv.internet_client)
        )
        self.triples = plan(benchmark, selected, usable, variants)
        # What shaped the measurement besides the profile (e.g. the lab's WAN profile): part of
        # the campaign's identity and stored with every run.
        self.meta = dict(meta or {})
        if "internet" not in {p for _, p, _ in self.triples}:
            self.meta.pop("wan", None)  # the WAN path is not measured: its profile is irrelevant
        # The lab's CPU placement (pipeline/lab/cpus.py) of a network campaign: part of its
        # identity and of every run's notes, as it decides which latency level a run measures.
        self.placer = placer
        self.runner = runner_for(benchmark)(self)
        network = placer is not None and self.runner.placed
        self.placement = placement if network else "shared"
        if network:
            self.meta["placement"] = self.placement
        # Shared deployments change how the servers were run: part of the campaign's identity.
        groups = {t: self._server_group(*t) for t in self.triples}
        shared = len(set(groups.values())) < len(groups)
        self.code = code_digest(benchmark, sorted({m for m, _, _ in self.triples}))
        identity: list = [self.triples, self.meta, {"code": self.code["digest"]}]
        if shared:
            identity.append({"servers": "one per run, mode and Benchmark.server_group"})
        self.id = campaign_id(inv.environment, benchmark.name, profile, identity, seed)
        self.thresholds = interference_rule.Thresholds.from_params(interference)
        self.data = Dataset(Path(out_dir), self.id, self.code, self.thresholds.retries)
        self._groups = groups
        self.steps = schedule(self.triples, profile.runs, seed, lambda t: groups[t])
        # Precision planning, where the benchmark has a per-run value to plan with; the rounds
        # it already decided are this campaign's steps too (an interrupted one is finished).
        self.planning = planning if self.runner.fixed_runs is None else None
        self.fixed_runs = (
            f"fixed runs: {self.runner.fixed_runs}"
            if planning is not None and self.planning is None else None
        )  # fmt: skip
        if self.planning is not None:
            for run, cells in sorted(self.data.rounds().items()):
                self.steps += self._round(run, cells)
        # The server the last step left running because the next step shares it: (group, run)
        # and the deployment; the step runner (ClientSteps.deploy) reuses or stops it.
        self._kept: tuple[tuple, Deployment] | None = None
        self._clock: SessionClock | None = None
        self._current: Step | None = None  # the step being measured, for error messages
        self._measured = False  # every step of the session measured (clean-up under way)
        # available() costs SSH round trips (docker info on two nodes, kernel probes): ask once
        # per (mode, path) and campaign, not before every measurement.
        self._availability: dict[tuple[str, str], str | None] = {}
        # the interference watch around every measured window (pipeline/collect/watch.py)
        self._reading: str | None = None  # after prepare(): a benchmark may name tools there
        self._watched: list[dict] = []  # the step's windows, per host
        # the probe's times so far, per host and the hosts read with it (``_decide_flag``)
        self._probes: dict[tuple[str, tuple[str, ...]], list[float]] = {}
        self._clocks: dict[str, list[int]] = {}  # the step's host clock readings (ClockWatch)
        self._rep0 = 0  # the step's first rep in this measurement (a step measured again)
        self._attempt = 1  # which measurement of the step this is

    def _round(self, run: int, cells: list[tuple[str, str, str]]) -> list[Step]:
        """A planned round's steps: its cells in the order a pilot round's would take."""
        cells = [tuple(c) for c in cells if tuple(c) in self._groups]
        return schedule(cells, run, self.seed, lambda t: self._groups[t], first=run)

    def _server_group(self, mode: str, path: str, variant: str) -> tuple:
        """The triples one deployment serves within a run (``StepRunner.server_group``)."""
        return self.runner.server_group(mode, path, variant)

    # -- the loop ---------------------------------------------------------------------------

    def run(self) -> dict[str, int]:
        if self.planning is not None and not self._todo():
            self._plan_round()  # the pilot and every round so far measured: plan the next
        todo = self._todo()
        planned = "" if self.planning is None else (
            f" (the pilot; then rounds planned to a half-width of "
            f"{self.planning.target_half_width:g})")  # fmt: skip
        self.log(
            f"campaign {self.id}: {self.benchmark.name} on {self.inv.environment}, "
            f"{self.profile.runs} runs x {len(self.triples)} (mode, path, variant){planned}; "
            f"{len(self.steps) - len(todo)} already measured, {len(todo)} to go"
        )
        if len(todo) == len(self.steps) and self.data.superseded():
            self.log(
                f"  measuring afresh: the settings or the code that measures (digest "
                f"{self.code['digest']}) differ from the earlier campaign(s) "
                f"{', '.join(self.data.superseded())}, whose data stay apart (superseded/, parts/)"
            )
        if todo:
            with Pool(self.inv) as pool, sigterm_as_interrupt():
                ctx = Context(inventory=self.inv, pool=pool, campaign=self.id)
                try:
                    for host in self._hosts():
                        own_work_dirs(ctx, host)
                    with HostLock(ctx.pool[self.inv.manager.name], self.id):
                        clock = self._clock = SessionClock()
                        try:
                            with clock.phase("prepare_s"):
                                clock.placement = self._place()
                                self._prepare(ctx)
                            with clock.phase("loop_s"):
                                self._measure_all(ctx, todo, clock)
                                self._measure_planned(ctx, clock)
                        except KeyboardInterrupt:
                            self.log(f"interrupted{self._where()}: cleaning up the hosts")
                            raise
                        finally:
                            with interrupts_deferred(self.log):
                                with clock.phase("cleanup_s"):
                                    self._cleanup(ctx)
                                    self._unplace()
                                self._save_session(clock)
                except KeyboardInterrupt:
                    self.log("interrupted: cleaned up; what was measured is saved")
                    raise
                except (RemoteError, OSError) as exc:
                    saved = len(self.data.done())
                    # an OSError that is not a remote one is this machine's (a full disk)
                    said = str(exc) if isinstance(exc, RemoteError) else f"on this machine: {exc}"
                    raise CampaignError(
                        f"{said}\n\nThe campaign stopped{self._where()}. {saved} of "
                        f"{len(self.steps)} "
                        f"measurements are saved under {self.data.root}; fix the problem above "
                        "and run `dvc repro` again to resume (for the embedded lab, "
                        "`python -m pipeline.lab up` repairs dead daemons)."
                    ) from exc
        return self._conclude()

    def _todo(self) -> list[Step]:
        done = self.data.done()
        return [s for s in self.steps if s.key not in done]

    # -- precision planning (pipeline/collect/planning.py) -----------------------------------

    def _measure_planned(self, ctx: Context, clock: SessionClock) -> None:
        """Planned rounds, one after the other, until the planner stops (or a step keeps
        failing: the stage stops on it, and the next session goes on from there)."""
        while self.planning is not None and not self.data.failed():
            todo = self._todo()
            if not todo:
                if not self._plan_round():
                    return
                todo = self._todo()
            self._measure_all(ctx, todo, clock)

    def _decide(self) -> tuple[planner.Decision, dict]:
        """The planner's decision on the data saved so far, and the per-run values it read:
        each ok step's headline (None when it has none), each cell's mean seconds per run,
        and the seconds spent beyond the pilot."""
        records = self.data.step_records()
        values = {(m, p, v, run): r["headline"] for (run, m, p, v), r in records.items()
                  if r["status"] == "ok" and (m, p, v) in self._groups}  # fmt: skip
        seconds: dict[tuple[str, str, str], list[float]] = {}
        for (_, m, p, v), r in records.items():
            if r["status"] == "ok" and r["seconds"] is not None:
                seconds.setdefault((m, p, v), []).append(r["seconds"])
        spent = sum(r["seconds"] or 0.0 for (run, *_), r in records.items()
                    if run > self.profile.runs)  # fmt: skip
        mean = {cell: float(np.mean(s)) for cell, s in seconds.items()}
        decision = planner.next_round(self.triples, values, mean, self.planning, spent,
                                      pilot_runs=self.profile.runs)  # fmt: skip
        if not decision.done and self._next_run() > self.planning.max_runs:
            # a cell that waited for the budget in some rounds has fewer runs than the run
            # number: rounds still end at run max_runs
            going = [c if c.stop else planner.stopped(c, planner.MAX_RUNS)
                     for c in decision.comparisons]  # fmt: skip
            decision = planner.Decision((), tuple(going), 0.0, decision.remaining_s)
        return decision, values

    def _next_run(self) -> int:
        return max([self.profile.runs, *self.data.rounds()]) + 1

    def _plan_round(self) -> bool:
        """Record the next planned round and add its steps; False when planning stops."""
        decision, _ = self._decide()
        if decision.done:
            return False
        run = self._next_run()
        steps = self._round(run, list(decision.cells))
        self.data.save_round(run, list(decision.cells))
        self.steps += steps
        going = [c for c in decision.comparisons if c.cell in decision.cells]
        widest = max(going, key=lambda c: c.half_width)
        self.log(
            f"planned run {run}: {len(steps)} measurement(s), ~{fmt_duration(decision.cost_s)} "
            f"of {fmt_duration(decision.remaining_s)} budget left; widest: {widest.mode} "
            f"({widest.path}, {widest.variant}) +-{widest.half_width:.3f} after {widest.runs} runs"
        )
        return True

    def _plan_record(self) -> dict | None:
        """What planning did, per cell, for the dataset's record (None: not asked for)."""
        if self.fixed_runs is not None:
            return {"planned": False, "reason": self.fixed_runs}
        if self.planning is None:
            return None
        decision, values = self._decide()
        out = planner.record(self.triples, values, decision, self.planning, self.profile.runs)
        out["rounds"] = len(self.data.rounds())
        return out

    def _save_session(self, clock: SessionClock) -> None:
        """The session's record (where its time went). Not saving it does not stop the
        campaign: its measurements are saved, and a full disk's error is the step's own."""
        try:
            self.data.save_session(clock.record())
        except OSError as exc:
            self.log(f"the record of this session's time was not saved: {exc}")

    def _where(self) -> str:
        """Where the session stopped, for its messages: the step being measured (its host
        facts, deployment, client runs or saving), or before or after every step."""
        step = self._current
        if step is not None:
            return f" at run {step.run} {step.mode} ({step.path}, {step.variant})"
        return " after its last measurement" if self._measured else " before its first measurement"

    def _conclude(self) -> dict[str, int]:
        """Consolidate; a step still failed stops the stage (DVC then does not record it as
        done, and the next `dvc repro` measures only what is missing)."""
        try:
            plan_record = self._plan_record()
            if plan_record is not None:
                self.data.save_plan(plan_record)
            counts = self.data.consolidate()
        except OSError as exc:  # a full disk: the parts stay, and consolidate again later
            raise CampaignError(
                f"on this machine: {exc}\n\nEvery measurement is saved under "
                f"{self.data.root}/parts, but folding them into the tables failed; fix the "
                "problem above and run `dvc repro` again."
            ) from exc
        self.log(f"campaign {self.id}: wrote {counts} to {self.data.root}")
        self._log_duty_cycle()
        if plan_record is not None:
            self._log_plan(plan_record)
        failed = self.data.failed()
        if failed:
            raise CampaignError(self._failed_message(failed))
        return counts

    def _failed_message(self, failed: list[tuple[int, str, str, str]]) -> str:
        """What failed (each step's last reason), what is saved, how to measure them again."""
        runs = schema.read_table(self.data.root / "runs.parquet", "runs").to_pylist()
        reasons = {tuple(r[k] for k in STEP_KEY): f"{r['reason']}{_hosts_of(r)}" for r in runs}
        lines = [f"  run {key[0]} {key[1]} ({key[2]}, {key[3]}): {reasons.get(key, '')}"
                 for key in failed]  # fmt: skip
        return (
            f"{len(failed)} of {len(self.steps)} measurements of {self.benchmark.name} on "
            f"{self.inv.environment} failed, on a second attempt too:\n" + "\n".join(lines) +
            "\n\n"
            f"Everything else is saved under {self.data.root} (the failures too, in "
            "runs.parquet and attempts.parquet). Fix the cause and run `dvc repro` again: it "
            "measures only these steps. A mode that fails on every attempt can be left out "
            "with `modes:` in params.yaml."
        )

    def _log_plan(self, record: dict) -> None:
        if not record.get("planned"):
            self.log(f"planning: {record['reason']}")
            return
        stops: dict[str, int] = {}
        for cell in record["cells"]:
            if "half_width" in cell:  # a comparison with native
                why = cell["stopped"] or "going on"
                stops[why] = stops.get(why, 0) + 1
        self.log(
            f"planning: {record['rounds']} round(s) beyond the {record['pilot_runs']}-run pilot, "
            f"{fmt_duration(record['spent_s'])} of {fmt_duration(record['budget_s'])} budget; "
            f"comparisons: " + ", ".join(f"{n} {why}" for why, n in sorted(stops.items()))
        )

    def _log_duty_cycle(self) -> None:
        duty = duty_cycle(self.data.sessions())
        if duty["steps"] and duty["wall_s"]:
            self.log(
                f"duty cycle {duty['duty_cycle']:.2f}: {duty['window_s']:.0f} s inside load "
                f"windows of {duty['wall_s']:.0f} s wall ({duty['prepare_s']:.0f} s preparing, "
                f"{duty['per_step_overhead_s']:.1f} s overhead per measurement)"
            )
            if duty.get("client_s") is not None:
                self.log(
                    f"  overhead: {duty['deploy_s'] + duty['stop_s']:.0f} s starting and "
                    f"stopping servers, {duty['client_overhead_s']:.0f} s in client commands "
                    f"outside their windows (SSH, tool start-up), {duty['other_s']:.0f} s other"
                )

    def _place(self) -> dict | None:
        """Apply the campaign's CPU placement to the hosts (None where nothing places them)."""
        if self.placer is None:
            return None
        placed = self.placer(self.placement)
        if placed["placement"] == "unavailable":
            self.log(f"  CPU placement {self.placement!r} not applied: {placed['reason']}")
            applied = f"not applied: {placed['reason']}"
        else:
            self.log(f"  CPU placement {placed['placement']}: {placed['cpus']}")
            applied = placed["cpus"]
        if "placement" in self.meta:
            # What this session applied (host -> CPUs) goes into every run's notes with the
            # placement asked for; the campaign's id was fixed before, from the placement alone.
            self.meta["placement_cpus"] = applied
        return placed

    def _unplace(self) -> None:
        """After a placed campaign, every host gets every CPU again (a person exploring the
        lab, and whatever runs next without a placement of its own)."""
        if self.placer is not None and self.placement != "shared":
            self.placer("shared")

    def _prepare(self, ctx: Context) -> None:
        hosts = self._hosts()
        for host in hosts:  # fail early and clearly on an unreachable host
            ctx.pool[host.name].run("true", timeout=30)
        self._cleanup(ctx)  # leftovers of an earlier, killed campaign
        self._upload(ctx, hosts)
        # What the commands depend on on the server (CPU count, a toolchain's place) first:
        # the image's contents may depend on it.
        self.benchmark.prepare(ctx.pool[self.inv.servers[0].name])
        ctx.image_paths = self.benchmark.image_paths()
        for host in self.inv.servers:  # build before measuring, not inside the loop
            self.log(f"  tool image on {host.name}: {ctx.image(host).tag}")
        binaries = list(self.benchmark.binaries)
        # Servers only: native servers run there, and clients need not have the server tool.
        self.binary_sha = {
            h.name: images.binary_hashes(ctx.pool[h.name], binaries) for h in self.inv.servers
        }
        version = ctx.pool[self.inv.servers[0].name].run(self.benchmark.version_argv())
        self.tool_version = self.benchmark.tool_version(version.stdout)

    def _upload(self, ctx: Context, hosts: list[inventory.Host]) -> None:
        upload(ctx.pool, hosts, self.benchmark.uploads)

    def _hosts(self) -> list[inventory.Host]:
        hosts = list(self.inv.servers) + [self.inv.dc_client]
        if self.inv.internet_client is not None and "internet" in {p for _, p, _ in self.triples}:
            hosts.append(self.inv.internet_client)
        return hosts

    def _measure_all(self, ctx: Context, todo: list[Step], clock: SessionClock) -> None:
        """The steps to do, then once more those that failed (a transient fault: a daemon
        restarting, a connection reset), then again those whose window the interference watch
        flagged, in their scheduled order, up to ``retries`` times: at the end of the session,
        after every other step, so that a passing load has time to pass."""
        try:
            self._measure_steps(ctx, todo, clock)
            failed = set(self.data.failed())
            again = [s for s in todo if s.key in failed]
            if again:
                self.log(f"measuring the {len(again)} failed step(s) once more")
                self._measure_steps(ctx, again, clock)
            for _ in range(self.thresholds.retries):
                flagged = set(self.data.flagged())
                again = [s for s in todo if s.key in flagged]
                if not again:
                    break
                self.log(f"measuring again the {len(again)} step(s) whose window the "
                         "interference watch flagged")  # fmt: skip
                self._measure_steps(ctx, again, clock)
            self._current, self._measured = None, True
        finally:
            self._stop_kept()  # a server kept for a next step that never came

    def _measure_steps(self, ctx: Context, todo: list[Step], clock: SessionClock) -> None:
        started = time.monotonic()
        for index, step in enumerate(todo, start=1):
            self._current = step  # before the run's host facts: a failure there is this step's
            if not self.data.has_hosts(step.run):
                self.data.save_hosts(step.run, self._host_rows(ctx, step.run))
            following = todo[index] if index < len(todo) else None
            keep = following is not None and self._shares_server(step, following)
            samples, row = self._measure(ctx, step, keep=keep)
            headline = self._headline_value(row, samples)
            row["headline"] = None if headline is None else headline[1]
            self.data.save(step, samples, row)
            clock.steps += 1
            clock.window_s += row.get("window_s") or 0.0
            elapsed = time.monotonic() - started
            left = elapsed / index * (len(todo) - index)
            of = f"/{self.profile.runs}" if step.run <= self.profile.runs else " (planned)"
            self.log(
                f"[{index:>3}/{len(todo)}] run {step.run}{of} "
                f"{step.mode} ({step.path}, {step.variant}): {self._headline(row, samples)}"
                f"{self._flag_note(row)}   "
                f"elapsed {fmt_duration(elapsed)}, ~{fmt_duration(left)} left"
            )

    def _flag_note(self, row: dict) -> str:
        """What the progress line says of a measurement the interference watch flagged."""
        if row.get("status") != "ok":
            return ""
        attempt, flagged = window_decisions(row.get("watch"))
        if not flagged:
            return "" if attempt <= 1 else f" (attempt {attempt}: clean)"
        why = sorted({e["why"] for e in json.loads(row["watch"])
                      if e.get("why") and int(e.get("attempt", 1)) == attempt})  # fmt: skip
        then = "measured again later" if attempt <= self.thresholds.retries else (
            f"kept flagged after {attempt} attempts")  # fmt: skip
        return f" (flagged: {'; '.join(why)}; {then})"

    def _headline(self, row: dict, samples: list[dict]) -> str:
        if row["status"] == "failed":
            return f"failed: {row['reason']}{_hosts_of(row)}"
        if row["status"] != "ok":
            return f"{row['status']}: {row['reason']}"
        headline = self._headline_value(row, samples)
        if headline is None:
            return "ok, no measured sample"
        metric, value = headline
        return f"{metric} {self.benchmark.format_value(value)}"

    def _headline_value(self, row: dict, samples: list[dict]) -> tuple[str, float] | None:
        """The step's per-run headline, (metric, median of its measured samples of the
        benchmark's summary metric); None when it was not measured (failed, skipped)."""
        if row["status"] != "ok":
            return None
        measured = [s for s in samples if not s["warmup"]]
        metric = self.benchmark.summary_metric.format(variant=row["variant"])
        if measured and not any(s["metric"] == metric for s in measured):
            metric = measured[0]["metric"]  # a variant with its own metric (cpu's compile_s)
        values = [s["value"] for s in measured if s["metric"] == metric and s["value"] is not None]
        values = [v for v in values if np.isfinite(v)]
        return (metric, float(np.median(values))) if values else None

    def _host_rows(self, ctx: Context, run: int) -> list[dict]:
        rows = []
        for host in self._hosts():
            facts = hostfacts.gather(ctx.pool[host.name], host.address)
            facts.update(
                environment=self.inv.environment,
                campaign=self.id,
                run=run,
                host=host.name,
                role=self.inv.role_of(host.name),
            )
            rows.append(facts)
        return rows

    def _group_key(self, step: Step) -> tuple:
        return (step.run, self._server_group(step.mode, step.path, step.variant))

    def _shares_server(self, step: Step, other: Step) -> bool:
        return self._group_key(step) == self._group_key(other)

    def _stop_kept(self) -> None:
        kept, self._kept = self._kept, None
        if kept is not None:
            self._timed("stop_s", kept[1].stop)
        self.runner.release()  # what the runner keeps itself (a scenario's, Scenario.keep)

    def _timed(self, phase: str, call: Callable):
        if self._clock is None:
            return call()
        with self._clock.phase(phase):
            return call()

    def _measure(self, ctx: Context, step: Step, keep: bool = False) -> tuple[list[dict], dict]:
        """One measurement of a step. A step measured before (failed, or flagged by the
        interference watch) goes on numbering its reps after its earlier samples and windows,
        and its row's ``watch`` lists the earlier attempts' windows before this one's."""
        earlier_row, earlier_samples = self.data.earlier(step)
        prior = json.loads(earlier_row["watch"]) if earlier_row and earlier_row["watch"] else []
        last = max([s["rep"] for s in earlier_samples] + [e["rep"] for e in prior], default=-1)
        self._rep0 = last + 1 if last >= 0 else 0
        self._attempt = max([int(e.get("attempt", 1)) for e in prior], default=0) + 1
        samples, row = self._measure_once(ctx, step, keep)
        if row["status"] != "skipped":
            mine = json.loads(row["watch"]) if row.get("watch") and row["status"] == "ok" else []
            row["watch"] = json.dumps(prior + mine, sort_keys=True) if prior + mine else None
        return samples, row

    def _measure_once(
        self, ctx: Context, step: Step, keep: bool = False
    ) -> tuple[list[dict], dict]:
        """``keep``: the next step shares this step's server, so it stays running (unless the
        step failed: a failed tool run may have left it broken)."""
        mode: Mode = MODES[step.mode]
        self._watched = []  # what an earlier step that failed had watched is not this step's
        row = {
            "environment": self.inv.environment,
            "campaign": self.id,
            "benchmark": self.benchmark.name,
            "run": step.run,
            "order": step.order,
            "mode": step.mode,
            "path": step.path,
            "variant": step.variant,
            "tool": self.benchmark.tool,
            "tool_version": self.tool_version,
            "started_at": pd.Timestamp.now(tz="UTC"),
            "window_s": 0.0,
        }
        key = (step.mode, step.path)
        if key not in self._availability:
            try:
                self._availability[key] = mode.available(ctx, step.path)
            except ModeUnavailable as exc:  # e.g. NeedsRoot: a privilege the login lacks
                self._availability[key] = str(exc)
        reason = self._availability[key]
        if reason:
            return [], self._finish(row, "skipped", reason)
        return self.runner.measure_checked(ctx, mode, step, row, keep)

    def _run_client(
        self, ctx, deployment, client, address, step, row, window, retry=False, kept=1.0
    ):
        """One client run of the tool; ``kept`` is the share of its window (after the omitted
        start) the analysis keeps: 0 for a warm-up, the measured share of a run that holds
        the warm-up too."""
        argv = self.benchmark.client_argv(step.variant, address, window, step.path)
        command = deployment.client_command(argv)
        timeout = self.benchmark.client_timeout(window, step.path, step.variant)
        deadline = time.monotonic() + WARMUP_CONNECT_BUDGET_S
        while True:
            run = partial(ctx.pool[client.name].run, command, timeout=timeout, check=False)
            try:
                result = self._timed("client_s", run)
            except RemoteError as exc:
                # a hung client is the step's failure when the mode can say why (diagnose)
                if deployment.diagnose is None or not exc.reason.startswith("timed out"):
                    raise
                hung = f"{self.benchmark.tool} on {client.name} {exc.reason}"
                raise ToolOutputError(hung) from exc
            raw = result.stdout
            if not (retry and self.benchmark.is_connect_error(raw)):
                break
            if time.monotonic() > deadline:
                raise ToolOutputError(
                    f"server never accepted connections within {WARMUP_CONNECT_BUDGET_S:.0f} s"
                )
            time.sleep(0.3)
        if result.status != 0 and not raw.strip():
            raise ToolOutputError(
                f"{self.benchmark.tool} on {client.name} exited {result.status}: "
                f"{result.stderr.strip()[-400:]}"
            )
        seconds = self.benchmark.measured_seconds(step.variant, raw, window, step.path)
        row["window_s"] += seconds
        if self._clock is not None:
            kept_s = max(0.0, seconds - window.omit_seconds) * kept
            self._clock.kept_s += kept_s
            self._clock.fixed_s += seconds - kept_s + self.benchmark.tool_fixed_seconds
        return raw, f"{client.name}$ {command}"

    def _watch(self, ctx: Context, hosts: list, rep: int, call: Callable):
        """``call`` between two readings of the interference watch on each of ``hosts``; each
        host's entry records the analysis's rule applied as the window ends (``why``, "" when
        clean; the probe against its host's median in the session so far), and which
        measurement of the step it belongs to (``attempt``)."""
        if self._reading is None:
            study = watch.STUDY_COMMANDS | self.benchmark.watch_commands()
            self._reading = f"{watch.reading_command(study)}; {HOST_CLOCKS}"
        before = self._timed("watch_s", partial(self._read_all, ctx, hosts))
        result = call()
        afters = self._timed("watch_s", partial(self._read_all, ctx, hosts))
        company = tuple(sorted(h.name for h in hosts))
        for h in hosts:
            after = afters[h.name]
            entry = {"rep": rep + self._rep0, "host": h.name, "attempt": self._attempt}
            try:
                if isinstance(before[h.name], str) or isinstance(after, str):
                    raise ValueError(next(r for r in (before[h.name], after) if isinstance(r, str)))
                entry.update(t_ns=before[h.name].t_ns, **watch.interference(before[h.name], after))
            except ValueError as exc:  # no reading, or a clock that went back
                entry["error"] = str(exc)
            else:
                entry["why"] = self._decide_flag(h.name, entry, company)
            self._watched.append(entry)
        return result

    def _decide_flag(self, host: str, entry: dict, company: tuple[str, ...] = ()) -> str:
        """Why the window is flagged on ``host`` ("" when it is not), by params.yaml's
        thresholds; the probe is compared with its median on the host in this session, over
        the readings taken with the same hosts (``company``). The hosts' probes run at once,
        and on hosts that share a CPU (the lab's colocated placement) they share it: such a
        probe takes about twice as long as one read alone, and against a median of lone
        readings a third of a latency campaign's datacenter windows read as slowed."""
        probes = self._probes.setdefault((host, company), [])
        probes.append(entry["probe_before_ms"])
        median = float(np.median(probes))
        slower = max(entry["probe_before_ms"], entry["probe_after_ms"])
        t = self.thresholds
        return interference_rule.reasons(
            entry["other_cpus"], entry["steal_share"], slower / median if median > 0 else None,
            t.cpus, t.steal, t.probe)  # fmt: skip

    def _read_all(self, ctx: Context, hosts: list) -> dict[str, watch.Reading | str]:
        """A reading on each of ``hosts`` (distinct hosts), taken at the same time: each host's
        session runs its own, so a window waits for one round trip, not one per host."""
        if len(hosts) == 1:
            return {hosts[0].name: self._read(ctx, hosts[0])}
        with ThreadPoolExecutor(max_workers=len(hosts)) as pool:
            readings = {h.name: pool.submit(self._read, ctx, h) for h in hosts}
        return {name: future.result() for name, future in readings.items()}

    def _read(self, ctx: Context, host) -> watch.Reading | str:  # noqa: ANN001
        """One reading on ``host``, or why there is none (a reading never fails the step)."""
        try:
            result = ctx.pool[host.name].run(self._reading, check=True, timeout=30)
            try:  # the host's clocks, for the step's ClockWatch
                self._clocks.setdefault(host.name, []).append(parse_host_clocks(result.stdout))
            except ValueError:
                pass
            return watch.parse(result.stdout)
        except (RemoteError, ValueError) as exc:
            return f"no reading on {host.name}: {str(exc)[:300]}"

    def _watch_record(self) -> str | None:
        """The step's watched windows as JSON for its runs row (then forgotten)."""
        watched, self._watched = self._watched, []
        return json.dumps(watched, sort_keys=True) if watched else None

    def _parse(self, step: Step, rep: int, raw: str, row: dict, parse: Callable):
        """``parse()``: the samples of the tool's output ``raw``; a failed window keeps that
        output as it is, for the record."""
        try:
            return parse()
        except ToolOutputError:
            # under a name of the attempt's own: a later measurement of the step writes the
            # step's log, and attempts.parquet keeps pointing at this one
            attempt = pd.Timestamp(row["started_at"]).strftime("%Y%m%dT%H%M%S%f")
            row["raw_log"] = self._keep_log(step, rep, raw, attempt=attempt)
            raise

    def _keep_log(
        self, step: Step, rep: int, raw: str, windows: dict | None = None,
        attempt: str | None = None,
    ) -> str:  # fmt: skip
        """The tool's own output (``pipeline.data.rawlog``): where the benchmark's samples
        rebuild it (``windows``: rep -> the samples parsed from it, as saved), only what they do
        not hold; otherwise the output itself, compressed. ``attempt`` names a failed
        attempt's output apart from the step's. ``rep`` and ``windows``' keys count from this
        measurement's first (its warm-up): a step measured again numbers them on."""
        rep += self._rep0
        windows = None if windows is None else {r + self._rep0: w for r, w in windows.items()}
        stem = f"{step.stem}_rep{rep}" + (f"_failed-{attempt}" if attempt else "")
        residue = None
        metrics = {s.metric for samples in (windows or {}).values() for s in samples}
        per_sample_log = type(self.benchmark).log_residue is not Benchmark.log_residue
        if per_sample_log and windows and len(metrics) == 1:
            arrays = [
                (np.array([s.value for s in w], dtype=np.float64),
                 np.array([s.t_ns or 0 for s in w], dtype=np.int64))
                for w in windows.values()
            ]  # fmt: skip
            residue = self.benchmark.log_residue(raw, arrays)
        if residue is None:
            path = rawlog.write_log(self.data.logs, stem, raw)
        else:
            key = {"benchmark": self.benchmark.name, "campaign": self.id, "run": step.run,
                   "mode": step.mode, "path": step.path, "variant": step.variant,
                   "metric": metrics.pop(), "reps": list(windows), "part": step.stem}  # fmt: skip
            path = rawlog.write_residue(self.data.logs, stem, key, residue)
        return str(path.relative_to(self.data.root))

    def _records(self, step: Step, rep: int, samples) -> list[dict]:
        """The samples of window ``rep`` (0: the warm-up) of this measurement of the step."""
        return [
            {
                "environment": self.inv.environment,
                "campaign": self.id,
                "benchmark": self.benchmark.name,
                "metric": s.metric,
                "unit": s.unit,
                "mode": step.mode,
                "path": step.path,
                "variant": step.variant,
                "run": step.run,
                "rep": rep + self._rep0,
                "sample": s.sample,
                "value": s.value,
                "warmup": rep == 0,
                "t_ns": s.t_ns,
            }
            for s in samples
        ]

    @staticmethod
    def _finish(row: dict, status: str, reason: str) -> dict:
        return {**row, "status": status, "reason": reason, "ended_at": pd.Timestamp.now(tz="UTC")}

    def _cleanup(self, ctx: Context) -> None:
        for host in self._hosts():
            try:
                cleanup_host(ctx, host)
            except RemoteError as exc:  # report, and go on cleaning the other hosts
                self.log(f"cleanup on {host.name} failed: {exc}")

    def leftovers(self, ctx: Context) -> dict[str, list[str]]:
        return {h.name: leftovers(ctx, h) for h in self._hosts()}


def collect(
    benchmark: str,
    inventory_file: str | Path,
    raw_dir: str | Path,
    profile: Profile,
    seed: int,
    modes: list[str] | None = None,
    wan: dict | None = None,
    log: Callable[[str], None] = print,
    paths: tuple[str, ...] | None = None,
    options: dict | None = None,
    provider: Provider | None = None,
    variants: tuple[str, ...] | None = None,
    planning: dict | None = None,
    interference: dict | None = None,
) -> dict[str, int]:
    """Run (or resume) one benchmark's campaign on one inventory; returns table row counts.
    ``options`` are the benchmark's own settings (``Benchmark.options``). ``provider`` makes the
    inventory's hosts ready first and may place their CPUs (``pipeline.environments``); an
    inventory of real hosts needs none. ``planning``: params.yaml's ``planning`` with
    ``confidence`` (``Params.planning``); off or None, every cell gets the profile's runs.
    ``interference``: params.yaml's ``analysis.interference_*`` (None: their defaults)."""
    inv = inventory.load(inventory_file, known_modes=MODES, check_files=False)
    if benchmark not in BENCHMARKS:
        raise CampaignError(f"unknown benchmark {benchmark!r}; known: {sorted(BENCHMARKS)}")
    if provider is not None:
        candidates = selected_modes(inv, modes)
        if BENCHMARKS[benchmark].modes is not None:
            candidates = [m for m in candidates if m in BENCHMARKS[benchmark].modes]
        clusters = {MODES[m].cluster for m in candidates if m in MODES and MODES[m].cluster}
        provider.ready(wan, log, clusters)
    inv = inventory.load(inventory_file, known_modes=MODES)  # now the key files must exist
    out_dir = Path(raw_dir) / benchmark / inv.environment
    meta = {"wan": wan} if inv.lab and wan else {}
    bench = BENCHMARKS[benchmark]()
    if options:
        bench.configure(options)
        meta["options"] = dict(sorted(bench.options.items()))
    placer = provider.place if provider is not None else None
    campaign = Campaign(
        bench, inv, profile, out_dir, seed, modes, log, paths, meta, placer=placer,
        variants=variants, planning=planner.Settings.from_params(planning),
        interference=interference,
    )
    return campaign.run()
