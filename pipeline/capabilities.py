"""What each execution mode serves: the paths a client reaches its server on and the host and
scenario benchmarks it runs in. The behavioural half of the mode catalogue
(``pipeline/catalogue.py`` holds what a reader sees: label, colour, order, family).

Collection plans from this table (a mode's ``paths``, a benchmark's ``modes``), so it is part
of every campaign's code digest: a changed row measures again. The catalogue's presentation is
kept out of this module, and collection never imports it, so relabelling or recolouring a mode
leaves every digest as it was (tests/unit/test_catalogue.py holds both properties).

Pure: no import from the rest of the package, so the modes, the benchmarks and analysis all
read it without reaching each other.
"""

from __future__ import annotations

from dataclasses import dataclass

# The network paths a server can be dialled on: from the datacenter client, over the emulated
# wide-area path, from the server host itself. "host" is the one path of a host or scenario
# benchmark, which runs on the server host in the mode's foreground.
NETWORK_PATHS = ("dc", "internet", "local")
HOST_PATH = "host"

# Benchmarks by what they need of a mode: a tool run in the mode's foreground (sysbench, perf
# bench, fio), a container engine it drives itself (cold start, footprint, density), an
# orchestrator it drives itself (orchestration, lb).
FOREGROUND = ("cpu", "memory", "syscall")
ENGINE_SCENARIOS = ("coldstart", "footprint", "density")
ORCHESTRATOR_SCENARIOS = ("orchestration", "lb")


@dataclass(frozen=True)
class Serves:
    """One mode's row: ``paths`` a network benchmark plans it on (``("host",)`` alone: no
    network benchmark); ``benchmarks`` the host and scenario benchmarks that run in it;
    ``control``: a control of the instrument (pipeline/collect/modes/controls.py), never part
    of "all", planned only where a campaign names it."""

    paths: tuple[str, ...]
    benchmarks: tuple[str, ...] = ()
    control: bool = False


# One row per mode. The order is the order a benchmark lists its modes in (``serving``), which
# is the order its campaign plans them before the seeded shuffle.
SERVES: dict[str, Serves] = {
    "native": Serves(NETWORK_PATHS, (*FOREGROUND, "disk", "coldstart")),
    "docker-host": Serves(("dc", "internet")),
    "docker-bridge": Serves(NETWORK_PATHS, (*FOREGROUND, *ENGINE_SCENARIOS)),
    "docker-nat": Serves(("dc", "internet")),
    "docker-proxy": Serves(("local",)),
    "swarm-overlay": Serves(("dc",), ORCHESTRATOR_SCENARIOS),
    "swarm-ingress": Serves(("dc", "internet")),
    "macvlan": Serves(("dc", "internet")),
    "swarm-overlay-mtu": Serves(("dc",)),
    "podman": Serves(("dc", "internet"), (*FOREGROUND, *ENGINE_SCENARIOS)),
    "rootless-docker": Serves(NETWORK_PATHS, (*FOREGROUND, *ENGINE_SCENARIOS)),
    "rootless-podman": Serves(NETWORK_PATHS, (*FOREGROUND, *ENGINE_SCENARIOS)),
    "pasta": Serves(NETWORK_PATHS),
    # storage modes: the disk benchmark's only
    "docker-overlay2": Serves((HOST_PATH,), ("disk",)),
    "docker-bind": Serves((HOST_PATH,), ("disk",)),
    "docker-volume": Serves((HOST_PATH,), ("disk",)),
    "rootless-docker-layer": Serves((HOST_PATH,), ("disk",)),
    "podman-fuse-overlayfs": Serves((HOST_PATH,), ("disk",)),
    # the bridge with another OCI runtime; for disk, the container layer as docker-overlay2's
    "docker-crun": Serves(NETWORK_PATHS, (*FOREGROUND, "disk", *ENGINE_SCENARIOS)),
    "docker-gvisor": Serves(NETWORK_PATHS, (*FOREGROUND, "disk", *ENGINE_SCENARIOS)),
    # Kubernetes: a pod runs the host benchmarks (disk: the node's containerd overlayfs layer);
    # cold start starts a pod behind a NodePort Service or in the node's network namespace
    "k8s-pod": Serves(("dc",), (*FOREGROUND, "disk", *ORCHESTRATOR_SCENARIOS)),
    "k8s-nodeport": Serves(("dc", "internet"), ("coldstart",)),
    "k8s-hostnetwork": Serves(("dc", "internet"), ("coldstart",)),
    "k8s-clusterip": Serves(("dc",)),
    # controls of the instrument: native-aa serves everything native serves, host benchmarks too
    "native-aa": Serves((*NETWORK_PATHS, HOST_PATH), control=True),
    "native-cpuquota": Serves((HOST_PATH,), control=True),
    "native-tbf": Serves(("dc",), control=True),
    "docker-cpuquota": Serves((HOST_PATH,), control=True),
}


def serves(mode: str) -> Serves:
    """``mode``'s row; a KeyError naming this file when the mode has none."""
    try:
        return SERVES[mode]
    except KeyError:
        raise KeyError(f"mode {mode!r} has no row in pipeline/capabilities.py (SERVES)") from None


def serving(benchmark: str) -> tuple[str, ...]:
    """The modes host or scenario ``benchmark`` runs in, in table order."""
    return tuple(mode for mode, row in SERVES.items() if benchmark in row.benchmarks)
