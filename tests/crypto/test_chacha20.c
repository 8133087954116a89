/* ChaCha20: the RFC 8439 section 2.4.2 vector, and chacha20_xor /
 * chacha20_wide agreeing with libsodium's ChaCha20 (IETF) on random keys,
 * nonces, counters and every length up to 3 KiB, in place and not. */
#include "crypto/chacha20.h"

#include <sodium.h>

#include "check.h"

static void test_rfc_vector(void)
{
	static const char plain[] =
		"Ladies and Gentlemen of the class of '99: If I could offer you only one "
		"tip for the future, sunscreen would be it.";
	static const uint8_t want_start[16] = { 0x6e, 0x2e, 0x35, 0x9a, 0x25, 0x68, 0xf9, 0x80,
						0x41, 0xba, 0x07, 0x28, 0xdd, 0x0d, 0x69, 0x81 };
	static const uint8_t want_end[2] = { 0x87, 0x4d };
	uint8_t key[CHACHA20_KEY_SIZE], nonce[CHACHA20_NONCE_SIZE] = { 0, 0, 0, 0, 0, 0, 0, 0x4a };
	uint8_t out[sizeof(plain) - 1];

	for (int i = 0; i < CHACHA20_KEY_SIZE; i++)
		key[i] = (uint8_t)i;
	chacha20_xor(out, (const uint8_t *)plain, sizeof(out), key, nonce, 1);
	CHECK_MEM(out, want_start, sizeof(want_start));
	CHECK_MEM(out + sizeof(out) - 2, want_end, sizeof(want_end));
}

static void test_against_sodium(void)
{
	enum { MAXLEN = 3 * 1024 };
	static uint8_t src[MAXLEN], got[MAXLEN], want[MAXLEN];
	uint8_t key[CHACHA20_KEY_SIZE], nonce[CHACHA20_NONCE_SIZE];

	for (size_t len = 0; len <= MAXLEN && !check_failures; len++) {
		uint32_t counter;

		randombytes_buf(key, sizeof(key));
		randombytes_buf(nonce, sizeof(nonce));
		randombytes_buf(src, len);
		/* Small counters mostly, and some near the top of the range. */
		counter = len % 7 == 0 ? 0xffffffffu - (uint32_t)(len / 64) - 1 : (uint32_t)(len % 5);
		crypto_stream_chacha20_ietf_xor_ic(want, src, len, nonce, counter, key);
		chacha20_xor(got, src, len, key, nonce, counter);
		if (memcmp(got, want, len) != 0) {
			fprintf(stderr, "chacha20_xor differs from libsodium at len=%zu\n", len);
			CHECK(0);
		}
		chacha20_xor(src, src, len, key, nonce, counter); /* in place */
		if (memcmp(src, want, len) != 0) {
			fprintf(stderr, "in-place chacha20_xor differs at len=%zu\n", len);
			CHECK(0);
		}
	}
}

static void test_wide(void)
{
	static uint8_t zero[CHACHA20_WIDE_SIZE], got[CHACHA20_WIDE_SIZE], want[CHACHA20_WIDE_SIZE];
	uint8_t key[CHACHA20_KEY_SIZE], nonce[CHACHA20_NONCE_SIZE];

	if (!chacha20_wide_supported()) {
		printf("  no AVX-512 on this CPU: chacha20_wide not tested (the portable path was)\n");
		return;
	}
	for (uint32_t counter = 0; counter < 40; counter += 13) {
		randombytes_buf(key, sizeof(key));
		randombytes_buf(nonce, sizeof(nonce));
		crypto_stream_chacha20_ietf_xor_ic(want, zero, sizeof(zero), nonce, counter, key);
		chacha20_wide(got, 16, key, nonce, counter);
		CHECK_MEM(got, want, sizeof(want));
		memset(got, 0, sizeof(got));
		chacha20_wide(got, 8, key, nonce, counter);
		CHECK_MEM(got, want, sizeof(want) / 2);
	}
}

int main(void)
{
	if (sodium_init() < 0)
		return 1;
	printf("AVX-512: %s\n", chacha20_wide_supported() ? "yes" : "no");
	test_rfc_vector();
	test_against_sodium();
	test_wide();
	if (check_failures) {
		fprintf(stderr, "%d check(s) failed\n", check_failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}
