/* The mesh's records (mesh/internal.h): one struct mesh_loc per mesh
 * address this host has heard of, in the mesh's hash table, and in the
 * forwarding table while it says where its address is. */
#include "mesh/internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "pkt/siphash.h"
#include "router/table.h"
#include "wg/device.h"

size_t mesh_addr_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

bool mesh_in_prefixes(const struct mesh *m, int family, const uint8_t *addr)
{
	for (size_t i = 0; i < m->cfg.n_prefixes; i++)
		if (ip_prefix_has_addr(&m->cfg.prefixes[i], family, addr))
			return true;
	return false;
}

/* The record table. */

/* Addresses are chosen by others (members' messages, guests' destinations):
 * SipHash-1-3 of the address (IPv4 zero-padded to 16 bytes) under the
 * mesh's random key, so none can be chosen to share a bucket. Family and
 * length are compared in the chain, not hashed. */
static size_t loc_hash(const struct mesh *m, int family, const uint8_t *addr, uint8_t cidr)
{
	uint64_t w[2] = { 0, 0 };

	memcpy(w, addr, mesh_addr_len(family));
	return (size_t)siphash13_2w(&m->hash_key, w[0], w[1]) & (m->n_buckets - 1);
}

struct mesh_loc *mesh_loc_find(struct mesh *m, int family, const uint8_t *addr, uint8_t cidr)
{
	if (!m->n_buckets)
		return NULL;
	for (struct mesh_loc *l = m->buckets[loc_hash(m, family, addr, cidr)]; l; l = l->hash_next)
		if (l->family == family && l->cidr == cidr && !memcmp(l->addr, addr, mesh_addr_len(family)))
			return l;
	return NULL;
}

static void buckets_grow(struct mesh *m)
{
	size_t n = m->n_buckets ? m->n_buckets * 2 : BUCKETS_MIN, old_n = m->n_buckets;
	struct mesh_loc **nb = calloc(n, sizeof(*nb)), **old = m->buckets;

	if (!nb)
		return; /* chains get longer, nothing breaks */
	m->buckets = nb;
	m->n_buckets = n;
	for (size_t i = 0; i < old_n; i++) {
		while (old[i]) {
			struct mesh_loc *l = old[i];
			size_t b = loc_hash(m, l->family, l->addr, l->cidr);

			old[i] = l->hash_next;
			l->hash_next = nb[b];
			nb[b] = l;
		}
	}
	free(old);
}

void mesh_loc_reserve(struct mesh *m, size_t n)
{
	while (m->n_locs + n >= m->n_buckets && m->n_locs + n < MESH_MAX_LOCS) {
		size_t before = m->n_buckets;

		buckets_grow(m);
		if (m->n_buckets == before)
			return; /* no memory: mesh_loc_get tries again */
	}
}

struct mesh_loc *mesh_loc_get(struct mesh *m, int family, const uint8_t *addr, uint8_t cidr)
{
	struct mesh_loc *l = mesh_loc_find(m, family, addr, cidr);
	size_t b;

	if (l)
		return l;
	if (m->n_locs >= MESH_MAX_LOCS) {
		mesh_count(m, records_full, 1);
		return NULL;
	}
	if (m->n_locs >= m->n_buckets)
		buckets_grow(m);
	if (!m->n_buckets || !(l = calloc(1, sizeof(*l))))
		return NULL;
	l->hop.kind = RT_HOP_REMOTE;
	l->family = family;
	l->cidr = cidr;
	memcpy(l->addr, addr, mesh_addr_len(family));
	b = loc_hash(m, family, addr, cidr);
	l->hash_next = m->buckets[b];
	m->buckets[b] = l;
	m->n_locs++;
	return l;
}

void mesh_timed_add(struct mesh *m, struct mesh_loc *l)
{
	if (l->timed)
		return;
	l->timed = true;
	l->timed_next = m->timed;
	m->timed = l;
}

void mesh_loc_publish(struct mesh *m, struct mesh_loc *l)
{
	void *there;

	if (l->in_table || atomic_load(&m->mode) == MESH_OFF)
		return; /* a mesh turned off routes nothing */
	/* A peer's allowed IP or a port's address stays what it is. */
	there = rt_get(m->dev->allowed_ips, l->family, l->addr, l->cidr);
	if (there && there != &l->hop) {
		mesh_count(m, refused_entry, 1);
		return;
	}
	if (!rt_insert(m->dev->allowed_ips, l->family, l->addr, l->cidr, &l->hop)) {
		l->in_table = true;
		m->n_located++;
	}
}

void mesh_loc_unpublish(struct mesh *m, struct mesh_loc *l)
{
	if (!l->in_table)
		return;
	rt_remove(m->dev->allowed_ips, l->family, l->addr, l->cidr, &l->hop);
	l->in_table = false;
	m->n_located--;
}

void mesh_queue_free(struct mesh *m, struct wg_pkt_queue *q)
{
	struct wg_pkt *p;

	while ((p = wg_pkt_queue_pop(q))) {
		m->queued--;
		free(p);
	}
}

void mesh_loc_drop_queues(struct mesh *m, struct mesh_loc *l)
{
	mesh_count(m, queue_dropped, l->out.len);
	mesh_count(m, spoofed, l->in.len);
	mesh_queue_free(m, &l->out);
	mesh_queue_free(m, &l->in);
}

void mesh_loc_free(struct mesh *m, struct mesh_loc *l)
{
	struct mesh_loc **pp = &m->buckets[loc_hash(m, l->family, l->addr, l->cidr)];

	for (; *pp; pp = &(*pp)->hash_next) {
		if (*pp == l) {
			*pp = l->hash_next;
			break;
		}
	}
	mesh_loc_drop_queues(m, l);
	m->n_locs--;
	free(l->lease);
	free(l);
}

void mesh_forget(struct mesh *m)
{
	for (struct mesh_loc *l = m->timed; l; l = l->timed_next)
		l->timed = false;
	m->timed = NULL;
	for (size_t b = 0; b < m->n_buckets; b++) {
		for (struct mesh_loc **pp = &m->buckets[b]; *pp;) {
			struct mesh_loc *l = *pp;

			mesh_loc_unpublish(m, l);
			if (!l->local_seq) {
				mesh_loc_free(m, l); /* *pp is the next one now */
				continue;
			}
			/* Ours: registered, nothing pending, no holder's lease. */
			mesh_loc_drop_queues(m, l);
			mesh_loc_set_lease(l, NULL);
			l->peer = l->prev = NULL;
			l->state = LOC_NONE;
			pp = &l->hash_next;
		}
	}
	memset(m->tenant_pending, 0, sizeof(m->tenant_pending));
}

/* Messages. */

void mesh_note_add(struct mesh *m, const uint8_t *to, bool all, enum mesh_type type,
		 const struct mesh_item *item)
{
	struct mesh_note *n;

	if (atomic_load(&m->mode) == MESH_OFF)
		return; /* a mesh turned off says nothing */
	if (m->n_outbox == OUTBOX_MAX) {
		mesh_count(m, rate_limited, 1);
		return;
	}
	n = &m->outbox[m->n_outbox++];
	memset(n, 0, sizeof(*n));
	if (to)
		memcpy(n->peer, to, WG_KEY_LEN);
	n->all = all;
	n->type = type;
	n->item = *item;
}

void mesh_item_of(const struct mesh_loc *l, struct mesh_item *it)
{
	memset(it, 0, sizeof(*it));
	it->family = l->family;
	it->cidr = l->cidr;
	memcpy(it->addr, l->addr, mesh_addr_len(l->family));
}

void mesh_item_holder(struct mesh_item *it, const uint8_t *key, uint64_t seq)
{
	it->has_holder = key != NULL;
	if (key)
		memcpy(it->holder, key, WG_KEY_LEN);
	it->seq = seq;
}
