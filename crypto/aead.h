/* ChaCha20-Poly1305 (RFC 8439) behind one interface with two backends,
 * libsodium and OpenSSL libcrypto; the faster one on this CPU is chosen at
 * start-up by a short self-measurement. XChaCha20-Poly1305 (cookies) comes
 * from libsodium. */
#ifndef WEFT_CRYPTO_AEAD_H
#define WEFT_CRYPTO_AEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	AEAD_KEY_SIZE = 32,
	AEAD_TAG_SIZE = 16,
	AEAD_NONCE_SIZE = 12,
	XAEAD_NONCE_SIZE = 24,
};

struct aead_backend {
	const char *name;
	/* dst gets len + AEAD_TAG_SIZE bytes; dst == src is allowed. */
	bool (*seal)(uint8_t *dst, const uint8_t *src, size_t len,
		     const uint8_t *ad, size_t ad_len,
		     const uint8_t nonce[AEAD_NONCE_SIZE], const uint8_t key[AEAD_KEY_SIZE]);
	/* src_len includes the tag; dst gets src_len - AEAD_TAG_SIZE bytes;
	 * dst == src is allowed. False when the tag does not verify (dst is
	 * then wiped) or src_len < AEAD_TAG_SIZE. */
	bool (*open)(uint8_t *dst, const uint8_t *src, size_t src_len,
		     const uint8_t *ad, size_t ad_len,
		     const uint8_t nonce[AEAD_NONCE_SIZE], const uint8_t key[AEAD_KEY_SIZE]);
};

extern const struct aead_backend aead_sodium;
extern const struct aead_backend aead_openssl;
/* Our ChaCha20 in AVX-512 with OpenSSL's Poly1305 (crypto/aead_wide.c);
 * on a CPU without AVX-512 it fails every call, and its self-test. */
extern const struct aead_backend aead_wide;

enum { AEAD_BACKENDS = 3 };

/* What aead_select measured of one backend. */
struct aead_measure {
	const struct aead_backend *backend;
	bool passed;          /* known-answer self-test on this CPU */
	double mbytes_per_sec; /* sealing 1420-byte packets, one core */
};

/* Measures (for about 20 ms each) every backend that passes a known-answer
 * self-test on this CPU, makes the fastest the active one, and returns it.
 * Call once at start-up, before any thread uses aead_seal/aead_open.
 * When report is not NULL it receives one entry per backend (sodium,
 * openssl, avx512). The caller logs the choice. */
const struct aead_backend *aead_select(struct aead_measure report[AEAD_BACKENDS]);
const struct aead_backend *aead_active(void);
/* Force a backend (tests, WEFT_AEAD=sodium|openssl|avx512). */
void aead_use(const struct aead_backend *b);
/* Looks a backend up by name; NULL when unknown. */
const struct aead_backend *aead_by_name(const char *name);

/* WireGuard's nonce: 32 zero bits, then the 64-bit counter little-endian. */
static inline void aead_nonce_from_counter(uint8_t nonce[AEAD_NONCE_SIZE], uint64_t counter)
{
	for (int i = 0; i < 4; i++)
		nonce[i] = 0;
	for (int i = 0; i < 8; i++)
		nonce[4 + i] = (uint8_t)(counter >> (8 * i));
}

/* The active backend with a counter nonce. */
bool aead_seal(uint8_t *dst, const uint8_t *src, size_t len, const uint8_t *ad, size_t ad_len,
	       uint64_t counter, const uint8_t key[AEAD_KEY_SIZE]);
bool aead_open(uint8_t *dst, const uint8_t *src, size_t src_len, const uint8_t *ad, size_t ad_len,
	       uint64_t counter, const uint8_t key[AEAD_KEY_SIZE]);

/* XChaCha20-Poly1305 (libsodium), same buffer conventions. */
bool xaead_seal(uint8_t *dst, const uint8_t *src, size_t len, const uint8_t *ad, size_t ad_len,
		const uint8_t nonce[XAEAD_NONCE_SIZE], const uint8_t key[AEAD_KEY_SIZE]);
bool xaead_open(uint8_t *dst, const uint8_t *src, size_t src_len, const uint8_t *ad, size_t ad_len,
		const uint8_t nonce[XAEAD_NONCE_SIZE], const uint8_t key[AEAD_KEY_SIZE]);

#endif
