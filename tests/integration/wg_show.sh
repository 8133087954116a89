#!/usr/bin/env bash
# wg_show.sh IMPL_A IMPL_B — what `wg show dump` reports, and `wg set`,
# `wg addconf`, `wg syncconf`, `wg setconf` changes being reflected.
#
#   netns weft-wg_show-PID-a                    netns weft-wg_show-PID-b
#  +-------------------------------+          +-------------------------------+
#  | IMPL_A  wgPIDa                |          | IMPL_B  wgPIDb                |
#  |  10.241.0.1/24 fd00:10::1/64  |          |  10.241.0.2/24 fd00:10::2/64  |
#  |  port 51820 fwmark 0x1234     |          |  port 51821 fwmark off        |
#  |  psk, keepalive 25            |          |  psk, keepalive off           |
#  |  ve-a 192.168.241.1 ----------+-- veth --+---------- ve-b 192.168.241.2  |
#  |       fd00:241::1             |          |           fd00:241::2         |
#  +-------------------------------+          +-------------------------------+
#
# A's endpoint for B is IPv4, B's endpoint for A is IPv6 (so both formats are
# printed); after A's handshake B's endpoint follows A's IPv4 address.
. "$(dirname "$0")/lib.sh"
lib_init "$@"
make_hosts
genkeys a
genkeys b
genkeys c
(umask 077 && wg genpsk >"$WORK/psk")
PSK=$(cat "$WORK/psk")

start_daemon "$IMPL_A" "$NS_A" "$IF_A"
start_daemon "$IMPL_B" "$NS_B" "$IF_B"
sorted_list() { tr ',' '\n' <<<"$1" | sort | paste -sd, -; }

# check_iface NS IF KEYFILE PUB PORT FWMARK: the interface line of the dump.
check_iface() {
	local line
	line=$(nswg "$1" show "$2" dump | head -n1)
	log "$2 interface: ${line//$(cat "$3")/<private>}"
	read -r priv pub port fwmark <<<"$line"
	[[ $priv == "$(cat "$3")" ]] || fail "$2: private key in dump differs from the configured one"
	[[ $pub == "$4" ]] || fail "$2: public key $pub, expected $4"
	[[ $port == "$5" ]] || fail "$2: listen port $port, expected $5"
	[[ $fwmark == "$6" ]] || fail "$2: fwmark $fwmark, expected $6"
}

# check_peer NS IF PUB PSK ENDPOINT ALLOWED KEEPALIVE ('*' = any).
check_peer() {
	local ns=$1 ifn=$2 pub=$3 line
	line=$(nswg "$ns" show "$ifn" dump | awk -v k="$pub" 'NR > 1 && $1 == k')
	[[ -n $line ]] || fail "$ifn: peer $pub not in dump"
	log "$ifn peer: ${line//$PSK/<psk>}"
	read -r p_pub p_psk p_ep p_allowed p_hs p_rx p_tx p_ka <<<"$line"
	[[ $4 == '*' || $p_psk == "$4" ]] || fail "$ifn: preshared key ${p_psk:0:8}..., expected ${4:0:8}..."
	[[ $5 == '*' || $p_ep == "$5" ]] || fail "$ifn: endpoint $p_ep, expected $5"
	[[ $6 == '*' || $(sorted_list "$p_allowed") == "$(sorted_list "$6")" ]] ||
		fail "$ifn: allowed ips $p_allowed, expected $6"
	[[ $7 == '*' || $p_ka == "$7" ]] || fail "$ifn: persistent keepalive $p_ka, expected $7"
}

peer_count() { nswg "$1" show "$2" peers | grep -c . || true; }

step "configured values before any traffic"
# B first: A's keepalive setting may start a handshake at once, after which
# B's endpoint for A is A's IPv4 address.
t0_s=$(date +%s) # no handshake can be older
nswg "$NS_B" set "$IF_B" listen-port 51821 private-key "$KEY_b" \
	peer "$PUB_a" preshared-key "$WORK/psk" endpoint "[$OUT6_A]:51820" \
	allowed-ips "$IN4_A/32,$IN6_A/128"
check_iface "$NS_B" "$IF_B" "$KEY_b" "$PUB_b" 51821 off
check_peer "$NS_B" "$IF_B" "$PUB_a" "$PSK" "[$OUT6_A]:51820" "$IN4_A/32,$IN6_A/128" off
[[ $(peer_field "$NS_B" "$IF_B" "$PUB_a" handshake) == 0 ]] || fail "$IF_B: handshake before any traffic"
nswg "$NS_A" set "$IF_A" listen-port 51820 fwmark 0x1234 private-key "$KEY_a" \
	peer "$PUB_b" preshared-key "$WORK/psk" endpoint "$OUT4_B:51821" \
	allowed-ips "$IN4_B/32,$IN6_B/128" persistent-keepalive 25
check_iface "$NS_A" "$IF_A" "$KEY_a" "$PUB_a" 51820 0x1234
check_peer "$NS_A" "$IF_A" "$PUB_b" "$PSK" "$OUT4_B:51821" "$IN4_B/32,$IN6_B/128" 25

link_up "$NS_A" "$IF_A" "$IN4_A/24" "$IN6_A/64"
link_up "$NS_B" "$IF_B" "$IN4_B/24" "$IN6_B/64"

step "after traffic: epoch handshake near now, counters non-zero and growing"
ping_ok "$NS_A" "$IN4_B" 5 || fail "ping $IN4_B"
now=$(date +%s)
for side in "$NS_A $IF_A $PUB_b" "$NS_B $IF_B $PUB_a"; do
	read -r ns ifn pub <<<"$side"
	hs=$(peer_field "$ns" "$ifn" "$pub" handshake)
	# The handshake's wall-clock stamp: after the configuration, before now
	# (1 s of rounding).
	((hs >= t0_s - 1 && hs <= now + 1)) || fail "$ifn: latest-handshake $hs outside $t0_s (configured) .. $now"
	rx=$(peer_field "$ns" "$ifn" "$pub" rx)
	tx=$(peer_field "$ns" "$ifn" "$pub" tx)
	((rx > 0 && tx > 0)) || fail "$ifn: rx $rx tx $tx after ping"
	log "$ifn: handshake $((now - hs)) s ago, rx $rx tx $tx"
done
check_peer "$NS_B" "$IF_B" "$PUB_a" "$PSK" "$OUT4_A:51820" '*' off
rx0=$(peer_field "$NS_A" "$IF_A" "$PUB_b" rx)
tx0=$(peer_field "$NS_A" "$IF_A" "$PUB_b" tx)
ping_ok "$NS_A" "$IN4_B" 10 -s 1000 || fail "ping -s 1000 $IN4_B"
rx1=$(peer_field "$NS_A" "$IF_A" "$PUB_b" rx)
tx1=$(peer_field "$NS_A" "$IF_A" "$PUB_b" tx)
((rx1 - rx0 >= 10000 && tx1 - tx0 >= 10000)) ||
	fail "$IF_A: counters grew by rx $((rx1 - rx0)) tx $((tx1 - tx0)) for 10 x 1000-byte pings"
log "$IF_A: 10 x 1000-byte pings: rx +$((rx1 - rx0)) tx +$((tx1 - tx0))"
# `wg show` pretty output must parse too.
nswg "$NS_A" show "$IF_A" | grep -q "latest handshake" || fail "$IF_A: wg show has no 'latest handshake'"

step "wg set allowed-ips replaces the list (fd00:10::2 removed)"
nswg "$NS_A" set "$IF_A" peer "$PUB_b" allowed-ips "$IN4_B/32"
check_peer "$NS_A" "$IF_A" "$PUB_b" "$PSK" '*' "$IN4_B/32" 25
ping_none "$NS_A" "$IN6_B" 3 || fail "ping to $IN6_B still answered after its allowed ip was removed"
ping_ok "$NS_A" "$IN4_B" 3 || fail "ping $IN4_B after allowed-ips change"
nswg "$NS_A" set "$IF_A" peer "$PUB_b" allowed-ips "$IN4_B/32,$IN6_B/128"
ping_ok "$NS_A" "$IN6_B" 3 || fail "ping $IN6_B after restoring its allowed ip"

step "wg addconf adds a peer and keeps the others"
cat >"$WORK/add.conf" <<EOF
[Peer]
PublicKey = $PUB_c
AllowedIPs = $IN4_NET.3/32
EOF
nswg "$NS_A" addconf "$IF_A" "$WORK/add.conf"
(($(peer_count "$NS_A" "$IF_A") == 2)) || fail "$IF_A: $(peer_count "$NS_A" "$IF_A") peers after addconf, expected 2"
check_peer "$NS_A" "$IF_A" "$PUB_c" '(none)' '(none)' "$IN4_NET.3/32" off
check_peer "$NS_A" "$IF_A" "$PUB_b" "$PSK" '*' "$IN4_B/32,$IN6_B/128" 25

step "wg syncconf drops the extra peer, changes B's, keeps the session"
hs_before=$(peer_field "$NS_A" "$IF_A" "$PUB_b" handshake)
cat >"$WORK/sync.conf" <<EOF
[Interface]
PrivateKey = $(cat "$KEY_a")
ListenPort = 51820
FwMark = 0x1234

[Peer]
PublicKey = $PUB_b
PresharedKey = $PSK
Endpoint = $OUT4_B:51821
AllowedIPs = $IN4_B/32, $IN6_B/128, 10.242.0.0/16
PersistentKeepalive = 15
EOF
nswg "$NS_A" syncconf "$IF_A" "$WORK/sync.conf"
(($(peer_count "$NS_A" "$IF_A") == 1)) || fail "$IF_A: $(peer_count "$NS_A" "$IF_A") peers after syncconf, expected 1"
check_peer "$NS_A" "$IF_A" "$PUB_b" "$PSK" "$OUT4_B:51821" "$IN4_B/32,$IN6_B/128,10.242.0.0/16" 15
check_iface "$NS_A" "$IF_A" "$KEY_a" "$PUB_a" 51820 0x1234
ping_ok "$NS_A" "$IN4_B" 3 || fail "ping after syncconf"
[[ $(peer_field "$NS_A" "$IF_A" "$PUB_b" handshake) == "$hs_before" ]] ||
	fail "$IF_A: syncconf forced a new handshake (the session should have been kept)"

step "wg setconf replaces everything: new port, fwmark, keepalive off"
cat >"$WORK/set.conf" <<EOF
[Interface]
PrivateKey = $(cat "$KEY_a")
ListenPort = 51830
FwMark = 0x99

[Peer]
PublicKey = $PUB_b
PresharedKey = $PSK
Endpoint = $OUT4_B:51821
AllowedIPs = $IN4_B/32, $IN6_B/128
EOF
nswg "$NS_A" setconf "$IF_A" "$WORK/set.conf"
check_iface "$NS_A" "$IF_A" "$KEY_a" "$PUB_a" 51830 0x99
check_peer "$NS_A" "$IF_A" "$PUB_b" "$PSK" "$OUT4_B:51821" "$IN4_B/32,$IN6_B/128" off
# The new port reaches B with A's next packets; B follows A's endpoint.
ping_ok "$NS_A" "$IN4_B" 5 || fail "ping after setconf"
check_peer "$NS_B" "$IF_B" "$PUB_a" '*' "$OUT4_A:51830" '*' '*'

if has_stats "$IF_A"; then
	(($(stats "$IF_A" tx_packets) > 0)) || fail "$IF_A: tx_packets 0"
	(($(stats "$IF_A" hs_initiations_sent) >= 1)) || fail "$IF_A: hs_initiations_sent 0"
fi
if has_stats "$IF_B"; then
	(($(stats "$IF_B" hs_responses_sent) >= 1)) || fail "$IF_B: hs_responses_sent 0"
fi
pass
