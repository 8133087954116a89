/* Internet checksum helpers. The sum adds 16-bit words in host memory
 * order; because 2^16, 2^32 and 2^48 are all 1 modulo 0xffff, adding whole
 * 64-bit loads and folding at the end gives the same one's-complement sum as
 * adding the words one by one (RFC 1071, section 2). */
#include "pkt/csum.h"

#include <stdbool.h>
#include <string.h>

#include <immintrin.h>

/* Bytes summed between two folds of the accumulator: each 8-byte step adds
 * less than 2^33, so 2^30 bytes add less than 2^60 and never overflow. */
#define CHUNK_MAX ((size_t)1 << 30)

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Folds a 64-bit accumulator to at most 33 bits without changing its value
 * modulo 0xffff. */
static inline uint64_t reduce(uint64_t s)
{
	return (s & 0xffffffffu) + (s >> 32);
}

static uint64_t sum_chunk(const uint8_t *p, size_t len)
{
	uint64_t a = 0, b = 0;

	/* Two independent accumulators let the adds of neighbouring words
	 * overlap; splitting each load into 32-bit halves needs no carry. */
	while (len >= 32) {
		uint64_t w0 = load64(p), w1 = load64(p + 8);
		uint64_t w2 = load64(p + 16), w3 = load64(p + 24);

		a += (w0 & 0xffffffffu) + (w0 >> 32) + (w1 & 0xffffffffu) + (w1 >> 32);
		b += (w2 & 0xffffffffu) + (w2 >> 32) + (w3 & 0xffffffffu) + (w3 >> 32);
		p += 32;
		len -= 32;
	}
	while (len >= 8) {
		uint64_t w = load64(p);

		a += (w & 0xffffffffu) + (w >> 32);
		p += 8;
		len -= 8;
	}
	if (len) {
		/* The tail as one zero-padded word: byte i of the tail keeps
		 * its place relative to the 16-bit word grid. */
		uint8_t tail[8] = { 0 };

		memcpy(tail, p, len);
		uint64_t w = load64(tail);

		b += (w & 0xffffffffu) + (w >> 32);
	}
	return reduce(a) + reduce(b);
}

/* The same with AVX2, 64 bytes a step: each 64-bit lane adds the two
 * 32-bit halves of its word, as the scalar loop does. */
__attribute__((target("avx2"))) static uint64_t sum_chunk_avx2(const uint8_t *p, size_t len)
{
	const __m256i low = _mm256_set1_epi64x(0xffffffff);
	__m256i a = _mm256_setzero_si256(), b = _mm256_setzero_si256();
	uint64_t lanes[4], s = 0;

	while (len >= 64) {
		__m256i x = _mm256_loadu_si256((const __m256i *)p);
		__m256i y = _mm256_loadu_si256((const __m256i *)(p + 32));

		a = _mm256_add_epi64(a, _mm256_and_si256(x, low));
		b = _mm256_add_epi64(b, _mm256_srli_epi64(x, 32));
		a = _mm256_add_epi64(a, _mm256_and_si256(y, low));
		b = _mm256_add_epi64(b, _mm256_srli_epi64(y, 32));
		p += 64;
		len -= 64;
	}
	_mm256_storeu_si256((__m256i *)lanes, _mm256_add_epi64(a, b));
	for (int i = 0; i < 4; i++)
		s += reduce(lanes[i]);
	return reduce(s) + sum_chunk(p, len);
}

static bool have_avx2(void)
{
	static int cached = -1;
	int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);

	if (v < 0) {
		__builtin_cpu_init();
		v = __builtin_cpu_supports("avx2");
		__atomic_store_n(&cached, v, __ATOMIC_RELAXED);
	}
	return v;
}

static uint64_t sum_any(const uint8_t *p, size_t len)
{
	return len >= 128 && have_avx2() ? sum_chunk_avx2(p, len) : sum_chunk(p, len);
}

tun_csum_t tun_csum_add(tun_csum_t sum, const void *data, size_t len)
{
	const uint8_t *p = data;

	sum = reduce(sum);
	while (len > CHUNK_MAX) {
		sum = reduce(sum + sum_any(p, CHUNK_MAX));
		p += CHUNK_MAX;
		len -= CHUNK_MAX;
	}
	return reduce(sum + sum_any(p, len));
}

uint16_t tun_csum_fold(tun_csum_t sum)
{
	uint64_t s = reduce(reduce(sum));

	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return be16toh((uint16_t)s);
}

tun_csum_t tun_csum_pseudo(const uint8_t *ip, uint8_t proto, uint32_t l4_len)
{
	/* Source and destination are adjacent in both versions: 12..19 in
	 * IPv4, 8..39 in IPv6. IPv6 sums the length as 32 bits (RFC 8200,
	 * section 8.1); for IPv4 the 16-bit length gives the same sum. */
	tun_csum_t sum;

	if ((ip[0] >> 4) == 6)
		sum = tun_csum_add(0, ip + 8, 32);
	else
		sum = tun_csum_add(0, ip + 12, 8);
	sum = tun_csum_add32(sum, l4_len);
	return tun_csum_add16(sum, proto);
}

uint16_t tun_csum_replace16(uint16_t check, uint16_t old, uint16_t new_val)
{
	uint32_t s = (uint16_t)~check + (uint32_t)(uint16_t)~old + new_val;

	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}
