"""pipeline.collect.inventory: the shipped inventories load; every kind of mistake is named."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.collect.inventory import Host, Inventory, InventoryError, load

ROOT = Path(__file__).resolve().parents[2]
MODES = (
    "native", "docker-host", "docker-bridge", "docker-nat", "docker-proxy", "swarm-overlay",
    "swarm-ingress", "macvlan", "rootless-docker", "rootless-podman", "podman",
)
SECRET = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAc2VjcmV0LWNvbnRlbnQ=\n"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    key = tmp_path / "id_ed25519"
    key.write_text(SECRET)
    key.chmod(0o600)
    kh = tmp_path / "known_hosts"
    kh.write_text("")
    return {"key": key, "known_hosts": kh, "dir": tmp_path}


def base(files: dict[str, Path]) -> dict[str, Any]:
    return {
        "environment": "bare-metal",
        "lab": False,
        "ssh": {
            "user": "bench", "port": 22, "key_file": str(files["key"]),
            "known_hosts": str(files["known_hosts"]), "connect_timeout_s": 5,
        },
        "hosts": {
            "srv1": {
                "address": "192.0.2.10",
                "ssh": {"user": "root", "port": 2222},
                "macvlan": {
                    "parent": "eno1", "subnet": "192.0.2.0/24", "gateway": "192.0.2.1",
                    "ip_range": "192.0.2.224/28",
                },
            },
            "srv2": {"address": "192.0.2.11"},
            "client1": {"address": "client1.example.org"},
            "remote1": {"address": "2001:db8::7"},
        },
        "roles": {"servers": ["srv1", "srv2"], "dc_client": "client1",
                  "internet_client": "remote1"},
    }


def write(files: dict[str, Path], data: Any, name: str = "inv.yaml") -> Path:
    p = files["dir"] / name
    p.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return p


def problems_of(path: Path, **kw: Any) -> str:
    with pytest.raises(InventoryError) as ei:
        load(path, MODES, **kw)
    return str(ei.value)


# -- the shipped inventories ------------------------------------------------------------


def test_lab_inventory_loads_structurally() -> None:
    inv = load(ROOT / "inventory" / "lab.yaml", MODES, check_files=False)
    assert inv.environment == "lab" and inv.lab is True
    assert [h.name for h in inv.servers] == ["node1", "node2", "node3"]
    assert inv.manager.name == "node1"
    assert inv.dc_client.name == "dc-client" and inv.internet_client.name == "inet-client"
    assert inv.role_of("node1") == "manager" and inv.role_of("node3") == "server"
    assert inv.role_of("inet-client") == "internet_client"
    assert inv.hosts["node2"].macvlan.ip_range == "10.77.0.144/28"
    assert inv.hosts["node1"].ssh.key_file == Path(
        "/var/lib/container-overhead-lab/ssh/id_ed25519"
    )
    assert [h.name for h in inv.all_hosts()] == [
        "node1", "node2", "node3", "dc-client", "inet-client",
    ]


def test_example_inventory_loads_with_overrides_and_tilde() -> None:
    inv = load(ROOT / "inventory" / "example-hosts.yaml", MODES, check_files=False)
    assert inv.environment == "bare-metal" and inv.lab is False and inv.modes is None
    assert inv.hosts["srv1"].ssh.user == "root"  # per-host override
    assert inv.hosts["srv2"].ssh.user == "bench"
    assert inv.hosts["srv2"].ssh.key_file == Path("~/.ssh/id_ed25519").expanduser()
    assert "~" not in str(inv.hosts["srv2"].ssh.known_hosts)


def test_valid_inventory_with_files(files: dict[str, Path]) -> None:
    data = base(files)
    data["modes"] = ["native", "docker-host"]
    inv = load(write(files, data), MODES)
    assert isinstance(inv, Inventory)
    srv1 = inv.hosts["srv1"]
    assert isinstance(srv1, Host)
    assert (srv1.ssh.user, srv1.ssh.port) == ("root", 2222)
    assert inv.hosts["srv2"].ssh.port == 22 and inv.hosts["srv2"].ssh.connect_timeout_s == 5.0
    assert inv.hosts["remote1"].address == "2001:db8::7"
    assert inv.modes == ("native", "docker-host")
    assert inv.role_of("srv2") == "server" and inv.role_of("client1") == "dc_client"


def test_relative_key_path_is_relative_to_the_inventory(files: dict[str, Path]) -> None:
    data = base(files)
    data["ssh"]["key_file"] = "id_ed25519"
    inv = load(write(files, data), MODES)
    assert inv.hosts["srv2"].ssh.key_file == files["key"]


def test_unroled_host_is_allowed_but_not_in_all_hosts(files: dict[str, Path]) -> None:
    data = base(files)
    data["hosts"]["spare"] = {"address": "192.0.2.99"}
    inv = load(write(files, data), MODES)
    assert "spare" in inv.hosts and inv.role_of("spare") is None
    assert "spare" not in [h.name for h in inv.all_hosts()]


# -- file-level problems ----------------------------------------------------------------


def test_missing_file(files: dict[str, Path]) -> None:
    msg = problems_of(files["dir"] / "nope.yaml")
    assert "nope.yaml: file not found" in msg
    assert "example-hosts.yaml" in msg  # the fix


def test_not_yaml(files: dict[str, Path]) -> None:
    msg = problems_of(write(files, "environment: [unclosed\nhosts: {"))
    assert "not valid YAML at line" in msg


def test_not_a_mapping_and_empty(files: dict[str, Path]) -> None:
    assert "the top level is a list, not a mapping" in problems_of(write(files, "- a\n- b\n"))
    assert "the file is empty" in problems_of(write(files, "# nothing\n"))


def test_not_utf8(files: dict[str, Path]) -> None:
    p = files["dir"] / "latin1.yaml"
    p.write_bytes("environment: caf\xe9\n".encode("latin-1"))
    assert "not UTF-8 text" in problems_of(p)


def test_directory_instead_of_file(files: dict[str, Path]) -> None:
    assert "is a directory" in problems_of(files["dir"])


# -- one kind of mistake per test -------------------------------------------------------


def _bad(files: dict[str, Path], mutate: Any, **kw: Any) -> str:
    data = copy.deepcopy(base(files))
    mutate(data)
    return problems_of(write(files, data), **kw)


def test_unknown_keys_get_suggestions(files: dict[str, Path]) -> None:
    def m(d: dict) -> None:
        d["hosts"]["srv2"]["adress"] = d["hosts"]["srv2"].pop("address")
        d["ssh"]["know_hosts"] = "x"
        d["rolez"] = {}

    msg = _bad(files, m)
    lines = (files["dir"] / "inv.yaml").read_text().splitlines()

    def line(key: str) -> int:  # the file is base(files) as yaml.safe_dump wrote it
        return next(n for n, text in enumerate(lines, 1) if text.strip().startswith(f"{key}:"))

    assert (f"hosts.srv2.adress: unknown key 'adress' (line {line('adress')}): did you mean "
            "'address'?") in msg
    assert (f"ssh.know_hosts: unknown key 'know_hosts' (line {line('know_hosts')}): did you "
            "mean 'known_hosts'?") in msg
    assert f"rolez: unknown key 'rolez' (line {line('rolez')}): did you mean 'roles'?" in msg
    # the misspelt address also means the required one is missing
    assert "hosts.srv2.address: required key is missing" in msg


def test_missing_required_keys(files: dict[str, Path]) -> None:
    def m(d: dict) -> None:
        del d["environment"], d["ssh"]["user"], d["ssh"]["key_file"]
        del d["ssh"]["known_hosts"], d["roles"]["dc_client"]

    msg = _bad(files, m)
    for path in ("environment", "ssh.user", "ssh.key_file", "ssh.known_hosts",
                 "roles.dc_client"):
        assert f"{path}: required key is missing: add `" in msg, path
    msg = _bad(files, lambda d: d.pop("hosts"))
    assert "hosts: required key is missing" in msg
    msg = _bad(files, lambda d: d["roles"].pop("servers"))
    assert "roles.servers: required key is missing" in msg


def test_bad_addresses(files: dict[str, Path]) -> None:
    def m(d: dict) -> None:
        d["hosts"]["srv1"]["address"] = "10.0.0.300"
        d["hosts"]["srv2"]["address"] = "bad_host!.example"
        d["hosts"]["client1"]["address"] = "2001:db8:::1"

    msg = _bad(files, m)
    assert "hosts.srv1.address: '10.0.0.300' is not a valid IP address" in msg
    assert "hosts.srv2.address: 'bad_host!.example' is neither an IP address nor a valid " \
        "DNS name" in msg
    assert "hosts.client1.address: '2001:db8:::1' is not a valid IPv6 address" in msg


def test_duplicate_host_name_is_detected(files: dict[str, Path]) -> None:
    text = yaml.safe_dump(base(files), sort_keys=False)
    text = text.replace("  srv2:\n", "  srv1:\n", 1)  # YAML would keep only the last srv1
    msg = problems_of(write(files, text))
    assert "hosts.srv1: key 'srv1' is given twice (lines" in msg
    assert "remove or rename one" in msg


def test_duplicate_address(files: dict[str, Path]) -> None:
    def m(d: dict) -> None:
        d["hosts"]["srv2"]["address"] = "192.0.2.10"

    msg = _bad(files, m)
    assert "hosts.srv2.address: address 192.0.2.10 is also used by host 'srv1'" in msg
    # IPv6 in another spelling is the same address
    msg = _bad(files, lambda d: d["hosts"]["srv2"].update(address="2001:DB8:0::7"))
    assert "hosts.remote1.address: address 2001:db8::7 is also used by host 'srv2'" in msg


def test_role_naming_unknown_host(files: dict[str, Path]) -> None:
    def m(d: dict) -> None:
        d["roles"]["servers"] = ["srv1", "srv20"]
        d["roles"]["dc_client"] = "client2"

    msg = _bad(files, m)
    assert "roles.servers[1]: names unknown host 'srv20': did you mean 'srv2'?" in msg
    assert "roles.dc_client: names unknown host 'client2': did you mean 'client1'?" in msg


def test_host_in_two_roles(files: dict[str, Path]) -> None:
    msg = _bad(files, lambda d: d["roles"].update(dc_client="srv2"))
    assert "roles.dc_client: host 'srv2' is also a server: a server cannot be its own client" \
        in msg
    msg = _bad(files, lambda d: d["roles"].update(internet_client="client1"))
    assert "roles.internet_client: host 'client1' is also the dc_client" in msg
    msg = _bad(files, lambda d: d["roles"].update(servers=["srv1", "srv1"]))
    assert "roles.servers[1]: server 'srv1' is listed twice" in msg


def test_empty_servers(files: dict[str, Path]) -> None:
    msg = _bad(files, lambda d: d["roles"].update(servers=[]))
    assert "roles.servers: is empty: name at least one server" in msg


def test_key_file_missing(files: dict[str, Path]) -> None:
    files["key"].unlink()
    msg = problems_of(write(files, base(files)))
    assert f"ssh.key_file: private key {files['key']} does not exist" in msg
    assert "ssh-keygen" in msg
    # structural validation alone does not look at the files
    assert isinstance(load(write(files, base(files)), MODES, check_files=False), Inventory)


def test_key_file_group_readable(files: dict[str, Path]) -> None:
    files["key"].chmod(0o644)
    msg = problems_of(write(files, base(files)))
    assert "accessible by group/others (mode 0644); ssh refuses such keys" in msg
    assert f"chmod 600 {files['key']}" in msg


def test_key_file_is_public_key(files: dict[str, Path]) -> None:
    pub = files["dir"] / "id_ed25519.pub"
    pub.write_text("ssh-ed25519 AAAA test\n")
    msg = _bad(files, lambda d: d["ssh"].update(key_file=str(pub)))
    assert f"{pub} is a public key: name the private key ({files['key']})" in msg


def test_key_file_unreadable(files: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    # root can read any file, so simulate an unprivileged user's view of access(2)
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode: False if Path(p) == files["key"] else real_access(p, mode)
    )
    msg = problems_of(write(files, base(files)))
    assert f"private key {files['key']} is not readable by this user: chmod 600" in msg


def test_known_hosts_missing(files: dict[str, Path]) -> None:
    files["known_hosts"].unlink()
    msg = problems_of(write(files, base(files)))
    assert f"ssh.known_hosts: known_hosts file {files['known_hosts']} does not exist" in msg
    assert "ssh-keyscan" in msg


def test_tilde_is_expanded(files: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(files["dir"]))
    data = base(files)
    data["ssh"]["key_file"] = "~/id_ed25519"
    data["ssh"]["known_hosts"] = "~/known_hosts"
    inv = load(write(files, data), MODES)
    assert inv.hosts["srv1"].ssh.key_file == files["key"]
    msg = _bad(files, lambda d: d["ssh"].update(key_file="~/missing_key"))
    assert f"{files['dir']}/missing_key does not exist" in msg


def test_port_out_of_range(files: dict[str, Path]) -> None:
    def m(d: dict) -> None:
        d["ssh"]["port"] = 0
        d["hosts"]["srv1"]["ssh"]["port"] = 70000
        d["hosts"]["srv2"]["ssh"] = {"port": "22"}

    msg = _bad(files, m)
    assert "ssh.port: port 0 is out of range: use an integer 1..65535" in msg
    assert "hosts.srv1.ssh.port: port 70000 is out of range" in msg
    assert "hosts.srv2.ssh.port: port '22' is out of range" in msg


def test_unknown_mode(files: dict[str, Path]) -> None:
    msg = _bad(files, lambda d: d.update(modes=["native", "docker-brigde", "kvm"]))
    assert "modes[1]: unknown mode 'docker-brigde': did you mean 'docker-bridge'?" in msg
    assert "modes[2]: unknown mode 'kvm': allowed: native, docker-host" in msg
    assert "modes: must be a non-empty list" in _bad(files, lambda d: d.update(modes=[]))


def test_macvlan_problems(files: dict[str, Path]) -> None:
    def m(d: dict) -> None:
        d["hosts"]["srv1"]["macvlan"]["ip_range"] = "198.51.100.0/28"
        d["hosts"]["srv2"]["macvlan"] = {
            "parent": "eth0", "subnet": "192.0.2.5/24", "gateway": "192.0.2.1",
            "ip_range": "192.0.2.300/28",
        }
        d["hosts"]["client1"]["macvlan"] = {
            "parent": "eth0", "subnet": "192.0.2.0/24", "gateway": "192.0.3.1",
            "ip_range": "192.0.2.0/28",
        }

    msg = _bad(files, m)
    assert "hosts.srv1.macvlan.ip_range: ip_range 198.51.100.0/28 is not inside subnet " \
        "192.0.2.0/24" in msg
    assert "hosts.srv2.macvlan.subnet: '192.0.2.5/24' is not a valid network" in msg
    assert "use 192.0.2.0/24" in msg  # the fix for host bits set
    assert "hosts.srv2.macvlan.ip_range: '192.0.2.300/28' is not a valid network" in msg
    assert "hosts.client1.macvlan.gateway: gateway 192.0.3.1 is not inside subnet" in msg


def test_macvlan_ranges_must_not_overlap(files: dict[str, Path]) -> None:
    def m(d: dict) -> None:
        d["hosts"]["srv2"]["macvlan"] = dict(d["hosts"]["srv1"]["macvlan"],
                                             ip_range="192.0.2.232/29")

    msg = _bad(files, m)
    assert "hosts.srv2.macvlan.ip_range: ip_range 192.0.2.232/29 overlaps host 'srv1'" in msg


def test_bad_environment_name(files: dict[str, Path]) -> None:
    msg = _bad(files, lambda d: d.update(environment="Bare Metal!"))
    assert "environment: 'Bare Metal!' must match [a-z0-9][a-z0-9-]*" in msg
    assert "`environment: bare-metal`" in msg
    assert "must match" in _bad(files, lambda d: d.update(environment="-lab"))


def test_wrong_types(files: dict[str, Path]) -> None:
    def m(d: dict) -> None:
        d["hosts"]["srv2"] = "192.0.2.11"
        d["lab"] = "yes please"
        d["ssh"]["connect_timeout_s"] = -1

    msg = _bad(files, m)
    assert "hosts.srv2: must be a mapping, got a string: write it as {address: " in msg
    assert "lab: must be true or false" in msg
    assert "ssh.connect_timeout_s: -1 is not a timeout" in msg


# -- many at once, and secrets ----------------------------------------------------------


def test_all_problems_reported_at_once(files: dict[str, Path]) -> None:
    files["key"].chmod(0o640)

    def m(d: dict) -> None:
        d["environment"] = "UPPER"
        d["ssh"]["port"] = 99999
        d["hosts"]["srv2"]["address"] = "300.1.1.1"
        d["roles"]["dc_client"] = "ghost"
        d["modes"] = ["nativ"]

    with pytest.raises(InventoryError) as ei:
        load(write(files, base(files)), MODES)  # the key's mode alone is one problem
    assert len(ei.value.problems) == 1
    data = copy.deepcopy(base(files))
    m(data)
    with pytest.raises(InventoryError) as ei:
        load(write(files, data), MODES)
    e = ei.value
    assert len(e.problems) == 6, e.problems
    lines = str(e).splitlines()
    assert lines[0] == f"invalid inventory {files['dir'] / 'inv.yaml'}: 6 problems"
    assert len(lines) == 7
    # every problem line names the file
    assert all(str(files["dir"] / "inv.yaml") in line for line in lines[1:])
    for needle in ("environment:", "ssh.port:", "hosts.srv2.address:", "roles.dc_client:",
                   "modes[0]:", "ssh.key_file:"):
        assert any(needle in line for line in lines[1:]), needle


def test_key_content_never_in_errors_or_repr(files: dict[str, Path]) -> None:
    marker = "c2VjcmV0LWNvbnRlbnQ="  # a line of the private key's body
    inv = load(write(files, base(files)), MODES)
    assert marker not in repr(inv) and marker not in str(inv)
    files["key"].chmod(0o644)
    msg = problems_of(write(files, base(files)))
    assert marker not in msg and str(files["key"]) in msg
    # a key pasted into the inventory instead of a path is refused without echoing it
    msg = _bad(files, lambda d: d["ssh"].update(key_file=SECRET))
    assert "ssh.key_file: looks like key material, not a path" in msg
    assert marker not in msg and "BEGIN" not in msg
    # ...and as an unknown key, only its name is shown
    msg = _bad(files, lambda d: d["ssh"].update(private_key=SECRET))
    assert "unknown key 'private_key'" in msg and marker not in msg
