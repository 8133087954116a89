/* Coalescing (GRO): coalesce(split(x)) == x for generated TCPv4/TCPv6
 * super-packets (header and bytes), and split(coalesce(split(x))) ==
 * split(x); interleaved flows come out separately and in order; a table of
 * refusals (other flow, sequence gap, options, SYN/FIN/RST/URG, IP fields,
 * PSH placement, bad checksums, ...) each leaves the packets apart; UDP
 * datagrams of one flow and size merge into a GSO_UDP_L4 super-packet (at
 * most 64), and pass through when the writer has no USO; the 64 KiB limit,
 * a full table and bad arguments. */
#include "offload_test.h"

#include <errno.h>

enum { HEADROOM = 16, BIG = HEADROOM + 65535, MAX_BUFS = 1024 };

static struct tun_gro gro;
static uint8_t frame[TUN_VNET_HDR_LEN + 65535], payload[65536];
static uint8_t *bufs[MAX_BUFS];
static unsigned int n_bufs;

/* A heap buffer of exactly cap bytes holding a copy of pkt at HEADROOM. */
static uint8_t *new_buf(const uint8_t *pkt, uint32_t len, size_t cap)
{
	uint8_t *b = malloc(cap);

	memcpy(b + HEADROOM, pkt, len);
	bufs[n_bufs++] = b;
	return b;
}

static void free_bufs(void)
{
	while (n_bufs)
		free(bufs[--n_bufs]);
}

static int buf_index(const void *cookie)
{
	for (unsigned int i = 0; i < n_bufs; i++)
		if (bufs[i] == cookie)
			return (int)i;
	return -1;
}

/* Feeds a copy of pkt in a buffer of cap bytes. */
static int feed(const uint8_t *pkt, uint32_t len, size_t cap)
{
	uint8_t *b = new_buf(pkt, len, cap);

	return tun_gro_add(&gro, b, cap, HEADROOM, len, b);
}

/* Splits a generated super-packet of g into exactly sized buffers (the
 * first one BIG, to take the merges); returns the count. */
static int split_gen(const struct gen *g, struct tun_offload_seg *segs, uint32_t *xlen)
{
	struct tun_offload_info info;
	int n;

	gen_vnet(frame, g, true);
	*xlen = gen_packet(frame + TUN_VNET_HDR_LEN, g, payload);
	if (tun_offload_parse(frame, TUN_VNET_HDR_LEN + *xlen, &info))
		return -1;
	for (unsigned int i = 0; i < info.n_segs; i++) {
		segs[i].cap = i ? HEADROOM + info.max_seg_len : BIG;
		segs[i].buf = malloc(segs[i].cap);
		bufs[n_bufs++] = segs[i].buf;
	}
	n = tun_offload_split(&info, segs, info.n_segs, HEADROOM);
	return n;
}

/* The output carries x: the same virtio-net header and packet bytes (or,
 * for a one-segment x, the finished segment behind a zero header). */
static void check_is_x(const struct tun_gro_out *o, const uint8_t *x, uint32_t xlen, int nsegs,
		       const struct tun_offload_seg *seg0)
{
	static const uint8_t zero[TUN_VNET_HDR_LEN];

	if (nsegs == 1) {
		CHECK(o->segs == 1 && !memcmp(o->data, zero, TUN_VNET_HDR_LEN) &&
		      o->len == TUN_VNET_HDR_LEN + seg0->len &&
		      !memcmp(o->data + TUN_VNET_HDR_LEN, seg0->buf + HEADROOM, seg0->len), "single");
		return;
	}
	CHECK(o->segs == nsegs, "segs %u want %d", o->segs, nsegs);
	CHECK(o->len == TUN_VNET_HDR_LEN + xlen, "len %zu want %u", o->len, TUN_VNET_HDR_LEN + xlen);
	CHECK(!memcmp(o->data, x - TUN_VNET_HDR_LEN, TUN_VNET_HDR_LEN), "virtio-net header differs");
	CHECK(o->len == TUN_VNET_HDR_LEN + xlen && !memcmp(o->data + TUN_VNET_HDR_LEN, x, xlen),
	      "packet differs");
}

static void random_flow(struct gen *g, bool v6)
{
	uint32_t max_payload, n;

	gen_default(g, v6, false);
	g->mss = (uint16_t)t_range(536, 1448);
	g->id = (uint16_t)t_rand();
	g->seq = (uint32_t)t_rand();
	g->ack = (uint32_t)t_rand();
	g->df = t_rand() & 1;
	g->tcp_flags = t_rand() & 1 ? 0x18 : 0x10;
	g->opt_len = (uint8_t)(t_range(0, 10) * 4);
	fill_random(g->opts, g->opt_len);
	g->sport = (uint16_t)t_rand();
	/* total length within 65535 for both versions */
	max_payload = 65535 - gen_hdrs(g);
	n = max_payload / g->mss;
	switch (t_rand() % 4) {
	case 0:
		g->payload = t_range(1, max_payload);
		break;
	case 1:
		g->payload = g->mss * t_range(1, n);
		break;
	case 2:
		g->payload = g->mss * t_range(1, n - 1) + 1;
		break;
	default:
		g->payload = t_range(1, 3 * g->mss);
		break;
	}
}

static void roundtrip(void)
{
	static struct tun_offload_seg segs[TUN_OFFLOAD_MAX_SEGS], again[TUN_OFFLOAD_MAX_SEGS];
	static uint8_t x[65535];
	struct tun_gro_out out[4];
	struct tun_offload_info info;
	struct gen g;
	uint32_t xlen;

	for (int iter = 0; iter < 300; iter++) {
		int n, nout, i;

		random_flow(&g, iter & 1);
		fill_random(payload, g.payload);
		n = split_gen(&g, segs, &xlen);
		CHECK(n >= 1, "split %d", n);
		memcpy(x, frame + TUN_VNET_HDR_LEN, xlen);
		for (i = 0; i < n; i++) {
			int r = tun_gro_add(&gro, segs[i].buf, segs[i].cap, HEADROOM, segs[i].len, NULL);

			CHECK(r == (i ? TUN_GRO_MERGED : TUN_GRO_HELD), "add %d: %d", i, r);
		}
		nout = tun_gro_finish(&gro, out, 4);
		CHECK(nout == 1, "outputs %d", nout);
		if (nout == 1)
			check_is_x(&out[0], frame + TUN_VNET_HDR_LEN, xlen, n, &segs[0]);

		/* The kernel would split the write the same way. Segment 0
		 * was the merge target, so compare against a fresh split. */
		if (nout == 1 && n > 1 && tun_offload_parse(out[0].data, out[0].len, &info) == 0) {
			for (i = 0; i < n; i++) {
				again[i].cap = segs[i].cap;
				again[i].buf = malloc(again[i].cap);
			}
			CHECK(tun_offload_split(&info, again, n, HEADROOM) == n, "resplit");
			free_bufs();
			memcpy(frame + TUN_VNET_HDR_LEN, x, xlen);
			CHECK(split_gen(&g, segs, &xlen) == n, "split again");
			for (i = 0; i < n; i++) {
				CHECK(again[i].len == segs[i].len &&
				      !memcmp(again[i].buf + HEADROOM, segs[i].buf + HEADROOM, segs[i].len),
				      "resplit segment %d differs", i);
				free(again[i].buf);
			}
		}
		free_bufs();
	}
}

/* Three flows (two IPv4 that differ in a port, one IPv6), segments
 * interleaved round robin: three writes, in the order the flows began. */
static void interleaved(void)
{
	static struct tun_offload_seg segs[3][64];
	static uint8_t xs[3][65535];
	uint32_t xlen[3];
	struct tun_gro_out out[8];
	struct gen g[3];
	int n[3], nout;

	for (int f = 0; f < 3; f++) {
		gen_default(&g[f], f == 2, false);
		g[f].sport = (uint16_t)(1000 + f);
		g[f].payload = 10000 + 1000 * (uint32_t)f;
		g[f].mss = 1200;
		fill_random(payload, g[f].payload);
		n[f] = split_gen(&g[f], segs[f], &xlen[f]);
		memcpy(xs[f], frame + TUN_VNET_HDR_LEN, xlen[f]);
	}
	for (int i = 0; i < 64; i++)
		for (int f = 0; f < 3; f++)
			if (i < n[f])
				CHECK(tun_gro_add(&gro, segs[f][i].buf, segs[f][i].cap, HEADROOM,
						  segs[f][i].len, NULL) == (i ? TUN_GRO_MERGED : TUN_GRO_HELD),
				      "flow %d seg %d", f, i);
	nout = tun_gro_finish(&gro, out, 8);
	CHECK(nout == 3, "interleaved outputs %d", nout);
	for (int f = 0; f < 3 && f < nout; f++) {
		memcpy(frame + TUN_VNET_HDR_LEN, xs[f], xlen[f]);
		gen_vnet(frame, &g[f], true);
		check_is_x(&out[f], frame + TUN_VNET_HDR_LEN, xlen[f], n[f], &segs[f][0]);
	}
	free_bufs();
}

/* Every write of a batch must be a valid packet or super-packet: parse it
 * and split it, and check each resulting segment's checksums. Returns the
 * TCP/UDP payload bytes carried. */
static uint32_t check_outputs(const struct tun_gro_out *out, int n)
{
	static struct tun_offload_seg segs[TUN_OFFLOAD_MAX_SEGS];
	static uint8_t space[TUN_OFFLOAD_MAX_SEGS][HEADROOM + 1600];
	struct tun_offload_info info;
	uint32_t total = 0;

	for (int i = 0; i < n; i++) {
		int err = tun_offload_parse(out[i].data, out[i].len, &info), k;

		CHECK(err == 0, "output %d parse %d", i, err);
		CHECK(out[i].len - TUN_VNET_HDR_LEN <= 65535, "output %d too long", i);
		if (err)
			continue;
		CHECK((info.kind == TUN_OFFLOAD_TCP || info.kind == TUN_OFFLOAD_UDP) == (out[i].segs > 1),
		      "output %d kind", i);
		for (k = 0; k < TUN_OFFLOAD_MAX_SEGS; k++) {
			segs[k].buf = space[k];
			segs[k].cap = sizeof(space[k]);
		}
		k = tun_offload_split(&info, segs, TUN_OFFLOAD_MAX_SEGS, HEADROOM);
		CHECK(k == out[i].segs, "output %d split %d", i, k);
		for (int s = 0; s < k; s++) {
			const uint8_t *p = segs[s].buf + HEADROOM;
			uint32_t l3 = (p[0] >> 4) == 6 ? 40 : (p[0] & 0xfu) * 4;
			uint8_t proto = (p[0] >> 4) == 6 ? p[6] : p[9];
			uint32_t hdrs = l3 + (proto == 6 ? (p[l3 + 12] >> 4) * 4u : 8u);

			CHECK(naive_l4_ok(p, l3, proto, segs[s].len), "output %d seg %d checksum", i, s);
			total += segs[s].len - hdrs;
		}
	}
	return total;
}

enum mut {
	M_NONE, M_SEQ_GAP, M_SEQ_BACK, M_OPT_VALUE, M_OPT_LEN, M_SYN, M_FIN, M_RST, M_URG, M_ECE,
	M_CWR, M_TOS, M_TTL, M_FLOWLABEL, M_ACK, M_WINDOW, M_PORT, M_ADDR, M_LONGER, M_DF,
	M_NODF_ID_OK, M_NODF_ID_JUMP, M_DF_ID_JUMP, M_PSH_LAST, M_PSH_FIRST, M_PSH_MIDDLE,
	M_SHORT_MIDDLE, M_PURE_ACK, M_BAD_CSUM, M_BAD_CSUM_TRUSTED, M_BAD_IPCSUM, M_IPOPTS,
	M_FRAG, M_UDP, M_SMALL_BUF, M_TCP_AE, M_IPOPT_ACK,
	M_UDP_MERGE, M_UDP_LONGER, M_UDP_SHORT_MIDDLE, M_UDP_PORT, M_UDP_TTL,
};

struct gro_case {
	const char *name;
	enum mut mut;
	bool v6;
	int n_pkts, want_items;
};

static const struct gro_case cases[] = {
	{ "same flow, in order", M_NONE, false, 3, 1 },
	{ "same flow, in order, v6", M_NONE, true, 3, 1 },
	{ "sequence gap", M_SEQ_GAP, false, 2, 2 },
	{ "sequence overlap", M_SEQ_BACK, true, 2, 2 },
	{ "different option value", M_OPT_VALUE, false, 2, 2 },
	{ "different option length", M_OPT_LEN, true, 2, 2 },
	{ "SYN", M_SYN, false, 2, 2 },
	{ "FIN", M_FIN, false, 2, 2 },
	{ "RST", M_RST, true, 2, 2 },
	{ "URG", M_URG, false, 2, 2 },
	{ "ECE", M_ECE, false, 2, 2 },
	{ "CWR", M_CWR, true, 2, 2 },
	{ "TOS", M_TOS, false, 2, 2 },
	{ "traffic class", M_TOS, true, 2, 2 },
	{ "TTL", M_TTL, false, 2, 2 },
	{ "hop limit", M_TTL, true, 2, 2 },
	{ "flow label", M_FLOWLABEL, true, 2, 2 },
	{ "ack number", M_ACK, false, 2, 2 },
	{ "window", M_WINDOW, true, 2, 2 },
	{ "other port", M_PORT, false, 2, 2 },
	{ "other address", M_ADDR, true, 2, 2 },
	{ "longer than the first", M_LONGER, false, 2, 2 },
	{ "DF differs", M_DF, false, 2, 2 },
	{ "no DF, IDs count up", M_NODF_ID_OK, false, 3, 1 },
	{ "no DF, ID jumps", M_NODF_ID_JUMP, false, 2, 2 },
	{ "DF, ID jumps", M_DF_ID_JUMP, false, 2, 1 },
	{ "PSH on the last", M_PSH_LAST, true, 3, 1 },
	{ "PSH on the first", M_PSH_FIRST, false, 2, 2 },
	{ "PSH in the middle ends it", M_PSH_MIDDLE, false, 3, 2 },
	{ "short segment ends it", M_SHORT_MIDDLE, true, 3, 2 },
	{ "pure ACK keeps its place", M_PURE_ACK, false, 3, 3 },
	{ "bad TCP checksum", M_BAD_CSUM, false, 2, 2 },
	{ "bad TCP checksum, not verified", M_BAD_CSUM_TRUSTED, false, 2, 1 },
	{ "bad IPv4 header checksum", M_BAD_IPCSUM, false, 2, 2 },
	{ "IPv4 options", M_IPOPTS, false, 2, 2 },
	{ "IPv4 fragment", M_FRAG, false, 2, 2 },
	{ "UDP, writer without USO", M_UDP, true, 3, 3 },
	{ "UDP datagrams of one flow", M_UDP_MERGE, false, 3, 1 },
	{ "UDP datagrams of one flow, v6", M_UDP_MERGE, true, 3, 1 },
	{ "UDP datagram longer than the first", M_UDP_LONGER, false, 2, 2 },
	{ "short UDP datagram ends it", M_UDP_SHORT_MIDDLE, true, 3, 2 },
	{ "UDP, other port", M_UDP_PORT, false, 2, 2 },
	{ "UDP, TTL", M_UDP_TTL, true, 2, 2 },
	{ "first buffer too small", M_SMALL_BUF, false, 2, 2 },
	{ "TCP AE bit", M_TCP_AE, true, 2, 2 },
	{ "pure ACK with IPv4 options keeps its place", M_IPOPT_ACK, false, 3, 3 },
};

/* Changes packet i (> 0 unless stated) of a case before it is built. */
static void mutate_gen(enum mut m, struct gen *g, int i)
{
	if (m == M_NODF_ID_OK || m == M_NODF_ID_JUMP)
		g->df = false;
	if (m == M_IPOPTS)
		g->ip_opt_len = 4;
	if (m == M_UDP || m == M_UDP_MERGE || m == M_UDP_LONGER || m == M_UDP_SHORT_MIDDLE ||
	    m == M_UDP_PORT || m == M_UDP_TTL)
		g->udp = true;
	if (m == M_PSH_FIRST && i == 0)
		g->tcp_flags |= 0x08;
	if (i == 0)
		return;
	switch (m) {
	case M_SEQ_GAP: g->seq += 1; break;
	case M_SEQ_BACK: g->seq -= 1; break;
	case M_OPT_VALUE: g->opts[7] ^= 1; break;
	case M_OPT_LEN: g->opt_len = 8; break;
	case M_SYN: g->tcp_flags |= 0x02; break;
	case M_FIN: g->tcp_flags |= 0x01; break;
	case M_RST: g->tcp_flags |= 0x04; break;
	case M_URG: g->tcp_flags |= 0x20; break;
	case M_ECE: g->tcp_flags |= 0x40; break;
	case M_CWR: g->tcp_flags |= 0x80; break;
	case M_TOS: g->tos ^= 4; break;
	case M_TTL: g->ttl--; break;
	case M_FLOWLABEL: g->flow_label ^= 1; break;
	case M_ACK: g->ack += 1448; break;
	case M_WINDOW: g->window++; break;
	case M_PORT: g->dport++; break;
	case M_ADDR: g->daddr[15] ^= 1; break;
	case M_LONGER: g->payload++; break;
	case M_DF: g->df = false; break;
	case M_NODF_ID_JUMP: case M_DF_ID_JUMP: g->id += 2; break;
	case M_PSH_LAST: if (i == 2) g->tcp_flags |= 0x08; break;
	case M_PSH_MIDDLE: if (i == 1) g->tcp_flags |= 0x08; break;
	case M_SHORT_MIDDLE: if (i == 1) g->payload -= 100; break;
	case M_PURE_ACK: if (i == 1) g->payload = 0; break;
	case M_IPOPT_ACK: if (i == 1) g->payload = 0, g->ip_opt_len = 4; break;
	case M_FRAG: g->df = false; break;
	case M_TCP_AE: g->tcp_res = 1; break;
	case M_UDP_LONGER: g->payload++; break;
	case M_UDP_SHORT_MIDDLE: if (i == 1) g->payload -= 100; break;
	case M_UDP_PORT: g->dport++; break;
	case M_UDP_TTL: g->ttl--; break;
	default: break;
	}
}

static void refusals(void)
{
	struct tun_gro_out out[8];
	uint8_t pkt[2000];

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct gro_case *tc = &cases[c];
		uint32_t seq, fed = 0;
		uint16_t id;
		struct gen g;
		int nout;

		tun_gro_init(&gro, tc->mut != M_BAD_CSUM_TRUSTED, tc->mut != M_UDP);
		gen_default(&g, tc->v6, false);
		g.mss = 1000;
		seq = g.seq;
		id = g.id;
		for (int i = 0; i < tc->n_pkts; i++) {
			struct gen gi = g;
			uint32_t len;

			gi.payload = 1000;
			gi.seq = seq;
			gi.id = id++;
			mutate_gen(tc->mut, &gi, i);
			fill_random(payload, gi.payload);
			len = gen_packet(pkt, &gi, payload);
			naive_complete(pkt, &gi);
			if (i == 1 && (tc->mut == M_BAD_CSUM || tc->mut == M_BAD_CSUM_TRUSTED))
				pkt[len - 1] ^= 0x40;
			if (i == 1 && tc->mut == M_BAD_IPCSUM)
				pkt[10] ^= 1;
			if (i == 1 && tc->mut == M_FRAG) {
				pkt[6] |= 0x20; /* MF */
				t_put16(pkt + 10, 0);
				t_put16(pkt + 10, (uint16_t)~naive_sum(pkt, 20, 0));
			}
			feed(pkt, len, tc->mut == M_SMALL_BUF && i == 0 ? HEADROOM + len + 999 : BIG);
			if (tc->mut != M_BAD_CSUM_TRUSTED)
				fed += gi.payload;
			seq = gi.seq + gi.payload;
		}
		nout = tun_gro_finish(&gro, out, 8);
		CHECK(nout == tc->want_items, "%s: %d writes, want %d", tc->name, nout, tc->want_items);
		if (nout > 0 && tc->mut != M_BAD_CSUM && tc->mut != M_BAD_CSUM_TRUSTED &&
		    tc->mut != M_BAD_IPCSUM)
			CHECK(check_outputs(out, nout) == fed, "%s: payload bytes", tc->name);
		/* Writes are the buffers of their first packets, in order. */
		for (int i = 0, last = -1; i < nout; i++) {
			int at = buf_index(out[i].cookie);

			CHECK(at > last && (i > 0 || at == 0), "%s: write %d is buffer %d", tc->name, i, at);
			last = at;
		}
		if (tc->mut == M_PURE_ACK && nout == 3)
			CHECK(out[1].len == TUN_VNET_HDR_LEN + gen_hdrs(&g), "pure ACK not in the middle");
		if (tc->mut == M_PSH_LAST && nout == 1)
			CHECK(out[0].data[TUN_VNET_HDR_LEN + 40 + 13] == 0x18, "PSH not carried");
		free_bufs();
	}
	tun_gro_init(&gro, true, true);
}

/* A long run of one flow: writes stop at 65535 bytes and carry it all. */
static void size_limit(void)
{
	struct tun_gro_out out[4];
	uint8_t pkt[1600];
	struct gen g;
	uint32_t fed = 0;
	int nout;

	gen_default(&g, false, false);
	g.payload = 1448;
	for (int i = 0; i < 60; i++) {
		uint32_t len;

		fill_random(payload, g.payload);
		len = gen_packet(pkt, &g, payload);
		naive_complete(pkt, &g);
		feed(pkt, len, BIG);
		fed += g.payload;
		g.seq += g.payload;
		g.id++;
	}
	nout = tun_gro_finish(&gro, out, 4);
	CHECK(nout == 2, "writes %d", nout);
	if (nout == 2)
		CHECK(out[0].segs == 45 && out[1].segs == 15, "split %u+%u", out[0].segs, out[1].segs);
	CHECK(check_outputs(out, nout) == fed, "payload bytes");
	free_bufs();
}

/* A full table refuses more, finish wants room, bad arguments fail. */
static void limits(void)
{
	static struct tun_gro_out out[TUN_GRO_MAX_ITEMS];
	uint8_t pkt[200];
	struct gen g;
	uint32_t len;
	uint8_t *b;

	gen_default(&g, false, true);
	g.payload = 50;
	len = gen_packet(pkt, &g, payload);
	for (int i = 0; i < TUN_GRO_MAX_ITEMS; i++)
		CHECK(feed(pkt, len, HEADROOM + len) == TUN_GRO_HELD, "add %d", i);
	CHECK(feed(pkt, len, HEADROOM + len) == -ENOSPC, "full table");
	CHECK(tun_gro_finish(&gro, out, TUN_GRO_MAX_ITEMS - 1) == -ENOSPC, "finish without room");
	CHECK(tun_gro_finish(&gro, out, TUN_GRO_MAX_ITEMS) == TUN_GRO_MAX_ITEMS, "finish");
	for (int i = 0; i < TUN_GRO_MAX_ITEMS; i++)
		CHECK(out[i].cookie == bufs[i] && out[i].segs == 1, "write %d order", i);
	free_bufs();
	CHECK(tun_gro_finish(&gro, out, 0) == 0, "empty finish");

	b = new_buf(pkt, len, HEADROOM + len);
	CHECK(tun_gro_add(&gro, b, HEADROOM + len, TUN_VNET_HDR_LEN - 1, len, NULL) == -EINVAL, "no headroom");
	CHECK(tun_gro_add(&gro, b, HEADROOM + len, HEADROOM, len + 1, NULL) == -EINVAL, "past the end");
	CHECK(tun_gro_add(&gro, b, HEADROOM + len, HEADROOM + len + 1, 0, NULL) == -EINVAL, "off > cap");
	CHECK(tun_gro_add(&gro, b, HEADROOM + len, HEADROOM, 0, NULL) == -EINVAL, "empty");
	CHECK(tun_gro_add(&gro, b, HEADROOM + len, HEADROOM, len, NULL) == TUN_GRO_HELD, "good");
	CHECK(tun_gro_finish(&gro, out, 1) == 1, "one");
	free_bufs();
}

/* 70 datagrams of one UDP flow: the kernel resegments at most 64 per
 * write, so they come out as 64 + 6. */
static void udp_segment_limit(void)
{
	struct tun_gro_out out[4];
	uint8_t pkt[300];
	struct gen g;
	uint32_t fed = 0;
	int nout;

	tun_gro_init(&gro, true, true);
	gen_default(&g, false, false);
	g.udp = true;
	g.payload = 100;
	for (int i = 0; i < 70; i++) {
		uint32_t len;

		g.id = (uint16_t)(100 + i);
		fill_random(payload, g.payload);
		len = gen_packet(pkt, &g, payload);
		naive_complete(pkt, &g);
		CHECK(feed(pkt, len, BIG) >= 0, "datagram %d", i);
		fed += g.payload;
	}
	nout = tun_gro_finish(&gro, out, 4);
	CHECK(nout == 2, "UDP limit: %d writes", nout);
	if (nout == 2) {
		CHECK(out[0].segs == TUN_GRO_UDP_MAX_SEGS && out[1].segs == 70 - TUN_GRO_UDP_MAX_SEGS,
		      "UDP limit: %u + %u", out[0].segs, out[1].segs);
		CHECK(check_outputs(out, nout) == fed, "UDP limit: payload bytes");
	}
	free_bufs();
}

int main(void)
{
	tun_gro_init(&gro, true, true);
	roundtrip();
	interleaved();
	refusals();
	size_limit();
	limits();
	udp_segment_limit();
	return t_exit("test_offload_gro");
}
