#!/usr/bin/env bash
# Starts the real cluster's control plane from the binaries cluster/build.sh made: etcd,
# kube-apiserver, kube-controller-manager and kube-scheduler, every one on 127.0.0.1 only
# (flags after hack/local-up-cluster.sh of the same release). Waits for /readyz, then writes
# the admin kubeconfig to var/cluster/kubeconfig. Logs: var/cluster/logs/, pids:
# var/cluster/pids/. Already up and healthy: says so and changes nothing.
#
# The apiserver advertises 127.0.0.1, which the `kubernetes` Service's Endpoints may not hold
# (validation refuses loopback addresses): its endpoint reconciler is off, so that Service has
# no endpoints and clients reach the API server on 127.0.0.1 directly, never through it.
#
# Ports (env): CLUSTER_APISERVER_PORT (6443), CLUSTER_ETCD_PORT (2379), CLUSTER_ETCD_PEER_PORT
# (2380), CLUSTER_KCM_PORT (10257), CLUSTER_SCHEDULER_PORT (10259).
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

control_plane=(etcd kube-apiserver kube-controller-manager kube-scheduler)

for b in "${control_plane[@]}" kubectl; do
  [ -x "$bin/$b" ] || die "no $bin/$b: run cluster/build.sh (make cluster does)"
done

healthy() {
  for b in "${control_plane[@]}"; do alive "$b" || return 1; done
  [ -f "$kubeconfig" ] && [ "$(api /readyz 2>/dev/null)" = ok ]
}

if healthy; then
  say "already up and healthy: $server ($(api /version | sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p')), kubeconfig ${kubeconfig#"$root"/}"
  exit 0
fi

# Half up (a component died, or the machine restarted): stop what is left, keep the state.
for b in "${control_plane[@]}"; do stop "$b"; done

for p in "$etcd_port" "$etcd_peer_port" "$apiserver_port" "$kcm_port" "$scheduler_port"; do
  port_free "$p" || die "port $p is taken (by another cluster?); set CLUSTER_*_PORT (see cluster/up.sh)"
done

mkdir -p "$state" "$logs" "$pids"
"$here/certs.sh"
node="$(cat "$pki/node-name")"
for c in kube-controller-manager kube-scheduler; do
  write_kubeconfig "$state/$c.kubeconfig" "$c"
done

start etcd \
  --name=sctp-readiness \
  --data-dir="$state/etcd" \
  --listen-client-urls="http://$host:$etcd_port" \
  --advertise-client-urls="http://$host:$etcd_port" \
  --listen-peer-urls="http://$host:$etcd_peer_port" \
  --initial-advertise-peer-urls="http://$host:$etcd_peer_port" \
  --initial-cluster="sctp-readiness=http://$host:$etcd_peer_port" \
  --log-level=warn
wait_for etcd 30 curl -fsS --max-time 2 "http://$host:$etcd_port/health"

start kube-apiserver \
  --bind-address="$host" \
  --advertise-address="$host" \
  --endpoint-reconciler-type=none \
  --secure-port="$apiserver_port" \
  --etcd-servers="http://$host:$etcd_port" \
  --allow-privileged=true \
  --authorization-mode=Node,RBAC \
  --client-ca-file="$pki/ca.crt" \
  --tls-cert-file="$pki/apiserver.crt" \
  --tls-private-key-file="$pki/apiserver.key" \
  --kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" \
  --kubelet-client-key="$pki/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP,Hostname \
  --service-account-issuer=https://kubernetes.default.svc \
  --service-account-key-file="$pki/sa.pub" \
  --service-account-signing-key-file="$pki/sa.key" \
  --service-cluster-ip-range="$service_cidr" \
  --service-node-port-range=30000-32767 \
  --cert-dir="$state/apiserver-certs" \
  --profiling=false
ready() { [ "$(api /readyz 2>/dev/null)" = ok ]; }
wait_for kube-apiserver 120 ready
write_kubeconfig "$kubeconfig" admin

start kube-controller-manager \
  --kubeconfig="$state/kube-controller-manager.kubeconfig" \
  --authentication-kubeconfig="$state/kube-controller-manager.kubeconfig" \
  --authorization-kubeconfig="$state/kube-controller-manager.kubeconfig" \
  --bind-address="$host" \
  --secure-port="$kcm_port" \
  --cert-dir="$state/kcm-certs" \
  --leader-elect=false \
  --use-service-account-credentials=true \
  --service-account-private-key-file="$pki/sa.key" \
  --root-ca-file="$pki/ca.crt" \
  --cluster-signing-cert-file="$pki/ca.crt" \
  --cluster-signing-key-file="$pki/ca.key" \
  --service-cluster-ip-range="$service_cidr" \
  --allocate-node-cidrs=true \
  --cluster-cidr="$pod_cidr" \
  --node-cidr-mask-size=24 \
  --controllers='*,bootstrapsigner,tokencleaner' \
  --profiling=false

start kube-scheduler \
  --kubeconfig="$state/kube-scheduler.kubeconfig" \
  --authentication-kubeconfig="$state/kube-scheduler.kubeconfig" \
  --authorization-kubeconfig="$state/kube-scheduler.kubeconfig" \
  --bind-address="$host" \
  --secure-port="$scheduler_port" \
  --leader-elect=false \
  --profiling=false

healthz() { curl -fsSk --max-time 2 "https://$host:$1/healthz"; }
wait_for kube-controller-manager 60 healthz "$kcm_port"
wait_for kube-scheduler 60 healthz "$scheduler_port"

# The service-account token controller must have made the default namespace's account.
wait_for kube-controller-manager 60 kubectl get serviceaccount default -n default

version="$(api /version | sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p')"
say "up: $server ($version), node name $node; kubeconfig ${kubeconfig#"$root"/}"
say "  kubectl: $bin/kubectl --kubeconfig ${kubeconfig#"$root"/} get --raw /version"
say "  stop: make cluster-down"
