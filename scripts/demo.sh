#!/usr/bin/env bash
# A live demo of weft on one machine (Debian 12, as root): installs what is
# needed, builds, then runs two "hosts" in network namespaces with weftd,
# each serving VMs (namespaces behind tap ports, added with `weft port
# add`, found across hosts by the mesh), pings and runs iperf3 (3 s) host
# to host and VM to VM through the tunnel and between two VMs of one host,
# shows `wg show`, `weft port list` and `weft mesh show`, and cleans up.
#
#   scripts/demo.sh                 # weftd on both hosts
#   scripts/demo.sh wireguard-go    # the same demo with wireguard-go (reference)
#
#   netns weft-demo-PID-a                       netns weft-demo-PID-b
#  +-------------------------------+          +-------------------------------+
#  | weftd wgPIDa  10.241.0.1/24   |          | weftd wgPIDb  10.241.0.2/24   |
#  |               fd00:10::1/64   |          |               fd00:10::2/64   |
#  |  ve-a 192.168.241.1 :51820 ---+-- veth --+--- :51821 ve-b 192.168.241.2  |
#  |  tap ports (weft port add)    |          |  tap port                     |
#  +---+---------------+-----------+          +---------------+---------------+
#      |               |                                      |
#  netns vm1       netns vm2                              netns vm3
#  10.242.1.11     10.242.1.12                            10.242.2.13
#  (a VM on a)     (a VM on a)                            (a VM on b)
#
# The namespace helpers are the integration tests' (tests/integration/lib.sh);
# everything is removed on exit, also on Ctrl-C.
IMPL=${1:-weftd}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export WEFT_TEST_TIMEOUT=${WEFT_TEST_TIMEOUT:-1800} # includes the first build
. "$ROOT/tests/integration/lib.sh"

echo "== dependencies and build"
"$ROOT/scripts/install-deps.sh"
"$ROOT/scripts/build.sh"
export WEFTD=${WEFTD:-$ROOT/${WEFT_BUILD_DIR:-build}/daemon/weftd}
export WEFT=${WEFT:-$ROOT/${WEFT_BUILD_DIR:-build}/cli/weft}

lib_init "$IMPL" "$IMPL"
need_cmd iperf3
make_hosts
setup_pair 51820 51821 4
sed -n '/^#   netns/,/^#  (a VM on a)/p' "$0" | sed 's/^#//'

# vm N HOST_NS IFNAME ADDR MAC: a "VM" (a namespace) behind a tap port that
# weftd on the host serves: weftd answers its ARP and is its router.
vm() {
	local ns tap=vd${RUN_ID}$1
	new_ns "vm$1"
	ns=$(ns_name "vm$1")
	weft -i "$3" port add "$tap" tap mac "$5" address "$4/32" mtu 1420 || fail "weft port add: $ERR"
	ip -n "$2" link set "$tap" netns "$ns"
	ip -n "$ns" link set "$tap" address "$5" mtu 1420 up
	ip -n "$ns" addr add "$4/32" dev "$tap"
	ip -n "$ns" route add 169.254.1.1 dev "$tap"
	ip -n "$ns" route add default via 169.254.1.1 dev "$tap"
	printf -v "VM$1" '%s' "$ns"
}

# VMs behind the hosts. The hosts' allowed IPs stay their tunnel addresses:
# where a VM lives is learned over the mesh (docs/mesh.md), each VM's
# address announced when its port registers it.
demo_vms() {
	need_weft
	weft -i "$IF_A" mesh set mode unicast prefix 10.242.0.0/16 || fail "weft mesh set: $ERR"
	weft -i "$IF_B" mesh set mode unicast prefix 10.242.0.0/16 || fail "weft mesh set: $ERR"
	vm 1 "$NS_A" "$IF_A" 10.242.1.11 52:54:00:42:01:11
	vm 2 "$NS_A" "$IF_A" 10.242.1.12 52:54:00:42:01:12
	vm 3 "$NS_B" "$IF_B" 10.242.2.13 52:54:00:42:02:13
	echo
	echo "== ping vm1 (host a) -> vm3 (host b) through the tunnel, and vm1 -> vm2 on host a"
	ip netns exec "$VM1" ping -n -c 3 -i 0.2 -W 2 10.242.2.13
	ip netns exec "$VM1" ping -n -c 3 -i 0.2 -W 2 10.242.1.12
	echo
	echo "== iperf3, 3 s, vm1 (host a) -> vm3 (host b)"
	bg ip netns exec "$VM3" timeout 30 iperf3 -s -p 5202 -B 10.242.2.13
	wait_listen "$VM3" 5202
	ip netns exec "$VM1" timeout 20 iperf3 -c 10.242.2.13 -p 5202 -t 3 -f m
	echo
	echo "== weft port list on host a"
	weft -i "$IF_A" port list && echo "$OUT"
	echo
	echo "== weft mesh show on host b (where host a's VMs are, learned)"
	weft -i "$IF_B" mesh show && echo "$OUT"
}

echo
echo "== ping host b through the tunnel (IPv4 and IPv6 inside)"
ip netns exec "$NS_A" ping -n -c 3 -i 0.2 -W 2 "$IN4_B"
ip netns exec "$NS_A" ping -n -c 3 -i 0.2 -W 2 "$IN6_B"

echo
echo "== iperf3, 3 s, host a -> host b through the tunnel"
bg ip netns exec "$NS_B" timeout 30 iperf3 -s -p 5201 -B "$IN4_B"
wait_listen "$NS_B" 5201
ip netns exec "$NS_A" timeout 20 iperf3 -c "$IN4_B" -p 5201 -t 3 -f m

echo
echo "== wg show on host a"
ip netns exec "$NS_A" wg show "$IF_A"
echo
echo "== wg show on host b"
ip netns exec "$NS_B" wg show "$IF_B"
if is_weftd "$IMPL"; then
	echo
	echo "== weftd counters on host a (stats=1 on the UAPI socket)"
	uapi "$IF_A" "stats=1" | grep -v '^errno=' | grep .
fi

if is_weftd "$IMPL"; then
	demo_vms
else
	echo "(VM ports are weftd's: skipped with $IMPL)"
fi
echo
echo "== done; removing the namespaces"
pass
