#!/usr/bin/env bash
# wg_quick.sh IMPL_A IMPL_B — wg-quick drives IMPL_A as its userspace
# implementation (WG_QUICK_USERSPACE_IMPLEMENTATION); IMPL_B is a plain peer.
#
#   netns weft-wg_quick-PID-a                   netns weft-wg_quick-PID-b
#  +-------------------------------+          +-------------------------------+
#  | wg-quick up wgPIDa.conf       |          | IMPL_B  wgPIDb (started here) |
#  |  -> IMPL_A wgPIDa (daemon)    |          |  10.241.0.2/24 fd00:10::2/64  |
#  |  10.241.0.1/24 fd00:10::1/64  |          |                               |
#  |  ve-a 192.168.241.1 :51820 ---+-- veth --+--- :51821 ve-b 192.168.241.2  |
#  +-------------------------------+          +-------------------------------+
#
# Three lives of A's daemon: each starts with `wg-quick up` and a ping
# through the tunnel, and ends (bounded wait for the process to exit) by
#   1. wg-quick down,  2. ip link del,  3. removing the UAPI socket.
. "$(dirname "$0")/lib.sh"
lib_init "$@"
need_cmd wg-quick readlink
[[ -e /sys/module/wireguard ]] &&
	skip "kernel WireGuard module present: wg-quick would use it instead of $IMPL_A"
make_hosts
genkeys a
genkeys b
BIN_A=$(readlink -f "$(impl_bin "$IMPL_A")")
CONF="$WORK/$IF_A.conf"
(
	umask 077
	cat >"$CONF" <<EOF
[Interface]
PrivateKey = $(cat "$KEY_a")
Address = $IN4_A/24, $IN6_A/64
ListenPort = 51820
MTU = 1420

[Peer]
PublicKey = $PUB_b
AllowedIPs = $IN4_B/32, $IN6_B/128
Endpoint = $OUT4_B:51821
EOF
)
EXTRA_IFNAMES+=("$IF_A")
DAEMON_LOG[$IF_A]="$WORK/daemon-$IF_A.log"

start_daemon "$IMPL_B" "$NS_B" "$IF_B"
nswg "$NS_B" set "$IF_B" listen-port 51821 private-key "$KEY_b" \
	peer "$PUB_a" allowed-ips "$IN4_A/32,$IN6_A/128"
link_up "$NS_B" "$IF_B" "$IN4_B/24" "$IN6_B/64"

# quick_up: wg-quick up; sets QPID to the daemon it left running in NS_A.
quick_up() {
	ip netns exec "$NS_A" env WG_QUICK_USERSPACE_IMPLEMENTATION="$BIN_A" LOG_LEVEL=verbose \
		timeout 30 wg-quick up "$CONF" >>"${DAEMON_LOG[$IF_A]}" 2>&1 ||
		fail "wg-quick up failed (see daemon-$IF_A.log)"
	local pids
	pids=$(ip netns pids "$NS_A")
	[[ $(wc -w <<<"$pids") == 1 ]] || fail "expected one daemon process in $NS_A, found: ${pids:-none}"
	QPID=$pids
	[[ $(readlink -f "/proc/$QPID/exe") == "$BIN_A" ]] ||
		fail "process $QPID in $NS_A is $(readlink -f "/proc/$QPID/exe"), not $BIN_A"
	[[ -S $WG_SOCK_DIR/$IF_A.sock ]] || fail "no socket $WG_SOCK_DIR/$IF_A.sock after wg-quick up"
	ip -n "$NS_A" -br addr show "$IF_A" | grep -q "$IN4_A/24" || fail "wg-quick did not set $IN4_A/24"
	[[ $(ip -n "$NS_A" -o link show "$IF_A") == *"mtu 1420"* ]] || fail "wg-quick did not set mtu 1420"
	log "wg-quick up: $IMPL_A pid $QPID (backgrounded) owns $IF_A"
	ping_ok "$NS_A" "$IN4_B" 5 || fail "ping $IN4_B through the wg-quick tunnel"
	ping_ok "$NS_A" "$IN6_B" 5 || fail "ping $IN6_B through the wg-quick tunnel"
	[[ $(peer_field "$NS_A" "$IF_A" "$PUB_b" handshake) != 0 ]] || fail "no handshake recorded"
}

# gone HOW: the daemon exits by itself (hang guard HANG_SECS), and leaves no socket/link.
gone() {
	wait_for "$HANG_SECS" dead "$QPID" || hang "$IMPL_A (pid $QPID) still running after $1"
	wait_for 2 bash -c "[[ ! -e $WG_SOCK_DIR/$IF_A.sock ]]" || fail "socket left behind after $1"
	wait_for 2 bash -c "! ip -n $NS_A link show $IF_A" || fail "$IF_A still exists after $1"
	log "$IMPL_A exited after $1"
}

step "wg-quick up, ping, wg-quick down"
quick_up
ip netns exec "$NS_A" timeout 30 wg-quick down "$CONF" >>"${DAEMON_LOG[$IF_A]}" 2>&1 || fail "wg-quick down failed"
gone "wg-quick down"

step "wg-quick up, ping, ip link del"
quick_up
ip -n "$NS_A" link del "$IF_A"
gone "ip link del $IF_A"

step "wg-quick up, ping, remove the UAPI socket"
quick_up
rm -f "$WG_SOCK_DIR/$IF_A.sock"
gone "removing $WG_SOCK_DIR/$IF_A.sock"
pass
