"""Execution modes by name. A new mode is a module here, one line in MODES, its row in
pipeline/capabilities.py (what it serves) and its entry in pipeline/catalogue.py (how a reader
sees it)."""

from pipeline.collect.modes.base import Context, Deployment, Mode, ModeUnavailable, Workload
from pipeline.collect.modes.controls import DockerCpuQuota, NativeAA, NativeCpuQuota, NativeTbf
from pipeline.collect.modes.docker_bridge import DockerBridge
from pipeline.collect.modes.docker_crun import DockerCrun
from pipeline.collect.modes.docker_gvisor import DockerGvisor
from pipeline.collect.modes.docker_host import DockerHost
from pipeline.collect.modes.docker_nat import DockerNat
from pipeline.collect.modes.docker_proxy import DockerProxy
from pipeline.collect.modes.kubernetes import K8sClusterIP, K8sHostNetwork, K8sNodePort, K8sPod
from pipeline.collect.modes.macvlan import Macvlan
from pipeline.collect.modes.native import Native
from pipeline.collect.modes.pasta import Pasta
from pipeline.collect.modes.podman import Podman
from pipeline.collect.modes.rootless_docker import RootlessDocker
from pipeline.collect.modes.rootless_podman import RootlessPodman
from pipeline.collect.modes.storage import (
    DockerBind,
    DockerOverlay2,
    DockerVolume,
    PodmanFuseOverlayfs,
    RootlessDockerLayer,
)
from pipeline.collect.modes.swarm_ingress import SwarmIngress
from pipeline.collect.modes.swarm_overlay import SwarmOverlay
from pipeline.collect.modes.swarm_overlay_mtu import SwarmOverlayMtu

MODES: dict[str, Mode] = {
    mode.name: mode
    for mode in (
        Native(),
        DockerHost(),
        DockerBridge(),
        DockerNat(),
        DockerProxy(),
        SwarmOverlay(),
        SwarmIngress(),
        Macvlan(),
        SwarmOverlayMtu(),
        Podman(),
        RootlessDocker(),
        RootlessPodman(),
        Pasta(),
        DockerOverlay2(),
        DockerBind(),
        DockerVolume(),
        RootlessDockerLayer(),
        PodmanFuseOverlayfs(),
        DockerCrun(),
        DockerGvisor(),
        K8sPod(),
        K8sHostNetwork(),
        K8sNodePort(),
        K8sClusterIP(),
        # controls of the instrument: planned only where named (pipeline/collect/modes/controls.py)
        NativeAA(),
        NativeCpuQuota(),
        NativeTbf(),
        DockerCpuQuota(),
    )
}
# Modes a network benchmark can plan (the storage modes serve host benchmarks only).
NETWORK_MODES = [
    name for name, mode in MODES.items() if set(mode.paths) - {"host"} and not mode.control
]
# What "all" means: every mode but the controls.
STUDY_MODES = [name for name, mode in MODES.items() if not mode.control]

__all__ = [
    "MODES", "NETWORK_MODES", "STUDY_MODES", "Context", "Deployment", "Mode", "ModeUnavailable",
    "Workload",
]  # fmt: skip
