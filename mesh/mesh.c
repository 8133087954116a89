/* The mesh: discovery of which host holds a VM address, registration and
 * moves (mesh/mesh.h, docs/mesh.md).
 *
 * One record (struct mesh_loc) per mesh address this host has heard of,
 * in a hash table of the mesh's. A record that says where its address is
 * (or that it is nowhere) is also the forwarding-table value of the
 * address, so workers resolve a VM address with the one lookup they do
 * anyway. Workers never change the table: a miss, a source to re-check or
 * a message is handed to the mesh thread under the mesh lock, and the
 * thread does the rest holding the device write lock, then the mesh lock
 * (always in that order), and sends its messages after dropping both.
 * Packets it releases go back to worker 0, which routes them as if they
 * had just arrived. */
#include "mesh/mesh.h"
#include "mesh/internal.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "mesh/msg.h"
#include "port/ports.h"
#include "mesh/rendezvous.h"
#include "router/table.h"
#include "wg/clock.h"
#include "wg/device.h"
#include "wg/log.h"
#include "wg/peer.h"
#include "wg/send.h"

/* Device lock held: this host's public key, or NULL. */
const uint8_t *mesh_self_key(struct mesh *m)
	WG_REQUIRES_SHARED(m->dev->lock)
{
	return m->dev->identity->has_identity ? m->dev->identity->static_public : NULL;
}

/* Device lock held: the home host of l's address among this host and its
 * peers: NULL for this host, else the peer. */
struct wg_peer *mesh_home_of(struct mesh *m, const struct mesh_loc *l, bool *self)
	WG_REQUIRES_SHARED(m->dev->lock)
{
	struct wg_device *dev = m->dev;
	const uint8_t *me = mesh_self_key(m);
	uint64_t best = 0;
	struct wg_peer *home = NULL;

	*self = me != NULL;
	if (me)
		best = rdv_weight(me, l->family, l->addr, l->cidr);
	for (struct wg_peer *p = dev->peers_head; p; p = p->list_next) {
		uint64_t w = rdv_weight(p->public_key, l->family, l->addr, l->cidr);

		if (w > best || (!*self && !home)) {
			best = w;
			home = p;
			*self = false;
		}
	}
	return home;
}

static bool is_local(struct mesh *m, int family, const uint8_t *addr)
{
	struct rt_hop *hop = rt_lookup(m->dev->allowed_ips, family, addr);

	return hop && hop->kind == RT_HOP_PORT;
}

uint64_t mesh_next_seq(struct mesh *m)
{
	uint64_t now = wg_clock_realtime_ns();

	m->last_seq = now > m->last_seq ? now : m->last_seq + 1;
	return m->last_seq;
}

/* Releases l's waiting packets: those to it for routing, those from its
 * confirmed holder (or from the holder before a move, still in flight) for
 * delivery. Others stay. */
void mesh_release(struct mesh *m, struct mesh_loc *l)
{
	struct wg_pkt_queue keep = { 0 };
	struct wg_pkt *p;
	unsigned int n = 0;
	bool prev_ok = l->prev && wg_clock_now() < l->prev_until;

	while ((p = wg_pkt_queue_pop(&l->out))) {
		wg_pkt_queue_push(&m->rel_out, p);
		m->queued--;
		mesh_count(m, flushed, 1);
		n++;
	}
	while ((p = wg_pkt_queue_pop(&l->in))) {
		if ((l->peer && p->egress == l->peer) || (prev_ok && p->egress == l->prev)) {
			p->egress = NULL;
			wg_pkt_queue_push(&m->rel_in, p);
			m->queued--;
			mesh_count(m, verified, 1);
			n++;
		} else {
			wg_pkt_queue_push(&keep, p);
		}
	}
	l->in = keep;
	if (n)
		atomic_fetch_add(&m->n_released, n);
}

static void go_negative(struct mesh *m, struct mesh_loc *l, uint64_t now)
	WG_REQUIRES(m->lock, m->dev->lock)
{
	mesh_count(m, negative, 1);
	mesh_loc_drop_queues(m, l);
	l->peer = NULL;
	l->state = LOC_NEGATIVE;
	l->deadline = now + NEGATIVE_MS * NSEC_PER_MSEC;
	mesh_loc_publish(m, l);
	mesh_timed_add(m, l);
}

/* Both locks held: holder (a peer) holds l's address since seq, by lease
 * (with a lease key: checked by the caller, else NULL). A lease newer than
 * the one known wins whatever the stamps say; an older one loses; the same
 * one, or none, leaves it to the stamps. Returns the holder it replaced
 * (NULL: none, or the same). */
static struct wg_peer *learn(struct mesh *m, struct mesh_loc *l, struct wg_peer *holder,
			     uint64_t seq, const struct mesh_lease *lease, uint64_t now)
	WG_REQUIRES(m->lock, m->dev->lock)
{
	struct wg_peer *old = l->peer;
	const struct mesh_lease *known = mesh_known_lease(m, l);
	bool newer = false;

	if (lease && known) {
		if (mesh_lease_newer(known, lease)) {
			mesh_count(m, refused_lease, 1); /* replayed, or late */
			return NULL;
		}
		newer = mesh_lease_newer(lease, known);
	}
	if (!newer && l->peer && seq < l->seq)
		return NULL; /* older news */
	if (!newer && l->local_seq && seq <= l->local_seq)
		return NULL; /* our own registration is newer */
	if (lease && !mesh_loc_set_lease(l, lease))
		return NULL;
	l->peer = holder;
	l->seq = seq;
	l->confirmed = now;
	l->expiring = false;
	if (old && old != holder) {
		l->prev = old;
		l->prev_until = now + GRACE_MS * NSEC_PER_MSEC;
	}
	if (l->state == LOC_PENDING && l->asked_at) {
		mesh_count(m, discoveries, 1);
		mesh_count(m, discovery_ns, now - l->asked_at);
	}
	l->asked_at = 0;
	l->state = LOC_RESOLVED;
	if (!is_local(m, l->family, l->addr))
		mesh_loc_publish(m, l);
	mesh_count(m, resolved, 1);
	mesh_release(m, l);
	/* Sources the answer did not confirm wait for the other answers
	 * (multicast) or the last try, then are dropped. */
	if (l->in.len) {
		l->state = LOC_VERIFY;
		if (!l->timed) {
			l->tries = MAX_TRIES;
			l->deadline = now + RETRY_MS * NSEC_PER_MSEC;
			mesh_timed_add(m, l);
		}
	}
	return old != holder ? old : NULL;
}

/* Sends a solicitation for l (none when this host is the home itself:
 * then only an ANNOUNCE on its way can answer), within the budget of the
 * tenant whose lookup it is and the host's; false when a budget said no
 * (then the try does not count). Both locks held. */
static bool solicit(struct mesh *m, struct mesh_loc *l, uint64_t now)
	WG_REQUIRES(m->lock, m->dev->lock)
{
	struct mesh_item it;
	struct wg_peer *home;
	bool self;

	if (!mesh_rate_take(&m->tenant_solicit[l->tenant], now) ||
	    !mesh_rate_take(&m->solicit_rate, now)) {
		mesh_count(m, rate_limited, 1);
		return false;
	}
	mesh_item_of(l, &it);
	if (atomic_load(&m->mode) == MESH_MULTICAST) {
		mesh_note_add(m, NULL, true, MESH_SOLICIT, &it);
		mesh_count(m, solicit_sent, m->dev->n_peers);
		return true;
	}
	home = mesh_home_of(m, l, &self);
	if (self || !home)
		return true;
	mesh_note_add(m, home->public_key, false, MESH_SOLICIT, &it);
	mesh_count(m, solicit_sent, 1);
	return true;
}

/* Both locks held: a SOLICIT from `from` for the item. */
static void answer(struct mesh *m, const uint8_t *from, const struct mesh_item *it)
	WG_REQUIRES(m->lock, m->dev->lock)
{
	struct mesh_loc *l = mesh_loc_find(m, it->family, it->addr, it->cidr);
	bool local = is_local(m, it->family, it->addr);
	const struct mesh_lease *lease = NULL;
	struct mesh_item out = *it;

	mesh_count(m, solicit_received, 1);
	if (local && (!l || !mesh_peer_is_newer(m, l))) {
		mesh_item_holder(&out, mesh_self_key(m), l && l->local_seq ? l->local_seq : 1);
		lease = mesh_own_lease(m, it->family, it->addr);
	} else if (atomic_load(&m->mode) == MESH_MULTICAST) {
		return; /* only the holder answers */
	} else if (l && l->peer) { /* resolved (or being re-checked): as the home */
		mesh_item_holder(&out, l->peer->public_key, l->seq);
		lease = l->lease;
	} else {
		mesh_item_holder(&out, NULL, 0);
	}
	mesh_item_lease(m, &out, lease);
	mesh_note_add(m, from, false, MESH_ADVERT, &out);
	mesh_count(m, advert_sent, 1);
}

/* The home learned that holder, the sender of an ANNOUNCE, holds l's
 * address instead of prev (a peer, or NULL for this host): it tells the new
 * holder whom packets forwarded for the address will come from (an ADVERT
 * naming the previous holder with its older stamp), then the previous
 * holder where the address went (MOVED), in that order, as the previous
 * holder forwards only once it knows. */
static void hand_over(struct mesh *m, struct mesh_loc *l, struct wg_peer *holder,
		      struct wg_peer *prev, uint64_t prev_seq, const struct mesh_lease *prev_lease)
	WG_REQUIRES(m->lock, m->dev->lock)
{
	struct mesh_item it;

	mesh_item_of(l, &it);
	mesh_item_holder(&it, prev ? prev->public_key : mesh_self_key(m), prev_seq);
	mesh_item_lease(m, &it, prev_lease);
	mesh_note_add(m, holder->public_key, false, MESH_ADVERT, &it);
	mesh_count(m, advert_sent, 1);
	if (!prev)
		return; /* this host forwards when its VM goes (mesh_local_removed) */
	mesh_item_holder(&it, holder->public_key, l->seq);
	mesh_item_lease(m, &it, l->lease);
	mesh_note_add(m, prev->public_key, false, MESH_MOVED, &it);
	mesh_count(m, moved_sent, 1);
}

static bool host_item(const struct mesh_item *it)
{
	return it->cidr == (it->family == AF_INET ? 32 : 128);
}

/* Whether an ADVERT from `from` naming holder answers a question this host
 * asked about l: the home host's answer in unicast mode; in multicast, the
 * holder's own. */
static bool asked(struct mesh *m, struct mesh_loc *l, const struct wg_peer *from,
		  const struct wg_peer *holder, bool has_holder)
	WG_REQUIRES(m->lock, m->dev->lock)
{
	bool self;

	if (l->state != LOC_PENDING && l->state != LOC_VERIFY)
		return false;
	if (atomic_load(&m->mode) == MESH_MULTICAST)
		return has_holder && holder == from;
	return mesh_home_of(m, l, &self) == from && !self;
}

/* A MOVED comes from the address's home host (unicast mode only). */
static bool from_home(struct mesh *m, struct mesh_loc *l, const struct wg_peer *from)
	WG_REQUIRES(m->lock, m->dev->lock)
{
	bool self;

	return atomic_load(&m->mode) == MESH_UNICAST && mesh_home_of(m, l, &self) == from && !self;
}

/* A received entry. Who may say what (docs/mesh.md, "Who is believed"):
 * only host addresses are learned; no stamp from further ahead than
 * SEQ_AHEAD_MS of this host's clock; an ANNOUNCE from anyone (the sender
 * is the holder); an ADVERT only as the answer to a question asked; a
 * MOVED only from the home host; a NOT_HERE only from the recorded holder;
 * with a lease key, a claim that a host holds an address only with its
 * lease. Only an ANNOUNCE makes a record. */
static void handle(struct mesh *m, struct wg_peer *from, const struct mesh_note *n, uint64_t now)
	WG_REQUIRES(m->lock, m->dev->lock)
{
	const struct mesh_item *it = &n->item;
	const struct mesh_lease *lease = m->cfg.has_lease_key ? &it->lease : NULL, *known;
	struct mesh_lease prev_lease;
	struct wg_peer *holder = from, *old;
	struct mesh_loc *l;
	uint64_t prev_seq;
	bool self;

	if (!mesh_in_prefixes(m, it->family, it->addr)) {
		mesh_count(m, malformed, 1);
		return;
	}
	if (!host_item(it)) {
		mesh_count(m, refused_prefix, 1);
		return;
	}
	if (it->seq > wg_clock_realtime_ns() + SEQ_AHEAD_MS * NSEC_PER_MSEC) {
		mesh_count(m, refused_seq, 1);
		return;
	}
	if (n->type == MESH_SOLICIT) {
		answer(m, n->peer, it);
		return;
	}
	if (it->has_holder) {
		holder = wg_device_lookup_peer(m->dev, it->holder);
		if (!holder)
			return; /* ourselves, or a host we have no tunnel to */
	}
	if (lease && mesh_claims_holder(n) && !mesh_lease_backs(n, holder)) {
		mesh_count(m, refused_lease, 1);
		return;
	}
	l = mesh_loc_find(m, it->family, it->addr, it->cidr);
	if (!l && n->type == MESH_ANNOUNCE) {
		/* A new record: within what the sender may make. */
		struct mesh_peer *mp = mesh_peer_of(m, from);

		if (mp && !mesh_rate_take(&mp->learn, now)) {
			mesh_count(m, learn_limited, 1);
			return;
		}
		l = mesh_loc_get(m, it->family, it->addr, it->cidr);
	}
	if (!l)
		return;
	switch (n->type) {
	case MESH_ADVERT:
		mesh_count(m, advert_received, 1);
		if (l->local_seq && it->has_holder && it->seq <= l->local_seq) {
			/* From the home (hand_over): the host our VM's address
			 * was at before, whose forwarded packets we take for a
			 * while. */
			if (from_home(m, l, from)) {
				l->prev = holder;
				l->prev_until = now + GRACE_MS * NSEC_PER_MSEC;
			} else {
				mesh_count(m, refused_sender, 1);
			}
		} else if (!asked(m, l, from, holder, it->has_holder))
			mesh_count(m, refused_sender, 1);
		else if (it->has_holder)
			learn(m, l, holder, it->seq, lease, now);
		else if (l->state == LOC_PENDING && !l->peer && l->tries >= MAX_TRIES)
			go_negative(m, l, now); /* else the next try may find an ANNOUNCE there */
		break;
	case MESH_ANNOUNCE:
	case MESH_MOVED:
		if (n->type == MESH_ANNOUNCE) {
			mesh_count(m, announce_received, 1);
		} else {
			mesh_count(m, moved_received, 1);
			if (!from_home(m, l, from)) {
				mesh_count(m, refused_sender, 1);
				break;
			}
		}
		/* The holder before: a peer, or this host (a local VM); and
		 * its lease, which the new holder is shown. */
		old = l->peer;
		prev_seq = old ? l->seq : l->local_seq;
		known = mesh_known_lease(m, l);
		if (known)
			prev_lease = *known;
		learn(m, l, holder, it->seq, lease, now);
		if (n->type == MESH_ANNOUNCE && atomic_load(&m->mode) == MESH_UNICAST &&
		    l->peer == holder && old != holder && (old || prev_seq) &&
		    (mesh_home_of(m, l, &self), self))
			hand_over(m, l, holder, old, prev_seq, known ? &prev_lease : NULL);
		break;
	case MESH_NOT_HERE:
		mesh_count(m, not_here_received, 1);
		if (l->peer != from) {
			/* Not the host we send it to: a withdrawal to every
			 * member concerns others; a redirect is refused. */
			if (it->has_holder)
				mesh_count(m, refused_sender, 1);
		} else if (it->has_holder && holder != from) {
			learn(m, l, holder, it->seq, lease, now);
		} else if (!it->has_holder && l->state == LOC_RESOLVED) {
			/* Stale: forgotten; the next packet to it asks again. */
			mesh_loc_unpublish(m, l);
			l->peer = NULL;
			l->state = LOC_NONE;
			l->deadline = now;
			mesh_timed_add(m, l);
		}
		break;
	case MESH_SOLICIT:
		break;
	}
}

/* Both locks held: one record's deadline passed. Returns whether it stays
 * on the timed list. */
static bool expire(struct mesh *m, struct mesh_loc *l, uint64_t now)
	WG_REQUIRES(m->lock, m->dev->lock)
{
	switch (l->state) {
	case LOC_PENDING:
	case LOC_VERIFY:
		if (l->tries < MAX_TRIES) {
			if (solicit(m, l, now))
				l->tries++;
			/* An old record's re-check is in no hurry: its packets
			 * still go to the holder, and a late answer must not
			 * make it forgotten. */
			l->deadline = now + (l->expiring ? RECHECK_RETRY_MS : RETRY_MS) * NSEC_PER_MSEC;
			return true;
		}
		if (l->state == LOC_PENDING) {
			go_negative(m, l, now);
			return true;
		}
		mesh_count(m, spoofed, l->in.len); /* no answer confirmed them */
		mesh_queue_free(m, &l->in);
		l->state = LOC_RESOLVED;
		if (l->expiring) { /* and none confirmed the location */
			mesh_count(m, expired, 1);
			mesh_loc_unpublish(m, l);
			l->peer = NULL;
			l->state = LOC_NONE;
			l->expiring = false;
		}
		return false;
	case LOC_NEGATIVE:
		mesh_loc_unpublish(m, l);
		l->state = LOC_NONE;
		return false;
	default:
		return false;
	}
}

/* Both locks held: l's address, registered here, announced to its home
 * (unicast) or to every member (multicast); when only is set, to that peer
 * alone, if it is one that should hear it. */
void mesh_announce(struct mesh *m, struct mesh_loc *l, const struct wg_peer *only)
	WG_REQUIRES(m->lock, m->dev->lock)
{
	struct mesh_item it;
	struct wg_peer *home;
	bool self;

	mesh_item_of(l, &it);
	mesh_item_holder(&it, NULL, l->local_seq);
	mesh_item_lease(m, &it, mesh_own_lease(m, l->family, l->addr));
	if (atomic_load(&m->mode) == MESH_MULTICAST) {
		mesh_note_add(m, only ? only->public_key : NULL, !only, MESH_ANNOUNCE, &it);
		mesh_count(m, announce_sent, only ? 1 : m->dev->n_peers);
		return;
	}
	home = mesh_home_of(m, l, &self);
	if (self || !home || (only && home != only))
		return;
	mesh_note_add(m, home->public_key, false, MESH_ANNOUNCE, &it);
	mesh_count(m, announce_sent, 1);
}

/* The next periodic re-announcement, REFRESH_MS +-25 % from now; never
 * with WEFT_TEST_MESH_REFRESH=0 (a test that only events may make converge). */
static uint64_t next_refresh(uint64_t now)
{
	const char *knob = getenv("WEFT_TEST_MESH_REFRESH");

	if (knob && !strcmp(knob, "0"))
		return UINT64_MAX;
	return now + ((uint64_t)REFRESH_MS * 3 / 4 + randombytes_uniform(REFRESH_MS / 2)) *
			     NSEC_PER_MSEC;
}

/* Both locks held: a learned location no answer confirmed for
 * LEARNED_TTL_MS is asked again, as the mesh's own lookup (its packets keep
 * going to the holder meanwhile); no answer, and it is forgotten (expire). */
static void recheck_if_old(struct mesh *m, struct mesh_loc *l, uint64_t now)
	WG_REQUIRES(m->lock, m->dev->lock)
{
	if (l->state != LOC_RESOLVED || !l->peer ||
	    now - l->confirmed < (uint64_t)LEARNED_TTL_MS * NSEC_PER_MSEC)
		return;
	/* Within the budget of any tenant (so the timed list stays short):
	 * the others wait for a later pass, still routed. */
	if (m->tenant_pending[MESH_TENANT_UPKEEP] >= TENANT_PENDING)
		return;
	m->tenant_pending[MESH_TENANT_UPKEEP]++;
	l->state = LOC_VERIFY;
	l->expiring = true;
	l->tenant = MESH_TENANT_UPKEEP;
	l->tries = 0;
	l->deadline = 0;
	mesh_timed_add(m, l);
	m->solicit_due = true;
}

/* Both locks held: the local addresses announced again, so that what the
 * others know converges by itself: periodically, when a peer's session
 * began afresh (mesh_peer_up: it was added, or restarted and lost what it
 * knew), and when a member went (the homes changed). One pass over the
 * records, across rounds when the outbox fills. */
static void reannounce(struct mesh *m, uint64_t now)
	WG_REQUIRES(m->lock, m->dev->lock)
{
	uint64_t wall = wg_clock_realtime_ns();
	size_t b;

	if (now >= m->next_refresh) {
		m->announce_all = true;
		m->next_refresh = next_refresh(now);
	}
	if (!m->announce_all && !m->n_peers_up)
		return;
	mesh_drop_expired_own(m, wall);
	for (b = m->announce_from; b < m->n_buckets; b++) {
		/* The next round goes on from here: the outbox is full, or
		 * this round held the device lock long enough. */
		if (m->n_outbox + ANNOUNCE_ROOM > OUTBOX_MAX ||
		    b - m->announce_from == ANNOUNCE_BUCKETS)
			break;
		for (struct mesh_loc *l = m->buckets[b], *next; l; l = next) {
			next = l->hash_next;
			if (!l->local_seq) {
				if (!mesh_lease_upkeep(m, l, wall, now))
					recheck_if_old(m, l, now);
				continue;
			}
			if (m->announce_all) {
				mesh_announce(m, l, NULL);
				continue;
			}
			for (size_t i = 0; i < m->n_peers_up; i++) {
				struct wg_peer *p = wg_device_lookup_peer(m->dev, m->peers_up[i]);

				if (p)
					mesh_announce(m, l, p);
			}
		}
	}
	m->announce_from = b;
	if (b < m->n_buckets)
		return;
	m->announce_from = 0;
	m->n_peers_up = 0;
	m->announce_all = m->announce_again;
	m->announce_again = false;
}

/* Both locks held: timeouts and solicitations due. Returns the next
 * deadline. */
static uint64_t tick(struct mesh *m, uint64_t now)
	WG_REQUIRES(m->lock, m->dev->lock)
{
	uint64_t next = UINT64_MAX, wall = wg_clock_realtime_ns();

	memset(m->tenant_pending, 0, sizeof(m->tenant_pending));
	for (struct mesh_loc **pp = &m->timed; *pp;) {
		struct mesh_loc *l = *pp;
		bool keep = l->state == LOC_PENDING || l->state == LOC_VERIFY ||
			    l->state == LOC_NEGATIVE;

		if (l->deadline <= now)
			keep = expire(m, l, now);
		if (l->state == LOC_PENDING || l->state == LOC_VERIFY)
			m->tenant_pending[l->tenant]++;
		if (keep) {
			if (l->deadline < next)
				next = l->deadline;
			pp = &l->timed_next;
			continue;
		}
		*pp = l->timed_next;
		l->timed = false;
		/* A record whose lease is still valid stays, holding the
		 * lease that a replay of an older one loses to, until the
		 * records' upkeep after it expires (mesh_lease_upkeep). */
		if (l->state == LOC_NONE && !l->local_seq && !l->in_table && !l->out.len &&
		    !l->in.len && (!l->lease || l->lease->expires <= wall))
			mesh_loc_free(m, l);
	}
	return next;
}

/* Mesh lock held: the noted messages, moved into a malloc'd array for
 * sending once the locks are dropped (NULL when there are none, or no
 * memory: then they stay for the thread's next round). */
struct mesh_note *mesh_take_notes(struct mesh *m, size_t *n)
	WG_REQUIRES(m->lock)
{
	struct mesh_note *out;

	*n = 0;
	if (!m->n_outbox || !(out = malloc(m->n_outbox * sizeof(*out))))
		return NULL;
	memcpy(out, m->outbox, m->n_outbox * sizeof(*out));
	*n = m->n_outbox;
	m->n_outbox = 0;
	return out;
}

/* No lock held: sends what was noted. */
void mesh_send_notes(struct mesh *m, struct mesh_note *notes, size_t n)
	WG_EXCLUDES(m->lock, m->dev->lock)
{
	struct wg_device *dev = m->dev;
	struct wg_tx tx;

	if (!n)
		return;
	wg_tx_direct_init(&tx, dev);
	wg_rwlock_rdlock(&dev->lock);
	for (size_t i = 0; i < n; i++) {
		struct mesh_msg msg = { .type = notes[i].type, .count = 1 };
		struct wg_peer *to = notes[i].all ? dev->peers_head
						  : wg_device_lookup_peer(dev, notes[i].peer);

		msg.items[0] = notes[i].item;
		for (; to; to = notes[i].all ? to->list_next : NULL) {
			size_t len = mesh_msg_size(1, msg.items[0].has_lease);
			struct wg_pkt *p = wg_pkt_alloc(len);

			if (!p)
				break;
			p->len = (uint32_t)mesh_msg_build(&msg, wg_pkt_payload(p), len);
			if (!p->len) {
				free(p);
				break;
			}
			wg_send_to_peer(dev, to, &p, 1, &tx);
		}
	}
	wg_rwlock_unlock(&dev->lock);
}

void mesh_kick_worker(struct mesh *m)
{
	if (atomic_load(&m->n_released))
		wg_device_kick(m->dev, 0);
}

/* No lock held: the table's hashes of host routes grown for what one hold
 * of the write lock publishes (HANDLE_BATCH routes), copied under the
 * device lock shared beside the workers, then put in place under the write
 * lock (lock_grown): an insert under it never rebuilds a hash of 100,000
 * routes while the workers wait (a tick that publishes more than that
 * still may). */
static void grow_ahead(struct mesh *m, struct rt_grow *g[2])
	WG_EXCLUDES(m->lock, m->dev->lock)
{
	wg_rwlock_rdlock(&m->dev->lock);
	g[0] = rt_grow_prepare(m->dev->allowed_ips, AF_INET, HANDLE_BATCH);
	g[1] = rt_grow_prepare(m->dev->allowed_ips, AF_INET6, HANDLE_BATCH);
	wg_rwlock_unlock(&m->dev->lock);
}

static void lock_grown(struct mesh *m)
	WG_ACQUIRE(m->dev->lock, m->lock)
{
	struct rt_grow *g[2];

	grow_ahead(m, g);
	mesh_lock(m);
	rt_grow_commit(m->dev->allowed_ips, g[0]);
	rt_grow_commit(m->dev->allowed_ips, g[1]);
}

uint64_t mesh_run(struct mesh *m)
	WG_EXCLUDES(m->lock, m->dev->lock)
{
	struct mesh_note *out, *in;
	size_t n_out, n_in;
	uint64_t now = wg_clock_now(), next;
	uint8_t key[MESH_LEASE_KEY_SIZE];
	bool has_key;

	/* The received entries are taken under the mesh lock alone (the
	 * workers go on filling the other buffer), and the record hash grown
	 * for them there, then handled HANDLE_BATCH at a time under both
	 * locks: a worker waits for one batch at most (bench_mesh_stall). */
	wg_mutex_lock(&m->lock);
	in = m->inbox;
	n_in = m->n_inbox;
	m->inbox = m->inbox_work;
	m->inbox_work = in;
	m->n_inbox = 0;
	mesh_loc_reserve(m, n_in);
	has_key = m->cfg.has_lease_key;
	memcpy(key, m->cfg.lease_key, sizeof(key));
	mesh_known_leases(m, in, n_in);
	wg_mutex_unlock(&m->lock);
	/* Signatures are checked here, with no lock held: the workers never
	 * wait for them. */
	mesh_check_leases(in, n_in, has_key ? key : NULL);
	for (size_t i = 0; i < n_in; i += HANDLE_BATCH) {
		lock_grown(m);
		if (has_key != m->cfg.has_lease_key || memcmp(key, m->cfg.lease_key, sizeof(key)))
			mesh_check_leases(in + i, n_in - i, NULL); /* the key changed meanwhile */
		for (size_t j = i; j < n_in && j < i + HANDLE_BATCH; j++) {
			struct wg_peer *from = wg_device_lookup_peer(m->dev, in[j].peer);

			if (!from)
				continue; /* removed meanwhile */
			if (from->mesh) /* its entries have left the inbox */
				from->mesh->inbox = 0;
			/* What came in before the mesh was turned off is not heard. */
			if (atomic_load(&m->mode) != MESH_OFF)
				handle(m, from, &in[j], now);
		}
		mesh_unlock(m);
	}
	lock_grown(m);
	m->solicit_due = false;
	reannounce(m, now);
	next = tick(m, now);
	if (m->next_refresh < next)
		next = m->next_refresh;
	out = mesh_take_notes(m, &n_out);
	mesh_unlock(m);
	mesh_send_notes(m, out, n_out);
	free(out);
	mesh_kick_worker(m);
	return next;
}

/* Mesh lock held: whether a round has work. */
static bool due(const struct mesh *m, uint64_t next)
	WG_REQUIRES(m->lock)
{
	return m->n_inbox || m->n_outbox || m->solicit_due || m->announce_all || m->n_peers_up ||
	       (next != UINT64_MAX && wg_clock_now() >= next);
}

static void *mesh_thread(void *arg)
{
	struct mesh *m = arg;
	uint64_t next = UINT64_MAX;

	wg_mutex_lock(&m->lock);
	while (!m->stop) {
		if (!due(m, next)) {
			struct timespec ts;

			if (next == UINT64_MAX) {
				wg_cond_wait(&m->cond, &m->lock);
			} else {
				/* next is on the protocol clock; the wait on CLOCK_MONOTONIC. */
				uint64_t now = wg_clock_now();
				uint64_t wait = next > now ? wg_clock_to_real(next - now) : 0;

				clock_gettime(CLOCK_MONOTONIC, &ts);
				wait += (uint64_t)ts.tv_nsec;
				ts.tv_sec += (time_t)(wait / NSEC_PER_SEC);
				ts.tv_nsec = (long)(wait % NSEC_PER_SEC);
				wg_cond_timedwait(&m->cond, &m->lock, &ts);
			}
			continue;
		}
		wg_mutex_unlock(&m->lock);
		next = mesh_run(m);
		wg_mutex_lock(&m->lock);
	}
	wg_mutex_unlock(&m->lock);
	return NULL;
}

void mesh_wake(struct mesh *m)
{
	pthread_cond_signal(&m->cond);
}

/* Life cycle. */

int mesh_new(struct wg_device *dev, struct mesh **out)
{
	struct mesh *m = calloc(1, sizeof(*m));
	pthread_condattr_t ca;

	if (!m)
		return -ENOMEM;
	m->inbox = calloc(INBOX_MAX, sizeof(*m->inbox));
	m->inbox_work = calloc(INBOX_MAX, sizeof(*m->inbox_work));
	m->outbox = calloc(OUTBOX_MAX, sizeof(*m->outbox));
	if (!m->inbox || !m->inbox_work || !m->outbox) {
		free(m->inbox);
		free(m->inbox_work);
		free(m->outbox);
		free(m);
		return -ENOMEM;
	}
	m->dev = dev;
	m->prefix_hop.kind = RT_HOP_MESH;
	siphash_key_random(&m->hash_key);
	m->next_refresh = next_refresh(wg_clock_now());
	wg_mutex_init(&m->lock);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->cond, &ca);
	pthread_condattr_destroy(&ca);
	mesh_rate_init(&m->solicit_rate, SOLICIT_PER_SEC, SOLICIT_BURST);
	mesh_rate_init(&m->tenant_solicit[0], TENANT_SOLICIT_PER_SEC, TENANT_SOLICIT_BURST);
	for (size_t t = 1; t < MESH_TENANTS; t++)
		m->tenant_solicit[t] = m->tenant_solicit[0];
	mesh_rate_init(&m->not_here_rate, NOT_HERE_PER_SEC, NOT_HERE_BURST);
	*out = m;
	return 0;
}

int mesh_start(struct mesh *m)
{
	int err = pthread_create(&m->thread, NULL, mesh_thread, m);

	if (err)
		return -err;
	m->started = true;
	return 0;
}

void mesh_stop(struct mesh *m)
{
	if (!m || !m->started)
		return;
	wg_mutex_lock(&m->lock);
	m->stop = true;
	mesh_wake(m);
	wg_mutex_unlock(&m->lock);
	pthread_join(m->thread, NULL);
	m->started = false;
}

void mesh_free(struct wg_device *dev)
{
	struct mesh *m = dev->mesh;

	if (!m)
		return;
	mesh_dev_locked(m, dev);
	wg_mutex_lock(&m->lock);
	for (struct wg_peer *p = dev->peers_head; p; p = p->list_next)
		mesh_peer_free(m, p);
	wg_mutex_unlock(&m->lock);
	for (size_t i = 0; i < m->n_buckets; i++) {
		while (m->buckets[i]) {
			struct mesh_loc *l = m->buckets[i];

			mesh_loc_unpublish(m, l);
			m->buckets[i] = l->hash_next;
			mesh_queue_free(m, &l->out);
			mesh_queue_free(m, &l->in);
			free(l->lease);
			free(l);
		}
	}
	for (size_t i = 0; i < m->cfg.n_prefixes; i++)
		rt_remove(m->dev->allowed_ips, m->cfg.prefixes[i].family, m->cfg.prefixes[i].addr,
			  m->cfg.prefixes[i].cidr, &m->prefix_hop);
	mesh_queue_free(m, &m->rel_out);
	mesh_queue_free(m, &m->rel_in);
	free(m->buckets);
	free(m->inbox);
	free(m->inbox_work);
	free(m->outbox);
	free(m->own);
	free(m->own_index);
	wg_mutex_destroy(&m->lock);
	pthread_cond_destroy(&m->cond);
	free(m);
	dev->mesh = NULL;
}
