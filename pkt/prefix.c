/* The IP prefix's parser, printer and comparisons (pkt/prefix.h).
 *
 * Security model: the text comes from a UAPI request, a control request, a
 * reply or a file, any bytes and any length. The parser reads [s, s+n)
 * only, copies the address part only after checking its length, bounds the
 * length digit by digit, and hands back a zeroed prefix on every refusal. */
#include "pkt/prefix.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>

/* The reasons a caller may show as they are. The first names the syntax
 * the flags accept. */
static const char bad_host_ok[] = "bad address (want an IPv4 or IPv6 address, optionally /length)";
static const char bad_len_needed[] = "bad address (want an IPv4 or IPv6 address/length)";
static const char zero_len[] = "prefix length 0";
static const char host_bits[] = "host bits set (the address is not the start of its prefix)";

static unsigned int family_bits(int family)
{
	return family == AF_INET ? 32 : 128;
}

static bool bit_set(const uint8_t *addr, unsigned int i)
{
	return addr[i / 8] & (0x80u >> (i % 8));
}

/* Decimal digits only, no sign, at most max. any_zeros: as many leading
 * zeros as given; else at most 20 digits in all. */
static bool parse_len(const char *v, size_t n, unsigned int max, bool any_zeros,
		      unsigned int *out)
{
	unsigned int x = 0;

	if (!n || (!any_zeros && n > 20))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned int d = (unsigned int)(v[i] - '0');

		if (d > 9)
			return false;
		x = x * 10 + d;
		if (x > max)
			return false;
	}
	*out = x;
	return true;
}

int ip_prefix_parse(const char *s, size_t n, unsigned int flags, struct ip_prefix *out,
		    const char **why)
{
	const char *slash = memchr(s, '/', n);
	const char *reason = flags & IP_PREFIX_LEN_OPTIONAL ? bad_host_ok : bad_len_needed;
	size_t an = slash ? (size_t)(slash - s) : n;
	char host[INET6_ADDRSTRLEN];
	unsigned int bits, len;

	memset(out, 0, sizeof(*out));
	if (!slash && !(flags & IP_PREFIX_LEN_OPTIONAL))
		goto fail;
	/* inet_pton reads up to a NUL: one inside would cut the text short. */
	if (an >= sizeof(host) || memchr(s, '\0', an))
		goto fail;
	memcpy(host, s, an);
	host[an] = '\0';
	out->family = memchr(host, ':', an) ? AF_INET6 : AF_INET;
	if (inet_pton(out->family, host, out->addr) != 1)
		goto fail;
	bits = family_bits(out->family);
	len = bits;
	if (slash && !parse_len(slash + 1, n - an - 1, bits, flags & IP_PREFIX_LEN_ZEROS, &len))
		goto fail;
	if (!len && (flags & IP_PREFIX_NO_ZERO_LEN)) {
		reason = zero_len;
		goto fail;
	}
	out->cidr = (uint8_t)len;
	if (flags & (IP_PREFIX_NO_HOST_BITS | IP_PREFIX_MASK) && !ip_prefix_masked(out)) {
		if (flags & IP_PREFIX_NO_HOST_BITS) {
			reason = host_bits;
			goto fail;
		}
		for (unsigned int i = len; i < bits; i++)
			out->addr[i / 8] &= (uint8_t)~(0x80u >> (i % 8));
	}
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	if (why)
		*why = reason;
	return -EINVAL;
}

static void format_v6(char out[IP_PREFIX_ADDR_STRLEN], const uint8_t a[16])
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	int i, best = -1, best_len = 0, run;
	uint16_t w[8];
	char *o = out;

	if (!memcmp(a, mapped, sizeof(mapped))) {
		snprintf(out, IP_PREFIX_ADDR_STRLEN, "::ffff:%u.%u.%u.%u", a[12], a[13], a[14],
			 a[15]);
		return;
	}
	for (i = 0; i < 8; i++)
		w[i] = (uint16_t)(a[2 * i] << 8 | a[2 * i + 1]);
	for (i = 0; i < 8; i++) {
		for (run = 0; i + run < 8 && !w[i + run]; run++)
			;
		if (run >= 2 && run > best_len) {
			best = i;
			best_len = run;
		}
	}
	for (i = 0; i < 8; i++) {
		if (i == best) {
			*o++ = ':';
			*o++ = ':';
			i += best_len - 1;
			continue;
		}
		if (i > 0 && i != best + best_len)
			*o++ = ':';
		o += sprintf(o, "%x", w[i]);
	}
	*o = '\0';
}

/* glibc's inet_ntop would do but for one form: it prints an IPv4-compatible
 * address (::a.b.c.d, deprecated by RFC 4291) dotted, which Go does not. */
void ip_prefix_format_addr(int family, const uint8_t *addr, char out[IP_PREFIX_ADDR_STRLEN])
{
	if (family == AF_INET)
		snprintf(out, IP_PREFIX_ADDR_STRLEN, "%u.%u.%u.%u", addr[0], addr[1], addr[2],
			 addr[3]);
	else
		format_v6(out, addr);
}

void ip_prefix_format(const struct ip_prefix *p, char out[IP_PREFIX_STRLEN])
{
	char a[IP_PREFIX_ADDR_STRLEN];

	ip_prefix_format_addr(p->family, p->addr, a);
	snprintf(out, IP_PREFIX_STRLEN, "%s/%u", a, p->cidr);
}

bool ip_prefix_equal(const struct ip_prefix *a, const struct ip_prefix *b)
{
	return a->family == b->family && a->cidr == b->cidr &&
	       !memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16);
}

bool ip_prefix_listed(const struct ip_prefix *list, size_t n, const struct ip_prefix *a)
{
	for (size_t i = 0; i < n; i++)
		if (ip_prefix_equal(&list[i], a))
			return true;
	return false;
}

bool ip_prefix_contains(const struct ip_prefix *p, const struct ip_prefix *q)
{
	if (p->family != q->family || p->cidr > q->cidr)
		return false;
	for (unsigned int i = 0; i < p->cidr && i < 128; i++)
		if (bit_set(p->addr, i) != bit_set(q->addr, i))
			return false;
	return true;
}

bool ip_prefix_masked(const struct ip_prefix *p)
{
	for (unsigned int i = p->cidr; i < 128; i++)
		if (bit_set(p->addr, i))
			return false;
	return true;
}

bool ip_prefix_valid(const struct ip_prefix *p)
{
	return (p->family == AF_INET || p->family == AF_INET6) &&
	       p->cidr <= family_bits(p->family) && ip_prefix_masked(p);
}
