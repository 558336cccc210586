"""The mode contract for the podman, rootless and MTU modes, without hosts: registry, paths,
reasons when a host lacks what a mode needs, and the backend detection on captured output."""

import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipeline.collect import inventory
from pipeline.collect.modes import MODES
from pipeline.collect.modes.base import (
    Context,
    Proc,
    RootlessUser,
    Snapshot,
    engine_cli,
    force_remove,
    parse_interface,
    parse_ps,
    parse_ss_listeners,
)
from pipeline.collect.modes.pasta import pasta_notes
from pipeline.collect.modes.rootless_docker import rootlesskit_notes
from pipeline.collect.modes.rootless_podman import podman_notes
from pipeline.collect.modes.swarm_overlay_mtu import overlay_mtu, parse_link_mtu

DATA = Path(__file__).parent / "data" / "modes"
ROOT = Path(__file__).resolve().parents[2]


def test_new_modes_are_registered_with_their_paths():
    expected = {
        "podman": ("dc", "internet"),
        "rootless-docker": ("dc", "internet", "local"),
        "rootless-podman": ("dc", "internet", "local"),
        "pasta": ("dc", "internet", "local"),
        "swarm-overlay-mtu": ("dc",),
    }
    for name, paths in expected.items():
        assert MODES[name].name == name
        assert MODES[name].paths == paths
    for mode in MODES.values():  # "host": storage modes, for host benchmarks only (disk)
        if mode.control:  # controls imitate native, host benchmarks included (controls.py)
            assert set(mode.paths) <= {"dc", "internet", "local", "host"}, mode.name
            continue
        assert set(mode.paths) <= {"dc", "internet", "local"} or mode.paths == ("host",), mode.name


class FakeSession:
    """Answers every command with exit status `status` and no output; records commands."""

    def __init__(self, status: int = 0):
        self.status = status
        self.commands: list = []

    def run(self, command, **kwargs):
        self.commands.append(command)
        return SimpleNamespace(status=self.status, stdout="", stderr="")


def _ctx(inventory_file: Path, status: int = 0) -> Context:
    inv = inventory.load(inventory_file, known_modes=MODES, check_files=False)
    sessions = {name: FakeSession(status) for name in inv.hosts}
    return Context(inventory=inv, pool=sessions, campaign="test")


def _without_rootless(tmp_path: Path) -> Path:
    text = (ROOT / "inventory/lab.yaml").read_text().replace("rootless: {user: co-bench}", "")
    path = tmp_path / "lab.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("mode", ["rootless-docker", "rootless-podman", "pasta"])
def test_rootless_modes_name_the_missing_inventory_key(tmp_path, mode):
    ctx = _ctx(_without_rootless(tmp_path))
    reason = MODES[mode].available(ctx, "dc")
    assert reason == (
        "no rootless user configured for node1 in the inventory (hosts.node1.rootless.user)"
    )


def test_rootless_mode_says_when_the_user_does_not_exist(tmp_path):
    ctx = _ctx(ROOT / "inventory/lab.yaml", status=2)  # getent finds nothing
    reason = MODES["rootless-docker"].available(ctx, "dc")
    assert reason == "rootless user 'co-bench' does not exist on node1 (useradd it; see README)"


def test_podman_mode_says_when_podman_is_missing():
    ctx = _ctx(ROOT / "inventory/lab.yaml", status=1)
    assert MODES["podman"].available(ctx, "dc") == "podman is not installed on node1"


def test_rootless_engines_run_as_the_user_or_against_its_socket():
    ctx = _ctx(ROOT / "inventory/lab.yaml")
    node1 = ctx.inventory.servers[0]
    ctx.users["node1"] = RootlessUser("co-bench", 60777, 60777, "/home/co-bench")
    assert engine_cli(ctx, node1, "rootless-docker") == [
        "docker", "-H", "unix:///run/user/60777/docker.sock"
    ]  # fmt: skip
    cli = engine_cli(ctx, node1, "rootless-podman")
    assert cli[:4] == ["setpriv", "--reuid=60777", "--regid=60777", "--clear-groups"]
    assert "XDG_RUNTIME_DIR=/run/user/60777" in cli and cli[-1] == "podman"
    assert engine_cli(ctx, node1, "podman") == ["podman"]
    with pytest.raises(ValueError, match="unknown engine"):
        engine_cli(ctx, node1, "lxc")


def _captured_rootless_docker() -> Snapshot:
    listeners = parse_ss_listeners((DATA / "rootless-docker-ss.txt").read_text())
    table = parse_ps((DATA / "rootless-docker-ps.txt").read_text())
    return Snapshot(listeners, table, "4026532320")


def test_ss_listeners_on_captured_output():
    listeners = parse_ss_listeners((DATA / "rootless-docker-ss.txt").read_text())
    assert listeners == [("rootlesskit", 27846)]  # IPv4 and IPv6 sockets, one process


def test_rootlesskit_backend_seen_in_captured_process_table():
    notes = rootlesskit_notes(_captured_rootless_docker(), 5295)
    assert notes["network_backend"] == "slirp4netns"
    assert notes["network_backend_process"] == "slirp4netns (pid 27886, uid 60777)"
    assert notes["port_driver"] == "builtin"
    assert notes["rootlesskit_mtu"] == "65520"
    assert notes["inner_proxy"] == (
        "docker-proxy (pid 13529, uid 60777), docker-proxy (pid 13543, uid 60777)"
    )


def test_a_port_not_held_by_rootlesskit_is_refused():
    snap = _captured_rootless_docker()
    snap = Snapshot([("podman pause", 29042)], snap.table, snap.netns)  # not under rootlesskit
    with pytest.raises(Exception, match="not by a rootlesskit process"):
        rootlesskit_notes(snap, 5295)


def test_podman_backend_is_the_process_naming_the_container_netns():
    sandbox = "/run/user/60777/netns/netns-1e2b"
    table = {
        8078: Proc(8078, 1, 60777, "1", "slirp4netns", f"/usr/bin/slirp4netns -c {sandbox} tap0"),
        8081: Proc(8081, 1, 60777, "1", "rootlessport", "rootlessport"),
        27886: Proc(27886, 27846, 60777, "1", "slirp4netns", "slirp4netns 27864 tap0"),
    }
    notes = podman_notes(Snapshot([("rootlessport", 8081)], table, "1"), sandbox)
    assert notes["network_backend_process"] == "slirp4netns (pid 8078, uid 60777)"
    assert notes["port_handler"] == "rootlessport"


def test_pasta_must_hold_the_port_and_run_the_server_elsewhere():
    table = {
        3955: Proc(3955, 1, 60777, "111", "passt.avx2", "pasta --config-net -t 5201"),
        3957: Proc(3957, 3955, 60777, "222", "iperf3", "/usr/bin/iperf3 --server"),
    }
    notes = pasta_notes(Snapshot([("iperf3", 3957), ("passt.avx2", 3955)], table, "111"), 3955)
    assert notes["server_netns"] == "222" and notes["network_backend"] == "pasta"
    same = {**table, 3957: Proc(3957, 3955, 60777, "111", "iperf3", "iperf3")}
    with pytest.raises(Exception, match="host's network namespace"):
        pasta_notes(Snapshot([("passt.avx2", 3955)], same, "111"), 3955)
    assert pasta_notes(Snapshot([("iperf3", 3957)], table, "111"), 3955)["server_netns"] == "222"
    with pytest.raises(Exception, match="nor its child holds"):
        pasta_notes(Snapshot([("nginx", 99)], table, "111"), 3955)


def test_underlay_interface_from_captured_ip_output():
    nic = parse_interface((DATA / "node1-ip-addr.txt").read_text(), "1500\n", "")
    assert (nic.name, nic.mtu, nic.network, nic.gateway) == ("eth0", 1500, "10.77.0.0/24", None)
    routed = parse_interface((DATA / "node1-ip-addr.txt").read_text(), "9000",
                             "default via 10.77.0.1 dev eth0 onlink \n")  # fmt: skip
    assert (routed.mtu, routed.gateway) == (9000, "10.77.0.1")


def test_overlay_mtu_leaves_room_for_vxlan():
    assert overlay_mtu(9000) == 8950  # the article's jumbo-frame example
    assert overlay_mtu(1500) == 1450
    assert parse_link_mtu("5: eth0@if6: <BROADCAST,UP> mtu 8950 qdisc noqueue state UP") == 8950


def _inventory_with(tmp_path: Path, rootless: str) -> Path:
    text = (ROOT / "inventory/lab.yaml").read_text()
    path = tmp_path / "inv.yaml"
    path.write_text(text.replace("rootless: {user: co-bench}", rootless))
    return path


def test_inventory_rootless_key():
    inv = inventory.load(ROOT / "inventory/lab.yaml", known_modes=MODES, check_files=False)
    assert inv.servers[0].rootless == inventory.Rootless(user="co-bench")
    assert inv.servers[1].rootless is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("rootless: {user: root}", "must not be root"),
        ("rootless: {user: 'bad user'}", "is not a user name"),
        ("rootless: {usr: co-bench}", "did you mean 'user'"),
        ("rootless: co-bench", "must be a mapping"),
    ],
)
def test_inventory_rootless_key_errors(tmp_path, value, message):
    with pytest.raises(inventory.InventoryError, match=message) as err:
        inventory.load(_inventory_with(tmp_path, value), known_modes=MODES, check_files=False)
    assert "hosts.node1.rootless" in str(err.value)


# ---- foreground: host benchmarks (cpu, memory) run a tool to completion in the mode ----------


class ScriptedSession:
    """Fails the commands that contain a given text with a given stderr; records all."""

    def __init__(self, fail: dict[str, str] | None = None, stdout: str = ""):
        self.fail = dict(fail or {})
        self.stdout = stdout
        self.commands: list = []

    def run(self, command, check=True, **kwargs):
        from pipeline.collect.remote import RemoteError

        self.commands.append(command)
        text = command if isinstance(command, str) else " ".join(command)
        for needle, stderr in list(self.fail.items()):
            if needle in text:
                del self.fail[needle]  # fail once
                if check:
                    raise RemoteError("node1", text, 126, stderr)
                return SimpleNamespace(status=126, stdout="", stderr=stderr)
        return SimpleNamespace(status=0, stdout=self.stdout, stderr="")


def _foreground_ctx(session: ScriptedSession) -> Context:
    from pipeline.collect.images import ToolImage

    inv = inventory.load(ROOT / "inventory/lab.yaml", known_modes=MODES, check_files=False)
    ctx = Context(inventory=inv, pool={name: session for name in inv.hosts}, campaign="c0ffee")
    ctx.users["node1"] = RootlessUser("co-bench", 60777, 60777, "/home/co-bench")
    for engine in ("docker", "podman", "rootless-docker", "rootless-podman"):
        ctx.images[("node1", engine)] = ToolImage("node1", f"tools:{engine}", "sha256:1", {})
    return ctx


def _probe():
    from pipeline.collect.modes import Workload

    return Workload(name="cpu-1thread", argv=("/usr/bin/sysbench", "--version"), port=0)


def test_every_host_benchmark_mode_can_run_a_tool_in_the_foreground():
    from pipeline.benchmarks import BENCHMARKS

    for benchmark in BENCHMARKS.values():
        if benchmark.kind != "host":  # scenario benchmarks drive the mode's engine themselves
            continue
        for mode in benchmark.modes or ():
            assert type(MODES[mode]).foreground is not type(MODES["macvlan"]).foreground, mode


ARGV = ["/usr/bin/sysbench", "cpu", "--threads=1", "run"]


@pytest.mark.parametrize(
    ("mode", "cli"),
    [
        ("docker-bridge", "docker"),
        ("rootless-docker", "docker -H unix:///run/user/60777/docker.sock"),
        ("rootless-podman", "setpriv --reuid=60777"),
    ],
)
def test_foreground_runs_the_argv_in_a_labelled_rm_container_on_the_server(mode, cli):
    session = ScriptedSession()
    ctx = _foreground_ctx(session)
    deployment = MODES[mode].foreground(ctx, _probe())
    engine = {"docker-bridge": "docker"}.get(mode, mode)
    name = f"co-c0ffee-cpu-1thread-{mode}"
    command = deployment.client_command(ARGV)
    remove, run = command.split("; ")
    at_once = " --time 0" if "podman" in mode else ""  # podman waits 10 s without it
    assert remove.startswith(cli) and remove.endswith(
        f"rm --force{at_once} {name} >/dev/null 2>&1"
    )
    assert run.startswith(cli) and run.endswith(
        f" run --rm --name {name} --label org.container-overhead.campaign=c0ffee "
        f"tools:{engine} /usr/bin/sysbench cpu --threads=1 run"
    )
    assert deployment.client_host(ctx.inventory, "host").name == "node1"
    assert deployment.server.name == "node1" and deployment.image.tag == f"tools:{engine}"
    assert session.commands == []  # nothing runs until the campaign runs the command
    deployment.stop()
    assert session.commands == [remove]


def test_native_foreground_runs_the_argv_itself_on_the_server():
    ctx = _foreground_ctx(ScriptedSession())
    deployment = MODES["native"].foreground(ctx, _probe())
    assert deployment.client_command(ARGV) == "/usr/bin/sysbench cpu --threads=1 run"
    assert deployment.client_host(ctx.inventory, "host").name == "node1"
    assert deployment.image is None


@pytest.mark.parametrize("refusal", [
    "runc create failed: error setting rlimit type 7: operation not permitted",
    "Error: crun: setrlimit `RLIMIT_NOFILE`: Operation not permitted: OCI permission denied",
])  # fmt: skip
def test_podman_foreground_probes_the_ulimits_once_and_falls_back_like_start(refusal):
    session = ScriptedSession(fail={"podman run --rm": refusal}, stdout="1024\n")
    ctx = _foreground_ctx(session)
    ctx.campaign = "probe-test-" + ("crun" if "crun" in refusal else "runc")  # a fresh probe
    deployment = MODES["podman"].foreground(ctx, _probe())
    runs = [c for c in session.commands if "run" in c and "--version" in c]
    assert len(runs) == 2 and "--ulimit" in runs[1] and "--ulimit" not in runs[0]
    assert deployment.notes["ulimits"].startswith("nofile=1024:1024 nproc=16384:16384")
    assert "--ulimit nofile=1024:1024 --ulimit nproc=16384:16384 tools:podman" in (
        deployment.client_command(ARGV)
    )
    before = len(session.commands)
    MODES["podman"].foreground(ctx, _probe())  # same campaign and host: no second probe
    assert len(session.commands) == before


def test_control_deployments_run_wrapped_and_stop_what_they_made():
    """native-cpuquota wraps the tool in the quota script and its stop removes the cgroup;
    native-tbf puts the marked qdisc on the dc client first and its stop takes it off again,
    after stopping the server."""
    from pipeline.collect.modes.base import TBF_HANDLE, Workload

    ctx = _ctx(ROOT / "inventory/lab.yaml")
    quota = MODES["native-cpuquota"].foreground(ctx, Workload("cpu-1thread", ("sysbench",), 0))
    command = quota.client_command(["/usr/bin/sysbench", "cpu", "--threads=1", "run"])
    assert command.startswith("sh -c ")
    assert command.endswith("sh /usr/bin/sysbench cpu --threads=1 run")
    assert quota.notes["cpu_quota"] == "0.5"
    node1 = ctx.pool["node1"]
    before = len(node1.commands)
    quota.stop()
    assert any("rmdir" in str(c) and "co-control-test" in str(c) for c in node1.commands[before:])

    class Addr(FakeSession):  # answers `ip -o addr` and the sysfs mtu like a lab host
        def run(self, command, **kwargs):
            self.commands.append(command)
            answers = {"ip": "7: eth0@if8 inet 10.77.0.20/24 brd 10.77.0.255 scope global eth0",
                       "cat": "1500"}  # fmt: skip
            out = answers.get(command[0] if isinstance(command, list) else "", "")
            return SimpleNamespace(status=0, stdout=out, stderr="")

    client = ctx.inventory.dc_client.name
    ctx.pool[client] = Addr()
    tbf = MODES["native-tbf"].start(ctx, Workload("throughput-tcp", ("iperf3", "-s"), 5201))
    added = [c for c in ctx.pool[client].commands
             if isinstance(c, list) and c[:3] == ["tc", "qdisc", "replace"]]  # fmt: skip
    assert added and added[0][4] == "eth0" and TBF_HANDLE in added[0]
    assert tbf.notes["mtu"] == "1500" and tbf.notes["tbf_interface"] == "eth0"
    tbf.stop()
    last = ctx.pool[client].commands[-1]
    assert last[:3] == ["tc", "qdisc", "del"] and TBF_HANDLE in last


@pytest.mark.parametrize("engine", ["docker", "rootless-docker", "podman", "rootless-podman",
                                    "podman-fuse-overlayfs"])  # fmt: skip
def test_a_teardown_kills_at_once_in_every_engine(engine):
    # podman's --force waits 10 s for a SIGTERM that a tool as PID 1 ignores; docker's kills
    argv = force_remove(["x"], engine, "c1", "c2")
    podman = "podman" in engine
    assert argv == ["x", "rm", "--force", *(["--time", "0"] if podman else []), "c1", "c2"]


@pytest.mark.skipif(shutil.which("podman") is None, reason="podman is not installed")
def test_podman_takes_the_teardown_options():
    # a container that does not exist (--force: not an error); an option podman did not know
    # would fail the command (exit 125, "unknown flag")
    done = subprocess.run(force_remove(["podman"], "podman", "co-no-such-container"),
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0 and "unknown" not in done.stderr, done
