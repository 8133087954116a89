/* Tiny assertion helpers shared by the crypto known-answer tests. */
#ifndef WEFT_TESTS_CRYPTO_CHECK_H
#define WEFT_TESTS_CRYPTO_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__,   \
				__LINE__, #cond);                                \
			check_failures++;                                        \
		}                                                                \
	} while (0)

#define CHECK_MEM(got, want, len) check_mem(__FILE__, __LINE__, #got, (got), (want), (len))

static inline void dump_hex(const char *label, const uint8_t *p, size_t len)
{
	fprintf(stderr, "  %-5s ", label);
	for (size_t i = 0; i < len; i++)
		fprintf(stderr, "%02x", p[i]);
	fprintf(stderr, "\n");
}

static inline void check_mem(const char *file, int line, const char *what,
			     const void *got, const void *want, size_t len)
{
	if (memcmp(got, want, len) == 0)
		return;
	fprintf(stderr, "%s:%d: %s differs\n", file, line, what);
	dump_hex("got", got, len);
	dump_hex("want", want, len);
	check_failures++;
}

/* Parses a hex string (whitespace ignored) into out; returns the byte count.
 * Aborts on malformed input: that is a bug in the test itself. */
static inline size_t hex_decode(uint8_t *out, size_t cap, const char *hex)
{
	size_t n = 0;
	int nibble = -1;

	for (const char *p = hex; *p; p++) {
		int v;

		if (*p == ' ' || *p == '\n' || *p == ':')
			continue;
		if (*p >= '0' && *p <= '9')
			v = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			v = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			v = *p - 'A' + 10;
		else
			abort();
		if (nibble < 0) {
			nibble = v;
			continue;
		}
		if (n == cap)
			abort();
		out[n++] = (uint8_t)(nibble << 4 | v);
		nibble = -1;
	}
	if (nibble >= 0)
		abort();
	return n;
}

static inline int check_result(const char *name)
{
	if (check_failures) {
		fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
		return 1;
	}
	printf("%s: ok\n", name);
	return 0;
}

#endif
