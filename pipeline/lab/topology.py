"""The embedded lab's fixed layout: hosts, addresses, names and paths.

It must agree with `inventory/lab.yaml`, which is what the rest of the pipeline reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

STATE_DIR = Path("/var/lib/container-overhead-lab")
RUN_DIR = Path("/run/container-overhead-lab")

BRIDGE = "colab0"
BRIDGE_ADDRESS = "10.77.0.1/24"
LAB_SUBNET = "10.77.0.0/24"
WAN_SUBNET = "10.78.0.0/24"
WAN_ROUTER_ADDRESS = "10.77.0.30"
WAN_ROUTER_TUN_ADDRESS = "10.78.0.1"
WAN_TUN = "wan0"
DOCKER_BRIDGES = "172.31.0.0/16"  # covers every node's docker0 subnet

# Marks the one iptables rule the lab adds in the root namespace, so down() finds it.
RULE_COMMENT = "container-overhead-lab"

SWARM_ADDR_POOL = "10.201.0.0/16"
OVERLAY_NETWORK = "lab-overlay"
OVERLAY_SUBNET = "10.201.1.0/24"

NETNS_DIR = Path("/run/netns")
# Each node's dockerd puts its containers under this cgroup, so down() can find them.
CGROUP_PARENT = "container-overhead-lab"

SSH_DIR = STATE_DIR / "ssh"
CLIENT_KEY = SSH_DIR / "id_ed25519"
KNOWN_HOSTS = SSH_DIR / "known_hosts"
AUTHORIZED_DIR = STATE_DIR / "authorized_keys"  # one file per login user (sshd: %u)

# Paths outside the two lab directories that up() may create; listed here so down()
# removes exactly what the lab made (see placeholders.py).
CREATED_RECORD = STATE_DIR / "created-paths.json"


@dataclass(frozen=True)
class Host:
    """One lab host: a network namespace with an address, maybe an sshd and a dockerd."""

    name: str
    address: str
    node_index: int = 0  # 1..3 for Swarm nodes, 0 otherwise
    on_bridge: bool = True  # inet-client sits behind the WAN path instead
    runs_sshd: bool = True

    @property
    def is_node(self) -> bool:
        return self.node_index > 0

    @property
    def netns(self) -> Path:
        return NETNS_DIR / self.name

    @property
    def veth(self) -> str:
        """Root-namespace end of the host's veth pair (kernel limit: 15 characters)."""
        return f"co-{self.name}"

    @property
    def state_dir(self) -> Path:
        return STATE_DIR / self.name

    @property
    def run_dir(self) -> Path:
        return RUN_DIR / self.name

    @property
    def docker_socket(self) -> Path:
        return self.run_dir / "docker.sock"

    @property
    def docker_host(self) -> str:
        return f"unix://{self.docker_socket}"

    @property
    def docker_bridge_subnet(self) -> str:
        return f"172.31.{self.node_index}.0/24"

    @property
    def docker_bridge_ip(self) -> str:
        return f"172.31.{self.node_index}.1/24"

    @property
    def pod_subnet(self) -> str:
        """The node's Kubernetes pod subnet (the lab's cluster: pipeline/lab/kubernetes.py)."""
        return f"10.240.{self.node_index}.0/24"

    @property
    def k8s_containerd_socket(self) -> Path:
        """The node's Kubernetes containerd (CRI namespace K8S_CRI_NAMESPACE): what
        `ctr --address SOCKET -n k8s.io images import -` loads an image into."""
        return self.run_dir / "k8s-containerd.sock"

    @property
    def k8s_cgroup_root(self) -> str:
        """The node's kubelet's cgroup root, /<this> in every cgroup hierarchy."""
        return f"co-k8s-{self.name}"


NODES = tuple(Host(f"node{i}", f"10.77.0.1{i}", node_index=i) for i in (1, 2, 3))
DC_CLIENT = Host("dc-client", "10.77.0.21")
WAN_ROUTER = Host("wan-router", WAN_ROUTER_ADDRESS, runs_sshd=False)
INET_CLIENT = Host("inet-client", "10.78.0.2", on_bridge=False)

HOSTS = (*NODES, DC_CLIENT, WAN_ROUTER, INET_CLIENT)
SSH_HOSTS = tuple(h for h in HOSTS if h.runs_sshd)
MANAGER = NODES[0]

# The lab's Kubernetes cluster (`python -m pipeline.lab up --kubernetes`, docs/kubernetes.md):
# control plane on node1, a kubelet, containerd and kube-proxy on every node; Kubernetes node
# names are the lab node names. Pod subnets: Host.pod_subnet, inside K8S_POD_NETWORK.
K8S_DIR = STATE_DIR / "kubernetes"
K8S_RUN_DIR = RUN_DIR / "kubernetes"
K8S_ADMIN_KUBECONFIG = K8S_DIR / "admin.kubeconfig"  # certificates inline; any lab namespace
K8S_API_SERVER = f"https://{MANAGER.address}:6443"
K8S_POD_NETWORK = "10.240.0.0/16"
K8S_SERVICE_CIDR = "10.241.0.0/24"
K8S_API_SERVICE_IP = "10.241.0.1"  # the `kubernetes` Service: the range's first address
K8S_CRI_NAMESPACE = "k8s.io"
# Imported into every node's containerd at up (tools/kubernetes/cluster.sh builds them).
K8S_PAUSE_IMAGE = "registry.k8s.io/pause:3.10.2"
K8S_WORKLOAD_IMAGE = "localhost/container-overhead/busybox-httpd:local"  # httpd on port 8080

# The unprivileged user the rootless modes run as (inventory/lab.yaml: hosts.node1.rootless).
# The uid lies above login.defs' UID_MAX (60000), so useradd never hands it out by itself.
ROOTLESS_USER = "co-bench"
ROOTLESS_UID = 60777
