#!/usr/bin/env bash
# netns_move.sh IMPL_A IMPL_B — WireGuard's container pattern: weftd (A)
# creates its interface in one namespace (the birthplace) and the interface
# is moved into another (the container's), whose only network is then the
# tunnel; A's UDP and UAPI sockets stay in the birthplace.
#
#   netns weft-netns_move-PID-a (birthplace)   netns weft-netns_move-PID-b
#  +----------------------------------+       +-------------------------------+
#  | weftd wgPIDa: UDP :51820, UAPI   |       | IMPL_B wgPIDb 10.241.0.2/24   |
#  |   socket here, TUN link not      |       |               fd00:10::2/64   |
#  |  ve-a 192.168.241.1/24 ----------+- veth +- ve-b 192.168.241.2/24 :51821 |
#  +-----------------|----------------+       +-------------------------------+
#                    | ip link set wgPIDa netns ...-c
#  +-----------------v----------------+
#  | netns weft-netns_move-PID-c      |
#  |  wgPIDa  10.241.0.1/24           |   ping and iperf3 to B from here
#  |          fd00:10::1/64           |
#  +----------------------------------+
#
# Run 1: the move; ping v4/v6 and iperf3 both ways through the moved link;
# MTU, up/down and txqueuelen changed in c and seen by weftd (weft_tun_*
# metrics) and a ping sized to the new MTU; a tap port moved into c, whose
# up/down weftd reads there (weft_port_up); then `ip link del` in c, which
# must stop weftd cleanly (status 0, socket removed). Run 2: a fresh weftd
# (wgPIDd) moved into namespace ...-d, which is then deleted: the link goes
# with it and weftd must stop the same way. Sanitizer reports in either log
# fail the test (lib.sh).
. "$(dirname "$0")/lib.sh"
lib_init "$@"
need_cmd iperf3 ss
need_weft
is_weftd "$IMPL_A" || skip "the moved interface is weftd's; A is $IMPL_A"
make_hosts
new_ns c
NS_C=$(ns_name c)

# tun_state IFNAME FIELD VALUE: weftd's weft_tun_FIELD metric is VALUE.
tun_state() {
	"$WEFT_BIN" -i "$1" metrics 2>/dev/null | grep -qx "weft_tun_$2{interface=\"$1\"} $3"
}

# wait_tun_state IFNAME FIELD VALUE: waits (hang guard) for tun_state.
wait_tun_state() {
	wait_for "$HANG_SECS" tun_state "$@" || hang "$1: weft_tun_$2 never became $3"
}

# port_up IFNAME PORT VALUE: weftd's weft_port_up for the tap PORT is VALUE.
port_up() {
	"$WEFT_BIN" -i "$1" metrics 2>/dev/null |
		grep -qx "weft_port_up{interface=\"$1\",port=\"$2\",type=\"tap\"} $3"
}
wait_port_up() { wait_for "$HANG_SECS" port_up "$@" || hang "$2: weft_port_up never became $3"; }

# listening NS PORT: a TCP socket listens on PORT in NS.
listening() { ip netns exec "$1" ss -ltnH "sport = :$2" | grep -q .; }

# ended_cleanly IFNAME WHY: waits for weftd to exit on its own and checks the
# exit status, the log's last word and that the UAPI socket is gone.
ended_cleanly() {
	local ifn=$1 pid=${DAEMON_PID[$1]} rc=0
	wait_for "$HANG_SECS" dead "$pid" || hang "weftd $ifn still runs after $2"
	wait "$pid" 2>/dev/null || rc=$?
	unset "DAEMON_PID[$ifn]"
	((rc == 0)) || fail "weftd $ifn exited with status $rc after $2"
	grep -q 'TUN device deleted; shutting down' "${DAEMON_LOG[$ifn]}" ||
		fail "weftd $ifn: no 'TUN device deleted' in its log after $2"
	[[ ! -e $WG_SOCK_DIR/$ifn.sock ]] || fail "weftd $ifn left $WG_SOCK_DIR/$ifn.sock after $2"
}

step "run 1: weftd $IF_A in the birthplace, moved into $NS_C"
genkeys a
genkeys b
start_daemon "$IMPL_A" "$NS_A" "$IF_A"
start_daemon "$IMPL_B" "$NS_B" "$IF_B"
ip -n "$NS_A" link set "$IF_A" netns "$NS_C"
wait_tun_state "$IF_A" moved 1
alive "${DAEMON_PID[$IF_A]}" || fail "weftd took the move for a deletion"
ip -n "$NS_A" link show "$IF_A" >/dev/null 2>&1 && fail "$IF_A is still in the birthplace"
ip -n "$NS_C" link show "$IF_A" >/dev/null || fail "$IF_A is not in $NS_C"

# Configured over the socket in the birthplace; addressed in the container.
nswg "$NS_A" set "$IF_A" listen-port 51820 private-key "$KEY_a" \
	peer "$PUB_b" allowed-ips "$IN4_B/32,$IN6_B/128" endpoint "$OUT4_B:51821"
nswg "$NS_B" set "$IF_B" listen-port 51821 private-key "$KEY_b" \
	peer "$PUB_a" allowed-ips "$IN4_A/32,$IN6_A/128"
link_up "$NS_C" "$IF_A" "$IN4_A/24" "$IN6_A/64"
link_up "$NS_B" "$IF_B" "$IN4_B/24" "$IN6_B/64"
ss -N "$NS_A" -uanp 'sport = :51820' | grep -q weftd || fail "weftd's UDP socket is not in the birthplace"

step "ping v4/v6 both ways through the moved link"
ping_ok "$NS_C" "$IN4_B" 5 || fail "ping $IN4_B from $NS_C"
ping_ok "$NS_C" "$IN6_B" 5 || fail "ping $IN6_B from $NS_C"
ping_ok "$NS_B" "$IN4_A" 5 || fail "ping $IN4_A from $NS_B"
ping_ok "$NS_B" "$IN6_A" 5 || fail "ping $IN6_A from $NS_B"

step "iperf3 TCP both ways through the moved link"
for dir in "" -R; do
	bg ip netns exec "$NS_B" timeout "$HANG_SECS" iperf3 -s -1 -B "$IN4_B"
	wait_for "$HANG_SECS" listening "$NS_B" 5201 || hang "iperf3 server in $NS_B"
	ip netns exec "$NS_C" timeout "$HANG_SECS" iperf3 -c "$IN4_B" -n 50M $dir >"$WORK/iperf.out" 2>&1 ||
		fail "iperf3 $NS_C -> $IN4_B ${dir:+(reverse)}: $(tail -3 "$WORK/iperf.out")"
	log "iperf3 ${dir:-forward}: $(grep -E 'receiver' "$WORK/iperf.out" | tail -1)"
	reap "$BG_LAST" 3
done

step "link state changed in $NS_C is what weftd sees"
wait_tun_state "$IF_A" mtu 1420
ip -n "$NS_C" link set "$IF_A" mtu 1280
wait_tun_state "$IF_A" mtu 1280
# The largest IPv4 ping the new MTU lets through unfragmented, both ways.
ping_ok "$NS_C" "$IN4_B" 3 -M do -s $((1280 - 28)) || fail "a 1280-byte ping from $NS_C"
ip -n "$NS_C" link set "$IF_A" down
wait_tun_state "$IF_A" up 0
ip -n "$NS_C" link set "$IF_A" txqueuelen 321 up
wait_tun_state "$IF_A" up 1
wait_tun_state "$IF_A" txqueuelen 321
ping_ok "$NS_C" "$IN4_B" 3 || fail "ping from $NS_C after down/up"

step "a tap port moved into $NS_C: its up/down is read there"
TAP="wm${RUN_ID}c"
weft -i "$IF_A" port add "$TAP" tap mac 52:54:00:00:00:0c address 10.77.0.2 || fail "port add: $ERR"
wait_port_up "$IF_A" "$TAP" 1
ip -n "$NS_A" link set "$TAP" netns "$NS_C"
wait_port_up "$IF_A" "$TAP" 0 # a move leaves the link down
ip -n "$NS_C" link set "$TAP" up
wait_port_up "$IF_A" "$TAP" 1

step "ip link del in $NS_C stops weftd"
ip -n "$NS_C" link del "$IF_A"
ended_cleanly "$IF_A" "the link was deleted in $NS_C"

step "run 2: a fresh weftd moved into a namespace that is then deleted"
IF_D=$(ifname d)
new_ns d
NS_D=$(ns_name d)
start_daemon "$IMPL_A" "$NS_A" "$IF_D"
ip -n "$NS_A" link set "$IF_D" netns "$NS_D"
wait_tun_state "$IF_D" moved 1
ip -n "$NS_D" link set "$IF_D" mtu 1300 up
wait_tun_state "$IF_D" mtu 1300
[[ -z $(ip netns pids "$NS_D") ]] || fail "processes left in $NS_D: $(ip netns pids "$NS_D")"
ip netns del "$NS_D"
ended_cleanly "$IF_D" "its namespace $NS_D was deleted"

pass
