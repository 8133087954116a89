#!/usr/bin/env bash
# Side-by-side benchmark of weftd against plain routing, Debian's
# wireguard-go and (when the module exists) kernel WireGuard, in one run on
# one machine, so that every ratio compares numbers taken minutes apart.
#
#   bench/run.sh [--quick] [--out DIR] [--no-build]
#
#   --quick     1 run per test, 3 s tests (under 3 minutes in all)
#   --out DIR   where results.md, results.jsonl, bench.png and raw/ go
#               (default /tmp/weft-bench-YYYYmmdd-HHMMSS)
#   --no-build  measure the binaries already in $WEFT_BUILD_DIR (default build/)
# $WEFTD / $WIREGUARD_GO override the daemons' paths.
#
# Topology (one namespace each, names carry this run's pid; all addresses
# exist only inside these namespaces):
#
#   cli                 gwA                                gwB                 srv
#  +------------+     +--------------------------+      +--------------------------+     +------------+
#  | iperf3 -c  |     |  tunnel 10.201.9.1/24    |      |  tunnel 10.201.9.2/24    |     | iperf3 -s  |
#  | ping       |     |  (wireguard-go | weftd | |      |  (same implementation)   |     |            |
#  |            |     |   kernel; none: plain)   |      |                          |     |            |
#  | eth0 ------+-----+- lan          wire ------+------+- wire           lan -----+-----+- eth0      |
#  | 10.201.1.2 |veth | 10.201.1.1   10.201.0.1  | veth | 10.201.0.2   10.201.2.1  |veth | 10.201.2.2 |
#  +------------+     +--------------------------+      +--------------------------+     +------------+
#
# cli and srv route everything through their gateway. In "plain" mode the
# gateways route 10.201.1.0/24 <-> 10.201.2.0/24 over the wire; in a tunnel
# mode those routes point into the WireGuard interface (MTU 1420) and only
# UDP port 51820 crosses the wire.
#
# What is measured, per mode: iperf3 TCP cli->srv 1 stream (several runs:
# median, min, max), 4 streams, reverse; UDP 200-byte datagrams at full
# speed (received per second, loss); ping every 10 ms idle and during a
# 4-stream load (avg, p99 from the individual replies); for the daemons
# utime+stime of both gateways per GB of TCP payload and the PSS of the gwA
# daemon idle, under load (peak of samples) and after the load. Once per run:
# bench_aead (single-core seal/open rate of each AEAD backend, 1420-byte
# packets) and bench_handshake (complete handshakes per second on one core).

set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
QUICK=0
OUT=""
BUILD=1
while (($#)); do
	case $1 in
	--quick) QUICK=1 ;;
	--out) OUT=${2:?--out needs a folder}; shift ;;
	--out=*) OUT=${1#--out=} ;;
	--no-build) BUILD=0 ;;
	-h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done

# The whole run is bounded: re-run this script under timeout(1), which
# signals our process group; the TERM trap below then cleans up.
if ((QUICK)); then LIMIT=170; else LIMIT=570; fi
if [[ -z ${BENCH_WRAPPED:-} ]]; then
	export BENCH_WRAPPED=1
	args=()
	((QUICK)) && args+=(--quick)
	[[ -n $OUT ]] && args+=(--out "$OUT")
	((BUILD)) || args+=(--no-build)
	exec timeout -k 10 "$LIMIT" bash "$0" "${args[@]}"
fi

if ((QUICK)); then
	SECS=3 TCP1_RUNS=1 PING_COUNT=150 AEAD_SECS=0.5 HS_SECS=0.5
else
	SECS=8 TCP1_RUNS=3 PING_COUNT=400 AEAD_SECS=1 HS_SECS=2
fi
START_S=$(date +%s)
OUT=${OUT:-/tmp/weft-bench-$(date +%Y%m%d-%H%M%S)}
BUILD_DIR=$ROOT/${WEFT_BUILD_DIR:-build}
RAW=$OUT/raw
ID=$$
NS_CLI=wbench-$ID-cli NS_GWA=wbench-$ID-gwA NS_GWB=wbench-$ID-gwB NS_SRV=wbench-$ID-srv
NAMESPACES=()
BG_PIDS=()
DAEMON_PIDS=()
SOCKETS=()
WORK=""
SRV_ADDR=10.201.2.2
PORT=5201
CLK_TCK=$(getconf CLK_TCK)
declare -A RES=()
MODES=()

# Every test checks that it still fits in the run's limit, keeping REPORT_S
# for the report, so a hung daemon costs its own tests, never the report.
REPORT_S=25
budget_ok() { (($(date +%s) - START_S + $1 + REPORT_S < LIMIT)); }

say() { printf '[bench %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { say "error: $*"; exit 1; }

alive() {
	local st
	st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	st=${st##*) }
	[[ ${st%% *} != Z ]]
}

# stop_pid PID SECS: TERM, bounded wait, then KILL. Sets STOP_HOW to
# "exited" (before we asked), "term" or "kill", STOP_RC to the status.
stop_pid() {
	local pid=$1 secs=${2:-5} i
	STOP_RC=0 STOP_HOW=term
	if ! alive "$pid"; then
		STOP_HOW=exited
	else
		kill -TERM "$pid" 2>/dev/null
		for ((i = 0; i < secs * 20; i++)); do alive "$pid" || break; sleep 0.05; done
		if alive "$pid"; then
			STOP_HOW="kill"
			kill -KILL "$pid" 2>/dev/null
		fi
	fi
	wait "$pid" 2>/dev/null
	STOP_RC=$?
}

cleanup() {
	local rc=$? pid ns s
	trap - EXIT TERM INT HUP
	for pid in "${BG_PIDS[@]}" "${DAEMON_PIDS[@]}"; do
		alive "$pid" && stop_pid "$pid" 2
	done
	for ns in "${NAMESPACES[@]}"; do
		# Only processes inside our own namespaces: things we started.
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null
	done
	for s in "${SOCKETS[@]}"; do rm -f "$s"; done
	[[ -n $WORK && -d $WORK ]] && rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'say "interrupted (signal or the ${LIMIT}s limit)"; exit 124' TERM INT HUP

[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces)"
for c in ip wg iperf3 ping jq gnuplot socat awk timeout; do
	command -v "$c" >/dev/null || die "missing command $c (scripts/install-deps.sh; gnuplot-nox, jq)"
done
mkdir -p "$RAW" || die "cannot create $OUT"
WORK=$(mktemp -d /tmp/wbench-$ID.XXXXXX)
: >"$OUT/results.jsonl"

# --- build -------------------------------------------------------------------

if ((BUILD)); then
	say "building weftd, bench_aead, bench_handshake in $BUILD_DIR"
	{ cmake -S "$ROOT" -B "$BUILD_DIR" >/dev/null &&
		make -C "$BUILD_DIR" -j"$(nproc)" weftd bench_aead bench_handshake hs_flood; } >"$RAW/build.log" 2>&1 ||
		{ tail -20 "$RAW/build.log" >&2; die "build failed (log: $RAW/build.log); --no-build measures existing binaries"; }
fi
WEFTD=${WEFTD:-$BUILD_DIR/daemon/weftd}
WIREGUARD_GO=${WIREGUARD_GO:-$(command -v wireguard-go || true)}
BENCH_AEAD=$BUILD_DIR/bench/bench_aead
HS_FLOOD=${HS_FLOOD:-$BUILD_DIR/tests/tools/hs_flood}
BENCH_HS=$BUILD_DIR/bench/bench_handshake

# --- helpers -----------------------------------------------------------------

nsx() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

# median / min / max of numbers on stdin (one per line)
stats_of() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (!NR) { print "null null null"; exit }
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		print m, v[1], v[NR] }'
}

# Records one result: RES and a JSON line.
put() {
	local mode=$1 metric=$2 value=$3 unit=$4
	RES["$mode|$metric"]=$value
	jq -cn --arg mode "$mode" --arg metric "$metric" --arg unit "$unit" --arg v "$value" \
		--arg ts "$(date -Is)" --argjson quick "$QUICK" \
		'{ts: $ts, quick: ($quick == 1), mode: $mode, metric: $metric,
		  value: (if $v == "" or $v == "null" then null else ($v | tonumber? // $v) end), unit: $unit}' \
		>>"$OUT/results.jsonl"
}
get() { echo "${RES["$1|$2"]:-}"; }

cpu_ticks() {
	local pid sum=0 f
	for pid in "$@"; do
		f=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
		f=${f##*) }
		# after "comm)": state is field 3, utime field 14, stime field 15
		sum=$((sum + $(awk '{ print $12 + $13 }' <<<"$f")))
	done
	echo "$sum"
}

pss_kib() { awk '/^Pss:/ { print $2; exit }' "/proc/$1/smaps_rollup" 2>/dev/null; }

# Samples the PSS of PID every 0.25 s into FILE until killed.
pss_sampler() {
	local pid=$1 file=$2 v
	while alive "$pid"; do
		v=$(pss_kib "$pid") && [[ -n $v ]] && echo "$v" >>"$file"
		sleep 0.25
	done
}

wait_for() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 10; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
	return 1
}

listening() { [[ -n $(nsx "$NS_SRV" ss -ltnH "sport = :$PORT") ]]; }

# iperf NAME ARGS...: one iperf3 test cli -> srv against a one-off server;
# JSON in $RAW/MODE-NAME.json. 0 when the client finished and wrote JSON.
iperf() {
	local name=$1 json spid rc
	shift
	json=$RAW/$MODE-$name.json
	budget_ok $((SECS + 25)) || { say "$MODE $name: skipped, out of time"; return 1; }
	nsx "$NS_SRV" timeout $((SECS + 20)) iperf3 -s -1 -p "$PORT" -B "$SRV_ADDR" >"$RAW/$MODE-$name.server.log" 2>&1 &
	spid=$!
	BG_PIDS+=("$spid")
	wait_for 5 listening || { say "$MODE $name: iperf3 server did not start"; stop_pid "$spid" 1; return 1; }
	nsx "$NS_CLI" timeout $((SECS + 15)) iperf3 -c "$SRV_ADDR" -p "$PORT" -t "$SECS" -J "$@" >"$json" 2>"$RAW/$MODE-$name.client.err"
	rc=$?
	stop_pid "$spid" 3
	if ((rc != 0)) || ! jq -e '.end.sum_received // .end.sum' "$json" >/dev/null 2>&1; then
		say "$MODE $name: iperf3 failed (rc $rc): $(jq -r '.error // empty' "$json" 2>/dev/null | head -1)"
		return 1
	fi
}

# ping_rtts FILE: ping every 10 ms, one RTT (ms) per line into FILE.
ping_rtts() {
	budget_ok $((PING_COUNT / 100 + 12)) || { say "$MODE ping: skipped, out of time"; : >"$1"; return 1; }
	nsx "$NS_CLI" timeout $((PING_COUNT / 100 + 10)) ping -n -i 0.01 -W 1 -c "$PING_COUNT" "$SRV_ADDR" 2>&1 |
		sed -n 's/.*time=\([0-9.]*\) ms.*/\1/p' >"$1"
}

# put_ping MODE PREFIX FILE: avg, p99 (nearest rank) and loss.
put_ping() {
	local n avg p99 loss
	n=$(wc -l <"$3")
	if ((n == 0)); then
		put "$1" "${2}_avg_ms" null ms; put "$1" "${2}_p99_ms" null ms; put "$1" "${2}_loss_pct" 100 %
		return
	fi
	avg=$(awk '{ s += $1 } END { printf "%.3f", s / NR }' "$3")
	p99=$(sort -g "$3" | awk -v n="$n" 'NR == int((n * 99 + 99) / 100) { printf "%.3f", $1 }')
	loss=$(awk -v n="$n" -v c="$PING_COUNT" 'BEGIN { printf "%.1f", 100 * (c - n) / c }')
	put "$1" "${2}_avg_ms" "$avg" ms
	put "$1" "${2}_p99_ms" "$p99" ms
	put "$1" "${2}_loss_pct" "$loss" %
}

# --- topology ------------------------------------------------------------------

new_ns() {
	ip netns add "$1" || die "cannot create namespace $1"
	NAMESPACES+=("$1")
	ip -n "$1" link set lo up
	nsx "$1" sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
}

veth() { # NS_A IF_A ADDR_A NS_B IF_B ADDR_B
	ip -n "$1" link add "$2" type veth peer name "$5" netns "$4"
	ip -n "$1" addr add "$3" dev "$2"
	ip -n "$4" addr add "$6" dev "$5"
	ip -n "$1" link set "$2" up
	ip -n "$4" link set "$5" up
}

topology() {
	local ns
	for ns in "$NS_CLI" "$NS_GWA" "$NS_GWB" "$NS_SRV"; do new_ns "$ns"; done
	veth "$NS_CLI" eth0 10.201.1.2/24 "$NS_GWA" lan 10.201.1.1/24
	veth "$NS_GWA" wire 10.201.0.1/24 "$NS_GWB" wire 10.201.0.2/24
	veth "$NS_GWB" lan 10.201.2.1/24 "$NS_SRV" eth0 10.201.2.2/24
	nsx "$NS_GWA" sysctl -qw net.ipv4.ip_forward=1
	nsx "$NS_GWB" sysctl -qw net.ipv4.ip_forward=1
	ip -n "$NS_CLI" route add default via 10.201.1.1
	ip -n "$NS_SRV" route add default via 10.201.2.1
	wait_for 5 nsx "$NS_GWA" ping -c1 -W1 10.201.0.2 || die "veth between the gateways does not work"
}

plain_routes() {
	ip -n "$NS_GWA" route replace 10.201.2.0/24 via 10.201.0.2 dev wire
	ip -n "$NS_GWB" route replace 10.201.1.0/24 via 10.201.0.1 dev wire
}

genkeys() {
	(umask 077; wg genkey >"$WORK/a.key"; wg genkey >"$WORK/b.key")
	wg pubkey <"$WORK/a.key" >"$WORK/a.pub"
	wg pubkey <"$WORK/b.key" >"$WORK/b.pub"
}

# tunnel_up IFA IFB: keys, endpoints, addresses, MTU 1420, routes.
tunnel_up() {
	local ifa=$1 ifb=$2
	nsx "$NS_GWA" timeout 10 wg set "$ifa" listen-port 51820 private-key "$WORK/a.key" \
		peer "$(cat "$WORK/b.pub")" endpoint 10.201.0.2:51820 allowed-ips 10.201.2.0/24,10.201.9.2/32 || return 1
	nsx "$NS_GWB" timeout 10 wg set "$ifb" listen-port 51820 private-key "$WORK/b.key" \
		peer "$(cat "$WORK/a.pub")" endpoint 10.201.0.1:51820 allowed-ips 10.201.1.0/24,10.201.9.1/32 || return 1
	ip -n "$NS_GWA" link set "$ifa" mtu 1420 up
	ip -n "$NS_GWB" link set "$ifb" mtu 1420 up
	ip -n "$NS_GWA" addr add 10.201.9.1/24 dev "$ifa"
	ip -n "$NS_GWB" addr add 10.201.9.2/24 dev "$ifb"
	ip -n "$NS_GWA" route replace 10.201.2.0/24 dev "$ifa"
	ip -n "$NS_GWB" route replace 10.201.1.0/24 dev "$ifb"
}

# start_daemon NS BIN IFNAME LOG: foreground daemon, a child of this shell
# (not of a $(...) subshell: we need its exit status); its pid in DPID.
start_daemon() {
	local ns=$1 bin=$2 ifn=$3 log=$4 pid i
	SOCKETS+=("/var/run/wireguard/$ifn.sock")
	mkdir -p /var/run/wireguard
	# ip netns exec and env exec, so $! is the daemon itself.
	ip netns exec "$ns" env WG_PROCESS_FOREGROUND=1 LOG_LEVEL=error "$bin" -f "$ifn" >"$log" 2>&1 &
	pid=$!
	DAEMON_PIDS+=("$pid")
	for ((i = 0; i < 100; i++)); do
		[[ -S /var/run/wireguard/$ifn.sock ]] && ip -n "$ns" link show "$ifn" >/dev/null 2>&1 && break
		alive "$pid" || { say "$bin -f $ifn exited at start-up: $(tail -3 "$log")"; return 1; }
		sleep 0.1
	done
	((i < 100)) || { say "$bin -f $ifn: no socket or link after 10 s"; return 1; }
	DPID=$pid
}

# Percent of all cores busy over one second. Called while our own daemons
# are idle, so it shows what else the machine is doing (other jobs skew
# every number here).
busy_pct() {
	local a b
	a=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat)
	sleep 1
	b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat)
	awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " ")
		printf "%.0f", (y[2] > x[2]) ? 100 * (y[1] - x[1]) / (y[2] - x[2]) : 0 }'
}

# UDP receive-buffer overflows in the namespaces given (RcvbufErrors counts
# skbs: with UDP GRO one skb can carry many datagrams).
udp_rcvbuf_errors() {
	local ns sum=0 v
	for ns in "$@"; do
		v=$(nsx "$ns" awk '$1 == "Udp:" { if (!h) { for (i = 2; i <= NF; i++) if ($i == "RcvbufErrors") c = i; h = 1 } else print $c }' /proc/net/snmp)
		sum=$((sum + ${v:-0}))
	done
	echo "$sum"
}

# Packets the kernel dropped on the tunnel interfaces' tx queues (for a TUN:
# packets the daemon did not read in time).
tun_tx_dropped() {
	local a b
	a=$(ip -j -s -n "$NS_GWA" link show dev "$TUN_A" 2>/dev/null | jq '.[0].stats64.tx.dropped // 0')
	b=$(ip -j -s -n "$NS_GWB" link show dev "$TUN_B" 2>/dev/null | jq '.[0].stats64.tx.dropped // 0')
	echo $((${a:-0} + ${b:-0}))
}

weft_stats() { printf 'stats=1\n\n' | timeout 5 socat -t 3 - "UNIX-CONNECT:/var/run/wireguard/$1.sock" 2>/dev/null; }

# --- one mode ------------------------------------------------------------------

# check_daemons TEST PIDS...: records the first test after which a gateway
# daemon was found gone (its status comes when run_daemons reaps it).
check_daemons() {
	local t=$1 p
	shift
	[[ -n $(get "$MODE" died_after_test) ]] && return
	for p in "$@"; do
		alive "$p" && continue
		say "BUG? $MODE daemon pid $p is gone after test $t"
		put "$MODE" died_after_test "$t" name
		return
	done
}

# flood_tcp1 PIDS...: TCP 1 stream while gwB's daemon is flooded with
# handshake initiations (valid mac1, random rest) from FLOOD_NSRC extra
# addresses on gwA's wire side at FLOOD_PPS, as a share of the unflooded
# median. Tunnel modes only (plain routing has no responder).
FLOOD_NSRC=64 FLOOD_PPS=20000
flood_tcp1() {
	local fpid i share
	[[ $MODE == plain || ! -x $HS_FLOOD ]] && return
	budget_ok $((SECS + 30)) || { say "$MODE: flood row skipped, out of time"; return; }
	for ((i = 0; i < FLOOD_NSRC; i++)); do
		ip -n "$NS_GWA" addr add "10.201.0.$((128 + i))/24" dev wire 2>/dev/null
	done
	nsx "$NS_GWA" "$HS_FLOOD" -d $((SECS + 6)) -r "$FLOOD_PPS" "$(cat "$WORK/b.pub")" 10.201.0.2 51820 \
		10.201.0.128 "$FLOOD_NSRC" >"$RAW/$MODE-flood.txt" 2>&1 &
	fpid=$!
	BG_PIDS+=("$fpid")
	sleep 2
	if iperf tcp1-flood; then
		put "$MODE" tcp1_flood_gbps "$(jq -r '.end.sum_received.bits_per_second / 1e9' "$RAW/$MODE-tcp1-flood.json")" Gbit/s
	fi
	stop_pid "$fpid" 3
	for ((i = 0; i < FLOOD_NSRC; i++)); do
		ip -n "$NS_GWA" addr del "10.201.0.$((128 + i))/24" dev wire 2>/dev/null
	done
	check_daemons tcp1_flood "$@"
	share=$(awk -v f="$(get "$MODE" tcp1_flood_gbps)" -v u="$(get "$MODE" tcp1_gbps)" \
		'BEGIN { if (u > 0 && f != "") printf "%.2f", f / u }')
	[[ -n $share ]] && put "$MODE" tcp1_flood_share "$share" fraction
	put "$MODE" flood_sent "$(awk -F= '$1 == "sent" { print $2 }' "$RAW/$MODE-flood.txt")" initiations
	say "$MODE: TCP 1 stream under a handshake flood ($FLOOD_PPS/s asked, $(get "$MODE" flood_sent) sent," \
		"$FLOOD_NSRC sources): $(get "$MODE" tcp1_flood_gbps) Gbit/s, ${share:-?} of unflooded"
}

# measure MODE PIDS...: every network test; PIDS are the gateway daemons
# (gwA's first), none for plain routing and kernel WireGuard.
measure() {
	MODE=$1
	shift
	local pids=("$@") c0 c1 bytes=0 ticks=0 r v sampler="" pssfile=$RAW/$MODE-pss-gwA.txt lpid rcvbuf0 srvbuf0
	MODES+=("$MODE")
	rcvbuf0=$(udp_rcvbuf_errors "$NS_GWA" "$NS_GWB") srvbuf0=$(udp_rcvbuf_errors "$NS_SRV")
	ip -n "$NS_CLI" route flush cache
	ip -n "$NS_SRV" route flush cache
	if ! wait_for 12 nsx "$NS_CLI" ping -c1 -W1 "$SRV_ADDR"; then
		say "$MODE: srv not reachable from cli; no measurements"
		put "$MODE" reachable false bool
		return 1
	fi
	put "$MODE" busy_before_pct "$(busy_pct)" %
	(($(get "$MODE" busy_before_pct) > 25)) && say "warning: the machine is $(get "$MODE" busy_before_pct) % busy with other work"
	if ((${#pids[@]})); then
		put "$MODE" pss_idle_kib "$(pss_kib "${pids[0]}")" KiB
		: >"$pssfile"
		pss_sampler "${pids[0]}" "$pssfile" &
		sampler=$!
		BG_PIDS+=("$sampler")
	fi

	# TCP, 1 stream: TCP1_RUNS runs.
	: >"$WORK/tcp1"
	for ((r = 1; r <= TCP1_RUNS; r++)); do
		c0=$(cpu_ticks "${pids[@]}")
		if iperf "tcp1-$r"; then
			c1=$(cpu_ticks "${pids[@]}")
			jq -r '.end.sum_received.bits_per_second / 1e9' "$RAW/$MODE-tcp1-$r.json" >>"$WORK/tcp1"
			bytes=$((bytes + $(jq -r '.end.sum_received.bytes | floor' "$RAW/$MODE-tcp1-$r.json")))
			ticks=$((ticks + c1 - c0))
		fi
	done
	check_daemons tcp1 "${pids[@]}"
	read -r med lo hi < <(stats_of <"$WORK/tcp1")
	put "$MODE" tcp1_gbps "$med" Gbit/s
	put "$MODE" tcp1_min_gbps "$lo" Gbit/s
	put "$MODE" tcp1_max_gbps "$hi" Gbit/s
	put "$MODE" tcp1_runs "$(wc -l <"$WORK/tcp1")" count
	say "$MODE: TCP 1 stream $(paste -sd' ' "$WORK/tcp1") Gbit/s"

	flood_tcp1 "${pids[@]}"

	# TCP, 4 streams and reverse.
	for t in "tcp4:-P 4" "tcpR:-R"; do
		c0=$(cpu_ticks "${pids[@]}")
		# shellcheck disable=SC2086
		if iperf "${t%%:*}" ${t#*:}; then
			c1=$(cpu_ticks "${pids[@]}")
			v=$(jq -r '.end.sum_received.bits_per_second / 1e9' "$RAW/$MODE-${t%%:*}.json")
			bytes=$((bytes + $(jq -r '.end.sum_received.bytes | floor' "$RAW/$MODE-${t%%:*}.json")))
			ticks=$((ticks + c1 - c0))
		else
			v=null
		fi
		check_daemons "${t%%:*}" "${pids[@]}"
		put "$MODE" "${t%%:*}_gbps" "$v" Gbit/s
		say "$MODE: ${t%%:*} $v Gbit/s"
	done
	if ((${#pids[@]})) && ((bytes > 0)); then
		put "$MODE" cpu_s_per_gb "$(awk -v t="$ticks" -v h="$CLK_TCK" -v b="$bytes" 'BEGIN { printf "%.3f", t / h / (b / 1e9) }')" s/GB
		put "$MODE" cpu_tcp_bytes "$bytes" B
		put "$MODE" cpu_tcp_seconds "$(awk -v t="$ticks" -v h="$CLK_TCK" 'BEGIN { printf "%.2f", t / h }')" s
	fi

	# UDP, 200-byte datagrams as fast as the client can send them.
	c0=$(cpu_ticks "${pids[@]}")
	if iperf udp200 -u -l 200 -b 0; then
		((${#pids[@]})) && put "$MODE" udp200_cpu_s "$(awk -v t="$(($(cpu_ticks "${pids[@]}") - c0))" -v h="$CLK_TCK" 'BEGIN { printf "%.2f", t / h }')" s
		# sum_received: the server's side (bytes that arrived, loss from
		# sequence gaps); sum_sent: what the client wrote.
		jq -r '.end | "\(.sum_received.bytes) \(.sum_received.seconds) \(.sum_received.lost_percent) \(.sum_sent.packets) \(.sum_sent.seconds)"' \
			"$RAW/$MODE-udp200.json" >"$WORK/udp"
		read -r rbytes rsecs loss sent ssecs <"$WORK/udp"
		put "$MODE" udp200_rx_pps "$(awk -v b="$rbytes" -v t="$rsecs" 'BEGIN { printf "%.0f", b / 200 / t }')" pkt/s
		put "$MODE" udp200_tx_pps "$(awk -v s="$sent" -v t="$ssecs" 'BEGIN { printf "%.0f", s / t }')" pkt/s
		put "$MODE" udp200_loss_pct "$(awk -v l="$loss" 'BEGIN { printf "%.1f", l }')" %
	else
		put "$MODE" udp200_rx_pps null pkt/s
	fi
	check_daemons udp200 "${pids[@]}"
	say "$MODE: UDP 200 B $(get "$MODE" udp200_rx_pps) pkt/s received, $(get "$MODE" udp200_loss_pct)% lost"

	# ping: idle, then during a 4-stream load.
	ping_rtts "$WORK/ping-idle"
	cp "$WORK/ping-idle" "$RAW/$MODE-ping-idle.txt"
	put_ping "$MODE" ping_idle "$WORK/ping-idle"
	budget_ok $((PING_COUNT / 100 + 25)) || { say "$MODE: loaded ping skipped, out of time"; return 1; }
	nsx "$NS_SRV" timeout $((SECS + PING_COUNT / 100 + 20)) iperf3 -s -1 -p "$PORT" -B "$SRV_ADDR" >"$RAW/$MODE-load.server.log" 2>&1 &
	BG_PIDS+=($!)
	wait_for 5 listening
	nsx "$NS_CLI" timeout $((PING_COUNT / 100 + 15)) iperf3 -c "$SRV_ADDR" -p "$PORT" -P 4 \
		-t $((PING_COUNT / 100 + 2)) -J >"$RAW/$MODE-load.json" 2>&1 &
	lpid=$!
	BG_PIDS+=("$lpid")
	sleep 1
	ping_rtts "$WORK/ping-load"
	cp "$WORK/ping-load" "$RAW/$MODE-ping-load.txt"
	put_ping "$MODE" ping_load "$WORK/ping-load"
	check_daemons ping_load "${pids[@]}"
	wait "$lpid" 2>/dev/null
	put "$MODE" ping_load_iperf_gbps "$(jq -r '.end.sum_received.bits_per_second / 1e9' "$RAW/$MODE-load.json" 2>/dev/null || echo null)" Gbit/s
	say "$MODE: ping idle avg/p99 $(get "$MODE" ping_idle_avg_ms)/$(get "$MODE" ping_idle_p99_ms) ms," \
		"loaded $(get "$MODE" ping_load_avg_ms)/$(get "$MODE" ping_load_p99_ms) ms"

	put "$MODE" busy_after_pct "$(busy_pct)" %
	put "$MODE" udp_rcvbuf_errors $(($(udp_rcvbuf_errors "$NS_GWA" "$NS_GWB") - rcvbuf0)) skbs
	put "$MODE" srv_udp_rcvbuf_errors $(($(udp_rcvbuf_errors "$NS_SRV") - srvbuf0)) skbs
	[[ -n $TUN_A ]] && put "$MODE" tun_tx_dropped "$(tun_tx_dropped)" packets
	for v in "$NS_GWA" "$NS_GWB"; do
		{ ip -d -s -n "$v" link; nsx "$v" cat /proc/net/snmp; } >"$RAW/$MODE-kernel-${v##*-}.txt" 2>&1
	done
	if [[ -n $sampler ]]; then
		stop_pid "$sampler" 1
		put "$MODE" pss_load_kib "$(sort -g "$pssfile" | tail -1)" KiB
		sleep 3
		put "$MODE" pss_after_kib "$(pss_kib "${pids[0]}")" KiB
		check_daemons after_load "${pids[@]}"
		say "$MODE: PSS gwA idle/load/after $(get "$MODE" pss_idle_kib)/$(get "$MODE" pss_load_kib)/$(get "$MODE" pss_after_kib) KiB;" \
			"CPU $(get "$MODE" cpu_s_per_gb) s/GB"
	fi
}

# run_daemons MODE BIN: both gateways on BIN, measure, stop (checking for
# crashes and hangs on the way).
run_daemons() {
	local mode=$1 bin=$2 tag=$3 ifa ifb pa pb p
	ifa=wb${ID}${tag}a ifb=wb${ID}${tag}b
	say "== $mode ($bin)"
	TUN_A=$ifa TUN_B=$ifb
	start_daemon "$NS_GWA" "$bin" "$ifa" "$RAW/$mode-gwA.log" && pa=$DPID &&
		start_daemon "$NS_GWB" "$bin" "$ifb" "$RAW/$mode-gwB.log" && pb=$DPID &&
		tunnel_up "$ifa" "$ifb" ||
		{ say "$mode: could not start or configure"; MODES+=("$mode"); put "$mode" reachable false bool; return; }
	[[ $mode == weftd ]] && weft_stats "$ifa" >"$RAW/$mode-stats-gwA-before.txt"
	measure "$mode" "$pa" "$pb"
	if [[ $mode == weftd ]]; then
		weft_stats "$ifa" >"$RAW/$mode-stats-gwA.txt"
		weft_stats "$ifb" >"$RAW/$mode-stats-gwB.txt"
		put weftd aead_backend "$(awk -F= '$1 == "aead_backend" { print $2 }' "$RAW/$mode-stats-gwA.txt")" name
	fi
	nsx "$NS_GWA" timeout 5 wg show "$ifa" >"$RAW/$mode-wg-show-gwA.txt" 2>&1
	for p in "$pa" "$pb"; do
		stop_pid "$p" 5
		case $STOP_HOW in
		exited) say "BUG? $mode pid $p had exited before the end (status $STOP_RC)"; put "$mode" died_during_run "$STOP_RC" status ;;
		kill) say "BUG? $mode pid $p ignored SIGTERM for 5 s (killed)"; put "$mode" hung_on_term 1 bool ;;
		*) ((STOP_RC > 128 && STOP_RC != 143)) && { say "BUG? $mode pid $p ended with status $STOP_RC on SIGTERM"; put "$mode" bad_exit "$STOP_RC" status; } ;;
		esac
	done
	ip -n "$NS_GWA" route del 10.201.2.0/24 2>/dev/null
	ip -n "$NS_GWB" route del 10.201.1.0/24 2>/dev/null
}

kernel_wg() {
	local scratch=wbench-$ID-scratch
	ip netns add "$scratch" || return 1
	NAMESPACES+=("$scratch")
	ip -n "$scratch" link add x type wireguard >/dev/null 2>&1
	local rc=$?
	ip netns del "$scratch"
	return $rc
}

# --- the run ---------------------------------------------------------------------

say "out: $OUT ($( ((QUICK)) && echo quick || echo full ): ${SECS}s tests, $TCP1_RUNS TCP 1-stream runs, $PING_COUNT pings)"
{
	echo "date=$(date -Is)"
	echo "nproc=$(nproc)"
	echo "cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
	echo "kernel=$(uname -r)"
	echo "weftd=$WEFTD ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet HEAD -- 2>/dev/null || echo ' + uncommitted changes'))"
	echo "wireguard-go=$WIREGUARD_GO ($("$WIREGUARD_GO" --version 2>/dev/null | head -1))"
	echo "iperf3=$(iperf3 --version | head -1)"
	echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$RAW/machine.txt"
jq -cn --rawfile m "$RAW/machine.txt" --argjson quick "$QUICK" \
	'{meta: ($m | split("\n") | map(select(length > 0) | capture("(?<key>[^=]+)=(?<value>.*)")) | from_entries),
	  quick: ($quick == 1)}' >>"$OUT/results.jsonl"

# Crypto ceilings first, on a quiet machine.
if [[ -x $BENCH_AEAD ]]; then
	"$BENCH_AEAD" "$AEAD_SECS" >"$RAW/bench_aead.txt" 2>&1
	while read -r line; do
		b=$(sed -n 's/.*backend=\([^ ]*\).*/\1/p' <<<"$line")
		op=$(sed -n 's/.*op=\([^ ]*\).*/\1/p' <<<"$line")
		[[ -n $b ]] || continue
		put "aead-$b" "${op}_mbytes_per_sec" "$(sed -n 's/.*mbytes_per_sec=\([^ ]*\).*/\1/p' <<<"$line")" MB/s
		put "aead-$b" "${op}_gbps" "$(sed -n 's/.*gbit_per_sec=\([^ ]*\).*/\1/p' <<<"$line")" Gbit/s
	done <"$RAW/bench_aead.txt"
else
	say "no $BENCH_AEAD: AEAD ceiling skipped"
fi
if [[ -x $BENCH_HS ]]; then
	"$BENCH_HS" "$HS_SECS" >"$RAW/bench_handshake.txt" 2>&1
	for k in handshakes_per_sec initiator_us responder_us; do
		put crypto "$k" "$(sed -n "s/.*$k=\([^ ]*\).*/\1/p" "$RAW/bench_handshake.txt")" "$k"
	done
	v=$(get crypto responder_us)
	[[ -n $v ]] && put crypto responses_per_sec "$(awk -v u="$v" 'BEGIN { printf "%.0f", 1e6 / u }')" 1/s
else
	say "no $BENCH_HS: handshake rate skipped"
fi
say "AEAD (1420 B, one core): $(awk '{ printf "%s %s %s Gbit/s; ", $1, $2, $7 }' "$RAW/bench_aead.txt" 2>/dev/null | sed 's/[a-z_]*=//g')"
say "handshakes: $(get crypto handshakes_per_sec)/s on one core"

topology
genkeys

say "== plain routing"
TUN_A="" TUN_B=""
plain_routes
measure plain
ip -n "$NS_GWA" route del 10.201.2.0/24
ip -n "$NS_GWB" route del 10.201.1.0/24

if [[ -x $WIREGUARD_GO ]]; then
	run_daemons wireguard-go "$WIREGUARD_GO" g
else
	say "wireguard-go: skipped (not installed)"
fi
if [[ -x $WEFTD ]]; then
	run_daemons weftd "$WEFTD" w
else
	say "weftd: skipped (no binary at $WEFTD)"
fi

if kernel_wg; then
	say "== kernel WireGuard"
	TUN_A=wgk TUN_B=wgk
	ip -n "$NS_GWA" link add wgk type wireguard && ip -n "$NS_GWB" link add wgk type wireguard &&
		tunnel_up wgk wgk && measure kernel
else
	echo "kernel WireGuard: skipped (no module)"
fi

# --- report ----------------------------------------------------------------------

fmt() { # value, printf format
	[[ -z $1 || $1 == null ]] && { echo "–"; return; }
	awk -v v="$1" -v f="$2" 'BEGIN { printf f, v }'
}
ratio() { # a b: a / b as "N.NN×"
	[[ -z $1 || -z $2 || $1 == null || $2 == null ]] && { echo "–"; return; }
	awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "–"; else printf "%.2f×", a / b }'
}

CEIL_BACKEND=$(get weftd aead_backend)
CEIL=$(get "aead-${CEIL_BACKEND:-x}" seal_gbps)
if [[ -z $CEIL ]]; then
	CEIL=$(for b in sodium openssl; do get "aead-$b" seal_gbps; done | sort -g | tail -1)
	CEIL_BACKEND="best backend"
fi
for m in "${MODES[@]}"; do
	[[ $m != plain && -n $CEIL && -n $(get "$m" tcp1_gbps) && $(get "$m" tcp1_gbps) != null ]] &&
		put "$m" tcp1_share_of_aead_ceiling "$(awk -v a="$(get "$m" tcp1_gbps)" -v c="$CEIL" 'BEGIN { printf "%.3f", a / c }')" fraction
done
for metric in tcp1_gbps tcp4_gbps tcpR_gbps udp200_rx_pps ping_load_p99_ms cpu_s_per_gb pss_load_kib; do
	[[ -n $(get weftd "$metric") ]] || continue
	for base in wireguard-go plain; do
		v=$(ratio "$(get weftd "$metric")" "$(get "$base" "$metric")")
		[[ $v == – ]] || put weftd "${metric}_vs_$base" "${v%×}" ratio
	done
done

# label | key | printf format (empty: text) | r = ratio columns
ROWS=(
	"other work: CPU busy before / after (%)|busy_range||"
	"TCP 1 stream, median (Gbit/s)|tcp1_gbps|%.2f|r"
	"TCP 1 stream, min–max (Gbit/s)|tcp1_range||"
	"TCP 1 stream under a handshake flood (Gbit/s)|tcp1_flood_gbps|%.2f|"
	"  the same / unflooded median|tcp1_flood_share|%.2f|"
	"TCP 4 streams (Gbit/s)|tcp4_gbps|%.2f|r"
	"TCP reverse (Gbit/s)|tcpR_gbps|%.2f|r"
	"UDP 200 B sent by iperf3 (kpkt/s)|udp200_tx_kpps|%.1f|"
	"UDP 200 B received (kpkt/s)|udp200_rx_kpps|%.1f|r"
	"UDP 200 B lost (%)|udp200_loss_pct|%.1f|"
	"ping idle avg (ms)|ping_idle_avg_ms|%.3f|r"
	"ping idle p99 (ms)|ping_idle_p99_ms|%.3f|r"
	"ping 4-stream load avg (ms)|ping_load_avg_ms|%.3f|r"
	"ping 4-stream load p99 (ms)|ping_load_p99_ms|%.3f|r"
	"ping under load lost (%)|ping_load_loss_pct|%.1f|"
	"CPU-s per GB of TCP (both gateways)|cpu_s_per_gb|%.2f|r"
	"PSS gwA idle (KiB)|pss_idle_kib|%.0f|r"
	"PSS gwA under load, peak (KiB)|pss_load_kib|%.0f|r"
	"PSS gwA after load (KiB)|pss_after_kib|%.0f|r"
	"TCP 1 stream / AEAD seal ceiling|tcp1_share_of_aead_ceiling|%.2f|"
	"kernel drops: tunnel if tx queue, both gw (pkts)|tun_tx_dropped|%.0f|"
	"kernel drops: UDP rcvbuf, both gw (skbs)|udp_rcvbuf_errors|%.0f|"
	"kernel drops: UDP rcvbuf, srv iperf3 (skbs)|srv_udp_rcvbuf_errors|%.0f|"
)
for m in "${MODES[@]}"; do
	for k in rx tx; do
		v=$(get "$m" udp200_${k}_pps)
		[[ -n $v && $v != null ]] && RES["$m|udp200_${k}_kpps"]=$(awk -v v="$v" 'BEGIN { printf "%.3f", v / 1000 }')
	done
	RES["$m|busy_range"]="$(get "$m" busy_before_pct) / $(get "$m" busy_after_pct)"
	lo=$(get "$m" tcp1_min_gbps) hi=$(get "$m" tcp1_max_gbps)
	[[ -n $lo && $lo != null ]] && RES["$m|tcp1_range"]="$(fmt "$lo" %.2f)–$(fmt "$hi" %.2f) ($(get "$m" tcp1_runs) runs)"
done
HAVE_WEFT=0 HAVE_GO=0 HAVE_PLAIN=0
for m in "${MODES[@]}"; do
	[[ $m == weftd ]] && HAVE_WEFT=1
	[[ $m == wireguard-go ]] && HAVE_GO=1
	[[ $m == plain ]] && HAVE_PLAIN=1
done

{
	echo "## weft benchmark, $(date '+%Y-%m-%d %H:%M') ($( ((QUICK)) && echo "--quick: 1 run, ${SECS} s tests" || echo "full: ${TCP1_RUNS} TCP 1-stream runs, ${SECS} s tests"))"
	echo
	echo "$(nproc) cores, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), kernel $(uname -r); load before the run: $(sed -n 's/^load_before=//p' "$RAW/machine.txt")."
	busiest=$(for m in "${MODES[@]}"; do get "$m" busy_before_pct; get "$m" busy_after_pct; done | sort -g | tail -1)
	if [[ -n $busiest ]] && ((busiest > 25)); then
		echo "**Warning: other work kept up to ${busiest} % of the CPU busy just before or after a mode was measured; the numbers below are skewed by it.**"
		echo
	fi
	echo
	hdr="| |" sep="|---|"
	for m in "${MODES[@]}"; do hdr+=" $m |"; sep+="---:|"; done
	((HAVE_WEFT && HAVE_GO)) && { hdr+=" weftd / wireguard-go |"; sep+="---:|"; }
	((HAVE_WEFT && HAVE_PLAIN)) && { hdr+=" weftd / plain |"; sep+="---:|"; }
	echo "$hdr"
	echo "$sep"
	for row in "${ROWS[@]}"; do
		IFS='|' read -r label key f rat <<<"$row"
		line="| $label |"
		for m in "${MODES[@]}"; do
			v=$(get "$m" "$key")
			if [[ -z $f ]]; then line+=" ${v:-–} |"; else line+=" $(fmt "$v" "$f") |"; fi
		done
		if [[ $rat == r ]]; then
			((HAVE_WEFT && HAVE_GO)) && line+=" $(ratio "$(get weftd "$key")" "$(get wireguard-go "$key")") |"
			((HAVE_WEFT && HAVE_PLAIN)) && line+=" $(ratio "$(get weftd "$key")" "$(get plain "$key")") |"
		else
			((HAVE_WEFT && HAVE_GO)) && line+=" |"
			((HAVE_WEFT && HAVE_PLAIN)) && line+=" |"
		fi
		echo "$line"
	done
	echo
	echo "Crypto on one core (1420-byte packets): $(for b in sodium openssl; do
		[[ -n $(get "aead-$b" seal_gbps) ]] && printf '%s seal %s Gbit/s (%s MB/s), open %s Gbit/s; ' "$b" \
			"$(fmt "$(get "aead-$b" seal_gbps)" %.2f)" "$(fmt "$(get "aead-$b" seal_mbytes_per_sec)" %.0f)" \
			"$(fmt "$(get "aead-$b" open_gbps)" %.2f)"
	done)weftd's backend: ${CEIL_BACKEND:-?}, the ceiling used above ($(fmt "$CEIL" %.2f) Gbit/s)."
	echo "Handshakes on one core: $(fmt "$(get crypto handshakes_per_sec)" %.0f) complete handshakes/s, both sides (initiator $(fmt "$(get crypto initiator_us)" %.1f) µs + responder $(fmt "$(get crypto responder_us)" %.1f) µs each); responding only: $(fmt "$(get crypto responses_per_sec)" %.0f)/s."
	for m in "${MODES[@]}"; do
		[[ $(get "$m" reachable) == false ]] && echo "**$m: srv was not reachable from cli through it; no measurements.**"
		[[ -n $(get "$m" died_during_run) ]] && echo "**$m: a gateway daemon exited during the run (status $(get "$m" died_during_run)$([[ -n $(get "$m" died_after_test) ]] && echo ", noticed after test $(get "$m" died_after_test)")); see $RAW/$m-gw*.log.**"
		[[ -n $(get "$m" hung_on_term) ]] && echo "**$m: a gateway daemon ignored SIGTERM for 5 s and was killed.**"
		[[ -n $(get "$m" bad_exit) ]] && echo "**$m: a gateway daemon ended with status $(get "$m" bad_exit) on SIGTERM.**"
	done
	kernel_wg_note=$(for m in "${MODES[@]}"; do [[ $m == kernel ]] && echo y; done)
	[[ -n $kernel_wg_note ]] || echo "Kernel WireGuard: skipped (no module)."
	if ((HAVE_WEFT)); then
		echo
		echo "### Targets (issue \"Fast path\")"
		echo
		echo "| target | goal | measured | |"
		echo "|---|---|---|---|"
		t() { # label goal measured ok(1/0/empty)
			local mark="–"
			[[ $4 == 1 ]] && mark="met"
			[[ $4 == 0 ]] && mark="**not met**"
			echo "| $1 | $2 | $3 | $mark |"
		}
		ok() { awk "BEGIN { exit !($1) }" 2>/dev/null && echo 1 || echo 0; }
		g=$(get weftd tcp1_gbps_vs_wireguard-go) p=$(get weftd tcp1_gbps_vs_plain)
		if [[ -n $g && -n $p ]]; then
			t "TCP single stream" "≥ 8× wireguard-go, ≥ 45 % of plain" "$(fmt "$g" %.2f)× wireguard-go, $(fmt "$(awk -v p="$p" 'BEGIN { print p * 100 }')" %.0f) % of plain" "$(ok "$g >= 8 && $p >= 0.45")"
		else
			t "TCP single stream" "≥ 8× wireguard-go, ≥ 45 % of plain" "n/a" ""
		fi
		v=$(get weftd ping_load_p99_ms)
		t "ping p99 under 4-stream load" "≤ 2 ms" "$(fmt "$v" %.2f) ms" "$([[ -n $v && $v != null ]] && ok "$v <= 2")"
		v=$(get weftd udp200_rx_pps_vs_wireguard-go)
		t "UDP 200-byte packets received" "≥ 2.5× wireguard-go" "$(fmt "$v" %.2f)×" "$([[ -n $v ]] && ok "$v >= 2.5")"
		i=$(get weftd pss_idle_kib) l=$(get weftd pss_load_kib) a=$(get weftd pss_after_kib)
		t "PSS (gwA)" "≤ 4 MiB idle, ≤ 32 MiB load, ≤ 8 MiB after" "$(fmt "$i" %.0f) / $(fmt "$l" %.0f) / $(fmt "$a" %.0f) KiB" \
			"$([[ -n $i && -n $l && -n $a ]] && ok "$i <= 4096 && $l <= 32768 && $a <= 8192")"
		v=$(get weftd cpu_s_per_gb)
		t "CPU per GB transferred" "≤ 2.5 CPU-s" "$(fmt "$v" %.2f) CPU-s" "$([[ -n $v && $v != null ]] && ok "$v <= 2.5")"
	fi
	echo
	echo "Raw iperf3 JSON, ping RTTs, daemon logs and weftd counters: $RAW/."
} >"$OUT/results.md"

# --- plot ------------------------------------------------------------------------

{
	echo "test ${MODES[*]}"
	for key in tcp1_gbps tcp4_gbps tcpR_gbps; do
		line=$key
		for m in "${MODES[@]}"; do v=$(get "$m" "$key"); [[ -z $v || $v == null ]] && v=0; line+=" $v"; done
		echo "$line"
	done
} | sed 's/tcp1_gbps/"TCP 1 stream"/; s/tcp4_gbps/"TCP 4 streams"/; s/tcpR_gbps/"TCP reverse"/' >"$OUT/plot-tput.dat"
{
	echo "test ${MODES[*]}"
	line='"UDP 200 B"'
	for m in "${MODES[@]}"; do v=$(get "$m" udp200_rx_kpps); line+=" ${v:-0}"; done
	echo "$line"
} >"$OUT/plot-udp.dat"
{
	echo "test ${MODES[*]}"
	for key in ping_idle_avg_ms ping_idle_p99_ms ping_load_avg_ms ping_load_p99_ms; do
		line=$key
		for m in "${MODES[@]}"; do v=$(get "$m" "$key"); [[ -z $v || $v == null ]] && v=NaN; line+=" $v"; done
		echo "$line"
	done
} | sed 's/ping_idle_avg_ms/"idle avg"/; s/ping_idle_p99_ms/"idle p99"/; s/ping_load_avg_ms/"load avg"/; s/ping_load_p99_ms/"load p99"/' >"$OUT/plot-lat.dat"
N=${#MODES[@]}
gnuplot >"$RAW/gnuplot.log" 2>&1 <<EOF
set terminal pngcairo size 1500,520 font "sans,10"
set output "$OUT/bench.png"
set multiplot layout 1,3 title "weft benchmark $(date '+%Y-%m-%d %H:%M') — $(nproc) cores, $(uname -r)$( ((QUICK)) && echo ' (quick)')$([[ -n $busiest ]] && ((busiest > 25)) && echo " — WARNING: up to ${busiest} % of the CPU busy with other work")"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key top right autotitle columnhead
set grid ytics
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0
# a bar's centre in a cluster of N: gnuplot gives each bar 1/(N + gap)
off(i) = (i - 2 - ($N - 1) / 2.0) / ($N + 1.0)
set title "TCP throughput (Gbit/s)"
plot for [i=2:$((N + 1))] "$OUT/plot-tput.dat" using i:xtic(1) title columnheader(i), \
     for [i=2:$((N + 1))] "$OUT/plot-tput.dat" using (\$0 + off(i)):i:(sprintf("%.2f", column(i))) with labels offset 0,0.7 font ",8" notitle
set title "UDP 200-byte datagrams received (kpkt/s)"
plot for [i=2:$((N + 1))] "$OUT/plot-udp.dat" using i:xtic(1) title columnheader(i), \
     for [i=2:$((N + 1))] "$OUT/plot-udp.dat" using (\$0 + off(i)):i:(sprintf("%.1f", column(i))) with labels offset 0,0.7 font ",8" notitle
set title "ping RTT (ms, log scale); goal: load p99 <= 2 ms"
set logscale y
set yrange [*:*]
set offsets 0, 0, 0, 0
set key top left
set arrow from graph 0, first 2 to graph 1, first 2 nohead dt 2 lw 1.5 lc rgb "red"
plot for [i=2:$((N + 1))] "$OUT/plot-lat.dat" using i:xtic(1) title columnheader(i), \
     for [i=2:$((N + 1))] "$OUT/plot-lat.dat" using (\$0 + off(i)):i:(sprintf("%.3g", column(i))) with labels offset 0,0.7 font ",8" notitle
unset multiplot
EOF
[[ -s $OUT/bench.png ]] || say "gnuplot failed: $(tail -3 "$RAW/gnuplot.log")"

cat "$OUT/results.md"
say "done in $(($(date +%s) - START_S)) s: $OUT/results.md, results.jsonl, bench.png"
