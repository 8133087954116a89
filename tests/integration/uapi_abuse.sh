#!/usr/bin/env bash
# uapi_abuse.sh IMPL_A IMPL_B — B's (weftd's) configuration socket takes a
# table of malformed requests, then 32 clients at once. Every bad request
# gets its errno reply (or the connection closes, for a request cut before
# its operation line ends) and changes nothing; every concurrent client is
# served; the daemon keeps its threads and descriptors and passes traffic.
#
#   netns ...-a                       netns ...-b
#  +---------------------------+    +-----------------------------------+
#  | IMPL_A wgPIDa 10.241.0.1  |    | weftd wgPIDb 10.241.0.2           |
#  |  ping -------------- tun -+----+->                                 |
#  | ve-a 192.168.241.1 :51820 +----+- ve-b 192.168.241.2 :51821        |
#  +---------------------------+    |  a UDP socket holding port 40000  |
#  host: python3 clients ---------> | /var/run/wireguard/wgPIDb.sock    |
#                                   +-----------------------------------+
#
# The requests (see CASES below): unknown and misspelt operations, a get
# with trailing bytes, unknown device and peer keys, keys at the wrong
# level, bad hex and short keys, out-of-range numbers, bad endpoints and
# prefixes, a line without '=', a 100 kB line, a 17 MB set request, binary
# garbage with and without NUL bytes and newlines, requests cut short, a set
# with one bad value between good ones, and a set that parses but names a
# UDP port already taken (so it fails when applied). Expected replies are
# wireguard-go's codes (-22 EINVAL, -71 EPROTO, -5 EIO, -98 EADDRINUSE).
# After each request `wg showconf` must be byte for byte what it was.
#
# Concurrency: 32 clients, each 10 rounds of get, set (add its own peer),
# get (sees it), set (remove it), stats, all started at once next to 8 idle
# connections and one stuck half-way through a set: all rounds must
# complete with errno=0 within 60 s, and the configuration ends as it began.
. "$(dirname "$0")/lib.sh"
lib_init "$@"
need_cmd python3 ss
is_weftd "$IMPL_B" || skip "B's UAPI is abused and must be weftd (replies and stats); B is $IMPL_B"
make_hosts

step "tunnel up; B gets a second peer so its configuration has every field"
setup_pair 51820 51821 4
ping_within "$NS_A" "$IN4_B" 3 8 || fail "no ping through the tunnel"
genkeys x
PSK=$(wg genpsk)
nswg "$NS_B" set "$IF_B" fwmark 0x1234 peer "$PUB_x" preshared-key <(echo "$PSK") \
	endpoint "[fd00:241::99]:5555" persistent-keepalive 0 allowed-ips "10.77.0.0/16,fd00:77::/64"
PID_B=${DAEMON_PID[$IF_B]}
SOCK=$WG_SOCK_DIR/$IF_B.sock
showconf() { nswg "$NS_B" showconf "$IF_B"; }
BEFORE=$(showconf)
tasks_b() { ls "/proc/$PID_B/task" | wc -l; }
fds_b() { ls "/proc/$PID_B/fd" | wc -l; }
TASKS0=$(tasks_b)
FDS0=$(fds_b)
log "B: $TASKS0 threads, $FDS0 descriptors"

# Port 40000 is taken in B's namespace (IPv4 and IPv6) for the apply-time
# failure case.
bg ip netns exec "$NS_B" timeout 100 python3 -c '
import socket, time
a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); a.bind(("0.0.0.0", 40000))
b = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
b.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1); b.bind(("::", 40000))
time.sleep(100)'
wait_for 5 bash -c "ip netns exec '$NS_B' ss -uanH 'sport = :40000' | grep -q ." || fail "port 40000 not taken"

cat >"$WORK/uapi_client.py" <<'EOF'
"""UAPI clients for uapi_abuse.sh: `cases SOCK PUB_A_HEX NEW_HEX NS IFNAME
CONF_FILE` runs the table of bad requests and compares `wg showconf` with
CONF_FILE after each; `concurrent SOCK N ROUNDS` runs the parallel
clients. Every exchange is bounded by a socket timeout: a hang is a failure."""
import os, random, re, socket, subprocess, sys, threading, time

TIMEOUT = 60.0  # a hang guard: no exchange is judged on its speed
REPLY_END = re.compile(rb"errno=-?[0-9]+\n\n")


def exchange(path, req, shut=True, timeout=TIMEOUT):
    """Sends req, half-closes when shut, returns the reply (b"" when the
    server closed without one). A peer that closes mid-send is fine: its
    reply is still queued for us."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    try:
        s.sendall(req)
        if shut:
            s.shutdown(socket.SHUT_WR)
    except (BrokenPipeError, ConnectionResetError):
        pass
    data = b""
    try:
        while not REPLY_END.search(data):
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            data += chunk
    except ConnectionResetError:
        pass
    finally:
        s.close()
    return data


def showconf(ns, ifname):
    return subprocess.run(["ip", "netns", "exec", ns, "timeout", "60", "wg", "showconf", ifname],
                          check=True, capture_output=True).stdout


def cases(path, pub_a, new, ns, ifname, conf_file):
    before = open(conf_file, "rb").read()
    rnd = random.Random(1)
    garbage = bytes(rnd.randrange(256) for _ in range(64 * 1024))
    printable = b"x" + re.sub(rb"\n+", b"\n", bytes(rnd.choice(b"abcdefghij=\n") for _ in range(8192)))
    k64 = lambda c: (c * 64).encode()
    E = lambda n: b"errno=%d\n\n" % n
    table = [
        # name, request, expected reply (b"" = closed without a reply)
        ("unknown operation", b"foo=1\n\n", E(-22)),
        ("get=2", b"get=2\n\n", E(-22)),
        ("GET=1 (case)", b"GET=1\n\n", E(-22)),
        ("get with CRLF", b"get=1\r\n\r\n", E(-22)),
        ("empty request", b"\n", E(-22)),
        ("get with trailing bytes", b"get=1\nx\n", E(-22)),
        ("stats with trailing bytes", b"stats=1\nx", E(-22)),
        ("operation cut by EOF", b"se", b""),
        ("operation line of 100 kB", b"x" * 100000 + b"\n\n", E(-22)),
        ("binary garbage, 64 kB", garbage, E(-22)),
        ("binary key with NULs", b"set=1\n\x00\x01\x02=\xff\xfe\n\n", E(-22)),
        ("text garbage after set=1", b"set=1\n" + printable + b"\n\n", None),
        ("unknown device key", b"set=1\nfoo=bar\n\n", E(-22)),
        ("unknown peer key", b"set=1\npublic_key=" + new + b"\nfoo=bar\n\n", E(-22)),
        ("device key in a peer", b"set=1\npublic_key=" + new + b"\nprivate_key=" + k64("1") + b"\n\n", E(-22)),
        ("peer key at device level", b"set=1\nendpoint=1.2.3.4:5\n\n", E(-22)),
        ("line without =", b"set=1\nhello\n\n", E(-71)),
        ("bad hex private key", b"set=1\nprivate_key=" + k64("z") + b"\n\n", E(-22)),
        ("short private key", b"set=1\nprivate_key=abcd\n\n", E(-22)),
        ("long public key", b"set=1\npublic_key=" + new + b"00\n\n", E(-22)),
        ("bad hex preshared key", b"set=1\npublic_key=" + pub_a + b"\npreshared_key=" + k64("g") + b"\n\n", E(-22)),
        ("listen_port 65536", b"set=1\nlisten_port=65536\n\n", E(-22)),
        ("listen_port -1", b"set=1\nlisten_port=-1\n\n", E(-22)),
        ("listen_port hex", b"set=1\nlisten_port=0x10\n\n", E(-22)),
        ("fwmark 2^32", b"set=1\nfwmark=4294967296\n\n", E(-22)),
        ("replace_peers=yes", b"set=1\nreplace_peers=yes\n\n", E(-22)),
        ("remove=1", b"set=1\npublic_key=" + pub_a + b"\nremove=1\n\n", E(-22)),
        ("keepalive 65536", b"set=1\npublic_key=" + pub_a + b"\npersistent_keepalive_interval=65536\n\n", E(-22)),
        ("protocol_version 2", b"set=1\npublic_key=" + pub_a + b"\nprotocol_version=2\n\n", E(-22)),
        ("endpoint without port", b"set=1\npublic_key=" + pub_a + b"\nendpoint=1.2.3.4\n\n", E(-22)),
        ("endpoint v6 unbracketed", b"set=1\npublic_key=" + pub_a + b"\nendpoint=::1:5\n\n", E(-22)),
        ("endpoint bracket open", b"set=1\npublic_key=" + pub_a + b"\nendpoint=[::1:5\n\n", E(-22)),
        ("endpoint hostname", b"set=1\npublic_key=" + pub_a + b"\nendpoint=example.com:5\n\n", E(-22)),
        ("allowed_ip /33", b"set=1\npublic_key=" + pub_a + b"\nallowed_ip=10.0.0.0/33\n\n", E(-22)),
        ("allowed_ip no cidr", b"set=1\npublic_key=" + pub_a + b"\nallowed_ip=10.0.0.1\n\n", E(-22)),
        ("allowed_ip v6 /129", b"set=1\npublic_key=" + pub_a + b"\nallowed_ip=::/129\n\n", E(-22)),
        ("set line of 100 kB", b"set=1\nfwmark=" + b"1" * 100000 + b"\n\n", E(-5)),
        ("set request of 17 MB", b"set=1\n" + b"fwmark=1\n" * (17 * 1024 * 1024 // 9) + b"\n", E(-5)),
        ("set cut inside a key", b"set=1\nprivate_key=" + k64("a")[:30], E(-22)),
        ("set cut after a bad line", b"set=1\nlisten_port=4242\nbogus", E(-71)),
        ("bad value in the middle",
         b"set=1\nlisten_port=4242\nfwmark=7\npublic_key=" + new + b"\nallowed_ip=10.99.0.0/16\n"
         b"endpoint=1.2.3.4:99999\npublic_key=" + pub_a + b"\nremove=true\n\n", E(-22)),
        ("replace_peers then a bad value",
         b"set=1\nreplace_peers=true\npublic_key=" + new + b"\nallowed_ip=0.0.0.0/0\nallowed_ip=nope\n\n", E(-22)),
        ("taken port fails when applied",
         b"set=1\nfwmark=77\nlisten_port=40000\nreplace_peers=true\npublic_key=" + new +
         b"\nallowed_ip=10.98.0.0/16\n\n", E(-98)),
    ]
    bad = 0
    for name, req, want in table:
        t0 = time.monotonic()
        try:
            got = exchange(path, req)
        except socket.timeout:
            got = b"<hang: no reply after %ds>" % TIMEOUT
        ms = (time.monotonic() - t0) * 1000
        if want is None:
            ok = re.fullmatch(rb"errno=-(22|71)\n\n", got) is not None
        else:
            ok = got == want
        print("%-32s %-5s %6.0f ms  reply %r%s" % (name, "ok" if ok else "WRONG", ms, got[:60],
              "" if ok else " (expected %r)" % want), flush=True)
        bad += not ok
        now = showconf(ns, ifname)
        if now != before:
            print("configuration changed after: %s\n--- before\n%s--- after\n%s" %
                  (name, before.decode(), now.decode()), flush=True)
            return 1
    print("%d requests" % len(table), flush=True)
    return 1 if bad else 0


def concurrent(path, n, rounds):
    # Any 32 bytes make a peer's public key.
    pub_hexes = [os.urandom(32).hex() for _ in range(n)]
    barrier = threading.Barrier(n + 10)
    errors, done = [], [0]
    lock = threading.Lock()

    def client(i):
        key = pub_hexes[i].encode()
        try:
            barrier.wait(timeout=30)
            for r in range(rounds):
                g = exchange(path, b"get=1\n\n", shut=False)
                assert g.endswith(b"errno=0\n\n") and b"listen_port=" in g, "get: %r" % g[-40:]
                s = exchange(path, b"set=1\npublic_key=" + key + b"\nallowed_ip=10.200.%d.0/24\n\n" % i, shut=False)
                assert s == b"errno=0\n\n", "set add: %r" % s
                g = exchange(path, b"get=1\n\n", shut=False)
                assert b"public_key=" + key + b"\n" in g and b"allowed_ip=10.200.%d.0/24" % i in g, "own peer missing"
                s = exchange(path, b"set=1\npublic_key=" + key + b"\nremove=true\n\n", shut=False)
                assert s == b"errno=0\n\n", "set remove: %r" % s
                st = exchange(path, b"stats=1\n\n", shut=False)
                assert st.endswith(b"errno=0\n\n") and b"rx_packets=" in st, "stats: %r" % st[-40:]
            with lock:
                done[0] += 1
        except Exception as e:  # noqa: BLE001 - every failure is reported
            with lock:
                errors.append("client %d: %s: %s" % (i, type(e).__name__, e))

    # Idle connections and one stuck inside a set request hold server
    # threads (and no lock) for the whole run.
    idle = []

    def hold(partial):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        if partial:
            s.sendall(partial)
        idle.append(s)
        barrier.wait(timeout=30)

    holders = [threading.Thread(target=hold, args=(b"" if k < 8 else b"set=1\nlisten_po",)) for k in range(9)]
    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    t0 = time.monotonic()
    for t in holders + threads:
        t.start()
    barrier.wait(timeout=30)
    for t in threads:
        t.join(timeout=60 - (time.monotonic() - t0))
    for t in holders:
        t.join(timeout=5)
    elapsed = time.monotonic() - t0
    for s in idle:
        s.close()
    print("%d of %d clients finished %d rounds in %.2f s" % (done[0], n, rounds, elapsed))
    for e in errors:
        print(e)
    alive = [t for t in threads if t.is_alive()]
    if alive:
        print("hang: %d clients still waiting after 60 s" % len(alive))
    return 0 if done[0] == n and not errors and not alive else 1


if __name__ == "__main__":
    if sys.argv[1] == "cases":
        sys.exit(cases(sys.argv[2], sys.argv[3].encode(), sys.argv[4].encode(), *sys.argv[5:8]))
    sys.exit(concurrent(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
EOF

b64hex() { python3 -c 'import base64,sys; print(base64.b64decode(sys.argv[1]).hex())' "$1"; }
PUB_A_HEX=$(b64hex "$PUB_a")
NEW_HEX=$(b64hex "$(wg genkey | wg pubkey)")

step "bad requests: each gets its errno (or a close) and changes nothing"
showconf >"$WORK/before.conf"
out=$(timeout 100 python3 "$WORK/uapi_client.py" cases "$SOCK" "$PUB_A_HEX" "$NEW_HEX" "$NS_B" "$IF_B" "$WORK/before.conf" 2>&1) && rc=0 || rc=$?
while IFS= read -r line; do log "  $line"; done <<<"$out"
alive "$PID_B" || fail "weftd died during the bad requests"
((rc == 0)) || fail "bad requests: a wrong reply, a hang or a changed configuration (see above)"
n_cases=$(awk '/^[0-9]+ requests$/ { print $1 }' <<<"$out")
((n_cases >= 40)) || fail "only ${n_cases:-0} bad requests ran"
log "$n_cases bad requests: right replies, configuration unchanged"

step "32 concurrent clients (get, set, get, set, stats) x 10 rounds, next to 9 stalled connections"
out=$(timeout 90 python3 "$WORK/uapi_client.py" concurrent "$SOCK" 32 10 2>&1) && rc=0 || rc=$?
log "$(head -1 <<<"$out")"
((rc == 0)) || { printf '%s\n' "$out" >&2; fail "not every concurrent client was served"; }
[[ $(showconf) == "$BEFORE" ]] || fail "the configuration differs after the concurrent clients"

step "B keeps its threads and descriptors, and passes traffic"
wait_for 5 bash -c "(( \$(ls /proc/$PID_B/task | wc -l) == $TASKS0 ))" ||
	fail "B has $(tasks_b) threads, $TASKS0 before the clients"
wait_for 5 bash -c "(( \$(ls /proc/$PID_B/fd | wc -l) == $FDS0 ))" ||
	fail "B has $(fds_b) descriptors, $FDS0 before the clients"
log "B: $(tasks_b) threads, $(fds_b) descriptors"
responsive "$NS_B" "$IF_B" || fail "B does not answer wg show"
ping_ok "$NS_A" "$IN4_B" 5 || fail "ping A -> B after the abuse"
ping_ok "$NS_B" "$IN6_A" 5 || fail "ping6 B -> A after the abuse"
stop_daemon "$IF_A"
stop_daemon "$IF_B"
pass
