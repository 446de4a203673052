#!/usr/bin/env bash
# Builds upstream's e2e.test for each release whose wrapper module is committed under
# deploy/e2e/v1.<minor>/ (go.mod requiring k8s.io/kubernetes at that release's newest patch the
# Go module proxy serves, every staging module replaced with v0.<minor>.<patch>; go.sum checked),
# into $E2E_DIR/v1.<minor>/e2e.test (default var/e2e), the layout the upstream battery reads
# (kernel/upstream.py binary_for). `make e2e-binaries` runs it.
#
# Out of tree, as importers build it: deploy/e2e/src/e2e_test.go (upstream's TestMain, with the
# SCTP spec packages) is copied into the module and `go test -c` links it, version-stamped as
# hack/lib/version.sh does (`e2e.test --version` says the tag).
#
# Cached: $E2E_DIR/v1.<minor>/.stamp holds the tag and a digest of go.mod, go.sum, e2e_test.go,
# this script and `go version`; a binary whose stamp matches is kept. One build at a time, with
# E2E_BUILD_P (default 2) packages compiled at once: the machine is small.
#
#   deploy/e2e/build-binaries.sh              every committed release
#   E2E_MINORS="36" deploy/e2e/build-binaries.sh   only 1.36
#   deploy/e2e/build-binaries.sh --force      rebuild even when the stamp matches
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
E2E_DIR="${E2E_DIR:-$root/var/e2e}"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
if ! command -v "$GO" >/dev/null 2>&1; then
  echo "build-binaries.sh: no Go toolchain (install Go 1.26 or set GO=/path/to/go)" >&2
  exit 2
fi
export GOFLAGS="-mod=readonly -buildvcs=false"
force=
[ "${1:-}" = "--force" ] && force=1

minors="${E2E_MINORS:-$(cd "$here" && ls -d v1.* 2>/dev/null | sed 's/^v1\.//' | sort -n | tr '\n' ' ')}"
[ -n "${minors// /}" ] || { echo "build-binaries.sh: no deploy/e2e/v1.*/ module" >&2; exit 2; }

for minor in $minors; do
  mod="$here/v1.$minor"
  [ -f "$mod/go.mod" ] || { echo "no module for 1.$minor (deploy/e2e/new-module.sh 1.$minor writes it)" >&2; exit 2; }
  tag="$(awk '($1 == "k8s.io/kubernetes" && $2 ~ /^v1\./) {print $2; exit} ($1 == "require" && $2 == "k8s.io/kubernetes") {print $3; exit}' "$mod/go.mod")"
  [ -n "$tag" ] || { echo "deploy/e2e/v1.$minor/go.mod requires no k8s.io/kubernetes" >&2; exit 2; }
  gover="$(awk '$1 == "go" {print $2; exit}' "$mod/go.mod")"
  # A module asking for a Go newer than the machine's is built with the approved toolchain the
  # module proxy serves (GOTOOLCHAIN=go1.27.3), for that build only; the others with the local Go.
  toolchain="${E2E_GOTOOLCHAIN:-local}"
  if [ "$toolchain" = local ] && [ "$(printf '%s\n%s\n' "$gover" "$("$GO" env GOVERSION | sed 's/^go//')" | sort -V | tail -n 1)" != "$("$GO" env GOVERSION | sed 's/^go//')" ]; then
    toolchain=go1.27.3
  fi
  out="$E2E_DIR/v1.$minor"
  digest="$(
    {
      echo "$tag"
      cat "$mod/go.mod" "$mod/go.sum" "$here/src/e2e_test.go" "$here/build-binaries.sh"
      GOTOOLCHAIN="$toolchain" "$GO" version
    } | sha256sum | cut -d' ' -f1
  )"
  if [ -z "$force" ] && [ -x "$out/e2e.test" ] && [ "$(cat "$out/.stamp" 2>/dev/null)" = "$tag $digest" ]; then
    echo "kept ${out#"$root"/}/e2e.test ($tag)"
    continue
  fi
  mkdir -p "$out"
  rm -f "$out/.stamp"
  info="$("$GO" env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$tag.info"
  [ -f "$info" ] || (cd "$mod" && GOTOOLCHAIN="$toolchain" "$GO" mod download k8s.io/kubernetes)
  build_date="$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "$info" | sed 's/\.[0-9]*Z$/Z/')"
  ver=""
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    ver+=" -X $pkg.gitVersion=$tag -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ver+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date -X $pkg.gitCommit="
  done
  echo "building e2e.test $tag (go test -c in deploy/e2e/v1.$minor, toolchain $toolchain, -p ${E2E_BUILD_P:-2})…"
  t0=$(date +%s)
  cp "$here/src/e2e_test.go" "$mod/e2e_test.go"
  trap 'rm -f "$mod/e2e_test.go"' EXIT
  (cd "$mod" && GOTOOLCHAIN="$toolchain" CGO_ENABLED=0 "$GO" test -c -p "${E2E_BUILD_P:-2}" -trimpath \
    -ldflags "all=$ver -s -w" -o "$out/e2e.test.new" .)
  rm -f "$mod/e2e_test.go"
  trap - EXIT
  mv "$out/e2e.test.new" "$out/e2e.test"
  echo "$tag $digest" >"$out/.stamp"
  echo "  built ${out#"$root"/}/e2e.test ($tag, $(du -m "$out/e2e.test" | cut -f1) MB) in $(($(date +%s) - t0))s"
done
