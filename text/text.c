/* Small pieces of weft's text forms (text/text.h). */
#include "text/text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool text_next_line(const char *text, size_t len, size_t *off, const char **line, size_t *n)
{
	const char *nl;

	if (*off >= len)
		return false;
	*line = text + *off;
	nl = memchr(*line, '\n', len - *off);
	*n = nl ? (size_t)(nl - *line) : len - *off;
	*off += *n + 1;
	return true;
}

bool text_split_kv(const char *line, size_t n, size_t *kn, const char **v, size_t *vn)
{
	const char *eq = memchr(line, '=', n);

	if (!eq)
		return false;
	*kn = (size_t)(eq - line);
	*v = eq + 1;
	*vn = n - *kn - 1;
	return true;
}

bool text_is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

void text_trim(const char **s, size_t *n)
{
	while (*n && text_is_blank(**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n && text_is_blank((*s)[*n - 1]))
		(*n)--;
}

bool text_parse_u64(const char *v, size_t n, uint64_t max, uint64_t *out)
{
	uint64_t x = 0;

	if (!n || n > 20)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned int d = (unsigned int)(v[i] - '0');

		if (d > 9 || x > (max - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*out = x;
	return true;
}

int text_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Room for extra more bytes and a NUL. */
static bool buf_reserve(struct text_buf *b, size_t extra)
{
	size_t cap = b->cap ? b->cap : 512;
	char *p;

	if (b->oom)
		return false;
	if (b->len + extra < b->cap)
		return true;
	while (cap <= b->len + extra)
		cap *= 2;
	p = malloc(cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	if (b->p) {
		memcpy(p, b->p, b->len);
		explicit_bzero(b->p, b->cap);
		free(b->p);
	}
	b->p = p;
	b->cap = cap;
	return true;
}

void text_buf_add(struct text_buf *b, const void *s, size_t n)
{
	if (!buf_reserve(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

void text_buf_printf(struct text_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	if (!buf_reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

int text_buf_finish(struct text_buf *b, char **out, size_t *len)
{
	if (!buf_reserve(b, 0)) {
		text_buf_free(b);
		return -ENOMEM;
	}
	b->p[b->len] = 0;
	*out = b->p;
	*len = b->len;
	memset(b, 0, sizeof(*b));
	return 0;
}

void text_buf_free(struct text_buf *b)
{
	if (b->p) {
		explicit_bzero(b->p, b->cap);
		free(b->p);
	}
	memset(b, 0, sizeof(*b));
}
