#!/usr/bin/env bash
# replay.sh IMPL_A IMPL_B — captured transport-data datagrams sent again
# must all be rejected by A's replay protection.
#
#   netns weft-replay-PID-a                     netns weft-replay-PID-b
#  +-------------------------------+          +-------------------------------+
#  | IMPL_A wgPIDa4/6 10.241.0.1   |          | IMPL_B wgPIDb4/6 10.241.0.2   |
#  |  tcpdump icmp on wgPIDa       |          |  tcpdump udp on ve-b -> pcap  |
#  |                               |          |  udp_replay pcap (raw socket, |
#  |                               |          |   same source port 51821)     |
#  |  ve-a 192.168.241.1 :51820 <--+-- veth --+-- ve-b 192.168.241.2 :51821   |
#  |       fd00:241::1             |          |       fd00:241::2             |
#  +-------------------------------+          +-------------------------------+
#
# Once over the IPv4 outer path and once over IPv6: B pings A while its
# datagrams are captured; then the type-4 datagrams B sent to A are resent
# byte for byte from B's address and port (a raw socket, since B's daemon
# holds the port). A's kernel must deliver all of them to A's daemon (UDP
# InDatagrams, no checksum errors), and A must drop all of them: no extra ICMP
# echo request out of A's wg interface (A's kernel IcmpInEchos, and tcpdump on
# it); weftd: drop_replay grows by exactly that many. Control: pings that A never received (A listened on another port
# meanwhile) come out of A's wg interface when resent the first time, and are
# dropped the second time.
. "$(dirname "$0")/lib.sh"
lib_init "$@"
need_cmd tcpdump
need_udp_replay
make_hosts

echoes_at_a() { echo $(($(kcounter "$NS_A" IcmpInEchos) + $(kcounter "$NS_A" Icmp6InEchos))); }
echoes_reach() { (($(echoes_at_a) >= $1)); }
# counter_reaches IFNAME KEY N: weftd's counter KEY is at least N.
counter_reaches() { (($(stats "$1" "$2") >= $3)); }
# wait_counter IFNAME KEY N: waits (hang guard) for KEY to reach N; what it
# reached is checked by the caller. A datagram read from the socket may
# still be in a worker's batch: counters are waited for, not read once.
wait_counter() { wait_for "$HANG_SECS" counter_reaches "$@" || true; }

# replay_to_a FAMILY PCAP all|none [UDP_REPLAY_OPTION...]: resends B's type-4 datagrams to A, checks
# that A's kernel delivered every one to a socket without checksum errors,
# and that all (or none) of them came out of A's wg interface as echo
# requests (A's ICMP InEchos counters, and tcpdump on the interface). Sets SENT.
replay_to_a() {
	local fam=$1 pcap=$2 want=$3 out_a u n in0 in1 cs0 cs1 e0 e1 seen
	if [[ $fam == 4 ]]; then out_a=$OUT4_A u=Udp; else out_a=$OUT6_A u=Udp6; fi
	n=$("$UDP_REPLAY" -n -m 51820 -p 51821 "$pcap" "$out_a" 51820 51821)
	[[ $want == all ]] && want=$n
	[[ $want == none ]] && want=0
	in0=$(kcounter "$NS_A" ${u}InDatagrams)
	cs0=$(kcounter "$NS_A" ${u}InCsumErrors)
	e0=$(echoes_at_a)
	capture_start "$NS_A" "$IF_A" "$WORK/a-wg.pcap" icmp or icmp6
	SENT=$(ip netns exec "$NS_B" "$UDP_REPLAY" "${@:4}" -m 51820 -p 51821 "$pcap" "$out_a" 51820 51821) ||
		fail "udp_replay failed"
	((SENT == n)) || fail "udp_replay sent $SENT of $n"
	# Waited for, not paused for: every datagram delivered to A's socket
	# and read from it, and (when wanted) the echo requests out.
	delivered_all() { (($(kcounter "$NS_A" ${u}InDatagrams) - in0 >= SENT)); }
	wait_for "$HANG_SECS" delivered_all || true
	wait_for "$HANG_SECS" udp_drained "$NS_A" 51820 || hang "A's socket still holds resent datagrams"
	if ((want > 0)); then wait_for "$HANG_SECS" echoes_reach $((e0 + want)) || true; fi
	capture_stop "$CAPTURE_PID"
	in1=$(kcounter "$NS_A" ${u}InDatagrams)
	cs1=$(kcounter "$NS_A" ${u}InCsumErrors)
	e1=$(echoes_at_a)
	((cs1 == cs0)) || fail "A's kernel saw $((cs1 - cs0)) UDP checksum errors: the resent datagrams are malformed"
	((in1 - in0 >= SENT)) || fail "A's kernel delivered only $((in1 - in0)) of $SENT resent datagrams to a socket"
	seen=$(capture_count "$WORK/a-wg.pcap" "icmp[icmptype] == icmp-echo or icmp6[icmp6type] == icmp6-echo")
	log "resent $SENT datagrams; A's kernel delivered $((in1 - in0)) to a socket; $((e1 - e0)) echo requests came out of $IF_A (tcpdump saw $seen)"
	((e1 - e0 == want)) || fail "$((e1 - e0)) echo requests came out of $IF_A, expected $want"
	((want > 0 || seen == 0)) || fail "tcpdump saw $seen echo requests on $IF_A, expected none"
}

round() {
	local fam=$1 dr0 dr1 dm0 dm1
	IF_A=$(ifname "a$fam")
	IF_B=$(ifname "b$fam")
	step "outer IPv$fam: capture B's datagrams of a ping exchange"
	setup_pair 51820 51821 "$fam"
	ping_ok "$NS_A" "$IN4_B" 3 || fail "ping $IN4_B (handshake)"
	capture_start "$NS_B" ve-b "$WORK/seen$fam.pcap" udp
	ping_ok "$NS_B" "$IN4_A" 10 || fail "ping $IN4_A from B"
	ping_ok "$NS_B" "$IN6_A" 5 || fail "ping $IN6_A from B"
	capture_stop "$CAPTURE_PID"

	step "outer IPv$fam: resend them from B's address and port: all dropped"
	has_stats "$IF_A" && dr0=$(stats "$IF_A" drop_replay)
	replay_to_a "$fam" "$WORK/seen$fam.pcap" none
	((SENT >= 15)) || fail "only $SENT transport-data datagrams B -> A were captured (expected >= 15)"
	if has_stats "$IF_A"; then
		wait_counter "$IF_A" drop_replay $((dr0 + SENT))
		dr1=$(stats "$IF_A" drop_replay)
		((dr1 - dr0 == SENT)) || fail "$IF_A: drop_replay grew by $((dr1 - dr0)), expected $SENT"
		log "$IF_A: drop_replay +$((dr1 - dr0))"
	fi

	# Control: datagrams A never received are accepted once, then dropped.
	# This shows the resent datagrams are valid and the checks can fail.
	step "outer IPv$fam: control: datagrams A never got are accepted once, then dropped"
	nswg "$NS_A" set "$IF_A" listen-port 51830
	capture_start "$NS_B" ve-b "$WORK/unseen$fam.pcap" udp
	ping_none "$NS_B" "$IN4_A" 5 || fail "A answered while listening elsewhere"
	capture_stop "$CAPTURE_PID"
	nswg "$NS_A" set "$IF_A" listen-port 51820
	has_stats "$IF_A" && dr0=$(stats "$IF_A" drop_replay)
	# First with the type word's reserved bytes set: of no known type, so
	# dropped as malformed before any key or the replay window sees them.
	has_stats "$IF_A" && dm0=$(stats "$IF_A" drop_malformed)
	replay_to_a "$fam" "$WORK/unseen$fam.pcap" none -r
	if has_stats "$IF_A"; then
		wait_counter "$IF_A" drop_malformed $((dm0 + SENT))
		dm1=$(stats "$IF_A" drop_malformed)
		((dm1 - dm0 == SENT)) || fail "$IF_A: drop_malformed grew by $((dm1 - dm0)) for $SENT datagrams with reserved bytes set"
		log "$IF_A: reserved bytes set: drop_malformed +$((dm1 - dm0))"
	fi
	replay_to_a "$fam" "$WORK/unseen$fam.pcap" all
	if has_stats "$IF_A"; then
		dr1=$(stats "$IF_A" drop_replay)
		((dr1 == dr0)) || fail "$IF_A: drop_replay grew by $((dr1 - dr0)) for datagrams it never saw"
	fi
	replay_to_a "$fam" "$WORK/unseen$fam.pcap" none
	if has_stats "$IF_A"; then
		wait_counter "$IF_A" drop_replay $((dr0 + SENT))
		dr1=$(stats "$IF_A" drop_replay)
		((dr1 - dr0 == SENT)) || fail "$IF_A: drop_replay grew by $((dr1 - dr0)) on the second copy, expected $SENT"
	fi

	step "outer IPv$fam: the tunnel still works"
	ping_ok "$NS_B" "$IN4_A" 3 || fail "ping after the replay"
	ping_ok "$NS_A" "$IN4_B" 3 || fail "ping after the replay"
	stop_daemon "$IF_A"
	stop_daemon "$IF_B"
}

round 4
round 6
pass
