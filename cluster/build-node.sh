#!/usr/bin/env bash
# Builds the node layer into var/cluster/bin/ from the Go modules at the versions of
# cluster/release.env, through cluster/node-build/ (a module of the project's own whose go.mod
# lists upstream's programs as `tool`s; go.sum committed): containerd, containerd-shim-runc-v2
# and ctr (containerd), runc (cgo, libseccomp), the reference CNI plugins bridge, host-local,
# portmap and loopback (into bin/cni/). The pause image is built from the Kubernetes release's
# own source (build/pause/linux/pause.c of k8s.io/kubernetes, static, as its Makefile does) and
# packed as an OCI image tarball, bin/pause.oci.tar (registry.k8s.io/pause:PAUSE_VERSION), for
# `ctr images import`: nothing is pulled. Cached by a stamp like cluster/build.sh.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
# shellcheck source=release.env
. "$here/release.env"
bin="${CLUSTER_BIN:-$root/var/cluster/bin}"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export GOFLAGS="-mod=readonly -buildvcs=false"
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

digest="$(cat "$here/release.env" go.mod go.sum "$here/build-node.sh" | sha256sum | cut -d' ' -f1)"
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
gcc -Os -Wall -Werror -static -DVERSION="v$pause_version" -o "$work/pause" \
  "$kube_src/build/pause/linux/pause.c"
strip "$work/pause"
mkdir -p "$work/oci/blobs/sha256"
blob() { # file -> prints "digest size", stores the blob
  local d s
  d="$(sha256sum "$1" | cut -d' ' -f1)"
  s="$(stat -c %s "$1")"
  cp "$1" "$work/oci/blobs/sha256/$d"
  echo "$d $s"
}
tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$work/layer.tar" pause
read -r layer_d layer_s < <(blob "$work/layer.tar")
printf '{"architecture":"amd64","os":"linux","config":{"User":"65535:65535","Entrypoint":["/pause"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
  "$layer_d" >"$work/config.json"
read -r config_d config_s < <(blob "$work/config.json")
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
  "$config_d" "$config_s" "$layer_d" "$layer_s" >"$work/manifest.json"
read -r manifest_d manifest_s < <(blob "$work/manifest.json")
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"registry.k8s.io/pause:%s","org.opencontainers.image.ref.name":"%s"}}]}' \
  "$manifest_d" "$manifest_s" "$pause_version" "$pause_version" >"$work/oci/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' >"$work/oci/oci-layout"
tar -C "$work/oci" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$bin/pause.oci.tar" .
echo "$pause_version" >"$bin/pause.version"

echo "$digest" >"$stamp"
echo "node binaries built in $(($(date +%s) - start))s (containerd $CONTAINERD_VERSION, runc $RUNC_VERSION, CNI plugins $CNI_PLUGINS_VERSION, pause $pause_version)"
