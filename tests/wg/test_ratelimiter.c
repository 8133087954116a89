/* The handshake rate limiter on a fake clock: burst, refill at the rate,
 * the kernel self-test's schedule, who shares a bucket (IPv6 /64, IPv4
 * address, IPv4-mapped IPv6), idle collection, the table cap, threads. */
#include "wg/clock.h"
#include "wg/ratelimiter.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond) do {                                                      \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: check failed: %s\n",         \
				__FILE__, __LINE__, #cond);                   \
			exit(1);                                              \
		}                                                             \
	} while (0)

#define COST_NS (NSEC_PER_SEC / WG_RATELIMIT_PPS)
#define T0 (1000 * NSEC_PER_SEC) /* fake boot time, well away from 0 */

static union wg_sockaddr addr(const char *ip, uint16_t port)
{
	union wg_sockaddr a;

	memset(&a, 0, sizeof(a));
	if (inet_pton(AF_INET, ip, &a.in4.sin_addr) == 1) {
		a.in4.sin_family = AF_INET;
		a.in4.sin_port = htons(port);
	} else {
		CHECK(inet_pton(AF_INET6, ip, &a.in6.sin6_addr) == 1);
		a.in6.sin6_family = AF_INET6;
		a.in6.sin6_port = htons(port);
	}
	return a;
}

static bool allow(struct wg_ratelimiter *rl, const char *ip, uint64_t now)
{
	union wg_sockaddr a = addr(ip, 51820);

	return wg_ratelimiter_allow(rl, &a, now);
}

/* How many of n back-to-back packets at now get through. */
static int burst(struct wg_ratelimiter *rl, const char *ip, uint64_t now, int n)
{
	int passed = 0;

	for (int i = 0; i < n; i++)
		passed += allow(rl, ip, now);
	return passed;
}

static void test_burst_and_refill(void)
{
	struct wg_ratelimiter rl;
	uint64_t now = T0;

	CHECK(wg_ratelimiter_init(&rl) == 0);
	for (int i = 0; i < WG_RATELIMIT_BURST; i++)
		CHECK(allow(&rl, "192.0.2.1", now));
	CHECK(!allow(&rl, "192.0.2.1", now));

	/* One packet's worth of time buys exactly one packet. */
	now += COST_NS;
	CHECK(allow(&rl, "192.0.2.1", now));
	CHECK(!allow(&rl, "192.0.2.1", now));
	now += COST_NS - 1;
	CHECK(!allow(&rl, "192.0.2.1", now));
	now += 1;
	CHECK(allow(&rl, "192.0.2.1", now));

	/* Partial credit accumulates across refused packets. */
	now += COST_NS / 2;
	CHECK(!allow(&rl, "192.0.2.1", now));
	now += COST_NS / 2;
	CHECK(allow(&rl, "192.0.2.1", now));

	/* A long pause refills to the burst, not beyond. */
	now += 100 * NSEC_PER_SEC / 100;
	CHECK(burst(&rl, "192.0.2.1", now, 3 * WG_RATELIMIT_BURST) == WG_RATELIMIT_BURST);

	/* ... also when the bucket was not empty before the pause. */
	CHECK(allow(&rl, "192.0.2.2", now));
	CHECK(burst(&rl, "192.0.2.2", now + NSEC_PER_SEC, 3 * WG_RATELIMIT_BURST) ==
	      WG_RATELIMIT_BURST);

	/* A clock that steps back neither mints credit nor breaks anything. */
	CHECK(!allow(&rl, "192.0.2.1", now - 10 * COST_NS));
	CHECK(!allow(&rl, "192.0.2.1", now));

	/* Steady load of 100 packets/s for 10 s: after the first packet's burst
	 * credit (BURST - 1 more packets) every COST_NS of elapsed time lets one
	 * through: 1 + (BURST - 1) + 9990 ms / 50 ms = BURST + 199. */
	wg_ratelimiter_destroy(&rl);
	CHECK(wg_ratelimiter_init(&rl) == 0);
	{
		int passed = 0;

		for (uint64_t ms = 0; ms < 10000; ms += 10)
			passed += allow(&rl, "192.0.2.7", T0 + ms * NSEC_PER_MSEC);
		CHECK(passed == WG_RATELIMIT_BURST + 9990 / 50);
	}
	wg_ratelimiter_destroy(&rl);
}

/* The schedule of the kernel's selftest/ratelimiter.c. */
static void test_kernel_schedule(void)
{
	static const struct {
		bool result;
		uint64_t wait_ns; /* before this packet */
	} expected[] = {
		{ true, 0 }, { true, 0 }, { true, 0 }, { true, 0 }, { true, 0 },
		{ false, 0 },
		{ true, COST_NS },
		{ false, 0 },
		{ true, 2 * COST_NS },
		{ true, 0 },
		{ false, 0 },
	};
	_Static_assert(WG_RATELIMIT_BURST == 5, "the table spells out a burst of 5");
	struct wg_ratelimiter rl;
	uint64_t now = T0;

	CHECK(wg_ratelimiter_init(&rl) == 0);
	for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++) {
		now += expected[i].wait_ns;
		CHECK(allow(&rl, "198.51.100.9", now) == expected[i].result);
		CHECK(allow(&rl, "2001:db8:9::1", now) == expected[i].result);
	}
	wg_ratelimiter_destroy(&rl);
}

static void test_sources(void)
{
	struct wg_ratelimiter rl;
	union wg_sockaddr a;

	CHECK(wg_ratelimiter_init(&rl) == 0);

	/* Two addresses in one /64 share a bucket; the next /64 does not. */
	CHECK(burst(&rl, "2001:db8:1:2::1", T0, 3) == 3);
	CHECK(burst(&rl, "2001:db8:1:2:ffff:ffff:ffff:ffff", T0, 10) == WG_RATELIMIT_BURST - 3);
	CHECK(burst(&rl, "2001:db8:1:3::1", T0, 10) == WG_RATELIMIT_BURST);
	CHECK(burst(&rl, "2001:db8:1:1:ffff:ffff:ffff:ffff", T0, 10) == WG_RATELIMIT_BURST);

	/* IPv4 addresses are independent, ports do not matter. */
	CHECK(burst(&rl, "10.0.0.1", T0, 10) == WG_RATELIMIT_BURST);
	CHECK(burst(&rl, "10.0.0.2", T0, 10) == WG_RATELIMIT_BURST);
	a = addr("10.0.0.1", 9);
	CHECK(!wg_ratelimiter_allow(&rl, &a, T0));

	/* An IPv4-mapped IPv6 source is that IPv4 source, and two of them do
	 * not share ::ffff:0:0/64. */
	CHECK(burst(&rl, "::ffff:10.0.0.1", T0, 10) == 0);
	CHECK(burst(&rl, "::ffff:10.0.0.3", T0, 10) == WG_RATELIMIT_BURST);
	CHECK(burst(&rl, "10.0.0.3", T0, 10) == 0);

	/* An IPv6 /64 whose bits equal an IPv4 address's is another source. */
	CHECK(burst(&rl, "a00:1::", T0, 10) == WG_RATELIMIT_BURST);
	CHECK(rl.n_entries == 7);

	memset(&a, 0, sizeof(a));
	a.sa.sa_family = AF_UNIX;
	CHECK(!wg_ratelimiter_allow(&rl, &a, T0));
	CHECK(rl.n_entries == 7);
	wg_ratelimiter_destroy(&rl);
}

static void test_collect(void)
{
	const uint64_t ms = NSEC_PER_MSEC;
	struct wg_ratelimiter rl;

	CHECK(wg_ratelimiter_init(&rl) == 0);
	CHECK(allow(&rl, "192.0.2.1", T0));             /* sweeps (empty) */
	CHECK(allow(&rl, "192.0.2.2", T0 + 900 * ms));
	CHECK(allow(&rl, "192.0.2.3", T0 + 1000 * ms)); /* sweeps, keeps .1: idle just 1 s */
	CHECK(rl.n_entries == 3);
	CHECK(allow(&rl, "192.0.2.4", T0 + 1950 * ms)); /* too soon to sweep */
	CHECK(rl.n_entries == 4);
	CHECK(allow(&rl, "192.0.2.4", T0 + 2000 * ms)); /* sweeps .1 and .2 */
	CHECK(rl.n_entries == 2);
	CHECK(allow(&rl, "192.0.2.3", T0 + 3001 * ms)); /* sweeps .4, then .3 is new */
	CHECK(rl.n_entries == 1);

	/* A collected source comes back with a full burst. */
	CHECK(burst(&rl, "192.0.2.1", T0 + 3001 * ms, 10) == WG_RATELIMIT_BURST);
	wg_ratelimiter_destroy(&rl);
}

static void test_cap(void)
{
	struct wg_ratelimiter rl;
	union wg_sockaddr a = addr("10.0.0.0", 1);
	uint32_t base = ntohl(a.in4.sin_addr.s_addr);

	CHECK(wg_ratelimiter_init(&rl) == 0);
	for (uint32_t i = 0; i < WG_RATELIMIT_MAX_ENTRIES; i++) {
		a.in4.sin_addr.s_addr = htonl(base + i);
		CHECK(wg_ratelimiter_allow(&rl, &a, T0));
	}
	CHECK(rl.n_entries == WG_RATELIMIT_MAX_ENTRIES);
	CHECK(!allow(&rl, "192.0.2.1", T0));
	CHECK(!allow(&rl, "2001:db8::1", T0 + 1));
	CHECK(rl.n_entries == WG_RATELIMIT_MAX_ENTRIES);

	/* Known sources are still served from their buckets. */
	a.in4.sin_addr.s_addr = htonl(base + 77);
	CHECK(wg_ratelimiter_allow(&rl, &a, T0 + 2));

	/* Once everything has idled out, room again. */
	CHECK(allow(&rl, "192.0.2.1", T0 + 2 * NSEC_PER_SEC));
	CHECK(rl.n_entries == 1);
	wg_ratelimiter_destroy(&rl);
}

/* Threads hammering one source at one instant: exactly the burst passes. */
enum { N_THREADS = 4, PER_THREAD = 2000 };

static struct wg_ratelimiter shared;
static int passed_by[N_THREADS];

static void *hammer(void *arg)
{
	int *passed = arg;
	union wg_sockaddr a = addr("203.0.113.5", 1);
	char ip[32];

	for (int i = 0; i < PER_THREAD; i++) {
		*passed += wg_ratelimiter_allow(&shared, &a, T0);
		/* Also churn other sources to exercise the table under the lock. */
		snprintf(ip, sizeof(ip), "203.0.%d.%d", (int)(passed - passed_by), i % 200);
		allow(&shared, ip, T0);
	}
	return NULL;
}

static void test_threads(void)
{
	pthread_t th[N_THREADS];
	int total = 0;

	CHECK(wg_ratelimiter_init(&shared) == 0);
	for (int i = 0; i < N_THREADS; i++)
		CHECK(pthread_create(&th[i], NULL, hammer, &passed_by[i]) == 0);
	for (int i = 0; i < N_THREADS; i++) {
		CHECK(pthread_join(th[i], NULL) == 0);
		total += passed_by[i];
	}
	CHECK(total == WG_RATELIMIT_BURST);
	CHECK(shared.n_entries == 1 + N_THREADS * 200);
	wg_ratelimiter_destroy(&shared);
}

int main(void)
{
	test_burst_and_refill();
	test_kernel_schedule();
	test_sources();
	test_collect();
	test_cap();
	test_threads();
	printf("test_ratelimiter: ok\n");
	return 0;
}
