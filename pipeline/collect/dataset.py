"""A campaign's crash-safe dataset: parquet parts committed per step, folded into tables.

Each measured step is written at once as its own pair of parquet parts (samples, then the runs
row that commits them), so an interrupted campaign resumes where it stopped and never measures a
step twice. At the end of a session the parts are folded into the dataset's tables and deleted
(``Dataset.consolidate``); a resumed campaign reads what it has from both.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.collect.plan import Step
from pipeline.collect.session import duty_cycle
from pipeline.data import schema

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
