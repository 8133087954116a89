#!/usr/bin/env bash
# VM ports side by side with host traffic through the same weftd tunnel, in
# one run: TCP throughput (iperf3, 1 stream) and ping latency for
#   host A -> host B          the hosts' own traffic, TUN to TUN
#   VM on A -> VM on B        tap port, tunnel, tap port
#   VM on A -> VM on A        two tap ports of one weftd
# and the ratio of VM-to-VM across hosts to host-to-host (target >= 90 %).
#
#   bench/vm.sh [--quick] [--out DIR] [--no-build]
#
#   --quick     1 run of 3 s per path (about a minute); default 3 runs of 8 s
#   --out DIR   where vm.md, vm.jsonl and raw/ go (default /tmp/weft-bench-vm-DATE)
#   --no-build  use the binaries already in $WEFT_BUILD_DIR (default build/)
#
#   netns vmA1 10.202.1.11   netns vmA2 10.202.1.12          netns vmB1 10.202.2.21
#        | tap                    | tap                            | tap
#   +----+------------------------+----+                  +---------+---------------+
#   | hA  weftd  tunnel 10.202.9.1     | ---- veth -----  | hB  weftd 10.202.9.2    |
#   |     wire 10.202.0.1              |                  |     wire 10.202.0.2     |
#   +----------------------------------+                  +-------------------------+
# Every address exists only inside these namespaces.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
QUICK=0 OUT="" BUILD=1
while (($#)); do
	case $1 in
	--quick) QUICK=1 ;;
	--out) OUT=${2:?--out needs a folder}; shift ;;
	--no-build) BUILD=0 ;;
	-h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "vm.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
if [[ -z ${BENCH_WRAPPED:-} ]]; then
	export BENCH_WRAPPED=1
	args=()
	((QUICK)) && args+=(--quick)
	[[ -n $OUT ]] && args+=(--out "$OUT")
	((BUILD)) || args+=(--no-build)
	exec timeout -k 10 300 bash "$0" "${args[@]}"
fi
if ((QUICK)); then SECS=3 RUNS=1 PINGS=100; else SECS=8 RUNS=3 PINGS=300; fi
OUT=${OUT:-/tmp/weft-bench-vm-$(date +%Y%m%d-%H%M%S)}
BUILD_DIR=$ROOT/${WEFT_BUILD_DIR:-build}
WEFTD=${WEFTD:-$BUILD_DIR/daemon/weftd}
WEFT=${WEFT:-$BUILD_DIR/cli/weft}
RAW=$OUT/raw
ID=$$
NS_A=wbvm-$ID-hA NS_B=wbvm-$ID-hB
IF_A=wbv${ID}a IF_B=wbv${ID}b
NAMESPACES=() PIDS=()

say() { printf '[bench-vm %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { say "error: $*"; exit 1; }
nsx() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
cleanup() {
	local p ns
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	sleep 0.3
	for ns in "${NAMESPACES[@]}"; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null
	done
	rm -f "/var/run/wireguard/$IF_A.sock" "/var/run/wireguard/$IF_B.sock"
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
for c in ip wg iperf3 ping jq; do command -v "$c" >/dev/null || die "missing $c"; done
if ((BUILD)); then
	cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
		make -C "$BUILD_DIR" -j"$(nproc)" weftd weft >/dev/null || die "build failed"
fi
[[ -x $WEFTD && -x $WEFT ]] || die "no weftd or weft in $BUILD_DIR"
mkdir -p "$RAW"

new_ns() {
	ip netns add "$1" || die "cannot create namespace $1"
	NAMESPACES+=("$1")
	ip -n "$1" link set lo up
}

# --- two hosts and the tunnel ---
new_ns "$NS_A"
new_ns "$NS_B"
ip -n "$NS_A" link add wire type veth peer name wire netns "$NS_B"
ip -n "$NS_A" addr add 10.202.0.1/24 dev wire
ip -n "$NS_B" addr add 10.202.0.2/24 dev wire
ip -n "$NS_A" link set wire up
ip -n "$NS_B" link set wire up
mkdir -p /var/run/wireguard
for h in A B; do
	ns=NS_$h ifn=IF_$h
	nsx "${!ns}" env WG_PROCESS_FOREGROUND=1 LOG_LEVEL=error "$WEFTD" -f "${!ifn}" >"$RAW/weftd-$h.log" 2>&1 &
	PIDS+=($!)
done
wait_for 10 test -S "/var/run/wireguard/$IF_A.sock" -a -S "/var/run/wireguard/$IF_B.sock" ||
	die "weftd did not start"
(umask 077; wg genkey >"$RAW/a.key"; wg genkey >"$RAW/b.key")
nsx "$NS_A" wg set "$IF_A" listen-port 51820 private-key "$RAW/a.key" peer "$(wg pubkey <"$RAW/b.key")" \
	endpoint 10.202.0.2:51820 allowed-ips 10.202.9.2/32,10.202.2.0/24
nsx "$NS_B" wg set "$IF_B" listen-port 51820 private-key "$RAW/b.key" peer "$(wg pubkey <"$RAW/a.key")" \
	endpoint 10.202.0.1:51820 allowed-ips 10.202.9.1/32,10.202.1.0/24
ip -n "$NS_A" addr add 10.202.9.1/24 dev "$IF_A"
ip -n "$NS_B" addr add 10.202.9.2/24 dev "$IF_B"
ip -n "$NS_A" link set "$IF_A" mtu 1420 up
ip -n "$NS_B" link set "$IF_B" mtu 1420 up

# vm NAME HOST_NS IFNAME ADDR MAC: a VM namespace behind a tap port.
vm() {
	local ns=wbvm-$ID-$1 tap=wbt${ID}$1
	new_ns "$ns"
	"$WEFT" -i "$3" port add "$tap" tap mac "$5" address "$4/32" mtu 1420 || die "weft port add $tap"
	ip -n "$2" link set "$tap" netns "$ns"
	ip -n "$ns" link set "$tap" address "$5" mtu 1420 up
	ip -n "$ns" addr add "$4/32" dev "$tap"
	ip -n "$ns" route add 169.254.1.1 dev "$tap"
	ip -n "$ns" route add default via 169.254.1.1 dev "$tap"
}
vm A1 "$NS_A" "$IF_A" 10.202.1.11 52:54:00:20:01:11
vm A2 "$NS_A" "$IF_A" 10.202.1.12 52:54:00:20:01:12
vm B1 "$NS_B" "$IF_B" 10.202.2.21 52:54:00:20:02:21
wait_for 10 nsx "$NS_A" ping -c1 -W1 10.202.9.2 || die "the tunnel does not come up"
wait_for 10 nsx "wbvm-$ID-A1" ping -c1 -W1 10.202.2.21 || die "vmA1 cannot reach vmB1"

# --- measurements ---
listening() { [[ -n $(nsx "$1" ss -ltnH "sport = :5201") ]]; }
# path NAME FROM_NS TO_NS TO_ADDR: RUNS iperf3 runs and one ping series.
declare -A GBPS MIN MAX AVG P99
path() {
	local name=$1 from=$2 to=$3 addr=$4 r v spid
	: >"$RAW/$name.gbps"
	for ((r = 1; r <= RUNS; r++)); do
		nsx "$to" timeout $((SECS + 20)) iperf3 -s -1 -B "$addr" >/dev/null 2>&1 &
		spid=$!
		wait_for 5 listening "$to"
		sleep 0.2
		if nsx "$from" timeout $((SECS + 15)) iperf3 -c "$addr" -t "$SECS" -J >"$RAW/$name-$r.json"; then
			jq -r '.end.sum_received.bits_per_second / 1e9' "$RAW/$name-$r.json" >>"$RAW/$name.gbps"
		else
			say "$name: iperf3 run $r failed"
		fi
		wait "$spid"
	done
	v=$(sort -g "$RAW/$name.gbps" | awk '{ a[NR] = $1 } END { if (NR) printf "%.2f %.2f %.2f", a[int((NR + 1) / 2)], a[1], a[NR] }')
	read -r GBPS[$name] MIN[$name] MAX[$name] <<<"${v:-0 0 0}"
	nsx "$from" ping -n -i 0.01 -c "$PINGS" -W 1 "$addr" 2>/dev/null |
		sed -n 's/.*time=\([0-9.]*\) ms/\1/p' | sort -g >"$RAW/$name.rtt"
	AVG[$name]=$(awk '{ s += $1 } END { if (NR) printf "%.3f", s / NR }' "$RAW/$name.rtt")
	P99[$name]=$(awk '{ a[NR] = $1 } END { if (NR) { i = int(NR * 0.99 + 0.999); printf "%.3f", a[i] } }' "$RAW/$name.rtt")
	say "$name: ${GBPS[$name]} Gbit/s (runs: $(paste -sd' ' "$RAW/$name.gbps")), ping avg ${AVG[$name]} ms p99 ${P99[$name]} ms"
}
path host_to_host "$NS_A" "$NS_B" 10.202.9.2
path vm_to_vm_two_hosts "wbvm-$ID-A1" "wbvm-$ID-B1" 10.202.2.21
path vm_to_vm_one_host "wbvm-$ID-A1" "wbvm-$ID-A2" 10.202.1.12

ratio=$(awk -v a="${GBPS[vm_to_vm_two_hosts]}" -v b="${GBPS[host_to_host]}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
{
	echo "| path | TCP 1 stream, Gbit/s (median [min-max] of $RUNS x ${SECS}s) | ping avg ms | ping p99 ms |"
	echo "|---|---|---|---|"
	for n in host_to_host vm_to_vm_two_hosts vm_to_vm_one_host; do
		echo "| $n | ${GBPS[$n]} [${MIN[$n]}-${MAX[$n]}] | ${AVG[$n]} | ${P99[$n]} |"
	done
	echo
	echo "VM-to-VM across two hosts / host-to-host through the same tunnel: **$ratio** (target >= 0.90)"
} | tee "$OUT/vm.md"
for n in host_to_host vm_to_vm_two_hosts vm_to_vm_one_host; do
	printf '{"path":"%s","tcp1_gbps":%s,"tcp1_min_gbps":%s,"tcp1_max_gbps":%s,"ping_avg_ms":%s,"ping_p99_ms":%s}\n' \
		"$n" "${GBPS[$n]}" "${MIN[$n]}" "${MAX[$n]}" "${AVG[$n]:-null}" "${P99[$n]:-null}"
done >"$OUT/vm.jsonl"
printf '{"ratio":"vm_two_hosts_over_host_to_host","value":%s}\n' "$ratio" >>"$OUT/vm.jsonl"
say "results in $OUT"
