/* BLAKE2s (RFC 7693) and the HMAC/HKDF constructions WireGuard builds on it.
 * Used on the handshake and cookie paths only, so the code favours clarity
 * and wiping over speed; the rounds are still unrolled by macro. */
#include "crypto/blake2s.h"

#include <stdlib.h>
#include <string.h>

#include <sodium.h>

static const uint32_t blake2s_iv[8] = {
	0x6A09E667UL, 0xBB67AE85UL, 0x3C6EF372UL, 0xA54FF53AUL,
	0x510E527FUL, 0x9B05688CUL, 0x1F83D9ABUL, 0x5BE0CD19UL,
};

static const uint8_t blake2s_sigma[10][16] = {
	{ 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 },
	{ 14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3 },
	{ 11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4 },
	{ 7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8 },
	{ 9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13 },
	{ 2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9 },
	{ 12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11 },
	{ 13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10 },
	{ 6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5 },
	{ 10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0 },
};

enum {
	HMAC_IPAD = 0x36,
	HMAC_OPAD = 0x5c,
};

static inline uint32_t ror32(uint32_t w, unsigned c)
{
	return (w >> c) | (w << (32 - c));
}

static inline uint32_t load_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void store_le32(uint8_t *p, uint32_t w)
{
	p[0] = (uint8_t)w;
	p[1] = (uint8_t)(w >> 8);
	p[2] = (uint8_t)(w >> 16);
	p[3] = (uint8_t)(w >> 24);
}

/* The mixing function G of RFC 7693 section 3.1, with rotations 16/12/8/7. */
#define G(r, i, a, b, c, d)                                   \
	do {                                                  \
		a = a + b + m[blake2s_sigma[r][2 * (i)]];     \
		d = ror32(d ^ a, 16);                         \
		c = c + d;                                    \
		b = ror32(b ^ c, 12);                         \
		a = a + b + m[blake2s_sigma[r][2 * (i) + 1]]; \
		d = ror32(d ^ a, 8);                          \
		c = c + d;                                    \
		b = ror32(b ^ c, 7);                          \
	} while (0)

#define ROUND(r)                                        \
	do {                                            \
		G(r, 0, v[0], v[4], v[8], v[12]);       \
		G(r, 1, v[1], v[5], v[9], v[13]);       \
		G(r, 2, v[2], v[6], v[10], v[14]);      \
		G(r, 3, v[3], v[7], v[11], v[15]);      \
		G(r, 4, v[0], v[5], v[10], v[15]);      \
		G(r, 5, v[1], v[6], v[11], v[12]);      \
		G(r, 6, v[2], v[7], v[8], v[13]);       \
		G(r, 7, v[3], v[4], v[9], v[14]);       \
	} while (0)

/* Compresses one 64-byte block after counting `inc` more input bytes. */
static void compress(struct blake2s_state *s, const uint8_t block[BLAKE2S_BLOCK_SIZE], uint32_t inc)
{
	uint32_t m[16], v[16];

	s->t[0] += inc;
	if (s->t[0] < inc)
		s->t[1]++;

	for (int i = 0; i < 16; i++)
		m[i] = load_le32(block + 4 * i);
	for (int i = 0; i < 8; i++) {
		v[i] = s->h[i];
		v[i + 8] = blake2s_iv[i];
	}
	v[12] ^= s->t[0];
	v[13] ^= s->t[1];
	v[14] ^= s->f[0];
	v[15] ^= s->f[1];

	ROUND(0);
	ROUND(1);
	ROUND(2);
	ROUND(3);
	ROUND(4);
	ROUND(5);
	ROUND(6);
	ROUND(7);
	ROUND(8);
	ROUND(9);

	for (int i = 0; i < 8; i++)
		s->h[i] ^= v[i] ^ v[i + 8];

	/* m holds message words (possibly the key block), v the chaining value. */
	sodium_memzero(m, sizeof(m));
	sodium_memzero(v, sizeof(v));
}

#undef ROUND
#undef G

void blake2s_init_key(struct blake2s_state *s, size_t outlen, const void *key, size_t keylen)
{
	/* Sizes come from compile-time constants of the callers; a bad one is a
	 * programming error that would otherwise overrun buffers. */
	if (outlen == 0 || outlen > BLAKE2S_HASH_SIZE || keylen > BLAKE2S_KEY_SIZE ||
	    (keylen && !key))
		abort();

	memset(s, 0, sizeof(*s));
	memcpy(s->h, blake2s_iv, sizeof(s->h));
	/* Parameter block word 0: digest length, key length, fanout 1, depth 1. */
	s->h[0] ^= 0x01010000UL ^ ((uint32_t)keylen << 8) ^ (uint32_t)outlen;
	s->outlen = outlen;

	if (keylen) {
		uint8_t block[BLAKE2S_BLOCK_SIZE] = { 0 };

		memcpy(block, key, keylen);
		blake2s_update(s, block, sizeof(block));
		sodium_memzero(block, sizeof(block));
	}
}

void blake2s_init(struct blake2s_state *s, size_t outlen)
{
	blake2s_init_key(s, outlen, NULL, 0);
}

void blake2s_update(struct blake2s_state *s, const void *in, size_t inlen)
{
	const uint8_t *p = in;
	size_t fill = BLAKE2S_BLOCK_SIZE - s->buflen;

	if (inlen == 0)
		return;
	/* The last block must stay buffered: final() compresses it with the
	 * finalisation flag, so only compress when more input follows. */
	if (inlen > fill) {
		memcpy(s->buf + s->buflen, p, fill);
		compress(s, s->buf, BLAKE2S_BLOCK_SIZE);
		s->buflen = 0;
		p += fill;
		inlen -= fill;
		while (inlen > BLAKE2S_BLOCK_SIZE) {
			compress(s, p, BLAKE2S_BLOCK_SIZE);
			p += BLAKE2S_BLOCK_SIZE;
			inlen -= BLAKE2S_BLOCK_SIZE;
		}
	}
	memcpy(s->buf + s->buflen, p, inlen);
	s->buflen += inlen;
}

void blake2s_final(struct blake2s_state *s, uint8_t *out)
{
	uint8_t digest[BLAKE2S_HASH_SIZE];

	memset(s->buf + s->buflen, 0, BLAKE2S_BLOCK_SIZE - s->buflen);
	s->f[0] = 0xFFFFFFFFUL;
	compress(s, s->buf, (uint32_t)s->buflen);

	for (int i = 0; i < 8; i++)
		store_le32(digest + 4 * i, s->h[i]);
	memcpy(out, digest, s->outlen);

	sodium_memzero(digest, sizeof(digest));
	sodium_memzero(s, sizeof(*s));
}

void blake2s(uint8_t *out, size_t outlen, const void *in, size_t inlen,
	     const void *key, size_t keylen)
{
	struct blake2s_state s;

	blake2s_init_key(&s, outlen, key, keylen);
	blake2s_update(&s, in, inlen);
	blake2s_final(&s, out);
}

void blake2s_hmac(uint8_t out[BLAKE2S_HASH_SIZE], const void *in, size_t inlen,
		  const void *key, size_t keylen)
{
	struct blake2s_state s;
	uint8_t x_key[BLAKE2S_BLOCK_SIZE] = { 0 };
	uint8_t inner[BLAKE2S_HASH_SIZE];

	/* RFC 2104: a key longer than the block is replaced by its hash. */
	if (keylen > BLAKE2S_BLOCK_SIZE)
		blake2s(x_key, BLAKE2S_HASH_SIZE, key, keylen, NULL, 0);
	else if (keylen)
		memcpy(x_key, key, keylen);

	for (size_t i = 0; i < sizeof(x_key); i++)
		x_key[i] ^= HMAC_IPAD;
	blake2s_init(&s, BLAKE2S_HASH_SIZE);
	blake2s_update(&s, x_key, sizeof(x_key));
	blake2s_update(&s, in, inlen);
	blake2s_final(&s, inner);

	/* Turn the ipad key into the opad key without keeping the plain key. */
	for (size_t i = 0; i < sizeof(x_key); i++)
		x_key[i] ^= HMAC_IPAD ^ HMAC_OPAD;
	blake2s_init(&s, BLAKE2S_HASH_SIZE);
	blake2s_update(&s, x_key, sizeof(x_key));
	blake2s_update(&s, inner, sizeof(inner));
	blake2s_final(&s, out);

	sodium_memzero(x_key, sizeof(x_key));
	sodium_memzero(inner, sizeof(inner));
}

void blake2s_hkdf(uint8_t out1[BLAKE2S_HASH_SIZE], uint8_t out2[BLAKE2S_HASH_SIZE],
		  uint8_t out3[BLAKE2S_HASH_SIZE], const void *data, size_t data_len,
		  const uint8_t chaining_key[BLAKE2S_HASH_SIZE])
{
	uint8_t prk[BLAKE2S_HASH_SIZE];
	/* t[i] holds output i+1 followed by the counter byte for the next step,
	 * so each step hashes one contiguous buffer. */
	uint8_t t[3][BLAKE2S_HASH_SIZE + 1];
	uint8_t one = 0x1;

	/* Callers pass their chaining key as an output too (ck = KDF1(ck, x)),
	 * so nothing is written to out* until every input has been consumed. */
	blake2s_hmac(prk, data, data_len, chaining_key, BLAKE2S_HASH_SIZE);

	blake2s_hmac(t[0], &one, 1, prk, sizeof(prk));
	if (out2 || out3) {
		t[0][BLAKE2S_HASH_SIZE] = 0x2;
		blake2s_hmac(t[1], t[0], sizeof(t[0]), prk, sizeof(prk));
	}
	if (out3) {
		t[1][BLAKE2S_HASH_SIZE] = 0x3;
		blake2s_hmac(t[2], t[1], sizeof(t[1]), prk, sizeof(prk));
	}

	memcpy(out1, t[0], BLAKE2S_HASH_SIZE);
	if (out2)
		memcpy(out2, t[1], BLAKE2S_HASH_SIZE);
	if (out3)
		memcpy(out3, t[2], BLAKE2S_HASH_SIZE);

	sodium_memzero(prk, sizeof(prk));
	sodium_memzero(t, sizeof(t));
}
