#!/bin/sh
# Facts about this host as key=value lines; $1 is the address whose interface MTU counts.
# Kernel features are looked up where they show without changing the host: the live /proc
# entry, the kernel config, then the module tree.
feature() {  # name, /proc path, CONFIG_ symbol, module
  if [ -e "$2" ]; then echo "$1=yes"; return; fi
  cfg=$( (zcat /proc/config.gz 2>/dev/null || cat "/boot/config-$(uname -r)" 2>/dev/null) | grep -E "^(# )?$3[= ]" | head -n1)
  case "$cfg" in
    "$3=y") echo "$1=yes (built in)";;
    "$3=m") if modinfo "$4" >/dev/null 2>&1; then echo "$1=yes (module $4)"; else echo "$1=no (module $4 not installed)"; fi;;
    "# $3 is not set") echo "$1=no ($3 is not set)";;
    *) if modinfo "$4" >/dev/null 2>&1; then echo "$1=yes (module $4)"; else echo "$1=no (module $4 not found)"; fi;;
  esac
}

addr=$1
echo "hostname=$(hostname)"
echo "kernel=$(uname -r)"
echo "cpu_model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
echo "cpu_count=$(nproc)"
echo "governor=$(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || echo n/a)"
echo "mem_total_bytes=$(awk '/^MemTotal/ {printf "%.0f", $2 * 1024}' /proc/meminfo)"
# What the host itself runs on (a VM, a container): systemd's answer, else the CPU's flag
vm=$(systemd-detect-virt --vm 2>/dev/null); ct=$(systemd-detect-virt --container 2>/dev/null)
if [ -z "$vm" ]; then
  if grep -qsw hypervisor /proc/cpuinfo; then vm="a hypervisor"; else vm=n/a; fi
fi
echo "virtualization=vm: $vm; container: ${ct:-n/a}"
if docker info >/dev/null 2>&1; then
  echo "docker_version=$(docker version --format '{{.Server.Version}}')"
  echo "storage_driver=$(docker info --format '{{.Driver}}')"
  echo "containerd_version=$(containerd --version 2>/dev/null | awk '{print $3}')"
  echo "runc_version=$(runc --version 2>/dev/null | awk 'NR==1 {print $3}')"
else
  echo "docker_version=n/a"; echo "storage_driver=n/a"
  echo "containerd_version=$(containerd --version 2>/dev/null | awk '{print $3}')"
  echo "runc_version=$(runc --version 2>/dev/null | awk 'NR==1 {print $3}')"
fi
case "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" in
  cgroup2fs) echo "cgroup_version=2";; tmpfs) echo "cgroup_version=1";; *) echo "cgroup_version=n/a";;
esac
dev=$(ip -o -4 addr show 2>/dev/null | awk -v a="$addr" '{split($4, p, "/"); if (p[1] == a) print $2}' | head -n1)
echo "mtu=$(cat "/sys/class/net/${dev:-lo}/mtu" 2>/dev/null || echo n/a)"
echo "iptables_backend=$(iptables -V 2>/dev/null | sed -n 's/.*(\(.*\)).*/\1/p')"
if grep -qs '"userland-proxy"[[:space:]]*:[[:space:]]*false' /etc/docker/daemon.json \
   || ps -eo args= | grep -q '[d]ockerd.*--userland-proxy=false'; then
  echo "userland_proxy=false"
else
  echo "userland_proxy=true"
fi
feature ipvs /proc/net/ip_vs CONFIG_IP_VS ip_vs
feature netem /nonexistent CONFIG_NET_SCH_NETEM sch_netem
