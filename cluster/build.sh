#!/usr/bin/env bash
# Builds the real cluster's binaries from upstream's Go modules at the release pinned in
# cluster/release.env, through the project's wrapper module cluster/build/ (go.mod + the go.sum
# committed beside it: every module is checked against it), into var/cluster/bin/.
#
# Cached: var/cluster/bin/.stamp holds a digest of release.env, build-env.sh (the Go toolchain
# and its flags), go.mod, go.sum, the wrapper's sources, this script and `go version`; when it
# matches and every binary is there, nothing is built. The Go build and module caches
# (GOCACHE, GOMODCACHE) make a rebuild after a change fast too.
#
#   cluster/build.sh            build what is missing or stale
#   cluster/build.sh --force    rebuild whatever the stamp says
#   CLUSTER_BIN=DIR             build into DIR instead of var/cluster/bin
set -euo pipefail

# shellcheck source=build-env.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/build-env.sh"

force=
[ "${1:-}" = "--force" ] && force=1

cd "$here/build"

# The wrapper must pin what release.env says (one place to change a version, checked here).
check_pin() { # module version
  local have
  have="$(awk -v m="$1" '$1 == m && $2 !~ /=>/ {print $2; exit}' go.mod)"
  if [ "$have" != "$2" ]; then
    echo "cluster/build.sh: go.mod requires $1 ${have:-(nothing)}, release.env says $2" >&2
    exit 2
  fi
}
check_pin k8s.io/kubernetes "$KUBE_VERSION"
check_pin go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
if grep -E '^\s*k8s\.io/[a-z-]+ => k8s\.io/' go.mod | grep -v " $KUBE_STAGING_VERSION\$" >&2; then
  echo "cluster/build.sh: a staging replacement above is not at $KUBE_STAGING_VERSION" >&2
  exit 2
fi

# name:package:cgo (upstream builds the control plane, kube-proxy and kubectl static, CGO off;
# the kubelet with the default, as hack/lib/golang.sh does).
targets=(
  etcd:./cmd/etcd:0
  kube-apiserver:./cmd/kube-apiserver:0
  kube-controller-manager:./cmd/kube-controller-manager:0
  kube-scheduler:./cmd/kube-scheduler:0
  kube-proxy:./cmd/kube-proxy:0
  kubelet:./cmd/kubelet:1
  kubectl:./cmd/kubectl:0
)

digest="$(
  {
    cat "$here/release.env" "$here/build-env.sh" go.mod go.sum "$here/build.sh"
    find . -name '*.go' -print0 | sort -z | xargs -0 cat
    echo "$go_version"
  } | sha256sum | cut -d' ' -f1
)"
stamp="$bin/.stamp"
if [ -z "$force" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then
  missing=
  for t in "${targets[@]}"; do [ -x "$bin/${t%%:*}" ] || missing=1; done
  if [ -z "$missing" ]; then
    echo "cluster binaries up to date ($KUBE_VERSION, etcd $ETCD_VERSION) in ${bin#"$root"/}"
    exit 0
  fi
fi

mkdir -p "$bin"
rm -f "$stamp"

# The version stamps hack/lib/version.sh writes (or /version says v0.0.0-master); the build date
# is the release's own time from the module proxy, so that two builds are byte-identical.
info="$("$GO" env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$KUBE_VERSION.info"
[ -f "$info" ] || "$GO" mod download k8s.io/kubernetes
build_date="$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "$info" | sed 's/\.[0-9]*Z$/Z/')"
major="${KUBE_VERSION#v}"
major="${major%%.*}"
minor="${KUBE_VERSION#v*.}"
minor="${minor%%.*}"
ver=""
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  ver+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  # No commit: the module proxy serves the tag's tree, not its commit (empty, not "$Format:%H$").
  ver+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date -X $pkg.gitCommit="
done

n=${#targets[@]}
i=0
start=$(date +%s)
for t in "${targets[@]}"; do
  i=$((i + 1))
  IFS=: read -r name pkg cgo <<<"$t"
  echo "building $name ($i/$n)…"
  t0=$(date +%s)
  CGO_ENABLED="$cgo" "$GO" build -trimpath -tags selinux,notest,grpcnotrace \
    -ldflags "all=$ver -s -w" -o "$bin/$name.new" "$pkg"
  mv "$bin/$name.new" "$bin/$name"
  echo "  built $name in $(($(date +%s) - t0))s"
done
echo "$digest" >"$stamp"
echo "cluster binaries built in $(($(date +%s) - start))s ($KUBE_VERSION, etcd $ETCD_VERSION) in ${bin#"$root"/}"
