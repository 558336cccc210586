#!/usr/bin/env bash
# The embedded lab's Kubernetes cluster (cluster.sh): control plane on the first node, a node
# in each lab node's namespace. pipeline/lab/kubernetes.py runs it and passes the layout
# (pipeline/lab/topology.py) in the environment; run it through `python -m pipeline.lab`.
#
# Usage: tools/kubernetes/lab-cluster.sh up | status | down | leftovers
# Environment (all required): K8S_DIR, K8S_RUN, K8S_NODES (NODE_SPECS, one per line),
#   CLUSTER_CIDR, SERVICE_CIDR, API_SERVICE_IP, ROUTE_NETNS, ADMIN_KUBECONFIG
set -euo pipefail
{

here=$(cd "$(dirname "$0")" && pwd)
PROG=lab-cluster.sh
# shellcheck source=tools/kubernetes/cluster.sh
. "$here/cluster.sh"
CLUSTER=container-overhead-lab
: "${K8S_DIR:?}" "${K8S_RUN:?}" "${K8S_NODES:?}" "${CLUSTER_CIDR:?}" "${SERVICE_CIDR:?}"
: "${API_SERVICE_IP:?}" "${ROUTE_NETNS?}" "${ADMIN_KUBECONFIG:?}"
mapfile -t NODE_SPECS <<<"$K8S_NODES"

case ${1:-} in
  up) cluster_up ;;
  status) cluster_status ;;
  down) cluster_down; cluster_leftovers ;;
  leftovers) cluster_leftovers ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
exit
}
