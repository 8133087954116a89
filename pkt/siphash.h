/* SipHash (Aumasson and Bernstein, 2012): a keyed PRF on short inputs, for
 * hash tables whose keys others choose (VM addresses, learned mesh
 * locations). With a random key the slot of a key cannot be predicted, so
 * no set of chosen keys can build one long probe chain.
 *
 * siphash() is the generic form with c compression and d finalisation
 * rounds (SipHash-2-4 for c = 2, d = 4: libsodium's crypto_shorthash);
 * siphash13_2w() is SipHash-1-3 of a 16-byte input given as two words, the
 * form the tables use: one round a word, as the Linux kernel's hsiphash and
 * Rust's HashMap do for short keys. */
#ifndef WEFT_PKT_SIPHASH_H
#define WEFT_PKT_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

struct siphash_key {
	uint64_t k0, k1;
};

/* A key from getrandom(); all zero (a fixed key, still a good spread) if
 * that fails. */
void siphash_key_random(struct siphash_key *key);

uint64_t siphash(const struct siphash_key *key, const void *data, size_t len, unsigned int c,
		 unsigned int d);

#define SIPHASH_ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

#define SIPHASH_ROUND(v0, v1, v2, v3)                                  \
	do {                                                           \
		v0 += v1; v1 = SIPHASH_ROTL(v1, 13); v1 ^= v0;         \
		v0 = SIPHASH_ROTL(v0, 32);                             \
		v2 += v3; v3 = SIPHASH_ROTL(v3, 16); v3 ^= v2;         \
		v0 += v3; v3 = SIPHASH_ROTL(v3, 21); v3 ^= v0;         \
		v2 += v1; v1 = SIPHASH_ROTL(v1, 17); v1 ^= v2;         \
		v2 = SIPHASH_ROTL(v2, 32);                             \
	} while (0)

/* SipHash-1-3 of the 16 bytes w0, w1 (each read as a little-endian word):
 * the same value as siphash(key, bytes, 16, 1, 3). */
static inline uint64_t siphash13_2w(const struct siphash_key *key, uint64_t w0, uint64_t w1)
{
	uint64_t v0 = key->k0 ^ 0x736f6d6570736575ull;
	uint64_t v1 = key->k1 ^ 0x646f72616e646f6dull;
	uint64_t v2 = key->k0 ^ 0x6c7967656e657261ull;
	uint64_t v3 = key->k1 ^ 0x7465646279746573ull;
	const uint64_t last = (uint64_t)16 << 56;

	v3 ^= w0;
	SIPHASH_ROUND(v0, v1, v2, v3);
	v0 ^= w0;
	v3 ^= w1;
	SIPHASH_ROUND(v0, v1, v2, v3);
	v0 ^= w1;
	v3 ^= last;
	SIPHASH_ROUND(v0, v1, v2, v3);
	v0 ^= last;
	v2 ^= 0xff;
	SIPHASH_ROUND(v0, v1, v2, v3);
	SIPHASH_ROUND(v0, v1, v2, v3);
	SIPHASH_ROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

#endif
