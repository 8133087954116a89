/* The mesh's entry points on the data path (mesh/mesh.h): the workers hand
 * misses, sources to check, packets for addresses that moved away and
 * received messages to the mesh thread, holding the device lock shared and
 * taking only the mesh lock. */
#include "mesh/mesh.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "mesh/internal.h"
#include "mesh/msg.h"
#include "port/frame.h"
#include "router/table.h"
#include "wg/clock.h"
#include "wg/device.h"
#include "wg/peer.h"
#include "wg/receive.h"
#include "wg/send.h"

bool mesh_enabled(const struct wg_device *dev)
{
	return dev->mesh && atomic_load_explicit(&dev->mesh->mode, memory_order_relaxed) != MESH_OFF;
}

/* A heap copy of an inner packet, at WG_PKT_FRONT so that it can go to a
 * port (Ethernet and virtio-net headers in front) or be sealed. */
static struct wg_pkt *copy_packet(const uint8_t *ip, uint32_t len)
{
	struct wg_pkt *p = wg_pkt_alloc(len + WG_PKT_FRONT - WG_PKT_HEADROOM);

	if (!p)
		return NULL;
	p->off = WG_PKT_FRONT;
	p->len = len;
	p->egress = NULL;
	memcpy(wg_pkt_payload(p), ip, len);
	return p;
}

/* Mesh lock held: queues a copy of ip on q (a record's), tagged. */
static void enqueue(struct mesh *m, struct wg_pkt_queue *q, const uint8_t *ip, uint32_t len,
		    void *tag)
	WG_REQUIRES(m->lock)
{
	struct wg_pkt *p;

	if (q->len >= QUEUE_PER_DEST || m->queued >= QUEUE_TOTAL || !(p = copy_packet(ip, len))) {
		mesh_count(m, queue_dropped, 1);
		return;
	}
	p->egress = tag;
	wg_pkt_queue_push(q, p);
	m->queued++;
	mesh_count(m, queued, 1);
}

/* Mesh lock held: the record of a destination, being solicited; a new
 * lookup is tenant's, and refused (NULL, counted) when tenant has
 * TENANT_PENDING under way. */
static struct mesh_loc *pending(struct mesh *m, int family, const uint8_t *addr,
				unsigned int tenant)
	WG_REQUIRES(m->lock)
{
	uint8_t cidr = family == AF_INET ? 32 : 128;
	struct mesh_loc *l = mesh_loc_find(m, family, addr, cidr);

	if ((!l || (l->state != LOC_PENDING && l->state != LOC_VERIFY)) &&
	    m->tenant_pending[tenant] >= TENANT_PENDING) {
		mesh_count(m, tenant_limited, 1);
		return NULL;
	}
	if (!l)
		l = mesh_loc_get(m, family, addr, cidr);
	/* A resolved record is asked again when a source must be checked:
	 * the table keeps the old answer meanwhile. A negative one is asked
	 * again when a peer sends from its address. */
	if (l && l->state != LOC_PENDING && l->state != LOC_VERIFY) {
		l->tenant = (uint16_t)tenant;
		m->tenant_pending[tenant]++;
		l->state = l->state == LOC_RESOLVED ? LOC_VERIFY : LOC_PENDING;
		l->asked_at = wg_clock_now();
		l->tries = 0;
		l->deadline = 0;
		mesh_timed_add(m, l);
		m->solicit_due = true;
		mesh_count(m, lookups, 1);
	}
	return l;
}

void mesh_miss(struct wg_device *dev, struct wg_pkt *const *pkts, unsigned int n, int family,
	       const uint8_t *dst, unsigned int tenant)
{
	struct mesh *m = dev->mesh;
	struct mesh_loc *l;

	if (tenant >= MESH_TENANTS)
		tenant = MESH_TENANT_HOST;
	wg_mutex_lock(&m->lock);
	l = pending(m, family, dst, tenant);
	for (unsigned int i = 0; i < n; i++) {
		if (l)
			enqueue(m, &l->out, wg_pkt_payload(pkts[i]), pkts[i]->len, NULL);
		else
			mesh_count(m, queue_dropped, 1);
	}
	mesh_wake(m);
	wg_mutex_unlock(&m->lock);
}

enum mesh_verdict { MESH_ACCEPT, MESH_HOLD, MESH_DROP };

/* The receive check of an inner source that is not one of peer's allowed
 * IPs: hop is what the table says of the source. ACCEPT: peer holds it (or
 * held it until a move moments ago); HOLD: it may have moved to peer: give
 * the packet to hold(), which delivers it once a re-resolve confirms peer;
 * DROP: not a mesh address. */
static enum mesh_verdict check_source(struct wg_device *dev, struct wg_peer *peer,
				      struct rt_hop *hop)
{
	struct mesh_loc *l;

	if (!hop || !mesh_enabled(dev))
		return MESH_DROP;
	if (hop->kind == RT_HOP_MESH)
		return MESH_HOLD;
	if (hop->kind != RT_HOP_REMOTE)
		return MESH_DROP;
	l = mesh_loc_from_hop(hop);
	if (l->peer == peer || (l->prev == peer && wg_clock_now() < l->prev_until))
		return MESH_ACCEPT;
	return MESH_HOLD;
}

static void hold(struct wg_device *dev, struct wg_peer *peer, int family, const uint8_t *src,
		 const uint8_t *ip, uint32_t len)
	WG_REQUIRES_SHARED(dev->lock)
{
	struct mesh *m = dev->mesh;
	struct mesh_loc *l;
	unsigned int tenant;

	mesh_dev_locked_shared(m, dev);
	wg_mutex_lock(&m->lock);
	l = mesh_peer_tenant(m, peer, &tenant) ? pending(m, family, src, tenant) : NULL;
	if (l) {
		enqueue(m, &l->in, ip, len, peer);
		mesh_count(m, held, 1);
	} else {
		mesh_count(m, spoofed, 1);
	}
	mesh_wake(m);
	wg_mutex_unlock(&m->lock);
}

/* A packet forwarded by peer (unwrapped in rx): sent on by the host one of
 * our VMs moved away from, which vouches for its source. Taken only when
 * its destination is a VM of this host inside the mesh prefixes whose
 * previous holder was peer, less than GRACE_MS ago (mesh_local_added,
 * hand_over), and its source is a mesh address that is not one of ours. */
static bool forward_ok(struct wg_device *dev, const struct wg_rx *rx)
	WG_REQUIRES_SHARED(dev->lock)
{
	struct mesh *m = dev->mesh;
	struct rt_hop *to = rt_lookup(dev->allowed_ips, rx->family, rx->dst);
	struct mesh_loc *l;
	bool ok;

	if (!to || to->kind != RT_HOP_PORT || (rx->hop && rx->hop->kind == RT_HOP_PORT) ||
	    !mesh_in_prefixes(m, rx->family, rx->src) || !mesh_in_prefixes(m, rx->family, rx->dst))
		return false;
	wg_mutex_lock(&m->lock);
	l = mesh_loc_find(m, rx->family, rx->dst, rx->family == AF_INET ? 32 : 128);
	ok = l && l->local_seq && l->prev == rx->peer && wg_clock_now() < l->prev_until;
	wg_mutex_unlock(&m->lock);
	return ok;
}

bool mesh_receive(struct wg_device *dev, struct wg_rx *rx, enum wg_rx_verdict v)
{
	size_t forwarded;

	if (rx->family == AF_INET6) {
		if (mesh_msg_is_mesh(rx->pkt, rx->len)) {
			mesh_received(dev, rx->peer, rx->pkt, rx->len);
			return false;
		}
		forwarded = mesh_fwd_unwrap(rx->pkt, rx->len);
		if (forwarded) {
			rx->len = (uint32_t)forwarded;
			memmove(rx->pkt, rx->pkt + MESH_FWD_HLEN, rx->len);
			if (!wg_receive_reparse(dev, rx))
				return false;
			if (forward_ok(dev, rx))
				return true;
			mesh_count(dev->mesh, refused_forward, 1);
			wg_receive_reject(dev);
			return false;
		}
	}
	if (v == WG_RX_PEER)
		return true;
	switch (check_source(dev, rx->peer, rx->hop)) {
	case MESH_ACCEPT:
		return true;
	case MESH_HOLD: /* it may have just moved to peer: checked first */
		hold(dev, rx->peer, rx->family, rx->src, rx->pkt, rx->len);
		return false;
	case MESH_DROP:
		break;
	}
	wg_receive_reject(dev);
	return false;
}

/* Sends ip[0, len) (its TTL already counted down) on to the holder of l,
 * wrapped so that the holder knows we checked its source. */
static bool forward(struct wg_device *dev, struct mesh_loc *l, const uint8_t *ip, uint32_t len,
		    struct wg_tx *tx)
	WG_REQUIRES_SHARED(dev->lock)
{
	struct mesh *m = dev->mesh;
	struct wg_pkt *p = wg_pkt_alloc(MESH_FWD_HLEN + len);

	if (!p || !mesh_fwd_wrap(wg_pkt_payload(p), ip, len)) {
		free(p);
		mesh_count(m, queue_dropped, 1);
		return false;
	}
	p->len = MESH_FWD_HLEN + len;
	memcpy(wg_pkt_payload(p) + MESH_FWD_HLEN, ip, len);
	wg_send_to_peer(dev, l->peer, &p, 1, tx);
	mesh_count(m, forwarded, 1);
	return true;
}

bool mesh_forward(struct wg_device *dev, struct wg_pkt *p, struct wg_tx *tx)
{
	const uint8_t *dst;
	int family = frame_ip_destination(wg_pkt_payload(p), p->len, &dst);
	struct rt_hop *hop = family ? rt_lookup(dev->allowed_ips, family, dst) : NULL;

	if (!hop || hop->kind != RT_HOP_REMOTE || !mesh_loc_from_hop(hop)->peer)
		return false;
	forward(dev, mesh_loc_from_hop(hop), wg_pkt_payload(p), p->len, tx);
	return true;
}

void mesh_transit(struct wg_device *dev, struct wg_peer *peer, struct rt_hop *hop,
		  uint8_t *ip, uint32_t len, struct wg_tx *tx)
{
	struct mesh *m = dev->mesh;
	struct mesh_loc *l = hop->kind == RT_HOP_REMOTE ? mesh_loc_from_hop(hop) : NULL;
	const uint8_t *dst;
	int family = frame_ip_destination(ip, len, &dst);
	struct mesh_item it = { .family = family, .cidr = family == AF_INET ? 32 : 128 };
	struct mesh_peer *mp;
	uint64_t now;

	mesh_dev_locked_shared(m, dev);
	memcpy(it.addr, dst, mesh_addr_len(family));
	if (l && l->peer && l->peer != peer && frame_ip_forward(ip, len)) {
		forward(dev, l, ip, len, tx);
		mesh_item_holder(&it, l->peer->public_key, l->seq);
	} else if (!l) {
		/* Where did it go? Forwarded (wrapped) once that is known. */
		unsigned int tenant;

		wg_mutex_lock(&m->lock);
		l = mesh_peer_tenant(m, peer, &tenant) ? pending(m, family, dst, tenant) : NULL;
		if (l && frame_ip_forward(ip, len))
			enqueue(m, &l->out, ip, len, MESH_FORWARDED);
		wg_mutex_unlock(&m->lock);
	} else {
		wg_stat_inc(&dev->stats, drop_no_route);
	}
	wg_mutex_lock(&m->lock);
	mp = mesh_peer_of(m, peer);
	now = wg_clock_now();
	if (mp && mesh_rate_take(&mp->not_here, now) && mesh_rate_take(&m->not_here_rate, now)) {
		if (it.has_holder) /* where it went, with the holder's lease */
			mesh_item_lease(m, &it, l->lease);
		mesh_note_add(m, peer->public_key, false, MESH_NOT_HERE, &it);
		mesh_count(m, not_here_sent, 1);
	} else {
		mesh_count(m, rate_limited, 1);
	}
	mesh_wake(m);
	wg_mutex_unlock(&m->lock);
}

void mesh_received(struct wg_device *dev, struct wg_peer *peer, const uint8_t *ip, uint32_t len)
{
	struct mesh *m = dev->mesh;
	struct mesh_peer *mp;
	struct mesh_msg msg;

	if (mesh_msg_parse(ip, len, &msg) != MESH_OK) {
		mesh_count(m, malformed, 1);
		return;
	}
	mesh_dev_locked_shared(m, dev);
	wg_mutex_lock(&m->lock);
	mp = mesh_peer_of(m, peer);
	for (size_t i = 0; i < msg.count; i++) {
		struct mesh_note *n;

		/* A peer that floods fills its own share, not the others'. */
		if (m->n_inbox == INBOX_MAX || !mp || mp->inbox == INBOX_PER_PEER) {
			mesh_count(m, rate_limited, msg.count - i);
			break;
		}
		mp->inbox++;
		n = &m->inbox[m->n_inbox++];
		memcpy(n->peer, peer->public_key, WG_KEY_LEN);
		n->all = false;
		n->type = msg.type;
		n->item = msg.items[i];
	}
	mesh_wake(m);
	wg_mutex_unlock(&m->lock);
}

bool mesh_has_released(const struct wg_device *dev)
{
	return dev->mesh && atomic_load_explicit(&dev->mesh->n_released, memory_order_relaxed);
}

void mesh_take_released(struct wg_device *dev, struct wg_pkt_queue *out, struct wg_pkt_queue *in)
{
	struct mesh *m = dev->mesh;

	wg_mutex_lock(&m->lock);
	*out = m->rel_out;
	*in = m->rel_in;
	m->rel_out = (struct wg_pkt_queue){ 0 };
	m->rel_in = (struct wg_pkt_queue){ 0 };
	atomic_store(&m->n_released, 0);
	wg_mutex_unlock(&m->lock);
}

