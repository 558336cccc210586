# shellcheck shell=bash
# A Kubernetes cluster of one or more nodes, each node a network namespace of this machine, from
# the binaries that tools/kubernetes/build.sh cached: etcd (Debian's etcd-server),
# kube-apiserver, kube-controller-manager and kube-scheduler in the first node's namespace; on
# every node a kubelet with a containerd of its own (own config, root, state and socket: the
# system's containerd and the lab's dockerds are not touched), Debian's bridge CNI plugin and
# kube-proxy in iptables mode. Each node's processes share a mount namespace of their own
# (make_mountns). The pause image and the test workload's image are built here and imported:
# no registry is needed. docs/kubernetes.md says why each setting.
#
# Sourced by single-node.sh (one node in a namespace of its own) and lab-cluster.sh (the
# embedded lab's node1..node3). The caller sets, before calling cluster_up / cluster_down:
#   PROG          name for messages
#   CLUSTER       the cluster's name (CA, kubeconfig contexts)
#   K8S_DIR       state root: pki, etcd, admin.kubeconfig, one directory per node
#   K8S_RUN       run root: one directory per node (pid files, logs, containerd state)
#   NODE_SPECS    one "NAME NETNS ADDRESS POD_CIDR CONTAINERD_SOCKET" per node; the first runs
#                 the control plane, the API server listens on its address
#   CLUSTER_CIDR  every node's pod subnet; SERVICE_CIDR, API_SERVICE_IP
#   ROUTE_NETNS   further namespaces that get a route to every pod subnet (may be empty)
#   ADMIN_KUBECONFIG
# (Everything is in functions: bash reads a function whole, so editing mid-run is safe.)

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VERSION=${KUBERNETES_VERSION:-$(tr -d ' \n' <"$here/VERSION")}
LAB_CACHE=${LAB_CACHE:-/var/cache/container-overhead-lab}
CACHE=${KUBERNETES_CACHE:-$LAB_CACHE/kubernetes}
BIN=$CACHE/$VERSION
IMAGES=$CACHE/images
PAUSE_IMAGE=registry.k8s.io/pause:3.10.2
WORKLOAD_IMAGE=localhost/container-overhead/busybox-httpd:local
# Host-wide sysctls the kubelet sets (setupKernelTunables); saved at up, put back at down.
KERNEL_TUNABLES=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
# Per-namespace sysctls the bridge plugin or kube-proxy may set; saved and put back per node.
NETNS_TUNABLES=(net.ipv4.ip_forward net.ipv4.conf.all.route_localnet)
CONTROL_PLANE=(etcd kube-apiserver kube-controller-manager kube-scheduler)
NODE_COMPONENTS=(containerd kubelet kube-proxy)
# Marks the FORWARD rules a node gets for its pod subnet, so down finds them.
RULE_COMMENT=co-k8s-pods

log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() { echo "$PROG: $*" >&2; exit 1; }

# use_node SPEC: the node that the functions below act on.
use_node() {
  read -r NODE NS NODE_IP POD_CIDR SOCK <<<"$1"
  STATE=$K8S_DIR/$NODE
  RUN=$K8S_RUN/$NODE
  CGROUP_ROOT=co-k8s-$NS
}
each_node() { local spec; for spec in "${NODE_SPECS[@]}"; do use_node "$spec"; "$@"; done; }
control_plane_node() { use_node "${NODE_SPECS[0]}"; }
api_ip() { local n ns ip; read -r n ns ip _ <<<"${NODE_SPECS[0]}"; echo "$ip"; }
api_netns() { local n ns; read -r n ns _ <<<"${NODE_SPECS[0]}"; echo "$ns"; }

in_ns() { nsenter --net="/run/netns/$NS" "$@"; }
# The API server listens on the first node's address, reachable from every node's namespace.
kubectl() { nsenter --net="/run/netns/$(api_netns)" "$BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" "$@"; }
ctr_() { ctr --address "$SOCK" -n k8s.io "$@"; }

# The node's mount namespace (see make_mountns), held by one sleeping process.
in_node() {
  nsenter --mount="/proc/$(cat "$RUN/mountns.pid")/ns/mnt" --net="/run/netns/$NS" "$@"
}

# Start a component in the node's namespaces (nsenter, not `ip netns exec`, which remounts /sys).
start() {
  local name=$1; shift
  mkdir -p "$RUN/log"
  # (nsenter itself in the background, not in_node: $! is then the component's own pid.)
  nsenter --mount="/proc/$(cat "$RUN/mountns.pid")/ns/mnt" --net="/run/netns/$NS" \
    setsid "$@" >"$RUN/log/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/$name.pid"
  log "started $name on $NODE (pid $!, log $RUN/log/$name.log)"
}

running() { local p; p=$(cat "$RUN/$1.pid" 2>/dev/null) && kill -0 "$p" 2>/dev/null; }

# wait_for SECONDS WHAT COMMAND...: retry COMMAND until it succeeds.
wait_for() {
  local seconds=$1 what=$2 t0=$SECONDS; shift 2
  until "$@" >/dev/null 2>&1; do
    if (( SECONDS - t0 > seconds )); then
      echo "$PROG: $what: not ready after ${seconds}s" >&2
      return 1
    fi
    sleep 0.5
  done
  log "$what ready after $(( SECONDS - t0 ))s"
}

check_inputs() {
  local b
  [ "$(id -u)" = 0 ] || die "run as root"
  for b in kubelet kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubectl; do
    [ -x "$BIN/$b" ] || die "no $BIN/$b: run 'make kubernetes' (tools/kubernetes/build.sh $VERSION)"
  done
  [ -x "$IMAGES/pause" ] || die "no $IMAGES/pause: run 'make kubernetes'"
  for b in etcd containerd containerd-shim-runc-v2 runc ctr openssl curl nsenter iptables; do
    command -v "$b" >/dev/null || die "$b not found (apt-get install etcd-server containerd runc curl)"
  done
  [ -x /usr/lib/cni/bridge ] || die "no /usr/lib/cni/bridge (apt-get install containernetworking-plugins)"
  [ -x /bin/busybox ] || die "no /bin/busybox (apt-get install busybox-static)"
}

# cgroup v1 controllers that /proc/self/cgroup lists but that no mount holds (on this machine
# kind: hugetlb). containerd 1.6 then cannot load any container's cgroups ("loading cgroup for
# PID: cgroups: cannot find cgroup mount destination") and reports no container metrics.
unmounted_controllers() {
  local c
  for c in $(awk -F: '$2 != "" && $2 !~ /^name=/ {print $2}' /proc/self/cgroup | tr ',' ' '); do
    awk -v c="$c" '{split($0, f, " - "); split(f[2], t, " ")}
      t[1] == "cgroup" && index("," t[3] ",", "," c ",") {found = 1} END {exit !found}' \
      /proc/self/mountinfo || echo "$c"
  done
  return 0
}

# The node's processes share a mount namespace of their own: the host's mounts propagate in
# (slave), nothing propagates out. There, /sys/fs/cgroup is a tmpfs of its own holding the
# host's cgroup mounts again plus the controllers that the host leaves unmounted (the kubelet
# and runc look for a controller at /sys/fs/cgroup/NAME only). Container and pod mounts live
# in this namespace and go with its last process.
make_mountns() {
  local c script pid t0=$SECONDS
  mkdir -p "$RUN"
  script="mount -t tmpfs -o mode=755 co-k8s-cgroup /sys/fs/cgroup"
  while read -r dir type opts; do
    script+=" && mkdir -p $dir && mount -t $type ${opts:+-o $opts} $type $dir"
  done < <(awk '{split($0, f, " - "); split(f[1], a, " "); split(f[2], t, " ")}
    t[1] ~ /^cgroup2?$/ && a[5] ~ "^/sys/fs/cgroup/" {
      o = t[3]; sub(/^r[wo],?/, "", o); print a[5], t[1], o}' /proc/self/mountinfo)
  unmounted_controllers >"$RUN/unmounted-controllers"
  for c in $(cat "$RUN/unmounted-controllers"); do
    script+=" && mkdir -p /sys/fs/cgroup/$c && mount -t cgroup -o $c cgroup /sys/fs/cgroup/$c"
  done
  unshare --mount --propagation slave sh -c "$script && exec sleep infinity" \
    >"$RUN/mountns.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$RUN/mountns.pid"
  until [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$(command -v sleep)")" ]; do
    kill -0 "$pid" 2>/dev/null || die "mount namespace: $(cat "$RUN/mountns.log")"
    (( SECONDS - t0 < 10 )) || die "mount namespace: not ready after 10s"
    sleep 0.1
  done
  log "$NODE: mount namespace held by pid $pid; cgroup controllers added there:" \
    "$(tr '\n' ' ' <"$RUN/unmounted-controllers")"
}

# The kubelet (cgroupfs driver) wants its cgroup root to exist in every hierarchy.
make_cgroups() {
  local h c
  for h in /sys/fs/cgroup/*/; do
    mountpoint -q "$h" || continue
    mkdir -p "$h$CGROUP_ROOT"
    if [ -f "$h/cpuset.cpus" ]; then
      cat "$h/cpuset.cpus" >"$h$CGROUP_ROOT/cpuset.cpus"
      cat "$h/cpuset.mems" >"$h$CGROUP_ROOT/cpuset.mems"
    fi
  done
  for c in $(cat "$RUN/unmounted-controllers"); do
    in_node mkdir -p "/sys/fs/cgroup/$c/$CGROUP_ROOT"
  done
  return 0
}

# kubeconfig WHO SERVER: a kubeconfig holding its certificates (it may be copied elsewhere).
kubeconfig() {
  local d=$K8S_DIR/pki
  cat <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $CLUSTER
  cluster: {server: "$2", certificate-authority-data: $(base64 -w0 "$d/ca.crt")}
users:
- name: $1
  user: {client-certificate-data: $(base64 -w0 "$d/$1.crt"), client-key-data: $(base64 -w0 "$d/$1.key")}
contexts:
- name: $CLUSTER
  context: {cluster: $CLUSTER, user: $1}
current-context: $CLUSTER
EOF
}

make_pki() {
  local d=$K8S_DIR/pki server spec
  server="https://$(api_ip):6443"
  mkdir -p "$d" && cd "$d" || die "cannot enter $d"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 \
    -subj "/CN=$CLUSTER-ca" 2>/dev/null
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  # cert NAME CN [O] [SAN]
  cert() {
    local subj="/CN=$2" ext
    [ -n "${3:-}" ] && subj="/O=$3$subj"
    ext=$(mktemp)
    echo "extendedKeyUsage=clientAuth,serverAuth" >"$ext"
    [ -n "${4:-}" ] && echo "subjectAltName=$4" >>"$ext"
    openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$subj" 2>/dev/null
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
      -extfile "$ext" -out "$1.crt" 2>/dev/null
    rm -f "$1.csr" "$ext"
  }
  cert apiserver kube-apiserver "" \
    "IP:$(api_ip),IP:127.0.0.1,IP:$API_SERVICE_IP,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
  cert admin admin system:masters
  cert controller-manager system:kube-controller-manager
  cert scheduler system:kube-scheduler
  cert kube-proxy system:kube-proxy
  local who
  for who in controller-manager scheduler kube-proxy; do
    kubeconfig "$who" "$server" >"$who.kubeconfig"
  done
  for spec in "${NODE_SPECS[@]}"; do
    use_node "$spec"
    cert "kubelet-$NODE" "system:node:$NODE" system:nodes
    kubeconfig "kubelet-$NODE" "$server" >"kubelet-$NODE.kubeconfig"
  done
  kubeconfig admin "$server" >"$ADMIN_KUBECONFIG"
  chmod 600 "$ADMIN_KUBECONFIG" ./*.key ./*.kubeconfig
  cd - >/dev/null || true
}

write_node_configs() {
  mkdir -p "$STATE/containerd" "$STATE/cni/net.d" "$STATE/cni/ipam" "$RUN/containerd" \
    "$STATE/kubelet" "$STATE/pod-logs" "$(dirname "$SOCK")"
  cat >"$STATE/containerd/config.toml" <<EOF
version = 2
root = "$STATE/containerd/root"
state = "$RUN/containerd/state"
[grpc]
  address = "$SOCK"
[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  netns_mounts_under_state_dir = true
  # Root here lacks CAP_SYS_RESOURCE: a negative oom_score_adj (the sandbox's -998) fails in
  # runc ("can't get final child's PID from pipe: EOF"). Clamp to containerd's own score.
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$RUN/runc"
EOF
  cat >"$STATE/cni/net.d/10-$CGROUP_ROOT.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "$CGROUP_ROOT",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$STATE/cni/ipam",
        "ranges": [[{"subnet": "$POD_CIDR"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    }
  ]
}
EOF
  cat >"$STATE/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine kind has cgroup v1: from 1.35 the kubelet refuses it unless told.
failCgroupV1: false
# containerd 1.6 does not answer the CRI RuntimeConfig call: the kubelet falls back to this.
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP_ROOT
containerRuntimeEndpoint: unix://$SOCK
address: $NODE_IP
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
podLogsDir: $STATE/pod-logs
volumePluginDir: $STATE/volume-plugins
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $K8S_DIR/pki/ca.crt}
authorization: {mode: Webhook}
clusterDomain: cluster.local
failSwapOn: false
# No CAP_SYS_RESOURCE here: the kubelet could not lower its own score (default -999).
oomScoreAdj: 0
resolvConf: ""
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi"}
EOF
  cat >"$STATE/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: $K8S_DIR/pki/kube-proxy.kubeconfig}
hostnameOverride: $NODE
clusterCIDR: $CLUSTER_CIDR
oomScoreAdj: 0
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
# NodePorts on the node's addresses only: no route_localnet=1 in the node's namespace.
iptables: {localhostNodePorts: false}
# 0: leave the host-wide conntrack table size and timeouts as they are.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
}

# The pause image (tools/kubernetes/pause, built by build.sh) and the smoke test's workload
# (Debian's static busybox serving a page), as OCI archives (same files, same digests).
build_images() {
  local dir=$IMAGES
  python3 "$here/oci_image.py" "$PAUSE_IMAGE" "$dir/pause.tar" --add "$dir/pause=/pause" \
    --entrypoint /pause >/dev/null
  python3 "$here/oci_image.py" "$WORKLOAD_IMAGE" "$dir/busybox-httpd.tar" \
    --add /bin/busybox=/bin/busybox --link /bin/sh=busybox \
    --text "/www/index.html=hello from $CLUSTER" \
    --entrypoint /bin/busybox --cmd=httpd --cmd=-f --cmd=-p --cmd=8080 --cmd=-h --cmd=/www \
    >/dev/null
}

import_images() {
  ctr_ images import "$IMAGES/pause.tar" >/dev/null
  ctr_ images import "$IMAGES/busybox-httpd.tar" >/dev/null
  log "$NODE: images $(ctr_ images ls -q | tr '\n' ' ')"
}

save_tunables() {
  local k
  [ -f "$K8S_DIR/sysctl.saved" ] && return 0
  for k in "${KERNEL_TUNABLES[@]}"; do echo "$k=$(sysctl -n "$k")"; done >"$K8S_DIR/sysctl.saved"
}

# Forwarding for the node's pods, and routes to every other node's pod subnet from this node
# and from ROUTE_NETNS (pod to pod across nodes, and clients to pods, via the owning node).
open_node_network() {
  local k spec n ns ip cidr
  [ -f "$STATE/netns-sysctl.saved" ] ||
    for k in "${NETNS_TUNABLES[@]}"; do echo "$k=$(in_ns sysctl -n "$k")"; done \
      >"$STATE/netns-sysctl.saved"
  in_ns sysctl -qw net.ipv4.ip_forward=1
  for k in -s -d; do
    in_ns iptables -C FORWARD "$k" "$POD_CIDR" -m comment --comment "$RULE_COMMENT" -j ACCEPT \
      2>/dev/null ||
      in_ns iptables -I FORWARD "$k" "$POD_CIDR" -m comment --comment "$RULE_COMMENT" -j ACCEPT
  done
  for spec in "${NODE_SPECS[@]}"; do
    read -r n ns ip cidr _ <<<"$spec"
    [ "$ns" = "$NS" ] || ip -n "$NS" route replace "$cidr" via "$ip"
  done
}

route_clients() {
  local spec n ns ip cidr client
  for client in $ROUTE_NETNS; do
    for spec in "${NODE_SPECS[@]}"; do
      read -r n ns ip cidr _ <<<"$spec"
      ip -n "$client" route replace "$cidr" via "$ip"
    done
  done
}

nodes_ready() {
  local spec n ready
  ready=$(kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}')
  for spec in "${NODE_SPECS[@]}"; do
    read -r n _ <<<"$spec"
    [[ " $ready " == *" $n=True "* ]] || return 1
  done
}

start_node_runtime() {
  make_mountns
  make_cgroups
  write_node_configs
  open_node_network
  start containerd containerd --config "$STATE/containerd/config.toml"
}

wait_node_runtime() {
  wait_for 60 "$NODE: containerd" ctr --address "$SOCK" version
  import_images
}

start_control_plane() {
  local p=$K8S_DIR/pki
  start etcd etcd --name "$CLUSTER" --data-dir "$K8S_DIR/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster "$CLUSTER=http://127.0.0.1:2380"
  wait_for 60 etcd in_ns curl -sf http://127.0.0.1:2379/health
  start kube-apiserver "$BIN/kube-apiserver" --etcd-servers http://127.0.0.1:2379 \
    --advertise-address "$NODE_IP" --bind-address "$NODE_IP" --secure-port 6443 \
    --service-cluster-ip-range "$SERVICE_CIDR" --allow-privileged=true \
    --service-node-port-range 1024-32767 \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --client-ca-file "$p/ca.crt" --tls-cert-file "$p/apiserver.crt" \
    --tls-private-key-file "$p/apiserver.key" \
    --kubelet-client-certificate "$p/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$p/apiserver-kubelet-client.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
    --kubelet-preferred-address-types InternalIP --profiling=false
  wait_for 120 kube-apiserver in_ns curl -sf --cacert "$p/ca.crt" --cert "$p/admin.crt" \
    --key "$p/admin.key" "https://$NODE_IP:6443/readyz"
  start kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig "$p/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$p/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$p/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --root-ca-file "$p/ca.crt" \
    --use-service-account-credentials=true --flex-volume-plugin-dir "$K8S_DIR/volume-plugins" \
    --service-account-private-key-file "$p/sa.key" --service-cluster-ip-range "$SERVICE_CIDR" \
    --cluster-signing-cert-file "$p/ca.crt" --cluster-signing-key-file "$p/ca.key" \
    --profiling=false
  start kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$p/scheduler.kubeconfig" \
    --authentication-kubeconfig "$p/scheduler.kubeconfig" \
    --authorization-kubeconfig "$p/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --profiling=false
}

start_node_agents() {
  start kubelet "$BIN/kubelet" --config "$STATE/kubelet/config.yaml" \
    --kubeconfig "$K8S_DIR/pki/kubelet-$NODE.kubeconfig" --root-dir "$STATE/kubelet" \
    --hostname-override "$NODE" --node-ip "$NODE_IP"
  start kube-proxy "$BIN/kube-proxy" --config "$STATE/kube-proxy.yaml"
}

cluster_up() {
  check_inputs
  trap '[ $? = 0 ] || echo "$PROG: up failed: logs in $K8S_RUN/*/log; then run down" >&2' EXIT
  local t0=$SECONDS
  mkdir -p "$K8S_DIR" "$K8S_RUN"
  # Paths outside our directories that a component makes: down removes them if up made them.
  [ -d /var/log/containers ] || touch "$K8S_DIR/made-var-log-containers"
  [ -d /var/lib/cni ] || touch "$K8S_DIR/made-var-lib-cni"
  make_pki
  build_images
  each_node start_node_runtime
  route_clients
  each_node wait_node_runtime
  control_plane_node
  start_control_plane
  save_tunables
  each_node start_node_agents
  wait_for 180 "nodes Ready" nodes_ready
  wait_for 60 "default service account" kubectl get serviceaccount default
  log "cluster up in $(( SECONDS - t0 ))s; kubectl --kubeconfig $ADMIN_KUBECONFIG"
}

cluster_status() {
  local c rc=0 spec
  for spec in "${NODE_SPECS[@]}"; do
    use_node "$spec"
    for c in "${NODE_COMPONENTS[@]}" $([ "$spec" = "${NODE_SPECS[0]}" ] && echo "${CONTROL_PLANE[@]}"); do
      if running "$c"; then echo "$NODE $c: running (pid $(cat "$RUN/$c.pid"))"
      else echo "$NODE $c: not running"; rc=1; fi
    done
  done
  [ -x "$BIN/kubectl" ] && [ -f "$ADMIN_KUBECONFIG" ] && kubectl get nodes -o wide 2>&1 || true
  return $rc
}

# stop_all NAME...: SIGTERM the current node's components at once, SIGKILL after 10 s.
stop_all() {
  local name pid pids=()
  for name in "$@"; do
    pid=$(cat "$RUN/$name.pid" 2>/dev/null) || continue
    kill "$pid" 2>/dev/null && pids+=("$pid")
    rm -f "$RUN/$name.pid"
  done
  local deadline=$(( SECONDS + 10 )) alive
  while :; do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    (( alive )) || return 0
    (( SECONDS < deadline )) || break
    sleep 0.2
  done
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
}

# Our processes: every component names our state directory, the runc shims name a node's
# containerd socket, and the pods' processes are in our cgroup roots.
our_processes() {
  local f pid socks spec n ns ip cidr sock h
  local mine=" " p=$$
  # Not this script nor its callers, whose command lines may name our paths.
  while [ "${p:-0}" -gt 1 ]; do mine+="$p "; p=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null); done
  socks=$(for spec in "${NODE_SPECS[@]}"; do read -r n ns ip cidr sock <<<"$spec"; echo "$sock"; done |
    paste -sd'|')
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}; pid=${pid%/cmdline}
    [[ $mine == *" $pid "* ]] && continue
    tr '\0' ' ' 2>/dev/null <"$f" | grep -qE -- "(--[a-z-]+[ =]$K8S_DIR/|-address ($socks)( |$))" \
      && echo "$pid"
  done
  for spec in "${NODE_SPECS[@]}"; do
    use_node "$spec"
    for h in /sys/fs/cgroup/*/"$CGROUP_ROOT"; do
      [ -d "$h" ] && find "$h" -name cgroup.procs -exec cat {} + 2>/dev/null
    done
  done | sort -u
  return 0
}

# KUBE-* chains (kube-proxy's and the kubelet's) and the rules that jump to them, and our pod
# subnet rules, in the node's namespace: the lab's namespaces outlive the cluster.
clean_iptables() {
  local cmd t rule chain
  for cmd in iptables ip6tables; do
    for t in filter nat mangle raw; do
      in_ns "$cmd" -t "$t" -S 2>/dev/null |
        awk -v c="$RULE_COMMENT" '$1 == "-A" && $2 !~ /^KUBE-/ && (/ -j KUBE-/ || index($0, c))' |
        sed 's/^-A/-D/' | while IFS= read -r rule; do
          eval "in_ns $cmd -t $t $rule" 2>/dev/null || true
        done
      for chain in $(in_ns "$cmd" -t "$t" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ {print $2}'); do
        in_ns "$cmd" -t "$t" -F "$chain" 2>/dev/null || true
      done
      for chain in $(in_ns "$cmd" -t "$t" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ {print $2}'); do
        in_ns "$cmd" -t "$t" -X "$chain" 2>/dev/null || true
      done
    done
  done
}

# What the node left in its network namespace: the CNI bridge, routes, iptables, sysctls.
close_node_network() {
  local spec n ns ip cidr client kv
  [ -e "/run/netns/$NS" ] || return 0
  ip -n "$NS" link delete cni0 2>/dev/null || true
  clean_iptables
  for spec in "${NODE_SPECS[@]}"; do
    read -r n ns ip cidr _ <<<"$spec"
    ip -n "$NS" route delete "$cidr" via "$ip" 2>/dev/null || true
  done
  if [ -f "$STATE/netns-sysctl.saved" ]; then
    while IFS= read -r kv; do in_ns sysctl -qw "$kv" || true; done <"$STATE/netns-sysctl.saved"
  fi
}

unroute_clients() {
  local spec n ns ip cidr client
  for client in $ROUTE_NETNS; do
    [ -e "/run/netns/$client" ] || continue
    for spec in "${NODE_SPECS[@]}"; do
      read -r n ns ip cidr _ <<<"$spec"
      ip -n "$client" route delete "$cidr" via "$ip" 2>/dev/null || true
    done
  done
}

# cgroups: the root in every hierarchy, deepest first (empty by now); first the hierarchies
# mounted in the node's mount namespace, from inside it, before its holder ends.
remove_node_cgroups() {
  local c h
  if running mountns; then
    for c in $(cat "$RUN/unmounted-controllers" 2>/dev/null); do
      h=/sys/fs/cgroup/$c/$CGROUP_ROOT
      in_node find "$h" -depth -type d -exec rmdir {} + 2>/dev/null || true
      if in_node test -d "$h"; then echo "left: cgroup $h (in $NODE's mount namespace)"; fi
    done
  fi
  stop_all mountns
  for h in /sys/fs/cgroup/*/; do
    [ -d "$h$CGROUP_ROOT" ] || continue
    find "$h$CGROUP_ROOT" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
}

# Stop everything cluster_up started and remove what it made; safe on a half-made cluster.
# Nothing is kept, so nothing stops gracefully: pods are not deleted through the API (that took
# 15 to 40 s) and no component gets a SIGTERM it may wait on. Every process is killed (the
# pods' by their cgroups), their network namespaces unmounted (their veths go with them), the
# bridge deleted.
kill_components() {
  local name
  for name in "${NODE_COMPONENTS[@]}" "${CONTROL_PLANE[@]}"; do
    kill -9 "$(cat "$RUN/$name.pid" 2>/dev/null)" 2>/dev/null || true
    rm -f "$RUN/$name.pid"
  done
}

cluster_down() {
  local pid m kv t0=$SECONDS
  each_node kill_components
  for _ in 1 2 3; do
    pid=$(our_processes)
    [ -n "$pid" ] || break
    # shellcheck disable=SC2086  # one pid a word
    kill -9 $pid 2>/dev/null || true
    sleep 0.2
  done
  log "down: processes killed ($(( SECONDS - t0 ))s)"
  # Mounts under our directories, deepest first (rootfs overlays, shm, pod netns, volumes).
  for m in $(awk -v s="$K8S_DIR/" -v r="$K8S_RUN/" 'index($2, s) == 1 || index($2, r) == 1 {print $2}' \
      /proc/self/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  each_node remove_node_cgroups
  log "down: mounts and cgroups removed ($(( SECONDS - t0 ))s)"
  each_node close_node_network
  unroute_clients
  log "down: iptables, bridges, routes removed ($(( SECONDS - t0 ))s)"
  # The kubelet's links in /var/log/containers point into our pod-logs directories, and the
  # CNI library caches its results under /var/lib/cni (ours are named co-k8s-*).
  find /var/log/containers -maxdepth 1 -type l -lname "$K8S_DIR/*" -delete 2>/dev/null || true
  [ -f "$K8S_DIR/made-var-log-containers" ] && { rmdir /var/log/containers 2>/dev/null || true; }
  find /var/lib/cni -depth -name 'co-k8s-*' -delete 2>/dev/null || true
  [ -f "$K8S_DIR/made-var-lib-cni" ] && \
    { find /var/lib/cni -depth -type d -empty -delete 2>/dev/null || true; }
  if [ -f "$K8S_DIR/sysctl.saved" ]; then
    while IFS= read -r kv; do sysctl -qw "$kv" || true; done <"$K8S_DIR/sysctl.saved"
  fi
  each_node remove_socket
  rm -rf "$K8S_DIR" "$K8S_RUN"
}

remove_socket() { rm -f "$SOCK"; }

cluster_leftovers() {
  local left=0 h spec chains
  grep -qE " ($K8S_DIR|$K8S_RUN)" /proc/self/mounts && { echo "left: mounts under $K8S_DIR or $K8S_RUN"; left=1; }
  for spec in "${NODE_SPECS[@]}"; do
    use_node "$spec"
    for h in /sys/fs/cgroup/*/; do
      [ -d "$h$CGROUP_ROOT" ] && { echo "left: cgroup $h$CGROUP_ROOT"; left=1; }
    done
    [ -e "$SOCK" ] && { echo "left: socket $SOCK"; left=1; }
    if [ -e "/run/netns/$NS" ]; then
      chains=$(in_ns iptables-save 2>/dev/null | grep -cE "^:KUBE-|$RULE_COMMENT" || true)
      (( chains == 0 )) || { echo "left: $chains KUBE-* chains or pod rules in $NS"; left=1; }
      ip -n "$NS" link show cni0 >/dev/null 2>&1 && { echo "left: bridge cni0 in $NS"; left=1; }
    fi
  done
  [ -n "$(our_processes)" ] && { echo "left: processes $(our_processes | tr '\n' ' ')"; left=1; }
  [ -e "$K8S_DIR" ] && { echo "left: $K8S_DIR"; left=1; }
  if (( left )); then return 1; fi
  log "down: nothing left ($CLUSTER)"
}
