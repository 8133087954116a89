/* The protocol clock, with the test-only speed-up. */
#include "wg/clock.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

static uint64_t speedup = 1;
static uint64_t origin;
static _Atomic uint64_t held_now, held_real; /* wg_clock_test_hold */

static uint64_t boottime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

void wg_clock_init(void)
{
	const char *s = getenv("WEFT_TEST_CLOCK_SPEEDUP");

	origin = boottime_ns();
	if (s) {
		long v = strtol(s, NULL, 10);
		if (v >= 1 && v <= 1000)
			speedup = (uint64_t)v;
	}
}

void wg_clock_test_hold(uint64_t now_ns, uint64_t realtime_ns)
{
	atomic_store(&held_real, realtime_ns);
	atomic_store(&held_now, now_ns);
}

uint64_t wg_clock_now(void)
{
	uint64_t now = atomic_load_explicit(&held_now, memory_order_relaxed);

	if (now)
		return now;
	now = boottime_ns();

	if (speedup == 1)
		return now;
	/* Keep the absolute value large (timestamps of 0 mean "never"). */
	return origin + (now - origin) * speedup;
}

uint64_t wg_clock_to_real(uint64_t protocol_ns)
{
	return protocol_ns / speedup;
}

uint64_t wg_clock_realtime_ns(void)
{
	uint64_t held = atomic_load_explicit(&held_real, memory_order_relaxed);
	struct timespec ts;

	if (held)
		return held;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}
