/* The "avx512" ChaCha20-Poly1305 backend (RFC 8439 section 2.8): ChaCha20
 * from crypto/chacha20.c, 16 blocks per AVX-512 pass, and Poly1305 from
 * OpenSSL's EVP_MAC (vectorised on this class of CPU). It exists because
 * OpenSSL's own AEAD, called once per packet, spends about as long in its
 * EVP layer (re-keying, parameter lookups by name) as in the cipher; here
 * the only per-packet OpenSSL calls are a MAC init, updates and final. */
#include "crypto/aead.h"

#include <limits.h>
#include <pthread.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "crypto/chacha20.h"

enum {
	POLY_KEY_SIZE = 32,
	/* Messages this short take one 8-block pass (block 0 keys Poly1305,
	 * blocks 1-7 are their keystream); longer ones start with 16 blocks. */
	SHORT_LEN = 7 * CHACHA20_BLOCK_SIZE,
};

/* One MAC context per thread, made on first use and freed (which cleanses
 * the key OpenSSL holds) when the thread exits. */
static EVP_MAC *poly_mac;
static pthread_once_t poly_once = PTHREAD_ONCE_INIT;
static pthread_key_t poly_key;
static bool poly_ok;
static __thread EVP_MAC_CTX *tls_mac;

static void mac_destroy(void *ctx)
{
	EVP_MAC_CTX_free(ctx);
	tls_mac = NULL;
}

static void poly_setup(void)
{
	poly_mac = EVP_MAC_fetch(NULL, "POLY1305", NULL);
	poly_ok = poly_mac && pthread_key_create(&poly_key, mac_destroy) == 0;
}

static EVP_MAC_CTX *thread_mac(void)
{
	EVP_MAC_CTX *ctx = tls_mac;

	if (ctx)
		return ctx;
	pthread_once(&poly_once, poly_setup);
	if (!poly_ok)
		return NULL;
	ctx = EVP_MAC_CTX_new(poly_mac);
	if (!ctx)
		return NULL;
	if (pthread_setspecific(poly_key, ctx) != 0) {
		EVP_MAC_CTX_free(ctx);
		return NULL;
	}
	tls_mac = ctx;
	return ctx;
}

/* Poly1305 over ad, pad16, ct, pad16, le64(ad_len), le64(ct_len). */
static bool tag_of(uint8_t tag[AEAD_TAG_SIZE], const uint8_t *ad, size_t ad_len,
		   const uint8_t *ct, size_t ct_len, const uint8_t key[POLY_KEY_SIZE])
{
	static const uint8_t zeros[16];
	EVP_MAC_CTX *ctx = thread_mac();
	uint8_t lens[16];
	size_t out_len = 0;

	if (!ctx || EVP_MAC_init(ctx, key, POLY_KEY_SIZE, NULL) != 1)
		return false;
	for (int i = 0; i < 8; i++) {
		lens[i] = (uint8_t)((uint64_t)ad_len >> (8 * i));
		lens[8 + i] = (uint8_t)((uint64_t)ct_len >> (8 * i));
	}
	if (ad_len && (EVP_MAC_update(ctx, ad, ad_len) != 1 ||
		       (ad_len % 16 && EVP_MAC_update(ctx, zeros, 16 - ad_len % 16) != 1)))
		return false;
	if (ct_len && (EVP_MAC_update(ctx, ct, ct_len) != 1 ||
		       (ct_len % 16 && EVP_MAC_update(ctx, zeros, 16 - ct_len % 16) != 1)))
		return false;
	if (EVP_MAC_update(ctx, lens, sizeof(lens)) != 1)
		return false;
	return EVP_MAC_final(ctx, tag, &out_len, AEAD_TAG_SIZE) == 1 && out_len == AEAD_TAG_SIZE;
}

/* The first pass for a message of len bytes: how many blocks. */
static unsigned int first_blocks(size_t len)
{
	return len <= SHORT_LEN ? 8 : 16;
}

/* dst = src XOR the message keystream: from first[] (the first pass, after
 * block 0), then from block first_blocks on. */
static void crypt(uint8_t *dst, const uint8_t *src, size_t len, const uint8_t *first,
		  const uint8_t nonce[AEAD_NONCE_SIZE], const uint8_t key[AEAD_KEY_SIZE])
{
	unsigned int blocks = first_blocks(len);
	size_t n = (blocks - 1) * CHACHA20_BLOCK_SIZE;

	if (n > len)
		n = len;
	chacha20_xor_stream(dst, src, first + CHACHA20_BLOCK_SIZE, n);
	if (len > n)
		chacha20_xor(dst + n, src + n, len - n, key, nonce, blocks);
}

static bool wide_seal(uint8_t *dst, const uint8_t *src, size_t len, const uint8_t *ad,
		      size_t ad_len, const uint8_t nonce[AEAD_NONCE_SIZE],
		      const uint8_t key[AEAD_KEY_SIZE])
{
	uint8_t first[CHACHA20_WIDE_SIZE];
	bool ok;

	if (!chacha20_wide_supported())
		return false;
	chacha20_wide(first, first_blocks(len), key, nonce, 0);
	crypt(dst, src, len, first, nonce, key);
	ok = tag_of(dst + len, ad, ad_len, dst, len, first);
	explicit_bzero(first, sizeof(first));
	return ok;
}

static bool wide_open(uint8_t *dst, const uint8_t *src, size_t src_len, const uint8_t *ad,
		      size_t ad_len, const uint8_t nonce[AEAD_NONCE_SIZE],
		      const uint8_t key[AEAD_KEY_SIZE])
{
	uint8_t first[CHACHA20_WIDE_SIZE], tag[AEAD_TAG_SIZE];
	size_t len;
	bool ok;

	if (src_len < AEAD_TAG_SIZE || !chacha20_wide_supported())
		return false;
	len = src_len - AEAD_TAG_SIZE;
	chacha20_wide(first, first_blocks(len), key, nonce, 0);
	/* Verify first: nothing is decrypted from a forgery. */
	ok = tag_of(tag, ad, ad_len, src, len, first) &&
	     CRYPTO_memcmp(tag, src + len, AEAD_TAG_SIZE) == 0;
	if (ok)
		crypt(dst, src, len, first, nonce, key);
	else
		memset(dst, 0, len);
	explicit_bzero(first, sizeof(first));
	return ok;
}

const struct aead_backend aead_wide = {
	.name = "avx512",
	.seal = wide_seal,
	.open = wide_open,
};
