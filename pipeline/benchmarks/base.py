"""The benchmark contract: what to run on the server and the client, and how to read the output.

A benchmark knows nothing about modes or hosts. For each of its variants (e.g. `tcp`, `udp`) it
gives argv lists (run as they are natively, or inside the tool image by a mode) and turns the
client's raw output into tidy samples. A new benchmark is a subclass in its own module (with
the declarations below), its name in `pipeline/benchmarks/__init__.py` and its entry in each
profile (conf/profiles/*.yaml).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any


class ToolOutputError(ValueError):
    """The tool ran but its output says it failed, or it is not the format we expect."""


@dataclass(frozen=True)
class Sample:
    metric: str
    unit: str
    sample: int
    value: float
    t_ns: int | None = None


@dataclass(frozen=True)
class Window:
    """One measured (or warm-up) window: its length, what it discards at its start, and for
    count-based tools how many samples it takes."""

    seconds: float
    omit_seconds: float = 0.0
    count: int | None = None
    warmup: bool = False  # the flagged warm-up before the measured windows


@dataclass
class Scenario:
    """One step of a scenario benchmark: where it runs and what it may use.

    ``ctx`` is the campaign's ``pipeline.collect.modes.Context`` (``ctx.pool[host.name].run(...)``
    runs commands on a host, ``ctx.image(host, engine)`` is the engine's tool image there);
    ``engine`` is the mode's container engine (``None`` for native). Everything the step
    creates must be named from ``prefix`` and carry ``labels`` (``--label`` options), so the
    campaign's cleanup finds it after a crash; the benchmark removes it itself on the way out.
    """

    ctx: Any
    mode: str
    engine: str | None
    host: Any  # the first server (pipeline.collect.inventory.Host)
    variant: str
    run: int
    window: Window  # the profile's measured window (time-bounded benchmarks use it)
    warmup: Window
    prefix: str  # e.g. co-<campaign[:10]>-coldstart-podman
    labels: list[str] = field(default_factory=list)
    # Options every container's `run` takes in this mode (an OCI runtime: `--runtime crun`).
    engine_options: list[str] = field(default_factory=list)
    # The next step is of the same ``server_group``: what the group shares may stay up for it
    # (the benchmark keeps it until that step, ``release()`` or a step of another group).
    keep: bool = False


@dataclass
class Outcome:
    """What one scenario step measured: warm-up samples (flagged) and measured samples."""

    samples: list[Sample]
    warmup: list[Sample] = field(default_factory=list)
    raw: str = ""  # the step's own log (commands and their output), kept compressed
    command: str = ""  # what was run, for the runs table
    window_s: float = 0.0  # seconds spent measuring (the duty cycle's numerator)
    # Seconds of untimed steps the scenario itself needs between its timed spans (a removal
    # between two starts), as the scenario measured them: the tool-fixed part of the split.
    fixed_s: float = 0.0
    notes: dict[str, str] = field(default_factory=dict)


class Benchmark:
    name: str = ""
    # What the rest of the study reads about a benchmark (the stage generator, the params check,
    # the analysis and the article), declared once here.
    title: str = ""  # as a section heading says it
    description: str = ""  # what was run, as a figure's or table's caption says it
    variant_titles: dict[str, str] = {}  # variant -> how tables and figures name it
    metric_titles: dict[str, str] = {}  # metric -> how tables and figures name it
    analysis: str = ""  # the analysis that summarises it (pipeline/stages.py ANALYSES)
    tables: tuple[str, ...] = ()  # the tables its analysis writes: reports/tables/<stem>.*
    margin: str | None = None  # its key in params.yaml's common.margins (equivalence verdicts)
    tool: str = ""
    binaries: tuple[str, ...] = ()  # what the tool image must contain, as absolute host paths
    trees: tuple[str, ...] = ()  # directories the tool image holds whole (a source tree)
    port: int = 0
    # "network": a server started by a mode and a client on another host (Mode.start).
    # "host": the tool runs to completion inside the mode on the server host and reports its
    # own rate (Mode.foreground), only in ``modes``, on the one path "host".
    # "scenario": the benchmark drives the mode's engine itself (start containers, scale a
    # service) in ``measure(Scenario)``, only in ``modes``, on the one path "host".
    kind: str = "network"
    modes: tuple[str, ...] | None = None  # host benchmarks: the modes they are measured in
    paths: tuple[str, ...] = ("dc", "local")
    variants: tuple[str, ...] = ("default",)
    summary_metric: str = ""  # the per-window value in the progress line; may use {variant}
    # Files the repository ships to every host before a campaign (remote path -> local path,
    # relative to the repository): a load generator, a server config. They go into the tool
    # image too, at the same path, so containers run them bit-identically.
    uploads: dict[str, str] = {}
    # Repository files the benchmark reads to make what it runs (a config filled in per step),
    # besides its uploads: part of its campaign's code digest, like its module.
    templates: tuple[str, ...] = ()
    # Count-based tools whose every output row is one sample: a window is a count of samples,
    # and one run takes the warm-up and the first measured window (``folded``).
    warmup_in_window: bool = False
    # Seconds every client run spends outside its load window that the tool itself takes and
    # no harness can remove (a fixed start-up sleep, a span it discards): what caps the duty
    # cycle (harness/duty_cycle.py).
    tool_fixed_seconds: float = 0.0
    # Window settings the tool reads as whole seconds (a fraction would be cut silently):
    # params.py refuses a fraction for them.
    whole_seconds: tuple[str, ...] = ()
    # Paths the server leaves on the host's filesystem (pid and temp files). Modes that run it
    # as a host process remove them before and after, so a run as root cannot leave files a
    # later run as the rootless user may not replace.
    server_scratch: tuple[str, ...] = ()

    # Process names of the benchmark's own work besides its binaries and uploads (the
    # children a tool starts), for the interference watch (pipeline/collect/watch.py).
    watch_extra: tuple[str, ...] = ()

    # Settings a collection notebook passes (e.g. coldstart's number of starts): they are part
    # of the campaign's identity, so a changed setting starts a new campaign.
    options: dict[str, Any] = {}

    def configure(self, options: dict[str, Any]) -> None:
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise ValueError(
                f"{self.name} has no option(s) {unknown}; it takes {sorted(self.options)}"
            )
        self.options = {**self.options, **options}

    def measure(self, scenario: Scenario) -> Outcome:  # pragma: no cover - contract
        """Scenario benchmarks: run one step and return what it measured. Raise
        ``ToolOutputError`` for a failed measurement, ``ModeUnavailable`` for a mode that
        turns out not to run here; remove what the step created before returning."""
        raise NotImplementedError

    def watch_commands(self) -> set[str]:
        """What the interference watch counts as this benchmark's own processes: its
        binaries, uploads and ``watch_extra``, by the names the kernel gives them (15
        characters at most); an uploaded Python script runs as python3."""
        files = (*self.binaries, *self.uploads, *self.watch_extra)
        names = {f.rsplit("/", 1)[-1][:15] for f in files}
        return names | ({"python3"} if any(f.endswith(".py") for f in self.uploads) else set())

    def prepare(self, session) -> None:
        """Read, once per campaign, what the commands depend on from the server host (e.g. its
        CPU count); ``session`` runs commands there."""

    def probe_argv(self, variant: str) -> list[str]:
        """Host benchmarks: a short run of the tool with the features a variant's runs use (an
        I/O engine, a system call), which a mode may run first to find out whether the tool
        works there at all (docker-gvisor); by default the tool's version."""
        return self.version_argv()

    def calibrate(self, variant: str, probe_output: str) -> dict[str, str]:
        """Host benchmarks, before each step: what the step's runs depend on from what the
        mode's run of ``probe_argv`` printed ("" when the mode ran none); returns notes."""
        return {}

    def main_binary(self, variant: str) -> str:
        """The binary a variant measures (its sha256 goes into the runs table)."""
        return self.binaries[0]

    def image_paths(self) -> list[str]:
        return list(dict.fromkeys([*self.binaries, *self.trees, *self.uploads]))

    def server_argv(self, variant: str) -> list[str]:  # pragma: no cover - contract
        raise NotImplementedError

    def server_udp(self, variant: str) -> bool:
        """Whether the server must be reachable over UDP (published ports, firewalls)."""
        return False

    def server_group(self, variant: str) -> str:
        """Variants with the same group are served by one server (the same ``server_argv``):
        within a run, a mode's server starts once and serves them all, on every path. A
        scenario benchmark's group is what its steps share (lb: the replicas behind the
        balancers), kept between them with ``Scenario.keep`` and removed by ``release``."""
        return variant

    def release(self) -> None:
        """The end of the loop (also on errors and Ctrl-C): remove what a scenario step kept for
        a next step that never came, and wait until what the steps removed is gone. Benchmarks
        that keep nothing have nothing to do."""

    def client_argv(
        self, variant: str, address: str, window: Window, path: str = "dc"
    ) -> list[str]:  # pragma: no cover - contract
        """The client's argv; ``path`` lets a tool change method on a long path."""
        raise NotImplementedError

    def client_timeout(
        self, window: Window, path: str = "dc", variant: str | None = None
    ) -> float:
        """Seconds one client run may take before it counts as hung."""
        return window.seconds + window.omit_seconds + 60

    def load_seconds(self, window: Window, path: str = "dc") -> float:
        """Seconds one client run spends inside its load window (omitted start included, the
        tool's own start-up excluded): the numerator of the campaign's duty cycle."""
        return window.seconds + window.omit_seconds

    def measured_seconds(self, variant: str, raw: str, window: Window, path: str) -> float:
        """Seconds the run just made spent inside its load window, from its output when the
        window's length is the tool's own (a compile); by default ``load_seconds``."""
        return self.load_seconds(window, path)

    def parse(
        self, variant: str, raw: str, window: Window | None = None
    ) -> list[Sample]:  # pragma: no cover - contract
        raise NotImplementedError

    def folded(self, variant: str, warmup: Window, measured: Window) -> Window | None:
        """The one client run that holds the warm-up and then the first measured window, for a
        tool whose output keeps them apart (``split_folded``); None: the warm-up is a run of its
        own. A count-based tool (``warmup_in_window``) runs ``warmup.count`` samples more."""
        if self.warmup_in_window and warmup.count and measured.count:
            return Window(measured.seconds, 0.0, warmup.count + measured.count)
        return None

    def split_folded(
        self, variant: str, raw: str, warmup: Window, folded: Window
    ) -> tuple[list[Sample], list[Sample]]:
        """The warm-up's samples and the measured window's, from the output of the ``folded``
        run: a count-based tool's first ``warmup.count`` samples are the warm-up's; the
        window's are numbered and timed from its own first sample."""
        parsed = self.parse(variant, raw, folded)
        return parsed[: warmup.count], renumber(parsed[warmup.count :])

    def log_residue(self, raw: str, windows: list[tuple[Any, Any]]) -> bytes | None:
        """What of the client's output ``raw`` the samples parsed from it cannot rebuild, for
        tools whose output is mostly the samples themselves (a per-sample log); None keeps the
        output as it is. ``windows``: (values, t_ns) of each window the output holds, in order,
        as the samples table stores them."""
        return None

    def rebuild_log(self, residue: bytes, windows: list[tuple[Any, Any]]) -> str:
        """The output ``log_residue`` made ``residue`` of, from it and the same windows."""
        raise NotImplementedError(f"{self.name} keeps its output as it is")

    def version_argv(self) -> list[str]:  # pragma: no cover - contract
        raise NotImplementedError

    def tool_version(self, output: str) -> str:
        """The runs table's tool version from ``version_argv``'s output: its first line, and
        for a tool the study builds itself, what the build changed."""
        return output.splitlines()[0].strip()

    def format_value(self, value: float) -> str:
        return f"{value:g}"

    def is_connect_error(self, raw: str) -> bool:
        """True when the client could not reach a server that is still starting."""
        return False


def renumber(samples: list[Sample]) -> list[Sample]:
    """Samples after a warm-up, indexed and timed from the first of them."""
    t0 = samples[0].t_ns if samples and samples[0].t_ns is not None else None
    return [
        replace(s, sample=i, t_ns=None if t0 is None or s.t_ns is None else s.t_ns - t0)
        for i, s in enumerate(samples)
    ]
