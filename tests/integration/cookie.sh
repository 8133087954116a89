#!/usr/bin/env bash
# cookie.sh IMPL_A IMPL_B — B (weftd) acts as under handshake load
# (WEFT_TEST_UNDER_LOAD=1): it answers A's first initiation, which has no
# valid mac2, with a cookie reply. A must retry with mac2 and the handshake
# must still complete.
#
#   netns weft-cookie-PID-a                     netns weft-cookie-PID-b
#  +-------------------------------+          +-------------------------------+
#  | IMPL_A wgPIDa 10.241.0.1      |          | weftd wgPIDb 10.241.0.2       |
#  |  (initiator)                  |          |  WEFT_TEST_UNDER_LOAD=1       |
#  |  ve-a 192.168.241.1 :51820 ---+-- veth --+--- :51821 ve-b 192.168.241.2  |
#  +-------------------------------+          +-------------------------------+
#
#   A --- initiation (mac1, no mac2) ----------------------> B
#   A <-------------------------------------- cookie reply - B
#   A --- initiation (mac1, mac2 from the cookie) ---------> B   (after REKEY_TIMEOUT)
#   A <----------------------------------------- response -- B
#
# The cookie exchange needs weftd as B; with another B only the plain
# handshake runs and the test reports SKIP.
. "$(dirname "$0")/lib.sh"
lib_init "$@"
make_hosts
LOAD=()
if is_weftd "$IMPL_B"; then
	LOAD=(WEFT_TEST_UNDER_LOAD=1)
else
	skip_part "cookie exchange: B is $IMPL_B, not weftd (no WEFT_TEST_UNDER_LOAD)"
fi
genkeys a
genkeys b
start_daemon "$IMPL_A" "$NS_A" "$IF_A"
start_daemon "$IMPL_B" "$NS_B" "$IF_B" "${LOAD[@]}"
nswg "$NS_B" set "$IF_B" listen-port 51821 private-key "$KEY_b" \
	peer "$PUB_a" allowed-ips "$IN4_A/32,$IN6_A/128"
nswg "$NS_A" set "$IF_A" listen-port 51820 private-key "$KEY_a" \
	peer "$PUB_b" allowed-ips "$IN4_B/32,$IN6_B/128" endpoint "$OUT4_B:51821"
link_up "$NS_A" "$IF_A" "$IN4_A/24" "$IN6_A/64"
link_up "$NS_B" "$IF_B" "$IN4_B/24" "$IN6_B/64"

step "A pings B; the handshake completes (a cookie round adds ~REKEY_TIMEOUT, 5 s)"
t0=$(now_ms)
bg ip netns exec "$NS_A" ping -n -q -c 80 -i 0.2 "$IN4_B"
wait_handshake "$NS_A" "$IF_A" "$PUB_b" $((HANG_SECS * 1000)) >/dev/null || hang "no handshake on $IF_A"
log "handshake after $(($(now_ms) - t0)) ms"
ping_ok "$NS_A" "$IN4_B" 5 || fail "ping A -> B after the handshake"
ping_ok "$NS_B" "$IN4_A" 5 || fail "ping B -> A after the handshake"
ping_ok "$NS_A" "$IN6_B" 5 || fail "ping6 A -> B after the handshake"

if is_weftd "$IMPL_B"; then
	step "counters: B sent a cookie, and still answered"
	for k in hs_initiations_received hs_cookies_sent hs_responses_sent hs_invalid_mac hs_ratelimited; do
		log "$IF_B: $k=$(stats "$IF_B" $k)"
	done
	(($(stats "$IF_B" hs_cookies_sent) >= 1)) || fail "$IF_B: hs_cookies_sent is 0 under load"
	(($(stats "$IF_B" hs_responses_sent) >= 1)) || fail "$IF_B: no handshake response sent"
fi
if has_stats "$IF_A"; then
	(($(stats "$IF_A" hs_cookies_received) >= 1)) || fail "$IF_A: hs_cookies_received is 0"
	(($(stats "$IF_A" hs_initiations_sent) >= 2)) || fail "$IF_A: fewer than 2 initiations sent"
fi
is_weftd "$IMPL_B" || skip "the cookie exchange needs weftd as B; the plain handshake with $IMPL_B passed"
pass
