#!/usr/bin/env bash
# rekey.sh IMPL_A IMPL_B — key lifetime timers, with weftd's protocol clock
# sped up (WEFT_TEST_CLOCK_SPEEDUP) on both sides.
#
#   netns weft-rekey-PID-a                      netns weft-rekey-PID-b
#  +-------------------------------+          +-------------------------------+
#  | weftd wgPIDa1/2 10.241.0.1    |          | weftd wgPIDb1/2 10.241.0.2    |
#  |  (initiator)                  |          |  tcpdump udp on ve-b (part 2) |
#  |  ve-a 192.168.241.1 :51820 ---+-- veth --+--- :51821 ve-b 192.168.241.2  |
#  +-------------------------------+          +-------------------------------+
#
# Part 1, speedup 20: A pings B every 0.1 s for 200 protocol seconds (10 s).
#   REKEY_AFTER_TIME (120 s) passes: a new handshake happens (latest-handshake
#   changes, keypairs_created grows on both sides), and neither side drops
#   a packet (its drop_* counters stay put; lost pings are logged only: on a
#   loaded machine a ping can be lost outside weftd).
# Part 2, speedup 60: after a ping exchange, B's captured data datagrams
#   resent at once are dropped and counted (drop_replay, or drop_key_expired /
#   drop_unknown_index if the sped-up clock passed their keys' lifetime). Then 720 protocol seconds (12 s)
#   without traffic: past 3 x REJECT_AFTER_TIME (540 s) the keys are zeroed,
#   so the same datagrams now name an unknown receiver index
#   (drop_unknown_index), and the next ping needs a new handshake.
#
# Needs weftd on both sides. WEFT_TEST_REAL_TIME=1 runs it at speed 1 against
# any implementation (about 15 minutes; raise WEFT_TEST_TIMEOUT) to check the
# script itself.
. "$(dirname "$0")/lib.sh"
lib_init "$@"
need_cmd tcpdump
need_udp_replay
if is_weftd "$IMPL_A" && is_weftd "$IMPL_B"; then
	SPEED1=20 SPEED2=60
elif [[ -n ${WEFT_TEST_REAL_TIME:-} ]]; then
	SPEED1=1 SPEED2=1
	skip_part "sped-up clock ($IMPL_A/$IMPL_B): running in real time"
else
	skip "needs weftd on both sides (WEFT_TEST_CLOCK_SPEEDUP); got $IMPL_A/$IMPL_B"
fi
make_hosts

# real_ms PROTOCOL_SECONDS SPEED: real milliseconds for that protocol time.
real_ms() { echo $(($1 * 1000 / $2)); }

keypairs() { if has_stats "$1"; then stats "$1" keypairs_created; else echo 0; fi; }

# drops IFNAME: the sum of weftd's drop_* counters but drop_no_route (the
# kernel's own IPv6 multicast on the inner link goes there).
drops() {
	uapi "$1" "stats=1" | awk -F= '$1 ~ /^drop_/ && $1 != "drop_no_route" { s += $2 } END { print s + 0 }'
}

step "part 1 (speedup $SPEED1): continuous pings across REKEY_AFTER_TIME"
IF_A=$(ifname a1)
IF_B=$(ifname b1)
setup_pair 51820 51821 4 WEFT_TEST_CLOCK_SPEEDUP=$SPEED1
ping_ok "$NS_A" "$IN4_B" 2 || fail "first ping"
hs0=$(latest_handshake "$NS_A" "$IF_A" "$PUB_b")
ka0=$(keypairs "$IF_A")
kb0=$(keypairs "$IF_B")
if has_stats "$IF_A"; then da0=$(drops "$IF_A") db0=$(drops "$IF_B"); fi
# 200 protocol seconds of pings (135 in real time: just past 120).
if ((SPEED1 > 1)); then proto=200; else proto=135; fi
ms=$(real_ms $proto "$SPEED1")
count=$((ms / 100))
log "pinging every 0.1 s for $ms ms ($count pings, $proto protocol seconds)"
out=$(ip netns exec "$NS_A" timeout $((ms / 1000 + HANG_SECS)) ping -n -q -i 0.1 -W 1 -c "$count" "$IN4_B" 2>&1 || true)
summary=$(grep 'packets transmitted' <<<"$out") || fail "no ping summary: $out"
log "pings: $summary"
sent=$(awk '{print $1}' <<<"$summary")
recv=$(awk '{print $4}' <<<"$summary")
((sent == count)) || fail "ping sent $sent of $count"
((recv > 0)) || fail "no ping answered across the rekey"
if has_stats "$IF_A"; then
	da1=$(drops "$IF_A") db1=$(drops "$IF_B")
	log "$((sent - recv)) pings unanswered (for information); drops A +$((da1 - da0)), B +$((db1 - db0))"
	((da1 == da0 && db1 == db0)) ||
		fail "weftd dropped packets across the rekey: A +$((da1 - da0)), B +$((db1 - db0)) (stats=1 drop_*)"
else
	# Real time against another implementation: no counters to ask.
	((sent - recv <= 2)) || fail "$((sent - recv)) pings lost across the rekey (at most 2 allowed)"
fi
hs1=$(latest_handshake "$NS_A" "$IF_A" "$PUB_b")
[[ $hs1 != "$hs0" ]] || fail "latest-handshake did not change ($hs0) after $proto protocol seconds of traffic"
log "latest-handshake $hs0 -> $hs1"
if has_stats "$IF_A"; then
	ka1=$(keypairs "$IF_A")
	kb1=$(keypairs "$IF_B")
	log "keypairs_created: A $ka0 -> $ka1, B $kb0 -> $kb1"
	((ka1 > ka0)) || fail "$IF_A: keypairs_created did not grow ($ka0 -> $ka1)"
	((kb1 > kb0)) || fail "$IF_B: keypairs_created did not grow ($kb0 -> $kb1)"
fi
stop_daemon "$IF_A"
stop_daemon "$IF_B"

step "part 2 (speedup $SPEED2): keys zeroed after 3 x REJECT_AFTER_TIME of silence"
IF_A=$(ifname a2)
IF_B=$(ifname b2)
setup_pair 51820 51821 4 WEFT_TEST_CLOCK_SPEEDUP=$SPEED2
ping_ok "$NS_A" "$IN4_B" 2 || fail "first ping"
capture_start "$NS_B" ve-b "$WORK/old.pcap" udp
ping_ok "$NS_B" "$IN4_A" 5 || fail "ping B -> A"
capture_stop "$CAPTURE_PID"
resend() {
	ip netns exec "$NS_B" "$UDP_REPLAY" -m 51820 -p 51821 "$WORK/old.pcap" "$OUT4_A" 51820 51821
}
# counter_reaches IFNAME KEY N: weftd's counter KEY is at least N. The
# resent datagrams may still be on their way or in a worker's batch when
# resend returns: the counters are waited for (hang guard), then compared.
counter_reaches() { (($(stats "$1" "$2") >= $3)); }
# replay_drops IFNAME: what a resent datagram can be dropped as: a replay
# while its keypair is valid, an expired key past REJECT_AFTER_TIME, an
# unknown index once it is gone. On a slow machine the sped-up clock
# (REJECT_AFTER_TIME is 3 s here) may pass between capture and resend
# (seen: drop_key_expired +9 for 9): each of them is right.
replay_drops() {
	echo $(($(stats "$1" drop_replay) + $(stats "$1" drop_key_expired) + $(stats "$1" drop_unknown_index)))
}
replay_drops_reach() { (($(replay_drops "$1") >= $2)); }
if has_stats "$IF_A"; then
	dr0=$(stats "$IF_A" drop_replay)
	rd0=$(replay_drops "$IF_A")
	echo0=$(kcounter "$NS_A" IcmpInEchos)
	declare -A RS0 RS1
	stats_snap "$IF_A" RS0
	sent=$(resend)
	((sent >= 5)) || fail "captured only $sent data datagrams B -> A"
	wait_for "$HANG_SECS" replay_drops_reach "$IF_A" $((rd0 + sent)) || true
	dr1=$(stats "$IF_A" drop_replay)
	rd1=$(replay_drops "$IF_A")
	echo1=$(kcounter "$NS_A" IcmpInEchos)
	((echo1 == echo0)) || fail "$((echo1 - echo0)) of $sent replayed datagrams were accepted"
	if ((rd1 - rd0 != sent)); then
		stats_snap "$IF_A" RS1
		for k in "${!RS1[@]}"; do
			[[ ${RS1[$k]} == "${RS0[$k]:-}" ]] || log "  $IF_A $k: ${RS0[$k]:-} -> ${RS1[$k]}"
		done
		fail "$IF_A: drop_replay + drop_key_expired + drop_unknown_index +$((rd1 - rd0)) for $sent replays"
	fi
	log "$IF_A: $sent replays: drop_replay +$((dr1 - dr0)), expired or unknown index +$((rd1 - rd0 - (dr1 - dr0)))"
fi
hs0=$(latest_handshake "$NS_A" "$IF_A" "$PUB_b")
ka0=$(keypairs "$IF_A")
# 720 protocol seconds, comfortably past 540 (REJECT_AFTER_TIME x 3).
ms=$(real_ms 720 "$SPEED2")
log "no traffic for $ms ms (720 protocol seconds)"
sleep "$((ms / 1000)).$((ms % 1000 / 100))"
echo0=$(kcounter "$NS_A" IcmpInEchos)
if has_stats "$IF_A"; then
	unk0=$(stats "$IF_A" drop_unknown_index)
	dr0=$(stats "$IF_A" drop_replay)
fi
sent=$(resend)
if has_stats "$IF_A"; then
	wait_for "$HANG_SECS" counter_reaches "$IF_A" drop_unknown_index $((unk0 + sent)) || true
else
	sleep 0.3 # no counter to wait for: a pause before the echo count
fi
echo1=$(kcounter "$NS_A" IcmpInEchos)
((echo1 == echo0)) || fail "$((echo1 - echo0)) old datagrams were accepted after the keys expired"
if has_stats "$IF_A"; then
	unk1=$(stats "$IF_A" drop_unknown_index)
	dr1=$(stats "$IF_A" drop_replay)
	log "$IF_A: $sent old datagrams after 720 s: drop_unknown_index +$((unk1 - unk0)), drop_replay +$((dr1 - dr0))"
	((unk1 - unk0 == sent)) ||
		fail "$IF_A: drop_unknown_index +$((unk1 - unk0)) for $sent datagrams of a keypair that should be zeroed"
fi
ping_ok "$NS_A" "$IN4_B" 3 || fail "ping after the silence"
hs1=$(latest_handshake "$NS_A" "$IF_A" "$PUB_b")
[[ $hs1 != "$hs0" ]] || fail "no new handshake after the keys were zeroed ($hs0)"
if has_stats "$IF_A"; then
	ka1=$(keypairs "$IF_A")
	((ka1 > ka0)) || fail "$IF_A: keypairs_created did not grow after the silence ($ka0 -> $ka1)"
fi
log "new handshake after the silence: $hs0 -> $hs1"
pass
