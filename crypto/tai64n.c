/* TAI64N timestamps carried in handshake initiations; a responder accepts an
 * initiation only if its timestamp is later than the last one it saw. */
#include "crypto/tai64n.h"

#include <string.h>

/* TAI64 labels second s of TAI as 2^62 + s; the 10 s is the TAI-UTC offset
 * of 1970 that WireGuard (and libtai) add to Unix time. */
#define TAI64_EPOCH (0x4000000000000000ULL + 10ULL)

/* 2^24 ns (about 16.8 ms), the largest power of two below 1 s / 50: enough
 * resolution for the 50 initiations per second a peer may send, while
 * hiding the fine clock. */
#define TAI64N_NSEC_MASK (~((1L << 24) - 1))

void tai64n_encode(uint8_t out[TAI64N_SIZE], const struct timespec *ts)
{
	uint64_t secs = TAI64_EPOCH + (uint64_t)ts->tv_sec;
	uint32_t nsec = (uint32_t)ts->tv_nsec;

	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(secs >> (56 - 8 * i));
	for (int i = 0; i < 4; i++)
		out[8 + i] = (uint8_t)(nsec >> (24 - 8 * i));
}

void tai64n_now(uint8_t out[TAI64N_SIZE])
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec &= TAI64N_NSEC_MASK;
	tai64n_encode(out, &ts);
}

bool tai64n_after(const uint8_t a[TAI64N_SIZE], const uint8_t b[TAI64N_SIZE])
{
	/* Both fields are big-endian, so byte order is time order. */
	return memcmp(a, b, TAI64N_SIZE) > 0;
}
