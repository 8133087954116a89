/* The forwarding table's insides (router/table.c), shared with its walk
 * (router/walk.c). Private to those two. */
#ifndef WEFT_ROUTER_TABLE_INTERNAL_H
#define WEFT_ROUTER_TABLE_INTERNAL_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pkt/siphash.h"

enum {
	/* The slot array starts at 2^8 slots and grows four bits at a time
	 * whenever a family holds more prefixes than slots, up to 2^20 slots
	 * (16 MiB, calloc'ed: only touched pages cost memory). */
	SLOT_BITS_MIN = 8,
	SLOT_BITS_STEP = 4,
	SLOT_BITS_MAX = 20,
	BATCH = 32,             /* walks interleaved by rt_lookup_batch */
	POOL_FIRST_CHUNK = 64,   /* nodes; chunks double up to POOL_MAX_CHUNK */
	POOL_MAX_CHUNK = 16384,
};

struct rt_node {
	struct rt_node *child[2];
	void *value;       /* NULL: a branch joining two subtries */
	uint64_t key[2];   /* host order, zero beyond cidr */
	uint8_t cidr;
};

struct rt_slot {
	struct rt_node *root;             /* prefixes of >= slot_bits bits */
	const struct rt_node *short_node; /* longest shorter prefix over the slot */
};

/* A host route in the exact-match hash; value NULL: an empty slot. */
struct rt_host {
	uint64_t key[2];
	void *value;
};

struct rt_hosts {
	struct rt_host *slots;
	size_t mask;              /* slots - 1 (a power of two minus one); 0: none */
	size_t count;
	struct siphash_key key;   /* the hash's: random, per table */
	uint64_t changes;         /* entries added, replaced, removed: for rt_grow_commit */
};

struct rt_family {
	struct rt_slot *slots;    /* NULL until the first insert */
	struct rt_node *short_root;
	struct rt_hosts hosts;    /* prefixes of `bits` bits */
	size_t count;             /* prefixes in the tries */
	size_t grow_at;           /* count above which to try more slots */
	int af;
	uint8_t bits;
	uint8_t slot_bits;        /* prefixes shorter than this are "short" */
};

struct rt_chunk {
	struct rt_chunk *next;
	uint32_t used, cap;
	struct rt_node nodes[];
};

struct rt_table {
	struct rt_family fam[2]; /* IPv4, IPv6: the order rt_walk_value reports */
	struct rt_chunk *chunks;
	struct rt_node *free_nodes; /* linked through child[0] */
};

static inline void store_key(const struct rt_family *f, const uint64_t k[2], uint8_t out[16])
{
	if (f->bits == 32) {
		uint32_t a = htobe32((uint32_t)(k[0] >> 32));

		memcpy(out, &a, 4);
	} else {
		uint64_t w[2] = { htobe64(k[0]), htobe64(k[1]) };

		memcpy(out, w, 16);
	}
}

static inline unsigned int slot_of(const struct rt_family *f, const uint64_t k[2])
{
	return (unsigned int)(k[0] >> (64 - f->slot_bits));
}

static inline unsigned int n_slots(const struct rt_family *f)
{
	return 1u << f->slot_bits;
}

#endif
