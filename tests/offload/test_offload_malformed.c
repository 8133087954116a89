/* Malformed input: a table of bad virtio-net headers and IP/TCP/UDP lengths,
 * each rejected with the expected error (and a few near misses accepted),
 * then random corruptions of valid frames fed to parse, split and GRO. Every
 * frame sits at the very end of an exactly sized heap block, so a read past
 * it is an ASan report (run this test under -DWEFT_SANITIZE=ON). */
#include "offload_test.h"

#include <errno.h>

enum { HEADROOM = 16 };

enum base { B_TCP4, B_TCP6, B_UDP4, B_UDP6, B_CSUM4, B_PLAIN6 };

static uint8_t payload[65536];

/* A valid frame of the given kind: 10 segments of 1000 bytes for GSO. */
static uint32_t base_frame(uint8_t *f, enum base b, struct gen *g)
{
	gen_default(g, b == B_TCP6 || b == B_UDP6 || b == B_PLAIN6, b == B_UDP4 || b == B_UDP6);
	g->mss = 1000;
	g->payload = b >= B_CSUM4 ? 300 : 10000;
	fill_random(payload, g->payload);
	gen_vnet(f, g, b < B_CSUM4);
	if (b == B_PLAIN6)
		memset(f, 0, TUN_VNET_HDR_LEN);
	return TUN_VNET_HDR_LEN + gen_packet(f + TUN_VNET_HDR_LEN, g, payload);
}

/* Splits an accepted frame into exactly sized buffers and checks what
 * comes out: lengths add up and every TCP/UDP checksum verifies. */
static void split_and_check(const struct tun_offload_info *info, const char *name)
{
	static struct tun_offload_seg segs[TUN_OFFLOAD_MAX_SEGS];
	uint32_t total = 0;
	int n;

	for (unsigned int i = 0; i < info->n_segs; i++) {
		segs[i].cap = HEADROOM + info->max_seg_len;
		segs[i].buf = malloc(segs[i].cap);
	}
	n = tun_offload_split(info, segs, info->n_segs, HEADROOM);
	CHECK(n == info->n_segs, "%s: split %d of %u", name, n, info->n_segs);
	for (int i = 0; i < n; i++) {
		const uint8_t *p = segs[i].buf + HEADROOM;
		uint8_t proto = (p[0] >> 4) == 6 ? p[6] : p[9];

		if (info->kind == TUN_OFFLOAD_TCP || info->kind == TUN_OFFLOAD_UDP) {
			CHECK(naive_l4_ok(p, info->l3_len, proto, segs[i].len), "%s: seg %d checksum", name, i);
			total += segs[i].len - info->hdrs_len;
		}
	}
	if (info->kind == TUN_OFFLOAD_TCP || info->kind == TUN_OFFLOAD_UDP)
		CHECK(total == info->len - info->hdrs_len, "%s: payload %u of %u", name, total,
		      info->len - info->hdrs_len);
	for (unsigned int i = 0; i < info->n_segs; i++)
		free(segs[i].buf);
}

/* Parses f (len bytes) from the end of an exact heap block. */
static int parse_exact(const uint8_t *f, size_t len, struct tun_offload_info *info)
{
	uint8_t *copy = malloc(len ? len : 1);
	int err;

	memcpy(copy, f, len);
	err = tun_offload_parse(copy, len, info);
	if (err == 0)
		split_and_check(info, "accepted");
	free(copy);
	return err;
}

enum field { F_FLAGS, F_GSO_TYPE, F_HDR_LEN, F_GSO_SIZE, F_CSUM_START, F_CSUM_OFF, F_PKT, F_PKT16, F_LEN };

struct bad_case {
	const char *name;
	enum base base;
	enum field field;
	int at;          /* F_PKT/F_PKT16: offset in the IP packet (-1: TCP flags) */
	int value;       /* new value; F_LEN: bytes to cut (negative) or add */
	int want;
};

#define TCPF(b) (b == B_TCP6 ? 40 + 13 : 20 + 13)

static const struct bad_case cases[] = {
	{ "control tcp4", B_TCP4, F_FLAGS, 0, 1, 0 },
	{ "control udp6", B_UDP6, F_FLAGS, 0, 1, 0 },
	{ "RSC_INFO flag", B_TCP4, F_FLAGS, 0, 5, -EINVAL },
	{ "flag 0x80", B_CSUM4, F_FLAGS, 0, 0x81, -EINVAL },
	{ "DATA_VALID alone", B_PLAIN6, F_FLAGS, 0, 2, 0 },
	{ "GSO without NEEDS_CSUM", B_TCP6, F_FLAGS, 0, 0, -EINVAL },
	{ "GSO with DATA_VALID only", B_TCP4, F_FLAGS, 0, 2, -EINVAL },
	{ "gso_type 2", B_TCP4, F_GSO_TYPE, 0, 2, -EINVAL },
	{ "gso_type UFO", B_UDP4, F_GSO_TYPE, 0, 3, -EPROTONOSUPPORT },
	{ "gso_type 6", B_TCP4, F_GSO_TYPE, 0, 6, -EINVAL },
	{ "gso_type 0x7f", B_TCP4, F_GSO_TYPE, 0, 0x7f, -EINVAL },
	{ "TCPV4 on IPv6", B_TCP6, F_GSO_TYPE, 0, 1, -EINVAL },
	{ "TCPV6 on IPv4", B_TCP4, F_GSO_TYPE, 0, 4, -EINVAL },
	{ "UDP_L4 on TCP", B_TCP4, F_GSO_TYPE, 0, 5, -EINVAL },
	{ "TCPV4 on UDP", B_UDP4, F_GSO_TYPE, 0, 1, -EINVAL },
	{ "ECN on UDP_L4", B_UDP6, F_GSO_TYPE, 0, 0x85, -EINVAL },
	{ "ECN on TCPV4", B_TCP4, F_GSO_TYPE, 0, 0x81, 0 },
	{ "ECN without GSO", B_CSUM4, F_GSO_TYPE, 0, 0x80, -EINVAL },
	{ "gso_size 0", B_TCP4, F_GSO_SIZE, 0, 0, -EINVAL },
	{ "gso_size 1", B_UDP4, F_GSO_SIZE, 0, 1, -EINVAL },
	{ "gso_size 47", B_TCP6, F_GSO_SIZE, 0, 47, -EINVAL },
	{ "gso_size 48", B_TCP6, F_GSO_SIZE, 0, 48, 0 },
	{ "gso_size 0xffff", B_TCP4, F_GSO_SIZE, 0, 0xffff, 0 },
	{ "hdr_len 0 (ignored)", B_TCP4, F_HDR_LEN, 0, 0, 0 },
	{ "hdr_len 0xffff (ignored)", B_UDP6, F_HDR_LEN, 0, 0xffff, 0 },
	{ "csum_start 0", B_TCP4, F_CSUM_START, 0, 0, -EINVAL },
	{ "csum_start 19", B_TCP4, F_CSUM_START, 0, 19, -EINVAL },
	{ "csum_start 21", B_TCP4, F_CSUM_START, 0, 21, -EINVAL },
	{ "csum_start 0xffff", B_TCP6, F_CSUM_START, 0, 0xffff, -EINVAL },
	{ "csum_offset 6 on TCP", B_TCP4, F_CSUM_OFF, 0, 6, -EINVAL },
	{ "csum_offset 16 on UDP", B_UDP4, F_CSUM_OFF, 0, 16, -EINVAL },
	{ "csum_offset 0xffff", B_TCP6, F_CSUM_OFF, 0, 0xffff, -EINVAL },
	{ "single: csum_start inside IP header", B_CSUM4, F_CSUM_START, 0, 10, -EINVAL },
	{ "single: csum_start at the end", B_CSUM4, F_CSUM_START, 0, 20 + 32 + 300, -EINVAL },
	{ "single: field one byte out", B_CSUM4, F_CSUM_OFF, 0, 32 + 300 - 1, -EINVAL },
	{ "single: field last two bytes", B_CSUM4, F_CSUM_OFF, 0, 32 + 300 - 2, 0 },
	{ "single: csum_offset 0xffff", B_CSUM4, F_CSUM_OFF, 0, 0xffff, -EINVAL },
	{ "IP version 5", B_TCP4, F_PKT, 0, 0x55, -EPROTONOSUPPORT },
	{ "IP version 0", B_PLAIN6, F_PKT, 0, 0x00, -EPROTONOSUPPORT },
	{ "IHL 4", B_TCP4, F_PKT, 0, 0x44, -EINVAL },
	{ "IHL 0", B_CSUM4, F_PKT, 0, 0x40, -EINVAL },
	{ "IHL 15 (options over TCP)", B_TCP4, F_PKT, 0, 0x4f, -EINVAL },
	{ "total length 0", B_TCP4, F_PKT16, 2, 0, -EINVAL },
	{ "total length 19", B_CSUM4, F_PKT16, 2, 19, -EINVAL },
	{ "total length past the end", B_TCP4, F_PKT16, 2, 20 + 32 + 10000 + 1, -EINVAL },
	{ "total length cuts TCP header", B_TCP4, F_PKT16, 2, 20 + 19, -EINVAL },
	{ "total length cuts TCP options", B_TCP4, F_PKT16, 2, 20 + 31, -EINVAL },
	{ "total length cuts UDP header", B_UDP4, F_PKT16, 2, 20 + 7, -EINVAL },
	{ "total length leaves padding", B_TCP4, F_PKT16, 2, 20 + 32 + 5000, 0 },
	{ "IPv6 payload length past the end", B_TCP6, F_PKT16, 4, 32 + 10000 + 1, -EINVAL },
	{ "IPv6 payload length 0", B_UDP6, F_PKT16, 4, 0, -EINVAL },
	{ "IPv4 MF", B_TCP4, F_PKT, 6, 0x20, -EPROTONOSUPPORT },
	{ "IPv4 fragment offset", B_UDP4, F_PKT, 7, 0x01, -EPROTONOSUPPORT },
	{ "IPv6 hop-by-hop header", B_TCP6, F_PKT, 6, 0, -EPROTONOSUPPORT },
	{ "IPv6 fragment header", B_UDP6, F_PKT, 6, 44, -EPROTONOSUPPORT },
	{ "IPv4 protocol UDP under TCPV4", B_TCP4, F_PKT, 9, 17, -EINVAL },
	{ "IPv6 next header TCP under UDP_L4", B_UDP6, F_PKT, 6, 6, -EINVAL },
	{ "TCP data offset 4", B_TCP4, F_PKT, 20 + 12, 0x40, -EINVAL },
	{ "TCP data offset 0", B_TCP6, F_PKT, 40 + 12, 0x00, -EINVAL },
	{ "TCP SYN", B_TCP4, F_PKT, TCPF(B_TCP4), 0x12, -EINVAL },
	{ "TCP RST", B_TCP6, F_PKT, TCPF(B_TCP6), 0x14, -EINVAL },
	{ "TCP FIN|PSH", B_TCP6, F_PKT, TCPF(B_TCP6), 0x19, 0 },
	{ "frame of 9 bytes", B_TCP4, F_LEN, 0, -(20 + 32 + 10000 + 1), -EINVAL },
	{ "header only", B_TCP4, F_LEN, 0, -(20 + 32 + 10000), -EINVAL },
	{ "IPv4 cut to 19", B_CSUM4, F_LEN, 0, -(32 + 300 + 1), -EINVAL },
	{ "IPv6 cut to 39", B_PLAIN6, F_LEN, 0, -(32 + 300 + 1), -EINVAL },
	{ "cut by one", B_UDP4, F_LEN, 0, -1, -EINVAL },
	{ "padded by 3", B_TCP6, F_LEN, 0, 3, 0 },
};

static void table(void)
{
	static uint8_t f[TUN_VNET_HDR_LEN + 65535 + 16];

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct bad_case *tc = &cases[c];
		struct tun_offload_info info;
		struct tun_vnet_hdr h;
		uint8_t *pkt = f + TUN_VNET_HDR_LEN;
		struct gen g;
		uint32_t len = base_frame(f, tc->base, &g);
		int err;

		memcpy(&h, f, sizeof(h));
		switch (tc->field) {
		case F_FLAGS: h.flags = (uint8_t)tc->value; break;
		case F_GSO_TYPE: h.gso_type = (uint8_t)tc->value; break;
		case F_HDR_LEN: h.hdr_len = htole16((uint16_t)tc->value); break;
		case F_GSO_SIZE: h.gso_size = htole16((uint16_t)tc->value); break;
		case F_CSUM_START: h.csum_start = htole16((uint16_t)tc->value); break;
		case F_CSUM_OFF: h.csum_offset = htole16((uint16_t)tc->value); break;
		case F_PKT: pkt[tc->at] = (uint8_t)tc->value; break;
		case F_PKT16: t_put16(pkt + tc->at, (uint16_t)tc->value); break;
		case F_LEN:
			if (tc->value > 0)
				memset(f + len, 0, (size_t)tc->value);
			len = (uint32_t)((int)len + tc->value);
			break;
		}
		memcpy(f, &h, sizeof(h));
		/* a changed IPv4 header keeps a valid checksum */
		if ((pkt[0] >> 4) == 4 && (pkt[0] & 0xf) >= 5 && len >= TUN_VNET_HDR_LEN + 20u) {
			t_put16(pkt + 10, 0);
			t_put16(pkt + 10, (uint16_t)~naive_sum(pkt, 20, 0));
		}
		err = parse_exact(f, len, &info);
		CHECK(err == tc->want, "%s: got %d want %d", tc->name, err, tc->want);
	}
}

/* Random corruption of valid frames: no crash, no read out of bounds, and
 * whatever is accepted splits into packets with valid checksums. */
static void fuzz_parse(void)
{
	static uint8_t f[TUN_VNET_HDR_LEN + 65535];
	int accepted = 0;

	for (int iter = 0; iter < 20000; iter++) {
		struct tun_offload_info info;
		struct gen g;
		uint32_t len = base_frame(f, (enum base)(iter % 6), &g);
		int n = (int)t_range(1, 4);

		for (int k = 0; k < n; k++) {
			switch (t_rand() % 4) {
			case 0: /* a header byte */
				f[t_range(0, TUN_VNET_HDR_LEN - 1)] = (uint8_t)t_rand();
				break;
			case 1: /* an IP/L4 header byte */
				f[t_range(TUN_VNET_HDR_LEN, TUN_VNET_HDR_LEN + 71)] = (uint8_t)t_rand();
				break;
			case 2: /* a small gso_size */
				f[4] = (uint8_t)t_range(0, 200);
				f[5] = 0;
				break;
			default: /* truncation */
				len = t_range(0, len);
				break;
			}
		}
		if (parse_exact(f, len, &info) == 0)
			accepted++;
	}
	CHECK(accepted > 1000, "only %d accepted: the corruptions are too blunt", accepted);
}

/* Corrupted segments of one flow fed to GRO: whatever it writes must parse
 * and split into valid packets, and no buffer is read or written outside
 * its bounds (all but the first of a batch are exactly sized). */
static void fuzz_gro(void)
{
	static struct tun_gro gro;
	static struct tun_gro_out out[TUN_GRO_MAX_ITEMS];
	uint8_t *held[16];

	tun_gro_init(&gro, true, true);
	for (int iter = 0; iter < 3000; iter++) {
		struct gen g;
		int nout, nb = 0;

		gen_default(&g, iter & 1, false);
		g.payload = 1000;
		for (int i = 0; i < 16; i++) {
			uint8_t pkt[1200];
			uint32_t len;
			size_t cap;

			fill_random(payload, g.payload);
			len = gen_packet(pkt, &g, payload);
			naive_complete(pkt, &g);
			g.seq += g.payload;
			g.id++;
			if (t_rand() % 3 == 0)
				pkt[t_range(0, 70)] = (uint8_t)t_rand();
			if (t_rand() % 5 == 0)
				len = t_range(1, len);
			cap = HEADROOM + len + (i == 0 || t_rand() % 4 == 0 ? 65535 - len : 0);
			held[nb] = malloc(cap);
			memcpy(held[nb] + HEADROOM, pkt, len);
			CHECK(tun_gro_add(&gro, held[nb], cap, HEADROOM, len, NULL) >= 0, "add");
			nb++;
		}
		nout = tun_gro_finish(&gro, out, TUN_GRO_MAX_ITEMS);
		for (int i = 0; i < nout; i++) {
			struct tun_offload_info info;

			if (out[i].segs == 1)
				continue; /* passed through as it came */
			CHECK(tun_offload_parse(out[i].data, out[i].len, &info) == 0, "write %d parses", i);
			split_and_check(&info, "gro write");
		}
		while (nb)
			free(held[--nb]);
	}
}

int main(void)
{
	table();
	fuzz_parse();
	fuzz_gro();
	return t_exit("test_offload_malformed");
}
