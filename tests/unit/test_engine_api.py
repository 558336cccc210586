"""engine_api: the Docker SDK over the session's channels, against a miniature engine
(tests/unit/fake_engine.py) that answers the API's HTTP on each channel: docker-py's requests
reach it only through the channel the adapter opened with the engine's dial command, and
listing, inspection, clean-up and event waits read what it holds."""

import threading
import time

import docker
import pytest

from pipeline.collect import engine_api
from pipeline.collect.engine_api import ContainerFacts, Labelled
from pipeline.hosts import LABEL
from tests.unit.fake_engine import Engine

ROOTLESS = ["docker", "-H", "unix:///run/user/60777/docker.sock"]


@pytest.fixture
def engine() -> Engine:
    return Engine()


@pytest.fixture
def client(engine: Engine):
    c = engine_api.connect(engine.transport, ["docker"], timeout=10)
    yield c
    c.close()


def test_requests_go_through_the_sessions_channel_with_the_engines_dial(engine, client):
    assert client.api._version == "1.41"  # the daemon's own version, asked once connected
    assert engine.dials and set(engine.dials) == {"docker system dial-stdio"}
    adapter = client.api.get_adapter("http+docker://ssh/v1.41/info")
    assert isinstance(adapter, engine_api.SessionAdapter)
    # docker-py's own SSH adapter (its paramiko client, ~/.ssh settings) is out of the way
    assert not any(type(a).__name__ == "SSHHTTPAdapter" for a in client.api.adapters.values())
    # keep-alive: several calls share one channel instead of one dial each
    before = len(engine.dials)
    for _ in range(5):
        engine_api.engine(client)
    assert len(engine.dials) - before <= 1


def test_a_pooled_channel_that_ended_is_replaced_not_reused(engine, client):
    """A kept-alive channel whose dial ended (or whose session the Pool replaced) between two
    calls: the next call opens a new channel instead of failing with "Socket is closed"."""
    engine_api.engine(client)
    for channel in engine.channels:
        channel.end()
    before = len(engine.dials)
    assert engine_api.engine(client).version
    assert len(engine.dials) == before + 1
    for channel in engine.channels:  # the session itself went (a reconnect): same again
        channel.get_transport().active = False
    assert engine_api.engine(client).version
    assert len(engine.dials) == before + 2


def test_the_rootless_engines_dial_names_its_socket():
    engine = Engine()
    c = engine_api.connect(engine.transport, [*ROOTLESS], timeout=10)
    c.close()
    assert engine.dials[0] == "docker -H unix:///run/user/60777/docker.sock system dial-stdio"
    sudo = engine_api.dial_command(["sudo", "-n", "--", *ROOTLESS])
    assert sudo.startswith("sudo -n -- docker -H ") and sudo.endswith(" system dial-stdio")


def test_a_failed_dial_is_a_docker_exception():
    class Dead:
        def open_session(self):
            raise OSError("channel refused")

    with pytest.raises(docker.errors.DockerException, match="docker system dial-stdio"):
        engine_api.connect(lambda: Dead(), timeout=5)


def test_labelled_lists_only_the_studys_objects_and_entries_name_them(engine, client):
    mine = {LABEL: "c0ffee"}
    engine.add_container("co-c0ffee-lat-docker-bridge", mine, {"bridge": "172.17.0.2"})
    engine.add_container("someone-elses", {"app": "db"}, {"bridge": "172.17.0.3"})
    engine.add_network("co-overlay", "overlay", mine, attachable=True)
    engine.add_volume("co-c0ffee-disk", mine)
    engine.add_volume("keep-me", {})
    found = engine_api.labelled(client, LABEL)
    assert found == Labelled(containers=("co-c0ffee-lat-docker-bridge",),
                             networks=("co-overlay",), volumes=("co-c0ffee-disk",))  # fmt: skip
    assert engine_api.labelled(client, f"{LABEL}=other") == Labelled()
    assert found.entries("rootless-docker:") == [
        "rootless-docker:container:co-c0ffee-lat-docker-bridge",
        "rootless-docker:network:co-overlay", "rootless-docker:volume:co-c0ffee-disk",
    ]  # fmt: skip


def test_cleanup_removes_the_labelled_objects_and_nothing_else(engine, client):
    mine = {LABEL: "c0ffee"}
    engine.add_network("co-macvlan", "macvlan", mine)
    engine.add_container("co-a", mine, {"co-macvlan": "10.77.0.129"})
    engine.add_container("co-b", {LABEL: "older"}, {"bridge": "172.17.0.2"})
    engine.add_container("theirs", {}, {"bridge": "172.17.0.3"})
    engine.add_volume("co-v", mine)
    removed = engine_api.cleanup(client, LABEL)
    assert removed.containers == ("co-a", "co-b") and removed.networks == ("co-macvlan",)
    assert removed.volumes == ("co-v",) and removed.services == ()  # not a Swarm manager
    assert engine_api.labelled(client, LABEL) == Labelled()
    assert [c["Name"] for c in engine.containers.values()] == ["/theirs"]
    assert {n["Name"] for n in engine.networks.values()} == {"bridge"}
    # containers first (a network in use cannot go), force: running ones too
    deletes = [path for method, path in engine.requests if method == "DELETE"]
    assert [p.split("/")[0] for p in deletes] == ["containers", "containers", "networks",
                                                   "volumes"]  # fmt: skip


def test_cleanup_tries_everything_and_names_what_it_could_not_remove(engine, client):
    mine = {LABEL: "c0ffee"}
    engine.add_network("co-busy", "bridge", mine)
    engine.add_container("theirs-on-it", {}, {"co-busy": "10.0.9.2"})  # not the study's
    engine.add_volume("co-v", mine)
    with pytest.raises(docker.errors.APIError, match="network co-busy: .*active endpoints"):
        engine_api.cleanup(client, LABEL)
    assert engine.volumes == {}  # tried after the failure
    assert engine_api.labelled(client, LABEL).networks == ("co-busy",)


def test_inspection_reads_addresses_mtu_and_the_cgroup(engine, client):
    engine.add_network("co-overlay-mtu1400", "overlay", {LABEL: "c"}, subnet="10.0.7.0/24",
                       options={engine_api.MTU_OPTION: "1400"}, attachable=True)  # fmt: skip
    cid = engine.add_container("srv", {LABEL: "c"},
                               {"bridge": "172.17.0.5", "co-overlay-mtu1400": "10.0.7.3"},
                               pid=31337)  # fmt: skip
    facts = engine_api.container(client, "srv")
    assert facts.id == cid and facts.pid == 31337 and facts.cgroup_parent == ""
    assert (facts.status, facts.exit_code) == ("running", 0)
    assert facts.upper_dir == f"/var/lib/docker/overlay2/{cid[:16]}/diff"
    engine.add_volume("co-v", {})
    assert engine_api.volume_mountpoint(client, "co-v") == "/var/lib/docker/volumes/co-v/_data"
    assert facts.addresses == {"bridge": "172.17.0.5", "co-overlay-mtu1400": "10.0.7.3"}
    assert engine_api.container_address(client, "srv") == "172.17.0.5"
    assert engine_api.container_address(client, "srv", "co-overlay-mtu1400") == "10.0.7.3"
    assert engine_api.container_address(client, "srv", "elsewhere") == ""
    overlay = engine_api.network(client, "co-overlay-mtu1400")
    assert (overlay.driver, overlay.scope, overlay.mtu) == ("overlay", "swarm", 1400)
    assert overlay.attachable and overlay.subnets == ("10.0.7.0/24",)
    assert engine_api.network(client, "bridge").mtu == 1500
    assert engine_api.network(client, "no-such-network") is None
    with pytest.raises(docker.errors.NotFound):
        engine_api.container(client, "no-such-container")
    facts_engine = engine_api.engine(client)
    assert (facts_engine.cgroup_driver, facts_engine.swarm_state) == ("cgroupfs", "inactive")


def test_ensure_network_creates_once_with_its_settings(engine, client):
    labels = {LABEL: "c0ffee"}
    made = engine_api.ensure_network(client, "co-overlay-mtu1400", "overlay", labels,
                                     {engine_api.MTU_OPTION: "1400"}, attachable=True)  # fmt: skip
    assert (made.driver, made.mtu, made.attachable, made.labels) == ("overlay", 1400, True, labels)
    again = engine_api.ensure_network(client, "co-overlay-mtu1400", "overlay", {LABEL: "later"})
    assert again.id == made.id and again.labels == labels  # the existing one, kept as it is
    creates = [p for m, p in engine.requests if m == "POST" and p == "networks/create"]
    assert len(creates) == 1
    macvlan = engine_api.ensure_network(client, "co-macvlan", "macvlan", labels,
                                        {"parent": "eth0"},
                                        ipam={"subnet": "10.77.0.0/24", "gateway": "10.77.0.30",
                                              "iprange": "10.77.0.128/28"})  # fmt: skip
    assert macvlan.subnets == ("10.77.0.0/24",) and macvlan.driver == "macvlan"


def test_cgroup_paths_for_both_drivers():
    facts = ContainerFacts(id="ab" * 32, name="srv", pid=1, status="running", exit_code=0,
                           addresses={}, cgroup_parent="", sandbox="")  # fmt: skip
    assert engine_api.cgroup_path(facts, "cgroupfs") == f"/docker/{'ab' * 32}"
    # the lab's daemons: --cgroup-parent /container-overhead-lab/node1
    lab = engine_api.cgroup_path(facts, "cgroupfs", "/container-overhead-lab/node1/")
    assert lab == f"/container-overhead-lab/node1/{'ab' * 32}"
    assert engine_api.cgroup_path(facts, "systemd") == f"/system.slice/docker-{'ab' * 32}.scope"
    own = ContainerFacts(id="cd" * 32, name="x", pid=1, status="running", exit_code=0,
                         addresses={}, cgroup_parent="co-lab.slice", sandbox="")  # fmt: skip
    # a container's own parent wins over the daemon's; systemd nests a-b.slice under a.slice
    assert engine_api.cgroup_path(own, "systemd", "ignored.slice") == (
        f"/co.slice/co-lab.slice/docker-{'cd' * 32}.scope"
    )


def test_daemon_time_reads_rfc3339_with_nanoseconds_and_offsets():
    class Info:
        def __init__(self, stamp):
            self.api = self
            self.stamp = stamp

        def info(self):
            return {"SystemTime": self.stamp}

    base = 1795929601.0  # 2026-11-29T05:20:01Z
    assert engine_api.daemon_time(Info("2026-11-29T05:20:01.123456789Z")) == pytest.approx(
        base + 0.123456789, abs=1e-6
    )
    assert engine_api.daemon_time(Info("2026-11-29T06:20:01.5+01:00")) == base + 0.5
    assert engine_api.daemon_time(Info("2026-11-29T05:20:01Z")) == base
    with pytest.raises(ValueError, match="RFC 3339"):
        engine_api.daemon_time(Info("yesterday"))


def test_wait_removed_returns_on_the_removal_event_and_times_out_otherwise(engine, client):
    cid = engine.add_container("going", {}, {"bridge": "172.17.0.9"})
    engine.add_container("staying", {}, {"bridge": "172.17.0.8"})
    engine.remove_container(cid, delay_s=0.5)
    start = time.monotonic()
    assert engine_api.wait_removed(client, "container", "going", timeout=10)
    took = time.monotonic() - start
    assert 0.4 < took < 5, took  # the event, not the 10 s window's end
    assert engine_api.wait_removed(client, "container", "never-was", timeout=10)  # at once
    start = time.monotonic()
    assert not engine_api.wait_removed(client, "container", "staying", timeout=1)
    assert 0.9 < time.monotonic() - start < 5
    with pytest.raises(ValueError, match="kind"):
        engine_api.wait_removed(client, "service", "x", timeout=1)


def test_a_removal_between_the_check_and_the_stream_is_not_missed(engine, client):
    """The stream starts at the daemon's time before the existence check (``since``)."""
    cid = engine.add_container("racy", {}, {"bridge": "172.17.0.7"})
    checked = threading.Event()
    real = engine_api._INSPECT["container"]

    def inspect_then_remove(c, name):
        answer = real(c, name)
        engine.remove_container(cid)  # gone before the event stream is even asked for
        checked.set()
        return answer

    engine_api._INSPECT["container"] = inspect_then_remove
    try:
        start = time.monotonic()
        assert engine_api.wait_removed(client, "container", "racy", timeout=5)
        assert checked.is_set() and time.monotonic() - start < 3
    finally:
        engine_api._INSPECT["container"] = real


def test_a_lost_engine_is_a_remote_error_for_the_campaigns_checks(engine):
    """The campaign reports a RemoteError from clean-up and goes on with the other hosts; a
    connection error under docker-py (requests', not docker's own) must arrive as one too."""
    from types import SimpleNamespace

    from pipeline.collect import inventory
    from pipeline.collect.modes import MODES, Context
    from pipeline.collect.modes.base import cleanup_host, leftovers
    from pipeline.hosts import RemoteError

    inv = inventory.load("inventory/lab.yaml", known_modes=MODES, check_files=False)
    session = SimpleNamespace(run=lambda *a, **k: SimpleNamespace(status=0, stdout="", stderr=""))
    ctx = Context(inventory=inv, pool={name: session for name in inv.hosts}, campaign="c0ffee")
    node2 = inv.hosts["node2"]  # no rootless user: the rootful engine only
    way_in = {"transport": engine.transport}
    ctx.apis[("node2", "docker")] = engine_api.connect(lambda: way_in["transport"](), timeout=10)
    engine.add_volume("co-v", {LABEL: "c0ffee"})
    assert leftovers(ctx, node2) == ["volume:co-v"]
    for channel in engine.channels:  # the session died, and no new channel opens
        channel.end()
        channel.get_transport().active = False

    def refused():
        raise OSError("channel refused")

    way_in["transport"] = lambda: SimpleNamespace(open_session=refused)
    with pytest.raises(RemoteError, match="docker: list labelled objects"):
        leftovers(ctx, node2)
    with pytest.raises(RemoteError, match="docker: remove labelled objects"):
        cleanup_host(ctx, node2)
