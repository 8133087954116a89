#!/usr/bin/env bash
# Where a ping waits while weftd carries a 4-stream TCP load: the topology of
# bench/run.sh (cli - gwA - wire - gwB - srv, weftd on both gateways), 200
# echoes every 10 ms from cli during `iperf3 -P 4`, and tcpdump on gwA's TUN,
# gwB's wire and gwB's TUN. For each echo request: the time from gwA's TUN
# (the kernel hands it to weftd's queue) to gwB's wire (sealed and sent: the
# sending gateway) and from there to gwB's TUN (received, opened, written:
# the receiving gateway). Datagrams on the wire are matched to echoes by size
# (an 84-byte echo is a 128-byte WireGuard payload) and order.
#
#   bench/hops.sh [--no-build]      as root; prints a small table
#
# $WEFTD overrides the daemon (default build/daemon/weftd). Extra environment
# for both daemons (WEFT_SOCKET_BUFFER=..., WEFT_TUN_TXQUEUELEN=...) passes
# through, so the knobs can be compared.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [[ ${1:-} != --no-build ]]; then
	cmake -S "$ROOT" -B "$ROOT/build" >/dev/null && make -C "$ROOT/build" -j"$(nproc)" weftd >/dev/null
fi
WEFTD=${WEFTD:-$ROOT/build/daemon/weftd}
for c in ip wg iperf3 ping tcpdump python3 timeout; do
	command -v "$c" >/dev/null || { echo "hops.sh: missing $c" >&2; exit 1; }
done
ID=$$
NS=(whop-$ID-cli whop-$ID-gwA whop-$ID-gwB whop-$ID-srv)
WORK=$(mktemp -d /tmp/whops-$ID.XXXXXX)
PIDS=()

cleanup() {
	local ns pid
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	for ns in "${NS[@]}"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
		ip netns del "$ns" 2>/dev/null || true
	done
	rm -f /var/run/wireguard/wh"$ID"a.sock /var/run/wireguard/wh"$ID"b.sock
	rm -rf "$WORK"
}
trap cleanup EXIT

nsx() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
for ns in "${NS[@]}"; do
	ip netns add "$ns"
	ip -n "$ns" link set lo up
done
veth() {
	ip -n "$1" link add "$2" type veth peer name "$5" netns "$4"
	ip -n "$1" addr add "$3" dev "$2"
	ip -n "$4" addr add "$6" dev "$5"
	ip -n "$1" link set "$2" up
	ip -n "$4" link set "$5" up
}
veth "${NS[0]}" eth0 10.201.1.2/24 "${NS[1]}" lan 10.201.1.1/24
veth "${NS[1]}" wire 10.201.0.1/24 "${NS[2]}" wire 10.201.0.2/24
veth "${NS[2]}" lan 10.201.2.1/24 "${NS[3]}" eth0 10.201.2.2/24
nsx "${NS[1]}" sysctl -qw net.ipv4.ip_forward=1
nsx "${NS[2]}" sysctl -qw net.ipv4.ip_forward=1
ip -n "${NS[0]}" route add default via 10.201.1.1
ip -n "${NS[3]}" route add default via 10.201.2.1

(umask 077; wg genkey >"$WORK/a.key"; wg genkey >"$WORK/b.key")
mkdir -p /var/run/wireguard
IFA=wh${ID}a IFB=wh${ID}b
nsx "${NS[1]}" env WG_PROCESS_FOREGROUND=1 "$WEFTD" -f "$IFA" >"$WORK/a.log" 2>&1 &
PIDS+=($!)
nsx "${NS[2]}" env WG_PROCESS_FOREGROUND=1 "$WEFTD" -f "$IFB" >"$WORK/b.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do
	[[ -S /var/run/wireguard/$IFA.sock && -S /var/run/wireguard/$IFB.sock ]] && break
	sleep 0.1
done
nsx "${NS[1]}" wg set "$IFA" listen-port 51820 private-key "$WORK/a.key" \
	peer "$(wg pubkey <"$WORK/b.key")" endpoint 10.201.0.2:51820 allowed-ips 10.201.2.0/24
nsx "${NS[2]}" wg set "$IFB" listen-port 51820 private-key "$WORK/b.key" \
	peer "$(wg pubkey <"$WORK/a.key")" endpoint 10.201.0.1:51820 allowed-ips 10.201.1.0/24
ip -n "${NS[1]}" link set "$IFA" mtu 1420 up
ip -n "${NS[2]}" link set "$IFB" mtu 1420 up
ip -n "${NS[1]}" route replace 10.201.2.0/24 dev "$IFA"
ip -n "${NS[2]}" route replace 10.201.1.0/24 dev "$IFB"
nsx "${NS[0]}" ping -q -c 3 -i 0.2 10.201.2.2 >/dev/null || { echo "hops.sh: no path through weftd" >&2; exit 1; }

nsx "${NS[3]}" iperf3 -s -1 >/dev/null 2>&1 &
PIDS+=($!)
sleep 0.3
nsx "${NS[0]}" timeout 20 iperf3 -c 10.201.2.2 -t 6 -P 4 >"$WORK/iperf.txt" 2>&1 &
PIDS+=($!)
sleep 1.5
nsx "${NS[1]}" timeout 4 tcpdump -n -i "$IFA" -w "$WORK/a-tun.pcap" icmp 2>/dev/null &
nsx "${NS[2]}" timeout 4 tcpdump -n -i wire -w "$WORK/b-wire.pcap" 'udp and udp[4:2] == 136' 2>/dev/null &
nsx "${NS[2]}" timeout 4 tcpdump -n -i "$IFB" -w "$WORK/b-tun.pcap" icmp 2>/dev/null &
sleep 0.5
nsx "${NS[0]}" ping -c 200 -i 0.01 10.201.2.2 >"$WORK/ping.txt"
wait_all() { while pgrep -f "tcpdump -n -i .*$WORK" >/dev/null; do sleep 0.2; done; }
wait_all
sleep 4

python3 - "$WORK" <<'EOF'
import bisect, subprocess, sys
work = sys.argv[1]
def lines(name):
    return subprocess.run(["tcpdump", "-tt", "-n", "-r", f"{work}/{name}.pcap"],
                          capture_output=True, text=True).stdout.splitlines()
def requests(name):
    out = {}
    for l in lines(name):
        if "echo request" in l:
            out[int(l.split("seq ")[1].split(",")[0])] = float(l.split()[0])
    return out
a, b = requests("a-tun"), requests("b-tun")
wire = sorted(float(l.split()[0]) for l in lines("b-wire") if "10.201.0.1.51820 >" in l)
send, recv = [], []
for seq, t in a.items():
    if seq not in b:
        continue
    i = bisect.bisect_left(wire, t)
    if i < len(wire) and wire[i] <= b[seq]:
        send.append((wire[i] - t) * 1000)
        recv.append((b[seq] - wire[i]) * 1000)
print("| echo request, under a 4-stream load | n | median ms | p90 ms | max ms |")
print("|---|---:|---:|---:|---:|")
for name, d in (("gwA: TUN -> wire (sending weftd)", send), ("gwB: wire -> TUN (receiving weftd)", recv)):
    d.sort()
    if d:
        print(f"| {name} | {len(d)} | {d[len(d)//2]:.2f} | {d[int(len(d)*0.9)]:.2f} | {d[-1]:.2f} |")
EOF
echo
echo "ping: $(tail -1 "$WORK/ping.txt")"
echo "iperf3: $(grep SUM "$WORK/iperf.txt" | tail -1 | awk '{print $6, $7}')"
