"""The iperf3 parsers on verbatim captured output (iperf 3.12; TCP: loopback, -t 3 -O 1 -i 1 -J)."""

import json
from pathlib import Path

import pytest

from pipeline.benchmarks import ToolOutputError, Window
from pipeline.benchmarks.throughput import (
    UDP_BITRATE,
    Throughput,
    parse_iperf3_tcp,
    parse_iperf3_udp,
)

DATA = Path(__file__).parent / "data"


def test_parses_measured_intervals_and_receiver_total():
    raw = (DATA / "iperf3-tcp-3s-omit1.json").read_text()
    samples = parse_iperf3_tcp(raw)
    intervals = [s for s in samples if s.metric == "tcp_throughput"]
    totals = [s for s in samples if s.metric == "tcp_throughput_received"]
    # 4 intervals in the file, the first omitted (slow start) and dropped
    assert [s.sample for s in intervals] == [0, 1, 2]
    doc = json.loads(raw)
    kept = [i["sum"]["bits_per_second"] for i in doc["intervals"] if not i["sum"]["omitted"]]
    assert [s.value for s in intervals] == kept
    assert intervals[0].t_ns == 0 and intervals[1].t_ns == pytest.approx(1e9, rel=0.01)
    assert len(totals) == 1
    assert totals[0].value == pytest.approx(23274747470.142586)
    assert all(s.unit == "bit/s" for s in samples)


def test_connection_refused_is_a_connect_error_and_a_tool_error():
    raw = (DATA / "iperf3-refused.json").read_text()
    assert Throughput().is_connect_error(raw)
    with pytest.raises(ToolOutputError, match="Connection refused"):
        parse_iperf3_tcp(raw)


def test_a_successful_report_is_not_a_connect_error():
    assert not Throughput().is_connect_error((DATA / "iperf3-tcp-3s-omit1.json").read_text())


@pytest.mark.parametrize("raw", ["", "iperf3: error - unable to connect", "{\"start\": {}}"])
def test_garbage_is_a_clear_error(raw):
    with pytest.raises(ToolOutputError):
        parse_iperf3_tcp(raw)


def test_a_window_the_path_stalled_in_is_a_tool_error():
    # Captured on the lab: `-t 1 -i 1 -J` from dc-client to node1, with packets to node1 dropped
    # for 8 s from a moment into the window. The receiver got the data 7 s after the sender's
    # window ended; its total (38 Mbit/s for a path that carries 15 Gbit/s) is the outage's.
    raw = (DATA / "iperf3-tcp-1s-partitioned.json").read_text()
    end = json.loads(raw)["end"]
    assert end["sum_received"]["seconds"] - end["sum_sent"]["seconds"] > 7
    with pytest.raises(ToolOutputError, match="receiver took 8.3 s for the sender's 1.0 s window"):
        parse_iperf3_tcp(raw)
    # the receiver trailing by the last segments' flight is a normal window
    doc = json.loads(raw)
    doc["end"]["sum_received"]["seconds"] = doc["end"]["sum_sent"]["seconds"] + 0.05
    assert len(parse_iperf3_tcp(json.dumps(doc))) == 2


def test_window_shorter_than_omit_is_reported():
    doc = json.loads((DATA / "iperf3-tcp-3s-omit1.json").read_text())
    for interval in doc["intervals"]:
        interval["sum"]["omitted"] = True
    with pytest.raises(ToolOutputError, match="no measured interval"):
        parse_iperf3_tcp(json.dumps(doc))


def test_client_argv_quotes_nothing_and_carries_the_window():
    argv = Throughput().client_argv("tcp", "10.77.0.11", Window(3, 1))
    assert argv[:3] == ["/usr/bin/iperf3", "--client", "10.77.0.11"]
    assert argv[argv.index("--time") + 1] == "3" and argv[argv.index("--omit") + 1] == "1"
    assert "--json" in argv


# UDP: iperf 3.12 client on dc-client to a native server on node1, verbatim:
# iperf3 --client 10.77.0.11 --port 5201 --time 3 --omit 1 --interval 1 --json
#        --udp --bitrate 200M --length 1400
UDP = "iperf3-udp-200M-3s-omit1.json"


def test_udp_intervals_and_receiver_summary():
    samples = parse_iperf3_udp((DATA / UDP).read_text())
    intervals = [s for s in samples if s.metric == "udp_throughput"]
    # 4 intervals, the first omitted
    assert [s.value for s in intervals] == [
        199969802.05291107,
        200093402.70277408,
        199891595.10836992,
    ]
    assert intervals[0].t_ns == 0 and intervals[2].t_ns == pytest.approx(2e9, rel=0.001)
    window = {s.metric: s for s in samples if s.metric != "udp_throughput"}
    assert set(window) == {"udp_throughput_received", "udp_jitter", "udp_loss"}
    # end.sum_received: what the server got, not the 199985733.4 bit/s the client sent
    assert window["udp_throughput_received"].value == pytest.approx(199631415.8491185)
    assert window["udp_throughput_received"].unit == "bit/s"
    assert window["udp_jitter"].value == pytest.approx(0.007621005191314023)
    assert window["udp_jitter"].unit == "ms"
    # 114 of 53568 datagrams lost
    assert window["udp_loss"].value == pytest.approx(114 / 53568 * 100)
    assert window["udp_loss"].unit == "percent"


def test_udp_variant_dispatch_and_server():
    bench = Throughput()
    assert bench.variants == ("tcp", "udp")
    assert bench.server_udp("udp") and not bench.server_udp("tcp")
    metrics = {s.metric for s in bench.parse("udp", (DATA / UDP).read_text())}
    assert "udp_loss" in metrics and "tcp_throughput" not in metrics
    tcp = {s.metric for s in bench.parse("tcp", (DATA / "iperf3-tcp-3s-omit1.json").read_text())}
    assert tcp == {"tcp_throughput", "tcp_throughput_received"}


def test_a_tcp_report_is_not_a_udp_report():
    with pytest.raises(ToolOutputError, match="not a UDP client report"):
        parse_iperf3_udp((DATA / "iperf3-tcp-3s-omit1.json").read_text())


def test_udp_refused_is_an_error():
    with pytest.raises(ToolOutputError, match="Connection refused"):
        parse_iperf3_udp((DATA / "iperf3-refused.json").read_text())


def test_udp_client_argv_offers_the_fixed_rate():
    argv = Throughput().client_argv("udp", "10.77.0.11", Window(3, 1))
    assert argv[argv.index("--bitrate") + 1] == UDP_BITRATE == "200M"
    assert argv[argv.index("--length") + 1] == "1400"
    assert "--udp" in argv and "--json" in argv
    tcp = Throughput().client_argv("tcp", "10.77.0.11", Window(3, 1))
    assert "--udp" not in tcp and "--bitrate" not in tcp
