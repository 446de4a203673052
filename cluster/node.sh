#!/usr/bin/env bash
# The node layer of the real cluster (after `make cluster` and cluster/build-node.sh):
# containerd (runc, the reference CNI plugins from var/cluster/bin/cni, the pause image imported
# from bin/pause.oci.tar: no pull) and the kubelet (cgroupfs driver on this cgroup v1 host,
# failCgroupV1: false), registering node NODE (var/cluster/pki/node-name) with the address
# NODE_IP (198.18.37.1) on an interface of its own, sctpnode0 (lib.sh): the kubelet serves
# there (10250), containerd's streaming server stays on 127.0.0.1.
# Pods get addresses of CLUSTER_POD_CIDR's first /24 on the bridge cni0, in network namespaces
# of their own.
#
#   cluster/node.sh          start (says so when already up)
#   cluster/node.sh --down   stop the kubelet, its pods and containerd (cluster/down.sh runs it)
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

nstate="$state/node"
sock="$nstate/containerd/containerd.sock"
pause_version="$(cat "$bin/pause.version" 2>/dev/null || echo 3.10.2)"
pause_image="registry.k8s.io/pause:$pause_version"
subnet="${pod_cidr%.*.*}.0.0/24"
subnet="${CLUSTER_NODE_POD_SUBNET:-$subnet}"
ctr() { "$bin/ctr" --address "$sock" --namespace k8s.io "$@"; }

if [ "${1:-}" = "--down" ]; then
  if alive kubelet && [ "$(api /readyz 2>/dev/null)" = ok ]; then
    # The kubelet tears its pods down itself (CNI DEL: addresses, veths, netns) when they go.
    kubectl delete pods --all --all-namespaces --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
    for _ in $(seq 1 60); do
      [ -z "$(ctr tasks list -q 2>/dev/null)" ] && break
      sleep 0.5
    done
  fi
  stop kubelet
  if alive containerd; then
    for c in $(ctr containers list -q 2>/dev/null); do
      ctr tasks kill -s KILL "$c" >/dev/null 2>&1 || true
      ctr tasks delete -f "$c" >/dev/null 2>&1 || true
    done
  fi
  stop containerd
  # What stays in the kernel: mounts under our state directory, and the bridge.
  grep -o " $nstate/[^ ]*" /proc/mounts 2>/dev/null | sort -r | while read -r m; do umount -l "$m" || true; done || true
  if [ -f "$nstate/cni/net.d/10-sctp-readiness.conflist" ] && ip link show cni0 >/dev/null 2>&1; then
    ip link delete cni0 || true
  fi
  # The node's interface, when this node made it (node.sh records it in $nstate/node-if).
  if [ -f "$nstate/node-if" ]; then
    made="$(cat "$nstate/node-if")"
    ip link show "$made" >/dev/null 2>&1 && ip link delete "$made" && say "removed interface $made"
    rm -f "$nstate/node-if"
  fi
  # An NRI socket a containerd with NRI on left (ours has it off), when nothing listens there.
  if [ -S /run/nri/nri.sock ] && ! ss -Hxl 2>/dev/null | grep -E ' (/var)?/run/nri/nri.sock ' >/dev/null; then
    rm -f /run/nri/nri.sock
    rmdir /run/nri 2>/dev/null || true
  fi
  # The shims' and runc's state directories, when empty (rmdir removes nothing else).
  rmdir /run/containerd/runc/k8s.io /run/containerd/runc /run/containerd/s /run/containerd 2>/dev/null || true
  # The chains the kubelet (KUBE-FIREWALL, canaries, hint) and portmap (CNI-HOSTPORT-*) leave.
  ipt() { "$@" 2>/dev/null || true; }
  for t in iptables ip6tables; do
    command -v "$t" >/dev/null || continue
    ipt "$t" -t filter -D INPUT -j KUBE-FIREWALL
    ipt "$t" -t filter -D OUTPUT -j KUBE-FIREWALL
    ipt "$t" -t filter -F KUBE-FIREWALL
    ipt "$t" -t filter -X KUBE-FIREWALL
    for table in mangle nat filter; do ipt "$t" -t "$table" -X KUBE-KUBELET-CANARY; done
    ipt "$t" -t mangle -X KUBE-IPTABLES-HINT
    ipt "$t" -t nat -D PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT
    ipt "$t" -t nat -D OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT
    ipt "$t" -t nat -D POSTROUTING -m comment --comment "CNI portfwd requiring masquerade" -j CNI-HOSTPORT-MASQ
    for c in CNI-HOSTPORT-DNAT CNI-HOSTPORT-MASQ CNI-HOSTPORT-SETMARK; do
      ipt "$t" -t nat -F "$c"
      ipt "$t" -t nat -X "$c"
    done
  done
  exit 0
fi

for b in containerd containerd-shim-runc-v2 ctr runc kubelet cni/bridge cni/host-local cni/portmap cni/loopback; do
  [ -x "$bin/$b" ] || die "no $bin/$b: run cluster/build-node.sh"
done
[ "$(api /readyz 2>/dev/null)" = ok ] || die "no cluster answers at $server: run make cluster first"
node="$(cat "$pki/node-name")"
# The images built from the release's source (cluster/build-node.sh: pause; cluster/build-images.sh:
# agnhost), imported into containerd's k8s.io namespace: pods find them there and nothing is
# pulled (the specs ask imagePullPolicy IfNotPresent). Idempotent.
import_images() {
  ctr images import --all-platforms "$bin/pause.oci.tar" >/dev/null
  ctr images list -q | grep -x "$pause_image" >/dev/null || die "pause image $pause_image not imported"
  say "imported $pause_image (built from pause.c of $KUBE_VERSION)"
  if [ -f "$bin/agnhost.oci.tar" ] && [ -f "$bin/agnhost.image" ]; then
    local agnhost_image
    agnhost_image="$(cat "$bin/agnhost.image")"
    ctr images import --all-platforms "$bin/agnhost.oci.tar" >/dev/null
    ctr images list -q | grep -x "$agnhost_image" >/dev/null || die "agnhost image $agnhost_image not imported"
    say "imported $agnhost_image (built from test/images/agnhost of $KUBE_VERSION)"
  fi
}

if alive containerd && alive kubelet; then
  import_images
  say "node $node already running"
  exit 0
fi

# The node's address: a veth pair of our own (this kernel has no dummy links), NODE_IP/32 on
# NODE_IF, both ends up so that the link has carrier; nothing is attached to the peer.
mkdir -p "$nstate"
if ! ip -o addr show dev "$node_if" 2>/dev/null | grep " $node_ip/" >/dev/null; then
  if ip -o addr show 2>/dev/null | grep " inet $node_ip/" >/dev/null; then
    die "$node_ip is already on another interface: set CLUSTER_NODE_IP"
  fi
  ip link show "$node_if" >/dev/null 2>&1 && die "interface $node_if exists (not ours?): set CLUSTER_NODE_IF"
  ip link add "$node_if" type veth peer name "${node_if}p"
  echo "$node_if" >"$nstate/node-if"
  ip addr add "$node_ip/32" dev "$node_if"
  ip link set "${node_if}p" up
  ip link set "$node_if" up
  say "node address $node_ip on $node_if"
fi

# Can this process lower its oom_score_adj (CAP_SYS_RESOURCE)? Not in every sandbox.
restrict_oom=false
if ! sh -c 'echo -1 >/proc/self/oom_score_adj' 2>/dev/null; then restrict_oom=true; fi
mkdir -p "$nstate/containerd" "$nstate/cni/net.d" "$nstate/kubelet" "$logs" "$pids"
cat >"$nstate/containerd/config.toml" <<EOF
version = 3
root = "$nstate/containerd/root"
state = "$nstate/containerd/state"

[grpc]
  address = "$sock"

[debug]
  level = "info"

# NRI off: nothing here uses it, and it would put its socket in the host's /run/nri.
[plugins.'io.containerd.nri.v1.nri']
  disable = true

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$pause_image"

[plugins.'io.containerd.grpc.v1.cri']
  # The CRI streaming server (exec, attach, port-forward): the kubelet relays to it.
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

[plugins.'io.containerd.cri.v1.runtime']
  # This machine's root lacks CAP_SYS_RESOURCE: it cannot lower an oom_score_adj (the kubelet
  # asks -998 for sandboxes, and runc init fails with "failed to update
  # /proc/self/oom_score_adj: Permission denied"). Containers get no less than containerd's.
  restrict_oom_score_adj = $restrict_oom
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "$bin/runc"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["$bin/cni"]
    conf_dir = "$nstate/cni/net.d"
EOF
cat >"$nstate/cni/net.d/10-sctp-readiness.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "sctp-readiness",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "$subnet"}]],
               "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$nstate/cni/ipam"}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF

# containerd finds its shim (and the shim runc) on PATH.
export PATH="$bin:$PATH"
start containerd --config "$nstate/containerd/config.toml"
wait_for containerd 30 ctr version
import_images

write_kubeconfig "$nstate/kubelet/kubeconfig" kubelet
cat >"$nstate/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $node_ip
port: $kubelet_port
readOnlyPort: 0
healthzBindAddress: $host
healthzPort: ${CLUSTER_KUBELET_HEALTHZ_PORT:-10248}
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $pki/kubelet-serving.crt
tlsPrivateKeyFile: $pki/kubelet-serving.key
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$sock
imageServiceEndpoint: unix://$sock
resolvConf: /etc/resolv.conf
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
EOF
start kubelet \
  --config="$nstate/kubelet/config.yaml" \
  --kubeconfig="$nstate/kubelet/kubeconfig" \
  --hostname-override="$node" \
  --node-ip="$node_ip" \
  --root-dir="$nstate/kubelet/root" \
  --cert-dir="$nstate/kubelet/pki" \
  --v=2
ready_node() { [ "$(kubectl get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]; }
wait_for kubelet 120 ready_node
say "node $node Ready (kubelet $KUBE_VERSION, containerd $CONTAINERD_VERSION, runc $RUNC_VERSION)"
