"""The iperf3 parser on verbatim captured output (iperf 3.12, loopback, -t 3 -O 1 -i 1 -J)."""

import json
from pathlib import Path

import pytest

from pipeline.benchmarks import ToolOutputError, Window
from pipeline.benchmarks.throughput import Throughput, parse_iperf3_tcp

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
