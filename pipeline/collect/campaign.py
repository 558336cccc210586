"""The campaign loop: every mode of a benchmark, in a seeded random order per run, resumable.

For each run (block) 1..R the (mode, path, variant) triples are measured in a fresh random
permutation, each with a flagged warm-up before its measured windows. Each finished triple is
written at once as its own pair of parquet parts (samples, then the runs row that commits
them), so an interrupted campaign resumes where it stopped and never measures a pair twice.
At the end of a session the parts are folded into the dataset's tables and deleted
(`Dataset.consolidate`); a resumed campaign reads what it has from both. Everything the
campaign starts is labelled and removed on success, error and Ctrl-C.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import signal
import socket
import time
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import imports
from pipeline.benchmarks import BENCHMARKS, Benchmark, Scenario, ToolOutputError, Window
from pipeline.collect import hostfacts, images, inventory, watch
from pipeline.collect import planning as planner
from pipeline.collect.modes import MODES, STUDY_MODES, Context, Mode, ModeUnavailable, Workload
from pipeline.collect.modes.base import (
    LABEL,
    PID_DIR,
    Deployment,
    cleanup_host,
    leftovers,
    own_work_dirs,
)
from pipeline.collect.remote import Pool, RemoteError, Session
from pipeline.data import interference as interference_rule
from pipeline.data import rawlog, schema
from pipeline.hosts import PLACEMENTS

ROOT = Path(__file__).resolve().parents[2]  # the repository, for shipped files
WARMUP_CONNECT_BUDGET_S = 30.0  # a server that accepts nothing within this is a failed start


class Provider(Protocol):
    """What provides an inventory's hosts (the embedded lab): makes them ready, places CPUs."""

    def ready(
        self, wan: dict | None, log: Callable[[str], None], clusters: Collection[str] = ()
    ) -> None:
        """``clusters``: the orchestrators the campaign's modes need (Mode.cluster)."""

    def place(self, placement: str) -> dict: ...


class CampaignError(RuntimeError):
    """The campaign stopped; what is saved stays saved and `dvc repro` resumes from it."""


@dataclass(frozen=True)
class Profile:
    runs: int
    seconds: float  # measured window
    omit_seconds: float  # discarded at the start of each window (TCP slow start)
    warmup_seconds: float
    reps: int = 1  # measured windows per (run, mode, path, variant)
    count: int | None = None  # samples per measured window, for count-based tools (latency)
    warmup_count: int | None = None

    @property
    def warms_up(self) -> bool:
        """A warm-up before the measured window: a warm-up of 0 s (and no warm-up count) is
        none at all, not a tool run of length 0 (iperf3 reads ``--time 0`` as "forever")."""
        return self.warmup_seconds > 0 or bool(self.warmup_count)


@dataclass(frozen=True)
class Step:
    run: int
    order: int
    mode: str
    path: str
    variant: str

    @property
    def key(self) -> tuple[int, str, str, str]:
        return (self.run, self.mode, self.path, self.variant)

    @property
    def stem(self) -> str:
        return f"run-{self.run:03d}_{self.mode}_{self.path}_{self.variant}"


def plan(
    benchmark: Benchmark,
    modes: list[str],
    paths: tuple[str, ...] | None = None,
    variants: tuple[str, ...] | None = None,
) -> list[tuple[str, str, str]]:
    """Every (mode, path, variant) the benchmark measures, with a native baseline on every
    path a mode uses, so each mode is compared with native on its own path. A host benchmark
    runs on its one path ("host") in the modes it names, native among them; others are not
    planned at all (they are not "skipped": the benchmark does not apply to them). Scenario
    benchmarks are planned the same way. A control of the instrument (``Mode.control``) whose
    paths include "host" is planned for a host benchmark that measures native, when named.
    ``paths`` and ``variants``, when given, keep only those of the benchmark's."""
    wanted = [p for p in benchmark.paths if paths is None or p in paths]
    kinds = [v for v in benchmark.variants if variants is None or v in variants]
    if benchmark.kind in ("host", "scenario"):
        chosen = [m for m in benchmark.modes or () if m in modes]
        if benchmark.kind == "host" and "native" in chosen:
            chosen += [m for m in modes if MODES[m].control and "host" in MODES[m].paths]
        return [(m, p, v) for p in wanted for m in chosen for v in kinds]
    pairs = [(m, p) for m in modes for p in MODES[m].paths if p in wanted]
    baselines = [("native", p) for p in wanted if p in {p for _, p in pairs}]
    pairs = baselines + [pair for pair in pairs if pair not in baselines]
    return [(m, p, v) for m, p in pairs for v in kinds]


def schedule(
    triples: list[tuple[str, str, str]],
    runs: int,
    seed: int,
    group: Callable[[tuple[str, str, str]], object] | None = None,
    first: int = 1,
) -> list[Step]:
    """A seeded random order of the triples for each run ``first..runs``; the same seed, the
    same order (a planned round, ``first == runs``, is ordered as a pilot round would be).

    Triples with the same ``group(triple)`` share one server deployment (one mode's server
    measured on each of its paths and variants, `Campaign._server_group`): each run measures
    the groups in a random order and, inside a group, its triples in a random order, one after
    the other, so the server starts once per group and run. Without groups (or with groups of
    one) this is a plain random permutation of the triples per run."""
    group = group or (lambda triple: triple)
    members: dict[object, list[tuple[str, str, str]]] = {}
    for triple in triples:
        members.setdefault(group(triple), []).append(triple)
    groups = list(members.values())
    steps = []
    for run in range(first, runs + 1):
        rng = np.random.default_rng([seed, run])
        ordered = []
        for index in rng.permutation(len(groups)):
            grouped = groups[index]
            inner = rng.permutation(len(grouped)) if len(grouped) > 1 else [0]
            ordered += [grouped[i] for i in inner]
        steps += [Step(run, order, *triple) for order, triple in enumerate(ordered)]
    return steps


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


def campaign_id(environment: str, benchmark: str, profile: Profile, triples, seed: int) -> str:
    key = json.dumps([environment, benchmark, asdict(profile), triples, seed], sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:12]


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


STEP_KEY = ["run", "mode", "path", "variant"]
OWNER = "container_overhead.campaign"  # the parquet metadata key naming a table's campaign


class Dataset:
    """The benchmark's raw directory for one environment, for one campaign.

    - ``samples.parquet``, ``runs.parquet``, ``hosts.parquet``, ``campaign.json``: the current
      campaign's consolidated tables (each names its campaign: parquet metadata, JSON field).
    - ``parts/<campaign>/``: what a campaign committed since its last consolidation, one pair
      of parts per step (samples, then the runs row that commits them), hosts per run, one
      record per collection session. Consolidation folds them into the tables, then deletes
      them.
    - ``superseded/<campaign>/``: an earlier campaign's consolidated tables (other settings or
      other code), moved aside when another campaign consolidated; never read with this one's.
    - ``logs/<campaign>/``: the tools' own output (``pipeline.data.rawlog``).
    - precision planning's rounds (the cells each run beyond the pilot measures, recorded
      before it starts) and its record (per cell: runs, half-width, why it stopped): parts
      ``round-run-NNN.json`` and ``plan.json``, then campaign.json's ``rounds`` and
      ``planning``.

    Every step is committed exactly once, in the tables or in the parts: an interrupted
    consolidation leaves rows in both, which the next one counts once (a step's rows come from
    its parts when it has any, else from the tables).

    A step is measured for good when its status is ok or skipped (a mode the host cannot run).
    A failed step (the tool, a daemon or a host failed during it) is measured again by the
    next session; its failed runs row moves to ``attempts.parquet`` (parts: ``attempt-*``), so
    the record keeps every failure. So is a step whose latest measurement had a window the
    interference watch flagged (``flagged``), up to ``retries`` times: its earlier runs row
    moves to ``attempts.parquet`` and its earlier samples stay beside the new ones (their reps
    numbered on), and the new row's ``watch`` lists every attempt's windows.
    """

    def __init__(
        self, root: Path, campaign: str, code: dict | None = None, retries: int = 0
    ) -> None:
        self.root = root
        self.id = campaign
        self.code = code or {}
        self.retries = retries
        self.parts = root / "parts" / campaign
        self.logs = root / "logs" / campaign
        self.aside = root / "superseded" / campaign
        self._hosts_runs: set[int] | None = None

    # -- where this campaign's consolidated tables are --------------------------------------

    def _file(self, name: str) -> Path | None:
        """This campaign's consolidated ``name`` (samples, runs, hosts, campaign.json): at the
        top when it is the current campaign's, else where it was moved aside, else None."""
        for directory in (self.root, self.aside):
            path = directory / (name if name.endswith(".json") else f"{name}.parquet")
            if _owner(path) == self.id:
                return path
        return None

    def _table(self, name: str) -> pa.Table | None:
        path = self._file(name)
        return None if path is None else schema.read_table(path, name)

    def superseded(self) -> list[str]:
        """Earlier campaigns in this directory (other settings or other code): their tables
        and parts stay apart (superseded/<campaign>/, parts/<campaign>/) and are not part of
        this dataset."""
        found = {_owner(self.root / f"{n}.parquet") for n in TABLE_FILES}
        found.add(_owner(self.root / "campaign.json"))
        for sub in ("parts", "superseded"):
            if (self.root / sub).is_dir():
                found |= {p.name for p in (self.root / sub).iterdir() if p.is_dir()}
        return sorted(found - {None, self.id})

    def statuses(self) -> dict[tuple[int, str, str, str], str]:
        """Every committed step's status (its parts' row when it has one, else the table's)."""
        found = {}
        runs = self._table("runs")
        if runs is not None:
            for row in runs.select([*STEP_KEY, "status"]).to_pylist():
                found[tuple(row[k] for k in STEP_KEY)] = row["status"]
        for f in self.parts.glob("run-*.runs.parquet"):
            row = pq.read_table(f, columns=[*STEP_KEY, "status"]).to_pylist()[0]
            found[tuple(row[k] for k in STEP_KEY)] = row["status"]
        return found

    def step_records(self) -> dict[tuple[int, str, str, str], dict]:
        """Every committed step's status, headline (None when it has none) and lab seconds
        (its runs row's start to end), as ``statuses`` finds them."""
        columns = [*STEP_KEY, "status", "headline", "started_at", "ended_at"]
        rows = []
        runs = self._table("runs")
        if runs is not None:
            rows += runs.select(columns).to_pylist()
        for f in self.parts.glob("run-*.runs.parquet"):
            rows += schema.read_table(f, "runs").select(columns).to_pylist()
        found = {}
        for row in rows:  # a part's row after the table's: it wins
            start, end = row["started_at"], row["ended_at"]
            seconds = (end - start).total_seconds() if start is not None and end is not None \
                else None
            found[tuple(row[k] for k in STEP_KEY)] = {
                "status": row["status"], "headline": row["headline"], "seconds": seconds}
        return found

    def _latest_rows(self, columns: list[str]) -> dict[tuple[int, str, str, str], dict]:
        """Every committed step's runs row (``columns`` of it), its part's over the table's."""
        found = {}
        runs = self._table("runs")
        if runs is not None:
            for row in runs.select([*STEP_KEY, *columns]).to_pylist():
                found[tuple(row[k] for k in STEP_KEY)] = row
        for f in self.parts.glob("run-*.runs.parquet"):
            row = schema.read_table(f, "runs").select([*STEP_KEY, *columns]).to_pylist()[0]
            found[tuple(row[k] for k in STEP_KEY)] = row
        return found

    def flagged(self) -> list[tuple[int, str, str, str]]:
        """The ok steps to measure again: their latest measurement had a window the
        interference watch flagged, and they were measured at most ``retries`` times."""
        pending = []
        for key, row in self._latest_rows(["status", "watch"]).items():
            if row["status"] != "ok" or not row["watch"]:
                continue
            attempt, flagged = window_decisions(row["watch"])
            if flagged and attempt <= self.retries:
                pending.append(key)
        return sorted(pending)

    def done(self) -> set[tuple[int, str, str, str]]:
        """The steps measured for good (ok or skipped); a failed one is measured again, and so
        is a flagged one (``flagged``)."""
        finished = {key for key, status in self.statuses().items() if status in FINAL}
        return finished - set(self.flagged()) if self.retries else finished

    def earlier(self, step: Step) -> tuple[dict | None, list[dict]]:
        """The step's committed runs row and samples (None and [] for a step not measured
        yet): its parts' when it has them, else the consolidated tables'."""
        runs_part = self.parts / f"{step.stem}.runs.parquet"
        if runs_part.exists():
            row = schema.read_table(runs_part, "runs").to_pylist()[0]
            samples_part = self.parts / f"{step.stem}.samples.parquet"
            samples = schema.read_table(samples_part, "samples").to_pylist() \
                if samples_part.exists() else []
            return row, samples
        runs_path = self._file("runs")
        if runs_path is None:
            return None, []
        where = [(k, "=", v) for k, v in zip(STEP_KEY, step.key, strict=True)]
        rows = pq.read_table(runs_path, filters=where, schema=schema.RUNS).to_pylist()
        if not rows:
            return None, []
        samples_path = self._file("samples")
        samples = [] if samples_path is None else schema.from_storage(
            pq.read_table(samples_path, filters=where)).to_pylist()  # fmt: skip
        return rows[0], samples

    def failed(self) -> list[tuple[int, str, str, str]]:
        return sorted(key for key, status in self.statuses().items() if status == "failed")

    def save(self, step: Step, samples: list[dict], run_row: dict) -> None:
        """Commit a measurement of ``step``. A step measured before keeps its earlier samples
        (but those of a rep the new ones hold) and its earlier runs row as an attempt."""
        runs_part = self.parts / f"{step.stem}.runs.parquet"
        earlier_row, earlier_samples = self.earlier(step)
        if earlier_row is not None:  # measured again: the earlier attempt stays on record
            n = len(list(self.parts.glob(f"attempt-{step.stem}-*.parquet")))
            attempt = self.parts / f"attempt-{step.stem}-{n + 1}.parquet"
            if runs_part.exists():
                os.replace(runs_part, attempt)
            else:  # the earlier row is in the consolidated table: consolidation folds a copy
                schema.write_table(schema.to_table([earlier_row], schema.RUNS), attempt)
            reps = {s["rep"] for s in samples}
            samples = [s for s in earlier_samples if s["rep"] not in reps] + samples
        # samples first: a runs part is the commit marker that makes them count
        schema.write_table(
            schema.to_table(samples, schema.SAMPLES), self.parts / f"{step.stem}.samples.parquet"
        )
        schema.write_table(
            schema.to_table([run_row], schema.RUNS), self.parts / f"{step.stem}.runs.parquet"
        )

    def save_hosts(self, run: int, rows: list[dict]) -> None:
        path = self.parts / f"hosts-run-{run:03d}.parquet"
        schema.write_table(schema.to_table(rows, schema.HOSTS), path)

    def has_hosts(self, run: int) -> bool:
        if (self.parts / f"hosts-run-{run:03d}.parquet").exists():
            return True
        if self._hosts_runs is None:
            hosts = self._table("hosts")
            self._hosts_runs = set() if hosts is None else set(hosts.column("run").to_pylist())
        return run in self._hosts_runs

    def save_session(self, record: dict) -> None:
        """One collection session (a `dvc repro`, or its resumption) and where its time went."""
        self.parts.mkdir(parents=True, exist_ok=True)
        path = self.parts / f"session-{record['started_at'].replace(':', '')}.json"
        _write_text(path, json.dumps(record, indent=1, sort_keys=True))

    def save_round(self, run: int, cells: list[tuple[str, str, str]]) -> None:
        """A planned round: the cells run ``run`` measures, recorded before it starts so an
        interrupted round is finished as planned, not planned again."""
        self.parts.mkdir(parents=True, exist_ok=True)
        record = {"run": run, "cells": [list(c) for c in cells],
                  "decided_at": pd.Timestamp.now(tz="UTC").isoformat()}  # fmt: skip
        _write_text(self.parts / f"round-run-{run:03d}.json", json.dumps(record, indent=1))

    def rounds(self) -> dict[int, list[tuple[str, str, str]]]:
        """Every planned round, run -> its cells."""
        return {run: [tuple(c) for c in r["cells"]] for run, r in self._rounds().items()}

    def _rounds(self) -> dict[int, dict]:
        """Every planned round's record by run (campaign.json's, then the parts')."""
        path = self._file("campaign.json")
        kept = json.loads(path.read_text()).get("rounds", []) if path else []
        new = [json.loads(f.read_text()) for f in sorted(self.parts.glob("round-run-*.json"))]
        return {r["run"]: r for r in (*kept, *new)}

    def save_plan(self, record: dict) -> None:
        """Precision planning's record as the session ends (it replaces the earlier one)."""
        self.parts.mkdir(parents=True, exist_ok=True)
        _write_text(self.parts / "plan.json", json.dumps(record, indent=1, sort_keys=True))

    def plan(self) -> dict | None:
        """Precision planning's latest record (None: the campaign never recorded one)."""
        if (self.parts / "plan.json").exists():
            return json.loads((self.parts / "plan.json").read_text())
        path = self._file("campaign.json")
        return json.loads(path.read_text()).get("planning") if path else None

    def sessions(self) -> list[dict]:
        """Every session of the campaign: those consolidated into campaign.json, then those
        recorded since."""
        path = self._file("campaign.json")
        kept = json.loads(path.read_text()).get("sessions_recorded", []) if path else []
        new = [json.loads(f.read_text()) for f in sorted(self.parts.glob("session-*.json"))]
        seen = {s["started_at"] for s in new}
        return sorted([s for s in kept if s["started_at"] not in seen] + new,
                      key=lambda s: s["started_at"])  # fmt: skip

    # -- consolidation ----------------------------------------------------------------------

    def consolidate(self) -> dict[str, int]:
        """Fold this campaign's committed parts into samples/runs/hosts.parquet and
        campaign.json, then delete those parts. Each file is replaced atomically and the parts
        go last, so a crash at any point loses nothing and the next consolidation counts
        nothing twice. An earlier campaign's tables at the top are first moved aside."""
        runs_parts = sorted(self.parts.glob("run-*.runs.parquet"))
        stems = [f.name.removesuffix(".runs.parquet") for f in runs_parts]
        sample_parts = [self.parts / f"{stem}.samples.parquet" for stem in stems]
        hosts_parts = sorted(self.parts.glob("hosts-run-*.parquet"))
        session_parts = sorted(self.parts.glob("session-*.json"))
        attempt_parts = sorted(self.parts.glob("attempt-*.parquet"))
        planning_parts = [*sorted(self.parts.glob("round-run-*.json")),
                          *self.parts.glob("plan.json")]  # fmt: skip
        names = (*(f"{n}.parquet" for n in TABLE_FILES), "campaign.json")
        settled = all(_owner(self.root / n) == self.id for n in names) and not self.aside.exists()
        if settled and not (runs_parts or hosts_parts or session_parts or attempt_parts
                            or planning_parts):
            return {n: pq.read_metadata(self.root / f"{n}.parquet").num_rows for n in TABLE_FILES}
        fresh = {
            "samples": [schema.read_table(f, "samples") for f in sample_parts],
            "runs": [schema.read_table(f, "runs") for f in runs_parts],
            "hosts": [schema.read_table(f, "hosts") for f in hosts_parts],
        }
        counts = {}
        self._fold_attempts(fresh["runs"], attempt_parts)
        # runs last among the tables: its rows are what `done()` counts as measured
        for name, key in (("samples", STEP_KEY), ("hosts", ["run"]), ("runs", STEP_KEY)):
            table = _merge(self._table(name), fresh[name], key, schema.TABLES[name])
            self._retire(f"{name}.parquet")
            schema.write_table(table, self.root / f"{name}.parquet", {OWNER: self.id})
            (self.aside / f"{name}.parquet").unlink(missing_ok=True)
            counts[name] = table.num_rows
        sessions = self.sessions()
        record = {"campaign": self.id, "code": self.code, **duty_cycle(sessions),
                  "sessions_recorded": sessions}  # fmt: skip
        rounds, plan_record = self._rounds(), self.plan()
        if rounds:
            record["rounds"] = [rounds[run] for run in sorted(rounds)]
        if plan_record is not None:
            record["planning"] = plan_record
        self._retire("campaign.json")
        _write_text(self.root / "campaign.json", json.dumps(record, indent=1))
        (self.aside / "campaign.json").unlink(missing_ok=True)
        _remove_dir(self.aside)
        _remove_dir(self.aside.parent)
        # the commit markers first: a samples part left without one is never read again
        for runs_part, samples_part in zip(runs_parts, sample_parts, strict=True):
            runs_part.unlink(missing_ok=True)
            samples_part.unlink(missing_ok=True)
        for f in (*hosts_parts, *session_parts, *attempt_parts, *planning_parts):
            f.unlink(missing_ok=True)
        self._drop_orphans()
        _remove_dir(self.parts)
        _remove_dir(self.parts.parent)
        return counts

    def _fold_attempts(self, fresh_runs: list[pa.Table], attempt_parts: list[Path]) -> None:
        """attempts.parquet: the failed runs rows that a new measurement of their step
        replaces (in the parts, or in the table), each once (a crash may fold one twice)."""
        rows = [] if self._table("attempts") is None else self._table("attempts").to_pylist()
        rows += [r for f in attempt_parts for r in schema.read_table(f, "runs").to_pylist()]
        old = self._table("runs")
        if old is not None and fresh_runs:
            remeasured = {tuple(r[k] for k in STEP_KEY)
                          for t in fresh_runs for r in t.select(STEP_KEY).to_pylist()}
            rows += [r for r in old.to_pylist() if r["status"] == "failed"
                     and tuple(r[k] for k in STEP_KEY) in remeasured]  # fmt: skip
        # a row still current (an interrupted consolidation left it in both) is no attempt
        current = {(*(r[k] for k in STEP_KEY), str(r["started_at"]))
                   for t in fresh_runs for r in t.to_pylist()}  # fmt: skip
        unique = {(*(r[k] for k in STEP_KEY), str(r["started_at"])): r for r in rows}
        unique = {k: r for k, r in unique.items() if k not in current}
        self._retire("attempts.parquet")
        if unique:
            table = schema.to_table(list(unique.values()), schema.RUNS)
            schema.write_table(table, self.root / "attempts.parquet", {OWNER: self.id})
        (self.aside / "attempts.parquet").unlink(missing_ok=True)

    def _retire(self, name: str) -> None:
        """An earlier campaign's consolidated file at the top, moved to superseded/<it>/."""
        path = self.root / name
        owner = _owner(path)
        if path.exists() and owner != self.id:
            if owner is None:  # no campaign's rows at all (an empty table of an old layout)
                path.unlink()
                return
            aside = self.root / "superseded" / owner
            aside.mkdir(parents=True, exist_ok=True)
            os.replace(path, aside / name)

    def _drop_orphans(self) -> None:
        """Samples parts whose runs part a crash in the deletion above already removed: their
        step is in the tables."""
        done = self.statuses()
        for f in self.parts.glob("run-*.samples.parquet"):
            if (self.parts / f.name.replace(".samples.", ".runs.")).exists():
                continue
            rows = pq.read_table(f, columns=STEP_KEY).to_pylist()
            if not rows or tuple(rows[0][k] for k in STEP_KEY) in done:
                f.unlink()


TABLE_FILES = ("samples", "runs", "hosts")
FINAL = ("ok", "skipped")  # a step with one of these is measured for good


def window_decisions(watch_json: str | None) -> tuple[int, bool]:
    """From a runs row's ``watch``: the step's latest attempt and whether collection flagged a
    window of it (0, False where no decision was recorded)."""
    entries = [e for e in json.loads(watch_json or "[]") if "why" in e]
    if not entries:
        return 0, False
    latest = max(int(e.get("attempt", 1)) for e in entries)
    return latest, any(e["why"] for e in entries if int(e.get("attempt", 1)) == latest)


def _owner(path: Path) -> str | None:
    """The campaign a consolidated file belongs to (None: no such file, or no rows to say)."""
    if not path.exists():
        return None
    if path.suffix == ".json":
        return json.loads(path.read_text()).get("campaign")
    metadata = pq.read_schema(path).metadata or {}
    if OWNER.encode() in metadata:
        return metadata[OWNER.encode()].decode()
    # a table written before tables named their campaign: its rows do
    column = pq.read_table(path, columns=["campaign"]).column(0).drop_null()
    return column[0].as_py() if len(column) else None


def _merge(
    old: pa.Table | None, fresh: list[pa.Table], key: list[str], kind: pa.Schema
) -> pa.Table:
    """The consolidated rows and the parts' rows, each key once: a key with parts takes its
    rows from them (after an interrupted consolidation the tables may hold it too)."""
    import pyarrow.compute as pc

    new = pa.concat_tables(fresh) if fresh else schema.to_table([], kind)
    if old is None or old.num_rows == 0:
        return new
    if new.num_rows:
        def joined(table: pa.Table) -> pa.ChunkedArray:
            columns = [pc.cast(table.column(k), pa.string()) for k in key]
            return pc.binary_join_element_wise(*columns, "\x1f")

        replaced = pa.array(sorted(set(joined(new).to_pylist())))
        old = old.filter(pc.invert(pc.is_in(joined(old), replaced)))
    return pa.concat_tables([old.cast(kind), new.cast(kind)])


def _write_text(path: Path, text: str) -> None:
    """Atomically, and a failed write (a full disk) leaves no half-written file."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _remove_dir(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:  # absent, or not empty (parts saved by a campaign still running)
        pass


def duty_cycle(sessions: list[dict]) -> dict:
    """Wall time of every collection session against the seconds spent inside load windows.

    ``duty_cycle`` = window seconds / wall seconds over all sessions of the campaign (resumed
    sessions add up). The rest of the wall time is split into where it went: preparation
    (reachability, uploads, tool images, hashes), per-measurement overhead (deploying and
    removing the mode, SSH round trips, the tools' own start-up, host facts) and clean-up.
    """
    keys = ("wall_s", "window_s", "prepare_s", "loop_s", "cleanup_s", "steps")
    total = {k: float(sum(s.get(k, 0) for s in sessions)) for k in keys}
    total["steps"] = int(total["steps"])
    total["per_step_overhead_s"] = (
        (total["loop_s"] - total["window_s"]) / total["steps"] if total["steps"] else None
    )
    # Inside the loop (sessions since these were recorded; None if any session lacks them):
    # starting and stopping servers, client commands (their wall time beyond the window is SSH
    # and the tool's own start-up, e.g. sockperf's start-up sleep), the rest (host facts,
    # parsing, saving).
    for k in ("deploy_s", "stop_s", "client_s", "kept_s", "fixed_s"):
        known = sessions and all(k in s for s in sessions)
        total[k] = float(sum(s[k] for s in sessions)) if known else None
    if total["client_s"] is not None:
        total["client_overhead_s"] = total["client_s"] - total["window_s"]
        total["other_s"] = total["loop_s"] - total["client_s"] - total["deploy_s"] - total["stop_s"]
    if total["kept_s"] is not None and total["fixed_s"] is not None:
        total["harness_s"] = total["wall_s"] - total["kept_s"] - total["fixed_s"]
    total["duty_cycle"] = total["window_s"] / total["wall_s"] if total["wall_s"] else None
    total["sessions"] = len(sessions)
    # The lab's CPU placement of each session that recorded one (pipeline/lab/cpus.py).
    placements = [s["placement"] for s in sessions if s.get("placement")]
    total["placements"] = [p for i, p in enumerate(placements) if p not in placements[:i]]
    return total


@contextmanager
def _signals_to(handler: Callable, signals: tuple[int, ...]) -> Iterator[None]:
    """``handler`` for ``signals`` inside the block, the previous handlers after it (outside
    the main thread, where no handler can be set, the block runs as it is)."""
    try:
        previous = {sig: signal.signal(sig, handler) for sig in signals}
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _sigterm_as_interrupt():
    """DVC and papermill stop a stage with SIGTERM; clean up exactly as for Ctrl-C."""

    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    return _signals_to(handler, (signal.SIGTERM,))


@contextmanager
def _interrupts_deferred(log: Callable[[str], None]) -> Iterator[None]:
    """Clean-up runs to its end: a Ctrl-C (or SIGTERM) arriving during it is held, said once,
    and raised as KeyboardInterrupt when the clean-up is done (a second Ctrl-C would otherwise
    leave labelled objects on the hosts)."""
    held: list[int] = []

    def hold(signum, frame):
        if not held:
            log("cleaning up: the interrupt takes effect when the hosts are clean")
        held.append(signum)

    with _signals_to(hold, (signal.SIGINT, signal.SIGTERM)):
        yield
    if held:
        raise KeyboardInterrupt(f"signal {held[0]} during clean-up")


class HostLock:
    """One campaign at a time on a set of hosts, held on the Swarm manager.

    Two campaigns would perturb each other's measurements, and each one's cleanup removes the
    other's containers. A lock left by a killed campaign on this controller is taken over.
    """

    PATH = f"{PID_DIR}/campaign.lock"

    def __init__(self, session: Session, campaign: str) -> None:
        self.session = session
        self.owner = f"{socket.gethostname()} {os.getpid()} {campaign}"

    def __enter__(self) -> HostLock:
        for _ in range(2):
            held = self._try()
            if held is None:
                return self
            host, pid, *_ = (held.split() + ["", ""])[:3]
            if host == socket.gethostname() and pid.isdigit() and not _alive(int(pid)):
                self.session.run(["rm", "-rf", self.PATH])  # its campaign died: take over
                continue
            break
        raise CampaignError(
            f"another campaign holds {self.PATH} on {self.session.host.name} ({held!r}: "
            "controller host, pid, campaign). Wait for it to finish; if it is dead, remove "
            "that directory and run again."
        )

    def _try(self) -> str | None:
        """None when acquired, else the current owner's line."""
        script = (
            f"mkdir -p {PID_DIR} && if mkdir {self.PATH} 2>/dev/null; then "
            f"echo {shlex.quote(self.owner)} > {self.PATH}/owner; echo acquired; "
            f"else cat {self.PATH}/owner 2>/dev/null || echo unknown; fi"
        )
        out = self.session.run(script, timeout=30).stdout.strip()
        return None if out == "acquired" else out

    def __exit__(self, *exc: object) -> None:
        owner = shlex.quote(self.owner)
        self.session.run(
            f'[ "$(cat {self.PATH}/owner 2>/dev/null)" = {owner} ] && rm -rf {self.PATH}; true',
            timeout=30,
        )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _server_cpus(ctx: Context, deployment: Deployment, workload: Workload) -> str:
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


def selected_modes(inv: inventory.Inventory, modes: list[str] | None) -> list[str]:
    """The modes a campaign may plan: those asked for (every study mode by default; the
    controls only where named) that the inventory allows."""
    selected = modes or list(STUDY_MODES)
    if inv.modes is not None:  # a control is native under another name: it goes with it
        selected = [
            m for m in selected
            if m in inv.modes or (m in MODES and MODES[m].control and "native" in inv.modes)
        ]  # fmt: skip
    return selected


class _SessionClock:
    """Where one collection session's wall time goes, for the campaign's duty cycle."""

    def __init__(self) -> None:
        self.started_at = pd.Timestamp.now(tz="UTC")
        self.t0 = time.monotonic()
        self.phases: dict[str, float] = {}
        self.steps = 0
        self.window_s = 0.0
        # The three-way split of the wall time (harness/duty_cycle.py): the measured windows
        # the analysis keeps, and the time the tool itself needs beyond them (warm-ups, omitted
        # starts, its own fixed start-up); everything else is the harness's.
        self.kept_s = 0.0
        self.fixed_s = 0.0
        self.placement: dict | None = None  # the lab's CPU placement (Campaign._place)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t = time.monotonic()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.monotonic() - t

    def record(self) -> dict:
        return {
            "started_at": self.started_at.isoformat(),
            "wall_s": time.monotonic() - self.t0,
            "window_s": self.window_s,
            "kept_s": self.kept_s,
            "fixed_s": self.fixed_s,
            "steps": self.steps,
            **self.phases,
            **({"placement": self.placement} if self.placement is not None else {}),
        }


def _hosts_of(row: dict) -> str:
    """The hosts a failed step ran on, for its messages (its reason is often the tool's own)."""
    client, server = row.get("client_host"), row.get("server_host")
    if not server:
        return ""
    if not client or client == server:
        return f" (on {server})"
    return f" (client {client}, server {server})"


def _fmt_duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s"


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
        network = placer is not None and benchmark.kind == "network"
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
        self.planning = planning if benchmark.kind != "scenario" else None
        self.fixed_runs = (
            "fixed runs: a scenario benchmark has no one per-run value to plan with"
            if planning is not None and self.planning is None else None
        )  # fmt: skip
        if self.planning is not None:
            for run, cells in sorted(self.data.rounds().items()):
                self.steps += self._round(run, cells)
        # The server the last step left running because the next step shares it: (group, run)
        # and the deployment; `_measure` reuses or stops it.
        self._kept: tuple[tuple, Deployment] | None = None
        self._clock: _SessionClock | None = None
        self._current: Step | None = None  # the step being measured, for error messages
        self._measured = False  # every step of the session measured (clean-up under way)
        # available() costs SSH round trips (docker info on two nodes, kernel probes): ask once
        # per (mode, path) and campaign, not before every measurement.
        self._availability: dict[tuple[str, str], str | None] = {}
        # the interference watch around every measured window (pipeline/collect/watch.py)
        self._reading: str | None = None  # after prepare(): a benchmark may name tools there
        self._watched: list[dict] = []  # the step's windows, per host
        self._probes: dict[str, list[float]] = {}  # the probe's times so far, per host
        self._rep0 = 0  # the step's first rep in this measurement (a step measured again)
        self._attempt = 1  # which measurement of the step this is

    def _round(self, run: int, cells: list[tuple[str, str, str]]) -> list[Step]:
        """A planned round's steps: its cells in the order a pilot round's would take."""
        cells = [tuple(c) for c in cells if tuple(c) in self._groups]
        return schedule(cells, run, self.seed, lambda t: self._groups[t], first=run)

    def _server_group(self, mode: str, path: str, variant: str) -> tuple:
        """The triples one server deployment serves within a run: a network benchmark's server
        in one mode serves every path, and every variant of the same ``server_group``, so a
        container starts once per mode and run, not once per measurement. The tool, its flags
        and the client are those of a server started for the step alone. Host benchmarks
        deploy per step; a scenario benchmark's steps share what its ``server_group`` says
        (lb: one replica service for the balancers in front of it), per path."""
        if self.benchmark.kind == "host":
            return (mode, path, variant)
        if self.benchmark.kind == "scenario":
            return (mode, path, self.benchmark.server_group(variant))
        return (mode, self.benchmark.server_group(variant))

    def _workload(self, step: Step) -> Workload:
        """The server of the step's group: one argv for all its variants, every protocol."""
        bench = self.benchmark
        if bench.kind == "host":  # no server: a quick run of the tool the mode may probe with
            return Workload(f"{bench.name}-{step.variant}", tuple(bench.probe_argv(step.variant)),
                            bench.port, scratch=bench.server_scratch)  # fmt: skip
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
            with Pool(self.inv) as pool, _sigterm_as_interrupt():
                ctx = Context(inventory=self.inv, pool=pool, campaign=self.id)
                try:
                    for host in self._hosts():
                        own_work_dirs(ctx, host)
                    with HostLock(ctx.pool[self.inv.manager.name], self.id):
                        clock = self._clock = _SessionClock()
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
                            with _interrupts_deferred(self.log):
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

    def _measure_planned(self, ctx: Context, clock: _SessionClock) -> None:
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
            f"planned run {run}: {len(steps)} measurement(s), ~{_fmt_duration(decision.cost_s)} "
            f"of {_fmt_duration(decision.remaining_s)} budget left; widest: {widest.mode} "
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

    def _save_session(self, clock: _SessionClock) -> None:
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
            f"{_fmt_duration(record['spent_s'])} of {_fmt_duration(record['budget_s'])} budget; "
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

    def _measure_all(self, ctx: Context, todo: list[Step], clock: _SessionClock) -> None:
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

    def _measure_steps(self, ctx: Context, todo: list[Step], clock: _SessionClock) -> None:
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
                f"elapsed {_fmt_duration(elapsed)}, ~{_fmt_duration(left)} left"
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
        if self.benchmark.kind == "scenario":  # it keeps its own (Scenario.keep)
            self._timed("stop_s", self.benchmark.release)

    def _timed(self, phase: str, call: Callable):
        if self._clock is None:
            return call()
        with self._clock.phase(phase):
            return call()

    def _deploy(self, ctx: Context, mode: Mode, step: Step, group: tuple) -> Deployment:
        """The step's server: the one the previous step kept when it is the same group's, or
        a new one (stopping what was kept)."""
        if self._kept is not None and self._kept[0] == group:
            deployment = self._kept[1]
            self._kept = None
            return deployment
        self._stop_kept()
        workload = self._workload(step)
        host_kind = self.benchmark.kind == "host"
        start = partial(mode.foreground if host_kind else mode.start, ctx, workload)
        deployment = self._timed("deploy_s", start)
        if not host_kind:
            try:
                cpus = self._timed("deploy_s", partial(_server_cpus, ctx, deployment, workload))
            except Exception:
                self._timed("stop_s", deployment.stop)
                raise
            deployment.notes["server_cpus"] = cpus
        return deployment

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
        if self.benchmark.kind == "scenario":
            return self._measure_scenario(ctx, mode, step, row, keep)
        group = self._group_key(step)
        try:
            deployment = self._deploy(ctx, mode, step, group)
        except ModeUnavailable as exc:
            return [], self._finish(row, "skipped", str(exc))
        if self.benchmark.kind == "host":
            deployment.notes.update(self.benchmark.calibrate(step.variant, deployment.probe_output))
        samples: list[dict] = []
        kept = False
        try:
            client = deployment.client_host(self.inv, step.path)
            address = deployment.target(step.path)
            row.update(server_host=deployment.server.name, client_host=client.name)
            binary = self.benchmark.main_binary(step.variant)
            if deployment.image is not None:
                image = deployment.image
                row.update(image=image.tag, image_digest=image.digest)
                row["binary_sha256"] = image.sha256_of(binary)
            else:
                row["binary_sha256"] = self.binary_sha[deployment.server.name][binary]
            run_client = partial(self._run_client, ctx, deployment, client, address, step, row)
            hosts = list(dict.fromkeys([deployment.server, client]))  # a window's, watched
            measured = Window(self.profile.seconds, self.profile.omit_seconds, self.profile.count)
            warm_window = Window(
                self.profile.warmup_seconds, 0.0, self.profile.warmup_count, warmup=True
            )
            bench = self.benchmark
            folded = bench.folded(step.variant, warm_window, measured) if (
                self.profile.warms_up) else None  # fmt: skip
            if folded is not None:
                # One client run holds the warm-up and then the first window (its first part
                # flagged): a tool start and its fixed time fewer per step.
                kept_share = measured.count / folded.count if folded.count else 1.0
                raw, command = self._watch(ctx, hosts, 1, partial(
                    run_client, folded, retry=True, kept=kept_share))
                warm, window = self._parse(step, 1, raw, row, partial(
                    bench.split_folded, step.variant, raw, warm_window, folded))
                samples += self._records(step, 0, warm) + self._records(step, 1, window)
                row["raw_log"] = self._keep_log(step, 1, raw, {0: warm, 1: window})
                first = 2
            elif self.profile.warms_up:
                raw, command = run_client(warm_window, retry=True, kept=0.0)
                warm = self._parse(step, 0, raw, row, partial(
                    bench.parse, step.variant, raw, warm_window))
                samples += self._records(step, 0, warm)
                self._keep_log(step, 0, raw, {0: warm})
                first = 1
            else:  # the profile asks for no warm-up: the first run is the measured window
                first = 1
            for rep in range(first, self.profile.reps + 1):
                raw, command = self._watch(ctx, hosts, rep, partial(run_client, measured))
                window = self._parse(step, rep, raw, row, partial(
                    bench.parse, step.variant, raw, measured))
                samples += self._records(step, rep, window)
                row["raw_log"] = self._keep_log(step, rep, raw, {rep: window})
            row["command"] = command
            row["watch"] = self._watch_record()
            if deployment.notes or self.meta:
                row["notes"] = json.dumps({**self.meta, **deployment.notes}, sort_keys=True)
            if keep:
                self._kept, kept = (group, deployment), True
        except ToolOutputError as exc:
            unsupported = deployment.diagnose(str(exc)) if deployment.diagnose else None
            if unsupported:
                return [], self._finish(row, "skipped", unsupported)
            return [], self._finish(row, "failed", str(exc))
        finally:
            if not kept:
                self._timed("stop_s", deployment.stop)
        return samples, self._finish(row, "ok", "")

    def _measure_scenario(self, ctx: Context, mode: Mode, step: Step, row: dict, keep: bool):
        """A scenario benchmark's step: the benchmark drives the mode's engine itself."""
        host = self.inv.servers[0]
        scenario = Scenario(
            ctx=ctx,
            mode=step.mode,
            engine=mode.engine,
            host=host,
            variant=step.variant,
            run=step.run,
            window=Window(self.profile.seconds, self.profile.omit_seconds, self.profile.count),
            warmup=Window(self.profile.warmup_seconds, 0.0, self.profile.warmup_count),
            prefix=f"co-{self.id[:10]}-{self.benchmark.name}-{step.mode}",
            labels=["--label", f"{LABEL}={self.id}"],
            engine_options=mode.engine_options(ctx),
            keep=keep,
        )
        row.update(server_host=host.name, client_host=host.name)
        try:
            binary = self.benchmark.main_binary(step.variant) if self.benchmark.binaries else ""
            if mode.engine is not None and binary:
                image = ctx.image(host, mode.engine)
                row.update(image=image.tag, image_digest=image.digest)
                row["binary_sha256"] = image.sha256_of(binary)
            elif binary:
                row["binary_sha256"] = self.binary_sha[host.name][binary]
            outcome = self._watch(ctx, [host], 1, partial(self.benchmark.measure, scenario))
            outcome.notes = {**mode.run_notes(ctx), **outcome.notes}
        except ModeUnavailable as exc:
            return [], self._finish(row, "skipped", str(exc))
        except ToolOutputError as exc:
            return [], self._finish(row, "failed", str(exc))
        row["raw_log"] = self._keep_log(step, 1, outcome.raw)
        row["command"] = outcome.command
        row["watch"] = self._watch_record()
        row["window_s"] = outcome.window_s
        if self._clock is not None:  # timed spans kept; untimed steps it needs: the tool's
            self._clock.kept_s += outcome.window_s
            self._clock.fixed_s += outcome.fixed_s
        if outcome.notes or self.meta:
            row["notes"] = json.dumps({**self.meta, **outcome.notes}, sort_keys=True)
        samples = self._records(step, 0, outcome.warmup) + self._records(step, 1, outcome.samples)
        return samples, self._finish(row, "ok", "")

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
            self._reading = watch.reading_command(study)
        before = self._timed("watch_s", partial(self._read_all, ctx, hosts))
        result = call()
        afters = self._timed("watch_s", partial(self._read_all, ctx, hosts))
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
                entry["why"] = self._decide_flag(h.name, entry)
            self._watched.append(entry)
        return result

    def _decide_flag(self, host: str, entry: dict) -> str:
        """Why the window is flagged on ``host`` ("" when it is not), by params.yaml's
        thresholds; the probe is compared with its median on the host in this session."""
        probes = self._probes.setdefault(host, [])
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
