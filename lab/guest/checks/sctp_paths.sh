#!/bin/sh
# Every kernel-SCTP check in one boot (a boot costs ~14 s under TCG). Run by the harness in
# /job; writes "PASS|FAIL <check> <detail>" lines to out/results.txt (and stdout), the real
# tools' output to out/golden/, and the probe's reports to out/check-*.json.
#
# Topology: the guest's root namespace is the node (kube-proxy's rules live there); pods are
# network namespaces joined to it by veth pairs: client 10.0.1.2, srv1 10.0.2.2, srv2 10.0.3.2.
# Servers: the project's probe, serving SCTP, TCP and UDP on 8082 and naming itself in replies.
# Service: sctp-guest/sctp-svc port "sctp" -> targetPort 8082 on both servers; its ClusterIP is
# 10.96.0.10:95 (iptables), 10.96.0.11:96 (ipvs), 10.96.0.12:97 (nftables), one mode at a time.

PROBE="python3 -S -m kernel.probe"
RULES="python3 -S /opt/sctp-dashboard/lab/guest/checks/kube_rules.py"
SVC="sctp-guest/sctp-svc:sctp"
EPS="10.0.2.2:8082 10.0.3.2:8082"
G=out/golden
mkdir -p "$G"
: > out/results.txt
failures=0

result() { # STATUS NAME DETAIL
    echo "$1 $2 $3" | tee -a out/results.txt
    echo "$(cut -d' ' -f1 /proc/uptime) $1 $2" >> out/timings.txt
    [ "$1" = PASS ] || failures=$((failures + 1))
}

# expect NAME WANT-REGEX COMMAND...: PASS when the command's output (one line per attempt,
# joined by spaces) matches the extended regex WANT.
expect() {
    name=$1 want=$2
    shift 2
    got=$("$@" 2>&1 | tr '\n' ' ' | sed 's/ *$//')
    if echo "$got" | grep -Eq "^($want)\$"; then
        result PASS "$name" "$got"
    else
        result FAIL "$name" "got '$got', want /$want/"
    fi
}

wait_for() { # FILE: a server's ready file, up to 30 s
    i=0
    while [ ! -e "$1" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    [ -e "$1" ]
}

sctp_in_lsmod() { lsmod | grep -Eq '^sctp[[:space:]]'; }

# ---- 1. module state: nothing loads sctp.ko until a socket does; the probe does not either
lsmod > "$G/lsmod-before.txt"
if sctp_in_lsmod; then result FAIL module-not-loaded-at-boot "sctp listed before any socket"
else result PASS module-not-loaded-at-boot "lsmod has no sctp"; fi

$PROBE check --json > out/check-before.json
echo "probe check exit $?" > out/check-before.exit
if sctp_in_lsmod; then result FAIL probe-check-does-not-load-sctp "sctp loaded by the check"
else result PASS probe-check-does-not-load-sctp "still not loaded after probe check"; fi

python3 -S -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132).close()'
lsmod > "$G/lsmod-after.txt"
if sctp_in_lsmod; then result PASS socket-loads-sctp "$(grep -E '^sctp ' "$G/lsmod-after.txt" | tr -s ' ')"
else result FAIL socket-loads-sctp "no sctp in lsmod after opening a socket"; fi

$PROBE check --json > out/check-after.json
echo "probe check exit $?" > out/check-after.exit
$PROBE check > out/check-after.txt

# ---- 2. loopback echo
$PROBE serve --port 7000 --ready-file /tmp/lo.ready --name lo > /tmp/lo.log 2>&1 &
lo_pid=$!
wait_for /tmp/lo.ready
expect loopback-echo "OK from lo" $PROBE connect 127.0.0.1:7000 --timeout 5s
kill $lo_pid; wait $lo_pid

# ---- 3. pods in network namespaces, the root namespace routing between them
sysctl -qw net.ipv4.ip_forward=1
n=1
for ns in client srv1 srv2; do
    ip netns add $ns
    ip link add "veth-$ns" type veth peer name eth0 netns $ns
    ip addr add "10.0.$n.1/24" dev "veth-$ns"
    ip link set "veth-$ns" up
    ip -n $ns addr add "10.0.$n.2/24" dev eth0
    ip -n $ns link set lo up
    ip -n $ns link set eth0 up
    ip -n $ns route add default via "10.0.$n.1"
    n=$((n + 1))
done
for ns in srv1 srv2; do
    ip netns exec $ns $PROBE serve --port 8082 --protocols sctp,tcp,udp \
        --ready-file "/tmp/$ns.ready" --name $ns > "/tmp/$ns.log" 2>&1 &
done
wait_for /tmp/srv1.ready && wait_for /tmp/srv2.ready
C="ip netns exec client $PROBE connect"
expect pod-to-pod-srv1 "OK from srv1" $C 10.0.2.2:8082 --timeout 5s
expect pod-to-pod-srv2 "OK from srv2" $C 10.0.3.2:8082 --timeout 5s

# Several connections through a VIP must reach both endpoints.
BOTH="(OK from srv[12] )*OK from srv[12]"
both_seen() { # NAME OUTPUT-FILE
    if grep -q srv1 "$2" && grep -q srv2 "$2"; then result PASS "$1" "both endpoints answered"
    else result FAIL "$1" "only $(sort -u "$2" | tr '\n' ' ')"; fi
}

# ---- 4. iptables mode: KUBE-SERVICES -> KUBE-SVC-… -> KUBE-SEP-… with -p sctp, DNAT in KUBE-SEP
# shellcheck disable=SC2086
$RULES iptables 10.96.0.10 95 "$SVC" $EPS > /tmp/iptables.rules
iptables-restore --noflush < /tmp/iptables.rules
$C 10.96.0.10:95 --count 16 --timeout 5s > /tmp/iptables.hits 2>&1
expect service-iptables "$BOTH" cat /tmp/iptables.hits
both_seen service-iptables-balances /tmp/iptables.hits
iptables-save > "$G/iptables-save.txt"
$PROBE check --json > out/check-iptables.json
grep -c sctp /proc/net/nf_conntrack > out/conntrack-sctp-count.txt 2>/dev/null
grep sctp /proc/net/nf_conntrack > "$G/nf_conntrack-sctp.txt" 2>/dev/null
iptables -t nat -F && iptables -t nat -X
nft flush ruleset

# ---- 5. ipvs mode: VIP on the kube-ipvs0 dummy, SCTP virtual service, masquerading reals
ip link add kube-ipvs0 type dummy
ip addr add 10.96.0.11/32 dev kube-ipvs0
ipvsadm -A --sctp-service 10.96.0.11:96 -s rr
for ep in $EPS; do ipvsadm -a --sctp-service 10.96.0.11:96 -r "$ep" -m -w 1; done
$C 10.96.0.11:96 --count 6 --timeout 5s > /tmp/ipvs.hits 2>&1
expect service-ipvs "$BOTH" cat /tmp/ipvs.hits
both_seen service-ipvs-balances /tmp/ipvs.hits
ipvsadm -Ln > "$G/ipvsadm-Ln.txt"
ipvsadm -Lnc > "$G/ipvsadm-Lnc.txt"
$PROBE check --json > out/check-ipvs.json
ipvsadm -C
ip link del kube-ipvs0

# ---- 6. nftables mode: table ip kube-proxy, service-ips map keyed ipv4_addr . inet_proto . inet_service
# shellcheck disable=SC2086
$RULES nftables 10.96.0.12 97 "$SVC" $EPS > /tmp/nft.rules
nft -f /tmp/nft.rules
$C 10.96.0.12:97 --count 16 --timeout 5s > /tmp/nft.hits 2>&1
expect service-nftables "$BOTH" cat /tmp/nft.hits
both_seen service-nftables-balances /tmp/nft.hits
nft list ruleset > "$G/nft-list-ruleset.txt"
$PROBE check --json > out/check-nftables.json
nft delete table ip kube-proxy

# ---- 7. a NetworkPolicy-like filter in srv1: ingress allows only SCTP to 8082
expect netpol-before-tcp "OK from srv1" $C 10.0.2.2:8082 --protocol tcp --timeout 3s
expect netpol-before-udp "OK from srv1" $C 10.0.2.2:8082 --protocol udp --timeout 3s
ip netns exec srv1 sh -c '
    iptables -N SCTP-NETPOL-INGRESS
    iptables -A INPUT -i eth0 -j SCTP-NETPOL-INGRESS
    iptables -A SCTP-NETPOL-INGRESS -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT
    iptables -A SCTP-NETPOL-INGRESS -p sctp -m sctp --dport 8082 -j ACCEPT
    iptables -A SCTP-NETPOL-INGRESS -j DROP
    iptables-save' > "$G/netpol-iptables-save.txt"
expect netpol-allows-sctp "OK from srv1" $C 10.0.2.2:8082 --protocol sctp --timeout 5s
expect netpol-blocks-tcp "TIMEOUT" $C 10.0.2.2:8082 --protocol tcp --timeout 3s
expect netpol-blocks-udp "TIMEOUT" $C 10.0.2.2:8082 --protocol udp --timeout 3s
expect netpol-other-pod-tcp "OK from srv2" $C 10.0.3.2:8082 --protocol tcp --timeout 3s

for ns in srv1 srv2; do pkill -TERM -f "name $ns" ; done
wait
lsmod > "$G/lsmod-end.txt"
uname -r > out/kernel.txt
echo "guest checks: $failures failed"
[ $failures -eq 0 ]
