# The topology pieces the mesh tests share (mesh.sh, mesh_order.sh,
# mesh_expiry.sh, mesh_hostile.sh): sourced after lib.sh.
#
# Hosts hH are namespaces on one bridge; VMs are namespaces whose addresses
# sit on lo (so that any of their NICs takes them), with tap NICs of a
# host's weftd moved in and routes through the weftd router addresses.

ROUTER_LL=fe80::77:65ff:fe66:7401 # weftd's router address on every port
GW4=169.254.1.1                   # and its IPv4 gateway

# mesh_wire N NET: a bridge br0 in namespace -wire, and hosts h1..hN: NSh
# (a namespace with eth0 NET.h/24 on the bridge), IFh (its interface
# name), KEY_hH and PUB_hH (genkeys).
mesh_wire() {
	local n=$1 net=$2 h ns
	new_ns wire
	WIRE=$(ns_name wire)
	ip -n "$WIRE" link add br0 type bridge
	ip -n "$WIRE" link set br0 up
	for ((h = 1; h <= n; h++)); do
		new_ns "h$h"
		ns=$(ns_name "h$h")
		printf -v "NS$h" '%s' "$ns"
		printf -v "IF$h" '%s' "$(ifname "$h")"
		ip -n "$WIRE" link add "w$h" type veth peer name eth0 netns "$ns"
		ip -n "$WIRE" link set "w$h" master br0 up
		ip -n "$ns" addr add "$net.$h/24" dev eth0
		ip -n "$ns" link set eth0 up
		genkeys "h$h"
	done
}

# mesh_vm TAG V6 V4: VM TAG's namespace (made the first time), V6/128 and
# V4/32 on its lo.
mesh_vm() {
	local ns
	ns=$(ns_name "vm$1")
	ip netns list | grep -qw "$ns" && return 0
	new_ns "vm$1"
	ip -n "$ns" addr add "$2/128" dev lo
	ip -n "$ns" addr add "$3/32" dev lo
}

# mesh_nic TAG H MAC: a tap port of hH (added, unless hH has it already:
# its ports file made it), moved into VM TAG's namespace with MAC, no RA;
# TAP_<TAG><H> names it.
mesh_nic() {
	local tag=$1 h=$2 mac=$3 tap=t${RUN_ID}$1$2 ns ifn=IF$2 hns=NS$2
	ns=$(ns_name "vm$tag")
	if ! ip -n "${!hns}" link show "$tap" >/dev/null 2>&1; then
		weft -i "${!ifn}" port add "$tap" tap mac "$mac" mtu 1380 || fail "port add $tap: $ERR"
	fi
	ip -n "${!hns}" link set "$tap" netns "$ns" || fail "moving $tap into $ns"
	ip -n "$ns" link set "$tap" address "$mac" mtu 1380
	ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$tap.accept_ra=0"
	ip -n "$ns" link set "$tap" up
	printf -v "TAP_$tag$h" '%s' "$tap"
}

# mesh_use TAG H V4: VM TAG's default routes go out through its NIC on hH.
mesh_use() {
	local ns tap=TAP_$1$2
	ns=$(ns_name "vm$1")
	ip -n "$ns" -6 route replace default via "$ROUTER_LL" dev "${!tap}"
	ip -n "$ns" route replace "$GW4" dev "${!tap}"
	ip -n "$ns" route replace default via "$GW4" dev "${!tap}" src "$3"
}

# mesh_vm_on TAG H MAC V6 V4: the VM (made once) with a NIC on hH, its
# routes through it, the port registered with V6 and V4.
mesh_vm_on() {
	local tap=TAP_$1$2 ifn=IF$2
	mesh_vm "$1" "$4" "$5"
	mesh_nic "$1" "$2" "$3"
	mesh_use "$1" "$2" "$5"
	weft -i "${!ifn}" vm add "${!tap}" "$4" "$5" || fail "vm add $1 on h$2: $ERR"
}

# mesh_counter H KEY: one of hH's mesh counters (fails when it has none);
# mesh_counter_above H KEY N.
mesh_counter() {
	local ifn=IF$1 v
	weft -i "${!ifn}" mesh show --json || fail "weft mesh show on h$1: $ERR"
	v=$(jq -r --arg k "$2" '.counters[$k] // .[$k]' <<<"$OUT")
	[[ $v =~ ^[0-9]+$ ]] || fail "h$1 has no mesh counter $2: $OUT"
	echo "$v"
}
mesh_counter_above() { (($(mesh_counter "$1" "$2") > $3)); }
