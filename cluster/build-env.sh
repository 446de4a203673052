# Sourced (not run) by cluster/build.sh, build-node.sh and build-images.sh: the release they
# build, where they build it to, and the Go toolchain they build it with. Each build's stamp
# holds a digest of this file and of `$GO version`: a change here rebuilds all three.
# shellcheck shell=bash

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
# shellcheck source=release.env
. "$here/release.env"

bin="${CLUSTER_BIN:-$root/var/cluster/bin}"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
if ! [ -x "$GO" ] && ! command -v "$GO" >/dev/null 2>&1; then
  echo "cluster/${0##*/}: no Go toolchain (install Go 1.26 or set GO=/path/to/go)" >&2
  exit 2
fi
# The machine's own Go (1.26, which every pinned module accepts); go.sum is authoritative.
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export GOFLAGS="-mod=readonly -buildvcs=false"
go_version="$("$GO" version)"
