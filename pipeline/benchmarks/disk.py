"""`disk`: fio sequential 1 MiB read/write (MiB/s) and random 4 KiB read/write (IOPS) in each
storage mode (pipeline/collect/modes/storage.py, plus `native`), and in the container layer
under the other OCI runtimes (docker-crun, docker-gvisor: docker-overlay2's storage, where
gVisor's file access goes through its gofer), and in a Kubernetes pod's container layer
(k8s-pod: fio run by `kubectl exec` in an idle pod, on the node's containerd and its overlayfs
snapshotter).

The fio command line is byte-identical in every mode: the test file is always
``DISK_DIR/fio.dat``; what differs is what that path is (a directory on the host's file
system, the container's writable layer, a bind mount, a named volume, fuse-overlayfs). fio
creates the directory itself when it is missing, so a container needs nothing prepared.

Direct I/O: one policy for every mode, ``--direct=1`` (O_DIRECT). Buffered sequential reads
of a file this small measure the page cache, not the storage, and buffered writes measure
memory until writeback. Every mode here accepts O_DIRECT; whether it reaches the disk is a
property of the storage, and the storage modes record it (fuse-overlayfs accepts O_DIRECT but
writes through the host's page cache: see the run notes, ``direct_io``). ``--invalidate=1``
also drops the file from the page cache before each run.

Samples: with ``--status-interval=1`` fio prints a JSON report every second with cumulative
I/O counters and the job's I/O time (``job_runtime``, ms, which starts after fio has laid out
its test file, so the layout never enters a sample). Consecutive reports are differenced; an
interval counts only when I/O ran through all of it, so the partial first second and the
final report (partial last second) are dropped. A run lasts one tail second longer than its
window so the window's last whole second is always reported.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from pipeline.benchmarks.base import Benchmark, Sample, ToolOutputError, Window
from pipeline.capabilities import serving
from pipeline.hosts import STORAGE_DIR

FIO = "/usr/bin/fio"
# The test directory, the same path in every mode. Under a directory the campaign's cleanup
# empties (pipeline.collect.modes.base.SCRATCH_DIR), so a crash leaves nothing behind for long.
DISK_DIR = STORAGE_DIR
TEST_FILE = f"{DISK_DIR}/fio.dat"
# One job, queue depth 16 through libaio: enough to keep a virtual disk busy on 2 cores.
IODEPTH = 16
MIB = 2**20


@dataclass(frozen=True)
class Variant:
    rw: str  # fio's --rw
    bs: str  # block size
    direction: str  # which counters of fio's report: read | write
    metric: str
    unit: str


VARIANTS = {
    "seqread": Variant("read", "1M", "read", "disk_read_mib_per_s", "MiB/s"),
    "seqwrite": Variant("write", "1M", "write", "disk_write_mib_per_s", "MiB/s"),
    "randread": Variant("randread", "4k", "read", "disk_read_iops", "IOPS"),
    "randwrite": Variant("randwrite", "4k", "write", "disk_write_iops", "IOPS"),
}


class _MetricOfVariant(str):
    """The campaign's progress line formats ``summary_metric`` with the variant; each variant
    here has its own metric."""

    def format(self, *args: object, variant: str = "", **kwargs: object) -> str:
        return VARIANTS[variant].metric


def variant(name: str) -> Variant:
    if name not in VARIANTS:
        raise ValueError(f"disk variant must be one of {sorted(VARIANTS)}, got {name!r}")
    return VARIANTS[name]


def run_seconds(window: Window) -> int:
    """fio's --runtime: the window and its omitted start, plus the tail second (docstring)."""
    return max(1, math.ceil(window.seconds + window.omit_seconds)) + 1


class Disk(Benchmark):
    title = "Disk"
    description = "fio disk I/O"
    variant_titles = {"seqread": "sequential read", "seqwrite": "sequential write",
                      "randread": "random read", "randwrite": "random write"}  # fmt: skip
    metric_titles = {"disk_read_mib_per_s": "read MiB/s", "disk_write_mib_per_s": "write MiB/s",
                     "disk_read_iops": "read IOPS", "disk_write_iops": "write IOPS"}  # fmt: skip
    analysis = "host"
    tables = ("disk",)
    margin = "disk"
    name = "disk"
    tool = "fio"
    kind = "host"
    binaries = (FIO,)
    paths = ("host",)
    modes = serving(name)
    variants = tuple(VARIANTS)
    summary_metric = _MetricOfVariant("disk")
    # Native fio leaves its test directory on the host: the native mode removes it before and
    # after each step (the storage modes remove theirs in their Deployment's stop).
    server_scratch = (DISK_DIR,)
    options = {"file_mib": 64}  # size of the test file; part of the campaign's identity

    def client_argv(
        self, variant_name: str, address: str, window: Window, path: str = "host"
    ) -> list[str]:
        v = variant(variant_name)
        return [
            FIO,
            f"--name=disk-{variant_name}",
            f"--filename={TEST_FILE}",
            f"--rw={v.rw}",
            f"--bs={v.bs}",
            f"--size={int(self.options['file_mib'])}M",
            "--direct=1",
            "--invalidate=1",
            "--ioengine=libaio",
            f"--iodepth={IODEPTH}",
            "--numjobs=1",
            "--randrepeat=1",
            "--time_based",
            f"--runtime={run_seconds(window)}",
            "--status-interval=1",
            "--output-format=json",
        ]

    def client_timeout(
        self, window: Window, path: str = "host", variant: str | None = None
    ) -> float:
        # the layout of a large file and a container start come on top of the run
        return run_seconds(window) + 120 + int(self.options["file_mib"]) / 50

    def load_seconds(self, window: Window, path: str = "host") -> float:
        return float(run_seconds(window))

    def version_argv(self) -> list[str]:
        return [FIO, "--version"]

    def probe_argv(self, variant_name: str) -> list[str]:
        """A run of a few I/Os with the variant's engine and flags (libaio, O_DIRECT) on a
        small file: whether fio works at all in a mode (docker-gvisor)."""
        v = variant(variant_name)
        return [FIO, "--name=probe", f"--filename={DISK_DIR}/probe.dat", f"--rw={v.rw}",
                f"--bs={v.bs}", "--size=4M", "--direct=1", "--ioengine=libaio",
                f"--iodepth={IODEPTH}", "--output-format=terse"]  # fmt: skip

    def format_value(self, value: float) -> str:
        return f"{value:,.0f}"

    def parse(self, variant_name: str, raw: str, window: Window | None = None) -> list[Sample]:
        return interval_samples(raw, variant(variant_name), window)


def split_reports(raw: str) -> tuple[list[dict], list[str]]:
    """fio's JSON documents (one per status interval, then the final one) and the other lines
    (fio's messages: errors, warnings, and the engine's own on a merged stderr)."""
    decoder = json.JSONDecoder()
    docs: list[dict] = []
    messages: list[str] = []
    pos = 0
    while pos < len(raw):
        end = raw.find("\n", pos)
        end = len(raw) if end < 0 else end
        if raw.startswith("{", pos):
            try:
                doc, stop = decoder.raw_decode(raw, pos)
            except json.JSONDecodeError as exc:
                raise ToolOutputError(f"unreadable fio JSON report: {exc}") from exc
            docs.append(doc)
            pos = stop
            continue
        line = raw[pos:end].strip()
        if line:
            messages.append(line)
        pos = end + 1
    return docs, messages


def _job(doc: dict) -> dict:
    jobs = doc.get("jobs") or []
    if len(jobs) != 1:
        raise ToolOutputError(f"fio report with {len(jobs)} jobs, expected one")
    return jobs[0]


def interval_samples(raw: str, v: Variant, window: Window | None) -> list[Sample]:
    """One sample per whole second of I/O in the window (module docstring). ``t_ns`` is each
    interval's start on fio's I/O clock relative to the first kept one. Without a window every
    whole interval is kept."""
    docs, messages = split_reports(raw)
    said = " | ".join(messages)[-600:] or "(no messages)"
    if not docs:
        raise ToolOutputError(f"fio printed no report: {said}")
    for doc in docs:
        if _job(doc).get("error"):
            raise ToolOutputError(f"fio job failed (error {_job(doc)['error']}): {said}")
    reports = [(_job(d)["job_runtime"], _job(d)[v.direction]) for d in docs[:-1]]  # [-1]: final
    whole = []
    for (t0, a), (t1, b) in zip(reports, reports[1:], strict=False):
        if t0 <= 0 or t1 <= t0:  # I/O had not started at the interval's start
            continue
        seconds = (t1 - t0) / 1000
        done = b["io_bytes"] / MIB if v.unit == "MiB/s" else b["total_ios"]
        before = a["io_bytes"] / MIB if v.unit == "MiB/s" else a["total_ios"]
        whole.append((t0, (done - before) / seconds))
    if window is not None:
        wanted = max(1, math.ceil(window.seconds))
        whole = [(t, x) for t, x in whole if t >= window.omit_seconds * 1000][:wanted]
        if len(whole) != wanted:
            raise ToolOutputError(
                f"fio reported {len(whole)} of the window's {wanted} whole seconds of I/O "
                f"({len(docs)} reports); {said}"
            )
    if not whole:
        raise ToolOutputError(f"fio reported no whole second of I/O: {said}")
    first = whole[0][0]
    return [
        Sample(metric=v.metric, unit=v.unit, sample=i, value=x, t_ns=(t - first) * 10**6)
        for i, (t, x) in enumerate(whole)
    ]
