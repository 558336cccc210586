"""The `http` benchmark: co-loadgen's report parser on verbatim captured output, its argv,
the nginx conf it ships, and the generator's own Go tests.

Captures (tests/unit/data/loadgen-*), co-loadgen against nginx with
pipeline/collect/tool_conf/nginx-1k.conf
on 127.0.0.1, 2-core VM:
- nginx-1000rps-1s: -rate 1000 -duration 1s -warmup 0.2s -connections 16 -timeout 2s
- nginx-stall: -rate 1000 -duration 1s -connections 4 -max-connections 8 -timeout 150ms, the
  nginx worker stopped (SIGSTOP) for 0.3 s from about 0.42 s into the window
- refused: nothing listening on the port
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from pipeline.benchmarks import BENCHMARKS, ToolOutputError, Window
from pipeline.benchmarks.http import CONF, LOADGEN, Http, parse_loadgen

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[2]


def read(name: str) -> str:
    return (DATA / name).read_text()


def by_metric(samples, metric):
    return [s for s in samples if s.metric == metric]


def test_steady_run_every_request_is_a_sample_at_its_due_time():
    samples = parse_loadgen(read("loadgen-nginx-1000rps-1s.txt"))
    latency = by_metric(samples, "http_latency")
    assert [s.sample for s in latency] == list(range(1000))
    assert [s.t_ns for s in latency] == [i * 1_000_000 for i in range(1000)]
    # lines "0 0 68.1 0.2 200", "499 499000000 72.5 0.3 200", "999 999000000 143.3 0.6 200"
    assert (latency[0].value, latency[499].value, latency[999].value) == (68.1, 72.5, 143.3)
    assert np.median([s.value for s in latency]) == pytest.approx(79.35)
    assert all(s.unit == "us" for s in latency)
    assert by_metric(samples, "http_errors")[0].value == 0
    # one request written more than 1 ms after its due time (a busy 2-core VM): 710, whose
    # latency includes the 1.5 ms it waited to be written
    assert by_metric(samples, "http_late")[0].value == 1
    assert latency[710].value == 1629.6
    assert by_metric(samples, "http_achieved_rate")[0].value == 999.925


def test_stall_latency_counts_from_the_due_time():
    samples = parse_loadgen(read("loadgen-nginx-stall.txt"))
    latency = {s.sample: s for s in by_metric(samples, "http_latency")}
    # 157 requests (423..579) got no answer within 150 ms of their due time: errors, not samples
    assert len(latency) == 843 and by_metric(samples, "http_errors")[0].value == 157
    assert not set(range(423, 580)) & set(latency)
    assert by_metric(samples, "http_late")[0].value == 304
    assert by_metric(samples, "http_achieved_rate")[0].value == 843.868
    # Requests due during the rest of the stall were all answered when it ended, about 730 ms
    # into the window: their latencies fall as their due times rise (580: 149.8 ms, 733: 1.3 ms).
    finished_ms = [(latency[i].t_ns / 1e3 + latency[i].value) / 1e3 for i in range(580, 734)]
    assert min(finished_ms) > 729.5 and max(finished_ms) < 735
    assert latency[580].value == 149821.1 and latency[733].value == 1295.9
    assert latency[736].value == 76.0  # due after the stall: back to normal


def test_refused_is_a_connect_error_and_a_tool_error():
    raw = read("loadgen-refused.txt")
    assert Http().is_connect_error(raw)
    with pytest.raises(ToolOutputError, match="connection refused"):
        parse_loadgen(raw)


@pytest.mark.parametrize("raw", ["", "garbage", '{"connect_error": "yes"}', '{"error": "x"}'])
def test_other_output_is_not_a_connect_error(raw):
    assert not Http().is_connect_error(raw)


def test_a_report_is_not_a_connect_error():
    assert not Http().is_connect_error(read("loadgen-nginx-1000rps-1s.txt"))


def test_truncated_or_inconsistent_reports_are_errors():
    lines = read("loadgen-nginx-1000rps-1s.txt").splitlines()
    with pytest.raises(ToolOutputError, match="truncated"):
        parse_loadgen("\n".join(lines[:-1]))
    with pytest.raises(ToolOutputError, match="999 request lines"):
        parse_loadgen("\n".join(lines[:5] + lines[6:]))
    with pytest.raises(ToolOutputError, match="not understood"):
        parse_loadgen("\n".join([lines[0], "1 2 3", *lines[1:]]))
    with pytest.raises(ToolOutputError, match="not a co-loadgen format 1"):
        parse_loadgen("\n".join([lines[0].replace('"format":1', '"format":2'), *lines[1:]]))
    with pytest.raises(ToolOutputError, match="printed nothing"):
        parse_loadgen("\n")


def test_client_argv_carries_rate_window_and_warmup():
    argv = Http().client_argv("1k", "10.77.0.11", Window(5, 1.5))
    assert argv[0] == LOADGEN
    opts = dict(zip(argv[1::2], argv[2::2], strict=True))
    assert opts["-url"] == "http://10.77.0.11:8080/"
    assert opts["-rate"] == "500" and opts["-duration"] == "5000ms"
    assert opts["-warmup"] == "1500ms" and opts["-body-bytes"] == "1024"
    assert opts["-connections"] == "64" and opts["-timeout"] == "2s"
    assert Http().client_argv("1k", "fd00::1", Window(1))[2] == "http://[fd00::1]:8080/"


def test_registered_and_shipping_its_files():
    http = BENCHMARKS["http"]()
    assert http.server_argv("1k") == ["/usr/sbin/nginx", "-e", "stderr", "-c", CONF]
    assert http.uploads[CONF] == "pipeline/collect/tool_conf/nginx-1k.conf"
    assert (ROOT / http.uploads[CONF]).is_file()
    assert set(http.image_paths()) == {"/usr/sbin/nginx", CONF, LOADGEN}


def test_conf_serves_1024_bytes_on_the_port_and_names_only_tmp_paths():
    conf = (ROOT / "pipeline/collect/tool_conf/nginx-1k.conf").read_text()
    body = re.search(r'return 200 "([^"]*)";', conf).group(1)
    assert len(body.encode()) == 1024
    assert re.findall(r"^\s*listen (\d+)", conf, re.M) == [str(Http.port)]
    code = "\n".join(line.split("#")[0] for line in conf.splitlines()).replace(body, "")
    paths = re.findall(r"(?<![\w.])/[\w/.-]+", code)
    assert paths and all(p.startswith("/tmp/") for p in paths), paths


@pytest.mark.skipif(not os.path.exists("/usr/sbin/nginx"), reason="nginx not installed")
def test_version_argv_prints_the_version_on_stdout():
    out = subprocess.run(Http().version_argv(), capture_output=True, text=True, timeout=10)
    assert re.match(r"nginx version: nginx/\d+\.\d+", out.stdout.splitlines()[0])


@pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain")
def test_loadgen_go_tests_pass():
    """The generator's own tests: intended-time latency under a stall, errors, timeouts."""
    env = {**os.environ, "GOPROXY": "off", "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
    out = subprocess.run(
        ["go", "test", "-count=1", "."],
        cwd=ROOT / "tools/loadgen", env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
