/* Small pieces of the text forms weft parses (port/text.c,
 * mesh/text.c): lines, "key=value", blanks, numbers. Bounded by
 * explicit lengths: nothing needs a NUL. */
#ifndef WEFT_TUN_TEXT_H
#define WEFT_TUN_TEXT_H

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

#endif
