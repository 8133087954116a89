#!/usr/bin/env bash
# mesh.sh IMPL_A IMPL_B (MESH_MODE=unicast|multicast) — three weftd hosts that learn
# where VM addresses live (issue 5), in one discovery mode.
#
#                      netns -wire: bridge br0 (192.168.77.0/24)
#          +-------------------+-------------------+
#     weftd h1 (.1)       weftd h2 (.2)        weftd h3 (.3)
#     tunnel 10.77.0.1    10.77.0.2            10.77.0.3
#       | tap x1            | tap x2             | tap y3
#       +------ netns -vmx -+                  netns -vmy
#          fd77:1::10, 10.78.0.10 on lo        fd77:1::20, 10.78.0.20
#
# Every host is a peer of the other two with only the tunnel addresses as
# allowed IPs: the VM addresses (mesh prefixes fd77:1::/64, 10.78.0.0/16)
# are learned. VM X has a NIC on h1 and one on h2; "moving" it registers it
# on the other host and switches its default routes to that NIC.
#
# Checks: registration -> reachable; the first packet after registration
# arrives; 20 moves while VM Y pings X every 10 ms lose nothing; a host
# that no longer holds X answers NOT_HERE and the sender stops using it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mesh_lib.sh"
MODE=${MESH_MODE:-unicast}
lib_init "$@"
need_cmd jq
is_weftd "$IMPL_A" && is_weftd "$IMPL_B" || skip "the mesh is weftd's"
need_weft
[[ $MODE == unicast || $MODE == multicast ]] || fail "mode must be unicast or multicast"

X6=fd77:1::10 X4=10.78.0.10
Y6=fd77:1::20 Y4=10.78.0.20
Z6=fd77:1::30 Z4=10.78.0.30

mesh_wire 3 192.168.77
for h in 1 2 3; do
	ns=NS$h ifn=IF$h
	start_daemon weftd "${!ns}" "${!ifn}"
done
# Every host a peer of the others, with only their tunnel addresses.
for h in 1 2 3; do
	ns=NS$h ifn=IF$h key=KEY_h$h
	args=(listen-port $((51820 + h)) private-key "${!key}")
	for o in 1 2 3; do
		((o == h)) && continue
		pub=PUB_h$o
		args+=(peer "${!pub}" allowed-ips "10.77.0.$o/32,fd00:77::$o/128"
			endpoint "192.168.77.$o:$((51820 + o))" persistent-keepalive 25)
	done
	nswg "${!ns}" set "${!ifn}" "${args[@]}"
	link_up "${!ns}" "${!ifn}" "10.77.0.$h/24" "fd00:77::$h/64"
	weft -i "${!ifn}" mesh set mode "$MODE" prefix fd77:1::/64 prefix 10.78.0.0/16 ||
		fail "weft mesh set on h$h: $ERR"
done

mesh_vm x "$X6" "$X4"
mesh_vm y "$Y6" "$Y4"
mesh_vm z "$Z6" "$Z4"
VMX=$(ns_name vmx) VMY=$(ns_name vmy) VMZ=$(ns_name vmz)
mesh_nic x 1 52:54:00:77:01:10
mesh_nic x 2 52:54:00:77:02:10
mesh_nic y 3 52:54:00:77:03:20
mesh_nic z 2 52:54:00:77:02:30
mesh_use x 1 "$X4"
mesh_use y 3 "$Y4"
mesh_use z 2 "$Z4"

step "the tunnels are up"
for h in 1 2 3; do
	ns=NS$h
	for o in 1 2 3; do
		((o == h)) && continue
		ping_within "${!ns}" "10.77.0.$o" 1 10 || fail "h$h -> h$o through the tunnel"
	done
done

step "registration: Y (h3) and X (h1) registered, X reachable from Y"
weft -i "$IF3" vm add "$TAP_y3" "$Y6" "$Y4" || fail "vm add y: $ERR"
weft -i "$IF1" vm add "$TAP_x1" "$X6/128" "$X4/32" || fail "vm add x: $ERR"
reach_report "$VMY" "$X6" "registration (normal order)" || fail "Y -> X IPv6 after registration"
reach_report "$VMY" "$X4" "registration (normal order)" || fail "Y -> X IPv4 after registration"
ping_ok "$VMX" "$Y6" 3 || fail "X -> Y IPv6"

step "the first packet after a registration arrives"
weft -i "$IF2" vm add "$TAP_z2" "$Z6" "$Z4" || fail "vm add z: $ERR"
# One ping each (no retry: the first is the one that must not be lost);
# its reply is waited for up to the hang guard.
out=$(ip netns exec "$VMY" ping -n -c 1 -W "$HANG_SECS" "$Z6" 2>&1) || fail "the first ping Y -> Z was lost: $out"
out=$(ip netns exec "$VMZ" ping -n -c 1 -W "$HANG_SECS" "$Y4" 2>&1) || fail "the first ping Z -> Y (IPv4) was lost: $out"
# h3 learned Z's location: by discovery, from Z's announcement (multicast
# mode, or unicast when h3 is Z's home), whichever came first.
weft -i "$IF3" mesh show --json || fail "mesh show: $ERR"
learned=$(jq -r --arg a "$Z6/128" '[.routes[]? | select(.address == $a and (.negative | not))] | length' <<<"$OUT")
((learned == 1)) || fail "h3 has no route for Z: $OUT"

step "20 moves of X between h1 and h2 while Y pings it every 10 ms: nothing lost"
ip netns exec "$VMY" ping -n -D -i 0.01 -W 2 -w 60 "$X6" >"$WORK/move-ping.log" 2>&1 &
PING_PID=$!
BG_PIDS+=("$PING_PID")
sleep 0.5
at=1
for i in $(seq 1 20); do
	to=$((3 - at))
	ifto=IF$to ifat=IF$at tapto=TAP_x$to tapat=TAP_x$at
	weft -i "${!ifto}" vm add "${!tapto}" "$X6" "$X4" || fail "move $i: vm add on h$to: $ERR"
	mesh_use x "$to" "$X4"
	weft -i "${!ifat}" vm del "$X6" "$X4" || fail "move $i: vm del on h$at: $ERR"
	at=$to
	sleep 0.3
done
sleep 1
kill -INT "$PING_PID"
wait "$PING_PID" || true
summary=$(grep 'packets transmitted' "$WORK/move-ping.log") || fail "no ping summary: $(tail -3 "$WORK/move-ping.log")"
log "ping during moves: $summary"
# Lost = a gap before the last answered ping: the pings still in flight
# when ping was stopped are not losses (on a loaded machine there are more
# of them), and a late reply still counts.
sent=$(awk -F'icmp_seq=' '/bytes from/ { split($2, a, " "); if (a[1] + 0 > m) m = a[1] + 0 } END { print m + 0 }' "$WORK/move-ping.log")
got=$(awk -F'icmp_seq=' '/bytes from/ { split($2, a, " "); if (!s[a[1] + 0]++) n++ } END { print n + 0 }' "$WORK/move-ping.log")
show_all() {
	local h ifn
	for h in 1 2 3; do
		ifn=IF$h
		weft -i "${!ifn}" mesh show || true
		log "h$h: $(tr '\n' ' ' <<<"$OUT")"
		weft -i "${!ifn}" stats || true
		log "h$h stats: $(tr -s ' \n' ' ' <<<"$OUT")"
		weft -i "${!ifn}" port list || true
		log "h$h ports: $(tr -s ' \n' ' ' <<<"$OUT")"
	done
}
if ((got != sent)); then
	show_all
	grep -v 'bytes from' "$WORK/move-ping.log" | head -20 >&2
	awk -F'icmp_seq=' '/bytes from/ { split($2, a, " "); print a[1] }' "$WORK/move-ping.log" |
		awk 'NR > 1 && $1 != prev + 1 { printf "missing %d..%d\n", prev + 1, $1 - 1 } { prev = $1 }' >&2
fi
((sent >= 300)) || fail "only $sent pings answered up to the last one during the moves"
log "moves: $((sent - got)) of $sent pings lost (every 10 ms, 20 moves)"
((got == sent)) || fail "$((sent - got)) of $sent pings lost during 20 moves"

step "a host that no longer holds X answers NOT_HERE; the sender stops using it"
# X is on h$at. Y's host caches that; then X leaves the mesh altogether.
ping_ok "$VMY" "$X6" 2 || fail "Y -> X before the removal"
ifat=IF$at
nh_sent0=$(mesh_counter "$at" not_here_sent)
nh_recv0=$(mesh_counter 3 not_here_received)
weft -i "${!ifat}" vm del "$X6" "$X4" || fail "vm del x: $ERR"
ping_none "$VMY" "$X6" 3 || fail "X still answers after it left"
nh_sent=$(mesh_counter "$at" not_here_sent)
nh_recv=$(mesh_counter 3 not_here_received)
((nh_sent > nh_sent0)) || fail "h$at sent no NOT_HERE ($nh_sent0 -> $nh_sent)"
((nh_recv > nh_recv0)) || fail "h3 received no NOT_HERE ($nh_recv0 -> $nh_recv)"
weft -i "$IF3" mesh show --json || fail "mesh show: $ERR"
stale=$(jq -r --arg a "$X6/128" '[.routes[]? | select(.address == $a and (.negative | not))] | length' <<<"$OUT")
((stale == 0)) || fail "h3 still routes X to a host: $OUT"

step "X registered again on h2 is reachable again"
weft -i "$IF2" vm add "$TAP_x2" "$X6" "$X4" || fail "vm add x on h2: $ERR"
mesh_use x 2 "$X4"
ping_within "$VMY" "$X6" 2 5 || fail "Y -> X after re-registration"

show_all
pass
