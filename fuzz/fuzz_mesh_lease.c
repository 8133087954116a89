/* libFuzzer target for the registration lease's parsers (mesh/lease.c):
 * the wire form mesh messages carry from any member, and the text forms
 * `weft lease show` and `weft lease add` (weft=lease-add) take. Beyond "no
 * crash, no out-of-bounds read" (the input is an exact-size heap copy):
 *   - the wire verdict, refusal reason included, is the one of a naive
 *     model written here from mesh/lease.h (offsets as numbers, the checks
 *     in the order mesh_lease_decode documents);
 *   - an accepted lease encodes back to its own bytes, formats to a text
 *     that parses to the same lease, and is VALID under the fixture key
 *     (at its issue time) exactly when libsodium verifies its signature
 *     over its first 72 bytes: the signed bytes are the received ones;
 *   - an accepted text is canonical: it formats back to itself, spaces
 *     around it aside; so is an accepted key.
 * Input: a mode byte (0 wire, 1 lease text, 2 key text), then the body. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <sodium.h>

#include "mesh/lease.h"

#define CHECK(cond)                                                                      \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "fuzz_mesh_lease: check failed at %s:%d: %s\n",  \
				__FILE__, __LINE__, #cond);                              \
			abort();                                                         \
		}                                                                        \
	} while (0)

/* The fixture key: the seed is 32 bytes of 0x5a (fuzz/gen_corpus.c signs
 * its seeds with it). */
static uint8_t fixture_key[ED25519_PUBLIC_SIZE];

static bool zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* The refusal reason mesh_lease_decode must give, or NULL. */
static const char *model(const uint8_t *w)
{
	size_t alen = w[3] == 4 ? 4 : 16;

	if (w[0] != 'w' || w[1] != 'l')
		return "not a lease";
	if (w[2] != 1)
		return "unknown lease version";
	if (w[3] != 4 && w[3] != 6)
		return "unknown address family";
	if (!zero(w + 4, 4))
		return "reserved bytes not zero";
	if (get64(w + 16) <= get64(w + 8))
		return "expires before it is issued";
	if (!zero(w + 24 + alen, 16 - alen))
		return "IPv4 address with bytes after it";
	if (zero(w + 40, 32))
		return "no holder";
	return NULL;
}

static void accepted(const struct mesh_lease *l, const uint8_t w[MESH_LEASE_SIZE])
{
	uint8_t back[MESH_LEASE_SIZE];
	char text[MESH_LEASE_TEXT_LEN];
	struct mesh_lease again;
	const char *why = NULL;
	bool signed_ok = ed25519_verify(w + 72, w, 72, fixture_key);

	mesh_lease_encode(l, back);
	CHECK(!memcmp(back, w, MESH_LEASE_SIZE));
	mesh_lease_format(l, text);
	CHECK(strlen(text) == MESH_LEASE_TEXT_LEN - 1);
	CHECK(mesh_lease_parse(text, strlen(text), &again, &why) == 0);
	mesh_lease_encode(&again, back); /* by the bytes: the struct has padding */
	CHECK(!memcmp(back, w, MESH_LEASE_SIZE) && mesh_lease_equal(&again, l));
	CHECK((mesh_lease_check(l, fixture_key, l->issued, 0) == MESH_LEASE_VALID) == signed_ok);
	CHECK(mesh_lease_check(l, fixture_key, l->expires, 0) ==
	      (signed_ok ? MESH_LEASE_EXPIRED : MESH_LEASE_FORGED));
	CHECK(!mesh_lease_newer(l, &again) && !mesh_lease_newer(&again, l));
}

static void fuzz_wire(const uint8_t *body, size_t len)
{
	struct mesh_lease l;
	const char *why = NULL, *want;
	int r;

	if (len < MESH_LEASE_SIZE)
		return;
	want = model(body);
	r = mesh_lease_decode(body, &l, &why);
	if (want) {
		CHECK(r == -EINVAL && why && !strcmp(why, want));
		return;
	}
	CHECK(r == 0);
	accepted(&l, body);
}

static size_t trim(const char **text, size_t len)
{
	while (len && strchr(" \t\n\r", **text) && **text) {
		(*text)++;
		len--;
	}
	while (len && strchr(" \t\n\r", (*text)[len - 1]) && (*text)[len - 1])
		len--;
	return len;
}

static void fuzz_text(const char *text, size_t len)
{
	struct mesh_lease l;
	const char *why = NULL;
	char back[MESH_LEASE_TEXT_LEN];
	uint8_t w[MESH_LEASE_SIZE];

	if (mesh_lease_parse(text, len, &l, &why)) {
		CHECK(why);
		return;
	}
	mesh_lease_format(&l, back);
	len = trim(&text, len);
	CHECK(len == strlen(back) && !memcmp(text, back, len));
	mesh_lease_encode(&l, w);
	accepted(&l, w);
}

static void fuzz_key(const char *text, size_t len)
{
	uint8_t key[32];
	char back[64];

	if (mesh_lease_parse_key(text, len, key))
		return;
	sodium_bin2base64(back, sizeof(back), key, sizeof(key), sodium_base64_VARIANT_ORIGINAL);
	len = trim(&text, len);
	CHECK(len == strlen(back) && !memcmp(text, back, len));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;

	if (!ready) {
		uint8_t seed[ED25519_SEED_SIZE];

		memset(seed, 0x5a, sizeof(seed));
		ed25519_public(fixture_key, seed);
		ready = true;
	}
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		fuzz_wire(data + 1, size - 1);
		break;
	case 1:
		fuzz_text((const char *)data + 1, size - 1);
		break;
	default:
		fuzz_key((const char *)data + 1, size - 1);
		break;
	}
	return 0;
}
