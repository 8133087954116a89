#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_vhost_sock (input format at the top of
fuzz/fuzz_vhost_sock.c): a QEMU-like session over the socket (negotiation,
a memory table, a TX and an RX ring live, a frame each way), then the table
moved, shrunk, grown and overlapping under the live rings; the same session
with every message cut into chunks and its fds on the last chunk; truncated
control data; fds of the wrong kind and count; a message cut off by EOF.

Usage: fuzz/gen_vhost_sock_corpus.py [DIR]   (default fuzz/corpus); writes
DIR/fuzz_vhost_sock/<name>, overwriting."""
import os
import struct
import sys

GET_FEATURES, SET_FEATURES, SET_OWNER, RESET_OWNER, SET_MEM_TABLE = 1, 2, 3, 4, 5
GET_VRING_BASE = 11
GET_PROTOCOL_FEATURES, SET_PROTOCOL_FEATURES, GET_QUEUE_NUM = 15, 16, 17
NEED_REPLY = 0x8
FEATURES = ((1 << 32) | (1 << 15) | (1 << 29) | (1 << 0) | (1 << 1) | (1 << 11) | (1 << 12)
            | (1 << 7) | (1 << 8) | (1 << 22) | (1 << 30))
PROTOCOL = (1 << 0) | (1 << 3)

OP_RAW, OP_MEM, OP_RING, OP_POST, OP_RUN, OP_POKE, OP_SIMPLE, OP_RESET = range(8)
K_EVENTFD, K_DEVNULL, K_PIPE_R, K_PIPE_W, K_SOCKET = 3, 4, 5, 6, 7
PAGE = 4096


def spec(chunks=1, fds_last=False, ctrunc=False, cuts=()):
    b = (chunks - 1) | (4 if fds_last else 0) | (8 if ctrunc else 0)
    cuts = list(cuts) + [5, 40, 100][len(cuts):chunks - 1]
    return bytes([b] + cuts[:chunks - 1])


def simple(req, value=0, reply=False, sp=None):
    return (bytes([OP_SIMPLE | (NEED_REPLY if reply else 0), req]) + struct.pack("<Q", value)
            + (sp or spec()))


def mem(regions, reply=False, variant=0, kind=None, sp=None, nregions=None):
    """regions: (memfd, gpa page, pages, uva page, offset pages)"""
    out = bytes([OP_MEM | (NEED_REPLY if reply else 0) | variant << 4,
                 len(regions) if nregions is None else nregions])
    for k, gpa, pages, uva, off in regions:
        out += struct.pack("<BHBHB", k, gpa, pages, uva, off)
    if variant == 3:
        out += bytes([kind])
    return out + (sp or spec())


def ring(idx, log2num, desc, avail, used, base=0, call=True, enable=True, nofd=False,
         pipe=False, sp=None):
    op = OP_RING | (8 if nofd else 0) | (16 if pipe else 0) | (32 if call else 0) | (
        64 if enable else 0)
    out = bytes([op, idx, log2num]) + struct.pack("<IIIH", desc, avail, used, base)
    n = 2 + (1 if call else 0) + (1 if enable else 0)
    return out + (sp or spec()) * n


def post(r, head, descs):
    out = bytes([OP_POST | (len(descs) - 1) << 3, r]) + struct.pack("<H", head)
    for gpa, ln, write in descs:
        out += struct.pack("<IHB", gpa, ln, 1 if write else 0)
    return out


def run(r, len8=8):
    return bytes([OP_RUN, r, len8])


def poke(k, off, data):
    return bytes([OP_POKE, k]) + struct.pack("<HB", off, len(data)) + data


def raw(req, flags, size, payload, kinds=(), sp=None):
    return (bytes([OP_RAW]) + struct.pack("<III", req, flags, size) + payload
            + bytes([len(kinds)]) + bytes(kinds) + (sp or spec()))


# A UDP/IPv4 frame behind a 12-byte virtio-net header.
FRAME = (bytes(12) + bytes.fromhex("0277656674010266000000010800")
         + bytes.fromhex("450000200000400040110000") + bytes([10, 0, 0, 2, 10, 0, 0, 9])
         + struct.pack(">HHHH", 1234, 5678, 12, 0) + b"abcd")

# memfd 0: 16 pages at gpa 0, uva page 0x100; rings in its first pages,
# buffers at 0x8000 (TX) and 0x9000 (RX).
UVA = 0x100 * PAGE
TABLE = [(0, 0, 16, 0x100, 0)]
RINGS = (ring(1, 8, UVA + 0x0000, UVA + 0x1000, UVA + 0x2000)
         + ring(0, 8, UVA + 0x3000, UVA + 0x4000, UVA + 0x5000))
TRAFFIC = (poke(0, 0x8000, FRAME) + post(1, 0, [(0x8000, 12, False), (0x800C, len(FRAME) - 12, False)])
           + run(1) + post(0, 0, [(0x9000, 2048, True)]) + run(0, 8))


def negotiate(sp=None):
    return (simple(GET_FEATURES, sp=sp) + simple(SET_FEATURES, FEATURES, sp=sp)
            + simple(GET_PROTOCOL_FEATURES, sp=sp) + simple(SET_PROTOCOL_FEATURES, PROTOCOL, sp=sp)
            + simple(SET_OWNER, sp=sp) + simple(GET_QUEUE_NUM, sp=sp))


HEAD = bytes([0, 0x0F, 0x0F, 0x0F])
SEEDS = {
    "session": HEAD + negotiate() + mem(TABLE, reply=True) + RINGS + TRAFFIC,
    "session_chunked": HEAD + negotiate(spec(3, cuts=(3, 9)))
    + mem(TABLE, sp=spec(4, fds_last=True, cuts=(2, 11, 30))) + RINGS + TRAFFIC,
    "table_moved_under_live_rings": HEAD + negotiate() + mem(TABLE) + RINGS + TRAFFIC
    + mem([(1, 0, 16, 0x200, 0)]) + run(1) + run(0)
    + ring(1, 8, 0x200 * PAGE, 0x200 * PAGE + 0x1000, 0x200 * PAGE + 0x2000, call=False)
    + poke(1, 0x8000, FRAME) + post(1, 1, [(0x8000, len(FRAME), False)]) + run(1),
    "table_shrunk_under_live_rings": HEAD + negotiate() + mem(TABLE) + RINGS + TRAFFIC
    + mem([(0, 0, 2, 0x100, 0)]) + run(1) + run(0) + post(1, 2, [(0x8000, 64, False)]) + run(1),
    "table_grown_two_regions": HEAD + negotiate() + mem(TABLE) + RINGS + TRAFFIC
    + mem([(0, 0, 16, 0x100, 0), (2, 0x10, 15, 0x300, 1)]) + post(1, 1, [(0x10000, 64, False)])
    + run(1) + post(0, 1, [(0x10800, 2048, True)]) + run(0, 100),
    "table_overlapping_refused": HEAD + negotiate() + mem(TABLE) + RINGS
    + mem([(0, 0, 8, 0x100, 0), (1, 4, 8, 0x400, 0)], reply=True)
    + mem([(0, 0, 8, 0x100, 0), (1, 0x10, 8, 0x104, 0)]) + TRAFFIC,
    "table_offset_region": HEAD + negotiate() + mem([(0, 0, 12, 0x100, 4)]) + RINGS + TRAFFIC,
    "ctrunc_fds": HEAD + negotiate() + mem(TABLE, sp=spec(ctrunc=True)) + RINGS,
    "fds_wrong_kinds": HEAD + negotiate() + mem(TABLE, reply=True, variant=3, kind=1)
    + mem(TABLE, reply=True, variant=3, kind=0) + mem(TABLE, reply=True, variant=1)
    + mem(TABLE, reply=True, variant=2) + mem(TABLE) + ring(1, 8, UVA, UVA + 0x1000, UVA + 0x2000, pipe=True)
    + raw(12, 1 | NEED_REPLY, 8, struct.pack("<Q", 1), [K_SOCKET])
    + raw(13, 1 | NEED_REPLY, 8, struct.pack("<Q", 1), [K_PIPE_W, K_DEVNULL])
    + raw(14, 1 | NEED_REPLY, 8, struct.pack("<Q", 1 | 0x100), [K_EVENTFD]),
    "eof_inside_payload": HEAD + negotiate() + raw(SET_FEATURES, 1, 8, b"\x00\x00\x00"),
    "eof_inside_header": HEAD + negotiate() + bytes([OP_RAW]) + b"\x02\x00\x00\x00\x01" + bytes(7)
    + bytes([0]) + spec(),
    "bad_header_then_more": HEAD + raw(1, 0x5, 0, b"") + negotiate(),
    "oversized_header": HEAD + raw(SET_MEM_TABLE, 1, 0x1000, bytes(40)) + negotiate(),
    "get_vring_base_reset": HEAD + negotiate() + mem(TABLE) + RINGS + TRAFFIC
    + simple(GET_VRING_BASE, 1) + run(1) + simple(RESET_OWNER) + run(0) + bytes([OP_RESET])
    + negotiate(),
    "no_protocol_features_v1": bytes([0x3C, 0x1F, 0x03, 0x18]) + simple(SET_FEATURES, 0)
    + mem([(0, 0, 15, 0x100, 0), (1, 0x20, 3, 0x200, 0)]) + RINGS + TRAFFIC,
}


def main():
    out = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "fuzz/corpus", "fuzz_vhost_sock")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
