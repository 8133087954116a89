/* ChaCha20-Poly1305 through every backend this CPU runs: RFC 8439 section
 * 2.8.2 and Appendix A.5 vectors, forgery rejection with wiping, in-place
 * use, the backends agreeing on random inputs, the counter nonce, threads,
 * and aead_select. */
#include "crypto/aead.h"

#include <pthread.h>

#include <sodium.h>

#include "check.h"
#include "crypto/chacha20.h"

/* sodium, openssl, and avx512 where the CPU has it (main fills it). */
static const struct aead_backend *backends[AEAD_BACKENDS];
static size_t NBACKENDS;

/* RFC 8439 section 2.8.2 */
static const char v1_key[] = "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f";
static const char v1_nonce[] = "070000004041424344454647";
static const char v1_ad[] = "50515253c0c1c2c3c4c5c6c7";
static const char v1_plain[] =
	"Ladies and Gentlemen of the class of '99: If I could offer you only one "
	"tip for the future, sunscreen would be it.";
static const char v1_cipher[] =
	"d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6"
	"3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36"
	"92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc"
	"3ff4def08e4b7a9de576d26586cec64b6116";
static const char v1_tag[] = "1ae10b594f09e26a7e902ecbd0600691";

/* RFC 8439 Appendix A.5 */
static const char v2_key[] = "1c9240a5eb55d38af333888604f6b5f0473917c1402b80099dca5cbc207075c0";
static const char v2_nonce[] = "000000000102030405060708";
static const char v2_ad[] = "f33388860000000000004e91";
static const char v2_cipher[] =
	"64a0861575861af460f062c79be643bd5e805cfd345cf389f108670ac76c8cb2"
	"4c6cfc18755d43eea09ee94e382d26b0bdb7b73c321b0100d4f03b7f355894cf"
	"332f830e710b97ce98c8a84abd0b948114ad176e008d33bd60f982b1ff37c855"
	"9797a06ef4f0ef61c186324e2b3506383606907b6a7c02b0f9f6157b53c867e4"
	"b9166c767b804d46a59b5216cde7a4e99040c5a40433225ee282a1b0a06c523e"
	"af4534d7f83fa1155b0047718cbc546a0d072b04b3564eea1b422273f548271a"
	"0bb2316053fa76991955ebd63159434ecebb4e466dae5a1073a6727627097a10"
	"49e617d91d361094fa68f0ff77987130305beaba2eda04df997b714d6c6f2c29"
	"a6ad5cb4022b02709b";
static const char v2_tag[] = "eead9d67890cbb22392336fea1851f38";
static const char v2_plain[] =
	"496e7465726e65742d4472616674732061726520647261667420646f63756d65"
	"6e74732076616c696420666f722061206d6178696d756d206f6620736978206d"
	"6f6e74687320616e64206d617920626520757064617465642c207265706c6163"
	"65642c206f72206f62736f6c65746564206279206f7468657220646f63756d65"
	"6e747320617420616e792074696d652e20497420697320696e617070726f7072"
	"6961746520746f2075736520496e7465726e65742d4472616674732061732072"
	"65666572656e6365206d6174657269616c206f7220746f206369746520746865"
	"6d206f74686572207468616e206173202fe2809c776f726b20696e2070726f67"
	"726573732e2fe2809d";

struct vector {
	uint8_t key[AEAD_KEY_SIZE], nonce[AEAD_NONCE_SIZE], ad[16];
	uint8_t plain[300], sealed[300 + AEAD_TAG_SIZE];
	size_t ad_len, len;
};

static void load_v1(struct vector *v)
{
	hex_decode(v->key, sizeof(v->key), v1_key);
	hex_decode(v->nonce, sizeof(v->nonce), v1_nonce);
	v->ad_len = hex_decode(v->ad, sizeof(v->ad), v1_ad);
	v->len = sizeof(v1_plain) - 1;
	memcpy(v->plain, v1_plain, v->len);
	CHECK(hex_decode(v->sealed, sizeof(v->sealed), v1_cipher) == v->len);
	hex_decode(v->sealed + v->len, AEAD_TAG_SIZE, v1_tag);
}

static void load_v2(struct vector *v)
{
	hex_decode(v->key, sizeof(v->key), v2_key);
	hex_decode(v->nonce, sizeof(v->nonce), v2_nonce);
	v->ad_len = hex_decode(v->ad, sizeof(v->ad), v2_ad);
	v->len = hex_decode(v->plain, sizeof(v->plain), v2_plain);
	CHECK(v->len == 265);
	CHECK(hex_decode(v->sealed, sizeof(v->sealed), v2_cipher) == v->len);
	hex_decode(v->sealed + v->len, AEAD_TAG_SIZE, v2_tag);
}

static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static void test_vector(const struct aead_backend *b, const struct vector *v, bool check_seal)
{
	uint8_t out[sizeof(v->sealed)], buf[sizeof(v->sealed)];
	size_t slen = v->len + AEAD_TAG_SIZE;

	fprintf(stderr, "  %s: vector of %zu bytes\n", b->name, v->len);
	if (check_seal) {
		CHECK(b->seal(out, v->plain, v->len, v->ad, v->ad_len, v->nonce, v->key));
		CHECK_MEM(out, v->sealed, slen);

		/* in place */
		memcpy(buf, v->plain, v->len);
		CHECK(b->seal(buf, buf, v->len, v->ad, v->ad_len, v->nonce, v->key));
		CHECK_MEM(buf, v->sealed, slen);
	}

	memset(out, 0xee, sizeof(out));
	CHECK(b->open(out, v->sealed, slen, v->ad, v->ad_len, v->nonce, v->key));
	CHECK_MEM(out, v->plain, v->len);

	memcpy(buf, v->sealed, slen);
	CHECK(b->open(buf, buf, slen, v->ad, v->ad_len, v->nonce, v->key));
	CHECK_MEM(buf, v->plain, v->len);

	/* Any flipped bit in ciphertext or tag is a forgery; dst is wiped. */
	for (size_t i = 0; i < slen; i += (i < 32 || i + 32 > slen) ? 1 : 17) {
		memcpy(buf, v->sealed, slen);
		buf[i] ^= (uint8_t)(1u << (i % 8));
		memset(out, 0xee, sizeof(out));
		if (b->open(out, buf, slen, v->ad, v->ad_len, v->nonce, v->key)) {
			fprintf(stderr, "forgery accepted, byte %zu\n", i);
			CHECK(0);
		}
		CHECK(all_zero(out, v->len));
		/* in place too */
		CHECK(!b->open(buf, buf, slen, v->ad, v->ad_len, v->nonce, v->key));
		CHECK(all_zero(buf, v->len));
	}

	/* Wrong associated data, nonce or key. */
	{
		uint8_t ad[16], nonce[AEAD_NONCE_SIZE], key[AEAD_KEY_SIZE];

		memcpy(ad, v->ad, v->ad_len);
		ad[0] ^= 1;
		CHECK(!b->open(out, v->sealed, slen, ad, v->ad_len, v->nonce, v->key));
		CHECK(!b->open(out, v->sealed, slen, v->ad, v->ad_len - 1, v->nonce, v->key));
		memcpy(nonce, v->nonce, sizeof(nonce));
		nonce[11] ^= 0x80;
		CHECK(!b->open(out, v->sealed, slen, v->ad, v->ad_len, nonce, v->key));
		memcpy(key, v->key, sizeof(key));
		key[31] ^= 0x01;
		CHECK(!b->open(out, v->sealed, slen, v->ad, v->ad_len, v->nonce, key));
	}

	/* Too short to hold a tag. */
	CHECK(!b->open(out, v->sealed, AEAD_TAG_SIZE - 1, v->ad, v->ad_len, v->nonce, v->key));
	CHECK(!b->open(out, v->sealed, 0, v->ad, v->ad_len, v->nonce, v->key));
}

static void test_known_answers(void)
{
	static struct vector v1, v2;

	load_v1(&v1);
	load_v2(&v2);
	for (size_t i = 0; i < NBACKENDS; i++) {
		test_vector(backends[i], &v1, true);
		/* A.5 has no plaintext-side vector, but sealing its plaintext must
		 * give back its ciphertext and tag. */
		test_vector(backends[i], &v2, true);
	}
}

/* One message through every backend: each seals exactly what libsodium
 * seals, and opens libsodium's output. */
static void agree_on(size_t len, size_t ad_len)
{
	enum { MAXLEN = 66000 };
	static uint8_t plain[MAXLEN], a[MAXLEN + AEAD_TAG_SIZE], b[MAXLEN + AEAD_TAG_SIZE];
	static uint8_t back[MAXLEN];
	uint8_t key[AEAD_KEY_SIZE], nonce[AEAD_NONCE_SIZE], ad[64];

	randombytes_buf(key, sizeof(key));
	randombytes_buf(nonce, sizeof(nonce));
	randombytes_buf(ad, sizeof(ad));
	randombytes_buf(plain, len);
	CHECK(aead_sodium.seal(a, plain, len, ad, ad_len, nonce, key));
	for (size_t i = 1; i < NBACKENDS; i++) {
		CHECK(backends[i]->seal(b, plain, len, ad, ad_len, nonce, key));
		if (memcmp(a, b, len + AEAD_TAG_SIZE) != 0) {
			fprintf(stderr, "%s disagrees with sodium at len=%zu ad_len=%zu\n",
				backends[i]->name, len, ad_len);
			CHECK(0);
			return;
		}
		CHECK(backends[i]->open(back, a, len + AEAD_TAG_SIZE, ad, ad_len, nonce, key));
		CHECK(memcmp(back, plain, len) == 0);
	}
}

/* Lengths 0..2000 (each AD length 0..64 on the way), and a few long ones
 * that take several 16-block passes. */
static void test_backends_agree(void)
{
	static const size_t long_lens[] = { 2047, 2048, 3000, 4096, 9000, 65535, 65536 };

	for (size_t len = 0; len <= 2000 && !check_failures; len++)
		agree_on(len, len % 65);
	for (size_t i = 0; i < sizeof(long_lens) / sizeof(long_lens[0]); i++)
		agree_on(long_lens[i], i * 7 % 65);
}

static void test_counter_nonce(void)
{
	static const uint8_t want[AEAD_NONCE_SIZE] = { 0, 0, 0, 0, 0x08, 0x07, 0x06,
						       0x05, 0x04, 0x03, 0x02, 0x01 };
	uint8_t nonce[AEAD_NONCE_SIZE], key[AEAD_KEY_SIZE], msg[100];
	uint8_t x[sizeof(msg) + AEAD_TAG_SIZE], y[sizeof(msg) + AEAD_TAG_SIZE], back[sizeof(msg)];
	const uint64_t counter = 0x0102030405060708ULL;

	aead_nonce_from_counter(nonce, counter);
	CHECK_MEM(nonce, want, sizeof(want));

	randombytes_buf(key, sizeof(key));
	randombytes_buf(msg, sizeof(msg));
	for (size_t i = 0; i < NBACKENDS; i++) {
		aead_use(backends[i]);
		CHECK(aead_active() == backends[i]);
		CHECK(aead_seal(x, msg, sizeof(msg), NULL, 0, counter, key));
		CHECK(backends[i]->seal(y, msg, sizeof(msg), NULL, 0, nonce, key));
		CHECK_MEM(x, y, sizeof(x));
		CHECK(aead_open(back, x, sizeof(x), NULL, 0, counter, key));
		CHECK_MEM(back, msg, sizeof(msg));
		CHECK(!aead_open(back, x, sizeof(x), NULL, 0, counter + 1, key));
		CHECK(all_zero(back, sizeof(back)));
	}
}

static void test_by_name(void)
{
	CHECK(aead_by_name("sodium") == &aead_sodium);
	CHECK(aead_by_name("openssl") == &aead_openssl);
	CHECK(aead_by_name("avx512") == &aead_wide);
	CHECK(aead_by_name("gcm") == NULL);
	CHECK(aead_by_name("") == NULL);
	CHECK(aead_by_name(NULL) == NULL);
}

static void test_select(void)
{
	struct aead_measure report[AEAD_BACKENDS];
	const struct aead_backend *chosen;
	double chosen_rate = 0.0;

	memset(report, 0, sizeof(report));
	chosen = aead_select(report);
	CHECK(chosen != NULL);
	CHECK(aead_active() == chosen);
	CHECK(report[0].backend == &aead_sodium);
	CHECK(report[1].backend == &aead_openssl);
	CHECK(report[2].backend == &aead_wide);
	CHECK(report[0].passed && report[1].passed);
	/* The avx512 backend passes exactly where the CPU has AVX-512. */
	CHECK(report[2].passed == chacha20_wide_supported());
	for (int i = 0; i < AEAD_BACKENDS; i++) {
		if (report[i].backend == chosen)
			chosen_rate = report[i].mbytes_per_sec;
		CHECK(!report[i].passed || report[i].mbytes_per_sec > 0.0);
		printf("  %s: %.0f MB/s%s\n", report[i].backend->name, report[i].mbytes_per_sec,
		       report[i].backend == chosen ? " (chosen)" : "");
	}
	/* The choice is the fastest passing backend. */
	for (int i = 0; i < AEAD_BACKENDS; i++)
		if (report[i].passed)
			CHECK(report[i].mbytes_per_sec <= chosen_rate);
}

/* Each thread gets its own OpenSSL context, freed when the thread exits
 * (LeakSanitizer reports it otherwise). */
static void *thread_body(void *arg)
{
	struct vector *v = arg;
	uint8_t out[sizeof(v->sealed)];
	uintptr_t ok = 1;

	for (int i = 0; i < 200; i++) {
		for (size_t b = 1; b < NBACKENDS; b++) {
			ok &= backends[b]->seal(out, v->plain, v->len, v->ad, v->ad_len, v->nonce,
						v->key);
			ok &= memcmp(out, v->sealed, v->len + AEAD_TAG_SIZE) == 0;
		}
	}
	return (void *)ok;
}

static void test_threads(void)
{
	static struct vector v;
	pthread_t t[4];

	load_v1(&v);
	for (int i = 0; i < 4; i++)
		CHECK(pthread_create(&t[i], NULL, thread_body, &v) == 0);
	for (int i = 0; i < 4; i++) {
		void *ret = NULL;

		CHECK(pthread_join(t[i], &ret) == 0);
		CHECK(ret == (void *)1);
	}
}

int main(void)
{
	if (sodium_init() < 0)
		return 1;
	/* Before any selection the default is libsodium. */
	CHECK(aead_active() == &aead_sodium);
	backends[NBACKENDS++] = &aead_sodium;
	backends[NBACKENDS++] = &aead_openssl;
	if (chacha20_wide_supported()) {
		backends[NBACKENDS++] = &aead_wide;
	} else {
		uint8_t buf[AEAD_TAG_SIZE + 1] = { 0 }, key[AEAD_KEY_SIZE] = { 0 };
		uint8_t nonce[AEAD_NONCE_SIZE] = { 0 };

		printf("no AVX-512: the avx512 backend must refuse every call\n");
		CHECK(!aead_wide.seal(buf, buf, 1, NULL, 0, nonce, key));
		CHECK(!aead_wide.open(buf, buf, sizeof(buf), NULL, 0, nonce, key));
	}

	test_known_answers();
	test_backends_agree();
	test_counter_nonce();
	test_by_name();
	test_threads();
	test_select();
	return check_result("test_aead");
}
