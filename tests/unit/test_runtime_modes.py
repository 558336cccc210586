"""The OCI runtime modes (docker-crun, docker-gvisor) without hosts: the `run` argv each builds,
the runtime's registration read from `docker info`, the reason a host without it is skipped
with, gVisor's platform and network in the notes, the probe that turns a tool gVisor cannot
run into `skipped`, and the lab daemon's runtime configuration."""

from __future__ import annotations

import itertools
import json
import shlex
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from pipeline import params
from pipeline.benchmarks import BENCHMARKS, Scenario, Window
from pipeline.benchmarks.footprint import EngineHandle
from pipeline.collect import engine_api, inventory
from pipeline.collect.images import ToolImage
from pipeline.collect.modes import MODES, NETWORK_MODES, STUDY_MODES, ModeUnavailable, Workload
from pipeline.collect.modes.base import Context, parse_runtimes, runtime_problem
from pipeline.collect.modes.docker_gvisor import gvisor_notes, runtime_flag
from tests.unit.fake_engine import Engine

ROOT = Path(__file__).resolve().parents[2]
CAMPAIGNS = itertools.count()
RUNTIMES = ("docker-crun", "docker-gvisor")
# `docker info --format '{{json .Runtimes}}'` of a lab node (Docker 20.10, runtimes registered
# by pipeline/lab/dockerd.py with gVisor's kvm platform unusable)
LAB_RUNTIMES = json.dumps({
    "crun": {"path": "/usr/bin/crun"},
    "io.containerd.runc.v2": {"path": "runc"},
    "io.containerd.runtime.v1.linux": {"path": "runc"},
    "runc": {"path": "runc"},
    "runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--platform=ptrace", "--network=host"]},
    "runsc-ptrace": {"path": "/usr/bin/runsc",
                     "runtimeArgs": ["--platform=ptrace", "--network=host"]},
})  # fmt: skip
# the same without the runtime modes' runtimes (a host's stock dockerd)
STOCK_RUNTIMES = json.dumps({"io.containerd.runc.v2": {"path": "runc"},
                             "runc": {"path": "runc"}})  # fmt: skip


class Host:
    """Answers the commands the runtime modes send to a host; records every one."""

    def __init__(self, runtimes: str = LAB_RUNTIMES, probe: tuple[int, str] = (0, "fio-3.33"),
                 start: tuple[int, str] = (0, "")):  # fmt: skip
        self.runtimes, self.probe, self.start = runtimes, probe, start
        self.commands: list[str] = []

    def run(self, command, check=True, **kwargs):
        text = command if isinstance(command, str) else shlex.join(command)
        self.commands.append(text)
        if "info --format" in text:
            return SimpleNamespace(status=0 if self.runtimes else 1, stdout=self.runtimes,
                                   stderr="" if self.runtimes else "Cannot connect")  # fmt: skip
        if "--version" in text and "run" not in text.split():
            return SimpleNamespace(status=0, stdout="runsc version 0.0~20221219.0\n", stderr="")
        if "-start" in text and " run " in f" {text} ":
            return SimpleNamespace(status=self.start[0], stdout="", stderr=self.start[1])
        if "-probe" in text and " run " in f" {text} ":
            status, out = self.probe
            return SimpleNamespace(status=status, stdout=out, stderr="")
        if "inspect" in text:
            return SimpleNamespace(status=0, stdout="172.18.0.2 \n", stderr="")
        return SimpleNamespace(status=0, stdout="", stderr="")


def _ctx(host: Host) -> Context:
    """A campaign of its own: the modes keep what they probed per campaign."""
    inv = inventory.load(ROOT / "inventory/lab.yaml", known_modes=MODES, check_files=False)
    campaign = f"c0ffee{next(CAMPAIGNS)}"
    ctx = Context(inventory=inv, pool={name: host for name in inv.hosts}, campaign=campaign)
    ctx.images[("node1", "docker")] = ToolImage("node1", "tools:docker", "sha256:1", {})
    _engine_api(ctx)
    return ctx


def _engine_api(ctx: Context) -> None:
    """The servers' Docker API (inspection): a miniature engine where every container the fake
    session ran is running with the address the session's inspect used to print."""
    engine = Engine(any_container="172.18.0.2")
    for server in ctx.inventory.servers:
        ctx.apis[(server.name, "docker")] = engine_api.connect(engine.transport, timeout=10)


def test_runtime_modes_are_docker_bridge_with_another_runtime():
    for name, runtime in zip(RUNTIMES, ("crun", "runsc"), strict=True):
        mode = MODES[name]
        assert mode.runtime == runtime and mode.engine == "docker"
        assert mode.paths == MODES["docker-bridge"].paths
        assert name in STUDY_MODES and name in NETWORK_MODES
    assert MODES["docker-bridge"].runtime is None
    assert MODES["docker-bridge"].engine_options(_ctx(Host())) == []


@pytest.mark.parametrize("name", ["cpu", "memory", "disk", "syscall", "coldstart", "footprint",
                                  "density"])  # fmt: skip
def test_runtime_modes_apply_to_the_host_and_scenario_benchmarks(name):
    assert set(RUNTIMES) <= set(BENCHMARKS[name].modes)


def test_registered_runtimes_from_docker_info():
    found = parse_runtimes(LAB_RUNTIMES)
    assert found["runsc"] == ["--platform=ptrace", "--network=host"] and found["crun"] == []
    assert "runc" in found and "runsc-kvm" not in found
    assert parse_runtimes("") == {} and parse_runtimes("[1, 2]") == {}
    assert parse_runtimes('{"x": "not a spec"}') == {"x": []}


@pytest.mark.parametrize(("mode", "runtime", "package"),
                         [("docker-crun", "crun", "crun"), ("docker-gvisor", "runsc", "runsc")])
def test_a_dockerd_without_the_runtime_is_skipped_with_the_fix(mode, runtime, package):
    ctx = _ctx(Host(runtimes=STOCK_RUNTIMES))
    reason = MODES[mode].available(ctx, "dc")
    assert reason.startswith(f"OCI runtime {runtime} is not registered with dockerd on node1 "
                             "(registered: io.containerd.runc.v2, runc)")  # fmt: skip
    assert f"apt-get install {package}" in reason
    assert f'{{"runtimes": {{"{runtime}": {{"path": "/usr/bin/{runtime}"' in reason
    assert ('"runtimeArgs": ["--platform=ptrace", "--network=host"]' in reason) == (
        runtime == "runsc")
    assert "/etc/docker/daemon.json" in reason and "reload dockerd" in reason
    assert MODES[mode].available(_ctx(Host()), "dc") is None  # the lab's dockerd has it
    assert MODES["docker-bridge"].available(ctx, "dc") is None  # runc: no probe at all


def test_a_runtime_that_cannot_start_a_container_here_is_skipped_with_its_message():
    refused = ("docker: Error response from daemon: failed to create shim task: OCI runtime "
               "create failed: cgroups in hybrid mode not supported, drop all controllers from "
               "cgroupv2: unknown.\nRun 'docker run --help' for more information")  # fmt: skip
    host = Host(start=(125, refused))
    ctx = _ctx(host)
    ctx.image_paths = ["/usr/bin/iperf3"]
    reason = MODES["docker-crun"].available(ctx, "dc")
    assert reason.startswith("dockerd on node1 cannot start a container with OCI runtime crun: "
                             "docker: Error response from daemon: failed to create shim task")
    assert "cgroups in hybrid mode not supported" in reason
    started = [c for c in host.commands if "-start" in c and " run " in c]
    assert len(started) == 1 and "--runtime crun" in started[0]
    assert started[0].endswith("tools:docker /usr/bin/iperf3 --version")
    assert MODES["docker-crun"].available(ctx, "local") == reason  # asked once per campaign
    assert len([c for c in host.commands if "-start" in c and " run " in c]) == 1
    # the tool itself failing (exit 1: no such option) still means the runtime started it
    ok = _ctx(Host(start=(1, "nginx: invalid option")))
    ok.image_paths = ["/usr/sbin/nginx"]
    assert MODES["docker-gvisor"].available(ok, "dc") is None


def test_a_silent_dockerd_is_the_reason():
    reason = runtime_problem(_ctx(Host(runtimes="")), _ctx(Host()).inventory.servers[0], "crun")
    assert reason == "docker does not answer on node1 (docker info failed)"


def test_the_server_container_runs_with_the_runtime():
    host = Host()
    ctx = _ctx(host)
    workload = Workload("throughput-tcp", ("/usr/bin/iperf3", "--server"), 5201)
    deployment = MODES["docker-crun"].start(ctx, workload)
    run = next(c for c in host.commands if " run --detach " in c)
    assert "--runtime crun" in run and run.endswith("tools:docker /usr/bin/iperf3 --server")
    assert run.index("--runtime crun") < run.index("tools:docker")
    assert deployment.address == deployment.local_address == "172.18.0.2"
    assert deployment.notes["oci_runtime"] == "crun"
    # docker-bridge's run takes no --runtime: dockerd's default (runc)
    host.commands.clear()
    MODES["docker-bridge"].start(ctx, workload)
    assert not any("--runtime" in c for c in host.commands)


def test_host_benchmarks_run_the_tool_under_the_runtime():
    ctx = _ctx(Host())
    workload = Workload("cpu-1thread", ("/usr/bin/sysbench", "--version"), 0)
    wrapped = MODES["docker-gvisor"].foreground(ctx, workload).client_command(["sysbench", "cpu"])
    assert "docker run --rm --name" in wrapped and "--runtime runsc" in wrapped
    assert wrapped.endswith("tools:docker sysbench cpu")
    crun = MODES["docker-crun"].foreground(ctx, workload).client_command(["sysbench", "cpu"])
    assert "--runtime crun" in crun


def test_gvisor_platform_and_network_from_the_runtime_arguments():
    assert gvisor_notes(["--platform=kvm"])["gvisor_platform"] == "kvm"
    assert gvisor_notes([])["gvisor_platform"] == "ptrace (runsc's default)"
    assert gvisor_notes(["--platform", "ptrace"])["gvisor_platform"] == "ptrace"
    assert gvisor_notes([])["gvisor_network"].startswith("netstack")
    assert gvisor_notes(["--network=host"])["gvisor_network"].startswith("hostinet")
    assert runtime_flag(["--debug", "--platform"], "platform") is None
    notes = MODES["docker-gvisor"].run_notes(_ctx(Host()))
    assert notes["gvisor_platform"] == "ptrace" and notes["oci_runtime"] == "runsc"
    assert notes["oci_runtime_version"] == "runsc version 0.0~20221219.0"
    assert notes["oci_runtime_args"] == "--platform=ptrace --network=host"


def test_a_tool_gvisor_cannot_run_is_skipped_with_its_message_once_per_campaign():
    lacking = "fio: io_setup: Function not implemented\nfio: pid=9, err=38/file:engines/libaio.c"
    host = Host(probe=(1, lacking))
    ctx = _ctx(host)
    disk = BENCHMARKS["disk"]()
    workload = Workload("disk-randread", tuple(disk.probe_argv("randread")), 0)
    with pytest.raises(ModeUnavailable) as skipped:
        MODES["docker-gvisor"].foreground(ctx, workload)
    reason = str(skipped.value)
    assert reason.startswith("/usr/bin/fio does not run under gVisor here (runsc, platform ptrace)")
    assert "io_setup: Function not implemented" in reason and "exited 1" in reason
    assert "leave docker-gvisor out of its modes in the profile" in reason
    probes = [c for c in host.commands if "-probe" in c and " run " in c]
    assert len(probes) == 1 and "--runtime runsc" in probes[0] and "--ioengine=libaio" in probes[0]
    with pytest.raises(ModeUnavailable):  # the next step of the campaign: no second probe
        MODES["docker-gvisor"].foreground(ctx, workload)
    assert len([c for c in host.commands if "-probe" in c and " run " in c]) == 1
    # a tool that runs: the step goes ahead
    MODES["docker-gvisor"].foreground(_ctx(Host(probe=(0, "ok"))), workload)


def test_probes_use_the_features_the_measured_runs_use():
    disk = BENCHMARKS["disk"]()
    measured = set(disk.client_argv("seqwrite", "", Window(seconds=1)))
    probe = disk.probe_argv("seqwrite")
    assert {"--direct=1", "--ioengine=libaio", "--rw=write", "--bs=1M"} <= measured & set(probe)
    syscall = BENCHMARKS["syscall"]()
    assert syscall.probe_argv("sched-pipe") == syscall.version_argv()  # before prepare()
    syscall.cpu = 1
    probe = syscall.probe_argv("sched-pipe")
    assert probe[:3] == ["/usr/bin/taskset", "--cpu-list", "1"] and "--null" in probe
    assert probe[-3:] == ["sched", "pipe", "--loop=10000"]
    assert BENCHMARKS["cpu"]().probe_argv("1thread") == BENCHMARKS["cpu"]().version_argv()


def _scenario(ctx: Context, mode: str) -> Scenario:
    return Scenario(ctx=ctx, mode=mode, engine="docker", host=ctx.inventory.servers[0],
                    variant="idle", run=1, window=Window(1), warmup=Window(1), prefix="co-x",
                    labels=["--label", "l=x"],
                    engine_options=MODES[mode].engine_options(ctx))  # fmt: skip


def test_scenario_benchmarks_start_their_containers_under_the_runtime():
    ctx = _ctx(Host())
    assert MODES["docker-gvisor"].engine_options(ctx) == ["--runtime", "runsc"]
    handle = EngineHandle(_scenario(ctx, "docker-gvisor"), 60)
    assert "--runtime runsc" in handle.run_command("co-x-1")
    coldstart = BENCHMARKS["coldstart"]()
    args = coldstart.container_args(_scenario(ctx, "docker-crun"), ["docker"], "tools:docker",
                                    ["--runtime", "crun"])  # fmt: skip
    run = json.loads(args[args.index("--start") + 1])
    assert run[run.index("--runtime") + 1] == "crun" and run.index("--runtime") < run.index(
        "tools:docker"
    )


def test_the_smoke_profile_leaves_the_runtime_modes_to_their_own_test():
    loaded = params.load("params.yaml", root=ROOT)
    smoke = params.Params(raw=loaded.raw, profile=params.read_yaml(
        ROOT / "conf/profiles/smoke.yaml"))  # fmt: skip
    planned = smoke.modes("throughput")
    kubernetes = [m for m in STUDY_MODES if m.startswith("k8s-")]  # test_kubernetes_lab.py's
    assert planned == [m for m in STUDY_MODES if m not in RUNTIMES and m not in kubernetes]
    assert smoke.modes("disk") == planned  # "all" minus them; the plan keeps disk's own modes
    study = params.Params(raw=loaded.raw, profile=params.read_yaml(
        ROOT / "conf/profiles/study.yaml"))  # fmt: skip
    assert study.modes("throughput") is None  # all, the runtime modes included
    bad = {**params.read_yaml(ROOT / "conf/profiles/smoke.yaml"), "without_modes": "docker-kata"}
    assert any(p.startswith("smoke.without_modes: must be comma-separated mode names")
               for p in params.check_profile(bad, "smoke"))  # fmt: skip


def test_lab_dockerd_registers_the_installed_runtimes(monkeypatch, tmp_path):
    from pipeline.lab import dockerd

    paths = {"crun": "/usr/bin/crun", "runsc": "/usr/bin/runsc"}
    monkeypatch.setattr(dockerd.shutil, "which", lambda name, path=None: paths.get(name))
    for kvm, platform in ((False, "ptrace"), (True, "kvm")):
        dockerd.runtimes.cache_clear()
        monkeypatch.setattr(dockerd, "kvm_platform_works", lambda runsc, kvm=kvm: kvm)
        found = dockerd.runtimes()
        assert found["crun"] == {"path": "/usr/bin/crun"}
        assert found["runsc"]["runtimeArgs"] == [f"--platform={platform}", "--network=host"]
        assert ("runsc-kvm" in found) is kvm and "runsc-ptrace" in found
    paths.clear()
    dockerd.runtimes.cache_clear()
    assert dockerd.runtimes() == {}  # nothing installed: nothing registered, the modes skip
    dockerd.runtimes.cache_clear()


def test_podman_records_the_runtime_it_runs_containers_with():
    class Podman(Host):
        def run(self, command, check=True, **kwargs):
            text = command if isinstance(command, str) else shlex.join(command)
            self.commands.append(text)
            out = "crun\n" if "OCIRuntime" in text else ""
            return SimpleNamespace(status=0, stdout=out, stderr="")

    ctx = _ctx(Podman())
    ctx.images[("node1", "podman")] = ToolImage("node1", "tools:podman", "sha256:2", {})
    workload = Workload("cpu-1thread", ("/usr/bin/sysbench", "--version"), 0)
    deployment = MODES["podman"].foreground(ctx, workload)
    assert deployment.notes["oci_runtime"] == "crun"
    assert "podman-crun" not in MODES  # podman's default is crun already (podman.py)


def test_a_scenario_step_hands_the_runtime_to_the_benchmark_and_records_it(tmp_path, monkeypatch):
    from pipeline.benchmarks.base import Outcome
    from pipeline.benchmarks.coldstart import Coldstart
    from pipeline.collect.campaign import Campaign, Profile
    from pipeline.collect.session import SessionClock

    bench = Coldstart()
    inv = inventory.load(ROOT / "inventory/lab.yaml", known_modes=MODES, check_files=False)
    campaign = Campaign(bench, inv, Profile(1, 1, 0, 1), tmp_path, seed=5,
                        modes=["docker-gvisor"], log=lambda _: None)  # fmt: skip
    campaign.tool_version, campaign.binary_sha = "nginx/1.22.1", {}
    seen = []
    monkeypatch.setattr(bench, "binaries", ())
    monkeypatch.setattr(bench, "measure", lambda sc: seen.append(sc.engine_options)
                        or Outcome(samples=[], window_s=1.0, notes={"engine": "docker"}))
    monkeypatch.setattr(campaign, "_host_rows", lambda ctx, run: [])
    monkeypatch.setattr(campaign, "_headline", lambda row, samples: "")
    ctx = Context(inventory=inv, pool={n: Host() for n in inv.hosts}, campaign=campaign.id)
    campaign._measure_all(ctx, campaign.steps, SessionClock())
    assert seen == [["--runtime", "runsc"]]
    runs = pd.concat(pd.read_parquet(p) for p in campaign.data.parts.glob("run-*.runs.parquet"))
    notes = json.loads(runs["notes"].iloc[0])
    assert notes["engine"] == "docker" and notes["gvisor_platform"] == "ptrace"
    assert runs["status"].iloc[0] == "ok"


def test_gvisor_sandbox_and_gofer_count_with_their_shim():
    from pipeline.benchmarks.footprint import Proc, Reading, engine_memory

    cid = "a9a2703f3f464aa53bd0975fd86f68d805577092988d4dfa582b781f1e6969e8"
    root = "--root=/run/container-overhead-lab/node1/exec/runtime-runc/moby"
    procs = [  # as `ps` showed them on the lab (runsc 20221219 under Docker 20.10)
        Proc(20454, 1, 0, "n1", "dockerd", 99124, 61000, "dockerd --config-file x"),
        Proc(20496, 20454, 0, "n1", "containerd", 43404, 30000, "containerd --config y"),
        Proc(10784, 1, 0, "n1", "containerd-shim", 13236, 3836,
             f"/usr/bin/containerd-shim-runc-v2 -namespace moby -id {cid} -address z"),
        Proc(10802, 10784, 0, "n1", "exe", 19368, 5479, f"runsc-gofer {root} gofer --bundle b"),
        Proc(10807, 10784, 65534, "c1", "exe", 20804, 5797, f"runsc-sandbox {root} boot {cid}"),
        Proc(10831, 10807, 65534, "c1", "exe", 4, 4, "[exe]"),
        # rootless dockerd's rootlesskit child: an `exe` too, not the container's
        Proc(21395, 21370, 60777, "r1", "exe", 8764, 5000, "/proc/self/exe --net=slirp4netns"),
    ]  # fmt: skip
    reading = Reading(netns="n1", mem_total_kib=4_000_000, mem_available_kib=3_000_000,
                      containers={cid: "/var/run/docker/netns/abc"},
                      processes={p.pid: p for p in procs})  # fmt: skip
    memory = engine_memory(reading, "docker", 0)
    assert memory.processes["shim"] == 4 and memory.pss_kib["shim"] == 3836 + 5479 + 5797 + 4
    assert memory.processes["helper"] == 0  # the rootlesskit child is not counted
    assert memory.pss_kib["daemon"] == 61000 and memory.pss_kib["containerd"] == 30000


def test_podman_falls_back_on_crun_refusing_its_limits_as_on_runc():
    from pipeline.collect.modes.podman import with_ulimit_fallback
    from pipeline.collect.remote import RemoteError

    refusal = ("Error: crun: setrlimit `RLIMIT_NOFILE`: Operation not permitted: OCI permission "
               "denied")  # podman 4.3 with crun 1.8.1 on the lab
    tried = []

    def run(ulimits):
        tried.append(ulimits)
        if not ulimits:
            raise RemoteError("node1", "podman run", 126, refusal)

    class Limits(Host):
        def run(self, command, check=True, **kwargs):
            return SimpleNamespace(status=0, stdout="1048576\n", stderr="")

    options, said = with_ulimit_fallback(_ctx(Limits()), _ctx(Host()).inventory.servers[0], run)
    assert tried[0] == [] and options == tried[1]
    assert options == ["--ulimit", "nofile=1048576:1048576", "--ulimit", "nproc=16384:16384"]
    assert said.endswith("(podman's defaults refused: no CAP_SYS_RESOURCE)")


# perf bench's output of the probe (10,000 getppid()) in gVisor on the lab (runsc, ptrace)
GVISOR_SYSCALL_PROBE = """# Running 'syscall/basic' benchmark:
# Executed 10000 getppid() calls
     Total time: 0.139 [sec]

      13.894720 usecs/op
          71969 ops/sec
"""


def test_syscall_runs_fewer_operations_where_the_probe_says_they_are_slow():
    syscall = BENCHMARKS["syscall"]()
    syscall.cpu = 1
    window = Window(seconds=2)
    notes = syscall.calibrate("syscall-basic", GVISOR_SYSCALL_PROBE)
    assert syscall.loops["syscall-basic"] == 72_000  # ~1 s at 13.9 us, two digits
    assert "--loop=72000" in syscall.client_argv("syscall-basic", "", window)
    assert notes["loops"] == ("72000 per run, not 8000000: the probe's 13.8947 us per operation "
                              "would make a run of 8000000 take 111 s")  # fmt: skip
    # the next step (another mode: no probe, or a fast one) runs the fixed count again
    assert syscall.calibrate("syscall-basic", "") == {}
    assert "--loop=8000000" in syscall.client_argv("syscall-basic", "", window)
    fast = GVISOR_SYSCALL_PROBE.replace("13.894720", "0.150000")
    assert syscall.calibrate("syscall-basic", fast) == {}
    assert syscall.loops["syscall-basic"] == 8_000_000
    assert syscall.calibrate("sched-pipe", "perf: garbage") == {}  # not perf's: the fixed count
    assert BENCHMARKS["cpu"]().calibrate("1thread", GVISOR_SYSCALL_PROBE) == {}


def test_gvisor_hands_its_probe_output_to_the_step():
    host = Host(probe=(0, GVISOR_SYSCALL_PROBE))
    workload = Workload("syscall-syscall-basic", ("/usr/bin/perf", "bench"), 0)
    deployment = MODES["docker-gvisor"].foreground(_ctx(host), workload)
    assert deployment.probe_output == GVISOR_SYSCALL_PROBE
    assert MODES["docker-crun"].foreground(_ctx(host), workload).probe_output == ""


class HungClient(Host):
    """Every client run hangs (the SSH session times out); everything else answers."""

    def run(self, command, check=True, **kwargs):
        from pipeline.collect.remote import RemoteError

        text = command if isinstance(command, str) else shlex.join(command)
        if "iperf3 --client" in text:
            self.commands.append(text)
            raise RemoteError("dc-client", text, None, reason="timed out after 60.5 s")
        if "State.Status" in text:
            return SimpleNamespace(status=0, stdout="running (exit code 0)\n", stderr="")
        if "docker logs" in text:
            return SimpleNamespace(status=0, stdout="Server listening on 5201\n", stderr="")
        return super().run(command, check=check, **kwargs)


def test_a_server_that_fails_its_client_under_gvisor_skips_its_steps(tmp_path, monkeypatch):
    from pipeline.benchmarks.throughput import Throughput
    from pipeline.collect.campaign import Campaign, Profile
    from pipeline.collect.modes.base import Deployment
    from pipeline.collect.session import SessionClock

    inv = inventory.load(ROOT / "inventory/lab.yaml", known_modes=MODES, check_files=False)
    campaign = Campaign(Throughput(), inv, Profile(1, 1, 0, 1), tmp_path, seed=3,
                        modes=["native", "docker-gvisor"], paths=("dc",),
                        log=lambda _: None)  # fmt: skip
    campaign.tool_version = "iperf 3.12"
    campaign.binary_sha = {"node1": {"/usr/bin/iperf3": "a" * 64}}
    native = Deployment(server=inv.servers[0], address="10.77.0.11", stop=lambda: None)
    monkeypatch.setattr(MODES["native"], "start", lambda ctx, workload: native)
    monkeypatch.setattr(MODES["native"], "available", lambda ctx, path: None)
    monkeypatch.setattr(MODES["docker-gvisor"], "available", lambda ctx, path: None)
    monkeypatch.setattr(campaign, "_host_rows", lambda ctx, run: [])
    monkeypatch.setattr(campaign, "_headline", lambda row, samples: "")
    host = HungClient()
    ctx = Context(inventory=inv, pool={n: host for n in inv.hosts}, campaign=campaign.id)
    ctx.images[("node1", "docker")] = ToolImage("node1", "tools:docker", "sha256:1",
                                                {"/usr/bin/iperf3": "a" * 64})  # fmt: skip
    _engine_api(ctx)
    with pytest.raises(Exception, match="timed out"):  # native has no account: it stops
        campaign._measure_all(ctx, [s for s in campaign.steps if s.mode == "native"][:1],
                              SessionClock())  # fmt: skip
    gvisor = [s for s in campaign.steps if s.mode == "docker-gvisor"]
    campaign._measure_all(ctx, gvisor, SessionClock())
    runs = pd.concat(pd.read_parquet(p) for p in campaign.data.parts.glob("run-*.runs.parquet"))
    assert list(runs["status"]) == ["skipped", "skipped"]
    first, second = runs.sort_values("order")["reason"]
    assert first.startswith("/usr/bin/iperf3 does not serve its client under gVisor here (runsc,"
                            " platform ptrace, network hostinet): the client: iperf3 on dc-client"
                            " timed out after 60.5 s; the server is running (exit code 0) and "
                            "logged: Server listening on 5201.")  # fmt: skip
    assert "leave docker-gvisor out of its modes in the profile" in first
    assert second == first  # the second variant: skipped at its start, no second hang
    clients = [c for c in host.commands if "iperf3 --client" in c]
    assert len(clients) == 1 + 1  # native's one, gVisor's first variant's one


def test_latency_retries_a_container_address_not_reachable_yet():
    latency = BENCHMARKS["latency"]()
    said = "sockperf failed: ERROR: Can`t connect socket (errno=113 No route to host)"
    assert latency.is_connect_error(said)
    assert not latency.is_connect_error("sockperf: ERROR: recvfrom() Failed receiving")
