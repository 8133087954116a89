/* What the in-process benchmarks share: the clock they time with and a
 * fast pseudo-random generator for their inputs (not for secrets). */
#ifndef WEFT_BENCH_UTIL_H
#define WEFT_BENCH_UTIL_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in seconds. */
static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: the next value of the sequence in *state (never 0). */
static inline uint64_t rnd_next(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545f4914f6cdd1dull;
}

#endif
