/* Wire formats of the frames the NDP and ARP responders read and write:
 * Ethernet II, the IPv6 fixed header, the ICMPv6 neighbour discovery
 * messages and options (RFC 4861 §4), ARP for IPv4 over Ethernet (RFC 826);
 * and the address classes the checks need. Multi-byte integers are
 * big-endian on the wire; the structs are packed so that they can overlay
 * a frame at any alignment. */
#ifndef WEFT_NDP_WIRE_H
#define WEFT_NDP_WIRE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum ndp_eth_sizes {
	NDP_ETH_ALEN = 6,
	NDP_ETH_HLEN = 14,
	/* The shortest Ethernet frame without its FCS (IEEE 802.3). */
	NDP_ETH_ZLEN = 60,
};

enum ndp_ethertype {
	NDP_ETH_P_IPV4 = 0x0800,
	NDP_ETH_P_ARP = 0x0806,
	NDP_ETH_P_8021Q = 0x8100,
	NDP_ETH_P_IPV6 = 0x86dd,
	NDP_ETH_P_8021AD = 0x88a8,
};

struct ndp_eth_hdr {
	uint8_t dst[NDP_ETH_ALEN];
	uint8_t src[NDP_ETH_ALEN];
	uint16_t type;
} __attribute__((packed));
_Static_assert(sizeof(struct ndp_eth_hdr) == NDP_ETH_HLEN, "Ethernet header");

/* IPv6 (RFC 8200). */
enum {
	NDP_IP6_ADDR_LEN = 16,
	NDP_IP6_HLEN = 40,
	NDP_IP6_ND_HOP_LIMIT = 255, /* RFC 4861: proves the sender is on-link */
};

enum ndp_ip6_proto {
	NDP_IPPROTO_HOPOPTS = 0,
	NDP_IPPROTO_ROUTING = 43,
	NDP_IPPROTO_FRAGMENT = 44,
	NDP_IPPROTO_ICMPV6 = 58,
	NDP_IPPROTO_DSTOPTS = 60,
};

struct ndp_ip6_hdr {
	uint32_t ver_tc_flow; /* version 4 bits, traffic class 8, flow label 20 */
	uint16_t payload_len;
	uint8_t next_header;
	uint8_t hop_limit;
	uint8_t src[NDP_IP6_ADDR_LEN];
	uint8_t dst[NDP_IP6_ADDR_LEN];
} __attribute__((packed));
_Static_assert(sizeof(struct ndp_ip6_hdr) == NDP_IP6_HLEN, "IPv6 header");

/* ICMPv6 neighbour discovery (RFC 4861 §4), and the echo request the
 * router answers (RFC 4443 §4.1). */
enum ndp_icmp6_type {
	NDP_ICMP6_ECHO_REQUEST = 128,
	NDP_ICMP6_RS = 133,
	NDP_ICMP6_RA = 134,
	NDP_ICMP6_NS = 135,
	NDP_ICMP6_NA = 136,
	NDP_ICMP6_REDIRECT = 137,
};

struct ndp_icmp6_hdr {
	uint8_t type;
	uint8_t code;
	uint16_t checksum;
} __attribute__((packed));
_Static_assert(sizeof(struct ndp_icmp6_hdr) == 4, "ICMPv6 header");

struct ndp_rs {
	struct ndp_icmp6_hdr hdr;
	uint32_t reserved;
} __attribute__((packed));
_Static_assert(sizeof(struct ndp_rs) == 8, "RFC 4861 §4.1");

enum ndp_ra_flags {
	NDP_RA_F_MANAGED = 0x80,
	NDP_RA_F_OTHER = 0x40,
};

struct ndp_ra {
	struct ndp_icmp6_hdr hdr;
	uint8_t cur_hop_limit;
	uint8_t flags;
	uint16_t router_lifetime; /* seconds */
	uint32_t reachable_time;  /* milliseconds */
	uint32_t retrans_timer;   /* milliseconds */
} __attribute__((packed));
_Static_assert(sizeof(struct ndp_ra) == 16, "RFC 4861 §4.2");

/* NS and NA share one layout: the NS's first word is reserved, the NA's
 * carries the R, S and O flags in its top bits. */
enum ndp_na_flags {
	NDP_NA_F_ROUTER = 0x80,
	NDP_NA_F_SOLICITED = 0x40,
	NDP_NA_F_OVERRIDE = 0x20,
};

struct ndp_ns_na {
	struct ndp_icmp6_hdr hdr;
	uint8_t flags;
	uint8_t reserved[3];
	uint8_t target[NDP_IP6_ADDR_LEN];
} __attribute__((packed));
_Static_assert(sizeof(struct ndp_ns_na) == 24, "RFC 4861 §4.3, §4.4");

/* Options (RFC 4861 §4.6): type, then the length in units of 8 octets. */
enum ndp_opt_type {
	NDP_OPT_SLLA = 1,
	NDP_OPT_TLLA = 2,
	NDP_OPT_PREFIX = 3,
	NDP_OPT_MTU = 5,
};

enum { NDP_OPT_UNIT = 8 };

struct ndp_opt_hdr {
	uint8_t type;
	uint8_t len;
} __attribute__((packed));

struct ndp_opt_lladdr {
	struct ndp_opt_hdr hdr;
	uint8_t mac[NDP_ETH_ALEN];
} __attribute__((packed));
_Static_assert(sizeof(struct ndp_opt_lladdr) == NDP_OPT_UNIT, "RFC 4861 §4.6.1 on Ethernet");

struct ndp_opt_mtu {
	struct ndp_opt_hdr hdr;
	uint16_t reserved;
	uint32_t mtu;
} __attribute__((packed));
_Static_assert(sizeof(struct ndp_opt_mtu) == NDP_OPT_UNIT, "RFC 4861 §4.6.4");

enum ndp_prefix_flags {
	NDP_PREFIX_F_ONLINK = 0x80,
	NDP_PREFIX_F_AUTONOMOUS = 0x40,
};

struct ndp_opt_prefix {
	struct ndp_opt_hdr hdr;
	uint8_t prefix_len;
	uint8_t flags;
	uint32_t valid_lifetime;     /* seconds, 0xffffffff = infinity */
	uint32_t preferred_lifetime; /* seconds, 0xffffffff = infinity */
	uint32_t reserved2;
	uint8_t prefix[NDP_IP6_ADDR_LEN];
} __attribute__((packed));
_Static_assert(sizeof(struct ndp_opt_prefix) == 4 * NDP_OPT_UNIT, "RFC 4861 §4.6.2");

/* ARP for IPv4 over Ethernet (RFC 826). */
enum {
	NDP_ARP_HTYPE_ETHER = 1,
	NDP_ARP_OP_REQUEST = 1,
	NDP_ARP_OP_REPLY = 2,
	NDP_IP4_ADDR_LEN = 4,
};

struct ndp_arp {
	uint16_t htype;
	uint16_t ptype;
	uint8_t hlen;
	uint8_t plen;
	uint16_t op;
	uint8_t sha[NDP_ETH_ALEN];
	uint8_t spa[NDP_IP4_ADDR_LEN];
	uint8_t tha[NDP_ETH_ALEN];
	uint8_t tpa[NDP_IP4_ADDR_LEN];
} __attribute__((packed));
_Static_assert(sizeof(struct ndp_arp) == 28, "RFC 826 for Ethernet and IPv4");

/* Address classes (RFC 4291 §2.4; a MAC's group bit, IEEE 802). */
static inline bool ndp_ip6_eq(const uint8_t *a, const uint8_t *b)
{
	return !memcmp(a, b, NDP_IP6_ADDR_LEN);
}

static inline bool ndp_ip6_is_zero(const uint8_t *a)
{
	static const uint8_t zero[NDP_IP6_ADDR_LEN];

	return ndp_ip6_eq(a, zero);
}

static inline bool ndp_ip6_is_loopback(const uint8_t *a)
{
	static const uint8_t loopback[NDP_IP6_ADDR_LEN] = { [15] = 1 };

	return ndp_ip6_eq(a, loopback);
}

static inline bool ndp_ip6_is_multicast(const uint8_t *a)
{
	return a[0] == 0xff;
}

static inline bool ndp_ip6_is_link_local(const uint8_t *a)
{
	return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}

/* ff02::1:ff00:0/104 (RFC 4291 §2.7.1). */
static inline bool ndp_ip6_is_solicited_node(const uint8_t *a)
{
	static const uint8_t prefix[13] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };

	return !memcmp(a, prefix, sizeof(prefix));
}

static inline bool ndp_mac_is_unicast(const uint8_t *mac)
{
	static const uint8_t zero[NDP_ETH_ALEN];

	return !(mac[0] & 1) && memcmp(mac, zero, NDP_ETH_ALEN);
}

#endif
