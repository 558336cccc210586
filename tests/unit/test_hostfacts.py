"""The host-facts script, run on this machine: what the host runs on is recorded as systemd
says it (or as the CPU flags it), in the form the article's first page quotes."""

import re
import shutil
import subprocess
from importlib.resources import files

from pipeline.collect import hostfacts


def _facts() -> dict[str, object]:
    script = files("pipeline.collect.host_scripts").joinpath("hostfacts.sh").read_text()
    out = subprocess.run(["sh", "-c", script, "facts", "127.0.0.1"], capture_output=True,
                         text=True, timeout=60, check=True)  # fmt: skip
    return hostfacts.parse(out.stdout)


def test_virtualization_is_recorded_as_systemd_detects_it():
    virt = _facts()["virtualization"]
    found = re.fullmatch(r"vm: (.+); container: (.+)", str(virt))
    assert found, virt
    if shutil.which("systemd-detect-virt"):
        for kind, flag in zip(found.groups(), ("--vm", "--container"), strict=True):
            said = subprocess.run(["systemd-detect-virt", flag], capture_output=True, text=True)
            assert kind == said.stdout.strip(), (flag, kind, said.stdout)
    else:
        flagged = " hypervisor " in open("/proc/cpuinfo").read().replace("\n", " ")
        assert (found.group(1) == "a hypervisor") == flagged
