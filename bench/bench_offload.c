/* TUN offload micro-benchmark on one core: splits of a 64 KiB TCPv4
 * super-packet (MSS 1448, 46 segments) into MTU-sized packets, coalescing of
 * those 46 segments back into one super-packet (with and without checksum
 * verification), and the raw checksum rate over 64 KiB.
 * usage: bench_offload [N]   (N super-packets per measurement, default 20000) */
#include "bench_util.h"
#include "pkt/csum.h"
#include "tun/offload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
	HEADROOM = 16,
	MSS = 1448,
	L3 = 20,
	L4 = 32, /* TCP with a timestamp option */
	PKT_LEN = 65535,
	SEG_CAP = HEADROOM + L3 + L4 + MSS,
	MAX_SEGS = (PKT_LEN - L3 - L4 + MSS - 1) / MSS,
	REPEAT = 3,
};

static uint8_t frame[TUN_VNET_HDR_LEN + PKT_LEN];
static uint8_t seg_mem[MAX_SEGS][SEG_CAP];
static uint8_t head_mem[HEADROOM + PKT_LEN];
static struct tun_offload_seg segs[MAX_SEGS];
static struct tun_gro gro;
static volatile uint64_t sink;

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* A super-packet as the kernel hands it over: NEEDS_CSUM, the pseudo-header
 * sum in the TCP checksum field. */
static void make_frame(void)
{
	struct tun_vnet_hdr h = {
		.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
		.gso_type = VIRTIO_NET_HDR_GSO_TCPV4,
		.hdr_len = htole16(L3 + L4),
		.gso_size = htole16(MSS),
		.csum_start = htole16(L3),
		.csum_offset = htole16(16),
	};
	uint8_t *ip = frame + TUN_VNET_HDR_LEN, *th = ip + L3;

	memcpy(frame, &h, sizeof(h));
	for (size_t i = 0; i < PKT_LEN; i++)
		ip[i] = (uint8_t)(i * 131 + 7);
	memcpy(ip, "\x45\x00\x00\x00\x12\x34\x40\x00\x40\x06\x00\x00\x0a\x00\x00\x01\x0a\x00\x00\x02", L3);
	put16(ip + 2, PKT_LEN);
	put16(ip + 10, tun_csum_finish(tun_csum_add(0, ip, L3)));
	memcpy(th, "\x9c\x40\x14\x51\x00\x00\x10\x00\x00\x00\x20\x00\x80\x18\x01\xf6\x00\x00\x00\x00"
		   "\x01\x01\x08\x0a\x00\x01\x02\x03\x04\x05\x06\x07", L4);
	put16(th + 16, tun_csum_fold(tun_csum_pseudo(ip, 6, PKT_LEN - L3)));
}

static int split_once(void)
{
	struct tun_offload_info info;

	if (tun_offload_parse(frame, sizeof(frame), &info))
		return -1;
	return tun_offload_split(&info, segs, MAX_SEGS, HEADROOM);
}

/* Feeds the split segments to GRO, the first from a 64 KiB buffer. */
static int coalesce_once(int n)
{
	struct tun_gro_out out[2];

	memcpy(head_mem + HEADROOM, seg_mem[0] + HEADROOM, segs[0].len);
	tun_gro_add(&gro, head_mem, sizeof(head_mem), HEADROOM, segs[0].len, NULL);
	for (int i = 1; i < n; i++)
		tun_gro_add(&gro, segs[i].buf, segs[i].cap, HEADROOM, segs[i].len, NULL);
	return tun_gro_finish(&gro, out, 2) == 1 ? out[0].segs : -1;
}

static void report(const char *what, double best, long n, double bytes)
{
	printf("%-34s %10.0f /s  %7.2f Gbit/s  %7.1f ns each\n", what, n / best,
	       bytes * 8 * n / best / 1e9, best / n * 1e9);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	double best, t;
	int segs_n = 0;

	if (n <= 0) {
		fprintf(stderr, "usage: %s [N]\n", argv[0]);
		return 2;
	}
	make_frame();
	for (int i = 0; i < MAX_SEGS; i++) {
		segs[i].buf = seg_mem[i];
		segs[i].cap = SEG_CAP;
	}
	segs_n = split_once();
	if (segs_n != MAX_SEGS) {
		fprintf(stderr, "split gave %d segments, want %d\n", segs_n, MAX_SEGS);
		return 1;
	}
	printf("64 KiB TCPv4 super-packet, MSS %d, %d segments, %ld per run, best of %d\n",
	       MSS, segs_n, n, REPEAT);

	best = 1e9;
	for (int r = 0; r < REPEAT; r++) {
		t = now_s();
		for (long i = 0; i < n; i++)
			sink += (uint64_t)split_once();
		t = now_s() - t;
		best = t < best ? t : best;
	}
	report("split (parse + 46 segments)", best, n, PKT_LEN);

	for (int verify = 1; verify >= 0; verify--) {
		tun_gro_init(&gro, verify, true);
		if (coalesce_once(segs_n) != segs_n) {
			fprintf(stderr, "coalesce did not merge all segments\n");
			return 1;
		}
		best = 1e9;
		for (int r = 0; r < REPEAT; r++) {
			t = now_s();
			for (long i = 0; i < n; i++)
				sink += (uint64_t)coalesce_once(segs_n);
			t = now_s() - t;
			best = t < best ? t : best;
		}
		report(verify ? "coalesce 46 -> 1 (verify csum)" : "coalesce 46 -> 1 (trust csum)",
		       best, n, PKT_LEN);
	}

	best = 1e9;
	for (int r = 0; r < REPEAT; r++) {
		t = now_s();
		for (long i = 0; i < n; i++)
			sink += tun_csum_add(i, frame, PKT_LEN);
		t = now_s() - t;
		best = t < best ? t : best;
	}
	report("checksum over 64 KiB", best, n, PKT_LEN);
	return 0;
}
