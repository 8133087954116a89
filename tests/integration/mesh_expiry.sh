#!/usr/bin/env bash
# mesh_expiry.sh IMPL_A IMPL_B — a learned location that nobody confirms any
# more is forgotten (issue 16: "learned locations never expire").
#
#     netns -wire: bridge br0 (192.168.81.0/24)
#     weftd h1 (.1) -- tap x1, VM X      weftd h2 (.2) -- tap y2, VM Y
#
# The protocol clock runs SPEEDUP times faster (WEFT_TEST_CLOCK_SPEEDUP), so
# the 5-minute LEARNED_TTL_MS and the 60-second re-announcement pass take
# seconds. X's home is h1. Y pings X: h2 learns X's location from h1. Then
# h1 goes away (its weftd stops): nobody confirms X any more, and h2, which
# asks again once the location is older than the TTL, forgets it (counted
# as expired, gone from its routes). With X registered on h1 and h1 up, the
# same location stays (the re-check is answered).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mesh_lib.sh"
lib_init "$@"
need_cmd jq
is_weftd "$IMPL_A" && is_weftd "$IMPL_B" || skip "the mesh is weftd's"
need_weft
need_tool mesh_forge
# 20x: the 5-minute TTL passes in 15 s, and a re-check's three tries
# (RECHECK_RETRY_MS 1 s each) still leave h1 150 ms to answer under ASan on
# a busy machine (at 100x a re-check that waited 1.5 ms for the answer, 50 ms
# tries then, forgot X once).
SPEEDUP=20

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
n=$(pick 10 0) X4=10.82.0.$n X6=fd81:1::$n
n=$(pick 100 0) Y4=10.82.0.$n Y6=fd81:1::$n
log "X is $X4 $X6 (home h1), Y is $Y4 $Y6"

# host H: weftd on hH with its key and listen port, its link up, and the
# mesh on; no peers yet.
host() {
	local h=$1 ns=NS$1 ifn=IF$1 key=KEY_h$1
	start_daemon weftd "${!ns}" "${!ifn}" WEFT_TEST_CLOCK_SPEEDUP=$SPEEDUP
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
# routes2 ADDR: how many live routes h2 has for ADDR (v4 /32).
routes2() {
	weft -i "$IF2" mesh show --json || fail "weft mesh show on h2: $ERR"
	jq -r --arg a "$1/32" '[.routes[]? | select(.address == $a and (.negative | not))] | length' <<<"$OUT"
}
no_route2() { (($(routes2 "$1") == 0)); }

step "h2 learns X from h1; re-checks keep it while h1 answers"
host 1
host 2
peer 1 2
peer 2 1
mesh_vm_on x 1 52:54:00:81:01:10 "$X6" "$X4"
mesh_vm_on y 2 52:54:00:81:02:20 "$Y6" "$Y4"
VMY=$(ns_name vmy)
ping_within "$VMY" "$X4" 1 "$HANG_SECS" || fail "Y never reached X"
(($(routes2 "$X4") == 1)) || fail "h2 has no route for X: $OUT"
# Past two TTLs of the sped-up clock (300 s / SPEEDUP each), with h1 up:
# the re-check is answered, the location stays and X stays reachable.
wait_for "$HANG_SECS" mesh_counter_above 2 solicit_sent 1 || fail "h2 never re-checked X"
ping_within "$VMY" "$X4" 3 "$HANG_SECS" || fail "Y lost X while h1 answers"
(($(mesh_counter 2 expired) == 0)) || fail "h2 forgot a location h1 still confirms"

step "h1 goes away: h2 forgets X once nobody confirms it"
stop_daemon "$IF1"
wait_for "$HANG_SECS" no_route2 "$X4" || fail "h2 still routes X to the stopped h1: $OUT"
(($(mesh_counter 2 expired) >= 1)) || fail "X's route went, but not as an expiry: $OUT"
log "h2 forgot X ($(mesh_counter 2 expired) expired)"
pass
