"""Facts about a host, read in one SSH round trip, recorded with every run.

The script prints `key=value` lines; anything it cannot read is `n/a`, never a guess.
"""

from __future__ import annotations

import shlex
from importlib.resources import files

from pipeline.collect.remote import Session

_INTS = {"cpu_count", "mem_total_bytes", "mtu"}


def parse(text: str) -> dict[str, object]:
    facts: dict[str, object] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        value = value.strip() or "n/a"
        if key in _INTS:
            facts[key] = int(value) if value.isdigit() else None
        else:
            facts[key] = value
    return facts


def gather(session: Session, address: str) -> dict[str, object]:
    """Facts of the host behind ``session``; ``address`` picks the interface whose MTU counts."""
    script = files("pipeline.collect.host_scripts").joinpath("hostfacts.sh").read_text()
    command = "sh -c " + shlex.quote(script) + " facts " + shlex.quote(address)
    return parse(session.run(command, timeout=60).stdout)
