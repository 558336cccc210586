#!/usr/bin/env bash
# Can this machine run a KVM guest fit for measuring? The study's VM environment needs one: a
# guest that boots the Debian kernel under qemu with KVM and reaches user space in seconds.
#
# The probe boots Debian's own kernel (linux-image-amd64's image, fetched with `apt-get download`
# and unpacked into the cache, never installed) with a one-file initramfs (busybox-static) that
# prints a marker and powers off. It tries the CPU models in CPUS in turn and prints one line per
# try, then a last line:
#   vm-probe: ok: <cpu>: user space <N> s after start
#   vm-probe: unusable: <why, with qemu's own words and the guest console's last line>
# Exit status 0 when a try reached user space, 1 when none did, 2 when the probe cannot run.
#
# Usage: tools/vm/probe.sh [timeout seconds per try, default 240]
# Needs root for /dev/kvm, qemu-system-x86, busybox-static; touches no network but the package
# archive (for the kernel, once) and leaves nothing but its cache.
set -euo pipefail

TIMEOUT=${1:-240}
CACHE=/var/cache/container-overhead-lab/vm
# -cpu host as is; without the IA32_ARCH_CAPABILITIES MSR, which nested hypervisors often refuse;
# and without cx16 and xsave too, which a nested KVM that emulates guest page-table writes
# cannot emulate (cmpxchg16b, xrstor).
CPUS=("host" "host,-arch-capabilities" "host,-arch-capabilities,-cx16,-xsave")
MARKER=CO-VM-PROBE-USERSPACE

die() { echo "vm-probe: cannot run: $*" >&2; exit 2; }
[[ $TIMEOUT =~ ^[0-9]+$ && $TIMEOUT -ge 10 && $TIMEOUT -le 3600 ]] \
  || die "timeout must be a whole number of seconds in 10..3600, got '$TIMEOUT'"
[[ -c /dev/kvm && -w /dev/kvm ]] || die "/dev/kvm is missing or not writable (KVM, and root)"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing: apt-get install qemu-system-x86"
[[ -x /bin/busybox ]] && ! ldd /bin/busybox >/dev/null 2>&1 \
  || die "a static /bin/busybox is needed: apt-get install busybox-static"

# Everything the probe makes lies in $work, removed on exit, error and Ctrl-C; the cache stays.
work=$(mktemp -d /tmp/co-vm-probe.XXXXXX)
cleanup() { pkill -f -- "-name co-vm-probe-$$" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT INT TERM

# The kernel: the image package linux-image-amd64 depends on, cached by its name.
package=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -1)
[[ -n $package ]] || die "apt-cache names no kernel image for linux-image-amd64 (apt-get update)"
kdir=$CACHE/$package
if ! compgen -G "$kdir/boot/vmlinuz-*" >/dev/null; then
  tmp=$work/download
  mkdir -p "$tmp"
  (cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "$package" >/dev/null) \
    || die "apt-get download $package failed"
  dpkg-deb -x "$tmp"/"$package"_*.deb "$tmp/root"
  mkdir -p "$kdir/boot" && cp "$tmp"/root/boot/vmlinuz-* "$kdir/boot/"
fi
kernel=$(compgen -G "$kdir/boot/vmlinuz-*" | head -1)

mkdir -p "$work/initramfs/bin"
cp /bin/busybox "$work/initramfs/bin/busybox"
cat > "$work/initramfs/init" <<EOF
#!/bin/busybox sh
/bin/busybox echo $MARKER
/bin/busybox poweroff -f
EOF
chmod +x "$work/initramfs/init"
(cd "$work/initramfs" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 > "$work/initramfs.gz")

echo "vm-probe: $(qemu-system-x86_64 --version | head -1); kernel $(basename "$kernel"); $(nproc) CPUs; host kernel $(uname -r)"
[[ -e /dev/vhost-net ]] || echo "vm-probe: note: no /dev/vhost-net: a guest's virtio-net would run without vhost"
verdicts=()
for cpu in "${CPUS[@]}"; do
  console=$work/console.$RANDOM.log
  start=$(date +%s.%N)
  set +e
  # in a subshell whose stderr is dropped: bash's own "Aborted" when qemu dies of a signal
  { (timeout --kill-after=5 "$TIMEOUT" qemu-system-x86_64 -name "co-vm-probe-$$" \
    -machine pc,accel=kvm -cpu "$cpu" -smp 1 -m 512 -nodefaults -no-user-config \
    -kernel "$kernel" -initrd "$work/initramfs.gz" \
    -append "console=ttyS0 panic=-1" -display none -serial "file:$console" -no-reboot \
    > "$work/qemu.out" 2>&1); } 2>/dev/null
  status=$?
  set -e
  took=$(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)")
  last=$({ tr -d '\r' < "$console" | grep -v '^\s*$' | tail -1 | cut -c1-160; } 2>/dev/null || true)
  if grep -q "$MARKER" "$console" 2>/dev/null; then
    echo "vm-probe: ok: $cpu: user space $took s after start"
    exit 0
  fi
  if grep -q "KVM internal error" "$work/qemu.out"; then
    code=$(sed -n 's/^Code=//p' "$work/qemu.out" | head -1 | cut -c1-80 || true)
    why="KVM internal error ($(grep -m1 -o 'emulation failure' "$work/qemu.out" || echo 'see qemu'))"
    why+=" after $took s; guest code: $code"
  elif (( status == 124 || status == 137 )); then
    why="no user space within $TIMEOUT s"
  else
    why="qemu exited ($status) after $took s: $(grep -v -i warning "$work/qemu.out" | head -1 | cut -c1-160 || true)"
  fi
  echo "vm-probe: try -cpu $cpu: $why; guest console's last line: ${last:-(none)}"
  verdicts+=("-cpu $cpu: $why")
done
joined=$(printf '%s; ' "${verdicts[@]}")
echo "vm-probe: unusable: no CPU model reached user space (${#verdicts[@]} tries): ${joined%; }"
exit 1
