/* The mesh's control plane and the device's hooks (mesh/mesh.h): the
 * configuration, VM registration, the learned routes for listing, and what
 * the device tells the mesh of its peers and ports. The mesh thread, its
 * messages and deadlines are mesh/mesh.c's. */
#include "mesh/mesh.h"
#include "mesh/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "port/ports.h"
#include "router/table.h"
#include "wg/clock.h"
#include "wg/device.h"
#include "wg/log.h"
#include "wg/peer.h"

/* The addresses of the ports that were there before the mesh, registered
 * and announced as if just added. */
static void announce_ports(struct wg_device *dev)
{
	struct ip_prefix *addrs = NULL;
	size_t n = 0, max = 0;

	wg_rwlock_rdlock(&dev->lock);
	for (int i = 0; i < PORT_MAX; i++)
		max += dev->ports->slot[i] ? dev->ports->slot[i]->cfg.n_addrs : 0;
	if (max && (addrs = calloc(max, sizeof(*addrs))))
		for (int i = 0; i < PORT_MAX; i++)
			for (size_t j = 0; dev->ports->slot[i] && j < dev->ports->slot[i]->cfg.n_addrs; j++)
				addrs[n++] = dev->ports->slot[i]->cfg.addrs[j];
	wg_rwlock_unlock(&dev->lock);
	if (n)
		mesh_local_added(dev, addrs, n);
	free(addrs);
}

struct overlap {
	const struct mesh_config *cfg;
	bool found;
};

static void check_overlap(void *ctx, int family, const uint8_t *addr, uint8_t cidr)
{
	struct overlap *o = ctx;
	struct ip_prefix a = { .family = (uint8_t)family, .cidr = cidr };

	memcpy(a.addr, addr, family == AF_INET ? 4 : 16);
	for (size_t i = 0; i < o->cfg->n_prefixes; i++)
		if (ip_prefix_contains(&o->cfg->prefixes[i], &a))
			o->found = true;
}

/* Whether a prefix of cfg holds one of the peers' allowed IPs: those
 * addresses would be the peer's by configuration and the mesh's by
 * discovery at once (docs/mesh.md, "Who is believed"). */
static bool overlaps_allowed_ips(struct wg_device *dev, const struct mesh_config *cfg)
	WG_REQUIRES_SHARED(dev->lock)
{
	struct overlap o = { .cfg = cfg };

	for (struct wg_peer *p = dev->peers_head; p && !o.found; p = p->list_next)
		rt_walk_value(dev->allowed_ips, p, check_overlap, &o);
	return o.found;
}

int mesh_set(struct wg_device *dev, const struct mesh_config *cfg)
{
	struct mesh *m = dev->mesh;
	bool rekey;
	int err = 0;

	if (cfg->mode > MESH_MULTICAST || cfg->n_prefixes > MESH_MAX_PREFIXES)
		return -EINVAL;
	for (size_t i = 0; i < cfg->n_prefixes; i++)
		if (!ip_prefix_valid(&cfg->prefixes[i]))
			return -EINVAL;
	mesh_lock(m);
	if (cfg->mode != MESH_OFF && overlaps_allowed_ips(m->dev, cfg)) {
		mesh_unlock(m);
		return -EEXIST;
	}
	/* Another lease key: what was believed under the old one, and this
	 * host's leases, are not any more. */
	rekey = cfg->has_lease_key != m->cfg.has_lease_key ||
		(cfg->has_lease_key && memcmp(cfg->lease_key, m->cfg.lease_key, sizeof(cfg->lease_key)));
	for (size_t i = 0; i < m->cfg.n_prefixes; i++)
		rt_remove(dev->allowed_ips, m->cfg.prefixes[i].family, m->cfg.prefixes[i].addr,
			  m->cfg.prefixes[i].cidr, &m->prefix_hop);
	m->cfg = *cfg; /* with mode off, the prefixes are kept but not routed */
	if (!cfg->has_lease_key)
		memset(m->cfg.lease_key, 0, sizeof(m->cfg.lease_key));
	if (rekey)
		mesh_own_clear(m);
	if (cfg->mode == MESH_OFF || rekey) {
		atomic_store(&m->mode, MESH_OFF);
		mesh_forget(m);
	}
	for (size_t i = 0; cfg->mode != MESH_OFF && i < cfg->n_prefixes && !err; i++)
		err = rt_insert(dev->allowed_ips, cfg->prefixes[i].family, cfg->prefixes[i].addr,
				cfg->prefixes[i].cidr, &m->prefix_hop);
	atomic_store(&m->mode, err ? MESH_OFF : (int)cfg->mode);
	mesh_unlock(m);
	if (!err && cfg->mode != MESH_OFF)
		announce_ports(dev);
	if (!err)
		log_info("mesh: %s, %zu prefixes",
			 cfg->mode == MESH_OFF	 ? "off"
			 : cfg->mode == MESH_UNICAST ? "unicast discovery"
							 : "multicast discovery",
			 cfg->n_prefixes);
	return err;
}

void mesh_get(struct wg_device *dev, struct mesh_config *cfg, struct mesh_stats *st)
{
	struct mesh *m = dev->mesh;

	wg_mutex_lock(&m->lock);
	if (cfg)
		*cfg = m->cfg;
	if (st) {
#define MESH_COUNTER_COPY(name) st->name = atomic_load(&m->c.name);
		MESH_COUNTERS(MESH_COUNTER_COPY)
#undef MESH_COUNTER_COPY
		st->locations = m->n_located;
		st->leases = m->n_own;
		st->pending = 0;
		for (struct mesh_loc *l = m->timed; l; l = l->timed_next)
			st->pending += l->state == LOC_PENDING;
	}
	wg_mutex_unlock(&m->lock);
}

/* Registration: this host now holds addrs (already in the table as a
 * port's). Announces those in the mesh. */
void mesh_local_added(struct wg_device *dev, const struct ip_prefix *addrs, size_t n)
{
	struct mesh *m = dev->mesh;
	struct mesh_note *out = NULL;
	size_t n_out = 0;

	if (!m)
		return;
	mesh_lock(m);
	for (size_t i = 0; i < n && atomic_load(&m->mode) != MESH_OFF; i++) {
		const struct ip_prefix *a = &addrs[i];
		struct mesh_loc *l;
		bool self;

		if (!mesh_in_prefixes(m, a->family, a->addr))
			continue;
		l = mesh_loc_get(m, a->family, a->addr, a->cidr);
		if (!l)
			continue;
		l->local_seq = mesh_next_seq(m);
		if (m->cfg.has_lease_key && !mesh_own_lease(m, a->family, a->addr)) {
			char text[IP_PREFIX_STRLEN];

			ip_prefix_format(a, text);
			log_error("mesh: %s registered without a lease: the other hosts will not "
				  "believe it (weft lease add)", text);
		}
		if (l->peer) { /* where it was: its forwarded packets are taken */
			l->prev = l->peer;
			l->prev_until = wg_clock_now() + GRACE_MS * NSEC_PER_MSEC;
		}
		if (l->in_table) { /* the port's entry replaced ours */
			l->in_table = false;
			m->n_located--;
		}
		l->state = l->peer ? LOC_RESOLVED : LOC_NONE;
		mesh_release(m, l); /* what waited for it routes to the port now */
		/* Sources that claimed it, unconfirmed: it is ours now. */
		mesh_count(m, spoofed, l->in.len);
		mesh_queue_free(m, &l->in);
		if (atomic_load(&m->mode) == MESH_UNICAST && l->peer && (mesh_home_of(m, l, &self), self)) {
			struct mesh_item it;

			/* We are the home: the previous holder learns it here. */
			mesh_item_of(l, &it);
			mesh_item_holder(&it, mesh_self_key(m), l->local_seq);
			mesh_item_lease(m, &it, mesh_own_lease(m, a->family, a->addr));
			mesh_note_add(m, l->peer->public_key, false, MESH_MOVED, &it);
			mesh_count(m, moved_sent, 1);
		} else {
			mesh_announce(m, l, NULL);
		}
	}
	out = mesh_take_notes(m, &n_out);
	mesh_unlock(m);
	/* Sent before returning, so that "registered" means "announced". */
	mesh_send_notes(m, out, n_out);
	free(out);
	mesh_kick_worker(m);
}

void mesh_local_removed(struct wg_device *dev, const struct ip_prefix *addrs, size_t n)
{
	struct mesh *m = dev->mesh;
	uint64_t now = wg_clock_now();
	struct mesh_note *out;
	size_t n_out;

	if (!m)
		return;
	mesh_lock(m);
	for (size_t i = 0; i < n; i++) {
		struct mesh_loc *l = mesh_loc_find(m, addrs[i].family, addrs[i].addr, addrs[i].cidr);
		struct mesh_item it;
		struct wg_peer *home;
		bool self, moved;

		if (!l || !l->local_seq)
			continue;
		moved = mesh_peer_is_newer(m, l);
		l->local_seq = 0;
		/* A record being checked again still names its holder: a packet
		 * that came for the address between its port entry's removal
		 * and this call asked for it (mesh_transit), and waits. */
		if (moved && (l->state == LOC_RESOLVED || l->state == LOC_VERIFY)) {
			/* It moved: forward what still comes here, and what
			 * waited. */
			l->prev = NULL;
			mesh_loc_publish(m, l);
			mesh_release(m, l);
			continue;
		}
		/* It is gone: whoever may point here is told, and asks again. */
		l->peer = NULL;
		if (l->state != LOC_PENDING) {
			l->state = LOC_NONE;
			l->deadline = now;
			mesh_timed_add(m, l); /* freed by the next tick */
		}
		mesh_item_of(l, &it);
		if (atomic_load(&m->mode) == MESH_MULTICAST) {
			mesh_note_add(m, NULL, true, MESH_NOT_HERE, &it);
			mesh_count(m, not_here_sent, dev->n_peers);
		} else if (atomic_load(&m->mode) == MESH_UNICAST &&
			   (home = mesh_home_of(m, l, &self)) && !self) {
			mesh_note_add(m, home->public_key, false, MESH_NOT_HERE, &it);
			mesh_count(m, not_here_sent, 1);
		}
	}
	out = mesh_take_notes(m, &n_out);
	mesh_unlock(m);
	mesh_send_notes(m, out, n_out);
	free(out);
	mesh_kick_worker(m);
	mesh_wake(m);
}

int mesh_vm_add(struct wg_device *dev, const char *port, const struct ip_prefix *addrs, size_t n)
{
	int err = port_register(dev, port, addrs, n);

	if (!err)
		mesh_local_added(dev, addrs, n);
	return err;
}

int mesh_vm_del(struct wg_device *dev, const struct ip_prefix *addrs, size_t n)
{
	int err = port_unregister(dev, addrs, n);

	if (!err)
		mesh_local_removed(dev, addrs, n);
	return err;
}

int mesh_routes(struct wg_device *dev, struct mesh_route **out, size_t *n, size_t max)
{
	struct mesh *m = dev->mesh;
	struct mesh_route *r;
	size_t k = 0;

	wg_rwlock_rdlock(&dev->lock);
	wg_mutex_lock(&m->lock);
	r = calloc(m->n_located < max ? m->n_located + 1 : max + 1, sizeof(*r));
	for (size_t b = 0; r && b < m->n_buckets; b++) {
		for (struct mesh_loc *l = m->buckets[b]; l && k < max; l = l->hash_next) {
			if (!l->in_table)
				continue;
			r[k].prefix.family = (uint8_t)l->family;
			r[k].prefix.cidr = l->cidr;
			memcpy(r[k].prefix.addr, l->addr, 16);
			r[k].negative = !l->peer;
			if (l->peer)
				memcpy(r[k].holder, l->peer->public_key, WG_KEY_LEN);
			r[k].seq = l->seq;
			k++;
		}
	}
	wg_mutex_unlock(&m->lock);
	wg_rwlock_unlock(&dev->lock);
	if (!r)
		return -ENOMEM;
	*out = r;
	*n = k;
	return 0;
}

void mesh_peer_removed(struct wg_device *dev, struct wg_peer *peer)
{
	struct mesh *m = dev->mesh;

	if (!m)
		return;
	mesh_dev_locked(m, dev);
	wg_mutex_lock(&m->lock);
	mesh_peer_free(m, peer);
	/* The homes of some addresses changed with the membership. */
	if (m->announce_from)
		m->announce_again = true;
	else
		m->announce_all = true;
	mesh_wake(m);
	for (size_t b = 0; b < m->n_buckets; b++) {
		for (struct mesh_loc *l = m->buckets[b]; l; l = l->hash_next) {
			struct wg_pkt_queue keep = { 0 };
			struct wg_pkt *p;

			if (l->prev == peer)
				l->prev = NULL;
			while ((p = wg_pkt_queue_pop(&l->in))) {
				if (p->egress == peer) {
					m->queued--;
					free(p);
				} else {
					wg_pkt_queue_push(&keep, p);
				}
			}
			l->in = keep;
			if (l->peer == peer) {
				/* Nothing is being checked any more. */
				mesh_count(m, spoofed, l->in.len);
				mesh_queue_free(m, &l->in);
				l->peer = NULL;
				mesh_loc_unpublish(m, l);
				l->state = LOC_NONE;
				l->deadline = 0;
				mesh_timed_add(m, l);
			}
		}
	}
	wg_mutex_unlock(&m->lock);
}

void mesh_peer_up(struct wg_device *dev, struct wg_peer *peer)
{
	struct mesh *m = dev->mesh;

	if (!m || atomic_load(&m->mode) == MESH_OFF)
		return;
	wg_mutex_lock(&m->lock);
	if (m->announce_from || m->n_peers_up == PEERS_UP_MAX)
		m->announce_again = true; /* a pass is under way: the next covers it */
	else if (!m->announce_all)
		memcpy(m->peers_up[m->n_peers_up++], peer->public_key, WG_KEY_LEN);
	mesh_wake(m);
	wg_mutex_unlock(&m->lock);
}
