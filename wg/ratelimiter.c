/* The handshake rate limiter: one token bucket per source (an IPv4
 * address, or the /64 of an IPv6 address, since one host usually owns a
 * whole /64) in a chained hash table.
 *
 * Sources are chosen by whoever sends the packets, so the table is keyed
 * with siphash-2-4 under a random key (no chosen collisions), capped at
 * WG_RATELIMIT_MAX_ENTRIES entries (a full table refuses new sources rather
 * than grow), and swept of entries idle for over a second, at most once a
 * second, from inside allow() so that no timer thread is needed.
 *
 * Buckets follow the kernel's ratelimiter.c: tokens are nanoseconds of
 * credit, a packet costs 1 s / WG_RATELIMIT_PPS, and the credit is capped
 * at WG_RATELIMIT_BURST packets. A new source starts with the burst less
 * the packet that created it.
 *
 * lock guards everything in struct wg_ratelimiter except key, which is
 * written once by init. */
#include "wg/ratelimiter.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "wg/clock.h"

enum {
	PACKET_COST = NSEC_PER_SEC / WG_RATELIMIT_PPS,
	TOKEN_MAX = PACKET_COST * WG_RATELIMIT_BURST,
	/* Eight entries per bucket when full, as in the kernel. */
	N_BUCKETS = WG_RATELIMIT_MAX_ENTRIES / 8,
};

_Static_assert((N_BUCKETS & (N_BUCKETS - 1)) == 0, "buckets are picked with a mask");
_Static_assert(crypto_shorthash_KEYBYTES == sizeof(((struct wg_ratelimiter *)0)->key),
	       "siphash key size");

#define IDLE_NS NSEC_PER_SEC
#define GC_INTERVAL_NS NSEC_PER_SEC

struct wg_ratelimiter_entry {
	struct wg_ratelimiter_entry *next;
	uint64_t source;    /* IPv4 address or IPv6 /64, as on the wire */
	uint64_t last_ns;
	uint64_t tokens;    /* nanoseconds of credit */
	uint8_t family;     /* keeps 1.2.3.4 apart from a /64 of equal bits */
};

/* An IPv4-mapped IPv6 address (from a dual-stack socket) is its IPv4
 * address: otherwise every IPv4 source would share ::ffff:0:0/64. */
static bool source_of(const union wg_sockaddr *src, uint8_t *family, uint64_t *source)
{
	*source = 0;
	if (src->sa.sa_family == AF_INET) {
		*family = AF_INET;
		memcpy(source, &src->in4.sin_addr, 4);
		return true;
	}
	if (src->sa.sa_family == AF_INET6) {
		const struct in6_addr *a = &src->in6.sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a)) {
			*family = AF_INET;
			memcpy(source, &a->s6_addr[12], 4);
		} else {
			*family = AF_INET6;
			memcpy(source, a->s6_addr, 8);
		}
		return true;
	}
	return false;
}

static size_t bucket_of(const struct wg_ratelimiter *rl, uint8_t family, uint64_t source)
{
	uint8_t in[1 + sizeof(source)], out[crypto_shorthash_BYTES];
	uint64_t h;

	in[0] = family;
	memcpy(in + 1, &source, sizeof(source));
	crypto_shorthash(out, in, sizeof(in), rl->key);
	memcpy(&h, out, sizeof(h));
	return (size_t)(h & (rl->n_buckets - 1));
}

/* Frees the entries idle for longer than IDLE_NS. Called with lock held. */
static void collect(struct wg_ratelimiter *rl, uint64_t now)
{
	for (size_t i = 0; i < rl->n_buckets; i++) {
		struct wg_ratelimiter_entry **link = &rl->buckets[i], *e;

		while ((e = *link)) {
			if (now > e->last_ns && now - e->last_ns > IDLE_NS) {
				*link = e->next;
				free(e);
				rl->n_entries--;
			} else {
				link = &e->next;
			}
		}
	}
	rl->last_gc = now;
}

bool wg_ratelimiter_allow(struct wg_ratelimiter *rl, const union wg_sockaddr *src, uint64_t now)
{
	struct wg_ratelimiter_entry *e;
	uint64_t source;
	uint8_t family;
	bool ret = false;
	size_t b;

	if (!source_of(src, &family, &source))
		return false;
	b = bucket_of(rl, family, source);

	pthread_mutex_lock(&rl->lock);
	if (wg_clock_after(now, rl->last_gc, GC_INTERVAL_NS))
		collect(rl, now);

	for (e = rl->buckets[b]; e; e = e->next) {
		if (e->source == source && e->family == family) {
			/* A clock that steps back must not mint credit. */
			uint64_t elapsed = now > e->last_ns ? now - e->last_ns : 0;
			uint64_t tokens = e->tokens + (elapsed < TOKEN_MAX ? elapsed : TOKEN_MAX);

			if (tokens > TOKEN_MAX)
				tokens = TOKEN_MAX;
			if (now > e->last_ns)
				e->last_ns = now;
			ret = tokens >= PACKET_COST;
			e->tokens = ret ? tokens - PACKET_COST : tokens;
			goto out;
		}
	}

	if (rl->n_entries >= WG_RATELIMIT_MAX_ENTRIES)
		goto out;
	e = malloc(sizeof(*e));
	if (!e)
		goto out;
	e->source = source;
	e->family = family;
	e->last_ns = now;
	e->tokens = TOKEN_MAX - PACKET_COST;
	e->next = rl->buckets[b];
	rl->buckets[b] = e;
	rl->n_entries++;
	ret = true;
out:
	pthread_mutex_unlock(&rl->lock);
	return ret;
}

int wg_ratelimiter_init(struct wg_ratelimiter *rl)
{
	int ret;

	memset(rl, 0, sizeof(*rl));
	if (sodium_init() < 0)
		return -EIO;
	rl->buckets = calloc(N_BUCKETS, sizeof(*rl->buckets));
	if (!rl->buckets)
		return -ENOMEM;
	ret = pthread_mutex_init(&rl->lock, NULL);
	if (ret) {
		free(rl->buckets);
		rl->buckets = NULL;
		return -ret;
	}
	rl->n_buckets = N_BUCKETS;
	randombytes_buf(rl->key, sizeof(rl->key));
	return 0;
}

void wg_ratelimiter_destroy(struct wg_ratelimiter *rl)
{
	if (!rl->buckets)
		return;
	for (size_t i = 0; i < rl->n_buckets; i++) {
		struct wg_ratelimiter_entry *e, *next;

		for (e = rl->buckets[i]; e; e = next) {
			next = e->next;
			free(e);
		}
	}
	free(rl->buckets);
	rl->buckets = NULL;
	rl->n_entries = 0;
	pthread_mutex_destroy(&rl->lock);
	sodium_memzero(rl->key, sizeof(rl->key));
}
