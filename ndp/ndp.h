/* The NDP and ARP responder of a VM port: given an Ethernet frame that the
 * VM sent and the port's configuration, decide whether the frame is
 * neighbour discovery or ARP, validate it, and build the reply weft sends
 * back as the VM's first-hop router. Pure: no I/O, no clock, no allocation;
 * the caller owns the configuration, the small mutable state and the reply
 * buffer. docs/ndp.md says what is answered and why. */
#ifndef WEFT_NDP_NDP_H
#define WEFT_NDP_NDP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ndp/wire.h"

enum {
	NDP_MAX_ADDRS = 8,    /* registered addresses per family and port */
	NDP_MAX_PREFIXES = 4, /* Prefix Information options per RA */
	NDP_MIN_MTU = 1280,   /* RFC 8200 §5 */
	NDP_RA_INTERVAL_DEFAULT_MS = 1000,
	NDP_ROUTER_LIFETIME_DEFAULT_S = 1800, /* RFC 4861 §6.2.1: 3 x MaxRtrAdvInterval */
	NDP_HOP_LIMIT_DEFAULT = 64,
	/* The largest reply: an RA with every option. */
	NDP_REPLY_MAX = NDP_ETH_HLEN + NDP_IP6_HLEN + sizeof(struct ndp_ra) +
			sizeof(struct ndp_opt_lladdr) + sizeof(struct ndp_opt_mtu) +
			NDP_MAX_PREFIXES * sizeof(struct ndp_opt_prefix),
};

#define NDP_LIFETIME_INFINITE 0xffffffffu

/* One Prefix Information option (RFC 4861 §4.6.2). */
struct ndp_prefix {
	uint8_t prefix[NDP_IP6_ADDR_LEN]; /* bits past len must be zero */
	uint8_t len;
	bool on_link;    /* L */
	bool autonomous; /* A: SLAAC (RFC 4862), needs len 64 on Ethernet */
	uint32_t valid_lifetime_s;
	uint32_t preferred_lifetime_s; /* <= valid */
};

/* A port's configuration. Written by the control thread before the port
 * starts and replaced whole (never edited in place) while workers read it.
 * Start from ndp_port_config_init, which sets the defaults. */
struct ndp_port_config {
	uint8_t router_mac[NDP_ETH_ALEN];
	/* The router's fe80:: address; all zero: derived from router_mac by
	 * modified EUI-64 (RFC 4291 appendix A), see ndp_router_link_local. */
	uint8_t router_ll[NDP_IP6_ADDR_LEN];
	bool has_gateway4; /* false: no IPv4 on this port, ARP is not answered */
	uint8_t gateway4[NDP_IP4_ADDR_LEN];
	uint8_t vm_mac[NDP_ETH_ALEN];
	/* The VM's registered addresses: never answered for (they are the
	 * VM's own); every other address is off-port and the router's. */
	uint8_t vm_ip6[NDP_MAX_ADDRS][NDP_IP6_ADDR_LEN];
	size_t n_vm_ip6;
	uint8_t vm_ip4[NDP_MAX_ADDRS][NDP_IP4_ADDR_LEN];
	size_t n_vm_ip4;
	uint32_t mtu; /* the RA's MTU option; 0: none */
	struct ndp_prefix prefixes[NDP_MAX_PREFIXES];
	size_t n_prefixes;
	uint16_t router_lifetime_s; /* 0: not a default router */
	uint8_t hop_limit;          /* the RA's Cur Hop Limit; 0: unspecified */
	uint32_t ra_interval_ms;    /* at most one solicited RA per interval; 0: default */
};

/* Everything a port may drop for, each with its own counter (ndp_stats).
 * X(NAME, "name") */
#define NDP_DROP_REASONS(X)                                                              \
	X(RUNT, "runt")                     /* shorter than an Ethernet header */       \
	X(FOREIGN_MAC, "foreign_mac")       /* Ethernet source is not the VM's MAC */   \
	X(EXT_HEADERS, "ext_headers")       /* ND behind IPv6 extension headers */      \
	X(LENGTH, "length")                 /* IPv6 payload length != frame */          \
	X(HOP_LIMIT, "hop_limit")           /* not 255: from off-link */                \
	X(CHECKSUM, "checksum")                                                         \
	X(CODE, "code")                     /* ICMPv6 code not 0 */                     \
	X(SHORT, "short")                   /* shorter than the message's fixed part */ \
	X(BAD_SOURCE, "bad_source")         /* multicast IPv6 source */                 \
	X(OPT_ZERO_LEN, "opt_zero_len")     /* an option of length 0 */                 \
	X(OPT_TRUNCATED, "opt_truncated")   /* an option runs past the message */       \
	X(BAD_LLADDR, "bad_lladdr")         /* link-layer option not 8 bytes */         \
	X(UNSPEC_SLLA, "unspec_slla")       /* source link-layer option from :: */      \
	X(UNSPEC_DST, "unspec_dst")         /* NS from :: not to solicited-node */      \
	X(BAD_TARGET, "bad_target")         /* multicast, :: or ::1 target */           \
	X(NA_SOLICITED_MCAST, "na_solicited_mcast") /* S=1 to multicast */              \
	X(UNEXPECTED, "unexpected")         /* RA or Redirect from a VM */              \
	X(ARP_TRUNCATED, "arp_truncated")                                               \
	X(ARP_FORMAT, "arp_format")         /* not Ethernet/IPv4 with lengths 6/4 */    \
	X(ARP_OP, "arp_op")                 /* neither request nor reply */             \
	X(ARP_SENDER_MAC, "arp_sender_mac") /* sender MAC != Ethernet source */         \
	X(ARP_TARGET, "arp_target")         /* 0/8, 127/8, multicast, class E */        \
	X(NO_ROOM, "no_room")               /* the caller's reply buffer is too small */

enum ndp_verdict {
	NDP_NOT_NDP,  /* neither ND nor ARP: the router's */
	NDP_REPLY,    /* a reply frame was built */
	NDP_CONSUMED, /* valid, needs no answer */
#define NDP_VERDICT_DROP_ENUM(name, str) NDP_DROP_##name,
	NDP_DROP_REASONS(NDP_VERDICT_DROP_ENUM)
#undef NDP_VERDICT_DROP_ENUM
	NDP_VERDICT_COUNT,
};

static inline bool ndp_verdict_is_drop(enum ndp_verdict v)
{
	return v > NDP_CONSUMED && v < NDP_VERDICT_COUNT;
}

/* "not_ndp", "reply", "consumed", or the drop reason's name. */
const char *ndp_verdict_name(enum ndp_verdict v);

/* What the port saw and did, beyond the verdicts. */
#define NDP_EVENTS(X)                                                      \
	X(rx_rs)                                                           \
	X(rx_ns)                                                           \
	X(rx_na)                                                           \
	X(rx_arp_request)                                                  \
	X(rx_arp_reply)                                                    \
	X(tx_ra)                                                           \
	X(tx_na_router)      /* for the router's own link-local address */ \
	X(tx_na_proxy)       /* for an off-port address */                 \
	X(tx_na_defend)      /* DAD probe for the router's address */      \
	X(tx_arp_reply)                                                    \
	X(rs_ratelimited)                                                  \
	X(ns_dad)            /* a DAD probe, left unanswered */            \
	X(ns_own)            /* NS for the VM's own address */             \
	X(ns_link_local)     /* NS for a link-local that is not the router */ \
	X(na_router_addr)    /* the VM advertised the router's address */  \
	X(arp_probe)         /* RFC 5227 probe (sender 0.0.0.0) */         \
	X(arp_gratuitous)    /* announcement: sender == target */          \
	X(arp_own)           /* request for the VM's own address */        \
	X(arp_no_ipv4)       /* port without an IPv4 gateway */          \
	X(rx_echo)           /* echo request to the router's address */  \
	X(tx_echo_reply)

/* Counters of one port, added to with relaxed atomics so that the workers
 * serving a multi-queue port may share them; readers take each counter on
 * its own. */
struct ndp_stats {
	_Atomic uint64_t verdicts[NDP_VERDICT_COUNT];
#define NDP_EVENT_FIELD(name) _Atomic uint64_t name;
	NDP_EVENTS(NDP_EVENT_FIELD)
#undef NDP_EVENT_FIELD
};

#define ndp_stat_inc(stats, name) \
	atomic_fetch_add_explicit(&(stats)->name, 1, memory_order_relaxed)

/* The mutable part of a port, owned by the caller, zero-initialised at port
 * creation; may be shared by the workers serving one port's queues. */
struct ndp_port_state {
	_Atomic uint64_t ra_next_ms; /* no solicited RA before this time */
	struct ndp_stats stats;
};

/* Sets every field to its default: no addresses, router lifetime 1800 s,
 * hop limit 64, MTU 1500, the default RA interval. */
void ndp_port_config_init(struct ndp_port_config *cfg);

/* 0 when cfg is usable, -EINVAL otherwise: a MAC that is zero or multicast,
 * the same MAC on both sides, a router_ll that is set but not fe80::/10,
 * too many addresses or prefixes, a VM address that is ::, ::1, multicast
 * or the router's, an IPv4 one ARP could not answer for (arp.h), an MTU
 * under 1280, a prefix longer than 128 or with host bits set, a preferred
 * lifetime above the valid one. Run by the control thread before a
 * configuration is published; ndp_handle trusts what passed. */
int ndp_port_config_check(const struct ndp_port_config *cfg);

/* fe80::/64 with the modified EUI-64 interface identifier of mac. */
void ndp_eui64_link_local(const uint8_t mac[NDP_ETH_ALEN], uint8_t out[NDP_IP6_ADDR_LEN]);

/* The router's link-local address: router_ll, or the EUI-64 one. */
void ndp_router_link_local(const struct ndp_port_config *cfg, uint8_t out[NDP_IP6_ADDR_LEN]);

/* Handles one frame received from the port's VM. now_ms is a monotonic
 * clock, used only by the RA rate limit. On NDP_REPLY the reply frame is
 * in reply[0..*reply_len) (addressed to the VM's MAC from the router's),
 * otherwise *reply_len is 0. A buffer of NDP_REPLY_MAX bytes always
 * suffices; a smaller one may yield NDP_DROP_NO_ROOM. Every verdict is
 * counted in state->stats. Reads exactly frame[0..len); reply must not
 * overlap frame. */
enum ndp_verdict ndp_handle(const struct ndp_port_config *cfg, struct ndp_port_state *state,
			    uint64_t now_ms, const uint8_t *frame, size_t len, uint8_t *reply,
			    size_t reply_cap, size_t *reply_len);

/* Builds the port's Router Advertisement to dst (NULL: all-nodes ff02::1)
 * into out, as ndp_handle answers an RS: for periodic unsolicited RAs,
 * which the caller schedules (every few minutes, well within the router
 * and prefix lifetimes). Returns its length, or 0 when cap is too small. */
size_t ndp_build_ra(const struct ndp_port_config *cfg, const uint8_t *dst, uint8_t *out,
		    size_t cap);

#endif
