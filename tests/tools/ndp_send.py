#!/usr/bin/env python3
"""ndp_send.py IFACE SRC_MAC SRC_IP6 TARGET_IP6 [--hop-limit N] [--bad-checksum]
[--count N]: sends neighbour solicitations for TARGET from SRC out of IFACE
on a packet socket, malformed on request, so that tests can check that the
responder drops and counts them. Only ever run inside a test namespace."""
import argparse
import ipaddress
import socket
import struct


def csum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("iface")
    ap.add_argument("src_mac")
    ap.add_argument("src")
    ap.add_argument("target")
    ap.add_argument("--hop-limit", type=int, default=255)
    ap.add_argument("--bad-checksum", action="store_true")
    ap.add_argument("--count", type=int, default=1)
    a = ap.parse_args()

    mac = bytes.fromhex(a.src_mac.replace(":", ""))
    src = ipaddress.IPv6Address(a.src).packed
    target = ipaddress.IPv6Address(a.target).packed
    snm = ipaddress.IPv6Address("ff02::1:ff00:0").packed[:13] + target[13:]
    dst_mac = bytes([0x33, 0x33]) + snm[12:]
    # NS: type 135, code 0, checksum, reserved, target, source link-layer option.
    icmp = struct.pack("!BBHI", 135, 0, 0, 0) + target + bytes([1, 1]) + mac
    pseudo = src + snm + struct.pack("!I", len(icmp)) + b"\0\0\0" + bytes([58])
    c = csum(pseudo + icmp)
    if a.bad_checksum:
        c ^= 0x5555
    icmp = icmp[:2] + struct.pack("!H", c) + icmp[4:]
    ip6 = struct.pack("!IHBB", 6 << 28, len(icmp), 58, a.hop_limit) + src + snm
    frame = dst_mac + mac + struct.pack("!H", 0x86DD) + ip6 + icmp
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((a.iface, 0))
    for _ in range(a.count):
        s.send(frame)


if __name__ == "__main__":
    main()
