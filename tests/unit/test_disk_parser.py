"""The disk benchmark's fio parser on verbatim fio 3.33 output (tests/unit/data/fio-*), its
command line, and the storage modes' commands without hosts."""

import json
import re
import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipeline.benchmarks import BENCHMARKS, ToolOutputError, Window
from pipeline.benchmarks.disk import TEST_FILE, Disk
from pipeline.collect import engine_api, inventory
from pipeline.collect.images import ToolImage
from pipeline.collect.modes import MODES, NETWORK_MODES, Context, Workload
from pipeline.collect.modes.base import LABEL, SCRATCH_DIR, cleanup_host, leftovers
from pipeline.collect.modes.storage import STORAGE_DIR, direct_io_note, parse_fincore
from tests.unit.fake_engine import Engine

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[2]
MIB = 2**20


def _raw(name: str) -> str:
    return (DATA / name).read_text()


def _docs(raw: str) -> list[dict]:
    """The pretty-printed documents, cut at their unindented braces (not the parser's way)."""
    return [json.loads(m) for m in re.findall(r"^\{$.*?^\}$", raw, re.M | re.S)]


def _expected(raw: str, direction: str, counter: str, scale: float) -> list[float]:
    jobs = [d["jobs"][0] for d in _docs(raw)[:-1]]  # the last document is the final report
    rates = []
    for a, b in zip(jobs, jobs[1:], strict=False):
        if a["job_runtime"] > 0:
            seconds = (b["job_runtime"] - a["job_runtime"]) / 1000
            rates.append((b[direction][counter] - a[direction][counter]) / scale / seconds)
    return rates


def test_sequential_read_is_one_mib_per_s_sample_per_whole_second_of_io():
    raw = _raw("fio-seqread-native.json")
    samples = Disk().parse("seqread", raw, Window(seconds=3, omit_seconds=0))
    expected = _expected(raw, "read", "io_bytes", MIB)
    assert len(expected) == 3  # --runtime=4: reports at 0.7, 1.7, 2.7, 3.7 s of I/O, then final
    assert [s.value for s in samples] == pytest.approx(expected)
    assert {(s.metric, s.unit) for s in samples} == {("disk_read_mib_per_s", "MiB/s")}
    assert [s.t_ns for s in samples] == [0, 1_000_000_000, 2_000_000_000]
    # fio's own average over the whole run agrees with the per-second rates
    final = _docs(raw)[-1]["jobs"][0]["read"]["bw_bytes"] / MIB
    mean = sum(s.value for s in samples) / len(samples)
    assert abs(mean / final - 1) < 0.15, (mean, final)
    assert 100 < mean < 20_000  # MiB/s: a physically possible direct read


def test_the_omitted_start_is_dropped_and_time_restarts_at_zero():
    raw = _raw("fio-seqread-native.json")
    every = Disk().parse("seqread", raw, Window(seconds=3, omit_seconds=0))
    later = Disk().parse("seqread", raw, Window(seconds=2, omit_seconds=1))
    assert [s.value for s in later] == [s.value for s in every[1:]]
    assert [s.sample for s in later] == [0, 1] and later[0].t_ns == 0


@pytest.mark.parametrize(
    ("name", "variant", "direction", "metric"),
    [
        ("fio-randread-docker-overlay2.json", "randread", "read", "disk_read_iops"),
        ("fio-randwrite-native.json", "randwrite", "write", "disk_write_iops"),
    ],
)
def test_random_variants_are_iops_per_second(name, variant, direction, metric):
    raw = _raw(name)
    samples = Disk().parse(variant, raw, Window(seconds=2))
    assert [s.value for s in samples] == pytest.approx(_expected(raw, direction, "total_ios", 1))
    assert {(s.metric, s.unit) for s in samples} == {(metric, "IOPS")}
    final = _docs(raw)[-1]["jobs"][0][direction]["iops"]
    mean = sum(s.value for s in samples) / len(samples)
    assert abs(mean / final - 1) < 0.35, (mean, final)
    assert 500 < mean < 2_000_000  # 4 KiB IOPS at queue depth 16 on any disk


def test_sequential_write_counts_written_bytes():
    raw = _raw("fio-seqwrite-docker-overlay2.json")
    samples = Disk().parse("seqwrite", raw, Window(seconds=2))
    assert [s.value for s in samples] == pytest.approx(_expected(raw, "write", "io_bytes", MIB))
    assert samples[0].metric == "disk_write_mib_per_s"
    assert Disk().parse("seqread", raw, None)[0].value == 0  # nothing was read


def test_a_window_longer_than_the_run_is_an_error():
    with pytest.raises(ToolOutputError, match="2 of the window's 5 whole seconds"):
        Disk().parse("randwrite", _raw("fio-randwrite-native.json"), Window(seconds=5))


def test_a_missing_directory_fails_with_fios_message():
    with pytest.raises(ToolOutputError, match="fio printed no report: fio: /nonexistent/dir is"):
        Disk().parse("seqread", _raw("fio-missing-directory.txt"), Window(seconds=2))


def test_a_file_fio_cannot_create_fails_with_fios_message():
    # fio still prints a report (no I/O, error 0): the message on stderr is the reason
    raw = _raw("fio-read-only-filesystem.txt")
    with pytest.raises(ToolOutputError, match="failed to create dir .*Read-only file system"):
        Disk().parse("seqwrite", raw, Window(seconds=2))


def test_a_failed_job_is_an_error_even_with_io():
    doc = _docs(_raw("fio-randwrite-native.json"))[-1]
    doc["jobs"][0]["error"] = 5
    with pytest.raises(ToolOutputError, match="error 5"):
        Disk().parse("randwrite", json.dumps(doc), None)


def test_the_command_is_the_same_direct_io_run_in_every_mode():
    bench = Disk()
    argv = bench.client_argv("randread", "ignored", Window(seconds=5, omit_seconds=1))
    assert argv[0] == "/usr/bin/fio" and f"--filename={TEST_FILE}" in argv
    assert TEST_FILE.startswith(SCRATCH_DIR + "/") and TEST_FILE.startswith(STORAGE_DIR + "/")
    assert {"--direct=1", "--rw=randread", "--bs=4k", "--size=64M", "--runtime=7"} <= set(argv)
    assert {"--status-interval=1", "--output-format=json", "--time_based"} <= set(argv)
    bench.configure({"file_mib": 256})
    assert "--size=256M" in bench.client_argv("seqwrite", "", Window(seconds=2))
    with pytest.raises(ValueError, match="no option"):
        bench.configure({"file_gib": 1})
    assert bench.load_seconds(Window(seconds=5, omit_seconds=1)) == 7
    assert bench.summary_metric.format(variant="seqwrite") == "disk_write_mib_per_s"
    assert bench.summary_metric.format(variant="randread") == "disk_read_iops"


def test_disk_is_a_host_benchmark_of_storage_runtime_and_pod_modes_only():
    bench = BENCHMARKS["disk"]()
    assert bench.kind == "host" and bench.paths == ("host",)
    assert bench.modes[0] == "native" and set(bench.modes) <= set(MODES)
    assert bench.variants == ("seqread", "seqwrite", "randread", "randwrite")
    runtimes = {"docker-crun", "docker-gvisor"}  # the container layer, another OCI runtime
    pods = {"k8s-pod"}  # a pod's container layer, fio through kubectl exec
    assert runtimes | pods <= set(bench.modes)
    assert all(MODES[m].cluster == "kubernetes" for m in pods)
    for mode in set(bench.modes[1:]) - runtimes - pods:
        assert MODES[mode].paths == ("host",) and mode not in NETWORK_MODES
    assert bench.server_scratch == (STORAGE_DIR,)


# ---- storage modes, without hosts ----------------------------------------------------------


class Session:
    """Answers every command with status 0 and ``stdout``; records them."""

    def __init__(self, stdout: str = "") -> None:
        self.stdout = stdout
        self.commands: list[str] = []

    def run(self, command, check=True, **kwargs):
        self.commands.append(command if isinstance(command, str) else shlex.join(command))
        return SimpleNamespace(status=0, stdout=self.stdout, stderr="")


def _ctx(session: Session) -> Context:
    inv = inventory.load(ROOT / "inventory/lab.yaml", known_modes=MODES, check_files=False)
    ctx = Context(inventory=inv, pool={name: session for name in inv.hosts}, campaign="c0ffee")
    ctx.images[("node1", "docker")] = ToolImage("node1", "tools:docker", "sha256:1", {})
    return ctx


WORKLOAD = Workload(name="disk-seqwrite", argv=("/usr/bin/fio", "--version"), port=0)


def test_bind_mounts_the_host_directory_at_the_same_path_and_removes_it():
    session = Session(stdout="0 16777216\n")
    deployment = MODES["docker-bind"].foreground(_ctx(session), WORKLOAD)
    assert session.commands[0] == f"mkdir -p {STORAGE_DIR}"
    assert "bypassed the host page cache" in deployment.notes["direct_io"]
    command = deployment.client_command(["/usr/bin/fio", "--version"])
    assert f"--mount type=bind,source={STORAGE_DIR},target={STORAGE_DIR} " in command
    assert command.endswith("tools:docker /usr/bin/fio --version 2>&1")
    assert f"--label {LABEL}=c0ffee" in command
    before = len(session.commands)
    deployment.stop()
    assert session.commands[before:][-1] == f"rm -rf -- {STORAGE_DIR}"


def test_volume_is_created_labelled_mounted_and_removed():
    session = Session(stdout="ext4\n")
    ctx = _ctx(session)
    name = "co-c0ffee-disk-seqwrite-docker-volume"
    # the volume `docker volume create` makes, as the engine's API then shows it
    engine = Engine()
    engine.add_volume(name, {LABEL: "c0ffee"})
    ctx.apis[("node1", "docker")] = engine_api.connect(engine.transport, timeout=10)
    deployment = MODES["docker-volume"].foreground(ctx, WORKLOAD)
    assert f"docker volume create --label {LABEL}=c0ffee {name}" in session.commands
    where = f"/var/lib/docker/volumes/{name}/_data"
    assert deployment.notes["storage"] == f"named volume (driver local) at {where}"
    command = deployment.client_command(["/usr/bin/fio"])
    assert f"--mount type=volume,source={name},target={STORAGE_DIR} " in command
    deployment.stop()
    assert session.commands[-1] == f"docker volume rm --force {name}"


def test_native_removes_the_test_directory_before_and_after():
    session = Session()
    workload = Workload(name="disk-seqread", argv=("/usr/bin/fio",), port=0, scratch=(STORAGE_DIR,))
    deployment = MODES["native"].foreground(_ctx(session), workload)
    assert session.commands == [f"rm -rf -- {STORAGE_DIR}"]
    assert deployment.client_command(["/usr/bin/fio", "-v"]) == "/usr/bin/fio -v"
    deployment.stop()
    assert session.commands == [f"rm -rf -- {STORAGE_DIR}"] * 2


def test_direct_io_notes_say_whether_the_page_cache_was_bypassed():
    assert parse_fincore("0 16777216\n") == (0, 16777216)
    assert parse_fincore("16M 16M") == (0, 0)  # not --bytes: unreadable, said so below
    assert "NOT bypassed" in direct_io_note(16777216, 16777216)
    assert "bypassed the host page cache (0 of 16777216" in direct_io_note(0, 16777216)
    assert "not found" in direct_io_note(0, 0)


def test_cleanup_and_leftovers_cover_volumes_and_test_files():
    session = Session(stdout="co-bench:x:60777:60777::/home/co-bench:/bin/sh\n")  # getent
    ctx = _ctx(session)
    # Docker's volumes through its API (pipeline/collect/engine_api.py): a miniature engine
    engine = Engine()
    engine.add_volume("co-c0ffee-disk-seqwrite-docker-volume", {LABEL: "c0ffee"})
    ctx.apis[("node1", "docker")] = engine_api.connect(engine.transport, timeout=10)
    ctx.apis[("node1", "rootless-docker")] = engine_api.connect(Engine().transport, timeout=10)
    assert "volume:co-c0ffee-disk-seqwrite-docker-volume" in leftovers(
        ctx, ctx.inventory.hosts["node1"])  # fmt: skip
    cleanup_host(ctx, ctx.inventory.hosts["node1"])
    clean = session.commands[-1]
    found = leftovers(ctx, ctx.inventory.hosts["node1"])
    assert engine.volumes == {} and not [f for f in found if f.startswith("volume:")]
    found = session.commands[-1]
    assert f"rm -rf -- {SCRATCH_DIR}/*" in clean and f"ls -d {SCRATCH_DIR}/*" in found
    assert "--storage-opt overlay.mount_program=/usr/bin/fuse-overlayfs volume rm -f" in clean


def test_profiles_give_disk_its_runs_window_and_file():
    import yaml

    profiles = {p: yaml.safe_load((ROOT / f"conf/profiles/{p}.yaml").read_text())
                for p in ("smoke", "demo", "study", "publication")}
    for profile in profiles.values():
        section = profile["disk"]
        planned = set(section) & {"modes", "paths"}  # a profile may plan fewer (the demo)
        assert set(section) - planned == {"runs", "seconds", "omit_seconds", "warmup_seconds",
                                          "file_mib"}
        assert section["seconds"] > section["omit_seconds"] >= 0 and section["runs"] >= 1
    assert profiles["smoke"]["disk"]["file_mib"] <= 64  # bounded: CI writes it often
