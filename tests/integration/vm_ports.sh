#!/usr/bin/env bash
# vm_ports.sh IMPL_A IMPL_B — VM ports on tap: weftd as the VMs' first-hop
# router, between VMs of one host, between VMs of two hosts through the
# tunnel, and between a host and its VMs. Both implementations are weftd.
#
#   netns -vm1         netns -vm2                          netns -vm3
#   10.242.1.11        10.242.1.12                         10.242.2.13
#   fd00:242:1::11     fd00:242:1::12                      fd00:242:2::13
#     | tap vp<ID>1      | tap vp<ID>2                       | tap vp<ID>3
#  +--+------------------+--------+                +---------+---------------+
#  | weftd wg<ID>a  10.241.0.1    |  -- tunnel --  | weftd wg<ID>b 10.241.0.2 |
#  |  peer B: + 10.242.2.0/24,    |                |  peer A: + 10.242.1.0/24,|
#  |          fd00:242:2::/64     |                |          fd00:242:1::/64 |
#  +--- ve-a 192.168.241.1 -------+---- veth ------+--- ve-b 192.168.241.2 ---+
#
# Checks: ping v4/v6 VM1<->VM2 (same host) and VM1<->VM3 (two hosts), host A
# <-> VM1 through A's TUN; the VM kernel's neighbour entries for the gateway
# are REACHABLE with the router MAC; ndisc6/rdisc6 answers; the RA's default
# route and MTU; iperf3 VM1 -> VM3; a spoofed source and malformed NDP are
# dropped and counted in `weft port list --json`.
. "$(dirname "$0")/lib.sh"
lib_init "$@"
need_cmd jq
need_cmd python3
is_weftd "$IMPL_A" && is_weftd "$IMPL_B" || skip "VM ports are weftd's"
need_weft

ROUTER_MAC=02:77:65:66:74:01
ROUTER_LL=fe80::77:65ff:fe66:7401
GW4=169.254.1.1

make_hosts
setup_pair 51820 51821 4
nswg "$NS_A" set "$IF_A" peer "$PUB_b" allowed-ips "$IN4_B/32,$IN6_B/128,10.242.2.0/24,fd00:242:2::/64"
nswg "$NS_B" set "$IF_B" peer "$PUB_a" allowed-ips "$IN4_A/32,$IN6_A/128,10.242.1.0/24,fd00:242:1::/64"
# Host A reaches its own VMs through its TUN.
ip -n "$NS_A" route add 10.242.1.0/24 dev "$IF_A"
ip -n "$NS_A" -6 route add fd00:242:1::/64 dev "$IF_A"

# vm N HOST_IF HOST_NS V4 V6 MAC: a tap port on HOST_IF (its netdev with
# MAC and the MTU from weftd) moved into namespace -vmN, configured as a VM
# would be: /32 and /128, default
# routes through the router (IPv4 by the gateway; IPv6 learnt from the RA).
vm() {
	local n=$1 ifn=$2 v4=$4 v6=$5 mac=$6 tap=vp${RUN_ID}$1 ns
	new_ns "vm$n"
	ns=$(ns_name "vm$n")
	weft -i "$ifn" port add "$tap" tap mac "$mac" address "$v4/32" address "$v6/128" mtu 1420 ||
		fail "weft port add $tap: $ERR"
	# The tap comes with the port's VM MAC and MTU: nothing to set by hand.
	[[ $(ip -n "$3" -o link show "$tap") == *"link/ether $mac "* ]] ||
		fail "$tap does not have the port's MAC $mac: $(ip -n "$3" -o link show "$tap")"
	ip -n "$3" link set "$tap" netns "$ns" || fail "moving $tap into $ns"
	ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$tap.accept_ra=1"
	ip -n "$ns" addr add "$v4/32" dev "$tap"
	ip -n "$ns" addr add "$v6/128" dev "$tap" nodad
	ip -n "$ns" link set "$tap" up
	ip -n "$ns" route add "$GW4" dev "$tap"
	ip -n "$ns" route add default via "$GW4" dev "$tap"
	printf -v "VM${n}_NS" '%s' "$ns"
	printf -v "VM${n}_TAP" '%s' "$tap"
}
vm 1 "$IF_A" "$NS_A" 10.242.1.11 fd00:242:1::11 52:54:00:42:01:11
vm 2 "$IF_A" "$NS_A" 10.242.1.12 fd00:242:1::12 52:54:00:42:01:12
vm 3 "$IF_B" "$NS_B" 10.242.2.13 fd00:242:2::13 52:54:00:42:02:13

step "the RA gave each VM a default route through the router, and the MTU"
for n in 1 2 3; do
	ns=VM${n}_NS tap=VM${n}_TAP
	wait_for 10 sh -c "ip -n ${!ns} -6 route show default | grep -q 'via $ROUTER_LL'" ||
		fail "vm$n: no IPv6 default route via $ROUTER_LL: $(ip -n "${!ns}" -6 route show default)"
done
# One solicitation a second up to the hang guard: the answer counts, not its speed.
out=$(ip netns exec "$VM1_NS" timeout $((HANG_SECS + 5)) rdisc6 -1 -r "$HANG_SECS" "$VM1_TAP") || fail "rdisc6 got no RA"
grep -q "MTU *: *1420" <<<"$out" || fail "rdisc6: no MTU 1420 in the RA: $out"
grep -qi "from $ROUTER_LL" <<<"$out" || fail "rdisc6: RA not from $ROUTER_LL: $out"

step "ping between the VMs of one host, IPv4 and IPv6"
ping_ok "$VM1_NS" 10.242.1.12 5 || fail "vm1 -> vm2 IPv4"
ping_ok "$VM2_NS" 10.242.1.11 5 || fail "vm2 -> vm1 IPv4"
ping_ok "$VM1_NS" fd00:242:1::12 5 || fail "vm1 -> vm2 IPv6"
ping_ok "$VM2_NS" fd00:242:1::11 5 || fail "vm2 -> vm1 IPv6"

step "ping between VMs on two hosts, through the tunnel"
ping_within "$VM1_NS" 10.242.2.13 3 10 || fail "vm1 -> vm3 IPv4"
ping_ok "$VM3_NS" 10.242.1.11 5 || fail "vm3 -> vm1 IPv4"
ping_ok "$VM1_NS" fd00:242:2::13 5 || fail "vm1 -> vm3 IPv6"
ping_ok "$VM3_NS" fd00:242:1::12 5 || fail "vm3 -> vm2 IPv6"

step "host A and its VM, through A's TUN"
ping_ok "$NS_A" 10.242.1.11 5 || fail "host A -> vm1 IPv4"
ping_ok "$VM1_NS" "$IN4_A" 5 || fail "vm1 -> host A IPv4"
ping_ok "$NS_A" fd00:242:1::11 5 || fail "host A -> vm1 IPv6"

step "the VMs' kernels hold the router as a REACHABLE neighbour"
ip netns exec "$VM1_NS" ping -n -c1 -W1 10.242.1.12 >/dev/null
ip netns exec "$VM1_NS" ping -n -c1 -W1 fd00:242:1::12 >/dev/null
n4=$(ip -n "$VM1_NS" neigh show "$GW4" dev "$VM1_TAP")
grep -q "lladdr $ROUTER_MAC .*REACHABLE" <<<"$n4" || fail "vm1 neighbour $GW4: '$n4'"
n6=$(ip -n "$VM1_NS" -6 neigh show "$ROUTER_LL" dev "$VM1_TAP")
grep -q "lladdr $ROUTER_MAC .*\(REACHABLE\|router\)" <<<"$n6" || fail "vm1 neighbour $ROUTER_LL: '$n6'"
out=$(ip netns exec "$VM1_NS" timeout $((HANG_SECS + 5)) ndisc6 -1 -r "$HANG_SECS" -n fd00:242:1::12 "$VM1_TAP") || fail "ndisc6 got no NA: $out"
grep -qi "$ROUTER_MAC" <<<"$out" || fail "ndisc6: the NA does not carry $ROUTER_MAC: $out"

step "the VM pings its router: the gateway and the router's link-local address answer"
# No host has these addresses: only weft's responder can answer (ndp/echo.c).
ping_ok "$VM1_NS" "$GW4" 3 || fail "vm1 -> gateway $GW4: no echo reply"
ping_ok "$VM1_NS" "$GW4" 2 -s 1372 || fail "vm1 -> gateway $GW4: no echo reply to 1400 bytes"
ping_ok "$VM1_NS" "$ROUTER_LL%$VM1_TAP" 3 || fail "vm1 -> router $ROUTER_LL: no echo reply"
ping_ok "$VM3_NS" "$GW4" 3 || fail "vm3 -> gateway $GW4: no echo reply"

# iperf VM_FROM VM_TO ADDR: a 3 s TCP transfer must complete.
iperf() {
	local from=VM$1_NS to=VM$2_NS gbps
	bg ip netns exec "${!to}" iperf3 -s -1 -B "$3"
	wait_for 5 ip netns exec "${!to}" ss -ltn "sport = :5201" || fail "iperf3 server did not start"
	ip netns exec "${!from}" timeout 20 iperf3 -c "$3" -t 3 -J >"$WORK/iperf.json" ||
		fail "iperf3 vm$1 -> vm$2 failed"
	gbps=$(jq '.end.sum_received.bits_per_second / 1e9' "$WORK/iperf.json")
	log "vm$1 -> vm$2: $gbps Gbit/s"
	wait_for 5 sh -c "! ip netns exec ${!to} ss -ltn 'sport = :5201' | grep -q LISTEN"
}
step "iperf3 between VMs: on one host, and across the tunnel"
iperf 1 2 10.242.1.12
iperf 1 3 10.242.2.13
iperf 3 1 10.242.1.11

# port_counter IFNAME PORT KEY: one counter of `weft port list --json`.
port_counter() {
	weft -i "$1" port list --json || fail "weft port list: $ERR"
	jq -r --arg p "$2" --arg k "$3" '.[] | select(.name == $p) | .[$k] // .counters[$k]' <<<"$OUT"
}

step "a spoofed source is dropped and counted"
s0=$(port_counter "$IF_A" "$VM1_TAP" drop_spoofed_source)
ip -n "$VM1_NS" addr add 10.242.1.99/32 dev "$VM1_TAP"
ping_none "$VM1_NS" 10.242.1.12 5 -I 10.242.1.99 || fail "a ping from an unregistered source was answered"
s1=$(port_counter "$IF_A" "$VM1_TAP" drop_spoofed_source)
((s1 - s0 >= 5)) || fail "drop_spoofed_source grew by $((s1 - s0)), expected >= 5"

step "malformed neighbour solicitations are dropped and counted"
d0=$(port_counter "$IF_A" "$VM1_TAP" ndp_drops)
ip netns exec "$VM1_NS" python3 "$(dirname "$0")/../tools/ndp_send.py" "$VM1_TAP" 52:54:00:42:01:11 \
	fd00:242:1::11 fd00:242:1::12 --hop-limit 64 --count 3 || fail "ndp_send.py"
ip netns exec "$VM1_NS" python3 "$(dirname "$0")/../tools/ndp_send.py" "$VM1_TAP" 52:54:00:42:01:11 \
	fd00:242:1::11 fd00:242:1::12 --bad-checksum --count 3 || fail "ndp_send.py"
wait_for 3 test "$(port_counter "$IF_A" "$VM1_TAP" ndp_drops)" -ge $((d0 + 6)) ||
	fail "ndp_drops grew by $(($(port_counter "$IF_A" "$VM1_TAP" ndp_drops) - d0)), expected 6"

step "removing a port takes its VM off the network"
weft -i "$IF_A" port del "$VM2_TAP" || fail "weft port del: $ERR"
ping_none "$VM1_NS" 10.242.1.12 3 || fail "vm2 still answers after its port was removed"
ping_ok "$VM1_NS" 10.242.2.13 3 || fail "vm1 -> vm3 after removing vm2's port"
pass
