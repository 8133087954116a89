#!/usr/bin/env bash
# metrics.sh IMPL_A IMPL_B — weftd's Prometheus metrics on a live pair:
# scrapes of `weftd --metrics` and `weft metrics` pass `promtool check
# metrics`, carry the WireGuard exporters' per-peer series (on the listener
# only with --metrics-peers), and their
# values follow traffic and agree with `wg show dump`, stats=1 and the
# port list; the listener answers only GET/HEAD /metrics and refuses a
# non-loopback address without --metrics-public.
#
#   netns ...-a                              netns ...-b
#  +------------------------------+          +------------------------------+
#  | weftd wgPIDa                 |  veth    | weftd wgPIDb                 |
#  |   --metrics 9586 (127.0.0.1) |----------|   --metrics 9586 (127.0.0.1) |
#  |   tap wm<PID>a (weft port)   |  .1  .2  | weftd wgPIDc                 |
#  |   curl 127.0.0.1:9586        |          |   --metrics 192.168.241.2:9587|
#  +------------------------------+          |   --metrics-public           |
#                                            +------------------------------+
#
# Needs curl and promtool (Debian package prometheus); exits 77 without
# promtool, saying so.
. "$(dirname "$0")/lib.sh"
lib_init "$@"
need_cmd curl jq
is_weftd "$IMPL_A" && is_weftd "$IMPL_B" || skip "metrics are weftd's; the pair is $IMPL_A/$IMPL_B"
command -v promtool >/dev/null 2>&1 ||
	skip "promtool not found (Debian package prometheus; scripts/install-deps.sh installs it)"
need_weft

PORT=9586
make_hosts
DAEMON_ARGS=(--metrics "$PORT" --metrics-peers)
setup_pair 51820 51821 4
DAEMON_ARGS=()

# scrape NS FILE [URL]: GET the metrics into FILE, checked with promtool.
scrape() {
	local ns=$1 out=$2 url=${3:-http://127.0.0.1:$PORT/metrics}
	ip netns exec "$ns" curl -sS --max-time 10 -o "$out" -D "$out.headers" "$url" ||
		fail "curl $url in $ns failed"
	grep -q '^HTTP/1.0 200' "$out.headers" || fail "$url: $(head -1 "$out.headers")"
	grep -qi '^Content-Type: text/plain; version=0.0.4' "$out.headers" ||
		fail "$url: content type: $(grep -i content-type "$out.headers")"
	promtool check metrics <"$out" >"$out.promtool" 2>&1 ||
		fail "promtool check metrics on $url: $(cat "$out.promtool")"
}

# value FILE NAME [LABEL-MATCH]: the value of the one sample of NAME whose
# labels contain LABEL-MATCH (a literal like public_key="..."); fails unless
# exactly one sample matches.
value() {
	local file=$1 name=$2 match=${3:-} lines
	lines=$(grep -F "$name{" "$file" | grep -F -- "$match" | grep -E "^$name\{" || true)
	[[ $(grep -c . <<<"$lines") == 1 && -n $lines ]] ||
		fail "expected one sample of $name${match:+ with $match}, got: ${lines:-none}"
	echo "${lines##* }"
}

step "scrape before traffic: promtool passes, every family is there"
scrape "$NS_A" "$WORK/a0.prom"
for fam in wireguard_sent_bytes_total wireguard_received_bytes_total \
	wireguard_latest_handshake_seconds weft_drops_total weft_rx_packets_total \
	weft_tx_packets_total weft_handshake_initiations_sent_total \
	weft_handshake_cookies_sent_total weft_handshake_under_load weft_workers \
	weft_worker_info weft_offload_enabled weft_aead_backend_info weft_ports \
	weft_metrics_requests_total; do
	grep -q "^# TYPE $fam " "$WORK/a0.prom" || fail "no family $fam in the scrape"
done
grep -q '^weft_drops_total{interface="'"$IF_A"'",reason="replay"} 0$' "$WORK/a0.prom" ||
	fail "no drop reason replay: $(grep weft_drops_total "$WORK/a0.prom" | head -3)"
# The exporters' label set, in their order.
grep -qE '^wireguard_sent_bytes_total\{interface="'"$IF_A"'",public_key="'"${PUB_b//+/\\+}"'",allowed_ips="'"$IN4_B"'/32,'"$IN6_B"'/128"\} [0-9]+$' \
	"$WORK/a0.prom" || fail "peer series: $(grep '^wireguard_sent' "$WORK/a0.prom")"
[[ $(value "$WORK/a0.prom" wireguard_latest_handshake_seconds "$PUB_b") == 0 ]] ||
	fail "a handshake before any traffic"
declare -A S0
stats_snap "$IF_A" S0
[[ $(value "$WORK/a0.prom" weft_aead_backend_info) == 1 ]] || fail "AEAD info value"
grep -q "^weft_aead_backend_info{interface=\"$IF_A\",backend=\"${S0[aead_backend]}\"} 1$" \
	"$WORK/a0.prom" || fail "AEAD backend differs from stats=1 (${S0[aead_backend]})"

step "traffic: the peer's bytes, the handshake and the device counters move"
ping_within "$NS_A" "$IN4_B" 10 15 || fail "no ping A -> B"
ping_ok "$NS_A" "$IN6_B" 5 || fail "no ping A -> B over IPv6"
dump1=$(nswg "$NS_A" show "$IF_A" dump | awk -v k="$PUB_b" '$1 == k')
scrape "$NS_A" "$WORK/a1.prom"
dump2=$(nswg "$NS_A" show "$IF_A" dump | awk -v k="$PUB_b" '$1 == k')
read -r _ _ _ _ hs1 rx1 tx1 _ <<<"$dump1"
read -r _ _ _ _ hs2 rx2 tx2 _ <<<"$dump2"
sent=$(value "$WORK/a1.prom" wireguard_sent_bytes_total "$PUB_b")
recv=$(value "$WORK/a1.prom" wireguard_received_bytes_total "$PUB_b")
hs=$(value "$WORK/a1.prom" wireguard_latest_handshake_seconds "$PUB_b")
# wg show before and after the scrape bracket what the scrape saw.
((tx1 <= sent && sent <= tx2)) || fail "sent bytes $sent outside wg show's $tx1..$tx2"
((rx1 <= recv && recv <= rx2)) || fail "received bytes $recv outside wg show's $rx1..$rx2"
((hs1 <= hs && hs <= hs2 && hs > 0)) || fail "handshake $hs outside wg show's $hs1..$hs2"
((sent > 15 * 84 && recv > 15 * 84)) || fail "15 pings moved only $sent/$recv bytes"
txp=$(value "$WORK/a1.prom" weft_tx_packets_total)
rxp=$(value "$WORK/a1.prom" weft_rx_packets_total)
((txp >= 15 && rxp >= 15)) || fail "device packets tx $txp rx $rxp after 15 pings"
# The workers handled the pings' completions, in turns (their batches).
turns=0 done_=0
for w in $(grep -oE '^weft_worker_turns_total\{[^}]*worker="[0-9]+"' "$WORK/a1.prom" | grep -oE '[0-9]+"$' | tr -d '"'); do
	turns=$((turns + $(value "$WORK/a1.prom" weft_worker_turns_total "worker=\"$w\"")))
	done_=$((done_ + $(value "$WORK/a1.prom" weft_worker_completions_total "worker=\"$w\"")))
done
((turns >= 1 && done_ >= turns && done_ >= 30)) ||
	fail "workers: $turns turns with $done_ completions after 15 pings each way"
(($(value "$WORK/a1.prom" weft_handshake_initiations_sent_total) >= 1)) ||
	fail "A sent no initiation"
scrape "$NS_B" "$WORK/b1.prom"
(($(value "$WORK/b1.prom" weft_handshake_responses_sent_total) >= 1)) ||
	fail "B sent no response"
[[ $(value "$WORK/b1.prom" wireguard_latest_handshake_seconds "$PUB_a") != 0 ]] ||
	fail "B shows no handshake with A"
# The listener counted the scrapes before this one.
(($(value "$WORK/a1.prom" weft_metrics_requests_total 'outcome="200"') >= 1)) ||
	fail "the first scrape was not counted"

step "VM port and mesh series"
weft -i "$IF_A" port add "wm${RUN_ID}a" tap mac 52:54:00:00:00:0a address 10.77.0.2 ||
	fail "port add: $ERR"
scrape "$NS_A" "$WORK/a2.prom"
[[ $(value "$WORK/a2.prom" weft_ports) == 1 ]] || fail "weft_ports is not 1"
grep -q "^weft_port_up{interface=\"$IF_A\",port=\"wm${RUN_ID}a\",type=\"tap\"} [01]$" \
	"$WORK/a2.prom" || fail "no weft_port_up for the tap"
ndrops=$(grep -c "^weft_port_drops_total{interface=\"$IF_A\",port=\"wm${RUN_ID}a\",reason=" \
	"$WORK/a2.prom" || true)
((ndrops >= 9)) || fail "only $ndrops port drop reasons"
weft -i "$IF_A" port list --json || fail "port list: $ERR"
for c in rx_packets tx_packets rx_bytes; do
	want=$(jq ".[0].counters.$c" "$WORK/weft.out")
	got=$(value "$WORK/a2.prom" "weft_port_${c}_total" "wm${RUN_ID}a")
	# The list came after the scrape; the kernel's own frames (router
	# solicitations) may have been counted in between.
	((got <= want)) || fail "port $c: metrics $got > the later port list's $want"
done
if grep -q '^# TYPE weft_mesh_mode_info gauge' "$WORK/a2.prom"; then
	value "$WORK/a2.prom" weft_mesh_mode_info >/dev/null
	grep -q '^# TYPE weft_mesh_lookups_total counter' "$WORK/a2.prom" || fail "no mesh counters"
else
	skip_part "this weftd has no mesh series"
fi

step "weft metrics prints the same families over the socket"
weft -i "$IF_A" metrics || fail "weft metrics: $ERR"
cp "$WORK/weft.out" "$WORK/cli.prom"
promtool check metrics <"$WORK/cli.prom" >"$WORK/cli.promtool" 2>&1 ||
	fail "promtool on weft metrics: $(cat "$WORK/cli.promtool")"
diff <(grep '^# TYPE' "$WORK/a2.prom" | grep -v weft_metrics_requests) \
	<(grep '^# TYPE' "$WORK/cli.prom") >"$WORK/families.diff" ||
	fail "weft metrics and the listener differ: $(cat "$WORK/families.diff")"
weft -i "$IF_A" metrics extra && fail "weft metrics took an argument"
((RC == 2)) || fail "weft metrics extra: exit $RC, expected 2"

step "the listener: only GET/HEAD /metrics, bounded requests"
code() { ip netns exec "$NS_A" curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@"; }
[[ $(code "http://127.0.0.1:$PORT/nothing") == 404 ]] || fail "not 404 for /nothing"
[[ $(code -X POST "http://127.0.0.1:$PORT/metrics") == 405 ]] || fail "not 405 for POST"
[[ $(code -I "http://127.0.0.1:$PORT/metrics") == 200 ]] || fail "not 200 for HEAD"
[[ $(code -H "X-Big: $(head -c 5000 /dev/zero | tr '\0' a)" "http://127.0.0.1:$PORT/metrics") == 431 ]] ||
	fail "not 431 for 5 kB of headers"
# A client that connects and says nothing: the daemon still answers wg,
# the tunnel carries traffic, and another scrape is answered while the
# listener waits for the silent one (test_metrics_http shows it is not
# held up by it).
bg ip netns exec "$NS_A" socat -u "TCP:127.0.0.1:$PORT" "SYSTEM:sleep 8"
stall=$BG_LAST
silent_connected() {
	[[ -n $(ip netns exec "$NS_A" ss -Htn state established "( dport = :$PORT )") ]]
}
wait_for 10 silent_connected || hang "the silent metrics client never connected"
scrape "$NS_A" "$WORK/stalled.prom"
responsive "$NS_A" "$IF_A" || fail "wg show hangs while a metrics client stalls"
ping_ok "$NS_A" "$IN4_B" 3 || fail "no ping while a metrics client stalls"
reap "$stall" 1
scrape "$NS_A" "$WORK/a3.prom"
(($(value "$WORK/a3.prom" weft_metrics_requests_total 'outcome="404"') == 1)) || fail "404 not counted"
(($(value "$WORK/a3.prom" weft_metrics_requests_total 'outcome="405"') == 1)) || fail "405 not counted"
(($(value "$WORK/a3.prom" weft_metrics_requests_total 'outcome="431"') == 1)) || fail "431 not counted"

step "a non-loopback address needs --metrics-public"
IF_C=$(ifname c)
EXTRA_IFNAMES+=("$IF_C")
RC=0
ip netns exec "$NS_B" timeout "$HANG_SECS" "$WEFTD" -f --metrics "$OUT4_B:9587" "$IF_C" \
	>"$WORK/refused.log" 2>&1 || RC=$?
((RC == 1)) || fail "weftd --metrics $OUT4_B:9587 without --metrics-public: exit $RC"
grep -q "not a loopback address" "$WORK/refused.log" || fail "no reason: $(cat "$WORK/refused.log")"
RC=0
ip netns exec "$NS_B" timeout "$HANG_SECS" "$WEFTD" -f --metrics "[::1]:9586x" "$IF_C" \
	>"$WORK/bad.log" 2>&1 || RC=$?
((RC == 1)) || fail "weftd took a bad --metrics (exit $RC)"
DAEMON_ARGS=(--metrics "$OUT4_B:9587" --metrics-public)
start_daemon "$IMPL_B" "$NS_B" "$IF_C"
DAEMON_ARGS=()
scrape "$NS_A" "$WORK/c.prom" "http://$OUT4_B:9587/metrics"
grep -q "^weft_peers{interface=\"$IF_C\"} 0$" "$WORK/c.prom" || fail "the public listener is not C's"

step "without --metrics-peers the listener names no peer; weft metrics (root's socket) does"
nswg "$NS_B" set "$IF_C" peer "$PUB_a" allowed-ips 10.99.0.1/32 || fail "wg set on C"
scrape "$NS_A" "$WORK/c1.prom" "http://$OUT4_B:9587/metrics"
grep -q "^weft_peers{interface=\"$IF_C\"} 1$" "$WORK/c1.prom" || fail "C's peer is not counted"
! grep -qE '^wireguard_|public_key=|allowed_ips=' "$WORK/c1.prom" ||
	fail "per-peer series without --metrics-peers: $(grep -E '^wireguard_' "$WORK/c1.prom")"
weft -i "$IF_C" metrics || fail "weft metrics on C: $ERR"
grep -qF "public_key=\"$PUB_a\"" "$WORK/weft.out" || fail "weft metrics on C has no peer series"
ip netns exec "$NS_B" curl -s --max-time 5 -o /dev/null "http://127.0.0.1:9587/metrics" &&
	fail "C also listens on loopback"

responsive "$NS_A" "$IF_A" || fail "A does not answer wg show at the end"
pass
