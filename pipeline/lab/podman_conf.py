"""The lab's podman runs containers with runc, as its dockerds do.

Podman picks crun when it is installed (the study installs it for its own runtime modes), and
crun 1.8 refuses this machine's hybrid cgroup hierarchy ("cgroups in hybrid mode not
supported"). A drop-in in /etc/containers/containers.conf.d (read by rootful and rootless
podman) names runc while the lab is up; `lab down` removes it. On a user's own hosts podman
keeps its own configuration, and the modes record the runtime it used.
"""

from __future__ import annotations

from pathlib import Path

CONF = Path("/etc/containers/containers.conf.d/99-container-overhead-lab.conf")
MARKER = "# Written by the container-overhead lab (pipeline/lab/podman_conf.py);"
TEXT = f"""{MARKER} `lab down` removes it.
# Podman runs containers with runc here, as the lab's dockerds do.
[engine]
runtime = "runc"
"""


class ForeignFile(RuntimeError):
    """The drop-in's path holds a file the lab did not write."""


def ensure(conf: Path = CONF) -> None:
    if conf.exists() and not conf.read_text().startswith(MARKER):
        raise ForeignFile(f"{conf} exists and is not the lab's: move it away, then retry")
    if not conf.exists() or conf.read_text() != TEXT:
        conf.parent.mkdir(parents=True, exist_ok=True)
        tmp = conf.with_name(f".{conf.name}.tmp")
        tmp.write_text(TEXT)
        tmp.replace(conf)


def remove(conf: Path = CONF) -> None:
    if conf.exists() and conf.read_text().startswith(MARKER):
        conf.unlink()
        try:
            conf.parent.rmdir()  # only if the lab's file was all it held
        except OSError:
            pass


def leftovers(conf: Path = CONF) -> list[str]:
    return [f"file {conf}"] if conf.exists() and conf.read_text().startswith(MARKER) else []
