"""The `lb` benchmark without hosts: wrk 4.1 output (with pipeline/collect/tool_conf/lb-wrk.lua's
line)
captured verbatim, the balancer configs it renders, its variants and how the campaign plans it."""

import re
import shutil
import subprocess
import tarfile
from io import BytesIO
from pathlib import Path

import pytest

from pipeline.benchmarks import BENCHMARKS, ToolOutputError
from pipeline.benchmarks.lb import (
    PORT,
    Lb,
    config_tar,
    parse_replicas,
    parse_variant,
    parse_wrk,
    render_config,
    variant_names,
    wrk_argv,
    wrk_samples,
)
from pipeline.collect.campaign import plan
from pipeline.collect.modes import STUDY_MODES, Context

DATA = Path(__file__).parent / "data"


def _data(name: str) -> str:
    return (DATA / name).read_text()


def _stated(raw: str, label: str) -> float:
    """A number from wrk's own text report, read independently of the parser under test."""
    return float(re.search(rf"{re.escape(label)}\s+([0-9.]+)", raw).group(1))


def _stated_us(raw: str, percent: str) -> float:
    value, unit = re.search(rf"^\s+{percent}%\s+([0-9.]+)(us|ms|s)$", raw, re.M).groups()
    return float(value) * {"us": 1, "ms": 1e3, "s": 1e6}[unit]


# ---- wrk output ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["lb-wrk-local-4c-1s.txt", "lb-wrk-haproxy-r2-2s.txt", "lb-wrk-dnsrr-r2-2s.txt"],
)
def test_rate_and_percentiles_agree_with_wrks_own_report(name):
    raw = _data(name)
    result = parse_wrk(raw)
    assert result.errors == dict.fromkeys(("connect", "read", "write", "status", "timeout"), 0)
    # wrk's Requests/sec is requests over the same duration (all 2xx here)
    assert result.rate == pytest.approx(_stated(raw, "Requests/sec:"), rel=1e-4)
    assert result.requests == int(re.search(r"(\d+) requests in", raw).group(1))
    for percent in ("50", "90", "99"):  # wrk prints them rounded to 3 significant digits
        assert result.latency_us[percent] == pytest.approx(_stated_us(raw, percent), rel=6e-3)
    assert result.latency_us["50"] <= result.latency_us["90"] <= result.latency_us["99"]
    assert result.latency_us["99"] <= result.latency_us["99.9"]
    # every response carried the 1 KiB body plus headers
    assert 1024 < result.bytes / result.requests < 1400


def test_the_local_capture_in_numbers():
    result = parse_wrk(_data("lb-wrk-local-4c-1s.txt"))
    assert result.requests == 35978 and result.duration_s == pytest.approx(1.008817)
    assert result.rate == pytest.approx(35978 / 1.008817)
    assert result.latency_us == {"50": 79.0, "90": 2655.0, "99": 17390.0, "99.9": 28010.0}
    assert result.addresses == ["127.0.0.1:8080"] * 4


def test_dnsrr_threads_are_spread_round_robin_over_the_dns_answer():
    result = parse_wrk(_data("lb-wrk-dnsrr-r2-2s.txt"))
    assert len(result.addresses) == 24
    assert len(set(result.addresses)) == 2
    for address in set(result.addresses):
        assert result.addresses.count(address) == 12
    # a balancer run: every connection to the one balancer address
    assert len(set(parse_wrk(_data("lb-wrk-haproxy-r2-2s.txt")).addresses)) == 1


def test_non_2xx_responses_are_errors_and_not_in_the_rate():
    raw = _data("lb-wrk-nginx-502.txt")  # nginx balancing onto a closed port: all 502
    result = parse_wrk(raw)
    stated = int(re.search(r"Non-2xx or 3xx responses: (\d+)", raw).group(1))
    assert result.errors["status"] == stated == result.requests > 0
    assert result.ok == 0 and result.rate == 0.0
    samples = {(s.metric, s.sample): s.value for s in wrk_samples(result)}
    assert samples[("lb_requests_per_s", 0)] == 0.0
    assert samples[("lb_errors", 0)] == float(stated)


def test_refused_connection_is_a_tool_error():
    with pytest.raises(ToolOutputError, match="unable to connect.*Connection refused"):
        parse_wrk(_data("lb-wrk-refused.txt"))


def test_truncated_or_inconsistent_reports_are_tool_errors():
    raw = _data("lb-wrk-local-4c-1s.txt")
    with pytest.raises(ToolOutputError, match="no Requests/sec"):
        parse_wrk("\n".join(line for line in raw.splitlines() if "Requests/sec" not in line))
    with pytest.raises(ToolOutputError, match="not understood"):
        parse_wrk(raw.replace('"requests": 35978', '"requests": "many"'))
    with pytest.raises(ToolOutputError, match="35978 requests"):  # script and text disagree
        parse_wrk(raw.replace("Requests/sec:  35663.55", "Requests/sec:  30000.00"))
    with pytest.raises(ToolOutputError, match="two co-lb-wrk|2 co-lb-wrk"):
        line = next(ln for ln in raw.splitlines() if ln.startswith("co-lb-wrk"))
        parse_wrk(raw + line + "\n")


def test_short_responses_are_not_the_benchmarks_nginx():
    raw = _data("lb-wrk-local-4c-1s.txt").replace('"bytes": 41986326', '"bytes": 3597800')
    with pytest.raises(ToolOutputError, match="less than the 1024-byte body"):
        parse_wrk(raw)


def test_samples_per_window():
    samples = wrk_samples(parse_wrk(_data("lb-wrk-local-4c-1s.txt")))
    assert [(s.metric, s.sample) for s in samples] == [
        ("lb_requests_per_s", 0),
        ("lb_errors", 0),
        ("lb_latency_us", 500),
        ("lb_latency_us", 900),
        ("lb_latency_us", 990),
        ("lb_latency_us", 999),
    ]
    assert samples[-1].value == 28010.0 and samples[0].unit == "req/s"


def test_wrk_command_one_connection_per_thread_and_a_bounded_window():
    argv = wrk_argv("http://10.0.0.1:8080/", 2.4, 24)
    assert argv[argv.index("--threads") + 1] == argv[argv.index("--connections") + 1] == "24"
    assert argv[argv.index("--duration") + 1] == "2s"
    assert argv[argv.index("--timeout") + 1] == "2s"
    assert wrk_argv("http://x:8080/", 0.2, 1)[6] == "1s"  # wrk runs at least a second
    assert argv[-1] == "http://10.0.0.1:8080/"


# ---- balancer configs --------------------------------------------------------------------


@pytest.mark.parametrize("balancer", ["haproxy", "nginx"])
def test_config_has_one_server_line_per_replica(balancer):
    addresses = [f"10.201.7.{i}" for i in range(2, 10)]
    text = render_config(balancer, addresses)
    servers = re.findall(r"^\s+server (?:r\d+ )?(\S+?):(\d+)", text, re.M)
    assert servers == [(a, str(PORT)) for a in addresses]
    assert not re.search(r"^\s*@SERVERS@\s*$", text, re.M)  # the marker line is replaced
    with pytest.raises(ValueError, match="at least one"):
        render_config(balancer, [])


@pytest.mark.skipif(not shutil.which("haproxy"), reason="haproxy is not installed")
def test_haproxy_accepts_the_rendered_config(tmp_path):
    path = tmp_path / "haproxy.cfg"
    path.write_text(render_config("haproxy", ["10.0.0.1", "10.0.0.2"]))
    check = subprocess.run(["haproxy", "-c", "-f", str(path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_config_tar_is_what_docker_cp_unpacks_under_tmp():
    with tarfile.open(fileobj=BytesIO(config_tar("haproxy.cfg", "global\n"))) as tar:
        names = tar.getnames()
        assert names == ["co-lb", "co-lb/haproxy.cfg"]
        assert tar.extractfile("co-lb/haproxy.cfg").read() == b"global\n"


# ---- variants, options, plan -------------------------------------------------------------


def test_variants_from_the_replicas_option():
    assert parse_replicas("1, 2,4") == (1, 2, 4) and parse_replicas([8]) == (8,)
    for bad in ("", "0", "1,1", "a", "65"):
        with pytest.raises(ValueError):
            parse_replicas(bad)
    assert variant_names((1, 2)) == (
        "direct-r1", "haproxy-r1", "haproxy-r2", "nginx-r1", "nginx-r2",
        "dnsrr-r1", "dnsrr-r2", "vip-r1", "vip-r2",
    )  # fmt: skip
    assert parse_variant("dnsrr-r8") == ("dnsrr", 8)
    with pytest.raises(ValueError):
        parse_variant("traefik-r2")


def test_configure_changes_the_plan_and_rejects_unknown_options():
    bench = BENCHMARKS["lb"]()
    assert isinstance(bench, Lb) and bench.kind == "scenario"
    bench.configure({"replicas": "1,2,4,8"})
    triples = plan(bench, STUDY_MODES)
    assert {m for m, _, _ in triples} == {"swarm-overlay", "k8s-pod"}  # the modes it runs in
    assert {p for _, p, _ in triples} == {"dc"}
    assert len(triples) == 2 * (1 + 4 * 4) and ("swarm-overlay", "dc", "vip-r8") in triples
    assert ("k8s-pod", "dc", "vip-r8") in triples and ("k8s-pod", "dc", "direct-r1") in triples
    assert Lb().variants == variant_names((1, 2))  # the class default is untouched
    with pytest.raises(ValueError, match="no option"):
        bench.configure({"rate": 100})


def test_the_tool_image_holds_the_three_binaries_and_the_shipped_files():
    bench = Lb()
    assert bench.binaries[0] == "/usr/sbin/nginx"  # the replicas' binary is the one hashed
    assert set(bench.image_paths()) >= {"/usr/sbin/haproxy", "/usr/bin/wrk"}
    for local in bench.uploads.values():
        assert (Path(__file__).resolve().parents[2] / local).is_file()


# ---- the replica service shared by a run's balancers (keep / release) ----------------------


class _FakeDocker:
    """Answers the commands an lb step sends as a healthy 3-node Swarm would; records them."""

    def __init__(self, wrk: str) -> None:
        self.wrk, self.commands = wrk, []
        self.lingering: dict[str, int] = {}  # listing -> polls that still show the object

    def __getitem__(self, host_name):
        return self

    def run(self, command, timeout=None, check=True, stdin=None):
        from types import SimpleNamespace

        text = command if isinstance(command, str) else " ".join(command)
        self.commands.append(text)
        out, status = "", 0
        listing = next((k for k, left in self.lingering.items() if k in text and left > 0), None)
        if listing is not None:
            self.lingering[listing] -= 1
            out = "3f2a9c0d1e4b\n"
        elif "docker service ps" in text:
            out = "t1 node1 Running 1 second ago\nt2 node2 Running 1 second ago\n"
        elif "docker inspect" in text and "NetworksAttachments" in text:
            out = "10.0.1.3/24 10.0.1.4/24 "
        elif "docker inspect" in text:
            out = "172.17.0.5\n"
        elif "docker network inspect" in text:
            status = 1  # already gone
        elif text.startswith("/usr/bin/wrk"):
            out = self.wrk
        return SimpleNamespace(status=status, stdout=out, stderr="")

    def count(self, needle: str) -> int:
        return sum(needle in c for c in self.commands)


def _lb_step(docker, bench, variant, keep, run=1):
    from types import SimpleNamespace

    from pipeline.benchmarks.base import Scenario, Window
    from pipeline.collect import inventory
    from pipeline.collect.modes import MODES

    inv = inventory.load(Path(__file__).parents[2] / "inventory" / "lab.yaml", MODES,
                         check_files=False)  # fmt: skip
    ctx = Context(inventory=inv, pool=docker, campaign="c0ffee")
    ctx.image = lambda host, engine: SimpleNamespace(tag="tools:1")
    scenario = Scenario(ctx, "swarm-overlay", "docker", inv.servers[0], variant, run,
                        Window(2), Window(1), "co-test-lb-swarm-overlay", keep=keep)  # fmt: skip
    return bench.measure(scenario)


def test_balancers_of_a_group_create_the_service_once_and_the_last_removes_it():
    docker, bench = _FakeDocker(_data("lb-wrk-haproxy-r2-2s.txt")), Lb()
    first = _lb_step(docker, bench, "haproxy-r2", keep=True)
    assert docker.count("docker service create") == 1 and docker.count("service rm") == 0
    assert bench.kept is not None and docker.count("docker rm --force") == 1  # its balancer
    last = _lb_step(docker, bench, "nginx-r2", keep=False)
    assert docker.count("docker service create") == 1  # reused, not created again
    assert docker.count("docker service rm") == 1 and bench.kept is None
    assert "service rm" in last.raw and "service rm" not in first.raw
    assert first.notes["replica_service"] == last.notes["replica_service"]
    addresses = {first.notes["replica_addresses"], last.notes["replica_addresses"]}
    assert addresses == {"10.0.1.3,10.0.1.4"}
    assert "started by an earlier step" in last.raw


def test_a_failed_step_removes_the_service_instead_of_handing_it_on():
    docker, bench = _FakeDocker(_data("lb-wrk-refused.txt")), Lb()
    with pytest.raises(ToolOutputError):
        _lb_step(docker, bench, "haproxy-r2", keep=True)
    assert bench.kept is None and docker.count("docker service rm") == 1
    docker.wrk = _data("lb-wrk-haproxy-r2-2s.txt")
    _lb_step(docker, bench, "nginx-r2", keep=False)
    assert docker.count("docker service create") == 2  # a new one, not the broken one


def test_a_kept_service_goes_when_another_group_or_the_loop_end_comes():
    docker, bench = _FakeDocker(_data("lb-wrk-haproxy-r2-2s.txt")), Lb()
    _lb_step(docker, bench, "haproxy-r2", keep=True)
    other = _lb_step(docker, bench, "direct-r1", keep=False)  # its trio's next step never came
    assert bench.kept is None and "service rm" in other.raw
    _lb_step(docker, bench, "haproxy-r2", keep=True, run=2)
    assert bench.kept is not None
    bench.release()  # the campaign's loop ended (errors, Ctrl-C)
    assert bench.kept is None and docker.count("docker service rm") == 2


SERVICE_TASKS = "label=com.docker.swarm.service.name="


def test_removal_is_waited_for_on_every_server_by_the_loop_end():
    docker, bench = _FakeDocker(_data("lb-wrk-haproxy-r2-2s.txt")), Lb()
    docker.lingering = {SERVICE_TASKS: 3, "docker network ls": 2}
    _lb_step(docker, bench, "haproxy-r2", keep=False)
    assert docker.count("service rm") == 1 and docker.count(SERVICE_TASKS) == 0
    bench.release()  # the campaign's loop ended
    # the first server lists them for 3 (2) polls, then each of the 3 servers once, empty
    assert docker.count(SERVICE_TASKS) == 3 + 3 and docker.count("docker network ls") == 2 + 3
    # the drain removes the tasks' containers itself instead of waiting for Swarm's delays
    assert docker.count("docker rm --force $c") == 3 + 3
    assert bench.draining == []


def test_the_next_step_waits_for_the_removal_after_its_deployment_before_its_load():
    docker, bench = _FakeDocker(_data("lb-wrk-haproxy-r2-2s.txt")), Lb()
    docker.lingering = {SERVICE_TASKS: 2}
    _lb_step(docker, bench, "haproxy-r2", keep=False)
    step = _lb_step(docker, bench, "direct-r1", keep=False)
    raw = step.raw
    assert raw.index("docker run --detach") < raw.index(SERVICE_TASKS) < raw.index("/usr/bin/wrk")
    assert docker.count(SERVICE_TASKS) == 2 + 3


def test_a_task_container_that_never_goes_fails_by_name(monkeypatch):
    import pipeline.benchmarks.lb as lb

    monkeypatch.setattr(lb, "READY_TIMEOUT_S", 0.0)
    monkeypatch.setattr(lb.time, "sleep", lambda s: None)
    docker, bench = _FakeDocker(_data("lb-wrk-haproxy-r2-2s.txt")), Lb()
    docker.lingering = {SERVICE_TASKS: 10**6}
    _lb_step(docker, bench, "haproxy-r2", keep=False)
    with pytest.raises(ToolOutputError, match=r"-replicas still on node1 0 s after its removal"):
        bench.release()


def test_a_step_that_repeats_the_one_before_names_its_objects_apart():
    """A retried window, or a run that starts with the variant the last one ended with, must
    not reuse the names (and so the listing selectors) of objects still being removed: the
    drain would wait for the new step's own service and fail."""
    docker, bench = _FakeDocker(_data("lb-wrk-haproxy-r2-2s.txt")), Lb()
    for run in (1, 1, 2):
        _lb_step(docker, bench, "haproxy-r2", keep=False, run=run)
    created = [c.split("--name ")[1].split()[0] for c in docker.commands
               if "docker service create" in c]  # fmt: skip
    networks = [c.split()[-1] for c in docker.commands if "docker network create" in c]
    fronts = [c.split("--name ")[1].split()[0] for c in docker.commands
              if "docker create" in c]  # fmt: skip
    assert len(created) == 3 and len(set(created)) == 3, created
    assert len(set(networks)) == 3 and len(set(fronts)) == 3, (networks, fronts)
