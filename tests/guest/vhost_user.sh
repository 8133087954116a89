#!/usr/bin/env bash
# vhost_user.sh — weftd's vhost-user VM port against a real virtio-net driver:
# the test guest (run.sh, QEMU under TCG) is the VM, weftd the backend and its
# first-hop router; traffic goes to a tap VM on the same host and through the
# tunnel to a tap VM on a second host. Run as root; exits 77 when QEMU,
# busybox-static or a guest kernel is missing.
#
#  QEMU guest (run.sh, QEMU started in netns -a)   netns -vma            netns -vmb
#  eth0 10.243.1.21/32 fd00:243:1::21/128          10.243.1.22           10.243.2.31
#  mac 52:54:00:43:01:21, mtu 1420                 fd00:243:1::22        fd00:243:2::31
#  gw 169.254.1.1 / RA (fe80::77:65ff:fe66:7401)   :7001 takes upA.bin   :7001 takes upB.bin
#    | virtio-net, vhost-user $WORK/vu.sock          | tap vp<ID>a         :7002 serves down.bin
#    | (port vu<ID>, weftd listens)                  |                       | tap vp<ID>b
#  +-+-----------------------------------------------+-----+     +-----------+--------------+
#  | weftd wg<ID>a 10.241.0.1                              | --- | weftd wg<ID>b 10.241.0.2   |
#  |  peer B: + 10.243.2.0/24, fd00:243:2::/64             | tun |  peer A: + 10.243.1.0/24,  |
#  |                                                       | nel |          fd00:243:1::/64   |
#  +--- ve-a 192.168.241.1 --------------------------------+-----+--- ve-b 192.168.241.2 ----+
#
# Boot 1 (default NIC): the guest pings both VMs (v4, v6), sends a 1 MiB
# random file to VM A (v4) and VM B (v6), whose listeners check its sha256,
# and fetches 1 MiB from VM B (v4), checked inside the guest. While QEMU runs
# the port must show connected=true; after it, rx/tx counters cover the bytes
# moved, and connected goes false once QEMU is gone.
# Boot 2: the same port again (QEMU reconnects): pings.
# Boot 3: offloads off on the -device (no csum, TSO or mergeable buffers):
# feature bits clear in the guest, a ping, 1 MiB each way to VM B.
#
# WEFT_VU_VIA_TAP=1 runs the same guest scripts with the guest on a tap port
# instead (QEMU's tap bridged to weftd's tap in a namespace): a reference for
# the guest side when the vhost-user path fails, or before it exists.
: "${WEFT_TEST_TIMEOUT:=900}"
export WEFT_TEST_TIMEOUT
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../integration/lib.sh
. "$HERE/../integration/lib.sh"
lib_init weftd weftd
need_cmd jq sha256sum ss
need_weft
[[ -c /dev/net/tun ]] || skip "no /dev/net/tun"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed (package qemu-system-x86)"
rc=0
"$HERE/build.sh" >/dev/null || rc=$?
case $rc in
0) ;;
1) skip "guest packages missing (see above; scripts/install-deps.sh installs them)" ;;
*) skip "no guest kernel: cannot download linux-image (no network?) and none cached" ;;
esac

VIA_TAP=${WEFT_VU_VIA_TAP:-0}
ROUTER_LL=fe80::77:65ff:fe66:7401
GW4=169.254.1.1
G_MAC=52:54:00:43:01:21 G4=10.243.1.21 G6=fd00:243:1::21
A_MAC=52:54:00:43:01:22 A4=10.243.1.22 A6=fd00:243:1::22
B_MAC=52:54:00:43:02:31 B4=10.243.2.31 B6=fd00:243:2::31
VU=vu${RUN_ID}
QTAP=qt${RUN_ID}

make_hosts
setup_pair 51820 51821 4
nswg "$NS_A" set "$IF_A" peer "$PUB_b" allowed-ips "$IN4_B/32,$IN6_B/128,10.243.2.0/24,fd00:243:2::/64"
nswg "$NS_B" set "$IF_B" peer "$PUB_a" allowed-ips "$IN4_A/32,$IN6_A/128,10.243.1.0/24,fd00:243:1::/64"

# tap_vm TAG HOST_IF HOST_NS V4 V6 MAC: a tap port whose netdev is moved into
# namespace -TAG and configured as a VM's NIC (/32, /128, routes via the router).
tap_vm() {
	local tag=$1 ifn=$2 v4=$4 v6=$5 mac=$6 tap=vp${RUN_ID}${1: -1} ns
	new_ns "$tag"
	ns=$(ns_name "$tag")
	weft -i "$ifn" port add "$tap" tap mac "$mac" address "$v4/32" address "$v6/128" mtu 1420 ||
		fail "weft port add $tap: $ERR"
	ip -n "$3" link set "$tap" netns "$ns" || fail "moving $tap into $ns"
	ip -n "$ns" link set "$tap" address "$mac"
	ip -n "$ns" link set "$tap" mtu 1420
	ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$tap.accept_ra=1"
	ip -n "$ns" addr add "$v4/32" dev "$tap"
	ip -n "$ns" addr add "$v6/128" dev "$tap" nodad
	ip -n "$ns" link set "$tap" up
	ip -n "$ns" route add "$GW4" dev "$tap"
	ip -n "$ns" route add default via "$GW4" dev "$tap"
	printf -v "NS_${tag^^}" '%s' "$ns"
}
tap_vm vma "$IF_A" "$NS_A" "$A4" "$A6" "$A_MAC"
tap_vm vmb "$IF_B" "$NS_B" "$B4" "$B6" "$B_MAC"

step "the tap VMs reach each other through the tunnel (the reference path)"
for ns in "$NS_VMA" "$NS_VMB"; do
	wait_for 10 sh -c "ip -n $ns -6 route show default | grep -q 'via $ROUTER_LL'" ||
		fail "$ns: no IPv6 default route from the RA"
done
ping_within "$NS_VMA" "$B4" 3 10 || fail "tap VM A -> tap VM B IPv4"
ping_ok "$NS_VMA" "$B6" 3 || fail "tap VM A -> tap VM B IPv6"

# --- the guest's port ----------------------------------------------------------
NETDEV=()
if ((VIA_TAP)); then
	step "guest port: tap $VU bridged to QEMU's tap $QTAP (WEFT_VU_VIA_TAP=1)"
	new_ns vmg
	NS_G=$(ns_name vmg)
	weft -i "$IF_A" port add "$VU" tap mac "$G_MAC" address "$G4/32" address "$G6/128" mtu 1420 ||
		fail "weft port add $VU tap: $ERR"
	ip -n "$NS_A" link set "$VU" netns "$NS_G"
	ip -n "$NS_G" link add br0 type bridge
	ip -n "$NS_G" tuntap add dev "$QTAP" mode tap
	for l in "$VU" "$QTAP"; do
		ip -n "$NS_G" link set "$l" mtu 1420
		ip -n "$NS_G" link set "$l" master br0
		ip -n "$NS_G" link set "$l" up
	done
	ip -n "$NS_G" link set br0 up
	NETDEV=(--tap "$QTAP")
	QEMU_NS=$NS_G
else
	step "guest port: vhost-user $VU, weftd listens on $WORK/vu.sock"
	SOCK=$WORK/vu.sock
	weft -i "$IF_A" port add "$VU" vhost-user "$SOCK" server mac "$G_MAC" \
		address "$G4/32" address "$G6/128" mtu 1420 || fail "weft port add $VU vhost-user: $ERR"
	[[ -S $SOCK ]] || fail "port added but no socket at $SOCK"
	NETDEV=(--vhost-user "$SOCK")
	QEMU_NS=$NS_A
fi

# port_json: the guest port's object from `weft port list --json`.
port_json() {
	"$WEFT_BIN" -i "$IF_A" port list --json 2>>"$WORK/weft-poll.err" |
		jq -c --arg p "$VU" '.[] | select(.name == $p)'
}
# counter JSON KEY: a field or counter of a port object (not `//`: it would
# skip a field that is false).
counter() { jq -r --arg k "$2" 'if has($k) then .[$k] else .counters[$k] end' <<<"$1"; }
# drops JSON: every non-zero drop counter, for the log.
drops() { jq -r '[.counters // . | to_entries[] | select((.key | test("drop")) and .value != 0) | "\(.key)=\(.value)"] | join(" ")' <<<"$1"; }

# --- the guest's scripts ---------------------------------------------------------
# Inside the guest a failed check is noted and the script goes on, so one run
# shows everything that is broken; the first failure is the verdict.
guest_prelude() {
	cat <<EOF
bad=""
chk() {
	why=\$1; shift
	if "\$@" >/tmp/chk.out 2>&1; then note "ok: \$why"; return 0; fi
	note "FAILED: \$why: \$(tail -n 2 /tmp/chk.out | tr '\n' ' ')"
	[ -n "\$bad" ] || bad=\$why
	return 1
}
feat=\$(cat /sys/class/net/eth0/device/features)
note "virtio features \$feat"
note "carrier \$(cat /sys/class/net/eth0/carrier) mtu \$(cat /sys/class/net/eth0/mtu)"
# feature BIT: 1 when the driver negotiated virtio feature BIT.
feature() { echo "\$feat" | cut -c\$((\$1 + 1)); }
note "negotiated: csum=\$(feature 0) guest_csum=\$(feature 1) guest_tso4=\$(feature 7) guest_tso6=\$(feature 8) host_tso4=\$(feature 11) mrg_rxbuf=\$(feature 15)"
ip route add $GW4 dev eth0 || fail "route to $GW4"
ip route add default via $GW4 || fail "default route via $GW4"
i=0
while ! ip -6 route show default | grep -q "via $ROUTER_LL"; do
	i=\$((i + 1))
	if [ \$i -gt 600 ]; then
		# A hang guard (60 s), not a bound on how fast the RA comes.
		chk "hang: no IPv6 default route from the router's RA after 60 s" false
		ip -6 route add default via $ROUTER_LL dev eth0
		break
	fi
	usleep 100000
done
note "ipv6 routes: \$(ip -6 route | tr '\n' ';')"
# download HOST PORT SHA: fetch a file and check its hash here.
download() {
	timeout 120 nc "\$1" "\$2" </dev/null >/tmp/down.bin || return 1
	got=\$(sha256sum /tmp/down.bin | cut -d' ' -f1)
	[ "\$got" = "\$3" ] || { echo "sha256 \$got over \$(wc -c </tmp/down.bin) bytes"; return 1; }
}
dd if=/dev/urandom of=/tmp/up.bin bs=64k count=16 2>/dev/null
echo "WEFT-UP-SHA256 \$(sha256sum /tmp/up.bin | cut -d' ' -f1)"
EOF
}
guest_epilogue() {
	cat <<'EOF'
note "eth0 rx_packets $(cat /sys/class/net/eth0/statistics/rx_packets) tx_packets $(cat /sys/class/net/eth0/statistics/tx_packets) rx_dropped $(cat /sys/class/net/eth0/statistics/rx_dropped)"
[ -z "$bad" ] || fail "$bad"
EOF
}

# --- host side of one boot -------------------------------------------------------
# listen_up TAG NS ADDR: socat takes one upload into $WORK/up-TAG.bin.
listen_up() {
	local pf=TCP4 bind=$3
	[[ $3 == *:* ]] && pf=TCP6 bind="[$3]"
	rm -f "$WORK/up-$1.bin"
	bg ip netns exec "$2" timeout 300 socat -u "$pf-LISTEN:7001,bind=$bind,reuseaddr" \
		"CREATE:$WORK/up-$1.bin"
	printf -v "UP_PID_$1" '%s' "$BG_LAST"
	wait_listen "$2" 7001
}
# serve_down NS ADDR: socat hands $WORK/down.bin to one client.
serve_down() {
	local pf=TCP4 bind=$2
	[[ $2 == *:* ]] && pf=TCP6 bind="[$2]"
	bg ip netns exec "$1" timeout 300 socat -u "OPEN:$WORK/down.bin" "$pf-LISTEN:7002,bind=$bind,reuseaddr"
	DOWN_PID=$BG_LAST
	wait_listen "$1" 7002
}
# check_up TAG LABEL: the upload listener finished and holds what the guest sent.
check_up() {
	local pid=UP_PID_$1 want got
	wait_for 10 dead "${!pid}" || fail "boot $2: the upload to VM $1 never finished (listener still waits)"
	reap "${!pid}" 1
	want=$(tr -d '\r' <"$WORK/console-$2.log" | sed -n 's/^WEFT-UP-SHA256 //p')
	got=$(sha256sum "$WORK/up-$1.bin" | cut -d' ' -f1)
	[[ -n $want ]] || fail "boot $2: the guest printed no WEFT-UP-SHA256"
	[[ $got == "$want" ]] || fail "boot $2: VM $1 received sha256 $got ($(stat -c %s "$WORK/up-$1.bin") bytes), the guest sent $want"
	log "boot $2: 1 MiB guest -> VM $1: sha256 matches"
}

# boot LABEL SCRIPT [run.sh options...]: runs the guest in the background and
# samples the port while it runs. Sets SEEN_CONNECTED, BOOT_MS, RUN_RC.
boot() {
	local label=$1 script=$2 t0 rpid j
	shift 2
	log "boot $label: run.sh ${NETDEV[*]} $*"
	t0=$(now_ms)
	ip netns exec "$QEMU_NS" "$HERE/run.sh" "${NETDEV[@]}" --mac "$G_MAC" --timeout 300 \
		--ip4 "$G4/32" --ip6 "$G6/128" --mtu 1420 --script "$script" \
		--log "$WORK/console-$label.log" "$@" >"$WORK/run-$label.log" 2>&1 &
	rpid=$!
	BG_PIDS+=("$rpid")
	SEEN_CONNECTED=0
	while alive "$rpid"; do
		j=$(port_json || true)
		[[ $(counter "$j" connected) == true ]] && SEEN_CONNECTED=1
		sleep 0.5
	done
	RUN_RC=0
	wait "$rpid" || RUN_RC=$?
	BOOT_MS=$(($(now_ms) - t0))
	tr -d '\r' <"$WORK/console-$label.log" | sed -n 's/^WEFT-NOTE /    guest: /p' >&2
	log "boot $label: run.sh exited $RUN_RC after $BOOT_MS ms; connected=true seen: $SEEN_CONNECTED"
	case $RUN_RC in
	0) ;;
	77) skip "run.sh could not build the guest" ;;
	*) fail "boot $label: run.sh exited $RUN_RC: $(grep 'guest/run:' "$WORK/run-$label.log" | tail -n 2 | tr '\n' ' ')" ;;
	esac
	if ((!VIA_TAP)); then
		((SEEN_CONNECTED)) || fail "boot $label: the port never showed connected=true while QEMU ran"
		# QEMU is gone: the backend must notice the closed socket.
		wait_for 5 sh -c "'$WEFT_BIN' -i '$IF_A' port list --json | jq -e --arg p '$VU' '.[] | select(.name == \$p) | .connected == false'" ||
			fail "boot $label: connected still true 5 s after QEMU exited: $(port_json)"
	fi
}

head -c $((1024 * 1024)) /dev/urandom >"$WORK/down.bin"
DOWN_SHA=$(sha256sum "$WORK/down.bin" | cut -d' ' -f1)
j0=$(port_json)
[[ -n $j0 ]] || fail "weft port list has no port $VU"
if ((!VIA_TAP)); then
	[[ $(counter "$j0" type) == vhost-user && $(counter "$j0" path) == "$SOCK" && $(counter "$j0" mode) == server ]] ||
		fail "weft port list shows $VU as: $j0"
	[[ $(counter "$j0" connected) == false ]] || fail "$VU is connected before QEMU started: $j0"
fi

# --- boot 1: default NIC, everything ------------------------------------------------
step "boot 1: ping both VMs, 1 MiB to each, 1 MiB from VM B"
{
	guest_prelude
	cat <<EOF
chk "ping VM A $A4" ping -A -c 3 -w 60 $A4
chk "ping VM A $A6" ping -6 -A -c 3 -w 60 $A6
chk "ping VM B $B4" ping -A -c 3 -w 60 $B4
chk "ping VM B $B6" ping -6 -A -c 3 -w 60 $B6
chk "1 MiB to VM A $A4" timeout 120 nc $A4 7001 </tmp/up.bin
chk "1 MiB to VM B [$B6]" timeout 120 nc $B6 7001 </tmp/up.bin
chk "1 MiB from VM B $B4 (sha256)" download $B4 7002 $DOWN_SHA
EOF
	guest_epilogue
} >"$WORK/guest1.sh"
listen_up A "$NS_VMA" "$A4"
listen_up B "$NS_VMB" "$B6"
serve_down "$NS_VMB" "$B4"
boot 1 "$WORK/guest1.sh"
check_up A 1
check_up B 1
wait_for 10 dead "$DOWN_PID" || fail "boot 1: the download listener is still there"
reap "$DOWN_PID" 1
j1=$(port_json)
log "port after boot 1: $(jq -c '{connected} + (.counters // {} | {rx_packets, rx_bytes, tx_packets, tx_bytes})' <<<"$j1")"
log "port drops after boot 1: $(drops "$j1")"
for k in rx_packets tx_packets; do
	(($(counter "$j1" $k) > $(counter "$j0" $k))) || fail "boot 1: $k of $VU did not grow ($(counter "$j1" $k))"
done
# Two uploads leave the guest and one download enters it: the port counts at
# least those payload bytes.
(($(counter "$j1" rx_bytes) - $(counter "$j0" rx_bytes) >= 2 * 1024 * 1024)) ||
	fail "boot 1: rx_bytes grew by $(($(counter "$j1" rx_bytes) - $(counter "$j0" rx_bytes))), expected >= 2 MiB"
(($(counter "$j1" tx_bytes) - $(counter "$j0" tx_bytes) >= 1024 * 1024)) ||
	fail "boot 1: tx_bytes grew by $(($(counter "$j1" tx_bytes) - $(counter "$j0" tx_bytes))), expected >= 1 MiB"

# --- boot 2: the VMM comes back on the same port -------------------------------------
step "boot 2: a second QEMU on the same port"
{
	guest_prelude
	cat <<EOF
chk "ping VM A $A4" ping -A -c 3 -w 60 $A4
chk "ping VM B $B4" ping -A -c 3 -w 60 $B4
chk "ping VM B $B6" ping -6 -A -c 3 -w 60 $B6
EOF
	guest_epilogue
} >"$WORK/guest2.sh"
boot 2 "$WORK/guest2.sh"
j2=$(port_json)
(($(counter "$j2" rx_packets) > $(counter "$j1" rx_packets))) || fail "boot 2: rx_packets did not grow"
(($(counter "$j2" tx_packets) > $(counter "$j1" tx_packets))) || fail "boot 2: tx_packets did not grow"
log "port after boot 2: $(jq -c '.counters // . | {rx_packets, tx_packets}' <<<"$j2"); drops: $(drops "$j2")"

# --- boot 3: no offloads: the backend's split and checksum fallbacks ---------------
step "boot 3: offloads off (csum, guest csum/TSO, host TSO, mergeable buffers)"
{
	guest_prelude
	cat <<EOF
for kv in 0=0 1=0 7=0 8=0 11=0 12=0 15=0; do
	chk "virtio feature bit \${kv%=*} is \${kv#*=}" [ "\$(feature \${kv%=*})" = \${kv#*=} ]
done
chk "ping VM B $B4" ping -A -c 3 -w 60 $B4
chk "ping VM B $B6" ping -6 -A -c 3 -w 60 $B6
chk "1 MiB to VM B $B4" timeout 120 nc $B4 7001 </tmp/up.bin
chk "1 MiB from VM B [$B6] (sha256)" download $B6 7002 $DOWN_SHA
EOF
	guest_epilogue
} >"$WORK/guest3.sh"
listen_up B "$NS_VMB" "$B4"
serve_down "$NS_VMB" "$B6"
boot 3 "$WORK/guest3.sh" \
	--nic-opts csum=off,guest_csum=off,guest_tso4=off,guest_tso6=off,guest_ecn=off,guest_ufo=off,host_tso4=off,host_tso6=off,host_ecn=off,host_ufo=off,mrg_rxbuf=off
check_up B 3
wait_for 10 dead "$DOWN_PID" || fail "boot 3: the download listener is still there"
reap "$DOWN_PID" 1
j3=$(port_json)
log "port after boot 3: $(jq -c '.counters // . | {rx_packets, rx_bytes, tx_packets, tx_bytes}' <<<"$j3"); drops: $(drops "$j3")"
(($(counter "$j3" rx_bytes) - $(counter "$j2" rx_bytes) >= 1024 * 1024)) || fail "boot 3: rx_bytes grew by less than 1 MiB"
(($(counter "$j3" tx_bytes) - $(counter "$j2" tx_bytes) >= 1024 * 1024)) || fail "boot 3: tx_bytes grew by less than 1 MiB"

alive "${DAEMON_PID[$IF_A]}" || fail "weftd A died"
pass
