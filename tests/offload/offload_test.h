/* Shared by the offload tests: a packet generator, a naive checksum that
 * adds one 16-bit word at a time (the reference the module is checked
 * against), and a CHECK macro. Built independently of pkt/csum.c. */
#ifndef WEFT_TESTS_OFFLOAD_TEST_H
#define WEFT_TESTS_OFFLOAD_TEST_H

#include "tun/offload.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_failures;

#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__,  \
				__LINE__, #cond);                               \
			fprintf(stderr, __VA_ARGS__);                           \
			fputc('\n', stderr);                                    \
			if (++t_failures > 20)                                  \
				exit(1);                                        \
		}                                                               \
	} while (0)

static uint64_t t_rng = 0x853c49e6748fea9bull;

static inline uint64_t t_rand(void)
{
	t_rng ^= t_rng >> 12;
	t_rng ^= t_rng << 25;
	t_rng ^= t_rng >> 27;
	return t_rng * 0x2545f4914f6cdd1dull;
}

static inline uint32_t t_range(uint32_t lo, uint32_t hi) /* inclusive */
{
	return lo + (uint32_t)(t_rand() % ((uint64_t)hi - lo + 1));
}

static inline uint16_t t_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t t_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void t_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void t_put32(uint8_t *p, uint32_t v)
{
	t_put16(p, (uint16_t)(v >> 16));
	t_put16(p + 2, (uint16_t)v);
}

/* RFC 1071 the slow way: big-endian words, folded after every add. */
static inline uint16_t naive_sum(const uint8_t *p, size_t n, uint16_t start)
{
	uint32_t acc = start;

	for (size_t i = 0; i < n; i += 2) {
		acc += (uint32_t)(p[i] << 8 | (i + 1 < n ? p[i + 1] : 0));
		acc = (acc & 0xffff) + (acc >> 16);
	}
	return (uint16_t)acc;
}

/* The pseudo-header written out as bytes, then summed naively. */
static inline uint16_t naive_pseudo(const uint8_t *ip, uint8_t proto, uint32_t l4_len)
{
	uint8_t ph[40];
	size_t n;

	memset(ph, 0, sizeof(ph));
	if ((ip[0] >> 4) == 6) {
		memcpy(ph, ip + 8, 32);
		t_put32(ph + 32, l4_len);
		ph[39] = proto;
		n = 40;
	} else {
		memcpy(ph, ip + 12, 8);
		ph[9] = proto;
		t_put16(ph + 10, (uint16_t)l4_len);
		n = 12;
	}
	return naive_sum(ph, n, 0);
}

/* Whether the L4 checksum of the packet verifies (sums to 0xffff). */
static inline bool naive_l4_ok(const uint8_t *ip, uint32_t l3, uint8_t proto, uint32_t len)
{
	return naive_sum(ip + l3, len - l3, naive_pseudo(ip, proto, len - l3)) == 0xffff;
}

static inline bool naive_ip4_ok(const uint8_t *ip)
{
	return naive_sum(ip, (ip[0] & 0xf) * 4u, 0) == 0xffff;
}

/* A packet to generate. */
struct gen {
	bool v6, udp;
	bool df;
	uint8_t tos, ttl, tcp_flags, tcp_res, opt_len, ip_opt_len;
	uint16_t id, sport, dport, window, mss;
	uint32_t seq, ack, flow_label, payload;
	uint8_t saddr[16], daddr[16];
	uint8_t opts[40];
};

static inline void gen_default(struct gen *g, bool v6, bool udp)
{
	memset(g, 0, sizeof(*g));
	g->v6 = v6;
	g->udp = udp;
	g->df = true;
	g->tos = 0x10;
	g->ttl = 64;
	g->tcp_flags = 0x10;
	g->id = 0x1234;
	g->sport = 40000;
	g->dport = 5201;
	g->window = 502;
	g->mss = 1448;
	g->seq = 0xfffff000u; /* wraps inside a big super-packet */
	g->ack = 0x01020304;
	g->flow_label = 0xabcde;
	for (int i = 0; i < 16; i++) {
		g->saddr[i] = (uint8_t)(0x20 + i);
		g->daddr[i] = (uint8_t)(0x90 + i);
	}
	g->opt_len = 12; /* NOP NOP timestamp */
	memcpy(g->opts, "\x01\x01\x08\x0a\x00\x01\x02\x03\x04\x05\x06\x07", 12);
}

/* Headers' length of a generated packet. */
static inline uint32_t gen_l3(const struct gen *g)
{
	return g->v6 ? 40 : 20u + g->ip_opt_len;
}

static inline uint32_t gen_hdrs(const struct gen *g)
{
	return gen_l3(g) + (g->udp ? 8u : 20u + g->opt_len);
}

/* Writes the IP packet (headers, then payload) to out; returns its length.
 * Checksums are what Linux puts in a CHECKSUM_PARTIAL packet: a valid IPv4
 * header checksum and the folded pseudo-header sum in the L4 field. */
static inline uint32_t gen_packet(uint8_t *out, const struct gen *g, const uint8_t *payload)
{
	uint32_t l3 = gen_l3(g), hdrs = gen_hdrs(g), len = hdrs + g->payload;
	uint8_t *l4 = out + l3;
	uint8_t proto = g->udp ? 17 : 6;

	memset(out, 0, hdrs);
	if (g->v6) {
		t_put32(out, 6u << 28 | (uint32_t)g->tos << 20 | (g->flow_label & 0xfffff));
		t_put16(out + 4, (uint16_t)(len - 40));
		out[6] = proto;
		out[7] = g->ttl;
		memcpy(out + 8, g->saddr, 16);
		memcpy(out + 24, g->daddr, 16);
	} else {
		out[0] = (uint8_t)(0x40 | (l3 / 4));
		out[1] = g->tos;
		t_put16(out + 2, (uint16_t)len);
		t_put16(out + 4, g->id);
		t_put16(out + 6, g->df ? 0x4000 : 0);
		out[8] = g->ttl;
		out[9] = proto;
		memcpy(out + 12, g->saddr, 4);
		memcpy(out + 16, g->daddr, 4);
		for (uint32_t i = 20; i < l3; i++)
			out[i] = 1; /* NOP options */
		t_put16(out + 10, (uint16_t)~naive_sum(out, l3, 0));
	}
	t_put16(l4, g->sport);
	t_put16(l4 + 2, g->dport);
	if (g->udp) {
		t_put16(l4 + 4, (uint16_t)(len - l3));
	} else {
		t_put32(l4 + 4, g->seq);
		t_put32(l4 + 8, g->ack);
		l4[12] = (uint8_t)((20 + g->opt_len) / 4 << 4 | (g->tcp_res & 0xf));
		l4[13] = g->tcp_flags;
		t_put16(l4 + 14, g->window);
		memcpy(l4 + 20, g->opts, g->opt_len);
	}
	memcpy(out + hdrs, payload, g->payload);
	t_put16(l4 + (g->udp ? 6 : 16), naive_pseudo(out, proto, len - l3));
	return len;
}

/* Completes the L4 checksum of a generated packet, as skb_checksum_help
 * does: a result of 0 is stored as 0xffff, for TCP as well as UDP. */
static inline void naive_complete(uint8_t *pkt, const struct gen *g)
{
	uint32_t l3 = gen_l3(g), len = gen_hdrs(g) + g->payload;
	uint8_t *field = pkt + l3 + (g->udp ? 6 : 16);
	uint16_t c;

	t_put16(field, 0);
	c = (uint16_t)~naive_sum(pkt + l3, len - l3, naive_pseudo(pkt, g->udp ? 17 : 6, len - l3));
	t_put16(field, c == 0 ? 0xffff : c);
}

/* The virtio-net header Linux gives a super-packet of g. */
static inline void gen_vnet(uint8_t *out, const struct gen *g, bool gso)
{
	struct tun_vnet_hdr h;
	uint32_t l3 = gen_l3(g);

	memset(&h, 0, sizeof(h));
	h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	if (gso) {
		h.gso_type = g->udp ? VIRTIO_NET_HDR_GSO_UDP_L4 :
			     g->v6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4;
		h.gso_size = htole16(g->mss);
		h.hdr_len = htole16((uint16_t)gen_hdrs(g));
	}
	h.csum_start = htole16((uint16_t)l3);
	h.csum_offset = htole16(g->udp ? 6 : 16);
	memcpy(out, &h, sizeof(h));
}

static inline void fill_random(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)t_rand();
}

static inline int t_exit(const char *name)
{
	if (t_failures) {
		fprintf(stderr, "%s: %d failure(s)\n", name, t_failures);
		return 1;
	}
	printf("%s: ok\n", name);
	return 0;
}

#endif
