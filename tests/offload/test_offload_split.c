/* Splitting GSO super-packets: generated TCPv4/TCPv6/UDPv4/UDPv6 reads with
 * MSS 536..1448 and payloads of random size, exact multiples of the MSS and
 * one byte over. Each segment is checked field by field, its checksums by
 * the naive routine, and the payloads must concatenate to the original.
 * Also: in-place first segment, non-GSO checksum completion, buffer errors.
 * Every output buffer is allocated to its exact size (ASan sees overruns). */
#include "offload_test.h"

#include <errno.h>

enum { HEADROOM = 16, MAX_FRAME = TUN_VNET_HDR_LEN + 40 + 65535 };

static uint8_t frame[MAX_FRAME], payload[65536], joined[65536];

/* Builds a random generator setting for one round. */
static void random_gen(struct gen *g, bool v6, bool udp, int iter)
{
	uint32_t max_payload, n;

	gen_default(g, v6, udp);
	g->mss = (uint16_t)t_range(536, 1448);
	g->id = (uint16_t)t_rand();
	g->seq = (uint32_t)t_rand();
	g->df = t_rand() & 1;
	g->tos = (uint8_t)t_rand();
	g->opt_len = (uint8_t)(t_range(0, 10) * 4);
	fill_random(g->opts, g->opt_len);
	if (!v6 && iter % 5 == 0)
		g->ip_opt_len = (uint8_t)(t_range(1, 10) * 4);
	/* PSH, FIN and CWR must each end up on one segment only. */
	g->tcp_flags = (uint8_t)(0x10 | (t_rand() & 1 ? 0x08 : 0) | (t_rand() % 4 == 0 ? 0x01 : 0) |
				 (t_rand() % 4 == 0 ? 0x80 : 0) | (t_rand() % 4 == 0 ? 0x40 : 0));

	max_payload = (v6 ? 65535 + 40 : 65535) - gen_hdrs(g);
	n = max_payload / g->mss;
	switch (iter % 4) {
	case 0:
		g->payload = t_range(1, max_payload);
		break;
	case 1: /* exact multiple */
		g->payload = g->mss * t_range(1, n);
		break;
	case 2: /* one byte over */
		g->payload = g->mss * t_range(1, n - 1) + 1;
		break;
	default: /* the biggest a read can hold */
		g->payload = max_payload;
		break;
	}
}

/* Checks the segments of g against the generated super-packet src. */
static void check_segments(const struct gen *g, const uint8_t *src, struct tun_offload_seg *segs,
			   int n)
{
	uint32_t l3 = gen_l3(g), hdrs = gen_hdrs(g), off = 0;
	int want = (int)((g->payload + g->mss - 1) / g->mss);

	CHECK(n == want, "segments %d want %d (payload %u mss %u)", n, want, g->payload, g->mss);
	for (int i = 0; i < n && i < want; i++) {
		const uint8_t *p = segs[i].buf + HEADROOM;
		uint32_t plen = segs[i].len - hdrs, want_plen = i + 1 < want ? g->mss : g->payload - off;
		const uint8_t *l4 = p + l3;

		CHECK(plen == want_plen, "seg %d payload %u want %u", i, plen, want_plen);
		if (g->v6) {
			CHECK(t_get16(p + 4) == segs[i].len - 40, "seg %d ipv6 payload length", i);
			CHECK(!memcmp(p, src, 4) && !memcmp(p + 6, src + 6, 34), "seg %d ipv6 header", i);
		} else {
			CHECK(t_get16(p + 2) == segs[i].len, "seg %d total length", i);
			CHECK(t_get16(p + 4) == (uint16_t)(g->id + i), "seg %d id %u", i, t_get16(p + 4));
			CHECK(naive_ip4_ok(p), "seg %d header checksum", i);
			CHECK(!memcmp(p, src, 2) && !memcmp(p + 6, src + 6, 4) &&
			      !memcmp(p + 12, src + 12, l3 - 12), "seg %d ipv4 header", i);
		}
		CHECK(!memcmp(l4, src + l3, 4), "seg %d ports", i);
		if (g->udp) {
			CHECK(t_get16(l4 + 4) == segs[i].len - l3, "seg %d udp length", i);
			CHECK(t_get16(l4 + 6) != 0, "seg %d udp checksum zero", i);
			CHECK(naive_l4_ok(p, l3, 17, segs[i].len), "seg %d udp checksum", i);
		} else {
			uint8_t flags = g->tcp_flags;

			if (i + 1 < want)
				flags &= (uint8_t)~0x09; /* FIN, PSH on the last only */
			if (i > 0)
				flags &= (uint8_t)~0x80; /* CWR on the first only */
			CHECK(t_get32(l4 + 4) == g->seq + off, "seg %d seq", i);
			CHECK(l4[13] == flags, "seg %d flags %02x want %02x", i, l4[13], flags);
			CHECK(!memcmp(l4 + 8, src + l3 + 8, 5) && !memcmp(l4 + 14, src + l3 + 14, 2) &&
			      !memcmp(l4 + 18, src + l3 + 18, 2 + g->opt_len), "seg %d tcp header", i);
			CHECK(naive_l4_ok(p, l3, 6, segs[i].len), "seg %d tcp checksum", i);
		}
		memcpy(joined + off, p + hdrs, plen);
		off += plen;
	}
	CHECK(off == g->payload && !memcmp(joined, src + hdrs, g->payload), "payload differs");
}

static void one_round(bool v6, bool udp, int iter)
{
	struct tun_offload_seg segs[TUN_OFFLOAD_MAX_SEGS];
	struct tun_offload_info info;
	struct gen g;
	uint32_t len;
	int n, err;

	random_gen(&g, v6, udp, iter);
	fill_random(payload, g.payload);
	gen_vnet(frame, &g, true);
	len = gen_packet(frame + TUN_VNET_HDR_LEN, &g, payload);
	/* The kernel's partial checksum is not needed: spoil it sometimes. */
	if (iter & 8)
		t_put16(frame + TUN_VNET_HDR_LEN + gen_l3(&g) + (udp ? 6 : 16), (uint16_t)t_rand());

	err = tun_offload_parse(frame, TUN_VNET_HDR_LEN + len, &info);
	CHECK(err == 0, "parse %d", err);
	if (err)
		return;
	CHECK(info.kind == (udp ? TUN_OFFLOAD_UDP : TUN_OFFLOAD_TCP) && info.len == len &&
	      info.gso_size == g.mss && info.hdrs_len == gen_hdrs(&g), "info");
	CHECK(info.max_seg_len == gen_hdrs(&g) + (g.payload < g.mss ? g.payload : g.mss), "max_seg_len");
	for (unsigned int i = 0; i < info.n_segs; i++) {
		segs[i].cap = (uint32_t)(HEADROOM + (i + 1u == info.n_segs ? gen_hdrs(&g) +
						     (g.payload - i * g.mss) : info.max_seg_len));
		segs[i].buf = malloc(segs[i].cap);
	}
	n = tun_offload_split(&info, segs, info.n_segs, HEADROOM);
	check_segments(&g, frame + TUN_VNET_HDR_LEN, segs, n);
	for (unsigned int i = 0; i < info.n_segs; i++)
		free(segs[i].buf);
}

/* Slot 0 is the input buffer itself: same output as a copying split. */
static void in_place(void)
{
	enum { N = 64 };
	struct tun_offload_seg copy[N], inpl[N];
	struct tun_offload_info info;
	uint8_t *buf = malloc(HEADROOM + 65535);
	struct gen g;
	uint32_t len;
	int n1, n2;

	gen_default(&g, false, false);
	g.mss = 1000;
	g.payload = 20500;
	g.tcp_flags = 0x18;
	fill_random(payload, g.payload);
	len = gen_packet(buf + HEADROOM, &g, payload);
	gen_vnet(frame, &g, true);
	CHECK(tun_offload_parse_hdr(frame, buf + HEADROOM, len, &info) == 0, "parse");
	for (int i = 0; i < N; i++) {
		copy[i].buf = malloc(HEADROOM + 1100);
		copy[i].cap = HEADROOM + 1100;
		inpl[i] = copy[i];
		inpl[i].buf = malloc(HEADROOM + 1100);
	}
	n1 = tun_offload_split(&info, copy, N, HEADROOM);
	free(inpl[0].buf);
	inpl[0].buf = buf;
	inpl[0].cap = HEADROOM + 65535;
	n2 = tun_offload_split(&info, inpl, N, HEADROOM);
	CHECK(n1 == 21 && n2 == 21, "in place n %d %d", n1, n2);
	for (int i = 0; i < n1 && i < n2; i++)
		CHECK(copy[i].len == inpl[i].len &&
		      !memcmp(copy[i].buf + HEADROOM, inpl[i].buf + HEADROOM, copy[i].len),
		      "in place segment %d differs", i);
	for (int i = 0; i < N; i++) {
		free(copy[i].buf);
		free(inpl[i].buf);
	}
}

/* One packet with NEEDS_CSUM: the checksum is completed; a UDP sum of
 * zero becomes 0xffff. A plain packet is copied as it is. */
static void single_packets(void)
{
	struct tun_offload_seg seg;
	struct tun_offload_info info;
	uint8_t out[HEADROOM + 2000];
	struct gen g;
	uint32_t len;

	seg.buf = out;
	seg.cap = sizeof(out);
	for (int iter = 0; iter < 400; iter++) {
		bool v6 = iter & 1, udp = iter & 2;

		gen_default(&g, v6, udp);
		g.payload = t_range(0, 1400);
		fill_random(payload, g.payload);
		if (udp && iter % 8 == 2 && g.payload >= 2) {
			/* choose two payload bytes so the sum is 0xffff */
			uint32_t l3 = gen_l3(&g);

			payload[0] = payload[1] = 0;
			len = gen_packet(frame + TUN_VNET_HDR_LEN, &g, payload);
			uint8_t *pk = frame + TUN_VNET_HDR_LEN;

			t_put16(pk + l3 + 6, 0);
			uint16_t s = naive_sum(pk + l3, len - l3, naive_pseudo(pk, 17, len - l3));
			t_put16(payload, (uint16_t)~s);
		}
		len = gen_packet(frame + TUN_VNET_HDR_LEN, &g, payload);
		gen_vnet(frame, &g, false);
		CHECK(tun_offload_parse(frame, TUN_VNET_HDR_LEN + len, &info) == 0 &&
		      info.kind == TUN_OFFLOAD_CSUM && info.n_segs == 1, "parse csum");
		CHECK(tun_offload_split(&info, &seg, 1, HEADROOM) == 1 && seg.len == len, "split csum");
		CHECK(naive_l4_ok(out + HEADROOM, gen_l3(&g), udp ? 17 : 6, len), "completed checksum");
		if (udp && iter % 8 == 2 && g.payload >= 2)
			CHECK(t_get16(out + HEADROOM + gen_l3(&g) + 6) == 0xffff, "udp zero sum");
		/* the rest of the packet untouched */
		naive_complete(frame + TUN_VNET_HDR_LEN, &g);
		CHECK(!memcmp(out + HEADROOM, frame + TUN_VNET_HDR_LEN, len), "csum packet bytes");
	}

	/* No flags: copied unchanged, padding behind the IP length dropped. */
	gen_default(&g, false, true);
	g.payload = 100;
	len = gen_packet(frame + TUN_VNET_HDR_LEN, &g, payload);
	memset(frame, 0, TUN_VNET_HDR_LEN);
	CHECK(tun_offload_parse(frame, TUN_VNET_HDR_LEN + len + 7, &info) == 0 &&
	      info.kind == TUN_OFFLOAD_PLAIN && info.len == len, "parse plain");
	CHECK(tun_offload_split(&info, &seg, 1, HEADROOM) == 1 && seg.len == len &&
	      !memcmp(out + HEADROOM, frame + TUN_VNET_HDR_LEN, len), "split plain");
}

/* Too few slots or a slot too small: an error, and slot 0 untouched. */
static void buffer_errors(void)
{
	struct tun_offload_seg segs[8];
	struct tun_offload_info info;
	uint8_t bufs[8][HEADROOM + 1500];
	struct gen g;
	uint32_t len;

	gen_default(&g, true, false);
	g.mss = 1400;
	g.payload = 8 * 1400;
	len = gen_packet(frame + TUN_VNET_HDR_LEN, &g, payload);
	gen_vnet(frame, &g, true);
	CHECK(tun_offload_parse(frame, TUN_VNET_HDR_LEN + len, &info) == 0 && info.n_segs == 8, "parse");
	memset(bufs, 0xee, sizeof(bufs));
	for (int i = 0; i < 8; i++) {
		segs[i].buf = bufs[i];
		segs[i].cap = sizeof(bufs[i]);
	}
	CHECK(tun_offload_split(&info, segs, 7, HEADROOM) == -ENOSPC, "too few slots");
	segs[5].cap = HEADROOM + info.max_seg_len - 1;
	CHECK(tun_offload_split(&info, segs, 8, HEADROOM) == -EMSGSIZE, "slot too small");
	segs[5].cap = 10;
	CHECK(tun_offload_split(&info, segs, 8, HEADROOM) == -EMSGSIZE, "headroom beyond cap");
	CHECK(bufs[0][HEADROOM] == 0xee && bufs[7][HEADROOM] == 0xee, "written on error");
	segs[5].cap = HEADROOM + info.max_seg_len;
	CHECK(tun_offload_split(&info, segs, 8, HEADROOM) == 8, "exact fit");
}

int main(void)
{
	for (int iter = 0; iter < 400; iter++) {
		one_round(false, false, iter);
		one_round(true, false, iter);
		one_round(false, true, iter);
		one_round(true, true, iter);
	}
	in_place();
	single_packets();
	buffer_errors();
	return t_exit("test_offload_split");
}
