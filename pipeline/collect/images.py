"""Tool images built on each host from that host's own binaries.

The container runs the bit-identical binary the native mode runs: the image is a rootfs with
the binaries and the libraries `ldd` lists, imported with `docker import`. No registry, no
version skew. The tag is derived from the binaries' sha256, so an unchanged host reuses it.
"""

from __future__ import annotations

import hashlib
import shlex
from dataclasses import dataclass
from importlib.resources import files

from pipeline.collect.remote import Session

REPOSITORY = "container-overhead/tools"

@dataclass(frozen=True)
class ToolImage:
    host: str
    tag: str
    digest: str
    binaries: dict[str, str]  # absolute path -> sha256

    def sha256_of(self, binary: str) -> str:
        return self.binaries[binary]


def parse_build_output(host: str, text: str) -> ToolImage:
    binaries: dict[str, str] = {}
    tag = digest = ""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "binary":
            binaries[parts[2]] = parts[1]
        elif len(parts) == 3 and parts[0] == "image":
            tag, digest = parts[1], parts[2]
    if not tag or not binaries:
        raise ValueError(f"{host}: tool image build printed no image line:\n{text}")
    return ToolImage(host=host, tag=tag, digest=digest, binaries=binaries)


def binary_hashes(session: Session, binaries: list[str]) -> dict[str, str]:
    """sha256 of binaries on a host with no docker daemon (clients run natively)."""
    out = session.run(["sha256sum", *binaries], timeout=60).stdout
    return {path: digest for digest, path in (line.split() for line in out.splitlines())}


def ensure(
    session: Session, binaries: list[str], engine: str = "docker", cli: str | None = None
) -> ToolImage:
    """Build (or reuse) the tool image for ``engine`` on ``session``'s host.

    ``cli`` is the command line that reaches the engine's image store when it is not just
    the engine's name: ``docker -H unix://...`` for a rootless dockerd, ``setpriv --reuid=UID
    ... env ... podman`` for rootless podman (whose store belongs to that user). The rootfs is
    put together as root either way; only the import runs as the store's owner.
    """
    script = files("pipeline.collect.host_scripts").joinpath("build_tool_image.sh").read_text()
    builder = hashlib.sha256(script.encode()).hexdigest()[:16]
    command = f"REPO={shlex.quote(REPOSITORY)} ENGINE={shlex.quote(cli or engine)} "
    command += f"BUILDER={builder} "
    command += f"sh -c {shlex.quote(script)} build "
    command += shlex.join(binaries)
    return parse_build_output(session.host.name, session.run(command, timeout=300).stdout)
