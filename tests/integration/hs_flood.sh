#!/usr/bin/env bash
# hs_flood.sh IMPL_A IMPL_B — B (weftd) is flooded with handshake
# initiations that carry a valid mac1 from 256 source addresses. It must
# switch to "under load" and answer them with cookie replies instead of
# Diffie-Hellman, stay responsive, and still let A, a real peer, complete a
# handshake: A gets a cookie reply, retries with mac2, and B answers that
# retry within 1 s. Pings and iperf3 go through the tunnel meanwhile.
#
#   netns ...-a                  netns ...-b                      netns ...-c
#  +------------------+        +----------------------------+   +----------------------+
#  | IMPL_A wgPIDa    |        | weftd wgPIDb :51821        |   | hs_flood             |
#  |  10.241.0.1      |        |  10.241.0.2                |   |  256 sources         |
#  |  ping, iperf3 ---+- tun --+-> iperf3 -s                |   |  10.242.1.0-255      |
#  | ve-a 192.168.241.1+- veth -+- ve-b 192.168.241.2       |   |                      |
#  |  (tcpdump)       |        |  ve-bc 10.242.0.1/16 <-----+---+- ve-c 10.242.0.2/16  |
#  +------------------+        +----------------------------+   +----------------------+
#
#   C --- initiation (valid mac1, random rest) x N/s -------------> B
#   C <---------------------------------------------- cookie reply  B (under load)
#   A --- initiation (mac1) --------------------------------------> B
#   A <---------------------------------------------- cookie reply  B
#   A --- initiation (mac1 + mac2), after REKEY_TIMEOUT ----------> B
#   A <------------------------------------------------- response  B   (<= 1 s)
#
# How weftd counts: the worker queues every right-sized handshake message
# (hs_queue_full when the 1024-slot queue is full). The handshake thread is
# under load when >= 128 are queued, and for a second after. Under load an
# initiation with a valid mac1 and no valid mac2 gets a cookie reply
# (hs_cookies_sent) and costs no Diffie-Hellman; one with a valid mac2 is
# rate-limited per source (hs_ratelimited: 20/s, burst 5). Only initiations
# that get past both reach the Noise code, where hs_initiations_received
# counts them (and hs_failed the flood's, which do not decrypt). So for the
# flood, hs_initiations_received grows only by what arrives while B is not
# yet under load.
#
# Phase 1 (FLOOD_SECS): C never uses its cookies. Checks: hs_cookies_sent
# grows by at least a third of what C sent, C receives cookie replies (they
# route back to its addresses), hs_initiations_received grows by less than
# 1% of it, B answers `wg show`, ping and iperf3 (rate logged, > 0
# required) through the tunnel during the flood, and A's handshake: in a
# capture on A's veth, B's response names (by its receiver index) the
# initiation it answers; that one must carry a mac2 and come after a cookie
# reply to A (how long after is logged, not judged). The flood runs until
# those checks are done (at most HANG_SECS; at least FLOOD_SECS). No check
# is on how fast B is; waits are hang guards (lib.sh HANG_SECS).
# Phase 2 (4 s): C decrypts its cookies and sends mac2 like a real host
# that owns its addresses: hs_ratelimited must grow, and
# hs_initiations_received by at most 256 sources x (5 + 20/s x 5 s) plus
# one queue of slack. (That bound is a rate, the rate limiter's contract;
# a slow machine only sends less.)
#
# The flood rate is WEFT_HS_FLOOD_PPS (default 40000/s; 10000/s in a
# sanitizer build). Above what B's handshake thread can answer, the queue
# stays full and A's initiations are lost like the flood's (hs_queue_full):
# that is the design limit, and not what this test measures.
. "$(dirname "$0")/lib.sh"
lib_init "$@"
need_cmd iperf3 ss tcpdump python3
need_tool hs_flood
is_weftd "$IMPL_B" || skip "B is flooded and must be weftd (under-load counters); B is $IMPL_B"
make_hosts
add_third_host

PA=51820 PB=51821
NSRC=256
FLOOD_SECS=20
if is_sanitized "$(impl_bin "$IMPL_B")"; then
	RATE=${WEFT_HS_FLOOD_PPS:-10000}
	log "sanitizer build: flood rate $RATE/s"
else
	RATE=${WEFT_HS_FLOOD_PPS:-40000}
fi
SRC_FIRST=10.242.1.0

iperf_rate() {
	local out
	out=$(ip netns exec "$NS_A" timeout 20 iperf3 -c "$IN4_B" -p 5201 -t "$1" 2>&1) ||
		{ printf '%s\n' "$out" >&2; fail "iperf3 A -> B failed ($2)"; }
	awk '/receiver$/ { for (i = 2; i <= NF; i++) if ($i ~ /bits\/sec/) print $(i - 1), $i }' <<<"$out"
}

# cookies_sent_since_s0 N: B sent more than N cookie replies since S0 (no
# fail(): it runs inside wait_for).
cookies_sent_since_s0() {
	local c
	c=$(uapi "$IF_B" "stats=1" 2>/dev/null | awk -F= '$1 == "hs_cookies_sent" { print $2 }') || return 1
	((${c:-0} - S0[hs_cookies_sent] > $1))
}

# flood_field FILE KEY: one of hs_flood's totals.
flood_field() {
	awk -F= -v k="$2" '$1 == k { print $2 }' "$1"
}

step "tunnel up and iperf3 before the flood"
setup_pair "$PA" "$PB" 4
ping_within "$NS_A" "$IN4_B" 3 8 || fail "no ping through the tunnel"
bg ip netns exec "$NS_B" timeout 100 iperf3 -s -p 5201 -B "$IN4_B"
wait_listen "$NS_B" 5201
RATE_BEFORE=$(iperf_rate 3 "before the flood")
log "iperf3 A -> B before the flood: $RATE_BEFORE"

step "C gets $NSRC source addresses"
for ((i = 0; i < NSRC; i++)); do
	echo "addr add 10.242.$((1 + i / 256)).$((i % 256))/16 dev ve-c"
done | ip -n "$NS_C" -batch - || fail "cannot add $NSRC addresses to ve-c"

step "phase 1: $RATE initiations/s with a valid mac1 from $NSRC sources for ${FLOOD_SECS} s"
declare -A S0 S1 S2 SA0 SA1
stats_snap "$IF_B" S0
# Handshake messages only (types 1-3): the data would fill the disk.
capture_start "$NS_A" ve-a "$WORK/a.pcap" udp port "$PA" and udp[8] '<' 4
FLOOD_OUT=$WORK/flood1.txt
bg -o "$FLOOD_OUT" ip netns exec "$NS_C" timeout $((HANG_SECS + 10)) \
	"$HS_FLOOD" -d "$HANG_SECS" -r "$RATE" "$PUB_b" "$OUT4_BC" "$PB" "$SRC_FIRST" "$NSRC"
FLOOD_PID=$BG_LAST
t_flood=$(now_ms)
wait_for "$HANG_SECS" cookies_sent_since_s0 100 || hang "B sent no cookie replies since the flood's start: not under load"
log "B under load (cookie replies) $(($(now_ms) - t_flood)) ms into the flood"
responsive "$NS_B" "$IF_B" || hang "B answers no wg show under the flood"

step "A forgets B and handshakes again, under the flood"
has_stats "$IF_A" && stats_snap "$IF_A" SA0
nswg "$NS_A" set "$IF_A" peer "$PUB_b" remove
nswg "$NS_A" set "$IF_A" peer "$PUB_b" allowed-ips "$IN4_B/32,$IN6_B/128" endpoint "$OUT4_B:$PB"
t0=$(now_ms)
bg ip netns exec "$NS_A" ping -n -q -c 60 -i 0.2 -W 1 "$IN4_B"
wait_handshake "$NS_A" "$IF_A" "$PUB_b" $((HANG_SECS * 1000)) >/dev/null || hang "A completed no handshake under the flood"
log "A's handshake completed $(($(now_ms) - t0)) ms after its first packet"
alive "$FLOOD_PID" || hang "A's handshake under the flood (the flood's $HANG_SECS s ran out first)"

step "during the flood: ping, wg show, iperf3"
ping_ok "$NS_A" "$IN4_B" 5 || fail "ping A -> B during the flood"
responsive "$NS_B" "$IF_B" || hang "B answers no wg show under the flood"
RATE_DURING=$(iperf_rate 2 "during the flood")
log "iperf3 A -> B during the flood: $RATE_DURING (before: $RATE_BEFORE)"
awk '{ exit !($1 > 0) }' <<<"$RATE_DURING" || fail "iperf3 moved nothing during the flood"
alive "$FLOOD_PID" || hang "the checks during the flood (the flood's $HANG_SECS s ran out first)"

# At least FLOOD_SECS of flood, then SIGTERM: hs_flood prints its totals.
while (($(now_ms) - t_flood < FLOOD_SECS * 1000)); do sleep 0.2; done
reap "$FLOOD_PID" 5
capture_stop "$CAPTURE_PID"
stats_snap "$IF_B" S1
log "hs_flood: $(tr '\n' ' ' <<<"$(cat "$FLOOD_OUT")")"
SENT=$(flood_field "$FLOOD_OUT" sent)
REPLIES=$(flood_field "$FLOOD_OUT" cookie_replies)
[[ -n $SENT && -n $REPLIES ]] || fail "hs_flood printed no totals"
for k in hs_initiations_received hs_responses_sent hs_cookies_sent hs_invalid_mac hs_ratelimited hs_failed hs_queue_full keypairs_created; do
	log "  B $k +$(snap_delta S0 S1 "$k")"
done
COOKIES=$(snap_delta S0 S1 hs_cookies_sent)
INITS=$(snap_delta S0 S1 hs_initiations_received)
((SENT >= 1000)) || fail "hs_flood sent only $SENT initiations: no flood"
((COOKIES >= SENT / 3)) || fail "B sent $COOKIES cookie replies for $SENT flood initiations: under-load mode did not hold"
((REPLIES > 0)) || fail "no cookie reply came back to C's addresses"
((INITS <= SENT / 100)) || fail "$INITS initiations reached B's Noise code (of $SENT sent): cookies did not spare the work"
log "C sent $SENT, B answered $COOKIES with cookies ($REPLIES came back to C), $INITS reached the Noise code"

step "B answered A's retry with mac2"
# The response names the initiation it answers (its receiver index is the
# initiation's sender index): that initiation must carry a mac2 and follow a
# cookie reply. How long B took is logged, not judged.
out=$(python3 - "$WORK/a.pcap" "$OUT4_A" <<'EOF'
import socket, struct, sys
data = open(sys.argv[1], "rb").read()
me = socket.inet_aton(sys.argv[2])
magic = struct.unpack("<I", data[:4])[0]
end = "<" if magic in (0xa1b2c3d4, 0xa1b23c4d) else ">"
tsdiv = 1e9 if magic in (0xa1b23c4d, 0x4d3cb2a1) else 1e6
linktype = struct.unpack(end + "I", data[20:24])[0]
off, inits, cookies, resp = 24, {}, [], None
while off + 16 <= len(data):
    sec, frac, incl, _ = struct.unpack(end + "IIII", data[off:off + 16])
    pkt, off, ts = data[off + 16:off + 16 + incl], off + 16 + incl, sec + frac / tsdiv
    ip = pkt[14:] if linktype == 1 else pkt
    if len(ip) < 28 or ip[0] >> 4 != 4:
        continue
    wg = ip[(ip[0] & 15) * 4 + 8:]
    src, dst = ip[12:16], ip[16:20]
    if src == me and len(wg) == 148 and wg[0] == 1:
        inits.setdefault(wg[4:8], (ts, any(wg[132:148])))
    elif dst == me and len(wg) == 64 and wg[0] == 3:
        cookies.append(ts)
    elif dst == me and len(wg) == 92 and wg[0] == 2 and resp is None:
        resp = (ts, wg[8:12])
if resp is None:
    print("error=no handshake response to A")
    sys.exit()
if resp[1] not in inits:
    print("error=the response answers no initiation A sent")
    sys.exit()
t_init, has_mac2 = inits[resp[1]]
print("initiations=%d" % sum(1 for t, _ in inits.values() if t <= resp[0]))
print("cookies_before=%d" % sum(1 for t in cookies if t < t_init))
print("mac2=%d" % has_mac2)
print("ms=%d" % round((resp[0] - t_init) * 1000))
EOF
) || fail "cannot read the capture on ve-a"
pcap_field() { awk -F= -v k="$1" '$1 == k { print $2 }' <<<"$out"; }
[[ -z $(pcap_field error) ]] || fail "capture on ve-a: $(pcap_field error)"
log "at A: $(pcap_field initiations) initiations up to the response, which answers one with mac2=$(pcap_field mac2) sent after $(pcap_field cookies_before) cookie replies, $(pcap_field ms) ms before it"
(($(pcap_field cookies_before) >= 1)) || fail "A got no cookie reply before the answered initiation: B was not under load for it"
(($(pcap_field mac2) == 1)) || fail "B answered an initiation of A's without mac2 while under load"
if has_stats "$IF_A"; then
	stats_snap "$IF_A" SA1
	(($(snap_delta SA0 SA1 hs_cookies_received) >= 1)) || fail "A counted no cookie reply"
fi

step "phase 2: C answers its cookies with mac2 (4 s): the rate limit holds"
FLOOD_OUT=$WORK/flood2.txt
rl_secs=4
ip netns exec "$NS_C" timeout $((rl_secs + 10)) "$HS_FLOOD" -c -d "$rl_secs" -r "$RATE" \
	"$PUB_b" "$OUT4_BC" "$PB" "$SRC_FIRST" "$NSRC" >"$FLOOD_OUT" || fail "hs_flood -c failed"
stats_snap "$IF_B" S2
log "hs_flood -c: $(tr '\n' ' ' <<<"$(cat "$FLOOD_OUT")")"
for k in hs_initiations_received hs_cookies_sent hs_ratelimited hs_failed hs_queue_full; do
	log "  B $k +$(snap_delta S1 S2 "$k")"
done
MAC2=$(flood_field "$FLOOD_OUT" sent_with_mac2)
RL=$(snap_delta S1 S2 hs_ratelimited)
INITS=$(snap_delta S1 S2 hs_initiations_received)
BOUND=$((NSRC * (5 + 20 * (rl_secs + 1)) + 1024))
((MAC2 > 0)) || fail "C never got a cookie it could use"
((RL > 0)) || fail "B rate-limited none of $MAC2 initiations with a valid mac2"
((INITS <= BOUND)) || fail "$INITS initiations reached B's Noise code in ${rl_secs} s (bound $BOUND)"
log "C sent $MAC2 with mac2; B rate-limited $RL, let $INITS through (bound $BOUND)"

step "afterwards: B alive, the tunnel works"
responsive "$NS_B" "$IF_B" || fail "B does not answer wg show after the flood"
ping_ok "$NS_A" "$IN4_B" 5 || fail "ping A -> B after the flood"
stop_daemon "$IF_A"
stop_daemon "$IF_B"
pass
