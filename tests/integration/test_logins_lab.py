"""The lab logged into as a fleet usually is: the operator login (an unprivileged user in the
`docker` group, port 2222, keys of its own, sudo) and a guest login without sudo. The smoke
study itself runs through the operator login (tests/integration/lab_campaign.py: SmokeRepo);
here: what each login is, and that without sudo every step that needs root is skipped with the
privilege it needs, the rest measured, and nothing left behind."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from pipeline import environments
from pipeline.collect import inventory
from pipeline.collect.campaign import CampaignError, Profile
from pipeline.collect.modes import MODES
from pipeline.collect.remote import Pool
from pipeline.hosts import PID_DIR, SCRATCH_DIR
from tests.integration.lab_campaign import (
    INVENTORY,
    OPERATOR_INVENTORY,
    ROOT,
    ROOT_ONLY,
    assert_nothing_left,
    smoke_settings,
)

pytestmark = [pytest.mark.lab, ROOT_ONLY]

SSH_DIR = Path("/var/lib/container-overhead-lab/ssh")
GUEST = "co-guest"


@pytest.fixture(scope="module", autouse=True)
def root_shape_after():
    """The lab as the other tests expect it afterwards: every node takes Swarm tasks."""
    yield
    _ready(ROOT / INVENTORY)


def _guest_inventory(tmp_path: Path) -> Path:
    """The operator inventory logged into as a user without sudo."""
    data = yaml.safe_load((ROOT / OPERATOR_INVENTORY).read_text())
    data["ssh"].update(user=GUEST, sudo=False, key_file=str(SSH_DIR / f"{GUEST}_ed25519"),
                       known_hosts=str(SSH_DIR / f"known_hosts_{GUEST}"))  # fmt: skip
    path = tmp_path / "lab-guest.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _ready(inventory_file: Path | str) -> inventory.Inventory:
    """The lab, up and serving the inventory's login, as a collection stage brings it up."""
    provider = environments.provider(inventory_file)
    provider.ready(None, log=lambda _: None)
    return inventory.load(inventory_file, known_modes=MODES)


def test_the_operator_login_is_unprivileged_with_docker_and_sudo():
    inv = _ready(ROOT / OPERATOR_INVENTORY)
    assert [h.name for h in inv.servers] == ["node1", "node2"]
    with Pool(inv) as pool:
        for host in (*inv.servers, inv.dc_client):
            session = pool[host.name]
            ident = session.run("id -u; id -nG; hostname").stdout.split("\n")
            assert ident[0] != "0" and "docker" in ident[1].split(), (host.name, ident)
            assert ident[2] == host.name
            if host in inv.servers:  # the node's own dockerd, through the socket's group
                assert session.run(["docker", "info", "--format", "{{.Name}}"]).stdout.strip()
            assert session.run("id -u", root="check sudo").stdout.strip() == "0"
            # sudo resolves the host's own name: no warning on every command
            assert session.run("true", root="check sudo").stderr == ""


def test_without_sudo_root_steps_are_skipped_with_the_privilege_they_need(tmp_path):
    guest_inventory = _guest_inventory(tmp_path)
    inv = _ready(guest_inventory)
    # The study's directories belong to the logins used before (root, co-ops): a login that
    # cannot hand them over is told the fix, before any measurement.
    profile = Profile(runs=1, seconds=1, omit_seconds=0, warmup_seconds=1)
    modes = ["native", "native-tbf", "podman", "rootless-docker", "docker-bridge"]
    raw = tmp_path / "raw"
    subprocess.run(["mkdir", "-p", PID_DIR, SCRATCH_DIR], check=True)
    subprocess.run(["chown", "-R", "root:", PID_DIR, SCRATCH_DIR], check=True)  # as root left them
    with pytest.raises(CampaignError) as refused:
        environments.collect("throughput", guest_inventory, raw, profile, 3, modes,
                             paths=("dc",), variants=("tcp",))  # fmt: skip
    text = str(refused.value)
    assert f"which {GUEST} does not own" in text and f"chown -R {GUEST}:" in text, text
    # What the message says to do, done as the hosts' admin would (one file system here).
    subprocess.run(["chown", "-R", f"{GUEST}:", PID_DIR, SCRATCH_DIR], check=True)

    environments.collect("throughput", guest_inventory, raw, profile, 3, modes,
                         paths=("dc",), variants=("tcp",))  # fmt: skip
    for benchmark, scenario_modes in (("footprint", ["docker-bridge"]),
                                      ("orchestration", ["swarm-overlay"])):  # fmt: skip
        scenario_profile, options = smoke_settings(benchmark)
        environments.collect(benchmark, guest_inventory, raw, scenario_profile, 3,
                             scenario_modes, options=options)  # fmt: skip

    runs = pd.concat(
        pd.read_parquet(raw / b / inv.environment / "runs.parquet")
        for b in ("throughput", "footprint", "orchestration")
    )
    by_mode = {(r.benchmark, r.mode): (r.status, r.reason) for r in runs.itertuples()}
    print({k: v[0] for k, v in by_mode.items()})
    needs = f"the inventory logs in as {GUEST} without sudo"
    expected = {
        ("throughput", "native-tbf"): "needs root on dc-client to change the NIC's qdisc (tc)",
        ("throughput", "podman"): "needs root on node1 to run rootful podman",
        ("throughput", "rootless-docker"): "needs root on node1 to act as the rootless user",
        ("footprint", "docker-bridge"): "needs root on node1 to read the engine's memory",
        ("orchestration", "swarm-overlay"): "needs root on node1 to enter the probe container's",
    }
    for key, privilege in expected.items():
        status, reason = by_mode[key]
        assert status == "skipped" and privilege in reason and needs in reason, (key, reason)
    for key in (("throughput", "native"), ("throughput", "docker-bridge")):
        assert by_mode[key][0] == "ok", (key, by_mode[key])
    assert_nothing_left()
