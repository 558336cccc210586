#!/usr/bin/env bash
# A single-node Kubernetes cluster in a network namespace of its own (the cluster itself:
# cluster.sh, which the lab's three-node cluster shares). docs/kubernetes.md says why each
# setting.
#
# Usage: tools/kubernetes/single-node.sh up | smoke | status | down
#   up      bring the cluster up (needs root; `make kubernetes` first); after a failed up,
#           read the logs in /run/co-k8s/NAME/*/log, then run down
#   smoke   a pod from a local image (busybox httpd) and a ClusterIP Service in front of it;
#           both are asked for a page from the node's namespace, then the pod is deleted
#   status  which processes run, the node's condition
#   down    stop everything `up` started and remove what it made (processes, the namespace,
#           mounts, cgroups, pod network namespaces, state); sysctls the kubelet changed are
#           put back
# Environment: KUBERNETES_VERSION (default tools/kubernetes/VERSION), KUBERNETES_CACHE,
#   K8S_NETNS (default co-k8s): the namespace, also naming the state and run directories
#   (/var/lib/co-k8s/NAME, /run/co-k8s/NAME) and the cgroup root (/co-k8s-NAME).
set -euo pipefail
# (In braces: bash reads the whole script before running it, so editing it mid-run is safe.)
{

here=$(cd "$(dirname "$0")" && pwd)
PROG=single-node.sh
# shellcheck source=tools/kubernetes/cluster.sh
. "$here/cluster.sh"
NS=${K8S_NETNS:-co-k8s}
CLUSTER=$NS
K8S_DIR=/var/lib/co-k8s/$NS
K8S_RUN=/run/co-k8s/$NS
NODE_IP=10.201.0.2
CLUSTER_CIDR=10.202.0.0/24
SERVICE_CIDR=10.203.0.0/24
API_SERVICE_IP=10.203.0.1
NODE_SPECS=("$NS-node $NS $NODE_IP $CLUSTER_CIDR $K8S_RUN/$NS-node/containerd/containerd.sock")
ROUTE_NETNS=""
ADMIN_KUBECONFIG=$K8S_DIR/admin.kubeconfig
use_node "${NODE_SPECS[0]}"

make_netns() {
  [ -e "/run/netns/$NS" ] && die "namespace $NS exists: run '$0 down' first, or name another"
  mkdir -p "$K8S_DIR"
  ip netns add "$NS"
  touch "$K8S_DIR/made-netns"  # down deletes only a namespace that up made
  ip -n "$NS" link set lo up
  # The node's address, on a veth pair whose both ends stay in the namespace (this kernel has
  # no dummy device). The default route, for the components that look for the node's address
  # through it, ends at the peer, which forwards nothing: nothing leaves the namespace.
  ip -n "$NS" link add k8s0 type veth peer name k8s0-end
  ip -n "$NS" addr add "$NODE_IP/24" dev k8s0
  ip -n "$NS" link set k8s0-end up
  ip -n "$NS" link set k8s0 up
  ip -n "$NS" route add default dev k8s0
  in_ns sysctl -qw net.ipv4.ip_forward=1
  in_ns sysctl -qw net.ipv4.conf.k8s0-end.forwarding=0
}

up() {
  check_inputs
  make_netns
  cluster_up
}

smoke() {
  local t0 ip cluster_ip page
  kubectl delete pod/web service/web --ignore-not-found --wait=true >/dev/null
  t0=$SECONDS
  kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: httpd
    image: $WORKLOAD_IMAGE
    imagePullPolicy: Never
    ports: [{containerPort: 8080}]
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
EOF
  kubectl wait --for=condition=Ready pod/web --timeout=120s >/dev/null
  ip=$(kubectl get pod web -o jsonpath='{.status.podIP}')
  log "pod web Ready after $(( SECONDS - t0 ))s at $ip"
  page=$(in_ns curl -sf --max-time 5 "http://$ip:8080/")
  log "pod answered: $page"
  cluster_ip=$(kubectl get service web -o jsonpath='{.spec.clusterIP}')
  wait_for 30 "service $cluster_ip:80 (kube-proxy iptables)" \
    in_ns curl -sf --max-time 2 "http://$cluster_ip/"
  log "service answered: $(in_ns curl -sf --max-time 5 "http://$cluster_ip/")"
  kubectl delete pod/web service/web --wait=true >/dev/null
  log "smoke passed"
}

down() {
  local made=0
  [ -f "$K8S_DIR/made-netns" ] && made=1
  cluster_down
  # The namespace goes with its iptables rules, bridge and veths.
  if (( made )) && [ -e "/run/netns/$NS" ]; then ip netns delete "$NS"; fi
  rmdir /var/lib/co-k8s /run/co-k8s 2>/dev/null || true
  [ -e "/run/netns/$NS" ] && echo "left: namespace $NS (not made by up, or not deleted)"
  cluster_leftovers
}

case ${1:-} in
  up) up ;;
  smoke) smoke ;;
  status) cluster_status ;;
  down) down ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
exit
}
