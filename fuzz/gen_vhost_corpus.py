#!/usr/bin/env python3
"""Writes the seed corpora of fuzz_vhost_user and fuzz_virtq (their input
formats are described at the top of fuzz/fuzz_vhost_user.c and
fuzz/fuzz_virtq.c): a frontend session as QEMU runs it (negotiation, a
two-region memory table, two rings set up, a TX frame and an RX buffer
posted, GET_VRING_BASE, RESET_OWNER) and its variants, single broken
messages, and split rings with TX and RX chains.

Usage: fuzz/gen_vhost_corpus.py [DIR]   (default fuzz/corpus); writes
DIR/fuzz_vhost_user/<name> and DIR/fuzz_virtq/<name>, overwriting."""
import os
import struct
import sys

# vhost-user requests and flags (tun/vhost_user.h)
GET_FEATURES, SET_FEATURES, SET_OWNER, RESET_OWNER, SET_MEM_TABLE = 1, 2, 3, 4, 5
SET_LOG_BASE = 6
SET_VRING_NUM, SET_VRING_ADDR, SET_VRING_BASE, GET_VRING_BASE = 8, 9, 10, 11
SET_VRING_KICK, SET_VRING_CALL, SET_VRING_ERR = 12, 13, 14
GET_PROTOCOL_FEATURES, SET_PROTOCOL_FEATURES, GET_QUEUE_NUM, SET_VRING_ENABLE = 15, 16, 17, 18
VERSION, NEED_REPLY = 0x1, 0x8
NOFD = 0x100
FEATURES = ((1 << 32) | (1 << 15) | (1 << 29) | (1 << 0) | (1 << 1) | (1 << 11) | (1 << 12)
            | (1 << 7) | (1 << 8) | (1 << 22) | (1 << 30))
PROTOCOL = (1 << 0) | (1 << 3)
VRING_DESC_F_NEXT, VRING_DESC_F_WRITE = 1, 2

# fuzz_vhost_user record kinds
REC_MSG, REC_POKE, REC_RUN = 0, 1, 2

# The session's guest: region 0 is memfd 0 from offset 0 (gpa 0, 64 KiB);
# region 1 is memfd 1 from offset 0x1000 (gpa 0x10000, 60 KiB).
UVA0, UVA1 = 0x7F0000000000, 0x7F0000100000
GPA1, OFF1 = 0x10000, 0x1000
RINGS = {0: (0x0000, 0x1000, 0x2000), 1: (0x4000, 0x5000, 0x6000),  # region-0 offsets
         4: (0x8000, 0x9000, 0xA000), 5: (0xB000, 0xC000, 0xD000)}


def msg(req, payload=b"", flags=0, fds=0, ctl_extra=0, size=None):
    nf = 7 if fds == 8 else fds
    ctl = REC_MSG | nf << 2 | ctl_extra
    size = len(payload) if size is None else size
    return bytes([ctl]) + struct.pack("<III", req, VERSION | flags, size) + payload


def u64(v):
    return struct.pack("<Q", v)


def state(index, num):
    return struct.pack("<II", index, num)


def addr(index, desc, used, avail, flags=0):
    return struct.pack("<IIQQQQ", index, flags, desc, used, avail, 0)


def region(gpa, size, uva, off):
    return struct.pack("<QQQQ", gpa, size, uva, off)


def memtable(regions):
    return struct.pack("<II", len(regions), 0) + b"".join(regions)


def poke(reg, off, data):
    out = b""
    while data:
        part, data = data[:255], data[255:]
        out += bytes([REC_POKE, reg]) + struct.pack("<H", off) + bytes([len(part)]) + part
        off += len(part)
    return out


def run(ring, len8):
    return bytes([REC_RUN, ring, len8])


def desc(a, length, flags, nxt):
    return struct.pack("<QIHH", a, length, flags, nxt)


TWO_REGIONS = [region(0, 0x10000, UVA0, 0), region(GPA1, 0xF000, UVA1, OFF1)]


def ring_setup(i, flags=0, num=256):
    d, a, u = RINGS[i]
    return (msg(SET_VRING_NUM, state(i, num), flags)
            + msg(SET_VRING_ADDR, addr(i, UVA0 + d, UVA0 + u, UVA0 + a), flags)
            + msg(SET_VRING_BASE, state(i, 0), flags)
            + msg(SET_VRING_CALL, u64(i), flags, fds=1)
            + msg(SET_VRING_KICK, u64(i), flags, fds=1)
            + msg(SET_VRING_ENABLE, state(i, 1), flags))


def guest_posts():
    """A TX frame on ring 1 and an RX buffer on ring 0."""
    d1, a1, _ = RINGS[1]
    d0, a0, _ = RINGS[0]
    frame = bytes(12) + bytes(range(60))
    return (poke(1, OFF1 + 0x100, frame)
            + poke(0, d1, desc(GPA1 + 0x100, len(frame), 0, 0))
            + poke(0, a1, struct.pack("<HHH", 0, 1, 0))
            + poke(0, d0, desc(GPA1 + 0x1000, 2048, VRING_DESC_F_WRITE, 0))
            + poke(0, a0, struct.pack("<HHH", 0, 1, 0)))


def session(pairs=0, trim=0, flags=0, features=FEATURES, protocol=PROTOCOL, extra=b""):
    s = bytes([pairs, trim])
    s += msg(GET_FEATURES) + msg(SET_OWNER, flags=flags)
    s += msg(GET_PROTOCOL_FEATURES) + msg(SET_PROTOCOL_FEATURES, u64(protocol), flags)
    s += msg(GET_QUEUE_NUM) + msg(SET_FEATURES, u64(features), flags)
    s += msg(SET_MEM_TABLE, memtable(TWO_REGIONS), flags, fds=2)
    s += ring_setup(0, flags) + ring_setup(1, flags)
    s += guest_posts() + run(1, 10) + run(0, 20) + extra
    s += msg(GET_VRING_BASE, state(0, 0)) + msg(RESET_OWNER, flags=flags)
    return s


def vhost_user_seeds():
    legacy = FEATURES & ~((1 << 32) | (1 << 15) | (1 << 30))
    yield "session", session()
    yield "session_need_reply", session(flags=NEED_REPLY)
    yield "session_mq", session(pairs=3, extra=ring_setup(5) + ring_setup(4) + run(5, 1))
    yield "session_no_protocol", session(trim=4, features=FEATURES & ~(1 << 30), protocol=0)
    yield "session_legacy", session(trim=1 | 8, features=legacy)
    yield "session_no_event_idx", session(trim=2, features=FEATURES & ~(1 << 29))
    yield "session_remap", session(extra=msg(SET_MEM_TABLE, memtable(TWO_REGIONS[::-1]), fds=2)
                                   + msg(SET_MEM_TABLE, memtable(TWO_REGIONS[1:]), fds=1)
                                   + run(1, 1))
    yield "session_stop_start", session(extra=msg(GET_VRING_BASE, state(1, 0))
                                        + msg(SET_VRING_BASE, state(1, 1))
                                        + msg(SET_VRING_KICK, u64(1), fds=1) + run(1, 3)
                                        + msg(SET_VRING_KICK, u64(1 | NOFD)))
    bad = {
        "bad_oversized": msg(SET_MEM_TABLE, bytes(265), NEED_REPLY, fds=1),
        "bad_region_wraps": msg(SET_MEM_TABLE, memtable([region(2**64 - 0x1000, 0x10000, UVA0, 0)]),
                                NEED_REPLY, fds=1),
        "bad_offset_beyond": msg(SET_MEM_TABLE, memtable([region(0, 0x1000, UVA0, 0x20000)]),
                                 NEED_REPLY, fds=1),
        "bad_overlap": msg(SET_MEM_TABLE, memtable([region(0, 0x8000, UVA0, 0),
                                                    region(0x4000, 0x8000, UVA1, 0)]), fds=2),
        "bad_missing_fd": msg(SET_MEM_TABLE, memtable(TWO_REGIONS), NEED_REPLY, fds=1),
        "bad_many_fds": msg(SET_OWNER, fds=8),
        "bad_eventfd_region": msg(SET_MEM_TABLE, memtable(TWO_REGIONS[:1]), fds=1,
                                  ctl_extra=1 << 5),
        "bad_unknown": msg(SET_LOG_BASE, u64(0), NEED_REPLY, fds=1) + msg(99, b"xyz"),
        "bad_num": msg(SET_VRING_NUM, state(0, 100), NEED_REPLY) + msg(SET_VRING_NUM, state(9, 64)),
        "bad_kick_no_fd": msg(SET_VRING_KICK, u64(0), NEED_REPLY),
        "bad_version": bytes([REC_MSG]) + struct.pack("<III", GET_FEATURES, 2, 0),
    }
    for name, body in bad.items():
        yield name, bytes([0, 0]) + msg(SET_MEM_TABLE, memtable(TWO_REGIONS), fds=2) + body
    yield "bad_addr_outside", session(extra=msg(SET_VRING_ADDR, addr(0, UVA1 + 0xF000, UVA0, UVA0),
                                                NEED_REPLY))


# fuzz_virtq: rings at gpa 0 (desc), 0x1000 (avail), 0x1800 (used) of
# region A; region B starts at gpa 0x10000.
F_EVENT_IDX, F_MRG, F_V1 = 1, 2, 4
OP_POP_ANY, OP_POP_OUT, OP_POP_IN, OP_TX, OP_RX, OP_NOTIFY, OP_POKE, OP_PUBLISH = range(8)
AVAIL, USED, REGION_B = 0x1000, 0x1800, 0x10000


def ring_blob(descs, heads, avail_idx=None, used_event=0, flags=0, num=16):
    blob = bytearray(0x2000)
    for i, d in enumerate(descs):
        blob[16 * i:16 * i + 16] = desc(*d)
    idx = len(heads) if avail_idx is None else avail_idx
    struct.pack_into("<HH", blob, AVAIL, flags, idx)
    for i, h in enumerate(heads):
        struct.pack_into("<H", blob, AVAIL + 4 + 2 * i, h)
    struct.pack_into("<H", blob, AVAIL + 4 + 2 * num, used_event)
    return bytes(blob)


def virtq_input(cfg, lg, blob, ops, start=0):
    return bytes([cfg, lg]) + struct.pack("<HH", start, len(blob)) + blob + ops


def virtq_seeds():
    tx = [(0x4000, 12, VRING_DESC_F_NEXT, 1), (REGION_B + 0x100, 1500, 0, 0),
          (0x5000, 60, 0, 0)]
    yield "tx_two_frames", virtq_input(F_V1 | F_EVENT_IDX, 4, ring_blob(tx, [0, 2]),
                                       bytes([OP_TX, 0xff, 0xff, OP_NOTIFY, OP_TX, 0x10, 0,
                                              OP_TX, 0xff, 0xff, OP_NOTIFY]))
    rx = [(0x6000 + 0x800 * i, 0x800, VRING_DESC_F_WRITE, 0) for i in range(8)]
    yield "rx_mrg", virtq_input(F_V1 | F_MRG | F_EVENT_IDX, 4, ring_blob(rx, list(range(8))),
                                bytes([OP_RX, 0xdc, 0x05, 0, OP_NOTIFY, OP_RX, 0xa0, 0x0f, 1,
                                       OP_RX, 0xff, 0x0f, 0, OP_NOTIFY]))
    yield "rx_single", virtq_input(0, 4, ring_blob(rx, list(range(8))),
                                   bytes([OP_RX, 0x00, 0x04, 0, OP_RX, 0x00, 0x09, 0,
                                          OP_NOTIFY]))
    chain = [(0x4000, 100, VRING_DESC_F_NEXT, 1), (0x4100, 100, VRING_DESC_F_NEXT, 2),
             (REGION_B, 200, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 3),
             (REGION_B + 0x1000, 50, VRING_DESC_F_WRITE, 0)]
    yield "pop_chain", virtq_input(F_EVENT_IDX, 3, ring_blob(chain, [0], num=8),
                                   bytes([OP_POP_ANY, 250, OP_NOTIFY, OP_PUBLISH, 0,
                                          OP_POP_ANY, 1, OP_NOTIFY]))
    loop = [(0x4000, 8, VRING_DESC_F_NEXT, 1), (0x4000, 8, VRING_DESC_F_NEXT, 0)]
    yield "loop", virtq_input(0, 2, ring_blob(loop, [0], num=4), bytes([OP_POP_ANY, 0]))
    span = [(REGION_B - 8, 16, 0, 0)]
    yield "span", virtq_input(0, 2, ring_blob(span, [0], num=4), bytes([OP_POP_OUT, 0]))
    yield "wrap", virtq_input(F_EVENT_IDX, 1, ring_blob([(0x4000, 1, 0, 0)], [0, 0], avail_idx=0xFFFF, num=2),
                              bytes([OP_POP_OUT, 0, OP_POP_OUT, 0, OP_NOTIFY, OP_PUBLISH, 0,
                                     OP_POP_OUT, 0, OP_NOTIFY]), start=0xFFFD)
    yield "poke_publish", virtq_input(F_V1, 4, ring_blob(tx, []),
                                      bytes([OP_PUBLISH, 0, OP_TX, 0xff, 0xff,
                                             OP_POKE, 0x10, 0x00, 2, 0x00, 0x70,
                                             OP_PUBLISH, 1, OP_TX, 0xff, 0xff, OP_NOTIFY]))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")
    for target, seeds in (("fuzz_vhost_user", vhost_user_seeds()), ("fuzz_virtq", virtq_seeds())):
        d = os.path.join(root, target)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds:
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
