/* The guard on guest memory: a vhost-user frontend maps its guest's RAM to
 * weftd through files it keeps, and may truncate them afterwards (an unsealed
 * memfd, a file in /dev/shm, a hugetlbfs file whose pool runs dry). The next
 * access to a page past the new end raises SIGBUS in whichever thread made
 * it. Watched regions are listed here; the SIGBUS handler replaces a faulting
 * region with anonymous zero pages, so the access completes (reading zeros)
 * and nothing crashes, and tells the region's owner, which then drops the
 * frontend. Faults anywhere else are left to the previous handler (or the
 * default action: the process dies, as it should for a bug of its own).
 *
 * Rule for users: a watched region is unwatched before it is unmapped, and
 * both happen only while no thread can be touching it (weft: under the
 * device's write lock; every guest access is under its read or write lock). */
#ifndef WEFT_TUN_GUESTMEM_H
#define WEFT_TUN_GUESTMEM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { GUESTMEM_SLOTS = 4096 }; /* watched regions in the process */

/* Who to tell about a fault; lives as long as any region it watches. */
struct guestmem_owner {
	_Atomic bool faulted;     /* set by the handler; cleared by the owner */
	_Atomic uint64_t faults;  /* regions replaced, ever */
	_Atomic int wake_fd;      /* an eventfd written on a fault, or -1 */
};

void guestmem_owner_init(struct guestmem_owner *o);

/* Installs the SIGBUS handler, once per process. 0 or -errno. */
int guestmem_guard_install(void);

/* Watches [base, base + len), a shared mapping of a file. Returns the slot
 * (>= 0) for guestmem_unwatch, or -ENOSPC. */
int guestmem_watch(void *base, size_t len, struct guestmem_owner *owner);
void guestmem_unwatch(int slot);

#endif
