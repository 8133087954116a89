/* ChaCha20 (RFC 8439 section 2.3-2.4). The wide version runs 16 blocks at
 * once, one block per 32-bit lane of AVX-512 registers: register i holds
 * state word i of all 16 blocks, so a quarter round is 12 instructions for
 * 16 blocks, and a transpose at the end turns lanes back into blocks. */
#include "crypto/chacha20.h"

#include <string.h>

#include <immintrin.h>

static uint32_t load32le(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void store32le(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* The 16-word input block: "expand 32-byte k", key, counter, nonce. */
static void init_state(uint32_t s[16], const uint8_t key[CHACHA20_KEY_SIZE],
		       const uint8_t nonce[CHACHA20_NONCE_SIZE], uint32_t counter)
{
	s[0] = 0x61707865;
	s[1] = 0x3320646e;
	s[2] = 0x79622d32;
	s[3] = 0x6b206574;
	for (int i = 0; i < 8; i++)
		s[4 + i] = load32le(key + 4 * i);
	s[12] = counter;
	for (int i = 0; i < 3; i++)
		s[13 + i] = load32le(nonce + 4 * i);
}

/* ---- one block, portable ---- */

static uint32_t rotl32(uint32_t v, int n)
{
	return v << n | v >> (32 - n);
}

#define QR(a, b, c, d)                                   \
	do {                                             \
		a += b; d ^= a; d = rotl32(d, 16);       \
		c += d; b ^= c; b = rotl32(b, 12);       \
		a += b; d ^= a; d = rotl32(d, 8);        \
		c += d; b ^= c; b = rotl32(b, 7);        \
	} while (0)

static void block(uint8_t out[CHACHA20_BLOCK_SIZE], const uint32_t in[16])
{
	uint32_t x[16];

	memcpy(x, in, sizeof(x));
	for (int i = 0; i < 10; i++) {
		QR(x[0], x[4], x[8], x[12]);
		QR(x[1], x[5], x[9], x[13]);
		QR(x[2], x[6], x[10], x[14]);
		QR(x[3], x[7], x[11], x[15]);
		QR(x[0], x[5], x[10], x[15]);
		QR(x[1], x[6], x[11], x[12]);
		QR(x[2], x[7], x[8], x[13]);
		QR(x[3], x[4], x[9], x[14]);
	}
	for (int i = 0; i < 16; i++)
		store32le(out + 4 * i, x[i] + in[i]);
}

#undef QR

/* dst = src XOR keystream, one block at a time; in[12] advances. */
static void xor_blocks(uint8_t *dst, const uint8_t *src, size_t len, uint32_t in[16])
{
	uint8_t k[CHACHA20_BLOCK_SIZE];

	while (len) {
		size_t n = len < sizeof(k) ? len : sizeof(k);

		block(k, in);
		in[12]++;
		for (size_t i = 0; i < n; i++)
			dst[i] = src[i] ^ k[i];
		src += n;
		dst += n;
		len -= n;
	}
	explicit_bzero(k, sizeof(k));
}

/* ---- 16 blocks, AVX-512 ---- */

#define WIDE __attribute__((target("avx512f,avx512bw")))
#define WIDE_INLINE __attribute__((target("avx512f,avx512bw"), always_inline)) static inline

#define QR16(a, b, c, d)                                                                     \
	do {                                                                                 \
		a = _mm512_add_epi32(a, b); d = _mm512_xor_si512(d, a); d = _mm512_rol_epi32(d, 16); \
		c = _mm512_add_epi32(c, d); b = _mm512_xor_si512(b, c); b = _mm512_rol_epi32(b, 12); \
		a = _mm512_add_epi32(a, b); d = _mm512_xor_si512(d, a); d = _mm512_rol_epi32(d, 8);  \
		c = _mm512_add_epi32(c, d); b = _mm512_xor_si512(b, c); b = _mm512_rol_epi32(b, 7);  \
	} while (0)

/* Transposes four registers of 4 words each (words w..w+3 of 16 blocks)
 * so that 128-bit lane L of register j holds those words of block 4L+j. */
WIDE_INLINE void transpose4(__m512i *a, __m512i *b, __m512i *c, __m512i *d)
{
	__m512i t0 = _mm512_unpacklo_epi32(*a, *b), t1 = _mm512_unpackhi_epi32(*a, *b);
	__m512i t2 = _mm512_unpacklo_epi32(*c, *d), t3 = _mm512_unpackhi_epi32(*c, *d);

	*a = _mm512_unpacklo_epi64(t0, t2);
	*b = _mm512_unpackhi_epi64(t0, t2);
	*c = _mm512_unpacklo_epi64(t1, t3);
	*d = _mm512_unpackhi_epi64(t1, t3);
}

/* Computes blocks counter..counter+15 of the state in[] and leaves block b
 * in ks[b] (64 bytes each, little-endian words). */
WIDE_INLINE void wide_blocks(__m512i ks[16], const uint32_t in[16])
{
	__m512i x[16], s[16];

	for (int i = 0; i < 16; i++)
		s[i] = _mm512_set1_epi32((int)in[i]);
	s[12] = _mm512_add_epi32(s[12], _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8,
							 7, 6, 5, 4, 3, 2, 1, 0));
	for (int i = 0; i < 16; i++)
		x[i] = s[i];
	for (int i = 0; i < 10; i++) {
		QR16(x[0], x[4], x[8], x[12]);
		QR16(x[1], x[5], x[9], x[13]);
		QR16(x[2], x[6], x[10], x[14]);
		QR16(x[3], x[7], x[11], x[15]);
		QR16(x[0], x[5], x[10], x[15]);
		QR16(x[1], x[6], x[11], x[12]);
		QR16(x[2], x[7], x[8], x[13]);
		QR16(x[3], x[4], x[9], x[14]);
	}
	for (int i = 0; i < 16; i++)
		x[i] = _mm512_add_epi32(x[i], s[i]);

	/* Group g = words 4g..4g+3; after this, lane L of x[4g+j] holds them
	 * for block 4L+j. */
	for (int g = 0; g < 4; g++)
		transpose4(&x[4 * g], &x[4 * g + 1], &x[4 * g + 2], &x[4 * g + 3]);
	/* For each j, a 4x4 transpose of 128-bit lanes across the groups. */
	for (int j = 0; j < 4; j++) {
		__m512i a = _mm512_shuffle_i32x4(x[j], x[4 + j], 0x44);
		__m512i b = _mm512_shuffle_i32x4(x[j], x[4 + j], 0xee);
		__m512i c = _mm512_shuffle_i32x4(x[8 + j], x[12 + j], 0x44);
		__m512i d = _mm512_shuffle_i32x4(x[8 + j], x[12 + j], 0xee);

		ks[0 + j] = _mm512_shuffle_i32x4(a, c, 0x88);
		ks[4 + j] = _mm512_shuffle_i32x4(a, c, 0xdd);
		ks[8 + j] = _mm512_shuffle_i32x4(b, d, 0x88);
		ks[12 + j] = _mm512_shuffle_i32x4(b, d, 0xdd);
	}
}

#undef QR16

WIDE void chacha20_wide(uint8_t out[CHACHA20_WIDE_SIZE], const uint8_t key[CHACHA20_KEY_SIZE],
			const uint8_t nonce[CHACHA20_NONCE_SIZE], uint32_t counter)
{
	uint32_t in[16];
	__m512i ks[16];

	init_state(in, key, nonce, counter);
	wide_blocks(ks, in);
	for (int b = 0; b < 16; b++)
		_mm512_storeu_si512(out + 64 * b, ks[b]);
}

/* Full 1024-byte chunks with the wide version, then the tail from one more
 * wide call, or from single blocks when it is two blocks or less. */
WIDE static void xor_wide(uint8_t *dst, const uint8_t *src, size_t len, uint32_t in[16])
{
	__m512i ks[16];

	while (len >= CHACHA20_WIDE_SIZE) {
		wide_blocks(ks, in);
		for (int b = 0; b < 16; b++) {
			__m512i m = _mm512_loadu_si512(src + 64 * b);

			_mm512_storeu_si512(dst + 64 * b, _mm512_xor_si512(m, ks[b]));
		}
		in[12] += 16;
		src += CHACHA20_WIDE_SIZE;
		dst += CHACHA20_WIDE_SIZE;
		len -= CHACHA20_WIDE_SIZE;
	}
	if (len > 2 * CHACHA20_BLOCK_SIZE) {
		size_t b = 0;

		wide_blocks(ks, in);
		for (; len >= CHACHA20_BLOCK_SIZE; b++) {
			__m512i m = _mm512_loadu_si512(src);

			_mm512_storeu_si512(dst, _mm512_xor_si512(m, ks[b]));
			src += CHACHA20_BLOCK_SIZE;
			dst += CHACHA20_BLOCK_SIZE;
			len -= CHACHA20_BLOCK_SIZE;
		}
		if (len) {
			__mmask64 k = (__mmask64)((1ull << len) - 1);
			__m512i m = _mm512_maskz_loadu_epi8(k, src);

			_mm512_mask_storeu_epi8(dst, k, _mm512_xor_si512(m, ks[b]));
		}
		/* The keystream of blocks not used stays in registers and dies
		 * with them; nothing to wipe in memory. */
		return;
	}
	xor_blocks(dst, src, len, in);
}

bool chacha20_wide_supported(void)
{
	static int cached = -1;
	int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);

	if (v < 0) {
		__builtin_cpu_init();
		v = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
		__atomic_store_n(&cached, v, __ATOMIC_RELAXED);
	}
	return v;
}

void chacha20_xor(uint8_t *dst, const uint8_t *src, size_t len,
		  const uint8_t key[CHACHA20_KEY_SIZE], const uint8_t nonce[CHACHA20_NONCE_SIZE],
		  uint32_t counter)
{
	uint32_t in[16];

	init_state(in, key, nonce, counter);
	if (chacha20_wide_supported())
		xor_wide(dst, src, len, in);
	else
		xor_blocks(dst, src, len, in);
	explicit_bzero(in, sizeof(in));
}
