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
[ -x "$here/netpol.sh" ] && "$here/netpol.sh" --stop
stop kube-proxy
if [ -f "$state/kube-proxy.mode" ] && [ -x "$bin/kube-proxy" ]; then
  # kube-proxy --cleanup removes its KUBE-* chains and its nftables table (both modes).
  "$bin/kube-proxy" --cleanup --v=0 >>"$logs/kube-proxy-cleanup.log" 2>&1 || true
  say "removed kube-proxy's rules"
fi
for b in kube-scheduler kube-controller-manager kube-apiserver etcd; do stop "$b"; done

# Everything but bin/ (kept: a rebuild takes minutes).
find "$state" -mindepth 1 -maxdepth 1 ! -name bin -exec rm -rf {} +

# What must be gone now: checked, and each leftover named (exit 1 when there is one).
left=()
binreal="$(realpath -m "$bin")"
for p in /proc/[0-9]*; do
  exe="$(readlink "$p/exe" 2>/dev/null || true)"
  case "$exe" in "$binreal"/*) left+=("process ${p#/proc/} ($exe)") ;; esac
  # a pod's processes: in the kubelet's cgroups
  grep -q kubepods "$p/cgroup" 2>/dev/null && left+=("pod process ${p#/proc/} ($(cat "$p/comm" 2>/dev/null))")
done
for l in "$node_if" "${node_if}p" cni0; do
  ip link show "$l" >/dev/null 2>&1 && left+=("link $l")
done
while read -r l; do [ -n "$l" ] && left+=("link $l (on cni0)"); done < <(ip -o link show master cni0 2>/dev/null | awk -F': ' '{print $2}')
while read -r m; do [ -n "$m" ] && left+=("mount $m"); done < <(awk -v s="$state" 'index($2, s) == 1 || $2 ~ /^\/run\/netns\/cni-/ {print $2}' /proc/mounts)
for t in iptables ip6tables; do
  command -v "$t-save" >/dev/null || continue
  while read -r c; do [ -n "$c" ] && left+=("$t chain $c"); done < <("$t-save" 2>/dev/null | sed -n 's/^:\(\(KUBE\|CNI\)-[^ ]*\).*/\1/p')
done
if command -v nft >/dev/null; then
  while read -r tb; do [ -n "$tb" ] && left+=("nft $tb"); done < <(nft list tables 2>/dev/null | grep -E ' (kube-proxy|kube-network-policies)$')
fi
for p in "$etcd_port" "$etcd_peer_port" "$apiserver_port" "$kcm_port" "$scheduler_port" "$proxy_metrics_port" \
  "$proxy_healthz_port" "$kubelet_port" "${CLUSTER_KUBELET_HEALTHZ_PORT:-10248}" "${CLUSTER_NETPOL_METRICS_PORT:-9080}"; do
  port_free "$p" || left+=("listener on port $p")
done
if [ ${#left[@]} -gt 0 ]; then
  say "down, but these are left:"
  printf '  %s\n' "${left[@]}" >&2
  exit 1
fi
say "down; state removed (kept ${bin#"$root"/}); checked: no process, link, mount, KUBE-*/CNI-* chain, nft table or listener of it is left"
