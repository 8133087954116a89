/* The mesh's budgets: token buckets (struct rate) and the peers' mesh
 * state, each with its learn and NOT_HERE buckets and its tenant slot for
 * the lookups its packets make (docs/mesh.md, "Budgets per tenant"). */
#include "mesh/internal.h"

#include <stdlib.h>

#include "pkt/siphash.h"
#include "wg/clock.h"
#include "wg/peer.h"

void mesh_rate_init(struct rate *r, unsigned int per_sec, unsigned int burst)
{
	r->cost = NSEC_PER_SEC / per_sec;
	r->burst = r->cost * burst;
	r->credit = r->burst;
	r->last = wg_clock_now();
}

bool mesh_rate_take(struct rate *r, uint64_t now)
{
	r->credit += now - r->last;
	r->last = now;
	if (r->credit > r->burst)
		r->credit = r->burst;
	if (r->credit < r->cost)
		return false;
	r->credit -= r->cost;
	return true;
}

/* A peer tenant slot of its own for mp, else (all taken) one shared by a
 * keyed hash of the key, which a peer cannot choose its neighbours by. */
static void peer_slot_take(struct mesh *m, struct mesh_peer *mp, const uint8_t *key)
	WG_REQUIRES(m->lock)
{
	for (size_t w = 0; w < MESH_PEER_TENANTS / 64; w++) {
		if (m->peer_slots[w] == UINT64_MAX)
			continue;
		unsigned int bit = (unsigned int)__builtin_ctzll(~m->peer_slots[w]);

		m->peer_slots[w] |= 1ULL << bit;
		mp->tenant = (uint16_t)(MESH_TENANT_PEER0 + w * 64 + bit);
		mp->own_slot = true;
		return;
	}
	mp->tenant = (uint16_t)(MESH_TENANT_PEER0 +
				siphash(&m->hash_key, key, WG_KEY_LEN, 1, 3) % MESH_PEER_TENANTS);
}

struct mesh_peer *mesh_peer_of(struct mesh *m, struct wg_peer *peer)
{
	struct mesh_peer *mp = peer->mesh;

	if (mp || !(mp = calloc(1, sizeof(*mp))))
		return mp;
	mesh_rate_init(&mp->learn, LEARN_PER_SEC, LEARN_BURST);
	mesh_rate_init(&mp->not_here, PEER_NOT_HERE_PER_SEC, PEER_NOT_HERE_BURST);
	peer_slot_take(m, mp, peer->public_key);
	peer->mesh = mp;
	return mp;
}

void mesh_peer_free(struct mesh *m, struct wg_peer *peer)
{
	struct mesh_peer *mp = peer->mesh;
	unsigned int slot;

	if (!mp)
		return;
	/* Its lookups under way stay counted against the slot until they end
	 * (every tick recounts them): the peer that takes the slot next has
	 * them against its budget until then. */
	slot = mp->tenant - MESH_TENANT_PEER0;
	if (mp->own_slot)
		m->peer_slots[slot / 64] &= ~(1ULL << (slot % 64));
	free(mp);
	peer->mesh = NULL;
}

bool mesh_peer_tenant(struct mesh *m, struct wg_peer *peer, unsigned int *tenant)
{
	struct mesh_peer *mp = mesh_peer_of(m, peer);

	if (!mp)
		return false;
	*tenant = mp->tenant;
	return true;
}
