"""How an inventory's validation time grows with its host count.

Writes inventories of n hosts (each with its own macvlan range on one subnet, every host but
the last a server) and times ``pipeline.collect.inventory.load`` on each, best of ``--repeat``.
Printed per size: the growth exponent k from the previous size (time ~ hosts^k): near 1 for a
linear validation, near 2 for a check over every pair of hosts. Reading the YAML
(ruamel, pure Python, as DVC reads it) is most of the time. Needs no lab, no root; traffic:
none.

    python -m harness.inventory_scale                    # 500, 1000, 2000, 4000 hosts
    python -m harness.inventory_scale --sizes 1000,2000 --repeat 3
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.collect import inventory  # noqa: E402


def write_inventory(directory: Path, n: int) -> Path:
    """An inventory of ``n`` valid hosts in ``directory`` (with a key and known_hosts file)."""
    key, kh = directory / "id_ed25519", directory / "known_hosts"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    key.chmod(0o600)
    kh.write_text("")
    first = int(ipaddress.ip_address("10.16.0.0"))
    hosts = {
        f"h{i}": {"address": str(ipaddress.ip_address(int(ipaddress.ip_address("10.0.0.2")) + i)),
                  "macvlan": {"parent": "eth0", "subnet": "10.0.0.0/8", "gateway": "10.0.0.1",
                              "ip_range": f"{ipaddress.ip_address(first + 16 * i)}/28"}}
        for i in range(n)
    }  # fmt: skip
    doc = {"environment": "big", "ssh": {"user": "bench", "key_file": str(key),
                                         "known_hosts": str(kh)},
           "hosts": hosts,
           "roles": {"servers": [f"h{i}" for i in range(n - 1)],
                     "dc_client": f"h{n - 1}"}}  # fmt: skip
    path = directory / f"inventory-{n}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def time_load(path: Path, repeat: int) -> float:
    """The best of ``repeat`` validations of the inventory at ``path``, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        inventory.load(path, ["native"])
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,1000,2000,4000", help="host counts, ascending")
    parser.add_argument("--repeat", type=int, default=2, help="validations per size (best kept)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'hosts':>6} {'seconds':>8} {'k':>6}")
    previous = None
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            seconds = time_load(write_inventory(Path(tmp), n), args.repeat)
            k = f"{math.log(seconds / previous[1]) / math.log(n / previous[0]):6.2f}" \
                if previous else ""
            print(f"{n:>6} {seconds:>8.2f} {k:>6}")
            previous = (n, seconds)
    print("k: time ~ hosts^k from the previous size (1 linear, 2 quadratic)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
