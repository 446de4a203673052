#!/usr/bin/env bash
# Makes the real cluster's certificates and keys with openssl, in var/cluster/pki/ (kept until
# `make cluster-down`; run again, it makes only what is missing):
#   ca.{crt,key}           the cluster CA: signs every certificate here, and the kubelet's CSRs
#   apiserver.{crt,key}    kube-apiserver serving: 127.0.0.1, localhost, the Service IP 10.0.0.1
#                          (CLUSTER_SERVICE_IP) and kubernetes.default.svc...
#   admin                  client, CN kubernetes-admin, O system:masters (var/cluster/kubeconfig)
#   apiserver-kubelet-client  the apiserver's client to kubelets (O system:masters)
#   kube-controller-manager, kube-scheduler, kube-proxy, kubelet (system:node:NODE, O system:nodes)
#   kubelet-serving        the kubelet's serving certificate: 127.0.0.1 and the node IP
#   sa.{key,pub}           the service-account token signing key pair
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
pki="${CLUSTER_PKI:-$root/var/cluster/pki}"
service_ip="${CLUSTER_SERVICE_IP:-10.0.0.1}"
# The node's address (cluster/lib.sh): the kubelet serves on it.
node_ip="${CLUSTER_NODE_IP:-198.18.37.1}"
node="${CLUSTER_NODE_NAME:-$(hostname | tr '[:upper:]' '[:lower:]')}"
days=3650

mkdir -p "$pki"
chmod 700 "$pki"
cd "$pki"

key() { # name: an RSA key, readable only by its owner
  [ -f "$1.key" ] || (umask 077 && openssl genrsa -out "$1.key" 2048 2>/dev/null)
}

if ! [ -f ca.crt ]; then
  key ca
  openssl req -x509 -new -key ca.key -days "$days" -subj "/CN=sctp-readiness-cluster-ca" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" -out ca.crt
fi

# cert NAME SUBJECT EXTENDED-USAGE [SUBJECT-ALT-NAMES]
cert() {
  local name=$1 subj=$2 usage=$3 san=${4:-}
  [ -f "$name.crt" ] && return 0
  key "$name"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$usage"
    [ -n "$san" ] && echo "subjectAltName=$san"
  } >"$name.ext"
  openssl req -new -key "$name.key" -subj "$subj" -out "$name.csr"
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" \
    -extfile "$name.ext" -out "$name.crt" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}

cert apiserver "/CN=kube-apiserver" serverAuth \
  "IP:127.0.0.1,IP:$service_ip,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert admin "/O=system:masters/CN=kubernetes-admin" clientAuth
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
cert kube-controller-manager "/CN=system:kube-controller-manager" clientAuth
cert kube-scheduler "/CN=system:kube-scheduler" clientAuth
cert kube-proxy "/CN=system:kube-proxy" clientAuth
cert kubelet "/O=system:nodes/CN=system:node:$node" clientAuth
cert kubelet-serving "/O=system:nodes/CN=system:node:$node" serverAuth "IP:127.0.0.1,IP:$node_ip,DNS:localhost,DNS:$node"

if ! [ -f sa.pub ]; then
  key sa
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
fi
echo "$node" >node-name
