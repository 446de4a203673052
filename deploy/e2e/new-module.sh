#!/usr/bin/env bash
# Writes (or rewrites) the project's wrapper module for one release's e2e.test:
# deploy/e2e/v1.<minor>/go.mod requiring k8s.io/kubernetes <tag> and replacing every staging
# module that upstream's go.mod points at ./staging/... with the module at v0.<minor>.<patch>
# (as cluster/build/go.mod does), then `go mod tidy` against deploy/e2e/src/e2e_test.go.
# Run once per new patch release; commit go.mod and go.sum. build-binaries.sh only builds.
#
#   deploy/e2e/new-module.sh v1.36.3
set -euo pipefail
tag="${1:?usage: new-module.sh v1.X.Y}"
[[ "$tag" =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "not a release tag: $tag" >&2; exit 2; }
minor="${BASH_REMATCH[1]}"
staging="v0.${minor}.${BASH_REMATCH[2]}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
GO="${GO:-go}"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}" GOFLAGS=-buildvcs=false
dir="$here/v1.$minor"
mkdir -p "$dir"
"$GO" mod download k8s.io/kubernetes@"$tag"
upstream="$("$GO" env GOMODCACHE)/k8s.io/kubernetes@$tag/go.mod"
gover="$(awk '$1 == "go" {print $2; exit}' "$upstream")"
godebug="$(awk '$1 == "godebug" {print $2; exit}' "$upstream")"
{
  echo "// The project's wrapper for upstream's e2e.test at $tag (deploy/e2e/new-module.sh wrote it;"
  echo "// deploy/e2e/build-binaries.sh builds it). Every staging module at $staging, as importers do."
  echo "module sctp-readiness/deploy/e2e/v1.$minor"
  echo
  echo "go $gover"
  [ -n "$godebug" ] && { echo; echo "godebug $godebug"; }
  echo
  echo "require k8s.io/kubernetes $tag"
  echo
  echo "replace ("
  awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print "\t" $1 " => " $1 " '"$staging"'"}' "$upstream"
  echo ")"
} >"$dir/go.mod"
cp "$here/src/e2e_test.go" "$dir/e2e_test.go"
(cd "$dir" && "$GO" mod tidy)
rm -f "$dir/e2e_test.go"
echo "wrote ${dir#"$here"/}/go.mod and go.sum for $tag ($(grep -c ' => ' "$dir/go.mod") staging modules at $staging)"
