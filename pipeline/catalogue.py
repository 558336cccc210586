"""The mode catalogue: every execution mode's name, label, colour, reading order and family,
with what it serves (``pipeline/capabilities.py``), in one place both layers read.

A new mode is its behaviour module (pipeline/collect/modes/, registered in MODES), one row in
``pipeline/capabilities.py`` (its paths and benchmarks: what collection plans) and one entry
here (how a reader sees it). Figures, tables and the article take a mode's label and colour
from here, and order modes by their position in ``ENTRIES``, so a reader who learnt that
"docker-proxy is the orange one, fifth from the top" on one figure can rely on it on the next.

Collection never imports this module: a campaign's code digest covers what it imports, and a
label or a colour does not change what is measured (tests/unit/test_catalogue.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pipeline.capabilities import Serves, serves

# Families: how a mode differs from native. "reference" is native itself; a "runtime" mode
# changes the engine or OCI runtime behind the same kind of network; a "network driver" mode
# changes how packets reach one Docker container; a "rootless" mode runs the engine as an
# unprivileged user (its own network stack in user space); an "orchestrator" mode puts a Swarm
# or Kubernetes layer in front; a "storage" mode changes where a container's files live; a
# "control" is a known, injected cost that checks the instrument.
FAMILIES = ("reference", "network driver", "runtime", "rootless", "orchestrator", "storage",
            "control")  # fmt: skip

# The colour of a mode the catalogue does not know (data from another checkout), and of the
# controls, which are named by their mode name wherever they appear.
UNKNOWN_COLOR = "#969696"


@dataclass(frozen=True)
class Entry:
    """One mode as a reader sees it. ``platform``: the product the mode runs on, as an article
    names it ("Docker Swarm", "Kubernetes"); ``runtime``: the class of OCI runtime it declares
    (runc, crun, gVisor; a run's notes may record the one it really used); ``rootless``: the
    engine runs as an unprivileged user; ``scenarios``: what a reader should picture on a path
    where the label alone does not say it (path -> words)."""

    name: str
    label: str
    colour: str
    family: str
    platform: str | None = None
    runtime: str | None = None
    rootless: bool = False
    scenarios: dict[str, str] = field(default_factory=dict)

    @property
    def serves(self) -> Serves:
        return serves(self.name)


# Reading order: the reference first, then from the thinnest to the thickest layer; the storage
# modes and the controls last.
ENTRIES: tuple[Entry, ...] = (
    Entry("native", "Native", "#222222", "reference",
          scenarios={"dc": "Native (host network)", "local": "Native (localhost)",
                     "internet": "Native (over the internet)"}),
    Entry("docker-host", "Docker host network", "#6baed6", "network driver", "Docker", "runc"),
    Entry("docker-bridge", "Docker bridge", "#2171b5", "network driver", "Docker", "runc",
          scenarios={"dc": "Docker bridge (container address)"}),
    # the same bridge, another OCI runtime (pipeline/collect/modes/docker_crun.py, docker_gvisor.py)
    Entry("docker-crun", "Docker bridge, crun runtime", "#9ecae1", "runtime", "Docker", "crun",
          scenarios={"dc": "Docker bridge with crun (container address)"}),
    Entry("docker-gvisor", "Docker bridge, gVisor (runsc)", "#637939", "runtime", "Docker",
          "gVisor",
          scenarios={"dc": "Docker bridge with gVisor (container address)"}),
    Entry("docker-nat", "Docker published port (NAT)", "#08306b", "network driver", "Docker",
          "runc"),
    Entry("docker-proxy", "Docker proxy (localhost)", "#e6550d", "network driver", "Docker",
          "runc", scenarios={"local": "Docker proxy (localhost)"}),
    Entry("macvlan", "Docker macvlan", "#31a354", "network driver", "Docker", "runc"),
    Entry("swarm-overlay", "Swarm overlay", "#756bb1", "orchestrator", "Docker Swarm",
          scenarios={"dc": "Swarm overlay (container on another node)"}),
    Entry("swarm-overlay-mtu", "Swarm overlay (MTU tuned)", "#bcbddc", "orchestrator",
          "Docker Swarm",
          scenarios={"dc": "Swarm overlay, MTU tuned (container on another node)"}),
    Entry("swarm-ingress", "Swarm ingress (routing mesh)", "#54278f", "orchestrator",
          "Docker Swarm"),
    # Podman runs its default OCI runtime, crun where installed
    Entry("podman", "Podman (rootful)", "#8c6d31", "runtime", "Podman", "crun"),
    Entry("rootless-docker", "Rootless Docker", "#d6616b", "rootless", "Docker", "runc",
          rootless=True),
    Entry("rootless-podman", "Rootless Podman", "#a50f15", "rootless", "Podman", "crun",
          rootless=True),
    Entry("pasta", "Rootless Podman (pasta)", "#e7ba52", "rootless", "Podman", "crun",
          rootless=True),
    # Kubernetes (pipeline/collect/modes/kubernetes.py)
    Entry("k8s-hostnetwork", "Kubernetes pod, host network", "#9edae5", "orchestrator",
          "Kubernetes"),
    Entry("k8s-pod", "Kubernetes pod", "#17becf", "orchestrator", "Kubernetes",
          scenarios={"dc": "Kubernetes pod (pod IP, bridge CNI)"}),
    Entry("k8s-nodeport", "Kubernetes NodePort Service", "#0f7c87", "orchestrator", "Kubernetes",
          scenarios={"dc": "Kubernetes NodePort Service (kube-proxy iptables)"}),
    Entry("k8s-clusterip", "Kubernetes ClusterIP Service (client pod)", "#084c53", "orchestrator",
          "Kubernetes",
          scenarios={"dc": "Kubernetes ClusterIP Service (client pod on another node)"}),
    # the disk benchmark's storage modes (pipeline/collect/modes/storage.py); colours repeat the
    # network modes' where the engine is the same kind
    Entry("docker-overlay2", "Docker container layer (overlay2)", "#2171b5", "storage", "Docker",
          "runc"),
    Entry("docker-bind", "Docker bind mount", "#6baed6", "storage", "Docker", "runc"),
    Entry("docker-volume", "Docker named volume", "#31a354", "storage", "Docker", "runc"),
    Entry("rootless-docker-layer", "Rootless Docker container layer", "#d6616b", "storage",
          "Docker", "runc", rootless=True),
    Entry("podman-fuse-overlayfs", "Podman fuse-overlayfs", "#e7ba52", "storage", "Podman",
          "crun"),
    # controls of the instrument (pipeline/collect/modes/controls.py): their tables name them by
    # mode name and their figures draw them grey; sorted by name, as modes the figures do not
    # rank always were
    Entry("native-aa", "native-aa", UNKNOWN_COLOR, "control"),
    Entry("native-cpuquota", "native-cpuquota", UNKNOWN_COLOR, "control"),
    Entry("native-tbf", "native-tbf", UNKNOWN_COLOR, "control"),
    Entry("docker-cpuquota", "docker-cpuquota", UNKNOWN_COLOR, "control"),
)

CATALOGUE: dict[str, Entry] = {entry.name: entry for entry in ENTRIES}
# Modes a figure ranks; the controls come after them and after any mode the catalogue does not
# know, as they did before they had entries.
RANKED: list[str] = [e.name for e in ENTRIES if e.family != "control"]


def entry(mode: str) -> Entry | None:
    """``mode``'s entry, None for a mode this checkout does not know (older data)."""
    return CATALOGUE.get(mode)


def label(mode: str) -> str:
    """What a reader calls ``mode``; its name where the catalogue does not know it."""
    found = CATALOGUE.get(mode)
    return found.label if found else mode


def colour(mode: str) -> str:
    found = CATALOGUE.get(mode)
    return found.colour if found else UNKNOWN_COLOR


def rank(mode: str) -> int:
    """Position of ``mode`` in the reading order; controls and unknown modes go last (ties are
    broken by name where modes are sorted)."""
    return RANKED.index(mode) if mode in RANKED else len(RANKED)


def scenario(mode: str, path: str) -> str | None:
    """What a reader should picture for ``mode`` on ``path``, where the catalogue says more
    than the label (None elsewhere)."""
    found = CATALOGUE.get(mode)
    return found.scenarios.get(path) if found else None


def family(mode: str) -> str | None:
    found = CATALOGUE.get(mode)
    return found.family if found else None


def in_family(name: str) -> list[str]:
    """The modes of family ``name``, in reading order."""
    if name not in FAMILIES:
        raise ValueError(f"unknown family {name!r}; known: {FAMILIES}")
    return [e.name for e in ENTRIES if e.family == name]


def platform(mode: str) -> str | None:
    found = CATALOGUE.get(mode)
    return found.platform if found else None


def rootful_twin(mode: str, among: Iterable[str]) -> str | None:
    """The rootful mode of ``among`` that runs ``mode``'s platform with its OCI runtime (the
    mode a rootless one is compared with: rootless Docker against the Docker bridge); None
    when ``mode`` is not rootless or ``among`` holds no such mode."""
    this = CATALOGUE.get(mode)
    if this is None or not this.rootless:
        return None
    return next((m for m in among if m in CATALOGUE and not CATALOGUE[m].rootless
                 and (platform(m), CATALOGUE[m].runtime) == (this.platform, this.runtime)),
                None)  # fmt: skip


def on_platform(modes: Iterable[str], name: str) -> str:
    """The first of ``modes`` that runs on platform ``name`` (a benchmark's Kubernetes mode)."""
    found = [m for m in modes if platform(m) == name]
    if not found:
        raise ValueError(f"none of {list(modes)} runs on {name}")
    return found[0]
