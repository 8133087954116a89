/* SipHash, the generic form (pkt/siphash.h). */
#include "pkt/siphash.h"

#include <string.h>
#include <sys/random.h>

void siphash_key_random(struct siphash_key *key)
{
	if (getrandom(key, sizeof(*key), 0) != (ssize_t)sizeof(*key))
		memset(key, 0, sizeof(*key));
}

static uint64_t load_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

uint64_t siphash(const struct siphash_key *key, const void *data, size_t len, unsigned int c,
		 unsigned int d)
{
	const uint8_t *in = data;
	uint64_t v0 = key->k0 ^ 0x736f6d6570736575ull;
	uint64_t v1 = key->k1 ^ 0x646f72616e646f6dull;
	uint64_t v2 = key->k0 ^ 0x6c7967656e657261ull;
	uint64_t v3 = key->k1 ^ 0x7465646279746573ull;
	uint64_t last = (uint64_t)len << 56;
	size_t whole = len & ~(size_t)7;

	for (size_t off = 0; off < whole; off += 8) {
		uint64_t m = load_le64(in + off);

		v3 ^= m;
		for (unsigned int r = 0; r < c; r++)
			SIPHASH_ROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	for (size_t i = whole; i < len; i++)
		last |= (uint64_t)in[i] << (8 * (i - whole));
	v3 ^= last;
	for (unsigned int r = 0; r < c; r++)
		SIPHASH_ROUND(v0, v1, v2, v3);
	v0 ^= last;
	v2 ^= 0xff;
	for (unsigned int r = 0; r < d; r++)
		SIPHASH_ROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}
