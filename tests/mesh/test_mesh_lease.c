/* Registration leases (mesh/lease.h) against wire forms written here byte
 * by byte, offsets spelled out (docs/mesh.md, "Leases"): a signed lease
 * decodes to what was written and encodes back to the same bytes; every
 * refusal reason comes from its own hand-broken lease; a flipped bit
 * anywhere, another key, a lease from the future past the skew and an
 * expired lease get their verdicts; the text form round-trips and refuses
 * what is not exactly one lease. */
#include "mesh/lease.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <sodium.h>

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,  \
				__LINE__, #cond);                                \
			exit(1);                                                 \
		}                                                                \
	} while (0)

enum { L_MAGIC = 0, L_VER = 2, L_FAM = 3, L_RES = 4, L_ISSUED = 8, L_EXPIRES = 16,
       L_ADDR = 24, L_HOLDER = 40, L_SIG = 72 };

/* Two leases compare by their wire form (the struct has padding). */
static bool same(const struct mesh_lease *a, const struct mesh_lease *b)
{
	uint8_t wa[MESH_LEASE_SIZE], wb[MESH_LEASE_SIZE];

	mesh_lease_encode(a, wa);
	mesh_lease_encode(b, wb);
	return !memcmp(wa, wb, sizeof(wa));
}

static const uint64_t SEC = 1000000000ull;
static const uint64_t T0 = 1796000000ull * 1000000000ull; /* 2026-12 */

static uint8_t seed[ED25519_SEED_SIZE], key[ED25519_PUBLIC_SIZE];

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* A lease for addr held by 32 bytes of 0x42 from T0 for an hour, signed
 * here over its first 72 bytes. */
static void write_lease(uint8_t w[MESH_LEASE_SIZE], int family, const char *addr)
{
	memset(w, 0, MESH_LEASE_SIZE);
	w[L_MAGIC] = 'w';
	w[L_MAGIC + 1] = 'l';
	w[L_VER] = 1;
	w[L_FAM] = family == AF_INET ? 4 : 6;
	put64(w + L_ISSUED, T0);
	put64(w + L_EXPIRES, T0 + 3600 * SEC);
	CHECK(inet_pton(family, addr, w + L_ADDR) == 1);
	memset(w + L_HOLDER, 0x42, 32);
	ed25519_sign(w + L_SIG, w, L_SIG, seed);
}

static void test_round_trip(void)
{
	const struct {
		int family;
		const char *addr;
	} cases[] = { { AF_INET6, "2001:db8::7" }, { AF_INET, "10.9.8.7" } };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t w[MESH_LEASE_SIZE], back[MESH_LEASE_SIZE], addr[16] = { 0 };
		struct mesh_lease l;
		const char *why = NULL;

		write_lease(w, cases[i].family, cases[i].addr);
		CHECK(mesh_lease_decode(w, &l, &why) == 0);
		CHECK(l.family == cases[i].family);
		CHECK(inet_pton(cases[i].family, cases[i].addr, addr) == 1);
		CHECK(!memcmp(l.addr, addr, 16));
		CHECK(l.holder[0] == 0x42 && l.holder[31] == 0x42);
		CHECK(l.issued == T0 && l.expires == T0 + 3600 * SEC);
		CHECK(mesh_lease_check(&l, key, T0, 0) == MESH_LEASE_VALID);
		mesh_lease_encode(&l, back);
		CHECK(!memcmp(back, w, sizeof(w)));

		/* mesh_lease_sign makes the same signature (Ed25519 is
		 * deterministic) over the same bytes. */
		memset(l.sig, 0, sizeof(l.sig));
		mesh_lease_sign(&l, seed);
		mesh_lease_encode(&l, back);
		CHECK(!memcmp(back, w, sizeof(w)));
	}
}

static void expect_refused(const uint8_t w[MESH_LEASE_SIZE], const char *want)
{
	struct mesh_lease l;
	const char *why = NULL;

	CHECK(mesh_lease_decode(w, &l, &why) == -EINVAL);
	if (!why || strcmp(why, want)) {
		fprintf(stderr, "refused with \"%s\", want \"%s\"\n", why ? why : "(none)", want);
		exit(1);
	}
}

static void test_refusals(void)
{
	uint8_t w[MESH_LEASE_SIZE];

	write_lease(w, AF_INET6, "2001:db8::7");
	w[L_MAGIC + 1] = 'm';
	expect_refused(w, "not a lease");
	write_lease(w, AF_INET6, "2001:db8::7");
	w[L_VER] = 2;
	expect_refused(w, "unknown lease version");
	write_lease(w, AF_INET6, "2001:db8::7");
	w[L_FAM] = 5;
	expect_refused(w, "unknown address family");
	write_lease(w, AF_INET6, "2001:db8::7");
	w[L_RES + 3] = 1;
	expect_refused(w, "reserved bytes not zero");
	write_lease(w, AF_INET6, "2001:db8::7");
	put64(w + L_EXPIRES, T0);
	expect_refused(w, "expires before it is issued");
	write_lease(w, AF_INET, "10.9.8.7");
	w[L_ADDR + 4] = 1;
	expect_refused(w, "IPv4 address with bytes after it");
	write_lease(w, AF_INET6, "2001:db8::7");
	memset(w + L_HOLDER, 0, 32);
	expect_refused(w, "no holder");
}

static void test_verdicts(void)
{
	uint8_t w[MESH_LEASE_SIZE], other_seed[32], other_key[32];
	struct mesh_lease l;
	const char *why;

	write_lease(w, AF_INET6, "2001:db8::7");
	CHECK(mesh_lease_decode(w, &l, &why) == 0);

	/* The clock: valid from issued minus the skew until expires. */
	CHECK(mesh_lease_check(&l, key, T0 + 3599 * SEC, 0) == MESH_LEASE_VALID);
	CHECK(mesh_lease_check(&l, key, T0 + 3600 * SEC, 0) == MESH_LEASE_EXPIRED);
	CHECK(mesh_lease_check(&l, key, T0 - 1, 0) == MESH_LEASE_EARLY);
	CHECK(mesh_lease_check(&l, key, T0 - 10 * SEC, 10 * SEC) == MESH_LEASE_VALID);
	CHECK(mesh_lease_check(&l, key, T0 - 10 * SEC - 1, 10 * SEC) == MESH_LEASE_EARLY);

	/* Every bit the signature covers, and every bit of the signature. */
	for (size_t bit = 0; bit < MESH_LEASE_SIZE * 8; bit++) {
		uint8_t bad[MESH_LEASE_SIZE];
		struct mesh_lease b;

		memcpy(bad, w, sizeof(bad));
		bad[bit / 8] ^= (uint8_t)(1u << bit % 8);
		if (mesh_lease_decode(bad, &b, &why))
			continue; /* refused before the signature */
		CHECK(mesh_lease_check(&b, key, T0, UINT64_MAX) == MESH_LEASE_FORGED);
	}

	ed25519_generate(other_seed);
	ed25519_public(other_key, other_seed);
	CHECK(mesh_lease_check(&l, other_key, T0, 0) == MESH_LEASE_FORGED);
	CHECK(!strcmp(mesh_lease_verdict_name(MESH_LEASE_FORGED), "not signed by the lease key"));
	CHECK(!strcmp(mesh_lease_verdict_name(MESH_LEASE_EXPIRED), "expired"));
}

static void test_covers_and_newer(void)
{
	uint8_t w[MESH_LEASE_SIZE];
	struct mesh_lease a, b;
	struct ip_prefix p = { .family = AF_INET6, .cidr = 128 };
	const char *why;

	write_lease(w, AF_INET6, "2001:db8::7");
	CHECK(mesh_lease_decode(w, &a, &why) == 0);
	CHECK(inet_pton(AF_INET6, "2001:db8::7", p.addr) == 1);
	CHECK(mesh_lease_covers(&a, &p));
	p.cidr = 64;
	CHECK(!mesh_lease_covers(&a, &p)); /* a prefix is not the address */
	p.cidr = 128;
	p.addr[15] = 8;
	CHECK(!mesh_lease_covers(&a, &p));

	b = a;
	b.issued = a.issued + 1;
	CHECK(mesh_lease_newer(&b, &a) && !mesh_lease_newer(&a, &b));
	/* Issued at the same time: the larger wire form wins, both ways round. */
	b = a;
	b.holder[0] = 0x43;
	mesh_lease_sign(&b, seed);
	CHECK(mesh_lease_newer(&b, &a) && !mesh_lease_newer(&a, &b));
	CHECK(!mesh_lease_newer(&a, &a));

	/* The same lease, field by field: any field apart is another. */
	b = a;
	CHECK(mesh_lease_equal(&a, &b));
#define APART(stmt) do { b = a; stmt; CHECK(!mesh_lease_equal(&a, &b)); } while (0)
	APART(b.family = AF_INET);
	APART(b.issued++);
	APART(b.expires++);
	APART(b.addr[15] ^= 1);
	APART(b.holder[31] ^= 1);
	APART(b.sig[63] ^= 1);
#undef APART
}

static void test_text(void)
{
	uint8_t w[MESH_LEASE_SIZE];
	struct mesh_lease l, back;
	char text[MESH_LEASE_TEXT_LEN], spaced[MESH_LEASE_TEXT_LEN + 8];
	const char *why = NULL;
	uint8_t k[32];
	char kt[64];
	size_t n;

	write_lease(w, AF_INET, "10.9.8.7");
	CHECK(mesh_lease_decode(w, &l, &why) == 0);
	mesh_lease_format(&l, text);
	CHECK(strlen(text) == MESH_LEASE_TEXT_LEN - 1);
	CHECK(mesh_lease_parse(text, strlen(text), &back, &why) == 0);
	CHECK(same(&back, &l));

	snprintf(spaced, sizeof(spaced), " \t%s\n", text);
	CHECK(mesh_lease_parse(spaced, strlen(spaced), &back, &why) == 0);
	CHECK(same(&back, &l));

	/* One character short, one character more, a bad character, a space
	 * inside, stray bits in the last character before the padding. */
	n = strlen(text);
	CHECK(mesh_lease_parse(text, n - 1, &back, &why) == -EINVAL);
	CHECK(!strcmp(why, "not a lease in base64"));
	snprintf(spaced, sizeof(spaced), "%sA", text);
	CHECK(mesh_lease_parse(spaced, strlen(spaced), &back, &why) == -EINVAL);
	memcpy(spaced, text, n + 1);
	spaced[10] = '*';
	CHECK(mesh_lease_parse(spaced, n, &back, &why) == -EINVAL);
	spaced[10] = ' ';
	CHECK(mesh_lease_parse(spaced, n, &back, &why) == -EINVAL);
	spaced[10] = (char)0xff;
	CHECK(mesh_lease_parse(spaced, n, &back, &why) == -EINVAL);
	memcpy(spaced, text, n + 1);
	CHECK(spaced[n - 1] == '=' && spaced[n - 2] == '=');
	spaced[n - 3] = spaced[n - 3] == 'B' ? 'C' : 'B'; /* low 4 bits must be 0 */
	CHECK(mesh_lease_parse(spaced, n, &back, &why) == -EINVAL);

	/* A decodable text that is not a lease says why: the fourth
	 * character holds the version byte's low six bits ('B': 1). */
	mesh_lease_format(&l, text);
	CHECK(text[3] == 'B');
	text[3] = 'A';
	CHECK(mesh_lease_parse(text, strlen(text), &back, &why) == -EINVAL);
	CHECK(!strcmp(why, "unknown lease version"));

	/* Keys: 44 characters of base64, nothing else. */
	CHECK(mesh_lease_parse_key("", 0, k) == -EINVAL);
	sodium_bin2base64(kt, sizeof(kt), key, 32, sodium_base64_VARIANT_ORIGINAL);
	CHECK(strlen(kt) == 44);
	CHECK(mesh_lease_parse_key(kt, 44, k) == 0 && !memcmp(k, key, 32));
	CHECK(mesh_lease_parse_key(kt, 43, k) == -EINVAL);
	/* A byte from 0x80 up is no base64 character (libsodium 1.0.18
	 * reads it as '/'). */
	kt[5] = (char)0xd6;
	CHECK(mesh_lease_parse_key(kt, 44, k) == -EINVAL);
	sodium_bin2base64(kt, sizeof(kt), key, 32, sodium_base64_VARIANT_ORIGINAL);
	kt[44] = '\n';
	CHECK(mesh_lease_parse_key(kt, 45, k) == 0 && !memcmp(k, key, 32));
}

int main(void)
{
	ed25519_generate(seed);
	ed25519_public(key, seed);
	test_round_trip();
	test_refusals();
	test_verdicts();
	test_covers_and_newer();
	test_text();
	printf("mesh lease tests passed\n");
	return 0;
}
