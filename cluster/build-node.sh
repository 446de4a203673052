#!/usr/bin/env bash
# Builds the node layer into var/cluster/bin/ from the Go modules at the versions of
# cluster/release.env, through cluster/node-build/ (a module of the project's own whose go.mod
# lists upstream's programs as `tool`s; go.sum committed): containerd, containerd-shim-runc-v2
# and ctr (containerd), runc (cgo, libseccomp), the reference CNI plugins bridge, host-local,
# portmap and loopback (into bin/cni/). The pause image is built from the Kubernetes release's
# own source (build/pause/linux/pause.c of k8s.io/kubernetes, static, as its Makefile does) and
# packed as an OCI image tarball, bin/pause.oci.tar (registry.k8s.io/pause:PAUSE_VERSION), for
# `ctr images import` by cluster/oci-pack.sh: nothing is pulled. Cached by a stamp like
# cluster/build.sh: bin/.stamp-node, a digest of release.env, build-env.sh, node-build's go.mod
# and go.sum, this script, oci-pack.sh and `go version`.
set -euo pipefail

# shellcheck source=build-env.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/build-env.sh"
cd "$here/node-build"

for m in "github.com/containerd/containerd/v2 $CONTAINERD_VERSION" \
  "github.com/opencontainers/runc $RUNC_VERSION" \
  "github.com/containernetworking/plugins $CNI_PLUGINS_VERSION"; do
  set -- $m
  grep -qE "^\s*$1 $2( |$)" go.mod || {
    echo "cluster/build-node.sh: node-build/go.mod does not require $1 $2 (release.env)" >&2
    exit 2
  }
done
command -v gcc >/dev/null || {
  echo "cluster/build-node.sh: runc and pause need gcc (apt-get install gcc libseccomp-dev)" >&2
  exit 2
}

digest="$(
  {
    cat "$here/release.env" "$here/build-env.sh" go.mod go.sum "$here/build-node.sh" "$here/oci-pack.sh"
    echo "$go_version"
  } | sha256sum | cut -d' ' -f1
)"
stamp="$bin/.stamp-node"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ] && [ -f "$bin/pause.oci.tar" ]; then
  echo "node binaries up to date (containerd $CONTAINERD_VERSION, runc $RUNC_VERSION, CNI plugins $CNI_PLUGINS_VERSION)"
  exit 0
fi
mkdir -p "$bin/cni"
rm -f "$stamp"

# name:package:cgo:tags:dir
targets=(
  containerd:github.com/containerd/containerd/v2/cmd/containerd:0:no_btrfs,no_devmapper,no_zfs:
  containerd-shim-runc-v2:github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2:0::
  ctr:github.com/containerd/containerd/v2/cmd/ctr:0:no_btrfs:
  runc:github.com/opencontainers/runc:1:seccomp:
  bridge:github.com/containernetworking/plugins/plugins/main/bridge:0::cni
  host-local:github.com/containernetworking/plugins/plugins/ipam/host-local:0::cni
  portmap:github.com/containernetworking/plugins/plugins/meta/portmap:0::cni
  loopback:github.com/containernetworking/plugins/plugins/main/loopback:0::cni
)
n=$((${#targets[@]} + 1))
i=0
start=$(date +%s)
for t in "${targets[@]}"; do
  i=$((i + 1))
  IFS=: read -r name pkg cgo tags dir <<<"$t"
  out="$bin${dir:+/$dir}/$name"
  echo "building $name ($i/$n)…"
  CGO_ENABLED="$cgo" "$GO" build -trimpath ${tags:+-tags "$tags"} -ldflags "-s -w" -o "$out.new" "$pkg"
  mv "$out.new" "$out"
done

# The pause image: upstream's pause.c of the pinned release, as build/pause/Makefile builds it.
i=$((i + 1))
echo "building pause image ($i/$n)…"
kube_src="$("$GO" env GOMODCACHE)/k8s.io/kubernetes@$KUBE_VERSION"
[ -d "$kube_src" ] || (cd "$here/build" && "$GO" mod download k8s.io/kubernetes)
pause_version="$(sed -n 's/^TAG ?= *//p' "$kube_src/build/pause/Makefile")"
[ -n "$pause_version" ] || pause_version=3.10.2
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/rootfs"
chmod 0755 "$work/rootfs"
gcc -Os -Wall -Werror -static -DVERSION="v$pause_version" -o "$work/rootfs/pause" \
  "$kube_src/build/pause/linux/pause.c"
strip "$work/rootfs/pause"
"$here/oci-pack.sh" "$work/rootfs" "registry.k8s.io/pause:$pause_version" \
  '{"User":"65535:65535","Entrypoint":["/pause"]}' "$bin/pause.oci.tar"
echo "$pause_version" >"$bin/pause.version"

echo "$digest" >"$stamp"
echo "node binaries built in $(($(date +%s) - start))s (containerd $CONTAINERD_VERSION, runc $RUNC_VERSION, CNI plugins $CNI_PLUGINS_VERSION, pause $pause_version)"
