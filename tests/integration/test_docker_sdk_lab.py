"""The Docker SDK (pipeline/collect/engine_api.py) and the docker CLI see the same thing on the
lab: a bridge container's address, MTU and cgroup, a Swarm overlay network and a container's
address on it, and a planted leftover container (rootful and rootless) found both ways, then
removed by the campaign's clean-up. The CLI side is the parsing the SDK replaced; the kernel's
own view (the container's interface MTU, /proc/PID/cgroup) is the referee."""

from __future__ import annotations

import os
import shlex

import pytest

from pipeline import environments
from pipeline.collect import engine_api, inventory
from pipeline.collect.modes import MODES, Context, Workload
from pipeline.collect.modes.base import LABEL, cleanup_host, container_name, leftovers
from pipeline.collect.modes.swarm_overlay import NETWORK as OVERLAY
from pipeline.collect.modes.swarm_overlay_mtu import parse_link_mtu
from pipeline.collect.remote import Pool
from pipeline.lab.topology import CGROUP_PARENT
from tests.integration.lab_campaign import INVENTORY, ROOT

pytestmark = pytest.mark.lab

PORT = 5299
WORKLOAD = Workload("sdk-check", ("/usr/bin/iperf3", "--server", "--port", str(PORT)), PORT)


@pytest.fixture(scope="module", autouse=True)
def needs_root():
    if os.geteuid() != 0:
        pytest.skip("the lab needs root")


@pytest.fixture(scope="module")
def ctx():
    """The lab up (as a collection stage brings it up), a campaign context on it, and
    everything labelled removed afterwards."""
    environments.provider(ROOT / INVENTORY).ready(None, log=lambda _: None)
    inv = inventory.load(ROOT / INVENTORY, known_modes=MODES)
    with Pool(inv) as pool:
        context = Context(inventory=inv, pool=pool, campaign=f"sdkcheck{os.getpid()}")
        context.image_paths = ["/usr/bin/iperf3"]
        try:
            yield context
        finally:
            for host in inv.servers:
                cleanup_host(context, host)


def cli(ctx: Context, host, *argv: str, engine: str = "docker") -> str:
    """A docker command on the host, its output as the CLI prints it."""
    return ctx.pool[host.name].run([*ctx.engine_cli(host, engine), *argv], timeout=60).stdout


def test_a_bridge_containers_address_mtu_and_cgroup_are_the_same_both_ways(ctx):
    host = ctx.inventory.servers[0]
    deployment = MODES["docker-bridge"].start(ctx, WORKLOAD)
    try:
        name = container_name(ctx, "docker-bridge", WORKLOAD)
        client = ctx.engine_api(host)
        facts = engine_api.container(client, name)
        # address: the mode's (through the SDK) = the CLI's template, parsed
        template = "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}"
        by_cli = cli(ctx, host, "inspect", "--format", template, name).split()
        assert deployment.address == facts.addresses["bridge"] == by_cli[0]
        assert deployment.address.startswith("172.")
        # MTU: the bridge network's option both ways, and the container's eth0 in the kernel
        bridge = engine_api.network(client, "bridge")
        option = cli(ctx, host, "network", "inspect", "--format",
                     f'{{{{index .Options "{engine_api.MTU_OPTION}"}}}}', "bridge")  # fmt: skip
        session = ctx.pool[host.name]
        # (`ip`, not /sys/class/net: sysfs shows the namespace that mounted it, not nsenter's)
        link = session.run(["nsenter", "-t", str(facts.pid), "-n", "ip", "-o", "link", "show",
                            "eth0"], timeout=30).stdout  # fmt: skip
        assert bridge.mtu == int(option) == parse_link_mtu(link), (bridge, option, link)
        # cgroup: the path the SDK's facts give = the CLI's fields = /proc/PID/cgroup
        template = "{{.Id}} {{.State.Pid}} {{.HostConfig.CgroupParent}}"
        fields = cli(ctx, host, "inspect", "--format", template, name).split()
        assert fields[:2] == [facts.id, str(facts.pid)] and facts.cgroup_parent == ""
        assert len(fields) == 2  # no container parent: the daemon's --cgroup-parent applies
        driver = cli(ctx, host, "info", "--format", "{{.CgroupDriver}}").strip()
        facts_engine = engine_api.engine(client)
        assert facts_engine.cgroup_driver == driver == "cgroupfs"
        path = engine_api.cgroup_path(facts, driver, f"/{CGROUP_PARENT}/{host.name}")
        lines = session.run(["cat", f"/proc/{facts.pid}/cgroup"], timeout=30).stdout
        in_kernel = {line.split(":", 2)[2] for line in lines.splitlines() if line.count(":") >= 2}
        assert path == f"/{CGROUP_PARENT}/{host.name}/{facts.id}"
        assert path in in_kernel, (path, lines)
    finally:
        deployment.stop()
    assert engine_api.wait_removed(client, "container", name, timeout=30)
    assert name not in cli(ctx, host, "ps", "-a", "--format", "{{.Names}}").split()


def test_a_swarm_network_and_an_address_on_it_are_the_same_both_ways(ctx):
    host = ctx.inventory.servers[0]
    client = ctx.engine_api(host)
    assert engine_api.engine(client).swarm_state == "active", "the lab's Swarm is not up"
    deployment = MODES["swarm-overlay"].start(ctx, WORKLOAD)
    try:
        name = container_name(ctx, "swarm-overlay", WORKLOAD)
        sdk = engine_api.network(client, OVERLAY)
        template = ("{{.Id}} {{.Driver}} {{.Scope}} {{.Attachable}} "
                    "{{range .IPAM.Config}}{{.Subnet}} {{end}}")  # fmt: skip
        words = cli(ctx, host, "network", "inspect", "--format", template, OVERLAY).split()
        assert words[:4] == [sdk.id, "overlay", "swarm", "true"], (words, sdk)
        assert sdk.attachable and tuple(words[4:]) == sdk.subnets and sdk.subnets
        labels = cli(ctx, host, "network", "inspect", "--format",
                     f'{{{{index .Labels "{LABEL}"}}}}', OVERLAY).strip()  # fmt: skip
        assert sdk.labels.get(LABEL) == labels != ""
        mtu = f'{{{{index .Options "{engine_api.MTU_OPTION}"}}}}'
        option = cli(ctx, host, "network", "inspect", "--format", mtu, OVERLAY).strip()
        assert sdk.mtu == (int(option) if option and option != "<no value>" else None)
        on_overlay = cli(ctx, host, "inspect", "--format",
                         f'{{{{(index .NetworkSettings.Networks "{OVERLAY}").IPAddress}}}}',
                         name).strip()  # fmt: skip
        assert deployment.address == engine_api.container_address(client, name, OVERLAY)
        assert deployment.address == on_overlay
        assert any(on_overlay.startswith(s.rsplit(".", 1)[0]) for s in sdk.subnets)
    finally:
        deployment.stop()


@pytest.mark.parametrize("engine", ["docker", "rootless-docker"])
def test_a_planted_leftover_is_found_both_ways_and_cleaned(ctx, engine):
    host = ctx.inventory.servers[0]
    image = ctx.image(host, engine).tag
    name = f"co-planted-{engine}-{os.getpid()}"
    cli(ctx, host, "create", "--label", f"{LABEL}=planted", "--name", name, image,
        "/usr/bin/iperf3", "--version", engine=engine)  # fmt: skip
    try:
        # the CLI's listing (what leftovers() parsed) and the SDK's name the same container
        short = cli(ctx, host, "ps", "-aq", "--filter", f"label={LABEL}", engine=engine).split()
        found = engine_api.labelled(ctx.engine_api(host, engine), LABEL)
        assert name in found.containers
        full = engine_api.container(ctx.engine_api(host, engine), name).id
        assert any(full.startswith(s) for s in short), (short, full)
        prefix = "" if engine == "docker" else f"{engine}:"
        assert f"{prefix}container:{name}" in leftovers(ctx, host)
    finally:
        removed = cleanup_host(ctx, host)
    assert f"{engine}: containers=" in removed, removed
    shell = shlex.join([*ctx.engine_cli(host, engine), "ps", "-aq", "--filter",
                        f"label={LABEL}"])  # fmt: skip
    assert ctx.pool[host.name].run(shell, timeout=60).stdout.split() == []
    assert not [e for e in leftovers(ctx, host) if "container:" in e]
