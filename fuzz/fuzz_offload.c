/* libFuzzer target for the TUN offloads (tun/offload.h): tun_offload_parse
 * on what a TUN read returns (the worker's entry point, and the one a
 * vhost-user guest will reach), tun_offload_split of what parses, and the
 * receive side's coalescing, tun_gro_add and tun_gro_finish.
 *
 * Input: a mode byte, then
 *  - MODE_SPLIT: one TUN read (virtio-net header, IP packet). The verdict
 *    and every field of the parse are checked against a naive parser
 *    written from the header's rules; what parses is split into exact-size
 *    heap buffers (ASan sees any overrun), in place for the first segment as
 *    the worker does (F_COPY: into separate buffers), after checking that a
 *    too-short segment array or a too-small buffer is refused without a
 *    write. Each segment must be a valid IP packet with the original's
 *    headers, its own lengths, IPv4 ID, TCP sequence number and flags, and
 *    checksums a naive RFC 1071 sum accepts; the payloads must concatenate to
 *    the original's. The segments are then coalesced again (received in
 *    order, checksums trusted as the worker trusts authenticated segments):
 *    every write must parse, and re-split it gives back exactly the segments
 *    that went in. When the read is what a Linux TSO sender writes (see
 *    linux_like()), the one write that comes out equals it byte for byte,
 *    virtio-net header included.
 *  - MODE_GRO: arbitrary packets fed straight to tun_gro_add, each record a
 *    16-bit length, the 16-bit room of its buffer from the packet on (at
 *    least the length; both little-endian) and the bytes; checksums trusted as by the worker (F_VERIFY: verified, as Linux
 *    GRO does). A full table is flushed as the worker does. Every merge must
 *    join a plain in-order data segment to the latest write of its flow;
 *    every write of one packet is that packet untouched behind a zero
 *    header; every write of several parses as a TCP super-packet whose split
 *    gives back the packets that went in (up to what GRO may ignore: the
 *    IPv4 ID under DF, checksums, the urgent pointer of a segment without
 *    URG).
 * Nothing here keeps state between inputs. */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tun/offload.h"
#include "wg/packet.h"

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "fuzz_offload: check failed at %s:%d: %s\n", \
				__FILE__, __LINE__, #cond);                          \
			abort();                                                     \
		}                                                                    \
	} while (0)

enum {
	MODE_SPLIT = 0,
	MODE_GRO = 1,
	F_COPY = 1 << 1,     /* MODE_SPLIT: no segment in place */
	F_VERIFY = 1 << 1,   /* MODE_GRO: tun_gro_init(verify_csum = true) */
	/* The worker's headroom (room for the data-message header); the
	 * virtio-net header of a read or write sits right in front of it. */
	HEADROOM = WG_PKT_HEADROOM,
	MAX_SEGS = TUN_OFFLOAD_MAX_SEGS,
	MAX_FED = 4096,      /* MODE_GRO records */
	IPPROTO_TCP_ = 6,
	IPPROTO_UDP_ = 17,
	TCP_FIN = 0x01,
	TCP_SYN = 0x02,
	TCP_RST = 0x04,
	TCP_PSH = 0x08,
	TCP_ACK = 0x10,
	TCP_URG = 0x20,
	TCP_CWR = 0x80,
};

_Static_assert(HEADROOM >= TUN_VNET_HDR_LEN, "the write's header fits in front");

static int trace = -1; /* FUZZ_TRACE=1: print what each input did */

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint8_t *xmalloc(size_t n)
{
	uint8_t *p = malloc(n ? n : 1);

	CHECK(p);
	return p;
}

/* ---- naive checksums (RFC 1071, one big-endian word at a time) ---------- */

static uint16_t naive_sum(const uint8_t *p, size_t n, uint16_t start)
{
	uint32_t acc = start;

	for (size_t i = 0; i < n; i += 2) {
		acc += (uint32_t)(p[i] << 8 | (i + 1 < n ? p[i + 1] : 0));
		acc = (acc & 0xffff) + (acc >> 16);
	}
	return (uint16_t)acc;
}

/* The TCP/UDP pseudo-header written out as bytes, summed. */
static uint16_t naive_pseudo(const uint8_t *ip, uint8_t proto, uint32_t l4_len)
{
	uint8_t ph[40] = { 0 };

	if ((ip[0] >> 4) == 6) {
		memcpy(ph, ip + 8, 32);
		ph[32] = (uint8_t)(l4_len >> 24);
		ph[33] = (uint8_t)(l4_len >> 16);
		ph[34] = (uint8_t)(l4_len >> 8);
		ph[35] = (uint8_t)l4_len;
		ph[39] = proto;
		return naive_sum(ph, 40, 0);
	}
	memcpy(ph, ip + 12, 8);
	ph[9] = proto;
	ph[10] = (uint8_t)(l4_len >> 8);
	ph[11] = (uint8_t)l4_len;
	return naive_sum(ph, 12, 0);
}

/* A sum over a block that holds its correct checksum is -0. */
static bool sum_ok(uint16_t s)
{
	return s == 0xffff;
}

static bool l4_ok(const uint8_t *ip, uint32_t l3, uint8_t proto, uint32_t len)
{
	return sum_ok(naive_sum(ip + l3, len - l3, naive_pseudo(ip, proto, len - l3)));
}

/* The checksum a sender stores: the complement of the sum with the field 0. */
static uint16_t canonical_ip4_csum(const uint8_t *ip, uint32_t l3)
{
	uint8_t h[60];

	memcpy(h, ip, l3);
	h[10] = h[11] = 0;
	return (uint16_t)~naive_sum(h, l3, 0);
}

/* ---- naive parser ----------------------------------------------------------- */

/* tun_offload_parse by the rules of tun/offload.h, one check at a time:
 * 0 and the info it must give, or nonzero when it must refuse. */
static int naive_parse(const uint8_t *frame, size_t len, struct tun_offload_info *w)
{
	const uint8_t *p = frame + TUN_VNET_HDR_LEN;
	uint8_t flags, gso_type, type, version, proto, l4proto;
	uint16_t gso_size, start, off;
	uint32_t plen, tot, l3, l4, payload, n;
	bool fragment = false;

	memset(w, 0, sizeof(*w));
	if (len < TUN_VNET_HDR_LEN)
		return 1;
	flags = frame[0];
	gso_type = frame[1];
	gso_size = le16(frame + 4);
	start = le16(frame + 6);
	off = le16(frame + 8);
	plen = (uint32_t)(len - TUN_VNET_HDR_LEN);
	if (flags & ~(VIRTIO_NET_HDR_F_NEEDS_CSUM | VIRTIO_NET_HDR_F_DATA_VALID))
		return 1;
	if (plen < 1)
		return 1;
	version = p[0] >> 4;
	if (version == 4) {
		if (plen < 20)
			return 1;
		l3 = (p[0] & 0xfu) * 4;
		tot = get16(p + 2);
		if (l3 < 20 || tot < l3 || tot > plen)
			return 1;
		proto = p[9];
		fragment = (get16(p + 6) & 0x3fff) != 0;
	} else if (version == 6) {
		if (plen < 40)
			return 1;
		l3 = 40;
		tot = 40 + (uint32_t)get16(p + 4);
		if (tot > plen)
			return 1;
		proto = p[6];
	} else {
		return 1;
	}
	w->pkt = p;
	w->len = tot;
	w->l3_len = (uint16_t)l3;
	w->n_segs = 1;
	w->max_seg_len = tot;
	w->kind = TUN_OFFLOAD_PLAIN;

	if (gso_type != VIRTIO_NET_HDR_GSO_NONE) {
		type = gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN;
		if (type == VIRTIO_NET_HDR_GSO_TCPV4 && version == 4)
			l4proto = IPPROTO_TCP_;
		else if (type == VIRTIO_NET_HDR_GSO_TCPV6 && version == 6)
			l4proto = IPPROTO_TCP_;
		else if (type == VIRTIO_NET_HDR_GSO_UDP_L4)
			l4proto = IPPROTO_UDP_;
		else
			return 1;
		if ((gso_type & VIRTIO_NET_HDR_GSO_ECN) && l4proto != IPPROTO_TCP_)
			return 1;
		if (proto != l4proto || fragment)
			return 1;
		if (!(flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) || start != l3 ||
		    off != (l4proto == IPPROTO_TCP_ ? 16 : 6))
			return 1;
		if (l4proto == IPPROTO_TCP_) {
			if (l3 + 20 > tot)
				return 1;
			l4 = (uint32_t)(p[l3 + 12] >> 4) * 4;
			if (l4 < 20 || l3 + l4 > tot)
				return 1;
			if (p[l3 + 13] & (TCP_SYN | TCP_RST))
				return 1;
			w->kind = TUN_OFFLOAD_TCP;
		} else {
			l4 = 8;
			if (l3 + l4 > tot)
				return 1;
			w->kind = TUN_OFFLOAD_UDP;
		}
		if (gso_size < TUN_OFFLOAD_MIN_GSO_SIZE)
			return 1;
		payload = tot - l3 - l4;
		n = payload ? (payload + gso_size - 1) / gso_size : 1;
		if (n > MAX_SEGS)
			return 1;
		w->gso_size = gso_size;
		w->hdrs_len = (uint16_t)(l3 + l4);
		w->csum_start = (uint16_t)l3;
		w->csum_offset = (uint16_t)off;
		w->n_segs = (uint16_t)n;
		w->max_seg_len = l3 + l4 + (payload < gso_size ? payload : gso_size);
		return 0;
	}
	if (!(flags & VIRTIO_NET_HDR_F_NEEDS_CSUM))
		return 0;
	if (start < l3 || (uint32_t)start + off + 2 > tot)
		return 1;
	w->kind = TUN_OFFLOAD_CSUM;
	w->csum_start = start;
	w->csum_offset = off;
	return 0;
}

static void same_info(const struct tun_offload_info *a, const struct tun_offload_info *b)
{
	CHECK(a->pkt == b->pkt && a->len == b->len && a->l3_len == b->l3_len);
	CHECK(a->kind == b->kind && a->n_segs == b->n_segs && a->max_seg_len == b->max_seg_len);
	if (a->kind == TUN_OFFLOAD_TCP || a->kind == TUN_OFFLOAD_UDP)
		CHECK(a->hdrs_len == b->hdrs_len && a->gso_size == b->gso_size);
	if (a->kind != TUN_OFFLOAD_PLAIN)
		CHECK(a->csum_start == b->csum_start && a->csum_offset == b->csum_offset);
}

/* The length of segment i of a parsed read. */
static uint32_t seg_len(const struct tun_offload_info *info, unsigned int i)
{
	uint32_t payload;

	if (info->kind != TUN_OFFLOAD_TCP && info->kind != TUN_OFFLOAD_UDP)
		return info->len;
	payload = info->len - info->hdrs_len;
	if (!payload)
		return info->hdrs_len;
	payload -= i * info->gso_size;
	return info->hdrs_len + (payload < info->gso_size ? payload : info->gso_size);
}

/* ---- one segment against the original ---------------------------------- */

/* Bytes [from, to) of a and b are equal except at the offsets in skip
 * (-1 ends the list), each of which masks two bytes. */
static bool equal_except(const uint8_t *a, const uint8_t *b, uint32_t from, uint32_t to,
			 const int *skip)
{
	for (uint32_t i = from; i < to; i++) {
		bool masked = false;

		for (const int *s = skip; *s >= 0; s++)
			if (i == (uint32_t)*s || i == (uint32_t)*s + 1)
				masked = true;
		if (!masked && a[i] != b[i])
			return false;
	}
	return true;
}

/* Segment i (seg, len bytes) of the parsed read orig. */
static void check_segment(const struct tun_offload_info *info, const uint8_t *orig,
			  const uint8_t *seg, uint32_t len, unsigned int i)
{
	uint32_t l3 = info->l3_len, hdrs = info->hdrs_len;

	CHECK(len == seg_len(info, i));
	if (info->kind == TUN_OFFLOAD_PLAIN) {
		CHECK(!memcmp(seg, orig, len));
		return;
	}
	if (info->kind == TUN_OFFLOAD_CSUM) {
		/* As a device completes it: the complement of the sum from
		 * csum_start with the field as it came (the pseudo-header
		 * sum), 0 sent as 0xffff. */
		uint32_t at = (uint32_t)info->csum_start + info->csum_offset;
		uint16_t c = (uint16_t)~naive_sum(orig + info->csum_start, len - info->csum_start, 0);
		int skip[] = { (int)at, -1 };

		if (!c)
			c = 0xffff;
		CHECK(equal_except(seg, orig, 0, len, skip));
		CHECK(get16(seg + at) == c);
		return;
	}

	/* A GSO segment: the original's headers with its own lengths, ID,
	 * sequence number and flags, and complete checksums. */
	if ((orig[0] >> 4) == 4) {
		int skip[] = { 2, 4, 10, -1 };

		CHECK(equal_except(seg, orig, 0, l3, skip));
		CHECK(get16(seg + 2) == len);
		CHECK(get16(seg + 4) == (uint16_t)(get16(orig + 4) + i));
		CHECK(sum_ok(naive_sum(seg, l3, 0)));
	} else {
		int skip[] = { 4, -1 };

		CHECK(equal_except(seg, orig, 0, l3, skip));
		CHECK(get16(seg + 4) == len - 40);
	}
	if (info->kind == TUN_OFFLOAD_TCP) {
		const uint8_t *t = seg + l3, *o = orig + l3;
		uint8_t flags = o[13];
		int skip[] = { (int)l3 + 4, (int)l3 + 6, (int)l3 + 16, -1 };

		if (i + 1u != info->n_segs)
			flags &= (uint8_t)~(TCP_FIN | TCP_PSH);
		if (i)
			flags &= (uint8_t)~TCP_CWR;
		CHECK(equal_except(seg, orig, l3, l3 + 13, skip));
		CHECK(equal_except(seg, orig, l3 + 14, hdrs, skip));
		CHECK(get32(t + 4) == get32(o + 4) + i * info->gso_size);
		CHECK(t[13] == flags);
		CHECK(l4_ok(seg, l3, IPPROTO_TCP_, len));
	} else {
		int skip[] = { (int)l3 + 4, (int)l3 + 6, -1 };

		CHECK(equal_except(seg, orig, l3, hdrs, skip));
		CHECK(get16(seg + l3 + 4) == len - l3);
		/* 0 would mean "no checksum". */
		CHECK(get16(seg + l3 + 6) != 0);
		CHECK(l4_ok(seg, l3, IPPROTO_UDP_, len));
	}
	CHECK(!memcmp(seg + hdrs, orig + hdrs + i * info->gso_size, len - hdrs));
}

/* ---- coalescing ------------------------------------------------------------ */

/* What a Linux sender with TSO writes to the TUN, which GRO gives back
 * unchanged: a TCP super-packet of at least two segments carrying data,
 * header exactly as Linux fills it (NEEDS_CSUM only, no ECN, hdr_len the
 * headers' length), an IPv4 header without options and with the checksum
 * a sender computes, plain ACK/PSH flags (GRO flushes on CWR/ECE/URG/FIN, as
 * Linux GRO does), and the pseudo-header sum in the checksum field
 * (CHECKSUM_PARTIAL). */
static bool linux_like(const uint8_t *frame, const uint8_t *p, const struct tun_offload_info *info)
{
	uint8_t flags;

	/* A write is at most 65535 bytes (an IPv6 read may be 40 more). */
	if (info->kind != TUN_OFFLOAD_TCP || info->n_segs < 2 || info->len > 65535)
		return false;
	flags = p[info->l3_len + 13];
	if (frame[0] != VIRTIO_NET_HDR_F_NEEDS_CSUM ||
	    (frame[1] & VIRTIO_NET_HDR_GSO_ECN) || le16(frame + 2) != info->hdrs_len)
		return false;
	if ((p[0] >> 4) == 4 && (info->l3_len != 20 || get16(p + 10) != canonical_ip4_csum(p, 20)))
		return false;
	if (flags != TCP_ACK && flags != (TCP_ACK | TCP_PSH))
		return false;
	return get16(p + info->l3_len + 16) ==
	       naive_pseudo(p, IPPROTO_TCP_, info->len - info->l3_len);
}

struct out_list {
	struct tun_gro_out *o;
	unsigned int n;
};

static void gro_flush(struct tun_gro *gro, struct out_list *outs)
{
	int n;

	/* Too little room for the writes: refused, the table kept. */
	if (gro->n_items)
		CHECK(tun_gro_finish(gro, outs->o + outs->n, gro->n_items - 1u) == -ENOSPC);
	n = tun_gro_finish(gro, outs->o + outs->n, TUN_GRO_MAX_ITEMS);

	CHECK(n >= 0);
	outs->n += (unsigned int)n;
}

/* Adds like the worker: on a full table, finish the batch and add again. */
static int gro_add(struct tun_gro *gro, struct out_list *outs, uint8_t *buf, size_t cap,
		   size_t len, void *cookie)
{
	int r = tun_gro_add(gro, buf, cap, HEADROOM, len, cookie);

	if (r == -ENOSPC) {
		CHECK(gro->n_items == TUN_GRO_MAX_ITEMS);
		gro_flush(gro, outs);
		r = tun_gro_add(gro, buf, cap, HEADROOM, len, cookie);
		CHECK(r == TUN_GRO_HELD); /* an empty table merges nothing */
	}
	return r;
}

/* Splits a write of several segments into exact buffers: its info. */
static void resplit(const struct tun_gro_out *o, struct tun_offload_info *info,
		    struct tun_offload_seg *segs)
{
	struct tun_offload_info want;

	CHECK(naive_parse(o->data, o->len, &want) == 0);
	CHECK(tun_offload_parse(o->data, o->len, info) == 0);
	same_info(info, &want);
	CHECK((info->kind == TUN_OFFLOAD_TCP || info->kind == TUN_OFFLOAD_UDP) && info->n_segs == o->segs);
	for (unsigned int k = 0; k < o->segs; k++) {
		segs[k].cap = HEADROOM + seg_len(info, k);
		segs[k].buf = xmalloc(segs[k].cap);
	}
	CHECK(tun_offload_split(info, segs, o->segs, HEADROOM) == o->segs);
}

static void free_segs(struct tun_offload_seg *segs, unsigned int n)
{
	for (unsigned int k = 0; k < n; k++)
		free(segs[k].buf);
}

/* The header GRO puts on a super-packet of first's flow. */
static void check_super_header(const uint8_t *h, const uint8_t *first, uint16_t gso_size)
{
	bool v6 = (first[0] >> 4) == 6;
	uint32_t l3 = v6 ? 40 : (first[0] & 0xfu) * 4;
	bool udp = first[v6 ? 6 : 9] == IPPROTO_UDP_;
	uint32_t l4 = udp ? 8 : (uint32_t)(first[l3 + 12] >> 4) * 4;

	CHECK(h[0] == VIRTIO_NET_HDR_F_NEEDS_CSUM);
	CHECK(h[1] == (udp ? VIRTIO_NET_HDR_GSO_UDP_L4 :
		       v6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4));
	CHECK(le16(h + 2) == l3 + l4 && le16(h + 4) == gso_size);
	CHECK(le16(h + 6) == l3 && le16(h + 8) == (udp ? 6 : 16));
}

/* Split mode, second half: the segments coalesced again. */
static void regroup(const uint8_t *frame, const struct tun_offload_info *info,
		    struct tun_offload_seg *segs, unsigned int n, const uint8_t *orig)
{
	static struct tun_gro gro;
	static struct tun_gro_out outs_buf[MAX_SEGS + TUN_GRO_MAX_ITEMS];
	static struct tun_offload_seg again[MAX_SEGS];
	static uint8_t *bufs[MAX_SEGS];
	struct out_list outs = { outs_buf, 0 };
	unsigned int k = 0;

	tun_gro_init(&gro, false, true); /* as the worker */
	for (unsigned int i = 0; i < n; i++) {
		/* Each buffer has room for the segments behind it, and no more
		 * (the worker's have more, but an append past this would
		 * already be wrong, and ASan sees it). */
		size_t cap = HEADROOM + info->len - (n > 1 ? i * info->gso_size : 0);
		int r;

		bufs[i] = xmalloc(cap);
		memcpy(bufs[i] + HEADROOM, segs[i].buf + HEADROOM, segs[i].len);
		r = gro_add(&gro, &outs, bufs[i], cap, segs[i].len, bufs[i]);
		CHECK(r == TUN_GRO_HELD || r == TUN_GRO_MERGED);
	}
	gro_flush(&gro, &outs);

	/* The writes carry the segments in order: re-split, each gives back
	 * the ones it took. */
	for (unsigned int w = 0; w < outs.n; w++) {
		const struct tun_gro_out *o = &outs.o[w];
		struct tun_offload_info ri;

		CHECK(k < n && o->cookie == bufs[k] && o->data == bufs[k] + HEADROOM - TUN_VNET_HDR_LEN);
		/* An IPv6 packet may be 40 + 65535 bytes long. */
		CHECK(o->segs >= 1 && k + o->segs <= n && o->len <= TUN_VNET_HDR_LEN + 40 + 65535u);
		if (o->segs == 1) {
			static const uint8_t zero[TUN_VNET_HDR_LEN];

			CHECK(!memcmp(o->data, zero, TUN_VNET_HDR_LEN));
			CHECK(o->len == TUN_VNET_HDR_LEN + segs[k].len);
			CHECK(!memcmp(o->data + TUN_VNET_HDR_LEN, segs[k].buf + HEADROOM, segs[k].len));
			k++;
			continue;
		}
		check_super_header(o->data, segs[k].buf + HEADROOM, (uint16_t)(segs[k].len - info->hdrs_len));
		resplit(o, &ri, again);
		for (unsigned int s = 0; s < o->segs; s++, k++)
			CHECK(again[s].len == segs[k].len &&
			      !memcmp(again[s].buf + HEADROOM, segs[k].buf + HEADROOM, segs[k].len));
		free_segs(again, o->segs);
	}
	CHECK(k == n);

	if (trace)
		fprintf(stderr, "  regrouped into %u write(s)%s\n", outs.n,
			linux_like(frame, orig, info) ? ", Linux-like: must be the read itself" : "");
	if (linux_like(frame, orig, info)) {
		CHECK(outs.n == 1 && outs.o[0].segs == n);
		CHECK(outs.o[0].len == TUN_VNET_HDR_LEN + info->len);
		CHECK(!memcmp(outs.o[0].data, frame, TUN_VNET_HDR_LEN));
		CHECK(!memcmp(outs.o[0].data + TUN_VNET_HDR_LEN, orig, info->len));
	}
	for (unsigned int i = 0; i < n; i++)
		free(bufs[i]);
}

/* ---- MODE_SPLIT -------------------------------------------------------------- */

static void run_split(const uint8_t *data, size_t size, bool copy)
{
	static struct tun_offload_seg segs[MAX_SEGS];
	static uint8_t *before[MAX_SEGS];
	struct tun_offload_info info, want;
	uint8_t *buf, *frame, *orig = NULL;
	size_t buf_len;
	unsigned int n, first;
	uint32_t cap;
	int r, wr;

	/* A read lands at buf + HEADROOM - 10, so its packet starts at
	 * buf + HEADROOM, where the first segment is written in place. */
	buf_len = HEADROOM - TUN_VNET_HDR_LEN + size;
	buf = xmalloc(buf_len);
	frame = buf + HEADROOM - TUN_VNET_HDR_LEN;
	memcpy(frame, data, size);

	r = tun_offload_parse(frame, size, &info);
	wr = naive_parse(frame, size, &want);
	CHECK(r == 0 || r == -EINVAL || r == -EPROTONOSUPPORT);
	CHECK((r == 0) == (wr == 0));
	if (trace)
		fprintf(stderr, "split%s: parse %d kind %u segs %u\n", copy ? " (copy)" : "", r,
			r ? 0 : info.kind, r ? 0 : info.n_segs);
	if (r)
		goto out;
	same_info(&info, &want);
	CHECK(info.n_segs >= 1 && info.n_segs <= MAX_SEGS);
	n = info.n_segs;
	orig = xmalloc(info.len);
	memcpy(orig, info.pkt, info.len);

	first = 0;
	if (!copy) {
		segs[0].buf = buf;
		segs[0].cap = (uint32_t)buf_len;
		first = 1;
	}
	for (unsigned int i = first; i < n; i++) {
		segs[i].cap = HEADROOM + seg_len(&info, i);
		segs[i].buf = xmalloc(segs[i].cap);
		memset(segs[i].buf, 0xa5, segs[i].cap);
	}
	for (unsigned int i = 0; i < n; i++) {
		before[i] = xmalloc(segs[i].cap);
		memcpy(before[i], segs[i].buf, segs[i].cap);
	}
	/* Refusals write nothing: too few segments, one byte too little room. */
	if (n > 1)
		CHECK(tun_offload_split(&info, segs, n - 1, HEADROOM) == -ENOSPC);
	cap = segs[n - 1].cap;
	segs[n - 1].cap = HEADROOM + seg_len(&info, n - 1) - 1;
	CHECK(tun_offload_split(&info, segs, n, HEADROOM) == -EMSGSIZE);
	segs[n - 1].cap = cap;
	for (unsigned int i = 0; i < n; i++) {
		CHECK(!memcmp(before[i], segs[i].buf, segs[i].cap));
		free(before[i]);
	}

	CHECK(tun_offload_split(&info, segs, n, HEADROOM) == (int)n);
	for (unsigned int i = 0; i < n; i++)
		check_segment(&info, orig, segs[i].buf + HEADROOM, segs[i].len, i);
	regroup(data, &info, segs, n, orig);
	for (unsigned int i = first; i < n; i++)
		free(segs[i].buf);
out:
	free(orig);
	free(buf);
}

/* ---- MODE_GRO ---------------------------------------------------------------- */

/* A packet as GRO sees it: keyed when it is TCP with readable ports. */
struct fed {
	uint8_t *buf;      /* its GRO buffer */
	uint8_t *copy;     /* the packet as fed */
	uint32_t len;      /* bytes fed */
	bool keyed;
	uint32_t l3, l4, tot, payload, seq;
	uint8_t flags;
	/* As the head of a write: */
	unsigned int segs;
	uint32_t next_seq;
	bool closed;
};

static void view(struct fed *f)
{
	const uint8_t *p = f->copy;
	uint8_t proto;

	f->keyed = false;
	if (f->len < 1)
		return;
	if ((p[0] >> 4) == 4) {
		if (f->len < 20)
			return;
		f->l3 = (p[0] & 0xfu) * 4;
		f->tot = get16(p + 2);
		if (f->l3 < 20 || f->tot < f->l3 || f->tot > f->len || (get16(p + 6) & 0x3fff))
			return;
		proto = p[9];
	} else if ((p[0] >> 4) == 6) {
		if (f->len < 40)
			return;
		f->l3 = 40;
		f->tot = 40 + (uint32_t)get16(p + 4);
		if (f->tot > f->len)
			return;
		proto = p[6];
	} else {
		return;
	}
	if (proto != IPPROTO_TCP_ || f->l3 + 20 > f->tot)
		return;
	f->l4 = (uint32_t)(p[f->l3 + 12] >> 4) * 4;
	if (f->l4 < 20 || f->l3 + f->l4 > f->tot)
		return;
	f->keyed = true;
	f->payload = f->tot - f->l3 - f->l4;
	f->seq = get32(p + f->l3 + 4);
	f->flags = p[f->l3 + 13];
}

/* A plain data segment GRO may start a write with or append. */
static bool mergeable(const struct fed *f, bool verify)
{
	const uint8_t *p = f->copy;

	if (!f->keyed || !f->payload || (f->flags != TCP_ACK && f->flags != (TCP_ACK | TCP_PSH)))
		return false;
	if ((p[0] >> 4) == 4 && (f->l3 != 20 || !sum_ok(naive_sum(p, 20, 0))))
		return false;
	return !verify || l4_ok(p, f->l3, IPPROTO_TCP_, f->tot);
}

static bool same_flow(const struct fed *a, const struct fed *b)
{
	const uint8_t *p = a->copy, *q = b->copy;

	if ((p[0] >> 4) != (q[0] >> 4))
		return false;
	if ((p[0] >> 4) == 6 ? memcmp(p + 8, q + 8, 32) : memcmp(p + 12, q + 12, 8))
		return false;
	return !memcmp(p + a->l3, q + b->l3, 4);
}

/* Segment s of a re-split write against the packet f that went in. */
static void check_resegment(const uint8_t *seg, uint32_t len, const struct fed *f, bool verify)
{
	const uint8_t *p = f->copy;
	uint32_t l3 = f->l3;
	bool v4 = (p[0] >> 4) == 4;
	int skip[5], ns = 0;

	/* What GRO does not carry: the IPv4 ID when DF says it means nothing,
	 * the checksums (recomputed), and the urgent pointer of segments
	 * without URG (which Linux GRO ignores as well). */
	if (v4 && (get16(p + 6) & 0x4000))
		skip[ns++] = 4;
	if (v4)
		skip[ns++] = 10;
	skip[ns++] = (int)l3 + 16;
	skip[ns++] = (int)l3 + 18;
	skip[ns] = -1;
	CHECK(len == f->tot);
	CHECK(equal_except(seg, p, 0, len, skip));
	CHECK(!(f->flags & TCP_URG));
	if (v4) {
		CHECK(sum_ok(naive_sum(seg, l3, 0)));
		CHECK(sum_ok(naive_sum(p, l3, 0))); /* GRO merges only valid headers */
	}
	CHECK(l4_ok(seg, l3, IPPROTO_TCP_, len));
	if (verify)
		CHECK(l4_ok(p, l3, IPPROTO_TCP_, len));
}

static void run_gro(const uint8_t *data, size_t size, bool verify)
{
	static struct tun_gro gro;
	static struct tun_gro_out outs_buf[MAX_FED + TUN_GRO_MAX_ITEMS];
	static struct fed fed[MAX_FED];
	static int head_of[MAX_FED];  /* the write a packet went into, by its head */
	static struct tun_offload_seg again[MAX_SEGS];
	struct out_list outs = { outs_buf, 0 };
	unsigned int n = 0, batch_start = 0;
	size_t at = 0;

	/* The model here is TCP's; UDP merging is checked in split mode
	 * (regroup: UDP super-packets split, coalesced again and re-split
	 * give back the same datagrams). */
	tun_gro_init(&gro, verify, false);
	while (at + 4 <= size && n < MAX_FED) {
		struct fed *f = &fed[n];
		/* The room as tun_gro_add sees it (cap - off), so that the
		 * fuzzer finds it in comparisons and tries the exact fit. */
		uint32_t len = le16(data + at), room = le16(data + at + 2);
		size_t cap;
		int r;

		at += 4;
		if (len > size - at)
			len = (uint32_t)(size - at);
		memset(f, 0, sizeof(*f));
		f->len = len;
		f->copy = xmalloc(len);
		memcpy(f->copy, data + at, len);
		at += len;
		cap = HEADROOM + (room > len ? room : len);
		f->buf = xmalloc(cap);
		memcpy(f->buf + HEADROOM, f->copy, len);
		view(f);
		f->segs = 1;
		f->next_seq = f->seq + f->payload;

		r = tun_gro_add(&gro, f->buf, cap, HEADROOM, len, (void *)(uintptr_t)(n + 1));
		if (r == -ENOSPC) {
			CHECK(gro.n_items == TUN_GRO_MAX_ITEMS);
			gro_flush(&gro, &outs);
			batch_start = n;
			r = tun_gro_add(&gro, f->buf, cap, HEADROOM, len, (void *)(uintptr_t)(n + 1));
			CHECK(r == TUN_GRO_HELD);
		}
		CHECK(len ? r == TUN_GRO_HELD || r == TUN_GRO_MERGED : r == -EINVAL);
		head_of[n] = r == TUN_GRO_HELD ? (int)n : -1;
		if (r == TUN_GRO_MERGED) {
			/* Into the latest write of its flow in this batch, which
			 * it continues: plain data, next in sequence, no longer
			 * than the first, the write not closed. */
			int h = -1;

			CHECK(f->keyed);
			for (unsigned int k = n; k-- > batch_start;)
				if (head_of[k] == (int)k && fed[k].keyed && same_flow(&fed[k], f)) {
					h = (int)k;
					break;
				}
			CHECK(h >= 0);
			CHECK(f->flags == TCP_ACK || f->flags == (TCP_ACK | TCP_PSH));
			CHECK(f->payload > 0 && f->payload <= fed[h].payload);
			CHECK(f->seq == fed[h].next_seq && !fed[h].closed);
			fed[h].segs++;
			fed[h].next_seq += f->payload;
			fed[h].closed = f->payload < fed[h].payload || (f->flags & TCP_PSH);
			head_of[n] = h;
		} else if (r == TUN_GRO_HELD) {
			fed[n].closed = !mergeable(f, verify) || (f->flags & TCP_PSH);
		}
		n++;
	}
	gro_flush(&gro, &outs);
	if (trace)
		fprintf(stderr, "gro%s: %u packets, %u writes\n", verify ? " (verify)" : "", n, outs.n);

	/* Every held packet is one write, in order; merged ones ride in theirs. */
	for (unsigned int w = 0, k = 0; w < outs.n; w++) {
		const struct tun_gro_out *o = &outs.o[w];
		unsigned int h = (unsigned int)((uintptr_t)o->cookie - 1), s;
		struct tun_offload_info ri;
		const struct fed *f;

		while (k < n && head_of[k] != (int)k)
			k++;
		CHECK(h == k);
		f = &fed[h];
		k++;
		CHECK(o->segs == f->segs && o->data == f->buf + HEADROOM - TUN_VNET_HDR_LEN);
		CHECK(o->len <= TUN_VNET_HDR_LEN + 65535u);
		if (o->segs == 1) {
			static const uint8_t zero[TUN_VNET_HDR_LEN];

			CHECK(!memcmp(o->data, zero, TUN_VNET_HDR_LEN));
			CHECK(o->len == TUN_VNET_HDR_LEN + (f->keyed ? f->tot : f->len));
			CHECK(!memcmp(o->data + TUN_VNET_HDR_LEN, f->copy, o->len - TUN_VNET_HDR_LEN));
			continue;
		}
		check_super_header(o->data, f->copy, (uint16_t)f->payload);
		resplit(o, &ri, again);
		s = 0;
		for (unsigned int m = h; m < n && s < o->segs; m++)
			if (head_of[m] == (int)h)
				check_resegment(again[s].buf + HEADROOM, again[s].len, &fed[m], verify), s++;
		CHECK(s == o->segs);
		free_segs(again, o->segs);
	}
	for (unsigned int k = 0; k < n; k++) {
		if (fed[k].len)
			CHECK(head_of[k] >= 0);
		free(fed[k].copy);
		free(fed[k].buf);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (trace < 0)
		trace = getenv("FUZZ_TRACE") != NULL;
	if (size < 1)
		return 0;
	if ((data[0] & 1) == MODE_SPLIT)
		run_split(data + 1, size - 1, data[0] & F_COPY);
	else
		run_gro(data + 1, size - 1, data[0] & F_VERIFY);
	return 0;
}
