#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_table (its input format is described at
the top of fuzz/fuzz_table.c): thousands of host routes whose keys collide
in the host-route hash (IPv4 addresses that differ only above their low 20
bits; IPv6 ones that differ only in the top of the interface ID or of the
first word), replaced, removed one by one and by value, among prefixes of
every length; runs of prefixes that grow the slot array; refusals.

Usage: fuzz/gen_table_corpus.py [DIR]   (default fuzz/corpus); writes
DIR/fuzz_table/<name>, overwriting."""
import ipaddress
import os
import sys

V6 = 0x10
BAD = 0xE0
BASE, INSERT, REMOVE, REMOVE_VALUE, LOOKUP, BATCH, WALK, RUN, COUNT, SWEEP = range(10)
RUN_REMOVE, RUN_ANY, RUN_XOR, RUN_CIDR, RUN_TIMES16 = 1, 2, 4, 8, 0x30


def base(addr):
    a = ipaddress.ip_address(addr)
    return bytes([BASE | (V6 if a.version == 6 else 0)]) + a.packed


def insert(cidr, value, pos=0, mask=0, fam=0):
    return bytes([INSERT | fam, cidr, pos, mask, value])


def remove(cidr, value, pos=0, mask=0, fam=0):
    return bytes([REMOVE | fam, cidr, pos, mask, value])


def lookup(pos=0, mask=0, fam=0):
    return bytes([LOOKUP | fam, pos, mask])


def batch(n, shift, mode=0, fam=0):
    return bytes([BATCH | fam, n, shift, mode])


def run(n, shift, value, mode=0, fam=0, cidr=None):
    if cidr is not None:
        mode |= RUN_CIDR
    if n > 255:
        assert n % 16 == 0 and n <= 4080
        n //= 16
        mode |= RUN_TIMES16
    out = bytes([RUN | fam, n, shift, value, mode])
    return out + (bytes([cidr]) if cidr is not None else b"")


def walk(value):
    return bytes([WALK, value])


def remove_value(value):
    return bytes([REMOVE_VALUE, value])


COUNT_OP, SWEEP_OP = bytes([COUNT]), bytes([SWEEP])

SEEDS = {
    # 4080 IPv4 hosts sharing their low 20 bits: one probe chain.
    "v4_collide_4080": base("10.0.0.1") + run(4080, 20, 1) + batch(96, 20)
    + batch(96, 0, 1) + walk(1) + SWEEP_OP + run(2032, 21, 1, RUN_REMOVE)
    + batch(96, 20) + walk(1) + remove_value(1) + COUNT_OP,
    # Replaced in part by another value, removed by the wrong one, then any.
    "v4_collide_replace": base("192.168.7.9") + run(2000, 12, 1, RUN_XOR)
    + run(1008, 13, 2, RUN_XOR) + run(2000, 12, 1, RUN_REMOVE | RUN_XOR)
    + walk(2) + batch(64, 12) + run(2000, 12, 0, RUN_REMOVE | RUN_ANY | RUN_XOR)
    + COUNT_OP + SWEEP_OP,
    # Hosts in a /64 differing in the top of the interface ID only.
    "v6_collide_iid": base("fd00::1") + run(2992, 44, 3, fam=V6) + batch(96, 44, fam=V6)
    + walk(3) + run(1504, 45, 3, RUN_REMOVE, fam=V6) + batch(96, 44, fam=V6)
    + SWEEP_OP + remove_value(3),
    # Hosts differing in the top of the first word only.
    "v6_collide_word0": base("2001:db8::42") + run(2048, 108, 4, fam=V6)
    + run(2048, 44, 5, fam=V6) + batch(96, 108, fam=V6) + batch(96, 0, 1, fam=V6)
    + walk(4) + walk(5) + remove_value(4) + SWEEP_OP,
    # Both families at once, hosts over covering prefixes.
    "mixed_cover": base("10.1.2.3") + insert(0, 1) + insert(8, 2) + insert(16, 3)
    + insert(24, 4) + insert(31, 5) + run(2000, 20, 6) + base("fd00::7")
    + insert(0, 1, fam=V6) + insert(3, 2, fam=V6) + insert(48, 3, fam=V6)
    + insert(64, 4, fam=V6) + insert(127, 5, fam=V6) + run(2000, 44, 6, fam=V6)
    + lookup() + lookup(3, 1) + lookup(0, 0x80) + lookup(fam=V6) + lookup(15, 1, V6)
    + lookup(0, 0xff, V6) + batch(96, 20) + batch(96, 44, fam=V6) + walk(6) + walk(1)
    + remove(24, 4) + remove(8, 0) + remove(64, 9, fam=V6) + lookup() + lookup(fam=V6)
    + SWEEP_OP + remove_value(6) + SWEEP_OP + COUNT_OP,
    # Runs of prefixes: the slot array grows to 12 then 16 bits.
    "v4_prefix_runs": base("10.0.0.0") + run(4080, 0, 1, cidr=24) + run(2000, 0, 2, cidr=20)
    + run(240, 0, 3, cidr=12) + run(4080, 20, 4) + batch(96, 8) + batch(96, 0, 1)
    + walk(3) + run(4080, 0, 1, RUN_REMOVE, cidr=24) + batch(96, 12) + SWEEP_OP
    + remove_value(2) + remove_value(4) + walk(3),
    "v6_prefix_runs": base("2001:db8::") + run(4080, 0, 1, fam=V6, cidr=64)
    + run(1024, 0, 2, fam=V6, cidr=48) + run(16, 0, 3, fam=V6, cidr=4)
    + run(4080, 44, 4, fam=V6) + batch(96, 64, fam=V6) + batch(96, 0, 1, fam=V6)
    + walk(1) + walk(3) + run(4080, 0, 1, RUN_REMOVE | RUN_ANY, fam=V6, cidr=64)
    + SWEEP_OP + remove_value(3) + batch(96, 80, fam=V6),
    # Refusals: a bad family, cidr beyond the family, a NULL value.
    "refusals": bytes([INSERT | BAD, 24, 0, 0, 1, REMOVE | BAD, 24, 0, 0, 1,
                       LOOKUP | BAD, 0, 0, BATCH | BAD, 40, 0, 0])
    + insert(33, 1) + insert(129, 1, fam=V6) + insert(24, 0) + remove(33, 0)
    + remove(24, 1) + run(100, 20, 0) + walk(0) + remove_value(0) + COUNT_OP,
    # Short chains (240 colliding host routes per family): cheap enough that
    # the fuzzer spends its time around them.
    "v4_collide_240": base("10.9.0.1") + run(240, 20, 1) + run(120, 21, 2)
    + batch(96, 20) + walk(1) + run(240, 20, 0, RUN_REMOVE | RUN_ANY | RUN_XOR)
    + run(240, 20, 2, RUN_REMOVE) + batch(40, 20) + COUNT_OP,
    "v6_collide_240": base("fd00::9") + run(240, 44, 1, fam=V6) + run(240, 108, 2, fam=V6)
    + batch(96, 44, fam=V6) + batch(96, 108, fam=V6) + walk(2)
    + run(120, 45, 1, RUN_REMOVE, fam=V6) + remove_value(2) + SWEEP_OP,
    # Small: one of each, the fuzzer's starting point for short sequences.
    "small": base("172.16.0.1") + insert(12, 1) + insert(32, 2) + insert(32, 3)
    + lookup() + remove(32, 2) + remove(32, 3) + lookup() + walk(1) + base("::1")
    + insert(128, 1, fam=V6) + insert(0, 2, fam=V6) + lookup(fam=V6) + walk(1)
    + walk(2) + remove_value(1) + COUNT_OP,
}


def main():
    out = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "fuzz/corpus", "fuzz_table")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
