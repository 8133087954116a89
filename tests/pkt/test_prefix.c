/* The IP prefix (pkt/prefix.c): one table of texts read with the flags of
 * each of its callers (the UAPI's allowed_ip, a port's address and RA
 * prefix, a mesh CIDR), so what each text form accepts, refuses, masks and
 * says stays pinned side by side; the printed form against known answers;
 * and equality, containment and the per-packet address match against a
 * naive bit-by-bit model over random prefixes. */
#include "pkt/prefix.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static int failures;

#define CHECK(cond)                                                                      \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, \
				#cond);                                                  \
			failures++;                                                      \
		}                                                                        \
	} while (0)

/* The flags each caller passes. */
enum { UAPI, PORT, RA, MESH, N_FORMS };
static const unsigned int form_flags[N_FORMS] = {
	[UAPI] = IP_PREFIX_MASK | IP_PREFIX_LEN_ZEROS,                                 /* wg/uapi.c */
	[PORT] = IP_PREFIX_LEN_OPTIONAL,                                               /* port/text.c */
	[RA] = 0,                                                                      /* port/text.c */
	[MESH] = IP_PREFIX_LEN_OPTIONAL | IP_PREFIX_NO_ZERO_LEN | IP_PREFIX_NO_HOST_BITS, /* mesh/text.c */
};
static const char *const form_names[N_FORMS] = { "uapi", "port", "ra", "mesh" };

/* Reasons, as the mesh and port forms show them. */
#define BAD "!bad address"
#define HOST "!host bits set (the address is not the start of its prefix)"
#define ZERO "!prefix length 0"

static const struct {
	const char *in;
	const char *out[N_FORMS]; /* printed as parsed, or "!" and the reason's start */
} cases[] = {
	/* IPv4 and IPv6 prefixes, hosts and host bits */
	{ "10.0.0.0/8", { "10.0.0.0/8", "10.0.0.0/8", "10.0.0.0/8", "10.0.0.0/8" } },
	{ "10.1.2.3/24", { "10.1.2.0/24", "10.1.2.3/24", "10.1.2.3/24", HOST } },
	{ "10.1.2.3/32", { "10.1.2.3/32", "10.1.2.3/32", "10.1.2.3/32", "10.1.2.3/32" } },
	{ "10.1.2.255/31", { "10.1.2.254/31", "10.1.2.255/31", "10.1.2.255/31", HOST } },
	{ "fd00::/64", { "fd00::/64", "fd00::/64", "fd00::/64", "fd00::/64" } },
	{ "fd00::1/64", { "fd00::/64", "fd00::1/64", "fd00::1/64", HOST } },
	{ "fd00:0:0:1:8000::/65", { "fd00:0:0:1:8000::/65", "fd00:0:0:1:8000::/65",
				    "fd00:0:0:1:8000::/65", "fd00:0:0:1:8000::/65" } },
	{ "fd00:0:0:1:c000::/65", { "fd00:0:0:1:8000::/65", "fd00:0:0:1:c000::/65",
				    "fd00:0:0:1:c000::/65", HOST } },
	{ "FD77:0::/64", { "fd77::/64", "fd77::/64", "fd77::/64", "fd77::/64" } },
	/* the length: optional for ports and the mesh, 0 refused by the mesh
	 * (before host bits are looked at) */
	{ "10.1.2.3", { BAD, "10.1.2.3/32", BAD, "10.1.2.3/32" } },
	{ "fd77::5", { BAD, "fd77::5/128", BAD, "fd77::5/128" } },
	{ "0.0.0.0/0", { "0.0.0.0/0", "0.0.0.0/0", "0.0.0.0/0", ZERO } },
	{ "10.0.0.0/0", { "0.0.0.0/0", "10.0.0.0/0", "10.0.0.0/0", ZERO } },
	{ "::/0", { "::/0", "::/0", "::/0", ZERO } },
	{ "10.0.0.1/33", { BAD, BAD, BAD, BAD } },
	{ "fd77::/129", { BAD, BAD, BAD, BAD } },
	{ "10.0.0.0/999999999999", { BAD, BAD, BAD, BAD } },
	{ "10.0.0.0/", { BAD, BAD, BAD, BAD } },
	{ "10.0.0.0/+8", { BAD, BAD, BAD, BAD } },
	{ "10.0.0.0/-1", { BAD, BAD, BAD, BAD } },
	{ "10.0.0.0/0x8", { BAD, BAD, BAD, BAD } },
	{ "10.0.0.0/8/8", { BAD, BAD, BAD, BAD } },
	{ "/32", { BAD, BAD, BAD, BAD } },
	{ "/", { BAD, BAD, BAD, BAD } },
	{ "", { BAD, BAD, BAD, BAD } },
	/* leading zeros: any number in the UAPI's length (strconv.ParseUint),
	 * 20 digits at most elsewhere; none in an IPv4 octet (inet_pton) */
	{ "10.0.0.0/08", { "10.0.0.0/8", "10.0.0.0/8", "10.0.0.0/8", "10.0.0.0/8" } },
	{ "10.0.0.0/00000000000000000008",
	  { "10.0.0.0/8", "10.0.0.0/8", "10.0.0.0/8", "10.0.0.0/8" } },
	{ "10.0.0.0/000000000000000000008", { "10.0.0.0/8", BAD, BAD, BAD } },
	{ "fd00::/00000000000000000000000000000000000064", { "fd00::/64", BAD, BAD, BAD } },
	{ "010.0.0.1/32", { BAD, BAD, BAD, BAD } },
	{ "010.0.0.1", { BAD, BAD, BAD, BAD } },
	{ "fd00:0000::0001/128", { "fd00::1/128", "fd00::1/128", "fd00::1/128", "fd00::1/128" } },
	{ "fd00:00001::/32", { BAD, BAD, BAD, BAD } },
	/* blanks anywhere */
	{ " 10.0.0.0/8", { BAD, BAD, BAD, BAD } },
	{ "10.0.0.0 /8", { BAD, BAD, BAD, BAD } },
	{ "10.0.0.0/ 8", { BAD, BAD, BAD, BAD } },
	{ "10.0.0.0/8 ", { BAD, BAD, BAD, BAD } },
	{ "10.0.0.0/8\n", { BAD, BAD, BAD, BAD } },
	{ "10.0.0.1 ", { BAD, BAD, BAD, BAD } },
	{ "\tfd00::/64", { BAD, BAD, BAD, BAD } },
	/* what is not an address */
	{ "10.0.0/24", { BAD, BAD, BAD, BAD } },
	{ "10.0.0.256/32", { BAD, BAD, BAD, BAD } },
	{ "host.example/32", { BAD, BAD, BAD, BAD } },
	{ "fe80::1%eth0/64", { BAD, BAD, BAD, BAD } },
	{ "fe80::1%1", { BAD, BAD, BAD, BAD } },
	{ "[fd00::1]/128", { BAD, BAD, BAD, BAD } },
	{ "fd77:::1", { BAD, BAD, BAD, BAD } },
	{ "1234:5678:9abc:def0:1234:5678:9abc:def0:1234", { BAD, BAD, BAD, BAD } },
	{ "1.2.3.4:5/32", { BAD, BAD, BAD, BAD } },
	/* the longest address text there is (45 characters) */
	{ "1111:2222:3333:4444:5555:6666:111.222.111.222/128",
	  { "1111:2222:3333:4444:5555:6666:6fde:6fde/128",
	    "1111:2222:3333:4444:5555:6666:6fde:6fde/128",
	    "1111:2222:3333:4444:5555:6666:6fde:6fde/128",
	    "1111:2222:3333:4444:5555:6666:6fde:6fde/128" } },
	/* IPv4 inside IPv6: mapped prints dotted, compatible (deprecated) not */
	{ "::ffff:10.0.0.1", { BAD, "::ffff:10.0.0.1/128", BAD, "::ffff:10.0.0.1/128" } },
	{ "::ffff:10.0.0.1/96", { "::ffff:0.0.0.0/96", "::ffff:10.0.0.1/96",
				  "::ffff:10.0.0.1/96", HOST } },
	{ "::1.2.3.4/128", { "::102:304/128", "::102:304/128", "::102:304/128", "::102:304/128" } },
};

static void test_parse_table(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (int f = 0; f < N_FORMS; f++) {
			const char *in = cases[i].in, *want = cases[i].out[f], *why = "unset", *got;
			struct ip_prefix p;
			char s[IP_PREFIX_STRLEN];
			int ret = ip_prefix_parse(in, strlen(in), form_flags[f], &p, &why);
			bool ok;

			if (want[0] != '!') {
				ip_prefix_format(&p, s);
				got = s;
				ok = ret == 0 && !strcmp(s, want) && ip_prefix_valid(&p) == ip_prefix_masked(&p);
			} else {
				static const struct ip_prefix zero;

				got = why;
				ok = ret == -EINVAL && !strncmp(why, want + 1, strlen(want) - 1) &&
				     !memcmp(&p, &zero, sizeof(p));
			}
			if (!ok) {
				fprintf(stderr, "\"%s\" as %s: %d \"%s\", want \"%s\"\n", in,
					form_names[f], ret, got, want);
				failures++;
			}
		}
	}
}

static void test_parse_edges(void)
{
	struct ip_prefix p;
	const char *why = NULL;

	/* Exactly [s, s+n) is read; a NUL inside it is refused, not an end. */
	CHECK(ip_prefix_parse("10.0.0.0/8x", 10, IP_PREFIX_LEN_OPTIONAL, &p, &why) == 0);
	CHECK(p.family == AF_INET && p.cidr == 8 && p.addr[0] == 10);
	CHECK(ip_prefix_parse("10.0.0.1/32", 8, IP_PREFIX_LEN_OPTIONAL, &p, &why) == 0);
	CHECK(p.cidr == 32 && p.addr[3] == 1);
	CHECK(ip_prefix_parse("10.0.0.1\0", 9, IP_PREFIX_LEN_OPTIONAL, &p, &why) == -EINVAL);
	CHECK(ip_prefix_parse("10.0.0.0/8\0", 11, 0, &p, &why) == -EINVAL);
	CHECK(ip_prefix_parse("10.0.0.1\0/8", 11, 0, &p, &why) == -EINVAL);
	/* The reason names the syntax the flags accept; why may be NULL. */
	CHECK(ip_prefix_parse("x", 1, 0, &p, &why) == -EINVAL && strstr(why, "address/length"));
	CHECK(ip_prefix_parse("x", 1, IP_PREFIX_LEN_OPTIONAL, &p, &why) == -EINVAL &&
	      strstr(why, "optionally /length"));
	CHECK(ip_prefix_parse("x", 1, 0, &p, NULL) == -EINVAL);
	/* NO_HOST_BITS wins over MASK. */
	CHECK(ip_prefix_parse("10.0.0.1/8", 10, IP_PREFIX_NO_HOST_BITS | IP_PREFIX_MASK, &p, &why) ==
	      -EINVAL && strstr(why, "host bits"));
	/* IPv4 leaves addr[4, 16) zero, masked or not. */
	CHECK(ip_prefix_parse("255.255.255.255/1", 17, IP_PREFIX_MASK, &p, &why) == 0);
	CHECK(p.addr[0] == 0x80 && !p.addr[1] && !p.addr[2] && !p.addr[3] && !p.addr[4] &&
	      !p.addr[15]);
}

static void test_format(void)
{
	static const struct {
		int family;
		uint8_t addr[16];
		const char *out;
	} known[] = {
		{ AF_INET, { 0 }, "0.0.0.0" },
		{ AF_INET, { 192, 0, 2, 255 }, "192.0.2.255" },
		{ AF_INET6, { 0 }, "::" },
		{ AF_INET6, { [15] = 1 }, "::1" },
		{ AF_INET6, { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 }, "2001:db8::1" },
		/* a lone zero group stays; the first of two equal runs is cut */
		{ AF_INET6, { 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0 }, "1:0:1:0:1:0:1:0" },
		{ AF_INET6, { 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1 }, "1::1:0:0:1:1" },
		{ AF_INET6, { 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1 }, "1:0:0:1::1" },
		{ AF_INET6, { [10] = 0xff, [11] = 0xff, 192, 0, 2, 1 }, "::ffff:192.0.2.1" },
		{ AF_INET6, { [12] = 192, 0, 2, 1 }, "::c000:201" },
		{ AF_INET6, { [0 ... 15] = 0xff }, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff" },
		/* anything but AF_INET is IPv6 */
		{ 0, { 0xfd, [15] = 2 }, "fd00::2" },
	};
	char s[IP_PREFIX_ADDR_STRLEN], t[IP_PREFIX_STRLEN];
	struct ip_prefix p = { .family = AF_INET6, .cidr = 128 };

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		ip_prefix_format_addr(known[i].family, known[i].addr, s);
		if (strcmp(s, known[i].out)) {
			fprintf(stderr, "format %zu: \"%s\", want \"%s\"\n", i, s, known[i].out);
			failures++;
		}
	}
	memset(p.addr, 0xff, 16);
	ip_prefix_format(&p, t);
	CHECK(!strcmp(t, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"));
}

/* ---- comparisons against a naive model ---------------------------------- */

static uint64_t rng = 0x853c49e6748fea9bull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11) % n;
}

static bool bit(const uint8_t *a, unsigned int i)
{
	return a[i / 8] >> (7 - i % 8) & 1;
}

/* Few distinct bases and lengths, so that random pairs often nest. */
static struct ip_prefix random_prefix(void)
{
	struct ip_prefix p = { .family = rnd(2) ? AF_INET : AF_INET6 };
	unsigned int bits = p.family == AF_INET ? 32 : 128;

	p.addr[0] = (uint8_t)(rnd(2) ? 0x0a : 0xfd);
	for (unsigned int i = 1; i < bits / 8; i++)
		p.addr[i] = (uint8_t)(rnd(4) ? 0 : rnd(4) ? 0x80 : rnd(256));
	p.cidr = (uint8_t)(rnd(4) ? rnd(bits + 1) : bits);
	if (rnd(2))
		for (unsigned int i = p.cidr; i < bits; i++)
			p.addr[i / 8] &= (uint8_t)~(0x80u >> (i % 8));
	return p;
}

static bool naive_has(const struct ip_prefix *p, int family, const uint8_t *a)
{
	if (p->family != family)
		return false;
	for (unsigned int i = 0; i < p->cidr; i++)
		if (bit(p->addr, i) != bit(a, i))
			return false;
	return true;
}

static bool naive_masked(const struct ip_prefix *p)
{
	for (unsigned int i = p->cidr; i < 128; i++)
		if (bit(p->addr, i))
			return false;
	return true;
}

static void test_model(void)
{
	unsigned int nested = 0, equal = 0;

	for (int round = 0; round < 200000; round++) {
		struct ip_prefix p = random_prefix(), q = random_prefix(), r;
		unsigned int bits = p.family == AF_INET ? 32 : 128;
		bool same = p.family == q.family && p.cidr == q.cidr &&
			    !memcmp(p.addr, q.addr, bits / 8);
		bool in = p.family == q.family && p.cidr <= q.cidr &&
			  naive_has(&p, q.family, q.addr);
		char s[IP_PREFIX_STRLEN];

		CHECK(ip_prefix_equal(&p, &q) == same);
		CHECK(ip_prefix_contains(&p, &q) == in);
		CHECK(ip_prefix_has_addr(&p, q.family, q.addr) == naive_has(&p, q.family, q.addr));
		CHECK(ip_prefix_masked(&p) == naive_masked(&p));
		CHECK(ip_prefix_valid(&p) == naive_masked(&p));
		CHECK(ip_prefix_contains(&p, &p) && ip_prefix_equal(&p, &p));
		nested += in && !same;
		equal += same;

		/* Printed and read back, any prefix is itself; masked when asked. */
		ip_prefix_format(&p, s);
		CHECK(ip_prefix_parse(s, strlen(s), 0, &r, NULL) == 0 && ip_prefix_equal(&p, &r));
		CHECK(ip_prefix_parse(s, strlen(s), IP_PREFIX_MASK, &r, NULL) == 0 &&
		      p.cidr == r.cidr && ip_prefix_masked(&r) && ip_prefix_contains(&r, &p));
		CHECK(ip_prefix_parse(s, strlen(s), IP_PREFIX_NO_HOST_BITS, &r, NULL) ==
		      (ip_prefix_masked(&p) ? 0 : -EINVAL));
	}
	/* The model's pairs must have exercised both answers. */
	CHECK(nested > 1000 && equal > 100);

	/* IPv4 compares its four bytes only; an unknown family never matches
	 * a known one; a length past 128 is not valid. */
	{
		struct ip_prefix a = { .family = AF_INET, .cidr = 8, .addr = { 10 } }, b = a;
		struct ip_prefix list[3] = { { .family = AF_INET6, .cidr = 8, .addr = { 10 } }, a };

		b.addr[7] = 1;
		CHECK(ip_prefix_equal(&a, &b) && !ip_prefix_masked(&b) && !ip_prefix_valid(&b));
		CHECK(ip_prefix_listed(list, 2, &b) && !ip_prefix_listed(list, 1, &b));
		CHECK(!ip_prefix_listed(list, 0, &a));
		b = (struct ip_prefix){ .family = 0, .cidr = 8, .addr = { 10 } };
		CHECK(!ip_prefix_equal(&a, &b) && !ip_prefix_contains(&b, &a) && !ip_prefix_valid(&b));
		b = (struct ip_prefix){ .family = AF_INET, .cidr = 33 };
		CHECK(!ip_prefix_valid(&b));
		b = (struct ip_prefix){ .family = AF_INET6, .cidr = 129 };
		CHECK(!ip_prefix_valid(&b) && ip_prefix_masked(&b));
	}
}

int main(void)
{
	test_parse_table();
	test_parse_edges();
	test_format();
	test_model();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}
