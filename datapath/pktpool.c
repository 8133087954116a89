/* Packet buffer pools. */
#include "datapath/pktpool.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int dp_pktpool_init(struct dp_pktpool *pool, uint8_t id, unsigned int count, size_t cap)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	*pool = (struct dp_pktpool){ .id = id, .count = count };
	/* Whole pages per slot, so a free slot can be trimmed on its own. */
	pool->slot = (sizeof(struct wg_pkt) + cap + page - 1) & ~(page - 1);
	pool->free = calloc(count, sizeof(*pool->free));
	pool->base = mmap(NULL, pool->slot * count, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!pool->free || pool->base == MAP_FAILED) {
		pool->base = NULL;
		dp_pktpool_destroy(pool);
		return -ENOMEM;
	}
	return 0;
}

void dp_pktpool_destroy(struct dp_pktpool *pool)
{
	if (pool->base)
		munmap(pool->base, pool->slot * pool->count);
	free(pool->free);
	pool->base = NULL;
	pool->free = NULL;
}

struct wg_pkt *dp_pktpool_get(struct dp_pktpool *pool)
{
	struct wg_pkt *p;

	if (pool->n_free) {
		p = pool->free[--pool->n_free];
		if (pool->trimmed > pool->n_free)
			pool->trimmed = pool->n_free;
	} else if (pool->carved < pool->count) {
		p = (struct wg_pkt *)(pool->base + pool->slot * pool->carved++);
	} else {
		return NULL;
	}
	/* The header may have been trimmed away: write all of it. */
	p->next = NULL;
	p->off = WG_PKT_FRONT;
	p->egress = NULL;
	p->len = 0;
	p->cap = (uint32_t)(pool->slot - sizeof(struct wg_pkt));
	p->pooled = true;
	p->pool_id = pool->id;
	p->refs = 1;
	return p;
}

void dp_pktpool_put(struct dp_pktpool *pool, struct wg_pkt *p)
{
	pool->free[pool->n_free++] = p;
}

void dp_pktpool_trim(struct dp_pktpool *pool)
{
	/* The stack's bottom is reused last, so trimmed slots stay there. */
	for (unsigned int i = pool->trimmed; i < pool->n_free; i++)
		madvise(pool->free[i], pool->slot, MADV_DONTNEED);
	pool->trimmed = pool->n_free;
}
