#!/usr/bin/env bash
# A single-node Kubernetes cluster in a network namespace of its own, from the binaries that
# tools/kubernetes/build.sh cached: etcd (Debian's etcd-server), kube-apiserver,
# kube-controller-manager, kube-scheduler, a kubelet with a containerd of its own (own config,
# root, state and socket: the system's containerd and the lab's dockerds are not touched),
# Debian's bridge CNI plugin and kube-proxy in iptables mode. The processes share a mount
# namespace of their own (make_mountns). The pause image and the test workload's image are
# built here and imported: no registry is needed. docs/kubernetes.md says why each setting.
#
# Usage: tools/kubernetes/single-node.sh up | smoke | status | down
#   up      bring the cluster up (needs root; `make kubernetes` first); after a failed up,
#           read the logs in /run/co-k8s/NAME/log, then run down
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
VERSION=${KUBERNETES_VERSION:-$(tr -d ' \n' <"$here/VERSION")}
LAB_CACHE=${LAB_CACHE:-/var/cache/container-overhead-lab}
CACHE=${KUBERNETES_CACHE:-$LAB_CACHE/kubernetes}
BIN=$CACHE/$VERSION
IMAGES=$CACHE/images
NS=${K8S_NETNS:-co-k8s}
STATE=/var/lib/co-k8s/$NS
RUN=/run/co-k8s/$NS
CGROUP_ROOT=co-k8s-$NS
NODE=$NS-node
NODE_IP=10.201.0.2
POD_CIDR=10.202.0.0/24
SERVICE_CIDR=10.203.0.0/24
API_SERVICE_IP=10.203.0.1
SOCK=$RUN/containerd/containerd.sock
PAUSE_IMAGE=registry.k8s.io/pause:3.10.2
WORKLOAD_IMAGE=localhost/container-overhead/busybox-httpd:local
KUBECONFIG_ADMIN=$STATE/pki/admin.kubeconfig
# Host-wide sysctls the kubelet sets (setupKernelTunables); saved at up, put back at down.
KERNEL_TUNABLES=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet
  kube-proxy)

log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() { echo "single-node.sh: $*" >&2; exit 1; }
in_ns() { nsenter --net="/run/netns/$NS" "$@"; }
# The API server listens on the node's address, inside the namespace only.
kubectl() { in_ns "$BIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }
ctr_() { ctr --address "$SOCK" -n k8s.io "$@"; }

# The node's mount namespace (see make_mountns), held by one sleeping process.
in_node() {
  nsenter --mount="/proc/$(cat "$RUN/mountns.pid")/ns/mnt" --net="/run/netns/$NS" "$@"
}

# Start a component in the namespaces (nsenter, not `ip netns exec`, which remounts /sys).
start() {
  local name=$1; shift
  mkdir -p "$RUN/log"
  # (nsenter itself in the background, not in_node: $! is then the component's own pid.)
  nsenter --mount="/proc/$(cat "$RUN/mountns.pid")/ns/mnt" --net="/run/netns/$NS" \
    setsid "$@" >"$RUN/log/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/$name.pid"
  log "started $name (pid $!, log $RUN/log/$name.log)"
}

running() { local p; p=$(cat "$RUN/$1.pid" 2>/dev/null) && kill -0 "$p" 2>/dev/null; }

# wait_for SECONDS WHAT COMMAND...: retry COMMAND until it succeeds; on time-out show the log.
wait_for() {
  local seconds=$1 what=$2 t0=$SECONDS; shift 2
  until "$@" >/dev/null 2>&1; do
    if (( SECONDS - t0 > seconds )); then
      echo "single-node.sh: $what: not ready after ${seconds}s" >&2
      return 1
    fi
    sleep 1
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

make_netns() {
  [ -e "/run/netns/$NS" ] && die "namespace $NS exists: run '$0 down' first, or name another"
  ip netns add "$NS"
  touch "$STATE/made-netns"  # down deletes only a namespace that up made
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
  log "mount namespace held by pid $pid; cgroup controllers added there:" \
    "$(tr '\n' ' ' <"$RUN/unmounted-controllers")"
}

# The kubelet (cgroupfs driver) wants its cgroup root to exist in every hierarchy.
make_cgroups() {
  local h
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

make_pki() {
  local d=$STATE/pki
  mkdir -p "$d" && cd "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 \
    -subj "/CN=$NS-ca" 2>/dev/null
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
    "IP:$NODE_IP,IP:127.0.0.1,IP:$API_SERVICE_IP,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
  cert admin admin system:masters
  cert controller-manager system:kube-controller-manager
  cert scheduler system:kube-scheduler
  cert kubelet "system:node:$NODE" system:nodes
  cert kube-proxy system:kube-proxy
  local who
  for who in admin controller-manager scheduler kubelet kube-proxy; do
    cat >"$who.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $NS
  cluster: {server: "https://$NODE_IP:6443", certificate-authority: $d/ca.crt}
users:
- name: $who
  user: {client-certificate: $d/$who.crt, client-key: $d/$who.key}
contexts:
- name: $NS
  context: {cluster: $NS, user: $who}
current-context: $NS
EOF
  done
  cd - >/dev/null
}

write_configs() {
  mkdir -p "$STATE/containerd" "$STATE/cni/net.d" "$STATE/cni/ipam" "$RUN/containerd" \
    "$STATE/kubelet" "$STATE/pod-logs"
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
  cat >"$STATE/cni/net.d/10-$NS.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "$NS",
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
  x509: {clientCAFile: $STATE/pki/ca.crt}
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
clientConnection: {kubeconfig: $STATE/pki/kube-proxy.kubeconfig}
hostnameOverride: $NODE
clusterCIDR: $POD_CIDR
oomScoreAdj: 0
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
# 0: leave the host-wide conntrack table size and timeouts as they are.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
}

# The pause image (tools/kubernetes/pause, built by build.sh) and the smoke test's workload
# (Debian's static busybox serving a page), as OCI archives imported into our containerd.
import_images() {
  local py=python3 dir=$IMAGES
  "$py" "$here/oci_image.py" "$PAUSE_IMAGE" "$dir/pause.tar" --add "$dir/pause=/pause" \
    --entrypoint /pause >/dev/null
  "$py" "$here/oci_image.py" "$WORKLOAD_IMAGE" "$dir/busybox-httpd.tar" \
    --add /bin/busybox=/bin/busybox --link /bin/sh=busybox \
    --text "/www/index.html=hello from $NS" \
    --entrypoint /bin/busybox --cmd=httpd --cmd=-f --cmd=-p --cmd=8080 --cmd=-h --cmd=/www \
    >/dev/null
  ctr_ images import "$dir/pause.tar" >/dev/null
  ctr_ images import "$dir/busybox-httpd.tar" >/dev/null
  ctr_ images ls -q | sed 's/^/  image /'
}

save_tunables() {
  local k
  [ -f "$STATE/sysctl.saved" ] && return 0
  for k in "${KERNEL_TUNABLES[@]}"; do echo "$k=$(sysctl -n "$k")"; done >"$STATE/sysctl.saved"
}

node_ready() {
  [ "$(kubectl get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

up() {
  check_inputs
  trap '[ $? = 0 ] || echo "single-node.sh: up failed: logs in $RUN/log; then run: $0 down" >&2' EXIT
  local t0=$SECONDS
  mkdir -p "$STATE" "$RUN"
  make_netns
  make_mountns
  make_cgroups
  make_pki
  write_configs

  start containerd containerd --config "$STATE/containerd/config.toml"
  wait_for 60 containerd ctr --address "$SOCK" version
  import_images

  start etcd etcd --name "$NS" --data-dir "$STATE/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster "$NS=http://127.0.0.1:2380"
  wait_for 60 etcd in_ns curl -sf http://127.0.0.1:2379/health

  local p=$STATE/pki
  start kube-apiserver "$BIN/kube-apiserver" --etcd-servers http://127.0.0.1:2379 \
    --advertise-address "$NODE_IP" --bind-address "$NODE_IP" --secure-port 6443 \
    --service-cluster-ip-range "$SERVICE_CIDR" --allow-privileged=true \
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
    --use-service-account-credentials=true --flex-volume-plugin-dir "$STATE/volume-plugins" \
    --service-account-private-key-file "$p/sa.key" --service-cluster-ip-range "$SERVICE_CIDR" \
    --cluster-signing-cert-file "$p/ca.crt" --cluster-signing-key-file "$p/ca.key" \
    --profiling=false
  start kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$p/scheduler.kubeconfig" \
    --authentication-kubeconfig "$p/scheduler.kubeconfig" \
    --authorization-kubeconfig "$p/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --profiling=false

  save_tunables
  # The kubelet links container logs in /var/log/containers (a fixed path): down removes the
  # directory again if this cluster made it.
  [ -d /var/log/containers ] || touch "$STATE/made-var-log-containers"
  start kubelet "$BIN/kubelet" --config "$STATE/kubelet/config.yaml" \
    --kubeconfig "$p/kubelet.kubeconfig" --root-dir "$STATE/kubelet" \
    --hostname-override "$NODE" --node-ip "$NODE_IP"
  start kube-proxy "$BIN/kube-proxy" --config "$STATE/kube-proxy.yaml"
  wait_for 180 "node $NODE Ready" node_ready
  wait_for 60 "default service account" kubectl get serviceaccount default
  log "cluster up in $(( SECONDS - t0 ))s; kubectl --kubeconfig $KUBECONFIG_ADMIN"
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

status() {
  local c rc=0
  for c in "${COMPONENTS[@]}"; do
    if running "$c"; then echo "$c: running (pid $(cat "$RUN/$c.pid"))"
    else echo "$c: not running"; rc=1; fi
  done
  [ -x "$BIN/kubectl" ] && [ -f "$KUBECONFIG_ADMIN" ] && kubectl get nodes -o wide 2>&1 || true
  return $rc
}

stop() {
  local name=$1 pid
  pid=$(cat "$RUN/$name.pid" 2>/dev/null) || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$RUN/$name.pid"
}

# Our processes, found by their command line: every component names our state directory, and
# the runc shims name our containerd socket (the pods' processes are the shims' children).
our_processes() {
  local f pid
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}; pid=${pid%/cmdline}
    [ "$pid" = $$ ] && continue
    tr '\0' ' ' 2>/dev/null <"$f" | grep -qE -- "(--[a-z-]+[ =]$STATE/|-address $SOCK( |$))" \
      && echo "$pid"
  done
  return 0
}

down() {
  local c pid m h
  # Pods first, while the kubelet runs, so the CRI tears their networks down itself.
  if running kubelet && running kube-apiserver; then
    timeout 60 nsenter --net="/run/netns/$NS" "$BIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" \
      delete pods --all \
      --all-namespaces --wait=true --timeout=50s >/dev/null 2>&1 || true
  fi
  for c in kube-proxy kubelet kube-scheduler kube-controller-manager kube-apiserver etcd; do
    stop "$c"
  done
  # Anything left in containerd: sandboxes and containers, then containerd and its shims.
  if running containerd; then
    for c in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s KILL "$c" 2>/dev/null || true; done
    sleep 1
    for c in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks delete -f "$c" >/dev/null 2>&1 || true; done
  fi
  stop containerd
  for pid in $(our_processes); do kill -9 "$pid" 2>/dev/null || true; done
  # Mounts under our directories, deepest first (rootfs overlays, shm, pod netns, volumes).
  for m in $(awk -v s="$STATE/" -v r="$RUN/" 'index($2, s) == 1 || index($2, r) == 1 {print $2}' \
      /proc/self/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  # cgroups: our root in every hierarchy, deepest first (empty by now); then the hierarchies
  # mounted in the node's mount namespace, from inside it, before its holder ends.
  if running mountns; then
    for c in $(cat "$RUN/unmounted-controllers" 2>/dev/null); do
      h=/sys/fs/cgroup/$c/$CGROUP_ROOT
      in_node find "$h" -depth -type d -exec rmdir {} + 2>/dev/null || true
      if in_node test -d "$h"; then echo "left: cgroup $h (in the node's mount namespace)"; fi
    done
  fi
  stop mountns
  for h in /sys/fs/cgroup/*/; do
    [ -d "$h$CGROUP_ROOT" ] || continue
    find "$h$CGROUP_ROOT" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  # The kubelet's links in /var/log/containers point into our pod-logs directory.
  find /var/log/containers -maxdepth 1 -type l -lname "$STATE/*" -delete 2>/dev/null || true
  [ -f "$STATE/made-var-log-containers" ] && { rmdir /var/log/containers 2>/dev/null || true; }
  if [ -f "$STATE/sysctl.saved" ]; then
    while IFS= read -r kv; do sysctl -qw "$kv" || true; done <"$STATE/sysctl.saved"
  fi
  # The namespace goes with its iptables rules, bridge and veths.
  if [ -f "$STATE/made-netns" ] && [ -e "/run/netns/$NS" ]; then ip netns delete "$NS"; fi
  rm -rf "$STATE" "$RUN"
  rmdir /var/lib/co-k8s /run/co-k8s 2>/dev/null || true
  leftovers
}

leftovers() {
  local left=0 h
  [ -e "/run/netns/$NS" ] && { echo "left: namespace $NS (not made by up, or not deleted)"; left=1; }
  grep -qE " ($STATE|$RUN)" /proc/self/mounts && { echo "left: mounts under $STATE or $RUN"; left=1; }
  for h in /sys/fs/cgroup/*/; do
    [ -d "$h$CGROUP_ROOT" ] && { echo "left: cgroup $h$CGROUP_ROOT"; left=1; }
  done
  [ -n "$(our_processes)" ] && { echo "left: processes $(our_processes | tr '\n' ' ')"; left=1; }
  if (( left )); then return 1; fi
  log "down: nothing left ($NS)"
}

case ${1:-} in
  up) up ;;
  smoke) smoke ;;
  status) status ;;
  down) down ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
exit
}
