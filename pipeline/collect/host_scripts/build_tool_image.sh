#!/bin/sh
# Build (or reuse) the tool image from this host's own files: binaries (with the libraries ldd
# lists) and plain files (configs) at the same paths as on the host.
# Environment: REPO (image repository), ENGINE (the engine's command line, default docker:
# docker | podman | docker -H unix:///run/user/UID/docker.sock | setpriv --reuid=UID ... env ... podman;
# split on spaces, so no argument in it may contain one).
# Arguments: the absolute paths to include: files, or directories (a source tree: copied whole,
# symlinks followed; its digest is that of its files' sha256 list, sorted by path).
set -eu
engine=${ENGINE:-docker}
for f in "$@"; do
  [ -e "$f" ] || { echo "missing $f on $(hostname): install it (see README)" >&2; exit 3; }
done
digest() {
  if [ -d "$1" ]; then
    find -L "$1" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
  else
    sha256sum "$1" | cut -d' ' -f1
  fi
}
sums=$(for f in "$@"; do echo "binary $(digest "$f") $f"; done)
echo "$sums"
# The tag covers the files and this script, so a change to how images are made rebuilds them.
tag="$REPO:$( (echo "$sums"; echo "$BUILDER") | sha256sum | cut -c1-16)"
if ! $engine image inspect "$tag" >/dev/null 2>&1; then
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  for f in "$@"; do
    cp -L -R --parents "$f" "$root"
    if [ -f "$f" ] && [ -x "$f" ]; then
      ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' |
        while read -r lib; do cp -L --parents "$lib" "$root"; done
    fi
  done
  mkdir -p "$root/tmp" "$root/etc"
  chmod 1777 "$root/tmp"
  # Servers look users up even when they run as root (nginx: getpwnam("root")).
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' \
    > "$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
  tar -C "$root" -c . |
    $engine import --message "container-overhead tools from $(hostname)" - "$tag" >/dev/null
fi
echo "image $tag $($engine image inspect --format '{{.Id}}' "$tag")"
