/* Mesh discovery messages (mesh/msg.h) against packets written here
 * byte by byte, offsets spelled out as numbers (docs/mesh.md, "Wire
 * format"): every type parses to what was written and builds back to the
 * same bytes; every refusal reason comes from its own hand-broken packet;
 * trailing bytes are ignored; every truncation is refused; leases after
 * the entries, each refusal of theirs, and the size limit. */
#include "mesh/msg.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,  \
				__LINE__, #cond);                                \
			exit(1);                                                 \
		}                                                                \
	} while (0)

enum {
	P_IP = 0, P_PLEN = 4, P_NH = 6, P_HOP = 7, P_SRC = 8, P_DST = 24,
	P_MAGIC = 40, P_VER = 42, P_TYPE = 43, P_COUNT = 44, P_HRES = 46,
	P_ENTRY = 48, ENTRY = 64,
	E_FAM = 0, E_CIDR = 1, E_FLAGS = 2, E_RES = 3, E_SEQ = 8, E_ADDR = 16, E_HOLDER = 32,
	PKT_MAX = 1280 + 256,
	LEASE = 136,
};

/* fe80::77:65ff:fe66:7401 */
static const uint8_t LL[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x77, 0x65, 0xff, 0xfe, 0x66, 0x74, 0x01 };

struct pkt {
	uint8_t b[PKT_MAX];
	size_t len;
};

struct want {
	int family;
	uint8_t cidr;
	uint8_t flags;
	uint64_t seq;
	const char *addr;
	uint8_t holder_byte; /* holder = 32 times this byte; 0: none */
};

static void put16(uint8_t *p, unsigned int v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void addr_of(const struct want *w, uint8_t out[16])
{
	memset(out, 0, 16);
	CHECK(inet_pton(w->family, w->addr, out) == 1);
}

/* A message written field by field, as docs/mesh.md lays it out. */
static struct pkt make(unsigned int type, const struct want *w, size_t n)
{
	struct pkt p;

	memset(&p, 0, sizeof(p));
	p.b[P_IP] = 0x60;
	put16(p.b + P_PLEN, (unsigned int)(8 + 64 * n));
	p.b[P_NH] = 253;
	p.b[P_HOP] = 255;
	memcpy(p.b + P_SRC, LL, 16);
	memcpy(p.b + P_DST, LL, 16);
	p.b[P_MAGIC] = 'w';
	p.b[P_MAGIC + 1] = 'm';
	p.b[P_VER] = 1;
	p.b[P_TYPE] = (uint8_t)type;
	put16(p.b + P_COUNT, (unsigned int)n);
	for (size_t i = 0; i < n; i++) {
		uint8_t *e = p.b + P_ENTRY + ENTRY * i;

		e[E_FAM] = w[i].family == AF_INET ? 4 : 6;
		e[E_CIDR] = w[i].cidr;
		e[E_FLAGS] = w[i].flags;
		for (int k = 0; k < 8; k++)
			e[E_SEQ + k] = (uint8_t)(w[i].seq >> (56 - 8 * k));
		addr_of(&w[i], e + E_ADDR);
		memset(e + E_HOLDER, w[i].holder_byte, 32);
	}
	p.len = 48 + 64 * n;
	return p;
}

static void check_items(const struct mesh_msg *m, unsigned int type, const struct want *w,
			size_t n)
{
	uint8_t a[16], h[32];

	CHECK(m->type == (enum mesh_type)type && m->count == n);
	for (size_t i = 0; i < n; i++) {
		const struct mesh_item *it = &m->items[i];

		addr_of(&w[i], a);
		memset(h, w[i].holder_byte, sizeof(h));
		CHECK(it->family == w[i].family && it->cidr == w[i].cidr && it->seq == w[i].seq);
		CHECK(it->has_holder == (w[i].flags & 1));
		CHECK(!memcmp(it->addr, a, 16));
		CHECK(!memcmp(it->holder, h, 32));
	}
}

/* Parses the hand-made packet, checks every field, builds it again and
 * checks the bytes; then the round trip through the builder. */
static void round_trip(unsigned int type, const struct want *w, size_t n)
{
	struct pkt p = make(type, w, n);
	struct mesh_msg m, m2;
	uint8_t out[PKT_MAX];
	size_t len;

	CHECK(mesh_msg_is_mesh(p.b, p.len));
	CHECK(mesh_msg_parse(p.b, p.len, &m) == MESH_OK);
	check_items(&m, type, w, n);
	CHECK(mesh_msg_size(n, 0) == p.len);
	len = mesh_msg_build(&m, out, sizeof(out));
	CHECK(len == p.len && !memcmp(out, p.b, len));
	/* Exactly the room it needs is enough; a byte less is not, and then
	 * nothing is written. */
	memset(out, 0xaa, sizeof(out));
	CHECK(mesh_msg_build(&m, out, p.len - 1) == 0);
	for (size_t i = 0; i < sizeof(out); i++)
		CHECK(out[i] == 0xaa);
	CHECK(mesh_msg_build(&m, out, p.len) == p.len && !memcmp(out, p.b, p.len));
	CHECK(mesh_msg_parse(out, len, &m2) == MESH_OK);
	check_items(&m2, type, w, n);
}

static const struct want v4 = { AF_INET, 24, 0, 0, "10.1.2.0", 0 };
static const struct want v6 = { AF_INET6, 128, 0, 0, "2001:db8::42", 0 };

static void test_round_trips(void)
{
	const uint64_t T = 0x17e5a3b2c4d5e6f7ull;
	struct want solicit[] = { { AF_INET, 32, 0, 0, "10.1.2.3", 0 }, v6,
				  { AF_INET6, 0, 0, 0, "::", 0 }, { AF_INET, 0, 0, 0, "0.0.0.0", 0 } };
	struct want advert[] = { { AF_INET, 32, 1, T, "10.1.2.3", 0x11 },
				 { AF_INET6, 64, 0, 0, "2001:db8:1:2::", 0 },
				 { AF_INET6, 128, 0, 5, "2001:db8::1", 0 } /* negative, any seq */ };
	struct want announce[] = { { AF_INET, 32, 0, T, "192.0.2.7", 0 },
				   { AF_INET6, 127, 0, ~0ull, "2001:db8::2", 0 } };
	struct want not_here[] = { { AF_INET, 32, 0, 0, "10.9.9.9", 0 },
				   { AF_INET6, 128, 1, T, "fd00::9", 0xfe } };
	struct want moved[] = { { AF_INET, 31, 1, 1, "10.0.0.2", 0x01 } };
	struct want full[MESH_MAX_ENTRIES];

	round_trip(MESH_SOLICIT, solicit, 4);
	round_trip(MESH_ADVERT, advert, 3);
	round_trip(MESH_ANNOUNCE, announce, 2);
	round_trip(MESH_NOT_HERE, not_here, 2);
	round_trip(MESH_MOVED, moved, 1);
	for (size_t i = 0; i < MESH_MAX_ENTRIES; i++)
		full[i] = i & 1 ? advert[0] : advert[1];
	round_trip(MESH_ADVERT, full, MESH_MAX_ENTRIES);
}

static void expect(const struct pkt *p, int err)
{
	struct mesh_msg m;
	int got = mesh_msg_parse(p->b, p->len, &m);

	if (got != err) {
		fprintf(stderr, "expected %d, got %d\n", err, got);
		CHECK(got == err);
	}
}

/* One packet per refusal, each a valid message with one thing broken. */
static void test_refusals(void)
{
	struct want ok[] = { { AF_INET, 24, 1, 7, "10.1.2.0", 0x33 }, v6 };
	const struct pkt base = make(MESH_ADVERT, ok, 2);
	uint8_t *e0, *e1;
	struct pkt p;

	expect(&base, MESH_OK);
#define MUT(stmt, err) do { p = base; e0 = p.b + P_ENTRY; e1 = e0 + ENTRY; (void)e0; (void)e1; \
		stmt; expect(&p, err); } while (0)

	/* MESH_ERR_SHORT */
	MUT(p.len = 39, MESH_ERR_SHORT);
	MUT(put16(p.b + P_PLEN, 8 + 128 + 1), MESH_ERR_SHORT);         /* beyond the packet */
	MUT((put16(p.b + P_PLEN, 7), p.len = 47), MESH_ERR_SHORT);     /* no room for mesh_hdr */
	MUT(put16(p.b + P_PLEN, 8 + 64), MESH_ERR_SHORT);              /* count says 2, payload 1 */
	MUT(put16(p.b + P_PLEN, 8 + 127), MESH_ERR_SHORT);
	/* MESH_ERR_IP */
	MUT(p.b[P_IP] = 0x45, MESH_ERR_IP);
	MUT(p.b[P_NH] = 58, MESH_ERR_IP);
	MUT(p.b[P_NH] = 17, MESH_ERR_IP);
	MUT(p.b[P_HOP] = 254, MESH_ERR_IP);
	MUT(p.b[P_HOP] = 64, MESH_ERR_IP);
	MUT(p.b[P_SRC + 15] = 0x02, MESH_ERR_IP);
	MUT(p.b[P_SRC] = 0x20, MESH_ERR_IP);
	MUT(p.b[P_DST + 15] = 0x02, MESH_ERR_IP);
	MUT((p.b[P_DST] = 0xff, p.b[P_DST + 1] = 0x02), MESH_ERR_IP);
	/* MESH_ERR_MAGIC */
	MUT(p.b[P_MAGIC] = 'W', MESH_ERR_MAGIC);
	MUT(p.b[P_MAGIC + 1] = 0, MESH_ERR_MAGIC);
	MUT(p.b[P_VER] = 0, MESH_ERR_MAGIC);
	MUT(p.b[P_VER] = 2, MESH_ERR_MAGIC);
	/* MESH_ERR_TYPE */
	MUT(p.b[P_TYPE] = 0, MESH_ERR_TYPE);
	MUT(p.b[P_TYPE] = 6, MESH_ERR_TYPE);
	MUT(p.b[P_TYPE] = 255, MESH_ERR_TYPE);
	/* MESH_ERR_COUNT */
	MUT(put16(p.b + P_COUNT, 0), MESH_ERR_COUNT);
	MUT(put16(p.b + P_COUNT, 17), MESH_ERR_COUNT);
	MUT(put16(p.b + P_COUNT, 0x0102), MESH_ERR_COUNT);
	MUT(p.b[P_HRES + 1] = 1, MESH_ERR_COUNT);
	MUT(p.b[P_HRES] = 0x80, MESH_ERR_COUNT);
	MUT(put16(p.b + P_COUNT, 1), MESH_ERR_COUNT);                  /* a payload longer than count */
	MUT((put16(p.b + P_PLEN, 8 + 128 + 1), p.len++), MESH_ERR_COUNT);
	/* MESH_ERR_ENTRY: family, cidr, host bits */
	MUT(e0[E_FAM] = 0, MESH_ERR_ENTRY);
	MUT(e0[E_FAM] = 5, MESH_ERR_ENTRY);
	MUT(e0[E_FAM] = AF_INET, MESH_ERR_ENTRY);
	MUT(e1[E_FAM] = AF_INET6, MESH_ERR_ENTRY);
	MUT(e0[E_CIDR] = 33, MESH_ERR_ENTRY);
	MUT(e1[E_CIDR] = 129, MESH_ERR_ENTRY);
	MUT(e1[E_CIDR] = 255, MESH_ERR_ENTRY);
	MUT(e0[E_ADDR + 3] = 1, MESH_ERR_ENTRY);                       /* 10.1.2.1/24 */
	MUT(e0[E_CIDR] = 23, MESH_OK);                                 /* 10.1.2.0/23 */
	MUT(e0[E_CIDR] = 22, MESH_ERR_ENTRY);                          /* 10.1.2.0/22 */
	MUT(e1[E_CIDR] = 64, MESH_ERR_ENTRY);                          /* 2001:db8::42/64 */
	MUT(e1[E_CIDR] = 0, MESH_ERR_ENTRY);
	MUT(e1[E_CIDR] = 127, MESH_OK);                                /* ...42 has bit 127 0, */
	MUT((e1[E_CIDR] = 127, e1[E_ADDR + 15] = 0x43), MESH_ERR_ENTRY); /* ...43 has it 1 */
	MUT(e0[E_ADDR + 4] = 1, MESH_ERR_ENTRY);                       /* past an IPv4 address */
	MUT(e0[E_ADDR + 15] = 1, MESH_ERR_ENTRY);
	/* flags, reserved bytes, holder */
	MUT(e0[E_FLAGS] = 5, MESH_ERR_ENTRY);
	MUT(e1[E_FLAGS] = 0x80, MESH_ERR_ENTRY);
	for (int k = 0; k < 5; k++)
		MUT(e0[E_RES + k] = 1, MESH_ERR_ENTRY);
	MUT(e1[E_HOLDER + 31] = 1, MESH_ERR_ENTRY);                    /* a holder without its flag */
	MUT(memset(e0 + E_HOLDER, 0, 32), MESH_ERR_ENTRY);             /* the flag with a zero holder */
	/* per-type rules */
	struct want sol[] = { { AF_INET, 32, 0, 0, "10.0.0.1", 0 } };
	struct want ann[] = { { AF_INET, 32, 0, 9, "10.0.0.1", 0 } };
	struct want mov[] = { { AF_INET, 32, 1, 9, "10.0.0.1", 0x44 } };
	struct want nh[] = { { AF_INET, 32, 0, 9, "10.0.0.1", 0 } };

	p = make(MESH_SOLICIT, sol, 1);
	expect(&p, MESH_OK);
	p.b[P_ENTRY + E_SEQ + 7] = 1;
	expect(&p, MESH_ERR_ENTRY);                                    /* SOLICIT with a seq */
	p.b[P_ENTRY + E_SEQ + 7] = 0;
	p.b[P_ENTRY + E_FLAGS] = 1;
	memset(p.b + P_ENTRY + E_HOLDER, 0x44, 32);
	expect(&p, MESH_ERR_ENTRY);                                    /* SOLICIT with a holder */
	p.b[P_TYPE] = MESH_NOT_HERE;
	expect(&p, MESH_OK);                                           /* NOT_HERE: holder optional */
	p.b[P_TYPE] = MESH_ADVERT;
	expect(&p, MESH_OK);                                           /* seq 0 advert */

	p = make(MESH_ANNOUNCE, ann, 1);
	expect(&p, MESH_OK);
	p.b[P_ENTRY + E_SEQ + 7] = 0;
	expect(&p, MESH_ERR_ENTRY);                                    /* ANNOUNCE with seq 0 */
	p = make(MESH_ANNOUNCE, mov, 1);
	expect(&p, MESH_ERR_ENTRY);                                    /* ANNOUNCE with a holder */

	p = make(MESH_MOVED, mov, 1);
	expect(&p, MESH_OK);
	p.b[P_ENTRY + E_SEQ + 7] = 0;
	expect(&p, MESH_ERR_ENTRY);                                    /* MOVED with seq 0 */
	p = make(MESH_MOVED, nh, 1);
	expect(&p, MESH_ERR_ENTRY);                                    /* MOVED without holder */
	p.b[P_TYPE] = MESH_NOT_HERE;
	expect(&p, MESH_OK);
#undef MUT
}

/* Bytes past the payload length are not the message's: ignored. Any
 * traffic class and flow label are taken (and built as 0). */
static void test_trailing(void)
{
	struct want w[] = { { AF_INET6, 48, 1, 3, "2001:db8:5::", 0x77 } };
	struct pkt p = make(MESH_NOT_HERE, w, 1);
	struct mesh_msg m;
	uint8_t out[PKT_MAX];

	for (size_t extra = 1; extra <= 64; extra++) {
		p.b[p.len] = (uint8_t)(0xc3 * extra);
		CHECK(mesh_msg_parse(p.b, p.len + extra, &m) == MESH_OK);
		check_items(&m, MESH_NOT_HERE, w, 1);
	}
	p.b[P_IP] = 0x6f;
	p.b[P_IP + 1] = 0xff;
	p.b[P_IP + 3] = 0x01;
	CHECK(mesh_msg_parse(p.b, p.len, &m) == MESH_OK);
	CHECK(mesh_msg_build(&m, out, sizeof(out)) == p.len);
	CHECK(out[0] == 0x60 && out[1] == 0 && out[2] == 0 && out[3] == 0);
	CHECK(!memcmp(out + 4, p.b + 4, p.len - 4));
}

static void test_truncation(void)
{
	struct want w[MESH_MAX_ENTRIES];
	struct mesh_msg m;

	for (size_t i = 0; i < MESH_MAX_ENTRIES; i++)
		w[i] = i % 3 ? v4 : v6;
	for (size_t n = 1; n <= MESH_MAX_ENTRIES; n += MESH_MAX_ENTRIES - 1) {
		struct pkt p = make(MESH_SOLICIT, w, n);
		/* An exact-size heap copy for every length, so that ASan sees
		 * a read past the end. */
		for (size_t len = 0; len < p.len; len++) {
			uint8_t *copy = malloc(len ? len : 1);

			CHECK(copy);
			memcpy(copy, p.b, len);
			CHECK(mesh_msg_parse(copy, len, &m) == MESH_ERR_SHORT);
			CHECK(mesh_msg_is_mesh(copy, len) == (len >= 40));
			free(copy);
		}
		CHECK(mesh_msg_parse(p.b, p.len, &m) == MESH_OK);
	}
}

/* The builder refuses what the parser would, and reads no byte that has
 * no place on the wire. */
static void test_build(void)
{
	struct mesh_msg m, good;
	uint8_t a[PKT_MAX], b[PKT_MAX];
	size_t len;

	memset(&good, 0, sizeof(good));
	good.type = MESH_ADVERT;
	good.count = 2;
	good.items[0] = (struct mesh_item){ .family = AF_INET, .cidr = 32, .has_holder = true,
					    .seq = 99, .addr = { 10, 0, 0, 1 } };
	memset(good.items[0].holder, 0x5a, 32);
	good.items[1] = (struct mesh_item){ .family = AF_INET6, .cidr = 8, .addr = { 0xfd } };
	len = mesh_msg_build(&good, a, sizeof(a));
	CHECK(len == mesh_msg_size(2, 0));

	m = good;
	memset(m.items[0].addr + 4, 0xee, 12);
	memset(m.items[1].holder, 0xee, 32);
	CHECK(mesh_msg_build(&m, b, sizeof(b)) == len && !memcmp(a, b, len));

#define BAD(stmt) do { m = good; stmt; CHECK(mesh_msg_build(&m, b, sizeof(b)) == 0); } while (0)
	BAD(m.type = 0);
	BAD(m.type = 6);
	BAD(m.count = 0);
	BAD(m.count = MESH_MAX_ENTRIES + 1);
	BAD(m.items[1].family = 0);
	BAD(m.items[1].family = 6);
	BAD(m.items[0].cidr = 33);
	BAD(m.items[1].cidr = 129);
	BAD(m.items[0].cidr = 24);                                     /* 10.0.0.1/24 */
	BAD(m.items[1].addr[1] = 1);                                   /* fd01::/8 */
	BAD(memset(m.items[0].holder, 0, 32));
	BAD(m.type = MESH_SOLICIT);                                    /* a seq and a holder */
	BAD((m.type = MESH_SOLICIT, m.items[0].seq = 0));              /* still a holder */
	BAD((m.type = MESH_SOLICIT, m.items[0].has_holder = false));   /* still a seq */
	BAD(m.type = MESH_ANNOUNCE);                                   /* a holder; item 1 seq 0 */
	BAD((m.type = MESH_ANNOUNCE, m.items[0].has_holder = false));  /* item 1 seq 0 */
	BAD(m.type = MESH_MOVED);                                      /* item 1 has no holder */
#undef BAD
	m = good;
	m.type = MESH_ANNOUNCE;
	m.items[0].has_holder = false;
	m.items[1].seq = 1;
	CHECK(mesh_msg_build(&m, b, sizeof(b)) == len);
	m.type = MESH_NOT_HERE;
	CHECK(mesh_msg_build(&m, b, sizeof(b)) == len);
}

/* A lease written byte by byte (docs/mesh.md, "Leases"): for addr, held by
 * 32 times holder_byte, issued at 1000 and expiring at 2000 (s), signature
 * 64 times sig_byte (the parser checks none). */
static void put_lease(uint8_t *l, int family, const char *addr, uint8_t holder_byte,
		      uint8_t sig_byte)
{
	uint64_t issued = 1000000000000ull, expires = 2000000000000ull;

	memset(l, 0, LEASE);
	l[0] = 'w';
	l[1] = 'l';
	l[2] = 1;
	l[3] = family == AF_INET ? 4 : 6;
	for (int k = 0; k < 8; k++) {
		l[8 + k] = (uint8_t)(issued >> (56 - 8 * k));
		l[16 + k] = (uint8_t)(expires >> (56 - 8 * k));
	}
	CHECK(inet_pton(family, addr, l + 24) == 1);
	memset(l + 40, holder_byte, 32);
	memset(l + 72, sig_byte, 64);
}

/* w[i] flagged 2 gets a lease after the entries, in their order. */
static struct pkt make_leased(unsigned int type, const struct want *w, size_t n)
{
	struct pkt p = make(type, w, n);

	for (size_t i = 0; i < n; i++) {
		if (!(w[i].flags & 2))
			continue;
		put_lease(p.b + p.len, w[i].family, w[i].addr,
			  w[i].holder_byte ? w[i].holder_byte : 0x99, (uint8_t)(0x10 + i));
		p.len += LEASE;
	}
	put16(p.b + P_PLEN, (unsigned int)(p.len - 40));
	return p;
}

static void test_leases(void)
{
	struct want ann[] = { { AF_INET, 32, 2, 7, "10.0.0.1", 0 },
			      { AF_INET6, 128, 0, 8, "fd00::1", 0 },
			      { AF_INET6, 128, 2, 9, "fd00::2", 0 } };
	struct want adv[] = { { AF_INET6, 128, 3, 5, "fd00::5", 0x21 } };
	struct want many[7];
	struct mesh_msg m, m2;
	uint8_t out[PKT_MAX], l[LEASE];
	struct pkt p;
	size_t len;

	p = make_leased(MESH_ANNOUNCE, ann, 3);
	CHECK(p.len == 48 + 3 * 64 + 2 * LEASE);
	CHECK(mesh_msg_parse(p.b, p.len, &m) == MESH_OK);
	CHECK(m.items[0].has_lease && !m.items[1].has_lease && m.items[2].has_lease);
	mesh_lease_encode(&m.items[0].lease, l);
	CHECK(!memcmp(l, p.b + 48 + 3 * 64, LEASE));
	mesh_lease_encode(&m.items[2].lease, l);
	CHECK(!memcmp(l, p.b + 48 + 3 * 64 + LEASE, LEASE) && l[72] == 0x12);
	CHECK(mesh_msg_size(3, 2) == p.len);
	len = mesh_msg_build(&m, out, sizeof(out));
	CHECK(len == p.len && !memcmp(out, p.b, len));
	CHECK(mesh_msg_build(&m, out, len - 1) == 0);
	for (unsigned int t = MESH_ADVERT; t <= MESH_MOVED; t++) {
		if (t == MESH_ANNOUNCE)
			continue;
		p = make_leased(t, adv, 1);
		CHECK(mesh_msg_parse(p.b, p.len, &m) == MESH_OK && m.items[0].has_lease);
		CHECK(mesh_msg_build(&m, out, sizeof(out)) == p.len && !memcmp(out, p.b, p.len));
	}

	/* Only a claim of a holder carries one. */
	adv[0].flags = 2;
	adv[0].holder_byte = 0;
	p = make_leased(MESH_ADVERT, adv, 1);
	expect(&p, MESH_ERR_ENTRY);
	p.b[P_TYPE] = MESH_NOT_HERE;
	expect(&p, MESH_ERR_ENTRY);
	p.b[P_TYPE] = MESH_ANNOUNCE;
	expect(&p, MESH_OK);
	ann[0].seq = 0;
	p = make_leased(MESH_SOLICIT, ann, 1);
	expect(&p, MESH_ERR_ENTRY);
	ann[0].seq = 7;

	/* The leases' room: missing, short, too much, each field broken. */
	p = make_leased(MESH_ANNOUNCE, ann, 3);
	struct pkt base = p;
#define MUT(stmt, err) do { p = base; stmt; expect(&p, err); } while (0)
	MUT(put16(p.b + P_PLEN, (unsigned int)(p.len - 40 - LEASE)), MESH_ERR_SHORT);
	MUT(put16(p.b + P_PLEN, (unsigned int)(p.len - 41)), MESH_ERR_SHORT);
	MUT(p.len--, MESH_ERR_SHORT);
	MUT((put16(p.b + P_PLEN, (unsigned int)(p.len - 39)), p.len++), MESH_ERR_COUNT);
	MUT(p.b[P_ENTRY + 2] = 0, MESH_ERR_COUNT);      /* a lease no entry claims */
	MUT(p.b[P_ENTRY + 64 + 2] = 2, MESH_ERR_SHORT); /* an entry whose lease is missing */
	uint8_t *l0 = base.b + 48 + 3 * 64, *l1 = l0 + LEASE;
	size_t o0 = (size_t)(l0 - base.b), o1 = (size_t)(l1 - base.b);
	MUT(p.b[o0] = 'W', MESH_ERR_LEASE);
	MUT(p.b[o1 + 1] = 'm', MESH_ERR_LEASE);
	MUT(p.b[o0 + 2] = 2, MESH_ERR_LEASE);
	MUT(p.b[o0 + 3] = 5, MESH_ERR_LEASE);
	MUT(p.b[o1 + 3] = 4, MESH_ERR_LEASE);              /* IPv4 with bytes after it */
	MUT(p.b[o0 + 3] = 6, MESH_OK);                     /* ::a00:1, another address: the
							    * mesh thread's refusal */
	MUT(p.b[o0 + 5] = 1, MESH_ERR_LEASE);
	MUT(p.b[o0 + 24 + 4] = 1, MESH_ERR_LEASE);
	MUT(memcpy(p.b + o0 + 16, p.b + o0 + 8, 8), MESH_ERR_LEASE); /* expires == issued */
	MUT(memset(p.b + o1 + 40, 0, 32), MESH_ERR_LEASE);
	MUT(memset(p.b + o1 + 72, 0, 64), MESH_OK);        /* the signature is not the parser's */
#undef MUT

	/* MESH_MAX_PACKET: six leased entries fit, a seventh does not. */
	for (size_t i = 0; i < 7; i++)
		many[i] = ann[0];
	p = make_leased(MESH_ANNOUNCE, many, 6);
	CHECK(p.len == 1248);
	CHECK(mesh_msg_parse(p.b, p.len, &m) == MESH_OK);
	CHECK(mesh_msg_build(&m, out, sizeof(out)) == p.len);
	p = make_leased(MESH_ANNOUNCE, many, 7);
	expect(&p, MESH_ERR_COUNT);
	m.count = 7;
	m.items[6] = m.items[0];
	CHECK(mesh_msg_build(&m, out, sizeof(out)) == 0);

	/* The builder writes no lease the parser would refuse, and reads no
	 * lease of an unflagged item. */
	p = make_leased(MESH_ANNOUNCE, ann, 3);
	CHECK(mesh_msg_parse(p.b, p.len, &m) == MESH_OK);
	m2 = m;
	memset(&m2.items[1].lease, 0xee, sizeof(m2.items[1].lease));
	CHECK(mesh_msg_build(&m2, out, sizeof(out)) == p.len && !memcmp(out, p.b, p.len));
	m2 = m;
	m2.items[2].lease.expires = m2.items[2].lease.issued;
	CHECK(mesh_msg_build(&m2, out, sizeof(out)) == 0);
	m2 = m;
	memset(m2.items[0].lease.holder, 0, 32);
	CHECK(mesh_msg_build(&m2, out, sizeof(out)) == 0);
}

static void test_names(void)
{
	CHECK(!strcmp(mesh_type_name(MESH_SOLICIT), "solicit"));
	CHECK(!strcmp(mesh_type_name(MESH_ADVERT), "advert"));
	CHECK(!strcmp(mesh_type_name(MESH_ANNOUNCE), "announce"));
	CHECK(!strcmp(mesh_type_name(MESH_NOT_HERE), "not_here"));
	CHECK(!strcmp(mesh_type_name(MESH_MOVED), "moved"));
	CHECK(!strcmp(mesh_type_name(0), "unknown"));
	CHECK(!strcmp(mesh_type_name(6), "unknown"));
	CHECK(!strcmp(mesh_type_name((enum mesh_type)-1), "unknown"));
}

/* A forwarded packet's wrapping: round trip, and each refusal. */
static void test_fwd(void)
{
	static const uint8_t ll[16] = MESH_LL_ADDR;
	uint8_t pkt[MESH_FWD_HLEN + 28] = { 0 }, bad[sizeof(pkt)];
	uint8_t *ip = pkt + MESH_FWD_HLEN;

	ip[0] = 0x45; /* a 28-byte IPv4 packet */
	ip[3] = 28;
	CHECK(mesh_fwd_wrap(pkt, ip, 28));
	CHECK(pkt[0] == 0x60 && pkt[4] == 0 && pkt[5] == 28 && pkt[6] == 4 && pkt[7] == 255);
	CHECK(!memcmp(pkt + 8, ll, 16) && !memcmp(pkt + 24, ll, 16));
	CHECK(mesh_fwd_unwrap(pkt, sizeof(pkt)) == 28);
	CHECK(mesh_fwd_unwrap(pkt, sizeof(pkt) - 1) == 0);     /* shorter than its length */
	memcpy(bad, pkt, sizeof(pkt));
	bad[6] = 41;                                          /* IPv6 header, IPv4 inside */
	CHECK(mesh_fwd_unwrap(bad, sizeof(bad)) == 0);
	memcpy(bad, pkt, sizeof(pkt));
	bad[7] = 64;                                          /* hop limit */
	CHECK(mesh_fwd_unwrap(bad, sizeof(bad)) == 0);
	memcpy(bad, pkt, sizeof(pkt));
	bad[23] ^= 1;                                         /* source */
	CHECK(mesh_fwd_unwrap(bad, sizeof(bad)) == 0);
	memcpy(bad, pkt, sizeof(pkt));
	bad[39] ^= 1;                                         /* destination */
	CHECK(mesh_fwd_unwrap(bad, sizeof(bad)) == 0);
	memcpy(bad, pkt, sizeof(pkt));
	bad[5] = 0;                                           /* empty */
	CHECK(mesh_fwd_unwrap(bad, sizeof(bad)) == 0);
	CHECK(!mesh_fwd_wrap(bad, (const uint8_t *)"\x10", 1)); /* no IP packet */
	ip[0] = 0x60;
	CHECK(mesh_fwd_wrap(pkt, ip, 28) && pkt[6] == 41);
	CHECK(mesh_fwd_unwrap(pkt, sizeof(pkt)) == 28);
}

int main(void)
{
	test_fwd();
	test_round_trips();
	test_refusals();
	test_trailing();
	test_truncation();
	test_build();
	test_leases();
	test_names();
	printf("test_mesh_msg: ok\n");
	return 0;
}
