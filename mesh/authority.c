/* Who may claim an address (docs/mesh.md, "Leases"): with a lease key set
 * for the mesh, this host's own leases, which go with what it says of the
 * addresses it holds, and the checks of the leases on what others say. The
 * wire form and the signature are mesh/lease.c's; the rules of who is
 * believed are mesh/mesh.c's handle, which asks these. */
#include "mesh/mesh.h"
#include "mesh/internal.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "pkt/siphash.h"
#include "wg/clock.h"
#include "wg/device.h"

/* Whether the entry says that a host holds its address. */
bool mesh_claims_holder(const struct mesh_note *n)
{
	return n->type == MESH_ANNOUNCE || n->type == MESH_MOVED || n->item.has_holder;
}

/* With a lease key: whether the entry's lease (checked by mesh_run) is for
 * its address and names holder. */
bool mesh_lease_backs(const struct mesh_note *n, const struct wg_peer *holder)
{
	const struct mesh_item *it = &n->item;
	struct ip_prefix a = { .family = (uint8_t)it->family, .cidr = it->cidr };

	memcpy(a.addr, it->addr, sizeof(a.addr));
	return n->lease_valid && it->has_lease && mesh_lease_covers(&it->lease, &a) &&
	       !memcmp(it->lease.holder, holder->public_key, WG_KEY_LEN);
}

bool mesh_lease_upkeep(struct mesh *m, struct mesh_loc *l, uint64_t wall, uint64_t now)
{
	if (!l->lease || l->lease->expires > wall)
		return false;
	if (l->peer && l->state == LOC_RESOLVED) {
		mesh_count(m, lease_expired, 1);
		mesh_loc_unpublish(m, l);
		mesh_loc_set_lease(l, NULL);
		l->peer = NULL;
		l->state = LOC_NONE;
		l->deadline = now;
		mesh_timed_add(m, l); /* freed by the next tick */
		return true;
	}
	if (l->state == LOC_NONE && !l->timed && !l->in_table && !l->out.len && !l->in.len) {
		mesh_loc_free(m, l); /* a record kept for its lease */
		return true;
	}
	return false;
}

void mesh_known_leases(struct mesh *m, struct mesh_note *in, size_t n)
{
	uint64_t wall = wg_clock_realtime_ns();

	for (size_t i = 0; i < n; i++) {
		const struct mesh_item *it = &in[i].item;
		const struct mesh_loc *l;

		in[i].lease_valid = false;
		if (!m->cfg.has_lease_key || !it->has_lease)
			continue;
		l = mesh_loc_find(m, it->family, it->addr, it->cidr);
		in[i].lease_valid = l && l->lease && mesh_lease_equal(l->lease, &it->lease) &&
				    l->lease->expires > wall;
	}
}

void mesh_check_leases(struct mesh_note *in, size_t n, const uint8_t *key)
{
	uint64_t wall = wg_clock_realtime_ns();

	for (size_t i = 0; i < n; i++) {
		if (!key)
			in[i].lease_valid = false;
		else if (!in[i].lease_valid && in[i].item.has_lease)
			in[i].lease_valid = mesh_lease_check(&in[i].item.lease, key, wall,
							     MESH_LEASE_SKEW_NS) == MESH_LEASE_VALID;
	}
}

void mesh_item_lease(struct mesh *m, struct mesh_item *it, const struct mesh_lease *lease)
{
	const uint8_t *holder = it->has_holder ? it->holder : mesh_self_key(m);

	it->has_lease = false;
	if (!m->cfg.has_lease_key || !lease || !holder ||
	    memcmp(lease->holder, holder, WG_KEY_LEN) || lease->expires <= wg_clock_realtime_ns())
		return;
	it->has_lease = true;
	it->lease = *lease;
}

bool mesh_loc_set_lease(struct mesh_loc *l, const struct mesh_lease *lease)
{
	if (!lease) {
		free(l->lease);
		l->lease = NULL;
		return true;
	}
	if (!l->lease && !(l->lease = malloc(sizeof(*l->lease))))
		return false;
	*l->lease = *lease;
	return true;
}

const struct mesh_lease *mesh_known_lease(struct mesh *m, const struct mesh_loc *l)
{
	const struct mesh_lease *own = l->local_seq ? mesh_own_lease(m, l->family, l->addr) : NULL;

	if (!own || (l->lease && mesh_lease_newer(l->lease, own)))
		return l->lease;
	return own;
}

bool mesh_peer_is_newer(struct mesh *m, const struct mesh_loc *l)
{
	const struct mesh_lease *own = mesh_own_lease(m, l->family, l->addr);

	if (!l->peer)
		return false;
	if (m->cfg.has_lease_key && own && l->lease)
		return mesh_lease_newer(l->lease, own);
	return l->seq > l->local_seq;
}

/* This host's leases are found by address through own_index, open
 * addressing over MESH_OWN_SLOTS (twice the leases: short probes) keyed by
 * the records' SipHash key, as addresses others chose must not collide. */
static size_t own_slot(const struct mesh *m, const uint8_t addr[16])
{
	uint64_t w[2];

	memcpy(w, addr, sizeof(w));
	return (size_t)siphash13_2w(&m->hash_key, w[0], w[1]) & (MESH_OWN_SLOTS - 1);
}

static void own_insert(struct mesh *m, size_t i) WG_REQUIRES(m->lock)
{
	size_t s = own_slot(m, m->own[i].addr);

	while (m->own_index[s])
		s = (s + 1) & (MESH_OWN_SLOTS - 1);
	m->own_index[s] = (uint16_t)(i + 1);
}

static void own_reindex(struct mesh *m) WG_REQUIRES(m->lock)
{
	if (!m->own_index)
		return;
	memset(m->own_index, 0, MESH_OWN_SLOTS * sizeof(*m->own_index));
	for (size_t i = 0; i < m->n_own; i++)
		own_insert(m, i);
}

void mesh_own_clear(struct mesh *m)
{
	m->n_own = 0;
	own_reindex(m);
}

const struct mesh_lease *mesh_own_lease(struct mesh *m, int family, const uint8_t *addr)
{
	uint8_t a[16] = { 0 };

	if (!m->n_own)
		return NULL;
	memcpy(a, addr, mesh_addr_len(family));
	for (size_t s = own_slot(m, a); m->own_index[s]; s = (s + 1) & (MESH_OWN_SLOTS - 1)) {
		const struct mesh_lease *l = &m->own[m->own_index[s] - 1];

		if (l->family == family && !memcmp(l->addr, a, sizeof(a)))
			return l;
	}
	return NULL;
}

/* Why mesh_lease_add refuses a lease the key's check gave v, or NULL. */
static const char *verdict_refusal(enum mesh_lease_verdict v)
{
	switch (v) {
	case MESH_LEASE_FORGED:
		return "the lease is not signed by the mesh's lease key";
	case MESH_LEASE_EARLY:
		return "the lease is issued in the future";
	case MESH_LEASE_EXPIRED:
		return "the lease has expired";
	case MESH_LEASE_VALID:
		break;
	}
	return NULL;
}

/* Why mesh_lease_add refuses a signed lease for this host, or NULL. */
static const char *host_refusal(struct mesh *m, const struct mesh_lease *l)
	WG_REQUIRES(m->lock) WG_REQUIRES_SHARED(m->dev->lock)
{
	const uint8_t *self = mesh_self_key(m);

	if (!self || memcmp(l->holder, self, WG_KEY_LEN))
		return "the lease names another host";
	if (!mesh_in_prefixes(m, l->family, l->addr))
		return "the lease's address is in no mesh prefix";
	return NULL;
}

void mesh_drop_expired_own(struct mesh *m, uint64_t wall)
{
	size_t k = 0;

	for (size_t i = 0; i < m->n_own; i++)
		if (m->own[i].expires > wall)
			m->own[k++] = m->own[i];
	if (k == m->n_own)
		return;
	m->n_own = k;
	own_reindex(m);
}

int mesh_lease_add(struct wg_device *dev, const struct mesh_lease *leases, size_t n,
		   const char **why)
{
	struct mesh *m = dev->mesh;
	uint64_t wall = wg_clock_realtime_ns();
	uint8_t key[MESH_LEASE_KEY_SIZE];
	struct mesh_note *out;
	size_t n_out, more = 0;
	bool has_key;
	int err = 0;

	/* The signatures are checked with no lock held, as mesh_run does (the
	 * workers would wait for them under the write lock); whether the key
	 * is still the same is checked after. */
	wg_mutex_lock(&m->lock);
	has_key = m->cfg.has_lease_key;
	memcpy(key, m->cfg.lease_key, sizeof(key));
	wg_mutex_unlock(&m->lock);
	if (!has_key) {
		*why = "the mesh has no lease key (weft mesh set lease-key KEY)";
		return -ENOKEY;
	}
	for (size_t i = 0; i < n; i++)
		if ((*why = verdict_refusal(mesh_lease_check(&leases[i], key, wall,
							     MESH_LEASE_SKEW_NS))))
			return -EINVAL;
	mesh_lock(m);
	if (!m->cfg.has_lease_key || memcmp(key, m->cfg.lease_key, sizeof(key))) {
		*why = "the mesh's lease key changed meanwhile";
		err = -EAGAIN;
		goto out;
	}
	mesh_drop_expired_own(m, wall);
	for (size_t i = 0; i < n; i++) { /* all of them, before any is kept */
		if ((*why = host_refusal(m, &leases[i]))) {
			err = -EINVAL;
			goto out;
		}
		more += !mesh_own_lease(m, leases[i].family, leases[i].addr);
	}
	if (m->n_own + more > MESH_OWN_LEASES) {
		*why = "this host would hold more than 4096 leases";
		err = -ENOSPC;
		goto out;
	}
	if (!m->own) {
		m->own = calloc(MESH_OWN_LEASES, sizeof(*m->own));
		m->own_index = calloc(MESH_OWN_SLOTS, sizeof(*m->own_index));
		if (!m->own || !m->own_index) {
			free(m->own);
			free(m->own_index);
			m->own = NULL;
			m->own_index = NULL;
			err = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct mesh_lease *l = &leases[i];
		struct mesh_lease *have = (struct mesh_lease *)mesh_own_lease(m, l->family, l->addr);
		struct mesh_loc *loc;

		if (have && !mesh_lease_newer(l, have))
			continue; /* the one held is as new */
		if (!have) {
			assert(m->n_own < MESH_OWN_LEASES); /* counted above */
			m->own[m->n_own] = *l;
			own_insert(m, m->n_own++);
		} else {
			*have = *l;
		}
		/* Registered here: the others hear it with its lease now. */
		loc = mesh_loc_find(m, l->family, l->addr, (uint8_t)(mesh_addr_len(l->family) * 8));
		if (loc && loc->local_seq)
			mesh_announce(m, loc, NULL);
	}
out:
	out = mesh_take_notes(m, &n_out);
	mesh_unlock(m);
	mesh_send_notes(m, out, n_out);
	free(out);
	return err;
}
