"""`cpu`: sysbench cpu (primes up to 20000), variants `1thread` and `allthreads`, and a real
compile, variant `compile`.

`allthreads` runs one thread per CPU of the server host (``nproc`` there, read once per
campaign in ``prepare``), the same count in every mode, and the count is in the recorded
command. Samples: ``cpu_events_per_s`` (events/s), one per one-second report interval (the
rate over that second), intervals inside the omitted start dropped. The 000 article's
sysbench cpu runs used the same prime limit.

`compile` builds Go's own source tree from scratch: ``go build -a std cmd`` (the standard
library and the toolchain, ~350 packages) with the host's Go toolchain (Debian bookworm's
golang-go: Go 1.19; its GOROOT, source tree included, is copied into the tool image, so the
container compiles the same files with the same compiler), an empty build cache
(``GOCACHE`` in a fresh temporary directory), ``CGO_ENABLED=0`` (no C compiler involved) and
``-p`` = the host's CPU count. It takes about a minute on the 2-core lab; the 000 article
compiled a Linux kernel, which takes far longer here. The packages are the option
``compile_packages`` (the smoke profile builds ``errors`` and its dependencies only). The
sample, ``compile_s``, is the build's wall time as measured inside the mode by ``date``
around ``go build`` (container start-up excluded); the warm-up runs ``go list -deps`` over
the same packages, which reads every package's files into the page cache without compiling.
"""

from __future__ import annotations

import re
import shlex

from pipeline.benchmarks.base import Sample, ToolOutputError, Window
from pipeline.benchmarks.sysbench import SYSBENCH, SysbenchBenchmark, interval_samples
from pipeline.capabilities import serving

MAX_PRIME = 20000
# "thds: 2 eps: 1035.52 lat (ms,95%): 2.11": eps is events per second over the interval
_EPS = re.compile(r"\beps: ([0-9.]+)")
GO = "/usr/bin/go"  # Debian's golang-go: a symlink into the versioned GOROOT
# What the compile script runs besides go; the same files natively and in the image.
SHELL_TOOLS = ("/bin/sh", "/usr/bin/date", "/usr/bin/mktemp", "/usr/bin/rm")
_COMPILE_NS = re.compile(r"^compile_ns (\d+)$", re.MULTILINE)
# A compile's bound: `std cmd` takes ~1 min quiet and ~1.5 min loaded on the 2-core lab, and
# four times that under the instrument check's half-CPU quota.
COMPILE_TIMEOUT_S = 1200


class Cpu(SysbenchBenchmark):
    title = "CPU"
    description = "CPU: sysbench cpu (primes up to 20000) and a Go toolchain build"
    variant_titles = {"1thread": "1 thread", "allthreads": "all threads", "compile": "compile"}
    metric_titles = {"cpu_events_per_s": "events/s", "compile_s": "go build time, s"}
    analysis = "host"
    tables = ("cpu",)
    margin = "cpu"
    name = "cpu"
    modes = serving(name)
    variants = ("1thread", "allthreads", "compile")
    summary_metric = "cpu_events_per_s"
    unfolded = ("allthreads", "compile")  # a warm-up run of their own (sysbench.py)
    options = {"compile_packages": "std cmd"}
    # what `go build` starts: the toolchain's own programs, and cgo's C compiler
    watch_extra = ("compile", "asm", "link", "cgo", "vet", "buildid", "pack", "gcc", "cc1", "as",
                   "ld", "collect2")  # fmt: skip

    def __init__(self) -> None:
        self.host_cpus: int | None = None  # the server host's CPU count, set by prepare()
        self.goroot: str | None = None  # the server host's GOROOT, set by prepare()

    def prepare(self, session) -> None:
        self.host_cpus = int(session.run(["nproc"], timeout=30).stdout.strip())
        found = session.run(["readlink", "-e", GO], check=False, timeout=30)
        if found.status != 0 or not found.stdout.strip().endswith("/bin/go"):
            raise ToolOutputError(
                f"{GO} is missing on {session.host.name}: the compile workload needs Debian's "
                "golang-go (apt-get install golang-go; `make setup` installs it in the lab)"
            )
        self.goroot = found.stdout.strip()[: -len("/bin/go")]
        # GOROOT as the toolchain uses it: the binary, its tools and headers, the source tree
        self.binaries = (SYSBENCH, f"{self.goroot}/bin/go", *SHELL_TOOLS)
        self.trees = tuple(f"{self.goroot}/{d}" for d in ("src", "pkg/tool", "pkg/include"))
        self.trees += (f"{self.goroot}/VERSION",)

    def threads(self, variant: str) -> int:
        if variant == "1thread":
            return 1
        if variant == "allthreads":
            if self.host_cpus is None:
                raise RuntimeError("cpu allthreads needs the host's CPU count: call prepare()")
            return self.host_cpus
        raise ValueError(f"cpu variant must be one of {self.variants}, got {variant!r}")

    def main_binary(self, variant: str) -> str:
        return self.binaries[1] if variant == "compile" else SYSBENCH

    def compile_argv(self, warmup: bool) -> list[str]:
        """sh -c: time `go build -a` in a fresh cache (or, warming up, list the packages)."""
        if self.goroot is None or self.host_cpus is None:
            raise RuntimeError("the compile workload needs the host's GOROOT: call prepare()")
        packages = self.options["compile_packages"].split()
        go = shlex.quote(f"{self.goroot}/bin/go")
        env = 'HOME="$c" GOCACHE="$c/cache" GOPATH="$c/gopath" CGO_ENABLED=0 GOFLAGS= GO111MODULE='
        if warmup:
            work = f"{env} {go} list -deps {shlex.join(packages)} > /dev/null"
        else:
            build = f"{go} build -a -p {self.host_cpus} {shlex.join(packages)}"
            work = f"s=$(date +%s%N); {env} {build}; e=$(date +%s%N); echo compile_ns $((e - s))"
        script = (
            "set -e; c=$(mktemp -d /tmp/co-compile.XXXXXX); "
            "trap 'rm -rf \"$c\"' EXIT; trap 'exit 143' TERM INT; " + work
        )
        return ["/bin/sh", "-c", script]

    def client_argv(
        self, variant: str, address: str, window: Window, path: str = "host"
    ) -> list[str]:
        if variant == "compile":
            return self.compile_argv(window.warmup)
        return [
            SYSBENCH,
            "cpu",
            f"--cpu-max-prime={MAX_PRIME}",
            f"--threads={self.threads(variant)}",
            *self.common_options(window),
            "run",
        ]

    def client_timeout(
        self, window: Window, path: str = "host", variant: str | None = None
    ) -> float:
        """A compile runs as long as it takes (its own length), bounded by COMPILE_TIMEOUT_S."""
        if variant == "compile":
            return COMPILE_TIMEOUT_S
        return super().client_timeout(window, path, variant)

    def format_value(self, value: float) -> str:
        return f"{value:.1f}"

    def measured_seconds(self, variant: str, raw: str, window: Window, path: str) -> float:
        if variant != "compile":
            return self.load_seconds(window, path)
        found = _COMPILE_NS.findall(raw)
        return int(found[-1]) / 1e9 if found and not window.warmup else 0.0

    def parse(self, variant: str, raw: str, window: Window | None = None) -> list[Sample]:
        if variant == "compile":
            return compile_samples(raw, window)
        return interval_samples(raw, _EPS, "cpu_events_per_s", "events/s", window)


def compile_samples(raw: str, window: Window | None) -> list[Sample]:
    """The build's wall time (one sample), or none for the warm-up's package listing."""
    if window is not None and window.warmup:
        if raw.strip():  # go list's output went to /dev/null: anything printed is an error
            raise ToolOutputError(f"go list failed: {raw.strip()[-400:]}")
        return []
    found = _COMPILE_NS.findall(raw)
    if len(found) != 1:
        tail = raw.strip()[-400:] or "(no output)"
        raise ToolOutputError(f"the compile did not finish: {tail}")
    return [Sample(metric="compile_s", unit="s", sample=0, value=int(found[0]) / 1e9, t_ns=0)]
