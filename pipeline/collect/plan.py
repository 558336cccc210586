"""A campaign's plan: what it measures and in which order, fixed before anything runs.

The profile (runs, windows, warm-ups), the (mode, path, variant) cells a benchmark measures on an
inventory's modes, a seeded random order of them per run, and the campaign's identity: the same
settings, cells and code give the same campaign, which an interrupted session resumes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from pipeline.benchmarks import Benchmark
from pipeline.collect import inventory
from pipeline.collect.modes import MODES, STUDY_MODES
from pipeline.collect.steps import runner_for


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
    ``paths`` and ``variants``, when given, keep only those of the benchmark's. Each kind of
    benchmark's rule is its step runner's (``pipeline.collect.steps``)."""
    wanted = [p for p in benchmark.paths if paths is None or p in paths]
    chosen = [v for v in benchmark.variants if variants is None or v in variants]
    return runner_for(benchmark).cells(benchmark, modes, wanted, chosen)

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
    measured on each of its paths and variants, ``StepRunner.server_group``): each run measures
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



def campaign_id(environment: str, benchmark: str, profile: Profile, triples, seed: int) -> str:
    key = json.dumps([environment, benchmark, asdict(profile), triples, seed], sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:12]



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
