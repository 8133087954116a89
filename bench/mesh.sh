#!/usr/bin/env bash
# The host mesh's discovery and moves (issue 5, "Bench rows"), in both
# discovery modes in one run, then the simulated scale run (bench_mesh):
#   NS -> NA          SOLICIT -> ADVERT time on the asking host (its counters)
#   registration      `weft vm add` returning -> the first echo reply from
#                     the new address, and whether the first echo was lost
#                     (a probe in Y's namespace runs vm add, then pings at once)
#   moves             X moved between h1 and h2 while Y pings it every 1 ms:
#                     longest gap between replies, pings lost
#   isolation         the registrations again while F, another VM on Y's
#                     host, floods misses to unknown mesh addresses: Y's
#                     first contacts, and the misses of F's that h3 refused
#   keyed hash        bench_hosts: lookups beside 100,000 chosen host routes
#                     against random ones (worst ratio, target within 2x)
#
#   bench/mesh.sh [--quick] [--out DIR] [--no-build]
#
#   --quick     fewer samples (10 lookups, 5 registrations, 5 moves), homes of
#               a 10 % sample in bench_mesh: about 60 s (limit 180 s); default
#               20 / 20 / 20 and all 1 M homes: about 2.5 min (limit 400 s)
#   --out DIR   where mesh.md, mesh.jsonl and raw/ go (default /tmp/weft-bench-mesh-DATE)
#   --no-build  use the binaries already in $WEFT_BUILD_DIR (default build/)
#
#                 netns wire: bridge br0 (10.203.0.0/24)
#        +-------------------+-------------------+
#   weftd h1 (.1)       weftd h2 (.2)        weftd h3 (.3)     tunnel 10.203.9.H
#     | tap x1            | tap x2 | tap z2    | tap y3    | tap f3
#     +------ netns vmx --+     netns vmz      netns vmy   netns vmf
#        fd77:3::10             fd77:3::30     fd77:3::20  fd77:3::50
#                               fd77:3::1:N    (pings      (floods misses
#                               fd77:3::2:N    everything) in the isolation
#                               fd77:3::3:N                 step)
# The mesh prefix is fd77:3::/64 (IPv6 only). X has a NIC on h1 and one on
# h2: a move registers it on the other host and switches its default
# route, then unregisters it on the old one (as tests/integration/mesh.sh).
# Z holds the fresh addresses each measurement registers. The topology is
# built anew for each mode. Every address exists only inside these namespaces.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
QUICK=0 OUT="" BUILD=1
while (($#)); do
	case $1 in
	--quick) QUICK=1 ;;
	--out) OUT=${2:?--out needs a folder}; shift ;;
	--no-build) BUILD=0 ;;
	-h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "mesh.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
if [[ -z ${BENCH_WRAPPED:-} ]]; then
	export BENCH_WRAPPED=1
	args=()
	((QUICK)) && args+=(--quick)
	[[ -n $OUT ]] && args+=(--out "$OUT")
	((BUILD)) || args+=(--no-build)
	exec timeout -k 10 "$( ((QUICK)) && echo 180 || echo 400)" bash "$0" "${args[@]}"
fi
if ((QUICK)); then LOOKUPS=10 REGS=5 MOVES=5; else LOOKUPS=20 REGS=20 MOVES=20; fi
MOVE_GAP=0.3 # seconds between two moves
OUT=${OUT:-/tmp/weft-bench-mesh-$(date +%Y%m%d-%H%M%S)}
BUILD_DIR=$ROOT/${WEFT_BUILD_DIR:-build}
WEFTD=${WEFTD:-$BUILD_DIR/daemon/weftd}
WEFT=${WEFT:-$BUILD_DIR/cli/weft}
BENCH_MESH=${BENCH_MESH:-$BUILD_DIR/bench/bench_mesh}
BENCH_HOSTS=${BENCH_HOSTS:-$BUILD_DIR/bench/bench_hosts}
RAW=$OUT/raw
ID=$$
PREFIX=fd77:3::/64
ROUTER_LL=fe80::77:65ff:fe66:7401
X6=fd77:3::10 Y6=fd77:3::20 Z6=fd77:3::30 F6=fd77:3::50
NAMESPACES=() PIDS=() SOCKS=()

say() { printf '[bench-mesh %s] %s\n' "$(date +%T.%3N)" "$*" >&2; }
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
	for p in "${SOCKS[@]}"; do rm -f "$p"; done
	NAMESPACES=() PIDS=() SOCKS=()
}
trap cleanup EXIT
trap 'exit 1' TERM INT
now_ms() { date +%s%3N; }
wait_for() {
	local end=$(($(now_ms) + $1 * 1000))
	shift
	until "$@" >/dev/null 2>&1; do
		(($(now_ms) < end)) || return 1
		sleep 0.05
	done
}
# wft HOST ARGS...: the weft CLI against host HOST's weftd; stdout in $OUT_W.
wft() {
	local h=$1 ifn
	shift
	ifn=IF$h
	OUT_W=$("$WEFT" -i "${!ifn}" "$@" 2>>"$RAW/weft.err") || {
		say "weft -i ${!ifn} $*: $(tail -1 "$RAW/weft.err")"
		return 1
	}
}
# lines_ge FILE N: FILE has at least N lines.
lines_ge() { (($(wc -l <"$1") >= $2)); }
# counters HOST: the mesh counters of HOST as "key value" lines.
counters() {
	wft "$1" mesh show --json && jq -r '.counters | to_entries[] | "\(.key) \(.value)"' <<<"$OUT_W"
}
# counter_delta BEFORE AFTER KEY: AFTER[KEY] - BEFORE[KEY] (outputs of counters).
counter_delta() {
	local a b
	a=$(awk -v k="$3" '$1 == k { print $2 }' <<<"$1")
	b=$(awk -v k="$3" '$1 == k { print $2 }' <<<"$2")
	echo $((${b:-0} - ${a:-0}))
}

((EUID == 0)) || die "run as root (network namespaces)"
for c in ip wg ping jq python3 awk; do command -v "$c" >/dev/null || die "missing $c"; done
if ((BUILD)); then
	say "building weftd, weft, bench_mesh in $BUILD_DIR (Release)"
	cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null &&
		make -C "$BUILD_DIR" -j"$(nproc)" weftd weft bench_mesh >/dev/null || die "build failed"
fi
[[ -x $WEFTD && -x $WEFT && -x $BENCH_MESH ]] || die "no weftd, weft or bench_mesh in $BUILD_DIR"
mkdir -p "$RAW" /var/run/wireguard

# The registration probe, run in Y's namespace as
#   probe.py WEFT IFNAME PORT    (the weftd of IFNAME holds the tap PORT)
# For each address on stdin it runs `weft -i IFNAME vm add PORT ADDR`
# itself and, the moment that returns, sends ICMPv6 echo requests to ADDR
# every 1 ms until the first reply (at most 2 s); it waits 30 ms for late
# replies, sends 10 more echoes one at a time for the steady RTT, and
# prints one JSON line. The socket is opened once, in a process already
# running: what it measures is the network, not the start of a ping nor
# the wake-up of a waiting process.
cat >"$RAW/probe.py" <<'EOF'
import json, os, select, socket, struct, subprocess, sys, time
INTERVAL, FIRST_MAX, LINGER = 0.001, 2.0, 0.03
WEFT, IFNAME, PORT = sys.argv[1:4]
s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
# ICMP6_FILTER: pass echo replies (type 129) only.
flt = bytearray(b"\xff" * 32)
flt[129 >> 3] &= ~(1 << (129 & 7)) & 0xff
s.setsockopt(socket.IPPROTO_ICMPV6, 1, bytes(flt))
ident, seq = os.getpid() & 0xffff, 0
def send(addr):
    global seq
    seq = (seq + 1) & 0xffff
    s.sendto(struct.pack("!BBHHH", 128, 0, 0, ident, seq) + b"weft-mesh-bench!", (addr, 0))
    return seq, time.time()
# Replies from addr into got (seq -> arrival time) until the time until,
# or until the reply to want (any new reply when want is None).
def recv_until(addr, until, got, want=None):
    while True:
        left = until - time.time()
        if left <= 0 or not select.select([s], [], [], left)[0]:
            return
        data, src = s.recvfrom(2048)
        t = time.time()
        if len(data) >= 8 and src[0] == addr:
            typ, _, _, i, q = struct.unpack("!BBHHH", data[:8])
            if typ == 129 and i == ident and q not in got:
                got[q] = t
                if want is None or q == want:
                    return
print("ready", flush=True)
for line in sys.stdin:
    addr = line.strip()
    t_call = time.time()
    rc = subprocess.run([WEFT, "-i", IFNAME, "vm", "add", PORT, addr],
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t0 = time.time()
    if rc.returncode:
        print(json.dumps({"addr": addr, "error": rc.stderr.decode().strip()}), flush=True)
        continue
    sent, got = {}, {}
    q, t = send(addr)
    sent[q], first = t, q
    nxt = t + INTERVAL
    while not got and time.time() < t0 + FIRST_MAX:
        recv_until(addr, nxt, got)
        if not got and time.time() >= nxt:
            q, t = send(addr)
            sent[q] = t
            nxt += INTERVAL
    end = time.time() + LINGER
    while time.time() < end:
        recv_until(addr, end, got)
    rtts = []
    for _ in range(10):
        q, t = send(addr)
        recv_until(addr, t + 0.5, got, q)
        if q in got:
            rtts.append((got[q] - t) * 1e3)
        time.sleep(0.002)
    rtts.sort()
    got = {q: t for q, t in got.items() if q in sent}
    fq = min(got, key=got.get) if got else None
    print(json.dumps({
        "addr": addr,
        "vm_add_ms": round((t0 - t_call) * 1e3, 3),
        "reach_ms": round((got[fq] - t0) * 1e3, 3) if got else None,
        "first_lost": first not in got,
        "first_rtt_ms": round((got[first] - sent[first]) * 1e3, 3) if first in got else None,
        "first_reply_seq": (fq - first) & 0xffff if got else None,
        "sent": len(sent), "replied": len(got),
        "steady_rtt_ms": round(rtts[len(rtts) // 2], 3) if rtts else None,
    }), flush=True)
EOF

# --- the topology of one mode ---

# setup MODE: three hosts in MODE, VMs X (h1, h2), Y (h3), Z (h2); X on h1
# and Y, Z registered, every host knowing where Y is.
setup() {
	local mode=$1 t=${1:0:1} h o ns ifn args
	WIRE=wbm-$ID-$t-wire
	ip netns add "$WIRE" || die "cannot create namespace $WIRE"
	NAMESPACES+=("$WIRE")
	ip -n "$WIRE" link add br0 type bridge
	ip -n "$WIRE" link set br0 up
	for h in 1 2 3; do
		ns=wbm-$ID-$t-h$h ifn=wbm$ID$t$h
		printf -v "NS$h" '%s' "$ns"
		printf -v "IF$h" '%s' "$ifn"
		new_ns "$ns"
		ip -n "$WIRE" link add "w$h" type veth peer name eth0 netns "$ns"
		ip -n "$WIRE" link set "w$h" master br0 up
		ip -n "$ns" addr add "10.203.0.$h/24" dev eth0
		ip -n "$ns" link set eth0 up
		(umask 077 && wg genkey >"$RAW/$t$h.key")
		wg pubkey <"$RAW/$t$h.key" >"$RAW/$t$h.pub"
		# ip netns exec execs weftd: $! is weftd's pid, and cleanup's TERM reaches it.
		ip netns exec "$ns" env WG_PROCESS_FOREGROUND=1 LOG_LEVEL=error "$WEFTD" -f "$ifn" \
			>"$RAW/weftd-$mode-h$h.log" 2>&1 &
		PIDS+=($!)
		SOCKS+=("/var/run/wireguard/$ifn.sock")
	done
	for h in 1 2 3; do
		ifn=IF$h
		wait_for 10 test -S "/var/run/wireguard/${!ifn}.sock" || die "weftd h$h did not start"
	done
	for h in 1 2 3; do
		ns=NS$h ifn=IF$h
		args=(listen-port 51820 private-key "$RAW/$t$h.key")
		for o in 1 2 3; do
			((o == h)) && continue
			args+=(peer "$(cat "$RAW/$t$o.pub")" allowed-ips "10.203.9.$o/32"
				endpoint "10.203.0.$o:51820" persistent-keepalive 25)
		done
		nsx "${!ns}" wg set "${!ifn}" "${args[@]}" || die "wg set h$h"
		ip -n "${!ns}" addr add "10.203.9.$h/24" dev "${!ifn}"
		ip -n "${!ns}" link set "${!ifn}" mtu 1420 up
		wft "$h" mesh set mode "$mode" prefix "$PREFIX" || die "mesh set on h$h"
	done
	rm -f "$RAW"/*.key
	for h in 1 2 3; do
		ns=NS$h
		for o in 1 2 3; do
			((o == h)) && continue
			wait_for 10 nsx "${!ns}" ping -c1 -W1 "10.203.9.$o" || die "tunnel h$h -> h$o"
		done
	done
	vm x "$X6"
	vm y "$Y6"
	vm z "$Z6"
	vm f "$F6"
	nic x 1 52:54:00:03:01:10
	nic x 2 52:54:00:03:02:10
	nic y 3 52:54:00:03:03:20
	nic z 2 52:54:00:03:02:30
	nic f 3 52:54:00:03:03:50
	use x 1
	use y 3
	use z 2
	use f 3
	wft 3 vm add "$TAP_y3" "$Y6" || die "vm add y"
	wft 1 vm add "$TAP_x1" "$X6" || die "vm add x"
	wft 2 vm add "$TAP_z2" "$Z6" || die "vm add z"
	wft 3 vm add "$TAP_f3" "$F6" || die "vm add f"
	# Every host learns Y (the pinger) before anything is measured.
	wait_for 10 nsx "$VMX" ping -c1 -W1 "$Y6" || die "X -> Y"
	wait_for 10 nsx "$VMZ" ping -c1 -W1 "$Y6" || die "Z -> Y"
	wait_for 10 nsx "$VMY" ping -c1 -W1 "$X6" || die "Y -> X"
}
new_ns() {
	ip netns add "$1" || die "cannot create namespace $1"
	NAMESPACES+=("$1")
	ip -n "$1" link set lo up
	nsx "$1" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
}
# vm TAG ADDR: a namespace whose address sits on lo, so that any NIC takes it.
vm() {
	local ns=wbm-$ID-$T-vm$1
	new_ns "$ns"
	ip -n "$ns" addr add "$2/128" dev lo
	printf -v "VM${1^^}" '%s' "$ns"
}
# nic VMTAG HOST MAC: a tap port of HOST's weftd moved into the VM.
nic() {
	local tag=$1 h=$2 mac=$3 tap=wbt$ID$T$1$2 ns hns
	ns=VM${tag^^} hns=NS$h
	wft "$h" port add "$tap" tap mac "$mac" mtu 1380 || die "port add $tap"
	ip -n "${!hns}" link set "$tap" netns "${!ns}" || die "moving $tap"
	ip -n "${!ns}" link set "$tap" address "$mac" mtu 1380
	nsx "${!ns}" sysctl -qw "net.ipv6.conf.$tap.accept_ra=0"
	ip -n "${!ns}" link set "$tap" up
	printf -v "TAP_$tag$h" '%s' "$tap"
}
# use VMTAG HOST: the VM's default route goes out through its NIC on HOST.
use() {
	local ns=VM${1^^} tap=TAP_$1$2
	ip -n "${!ns}" -6 route replace default via "$ROUTER_LL" dev "${!tap}"
}

# --- measurements ---

declare -A R # R[mode.metric] = value
put() {
	R[$1.$2]=$3
	printf '{"bench":"mesh","mode":"%s","metric":"%s","value":%s,"unit":"%s","quick":%s}\n' \
		"$1" "$2" "${3:-null}" "$4" "$( ((QUICK)) && echo true || echo false)" >>"$OUT/mesh.jsonl"
}
# stats FILE: "median min max" of the numbers in FILE (one per line).
stats() {
	sort -g "$1" | awk '{ a[NR] = $1 } END { if (NR) printf "%.3f %.3f %.3f", a[int((NR + 1) / 2)], a[1], a[NR]; else print "null null null" }'
}

# discovery MODE: LOOKUPS fresh addresses registered on h2 (Z), each pinged
# once from Y; NS -> NA from h3's discovery counters. A port takes at most
# 8 IPv6 host addresses, so they go in batches of 7, each unregistered
# after its pings. In multicast mode a registration reaches every host, so
# h3 is switched off while a batch is registered and on again after: a
# host that joins late (or restarts) finds them by discovery.
discovery() {
	local mode=$1 i k a batch c0 c1 nd=0 ns=0 neg=0 sol=0 lost=0 out
	: >"$RAW/$mode-lookup-rtt1" && : >"$RAW/$mode-lookup-rtt2"
	for ((i = 1; i <= LOOKUPS; i += 7)); do
		batch=()
		for ((k = i; k < i + 7 && k <= LOOKUPS; k++)); do
			batch+=("fd77:3::1:$k")
			ip -n "$VMZ" addr add "fd77:3::1:$k/128" dev lo
		done
		[[ $mode == multicast ]] && { wft 3 mesh set mode off || die "h3 mesh off"; }
		wft 2 vm add "$TAP_z2" "${batch[@]}" || die "vm add (discovery)"
		sleep 0.2 # the ANNOUNCEs are in: the lookups measure discovery, not a race
		if [[ $mode == multicast ]]; then
			wft 3 mesh set mode multicast || die "h3 mesh on"
			sleep 0.2
		fi
		c0=$(counters 3)
		for a in "${batch[@]}"; do
			out=$(nsx "$VMY" ping -n -c 2 -i 0.05 -W 1 "$a" 2>&1)
			printf '%s\n' "$out" >>"$RAW/$mode-lookup-ping.log"
			grep -q 'icmp_seq=1 ' <<<"$out" || lost=$((lost + 1))
			sed -n 's/.*icmp_seq=1 .*time=\([0-9.]*\) ms/\1/p' <<<"$out" >>"$RAW/$mode-lookup-rtt1"
			sed -n 's/.*icmp_seq=2 .*time=\([0-9.]*\) ms/\1/p' <<<"$out" >>"$RAW/$mode-lookup-rtt2"
		done
		c1=$(counters 3)
		printf '%s\n--- after\n%s\n' "$c0" "$c1" >>"$RAW/$mode-lookup-counters"
		nd=$((nd + $(counter_delta "$c0" "$c1" discoveries)))
		ns=$((ns + $(counter_delta "$c0" "$c1" discovery_ns)))
		neg=$((neg + $(counter_delta "$c0" "$c1" negative)))
		sol=$((sol + $(counter_delta "$c0" "$c1" solicit_sent)))
		wft 2 vm del "${batch[@]}" || die "vm del (discovery)"
	done
	put "$mode" lookups "$LOOKUPS" n
	put "$mode" discoveries "$nd" n
	put "$mode" lookups_negative "$neg" n
	put "$mode" solicit_sent "$sol" msg
	put "$mode" ns_na_ms "$( ((nd)) && awk -v n="$ns" -v d="$nd" 'BEGIN { printf "%.3f", n / d / 1e6 }' || echo null)" ms
	put "$mode" lookup_first_ping_lost "$lost" n
	put "$mode" lookup_rtt1_ms "$(stats "$RAW/$mode-lookup-rtt1" | cut -d' ' -f1)" ms
	put "$mode" lookup_rtt2_ms "$(stats "$RAW/$mode-lookup-rtt2" | cut -d' ' -f1)" ms
	say "$mode: NS -> NA ${R[$mode.ns_na_ms]} ms over $nd discoveries ($LOOKUPS lookups, $lost first pings lost)"
}

# registrations MODE [TAG BLOCK]: REGS fresh addresses fd77:3::BLOCK:i (BLOCK
# 2 unless given), one at a time: `weft vm add` on h2, and the probe in Y's
# namespace pings it from the moment that returns; then `weft vm del`. The
# metrics are named TAG_metric when TAG is given (the isolation step).
registrations() {
	local mode=$1 tag=${2:-} block=${3:-2} i a pfd ppid lost=0 n f p
	p=${tag:+${tag}_} f=$RAW/$mode${tag:+-$tag}
	mkfifo "$f-probe.in"
	ip netns exec "$VMY" python3 -u "$RAW/probe.py" "$WEFT" "$IF2" "$TAP_z2" \
		<"$f-probe.in" >"$f-probe.out" 2>"$f-probe.err" &
	ppid=$!
	PIDS+=("$ppid")
	exec {pfd}>"$f-probe.in"
	wait_for 10 grep -q ready "$f-probe.out" || die "the probe did not start: $(cat "$f-probe.err")"
	for ((i = 1; i <= REGS; i++)); do
		a=fd77:3::$block:$i
		ip -n "$VMZ" addr add "$a/128" dev lo
		sleep 0.05
		printf '%s\n' "$a" >&"$pfd"
		wait_for 5 lines_ge "$f-probe.out" $((i + 1)) || die "no probe result for $a"
		# A port takes 8 IPv6 host addresses: each goes after its turn.
		wft 2 vm del "$a" || die "vm del $a"
	done
	exec {pfd}>&-
	wait "$ppid" 2>/dev/null
	rm -f "$f-probe.in"
	tail -n +2 "$f-probe.out" >"$f-registrations.jsonl"
	jq -r '.error // empty' "$f-registrations.jsonl" | while read -r l; do say "probe: $l"; done
	jq -r '.reach_ms // empty' "$f-registrations.jsonl" >"$f-reach"
	jq -r '.steady_rtt_ms // empty' "$f-registrations.jsonl" >"$f-steady"
	lost=$(jq -s '[.[] | select(.first_lost)] | length' "$f-registrations.jsonl")
	put "$mode" "${p}first_overtaken" "$(jq -s '[.[] | select((.first_lost | not) and .first_reply_seq != 0)] | length' "$f-registrations.jsonl")" n
	n=$(wc -l <"$f-reach")
	read -r "R[$mode.${p}reach_med]" "R[$mode.${p}reach_min]" "R[$mode.${p}reach_max]" <<<"$(stats "$f-reach")"
	put "$mode" "${p}reach_ms" "${R[$mode.${p}reach_med]}" ms
	put "$mode" "${p}reach_min_ms" "${R[$mode.${p}reach_min]}" ms
	put "$mode" "${p}reach_max_ms" "${R[$mode.${p}reach_max]}" ms
	put "$mode" "${p}steady_rtt_ms" "$(stats "$f-steady" | cut -d' ' -f1)" ms
	put "$mode" "${p}registrations" "$REGS" n
	put "$mode" "${p}registrations_reached" "$n" n
	put "$mode" "${p}first_contact_lost" "$lost" n
	say "$mode${tag:+ ($tag)}: reachable ${R[$mode.${p}reach_med]} ms after vm add (median of $n), first echo lost $lost of $REGS"
}

# isolation MODE: the registrations again (block 3) while F, on Y's host
# h3, sends UDP as fast as it can to random unknown addresses of the mesh
# prefix: each is a miss of F's tenant, which h3 refuses past its budget
# (tenant_limited); Y's first contacts must not be among the refused.
isolation() {
	local mode=$1 fpid c0 c1
	c0=$(counters 3)
	ip netns exec "$VMF" python3 -c '
import random, socket, time
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
while True:
	try:
		s.sendto(b"x", ("fd77:3::ffff:%x:%x" % (random.randint(0, 65535), random.randint(1, 65535)), 9))
	except OSError:
		time.sleep(0.001)' >"$RAW/$mode-flood.err" 2>&1 &
	fpid=$!
	PIDS+=("$fpid")
	wait_for 10 flood_limited "$c0" || say "$mode: F's flood was not limited within 10 s"
	registrations "$mode" flood 3
	kill "$fpid" 2>/dev/null
	wait "$fpid" 2>/dev/null
	c1=$(counters 3)
	put "$mode" flood_tenant_limited "$(counter_delta "$c0" "$c1" tenant_limited)" n
	put "$mode" flood_lookups "$(counter_delta "$c0" "$c1" lookups)" n
	say "$mode: under F's flood h3 refused ${R[$mode.flood_tenant_limited]} misses and made ${R[$mode.flood_lookups]} lookups"
}
flood_limited() {
	(($(counter_delta "$1" "$(counters 3)" tenant_limited) > 0))
}

# moves MODE: Y pings X every 1 ms (ping -D: reply times); MOVES moves,
# MOVE_GAP apart, after 1 s of quiet pinging (the baseline).
moves() {
	local mode=$1 i at=1 to tap ppid log tl summary
	log=$RAW/$mode-move-ping.log tl=$RAW/$mode-move-times
	: >"$tl"
	ip netns exec "$VMY" ping -n -D -i 0.001 -W 1 -w 60 "$X6" >"$log" 2>&1 &
	ppid=$!
	PIDS+=("$ppid")
	sleep 1
	for ((i = 1; i <= MOVES; i++)); do
		to=$((3 - at))
		printf '%s' "$EPOCHREALTIME" >>"$tl"
		tap=TAP_x$to
		wft "$to" vm add "${!tap}" "$X6" || die "move $i: vm add on h$to"
		printf ' %s' "$EPOCHREALTIME" >>"$tl"
		use x "$to"
		wft "$at" vm del "$X6" || die "move $i: vm del on h$at"
		printf ' %s\n' "$EPOCHREALTIME" >>"$tl"
		at=$to
		sleep "$MOVE_GAP"
	done
	sleep 0.5
	kill -INT "$ppid"
	wait "$ppid" 2>/dev/null
	summary=$(grep 'packets transmitted' "$log") || die "no ping summary: $(tail -3 "$log")"
	# Per move: the longest gap between two replies (by arrival) in the
	# window [vm add called - 20 ms, vm add called + 250 ms), the highest
	# RTT of the echoes sent in it, and the echoes lost in it (a missing
	# seq is placed at the send time interpolated from its neighbours).
	# Baseline: the same over 270 ms windows of the quiet second before the
	# first move. Total: echoes up to the last one answered, and how many of
	# them got no reply (the summary of ping also counts the echo in flight
	# when it is stopped).
	awk -v tl="$tl" '
		BEGIN { while ((getline l < tl) > 0) { split(l, f, " "); m++; ta[m] = f[1] + 0 } }
		/bytes from/ {
			ts = substr($1, 2, length($1) - 2) + 0
			match($0, /icmp_seq=[0-9]+/); seq = substr($0, RSTART + 9, RLENGTH - 9) + 0
			match($0, /time=[0-9.]+/); rtt = substr($0, RSTART + 5, RLENGTH - 5) + 0
			n++; rt[n] = ts; rs[n] = seq; rr[n] = rtt; snd[seq] = ts - rtt / 1000
			if (!(seq in got)) { got[seq] = 1; if (seq > maxseq) maxseq = seq }
		}
		function win(lo, hi, tag,   k, g, best, r, lost, s, a, b) {
			best = 0; r = 0; lost = 0
			for (k = 2; k <= n; k++)
				if (rt[k] >= lo && rt[k - 1] < hi) { g = rt[k] - rt[k - 1]; if (g > best) best = g }
			for (k = 1; k <= n; k++)
				if (rt[k] - rr[k] / 1000 >= lo && rt[k] - rr[k] / 1000 < hi && rr[k] > r) r = rr[k]
			for (s = 1; s <= maxseq; s++) {
				if (s in got) { a = s; continue }
				for (b = s + 1; b <= maxseq && !(b in got); b++);
				if (!a || b > maxseq) continue
				t = snd[a] + (snd[b] - snd[a]) * (s - a) / (b - a)
				if (t >= lo && t < hi) lost++
			}
			printf "%s %.3f %.3f %d\n", tag, best * 1000, r, lost
		}
		END {
			if (!n) exit
			for (i = 0; rt[1] + (i + 1) * 0.27 < ta[1] - 0.02; i++)
				win(rt[1] + i * 0.27, rt[1] + (i + 1) * 0.27, "baseline")
			for (i = 1; i <= m; i++) win(ta[i] - 0.02, ta[i] + 0.25, "move" i)
			for (s = 1; s <= maxseq; s++) lost += !(s in got)
			printf "total %d %d\n", maxseq, lost
		}' "$log" >"$RAW/$mode-moves"
	awk '$1 ~ /^move/ { print $2 }' "$RAW/$mode-moves" >"$RAW/$mode-move-gap"
	awk '$1 ~ /^move/ { print $3 }' "$RAW/$mode-moves" >"$RAW/$mode-move-rtt"
	read -r "R[$mode.gap_med]" "R[$mode.gap_min]" "R[$mode.gap_max]" <<<"$(stats "$RAW/$mode-move-gap")"
	put "$mode" move_gap_ms "${R[$mode.gap_med]}" ms
	put "$mode" move_gap_min_ms "${R[$mode.gap_min]}" ms
	put "$mode" move_gap_max_ms "${R[$mode.gap_max]}" ms
	put "$mode" move_rtt_max_ms "$(stats "$RAW/$mode-move-rtt" | cut -d' ' -f3)" ms
	put "$mode" moves "$MOVES" n
	put "$mode" move_pings_sent "$(awk '$1 == "total" { print $2 }' "$RAW/$mode-moves")" n
	put "$mode" move_pings_lost "$(awk '$1 == "total" { print $3 }' "$RAW/$mode-moves")" n
	put "$mode" move_pings_lost_in_moves "$(awk '$1 ~ /^move/ { s += $4 } END { print s + 0 }' "$RAW/$mode-moves")" n
	awk '$1 == "baseline" { print $2 }' "$RAW/$mode-moves" >"$RAW/$mode-baseline-gap"
	read -r "R[$mode.base_med]" _ "R[$mode.base_max]" <<<"$(stats "$RAW/$mode-baseline-gap")"
	put "$mode" baseline_gap_ms "${R[$mode.base_med]}" ms
	put "$mode" baseline_gap_max_ms "${R[$mode.base_max]}" ms
	put "$mode" baseline_windows "$(wc -l <"$RAW/$mode-baseline-gap")" n
	put "$mode" baseline_lost "$(awk '$1 == "baseline" { s += $4 } END { print s + 0 }' "$RAW/$mode-moves")" n
	say "$mode: $MOVES moves: longest reply gap median ${R[$mode.gap_med]} ms (max ${R[$mode.gap_max]}), ping: $summary"
}

: >"$OUT/mesh.jsonl"
: >"$RAW/weft.err"
START=$(now_ms)
printf '{"bench":"mesh","meta":true,"date":"%s","nproc":%s,"kernel":"%s","cpu":"%s","commit":"%s","loadavg":"%s","quick":%s}\n' \
	"$(date -Is)" "$(nproc)" "$(uname -r)" "$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)" \
	"$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo +dirty)" \
	"$(cut -d' ' -f1-3 /proc/loadavg)" "$( ((QUICK)) && echo true || echo false)" >>"$OUT/mesh.jsonl"
for MODE in unicast multicast; do
	T=${MODE:0:1}
	say "$MODE: building the three hosts"
	setup "$MODE"
	discovery "$MODE"
	registrations "$MODE"
	isolation "$MODE"
	moves "$MODE"
	for h in 1 2 3; do counters "$h" >"$RAW/$MODE-h$h-counters"; done
	cleanup
done
say "network part done in $((($(now_ms) - START) / 1000)) s; bench_mesh (1,000 hosts, 1 M routes)"
SCALE_ARGS=()
((QUICK)) && SCALE_ARGS+=(--quick)
"$BENCH_MESH" "${SCALE_ARGS[@]}" >"$RAW/bench_mesh.out" 2>"$RAW/bench_mesh.err" || say "bench_mesh failed: $(tail -3 "$RAW/bench_mesh.err")"
grep '^{' "$RAW/bench_mesh.out" >>"$OUT/mesh.jsonl"
say "bench_hosts: lookups beside 100,000 chosen host routes"
"$BENCH_HOSTS" 100000 >"$RAW/bench_hosts.out" 2>"$RAW/bench_hosts.err" || say "bench_hosts failed: $(tail -3 "$RAW/bench_hosts.err")"
HOSTS_WORST=$(sed -n 's/^worst ratio over the chosen sets: \([0-9.]*\)x.*/\1/p' "$RAW/bench_hosts.out")
put all keyed_hash_worst_ratio "${HOSTS_WORST:-null}" x

# row LABEL FORMAT-KEY...: one table row with the value of each mode.
v() { echo "${R[$1.$2]:-n/a}"; }
{
	echo "| event | unicast | multicast |"
	echo "|---|---|---|"
	echo "| NS -> NA (SOLICIT -> ADVERT, h3's discovery_ns / discoveries) | $(v unicast ns_na_ms) ms ($(v unicast discoveries) of $LOOKUPS lookups) | $(v multicast ns_na_ms) ms ($(v multicast discoveries) of $LOOKUPS lookups; h3 joined after the registrations) |"
	echo "| first ping to an address h3 must look up / second ping (median RTT) | $(v unicast lookup_rtt1_ms) / $(v unicast lookup_rtt2_ms) ms, $(v unicast lookup_first_ping_lost) lost | $(v multicast lookup_rtt1_ms) / $(v multicast lookup_rtt2_ms) ms, $(v multicast lookup_first_ping_lost) lost |"
	echo "| new VM: \`weft vm add\` returns -> first echo reply, median [min-max] of $REGS | $(v unicast reach_med) [$(v unicast reach_min)-$(v unicast reach_max)] ms | $(v multicast reach_med) [$(v multicast reach_min)-$(v multicast reach_max)] ms |"
	echo "| for comparison: RTT of echoes to it once known (median) | $(v unicast steady_rtt_ms) ms | $(v multicast steady_rtt_ms) ms |"
	echo "| first echo lost after registration | $(v unicast first_contact_lost) of $REGS | $(v multicast first_contact_lost) of $REGS |"
	echo "| first echo overtaken by the second (it waited in the mesh queue) | $(v unicast first_overtaken) of $REGS | $(v multicast first_overtaken) of $REGS |"
	echo "| per-tenant isolation: the same while F (another VM on Y's host) floods misses: first echo lost; reach median [min-max]; F's misses h3 refused | $(v unicast flood_first_contact_lost) of $REGS; $(v unicast flood_reach_med) [$(v unicast flood_reach_min)-$(v unicast flood_reach_max)] ms; $(v unicast flood_tenant_limited) | $(v multicast flood_first_contact_lost) of $REGS; $(v multicast flood_reach_med) [$(v multicast flood_reach_min)-$(v multicast flood_reach_max)] ms; $(v multicast flood_tenant_limited) |"
	echo "| move time at 1 ms pings: longest reply gap from vm add to +250 ms, median [min-max] of $MOVES | $(v unicast gap_med) [$(v unicast gap_min)-$(v unicast gap_max)] ms | $(v multicast gap_med) [$(v multicast gap_min)-$(v multicast gap_max)] ms |"
	echo "| move: highest RTT of an echo sent from vm add to +250 ms | $(v unicast move_rtt_max_ms) ms | $(v multicast move_rtt_max_ms) ms |"
	echo "| pings lost during the moves (to the last one answered) | $(v unicast move_pings_lost) of $(v unicast move_pings_sent) | $(v multicast move_pings_lost) of $(v multicast move_pings_sent) |"
	echo "| no move (baseline): longest reply gap in 270 ms windows of the quiet second before, median [max] | $(v unicast base_med) [$(v unicast base_max)] ms, $(v unicast baseline_lost) lost | $(v multicast base_med) [$(v multicast base_max)] ms, $(v multicast baseline_lost) lost |"
	echo
	echo "keyed hash (bench_hosts 100000): lookups beside 100,000 chosen host routes against 100,000 random ones, worst ratio over the chosen sets: ${HOSTS_WORST:-n/a}x (target: within 2x)"
	echo
	grep '^|' "$RAW/bench_mesh.out"
} | tee "$OUT/mesh.md"
say "results in $OUT ($((($(now_ms) - START) / 1000)) s)"
