"""The sockperf parser and argv builder, on verbatim captured output (sockperf 3.7, the lab).

Captures (client on the named lab host, `sockperf server --port 11111 [--tcp]` on node1):
- sockperf-{udp,tcp}-pingpong-dc.log: dc-client, `ping-pong --ip 10.77.0.11 --port 11111
  [--tcp] --msg-size 14 --time 2 --mps 2000 --full-log /dev/stdout` (paced to keep the file
  small; the chosen dc argv has no --mps, and its output has the same format)
- sockperf-{udp,tcp}-underload-inet.log: inet-client over the emulated WAN, `under-load ...
  --time 2 --mps 500 --reply-every 1 --full-log /dev/stdout` (the internet-path argv)
- sockperf-{udp,tcp}-noserver.log: dc-client to node1 with nothing listening
"""

from pathlib import Path

import pytest

from pipeline.benchmarks import BENCHMARKS, ToolOutputError, Window
from pipeline.benchmarks.latency import (
    BINARY,
    COUNT_MARGIN,
    INTERNET_MPS,
    PINGPONG_MIN_RATE,
    PORT,
    SOCKPERF_DISCARD_S,
    Latency,
    parse_sockperf_full_log,
    sockperf_seconds,
)

DATA = Path(__file__).parent / "data"


def raw(name: str) -> str:
    return (DATA / name).read_text()


def test_udp_rtt_is_the_full_round_trip_not_sockperf_half():
    # log line 0: "0, 2.401123939, 2.401423231, 149.646" (the last column is RTT / 2)
    samples = Latency().parse("udp", raw("sockperf-udp-pingpong-dc.log"))
    assert samples[0].value == pytest.approx(2.401423231e6 - 2.401123939e6, abs=1e-6)
    assert samples[0].value == pytest.approx(299.292)
    assert samples[0].value == pytest.approx(2 * 149.646, abs=0.002)
    # line 1: "1, 2.401623938, 2.401653622, 14.842"
    assert samples[1].value == pytest.approx(29.684)
    assert samples[1].t_ns == 2_401_623_938 - 2_401_123_939
    assert samples[0].t_ns == 0
    assert all(s.metric == "udp_rtt" and s.unit == "us" for s in samples)


def test_every_logged_message_is_a_sample_in_order():
    samples = Latency().parse("udp", raw("sockperf-udp-pingpong-dc.log"))
    # "[Valid Duration] ...; ReceivedMessages=3100"
    assert len(samples) == 3100
    assert [s.sample for s in samples] == list(range(3100))
    assert all(s.value > 0 for s in samples)
    assert all(a.t_ns < b.t_ns for a, b in zip(samples, samples[1:], strict=False))


def test_tcp_ping_pong():
    samples = Latency().parse("tcp", raw("sockperf-tcp-pingpong-dc.log"))
    assert len(samples) == 3097
    assert samples[0].metric == "tcp_rtt"
    # "0, 2.403313260, 2.403349073, 17.906"
    assert samples[0].value == pytest.approx(35.813)


def test_paced_internet_log_keeps_one_rtt_per_message():
    udp = Latency().parse("udp", raw("sockperf-udp-underload-inet.log"))
    assert len(udp) == 774
    # "0, 2.408220431, 2.447484262, 19631.916": ~40 ms over the emulated WAN
    assert udp[0].value == pytest.approx(39263.831)
    tcp = Latency().parse("tcp", raw("sockperf-tcp-underload-inet.log"))
    assert len(tcp) == 775
    assert tcp[0].value == pytest.approx(43717.646)
    # sends are paced 1/mps apart (the capture ran at --mps 500):
    # "1, 2.442820073, ..." after "0, 2.440820228, ..."
    assert tcp[1].t_ns == 1_999_845
    assert tcp[1].t_ns == pytest.approx(1e9 / 500, rel=0.01)
    assert min(s.value for s in tcp) > 30_000


def test_window_count_keeps_exactly_the_first_samples():
    full = Latency().parse("udp", raw("sockperf-udp-pingpong-dc.log"))
    kept = Latency().parse("udp", raw("sockperf-udp-pingpong-dc.log"), Window(1, 0, 1000))
    assert kept == full[:1000]


def test_too_few_samples_for_the_count_is_a_failed_window():
    with pytest.raises(ToolOutputError, match="logged 3100 round trips, the window needs 5000"):
        Latency().parse("udp", raw("sockperf-udp-pingpong-dc.log"), Window(1, 0, 5000))


def test_tcp_refused_is_a_connect_error_and_a_tool_error():
    text = raw("sockperf-tcp-noserver.log")
    assert Latency().is_connect_error(text)
    with pytest.raises(ToolOutputError, match="Connection refused"):
        Latency().parse("tcp", text)


def test_udp_without_server_is_a_connect_error_and_a_tool_error():
    text = raw("sockperf-udp-noserver.log")
    assert Latency().is_connect_error(text)
    with pytest.raises(ToolOutputError, match="No messages were received"):
        Latency().parse("udp", text)


def test_a_good_log_is_not_a_connect_error():
    assert not Latency().is_connect_error(raw("sockperf-udp-pingpong-dc.log"))
    assert not Latency().is_connect_error(raw("sockperf-tcp-underload-inet.log"))


def test_a_cut_log_is_detected():
    lines = raw("sockperf-udp-pingpong-dc.log").splitlines()
    cut = "\n".join(lines[:100])  # the stream stopped inside the full log
    with pytest.raises(ToolOutputError, match="counted 3100"):
        parse_sockperf_full_log(cut, "udp_rtt")


def test_a_counted_window_converts_only_its_rows_and_still_checks_every_one():
    text = raw("sockperf-udp-pingpong-dc.log")
    every = parse_sockperf_full_log(text, "udp_rtt")
    assert Latency().parse("udp", text, Window(1, 0, 1000)) == every[:1000]
    assert parse_sockperf_full_log(text, "udp_rtt", limit=1000) == every[:1000]
    lines = text.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("2000, "))
    broken = "\n".join([*lines[:row], "2000, 2.5", *lines[row + 1:]])  # past the count
    with pytest.raises(ToolOutputError, match="unexpected line '2000, 2.5'"):
        parse_sockperf_full_log(broken, "udp_rtt", limit=1000)
    short = "\n".join([*lines[:row], *lines[row + 1:]])  # a row lost past the count
    with pytest.raises(ToolOutputError, match="has 3099 rows but sockperf counted 3100"):
        parse_sockperf_full_log(short, "udp_rtt", limit=1000)


@pytest.mark.parametrize("text", ["", "sockperf: == version #3.7 ==\n", "0, 1.0, 1.1, 5.0\n"])
def test_garbage_is_a_clear_error(text):
    with pytest.raises(ToolOutputError):
        Latency().parse("udp", text)


def test_dc_client_is_serial_ping_pong_to_stdout():
    argv = Latency().client_argv("udp", "10.77.0.11", Window(1, 0, 10_000), "dc")
    assert argv[:2] == [BINARY, "ping-pong"]
    assert argv[argv.index("--ip") + 1] == "10.77.0.11"
    assert argv[argv.index("--port") + 1] == str(PORT)
    assert argv[-2:] == ["--full-log", "/dev/stdout"]
    assert "--tcp" not in argv and "--mps" not in argv
    # 10,000 at >= 4,000 round trips/s with 10 % margin, plus sockperf's 0.45 s discard
    assert argv[argv.index("--time") + 1] == "4"


def test_internet_client_is_paced_with_a_reply_to_every_message():
    argv = Latency().client_argv("tcp", "10.77.0.11", Window(1, 0, 10_000), "internet")
    assert argv[:2] == [BINARY, "under-load"]
    assert argv[argv.index("--mps") + 1] == str(INTERNET_MPS)
    assert argv[argv.index("--reply-every") + 1] == "1"
    assert "--tcp" in argv
    # 10,000 / INTERNET_MPS per s * 1.1 + 0.45 -> 12 s at 1,000 messages/s
    assert INTERNET_MPS == 1000
    assert argv[argv.index("--time") + 1] == "12"


def test_a_ping_pong_window_is_long_enough_for_its_count_at_the_slowest_accepted_rate():
    for count in (180, 1_200, 10_000, 1_000_000):
        seconds = sockperf_seconds(Window(10, 0, count), "dc")
        logged = (seconds - SOCKPERF_DISCARD_S) * PINGPONG_MIN_RATE
        assert logged >= count * COUNT_MARGIN
        # and not a whole second longer than that needs
        assert (seconds - 1 - SOCKPERF_DISCARD_S) * PINGPONG_MIN_RATE < count * COUNT_MARGIN
    assert sockperf_seconds(Window(10, 0, 1_200), "dc") == 1  # the smoke profile's window


def test_a_window_without_count_runs_for_its_seconds():
    assert sockperf_seconds(Window(3), "dc") == 4  # 3 s + the 0.45 s sockperf discards
    assert sockperf_seconds(Window(0.1), "internet") == 1
    assert Latency().client_seconds(Window(3)) == pytest.approx(4.15)  # + its start-up


def test_server_and_contract():
    bench = BENCHMARKS["latency"]()
    assert bench.server_argv("udp") == [BINARY, "server", "--port", str(PORT)]
    assert bench.server_argv("tcp")[-1] == "--tcp"
    assert bench.server_udp("udp") and not bench.server_udp("tcp")
    assert bench.variants == ("udp", "tcp")
    assert bench.paths == ("dc", "internet", "local")
    with pytest.raises(ValueError):
        bench.server_argv("sctp")


def test_a_sockperf_message_written_into_a_log_line_is_cut_out():
    # Seen on the lab: "1152, 3.554407068, 3.5544909sockperf: Test end (interrupted by
    # signal 2)" then the rest of the row on the next line (two stdio buffers, one stdout).
    text = raw("sockperf-tcp-underload-inet.log")
    lines = text.splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if line[:1].isdigit() and line.count(",") == 3)
    cut = len(lines[last]) // 2
    lines[last] = (lines[last][:cut] + "sockperf: Test end (interrupted by signal 2)\n"
                   + lines[last][cut:])  # fmt: skip
    damaged = Latency().parse("tcp", "".join(lines))
    assert damaged == Latency().parse("tcp", text)
