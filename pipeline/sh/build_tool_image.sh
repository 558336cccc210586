#!/bin/sh
# Build (or reuse) the tool image from this host's own files: binaries (with the libraries ldd
# lists) and plain files (configs) at the same paths as on the host.
# Environment: REPO (image repository), ENGINE (docker | podman, default docker).
# Arguments: the absolute paths to include.
set -eu
engine=${ENGINE:-docker}
for f in "$@"; do
  [ -e "$f" ] || { echo "missing $f on $(hostname): install it (see README)" >&2; exit 3; }
done
for f in "$@"; do echo "binary $(sha256sum "$f")"; done
tag="$REPO:$(sha256sum "$@" | sha256sum | cut -c1-16)"
if ! $engine image inspect "$tag" >/dev/null 2>&1; then
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  for f in "$@"; do
    cp -L --parents "$f" "$root"
    if [ -x "$f" ]; then
      ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' |
        while read -r lib; do cp -L --parents "$lib" "$root"; done
    fi
  done
  mkdir -p "$root/tmp" "$root/etc"
  chmod 1777 "$root/tmp"
  tar -C "$root" -c . |
    $engine import --message "container-overhead tools from $(hostname)" - "$tag" >/dev/null
fi
echo "image $tag $($engine image inspect --format '{{.Id}}' "$tag")"
