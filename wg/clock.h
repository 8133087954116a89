/* The protocol clock: CLOCK_BOOTTIME in nanoseconds. Tests may run it faster
 * with WEFT_TEST_CLOCK_SPEEDUP=N (N in 1..1000) so that rekey and expiry rules
 * that take minutes can be exercised in seconds; production never sets it. */
#ifndef WEFT_WG_CLOCK_H
#define WEFT_WG_CLOCK_H

#include <stdint.h>

#define NSEC_PER_SEC 1000000000ull
#define NSEC_PER_MSEC 1000000ull

/* Reads the environment once; call before starting threads. */
void wg_clock_init(void);
uint64_t wg_clock_now(void);
/* Wall-clock time (CLOCK_REALTIME) in nanoseconds since the epoch. */
uint64_t wg_clock_realtime_ns(void);
/* Real nanoseconds for a protocol duration (for poll timeouts). */
uint64_t wg_clock_to_real(uint64_t protocol_ns);

/* Tests and fuzz targets only: both clocks stand still at these readings
 * (protocol ns, wall-clock ns) until the next call; (0, 0) lets them run
 * again. So a sequence of operations sees the times its input names. */
void wg_clock_test_hold(uint64_t now_ns, uint64_t realtime_ns);

static inline int wg_clock_after(uint64_t now, uint64_t since, uint64_t dur)
{
	return now - since >= dur;
}

#endif
