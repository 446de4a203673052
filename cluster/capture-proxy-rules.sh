#!/usr/bin/env bash
# Captures the rules the real kube-proxy writes for an SCTP Service, as test fixtures
# (tests/fixtures/realcluster/), in each mode given (default: iptables nftables). Needs the
# cluster up (make cluster); starts kube-proxy in each mode in turn (cluster/kube-proxy.sh).
#
# No pods: Services without selectors and EndpointSlices written by hand (endpoints in the
# pod CIDR that nothing answers on: no traffic is sent, kube-proxy only writes rules):
#   sctp-capture/tcp-svc   ClusterIP 10.0.0.80 port 8080/TCP  -> 10.88.0.10:8080
#   sctp-capture/sctp-svc  ClusterIP 10.0.0.95 port 9595/SCTP -> 10.88.0.11:9595
# For each mode two captures: kube-proxy-MODE-tcp.txt with the TCP Service alone, then
# kube-proxy-MODE-sctp.txt with both (filtered to kube-proxy's own chains or table).
#
#   cluster/capture-proxy-rules.sh [iptables] [nftables]
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

out="${CAPTURE_DIR:-$root/tests/fixtures/realcluster}"
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(iptables nftables)
ns=sctp-capture
mkdir -p "$out"

service() { # name protocol clusterIP port endpoint-ip
  kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: $1, namespace: $ns}
spec:
  clusterIP: $3
  ports: [{name: $(echo "$2" | tr '[:upper:]' '[:lower:]'), protocol: $2, port: $4, targetPort: $4}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: $1-manual
  namespace: $ns
  labels:
    kubernetes.io/service-name: $1
    endpointslice.kubernetes.io/managed-by: capture-proxy-rules.sh
addressType: IPv4
ports: [{name: $(echo "$2" | tr '[:upper:]' '[:lower:]'), protocol: $2, port: $4}]
endpoints: [{addresses: ["$5"], conditions: {ready: true}}]
EOF
}

rules() { # mode: kube-proxy's rules only
  case "$1" in
    iptables) iptables-save -t nat | grep -E '^\*nat|^COMMIT|KUBE-' ;;
    nftables) nft list table ip kube-proxy ;;
  esac
}

# wait_rules MODE PATTERN: until kube-proxy's rules hold PATTERN (30 s).
wait_rules() {
  local i
  for i in $(seq 1 150); do
    if rules "$1" 2>/dev/null | grep -E "$2" >/dev/null; then return 0; fi
    sleep 0.2
  done
  die "kube-proxy ($1) wrote no rule matching '$2' within 30s (log: ${logs#"$root"/}/kube-proxy.log)"
}

capture() { # mode file what
  local tool
  case "$1" in
    iptables) tool="$(iptables --version)" ;;
    nftables) tool="$(nft --version)" ;;
  esac
  {
    echo "# Rules written by the real kube-proxy $KUBE_VERSION (upstream's, built from the Go"
    echo "# modules k8s.io/kubernetes@$KUBE_VERSION by cluster/build.sh), mode $1, on Linux"
    echo "# $(uname -r), $tool, against the real cluster of \`make cluster\`."
    echo "# Captured by cluster/capture-proxy-rules.sh on $(date -u +%Y-%m-%d): $3."
    case "$1" in
      iptables) echo "# Command: iptables-save -t nat, filtered to the *nat header, COMMIT and KUBE-* lines." ;;
      nftables) echo "# Command: nft list table ip kube-proxy." ;;
    esac
    rules "$1"
  } >"$out/$2"
  say "captured $(wc -l <"$out/$2") lines into ${out#"$root"/}/$2"
}

for mode in "${modes[@]}"; do
  kubectl delete namespace "$ns" --ignore-not-found --wait=true >/dev/null
  KUBE_PROXY_MODE="$mode" "$here/kube-proxy.sh"
  kubectl create namespace "$ns" >/dev/null
  service tcp-svc TCP 10.0.0.80 8080 10.88.0.10
  case "$mode" in
    iptables) wait_rules "$mode" '10\.88\.0\.10:8080' ;;
    nftables) wait_rules "$mode" '10\.88\.0\.10 \. 8080' ;; # the DNAT, not a no-endpoint element
  esac
  capture "$mode" "kube-proxy-$mode-tcp.txt" \
    "the TCP Service $ns/tcp-svc (10.0.0.80:8080/TCP -> 10.88.0.10:8080) alone"
  service sctp-svc SCTP 10.0.0.95 9595 10.88.0.11
  case "$mode" in
    iptables) wait_rules "$mode" '10\.88\.0\.11:9595' ;;
    nftables) wait_rules "$mode" '10\.88\.0\.11 \. 9595' ;;
  esac
  capture "$mode" "kube-proxy-$mode-sctp.txt" \
    "the SCTP Service $ns/sctp-svc (10.0.0.95:9595/SCTP -> 10.88.0.11:9595) beside $ns/tcp-svc"
  kubectl delete namespace "$ns" --wait=true >/dev/null
done
