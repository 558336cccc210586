"""The latency benchmark's sockperf: Debian's binary less the client's 2 s start-up pause
(tools/sockperf/no_startup_pause.py), built by `make setup`; the benchmark ships and runs it."""

import hashlib
import importlib.util
import socket
import subprocess
import time
from pathlib import Path

import pytest

from pipeline.benchmarks import Window
from pipeline.benchmarks.latency import BINARY, BUILT, Latency, sockperf_seconds
from pipeline.params import load
from pipeline.stages import BUILT_FROM, all_stages

ROOT = Path(__file__).resolve().parents[2]
DEBIAN = Path("/usr/bin/sockperf")
spec = importlib.util.spec_from_file_location(
    "no_startup_pause", ROOT / "tools/sockperf/no_startup_pause.py"
)
patch = importlib.util.module_from_spec(spec)
spec.loader.exec_module(patch)


def debian_bytes() -> bytes:
    if not DEBIAN.is_file():
        pytest.skip("Debian's sockperf is not installed")
    return DEBIAN.read_bytes()


def test_the_patch_turns_every_post_warmup_sleep_into_a_nop_and_nothing_else():
    code = debian_bytes()
    sites = patch.sites(code)
    assert len(sites) == patch.SITES == 360
    patched = patch.patch(code)
    assert hashlib.sha256(patched).hexdigest() == patch.PATCHED_SHA256
    assert len(patched) == len(code)
    changed = [i for i, (a, b) in enumerate(zip(code, patched, strict=True)) if a != b]
    assert set(changed) <= {s + k for s in sites for k in range(5)}
    for at in sites:  # call sleep@plt right after `call IoHandler::warmup; mov $2,%edi`
        assert patch._calls(code, at, patch.SLEEP_PLT) and patched[at : at + 5] == patch.NOP5
        assert code[at - 5 : at] == patch.MOV_EDI_2 and patch._calls(code, at - 10, patch.WARMUP)
    assert patch.sites(patched) == []


def test_the_patch_refuses_any_other_binary():
    with pytest.raises(SystemExit, match="not Debian's sockperf 3.7-1.*apt-get install"):
        patch.patch(b"\x7fELF not sockperf")


def test_setup_built_the_binary_the_benchmark_ships():
    built = ROOT / BUILT
    assert built.is_file(), f"{built} is missing: run `make setup`"
    assert hashlib.sha256(built.read_bytes()).hexdigest() == patch.PATCHED_SHA256
    out = subprocess.run([built, "--version"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout.startswith("sockperf, version 3.7")
    assert BUILT_FROM[BUILT] == "tools/sockperf"


def test_the_benchmark_runs_the_shipped_binary_everywhere():
    bench = Latency()
    assert bench.uploads == {BINARY: BUILT} and bench.binaries == (BINARY,)
    assert bench.image_paths() == [BINARY]  # natively and in the tool image: the same file
    assert bench.server_argv("tcp")[0] == BINARY == bench.version_argv()[0]
    for path in bench.paths:
        assert bench.client_argv("udp", "10.0.0.1", Window(1, 0, 1000), path)[0] == BINARY
    version = bench.tool_version("sockperf, version 3.7-no.git\n   compiled 2021-08-23\n")
    assert version == "sockperf, version 3.7-no.git, patched: no start-up pause"
    # no 2 s pause left in the fixed time per run: start-up, 450 ms discarded, 100 ms drain
    assert bench.tool_fixed_seconds == pytest.approx(0.7)


def test_every_stage_that_runs_latency_depends_on_the_patch():
    stages = {s.name: s for s in all_stages(load())}
    assert "collect-wan-calibration" in stages  # the lab is one of params.yaml's environments
    for name in ("collect-latency", "collect-wan-calibration", "collect-instrument"):
        assert "tools/sockperf" in stages[name].deps, name


def test_a_patched_client_run_takes_its_time_not_two_seconds_more():
    built = ROOT / BUILT
    if not built.is_file() or not DEBIAN.is_file():
        pytest.skip("needs `make setup`")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    bench, window = Latency(), Window(0.5)
    bench.port = port
    server = subprocess.Popen([*bench.server_argv("udp"), "--ip", "127.0.0.1"],
                              executable=DEBIAN, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        time.sleep(0.3)
        argv = bench.client_argv("udp", "127.0.0.1", window)
        start = time.perf_counter()
        out = subprocess.run(argv, executable=built, capture_output=True, text=True, timeout=20)
        wall = time.perf_counter() - start
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert sockperf_seconds(window, "dc") == 1
    assert len(bench.parse("udp", out.stdout)) > 100
    assert 1.0 < wall < 1.0 + 1.0, out.stdout[-500:]  # Debian's build: ~3.3 s
