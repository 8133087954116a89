/* Small pieces of weft's text forms (tun/text.h). */
#include "tun/text.h"

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
