/* ChaCha20-Poly1305 (RFC 8439) with two interchangeable backends, libsodium
 * and OpenSSL libcrypto, and a start-up self-test plus measurement that
 * picks the faster one; XChaCha20-Poly1305 for cookies comes from libsodium. */
#include "crypto/aead.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <sodium.h>

enum {
	MEASURE_PACKET_SIZE = 1420,
	MEASURE_NSEC = 20 * 1000 * 1000,
	/* Read the clock only every few packets so it does not dominate. */
	MEASURE_BATCH = 16,
};

/* Written once by aead_select/aead_use before workers start (and by tests);
 * the data path only loads it. */
static const struct aead_backend *active_backend = &aead_sodium;

/* libsodium picks its vectorised ChaCha20/Poly1305 code in sodium_init();
 * without it the reference C code would silently be used. */
static pthread_once_t sodium_once = PTHREAD_ONCE_INIT;

static void sodium_setup(void)
{
	/* sodium_init() fails only when libsodium cannot set up its own locks;
	 * nothing it provides can then be trusted. */
	if (sodium_init() < 0)
		abort();
}

static void sodium_ready(void)
{
	pthread_once(&sodium_once, sodium_setup);
}

/* ---- libsodium backend ---- */

static bool sodium_seal(uint8_t *dst, const uint8_t *src, size_t len,
			const uint8_t *ad, size_t ad_len,
			const uint8_t nonce[AEAD_NONCE_SIZE], const uint8_t key[AEAD_KEY_SIZE])
{
	sodium_ready();
	return crypto_aead_chacha20poly1305_ietf_encrypt_detached(
		       dst, dst + len, NULL, src, len, ad, ad_len, NULL, nonce, key) == 0;
}

static bool sodium_open(uint8_t *dst, const uint8_t *src, size_t src_len,
			const uint8_t *ad, size_t ad_len,
			const uint8_t nonce[AEAD_NONCE_SIZE], const uint8_t key[AEAD_KEY_SIZE])
{
	size_t len;

	if (src_len < AEAD_TAG_SIZE)
		return false;
	len = src_len - AEAD_TAG_SIZE;
	sodium_ready();
	if (crypto_aead_chacha20poly1305_ietf_decrypt_detached(
		    dst, NULL, src, len, src + len, ad, ad_len, nonce, key) != 0) {
		/* libsodium verifies first, but the contract is ours to keep. */
		sodium_memzero(dst, len);
		return false;
	}
	return true;
}

const struct aead_backend aead_sodium = {
	.name = "sodium",
	.seal = sodium_seal,
	.open = sodium_open,
};

/* ---- OpenSSL backend ---- */

/* One cipher context per thread, created on first use and keyed on every
 * call: allocating a context per packet costs more than the cipher. The
 * pthread key exists only to free the context (which cleanses the key
 * schedule OpenSSL holds) when the thread exits. */
static __thread EVP_CIPHER_CTX *tls_ctx;
static pthread_key_t ctx_key;
static pthread_once_t ctx_key_once = PTHREAD_ONCE_INIT;
static bool ctx_key_ok;

static void ctx_destroy(void *ctx)
{
	EVP_CIPHER_CTX_free(ctx);
	tls_ctx = NULL;
}

static void ctx_key_setup(void)
{
	ctx_key_ok = pthread_key_create(&ctx_key, ctx_destroy) == 0;
}

static EVP_CIPHER_CTX *thread_ctx(void)
{
	EVP_CIPHER_CTX *ctx = tls_ctx;

	if (ctx)
		return ctx;
	pthread_once(&ctx_key_once, ctx_key_setup);
	if (!ctx_key_ok)
		return NULL;
	ctx = EVP_CIPHER_CTX_new();
	if (!ctx)
		return NULL;
	if (EVP_CipherInit_ex(ctx, EVP_chacha20_poly1305(), NULL, NULL, NULL, 1) != 1 ||
	    pthread_setspecific(ctx_key, ctx) != 0) {
		EVP_CIPHER_CTX_free(ctx);
		return NULL;
	}
	tls_ctx = ctx;
	return ctx;
}

/* Keys the thread's context and feeds the associated data. */
static EVP_CIPHER_CTX *openssl_begin(int enc, const uint8_t *ad, size_t ad_len, size_t len,
				     const uint8_t nonce[AEAD_NONCE_SIZE],
				     const uint8_t key[AEAD_KEY_SIZE])
{
	EVP_CIPHER_CTX *ctx;
	int outl;

	/* EVP lengths are int. */
	if (len > INT_MAX || ad_len > INT_MAX)
		return NULL;
	ctx = thread_ctx();
	if (!ctx)
		return NULL;
	if (EVP_CipherInit_ex(ctx, NULL, NULL, key, nonce, enc) != 1)
		return NULL;
	if (ad_len && EVP_CipherUpdate(ctx, NULL, &outl, ad, (int)ad_len) != 1)
		return NULL;
	return ctx;
}

static bool openssl_seal(uint8_t *dst, const uint8_t *src, size_t len,
			 const uint8_t *ad, size_t ad_len,
			 const uint8_t nonce[AEAD_NONCE_SIZE], const uint8_t key[AEAD_KEY_SIZE])
{
	EVP_CIPHER_CTX *ctx = openssl_begin(1, ad, ad_len, len, nonce, key);
	int outl = 0, finl = 0;

	if (!ctx)
		return false;
	if (len && EVP_CipherUpdate(ctx, dst, &outl, src, (int)len) != 1)
		return false;
	if (EVP_CipherFinal_ex(ctx, dst + outl, &finl) != 1 || (size_t)outl + (size_t)finl != len)
		return false;
	return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, AEAD_TAG_SIZE, dst + len) == 1;
}

static bool openssl_open(uint8_t *dst, const uint8_t *src, size_t src_len,
			 const uint8_t *ad, size_t ad_len,
			 const uint8_t nonce[AEAD_NONCE_SIZE], const uint8_t key[AEAD_KEY_SIZE])
{
	EVP_CIPHER_CTX *ctx;
	uint8_t tag[AEAD_TAG_SIZE];
	size_t len;
	int outl = 0, finl = 0;
	bool ok = false;

	if (src_len < AEAD_TAG_SIZE)
		return false;
	len = src_len - AEAD_TAG_SIZE;
	/* Copy the tag out first: with dst == src it would survive anyway, but
	 * this keeps the code correct for any dst the caller owns. */
	memcpy(tag, src + len, AEAD_TAG_SIZE);

	ctx = openssl_begin(0, ad, ad_len, len, nonce, key);
	if (!ctx)
		goto out;
	if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, AEAD_TAG_SIZE, tag) != 1)
		goto out;
	if (len && EVP_CipherUpdate(ctx, dst, &outl, src, (int)len) != 1)
		goto out;
	/* OpenSSL decrypts before it verifies; the tag check is in Final. */
	if (EVP_CipherFinal_ex(ctx, dst + outl, &finl) != 1 || (size_t)outl + (size_t)finl != len)
		goto out;
	ok = true;
out:
	if (!ok)
		sodium_memzero(dst, len);
	return ok;
}

const struct aead_backend aead_openssl = {
	.name = "openssl",
	.seal = openssl_seal,
	.open = openssl_open,
};

/* ---- selection ---- */

/* RFC 8439 section 2.8.2. */
static const uint8_t kat_key[AEAD_KEY_SIZE] = {
	0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x8b, 0x8c, 0x8d, 0x8e, 0x8f,
	0x90, 0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0x9b, 0x9c, 0x9d, 0x9e, 0x9f,
};
static const uint8_t kat_nonce[AEAD_NONCE_SIZE] = {
	0x07, 0x00, 0x00, 0x00, 0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47,
};
static const uint8_t kat_ad[] = {
	0x50, 0x51, 0x52, 0x53, 0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7,
};
static const char kat_plain[] =
	"Ladies and Gentlemen of the class of '99: If I could offer you only one "
	"tip for the future, sunscreen would be it.";
static const uint8_t kat_sealed[] = {
	0xd3, 0x1a, 0x8d, 0x34, 0x64, 0x8e, 0x60, 0xdb, 0x7b, 0x86, 0xaf, 0xbc, 0x53, 0xef, 0x7e, 0xc2,
	0xa4, 0xad, 0xed, 0x51, 0x29, 0x6e, 0x08, 0xfe, 0xa9, 0xe2, 0xb5, 0xa7, 0x36, 0xee, 0x62, 0xd6,
	0x3d, 0xbe, 0xa4, 0x5e, 0x8c, 0xa9, 0x67, 0x12, 0x82, 0xfa, 0xfb, 0x69, 0xda, 0x92, 0x72, 0x8b,
	0x1a, 0x71, 0xde, 0x0a, 0x9e, 0x06, 0x0b, 0x29, 0x05, 0xd6, 0xa5, 0xb6, 0x7e, 0xcd, 0x3b, 0x36,
	0x92, 0xdd, 0xbd, 0x7f, 0x2d, 0x77, 0x8b, 0x8c, 0x98, 0x03, 0xae, 0xe3, 0x28, 0x09, 0x1b, 0x58,
	0xfa, 0xb3, 0x24, 0xe4, 0xfa, 0xd6, 0x75, 0x94, 0x55, 0x85, 0x80, 0x8b, 0x48, 0x31, 0xd7, 0xbc,
	0x3f, 0xf4, 0xde, 0xf0, 0x8e, 0x4b, 0x7a, 0x9d, 0xe5, 0x76, 0xd2, 0x65, 0x86, 0xce, 0xc6, 0x4b,
	0x61, 0x16,
	/* tag */
	0x1a, 0xe1, 0x0b, 0x59, 0x4f, 0x09, 0xe2, 0x6a, 0x7e, 0x90, 0x2e, 0xcb, 0xd0, 0x60, 0x06, 0x91,
};
#define KAT_LEN (sizeof(kat_plain) - 1)
_Static_assert(sizeof(kat_sealed) == KAT_LEN + AEAD_TAG_SIZE, "RFC 8439 2.8.2 vector length");

/* Seal must match the vector, open must restore the plaintext, and a
 * flipped tag bit must be refused. */
static bool self_test(const struct aead_backend *b)
{
	uint8_t buf[sizeof(kat_sealed)];
	uint8_t plain[KAT_LEN];

	if (!b->seal(buf, (const uint8_t *)kat_plain, KAT_LEN, kat_ad, sizeof(kat_ad), kat_nonce,
		     kat_key) ||
	    memcmp(buf, kat_sealed, sizeof(kat_sealed)) != 0)
		return false;
	if (!b->open(plain, kat_sealed, sizeof(kat_sealed), kat_ad, sizeof(kat_ad), kat_nonce,
		     kat_key) ||
	    memcmp(plain, kat_plain, KAT_LEN) != 0)
		return false;
	buf[sizeof(buf) - 1] ^= 0x01;
	if (b->open(plain, buf, sizeof(buf), kat_ad, sizeof(kat_ad), kat_nonce, kat_key))
		return false;
	return true;
}

static double elapsed_ns(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e9 + (double)(b->tv_nsec - a->tv_nsec);
}

/* Megabytes per second sealing MTU-sized packets for about MEASURE_NSEC. */
static double measure(const struct aead_backend *b)
{
	uint8_t buf[MEASURE_PACKET_SIZE + AEAD_TAG_SIZE];
	uint8_t key[AEAD_KEY_SIZE], nonce[AEAD_NONCE_SIZE];
	struct timespec start, now;
	uint64_t counter = 0;
	double ns;
	bool ok;

	randombytes_buf(key, sizeof(key));
	memset(buf, 0xa5, sizeof(buf));
	/* Warm up: first-use allocation and cold caches are not throughput. */
	aead_nonce_from_counter(nonce, counter++);
	ok = b->seal(buf, buf, MEASURE_PACKET_SIZE, NULL, 0, nonce, key);

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		for (int i = 0; i < MEASURE_BATCH; i++) {
			aead_nonce_from_counter(nonce, counter++);
			ok &= b->seal(buf, buf, MEASURE_PACKET_SIZE, NULL, 0, nonce, key);
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		ns = elapsed_ns(&start, &now);
	} while (ns < MEASURE_NSEC);

	sodium_memzero(key, sizeof(key));
	/* A backend that fails mid-run is worth nothing, however fast. */
	if (!ok)
		return 0.0;
	return (double)(counter - 1) * MEASURE_PACKET_SIZE / (ns / 1e9) / 1e6;
}

/* Returns NULL, leaving the active backend alone, when no backend passes
 * its self-test: the caller must then refuse to run. */
const struct aead_backend *aead_select(struct aead_measure report[AEAD_BACKENDS])
{
	const struct aead_backend *const candidates[AEAD_BACKENDS] = {
		&aead_sodium, &aead_openssl, &aead_wide,
	};
	const struct aead_backend *best = NULL;
	double best_rate = 0.0;

	sodium_ready();
	for (int i = 0; i < AEAD_BACKENDS; i++) {
		const struct aead_backend *b = candidates[i];
		bool passed = self_test(b);
		double rate = passed ? measure(b) : 0.0;

		if (passed && (!best || rate > best_rate)) {
			best = b;
			best_rate = rate;
		}
		if (report) {
			report[i].backend = b;
			report[i].passed = passed;
			report[i].mbytes_per_sec = rate;
		}
	}
	if (best)
		aead_use(best);
	return best;
}

const struct aead_backend *aead_active(void)
{
	return __atomic_load_n(&active_backend, __ATOMIC_ACQUIRE);
}

void aead_use(const struct aead_backend *b)
{
	__atomic_store_n(&active_backend, b, __ATOMIC_RELEASE);
}

const struct aead_backend *aead_by_name(const char *name)
{
	if (!name)
		return NULL;
	if (strcmp(name, aead_sodium.name) == 0)
		return &aead_sodium;
	if (strcmp(name, aead_openssl.name) == 0)
		return &aead_openssl;
	if (strcmp(name, aead_wide.name) == 0)
		return &aead_wide;
	return NULL;
}

bool aead_seal(uint8_t *dst, const uint8_t *src, size_t len, const uint8_t *ad, size_t ad_len,
	       uint64_t counter, const uint8_t key[AEAD_KEY_SIZE])
{
	uint8_t nonce[AEAD_NONCE_SIZE];

	aead_nonce_from_counter(nonce, counter);
	return aead_active()->seal(dst, src, len, ad, ad_len, nonce, key);
}

bool aead_open(uint8_t *dst, const uint8_t *src, size_t src_len, const uint8_t *ad, size_t ad_len,
	       uint64_t counter, const uint8_t key[AEAD_KEY_SIZE])
{
	uint8_t nonce[AEAD_NONCE_SIZE];

	aead_nonce_from_counter(nonce, counter);
	return aead_active()->open(dst, src, src_len, ad, ad_len, nonce, key);
}

/* ---- XChaCha20-Poly1305 ---- */

bool xaead_seal(uint8_t *dst, const uint8_t *src, size_t len, const uint8_t *ad, size_t ad_len,
		const uint8_t nonce[XAEAD_NONCE_SIZE], const uint8_t key[AEAD_KEY_SIZE])
{
	sodium_ready();
	return crypto_aead_xchacha20poly1305_ietf_encrypt_detached(
		       dst, dst + len, NULL, src, len, ad, ad_len, NULL, nonce, key) == 0;
}

bool xaead_open(uint8_t *dst, const uint8_t *src, size_t src_len, const uint8_t *ad, size_t ad_len,
		const uint8_t nonce[XAEAD_NONCE_SIZE], const uint8_t key[AEAD_KEY_SIZE])
{
	size_t len;

	if (src_len < AEAD_TAG_SIZE)
		return false;
	len = src_len - AEAD_TAG_SIZE;
	sodium_ready();
	if (crypto_aead_xchacha20poly1305_ietf_decrypt_detached(
		    dst, NULL, src, len, src + len, ad, ad_len, nonce, key) != 0) {
		sodium_memzero(dst, len);
		return false;
	}
	return true;
}
