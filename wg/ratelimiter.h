/* Per-source rate limit for handshake messages under load: a token bucket
 * per IPv4 address or IPv6 /64, WG_RATELIMIT_PPS packets per second with a
 * burst of WG_RATELIMIT_BURST, entries expire after a second idle. */
#ifndef WEFT_WG_RATELIMITER_H
#define WEFT_WG_RATELIMITER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wg/endpoint.h"

enum {
	WG_RATELIMIT_PPS = 20,
	WG_RATELIMIT_BURST = 5,
	WG_RATELIMIT_MAX_ENTRIES = 1 << 16,
};

struct wg_ratelimiter_entry;

/* lock guards the table; any thread may call allow(). */
struct wg_ratelimiter {
	pthread_mutex_t lock;
	struct wg_ratelimiter_entry **buckets;
	size_t n_buckets;
	size_t n_entries;
	uint64_t last_gc;
	uint8_t key[16]; /* siphash key against hash flooding */
};

int wg_ratelimiter_init(struct wg_ratelimiter *rl);
void wg_ratelimiter_destroy(struct wg_ratelimiter *rl);
/* True when a packet from src may be processed now (now: wg_clock_now()).
 * A full table refuses new sources. */
bool wg_ratelimiter_allow(struct wg_ratelimiter *rl, const union wg_sockaddr *src, uint64_t now);

#endif
