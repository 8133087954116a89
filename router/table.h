/* The forwarding table: longest-prefix match over IPv4 and IPv6 prefixes,
 * each mapping to an opaque value (a WireGuard peer today; local ports and
 * the TUN later). It also serves as WireGuard's allowed IPs.
 * Not thread-safe by itself: the caller serialises writers against readers. */
#ifndef WEFT_ROUTER_TABLE_H
#define WEFT_ROUTER_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_table;

struct rt_table *rt_table_new(void);
void rt_table_free(struct rt_table *t);

/* family is AF_INET (addr 4 bytes) or AF_INET6 (16 bytes); host bits beyond
 * cidr are ignored (masked). Replaces the value of an existing prefix.
 * 0, -EINVAL (bad family/cidr) or -ENOMEM. */
int rt_insert(struct rt_table *t, int family, const void *addr, uint8_t cidr, void *value);
/* The value of exactly this prefix (host bits masked), not of a longer or
 * shorter one; NULL when the table does not hold it. */
void *rt_get(const struct rt_table *t, int family, const void *addr, uint8_t cidr);
/* Removes the prefix when it maps to value (any value when value is NULL).
 * 0 or -ENOENT. */
int rt_remove(struct rt_table *t, int family, const void *addr, uint8_t cidr, const void *value);
/* Removes every prefix that maps to value; returns how many. */
size_t rt_remove_value(struct rt_table *t, const void *value);
/* Longest-prefix match of a full address; NULL when nothing matches. */
void *rt_lookup(const struct rt_table *t, int family, const void *addr);
/* The same for n addresses of one family (addrs[i] -> out[i]), for bursts
 * of packets: the walks are interleaved so that their cache misses overlap,
 * about twice as fast per address as rt_lookup on a large table. */
void rt_lookup_batch(const struct rt_table *t, int family, const void *const *addrs,
		     size_t n, void **out);

/* Calls fn for every prefix mapping to value, IPv4 before IPv6, in
 * ascending address order. addr is the masked prefix. */
typedef void (*rt_walk_fn)(void *ctx, int family, const uint8_t *addr, uint8_t cidr);
void rt_walk_value(const struct rt_table *t, const void *value, rt_walk_fn fn, void *ctx);
size_t rt_count(const struct rt_table *t);

/* Growing the hash of host routes (/32, /128) ahead of inserts, so that
 * no insert rebuilds it while readers wait for the writer:
 * rt_grow_prepare, with t only read (readers beside it, no writer), copies
 * its host routes of family into a hash with room for that many more
 * (NULL: there is room already, or no memory); rt_grow_commit, with t held
 * exclusively, puts the copy in place if t's host routes of that family
 * have not changed since, and frees g either way. Lookups see the same
 * routes before and after. */
struct rt_grow;
struct rt_grow *rt_grow_prepare(const struct rt_table *t, int family, size_t room);
void rt_grow_commit(struct rt_table *t, struct rt_grow *g);

#endif
