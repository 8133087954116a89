#!/usr/bin/env bash
# mesh_order.sh IMPL_A IMPL_B — the mesh converges in the orders operations
# really come in (issue 16), not only in the demo's.
#
#     netns -wire: bridge br0 (192.168.81.0/24)
#          +-------------------+
#     weftd h1 (.1)       weftd h2 (.2)
#     tunnel 10.81.0.1    10.81.0.2
#       | tap x1            | tap y2
#     netns -vmx          netns -vmy
#
# Unicast mode, prefixes fd81:1::/64 and 10.82.0.0/16. X's addresses are
# picked so that their home is h2: h1's announcement of X must reach h2,
# or h2 (which solicits nobody for an address it is home of) never learns.
#
# The daemons run with WEFT_TEST_MESH_REFRESH=0: no periodic
# re-announcement, so only the events (a peer added, a session begun afresh)
# can make the mesh converge, and a broken event fails the test.
#
# Checks, each with Y pinging X and the time to reachability logged:
#  1. systemd order: the mesh and the VMs are set up first (weftd --mesh
#     and -p start that way), the peers afterwards (wg set);
#  2. h2 restarts (its home records are gone) and gets its configuration
#     and its VM again: Y reaches X with h1 left untouched;
#  3. late peer: h2 drops h1 and adds it again (a peer that joins late, or
#     comes back): the handshake after the gap makes h1 announce X again;
#  4. reload: h1 (started with a ports file holding X's tap, as
#     weftd@.service runs it) re-reads it on SIGHUP after weft vm gave the
#     port X's addresses: the tap stays in X's namespace, Y's pings every
#     10 ms go on, none lost;
#  5. VM Z on h2 floods misses (UDP to thousands of unknown mesh
#     addresses) while X gets a new address on h1: Y's first packet to it
#     arrives, and Z's misses were limited (tenant_limited).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mesh_lib.sh"
lib_init "$@"
need_cmd jq
is_weftd "$IMPL_A" && is_weftd "$IMPL_B" || skip "the mesh is weftd's"
need_weft
need_tool mesh_forge

mesh_wire 2 192.168.81

# An address .N from FIRST on whose IPv4 and IPv6 homes are host index HOME
# (0: h1, 1: h2).
pick() {
	local n
	for ((n = $1; n < $1 + 64; n++)); do
		if (($("$MESH_FORGE" home "10.82.0.$n" "$PUB_h1" "$PUB_h2") == $2 &&
			$("$MESH_FORGE" home "fd81:1::$n" "$PUB_h1" "$PUB_h2") == $2)); then
			echo "$n"
			return 0
		fi
	done
	fail "no address from .$1 on has both homes on host $2"
}
n=$(pick 10 1) X4=10.82.0.$n X6=fd81:1::$n
n=$(pick 100 0) Y4=10.82.0.$n Y6=fd81:1::$n
log "X is $X4 $X6 (home h2), Y is $Y4 $Y6 (home h1)"

# h1's ports file: X's tap, no addresses (weft vm registers them).
cat >"$WORK/ports-h1.conf" <<EOF
[Port]
Name = t${RUN_ID}x1
Type = tap
MAC = 52:54:00:81:01:10
MTU = 1380
EOF

# host H: weftd on hH with its key and listen port, its link up, and the
# mesh on; no peers yet. h1 runs with its ports file.
host() {
	local h=$1 ns=NS$1 ifn=IF$1 key=KEY_h$1
	DAEMON_ARGS=()
	((h == 1)) && DAEMON_ARGS=(--ports "$WORK/ports-h1.conf")
	start_daemon weftd "${!ns}" "${!ifn}" WEFT_TEST_MESH_REFRESH=0
	DAEMON_ARGS=()
	nswg "${!ns}" set "${!ifn}" listen-port $((51840 + h)) private-key "${!key}"
	link_up "${!ns}" "${!ifn}" "10.81.0.$h/24" "fd00:81::$h/64"
	weft -i "${!ifn}" mesh set mode unicast prefix fd81:1::/64 prefix 10.82.0.0/16 ||
		fail "weft mesh set on h$h: $ERR"
}
# peer H O: hH gets hO as a peer.
peer() {
	local ns=NS$1 ifn=IF$1 pub=PUB_h$2
	nswg "${!ns}" set "${!ifn}" peer "${!pub}" allowed-ips "10.81.0.$2/32,fd00:81::$2/128" \
		endpoint "192.168.81.$2:$((51840 + $2))" persistent-keepalive 25
}
# reach WHAT: Y pings X every 10 ms until a reply (hang guard), and logs how
# long it took and the echoes lost before it.
reach() {
	reach_report "$VMY" "$X4" "$1" || fail "$1: Y never reached X (IPv4)"
	reach_report "$VMY" "$X6" "$1" || fail "$1: Y never reached X (IPv6)"
}

step "systemd order: mesh and VMs first, peers afterwards"
host 1
host 2
# X's tap comes from h1's ports file: there once weftd has applied it.
has_link() { ip -n "$1" link show "$2" >/dev/null 2>&1; }
wait_for "$HANG_SECS" has_link "$NS1" "t${RUN_ID}x1" || fail "h1's ports file made no tap for X"
mesh_vm_on x 1 52:54:00:81:01:10 "$X6" "$X4"
mesh_vm_on y 2 52:54:00:81:02:20 "$Y6" "$Y4"
VMX=$(ns_name vmx) VMY=$(ns_name vmy)
peer 1 2
peer 2 1
reach "systemd order"
ping_ok "$VMX" "$Y4" 3 || fail "X -> Y"

step "h2 restarts and gets its configuration and VM back; h1 is not touched"
stop_daemon "$IF2"
ip -n "$VMY" link del "t${RUN_ID}y2" 2>/dev/null || true
host 2
peer 2 1
mesh_vm_on y 2 52:54:00:81:02:20 "$Y6" "$Y4"
reach "after h2's restart"

step "late peer: h2 drops h1 and takes it back; the handshake after the gap makes h1 announce X again"
# X's home is h2, which solicits nobody for it: without h1's announcement
# (no periodic refresh here) h2 would never learn X again.
nswg "$NS2" set "$IF2" peer "$PUB_h1" remove
peer 2 1
reach "after h2 took h1 back"

step "reload: h1 re-reads its ports file after weft vm registered X: X keeps its NIC, no ping lost"
TAPX=t${RUN_ID}x1
idx0=$(ip -n "$VMX" -o link show "$TAPX" | cut -d: -f1)
ip netns exec "$VMY" ping -n -i 0.01 -W 2 -w "$HANG_SECS" "$X6" >"$WORK/reload-ping.log" 2>&1 &
PING_PID=$!
BG_PIDS+=("$PING_PID")
replies() { grep -c 'bytes from' "$WORK/reload-ping.log"; }
replies_ge() { (($(replies) >= $1)); }
wait_for "$HANG_SECS" replies_ge 10 || fail "Y's pings to X got no replies before the reload"
kill -HUP "${DAEMON_PID[$IF1]}"
# weftd logs this on a reload that finds the port's addresses changed by weft vm.
wait_for "$HANG_SECS" grep -q "port $TAPX keeps its registered addresses" "${DAEMON_LOG[$IF1]}" ||
	fail "h1 did not reload its ports file"
n=$(replies)
wait_for "$HANG_SECS" replies_ge $((n + 50)) || fail "Y's pings to X stopped after the reload"
kill -INT "$PING_PID"
wait "$PING_PID" || true
# Lost: a sequence number missing before the last answered one.
read -r sent got < <(awk -F'icmp_seq=' '/bytes from/ { split($2, a, " "); q = a[1] + 0
	if (q > m) m = q; if (!s[q]++) n++ } END { print m + 0, n + 0 }' "$WORK/reload-ping.log")
log "reload: $((sent - got)) of $sent pings lost (every 10 ms, across the reload)"
((got == sent)) || fail "$((sent - got)) of $sent pings to X lost across h1's reload"
idx1=$(ip -n "$VMX" -o link show "$TAPX" 2>/dev/null | cut -d: -f1)
[[ -n $idx1 && $idx1 == "$idx0" ]] || fail "the reload took X's NIC away (ifindex $idx0 -> ${idx1:-gone})"
if grep -q "ports file .*: \(replaced\|removed\) port $TAPX" "${DAEMON_LOG[$IF1]}"; then
	fail "the reload replaced or removed X's port: $(grep "port $TAPX" "${DAEMON_LOG[$IF1]}")"
fi

step "a VM that floods misses does not starve another VM's first contact"
n=$(pick 40 0) X24=10.82.0.$n
n=$(pick 180 1) Z4=10.82.0.$n Z6=fd81:1::$n
mesh_vm_on z 2 52:54:00:81:02:30 "$Z6" "$Z4"
VMZ=$(ns_name vmz)
ip netns exec "$VMZ" python3 -c '
import random, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end = time.time() + float(sys.argv[1])
n = 0
while time.time() < end:
	s.sendto(b"x", ("10.82.%d.%d" % (random.randint(200, 255), random.randint(1, 254)), 9))
	n += 1
print(n)' "$HANG_SECS" >"$WORK/flood.out" 2>&1 &
FLOOD=$!
wait_for "$HANG_SECS" mesh_counter_above 2 tenant_limited 0 || fail "Z's flood of misses was never limited"
ip -n "$VMX" addr add "$X24/32" dev lo
weft -i "$IF1" vm add "t${RUN_ID}x1" "$X24" || fail "vm add X's second address: $ERR"
out=$(ip netns exec "$VMY" ping -n -c 1 -W "$HANG_SECS" "$X24" 2>&1) ||
	fail "Y's first packet to X's new address was lost under Z's flood: $out"
kill "$FLOOD" 2>/dev/null || true
wait "$FLOOD" 2>/dev/null || true
log "Y's first ping to $X24 arrived under a flood; h2 limited $(mesh_counter 2 tenant_limited) of Z's misses"
pass
