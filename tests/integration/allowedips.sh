#!/usr/bin/env bash
# allowedips.sh IMPL_A IMPL_B — cryptokey routing on receive, key change, peer
# removal.
#
#   netns weft-allowedips-PID-a                 netns weft-allowedips-PID-b
#  +-------------------------------+          +-------------------------------+
#  | IMPL_A wgPIDa 10.241.0.1/24   |          | IMPL_B wgPIDb 10.241.0.2/24   |
#  |  peer B: allowed 10.241.0.2/32|          |  + 10.241.9.2/32 (spoof src)  |
#  |          fd00:10::2/128       |          |  peer A: allowed 10.241.0.0/24|
#  |                               |          |          fd00:10::/64         |
#  |  ve-a 192.168.241.1 :51820 ---+-- veth --+--- :51821 ve-b 192.168.241.2  |
#  +-------------------------------+          +-------------------------------+
#
# 1. B pings A from 10.241.9.2 (outside B's allowed IPs on A): A must drop it
#    after decryption (A's kernel gets no echo request, tcpdump on A's wg
#    interface sees nothing from it; weftd: drop_inner_source grows), while
#    B's real address still works.
# 2. A changes its private key, B replaces A's public key: traffic resumes.
# 3. A removes peer B: traffic stops both ways and wg show lists no peer.
. "$(dirname "$0")/lib.sh"
lib_init "$@"
need_cmd tcpdump
make_hosts
setup_pair 51820 51821 4
# B accepts A's whole inner subnet so its spoofed packets do get sealed to A.
nswg "$NS_B" set "$IF_B" peer "$PUB_a" allowed-ips "$IN4_NET.0/24,${IN6_NET}:/64"
SPOOF=10.241.9.2
ip -n "$NS_B" addr add "$SPOOF/32" dev "$IF_B"

step "baseline: ping from B's allowed address works"
ping_ok "$NS_A" "$IN4_B" 3 || fail "ping $IN4_B from A"
ping_ok "$NS_B" "$IN4_A" 3 || fail "ping $IN4_A from B"

step "inner source $SPOOF is outside B's allowed IPs on A: dropped"
if has_stats "$IF_A"; then drop0=$(stats "$IF_A" drop_inner_source); fi
rx0=$(peer_field "$NS_A" "$IF_A" "$PUB_b" rx)
echo0=$(kcounter "$NS_A" IcmpInEchos)
capture_start "$NS_A" "$IF_A" "$WORK/spoof.pcap" icmp
ping_none "$NS_B" "$IN4_A" 5 -I "$SPOOF" || fail "ping from spoofed $SPOOF got a reply"
capture_stop "$CAPTURE_PID"
seen=$(capture_count "$WORK/spoof.pcap" "src host $SPOOF")
((seen == 0)) || fail "$seen packets from $SPOOF reached A's wg interface"
echo1=$(kcounter "$NS_A" IcmpInEchos)
((echo1 == echo0)) || fail "A's kernel received $((echo1 - echo0)) echo requests from the spoofed source"
rx1=$(peer_field "$NS_A" "$IF_A" "$PUB_b" rx)
((rx1 > rx0)) || fail "A received nothing from B: the spoofed pings never reached A's daemon (test setup problem)"
log "A's daemon received $((rx1 - rx0)) bytes from B and delivered none of them"
if has_stats "$IF_A"; then
	drop1=$(stats "$IF_A" drop_inner_source)
	((drop1 - drop0 >= 5)) || fail "$IF_A: drop_inner_source grew by $((drop1 - drop0)), expected >= 5"
	log "$IF_A: drop_inner_source +$((drop1 - drop0))"
fi
ping_ok "$NS_B" "$IN4_A" 3 || fail "ping from B's real address after the spoof"

step "A changes its private key, B replaces A's public key: traffic resumes"
genkeys a2
hs0=$(peer_field "$NS_A" "$IF_A" "$PUB_b" handshake)
nswg "$NS_A" set "$IF_A" private-key "$KEY_a2"
[[ $(nswg "$NS_A" show "$IF_A" public-key) == "$PUB_a2" ]] || fail "$IF_A: public key did not change"
ping_none "$NS_A" "$IN4_B" 3 || fail "A reached B with a key B does not know"
nswg "$NS_B" set "$IF_B" peer "$PUB_a" remove
nswg "$NS_B" set "$IF_B" peer "$PUB_a2" allowed-ips "$IN4_NET.0/24,${IN6_NET}:/64"
sleep 1.1 # a new handshake gets a later epoch second than the old one
# A's next initiation may wait for the retry timer (REKEY_TIMEOUT, 5 s).
ping_within "$NS_A" "$IN4_B" 5 9 || fail "no traffic A -> B after the key change"
ping_ok "$NS_B" "$IN4_A" 3 || fail "no traffic B -> A after the key change"
hs1=$(peer_field "$NS_A" "$IF_A" "$PUB_b" handshake)
((hs1 > hs0)) || fail "no new handshake after the key change ($hs0 -> $hs1)"

step "A removes peer B: traffic stops, no peer listed"
nswg "$NS_A" set "$IF_A" peer "$PUB_b" remove
[[ -z $(nswg "$NS_A" show "$IF_A" peers) ]] || fail "$IF_A still lists peers: $(nswg "$NS_A" show "$IF_A" peers)"
nswg "$NS_A" show "$IF_A" dump | awk 'NR > 1 { exit 1 }' || fail "$IF_A dump still has peer lines"
if has_stats "$IF_A"; then unk0=$(stats "$IF_A" drop_unknown_index); fi
ping_none "$NS_A" "$IN4_B" 3 || fail "A -> B still works after removing the peer"
ping_none "$NS_B" "$IN4_A" 5 || fail "B -> A still works after A removed B"
if has_stats "$IF_A"; then
	unk1=$(stats "$IF_A" drop_unknown_index)
	((unk1 > unk0)) || fail "$IF_A: B's packets after the removal were not counted as drop_unknown_index"
fi
pass
