#!/usr/bin/env bash
# Runs the built kube-proxy on this host against the real cluster (after `make cluster`), with
# its own client certificate (CN system:kube-proxy, bound to system:node-proxier by default)
# and kubeconfig (var/cluster/kube-proxy.kubeconfig). It writes its rules into this host's
# netfilter: KUBE-* chains (iptables) or the `kube-proxy` nftables tables; `make cluster-down`
# stops it and runs `kube-proxy --cleanup`, which removes them.
#
#   KUBE_PROXY_MODE=iptables|nftables   (default iptables; ipvs needs a kernel with IPVS)
#   cluster/kube-proxy.sh [--stop]
#
# Its metrics (/proxyMode) and healthz listen on 127.0.0.1 (CLUSTER_PROXY_METRICS_PORT, 10249;
# CLUSTER_PROXY_HEALTHZ_PORT, 10256). It leaves the host's conntrack sysctls alone and never
# enables route_localnet (no NodePorts on localhost).
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

mode="${KUBE_PROXY_MODE:-iptables}"
case "$mode" in
  iptables | nftables) ;;
  ipvs) die "KUBE_PROXY_MODE=ipvs needs a kernel with IPVS (this one has none; lab/guest/ has)" ;;
  *) die "KUBE_PROXY_MODE must be iptables or nftables, not '$mode'" ;;
esac

cleanup() {
  "$bin/kube-proxy" --cleanup --v=0 >>"$logs/kube-proxy-cleanup.log" 2>&1 || true
}

if [ "${1:-}" = "--stop" ]; then
  stop kube-proxy
  if [ -f "$state/kube-proxy.mode" ]; then
    cleanup
    rm -f "$state/kube-proxy.mode"
  fi
  exit 0
fi

[ -f "$kubeconfig" ] && [ "$(api /readyz 2>/dev/null)" = ok ] ||
  die "no cluster answers at $server: run make cluster first"
[ -x "$bin/kube-proxy" ] || die "no $bin/kube-proxy: run cluster/build.sh"
case "$mode" in
  iptables) command -v iptables-restore >/dev/null || die "kube-proxy's iptables mode needs iptables (apt-get install iptables)" ;;
  nftables) command -v nft >/dev/null || die "kube-proxy's nftables mode needs nft (apt-get install nftables)" ;;
esac

if alive kube-proxy; then
  if [ "$(cat "$state/kube-proxy.mode" 2>/dev/null)" = "$mode" ]; then
    say "kube-proxy already running in $mode mode (pid $(cat "$pids/kube-proxy.pid"))"
    exit 0
  fi
  stop kube-proxy # another mode: its rules go before the new mode writes its own
fi
[ -f "$state/kube-proxy.mode" ] && cleanup
for p in "$proxy_metrics_port" "$proxy_healthz_port"; do
  port_free "$p" || die "port $p is taken; set CLUSTER_PROXY_METRICS_PORT / CLUSTER_PROXY_HEALTHZ_PORT"
done

node="$(cat "$pki/node-name")"
write_kubeconfig "$state/kube-proxy.kubeconfig" kube-proxy
cat >"$state/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $state/kube-proxy.kubeconfig
mode: $mode
hostnameOverride: $node
bindAddress: $host
metricsBindAddress: $host:$proxy_metrics_port
healthzBindAddress: $host:$proxy_healthz_port
clusterCIDR: $pod_cidr
nodePortAddresses: ["primary"]
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  udpTimeout: 0s
  udpStreamTimeout: 0s
EOF
echo "$mode" >"$state/kube-proxy.mode"
start kube-proxy --config="$state/kube-proxy.yaml" --v=2
# /livez: /healthz answers 503 while this host has no Node object (no kubelet yet).
wait_for kube-proxy 60 curl -fsS --max-time 2 "http://$host:$proxy_healthz_port/livez"
say "kube-proxy up in $(curl -fsS "http://$host:$proxy_metrics_port/proxyMode") mode (node $node)"
