/* SipHash (pkt/siphash.c): the generic form with c = 2, d = 4 against
 * libsodium's SipHash-2-4 (crypto_shorthash) on every length 0..64 under
 * random keys and on the paper's reference vector; the two-word
 * SipHash-1-3 the tables use against the generic form on the same 16
 * bytes; and keys from siphash_key_random that differ. */
#include "pkt/siphash.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                                      \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, \
				#cond);                                                  \
			failures++;                                                      \
		}                                                                        \
	} while (0)

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static struct siphash_key key_of(const uint8_t k[16])
{
	return (struct siphash_key){ le64(k), le64(k + 8) };
}

static uint64_t sodium_siphash24(const uint8_t k[16], const uint8_t *in, size_t len)
{
	uint8_t out[crypto_shorthash_siphash24_BYTES];

	crypto_shorthash_siphash24(out, in, len, k);
	return le64(out);
}

static void test_reference_vector(void)
{
	/* The paper's appendix A: key 00..0f, message 00..0e (15 bytes). */
	uint8_t k[16], m[15];
	struct siphash_key key;

	for (int i = 0; i < 16; i++)
		k[i] = (uint8_t)i;
	for (int i = 0; i < 15; i++)
		m[i] = (uint8_t)i;
	key = key_of(k);
	CHECK(siphash(&key, m, sizeof(m), 2, 4) == 0xa129ca6149be45e5ull);
}

static void test_against_sodium(void)
{
	uint8_t k[16], m[64];
	struct siphash_key key;

	for (int round = 0; round < 200; round++) {
		randombytes_buf(k, sizeof(k));
		randombytes_buf(m, sizeof(m));
		key = key_of(k);
		for (size_t len = 0; len <= sizeof(m); len++)
			CHECK(siphash(&key, m, len, 2, 4) == sodium_siphash24(k, m, len));
	}
}

static void test_two_words(void)
{
	uint8_t k[16], m[16];
	struct siphash_key key;

	for (int round = 0; round < 10000; round++) {
		randombytes_buf(k, sizeof(k));
		randombytes_buf(m, sizeof(m));
		key = key_of(k);
		CHECK(siphash13_2w(&key, le64(m), le64(m + 8)) == siphash(&key, m, 16, 1, 3));
	}
}

static void test_random_keys(void)
{
	struct siphash_key a, b;

	siphash_key_random(&a);
	siphash_key_random(&b);
	CHECK(a.k0 != b.k0 || a.k1 != b.k1);
	CHECK(siphash13_2w(&a, 1, 2) != siphash13_2w(&b, 1, 2));
}

int main(void)
{
	if (sodium_init() < 0)
		return 1;
	test_reference_vector();
	test_against_sodium();
	test_two_words();
	test_random_keys();
	if (failures)
		fprintf(stderr, "%d checks failed\n", failures);
	return failures ? 1 : 0;
}
