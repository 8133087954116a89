#!/usr/bin/env bash
# smoke.sh — the test guest works end to end: it boots, its virtio-net NIC
# carries ARP/ND, ICMP and TCP both ways, and the NIC options that vhost-user
# tests will toggle (offloads, queues, MTU) reach the guest's driver.
# Run as root; exits 77 when QEMU, busybox-static or a kernel is missing.
#
#   netns weft-guest-PID (nothing else in it; no route out)
#  +-------------------------------------------------------------------+
#  |  tap wgt-PID 10.77.0.1/24 fd77::1/64                               |
#  |    |   socat: :7002 serves down.bin (v4), [fd77::1]:7001 takes up.bin |
#  |    |                                                              |
#  |  QEMU -netdev tap (run.sh, started inside this namespace)          |
#  |    guest eth0 10.77.0.2/24 fd77::2/64, mac 52:54:00:77:00:02       |
#  +-------------------------------------------------------------------+
#
# Boot 1, defaults: ping and ping6 the host, fetch down.bin over IPv4 and
# check its sha256, send a random up.bin over IPv6 (the host checks it), and
# check that csum, guest_tso4 and mrg_rxbuf were negotiated.
# Boot 2, a multi-queue tap with --queues 2 (so two guest CPUs) and offloads
# off on the -device, MTU 1280 from the command line: the same traffic, and
# the guest sees two queue pairs, those feature bits clear and the MTU set.
set -Eeuo pipefail

NAME=smoke
HERE=$(cd "$(dirname "$0")" && pwd)
if [[ -z ${WEFT_TEST_WRAPPED:-} ]]; then
	export WEFT_TEST_WRAPPED=1
	exec timeout -k 10 "${WEFT_TEST_TIMEOUT:-600}" bash "$0" "$@"
fi

log() { printf '[%s guest.%s] %s\n' "$(date +%T.%3N)" "$NAME" "$*" >&2; }
fail() {
	log "FAIL: $*"
	exit 1
}
skip() {
	log "SKIP: $*"
	exit 77
}

[[ $(id -u) -eq 0 ]] || skip "needs root (network namespaces, taps)"
for c in ip socat sha256sum ss; do
	command -v "$c" >/dev/null || skip "$c not installed"
done
[[ -c /dev/net/tun ]] || skip "no /dev/net/tun"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed (package qemu-system-x86)"
rc=0
"$HERE/build.sh" >/dev/null || rc=$?
case $rc in
0) ;;
1) skip "guest packages missing (see above; scripts/install-deps.sh installs them)" ;;
*) skip "no guest kernel: cannot download linux-image (no network?) and none cached" ;;
esac

NS=weft-guest-$$
TAP=wgt-$$
WORK=$(mktemp -d /tmp/weft-guest-smoke.XXXXXX)
BG_PIDS=()
# Everything this test starts runs inside $NS (QEMU, socat), so the
# namespace's process list is exactly what to stop.
cleanup() {
	local p
	for p in "${BG_PIDS[@]}" $(ip netns pids "$NS" 2>/dev/null); do
		kill "$p" 2>/dev/null || true
	done
	ip netns del "$NS" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 143' TERM INT
nsx() { ip netns exec "$NS" "$@"; }

ip netns add "$NS"
nsx ip link set lo up

GUEST_MAC=52:54:00:77:00:02
head -c $((1024 * 1024)) /dev/urandom >"$WORK/down.bin"
DOWN_SHA=$(sha256sum "$WORK/down.bin" | cut -d' ' -f1)

# make_tap [multi_queue]: the host end, addressed before QEMU attaches.
make_tap() {
	nsx ip link del "$TAP" 2>/dev/null || true
	nsx ip tuntap add dev "$TAP" mode tap "$@"
	nsx sysctl -qw "net.ipv6.conf.$TAP.accept_dad=0"
	nsx ip addr add 10.77.0.1/24 dev "$TAP"
	nsx ip -6 addr add fd77::1/64 dev "$TAP" nodad
	nsx ip link set "$TAP" up
}

# start_listeners: one transfer each way, then the socats exit.
start_listeners() {
	rm -f "$WORK/up.bin"
	# ip netns exec execs socat, so $! is socat itself.
	ip netns exec "$NS" socat -u OPEN:"$WORK/down.bin" TCP4-LISTEN:7002,bind=10.77.0.1,reuseaddr &
	BG_PIDS+=($!)
	DOWN_PID=$!
	ip netns exec "$NS" socat -u TCP6-LISTEN:7001,bind='[fd77::1]',reuseaddr CREATE:"$WORK/up.bin" &
	BG_PIDS+=($!)
	UP_PID=$!
	local _
	for _ in $(seq 600); do
		if nsx ss -Hltn | grep -q ':7002 ' && nsx ss -Hltn | grep -q ':7001 '; then
			return 0
		fi
		sleep 0.1
	done
	fail "hang: socat listeners did not come up after 60 s"
}

# guest_script FEATURE_EXPECT QUEUES MTU: what runs inside. FEATURE_EXPECT is
# "bit=value ..." over /sys/bus/virtio/devices/*/features (char N is bit N).
guest_script() {
	cat <<EOF
feat=\$(cat /sys/class/net/eth0/device/features)
note "virtio features \$feat"
[ "\$(cat /sys/class/net/eth0/address)" = $GUEST_MAC ] || fail "eth0 has MAC \$(cat /sys/class/net/eth0/address), not $GUEST_MAC"
for kv in $1; do
	bit=\${kv%=*} want=\${kv#*=}
	got=\$(echo "\$feat" | cut -c\$((bit + 1)))
	[ "\$got" = "\$want" ] || fail "virtio-net feature bit \$bit is \$got, expected \$want"
done
q=\$(ls -d /sys/class/net/eth0/queues/rx-* | wc -l)
[ "\$q" = $2 ] || fail "eth0 has \$q rx queues, expected $2"
[ "\$(cat /sys/class/net/eth0/mtu)" = $3 ] || fail "eth0 MTU \$(cat /sys/class/net/eth0/mtu), expected $3"
ping -A -c 3 -w 60 10.77.0.1 || fail "no IPv4 ping reply from the host"
ping -6 -A -c 3 -w 60 fd77::1 || fail "no IPv6 ping reply from the host"
timeout 120 nc 10.77.0.1 7002 </dev/null >/tmp/down.bin || fail "download from the host failed"
got=\$(sha256sum /tmp/down.bin | cut -d' ' -f1)
[ "\$got" = $DOWN_SHA ] || fail "down.bin arrived with sha256 \$got (\$(wc -c </tmp/down.bin) bytes)"
note "down.bin ok"
dd if=/dev/urandom of=/tmp/up.bin bs=64k count=16 2>/dev/null
echo "WEFT-UP-SHA256 \$(sha256sum /tmp/up.bin | cut -d' ' -f1)"
timeout 120 nc fd77::1 7001 </tmp/up.bin || fail "upload to the host failed"
EOF
}

# boot LABEL FEATURE_EXPECT QUEUES MTU [run.sh options...]
boot() {
	local label=$1 feats=$2 queues=$3 mtu=$4 rc=0 t0 want got
	shift 4
	start_listeners
	guest_script "$feats" "$queues" "$mtu" >"$WORK/run-$label.sh"
	log "boot $label: run.sh --tap $TAP $*"
	t0=$(date +%s%3N)
	nsx "$HERE/run.sh" --tap "$TAP" --mac "$GUEST_MAC" --timeout 300 \
		--ip4 10.77.0.2/24 --ip6 fd77::2/64 --script "$WORK/run-$label.sh" \
		--log "$WORK/console-$label.log" "$@" || rc=$?
	case $rc in
	0) ;;
	77) skip "run.sh could not build the guest" ;;
	*) fail "boot $label: run.sh exited $rc" ;;
	esac
	log "boot $label: $(($(date +%s%3N) - t0)) ms, guest $(grep -m1 -o 'WEFT-BOOT.*' "$WORK/console-$label.log" | tr -d '\r')"
	wait "$DOWN_PID" || fail "boot $label: the download listener failed"
	wait "$UP_PID" || fail "boot $label: the upload listener failed"
	want=$(tr -d '\r' <"$WORK/console-$label.log" | sed -n 's/^WEFT-UP-SHA256 //p')
	got=$(sha256sum "$WORK/up.bin" | cut -d' ' -f1)
	[[ -n $want ]] || fail "boot $label: the guest printed no WEFT-UP-SHA256"
	[[ $got == "$want" ]] || fail "boot $label: up.bin sha256 $got ($(stat -c %s "$WORK/up.bin") bytes), guest sent $want"
	log "boot $label: ok (ping, ping6, 1 MiB each way)"
}

# Feature bits: 0 CSUM, 7 GUEST_TSO4, 15 MRG_RXBUF, 22 MQ.
make_tap
boot default "0=1 7=1 15=1 22=0" 1 1500
make_tap multi_queue
boot tuned "0=0 7=0 15=0 22=1" 2 1280 --queues 2 --mtu 1280 \
	--nic-opts csum=off,guest_csum=off,guest_tso4=off,guest_tso6=off,guest_ecn=off,guest_ufo=off,mrg_rxbuf=off
log PASS
