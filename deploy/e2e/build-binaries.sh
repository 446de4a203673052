#!/bin/sh
# Builds upstream's e2e.test for each supported minor (`make e2e-binaries`), at the newest patch
# release of that minor the Go module proxy serves for k8s.io/kubernetes, into
# $E2E_DIR/v1.<minor>/e2e.test (default var/e2e), the layout the upstream battery reads
# (workers/upstream.py). A binary already there is kept (delete it to rebuild). Needs git, Go
# and make; the sources are cloned once per release into $E2E_DIR/src (a shallow clone: the
# module's own download cannot be built, its staging repositories are `replace`d).
set -eu
E2E_DIR=${E2E_DIR:-var/e2e}
MINORS=${E2E_MINORS:-"34 35 36 37"}
PROXY=${GOPROXY_URL:-https://proxy.golang.org}
versions=$(curl -fsSL "$PROXY/k8s.io/kubernetes/@v/list")
for minor in $MINORS; do
  out="$E2E_DIR/v1.$minor/e2e.test"
  if [ -x "$out" ]; then echo "kept $out"; continue; fi
  # Release tags only (no -alpha/-beta/-rc), highest patch.
  tag=$(printf '%s\n' $versions | grep -E "^v1\.$minor\.[0-9]+$" | sort -t. -k3,3n | tail -n 1)
  if [ -z "$tag" ]; then echo "no release of 1.$minor on $PROXY: skipped" >&2; continue; fi
  src="$E2E_DIR/src/$tag"
  [ -d "$src" ] || git clone --quiet --depth 1 --branch "$tag" https://github.com/kubernetes/kubernetes "$src"
  (cd "$src" && make WHAT=test/e2e/e2e.test)
  mkdir -p "$(dirname "$out")"
  cp "$src/_output/bin/e2e.test" "$out"
  echo "built $out from $tag"
done
