#!/usr/bin/env bash
# second_instance.sh IMPL_A IMPL_B — a second weftd for an interface that a
# daemon (A: weftd or wireguard-go; B is not used) already serves changes
# nothing: it exits non-zero at once, names the daemon and its pid, and
# leaves the link as the admin set it (MTU, TUN queues) and the first daemon
# serving; in the foreground and when it would detach.
#
#   netns ...-a
#  +------------------------------------------------+
#  | IMPL_A wgPIDa  (MTU set to 1400 by hand)       |
#  | weftd wgPIDa   (refused, twice)                |
#  +------------------------------------------------+
. "$(dirname "$0")/lib.sh"
lib_init "$@"

WEFTD_BIN=$(impl_bin weftd)
[[ -n $WEFTD_BIN && -x $WEFTD_BIN ]] || skip "weftd not built"

new_ns a
NS_A=$(ns_name a)
IF_A=$(ifname a)
start_daemon "$IMPL_A" "$NS_A" "$IF_A"
genkeys a
nswg "$NS_A" set "$IF_A" listen-port 51900 private-key "$KEY_a"
ip -n "$NS_A" link set "$IF_A" mtu 1400 up
queues() { ip netns exec "$NS_A" ls "/sys/class/net/$IF_A/queues" | grep -c '^tx-'; }
q0=$(queues)
pid=${DAEMON_PID[$IF_A]}
case $IMPL_A in
weftd) comm=weftd ;;
*) comm=$(cat "/proc/$pid/comm") ;;
esac

# second ARGS...: weftd ARGS... IF_A in A's namespace; its status in RC and
# its stderr in ERR. A hang is a failure (timeout).
second() {
	RC=0
	ip netns exec "$NS_A" env LOG_LEVEL=error timeout "$HANG_SECS" "$WEFTD_BIN" "$@" "$IF_A" \
		>"$WORK/second.out" 2>"$WORK/second.err" || RC=$?
	ERR=$(cat "$WORK/second.err")
	log "second weftd $* -> $RC: $ERR"
}
check_untouched() {
	local mtu
	((RC != 0 && RC != 124)) || fail "the second weftd ($1) exited $RC"
	grep -qF "$IF_A is already served by $comm (pid $pid)" <<<"$ERR" ||
		fail "the second weftd ($1) did not name the daemon serving $IF_A: $ERR"
	mtu=$(ip -n "$NS_A" -o link show "$IF_A" | sed -n 's/.* mtu \([0-9]*\) .*/\1/p')
	[[ $mtu == 1400 ]] || fail "the second weftd ($1) changed the MTU to $mtu"
	[[ $(queues) == "$q0" ]] || fail "the second weftd ($1) attached TUN queues ($q0 -> $(queues))"
	alive "$pid" || fail "the first daemon died after the second weftd ($1)"
	[[ $(nswg "$NS_A" show "$IF_A" listen-port) == 51900 ]] ||
		fail "the first daemon does not answer after the second weftd ($1)"
}

step "in the foreground: refused, the link untouched"
second -f
check_untouched foreground

step "detaching: refused before it detaches, the link untouched"
second
check_untouched background
pass
