/* Small pieces of the text forms weft parses and writes (wg/uapi.c,
 * port/text.c, mesh/text.c): lines, "key=value", blanks, numbers, each
 * bounded by an explicit length (nothing needs a NUL), and the one buffer
 * replies and files are built in. */
#ifndef WEFT_TEXT_TEXT_H
#define WEFT_TEXT_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Walks text[0, len) line by line from *off: *line and *n the next line
 * without its '\n'. false at the end. */
bool text_next_line(const char *text, size_t len, size_t *off, const char **line, size_t *n);
/* Splits "key=value" at the first '='. */
bool text_split_kv(const char *line, size_t n, size_t *kn, const char **v, size_t *vn);
/* Space, tab, CR, VT, FF. */
bool text_is_blank(char c);
/* Moves *s and shrinks *n past blanks at both ends. */
void text_trim(const char **s, size_t *n);
/* A decimal number of 1 to 20 digits, at most max. */
bool text_parse_u64(const char *v, size_t n, uint64_t max, uint64_t *out);
/* The value of a hex digit, or -1. */
int text_hexval(char c);

/* A growing text buffer, zero-initialised. Growing it wipes the old copy,
 * and text_buf_free wipes it, since a reply may hold a private key. After a
 * failed allocation it ignores appends, and text_buf_finish says -ENOMEM. */
struct text_buf {
	char *p;
	size_t len, cap;
	bool oom;
};
void text_buf_add(struct text_buf *b, const void *s, size_t n);
__attribute__((format(printf, 2, 3)))
void text_buf_printf(struct text_buf *b, const char *fmt, ...);
/* Hands the text over, NUL-terminated (not counted in *len): 0, or
 * -ENOMEM (then the buffer is freed). */
int text_buf_finish(struct text_buf *b, char **out, size_t *len);
void text_buf_free(struct text_buf *b);

#endif
