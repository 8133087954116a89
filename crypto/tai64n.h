/* TAI64N timestamps for handshake initiations (replay protection). */
#ifndef WEFT_CRYPTO_TAI64N_H
#define WEFT_CRYPTO_TAI64N_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

enum { TAI64N_SIZE = 12 };

/* Encodes a wall-clock time: big-endian (2^62 + 10 + seconds), then
 * big-endian nanoseconds. */
void tai64n_encode(uint8_t out[TAI64N_SIZE], const struct timespec *ts);
/* The current time with nanoseconds rounded down to a multiple of 2^24 ns
 * (as the kernel does) so the timestamp does not leak fine timing. */
void tai64n_now(uint8_t out[TAI64N_SIZE]);
/* True when a is strictly later than b. */
bool tai64n_after(const uint8_t a[TAI64N_SIZE], const uint8_t b[TAI64N_SIZE]);

#endif
