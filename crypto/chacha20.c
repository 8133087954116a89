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

#define WIDE __attribute__((target("avx512f,avx512bw,avx512vl")))
#define WIDE_INLINE __attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) static inline

/* The intrinsics of one register width, by prefix: _mm512 or _mm256. */
#define ADD(W, a, b) W##_add_epi32(a, b)
#define XOR(W, a, b) W##_xor_epi32(a, b)
#define ROL(W, a, n) W##_rol_epi32(a, n)

/* Ten double rounds over x[16], one block per lane, for register width W. */
#define QRV(W, a, b, c, d)                                                       \
	do {                                                                     \
		a = ADD(W, a, b); d = XOR(W, d, a); d = ROL(W, d, 16);           \
		c = ADD(W, c, d); b = XOR(W, b, c); b = ROL(W, b, 12);           \
		a = ADD(W, a, b); d = XOR(W, d, a); d = ROL(W, d, 8);            \
		c = ADD(W, c, d); b = XOR(W, b, c); b = ROL(W, b, 7);            \
	} while (0)
#define DOUBLE_ROUNDS(W, x)                                                      \
	for (int r = 0; r < 10; r++) {                                           \
		QRV(W, x[0], x[4], x[8], x[12]);                                 \
		QRV(W, x[1], x[5], x[9], x[13]);                                 \
		QRV(W, x[2], x[6], x[10], x[14]);                                \
		QRV(W, x[3], x[7], x[11], x[15]);                                \
		QRV(W, x[0], x[5], x[10], x[15]);                                \
		QRV(W, x[1], x[6], x[11], x[12]);                                \
		QRV(W, x[2], x[7], x[8], x[13]);                                 \
		QRV(W, x[3], x[4], x[9], x[14]);                                 \
	}

/* Adds the input back, then transposes each group of four registers
 * (words 4g..4g+3 of all blocks) so that 128-bit lane L of register 4g+j
 * holds those words of block 4L+j. T is the register type. */
#define FINISH(W, T, x, s)                                                       \
	do {                                                                     \
		for (int i = 0; i < 16; i++)                                     \
			x[i] = ADD(W, x[i], s[i]);                               \
		for (int g = 0; g < 16; g += 4) {                                \
			T t0 = W##_unpacklo_epi32(x[g], x[g + 1]);               \
			T t1 = W##_unpackhi_epi32(x[g], x[g + 1]);               \
			T t2 = W##_unpacklo_epi32(x[g + 2], x[g + 3]);           \
			T t3 = W##_unpackhi_epi32(x[g + 2], x[g + 3]);           \
			x[g] = W##_unpacklo_epi64(t0, t2);                       \
			x[g + 1] = W##_unpackhi_epi64(t0, t2);                   \
			x[g + 2] = W##_unpacklo_epi64(t1, t3);                   \
			x[g + 3] = W##_unpackhi_epi64(t1, t3);                   \
		}                                                                \
	} while (0)

/* Blocks counter..counter+15 of the state in[]: block b in ks[b] (64 bytes,
 * little-endian words). */
WIDE_INLINE void wide_blocks(__m512i ks[16], const uint32_t in[16])
{
	__m512i x[16], s[16];

	for (int i = 0; i < 16; i++)
		s[i] = _mm512_set1_epi32((int)in[i]);
	s[12] = _mm512_add_epi32(s[12], _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8,
							 7, 6, 5, 4, 3, 2, 1, 0));
	for (int i = 0; i < 16; i++)
		x[i] = s[i];
	DOUBLE_ROUNDS(_mm512, x);
	FINISH(_mm512, __m512i, x, s);
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

/* The same for 8 blocks in 256-bit registers (three ports instead of two
 * on current Intel cores, so about 2/3 of the 16-block time): block b is
 * lo[b] (words 0-7) and hi[b] (words 8-15). */
WIDE_INLINE void half_blocks(__m256i lo[8], __m256i hi[8], const uint32_t in[16])
{
	__m256i x[16], s[16];

	for (int i = 0; i < 16; i++)
		s[i] = _mm256_set1_epi32((int)in[i]);
	s[12] = _mm256_add_epi32(s[12], _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0));
	for (int i = 0; i < 16; i++)
		x[i] = s[i];
	DOUBLE_ROUNDS(_mm256, x);
	FINISH(_mm256, __m256i, x, s);
	/* Lane L of x[4g+j]: words 4g..4g+3 of block 4L+j. */
	for (int j = 0; j < 4; j++) {
		lo[j] = _mm256_permute2x128_si256(x[j], x[4 + j], 0x20);
		lo[4 + j] = _mm256_permute2x128_si256(x[j], x[4 + j], 0x31);
		hi[j] = _mm256_permute2x128_si256(x[8 + j], x[12 + j], 0x20);
		hi[4 + j] = _mm256_permute2x128_si256(x[8 + j], x[12 + j], 0x31);
	}
}

#undef ADD
#undef XOR
#undef ROL
#undef QRV
#undef DOUBLE_ROUNDS
#undef FINISH

WIDE void chacha20_wide(uint8_t *out, unsigned int blocks, const uint8_t key[CHACHA20_KEY_SIZE],
			const uint8_t nonce[CHACHA20_NONCE_SIZE], uint32_t counter)
{
	uint32_t in[16];

	init_state(in, key, nonce, counter);
	if (blocks == 16) {
		__m512i ks[16];

		wide_blocks(ks, in);
		for (int b = 0; b < 16; b++)
			_mm512_storeu_si512(out + 64 * b, ks[b]);
	} else {
		__m256i lo[8], hi[8];

		half_blocks(lo, hi, in);
		for (int b = 0; b < 8; b++) {
			_mm256_storeu_si256((__m256i *)(out + 64 * b), lo[b]);
			_mm256_storeu_si256((__m256i *)(out + 64 * b + 32), hi[b]);
		}
	}
	explicit_bzero(in, sizeof(in));
}

/* dst = src ^ the 64-byte block k, only the first n bytes. */
WIDE_INLINE void xor_block(uint8_t *dst, const uint8_t *src, __m512i k, size_t n)
{
	__mmask64 m = n >= 64 ? ~(__mmask64)0 : (__mmask64)((1ull << n) - 1);

	_mm512_mask_storeu_epi8(dst, m, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, src), k));
}

/* Full 1024-byte chunks 16 blocks at a time, then a tail of more than 8
 * blocks the same way, or of up to 8 blocks with the 8-block version. */
WIDE static void xor_wide(uint8_t *dst, const uint8_t *src, size_t len, uint32_t in[16])
{
	__m512i ks[16];

	while (len > 8 * CHACHA20_BLOCK_SIZE) {
		size_t n = len < CHACHA20_WIDE_SIZE ? len : CHACHA20_WIDE_SIZE;

		wide_blocks(ks, in);
		for (size_t b = 0; b * 64 < n; b++)
			xor_block(dst + 64 * b, src + 64 * b, ks[b], n - 64 * b);
		in[12] += 16;
		src += n;
		dst += n;
		len -= n;
	}
	if (len) {
		__m256i lo[8], hi[8];

		half_blocks(lo, hi, in);
		for (size_t b = 0; b * 64 < len; b++)
			xor_block(dst + 64 * b, src + 64 * b,
				  _mm512_inserti64x4(_mm512_castsi256_si512(lo[b]), hi[b], 1), len - 64 * b);
	}
}

WIDE static void xor_stream_wide(uint8_t *dst, const uint8_t *src, const uint8_t *ks, size_t len)
{
	for (size_t i = 0; i < len; i += 64) {
		size_t n = len - i;
		__mmask64 m = n >= 64 ? ~(__mmask64)0 : (__mmask64)((1ull << n) - 1);

		xor_block(dst + i, src + i, _mm512_maskz_loadu_epi8(m, ks + i), n);
	}
}

void chacha20_xor_stream(uint8_t *dst, const uint8_t *src, const uint8_t *ks, size_t len)
{
	if (chacha20_wide_supported()) {
		xor_stream_wide(dst, src, ks, len);
		return;
	}
	for (size_t i = 0; i < len; i++)
		dst[i] = src[i] ^ ks[i];
}

bool chacha20_wide_supported(void)
{
	static int cached = -1;
	int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);

	if (v < 0) {
		__builtin_cpu_init();
		v = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		    __builtin_cpu_supports("avx512vl");
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
