/* Start-up code out of the resident set (see memtrim.c). */
#ifndef WEFT_DAEMON_MEMTRIM_H
#define WEFT_DAEMON_MEMTRIM_H

#include <stddef.h>

/* Drops this process's read-only file mappings without copied pages from
 * its page tables; they fault back in when used. Returns the bytes of
 * address space covered. Call once start-up is over. */
size_t memtrim_code(void);

#endif
