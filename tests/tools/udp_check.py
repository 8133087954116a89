#!/usr/bin/env python3
"""UDP datagrams through a tunnel, checked one by one.

  udp_check.py recv ADDR PORT COUNT SECONDS   prints "received N intact M damaged D sizes S"
  udp_check.py send ADDR PORT COUNT

The sender sends COUNT datagrams in bursts of 64 of one size (so that a
receiving weftd can coalesce each burst into one UDP GSO write), sizes
cycling through 60..1300 bytes. Each datagram is its sequence number (4
bytes), its length (2 bytes) and bytes derived from both. The receiver
stops after COUNT datagrams or SECONDS of silence and exits 1 if any
datagram was damaged, truncated or seen twice. S is how many of the burst
sizes had at least one datagram arrive intact.
"""
import hashlib
import socket
import sys
import time

SIZES = [60, 200, 512, 1000, 1300]


def body(seq, size):
    seed = hashlib.sha256(b"%d/%d" % (seq, size)).digest()
    out = bytearray(seq.to_bytes(4, "big") + size.to_bytes(2, "big"))
    while len(out) < size:
        out += seed
    return bytes(out[:size])


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def send(addr, port, count):
    s = socket.socket(family(addr), socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    for start in range(0, count, 64):
        size = SIZES[(start // 64) % len(SIZES)]
        for seq in range(start, min(start + 64, count)):
            s.sendto(body(seq, size), (addr, port))
        time.sleep(0.002)  # a burst at a time: nothing to lose on a veth


def recv(addr, port, count, secs):
    s = socket.socket(family(addr), socket.SOCK_DGRAM)
    try:  # SO_RCVBUFFORCE (33), past net.core.rmem_max: the tests run as root
        s.setsockopt(socket.SOL_SOCKET, 33, 4 << 20)
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind((addr, port))
    print("listening", flush=True)
    # The first datagram is waited for up to a hang guard (the sender may
    # start late on a loaded machine); after it, secs of silence end the
    # stream.
    s.settimeout(max(secs, 60.0))
    seen, bad, sizes = set(), 0, set()
    while len(seen) < count:
        if seen or bad:
            s.settimeout(secs)
        try:
            data = s.recv(65536)
        except socket.timeout:
            break
        if len(data) < 6:
            bad += 1
            continue
        seq = int.from_bytes(data[:4], "big")
        size = int.from_bytes(data[4:6], "big")
        if len(data) != size or data != body(seq, size) or seq in seen:
            bad += 1
            continue
        seen.add(seq)
        sizes.add(size)
    print("received %d intact %d damaged %d sizes %d" % (len(seen) + bad, len(seen), bad, len(sizes)),
          flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "recv":
        sys.exit(recv(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])))
    if len(sys.argv) == 5 and sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        sys.exit(0)
    sys.stderr.write(__doc__)
    sys.exit(2)
