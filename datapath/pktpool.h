/* A worker's pool of packet buffers: fixed-size slots in one anonymous
 * mapping, handed out from a stack. Slots are carved on first use and
 * returned to the kernel (MADV_DONTNEED) when the worker idles, so memory
 * follows the traffic: only touched pages count. One thread owns a pool. */
#ifndef WEFT_DATAPATH_PKTPOOL_H
#define WEFT_DATAPATH_PKTPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "wg/packet.h"

struct dp_pktpool {
	uint8_t *base;
	size_t slot;             /* bytes per slot, a multiple of the page size */
	unsigned int count;      /* slots in the mapping */
	unsigned int carved;     /* slots handed out at least once */
	struct wg_pkt **free;    /* stack of returned slots */
	unsigned int n_free;
	unsigned int trimmed;    /* free[0, trimmed) hold no pages */
	uint8_t id;              /* stored in each packet's pool_id */
};

/* Slots large enough for cap bytes of packet data; 0 or -ENOMEM. */
int dp_pktpool_init(struct dp_pktpool *pool, uint8_t id, unsigned int count, size_t cap);
void dp_pktpool_destroy(struct dp_pktpool *pool);
/* A buffer with refs 1 and the payload at WG_PKT_HEADROOM; NULL when empty. */
struct wg_pkt *dp_pktpool_get(struct dp_pktpool *pool);
void dp_pktpool_put(struct dp_pktpool *pool, struct wg_pkt *p);
/* Whether a get would succeed. */
static inline int dp_pktpool_available(const struct dp_pktpool *pool)
{
	return pool->n_free || pool->carved < pool->count;
}
/* How many gets would succeed. */
static inline unsigned int dp_pktpool_room(const struct dp_pktpool *pool)
{
	return pool->n_free + (pool->count - pool->carved);
}
/* Gives the pages of every free slot back to the kernel. */
void dp_pktpool_trim(struct dp_pktpool *pool);

#endif
