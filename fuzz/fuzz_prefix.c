/* libFuzzer target for the IP prefix parser (pkt/prefix.c), which the UAPI,
 * the port and mesh text forms and the CLI all call. Checked beyond "no
 * crash": the verdict and the prefix equal a naive model's (inet_pton for
 * the address, the length read digit by digit, then the flags' rules in
 * order); a refusal zeroes the prefix and gives one of the documented
 * reasons; an accepted prefix prints and reads back to itself, is masked
 * whenever a flag asked for it, and contains itself and its own address.
 *
 * Input: a flags byte (its low five bits are ip_prefix_parse's flags), then
 * the text. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "pkt/prefix.h"

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "fuzz_prefix: check failed at %s:%d: %s\n", \
				__FILE__, __LINE__, #cond);                          \
			abort();                                                     \
		}                                                                    \
	} while (0)

enum { ALL_FLAGS = 0x1f };

/* The model: 0 and *out, or the start of the reason. */
static const char *model(const char *s, size_t n, unsigned int flags, struct ip_prefix *out)
{
	char host[64];
	size_t an = 0, digits = 0;
	unsigned int bits, len = 0;
	bool big = false;

	memset(out, 0, sizeof(*out));
	while (an < n && s[an] != '/')
		an++;
	if (an == n && !(flags & IP_PREFIX_LEN_OPTIONAL))
		return "bad address";
	if (an >= INET6_ADDRSTRLEN || memchr(s, '\0', an))
		return "bad address";
	memcpy(host, s, an);
	host[an] = '\0';
	out->family = strchr(host, ':') ? AF_INET6 : AF_INET;
	bits = out->family == AF_INET ? 32 : 128;
	if (inet_pton(out->family, host, out->addr) != 1)
		return "bad address";
	if (an == n) {
		len = bits;
	} else {
		for (size_t i = an + 1; i < n; i++, digits++) {
			if (s[i] < '0' || s[i] > '9')
				return "bad address";
			len = len * 10 + (unsigned int)(s[i] - '0');
			big |= len > bits;
			if (big)
				len = bits + 1;
		}
		if (!digits || big || (digits > 20 && !(flags & IP_PREFIX_LEN_ZEROS)))
			return "bad address";
	}
	if (!len && (flags & IP_PREFIX_NO_ZERO_LEN))
		return "prefix length 0";
	out->cidr = (uint8_t)len;
	for (unsigned int i = len; i < bits; i++) {
		uint8_t *byte = &out->addr[i / 8], bit = (uint8_t)(0x80 >> (i % 8));

		if (!(*byte & bit))
			continue;
		if (flags & IP_PREFIX_NO_HOST_BITS)
			return "host bits set";
		if (flags & IP_PREFIX_MASK)
			*byte &= (uint8_t)~bit;
	}
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct ip_prefix zero;
	struct ip_prefix p, m, r;
	const char *s, *why = NULL, *want;
	char text[IP_PREFIX_STRLEN];
	unsigned int flags;
	size_t n;
	int ret;

	if (!size)
		return 0;
	flags = data[0] & ALL_FLAGS;
	s = (const char *)data + 1;
	n = size - 1;
	ret = ip_prefix_parse(s, n, flags, &p, &why);
	want = model(s, n, flags, &m);
	if (want) {
		CHECK(ret == -EINVAL && !memcmp(&p, &zero, sizeof(p)));
		CHECK(why && !strncmp(why, want, strlen(want)));
		/* The "bad address" reason names the syntax the flags accept. */
		CHECK(strcmp(want, "bad address") ||
		      !!strstr(why, "optionally") == !!(flags & IP_PREFIX_LEN_OPTIONAL));
		CHECK(ip_prefix_parse(s, n, flags, &p, NULL) == -EINVAL);
		return 0;
	}
	CHECK(ret == 0 && !memcmp(&p, &m, sizeof(p)));
	CHECK(p.cidr <= (p.family == AF_INET ? 32 : 128));
	if (flags & (IP_PREFIX_MASK | IP_PREFIX_NO_HOST_BITS))
		CHECK(ip_prefix_valid(&p));
	CHECK(ip_prefix_equal(&p, &p) && ip_prefix_contains(&p, &p));
	CHECK(ip_prefix_has_addr(&p, p.family, p.addr));
	CHECK(!ip_prefix_has_addr(&p, p.family == AF_INET ? AF_INET6 : AF_INET, p.addr));

	/* Printed, it reads back (with any flags but those that may refuse it)
	 * to the same prefix. */
	ip_prefix_format(&p, text);
	CHECK(strlen(text) < sizeof(text));
	CHECK(ip_prefix_parse(text, strlen(text), flags & IP_PREFIX_LEN_ZEROS, &r, &why) == 0);
	CHECK(ip_prefix_equal(&p, &r) && !memcmp(&p, &r, sizeof(p)));
	return 0;
}
