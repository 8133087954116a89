/* Start-up code out of the resident set.
 *
 * Starting weftd runs code it never runs again: OpenSSL's provider set-up
 * and the AEAD self-test of both backends, netlink set-up, argument and
 * file parsing. The kernel maps that code in (with fault-around, 64 KiB at
 * a time) and leaves it mapped, so an idle weftd carried about 2 MiB of
 * libcrypto text in its PSS. Once start-up is over, the read-only file
 * mappings that hold no private page (code, read-only data) are dropped
 * from the page tables with MADV_DONTNEED: their pages stay in the page
 * cache, and what the data path uses faults back in on first use, the rest
 * never. Mappings with a copied page (relocated read-only data, written by
 * the loader before it was made read-only) are left alone: dropping them
 * would lose the relocations. */
#include "daemon/memtrim.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

struct region {
	unsigned long start, end;
	bool candidate; /* file-backed, not writable */
	bool private;   /* has a copied (anonymous, dirty) page */
};

static void trim(const struct region *r, size_t *bytes)
{
	if (!r->candidate || r->private || r->end <= r->start)
		return;
	if (!madvise((void *)r->start, r->end - r->start, MADV_DONTNEED))
		*bytes += r->end - r->start;
}

size_t memtrim_code(void)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	struct region r = { 0 };
	char line[512];
	size_t bytes = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end, kb;
		char perms[8], path[256] = "";

		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &start, &end, perms, path) >= 3 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			trim(&r, &bytes);
			r = (struct region){ .start = start, .end = end };
			r.candidate = path[0] == '/' && perms[0] == 'r' && perms[1] == '-' &&
				      perms[3] == 'p';
			continue;
		}
		/* A copied page of a file mapping is anonymous (and dirty). */
		if ((sscanf(line, "Private_Dirty: %lu kB", &kb) == 1 ||
		     sscanf(line, "Anonymous: %lu kB", &kb) == 1) &&
		    kb)
			r.private = true;
	}
	trim(&r, &bytes);
	fclose(f);
	return bytes;
}
