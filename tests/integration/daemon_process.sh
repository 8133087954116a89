#!/usr/bin/env bash
# daemon_process.sh IMPL_A IMPL_B — weftd as a process, as wireguard-go is
# one (issue 17). Every thread runs with the five capabilities weftd keeps
# and no_new_privs. A command that detaches returns with its stdout and
# stderr closed, so that out=$(weftd wg0 2>&1) returns. A second weftd for an
# interface that a daemon (A: weftd or wireguard-go; B is not used) already
# serves changes nothing (and weft against wireguard-go's socket says it is
# not weftd's): it exits non-zero at once, names the daemon and its pid, and
# leaves the link as the admin set it (MTU, TUN queues) and the first daemon
# serving; in the foreground and when it would detach. And a detaching start
# that fails after it made its TUN (a --metrics port that is taken) leaves
# no interface and no socket behind once the command returns; so does a
# start whose capability drop fails (capset refused under the unit's
# sandbox), which is fatal.
#
#   netns ...-a
#  +------------------------------------------------+
#  | IMPL_A wgPIDa  (MTU set to 1400 by hand)       |
#  | weftd wgPIDa   (refused, twice)                |
#  | weftd wgPIDb   (detached, its output read)     |
#  | weftd wgPIDc   (--metrics port taken: fails)   |
#  +------------------------------------------------+
. "$(dirname "$0")/lib.sh"
lib_init "$@"

WEFTD_BIN=$(impl_bin weftd)
[[ -n $WEFTD_BIN && -x $WEFTD_BIN ]] || skip "weftd not built"
need_weft

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

# second IFNAME ARGS...: weftd ARGS... IFNAME in A's namespace; its status
# in RC and its stderr in ERR. A hang is a failure (timeout).
second() {
	local ifn=$1
	shift
	RC=0
	ip netns exec "$NS_A" env LOG_LEVEL=error timeout "$HANG_SECS" "$WEFTD_BIN" "$@" "$ifn" \
		>"$WORK/second.out" 2>"$WORK/second.err" || RC=$?
	ERR=$(cat "$WORK/second.err")
	log "weftd $* $ifn -> $RC: $ERR"
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

if is_weftd "$IMPL_A"; then
	step "every thread of weftd has only the five capabilities it keeps, and no_new_privs"
	# CHOWN (0), NET_BIND_SERVICE (10), NET_ADMIN (12), NET_RAW (13),
	# BPF (39): docs/security.md, "Privileges".
	want=0000008000003401
	for st in /proc/"$pid"/task/*/status; do
		for f in CapEff CapPrm CapBnd; do
			v=$(awk -v f="$f:" '$1 == f { print $2 }' "$st")
			[[ $v == "$want" ]] || fail "$f of $st is $v, not $want"
		done
		[[ $(awk '$1 == "CapInh:" { print $2 }' "$st") == 0000000000000000 ]] ||
			fail "$st has inheritable capabilities"
		[[ $(awk '$1 == "NoNewPrivs:" { print $2 }' "$st") == 1 ]] || fail "$st without no_new_privs"
	done
	log "$(ls /proc/"$pid"/task | wc -l) threads, each with capabilities $want only"
fi

if ! is_weftd "$IMPL_A"; then
	step "weft against $IMPL_A's socket says it is not weftd's"
	! weft -i "$IF_A" port list || fail "weft port list against $IMPL_A succeeded"
	((RC == 1)) || fail "weft port list against $IMPL_A exited $RC"
	grep -qF "$WG_SOCK_DIR/$IF_A.sock is not a weftd socket" <<<"$ERR" ||
		fail "weft did not say the socket is not weftd's: $ERR"
fi

step "in the foreground: refused, the link untouched"
second "$IF_A" -f
check_untouched foreground

step "detaching: refused before it detaches, the link untouched"
second "$IF_A"
check_untouched background

step "detaching closes stdout and stderr: out=\$(weftd IF 2>&1) returns"
IF_B=$(ifname b)
# The reader gets end-of-file once the command has returned, or is stopped
# after the hang guard (124): the detached daemon kept the pipe.
RC=0
out=$({ ip netns exec "$NS_A" env -u LOG_LEVEL "$WEFTD_BIN" "$IF_B" 2>&1; echo "rc=$?"; } |
	timeout "$HANG_SECS" cat) || RC=$?
((RC != 124)) || fail "weftd $IF_B 2>&1 | cat did not end: the detached daemon kept the pipe"
[[ $out == *"rc=0" ]] || fail "weftd $IF_B failed: $out"
EXTRA_IFNAMES+=("$IF_B")
ip -n "$NS_A" link show "$IF_B" >/dev/null || fail "the detached weftd has no $IF_B"
[[ -S $WG_SOCK_DIR/$IF_B.sock ]] || fail "the detached weftd has no socket"

step "a detaching start that fails after making its TUN leaves nothing behind"
IF_C=$(ifname c)
ip netns exec "$NS_A" python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
print(s.getsockname()[1], flush=True)
time.sleep(float(sys.argv[1]))' "$HANG_SECS" >"$WORK/taken.port" 2>&1 &
BG_PIDS+=($!)
port_known() { [[ -s $WORK/taken.port ]]; }
wait_for "$HANG_SECS" port_known || fail "the stand-in listener did not start"
port=$(head -1 "$WORK/taken.port")
second "$IF_C" --metrics "127.0.0.1:$port"
((RC == 1)) || fail "weftd --metrics on a taken port exited $RC"
grep -q "Address already in use" <<<"$ERR" || fail "no reason given: $ERR"
! ip -n "$NS_A" link show "$IF_C" >/dev/null 2>&1 || fail "the failed start left $IF_C behind"
[[ ! -e $WG_SOCK_DIR/$IF_C.sock ]] || fail "the failed start left its socket behind"

step "a capability drop that fails stops weftd: it never serves with root's capabilities"
# The unit's sandbox (tests/tools/unit_sandbox) with capset(2) refused.
sandbox=$TEST_DIR/../tools/unit_sandbox
seccomp=$(dirname "$WEFTD_BIN")/../tests/tools/seccomp_exec
if is_sanitized "$WEFTD_BIN"; then
	skip_part "a sanitizer build under a seccomp filter (LeakSanitizer needs ptrace)"
elif ! command -v systemd-analyze >/dev/null || ! command -v setpriv >/dev/null || [[ ! -x $seccomp ]]; then
	skip_part "no systemd-analyze, setpriv or $seccomp for the sandbox"
else
	IF_D=$(ifname d)
	RC=0
	ip netns exec "$NS_A" env LOG_LEVEL=error WEFT_SANDBOX_UNIT="$TEST_DIR/../../packaging/weftd@.service" \
		WEFT_SANDBOX_WEFTD="$WEFTD_BIN" WEFT_SANDBOX_SECCOMP="$seccomp" WEFT_SANDBOX_DENY=capset \
		timeout "$HANG_SECS" "$sandbox" -f "$IF_D" >"$WORK/nocaps.log" 2>&1 || RC=$?
	((RC != 0 && RC != 124)) || fail "weftd without capset exited $RC: $(cat "$WORK/nocaps.log")"
	grep -q "cannot drop capabilities: Operation not permitted" "$WORK/nocaps.log" ||
		fail "no reason given: $(cat "$WORK/nocaps.log")"
	! ip -n "$NS_A" link show "$IF_D" >/dev/null 2>&1 || fail "the failed start left $IF_D behind"
	[[ ! -e $WG_SOCK_DIR/$IF_D.sock ]] || fail "the failed start left its socket behind"
fi
pass
