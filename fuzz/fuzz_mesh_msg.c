/* libFuzzer target for mesh_msg_parse, which the data path runs on every
 * mesh discovery message a WireGuard session opens. Beyond "no crash, no
 * out-of-bounds read" (the input is an exact-size heap copy):
 *   - the verdict, refusal reason included, is the one of a naive model
 *     written here from docs/mesh.md (offsets as numbers, the checks in the
 *     documented order), leases after the entries included;
 *   - mesh_msg_is_mesh agrees with it;
 *   - an accepted message builds again with mesh_msg_build into an
 *     exact-size buffer (one byte less is refused), to the input's own
 *     bytes (only traffic class and flow label become 0), and the rebuild
 *     parses to the same struct, field by field.
 * Input: the IPv6 packet as is. */
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "mesh/msg.h"

#define CHECK(cond)                                                                    \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "fuzz_mesh_msg: check failed at %s:%d: %s\n",  \
				__FILE__, __LINE__, #cond);                            \
			abort();                                                       \
		}                                                                      \
	} while (0)

static const uint8_t ll[16] = MESH_LL_ADDR;

static unsigned int get16(const uint8_t *p)
{
	return (unsigned int)p[0] << 8 | p[1];
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static bool zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* One 64-byte entry of a message of type t, per docs/mesh.md. */
static bool model_entry(unsigned int t, const uint8_t *e)
{
	unsigned int alen = e[0] == 4 ? 4 : 16, bits = alen * 8;
	bool holder = e[2] & 1, lease = e[2] & 2;
	bool seq0 = zero(e + 8, 8);

	if ((e[0] != 4 && e[0] != 6) || e[1] > bits || (e[2] & ~3) || !zero(e + 3, 5))
		return false;
	for (unsigned int b = e[1]; b < 128; b++) /* host bits and the IPv4 tail */
		if (e[16 + b / 8] & (0x80 >> (b % 8)))
			return false;
	if (holder ? zero(e + 32, 32) : !zero(e + 32, 32))
		return false;
	if (lease && t != 3 && !holder) /* only on a claim of a holder */
		return false;
	switch (t) {
	case 1: return seq0 && !holder;
	case 3: return !seq0 && !holder;
	case 5: return !seq0 && holder;
	default: return true;
	}
}

/* One 136-byte lease (docs/mesh.md, "Leases"): magic, version, family,
 * reserved, the times, the IPv4 tail, the holder. */
static bool model_lease(const uint8_t *l)
{
	if (l[0] != 'w' || l[1] != 'l' || l[2] != 1 || (l[3] != 4 && l[3] != 6) || !zero(l + 4, 4))
		return false;
	if (get64(l + 16) <= get64(l + 8))
		return false;
	if (l[3] == 4 && !zero(l + 28, 12))
		return false;
	return !zero(l + 40, 32);
}

static int model(const uint8_t *p, size_t len)
{
	size_t payload, count, leases = 0, need;

	if (len < 40)
		return MESH_ERR_SHORT;
	if (p[0] >> 4 != 6 || p[6] != 253 || p[7] != 255 || memcmp(p + 8, ll, 16) ||
	    memcmp(p + 24, ll, 16))
		return MESH_ERR_IP;
	payload = get16(p + 4);
	if (40 + payload > len || payload < 8)
		return MESH_ERR_SHORT;
	if (p[40] != 'w' || p[41] != 'm' || p[42] != 1)
		return MESH_ERR_MAGIC;
	if (p[43] < 1 || p[43] > 5)
		return MESH_ERR_TYPE;
	count = get16(p + 44);
	if (count < 1 || count > 16 || get16(p + 46))
		return MESH_ERR_COUNT;
	if (payload < 8 + 64 * count)
		return MESH_ERR_SHORT;
	for (size_t i = 0; i < count; i++) {
		if (!model_entry(p[43], p + 48 + 64 * i))
			return MESH_ERR_ENTRY;
		leases += (p[48 + 64 * i + 2] & 2) != 0;
	}
	need = 8 + 64 * count + 136 * leases;
	if (payload < need)
		return MESH_ERR_SHORT;
	if (payload > need || 40 + need > 1280)
		return MESH_ERR_COUNT;
	for (size_t i = 0; i < leases; i++)
		if (!model_lease(p + 48 + 64 * count + 136 * i))
			return MESH_ERR_LEASE;
	return MESH_OK;
}

static void same_msg(const struct mesh_msg *a, const struct mesh_msg *b)
{
	CHECK(a->type == b->type && a->count == b->count);
	for (size_t i = 0; i < a->count; i++) {
		const struct mesh_item *x = &a->items[i], *y = &b->items[i];

		CHECK(x->family == y->family && x->cidr == y->cidr);
		CHECK(x->has_holder == y->has_holder && x->seq == y->seq);
		CHECK(!memcmp(x->addr, y->addr, 16) && !memcmp(x->holder, y->holder, 32));
		CHECK(x->has_lease == y->has_lease);
		if (x->has_lease) { /* by the bytes: the struct has padding */
			uint8_t lx[MESH_LEASE_SIZE], ly[MESH_LEASE_SIZE];

			mesh_lease_encode(&x->lease, lx);
			mesh_lease_encode(&y->lease, ly);
			CHECK(!memcmp(lx, ly, sizeof(lx)));
		}
	}
}

/* A forwarded packet's wrapping (mesh_fwd_unwrap, the receive path): what
 * it accepts is exactly what a naive reading of docs/mesh.md accepts, and
 * wrapping the inner packet again gives the same header back (but for the
 * traffic class and flow label, which are ignored). */
static void check_fwd(const uint8_t *in, size_t size)
{
	static const uint8_t ll[16] = MESH_LL_ADDR;
	size_t inner = mesh_fwd_unwrap(in, size);
	size_t plen = size >= 6 ? (size_t)get16(in + 4) : 0;
	bool want = size > MESH_FWD_HLEN && in[0] >> 4 == 6 && in[7] == 255 &&
		    !memcmp(in + 8, ll, 16) && !memcmp(in + 24, ll, 16) && plen &&
		    plen <= size - MESH_FWD_HLEN &&
		    ((in[6] == 4 && in[40] >> 4 == 4) || (in[6] == 41 && in[40] >> 4 == 6));
	uint8_t hdr[MESH_FWD_HLEN];

	CHECK((inner != 0) == want);
	if (!inner)
		return;
	CHECK(inner == plen);
	CHECK(mesh_fwd_wrap(hdr, in + MESH_FWD_HLEN, inner));
	CHECK(hdr[0] == 0x60 && !memcmp(hdr + 4, in + 4, MESH_FWD_HLEN - 4));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mesh_msg m, m2;
	uint8_t *in, *out;
	size_t need, len, leases = 0;
	int err, want;

	in = malloc(size ? size : 1);
	CHECK(in);
	memcpy(in, data, size);
	memset(&m, 0, sizeof(m));
	err = mesh_msg_parse(in, size, &m);
	want = model(in, size);
	if (err != want)
		fprintf(stderr, "fuzz_mesh_msg: parse %d, model %d\n", err, want);
	CHECK(err == want);
	CHECK(mesh_msg_is_mesh(in, size) == (size >= 40 && in[0] >> 4 == 6 && in[6] == 253));
	if (!mesh_msg_is_mesh(in, size))
		CHECK(err == MESH_ERR_SHORT || err == MESH_ERR_IP);
	if (err != MESH_OK)
		goto out;

	CHECK(m.count >= 1 && m.count <= MESH_MAX_ENTRIES);
	for (size_t i = 0; i < m.count; i++)
		leases += m.items[i].has_lease;
	need = mesh_msg_size(m.count, leases);
	CHECK(need <= size && need == 40 + get16(in + 4));
	out = malloc(need);
	CHECK(out);
	CHECK(mesh_msg_build(&m, out, need - 1) == 0);
	len = mesh_msg_build(&m, out, need);
	CHECK(len == need);
	CHECK(out[0] == 0x60 && out[1] == 0 && out[2] == 0 && out[3] == 0);
	CHECK(!memcmp(out + 4, in + 4, need - 4));
	memset(&m2, 0xff, sizeof(m2));
	CHECK(mesh_msg_parse(out, len, &m2) == MESH_OK);
	same_msg(&m, &m2);
	free(out);
out:
	check_fwd(in, size);
	free(in);
	return 0;
}
