"""An inventory's validation grows linearly with its size and its report is bounded: 2,000
hosts validate with no problem; 1,000 hosts with one range repeated give one problem per host
after the first (not one per pair) and print the first 20 of that kind, then a count."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.collect import inventory as inventory_mod

PER_KIND = 20


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    key = tmp_path / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")  # a path the check can stat
    key.chmod(0o600)
    kh = tmp_path / "known_hosts"
    kh.write_text("")
    return {"dir": tmp_path, "key": key, "known_hosts": kh}


def _inventory(files: dict[str, Path], n: int, *, ranges: str = "distinct",
               same_address: bool = False, extra_role: str | None = None) -> Path:  # fmt: skip
    """n hosts on 10.0.0.0/8, each with a macvlan range: its own /28 ("distinct") or the same
    one ("same"); the last host is the dc client, the others are servers."""
    subnet = ipaddress.ip_network("10.0.0.0/8")
    hosts: dict[str, Any] = {}
    for i in range(n):
        base = int(subnet.network_address) + (1 << 20) + 16 * (i if ranges == "distinct" else 0)
        hosts[f"h{i}"] = {
            "address": "10.0.0.5" if same_address else str(ipaddress.ip_address(
                int(subnet.network_address) + 2 + i)),
            "macvlan": {"parent": "eth0", "subnet": str(subnet), "gateway": "10.0.0.1",
                        "ip_range": f"{ipaddress.ip_address(base)}/28"},
        }  # fmt: skip
    servers = [f"h{i}" for i in range(n - 1)] + ([extra_role] if extra_role else [])
    doc = {"environment": "big",
           "ssh": {"user": "bench", "key_file": str(files["key"]),
                   "known_hosts": str(files["known_hosts"])},
           "hosts": hosts, "roles": {"servers": servers, "dc_client": f"h{n - 1}"}}  # fmt: skip
    path = files["dir"] / "inv.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _check(path: Path, capsys) -> tuple[int, list[str]]:
    status = inventory_mod.main(["check", str(path)])
    out, err = capsys.readouterr()
    return status, (out + err).splitlines()


def test_two_thousand_hosts_validate(files, capsys) -> None:
    status, lines = _check(_inventory(files, 2000), capsys)
    assert status == 0
    assert lines == [f"{files['dir'] / 'inv.yaml'}: valid (big: 2000 hosts with roles)"]


def test_a_thousand_overlapping_ranges_give_one_problem_each_and_a_bounded_report(
    files, capsys
) -> None:  # fmt: skip
    path = _inventory(files, 1000, ranges="same")
    with pytest.raises(inventory_mod.InventoryError) as caught:
        inventory_mod.load(path, ["native"])
    problems = caught.value.problems
    assert len(problems) == 999  # every host after the first overlaps; not 1000*999/2 pairs
    assert all("overlaps host 'h0'" in p for p in problems)
    status, lines = _check(path, capsys)
    assert status == 2
    # the head line, the first 20 problems, the count of the rest
    assert len(lines) == 1 + PER_KIND + 1
    assert lines[0] == f"invalid inventory {path}: 999 problems"
    assert lines[-1] == f"  - ... and {999 - PER_KIND} more of this kind"


def test_overlaps_are_found_whatever_the_order(files) -> None:
    """A range inside an earlier, wider one and a range after a gap: the sweep keeps the range
    that reaches furthest, not just the previous one."""
    path = _inventory(files, 4)
    doc = yaml.safe_load(path.read_text())
    doc["hosts"]["h0"]["macvlan"]["ip_range"] = "10.16.0.0/24"  # wide: .0-.255
    doc["hosts"]["h1"]["macvlan"]["ip_range"] = "10.16.0.16/28"  # inside h0's
    doc["hosts"]["h2"]["macvlan"]["ip_range"] = "10.16.0.128/28"  # inside h0's, after h1's
    doc["hosts"]["h3"]["macvlan"]["ip_range"] = "10.16.1.0/28"  # clear of all
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(inventory_mod.InventoryError) as caught:
        inventory_mod.load(path, ["native"])
    assert [p.split(": ", 1)[1] for p in caught.value.problems] == [
        "hosts.h1.macvlan.ip_range: ip_range 10.16.0.16/28 overlaps host 'h0''s 10.16.0.0/24: "
        "containers on the two hosts would get the same addresses; give each host its own range",
        "hosts.h2.macvlan.ip_range: ip_range 10.16.0.128/28 overlaps host 'h0''s 10.16.0.0/24: "
        "containers on the two hosts would get the same addresses; give each host its own range",
    ]


def test_a_thousand_hosts_on_one_address_print_a_bounded_report(files, capsys) -> None:
    status, lines = _check(_inventory(files, 1000, same_address=True), capsys)
    assert status == 2
    head, *shown = lines
    assert head.endswith(": 999 problems")
    assert len(shown) == PER_KIND + 1
    assert shown[-1] == f"  - ... and {999 - PER_KIND} more of this kind"


def test_an_unknown_role_host_among_two_thousand_is_named_briefly(files, capsys) -> None:
    status, lines = _check(_inventory(files, 2000, extra_role="h20000"), capsys)
    assert status == 2
    (problem,) = [line for line in lines if "names unknown host 'h20000'" in line]
    assert "(2000 in all)" in problem and len(problem) < 400
