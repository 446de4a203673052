# Shared by cluster/up.sh, down.sh, kube-proxy.sh and node.sh (sourced, not run): where the
# real cluster keeps its state, which ports it uses (all on 127.0.0.1, each overridable), and
# how its processes are started and stopped (by pid file, never by name).
# shellcheck shell=bash

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
# shellcheck source=release.env
. "$here/release.env"

state="${CLUSTER_STATE:-$root/var/cluster}"
bin="${CLUSTER_BIN:-$state/bin}"
pki="$state/pki"
logs="$state/logs"
pids="$state/pids"
export CLUSTER_PKI="$pki"

host=127.0.0.1
# The node's address: the kubelet refuses a loopback node IP ("nodeIP can't be loopback
# address"), so cluster/node.sh gives the node an interface of its own, NODE_IF (a veth pair,
# this kernel has no dummy links), holding NODE_IP/32 from 198.18.0.0/15 (RFC 2544's benchmark
# range: routed nowhere, unlikely to clash). Traffic to it is local delivery on this host.
export CLUSTER_NODE_IP="${CLUSTER_NODE_IP:-198.18.37.1}"
node_ip="$CLUSTER_NODE_IP"
node_if="${CLUSTER_NODE_IF:-sctpnode0}"
apiserver_port="${CLUSTER_APISERVER_PORT:-6443}"
etcd_port="${CLUSTER_ETCD_PORT:-2379}"
etcd_peer_port="${CLUSTER_ETCD_PEER_PORT:-2380}"
kcm_port="${CLUSTER_KCM_PORT:-10257}"
scheduler_port="${CLUSTER_SCHEDULER_PORT:-10259}"
proxy_metrics_port="${CLUSTER_PROXY_METRICS_PORT:-10249}"
proxy_healthz_port="${CLUSTER_PROXY_HEALTHZ_PORT:-10256}"
kubelet_port="${CLUSTER_KUBELET_PORT:-10250}"
service_cidr="${CLUSTER_SERVICE_CIDR:-10.0.0.0/24}"
pod_cidr="${CLUSTER_POD_CIDR:-10.88.0.0/16}"
server="https://$host:$apiserver_port"
kubeconfig="$state/kubeconfig"

say() { echo "cluster: $*"; }
die() {
  echo "cluster: $*" >&2
  exit 1
}

# alive NAME: the process of NAME's pid file runs, and is the binary we started.
alive() {
  local f="$pids/$1.pid" pid exe
  [ -f "$f" ] || return 1
  pid="$(cat "$f")"
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  exe="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"
  local want
  want="$(realpath -m "$bin/$1")"
  [ "$exe" = "$want" ] || [ "$exe" = "$want (deleted)" ]
}

# start NAME ARGS...: runs $bin/NAME in its own session, output to logs/NAME.log, pid file.
start() {
  local name=$1
  shift
  mkdir -p "$logs" "$pids"
  if alive "$name"; then
    say "$name already running (pid $(cat "$pids/$name.pid"))"
    return 0
  fi
  setsid "$bin/$name" "$@" >>"$logs/$name.log" 2>&1 </dev/null &
  echo $! >"$pids/$name.pid"
  say "started $name (pid $!, log ${logs#"$root"/}/$name.log)"
}

# stop NAME: TERM, then KILL after 15 s, the process of NAME's pid file (if it is ours).
stop() {
  local name=$1 f="$pids/$1.pid" pid i
  [ -f "$f" ] || return 0
  pid="$(cat "$f")"
  if alive "$name"; then
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 150); do
      [ -d "/proc/$pid" ] || break
      # a zombie child of ours counts as gone
      grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null && break
      sleep 0.1
    done
    if [ -d "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
    say "stopped $name (pid $pid)"
  fi
  rm -f "$f"
}

# port_free PORT: nothing listens on 127.0.0.1:PORT (or the wildcard).
port_free() {
  ! ss -Hltn "sport = :$1" 2>/dev/null | grep . >/dev/null
}

# wait_for NAME SECONDS COMMAND...: retries COMMAND until it succeeds, NAME's process dies, or
# the time runs out (then shows the end of NAME's log).
wait_for() {
  local name=$1 secs=$2 i
  shift 2
  for i in $(seq 1 $((secs * 5))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    if ! alive "$name"; then
      tail -n 30 "$logs/$name.log" >&2 || true
      die "$name exited (log: ${logs#"$root"/}/$name.log)"
    fi
    sleep 0.2
  done
  tail -n 30 "$logs/$name.log" >&2 || true
  die "$name not ready after ${secs}s (log: ${logs#"$root"/}/$name.log)"
}

# api PATH: GET PATH from the apiserver as the admin (curl, no kubectl needed).
api() {
  curl -fsS --max-time 5 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    "$server$1"
}

# write_kubeconfig FILE USER: a kubeconfig for USER's client certificate (pki/USER.{crt,key}).
write_kubeconfig() {
  local file=$1 user=$2
  (
    umask 077
    cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: sctp-readiness-real
  cluster:
    server: $server
    certificate-authority-data: $(base64 -w0 "$pki/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 "$pki/$user.crt")
    client-key-data: $(base64 -w0 "$pki/$user.key")
contexts:
- name: $user@sctp-readiness-real
  context:
    cluster: sctp-readiness-real
    user: $user
current-context: $user@sctp-readiness-real
EOF
  )
}

kubectl() { "$bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }
