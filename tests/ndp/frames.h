/* A small frame builder and reader for the NDP tests, written apart from
 * ndp/: offsets spelled out as numbers, and its own Internet checksum (a
 * plain loop over 16-bit words, RFC 1071), so that a shared mistake cannot
 * hide in both the module and its tests. */
#ifndef WEFT_TESTS_NDP_FRAMES_H
#define WEFT_TESTS_NDP_FRAMES_H

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndp/ndp.h"

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,  \
				__LINE__, #cond);                                \
			exit(1);                                                 \
		}                                                                \
	} while (0)

enum {
	F_ETH = 14,          /* where the IPv6 header starts */
	F_ICMP = 14 + 40,    /* where ICMPv6 starts when no extension header */
	F_MAX = 2048,
};

static const uint8_t ROUTER_MAC[6] = { 0x02, 0x77, 0x65, 0x66, 0x74, 0x01 };
static const uint8_t VM_MAC[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t OTHER_MAC[6] = { 0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc };
/* fe80::77:65ff:fe66:7401, ROUTER_MAC by EUI-64, worked out by hand. */
static const uint8_t ROUTER_LL[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0,
				       0x00, 0x77, 0x65, 0xff, 0xfe, 0x66, 0x74, 0x01 };

struct a6 {
	uint8_t b[16];
};

static inline struct a6 ip6(const char *s)
{
	struct a6 a;

	CHECK(inet_pton(AF_INET6, s, a.b) == 1);
	return a;
}

struct a4 {
	uint8_t b[4];
};

static inline struct a4 ip4(const char *s)
{
	struct a4 a;

	CHECK(inet_pton(AF_INET, s, a.b) == 1);
	return a;
}

static inline void put16(uint8_t *p, unsigned int v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

static inline unsigned int get16(const uint8_t *p)
{
	return (unsigned int)p[0] << 8 | p[1];
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

/* The ICMPv6 checksum over src, dst, the length and next header 58, then
 * the message: what the checksum field must hold (when zero while summed),
 * or 0 when summed with a correct checksum in place. */
static inline uint16_t ref_icmp6_csum(const uint8_t *src, const uint8_t *dst,
				      const uint8_t *msg, size_t len)
{
	uint32_t sum = 0;

	for (int i = 0; i < 16; i += 2)
		sum += get16(src + i) + get16(dst + i);
	sum += (uint32_t)(len >> 16) + (uint32_t)(len & 0xffff) + 58;
	for (size_t i = 0; i < len; i += 2)
		sum += (uint32_t)msg[i] << 8 | (i + 1 < len ? msg[i + 1] : 0);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* The Internet checksum of p[0, len), summed naively from sum: what the
 * checksum field must hold (when zero while summed), or 0 over a correct
 * block. */
static inline uint16_t ref_csum(const uint8_t *p, size_t len, uint32_t sum)
{
	for (size_t i = 0; i < len; i += 2)
		sum += (uint32_t)p[i] << 8 | (i + 1 < len ? p[i + 1] : 0);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* An IPv4 ICMP message from the VM of type from src to dst with n data
 * bytes, ident 0x1234 and sequence 7, behind an IPv4 header with ihl words,
 * into frame (F_MAX bytes); returns the frame's length (padded to 60 as on
 * a wire). */
static inline size_t icmp4_build(uint8_t *frame, uint8_t type, const char *src,
				 const char *dst, size_t n, size_t ihl)
{
	uint8_t *ip = frame + 14, *icmp;
	size_t hlen = ihl * 4, total = hlen + 8 + n;

	memset(frame, 0, F_MAX);
	memcpy(frame, ROUTER_MAC, 6);
	memcpy(frame + 6, VM_MAC, 6);
	put16(frame + 12, 0x0800);
	ip[0] = (uint8_t)(0x40 | ihl);
	ip[1] = 0x10;
	put16(ip + 2, (unsigned int)total);
	put16(ip + 4, 0xbeef);
	ip[8] = 64;
	ip[9] = 1;
	memcpy(ip + 12, ip4(src).b, 4);
	memcpy(ip + 16, ip4(dst).b, 4);
	put16(ip + 10, ref_csum(ip, hlen, 0));
	icmp = ip + hlen;
	icmp[0] = type;
	put16(icmp + 4, 0x1234);
	put16(icmp + 6, 7);
	for (size_t i = 0; i < n; i++)
		icmp[8 + i] = (uint8_t)(i * 7 + 1);
	put16(icmp + 2, ref_csum(icmp, 8 + n, 0));
	return 14 + total < 60 ? 60 : 14 + total;
}

/* A neighbour discovery message from the VM, with knobs for breaking it. */
struct nd {
	uint8_t eth_src[6];
	uint8_t eth_dst[6];
	uint16_t ethertype;
	struct a6 src, dst;
	uint8_t hop;
	uint8_t type, code;
	uint8_t flags;           /* first byte after the checksum */
	struct a6 target;        /* NS, NA; ignored for RS */
	uint8_t opts[128];       /* options, raw */
	size_t opts_len;
	size_t icmp_len_override; /* nonzero: cut or extend the message to this */
	bool has_ext;            /* an extension header before ICMPv6: */
	uint8_t ext;             /* its type (0 hop-by-hop, 43, 44, 60) */
	uint16_t frag_off;       /* for ext == 44 */
	int payload_delta;       /* added to the payload length field */
	size_t trailer;          /* bytes of junk after the packet */
	bool bad_csum;
};

static inline void nd_opt(struct nd *m, uint8_t type, uint8_t len8, const uint8_t *body)
{
	uint8_t *o = m->opts + m->opts_len;

	o[0] = type;
	o[1] = len8;
	if (len8)
		memcpy(o + 2, body, (size_t)len8 * 8 - 2);
	m->opts_len += len8 ? (size_t)len8 * 8 : 2;
}

static inline struct nd nd_base(uint8_t type, const char *src, const char *dst)
{
	struct nd m;

	memset(&m, 0, sizeof(m));
	memcpy(m.eth_src, VM_MAC, 6);
	memcpy(m.eth_dst, ROUTER_MAC, 6);
	m.ethertype = 0x86dd;
	m.src = ip6(src);
	m.dst = ip6(dst);
	m.hop = 255;
	m.type = type;
	return m;
}

/* The solicited-node group of a (RFC 4291 §2.7.1), as text. */
static inline const char *snm(const char *addr)
{
	static char buf[64];
	struct a6 a = ip6(addr);

	snprintf(buf, sizeof(buf), "ff02::1:ff%02x:%02x%02x", a.b[13], a.b[14], a.b[15]);
	return buf;
}

static inline struct nd nd_ns(const char *src, const char *dst, const char *target, bool slla)
{
	struct nd m = nd_base(135, src, dst);

	m.target = ip6(target);
	if (slla)
		nd_opt(&m, 1, 1, VM_MAC);
	return m;
}

static inline size_t nd_build(const struct nd *m, uint8_t *f)
{
	size_t fixed = m->type == 133 ? 8 : 24, icmp_len, ext_len = 0, off;
	uint8_t *ip = f + 14, *icmp;

	memset(f, 0, F_MAX);
	memcpy(f, m->eth_dst, 6);
	memcpy(f + 6, m->eth_src, 6);
	put16(f + 12, m->ethertype);
	ip[0] = 0x60;
	ip[6] = m->has_ext ? m->ext : 58;
	ip[7] = m->hop;
	memcpy(ip + 8, m->src.b, 16);
	memcpy(ip + 24, m->dst.b, 16);
	off = F_ICMP;
	if (m->has_ext) {
		/* 8 bytes: next header, then a PadN (or the fragment fields). */
		f[off] = 58;
		if (m->ext == 44) {
			put16(f + off + 2, m->frag_off);
		} else {
			f[off + 2] = 1;
			f[off + 3] = 4;
		}
		ext_len = 8;
		off += 8;
	}
	icmp = f + off;
	icmp[0] = m->type;
	icmp[1] = m->code;
	icmp[4] = m->flags;
	if (fixed == 24)
		memcpy(icmp + 8, m->target.b, 16);
	memcpy(icmp + fixed, m->opts, m->opts_len);
	icmp_len = m->icmp_len_override ? m->icmp_len_override : fixed + m->opts_len;
	put16(icmp + 2, ref_icmp6_csum(m->src.b, m->dst.b, icmp, icmp_len));
	if (m->bad_csum)
		icmp[3] ^= 0x01;
	put16(ip + 4, (unsigned int)((int)(ext_len + icmp_len) + m->payload_delta));
	return off + icmp_len + m->trailer;
}

/* An ARP packet from the VM (padded to 60 bytes, as on a wire). */
struct arp {
	uint8_t eth_src[6];
	uint16_t htype, ptype, op;
	uint8_t hlen, plen;
	uint8_t sha[6];
	struct a4 spa, tpa;
	size_t len; /* 0: 60 */
};

static inline struct arp arp_request(const char *spa, const char *tpa)
{
	struct arp a = { .htype = 1, .ptype = 0x0800, .op = 1, .hlen = 6, .plen = 4 };

	memcpy(a.eth_src, VM_MAC, 6);
	memcpy(a.sha, VM_MAC, 6);
	a.spa = ip4(spa);
	a.tpa = ip4(tpa);
	return a;
}

static inline size_t arp_build(const struct arp *a, uint8_t *f)
{
	memset(f, 0, F_MAX);
	memset(f, 0xff, 6);
	memcpy(f + 6, a->eth_src, 6);
	put16(f + 12, 0x0806);
	put16(f + 14, a->htype);
	put16(f + 16, a->ptype);
	f[18] = a->hlen;
	f[19] = a->plen;
	put16(f + 20, a->op);
	memcpy(f + 22, a->sha, 6);
	memcpy(f + 28, a->spa.b, 4);
	/* tha stays zero, as in a request */
	memcpy(f + 38, a->tpa.b, 4);
	return a->len ? a->len : 60;
}

/* The port most tests use: two registered addresses of each family, an
 * IPv4 gateway, one SLAAC prefix, MTU 1420. */
static inline void test_config(struct ndp_port_config *cfg)
{
	struct ndp_prefix *p;

	ndp_port_config_init(cfg);
	memcpy(cfg->router_mac, ROUTER_MAC, 6);
	memcpy(cfg->vm_mac, VM_MAC, 6);
	memcpy(cfg->vm_ip6[0], ip6("2001:db8:1::10").b, 16);
	memcpy(cfg->vm_ip6[1], ip6("fd00:1::10").b, 16);
	cfg->n_vm_ip6 = 2;
	memcpy(cfg->vm_ip4[0], ip4("10.1.0.10").b, 4);
	memcpy(cfg->vm_ip4[1], ip4("192.168.7.10").b, 4);
	cfg->n_vm_ip4 = 2;
	cfg->has_gateway4 = true;
	memcpy(cfg->gateway4, ip4("10.1.0.1").b, 4);
	cfg->mtu = 1420;
	p = &cfg->prefixes[0];
	memcpy(p->prefix, ip6("2001:db8:1::").b, 16);
	p->len = 64;
	p->on_link = true;
	p->autonomous = true;
	p->valid_lifetime_s = 86400;
	p->preferred_lifetime_s = 14400;
	cfg->n_prefixes = 1;
	CHECK(ndp_port_config_check(cfg) == 0);
}

/* Checks the Ethernet and IPv6 headers of an ND reply from src to dst and
 * its checksum; returns the ICMPv6 message and its length. */
static inline const uint8_t *check_nd_reply(const uint8_t *r, size_t len, const uint8_t *src,
					    const uint8_t *dst, size_t *icmp_len)
{
	CHECK(len >= F_ICMP + 8);
	CHECK(!memcmp(r, VM_MAC, 6));
	CHECK(!memcmp(r + 6, ROUTER_MAC, 6));
	CHECK(get16(r + 12) == 0x86dd);
	CHECK(get32(r + 14) == 0x60000000u); /* version 6, class 0, flow 0 */
	CHECK(get16(r + 18) == len - F_ICMP);
	CHECK(r[20] == 58);
	CHECK(r[21] == 255);
	CHECK(!memcmp(r + 22, src, 16));
	CHECK(!memcmp(r + 38, dst, 16));
	CHECK(ref_icmp6_csum(r + 22, r + 38, r + F_ICMP, len - F_ICMP) == 0);
	CHECK(r[F_ICMP + 1] == 0);
	*icmp_len = len - F_ICMP;
	return r + F_ICMP;
}

static inline uint64_t verdicts(const struct ndp_port_state *st, enum ndp_verdict v)
{
	return atomic_load(&st->stats.verdicts[v]);
}

#endif
