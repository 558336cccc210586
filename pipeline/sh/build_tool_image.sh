#!/bin/sh
# Build (or reuse) the tool image from this host's own binaries: $REPO, then binary paths.
set -eu
for b in "$@"; do
  [ -x "$b" ] || { echo "missing binary $b on $(hostname): install it (see README)" >&2; exit 3; }
done
for b in "$@"; do echo "binary $(sha256sum "$b")"; done
tag="$REPO:$(sha256sum "$@" | sha256sum | cut -c1-16)"
if ! docker image inspect "$tag" >/dev/null 2>&1; then
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  for b in "$@"; do
    cp -L --parents "$b" "$root"
    ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' |
      while read -r lib; do cp -L --parents "$lib" "$root"; done
  done
  mkdir -p "$root/tmp" "$root/etc"
  chmod 1777 "$root/tmp"
  tar -C "$root" -c . | docker import --message "container-overhead tools from $(hostname)" - "$tag" >/dev/null
fi
echo "image $tag $(docker image inspect --format '{{.Id}}' "$tag")"
