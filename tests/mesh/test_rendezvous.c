/* Rendezvous hashing (mesh/rendezvous.h) against a naive model written
 * here from the description in mesh/rendezvous.c, with its own SipHash-2-4
 * (checked on the reference vector of the SipHash paper): the weights agree
 * bit for bit; homes are spread evenly; removing a member moves only its
 * addresses; host bits past cidr do not matter; ties go to the lower index. */
#include "mesh/rendezvous.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <sodium.h>

#define CHECK(cond) do {                                                      \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: check failed: %s\n",         \
				__FILE__, __LINE__, #cond);                   \
			exit(1);                                              \
		}                                                             \
	} while (0)

enum { N_MEMBERS = 10, N_ADDRS = 100000 };

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	/* xorshift64*: reproducible. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static void rnd_bytes(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(rnd() >> 32);
}

/* ---- a naive SipHash-2-4 (Aumasson, Bernstein 2012) ------------------- */

static uint64_t rotl(uint64_t x, int b)
{
	return x << b | x >> (64 - b);
}

static uint64_t le64(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void sipround(uint64_t v[4])
{
	v[0] += v[1]; v[1] = rotl(v[1], 13); v[1] ^= v[0]; v[0] = rotl(v[0], 32);
	v[2] += v[3]; v[3] = rotl(v[3], 16); v[3] ^= v[2];
	v[0] += v[3]; v[3] = rotl(v[3], 21); v[3] ^= v[0];
	v[2] += v[1]; v[1] = rotl(v[1], 17); v[1] ^= v[2]; v[2] = rotl(v[2], 32);
}

static uint64_t siphash24(const uint8_t key[16], const uint8_t *m, size_t len)
{
	uint64_t k0 = le64(key, 8), k1 = le64(key + 8, 8), last;
	uint64_t v[4] = { k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
			  k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull };
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t w = le64(m + i, 8);

		v[3] ^= w;
		sipround(v);
		sipround(v);
		v[0] ^= w;
	}
	last = (uint64_t)len << 56 | le64(m + i, len - i);
	v[3] ^= last;
	sipround(v);
	sipround(v);
	v[0] ^= last;
	v[2] ^= 0xff;
	for (int r = 0; r < 4; r++)
		sipround(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/* ---- the model ---------------------------------------------------------- */

static uint64_t model_weight(const uint8_t key[32], int family, const uint8_t *addr,
			     unsigned int cidr)
{
	unsigned int bits = family == AF_INET ? 32 : 128;
	uint8_t k[16], in[18] = { 0 };

	if (cidr > bits)
		cidr = bits;
	for (int i = 0; i < 16; i++)
		k[i] = key[i] ^ key[16 + i];
	in[0] = family == AF_INET ? 4 : 6;
	in[1] = (uint8_t)cidr;
	for (unsigned int b = 0; b < cidr; b++) /* bit by bit, most significant first */
		if (addr[b / 8] & (0x80 >> (b % 8)))
			in[2 + b / 8] |= (uint8_t)(0x80 >> (b % 8));
	return siphash24(k, in, 2 + bits / 8);
}

static long model_home(uint8_t (*keys)[32], size_t n, int family, const uint8_t *addr,
		       unsigned int cidr)
{
	long home = -1;
	uint64_t best = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t w = model_weight(keys[i], family, addr, cidr);

		if (home == -1 || w > best)
			home = (long)i, best = w;
	}
	return home;
}

struct addr {
	int family;
	uint8_t cidr;
	uint8_t b[16];
};

/* A random address with host bits cleared: half IPv4, half IPv6; mostly
 * host routes, some shorter prefixes. */
static struct addr rnd_addr(void)
{
	struct addr a = { .family = rnd() & 1 ? AF_INET : AF_INET6 };
	unsigned int bits = a.family == AF_INET ? 32 : 128;

	rnd_bytes(a.b, bits / 8);
	a.cidr = (uint8_t)(rnd() % 4 ? bits : rnd() % (bits + 1));
	for (unsigned int b = a.cidr; b < bits; b++)
		a.b[b / 8] &= (uint8_t)~(0x80 >> (b % 8));
	return a;
}

static uint8_t keys[N_MEMBERS][32];
static struct addr addrs[N_ADDRS];
static long homes[N_ADDRS];

static void test_siphash_vector(void)
{
	/* SipHash paper, appendix A: key 00..0f, message 00..0e. */
	uint8_t key[16], m[15], out[8];

	for (int i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 15; i++)
		m[i] = (uint8_t)i;
	CHECK(siphash24(key, m, sizeof(m)) == 0xa129ca6149be45e5ull);
	crypto_shorthash(out, m, sizeof(m), key);
	CHECK(le64(out, 8) == 0xa129ca6149be45e5ull);
}

static void test_model_agreement(void)
{
	for (int i = 0; i < 20000; i++) {
		uint8_t key[32];
		struct addr a = rnd_addr();
		/* Any cidr, also past the family's width and with host bits. */
		unsigned int cidr = (unsigned int)(rnd() % 256);

		rnd_bytes(key, sizeof(key));
		rnd_bytes(a.b, sizeof(a.b));
		CHECK(rdv_weight(key, a.family, a.b, (uint8_t)cidr) ==
		      model_weight(key, a.family, a.b, cidr));
		CHECK(rdv_weight(key, a.family, a.b, a.cidr) == model_weight(key, a.family, a.b, a.cidr));
	}
	/* Known answers of the model pinned down for one key, so that a
	 * change of the input layout shows even if made in both places. */
	uint8_t key[32] = { 0 }, v4[4] = { 10, 1, 2, 3 }, v6[16] = { 0x20, 0x01, 0x0d, 0xb8 };

	for (int i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	uint8_t in4[6] = { 4, 32, 10, 1, 2, 3 }, in6[18] = { 6, 32, 0x20, 0x01, 0x0d, 0xb8 };

	CHECK(rdv_weight(key, AF_INET, v4, 32) == siphash24(key, in4, 6));
	CHECK(rdv_weight(key, AF_INET6, v6, 32) == siphash24(key, in6, 18));
	/* The key halves are XORed: a key is equivalent to its halves swapped. */
	uint8_t swapped[32];

	memcpy(swapped, key + 16, 16);
	memcpy(swapped + 16, key, 16);
	CHECK(rdv_weight(swapped, AF_INET, v4, 32) == rdv_weight(key, AF_INET, v4, 32));
	/* Family and cidr are part of the input. */
	CHECK(rdv_weight(key, AF_INET, v4, 32) != rdv_weight(key, AF_INET6, v4, 32));
	CHECK(rdv_weight(key, AF_INET, v4, 24) != rdv_weight(key, AF_INET, v4, 32));
	CHECK(rdv_weight(key, AF_INET, v4, 200) == rdv_weight(key, AF_INET, v4, 32));
	CHECK(rdv_weight(key, 0, v4, 32) == 0);
}

static void test_homes(void)
{
	size_t per[N_MEMBERS] = { 0 };

	for (int i = 0; i < N_MEMBERS; i++)
		rnd_bytes(keys[i], 32);
	CHECK(rdv_home((const uint8_t (*)[32])keys, 0, AF_INET, addrs[0].b, 32) == -1);
	for (int i = 0; i < N_ADDRS; i++) {
		addrs[i] = rnd_addr();
		homes[i] = rdv_home((const uint8_t (*)[32])keys, N_MEMBERS, addrs[i].family,
				    addrs[i].b, addrs[i].cidr);
		CHECK(homes[i] >= 0 && homes[i] < N_MEMBERS);
		/* Deterministic, and the model's answer. */
		CHECK(homes[i] == rdv_home((const uint8_t (*)[32])keys, N_MEMBERS, addrs[i].family,
					   addrs[i].b, addrs[i].cidr));
		if (i % 10 == 0)
			CHECK(homes[i] == model_home(keys, N_MEMBERS, addrs[i].family, addrs[i].b,
						     addrs[i].cidr));
		per[homes[i]]++;
	}
	/* About 1/n each: 10,000 expected, a standard deviation near 95;
	 * within 30% is loose on purpose (it catches a broken hash, not
	 * bad luck). */
	for (int m = 0; m < N_MEMBERS; m++) {
		printf("member %d: home of %zu\n", m, per[m]);
		CHECK(per[m] > N_ADDRS / N_MEMBERS * 7 / 10 && per[m] < N_ADDRS / N_MEMBERS * 13 / 10);
	}
}

/* Removing member j: an address whose home was not j keeps its home (same
 * key, index shifted); one whose home was j goes to the best of the rest. */
static void test_removal(void)
{
	static const int removed[] = { 0, 4, N_MEMBERS - 1 };
	uint8_t rest[N_MEMBERS - 1][32];

	for (size_t r = 0; r < sizeof(removed) / sizeof(removed[0]); r++) {
		int j = removed[r];
		size_t moved = 0;

		for (int m = 0, k = 0; m < N_MEMBERS; m++)
			if (m != j)
				memcpy(rest[k++], keys[m], 32);
		for (int i = 0; i < N_ADDRS; i++) {
			long h = rdv_home((const uint8_t (*)[32])rest, N_MEMBERS - 1, addrs[i].family,
					  addrs[i].b, addrs[i].cidr);
			long was = homes[i];

			CHECK(h >= 0 && h < N_MEMBERS - 1);
			if (was != j) {
				CHECK(h == (was < j ? was : was - 1));
			} else {
				moved++;
				if (i % 10 == 0)
					CHECK(h == model_home(rest, N_MEMBERS - 1, addrs[i].family,
							      addrs[i].b, addrs[i].cidr));
			}
		}
		CHECK(moved > 0);
	}
}

static void test_host_bits(void)
{
	for (int i = 0; i < N_ADDRS; i += 7) {
		struct addr a = addrs[i];
		unsigned int bits = a.family == AF_INET ? 32 : 128;

		if (a.cidr == bits)
			continue;
		/* Random host bits; the network bits stay. */
		for (unsigned int b = a.cidr; b < bits; b++)
			if (rnd() & 1)
				a.b[b / 8] |= (uint8_t)(0x80 >> (b % 8));
		for (int m = 0; m < N_MEMBERS; m++)
			CHECK(rdv_weight(keys[m], a.family, a.b, a.cidr) ==
			      rdv_weight(keys[m], a.family, addrs[i].b, a.cidr));
		CHECK(rdv_home((const uint8_t (*)[32])keys, N_MEMBERS, a.family, a.b, a.cidr) ==
		      homes[i]);
	}
}

/* Equal weights need equal keys (or keys with the same XOR of halves):
 * the lower index wins. */
static void test_ties(void)
{
	uint8_t k[3][32];

	rnd_bytes(k[0], 32);
	memcpy(k[1], k[0], 32);
	memcpy(k[2], k[0] + 16, 16);
	memcpy(k[2] + 16, k[0], 16);
	for (int i = 0; i < 1000; i++) {
		struct addr a = rnd_addr();

		CHECK(rdv_home((const uint8_t (*)[32])k, 3, a.family, a.b, a.cidr) == 0);
		CHECK(rdv_home((const uint8_t (*)[32])k + 1, 2, a.family, a.b, a.cidr) == 0);
	}
}

int main(void)
{
	CHECK(sodium_init() >= 0);
	test_siphash_vector();
	test_model_agreement();
	test_homes();
	test_removal();
	test_host_bits();
	test_ties();
	printf("test_rendezvous: ok\n");
	return 0;
}
