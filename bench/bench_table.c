/* Forwarding-table benchmark: inserts N random IPv4 and N random IPv6
 * routes (prefix lengths drawn roughly like a BGP table), then reports
 * single-core lookups per second and heap bytes per route.
 * usage: bench_table [N] [-g]   (-g: IPv6 prefixes inside 2000::/3 only) */
#include "bench_util.h"
#include "router/table.h"

#include <endian.h>
#include <malloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

enum {
	N_LOOKUPS = 1 << 22,
	N_VALUES = 1024,
	REPEAT = 3,
};

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static int values[N_VALUES];
static bool global_only;

static uint64_t rnd(void)
{
	return rnd_next(&rng_state);
}

static size_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static unsigned int cidr4(void)
{
	uint64_t r = rnd() % 100;

	if (r < 60)
		return 24;
	if (r < 85)
		return 16 + (unsigned int)(rnd() % 8);
	if (r < 95)
		return 25 + (unsigned int)(rnd() % 8);
	return 8 + (unsigned int)(rnd() % 8);
}

static unsigned int cidr6(void)
{
	uint64_t r = rnd() % 100;

	if (r < 45)
		return 48;
	if (r < 65)
		return 32 + (unsigned int)(rnd() % 16);
	if (r < 85)
		return 49 + (unsigned int)(rnd() % 16);
	if (r < 95)
		return 128;
	return 16 + (unsigned int)(rnd() % 16);
}

static void random_bytes(uint8_t *a, unsigned int len)
{
	for (unsigned int i = 0; i < len; i += 8) {
		uint64_t r = rnd();

		memcpy(a + i, &r, len - i < 8 ? len - i : 8);
	}
}

/* Sets the host bits (beyond cidr) of a to random values. */
static void random_host(uint8_t *a, unsigned int len, unsigned int cidr)
{
	uint8_t r[16];

	random_bytes(r, len);
	for (unsigned int i = 0; i < len; i++) {
		unsigned int keep = cidr > i * 8 ? cidr - i * 8 : 0;
		uint8_t m = keep >= 8 ? 0xff : (uint8_t)(0xff00u >> keep);

		a[i] = (uint8_t)((a[i] & m) | (r[i] & ~m));
	}
}

static double run_lookups(const struct rt_table *t, int af, const uint8_t *addrs,
			  unsigned int len, uintptr_t *sink)
{
	double best = 0;

	for (int rep = 0; rep < REPEAT; rep++) {
		uintptr_t acc = 0;
		double t0 = now_s(), dt;

		for (size_t i = 0; i < N_LOOKUPS; i++)
			acc += (uintptr_t)rt_lookup(t, af, addrs + i * len);
		dt = now_s() - t0;
		*sink += acc;
		if (N_LOOKUPS / dt > best)
			best = N_LOOKUPS / dt;
	}
	return best;
}

/* Bursts of BURST addresses through rt_lookup_batch, as a data path
 * would hand them over (pointers into packet headers). */
enum { BURST = 32 };

static double run_batches(const struct rt_table *t, int af, const uint8_t *addrs,
			  unsigned int len, uintptr_t *sink)
{
	const void *ptrs[BURST];
	void *out[BURST];
	double best = 0;

	for (int rep = 0; rep < REPEAT; rep++) {
		uintptr_t acc = 0;
		double t0 = now_s(), dt;

		for (size_t i = 0; i < N_LOOKUPS; i += BURST) {
			for (size_t j = 0; j < BURST; j++)
				ptrs[j] = addrs + (i + j) * len;
			rt_lookup_batch(t, af, ptrs, BURST, out);
			for (size_t j = 0; j < BURST; j++)
				acc += (uintptr_t)out[j];
		}
		dt = now_s() - t0;
		*sink += acc;
		if (N_LOOKUPS / dt > best)
			best = N_LOOKUPS / dt;
	}
	return best;
}

static void bench_family(int af, size_t n)
{
	unsigned int len = af == AF_INET ? 4 : 16;
	uint8_t *prefixes = malloc(n * 16), *cidrs = malloc(n);
	uint8_t *hit = malloc((size_t)N_LOOKUPS * len), *uni = malloc((size_t)N_LOOKUPS * len);
	struct rt_table *t;
	size_t before, after;
	uintptr_t sink = 0;
	double t0, ins, r_hit, r_uni, b_hit, b_uni;

	if (!prefixes || !cidrs || !hit || !uni) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < n; i++) {
		uint8_t *p = prefixes + i * 16;

		random_bytes(p, 16);
		if (af == AF_INET6 && global_only)
			p[0] = (uint8_t)(0x20 | (p[0] & 0x1f));
		cidrs[i] = (uint8_t)(af == AF_INET ? cidr4() : cidr6());
	}

	before = heap_bytes();
	t = rt_table_new();
	t0 = now_s();
	for (size_t i = 0; i < n; i++)
		if (rt_insert(t, af, prefixes + i * 16, cidrs[i], &values[i % N_VALUES])) {
			fprintf(stderr, "insert failed\n");
			exit(1);
		}
	ins = now_s() - t0;
	after = heap_bytes();

	/* "hit": traffic to a random route; "uniform": any address at all. */
	for (size_t i = 0; i < N_LOOKUPS; i++) {
		size_t r = rnd() % n;

		memcpy(hit + i * len, prefixes + r * 16, len);
		random_host(hit + i * len, len, cidrs[r]);
		random_bytes(uni + i * len, len);
		if (af == AF_INET6 && global_only)
			uni[i * len] = (uint8_t)(0x20 | (uni[i * len] & 0x1f));
	}
	r_hit = run_lookups(t, af, hit, len, &sink);
	r_uni = run_lookups(t, af, uni, len, &sink);
	b_hit = run_batches(t, af, hit, len, &sink);
	b_uni = run_batches(t, af, uni, len, &sink);

	printf("%s: %zu routes (%zu distinct), insert %.2f s (%.0f ns/route), ",
	       af == AF_INET ? "IPv4" : "IPv6", n, rt_count(t), ins, ins * 1e9 / (double)n);
	/* Sanitizers replace malloc, and mallinfo2 then reports nothing. */
	if (after > before)
		printf("%.1f bytes/route\n", (double)(after - before) / (double)rt_count(t));
	else
		printf("bytes/route unknown (mallinfo2 unavailable)\n");
	printf("  lookups/s on one core, rt_lookup:            %6.2f M (hit a route), "
	       "%6.2f M (uniform random)\n", r_hit / 1e6, r_uni / 1e6);
	printf("  lookups/s on one core, rt_lookup_batch(%d): %6.2f M (hit a route), "
	       "%6.2f M (uniform random)  [%zx]\n", BURST, b_hit / 1e6, b_uni / 1e6,
	       (size_t)sink & 0xf);

	t0 = now_s();
	rt_table_free(t);
	printf("  free %.2f s\n", now_s() - t0);
	free(prefixes);
	free(cidrs);
	free(hit);
	free(uni);
}

int main(int argc, char **argv)
{
	size_t n = 1000000;
	cpu_set_t one;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-g"))
			global_only = true;
		else
			n = strtoull(argv[i], NULL, 0);
	}
	if (!n) {
		fprintf(stderr, "usage: %s [N] [-g]\n", argv[0]);
		return 2;
	}
	/* Stay on one core so that the number is per core. */
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
	sched_setaffinity(0, sizeof(one), &one);

	bench_family(AF_INET, n);
	bench_family(AF_INET6, n);
	return 0;
}
