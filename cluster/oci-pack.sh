#!/usr/bin/env bash
# Packs a root file system into a one-layer OCI image tarball for `ctr images import`: the pause
# image (cluster/build-node.sh) and the agnhost image (cluster/build-images.sh). Deterministic
# (sorted, owner 0, mtime 0), amd64.
#
#   cluster/oci-pack.sh ROOTFS IMAGE_NAME CONFIG_JSON OUT.tar
#
# CONFIG_JSON is the image's `config` object (Entrypoint, Cmd, Env, ...); IMAGE_NAME the full
# reference (registry.k8s.io/e2e-test-images/agnhost:2.63.0), stored as the index's
# io.containerd.image.name, which is the name containerd imports it under.
set -euo pipefail
[ $# -eq 4 ] || {
  echo "usage: $0 ROOTFS IMAGE_NAME CONFIG_JSON OUT.tar" >&2
  exit 2
}
rootfs=$1 name=$2 config=$3 out=$4
tag="${name##*:}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/oci/blobs/sha256"
blob() { # file -> prints "digest size", stores the blob
  local d s
  d="$(sha256sum "$1" | cut -d' ' -f1)"
  s="$(stat -c %s "$1")"
  cp "$1" "$work/oci/blobs/sha256/$d"
  echo "$d $s"
}
tar -C "$rootfs" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$work/layer.tar" .
read -r layer_d layer_s < <(blob "$work/layer.tar")
printf '{"architecture":"amd64","os":"linux","config":%s,"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
  "$config" "$layer_d" >"$work/config.json"
read -r config_d config_s < <(blob "$work/config.json")
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
  "$config_d" "$config_s" "$layer_d" "$layer_s" >"$work/manifest.json"
read -r manifest_d manifest_s < <(blob "$work/manifest.json")
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
  "$manifest_d" "$manifest_s" "$name" "$tag" >"$work/oci/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' >"$work/oci/oci-layout"
tar -C "$work/oci" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$out.new" .
mv "$out.new" "$out"
