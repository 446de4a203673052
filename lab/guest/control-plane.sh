#!/usr/bin/env bash
# The guest kube-proxy job's own control plane (`make guest-proxy`, tests/kernel/
# test_guest_kube_proxy.py): cluster/up.sh with a state dir and ports of its own, so that it
# shares nothing with the cluster of `make cluster` (whose battery runs would see the Node
# `sctp-guest` that lab/guest/real_proxy.py adds).
#
#   lab/guest/control-plane.sh up     start it (etcd, kube-apiserver, -controller-manager,
#                                     -scheduler on 127.0.0.1); prints the state dir and port
#   lab/guest/control-plane.sh down   stop it by its pid files and remove its state but bin/
#
# cluster/up.sh touches nothing host-wide but these ports (it starts no node, kube-proxy, link
# or rule). cluster/down.sh is not used: it would run `kube-proxy --cleanup` and delete the nft
# table of kube-network-policies on this host, and count the other cluster's chains, links and
# listeners as leftovers.
#
# Env: GUEST_CLUSTER_STATE (var/cluster-guest), GUEST_CLUSTER_BIN (STATE/bin when it holds the
# binaries, else var/cluster/bin, what cluster/build.sh builds), ports GUEST_APISERVER_PORT
# (26443), GUEST_ETCD_PORT (22379), GUEST_ETCD_PEER_PORT (22380), GUEST_KCM_PORT (20257),
# GUEST_SCHEDULER_PORT (20259).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

export CLUSTER_STATE="${GUEST_CLUSTER_STATE:-$root/var/cluster-guest}"
if [ -z "${GUEST_CLUSTER_BIN:-}" ]; then
  if [ -x "$CLUSTER_STATE/bin/kube-apiserver" ]; then
    GUEST_CLUSTER_BIN="$CLUSTER_STATE/bin"
  else
    GUEST_CLUSTER_BIN="$root/var/cluster/bin"
  fi
fi
export CLUSTER_BIN="$GUEST_CLUSTER_BIN"
export CLUSTER_APISERVER_PORT="${GUEST_APISERVER_PORT:-26443}"
export CLUSTER_ETCD_PORT="${GUEST_ETCD_PORT:-22379}"
export CLUSTER_ETCD_PEER_PORT="${GUEST_ETCD_PEER_PORT:-22380}"
export CLUSTER_KCM_PORT="${GUEST_KCM_PORT:-20257}"
export CLUSTER_SCHEDULER_PORT="${GUEST_SCHEDULER_PORT:-20259}"
# Certificates: the node name is only written into pki/ (no kubelet runs here).
export CLUSTER_NODE_NAME="${CLUSTER_NODE_NAME:-sctp-guest}"

# shellcheck source=../../cluster/lib.sh
. "$root/cluster/lib.sh"
control_plane=(etcd kube-apiserver kube-controller-manager kube-scheduler)

case "${1:-}" in
  up)
    for b in "${control_plane[@]}" kubectl kube-proxy; do
      [ -x "$bin/$b" ] || die "no $bin/$b: run cluster/build.sh (or copy the binaries into ${CLUSTER_STATE#"$root"/}/bin)"
    done
    "$root/cluster/up.sh"
    echo "guest-control-plane: state=$state bin=$bin port=$apiserver_port"
    ;;
  down)
    [ -d "$state" ] || exit 0
    for b in kube-scheduler kube-controller-manager kube-apiserver etcd; do stop "$b"; done
    # Everything but bin/ (the binaries, when they live here).
    find "$state" -mindepth 1 -maxdepth 1 ! -name bin -exec rm -rf {} +
    left=()
    for p in "$etcd_port" "$etcd_peer_port" "$apiserver_port" "$kcm_port" "$scheduler_port"; do
      port_free "$p" || left+=("listener on port $p")
    done
    if [ ${#left[@]} -gt 0 ]; then
      say "guest control plane down, but these are left:"
      printf '  %s\n' "${left[@]}" >&2
      exit 1
    fi
    say "guest control plane down; state removed; ports $etcd_port $etcd_peer_port $apiserver_port $kcm_port $scheduler_port free"
    ;;
  *)
    echo "usage: $0 up|down" >&2
    exit 2
    ;;
esac
