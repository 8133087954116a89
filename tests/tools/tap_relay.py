#!/usr/bin/env python3
"""tap_relay.py TAP IFNAME: a stand-in VMM for attached-port tests.

Creates the tap TAP (as Firecracker does, holding its fd) and relays raw
Ethernet frames between it and IFNAME, the host side of a veth whose peer
sits in the "VM's" namespace, through a packet socket. Runs until killed.
Only small frames (ping, ARP, NDP) are meant to pass: no virtio-net header,
no offloads."""
import fcntl
import os
import select
import socket
import struct
import sys

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23


def main():
    tap_name, veth = sys.argv[1], sys.argv[2]
    tap = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(tap, TUNSETIFF, struct.pack("16sH", tap_name.encode(), IFF_TAP | IFF_NO_PI))
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    sock.bind((veth, 0))
    print("ready", flush=True)
    while True:
        ready, _, _ = select.select([tap, sock], [], [])
        try:
            if tap in ready:
                sock.send(os.read(tap, 65536))
            if sock in ready:
                os.write(tap, sock.recv(65536))
        except OSError:
            pass  # a frame the other side refused (too big, link down): dropped


if __name__ == "__main__":
    main()
