#!/usr/bin/env bash
# interop.sh IMPL_A IMPL_B — two implementations talk WireGuard to each other.
#
#   netns weft-interop-PID-a                    netns weft-interop-PID-b
#  +-------------------------------+          +-------------------------------+
#  | IMPL_A (initiator)            |          | IMPL_B (responder)            |
#  |  wgPIDa4/6  10.241.0.1/24     |          |  wgPIDb4/6  10.241.0.2/24     |
#  |             fd00:10::1/64     |          |             fd00:10::2/64     |
#  |  ve-a  192.168.241.1/24  -----+-- veth --+----- ve-b 192.168.241.2/24    |
#  |        fd00:241::1/64  :51820 |          | :51821  fd00:241::2/64        |
#  +-------------------------------+          +-------------------------------+
#
# Run twice: A's endpoint for B is the IPv4 outer address, then the IPv6 one
# (fresh daemons each time). B has no endpoint for A: it learns it from A's
# initiation. Checks: a handshake after the first ping (its time logged, and
# its latest-handshake stamp between the ping and now), ping over inner
# IPv4 and IPv6 both ways, iperf3 TCP (1 GB each way over IPv4, 3 s over IPv6), a 20 MB random file
# whose sha256 matches on both ends, 3,200 UDP datagrams in bursts of one size
# (what a receiving weftd coalesces into UDP GSO writes) each checked intact,
# and (weftd) counters that match.
. "$(dirname "$0")/lib.sh"
lib_init "$@"
need_cmd iperf3 ss sha256sum
make_hosts

# udp_check SRC_NS DST_NS ADDR: 3200 datagrams, none damaged, none twice,
# and bursts of every size arrived. UDP may lose datagrams under load (a
# receiving wireguard-go drops them when it falls behind, and so does a full
# socket): how many is logged, not judged.
udp_check() {
	local src=$1 dst=$2 addr=$3 rpid out got sizes
	out="$WORK/udp_check.out"
	rm -f "$out"
	bg -o "$out" ip netns exec "$dst" timeout 60 python3 "$TEST_DIR/../tools/udp_check.py" recv "$addr" 5400 3200 10
	rpid=$BG_LAST
	wait_for "$HANG_SECS" grep -q listening "$out" || hang "udp_check receiver did not start"
	ip netns exec "$src" timeout 60 python3 "$TEST_DIR/../tools/udp_check.py" send "$addr" 5400 3200 ||
		fail "udp_check send to $addr failed"
	wait_for "$HANG_SECS" dead "$rpid" || hang "udp_check receiver did not finish"
	reap "$rpid" 1
	((REAPED_RC == 0)) || fail "udp_check: damaged datagrams: $(tail -1 "$out")"
	got=$(awk '/^received/ { print $4 }' "$out")
	sizes=$(awk '/^received/ { print $8 }' "$out")
	log "udp_check $addr: $(tail -1 "$out") (of 3200 sent)"
	((${sizes:-0} == 5)) || fail "udp_check: only ${sizes:-0} of the 5 burst sizes arrived (${got:-0} datagrams)"
}

# trims IFNAME: a weftd whose idle memory is checked (not a sanitizer build,
# whose allocator keeps what it freed).
trims() {
	is_weftd "${DAEMON_IMPL[$1]}" && ! is_sanitized "$(impl_bin "${DAEMON_IMPL[$1]}")"
}

# idle_trimmed IFNAME PSS_KB: once traffic stops, the workers give their
# buffer pages back (datapath/worker.c, trim_begin): PSS returns to within
# 2 MiB of PSS_KB, what the daemon had before the transfer.
idle_trimmed() {
	local pid=${DAEMON_PID[$1]} bound=$(($2 + 2048))
	pss_at_most() { (($(pss_kb "$1") <= $2)); }
	wait_for 60 pss_at_most "$pid" "$bound" ||
		fail "$1: PSS $(pss_kb "$pid") KiB 60 s after the transfer, over $bound (was $2 before): idle buffers were not trimmed"
	log "$1: PSS back to $(pss_kb "$pid") KiB after the transfer (was $2 KiB before it)"
}

round() {
	local fam=$1 t0 hs ms now inner ifn
	IF_A=$(ifname "a$fam")
	IF_B=$(ifname "b$fam")
	step "outer IPv$fam: $IMPL_A ($IF_A) initiates to $IMPL_B ($IF_B)"
	setup_pair 51820 51821 "$fam"

	step "IPv$fam: a handshake after the first ping"
	t0=$(now_ms)
	t0_s=$(date +%s)
	bg ip netns exec "$NS_A" ping -n -q -c 5 -i 0.2 "$IN4_B"
	hs=$(wait_handshake "$NS_A" "$IF_A" "$PUB_b" $((HANG_SECS * 1000))) || hang "no handshake on $IF_A after the first ping"
	ms=$(($(now_ms) - t0))
	log "handshake seen on the initiator after ${ms} ms"
	now=$(date +%s)
	# The stamp is the handshake's wall-clock time: after the first ping
	# (1 s of rounding), not after we looked.
	((hs >= t0_s - 1 && hs <= now + 1)) || fail "latest-handshake $hs is outside the ping's start $t0_s .. now $now"
	wait_handshake "$NS_B" "$IF_B" "$PUB_a" $((HANG_SECS * 1000)) >/dev/null || hang "no handshake on responder $IF_B"

	step "IPv$fam: ping over inner IPv4 and IPv6, both directions"
	ping_ok "$NS_A" "$IN4_B" 5 || fail "ping $IN4_B from a"
	ping_ok "$NS_A" "$IN6_B" 5 || fail "ping $IN6_B from a"
	ping_ok "$NS_B" "$IN4_A" 5 || fail "ping $IN4_A from b"
	ping_ok "$NS_B" "$IN6_A" 5 || fail "ping $IN6_A from b"
	ping_ok "$NS_A" "$IN4_B" 5 -s 1372 -M do || fail "full-size (1400-byte) ping $IN4_B"

	if [[ $fam == 4 ]]; then
		# The acceptance transfer: WEFT_INTEROP_BYTES (1G; less in a
		# sanitizer build) each way over the IPv4 round.
		local -A pss0=()
		for ifn in "$IF_A" "$IF_B"; do
			trims "$ifn" && pss0[$ifn]=$(pss_kb "${DAEMON_PID[$ifn]}")
		done
		step "IPv4: iperf3 TCP ${WEFT_INTEROP_BYTES:-1G} each direction to $IN4_B"
		iperf_both "$NS_A" "$NS_B" "$IN4_B" 40 "${WEFT_INTEROP_BYTES:-1G}"
		for ifn in "${!pss0[@]}"; do
			idle_trimmed "$ifn" "${pss0[$ifn]}"
		done
	else
		step "IPv6: iperf3 TCP 3 s both directions to $IN6_B"
		iperf_both "$NS_A" "$NS_B" "$IN6_B" 3
	fi

	step "IPv$fam: 20 MB random file"
	if [[ $fam == 4 ]]; then
		send_file "$NS_A" "$NS_B" "$IN4_B" 20
	else
		send_file "$NS_B" "$NS_A" "$IN6_A" 20
	fi

	step "IPv$fam: 3200 UDP datagrams in bursts, each checked"
	if [[ $fam == 4 ]]; then
		udp_check "$NS_A" "$NS_B" "$IN4_B"
	else
		udp_check "$NS_B" "$NS_A" "$IN6_A"
	fi

	step "IPv$fam: counters"
	local ifn rx tx
	for ifn in "$IF_A" "$IF_B"; do
		has_stats "$ifn" || continue
		rx=$(stats "$ifn" rx_bytes)
		tx=$(stats "$ifn" tx_bytes)
		((rx > 20000000 && tx > 20000000)) || fail "$ifn: rx_bytes $rx / tx_bytes $tx after 20 MB + iperf3"
		(($(stats "$ifn" keypairs_created) >= 1)) || fail "$ifn: keypairs_created is 0"
		(($(stats "$ifn" drop_decrypt) == 0)) || fail "$ifn: drop_decrypt $(stats "$ifn" drop_decrypt)"
		(($(stats "$ifn" drop_replay) < 50)) || fail "$ifn: drop_replay $(stats "$ifn" drop_replay) (reordering should be rare on a veth)"
		log "$ifn: rx_bytes=$rx tx_bytes=$tx aead_backend=$(stats "$ifn" aead_backend)"
	done
	local wrx wtx
	wrx=$(peer_field "$NS_A" "$IF_A" "$PUB_b" rx)
	wtx=$(peer_field "$NS_A" "$IF_A" "$PUB_b" tx)
	((wrx > 20000000 && wtx > 20000000)) || fail "$IF_A: wg show transfer rx $wrx tx $wtx"

	stop_daemon "$IF_A"
	stop_daemon "$IF_B"
}

round 4
round 6
pass
