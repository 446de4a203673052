#!/usr/bin/env bash
# Stops everything cluster/up.sh, kube-proxy.sh and node.sh started (by their pid files in
# var/cluster/pids/, never by process name), removes the rules kube-proxy wrote, and removes
# the cluster's state: everything in var/cluster/ except bin/ (the binaries and their build
# stamp), so that the next `make cluster` starts a fresh cluster without rebuilding.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

[ -d "$state" ] || {
  say "nothing to stop"
  exit 0
}

# The node first (its pods, then the runtime), then kube-proxy, then the control plane.
if [ -x "$here/node.sh" ] && [ -d "$state/node" ]; then
  "$here/node.sh" --down || true
fi
stop kube-proxy
if [ -f "$state/kube-proxy.mode" ] && [ -x "$bin/kube-proxy" ]; then
  # kube-proxy --cleanup removes its KUBE-* chains and its nftables table (both modes).
  "$bin/kube-proxy" --cleanup --v=0 >>"$logs/kube-proxy-cleanup.log" 2>&1 || true
  say "removed kube-proxy's rules"
fi
for b in kube-scheduler kube-controller-manager kube-apiserver etcd; do stop "$b"; done

# Everything but bin/ (kept: a rebuild takes minutes).
find "$state" -mindepth 1 -maxdepth 1 ! -name bin -exec rm -rf {} +
say "down; state removed (kept ${bin#"$root"/})"
