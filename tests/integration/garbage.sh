#!/usr/bin/env bash
# garbage.sh IMPL_A IMPL_B — B (weftd) takes a flood of random and mutated
# datagrams on its WireGuard port while a TCP transfer runs through the
# tunnel: it must stay up and responsive, keep its memory, finish the
# transfer, and count every garbage datagram as a drop.
#
#   netns ...-a                   netns ...-b                    netns ...-c
#  +-------------------+        +---------------------------+  +------------------+
#  | IMPL_A  wgPIDa    |        | weftd  wgPIDb  :51821     |  | udp_garbage      |
#  |  10.241.0.1       |        |  10.241.0.2               |  |  (sendmmsg)      |
#  |  iperf3 -c -------+- tun --+-> iperf3 -s               |  |                  |
#  | ve-a 192.168.241.1+-- veth-+- ve-b 192.168.241.2       |  |                  |
#  |                   |        |  ve-bc 10.242.0.1 <-------+--+- ve-c 10.242.0.2 |
#  |                   |        |        fd00:242::1 <------+--+-  fd00:242::2    |
#  +-------------------+        +---------------------------+  +------------------+
#
# The garbage (udp_garbage -m mix): random bytes of length 0..1500, and
# WireGuard-looking datagrams: types 1-4 at their right and wrong sizes with
# random MACs, data messages with random receiver indices and counters,
# unknown types. 1,000,000 of them (200,000 in a sanitizer build, or
# WEFT_GARBAGE_COUNT), three quarters over IPv4 and one quarter over IPv6.
#
# Accounting. B's namespace counts, with an nftables counter on its input
# hook, the datagrams from C to B's port that reach local delivery: G (one
# per datagram, after IPv4 reassembly; the first fragment of an IPv6 one).
# Of those, the kernel drops some at the socket (full buffer, bad checksum):
# they show in UdpInErrors + Udp6InErrors, Lost. Every other one reached
# weftd, so with
#   R = drop_replay + drop_inner_source + drop_unknown_index + drop_decrypt
#     + drop_key_expired + drop_malformed + hs_invalid_mac + hs_ratelimited
#     + hs_failed + hs_queue_full
# a daemon that counts every drop has R >= G - Lost (the tunnel's own drops
# only add to R). And R <= G + 1000: nothing is counted twice (the tunnel
# itself drops next to nothing on a veth).
#
# The kernel-only form of the check is asserted too. D, the datagrams the
# kernel delivered to a socket (UdpInDatagrams + Udp6InDatagrams, read once
# B's sockets have empty receive queues), is the garbage delivered plus L,
# the tunnel's own datagrams, and L is at most rx_packets + the handshake
# messages that reached the handshake code (hs_initiations_received,
# hs_responses_received, hs_cookies_received, hs_cookies_sent) + K
# keepalives (weftd counts none; K = 8) + the tunnel's own drops (in R). So
# R >= D - rx_packets - handshakes - K. It is loose: A sends UDP GSO
# super-datagrams that B's socket (UDP_GRO) reads as one, so D counts many
# tunnel packets once that rx_packets counts each.
#
# A quiet window before the flood has no legitimate traffic at all (B's
# peer rx bytes in `wg show` unchanged): every delivered datagram is garbage,
# G - Lost must equal D, and R must grow by exactly D; once for each kind of
# garbage (zero-length, random, WireGuard-looking).
#
# A sanitizer build of weftd (found by the __asan_init symbol in the
# binary: the CMake test function passes no build flags) gets 200,000
# datagrams instead.
#
# Memory: B's PSS is read after a warm-up (an iperf3 run and a small flood
# touch the buffer pools), then after the big flood; it may grow by at most
# 4 MiB (16 MiB in a sanitizer build, whose allocator quarantines freed
# memory).
. "$(dirname "$0")/lib.sh"
lib_init "$@"
need_cmd iperf3 ss nft
need_tool udp_garbage
is_weftd "$IMPL_B" || skip "B receives the garbage and must be weftd (its drop counters); B is $IMPL_B"
make_hosts
add_third_host

PB=51821
if is_sanitized "$(impl_bin "$IMPL_B")"; then
	COUNT=${WEFT_GARBAGE_COUNT:-200000}
	PSS_SLACK_KB=$((16 * 1024))
	log "sanitizer build: $COUNT datagrams, PSS bound +16 MiB"
else
	COUNT=${WEFT_GARBAGE_COUNT:-1000000}
	PSS_SLACK_KB=$((4 * 1024))
fi
COUNT4=$((COUNT * 3 / 4))
COUNT6=$((COUNT - COUNT4))
REJECTS=(drop_replay drop_inner_source drop_unknown_index drop_decrypt drop_key_expired
	drop_malformed hs_invalid_mac hs_ratelimited hs_failed hs_queue_full)
HANDSHAKES=(hs_initiations_received hs_responses_received hs_cookies_received hs_cookies_sent)
KEEPALIVE_SLACK=8

# nftables counters in B's namespace: datagrams to B's port from C (garbage)
# and from A (the tunnel), at the input hook.
count_rules() {
	ip netns exec "$NS_B" nft -f - <<-EOF
	table inet weft_garbage {
		counter from_c {}
		counter from_a {}
		chain input {
			type filter hook input priority 0; policy accept;
			ip saddr $OUT4_BC/16 udp dport $PB counter name "from_c"
			ip6 saddr $OUT6_BC/64 udp dport $PB counter name "from_c"
			ip saddr $OUT4_A/24 udp dport $PB counter name "from_a"
			ip6 saddr $OUT6_A/64 udp dport $PB counter name "from_a"
		}
	}
	EOF
}
nft_packets() {
	ip netns exec "$NS_B" nft list counter inet weft_garbage "$1" | awk '/packets/ { for (i = 1; i < NF; i++) if ($i == "packets") print $(i + 1) }'
}
in_errors_b() { echo $(($(kcounter "$NS_B" UdpInErrors) + $(kcounter "$NS_B" Udp6InErrors))); }
delivered_b() { echo $(($(kcounter "$NS_B" UdpInDatagrams) + $(kcounter "$NS_B" Udp6InDatagrams))); }

# garbage FAMILY COUNT [udp_garbage options]: from C to B's port; logs the kinds.
garbage() {
	local fam=$1 n=$2 dst out
	shift 2
	if [[ $fam == 6 ]]; then dst=$OUT6_BC; else dst=$OUT4_BC; fi
	out=$(ip netns exec "$NS_C" timeout 60 "$UDP_GARBAGE" -n "$n" "$@" "$dst" "$PB" 2>&1) ||
		fail "udp_garbage to $dst failed"
	log "udp_garbage IPv$fam: $(tr '\n' ' ' <<<"$out")"
	grep -qx "sent=$n" <<<"$out" || fail "udp_garbage sent fewer than $n datagrams"
}

wait_drained() {
	wait_for "$HANG_SECS" udp_drained "$NS_B" "$PB" || hang "B's sockets still hold unread datagrams"
}

# rejects_reach N: B's reject counters grew by at least N since S0 (S1 is
# read anew). A datagram read from the socket may still be in a worker's
# batch: the counters are waited for, not read once after a pause.
rejects_reach() {
	stats_snap "$IF_B" S1
	(($(snap_delta S0 S1 "${REJECTS[@]}") >= $1))
}

check_alive() {
	alive "${DAEMON_PID[$IF_B]}" || fail "weftd $IF_B died ($1)"
	responsive "$NS_B" "$IF_B" || hang "weftd $IF_B answers no wg show ($1)"
}

step "tunnel up: A ($IMPL_A) initiates to B (weftd)"
setup_pair 51820 "$PB" 4
PID_B=${DAEMON_PID[$IF_B]}
count_rules || fail "cannot add nftables counters in B's namespace"
[[ $(cat "/proc/$PID_B/comm") == weftd* ]] || fail "pid $PID_B is $(cat "/proc/$PID_B/comm"), not weftd"
ping_within "$NS_A" "$IN4_B" 3 8 || fail "no ping through the tunnel"

step "quiet window: only garbage reaches B; R grows by exactly the delivered count"
declare -A S0 S1
for mode in empty random wg; do
	wait_drained
	stats_snap "$IF_B" S0
	d0=$(delivered_b)
	g0=$(nft_packets from_c)
	e0=$(in_errors_b)
	rx0=$(peer_field "$NS_B" "$IF_B" "$PUB_a" rx)
	garbage 4 20000 -m "$mode"
	garbage 6 5000 -m "$mode"
	wait_drained
	d1=$(delivered_b)
	g1=$(nft_packets from_c)
	e1=$(in_errors_b)
	rx1=$(peer_field "$NS_B" "$IF_B" "$PUB_a" rx)
	D=$((d1 - d0))
	want=$D
	((rx1 == rx0)) || want=$((D - KEEPALIVE_SLACK))
	wait_for "$HANG_SECS" rejects_reach "$want" || log "reject counters short of $want after $HANG_SECS s (checked below)"
	stats_snap "$IF_B" S1
	r=$(snap_delta S0 S1 "${REJECTS[@]}")
	log "mode $mode: from C $((g1 - g0)), dropped at the socket $((e1 - e0)), delivered $D, rejects +$r (malformed +$(snap_delta S0 S1 drop_malformed), unknown_index +$(snap_delta S0 S1 drop_unknown_index), invalid_mac +$(snap_delta S0 S1 hs_invalid_mac), queue_full +$(snap_delta S0 S1 hs_queue_full), hs_failed +$(snap_delta S0 S1 hs_failed)), peer rx bytes +$((rx1 - rx0))"
	((D >= 25000 / 4)) || fail "mode $mode: B's kernel delivered only $D of 25000 datagrams"
	if ((rx1 == rx0)); then
		((g1 - g0 - (e1 - e0) == D)) || fail "mode $mode: nftables saw $((g1 - g0)) datagrams from C, the kernel dropped $((e1 - e0)) at the socket but delivered $D (the accounting below relies on them agreeing)"
		if [[ $mode == empty ]] && ((r < D)); then
			fail "mode $mode: $D zero-length datagrams delivered to weftd, its reject counters grew by $r: empty datagrams are dropped without a counter"
		fi
		((r == D)) || fail "mode $mode: $D garbage datagrams delivered to weftd, but its reject counters grew by $r"
	else
		# A keepalive or handshake from A slipped in: allow for it.
		((r >= D - KEEPALIVE_SLACK && r <= D)) ||
			fail "mode $mode: $D datagrams delivered (some from A), reject counters grew by $r"
	fi
	check_alive "after the $mode garbage"
done

step "warm-up: iperf3 2 s and a small flood, then B's memory baseline"
bg ip netns exec "$NS_B" timeout 90 iperf3 -s -p 5201 -B "$IN4_B"
wait_listen "$NS_B" 5201
ip netns exec "$NS_A" timeout 20 iperf3 -c "$IN4_B" -p 5201 -t 2 >/dev/null 2>&1 || fail "warm-up iperf3 failed"
garbage 4 20000 -m mix
garbage 6 5000 -m mix
wait_drained
PSS0=$(pss_kb "$PID_B")
log "B's PSS after warm-up: $PSS0 KiB"

step "flood: $COUNT garbage datagrams during an iperf3 TCP transfer A -> B"
stats_snap "$IF_B" S0
d0=$(delivered_b)
g0=$(nft_packets from_c)
l0=$(nft_packets from_a)
e0=$(in_errors_b)
IPERF_OUT=$WORK/iperf-flood.json
ip netns exec "$NS_A" timeout 60 iperf3 -c "$IN4_B" -p 5201 -t 12 -J >"$IPERF_OUT" 2>&1 &
IPERF_PID=$!
BG_PIDS+=("$IPERF_PID")
sleep 1
t0=$(now_ms)
garbage 4 "$COUNT4" -m mix
check_alive "during the flood"
garbage 6 "$COUNT6" -m mix
ms=$(($(now_ms) - t0))
log "flood of $COUNT datagrams took $ms ms ($((COUNT * 1000 / (ms + 1))) datagrams/s offered)"
check_alive "right after the flood"
alive "$IPERF_PID" || log "note: iperf3 ended before the flood did"
wait_for "$HANG_SECS" dead "$IPERF_PID" || hang "iperf3 (12 s) did not end"
rc=0
wait "$IPERF_PID" || rc=$?
((rc == 0)) || { cat "$IPERF_OUT" >&2; fail "iperf3 through the tunnel failed during the flood (exit $rc)"; }
bps=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]))' "$IPERF_OUT" 2>/dev/null ||
	awk -F'[:,]' '/"bits_per_second"/ { v = $2 } END { printf "%d\n", v }' "$IPERF_OUT")
log "iperf3 during the flood: $((bps / 1000000)) Mbit/s"
((bps > 0)) || fail "iperf3 moved no data during the flood"

wait_drained
d1=$(delivered_b)
g1=$(nft_packets from_c)
l1=$(nft_packets from_a)
e1=$(in_errors_b)
D=$((d1 - d0)) G=$((g1 - g0)) LOST=$((e1 - e0))
wait_for "$HANG_SECS" rejects_reach $((G - LOST)) || log "reject counters short of $((G - LOST)) after $HANG_SECS s (checked below)"
stats_snap "$IF_B" S1
R=$(snap_delta S0 S1 "${REJECTS[@]}")
RX=$(snap_delta S0 S1 rx_packets)
HS=$(snap_delta S0 S1 "${HANDSHAKES[@]}")
log "from C (garbage) $G datagrams, from A (tunnel) $((l1 - l0)) socket reads' worth; kernel delivered $D, dropped $LOST at the socket; rx_packets +$RX, handshake messages +$HS"
for k in "${REJECTS[@]}"; do
	log "  $k +$(snap_delta S0 S1 "$k")"
done
log "reject counters R = +$R; need $((G - LOST)) <= R <= $((G + 1000))"
((R >= G - LOST)) || fail "weftd counted $R rejects, but at least $((G - LOST)) garbage datagrams reached it: $((G - LOST - R)) were dropped without a counter"
((R <= G + 1000)) || fail "weftd counted $R rejects for $G garbage datagrams: counted twice?"
LOWER=$((D - RX - HS - KEEPALIVE_SLACK))
log "kernel-only form: R >= delivered - rx_packets - handshakes - $KEEPALIVE_SLACK = $LOWER"
((R >= LOWER)) || fail "weftd counted $R rejects for at least $LOWER garbage datagrams delivered to it"
# Most of the garbage must actually reach weftd, or the test proves little.
((G - LOST >= COUNT / 4)) || fail "only $((G - LOST)) of $COUNT garbage datagrams reached weftd's socket"

step "memory and health after the flood"
PSS1=$(pss_kb "$PID_B")
log "B's PSS: $PSS0 KiB before, $PSS1 KiB after (+$((PSS1 - PSS0)) KiB, bound +$PSS_SLACK_KB KiB)"
((PSS1 - PSS0 <= PSS_SLACK_KB)) || fail "B's PSS grew by $((PSS1 - PSS0)) KiB during the flood"
check_alive "at the end"
ping_ok "$NS_A" "$IN4_B" 5 || fail "ping A -> B after the flood"
ping_ok "$NS_B" "$IN6_A" 5 || fail "ping6 B -> A after the flood"
stop_daemon "$IF_A"
stop_daemon "$IF_B"
pass
