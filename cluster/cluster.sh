#!/usr/bin/env bash
# `make cluster`: the whole real cluster in one command, each step with a progress line.
#
#   1-3  build (cached: each build's stamp is a digest of release.env and its own inputs)
#          cluster/build.sh         etcd, kube-apiserver, -controller-manager, -scheduler,
#                                   kube-proxy, kubelet, kubectl
#          cluster/build-node.sh    containerd, runc, CNI plugins, the pause image
#          cluster/build-images.sh  agnhost image, kube-network-policies
#   4    cluster/up.sh              control plane on 127.0.0.1
#   5    cluster/node.sh            containerd + kubelet, images imported, node Ready
#   6    cluster/kube-proxy.sh      KUBE_PROXY_MODE=iptables|nftables (default iptables)
#   7    cluster/netpol.sh          kube-network-policies, or plainly why not (var/cluster/netpol)
#
# Every step says so and changes nothing when its part is already up; when all are, the last
# line says "already up". `make cluster-down` (cluster/down.sh) stops it all.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

mode="${KUBE_PROXY_MODE:-iptables}"
export KUBE_PROXY_MODE="$mode"

all_up() {
  local b
  for b in etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy; do
    alive "$b" || return 1
  done
  [ "$(cat "$state/kube-proxy.mode" 2>/dev/null)" = "$mode" ] || return 1
  [ -f "$state/netpol" ] || return 1
  [ "$(api /readyz 2>/dev/null)" = ok ]
}
was_up=
all_up && was_up=1

steps=(
  "building Kubernetes $KUBE_VERSION binaries:build.sh"
  "building node binaries (containerd $CONTAINERD_VERSION, runc $RUNC_VERSION, CNI $CNI_PLUGINS_VERSION, pause):build-node.sh"
  "building images (agnhost, kube-network-policies $KUBE_NETWORK_POLICIES_VERSION):build-images.sh"
  "starting the control plane:up.sh"
  "starting the node (containerd, kubelet, images):node.sh"
  "starting kube-proxy ($mode):kube-proxy.sh"
  "starting NetworkPolicy (kube-network-policies):netpol.sh"
)
n=${#steps[@]}
i=0
t_all=$(date +%s)
for s in "${steps[@]}"; do
  i=$((i + 1))
  what="${s%:*}"
  script="${s##*:}"
  echo "cluster: [$i/$n] $what…"
  t0=$(date +%s)
  "$here/$script"
  echo "cluster: [$i/$n] done in $(($(date +%s) - t0))s"
done

netpol="$(cat "$state/netpol" 2>/dev/null || echo unknown)"
images="$(
  cat "$bin/pause.version" 2>/dev/null | sed 's#^#registry.k8s.io/pause:#'
  cat "$bin/agnhost.image" 2>/dev/null
)"
if [ -n "$was_up" ]; then
  say "already up: $server, proxy $mode, NetworkPolicy ${netpol%% *}; nothing changed"
else
  say "up in $(($(date +%s) - t_all))s: $server ($KUBE_VERSION), node $(cat "$pki/node-name") Ready, proxy $mode, NetworkPolicy ${netpol%% *}"
fi
say "  kubeconfig ${kubeconfig#"$root"/}; kubectl ${bin#"$root"/}/kubectl; images: $(echo "$images" | paste -sd, -)"
case "$netpol" in
  enforced*) ;;
  *) say "  WARNING NetworkPolicy is NOT enforced on this cluster: ${netpol#unenforced }" ;;
esac
