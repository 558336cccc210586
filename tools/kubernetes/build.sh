#!/usr/bin/env bash
# Builds the Kubernetes binaries (kubelet, kube-apiserver, kube-controller-manager,
# kube-scheduler, kube-proxy, kubectl) from the Go module proxy at a pinned release, into a
# cache: $CACHE/<version>/. A second run with the binaries in place only checks them.
#
# Usage: tools/kubernetes/build.sh [VERSION]    (default: the release in tools/kubernetes/VERSION)
# Environment: KUBERNETES_CACHE (default /var/cache/container-overhead-lab/kubernetes),
#              GO (default /usr/local/go/bin/go: Go >= 1.24; Debian's go 1.19 is too old),
#              BUILD_JOBS (go build -p, default 1: the build shares the machine, at nice 19).
#
# How: a throwaway module requires k8s.io/kubernetes at the release; the staging modules
# (k8s.io/api, k8s.io/client-go, ...), which k8s.io/kubernetes requires as v0.0.0 and replaces
# with its own ./staging tree, are replaced by their published v0.<minor>.<patch> tags; then
# `go build k8s.io/kubernetes/cmd/...` with the version stamped as Kubernetes' own build does.
# GOPATH, the module cache and the build cache live under $LAB_CACHE/go, so a rebuild, or a
# build of another release, reuses what was downloaded and compiled.
set -euo pipefail
# (In braces: bash reads the whole script before running it, so editing it mid-run is safe.)
{

here=$(cd "$(dirname "$0")" && pwd)
VERSION=${1:-$(tr -d ' \n' <"$here/VERSION")}
LAB_CACHE=${LAB_CACHE:-/var/cache/container-overhead-lab}
CACHE=${KUBERNETES_CACHE:-$LAB_CACHE/kubernetes}
GO=${GO:-/usr/local/go/bin/go}
BUILD_JOBS=${BUILD_JOBS:-1}
BINARIES=(kubelet kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubectl)
OUT=$CACHE/$VERSION

if ! [[ $VERSION =~ ^v1\.([0-9]+)\.([0-9]+)$ ]]; then
  echo "build.sh: VERSION must look like v1.36.3, not '$VERSION'" >&2
  exit 2
fi
minor=${BASH_REMATCH[1]} patch=${BASH_REMATCH[2]}
staging_version=v0.$minor.$patch

# The binary's own answer: "Kubernetes v1.36.3" (kubectl: "Client Version: v1.36.3").
built() {
  local b out
  for b in "${BINARIES[@]}"; do
    [ -x "$OUT/$b" ] || return 1
    if [ "$b" = kubectl ]; then out=$("$OUT/$b" version --client 2>/dev/null) || return 1
    else out=$("$OUT/$b" --version 2>/dev/null) || return 1; fi
    grep -qw -- "$VERSION" <<<"$out" || return 1
  done
}

if ! "$GO" version >/dev/null 2>&1; then
  echo "build.sh: no Go at $GO (set GO=/path/to/go, Go >= 1.24)" >&2
  exit 1
fi
export GOPATH=$LAB_CACHE/go
export GOMODCACHE=$GOPATH/pkg/mod GOCACHE=$GOPATH/build-cache
export GOTOOLCHAIN=local CGO_ENABLED=0
mkdir -p "$GOPATH" "$CACHE/images"

# The pod sandbox's pause binary (tools/kubernetes/pause: standard library only, nothing
# downloaded), shared by every release; single-node.sh wraps it in an image.
if [ ! -x "$CACHE/images/pause" ] || [ "$here/pause/main.go" -nt "$CACHE/images/pause" ]; then
  (cd "$here/pause" && GOPROXY=off nice -n 19 "$GO" build -p "$BUILD_JOBS" -trimpath \
    -ldflags "-s -w" -o "$CACHE/images/pause" .)
  echo "pause: built into $CACHE/images/pause"
fi

if built; then
  echo "kubernetes $VERSION: cached in $OUT"
  exit 0
fi

export GOFLAGS=-mod=mod
work=$(mktemp -d "$CACHE/.build-$VERSION.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

start=$(date +%s)
echo "kubernetes $VERSION: building ${BINARIES[*]} (go build -p $BUILD_JOBS, nice 19)"
"$GO" mod init container-overhead/kubernetes-build >/dev/null 2>&1
kgomod=$("$GO" mod download -json "k8s.io/kubernetes@$VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
[ -f "$kgomod" ] || { echo "build.sh: no go.mod for k8s.io/kubernetes@$VERSION" >&2; exit 1; }

# The go and godebug lines of Kubernetes' own go.mod, so the binaries run with its defaults.
go_line=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$kgomod")
"$GO" mod edit -go="$go_line" -require="k8s.io/kubernetes@$VERSION"
sed -n 's/^godebug \(.*\)$/\1/p' "$kgomod" | while read -r kv; do "$GO" mod edit -godebug="$kv"; done
# Each staging replace (k8s.io/X => ./staging/src/k8s.io/X) becomes k8s.io/X@v0.<minor>.<patch>.
staging=$(sed -n 's#^\s*\(k8s\.io/[A-Za-z0-9._/-]*\) => \./staging/src/.*$#\1#p' "$kgomod")
[ -n "$staging" ] || { echo "build.sh: no staging replaces in $kgomod" >&2; exit 1; }
for m in $staging; do "$GO" mod edit -replace="$m=$m@$staging_version"; done

# The version stamp of hack/lib/version.sh (component-base and client-go).
commit=$(sed -n 's/^\t"Hash": "\(.*\)",$/\1/p' <<<"$("$GO" mod download -json "k8s.io/kubernetes@$VERSION")" | head -1)
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  ldflags+=" -X $pkg.gitCommit=${commit:-unknown}"
done

pkgs=()
for b in "${BINARIES[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
mkdir -p "$work/bin"
nice -n 19 "$GO" build -p "$BUILD_JOBS" -trimpath -ldflags "$ldflags" -o "$work/bin/" "${pkgs[@]}"

mkdir -p "$OUT"
for b in "${BINARIES[@]}"; do install -m 0755 "$work/bin/$b" "$OUT/$b"; done
cp go.mod "$OUT/go.mod"
seconds=$(( $(date +%s) - start ))
{
  echo "version: $VERSION"
  echo "staging: $staging_version"
  echo "go: $("$GO" version)"
  echo "build_jobs: $BUILD_JOBS"
  echo "wall_seconds: $seconds"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$OUT/BUILD-INFO"
built || { echo "build.sh: the built binaries do not report $VERSION" >&2; exit 1; }
echo "kubernetes $VERSION: built in ${seconds}s into $OUT"
exit
}
