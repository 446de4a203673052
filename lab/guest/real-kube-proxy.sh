#!/bin/sh
# Runs in the qemu guest (lab/guest/real_proxy.py boots it with a network and puts this script,
# upstream's kube-proxy binary, its kubeconfig and one config per mode into /job). The guest's
# root namespace is the node; the API server is the host's, reached at 10.0.2.2 (qemu's
# user-mode network maps it to the host's 127.0.0.1).
#
# Pods are network namespaces joined by veth pairs: client 10.88.1.2, srv 10.88.0.11 (the
# endpoint of the SCTP Service in the EndpointSlice the host wrote). For each mode in $MODES:
# start kube-proxy, wait until its rules carry the endpoint, open a real SCTP association
# client -> ClusterIP $VIP:$PORT -> srv (the probe's connect: INIT, DATA, the reply, SHUTDOWN),
# record what the kernel saw (conntrack, ipvs connections), capture the rules, stop it and run
# `kube-proxy --cleanup`, which must leave nothing of the mode but what it keeps by design
# (out/after-cleanup-MODE.txt lists what the mode left: KUBE-* chains and rules in iptables and
# ip6tables, the kube-proxy nft tables, IPVS virtual services, KUBE-* ipsets, the kube-ipvs0
# link). Lines "PASS|FAIL <check> <detail>" go to out/results.txt, timings
# (guest uptime) to out/timings.txt, kube-proxy's rules to out/kube-proxy-MODE-sctp.txt.
#
# Env: MODES ("iptables ipvs nftables"), VIP, PORT, ENDPOINT (ip), NODE_IP (10.0.2.15).

PROBE="python3 -S -m kernel.probe"
KP=/job/kube-proxy
: "${MODES:=iptables ipvs nftables}" "${NODE_IP:=10.0.2.15}"
: > out/results.txt
failures=0

now() { cut -d' ' -f1 /proc/uptime; }
result() { # STATUS NAME DETAIL
    echo "$1 $2 $3" | tee -a out/results.txt
    [ "$1" = PASS ] || failures=$((failures + 1))
}
mark() { echo "$(now) $1" >> out/timings.txt; }

mark job-start
uname -r > out/uname.txt
# ---- the node's network: qemu's user-mode NIC, no default route (only the host is reachable)
modprobe virtio_net
i=0
while ! ip link show eth0 > /dev/null 2>&1 && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
ip link set eth0 up
ip addr add "$NODE_IP/24" dev eth0
sysctl -qw net.ipv4.ip_forward=1
modprobe sctp

# ---- pods
ip netns add client
ip link add veth-client type veth peer name eth0 netns client
ip addr add 10.88.1.1/24 dev veth-client
ip -n client addr add 10.88.1.2/24 dev eth0
ip netns add srv
ip link add veth-srv type veth peer name eth0 netns srv
ip addr add 10.88.0.9/29 dev veth-srv
ip -n srv addr add "$ENDPOINT/29" dev eth0
for ns in client srv; do
    ip link set "veth-$ns" up
    ip -n $ns link set lo up
    ip -n $ns link set eth0 up
done
ip -n client route add default via 10.88.1.1
ip -n srv route add default via 10.88.0.9
ip netns exec srv $PROBE serve --port "$PORT" --protocols sctp --ready-file /tmp/srv.ready \
    --name srv > /tmp/srv.log 2>&1 &
srv_pid=$!
i=0
while [ ! -e /tmp/srv.ready ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
C="ip netns exec client $PROBE connect"
got=$($C "$ENDPOINT:$PORT" --timeout 5s 2>&1)
if [ "$got" = "OK from srv" ]; then result PASS pod-to-pod "$got"
else result FAIL pod-to-pod "got '$got'"; fi
# No kube-proxy yet: the ClusterIP leads nowhere.
got=$($C "$VIP:$PORT" --timeout 2s 2>&1)
case "$got" in
    "OK from srv") result FAIL no-proxy-no-service "the ClusterIP answered before kube-proxy ran" ;;
    *) result PASS no-proxy-no-service "$got" ;;
esac
mark pods-ready

rules() { # MODE: kube-proxy's own rules
    case "$1" in
        iptables) iptables-save -t nat | grep -E '^\*nat|^COMMIT|KUBE-' ;;
        ipvs) ipvsadm -Ln ;;
        nftables) nft list table ip kube-proxy ;;
    esac
}
endpoint_pattern() {
    case "$1" in
        iptables) echo "--to-destination $ENDPOINT:$PORT" ;;
        ipvs) echo "-> $ENDPOINT:$PORT" ;;
        nftables) echo "$ENDPOINT . $PORT" ;;
    esac
}
tracked() { # the SCTP conntrack entries client -> ClusterIP, DNATed to the endpoint
    grep -E "sctp .*dst=$VIP sport=[0-9]+ dport=$PORT .*src=$ENDPOINT " /proc/net/nf_conntrack 2>/dev/null
}
leftovers() { # what any mode of kube-proxy writes, one line per leftover (nothing: clean)
    for t in iptables ip6tables; do
        "$t-save" 2>/dev/null | sed -n "s/^:\(KUBE-[^ ]*\).*/$t chain \1/p"
        "$t-save" 2>/dev/null | grep -E '^-A .*KUBE-' | sed "s/^/$t rule /"
    done
    nft list tables 2>/dev/null | grep -E ' kube-proxy$' | sed 's/^/nft /'
    ipvsadm -Ln 2>/dev/null | grep -E '^(TCP|UDP|SCTP) ' | sed 's/^/ipvs service /'
    ipset list -n 2>/dev/null | grep '^KUBE-' | sed 's/^/ipset /'
    ip link show kube-ipvs0 > /dev/null 2>&1 && echo "link kube-ipvs0"
}
proxy_mode() {
    python3 -S -c 'import urllib.request as u; print(u.urlopen("http://127.0.0.1:10249/proxyMode", timeout=5).read().decode())' 2>&1
}

for mode in $MODES; do
    mark "$mode-start"
    leftovers > "/tmp/before-$mode.txt"
    $KP --config="/job/kube-proxy-$mode.yaml" --v=2 > "out/kube-proxy-$mode.log" 2>&1 &
    kp=$!
    want=$(endpoint_pattern "$mode")
    i=0
    while ! rules "$mode" 2>/dev/null | grep -qF -- "$want"; do
        if ! kill -0 $kp 2>/dev/null || [ $i -ge 1800 ]; then break; fi
        sleep 0.1
        i=$((i + 1))
    done
    if rules "$mode" 2>/dev/null | grep -qF -- "$want"; then
        mark "$mode-rules"
        result PASS "$mode-rules" "kube-proxy wrote '$want'"
    else
        result FAIL "$mode-rules" "no '$want' in kube-proxy's rules (alive: $(kill -0 $kp 2>/dev/null && echo yes || echo no))"
    fi
    got=$(proxy_mode)
    if [ "$got" = "$mode" ]; then result PASS "$mode-proxyMode" "$got"
    else result FAIL "$mode-proxyMode" "got '$got'"; fi
    # The association: the probe's INIT goes to the ClusterIP; the reply names the endpoint.
    tracked > /tmp/conntrack-before.txt
    got=$($C "$VIP:$PORT" --timeout 10s 2>&1)
    mark "$mode-association"
    if [ "$got" = "OK from srv" ]; then result PASS "$mode-association" "$VIP:$PORT -> $got"
    else result FAIL "$mode-association" "got '$got'"; fi
    # What the kernel tracked for it: an SCTP conntrack entry to the ClusterIP, DNATed to the
    # endpoint (iptables, nftables); an IPVS SCTP connection (ipvs).
    # Only entries that this association made (an earlier mode's may not have expired yet).
    tracked | grep -vxFf /tmp/conntrack-before.txt > "out/conntrack-$mode.txt"
    if [ "$mode" = ipvs ]; then
        ipvsadm -Lnc > "out/ipvs-connections.txt"
        if grep -Eq "^SCTP .* $VIP:$PORT +$ENDPOINT:$PORT" out/ipvs-connections.txt; then
            result PASS ipvs-connection "$(grep -E "^SCTP .* $VIP:$PORT" out/ipvs-connections.txt | head -n1 | tr -s ' ')"
        else result FAIL ipvs-connection "no SCTP connection to $VIP:$PORT in ipvsadm -Lnc"; fi
    elif [ -s "out/conntrack-$mode.txt" ]; then
        result PASS "$mode-conntrack" "$(head -n1 "out/conntrack-$mode.txt" | tr -s ' ')"
    else
        result FAIL "$mode-conntrack" "no SCTP conntrack entry $VIP:$PORT -> $ENDPOINT"
    fi
    {
        echo "# $(${KP} --version) ($mode), $(uname -r), $(case $mode in iptables) iptables --version ;; ipvs) ipvsadm --version 2>&1 ;; nftables) nft --version ;; esac)"
        rules "$mode"
    } > "out/kube-proxy-$mode-sctp.txt"
    if [ "$mode" = ipvs ]; then
        ipset list > out/ipset-ipvs.txt 2>&1
        iptables-save -t nat | grep -E '^\*nat|^COMMIT|KUBE-' > out/iptables-of-ipvs.txt
    fi
    kill $kp 2>/dev/null
    wait $kp
    mark "$mode-stopped"
    $KP --cleanup --v=2 > "out/kube-proxy-$mode-cleanup.log" 2>&1
    mark "$mode-cleaned"
    # What this mode left (an earlier mode's leftovers were there before it started).
    leftovers | grep -vxFf "/tmp/before-$mode.txt" > "out/after-cleanup-$mode.txt"
    # What --cleanup keeps by upstream's design, named: the kubelet's KUBE-FIREWALL (kube-proxy
    # writes a duplicate and "do[es] not delete them in CleanupLeftovers",
    # pkg/proxy/iptables/proxier.go iptablesKubeletJumpChains), and the IPv6 ipsets of the ipvs
    # mode (KUBE-6-*, pkg/proxy/ipvs/ipset.go NewIPSet; cleanup.go destroys ipsetInfo's names,
    # the IPv4 ones, only).
    kept='^(ip6?tables chain KUBE-FIREWALL|ip6?tables rule -A (INPUT|OUTPUT) -j KUBE-FIREWALL|ip6?tables rule -A KUBE-FIREWALL .*|ipset KUBE-6-.*)$'
    unexpected=$(grep -vE "$kept" "out/after-cleanup-$mode.txt")
    if rules "$mode" 2>/dev/null | grep -qF -- "$want"; then
        result FAIL "$mode-cleanup" "kube-proxy --cleanup left '$want'"
    elif [ -n "$unexpected" ]; then
        result FAIL "$mode-cleanup" "left: $(echo "$unexpected" | paste -sd';')"
    else
        result PASS "$mode-cleanup" "nothing of kube-proxy left but what --cleanup keeps by design: $(grep -cE "$kept" "out/after-cleanup-$mode.txt") lines (KUBE-FIREWALL, KUBE-6-* ipsets)"
    fi
done
kill $srv_pid
wait $srv_pid
mark job-end
exit $failures
