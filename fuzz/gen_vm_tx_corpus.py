#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_vm_tx (input format at the top of
fuzz/fuzz_vm_tx.c): a guest's TX ring holding ARP and neighbour
solicitations, IPv4 and IPv6 UDP/TCP frames to every hop kind of the
harness's table (and to nowhere), spoofed sources, frames with a
checksum left to the host, TSO and USO super-packets (whole to another VM
or a TUN with virtio-net headers, split for a peer), headers whose
hdr_len, gso_size or csum_start lie, chains cut anywhere, and broken rings.

Usage: fuzz/gen_vm_tx_corpus.py [DIR]   (default fuzz/corpus); writes
DIR/fuzz_vm_tx/<name>, overwriting."""
import os
import struct
import sys

OP_FRAME, OP_HEAD, OP_POKE, OP_DRAIN = 0, 1, 2, 3
CFG_EVENT_IDX, CFG_MRG, CFG_V1, CFG_TUN_VNET = 1, 2, 4, 8
F_NEEDS_CSUM, F_DATA_VALID = 1, 2
GSO_NONE, GSO_TCPV4, GSO_UDP, GSO_TCPV6, GSO_UDP_L4 = 0, 1, 3, 4, 5

VM_MAC = bytes([0x02, 0x66, 0, 0, 0, 0x01])
ROUTER_MAC = bytes([0x02, 0x77, 0x65, 0x66, 0x74, 0x01])
VM4 = bytes([10, 0, 0, 2])
VM6 = bytes([0xFD, 0] + [0] * 13 + [2])


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def v6(text):
    import ipaddress
    return ipaddress.IPv6Address(text).packed


def v4(text):
    return bytes(int(x) for x in text.split("."))


def ipv4(src, dst, proto, l4, ttl=64):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 0x1234, 0x4000, ttl, proto, 0, src, dst)
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + l4


def ipv6(src, dst, nh, l4, hlim=64):
    return struct.pack("!IHBB16s16s", 6 << 28, len(l4), nh, hlim, src, dst) + l4


def l4sum(src, dst, proto, l4):
    if len(src) == 4:
        pseudo = src + dst + struct.pack("!BBH", 0, proto, len(l4))
    else:
        pseudo = src + dst + struct.pack("!IxxxB", len(l4), proto)
    return csum(pseudo + l4)


def udp(src, dst, payload, sport=4000, dport=5000, fill=True):
    u = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    if fill:
        u = u[:6] + struct.pack("!H", l4sum(src, dst, 17, u) or 0xFFFF) + u[8:]
    return u


def tcp(src, dst, payload, flags=0x18, seq=1000, fill=True):
    t = struct.pack("!HHIIBBHHH", 4000, 80, seq, 1, 5 << 4, flags, 65535, 0, 0) + payload
    if fill:
        t = t[:16] + struct.pack("!H", l4sum(src, dst, 6, t)) + t[18:]
    return t


def eth(payload, etype, src=VM_MAC, dst=ROUTER_MAC):
    return dst + src + struct.pack("!H", etype) + payload


def vnet(flags=0, gso=0, hdr_len=0, gso_size=0, cstart=0, coff=0, v1=True):
    return struct.pack("<BBHHHH", flags, gso, hdr_len, gso_size, cstart, coff) + (
        b"\x01\x00" if v1 else b"")


def frame_op(data, nd=1, cuts=()):
    cuts = list(cuts) + [64, 128, 192][len(cuts):nd - 1]
    return bytes([OP_FRAME]) + struct.pack("<H", len(data)) + data + bytes([nd - 1] + cuts[:nd - 1])


def head(conf=CFG_V1 | CFG_EVENT_IDX, lg=8, start=0, fill=b""):
    return bytes([conf, lg]) + struct.pack("<HHHHH", start, 0x0000, 0x1000, 0x2000, len(fill)) + fill


def plain4(dst, proto="udp", src=VM4, payload=b"hello weft", hdr=None):
    l4 = udp(src, dst, payload) if proto == "udp" else tcp(src, dst, payload)
    return (hdr or vnet()) + eth(ipv4(src, dst, 17 if proto == "udp" else 6, l4), 0x0800)


def plain6(dst, proto="udp", src=VM6, payload=b"hello weft", hdr=None):
    l4 = udp(src, dst, payload) if proto == "udp" else tcp(src, dst, payload)
    return (hdr or vnet()) + eth(ipv6(src, dst, 17 if proto == "udp" else 6, l4), 0x86DD)


def arp_request(target=v4("169.254.1.1")):
    a = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, VM_MAC, VM4, bytes(6), target)
    return vnet() + eth(a, 0x0806, dst=b"\xff" * 6)


def ns(target=v6("fe80::1")):
    src = v6("fe80::66:ff:fe00:1")
    dst = v6("ff02::1:ff00:1")
    body = struct.pack("!BBHI16s", 135, 0, 0, 0, target) + bytes([1, 1]) + VM_MAC
    pseudo = src + dst + struct.pack("!IxxxB", len(body), 58)
    body = body[:2] + struct.pack("!H", csum(pseudo + body)) + body[4:]
    return vnet() + eth(ipv6(src, dst, 58, body, hlim=255), 0x86DD,
                        dst=bytes([0x33, 0x33, 0xFF, 0, 0, 1]))


def tso4(dst, size=3000, gso=1000, hdr_len=None):
    payload = bytes((i * 7) & 0xFF for i in range(size))
    t = tcp(VM4, dst, payload, fill=False)
    t = t[:16] + struct.pack("!H", ~l4sum(VM4, dst, 6, bytes(len(t))) & 0xFFFF) + t[18:]
    hl = 14 + 20 + 20 if hdr_len is None else hdr_len
    return vnet(F_NEEDS_CSUM, GSO_TCPV4, hl, gso, 14 + 20, 16) + eth(ipv4(VM4, dst, 6, t), 0x0800)


def tso6(dst, size=3000, gso=1200):
    payload = bytes((i * 5) & 0xFF for i in range(size))
    t = tcp(VM6, dst, payload, fill=False)
    return vnet(F_NEEDS_CSUM, GSO_TCPV6, 14 + 40 + 20, gso, 14 + 40, 16) + eth(
        ipv6(VM6, dst, 6, t), 0x86DD)


def uso4(dst, size=2500, gso=1000):
    u = udp(VM4, dst, bytes(size), fill=False)
    return vnet(F_NEEDS_CSUM, GSO_UDP_L4, 14 + 20 + 8, gso, 14 + 20, 6) + eth(
        ipv4(VM4, dst, 17, u), 0x0800)


def csum4(dst):
    u = udp(VM4, dst, b"checksum by the host", fill=False)
    return vnet(F_NEEDS_CSUM, GSO_NONE, 0, 0, 14 + 20, 6) + eth(ipv4(VM4, dst, 17, u), 0x0800)


D = bytes([OP_DRAIN])
PEER4, REMOTE4, PORTC4, MESH4, PORTB4 = (v4(a) for a in ("10.9.1.1", "10.9.5.3", "10.9.5.7",
                                                          "10.8.1.1", "10.0.0.3"))
SEEDS = {
    "arp_request": head() + frame_op(arp_request()) + D,
    "neighbour_solicitation": head() + frame_op(ns()) + D,
    "udp4_every_hop": head() + b"".join(frame_op(plain4(d)) for d in (
        PEER4, REMOTE4, PORTC4, MESH4, PORTB4, v4("8.8.8.8"), v4("200.1.1.1"))) + D,
    "tcp4_every_hop": head() + b"".join(frame_op(plain4(d, "tcp")) for d in (
        PEER4, REMOTE4, PORTC4, MESH4, PORTB4, v4("8.8.8.8"))) + D,
    "udp6_every_hop": head() + b"".join(frame_op(plain6(v6(d))) for d in (
        "fd09::1", "fd09:0:5::3", "fd09:0:5::7", "fd00::5", "fd08::1", "2001:db8::1",
        "fc00::1")) + D,
    "tcp6_from_prefix": head() + frame_op(plain6(v6("fd09::1"), "tcp", src=v6("fd00:1::9"))) + D,
    "spoofed_sources": head() + frame_op(plain4(PEER4, src=v4("10.5.5.5")))
    + frame_op(plain6(v6("fd09::1"), src=v6("fd01::2"))) + D,
    "foreign_mac": head() + frame_op(vnet() + eth(ipv4(VM4, PEER4, 17, udp(VM4, PEER4, b"x")), 0x0800,
                                                  src=bytes([2, 0, 0, 0, 0, 9]))) + D,
    "ttl_one": head() + frame_op(vnet() + eth(ipv4(VM4, PEER4, 17, udp(VM4, PEER4, b"x"), ttl=1),
                                              0x0800)) + D,
    "csum_offloaded": head() + frame_op(csum4(PEER4)) + frame_op(csum4(PORTB4)) + D,
    "data_valid": head() + frame_op(plain4(PEER4, hdr=vnet(F_DATA_VALID))) + D,
    "tso4_to_peer": head() + frame_op(tso4(PEER4), nd=2, cuts=(12,)) + D,
    "tso4_to_port": head() + frame_op(tso4(PORTB4)) + D,
    "tso4_to_host_tun_vnet": head(CFG_V1 | CFG_TUN_VNET) + frame_op(tso4(v4("8.8.8.8"))) + D,
    "tso4_to_host_split": head(CFG_V1) + frame_op(tso4(v4("8.8.8.8"))) + D,
    "tso4_to_mesh_remote": head() + frame_op(tso4(MESH4, 5000, 536)) + frame_op(tso4(REMOTE4)) + D,
    "tso6_to_peer": head() + frame_op(tso6(v6("fd09::1")), nd=3, cuts=(12, 40)) + D,
    "uso4_to_peer": head() + frame_op(uso4(PEER4)) + D,
    "tso4_hdr_len_lies": head() + frame_op(tso4(PEER4, hdr_len=2000)) + frame_op(tso4(PEER4, hdr_len=20))
    + frame_op(tso4(PEER4, gso=0)) + frame_op(tso4(PEER4, gso=60000)) + D,
    "csum_start_lies": head() + frame_op(vnet(F_NEEDS_CSUM, 0, 0, 0, 4000, 6) + plain4(PEER4)[12:])
    + frame_op(vnet(F_NEEDS_CSUM, 0, 0, 0, 10, 6) + plain4(PEER4)[12:])
    + frame_op(vnet(F_NEEDS_CSUM, 0, 0, 0, 34, 2000) + plain4(PEER4)[12:]) + D,
    "legacy_header": head(CFG_EVENT_IDX) + frame_op(plain4(PEER4, hdr=vnet(v1=False))) + D,
    "mrg_header": head(CFG_MRG) + frame_op(plain4(PEER4)) + D,
    "short_frames": head() + frame_op(b"\x00" * 5) + frame_op(vnet()) + frame_op(vnet() + b"\x00" * 20)
    + D,
    "broken_ring_head": head() + frame_op(plain4(PEER4)) + bytes([OP_HEAD]) + struct.pack("<H", 999) + D,
    "broken_ring_loop": head(fill=struct.pack("<QIHH", 0x10000, 64, 1, 0)) + bytes([OP_HEAD, 0, 0]) + D,
    "ring_at_odd_start": head(start=0xFFFE) + frame_op(plain4(PEER4)) + D,
}


def main():
    out = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "fuzz/corpus", "fuzz_vm_tx")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
