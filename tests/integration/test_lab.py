"""The embedded lab end to end: up (cold and warm), SSH with verified host keys, per-node
dockerd, Swarm and overlay, the WAN path, and a down() that leaves nothing behind.

Needs root; brings the lab up and tears it down (so do not run it while a campaign uses
the lab). Run with `pytest -m lab tests/integration/test_lab.py -s` to see the timings.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import time
import uuid
from pathlib import Path

import paramiko
import pytest

from pipeline.lab import RUN_DIR, STATE_DIR, WanProfile, down, rootless, status, up
from pipeline.lab import cpus as lab_cpus
from pipeline.lab import dockerd as lab_dockerd
from pipeline.lab import network as lab_network
from pipeline.lab import sshd as lab_sshd
from pipeline.lab.commands import in_netns
from pipeline.lab.topology import (
    CLIENT_KEY,
    DC_CLIENT,
    HOSTS,
    INET_CLIENT,
    KNOWN_HOSTS,
    NODES,
    RULE_COMMENT,
    SSH_HOSTS,
    Host,
)

pytestmark = [
    pytest.mark.lab,
    pytest.mark.runs_last,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root"),
    pytest.mark.skipif(shutil.which("dockerd") is None, reason="dockerd is not installed"),
]

TEST_LABEL = "container-overhead-lab-test"
IMAGE = "lab-test-iperf3:latest"


# Paths outside the lab directories that the lab or its daemons create.
ROOT_PATHS = [Path(p) for p in ("/run/docker.sock", "/run/docker", "/run/containerd",
                                "/var/lib/docker")]  # fmt: skip


@pytest.fixture(scope="module")
def lab():
    """The lab, brought up from nothing; yields which ROOT_PATHS existed before it."""
    down()
    before = {p for p in ROOT_PATHS if os.path.lexists(p)}
    started = time.monotonic()
    up()
    print(f"\ncold up: {time.monotonic() - started:.1f} s")
    yield before
    down()


# ---- helpers -------------------------------------------------------------------------


def sh(*args: str, timeout: float = 60, input: bytes | None = None) -> str:
    proc = subprocess.run(args, capture_output=True, timeout=timeout, input=input, check=False)
    assert proc.returncode == 0, f"{args}: {proc.stderr.decode(errors='replace')}"
    return proc.stdout.decode()


def node_docker(node: Host, *args: str, timeout: float = 60) -> str:
    return sh("docker", "-H", node.docker_host, *args, timeout=timeout).strip()


def ssh_client(host: Host, known_hosts: Path = KNOWN_HOSTS) -> paramiko.SSHClient:
    client = paramiko.SSHClient()
    client.load_host_keys(str(known_hosts))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(
        host.address,
        username="root",
        key_filename=str(CLIENT_KEY),
        look_for_keys=False,
        allow_agent=False,
        timeout=10,
    )
    return client


def ssh_run(host: Host, command: str, timeout: float = 30) -> str:
    client = ssh_client(host)
    try:
        _, stdout, stderr = client.exec_command(command, timeout=timeout)
        out, err = stdout.read().decode(), stderr.read().decode()
        assert stdout.channel.recv_exit_status() == 0, f"{host.name}: {command}: {err}"
        return out.strip()
    finally:
        client.close()


def connect_rtts_ms(address: str, samples: int = 7) -> list[float]:
    """TCP handshake times to the host's sshd: one round trip per sample."""
    assert lab_network.routed_through_lab(address), f"{address} is not routed via the lab"
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        with socket.create_connection((address, 22), timeout=5):
            times.append((time.perf_counter() - started) * 1000)
    return times


def emulator_log_tail() -> str:
    log = RUN_DIR / "wan-emulator.log"
    return "\n".join(log.read_text().splitlines()[-5:]) if log.exists() else "(no log)"


def build_iperf3_rootfs(root: Path) -> Path:
    """iperf3 and the libraries ldd lists, as a tarball for `docker import`."""
    binary = shutil.which("iperf3")
    assert binary, "iperf3 is not installed"
    files = [Path(binary)]
    for line in sh("ldd", binary).splitlines():
        parts = line.split()
        path = parts[2] if "=>" in parts and len(parts) > 2 else parts[0]
        if path.startswith("/"):
            files.append(Path(path))
    for src in files:
        dest = root / "rootfs" / src.relative_to("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src.resolve(), dest)
    tmp = root / "rootfs" / "tmp"  # iperf3 keeps its send buffer in a temp file
    tmp.mkdir()
    tmp.chmod(0o1777)
    tarball = root / "rootfs.tar"
    sh("tar", "-C", str(root / "rootfs"), "-cf", str(tarball), ".")
    return tarball


@pytest.fixture(scope="module")
def iperf3_image(lab, tmp_path_factory):
    tarball = build_iperf3_rootfs(tmp_path_factory.mktemp("iperf3-image"))
    for node in NODES:
        node_docker(node, "import", str(tarball), IMAGE)
    return IMAGE


def remove_test_containers() -> None:
    for node in NODES:
        ids = node_docker(node, "ps", "-aq", "--filter", f"label={TEST_LABEL}")
        if ids:
            node_docker(node, "rm", "-f", *ids.split())


def iperf3_pair(server: Host, client: Host | None, network: str) -> dict:
    """Run an iperf3 server container on `server` and a 1 s client against its address,
    in a container on `client` (or natively in the dc-client namespace when None)."""
    name = f"lab-test-{uuid.uuid4().hex[:8]}"
    try:
        node_docker(server, "run", "-d", "--name", name, "--label", TEST_LABEL,
                    "--network", network, IMAGE, "iperf3", "-s", "-1")  # fmt: skip
        address = node_docker(
            server, "inspect", name, "--format",
            f"{{{{(index .NetworkSettings.Networks \"{network}\").IPAddress}}}}",
        )  # fmt: skip
        assert address, f"no {network} address for the server container"
        iperf3 = ["iperf3", "-c", address, "-t", "1", "-J", "--connect-timeout", "5000"]
        time.sleep(0.5)  # let the server bind before the client dials
        if client is None:
            out = sh("nsenter", f"--net={DC_CLIENT.netns}", *iperf3, timeout=30)
        else:
            out = node_docker(client, "run", "--rm", "--label", TEST_LABEL,
                              "--network", network, IMAGE, *iperf3, timeout=60)  # fmt: skip
        return json.loads(out)
    finally:
        remove_test_containers()


# ---- the lab up ----------------------------------------------------------------------


def test_status_all_healthy(lab):
    health = status()
    missing = [name for name, ok in health.items() if not ok]
    assert not missing, f"unhealthy after up: {missing}"


def test_second_up_is_fast(lab):
    started = time.monotonic()
    up()
    elapsed = time.monotonic() - started
    print(f"\nwarm up: {elapsed:.2f} s")
    assert elapsed < 10


@pytest.mark.parametrize("host", SSH_HOSTS, ids=lambda h: h.name)
def test_ssh_with_verified_host_key_lands_on_named_host(lab, host):
    assert ssh_run(host, "hostname") == host.name


def test_lab_sessions_run_without_the_controllers_bashrc(lab):
    """bash sources ~/.bashrc for every SSH command; the lab masks the controller's in its
    hosts' mount namespaces (the file itself is untouched), and Session sets TCP_NODELAY."""
    from pipeline.collect import inventory
    from pipeline.collect.modes import MODES
    from pipeline.collect.remote import Pool

    inv = inventory.load(Path(__file__).parents[2] / "inventory" / "lab.yaml", MODES)
    with Pool(inv) as pool:
        sock = pool[inv.dc_client.name].transport.sock
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    bashrc = Path(lab_sshd.ROOT_BASHRC)
    if not bashrc.exists() or bashrc.stat().st_size == 0:
        pytest.skip(f"{bashrc} is absent or empty on this controller: nothing to mask")
    for host in SSH_HOSTS:
        assert ssh_run(host, f"wc -c < {lab_sshd.ROOT_BASHRC}") == "0", host.name
    assert bashrc.stat().st_size > 0


def test_ssh_rejects_a_wrong_host_key(lab, tmp_path):
    """Control for the test above: RejectPolicy really checks the known_hosts entries."""
    lines = KNOWN_HOSTS.read_text().splitlines()
    wrong = [f"{lines[0].split()[0]} {' '.join(lines[1].split()[1:])}", *lines[1:]]
    forged = tmp_path / "known_hosts"
    forged.write_text("\n".join(wrong) + "\n")
    with pytest.raises(paramiko.BadHostKeyException):
        ssh_client(SSH_HOSTS[0], known_hosts=forged).close()


@pytest.mark.parametrize("node", NODES, ids=lambda h: h.name)
def test_docker_over_ssh_talks_to_the_node_daemon(lab, node):
    assert ssh_run(node, "docker info --format '{{.Name}}'") == node.name


def test_swarm_has_three_ready_nodes(lab):
    out = ssh_run(NODES[0], "docker node ls --format '{{.Hostname}} {{.Status}}'")
    assert sorted(out.splitlines()) == [f"{n.name} Ready" for n in NODES]


def test_overlay_network_exists(lab):
    fmt = "{{.Driver}} {{.Attachable}} {{(index .IPAM.Config 0).Subnet}}"
    out = ssh_run(NODES[0], f"docker network inspect lab-overlay --format '{fmt}'")
    assert out == "overlay true 10.201.1.0/24"


def test_overlay_carries_traffic_from_node3_to_node2(iperf3_image):
    result = iperf3_pair(NODES[1], NODES[2], "lab-overlay")
    assert result["end"]["sum_received"]["bytes"] > 0


def test_dc_client_dials_a_bridge_container_directly(iperf3_image):
    result = iperf3_pair(NODES[0], None, "bridge")
    assert result["end"]["sum_received"]["bytes"] > 0


def _allowed(pid: int) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split()[1]
    raise AssertionError(f"no Cpus_allowed_list for {pid}")


@pytest.mark.skipif(lab_cpus.unavailable() is not None, reason="no cgroup v1 cpuset here")
def test_network_placement_splits_the_hosts_cpus_and_shared_restores_them(iperf3_image):
    """A network campaign's "split": every process of the server's host (SSH sessions,
    dockerd, a container started before and one started after) on the first CPUs, every other
    host's on the rest; "shared" gives everything every CPU again. Podman's parent cgroup
    follows node1 (a child cgroup stands in for a podman container's)."""
    every = lab_cpus.fmt(lab_cpus.machine_cpus())
    server, client = lab_cpus.plan("split")["node1"], lab_cpus.plan("split")["dc-client"]
    assert server and client and not set(server) & set(client)
    server, client = lab_cpus.fmt(server), lab_cpus.fmt(client)
    dockerd_pid = int(lab_dockerd.pidfile(NODES[0]).read_text())
    pods = lab_cpus.PODMAN_PARENT / f"lab-test-{uuid.uuid4().hex[:8]}"
    before = f"lab-test-{uuid.uuid4().hex[:8]}"
    after = f"lab-test-{uuid.uuid4().hex[:8]}"

    def container_pid(name: str) -> int:
        return int(node_docker(NODES[0], "inspect", name, "--format", "{{.State.Pid}}"))

    def run(name: str) -> int:
        node_docker(NODES[0], "run", "-d", "--name", name, "--label", TEST_LABEL,
                    IMAGE, "iperf3", "-s")  # fmt: skip
        return container_pid(name)

    try:
        assert lab_cpus.place("shared")["placement"] == "shared"
        early = run(before)
        assert _allowed(early) == every
        lab_cpus._make(pods)
        assert lab_cpus.place("split") == {
            "placement": "split",
            "cpus": {h.name: server if h == NODES[0] else client for h in SSH_HOSTS},
        }
        for host in SSH_HOSTS:
            want = server if host == NODES[0] else client
            assert ssh_run(host, "grep Cpus_allowed_list /proc/self/status").split()[1] == want
        assert _allowed(dockerd_pid) == server
        assert _allowed(early) == server, "a container started before moves too"
        assert _allowed(run(after)) == server
        assert (pods / "cpuset.cpus").read_text().strip() == server
        lab_cpus.place("shared")
        assert ssh_run(NODES[0], "grep Cpus_allowed_list /proc/self/status").split()[1] == every
        assert ssh_run(DC_CLIENT, "grep Cpus_allowed_list /proc/self/status").split()[1] == every
        assert _allowed(early) == _allowed(container_pid(after)) == every
        assert (pods / "cpuset.cpus").read_text().strip() == every
    finally:
        remove_test_containers()
        with contextlib.suppress(FileNotFoundError):
            pods.rmdir()
        lab_cpus.place("shared")


def test_wan_path_adds_the_configured_delay(lab):
    lan = statistics.median(connect_rtts_ms(DC_CLIENT.address))
    samples = connect_rtts_ms(INET_CLIENT.address)
    wan = statistics.median(samples)
    print(f"\nRTT dc-client {lan:.2f} ms, inet-client {wan:.1f} ms (20 ms each way)")
    assert lan < 5
    assert 36 <= wan <= 60, f"samples {samples}; emulator log:\n{emulator_log_tail()}"


def test_up_with_a_new_wan_profile_restarts_the_emulator(lab):
    try:
        up(WanProfile(delay_ms=50.0, jitter_ms=1.0))
        samples = connect_rtts_ms(INET_CLIENT.address)
        wan = statistics.median(samples)
        print(f"\nRTT inet-client {wan:.1f} ms (50 ms each way)")
        assert 96 <= wan <= 130, f"samples {samples}; emulator log:\n{emulator_log_tail()}"
    finally:
        up(WanProfile())


def test_status_notices_a_dead_sshd_and_up_repairs_it(lab):
    lab_sshd.stop(DC_CLIENT)
    assert status()[f"sshd {DC_CLIENT.name}"] is False
    up()
    assert status()[f"sshd {DC_CLIENT.name}"] is True


def test_up_resets_rootless_podman_whose_processes_were_killed(lab, tmp_path):
    """A run killed with the lab up (SIGKILL to everything, as a machine's shutdown of a
    session does) leaves podman's state recording a running container and its pause process
    gone: every podman call then fails until up() resets it."""
    podman = lambda *a: rootless.as_user(["podman", *a])  # noqa: E731
    image = tmp_path / "image"
    for f in ["/usr/bin/sleep", *shared_libraries("/usr/bin/sleep")]:
        (image / f.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, image / f.lstrip("/"))
    tar = subprocess.run(["tar", "-C", image, "-c", "."], capture_output=True, check=True).stdout
    subprocess.run(podman("import", "-", "localhost/lab-test-sleep:1"), input=tar, check=True,
                   capture_output=True)  # fmt: skip
    subprocess.run(in_netns(NODES[0].name, podman(
        "run", "-d", "--label", f"{rootless.LABEL}=test", "localhost/lab-test-sleep:1",
        "/usr/bin/sleep", "600")), check=True, capture_output=True)  # fmt: skip
    for pid in rootless.user_pids():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
    deadline = time.monotonic() + 10
    while rootless.user_pids() and time.monotonic() < deadline:
        time.sleep(0.1)
    broken = subprocess.run(podman("ps", "-a"), capture_output=True, text=True)
    assert "invalid internal status" in broken.stderr  # the state the reset is for

    up()
    listed = subprocess.run(podman("ps", "-aq", "--filter", f"label={rootless.LABEL}"),
                            capture_output=True, text=True, check=True)  # fmt: skip
    assert listed.stdout.split() == []  # the labelled container was removed
    assert status()[f"rootless dockerd {NODES[0].name} ({rootless.USER})"] is True
    subprocess.run(podman("rmi", "localhost/lab-test-sleep:1"), check=True, capture_output=True)


def shared_libraries(binary: str) -> list[str]:
    """The absolute paths of the libraries ldd lists for ``binary`` (its loader included)."""
    out = sh("ldd", binary)
    return [w for line in out.splitlines() for w in line.split() if w.startswith("/")]


# ---- the lab down --------------------------------------------------------------------


def lab_traces(paths_before: set[Path]) -> list[str]:
    """Everything of the lab still present on this machine (empty after a full down)."""
    found = [f"path {p}" for p in ROOT_PATHS if p not in paths_before and os.path.lexists(p)]
    netns = sh("ip", "netns", "list")
    found += [f"netns {h.name}" for h in HOSTS if h.name in netns.split()]
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if str(STATE_DIR) in cmdline or str(RUN_DIR) in cmdline:
            found.append(f"process {pid}: {cmdline.replace(chr(0), ' ')[:120]}")
    for line in sh("ip", "-br", "link", "show").splitlines():
        name = line.split()[0].split("@")[0]
        if name == "colab0" or name.startswith("co-"):
            found.append(f"link {name}")
    if RULE_COMMENT in sh("iptables-save"):
        found.append("iptables rule")
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4]
        if point.startswith((str(STATE_DIR), str(RUN_DIR))):
            found.append(f"mount {point}")
    found += [f"cgroup {p}" for p in Path("/sys/fs/cgroup").glob("*/container-overhead-lab")]
    found += [f"directory {d}" for d in (STATE_DIR, RUN_DIR) if d.exists()]
    return found


def test_down_removes_everything(lab, iperf3_image):
    # Leave a running container behind on purpose: down() must deal with it.
    node_docker(NODES[1], "run", "-d", "--label", TEST_LABEL, "--network", "lab-overlay",
                IMAGE, "iperf3", "-s")  # fmt: skip
    assert lab_traces(lab), "the lab should be visible before down()"
    started = time.monotonic()
    down()
    print(f"\ndown: {time.monotonic() - started:.1f} s")
    assert lab_traces(lab) == []
    down()  # idempotent
    assert lab_traces(lab) == []


def test_down_cleans_a_half_built_lab(lab, monkeypatch):
    """up() interrupted (Ctrl-C) while its dockerds are starting."""

    def interrupt(node, pid):
        time.sleep(1)
        raise KeyboardInterrupt

    monkeypatch.setattr(lab_dockerd, "wait_ready", interrupt)
    with pytest.raises(KeyboardInterrupt):
        up()
    assert lab_traces(lab)
    down()
    assert lab_traces(lab) == []
