#!/usr/bin/env bash
# roaming.sh IMPL_A IMPL_B — B's outer address moves three times while B keeps
# pinging A; A's endpoint for B must follow, and traffic must keep flowing.
#
#   netns weft-roaming-PID-a                    netns weft-roaming-PID-b
#  +-------------------------------+          +-------------------------------+
#  | IMPL_A wgPIDa 10.241.0.1      |          | IMPL_B wgPIDb 10.241.0.2      |
#  |                               |          |   (pings 10.241.0.1 all along)|
#  |  ve-a  192.168.241.1 :51820 --+-- veth --+-- ve-b  192.168.241.2 :51821  |
#  |                               |          |     move 1: port -> 51822     |
#  |                               |          |     move 2: -> 192.168.241.3  |
#  |  ve2-a 192.168.242.1 ---------+-- veth2 -+-- ve2-b 192.168.242.2         |
#  |                               |          |     move 3: ve-b down, leave  |
#  |                               |          |     via ve2-b (route to .241) |
#  +-------------------------------+          +-------------------------------+
. "$(dirname "$0")/lib.sh"
lib_init "$@"
make_hosts
setup_pair 51820 51821 4

endpoint_is() { [[ $(peer_field "$NS_A" "$IF_A" "$PUB_b" endpoint) == "$1" ]]; }
PORT_B=51821

# Debian's wireguard-go 0.0.20220316 keeps sending from a source address that
# was removed: it forgets its cached source only on EINVAL, and the kernel
# answers ENETUNREACH. A rebind (new listen port) clears that cache, so when
# B is wireguard-go each address move also moves the port; A must follow both.
rebind_if_wggo() {
	is_weftd "$IMPL_B" && return 0
	PORT_B=$((PORT_B + 1))
	skip_part "address-only move with $IMPL_B as B (rebound to port $PORT_B as well)"
	nswg "$NS_B" set "$IF_B" listen-port "$PORT_B"
}

# follows ADDR MOVE: A's endpoint for B becomes ADDR:PORT_B, pings both ways.
follows() {
	wait_for "$HANG_SECS" endpoint_is "$1:$PORT_B" ||
		hang "A's endpoint for B is $(peer_field "$NS_A" "$IF_A" "$PUB_b" endpoint) after $2, expected $1:$PORT_B"
	log "A follows B to $(peer_field "$NS_A" "$IF_A" "$PUB_b" endpoint)"
	ping_ok "$NS_B" "$IN4_A" 5 || fail "B -> A after $2"
	ping_ok "$NS_A" "$IN4_B" 5 || fail "A -> B after $2"
}

step "handshake from A, endpoint of B on A is $OUT4_B:$PORT_B"
ping_ok "$NS_A" "$IN4_B" 3 || fail "first ping $IN4_B"
endpoint_is "$OUT4_B:$PORT_B" || fail "A's endpoint for B is $(peer_field "$NS_A" "$IF_A" "$PUB_b" endpoint)"

step "B pings A continuously (every 0.1 s)"
bg -o "$WORK/roam-ping.log" ip netns exec "$NS_B" ping -n -i 0.1 -c 6000 "$IN4_A"
PING_PID=$BG_LAST
sleep 1

step "move 1: B's source port changes (as behind a NAT rebinding)"
PORT_B=$((PORT_B + 1))
nswg "$NS_B" set "$IF_B" listen-port "$PORT_B"
follows "$OUT4_B" "move 1"

step "move 2: B's veth address 192.168.241.2 -> 192.168.241.3"
ip -n "$NS_B" addr del "$OUT4_B/24" dev ve-b
ip -n "$NS_B" addr add "$OUT4_NET.3/24" dev ve-b
rebind_if_wggo
follows "$OUT4_NET.3" "move 2"

step "move 3: B leaves through a second veth, 192.168.242.2"
ip -n "$NS_A" link add ve2-a type veth peer name ve2-b netns "$NS_B"
ip -n "$NS_A" addr add "192.168.242.1/24" dev ve2-a
ip -n "$NS_B" addr add "192.168.242.2/24" dev ve2-b
ip -n "$NS_A" link set ve2-a up
ip -n "$NS_B" link set ve2-b up
wait_for 5 ip netns exec "$NS_B" ping -c1 -W1 192.168.242.1 || fail "second veth does not work"
ip -n "$NS_B" addr del "$OUT4_NET.3/24" dev ve-b
ip -n "$NS_B" link set ve-b down
ip -n "$NS_B" route add "$OUT4_NET.0/24" via 192.168.242.1 dev ve2-b
rebind_if_wggo
follows 192.168.242.2 "move 3"

step "the continuous ping from B still gets replies after the last move"
# How many pings each move cost depends on how fast the machine is: that
# is logged, not judged. The contract is that traffic follows B.
roam_replies() { grep -c 'bytes from' "$WORK/roam-ping.log" || true; }
more_roam_replies() { (($(roam_replies) > $1)); }
r0=$(roam_replies)
wait_for "$HANG_SECS" more_roam_replies "$r0" || hang "the continuous ping from B got no reply after move 3"
kill -INT "$PING_PID" 2>/dev/null || true
wait_for 3 dead "$PING_PID" || true
reap "$PING_PID" 1
summary=$(grep 'packets transmitted' "$WORK/roam-ping.log") || fail "no ping summary"
log "continuous ping: $summary"
sent=$(awk '{print $1}' <<<"$summary")
recv=$(awk '{print $4}' <<<"$summary")
((sent >= 30)) || fail "continuous ping sent only $sent"
log "continuous ping: $((sent - recv)) of $sent unanswered across three moves (for information)"
pass
