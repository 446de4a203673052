#!/usr/bin/env bash
# NetworkPolicy for the real cluster: kube-network-policies (bin/kube-network-policies, built by
# cluster/build-images.sh at KUBE_NETWORK_POLICIES_VERSION) on this host, against the cluster.
#
# It enforces policy by sending the first packet of each new connection of a selected pod to
# user space through the kernel's nftables `queue` expression (NFQUEUE; its nft table
# `kube-network-policies`). Before starting it, this script checks, in a network namespace of
# its own (nothing on the host changes), that the kernel accepts an nft rule with `queue`. When
# it does not (a kernel without CONFIG_NFT_QUEUE), it says so plainly, does not start it, and
# records it in var/cluster/netpol: NetworkPolicy objects are then accepted by the API server
# but NOT enforced, and no NetworkPolicy test may count as passed on this cluster.
#
# v0.8 reads only the in-cluster configuration (rest.InClusterConfig): it runs in a mount
# namespace of its own, where a tmpfs on /run holds its service account's token at
# /run/secrets/kubernetes.io/serviceaccount (the host's /run is untouched), with
# KUBERNETES_SERVICE_HOST=127.0.0.1 (the `kubernetes` Service has no endpoints: up.sh). NRI is
# off (--disable-nri): it learns pod IPs from the API server.
#
#   cluster/netpol.sh           start (says so when already up, or why not)
#   cluster/netpol.sh --stop    stop it and remove its nft table
#   CLUSTER_NETPOL=off          do not start it (recorded as such)
#   CLUSTER_NETPOL=force        start it even when the queue check fails (to see its own error)
#   CLUSTER_NETPOL_METRICS_PORT its metrics, on 127.0.0.1 (default 9080)
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

name=kube-network-policies
record="$state/netpol"
knp_dir="$state/knp"
queue_id="${CLUSTER_NETPOL_QUEUE_ID:-98}"
metrics_port="${CLUSTER_NETPOL_METRICS_PORT:-9080}"
want="${CLUSTER_NETPOL:-on}"

remove_table() {
  command -v nft >/dev/null || return 0
  for fam in inet ip ip6; do
    nft list table "$fam" "$name" >/dev/null 2>&1 && nft delete table "$fam" "$name" 2>/dev/null || true
  done
}

if [ "${1:-}" = "--stop" ]; then
  stop "$name"
  remove_table
  rm -f "$record"
  exit 0
fi

[ -f "$kubeconfig" ] && [ "$(api /readyz 2>/dev/null)" = ok ] ||
  die "no cluster answers at $server: run make cluster first"

if alive "$name"; then
  say "$name already running (pid $(cat "$pids/$name.pid")): NetworkPolicy enforced"
  exit 0
fi

if [ "$want" = off ]; then
  echo "unenforced CLUSTER_NETPOL=off" >"$record"
  say "NetworkPolicy NOT enforced: CLUSTER_NETPOL=off ($name not started)"
  exit 0
fi

# Does this kernel take an nft rule that queues (what kube-network-policies writes)?
queue_error=
if ! command -v nft >/dev/null || ! command -v unshare >/dev/null; then
  queue_error="cannot check: no nft or unshare (apt-get install nftables util-linux)"
else
  queue_error="$(unshare --net nft -f - 2>&1 <<EOF || true
add table inet sctp_readiness_probe
add chain inet sctp_readiness_probe c { type filter hook forward priority 0; }
add rule inet sctp_readiness_probe c queue flags bypass to $queue_id
EOF
)"
fi
if [ -n "$queue_error" ] && [ "$want" != force ]; then
  reason="this kernel has no nftables queue expression (CONFIG_NFT_QUEUE), which $name needs"
  echo "unenforced $reason: $(echo "$queue_error" | head -n1)" >"$record"
  say "NetworkPolicy NOT enforced: $reason; $name not started."
  say "  nft said: $(echo "$queue_error" | head -n1)"
  say "  (NetworkPolicy objects are accepted but nothing enforces them: var/cluster/netpol)"
  exit 0
fi

[ -x "$bin/$name" ] || die "no $bin/$name: run cluster/build-images.sh"
port_free "$metrics_port" || die "port $metrics_port is taken; set CLUSTER_NETPOL_METRICS_PORT"
node="$(cat "$pki/node-name")"

# Its service account, with upstream's ClusterRole (install.yaml of the release), and a token.
kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: $name, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: $name}
rules:
- apiGroups: [""]
  resources: [pods, namespaces]
  verbs: [list, watch]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: $name}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: $name}
subjects:
- {kind: ServiceAccount, name: $name, namespace: kube-system}
EOF
mkdir -p "$knp_dir/serviceaccount" "$logs" "$pids"
(
  umask 077
  kubectl create token "$name" -n kube-system --duration=48h >"$knp_dir/serviceaccount/token"
)
cp "$pki/ca.crt" "$knp_dir/serviceaccount/ca.crt"
echo kube-system >"$knp_dir/serviceaccount/namespace"

cat >"$knp_dir/run.sh" <<EOF
#!/bin/sh
# Runs in a private mount namespace (unshare --mount): a tmpfs on /run, the token beneath it.
set -e
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p /run/secrets/kubernetes.io/serviceaccount
mount --bind "$knp_dir/serviceaccount" /run/secrets/kubernetes.io/serviceaccount
export KUBERNETES_SERVICE_HOST=$host KUBERNETES_SERVICE_PORT=$apiserver_port
exec "$bin/$name" --hostname-override="$node" --disable-nri --nfqueue-id=$queue_id \\
  --metrics-bind-address=$host:$metrics_port --v=2
EOF
chmod +x "$knp_dir/run.sh"
setsid unshare --mount --propagation private "$knp_dir/run.sh" >>"$logs/$name.log" 2>&1 </dev/null &
echo $! >"$pids/$name.pid"
say "started $name (pid $!, log ${logs#"$root"/}/$name.log)"
# unshare and run.sh exec it: until then the pid is not yet the binary that alive() expects.
for _ in $(seq 1 50); do
  alive "$name" && break
  [ -d "/proc/$(cat "$pids/$name.pid")" ] || break
  sleep 0.1
done
# Up: its metrics answer and it wrote its table (or it died: wait_for shows why).
table_written() { nft list table inet "$name" >/dev/null 2>&1; }
wait_for "$name" 60 curl -fsS --max-time 2 "http://$host:$metrics_port/metrics"
wait_for "$name" 60 table_written
echo "enforced $name $KUBE_NETWORK_POLICIES_VERSION" >"$record"
say "$name up: NetworkPolicy enforced (nfqueue $queue_id)"
