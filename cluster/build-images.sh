#!/usr/bin/env bash
# Builds what the real cluster runs beside its binaries, into var/cluster/bin/:
#
#   agnhost                  upstream's test/images/agnhost of the Kubernetes release pinned in
#                            release.env (cluster/images-build/: k8s.io/kubernetes at the tag,
#                            github.com/ishidawataru/sctp), static (CGO_ENABLED=0), with the
#                            flags of its Makefile (-w -X main.Version=<test/images/agnhost/VERSION>)
#   agnhost.oci.tar          the agnhost image, as an OCI tarball for `ctr images import`, under
#                            the exact name upstream's e2e.test of that release uses
#                            (test/utils/image/manifest.go: registry.k8s.io/e2e-test-images/
#                            agnhost:<VERSION>); name in agnhost.image
#   kube-network-policies    sigs.k8s.io/kube-network-policies at KUBE_NETWORK_POLICIES_VERSION
#                            (cluster/knp-build/), static, as its Makefile builds it
#
# The agnhost image's user land: upstream's Dockerfile puts the binary on alpine with apk's
# bash, curl, netcat, iproute2 and bind-tools (test/images/agnhost/Dockerfile). Nothing can be
# pulled here, so the user land is this host's Debian packages instead: busybox-static (sh,
# nsenter, nc, ip, wget and its other applets), curl, bash and ss with the shared libraries they
# load (copied as `ldd` lists them). The e2e specs and the battery need sh, curl and nsenter
# (hostexec: `nsenter --mount=/rootfs/proc/1/ns/mnt -- sh -c CMD`). Not included: dig, coredns,
# iperf, ipcs and the fake registry's /var/registry (no SCTP spec uses them).
#
# Cached: bin/.stamp-images holds a digest of release.env, build-env.sh, both modules' go.mod
# and go.sum, this script, oci-pack.sh, the Go version and the Debian packages' versions.
set -euo pipefail

# shellcheck source=build-env.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/build-env.sh"

# The user land of the agnhost image (see above), from this host's packages.
userland=(/usr/bin/curl /usr/bin/bash /usr/bin/ss)
busybox="$(command -v busybox || true)"
# A static one: ldd refuses it ("not a dynamic executable").
if [ -z "$busybox" ] || ldd "$busybox" >/dev/null 2>&1; then
  echo "cluster/build-images.sh: the agnhost image needs a static busybox (apt-get install busybox-static)" >&2
  exit 2
fi
for u in "${userland[@]}"; do
  [ -x "$u" ] || {
    echo "cluster/build-images.sh: the agnhost image needs $u (apt-get install curl bash iproute2)" >&2
    exit 2
  }
done

grep -qE "^\s*sigs.k8s.io/kube-network-policies $KUBE_NETWORK_POLICIES_VERSION( |$)" "$here/knp-build/go.mod" ||
  {
    echo "cluster/build-images.sh: knp-build/go.mod does not require kube-network-policies $KUBE_NETWORK_POLICIES_VERSION (release.env)" >&2
    exit 2
  }
grep -qE "^\s*k8s.io/kubernetes $KUBE_VERSION( |$)" "$here/images-build/go.mod" ||
  {
    echo "cluster/build-images.sh: images-build/go.mod does not require k8s.io/kubernetes $KUBE_VERSION (release.env)" >&2
    exit 2
  }
if grep -E '^\s*k8s\.io/[a-z-]+ => k8s\.io/' "$here/images-build/go.mod" | grep -v " $KUBE_STAGING_VERSION\$" >&2; then
  echo "cluster/build-images.sh: a staging replacement above is not at $KUBE_STAGING_VERSION" >&2
  exit 2
fi

pkgs="$(dpkg-query -W -f '${Package} ${Version}\n' busybox-static curl bash iproute2 2>/dev/null || true)"
digest="$(
  {
    cat "$here/release.env" "$here/build-env.sh" "$here/build-images.sh" "$here/oci-pack.sh"
    cat "$here/images-build/go.mod" "$here/images-build/go.sum" "$here/knp-build/go.mod" "$here/knp-build/go.sum"
    echo "$go_version"
    echo "$pkgs"
  } | sha256sum | cut -d' ' -f1
)"
stamp="$bin/.stamp-images"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ] && [ -f "$bin/agnhost.oci.tar" ] &&
  [ -x "$bin/kube-network-policies" ] && [ -f "$bin/agnhost.image" ]; then
  echo "images up to date ($(cat "$bin/agnhost.image"), kube-network-policies $KUBE_NETWORK_POLICIES_VERSION)"
  exit 0
fi
mkdir -p "$bin"
rm -f "$stamp"

kube_src="$("$GO" env GOMODCACHE)/k8s.io/kubernetes@$KUBE_VERSION"
[ -d "$kube_src" ] || (cd "$here/images-build" && "$GO" mod download k8s.io/kubernetes)
agnhost_version="$(tr -d ' \n' <"$kube_src/test/images/agnhost/VERSION")"
# The registry and name upstream's e2e.test gives the image (test/utils/image/manifest.go).
manifest="$kube_src/test/utils/image/manifest.go"
registry="$(sed -n 's/^\s*PromoterE2eRegistry:\s*"\([^"]*\)".*/\1/p' "$manifest" | head -n1)"
grep -q "configs\[Agnhost\] = Config{list.PromoterE2eRegistry, \"agnhost\", \"$agnhost_version\"}" "$manifest" || {
  echo "cluster/build-images.sh: $manifest does not name agnhost $agnhost_version (test/images/agnhost/VERSION)" >&2
  exit 2
}
image="$registry/agnhost:$agnhost_version"

start=$(date +%s)
echo "building agnhost $agnhost_version (1/3)…"
t0=$(date +%s)
(cd "$here/images-build" && CGO_ENABLED=0 "$GO" build -trimpath \
  -ldflags "-s -w -X main.Version=$agnhost_version" -o "$bin/agnhost.new" k8s.io/kubernetes/test/images/agnhost)
mv "$bin/agnhost.new" "$bin/agnhost"
echo "  built agnhost in $(($(date +%s) - t0))s"

echo "building kube-network-policies $KUBE_NETWORK_POLICIES_VERSION (2/3)…"
t0=$(date +%s)
(cd "$here/knp-build" && CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w" \
  -o "$bin/kube-network-policies.new" sigs.k8s.io/kube-network-policies/cmd)
mv "$bin/kube-network-policies.new" "$bin/kube-network-policies"
echo "  built kube-network-policies in $(($(date +%s) - t0))s"

echo "packing image $image (3/3)…"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
r="$work/rootfs"
mkdir -p "$r/bin" "$r/sbin" "$r/usr/bin" "$r/usr/sbin" "$r/etc" "$r/tmp" "$r/uploads" "$r/root"
chmod 1777 "$r/tmp"
cp "$bin/agnhost" "$r/agnhost"
# Some entrypoint-tester specs override the entrypoint with agnhost-2 (upstream's Dockerfile).
ln -s agnhost "$r/agnhost-2"
# porter's certificate and key, at / as upstream's Dockerfile adds them.
cp "$kube_src/test/images/agnhost/porter/localhost.crt" "$kube_src/test/images/agnhost/porter/localhost.key" "$r/"
chmod 0644 "$r/localhost.crt" "$r/localhost.key"
cp "$busybox" "$r/bin/busybox"
# Every applet at its own path (bin/sh, usr/bin/nsenter, ...), unless a real program goes there.
"$busybox" --list-full | while read -r a; do
  [ "$a" = bin/busybox ] && continue
  mkdir -p "$r/$(dirname "$a")"
  ln -s /bin/busybox "$r/$a"
done
for u in "${userland[@]}"; do
  rm -f "$r$u"
  cp "$u" "$r$u"
  # The shared libraries it loads, at the paths the loader finds them.
  ldd "$u" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | while read -r lib; do
    mkdir -p "$r$(dirname "$lib")"
    [ -e "$r$lib" ] || cp -L "$lib" "$r$lib"
  done
done
# The user and group some specs expect in the image (upstream's Dockerfile: adduser/addgroup).
cat >"$r/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh
EOF
cat >"$r/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
user-defined-in-image:x:1000:
group-defined-in-image:x:50000:user-defined-in-image
EOF
echo 'hosts: files dns' >"$r/etc/nsswitch.conf"
config='{"Entrypoint":["/agnhost"],"Cmd":["pause"],"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"ExposedPorts":{"80/tcp":{},"8080/tcp":{},"8081/tcp":{},"9376/tcp":{},"5000/tcp":{}}}'
"$here/oci-pack.sh" "$r" "$image" "$config" "$bin/agnhost.oci.tar"
echo "$image" >"$bin/agnhost.image"

echo "$digest" >"$stamp"
echo "images built in $(($(date +%s) - start))s: $image ($(du -h "$bin/agnhost.oci.tar" | cut -f1)), kube-network-policies $KUBE_NETWORK_POLICIES_VERSION"
