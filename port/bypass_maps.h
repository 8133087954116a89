/* What the same-host bypass program (port/bypass.bpf.c) and weftd
 * (port/bypass.c) share: the layout of its maps. Included by both the BPF
 * object (clang -target bpf) and the daemon, so kernel types only. */
#ifndef WEFT_PORT_BYPASS_MAPS_H
#define WEFT_PORT_BYPASS_MAPS_H

#include <linux/types.h>

enum {
	BYPASS_MAX_PORTS = 256,      /* = PORT_MAX: a port's slot indexes stats */
	BYPASS_MAX_ROUTES = 4096,    /* registered addresses, per family */
};

/* LPM trie keys: prefix length in bits, then the address (network order). */
struct bypass_key4 {
	__u32 prefixlen;
	__u8 addr[4];
};
struct bypass_key6 {
	__u32 prefixlen;
	__u8 addr[16];
};

/* Where a registered address lives: the attached port's netdev, the MACs
 * of a frame sent to it (router -> VM), and its slot (stats, anti-spoofing). */
struct bypass_dest {
	__u32 ifindex;
	__u8 vm_mac[6];
	__u8 router_mac[6];
	__u8 is_veth;                /* bpf_redirect_peer, else bpf_redirect */
	__u8 pad;
	__u16 slot;
};

/* The netdev a frame came in on, by ifindex: its port's slot and the
 * router MAC its VM sends routed frames to (the netdev's own). */
struct bypass_port {
	__u32 slot;
	__u8 router_mac[6];
	__u16 pad;
};

/* Per-CPU, per slot: frames this port's VM sent that the program
 * redirected, and frames it dropped for a source not registered here. */
struct bypass_stats {
	__u64 packets;
	__u64 bytes;
	__u64 spoofed;
};

_Static_assert(sizeof(struct bypass_key4) == 8, "bypass_key4");
_Static_assert(sizeof(struct bypass_key6) == 20, "bypass_key6");
_Static_assert(sizeof(struct bypass_dest) == 20, "bypass_dest");
_Static_assert(sizeof(struct bypass_port) == 12, "bypass_port");
_Static_assert(sizeof(struct bypass_stats) == 24, "bypass_stats");

#endif
