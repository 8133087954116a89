/* libFuzzer target for the metrics listener's request parser,
 * metrics_http_parse (daemon/metrics_http.c), the function its responder
 * calls on the bytes of a request after every read from the socket.
 *
 * Input: a byte that seeds the sizes of the reads (0: the whole request in
 * one read), then the request. Checked, against a naive model written from
 * daemon/metrics_http.h (a blank line ends the headers; only the request
 * line "METHOD SP TARGET SP HTTP/1.d" decides, METHOD an RFC 9110 token,
 * TARGET visible bytes, its query ignored): the verdict on the whole input,
 * and a replay of the responder's read loop (a 4096-byte buffer, parsed
 * after each read, stopped at the first verdict that is not INCOMPLETE)
 * whose every intermediate verdict must be the model's for the bytes read
 * so far, and the three cuts just before the end of the headers. So a
 * prefix of a request is "complete" only when the model says so, and
 * reading in pieces ends where and as reading at once would. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/metrics_http.h"

#define CHECK(cond)                                                                      \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "fuzz_metrics_http: check failed at %s:%d: %s\n", \
				__FILE__, __LINE__, #cond);                              \
			abort();                                                         \
		}                                                                        \
	} while (0)

/* RFC 9110 section 5.6.2: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" /
 * "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA. */
static bool model_tchar(unsigned char c)
{
	switch (c) {
	case '!': case '#': case '$': case '%': case '&': case '\'': case '*':
	case '+': case '-': case '.': case '^': case '_': case '`': case '|': case '~':
		return true;
	default:
		return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
	}
}

static bool same(const unsigned char *p, size_t n, const char *s)
{
	return n == strlen(s) && memcmp(p, s, n) == 0;
}

/* The verdict on the first len bytes of p, by splitting lines; *end gets
 * the length of the request line and headers (SIZE_MAX: no end in len). */
static enum metrics_http_verdict model(const unsigned char *p, size_t len, size_t *end)
{
	size_t line_start = 0, first_end = SIZE_MAX, i;
	bool blank = false;
	const unsigned char *m, *tgt, *ver;
	size_t mlen, tlen, vlen, rl_len, a, b;
	bool get, head;

	*end = SIZE_MAX;
	/* Lines end at LF (an optional CR before it is part of the ending);
	 * the headers end with the first empty line after the request line. */
	for (i = 0; i < len; i++) {
		if (p[i] != '\n')
			continue;
		if (first_end == SIZE_MAX) {
			first_end = i;
		} else {
			size_t n = i - line_start;

			if (n == 0 || (n == 1 && p[line_start] == '\r')) {
				blank = true;
				*end = i + 1;
				break;
			}
		}
		line_start = i + 1;
	}
	if (!blank)
		return len >= METRICS_HTTP_MAX_REQUEST ? METRICS_HTTP_TOO_LARGE
						       : METRICS_HTTP_INCOMPLETE;

	rl_len = first_end;
	if (rl_len && p[rl_len - 1] == '\r')
		rl_len--;
	/* Exactly two spaces split the line into three non-empty words... */
	for (a = 0; a < rl_len && p[a] != ' '; a++)
		;
	for (b = a + 1; b < rl_len && p[b] != ' '; b++)
		;
	if (a >= rl_len || b >= rl_len || a == 0 || b == a + 1)
		return METRICS_HTTP_BAD_REQUEST;
	m = p;
	mlen = a;
	tgt = p + a + 1;
	tlen = b - a - 1;
	ver = p + b + 1;
	vlen = rl_len - b - 1;
	/* ...a token, visible bytes (no space, control or DEL), a version. */
	for (i = 0; i < mlen; i++)
		if (!model_tchar(m[i]))
			return METRICS_HTTP_BAD_REQUEST;
	for (i = 0; i < tlen; i++)
		if (tgt[i] < 0x21 || tgt[i] == 0x7f)
			return METRICS_HTTP_BAD_REQUEST;
	if (vlen != 8 || memcmp(ver, "HTTP/1.", 7) || ver[7] < '0' || ver[7] > '9')
		return METRICS_HTTP_BAD_REQUEST;
	get = same(m, mlen, "GET");
	head = same(m, mlen, "HEAD");
	if (!get && !head)
		return METRICS_HTTP_BAD_METHOD;
	for (i = 0; i < tlen && tgt[i] != '?'; i++)
		;
	if (same(tgt, i, "/metrics"))
		return get ? METRICS_HTTP_METRICS : METRICS_HTTP_METRICS_HEAD;
	if (same(tgt, i, "/"))
		return METRICS_HTTP_INDEX;
	return METRICS_HTTP_NOT_FOUND;
}

/* Parses an exact-size copy, so that ASan sees a read past len. */
static enum metrics_http_verdict parse_copy(const unsigned char *p, size_t len)
{
	char *copy = malloc(len ? len : 1);
	enum metrics_http_verdict v;

	CHECK(copy);
	memcpy(copy, p, len);
	v = metrics_http_parse(copy, len);
	free(copy);
	return v;
}

static uint32_t next_rand(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* The model's verdict on the first got bytes of a request whose whole
 * verdict is whole, its headers ending at end: a request is decided by its
 * bytes up to the end of its headers, and undecided before. */
static enum metrics_http_verdict model_prefix(enum metrics_http_verdict whole, size_t end,
					      size_t got)
{
	if (end <= got)
		return whole;
	return got >= METRICS_HTTP_MAX_REQUEST ? METRICS_HTTP_TOO_LARGE : METRICS_HTTP_INCOMPLETE;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[METRICS_HTTP_MAX_REQUEST];
	enum metrics_http_verdict v = METRICS_HTTP_INCOMPLETE, whole;
	const uint8_t *req;
	size_t len, got = 0, end;
	uint32_t seed;

	if (size < 1)
		return 0;
	seed = data[0] * 0x01010101u;
	req = data + 1;
	len = size - 1;

	whole = model(req, len, &end);
	CHECK(parse_copy(req, len) == whole);
	/* Cut just before the end of the headers, the request is undecided. */
	for (size_t k = 1; k <= 3 && end != SIZE_MAX && k <= end; k++) {
		size_t e;

		CHECK(model(req, end - k, &e) == model_prefix(whole, end, end - k) &&
		      e == SIZE_MAX);
		CHECK(parse_copy(req, end - k) == model_prefix(whole, end, end - k));
	}

	/* The responder's loop: reads of 1..16 or 1..1024 bytes (or
	 * everything at once), never more than the buffer holds. */
	while (v == METRICS_HTTP_INCOMPLETE && got < len) {
		uint32_t r = seed ? next_rand(&seed) : 0;
		size_t n = !seed ? len : (r & 0x30000) ? 1 + r % 1024 : 1 + r % 16;

		if (n > len - got)
			n = len - got;
		if (n > sizeof(buf) - got)
			n = sizeof(buf) - got;
		CHECK(n > 0); /* a full buffer is never INCOMPLETE */
		memcpy(buf + got, req + got, n);
		got += n;
		v = metrics_http_parse(buf, got);
		CHECK(v == model_prefix(whole, end, got));
	}
	CHECK(got <= sizeof(buf));
	/* The loop stops at the first read that completes the headers, with
	 * the whole input's verdict, or at the limit, or out of input. */
	if (v == METRICS_HTTP_INCOMPLETE)
		CHECK(got == len && whole == METRICS_HTTP_INCOMPLETE);
	else if (v != METRICS_HTTP_TOO_LARGE)
		CHECK(v == whole && end <= got);
	return 0;
}
