# shellcheck shell=bash
# Shared helpers for weft's namespace integration tests.
#
# A test script does:
#     . "$(dirname "$0")/lib.sh"
#     lib_init "$@"            # root check, hard timeout, trap cleanup EXIT
#     make_hosts               # namespaces a and b + veth, outer IPv4/IPv6
#     start_daemon "$IMPL_A" "$NS_A" "$IF_A"
#
# Everything a test creates carries a per-run prefix (weft-<test>-<pid>), so two
# tests (or two runs) never share a namespace, an interface name or a socket.
# Every wait is bounded, and the whole script runs under `timeout`.
#
# Implementations are named "weftd" or "wireguard-go"; the binaries come from
# $WEFTD and $WIREGUARD_GO (CMake passes $<TARGET_FILE:weftd>) or from $PATH.
# Parts that only weftd has (stats=1, WEFT_TEST_* knobs) are skipped for
# wireguard-go with a note, so the rest of a script can run against it.

set -Eeuo pipefail

TEST_NAME=$(basename "$0" .sh)
TEST_DIR=$(cd "$(dirname "$0")" && pwd)

# --- hard timeout: re-run this very script under timeout(1) -----------------
# timeout puts itself and the script in a new process group and signals the
# whole group, so daemons started with & go down with it; our TERM trap then
# still runs the EXIT cleanup for namespaces.
if [[ -z ${WEFT_TEST_WRAPPED:-} ]]; then
	export WEFT_TEST_WRAPPED=1
	exec timeout -k 10 "${WEFT_TEST_TIMEOUT:-110}" bash "$0" "$@"
fi

RUN_ID=$$
PFX="weft-${TEST_NAME}-${RUN_ID}"
WORK=""
NAMESPACES=()
BG_PIDS=()
declare -A DAEMON_PID=() DAEMON_NS=() DAEMON_LOG=() DAEMON_IMPL=()
SKIPPED_PARTS=()
WG_SOCK_DIR=/var/run/wireguard

# --- reporting ---------------------------------------------------------------

now_ms() { date +%s%3N; }
log() { printf '[%s %s] %s\n' "$(date +%T.%3N)" "$TEST_NAME" "$*" >&2; }
step() { printf '\n[%s %s] ==> %s\n' "$(date +%T.%3N)" "$TEST_NAME" "$*" >&2; }
fail() {
	printf '[%s %s] FAIL: %s\n' "$(date +%T.%3N)" "$TEST_NAME" "$*" >&2
	exit 1
}
skip() {
	printf '[%s %s] SKIP: %s\n' "$(date +%T.%3N)" "$TEST_NAME" "$*" >&2
	exit 77
}
# A part of the test that this implementation cannot do (weftd-only knobs).
skip_part() {
	local p
	for p in "${SKIPPED_PARTS[@]}"; do [[ $p == "$*" ]] && return 0; done
	log "skipping part: $*"
	SKIPPED_PARTS+=("$*")
}
pass() {
	if ((${#SKIPPED_PARTS[@]})); then
		log "PASS, with parts skipped:"
		printf '    - %s\n' "${SKIPPED_PARTS[@]}" >&2
	else
		log "PASS"
	fi
	exit 0
}

# Any failing command (also a tolerated one inside $(...)) is noted; the
# reason a test fails is the FAIL line.
on_err() {
	local rc=$? line=$1 cmd=$2
	printf '[%s %s] note: line %s: exit %s: %s\n' \
		"$(date +%T.%3N)" "$TEST_NAME" "$line" "$rc" "$cmd" >&2
}

need_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip "missing command: $c (run scripts/install-deps.sh)"
	done
}

# --- implementations --------------------------------------------------------

impl_bin() {
	case $1 in
	weftd) echo "${WEFTD:-$(command -v weftd || true)}" ;;
	wireguard-go) echo "${WIREGUARD_GO:-$(command -v wireguard-go || true)}" ;;
	*) fail "unknown implementation '$1' (use weftd or wireguard-go)" ;;
	esac
}

is_weftd() { [[ $1 == weftd ]]; }

need_impl() {
	local impl bin
	for impl in "$@"; do
		bin=$(impl_bin "$impl")
		[[ -n $bin && -x $bin ]] || skip "implementation $impl not found (binary '${bin:-none}'; build weftd or set WEFTD/WIREGUARD_GO)"
	done
}

# need_udp_replay: sets UDP_REPLAY to the tests/tools/udp_replay binary (from
# CMake, next to weftd's build, in build/, or on PATH) or skips.
need_udp_replay() {
	local c
	for c in "${UDP_REPLAY:-}" \
		"${WEFTD:+$(dirname "$WEFTD")/../tests/tools/udp_replay}" \
		"$TEST_DIR/../../build/tests/tools/udp_replay" \
		"$(command -v udp_replay || true)"; do
		if [[ -n $c && -x $c ]]; then
			UDP_REPLAY=$c
			return 0
		fi
	done
	skip "udp_replay (tests/tools) not built; set UDP_REPLAY=path"
}

# --- setup and cleanup -------------------------------------------------------

# lib_init IMPL_A IMPL_B: checks, work folder, traps. Sets IMPL_A/IMPL_B.
lib_init() {
	trap 'on_err $LINENO "$BASH_COMMAND"' ERR
	trap cleanup EXIT
	trap 'log "interrupted (signal or hard timeout)"; exit 124' TERM INT HUP
	[[ $(id -u) -eq 0 ]] || skip "needs root (network namespaces)"
	need_cmd ip wg ping timeout socat
	(($# >= 2)) || fail "usage: $0 IMPL_A IMPL_B (weftd | wireguard-go; A initiates)"
	IMPL_A=$1
	IMPL_B=$2
	need_impl "$IMPL_A" "$IMPL_B"
	# The unit_sandbox variants: weftd under tests/tools/unit_sandbox.
	if [[ -n ${WEFT_SANDBOX_UNIT:-} ]]; then
		need_cmd systemd-analyze setpriv unshare
		! is_sanitized "$WEFT_SANDBOX_WEFTD" ||
			skip "a sanitizer build under the unit's filter: LeakSanitizer needs ptrace, which it refuses"
	fi
	WORK=$(mktemp -d "/tmp/${PFX}.XXXXXX")
	mkdir -p "$WG_SOCK_DIR"
	log "run $PFX: A=$IMPL_A ($(impl_bin "$IMPL_A")) B=$IMPL_B ($(impl_bin "$IMPL_B"))"
}

# alive PID: running (a zombie or a missing pid is not).
alive() {
	local st
	st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	st=${st##*) }
	[[ ${st%% *} != Z ]]
}
dead() { ! alive "$1"; }

# Kill one pid we started, TERM then KILL, each wait bounded; sets REAPED_RC.
reap() {
	local pid=$1 secs=${2:-5} end
	REAPED_RC=0
	alive "$pid" || { wait "$pid" 2>/dev/null || REAPED_RC=$?; return 0; }
	kill -TERM "$pid" 2>/dev/null || true
	end=$(($(now_ms) + secs * 1000))
	while alive "$pid" && (($(now_ms) < end)); do sleep 0.05; done
	if alive "$pid"; then
		log "pid $pid ignored SIGTERM for ${secs}s; sending SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || REAPED_RC=$?
}

print_logs() {
	local f
	for f in "$WORK"/*.log; do
		[[ -s $f ]] || continue
		printf '\n----- %s (last 150 lines) -----\n' "$(basename "$f")" >&2
		tail -n 150 "$f" >&2
	done
}

# Sanitizer reports in any daemon log turn the run into a failure.
sanitizer_reports() {
	local f found=1
	for f in "${DAEMON_LOG[@]}"; do
		if grep -qE 'ERROR: (Address|Leak|Thread)Sanitizer|runtime error:' "$f" 2>/dev/null; then
			log "sanitizer report in $(basename "$f")"
			found=0
		fi
	done
	return $found
}

cleanup() {
	local rc=$? pid ifn ns
	set +eE
	trap - ERR
	# A daemon gone before the end of the test explains most failures: say so.
	for ifn in "${!DAEMON_PID[@]}"; do
		if dead "${DAEMON_PID[$ifn]}"; then
			log "${DAEMON_IMPL[$ifn]} $ifn (pid ${DAEMON_PID[$ifn]}) had already exited; its log ends:"
			tail -n 3 "${DAEMON_LOG[$ifn]}" >&2
			((rc == 0 || rc == 77)) && rc=1
		fi
	done
	for pid in "${BG_PIDS[@]}"; do reap "$pid" 3; done
	for ifn in "${!DAEMON_PID[@]}"; do
		reap "${DAEMON_PID[$ifn]}" 5
		if ((REAPED_RC > 128 && REAPED_RC != 143 && REAPED_RC != 137 && REAPED_RC != 130)); then
			log "daemon $ifn died with status $REAPED_RC"
			((rc == 0 || rc == 77)) && rc=1
		fi
	done
	for ns in "${NAMESPACES[@]}"; do
		# Daemons that wg-quick backgrounded are not our children: end them by pid.
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null
	done
	for ifn in "${!DAEMON_PID[@]}" "${EXTRA_IFNAMES[@]}"; do
		rm -f "$WG_SOCK_DIR/$ifn.sock"
	done
	if ((${#DAEMON_LOG[@]})) && sanitizer_reports; then
		((rc == 0 || rc == 77)) && rc=1
	fi
	if [[ -n $WORK && -d $WORK ]]; then
		((rc == 0 || rc == 77)) || print_logs
		if [[ -n ${WEFT_TEST_KEEP:-} ]]; then
			log "kept work folder $WORK"
		else
			rm -rf "$WORK"
		fi
	fi
	exit "$rc"
}
EXTRA_IFNAMES=()

# bg [-o FILE] CMD...: background helper (ping, iperf3 server, tcpdump...),
# its output to FILE (default $WORK/bg.log), killed at exit. Sets BG_LAST.
bg() {
	local out="$WORK/bg.log"
	if [[ $1 == -o ]]; then
		out=$2
		shift 2
	fi
	"$@" >>"$out" 2>&1 &
	BG_PIDS+=($!)
	BG_LAST=$!
}

# No verdict by the wall clock (issue 14): a test waits for the state the
# contract names (a reply came, the connection closed, a counter moved),
# never for "the daemon did X within N ms", which a loaded machine breaks.
# Every wait is bounded by HANG_SECS only so that a hang ends the run, and
# it is reported as one (hang), not as a broken contract.
HANG_SECS=${WEFT_HANG_SECS:-60}
hang() { fail "hang: $* (nothing after ${HANG_SECS} s)"; }

# wait_for SECONDS CMD...: poll CMD every 0.1 s until it succeeds; 1 when it
# did not within the hang guard: SECONDS, but never less than HANG_SECS (a
# caller's shorter figure is how long it usually takes, not a verdict).
wait_for() {
	local secs=$1 end
	shift
	((secs >= HANG_SECS)) || secs=$HANG_SECS
	end=$(($(now_ms) + secs * 1000))
	until "$@" >/dev/null 2>&1; do
		(($(now_ms) < end)) || return 1
		sleep 0.1
	done
}

# --- namespaces and links ----------------------------------------------------

# Addresses used by every test. All of them exist only inside our namespaces.
OUT4_NET=192.168.241
OUT6_NET=fd00:241:
IN4_NET=10.241.0
IN6_NET=fd00:10:

ns_name() { echo "${PFX}-$1"; }

# new_ns TAG: creates namespace ${PFX}-TAG with lo up and IPv6 DAD off.
new_ns() {
	local ns
	ns=$(ns_name "$1")
	ip netns add "$ns" || skip "cannot create network namespaces"
	NAMESPACES+=("$ns")
	ip -n "$ns" link set lo up
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
	ip netns exec "$ns" sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
}

# make_hosts: namespaces NS_A and NS_B joined by veth ve-a <-> ve-b with
#   OUT4_A=192.168.241.1/24  OUT6_A=fd00:241::1/64 (ve-a)
#   OUT4_B=192.168.241.2/24  OUT6_B=fd00:241::2/64 (ve-b)
# and per-host interface names IF_A / IF_B (unique on the machine: the UAPI
# socket folder /var/run/wireguard is shared by all namespaces).
make_hosts() {
	new_ns a
	new_ns b
	NS_A=$(ns_name a)
	NS_B=$(ns_name b)
	ip -n "$NS_A" link add ve-a type veth peer name ve-b netns "$NS_B"
	OUT4_A=$OUT4_NET.1 OUT4_B=$OUT4_NET.2
	OUT6_A=${OUT6_NET}:1 OUT6_B=${OUT6_NET}:2
	IN4_A=$IN4_NET.1 IN4_B=$IN4_NET.2
	IN6_A=${IN6_NET}:1 IN6_B=${IN6_NET}:2
	ip -n "$NS_A" addr add "$OUT4_A/24" dev ve-a
	ip -n "$NS_A" addr add "$OUT6_A/64" dev ve-a nodad
	ip -n "$NS_B" addr add "$OUT4_B/24" dev ve-b
	ip -n "$NS_B" addr add "$OUT6_B/64" dev ve-b nodad
	ip -n "$NS_A" link set ve-a up
	ip -n "$NS_B" link set ve-b up
	IF_A=$(ifname a)
	IF_B=$(ifname b)
	wait_for 5 ip netns exec "$NS_A" ping -c1 -W1 "$OUT4_B" || fail "veth IPv4 does not work"
	wait_for 5 ip netns exec "$NS_A" ping -c1 -W1 "$OUT6_B" || fail "veth IPv6 does not work"
}

# ifname TAG: a WireGuard interface name unique on this machine (<= 15 chars).
ifname() { echo "wg${RUN_ID}$1"; }

# --- daemons -----------------------------------------------------------------

# DAEMON_ARGS: extra command-line arguments for the next start_daemon calls.
DAEMON_ARGS=()

# start_daemon IMPL NS IFNAME [VAR=VALUE...]: runs the implementation in the
# foreground (as a background job of this script) inside NS, logging to
# $WORK/daemon-IFNAME.log, and waits for its UAPI socket and TUN (hang guard).
start_daemon() {
	local impl=$1 ns=$2 ifn=$3 bin log pid
	shift 3
	bin=$(impl_bin "$impl")
	log="$WORK/daemon-$ifn.log"
	ip netns exec "$ns" env WG_PROCESS_FOREGROUND=1 LOG_LEVEL="${DAEMON_LOG_LEVEL:-verbose}" \
		"$@" "$bin" "${DAEMON_ARGS[@]}" -f "$ifn" >"$log" 2>&1 &
	pid=$!
	DAEMON_PID[$ifn]=$pid
	DAEMON_NS[$ifn]=$ns
	DAEMON_LOG[$ifn]=$log
	DAEMON_IMPL[$ifn]=$impl
	local end=$(($(now_ms) + HANG_SECS * 1000))
	until [[ -S $WG_SOCK_DIR/$ifn.sock ]] && ip -n "$ns" link show "$ifn" >/dev/null 2>&1; do
		alive "$pid" || fail "$impl $ifn exited at start-up (see $log)"
		(($(now_ms) < end)) || hang "$impl $ifn: no socket $WG_SOCK_DIR/$ifn.sock or no link"
		sleep 0.05
	done
	local mode
	mode=$(stat -c %a "$WG_SOCK_DIR/$ifn.sock")
	# wireguard-go leaves 0700; weftd promises 0600. Neither may let others in.
	(((8#$mode & 8#077) == 0)) || fail "$impl $ifn: socket mode $mode lets group/others connect"
	if is_weftd "$impl" && [[ $mode != 600 ]]; then fail "weftd $ifn: socket mode $mode, expected 600"; fi
	log "started $impl on $ns as $ifn (pid $pid)"
}

# stop_daemon IFNAME: SIGTERM and bounded wait; fails if it crashed.
stop_daemon() {
	local ifn=$1
	reap "${DAEMON_PID[$ifn]}" 5
	unset "DAEMON_PID[$ifn]"
	if ((REAPED_RC > 128 && REAPED_RC != 143)); then
		fail "daemon $ifn ended with status $REAPED_RC"
	fi
}

# daemon_gone IFNAME SECONDS: waits for the daemon to exit on its own.
daemon_gone() {
	local ifn=$1 secs=$2 pid=${DAEMON_PID[$1]}
	wait_for "$secs" dead "$pid" || return 1
	wait "$pid" 2>/dev/null || true
	unset "DAEMON_PID[$ifn]"
}

# --- WireGuard configuration helpers ------------------------------------------

# genkeys TAG: writes $WORK/TAG.key and $WORK/TAG.pub; sets KEY_<TAG>/PUB_<TAG>.
genkeys() {
	local tag=$1
	(umask 077 && wg genkey >"$WORK/$tag.key")
	wg pubkey <"$WORK/$tag.key" >"$WORK/$tag.pub"
	printf -v "KEY_$tag" '%s' "$WORK/$tag.key"
	printf -v "PUB_$tag" '%s' "$(cat "$WORK/$tag.pub")"
}

in_ns() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

# wg in a namespace, bounded by the hang guard.
nswg() {
	local ns=$1
	shift
	ip netns exec "$ns" timeout "$HANG_SECS" wg "$@"
}

# link_up NS IFNAME ADDR4/LEN ADDR6/LEN: inner addresses, MTU 1420, up.
link_up() {
	local ns=$1 ifn=$2
	ip -n "$ns" link set "$ifn" mtu 1420
	ip -n "$ns" addr add "$3" dev "$ifn"
	ip -n "$ns" addr add "$4" dev "$ifn" nodad
	ip -n "$ns" link set "$ifn" up
}

# setup_pair PORT_A PORT_B OUTER_FAMILY(4|6) [extra env for both daemons...]:
# starts both daemons, keys, inner addresses. A knows B's endpoint, B does
# not know A's (so A is the initiator, B learns A's endpoint from it).
setup_pair() {
	local pa=$1 pb=$2 fam=$3 epb
	shift 3
	genkeys a
	genkeys b
	start_daemon "$IMPL_A" "$NS_A" "$IF_A" "$@"
	start_daemon "$IMPL_B" "$NS_B" "$IF_B" "$@"
	if [[ $fam == 6 ]]; then epb="[$OUT6_B]:$pb"; else epb="$OUT4_B:$pb"; fi
	nswg "$NS_A" set "$IF_A" listen-port "$pa" private-key "$KEY_a" \
		peer "$PUB_b" allowed-ips "$IN4_B/32,$IN6_B/128" endpoint "$epb"
	nswg "$NS_B" set "$IF_B" listen-port "$pb" private-key "$KEY_b" \
		peer "$PUB_a" allowed-ips "$IN4_A/32,$IN6_A/128"
	link_up "$NS_A" "$IF_A" "$IN4_A/24" "$IN6_A/64"
	link_up "$NS_B" "$IF_B" "$IN4_B/24" "$IN6_B/64"
}

# latest_handshake NS IFNAME PUBKEY: epoch seconds (0 = none).
latest_handshake() {
	nswg "$1" show "$2" latest-handshakes | awk -v k="$3" '$1 == k { print $2 }'
}

# peer_field NS IFNAME PUBKEY FIELD: one column of `wg show IF dump` for a peer.
# Fields: pub psk endpoint allowed handshake rx tx keepalive.
peer_field() {
	local col
	case $4 in
	pub) col=1 ;; psk) col=2 ;; endpoint) col=3 ;; allowed) col=4 ;;
	handshake) col=5 ;; rx) col=6 ;; tx) col=7 ;; keepalive) col=8 ;;
	*) fail "peer_field: unknown field $4" ;;
	esac
	nswg "$1" show "$2" dump | awk -v k="$3" -v c="$col" 'NR > 1 && $1 == k { print $c }'
}

# ping_ok NS DST COUNT [ping args...]: COUNT replies come back. ping sends
# one every 0.2 s until it has COUNT replies (-c with -w counts replies);
# a lost or late one costs time, not the verdict. False only when COUNT
# replies did not come within the hang guard (HANG_SECS).
ping_ok() {
	local ns=$1 dst=$2 count=$3
	shift 3
	ip netns exec "$ns" ping -n -q -c "$count" -i 0.2 -w "$HANG_SECS" "$@" "$dst" >>"$WORK/ping.log" 2>&1
}

# ping_within NS DST COUNT SECONDS [ping args...]: ping_ok with SECONDS as a
# floor under the hang guard (a first ping that waits for a handshake retry,
# REKEY_TIMEOUT = 5 s, is no different: replies are what counts).
ping_within() {
	local ns=$1 dst=$2 count=$3 secs=$4
	shift 4
	((secs >= HANG_SECS)) || secs=$HANG_SECS
	ip netns exec "$ns" ping -n -q -c "$count" -i 0.2 -w "$secs" "$@" "$dst" >>"$WORK/ping.log" 2>&1
}

# reach_report NS DST LABEL: pings DST from NS every 10 ms until the first
# reply (HANG_SECS at most), and logs the time to reachability (from the
# first echo sent to the first reply: 10 ms per unanswered echo before it,
# plus its round trip) and how many echoes were lost before it. Reported,
# never judged: a slow machine only makes it longer. False when no reply.
reach_report() {
	local ns=$1 dst=$2 label=$3 out
	out=$(ip netns exec "$ns" ping -n -c 1 -i 0.01 -w "$HANG_SECS" "$dst" 2>&1)
	local rc=$?
	printf '%s\n' "$out" >>"$WORK/ping.log"
	((rc == 0)) || return 1
	log "$label: $(awk -v dst="$dst" '
		/icmp_seq=/ { split($0, a, "icmp_seq="); seq = a[2] + 0
			      split($0, b, "time="); rtt = b[2] + 0 }
		/packets transmitted/ { sent = $1 }
		END { printf "%s reachable %.1f ms after the first echo; %d echoes sent, %d lost before the first reply",
			     dst, (seq - 1) * 10 + rtt, sent, seq - 1 }' <<<"$out")"
}

# ping_none NS DST COUNT [ping args...]: true when no reply came back. (A
# negative check needs a window; a slow machine can only make it pass, never
# fail, so the window is no verdict on speed.)
ping_none() {
	local ns=$1 dst=$2 count=$3 out
	shift 3
	out=$(ip netns exec "$ns" ping -n -c "$count" -i 0.2 -W 1 -w $((count / 5 + 2)) "$@" "$dst" 2>&1 || true)
	printf '%s\n' "$out" >>"$WORK/ping.log"
	grep -q ', 0 received' <<<"$out"
}

# --- weftd counters ----------------------------------------------------------

# uapi IFNAME REQUEST: raw UAPI exchange (REQUEST without the final blank
# line). The daemon closes after its reply; socat waits for that close up to
# the hang guard.
uapi() {
	printf '%s\n\n' "$2" | timeout "$((HANG_SECS + 5))" socat -t "$HANG_SECS" - "UNIX-CONNECT:$WG_SOCK_DIR/$1.sock"
}

# stats IFNAME KEY: one weftd counter (stats=1 on the UAPI socket). The NS
# argument of the brief's `stats NS IFNAME KEY` form is accepted and ignored:
# the socket lives in the shared filesystem, not in the namespace.
stats() {
	if (($# == 3)); then shift; fi
	local ifn=$1 key=$2 reply val
	is_weftd "${DAEMON_IMPL[$ifn]:-weftd}" || fail "stats: $ifn is not weftd (guard the call with has_stats)"
	reply=$(uapi "$ifn" "stats=1") || fail "stats: no reply from $ifn"
	grep -qx 'errno=0' <<<"$reply" || fail "stats: $ifn answered: $(tr '\n' ' ' <<<"$reply")"
	val=$(awk -F= -v k="$key" '$1 == k { print substr($0, length(k) + 2); exit }' <<<"$reply")
	[[ -n $val ]] || fail "stats: $ifn has no counter '$key'"
	echo "$val"
}

# has_stats IFNAME: whether the daemon on IFNAME is weftd (logs a skip if not).
has_stats() {
	if is_weftd "${DAEMON_IMPL[$1]}"; then return 0; fi
	skip_part "weftd counters on $1 (${DAEMON_IMPL[$1]})"
	return 1
}

# kcounter NS NAME: a kernel SNMP counter of the namespace, e.g. IcmpInEchos,
# UdpInDatagrams, UdpInCsumErrors (/proc/net/snmp) or Icmp6InEchos,
# Udp6InDatagrams (/proc/net/snmp6).
kcounter() {
	ip netns exec "$1" cat /proc/net/snmp /proc/net/snmp6 | awk -v n="$2" '
		/^[A-Za-z]+: / && !($1 in hdr) { hdr[$1] = $0; next }
		/^[A-Za-z]+: / { split(hdr[$1], h); p = substr($1, 1, length($1) - 1)
			for (i = 2; i <= NF; i++) if (p h[i] == n) { print $i; exit } next }
		$1 == n { print $2; exit }'
}

# --- captures ------------------------------------------------------------------

# capture_start NS IFACE FILE [filter...]: tcpdump -w FILE in the background,
# returns once it is capturing. Sets CAPTURE_PID.
capture_start() {
	local ns=$1 dev=$2 file=$3 errlog
	shift 3
	errlog="$WORK/tcpdump-$(basename "$file").log"
	bg -o "$errlog" ip netns exec "$ns" timeout 60 tcpdump -i "$dev" -n -U --immediate-mode -s 2048 -w "$file" "$@"
	CAPTURE_PID=$BG_LAST
	wait_for 5 grep -q 'listening on' "$errlog" || fail "tcpdump on $dev did not start"
	# Seen here: packets in the first ~15 ms after "listening on" can be
	# missing from the file. Counting checks rely on kernel counters
	# (kcounter); the capture is the second witness.
	sleep 0.5
}

# capture_stop PID: SIGINT lets tcpdump flush its file.
capture_stop() {
	local pid=$1 end
	sleep 0.3
	kill -INT "$pid" 2>/dev/null || true
	end=$(($(now_ms) + 5000))
	while alive "$pid" && (($(now_ms) < end)); do sleep 0.05; done
	reap "$pid" 1
}

# capture_count FILE [filter...]: number of packets in FILE matching filter.
capture_count() {
	local file=$1
	shift
	tcpdump -r "$file" -n "$@" 2>/dev/null | wc -l
}

# --- traffic -------------------------------------------------------------------

# wait_listen NS PROTO PORT: a socket listens on PORT (tcp) in NS, bounded.
wait_listen() {
	local ns=$1 port=$2
	wait_for 5 bash -c "[[ -n \$(ip netns exec '$ns' ss -ltnH 'sport = :$port') ]]" ||
		fail "nothing listens on tcp port $port in $ns"
}

# bracket ADDR PORT: host:port with IPv6 in brackets.
hostport() {
	if [[ $1 == *:* ]]; then echo "[$1]:$2"; else echo "$1:$2"; fi
}

# send_file SRC_NS DST_NS DST_ADDR MBYTES: random file over TCP (socat),
# compared by sha256 on both ends.
send_file() {
	local src=$1 dst=$2 addr=$3 mb=$4 port=5300 pf=TCP4 rpid sum_a sum_b
	[[ $addr == *:* ]] && pf=TCP6
	head -c "${mb}M" /dev/urandom >"$WORK/send.bin"
	rm -f "$WORK/recv.bin"
	bg ip netns exec "$dst" timeout 60 socat -u \
		"$pf-LISTEN:$port,bind=$( [[ $pf == TCP6 ]] && echo "[$addr]" || echo "$addr"),reuseaddr" \
		"OPEN:$WORK/recv.bin,creat,trunc"
	rpid=$BG_LAST
	wait_listen "$dst" "$port"
	ip netns exec "$src" timeout 60 socat -u "OPEN:$WORK/send.bin" "$pf:$(hostport "$addr" "$port")" ||
		fail "socat send of ${mb} MB to $addr failed"
	wait_for 20 dead "$rpid" || fail "receiver did not finish"
	reap "$rpid" 1
	sum_a=$(sha256sum <"$WORK/send.bin" | cut -d' ' -f1)
	sum_b=$(sha256sum <"$WORK/recv.bin" | cut -d' ' -f1)
	[[ $sum_a == "$sum_b" ]] || fail "file over $addr: sha256 differs ($sum_a sent, $sum_b received, $(stat -c %s "$WORK/recv.bin") bytes)"
	log "${mb} MB file to $addr: sha256 $sum_a matches"
	rm -f "$WORK/send.bin" "$WORK/recv.bin"
}

# iperf NS_CLIENT NS_SERVER SERVER_ADDR SECONDS: TCP both directions.
# With a fifth argument BYTES (e.g. 1G) each direction moves that much
# instead; SECS (at least HANG_SECS) is then only the hang guard.
iperf_both() {
	local cns=$1 sns=$2 addr=$3 secs=$4 bytes=${5:-} spid dir out amount rc
	amount=(-t "$secs")
	if [[ -n $bytes ]]; then
		amount=(-n "$bytes")
		((secs >= HANG_SECS)) || secs=$HANG_SECS
	fi
	bg ip netns exec "$sns" timeout $((secs * 2 + 30)) iperf3 -s -p 5201 -B "$addr"
	spid=$BG_LAST
	wait_listen "$sns" 5201
	for dir in "" -R; do
		rc=0
		out=$(ip netns exec "$cns" timeout $((secs + 15)) iperf3 -c "$addr" -p 5201 "${amount[@]}" $dir 2>&1) || rc=$?
		((rc != 124)) || { printf '%s\n' "$out" >&2; hang "iperf3 ${dir:-forward} to $addr"; }
		((rc == 0)) || { printf '%s\n' "$out" >&2; fail "iperf3 ${dir:-forward} to $addr failed"; }
		log "iperf3 ${dir:-forward} $addr: $(awk '/receiver$/ { for (i = 2; i <= NF; i++) if ($i ~ /bits\/sec/) print $(i-1), $i }' <<<"$out")"
	done
	reap "$spid" 2
}

# wait_handshake NS IFNAME PUB MS: epoch of the latest handshake, waiting for
# one up to MS, but never less than the hang guard (HANG_SECS).
wait_handshake() {
	local ns=$1 ifn=$2 pub=$3 ms=$4 end hs
	((ms >= HANG_SECS * 1000)) || ms=$((HANG_SECS * 1000))
	end=$(($(now_ms) + ms))
	while :; do
		hs=$(latest_handshake "$ns" "$ifn" "$pub")
		[[ -n $hs && $hs != 0 ]] && { echo "$hs"; return 0; }
		(($(now_ms) < end)) || return 1
		sleep 0.05
	done
}

# --- resilience tests (garbage.sh, hs_flood.sh, uapi_abuse.sh) ----------------

# need_tool NAME: sets the variable NAME in capitals (UDP_GARBAGE, HS_FLOOD)
# to the tests/tools binary: from that variable, next to weftd's build, in
# build/, or on PATH; skips when it is nowhere.
need_tool() {
	local name=$1 var c
	var=${name^^}
	for c in "${!var:-}" \
		"${WEFTD:+$(dirname "$WEFTD")/../tests/tools/$name}" \
		"$TEST_DIR/../../build/tests/tools/$name" \
		"$(command -v "$name" || true)"; do
		if [[ -n $c && -x $c ]]; then
			printf -v "$var" '%s' "$c"
			return 0
		fi
	done
	skip "$name (tests/tools) not built; set $var=path"
}

# add_third_host: namespace NS_C joined to NS_B by a second veth pair:
#   OUT4_BC=10.242.0.1/16  OUT6_BC=fd00:242::1/64 (ve-bc, in NS_B)
#   OUT4_C=10.242.0.2/16   OUT6_C=fd00:242::2/64  (ve-c, in NS_C)
# The /16 leaves room for more source addresses on ve-c.
add_third_host() {
	new_ns c
	NS_C=$(ns_name c)
	ip -n "$NS_C" link add ve-c type veth peer name ve-bc netns "$NS_B"
	OUT4_BC=10.242.0.1 OUT4_C=10.242.0.2
	OUT6_BC=fd00:242::1 OUT6_C=fd00:242::2
	ip -n "$NS_B" addr add "$OUT4_BC/16" dev ve-bc
	ip -n "$NS_B" addr add "$OUT6_BC/64" dev ve-bc nodad
	ip -n "$NS_C" addr add "$OUT4_C/16" dev ve-c
	ip -n "$NS_C" addr add "$OUT6_C/64" dev ve-c nodad
	ip -n "$NS_B" link set ve-bc up
	ip -n "$NS_C" link set ve-c up
	wait_for 5 ip netns exec "$NS_C" ping -c1 -W1 "$OUT4_BC" || fail "veth c-b IPv4 does not work"
	wait_for 5 ip netns exec "$NS_C" ping -c1 -W1 "$OUT6_BC" || fail "veth c-b IPv6 does not work"
}

# stats_snap IFNAME ARRAY: every weftd counter from one stats=1 request, into
# the associative array ARRAY (declare -A ARRAY first).
stats_snap() {
	local -n _snap=$2
	local reply k v
	reply=$(uapi "$1" "stats=1") || fail "stats: no reply from $1"
	grep -qx 'errno=0' <<<"$reply" || fail "stats: $1 answered: $(tr '\n' ' ' <<<"$reply")"
	_snap=()
	while IFS='=' read -r k v; do
		if [[ -n $k && $k != errno ]]; then _snap[$k]=$v; fi
	done <<<"$reply"
}

# snap_delta OLD NEW KEY...: sum over KEYs of NEW[KEY] - OLD[KEY].
snap_delta() {
	local -n _old=$1 _new=$2
	local k sum=0
	shift 2
	for k in "$@"; do
		[[ -n ${_new[$k]:-} ]] || fail "snap_delta: no counter '$k'"
		sum=$((sum + _new[$k] - _old[$k]))
	done
	echo "$sum"
}

# pss_kb PID: proportional set size in KiB (/proc/PID/smaps_rollup).
pss_kb() {
	awk '/^Pss:/ { print $2; exit }' "/proc/$1/smaps_rollup"
}

# is_sanitized BIN: built with AddressSanitizer (slower; tests scale down).
is_sanitized() {
	grep -qa __asan_init "$1"
}

# udp_drained NS PORT: every UDP socket bound to PORT in NS has an empty
# receive queue (the daemon read everything the kernel queued for it).
udp_drained() {
	local q
	q=$(ip netns exec "$1" ss -uanH "sport = :$2" | awk '{ s += $2 } END { print s + 0 }')
	((q == 0))
}

# responsive NS IFNAME: the daemon answers `wg show` (false only when it
# did not within the hang guard: report that as a hang).
responsive() {
	ip netns exec "$1" timeout "$HANG_SECS" wg show "$2" >/dev/null 2>&1
}

# --- the weft CLI -------------------------------------------------------------

# need_weft: sets WEFT_BIN to the weft CLI ($WEFT from CMake, next to weftd's
# build, or on PATH) or skips.
need_weft() {
	local c
	for c in "${WEFT:-}" "${WEFTD:+$(dirname "$WEFTD")/../cli/weft}" "$(command -v weft || true)"; do
		if [[ -n $c && -x $c ]]; then
			WEFT_BIN=$c
			return 0
		fi
	done
	skip "weft (cli/) not built; set WEFT=path"
}

# weft -i IFNAME ARGS...: runs the CLI; stdout in $OUT, stderr in $ERR, exit
# status in $RC; returns that status.
weft() {
	RC=0
	"$WEFT_BIN" "$@" >"$WORK/weft.out" 2>"$WORK/weft.err" || RC=$?
	OUT=$(cat "$WORK/weft.out")
	ERR=$(cat "$WORK/weft.err")
	log "weft $* -> $RC${ERR:+ ($ERR)}"
	return "$RC"
}
