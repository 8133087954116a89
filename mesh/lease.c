/* Registration leases: the wire form, signing and checking, the text form
 * (mesh/lease.h). Every decoder reads exactly the bytes it is given and
 * refuses anything the encoder would not write, so a lease has one form
 * and compares by its bytes. */
#include "mesh/lease.h"

#include <endian.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <sodium.h>

#include "mesh/bytes.h"

static void put_be64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, sizeof(v));
}

static uint64_t get_be64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return be64toh(v);
}

void mesh_lease_encode(const struct mesh_lease *l, uint8_t out[MESH_LEASE_SIZE])
{
	memset(out, 0, MESH_LEASE_SIZE);
	out[0] = 'w';
	out[1] = 'l';
	out[2] = MESH_LEASE_VERSION;
	out[3] = l->family == AF_INET ? 4 : 6;
	put_be64(out + 8, l->issued);
	put_be64(out + 16, l->expires);
	memcpy(out + 24, l->addr, mesh_family_len(l->family));
	memcpy(out + 40, l->holder, sizeof(l->holder));
	memcpy(out + MESH_LEASE_SIGNED, l->sig, sizeof(l->sig));
}

int mesh_lease_decode(const uint8_t in[MESH_LEASE_SIZE], struct mesh_lease *l, const char **why)
{
	memset(l, 0, sizeof(*l));
	if (in[0] != 'w' || in[1] != 'l') {
		*why = "not a lease";
		return -EINVAL;
	}
	if (in[2] != MESH_LEASE_VERSION) {
		*why = "unknown lease version";
		return -EINVAL;
	}
	if (in[3] != 4 && in[3] != 6) {
		*why = "unknown address family";
		return -EINVAL;
	}
	l->family = in[3] == 4 ? AF_INET : AF_INET6;
	if (!mesh_all_zero(in + 4, 4)) {
		*why = "reserved bytes not zero";
		return -EINVAL;
	}
	l->issued = get_be64(in + 8);
	l->expires = get_be64(in + 16);
	if (l->expires <= l->issued) {
		*why = "expires before it is issued";
		return -EINVAL;
	}
	if (!mesh_all_zero(in + 24 + mesh_family_len(l->family), 16 - mesh_family_len(l->family))) {
		*why = "IPv4 address with bytes after it";
		return -EINVAL;
	}
	memcpy(l->addr, in + 24, 16);
	if (mesh_all_zero(in + 40, 32)) {
		*why = "no holder";
		return -EINVAL;
	}
	memcpy(l->holder, in + 40, 32);
	memcpy(l->sig, in + MESH_LEASE_SIGNED, ED25519_SIG_SIZE);
	return 0;
}

void mesh_lease_sign(struct mesh_lease *l, const uint8_t seed[ED25519_SEED_SIZE])
{
	uint8_t wire[MESH_LEASE_SIZE];

	mesh_lease_encode(l, wire);
	ed25519_sign(l->sig, wire, MESH_LEASE_SIGNED, seed);
}

enum mesh_lease_verdict mesh_lease_check(const struct mesh_lease *l,
					 const uint8_t key[MESH_LEASE_KEY_SIZE], uint64_t now_ns,
					 uint64_t skew_ns)
{
	uint8_t wire[MESH_LEASE_SIZE];

	mesh_lease_encode(l, wire);
	if (!ed25519_verify(l->sig, wire, MESH_LEASE_SIGNED, key))
		return MESH_LEASE_FORGED;
	if (l->issued > now_ns && l->issued - now_ns > skew_ns)
		return MESH_LEASE_EARLY;
	if (l->expires <= now_ns)
		return MESH_LEASE_EXPIRED;
	return MESH_LEASE_VALID;
}

const char *mesh_lease_verdict_name(enum mesh_lease_verdict v)
{
	switch (v) {
	case MESH_LEASE_VALID:
		return "valid";
	case MESH_LEASE_FORGED:
		return "not signed by the lease key";
	case MESH_LEASE_EARLY:
		return "issued in the future";
	case MESH_LEASE_EXPIRED:
		return "expired";
	}
	return "unknown";
}

bool mesh_lease_covers(const struct mesh_lease *l, const struct ip_prefix *a)
{
	size_t n = mesh_family_len(l->family);

	return a->family == l->family && a->cidr == n * 8 && !memcmp(a->addr, l->addr, n);
}

bool mesh_lease_equal(const struct mesh_lease *a, const struct mesh_lease *b)
{
	return a->family == b->family && a->issued == b->issued && a->expires == b->expires &&
	       !memcmp(a->addr, b->addr, sizeof(a->addr)) &&
	       !memcmp(a->holder, b->holder, sizeof(a->holder)) &&
	       !memcmp(a->sig, b->sig, sizeof(a->sig));
}

bool mesh_lease_newer(const struct mesh_lease *a, const struct mesh_lease *b)
{
	uint8_t wa[MESH_LEASE_SIZE], wb[MESH_LEASE_SIZE];

	if (a->issued != b->issued)
		return a->issued > b->issued;
	mesh_lease_encode(a, wa);
	mesh_lease_encode(b, wb);
	return memcmp(wa, wb, sizeof(wa)) > 0;
}

void mesh_lease_format(const struct mesh_lease *l, char out[MESH_LEASE_TEXT_LEN])
{
	uint8_t wire[MESH_LEASE_SIZE];

	_Static_assert(MESH_LEASE_TEXT_LEN ==
		       sodium_base64_ENCODED_LEN(MESH_LEASE_SIZE, sodium_base64_VARIANT_ORIGINAL),
		       "MESH_LEASE_TEXT_LEN holds the base64 of a lease");
	mesh_lease_encode(l, wire);
	sodium_bin2base64(out, MESH_LEASE_TEXT_LEN, wire, sizeof(wire),
			  sodium_base64_VARIANT_ORIGINAL);
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_base64(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '+' || c == '/' || c == '=';
}

/* Standard base64 of exactly n bytes in [text, text+len), spaces and line
 * breaks around it allowed. libsodium refuses bad padding and stray bits in
 * the last character, so each value has one text; but Debian 12's 1.0.18
 * reads every byte from 0x80 up as '/' (fuzz_mesh_lease found it), so the
 * alphabet is checked here first. */
static bool parse_base64(const char *text, size_t len, uint8_t *out, size_t n)
{
	size_t got = 0;

	while (len && is_space(*text)) {
		text++;
		len--;
	}
	while (len && is_space(text[len - 1]))
		len--;
	if (len != sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL) - 1)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!is_base64(text[i]))
			return false;
	return !sodium_base642bin(out, n, text, len, NULL, &got, NULL,
				  sodium_base64_VARIANT_ORIGINAL) &&
	       got == n;
}

int mesh_lease_parse(const char *text, size_t len, struct mesh_lease *l, const char **why)
{
	uint8_t wire[MESH_LEASE_SIZE];

	if (!parse_base64(text, len, wire, sizeof(wire))) {
		memset(l, 0, sizeof(*l));
		*why = "not a lease in base64";
		return -EINVAL;
	}
	return mesh_lease_decode(wire, l, why);
}

int mesh_lease_parse_key(const char *text, size_t len, uint8_t key[32])
{
	return parse_base64(text, len, key, 32) ? 0 : -EINVAL;
}
