#!/usr/bin/env bash
# The same-host bypass of attached ports (issue 7), in one run: TCP
# throughput (iperf3, 1 stream) and ping latency between two VMs of one host,
#   bypass     weftd with the BPF program on both attached ports
#   no bypass  weftd with WEFT_BPF=0: the host kernel routes between them
#   plain      no weftd: the kernel routes between the two veths by hand
# and the ratio bypass / plain (target >= 90 %).
#
#   bench/bypass.sh [--quick] [--out DIR]
#
#   --quick     1 run of 3 s per mode; default 3 runs of 8 s (median kept)
#   --out DIR   where bypass.md and raw/ go (default /tmp/weft-bench-bypass-DATE)
#
#   netns vm1 10.210.0.11                 netns vm2 10.210.0.12
#        | eth0 (veth)                         | eth0 (veth)
#   +----+ bb<ID>1 ------ netns h ------ bb<ID>2 +----+
#   |   weftd wbb<ID> (TUN), attached ports on bb<ID>1, bb<ID>2      |
#   +-----------------------------------------------------------------+
# Every address exists only inside these namespaces. Uses $WEFT_BUILD_DIR
# (default build/) for weftd and weft.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
QUICK=0 OUT=""
while (($#)); do
	case $1 in
	--quick) QUICK=1 ;;
	--out) OUT=${2:?--out needs a folder}; shift ;;
	-h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bypass.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
if [[ -z ${BENCH_WRAPPED:-} ]]; then
	export BENCH_WRAPPED=1
	args=()
	((QUICK)) && args+=(--quick)
	[[ -n $OUT ]] && args+=(--out "$OUT")
	exec timeout -k 10 300 bash "$0" "${args[@]}"
fi
if ((QUICK)); then SECS=3 RUNS=1 PINGS=100; else SECS=8 RUNS=3 PINGS=300; fi
OUT=${OUT:-/tmp/weft-bench-bypass-$(date +%Y%m%d-%H%M%S)}
BUILD_DIR=$ROOT/${WEFT_BUILD_DIR:-build}
WEFTD=${WEFTD:-$BUILD_DIR/daemon/weftd}
WEFT=${WEFT:-$BUILD_DIR/cli/weft}
RAW=$OUT/raw
ID=$$
NS_H=wbb-$ID-h NS_1=wbb-$ID-vm1 NS_2=wbb-$ID-vm2
IFN=wbb$ID P1=bb${ID}1 P2=bb${ID}2
V1=10.210.0.11 V2=10.210.0.12 GW4=169.254.1.1
NAMESPACES=() DPID=""

say() { printf '[bench-bypass %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { say "error: $*"; exit 1; }
nsx() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
stop_weftd() {
	[[ -n $DPID ]] || return 0
	kill "$DPID" 2>/dev/null
	wait "$DPID" 2>/dev/null
	wait_for 5 test ! -e "/var/run/wireguard/$IFN.sock"
	DPID=""
}
cleanup() {
	local p ns
	stop_weftd
	for ns in "${NAMESPACES[@]}"; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null
	done
	rm -f "/var/run/wireguard/$IFN.sock"
}
trap cleanup EXIT
trap 'exit 1' TERM INT
wait_for() {
	local end=$(($(date +%s%3N) + $1 * 1000))
	shift
	until "$@" >/dev/null 2>&1; do
		(($(date +%s%3N) < end)) || return 1
		sleep 0.1
	done
}

((EUID == 0)) || die "run as root (network namespaces)"
for c in ip iperf3 ping jq; do command -v "$c" >/dev/null || die "missing $c"; done
[[ -x $WEFTD && -x $WEFT ]] || die "build weftd and weft first ($BUILD_DIR)"
mkdir -p "$RAW"

for ns in "$NS_H" "$NS_1" "$NS_2"; do
	ip netns add "$ns" || die "cannot create namespace $ns"
	NAMESPACES+=("$ns")
	ip -n "$ns" link set lo up
done
nsx "$NS_H" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
# vm N ADDR MAC: a VM namespace behind a veth; gateway GW4 on eth0.
vm() {
	local ns=NS_$1 p=P$1
	ip -n "$NS_H" link add "${!p}" type veth peer name eth0 netns "${!ns}"
	ip -n "$NS_H" link set "${!p}" up
	ip -n "${!ns}" link set eth0 address "$3"
	ip -n "${!ns}" addr add "$2/32" dev eth0
	ip -n "${!ns}" link set eth0 up
	ip -n "${!ns}" route add "$GW4" dev eth0
	ip -n "${!ns}" route add default via "$GW4" dev eth0 src "$2"
}
vm 1 "$V1" 52:54:00:10:00:11
vm 2 "$V2" 52:54:00:10:00:12

# weftd [ENV...]: weftd on NS_H with both attached ports.
start_weftd() {
	ip netns exec "$NS_H" env WG_PROCESS_FOREGROUND=1 LOG_LEVEL=verbose "$@" "$WEFTD" -f "$IFN" \
		>>"$RAW/weftd.log" 2>&1 &
	DPID=$!
	wait_for 10 test -S "/var/run/wireguard/$IFN.sock" || die "weftd did not start"
	"$WEFT" -i "$IFN" port add "$P1" attached mac 52:54:00:10:00:11 address "$V1" ||
		die "port add $P1"
	"$WEFT" -i "$IFN" port add "$P2" attached mac 52:54:00:10:00:12 address "$V2" ||
		die "port add $P2"
}
# plain: the host kernel alone; GW4 is the host side's own address.
start_plain() {
	local p
	for p in "$P1" "$P2"; do
		ip -n "$NS_H" addr add "$GW4/32" dev "$p"
	done
	ip -n "$NS_H" route add "$V1/32" dev "$P1"
	ip -n "$NS_H" route add "$V2/32" dev "$P2"
}

# measure MODE: RUNS x (iperf3 vm1 -> vm2, ping vm1 -> vm2); medians to $MODE_*.
measure() {
	local mode=$1 r g t=() l=()
	for ns in "$NS_1" "$NS_2"; do ip -n "$ns" neigh flush all; done
	wait_for 10 nsx "$NS_1" ping -c1 -W1 "$V2" || die "$mode: vm1 cannot reach vm2"
	for ((r = 1; r <= RUNS; r++)); do
		nsx "$NS_2" iperf3 -s -1 -B "$V2" >/dev/null 2>&1 &
		wait_for 5 nsx "$NS_2" ss -ltn "sport = :5201" || die "iperf3 server"
		nsx "$NS_1" timeout $((SECS + 15)) iperf3 -c "$V2" -t "$SECS" -J >"$RAW/$mode-iperf-$r.json" ||
			die "$mode: iperf3 failed"
		g=$(jq '.end.sum_received.bits_per_second / 1e7 | round / 100' "$RAW/$mode-iperf-$r.json")
		t+=("$g")
		nsx "$NS_1" ping -n -q -c "$PINGS" -i 0.01 "$V2" >"$RAW/$mode-ping-$r.txt" 2>&1
		l+=("$(awk -F/ '/^rtt/ { print $5 * 1000 }' "$RAW/$mode-ping-$r.txt")")
		wait_for 5 sh -c "! ip netns exec $NS_2 ss -ltn 'sport = :5201' | grep -q LISTEN"
		say "$mode run $r: $g Gbit/s, ping avg ${l[-1]} us"
	done
	printf -v "GBPS_$mode" '%s' "$(printf '%s\n' "${t[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')"
	printf -v "LAT_$mode" '%s' "$(printf '%s\n' "${l[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')"
}

start_weftd
grep -q "bypass: loaded" "$RAW/weftd.log" || die "the bypass did not load (see $RAW/weftd.log)"
measure bypass
BP=$("$WEFT" -i "$IFN" port list --json | jq --arg p "$P1" '.[] | select(.name == $p) | .counters.bypass_packets')
say "bypass_packets of $P1: $BP"
stop_weftd
start_weftd WEFT_BPF=0
measure nobypass
stop_weftd
start_plain
measure plain

RATIO=$(awk -v a="$GBPS_bypass" -v b="$GBPS_plain" 'BEGIN { printf "%.2f", a / b }')
{
	echo "| mode | TCP 1 stream (Gbit/s) | ping avg (us) |"
	echo "|---|---|---|"
	echo "| bypass (BPF) | $GBPS_bypass | $LAT_bypass |"
	echo "| no bypass (WEFT_BPF=0, kernel routes weftd's host routes) | $GBPS_nobypass | $LAT_nobypass |"
	echo "| plain veth routing (no weftd) | $GBPS_plain | $LAT_plain |"
	echo
	echo "bypass / plain: $RATIO (target >= 0.90); $RUNS run(s) of $SECS s, median; $PINGS pings at 10 ms."
	echo "Frames counted by the bypass program on $P1 during its runs: $BP."
} | tee "$OUT/bypass.md"
