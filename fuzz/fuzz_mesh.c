/* libFuzzer target for the mesh's state machine: sequences of operations
 * from several peers, VMs and the operator, fed into the entry points the
 * workers and the control plane call (mesh/path.c: mesh_received,
 * mesh_miss, mesh_receive, mesh_transit, mesh_take_released; mesh/control.c:
 * mesh_set, mesh_local_added and _removed, and the device's peer hooks),
 * with the mesh thread's rounds (mesh_run) and the clock driven by the
 * input.
 *
 * The device is real (wg_device_new, wg_device_set; no threads), with this
 * host and N_PEERS peers, each peer owning a static /24 and /64 outside the
 * mesh prefixes 10.77.0.0/16 and fd77::/64. Addresses come from a small pool
 * inside the prefixes, so that the messages of different peers meet on the
 * same records. Messages are built with mesh_msg_build, so every one parses:
 * the parser has its own target (fuzz_mesh_msg).
 *
 * Input: a mode byte (bit 0: multicast discovery; bit 1: a lease key, and
 * then every claim in a message reads one more byte: which lease goes with
 * it, valid or broken in one way, pick_lease), then operations, each an
 * opcode byte and its argument bytes (OP_* below; missing bytes read 0).
 *
 * After every operation, with both locks held, the invariants:
 *  - records and table agree: a record is in the table exactly when it says
 *    so, as its own entry; the table holds the peers' static entries, the
 *    mesh prefixes' (mode on), the local VMs' and the records' in table, and
 *    nothing else (counted); a mesh that is off routes nothing;
 *  - caps hold: queues per destination and in all, the queued count, every
 *    tenant's lookups under way, inbox (and every peer's share of it) and
 *    outbox;
 *  - every record is a host address inside a prefix; its stamp is at most
 *    SEQ_AHEAD_MS ahead of the wall clock; its holder, previous holder and
 *    held packets' senders are peers of the device;
 *  - nothing is learned without authority: a record's holder is one the
 *    harness's model of "Who is believed" (docs/mesh.md) lets hold that
 *    address, from the messages that reached the mesh thread: an ANNOUNCE
 *    from the holder itself, an ADVERT from the home host (unicast) or the
 *    holder itself (multicast), a MOVED from the home host, a NOT_HERE
 *    naming it from a host that may hold the address; with a lease key,
 *    only a claim whose lease was valid for it; and then every holder's
 *    record keeps the lease that names it for its address, and this
 *    host's own leases (given with a VM, OP_VM) name it, inside a prefix;
 *  - a packet mesh_receive lets through has a source of the peer it came
 *    from (a static allowed IP, a record whose holder is the peer, or was
 *    until a move less than GRACE_MS ago), or was forwarded by the host one
 *    of our VMs' addresses was at before, within the grace period;
 *  - every message the mesh sends parses. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "crypto/ed25519.h"
#include "mesh/internal.h"
#include "mesh/lease.h"
#include "mesh/mesh.h"
#include "mesh/msg.h"
#include "mesh/rendezvous.h"
#include "port/ports.h"
#include "router/table.h"
#include "wg/clock.h"
#include "wg/config.h"
#include "wg/device.h"
#include "wg/log.h"
#include "wg/noise.h"
#include "wg/peer.h"
#include "wg/send.h"

#define CHECK(cond)                                                                \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "fuzz_mesh: check failed at %s:%d: %s\n", \
				__FILE__, __LINE__, #cond);                        \
			abort();                                                   \
		}                                                                  \
	} while (0)

/* The checks walk every record, bucket and tenant after every operation:
 * not instrumented for coverage (it would be the harness's own, and cost
 * half of each execution). */
#define NO_COVERAGE __attribute__((no_sanitize("coverage")))

enum {
	N_PEERS = 4,
	N_ADDRS = 48,      /* per family, inside the prefixes: more than TENANT_PENDING */
	ADDR_OUTSIDE = N_ADDRS,     /* an address in no prefix */
	ADDR_STATIC = N_ADDRS + 1,  /* peer 0's static allowed IP */
	N_ADDR_SEL = N_ADDRS + 2,
	MAX_OPS = 512,
	MAX_NOTES = 4 * INBOX_MAX,  /* messages the model remembers per round */
};

enum op {
	OP_MSG,      /* from, type, count, then count x (addr, cidr, seq, holder) */
	OP_MISS,     /* tenant, addr, packets */
	OP_RECEIVE,  /* from, source, destination, flags (bit 0: forwarded) */
	OP_TRANSIT,  /* from, destination */
	OP_CLOCK,    /* step */
	OP_RUN,
	OP_VM,       /* addr, flags (bit 0: remove; lease mode, bit 1: with its lease) */
	OP_PEER,     /* peer, action: remove, add, up */
	OP_MODE,     /* mode */
	OP_RELEASED,
	N_OPS,
};

/* What reached the mesh's inbox since the last round, for the model. */
struct note {
	int from;
	enum mesh_type type;
	struct mesh_item item;
	bool lease_signed; /* a lease signed by the lease key went with it */
};

static struct {
	struct wg_device *dev;
	uint8_t self_priv[WG_KEY_LEN], self_pub[WG_KEY_LEN];
	uint8_t peer_pub[N_PEERS][WG_KEY_LEN];
	uint8_t stranger[WG_KEY_LEN];
	bool lease_mode;
	uint8_t lease_seed[ED25519_SEED_SIZE], forge_seed[ED25519_SEED_SIZE];
	uint8_t lease_key[MESH_LEASE_KEY_SIZE];
	bool present[N_PEERS];
	struct rt_hop port_hop; /* RT_HOP_PORT: what a local VM's entry points at */
	bool local[2][N_ADDRS + 1];
	uint64_t now, real;
	enum mesh_mode mode;
	/* The model: who may hold pool address [family][addr]. */
	bool may_hold[2][N_ADDRS][N_PEERS];
	struct note notes[MAX_NOTES];
	size_t n_notes;
	struct wg_tx tx;
	bool trace; /* FUZZ_TRACE=1: each input's mesh counters */
} g;

/* The input, read byte by byte; 0 past its end. */
struct cursor {
	const uint8_t *p, *end;
};

static uint8_t next(struct cursor *c)
{
	return c->p < c->end ? *c->p++ : 0;
}

static const uint64_t START_NOW = 1000 * NSEC_PER_SEC;
static const uint64_t START_REAL = 1700000000ull * NSEC_PER_SEC;

static int fam_index(int family)
{
	return family == AF_INET6;
}

/* The static address of peer i in family (its /24 or /64, host 1). */
static void static_addr(int i, int family, uint8_t addr[16])
{
	memset(addr, 0, 16);
	if (family == AF_INET) {
		addr[0] = 192;
		addr[1] = 168;
		addr[2] = (uint8_t)i;
		addr[3] = 1;
	} else {
		addr[0] = 0xfd;
		addr[1] = 0x10;
		addr[3] = (uint8_t)i;
		addr[15] = 1;
	}
}

/* The address selected by sel (bit 7: IPv6; the rest: which). */
NO_COVERAGE static int pick_addr(uint8_t sel, uint8_t addr[16], unsigned int *idx)
{
	int family = sel & 0x80 ? AF_INET6 : AF_INET;
	unsigned int i = (sel & 0x7f) % N_ADDR_SEL;

	*idx = i;
	if (i == ADDR_STATIC) {
		static_addr(0, family, addr);
		return family;
	}
	memset(addr, 0, 16);
	if (family == AF_INET) {
		addr[0] = 10;
		addr[1] = i == ADDR_OUTSIDE ? 78 : 77;
		addr[3] = (uint8_t)(i < N_ADDRS ? 1 + i : 1);
	} else {
		addr[0] = 0xfd;
		addr[1] = i == ADDR_OUTSIDE ? 0x78 : 0x77;
		addr[15] = (uint8_t)(i < N_ADDRS ? 1 + i : 1);
	}
	return family;
}

static uint8_t host_cidr(int family)
{
	return family == AF_INET ? 32 : 128;
}

NO_COVERAGE static int peer_index(const struct wg_peer *p)
{
	for (int i = 0; i < N_PEERS; i++)
		if (!memcmp(p->public_key, g.peer_pub[i], WG_KEY_LEN))
			return i;
	return -1;
}

static struct wg_peer *peer_at(struct wg_device *dev, int i) WG_REQUIRES_SHARED(dev->lock)
{
	return g.present[i] ? wg_device_lookup_peer(dev, g.peer_pub[i]) : NULL;
}

NO_COVERAGE static bool is_peer(struct wg_device *dev, const struct wg_peer *p) WG_REQUIRES_SHARED(dev->lock)
{
	for (struct wg_peer *q = dev->peers_head; q; q = q->list_next)
		if (q == p)
			return true;
	return false;
}

/* A minimal IPv4 or IPv6 packet from src to dst, 8 bytes of payload; its
 * length. */
static uint32_t build_ip(uint8_t *buf, int family, const uint8_t *src, const uint8_t *dst)
{
	if (family == AF_INET) {
		memset(buf, 0, 28);
		buf[0] = 0x45;
		buf[3] = 28;
		buf[8] = 64;
		buf[9] = 17;
		memcpy(buf + 12, src, 4);
		memcpy(buf + 16, dst, 4);
		return 28;
	}
	memset(buf, 0, 48);
	buf[0] = 0x60;
	buf[5] = 8;
	buf[6] = 17;
	buf[7] = 64;
	memcpy(buf + 8, src, 16);
	memcpy(buf + 24, dst, 16);
	return 48;
}

/* Adds the peers whose bit is set in which and that are not there, each
 * with its static /24 and /64. */
static void add_peers(unsigned int which)
{
	struct wg_device_config cfg = { 0 };

	for (int i = 0; i < N_PEERS; i++) {
		struct wg_peer_config *pc;

		if (g.present[i] || !(which & 1u << i))
			continue;
		pc = wg_config_add_peer(&cfg);
		CHECK(pc);
		memcpy(pc->public_key, g.peer_pub[i], WG_KEY_LEN);
		for (int f = 0; f < 2; f++) {
			struct wg_allowed_ip *a = wg_config_add_allowed_ip(pc);

			CHECK(a);
			a->prefix.family = f ? AF_INET6 : AF_INET;
			a->prefix.cidr = f ? 64 : 24;
			static_addr(i, a->prefix.family, a->prefix.addr);
			a->prefix.addr[f ? 15 : 3] = 0;
		}
		g.present[i] = true;
	}
	if (cfg.n_peers)
		CHECK(wg_device_set(g.dev, &cfg) == 0);
	wg_config_clear(&cfg);
}

static void remove_peer(int i)
{
	struct wg_device_config cfg = { 0 };
	struct wg_peer_config *pc = wg_config_add_peer(&cfg);

	CHECK(pc);
	memcpy(pc->public_key, g.peer_pub[i], WG_KEY_LEN);
	pc->remove = true;
	CHECK(wg_device_set(g.dev, &cfg) == 0);
	wg_config_clear(&cfg);
	g.present[i] = false;
}

/* The messages the mesh sent, off the peers' staged queues: each parses. */
NO_COVERAGE static void drain_sent(void)
{
	wg_rwlock_rdlock(&g.dev->lock);
	for (struct wg_peer *p = g.dev->peers_head; p; p = p->list_next) {
		struct wg_pkt *pkt;

		wg_mutex_lock(&p->lock);
		while ((pkt = wg_pkt_queue_pop(&p->staged))) {
			struct mesh_msg msg;
			const uint8_t *ip = wg_pkt_payload(pkt);

			if (mesh_msg_is_mesh(ip, pkt->len))
				CHECK(mesh_msg_parse(ip, pkt->len, &msg) == MESH_OK);
			else /* a forwarded packet */
				CHECK(mesh_fwd_unwrap(ip, pkt->len) > 0);
			free(pkt);
		}
		wg_mutex_unlock(&p->lock);
	}
	wg_rwlock_unlock(&g.dev->lock);
}

/* The home of a pool address among this host and the present peers: the
 * peer's index, or -1 for this host. */
static int home_of(const struct mesh_item *it)
{
	uint8_t keys[N_PEERS + 1][RDV_KEY_LEN];
	int who[N_PEERS + 1];
	size_t n = 0;
	long h;

	memcpy(keys[n], g.self_pub, RDV_KEY_LEN);
	who[n++] = -1;
	for (int i = 0; i < N_PEERS; i++) {
		if (!g.present[i])
			continue;
		memcpy(keys[n], g.peer_pub[i], RDV_KEY_LEN);
		who[n++] = i;
	}
	h = rdv_home((const uint8_t(*)[RDV_KEY_LEN])keys, n, it->family, it->addr, it->cidr);
	return h < 0 ? -1 : who[h];
}

static int key_index(const uint8_t *key)
{
	for (int i = 0; i < N_PEERS; i++)
		if (!memcmp(key, g.peer_pub[i], WG_KEY_LEN))
			return i;
	return -1;
}

/* The pool index of an item's address, or -1. */
NO_COVERAGE static int item_pool(const struct mesh_item *it)
{
	uint8_t addr[16];
	unsigned int idx;

	for (int i = 0; i < N_ADDRS; i++) {
		pick_addr((uint8_t)((it->family == AF_INET6 ? 0x80 : 0) | i), addr, &idx);
		if (!memcmp(addr, it->addr, it->family == AF_INET ? 4 : 16))
			return i;
	}
	return -1;
}

/* Lease mode: whether the note's lease, signed by the lease key, is for
 * its address, names holder, and is valid at the round's wall clock
 * (issued at most MESH_LEASE_SKEW_NS ahead, not expired). */
static bool lease_good(const struct note *n, int holder)
{
	const struct mesh_lease *l = &n->item.lease;

	return n->lease_signed && n->item.has_lease && l->family == n->item.family &&
	       !memcmp(l->addr, n->item.addr, 16) &&
	       !memcmp(l->holder, g.peer_pub[holder], WG_KEY_LEN) &&
	       l->issued <= g.real + 10 * NSEC_PER_SEC && l->expires > g.real;
}

/* The model of "Who is believed": what the round about to run may let a
 * holder take, from the notes that reached the inbox (an over-estimate:
 * the thread also checks that it asked, and whom it records). */
static void model_round(void)
{
	for (size_t i = 0; i < g.n_notes; i++) {
		const struct note *n = &g.notes[i];
		const struct mesh_item *it = &n->item;
		int a = item_pool(it), f = fam_index(it->family), holder, home;

		if (!g.present[n->from] || a < 0 || it->cidr != host_cidr(it->family) ||
		    it->seq > g.real + SEQ_AHEAD_MS * NSEC_PER_MSEC)
			continue;
		holder = it->has_holder ? key_index(it->holder) : n->from;
		if (holder < 0 || (g.lease_mode && !lease_good(n, holder)))
			continue;
		home = home_of(it);
		switch (n->type) {
		case MESH_ANNOUNCE:
			g.may_hold[f][a][holder] = true;
			break;
		case MESH_ADVERT:
			if (!it->has_holder)
				break;
			if (g.mode == MESH_MULTICAST ? holder == n->from : home == n->from)
				g.may_hold[f][a][holder] = true;
			break;
		case MESH_MOVED:
			if (g.mode == MESH_UNICAST && home == n->from)
				g.may_hold[f][a][holder] = true;
			break;
		case MESH_NOT_HERE:
			if (it->has_holder && g.may_hold[f][a][n->from])
				g.may_hold[f][a][holder] = true;
			break;
		case MESH_SOLICIT:
			break;
		}
	}
	g.n_notes = 0;
}

/* Both locks held: every invariant of the file comment's list but the
 * receive check. */
NO_COVERAGE static void check_state(struct mesh *m) WG_REQUIRES(m->dev->lock, m->lock)
{
	struct wg_device *dev = m->dev;
	size_t n_locs = 0, n_located = 0, queued = 0, n_timed = 0, n_static = 0, n_local = 0;
	size_t in_shares = 0;
	/* Lookups under way per tenant: counted for the tenants seen (of
	 * MESH_TENANTS, 1,282) by a stamp per check, not cleared every time. */
	static unsigned int pending[MESH_TENANTS];
	static uint32_t stamp[MESH_TENANTS], gen;

	gen++;
	CHECK(m->n_inbox <= INBOX_MAX && m->n_outbox <= OUTBOX_MAX);
	CHECK(m->queued <= QUEUE_TOTAL);
	for (struct mesh_loc *l = m->timed; l; l = l->timed_next) {
		CHECK(l->timed);
		CHECK(++n_timed <= m->n_locs);
	}
	for (size_t b = 0; b < m->n_buckets; b++) {
		for (struct mesh_loc *l = m->buckets[b]; l; l = l->hash_next) {
			void *there = rt_get(dev->allowed_ips, l->family, l->addr, l->cidr);
			int a = -1;

			n_locs++;
			CHECK(l->family == AF_INET || l->family == AF_INET6);
			CHECK(l->cidr == host_cidr(l->family));
			CHECK(mesh_in_prefixes(m, l->family, l->addr));
			CHECK(l->hop.kind == RT_HOP_REMOTE);
			CHECK(l->in_table == (there == &l->hop));
			CHECK(!l->in_table || g.mode != MESH_OFF);
			n_located += l->in_table;
			CHECK(l->seq <= g.real + SEQ_AHEAD_MS * NSEC_PER_MSEC);
			CHECK(l->state <= LOC_VERIFY);
			if (l->state == LOC_PENDING || l->state == LOC_VERIFY ||
			    l->state == LOC_NEGATIVE)
				CHECK(l->timed);
			if (l->state == LOC_PENDING || l->state == LOC_VERIFY) {
				CHECK(l->tenant < MESH_TENANTS);
				if (stamp[l->tenant] != gen) {
					stamp[l->tenant] = gen;
					pending[l->tenant] = 0;
				}
				if (++pending[l->tenant] > TENANT_PENDING && g.trace)
					fprintf(stderr, "tenant %u: %u pending\n", l->tenant,
						pending[l->tenant]);
				CHECK(pending[l->tenant] <= TENANT_PENDING);
			}
			CHECK(l->out.len <= QUEUE_PER_DEST && l->in.len <= QUEUE_PER_DEST);
			/* Held sources wait only for a lookup under way. */
			CHECK(!l->in.len || l->state == LOC_PENDING || l->state == LOC_VERIFY);
			queued += l->out.len + l->in.len;
			for (struct wg_pkt *p = l->in.head; p; p = p->next)
				CHECK(is_peer(m->dev, p->egress));
			CHECK(!l->prev || is_peer(m->dev, l->prev));
			if (l->peer) {
				struct mesh_item it = { .family = l->family, .cidr = l->cidr };
				int who = peer_index(l->peer);

				CHECK(is_peer(m->dev, l->peer));
				memcpy(it.addr, l->addr, 16);
				a = item_pool(&it);
				CHECK(a >= 0 && who >= 0);
				CHECK(g.may_hold[fam_index(l->family)][a][who]);
				if (g.lease_mode) {
					struct ip_prefix host = { .family = (uint8_t)l->family,
								  .cidr = l->cidr };

					memcpy(host.addr, l->addr, 16);
					CHECK(l->lease && mesh_lease_covers(l->lease, &host));
					CHECK(!memcmp(l->lease->holder, l->peer->public_key, WG_KEY_LEN));
				}
			}
		}
	}
	CHECK(n_locs == m->n_locs && n_located == m->n_located && queued == m->queued);
	CHECK(m->n_own <= MESH_OWN_LEASES && (g.lease_mode || !m->n_own));
	for (size_t i = 0; i < m->n_own; i++)
		CHECK(!memcmp(m->own[i].holder, g.self_pub, WG_KEY_LEN) &&
		      mesh_in_prefixes(m, m->own[i].family, m->own[i].addr));
	for (struct wg_peer *p = m->dev->peers_head; p; p = p->list_next) {
		CHECK(!p->mesh || p->mesh->inbox <= INBOX_PER_PEER);
		in_shares += p->mesh ? p->mesh->inbox : 0;
	}
	CHECK(in_shares <= m->n_inbox);

	/* The table: nothing but what the file comment lists. */
	for (int i = 0; i < N_PEERS; i++) {
		struct wg_peer *p = peer_at(m->dev, i);

		for (int f = 0; p && f < 2; f++) {
			uint8_t addr[16];
			int family = f ? AF_INET6 : AF_INET;

			static_addr(i, family, addr);
			addr[f ? 15 : 3] = 0;
			CHECK(rt_get(dev->allowed_ips, family, addr, f ? 64 : 24) == &p->hop);
			n_static++;
		}
	}
	for (size_t i = 0; i < m->cfg.n_prefixes; i++)
		CHECK(rt_get(dev->allowed_ips, m->cfg.prefixes[i].family, m->cfg.prefixes[i].addr,
			     m->cfg.prefixes[i].cidr) ==
		      (g.mode != MESH_OFF ? &m->prefix_hop : NULL));
	for (int f = 0; f < 2; f++) {
		for (unsigned int a = 0; a <= N_ADDRS; a++) {
			uint8_t addr[16];
			unsigned int idx;
			int family = pick_addr((uint8_t)((f ? 0x80 : 0) | a), addr, &idx);

			if (!g.local[f][a])
				continue;
			CHECK(rt_get(dev->allowed_ips, family, addr, host_cidr(family)) ==
			      &g.port_hop);
			n_local++;
		}
	}
	CHECK(rt_count(dev->allowed_ips) == n_static + n_local + n_located +
						    (g.mode != MESH_OFF ? m->cfg.n_prefixes : 0));
}

NO_COVERAGE static void check(void)
{
	struct mesh *m = g.dev->mesh;

	mesh_lock(m);
	check_state(m);
	mesh_unlock(m);
	drain_sent();
}

static void set_mode(enum mesh_mode mode)
{
	struct mesh_config cfg = { .mode = mode, .n_prefixes = 2 };

	cfg.prefixes[0] = (struct ip_prefix){ .family = AF_INET, .cidr = 16, .addr = { 10, 77 } };
	cfg.prefixes[1] = (struct ip_prefix){ .family = AF_INET6, .cidr = 64, .addr = { 0xfd, 0x77 } };
	cfg.has_lease_key = g.lease_mode;
	memcpy(cfg.lease_key, g.lease_key, sizeof(cfg.lease_key));
	CHECK(mesh_set(g.dev, &cfg) == 0);
	g.mode = mode;
}

static uint64_t pick_seq(uint8_t sel)
{
	switch (sel % 8) {
	case 0: return g.real - NSEC_PER_SEC;
	case 1: return g.real;
	case 2: return g.real + 5 * NSEC_PER_SEC;
	case 3: return g.real + (SEQ_AHEAD_MS + 1) * NSEC_PER_MSEC;
	case 4: return UINT64_MAX;
	case 5: return 1;
	case 6: return g.real - (uint64_t)(sel >> 3) * NSEC_PER_MSEC;
	default: return 0;
	}
}

/* Holder sel: none (0-2), a peer (3-6), this host (7), a stranger (8). */
static void pick_holder(struct mesh_item *it, uint8_t sel)
{
	sel %= 9;
	it->has_holder = sel >= 3;
	if (sel >= 3 && sel <= 6)
		memcpy(it->holder, g.peer_pub[sel - 3], WG_KEY_LEN);
	else if (sel == 7)
		memcpy(it->holder, g.self_pub, WG_KEY_LEN);
	else if (sel == 8)
		memcpy(it->holder, g.stranger, WG_KEY_LEN);
}

/* Lease mode: the lease that goes with a claim of it (sel: none, valid,
 * naming another host, forged, expired, issued in the future, for another
 * address; the round may run when the future has come); whether the lease
 * key signed it. */
static bool pick_lease(struct mesh_item *it, int from, uint8_t sel)
{
	struct mesh_lease *l = &it->lease;
	const uint8_t *holder = it->has_holder ? it->holder : g.peer_pub[from];
	unsigned int kind = sel % 8, age = sel >> 3;

	it->has_lease = kind != 0;
	if (!kind)
		return false;
	memset(l, 0, sizeof(*l));
	l->family = it->family;
	memcpy(l->addr, it->addr, 16);
	memcpy(l->holder, holder, WG_KEY_LEN);
	/* Valid for 30 s to 2 min, issued up to 31 s ago: later ones newer. */
	l->issued = g.real - (uint64_t)age * NSEC_PER_SEC;
	l->expires = l->issued + (1 + age % 4) * 30 * NSEC_PER_SEC;
	switch (kind) {
	case 3:
		memcpy(l->holder, g.peer_pub[(from + 1) % N_PEERS], WG_KEY_LEN);
		break;
	case 5:
		l->issued = g.real - 120 * NSEC_PER_SEC;
		l->expires = g.real - 60 * NSEC_PER_SEC;
		break;
	case 6:
		l->issued = g.real + 60 * NSEC_PER_SEC;
		l->expires = l->issued + 60 * NSEC_PER_SEC;
		break;
	case 7:
		l->addr[l->family == AF_INET ? 3 : 15] ^= 1;
		break;
	}
	mesh_lease_sign(l, kind == 4 ? g.forge_seed : g.lease_seed);
	return kind != 4;
}

static void mask(uint8_t *addr, int family, uint8_t cidr)
{
	size_t len = family == AF_INET ? 4 : 16;

	for (size_t i = 0; i < len; i++) {
		int bits = (int)cidr - (int)(8 * i);

		if (bits <= 0)
			addr[i] = 0;
		else if (bits < 8)
			addr[i] &= (uint8_t)(0xff << (8 - bits));
	}
}

static void op_msg(struct cursor *c)
{
	int from = next(c) % N_PEERS;
	struct mesh_msg msg = { .type = (enum mesh_type)(1 + next(c) % 5) };
	uint8_t buf[MESH_MAX_PACKET];
	bool good[3] = { false };
	size_t len;
	struct wg_peer *p;

	msg.count = 1 + next(c) % 3;
	for (size_t i = 0; i < msg.count; i++) {
		struct mesh_item *it = &msg.items[i];
		static const uint8_t cidrs[2][4] = { { 32, 24, 16, 8 }, { 128, 64, 48, 8 } };
		unsigned int idx;
		uint8_t cs;

		memset(it, 0, sizeof(*it));
		it->family = pick_addr(next(c), it->addr, &idx);
		cs = next(c) % 10;
		it->cidr = cidrs[fam_index(it->family)][cs < 7 ? 0 : cs - 6];
		mask(it->addr, it->family, it->cidr);
		it->seq = pick_seq(next(c));
		pick_holder(it, next(c));
		/* The per-type rules of mesh/msg.h, so that it builds. */
		if (msg.type == MESH_SOLICIT) {
			it->seq = 0;
			it->has_holder = false;
		} else if (msg.type == MESH_ANNOUNCE || msg.type == MESH_MOVED) {
			if (!it->seq)
				it->seq = 1;
			if (msg.type == MESH_ANNOUNCE)
				it->has_holder = false;
			else if (!it->has_holder)
				pick_holder(it, (uint8_t)(3 + (from + 1) % N_PEERS));
		}
		if (g.lease_mode && msg.type != MESH_SOLICIT &&
		    (it->has_holder || msg.type == MESH_ANNOUNCE))
			good[i] = pick_lease(it, from, next(c));
	}
	len = mesh_msg_build(&msg, buf, sizeof(buf));
	CHECK(len);
	wg_rwlock_rdlock(&g.dev->lock);
	p = peer_at(g.dev, from);
	if (p && mesh_enabled(g.dev)) {
		mesh_received(g.dev, p, buf, (uint32_t)len);
		for (size_t i = 0; i < msg.count && g.n_notes < MAX_NOTES; i++)
			g.notes[g.n_notes++] = (struct note){ from, msg.type, msg.items[i], good[i] };
	}
	wg_rwlock_unlock(&g.dev->lock);
}

/* Packets from tenant to dst, where the data path would hand them to the
 * mesh (dp_next_hop: the table says a mesh prefix). */
static void miss(unsigned int tenant, int family, const uint8_t *dst, unsigned int n)
{
	uint8_t src[16] = { 10, 77, 0, 200 };
	struct wg_pkt *p = wg_pkt_alloc(64), *pkts[70];
	struct rt_hop *hop;

	CHECK(p && n <= 70);
	if (family == AF_INET6)
		memcpy(src, (uint8_t[16]){ 0xfd, 0x77, [15] = 200 }, 16);
	p->len = build_ip(wg_pkt_payload(p), family, src, dst);
	for (unsigned int i = 0; i < n; i++)
		pkts[i] = p;
	wg_rwlock_rdlock(&g.dev->lock);
	hop = rt_lookup(g.dev->allowed_ips, family, dst);
	if (hop && hop->kind == RT_HOP_MESH)
		mesh_miss(g.dev, pkts, n, family, dst, tenant);
	wg_rwlock_unlock(&g.dev->lock);
	free(p);
}

/* Tenant: two ports, the host, a peer slot. Packets: 1-70 to one address,
 * or (bit 7) one to every pool address of the family. */
static void op_miss(struct cursor *c)
{
	unsigned int tenant = next(c) % 4;
	uint8_t sel = next(c), count = next(c), dst[16];
	unsigned int idx;
	int family = pick_addr(sel, dst, &idx);

	tenant = tenant < 2 ? tenant : tenant == 2 ? MESH_TENANT_HOST : MESH_TENANT_PEER0;
	if (!(count & 0x80)) {
		miss(tenant, family, dst, 1 + count % 70);
		return;
	}
	for (unsigned int i = 0; i < N_ADDRS; i++) {
		pick_addr((uint8_t)((sel & 0x80) | i), dst, &idx);
		miss(tenant, family, dst, 1);
	}
}

/* Whether mesh_receive's "go on" is one the contract allows. */
static bool source_ok(const struct wg_rx *rx, bool forwarded) WG_REQUIRES_SHARED(g.dev->lock)
{
	struct mesh *m = g.dev->mesh;
	struct rt_hop *to;
	struct mesh_loc *l;
	bool ok;

	if (!forwarded) {
		if (rx->hop == &rx->peer->hop)
			return true;
		if (!rx->hop || rx->hop->kind != RT_HOP_REMOTE)
			return false;
		l = mesh_loc_from_hop(rx->hop);
		return l->peer == rx->peer || (l->prev == rx->peer && g.now < l->prev_until);
	}
	to = rt_lookup(g.dev->allowed_ips, rx->family, rx->dst);
	if (to != &g.port_hop || rx->hop == &g.port_hop)
		return false;
	wg_mutex_lock(&m->lock);
	l = mesh_loc_find(m, rx->family, rx->dst, host_cidr(rx->family));
	ok = l && l->local_seq && l->prev == rx->peer && g.now < l->prev_until &&
	     mesh_in_prefixes(m, rx->family, rx->src);
	wg_mutex_unlock(&m->lock);
	return ok;
}

static void op_receive(struct cursor *c)
{
	int from = next(c) % N_PEERS;
	uint8_t ss = next(c), ds = next(c), flags = next(c);
	uint8_t src[16], dst[16], buf[MESH_FWD_HLEN + 64 + 16];
	unsigned int si, di;
	int family = pick_addr(ss, src, &si);
	bool forwarded = flags & 1;
	struct wg_rx rx = { 0 };
	uint32_t len;
	struct wg_peer *p;

	pick_addr((uint8_t)((ss & 0x80) | (ds & 0x7f)), dst, &di);
	if (si == ADDR_STATIC) /* the static address of some peer */
		static_addr((flags >> 1) % N_PEERS, family, src);
	len = build_ip(buf + MESH_FWD_HLEN, family, src, dst);
	if (forwarded) {
		CHECK(mesh_fwd_wrap(buf, buf + MESH_FWD_HLEN, len));
		len += MESH_FWD_HLEN;
	} else {
		memmove(buf, buf + MESH_FWD_HLEN, len);
	}
	wg_rwlock_rdlock(&g.dev->lock);
	p = peer_at(g.dev, from);
	rx.peer = p;
	rx.pkt = buf;
	rx.len = len;
	/* What wg_receive_open hands on, and where the data path asks. */
	if (p && wg_receive_reparse(g.dev, &rx) && mesh_enabled(g.dev) &&
	    mesh_receive(g.dev, &rx, rx.hop == &p->hop ? WG_RX_PEER : WG_RX_FOREIGN))
		CHECK(source_ok(&rx, forwarded));
	wg_rwlock_unlock(&g.dev->lock);
}

static void op_transit(struct cursor *c)
{
	int from = next(c) % N_PEERS;
	uint8_t dst[16], src[16], buf[64];
	unsigned int idx;
	int family = pick_addr(next(c), dst, &idx);
	struct wg_peer *p;
	struct rt_hop *hop;
	uint32_t len;

	static_addr(from, family, src);
	len = build_ip(buf, family, src, dst);
	wg_rwlock_rdlock(&g.dev->lock);
	p = peer_at(g.dev, from);
	hop = rt_lookup(g.dev->allowed_ips, family, dst);
	/* Where the receive path hands a packet to the mesh. */
	if (p && mesh_enabled(g.dev) && hop &&
	    (hop->kind == RT_HOP_REMOTE || hop->kind == RT_HOP_MESH))
		mesh_transit(g.dev, p, hop, buf, len, &g.tx);
	wg_rwlock_unlock(&g.dev->lock);
}

static void set_clock(void)
{
	wg_clock_test_hold(g.now, g.real);
}

static void op_clock(struct cursor *c)
{
	static const uint64_t steps_ms[8] = { 1, 10, 50, 100, 1000, 5001, 60000, 300001 };
	uint64_t ns = steps_ms[next(c) % 8] * NSEC_PER_MSEC;

	g.now += ns;
	g.real += ns;
	set_clock();
}

static void op_run(void)
{
	model_round();
	mesh_run(g.dev->mesh);
}

static void op_vm(struct cursor *c)
{
	uint8_t sel = next(c), addr[16], flags = next(c);
	bool remove = flags & 1;
	unsigned int idx;
	int family = pick_addr(sel, addr, &idx), f = fam_index(family);
	struct ip_prefix a = { .family = (uint8_t)family, .cidr = host_cidr(family) };

	if (idx > ADDR_OUTSIDE || g.local[f][idx] != remove)
		return;
	memcpy(a.addr, addr, 16);
	/* Lease mode, bit 1: this host's lease for it first (issued up to 63 s
	 * ago, valid for 2 min): taken unless the address is in no prefix. */
	if (!remove && g.lease_mode && (flags & 2)) {
		struct mesh_lease l = { .family = family };
		const char *why = NULL;

		memcpy(l.addr, addr, 16);
		memcpy(l.holder, g.self_pub, WG_KEY_LEN);
		l.issued = g.real - (uint64_t)(flags >> 2) * NSEC_PER_SEC;
		l.expires = l.issued + 120 * NSEC_PER_SEC;
		mesh_lease_sign(&l, g.lease_seed);
		CHECK(mesh_lease_add(g.dev, &l, 1, &why) == (idx == ADDR_OUTSIDE ? -EINVAL : 0));
	}
	/* As port_register and port_unregister do: the table first. */
	wg_rwlock_wrlock(&g.dev->lock);
	if (remove)
		CHECK(rt_remove(g.dev->allowed_ips, family, addr, a.cidr, &g.port_hop) == 0);
	else
		CHECK(rt_insert(g.dev->allowed_ips, family, addr, a.cidr, &g.port_hop) == 0);
	wg_rwlock_unlock(&g.dev->lock);
	g.local[f][idx] = !remove;
	if (remove)
		mesh_local_removed(g.dev, &a, 1);
	else
		mesh_local_added(g.dev, &a, 1);
}

static void op_peer(struct cursor *c)
{
	int i = next(c) % N_PEERS;
	uint8_t action = next(c) % 3;
	struct wg_peer *p;

	if (action == 0 && g.present[i]) {
		remove_peer(i);
	} else if (action == 1 && !g.present[i]) {
		add_peers(1u << i);
	} else if (action == 2) { /* a fresh session (the handshake thread) */
		wg_rwlock_rdlock(&g.dev->lock);
		if ((p = peer_at(g.dev, i)))
			mesh_peer_up(g.dev, p);
		wg_rwlock_unlock(&g.dev->lock);
	}
}

static void op_released(void)
{
	struct wg_pkt_queue out, in;
	struct wg_pkt *p;

	wg_rwlock_rdlock(&g.dev->lock);
	mesh_take_released(g.dev, &out, &in);
	wg_rwlock_unlock(&g.dev->lock);
	while ((p = wg_pkt_queue_pop(&out)))
		free(p);
	while ((p = wg_pkt_queue_pop(&in)))
		free(p);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct wg_device_config cfg = { 0 };
	struct wg_noise_identity id;
	int fd;

	(void)argc;
	(void)argv;
	wg_log_set_level(WG_LOG_SILENT);
	wg_clock_init();
	g.trace = getenv("FUZZ_TRACE") && !strcmp(getenv("FUZZ_TRACE"), "1");
	CHECK(sodium_init() >= 0);
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	g.dev = wg_device_new("weftfuzz0", &fd, NULL, 1, false, WG_DEFAULT_MTU);
	CHECK(g.dev && port_table_new(g.dev) == 0);
	g.dev->hooks.peer_removed = mesh_peer_removed;
	g.dev->hooks.peer_up = mesh_peer_up;
	for (int i = 0; i <= N_PEERS; i++) {
		uint8_t priv[WG_KEY_LEN];

		for (size_t b = 0; b < sizeof(priv); b++)
			priv[b] = (uint8_t)(0x31 * (i + 1) + 7 * b);
		wg_noise_identity_set(&id, priv);
		if (i == N_PEERS) {
			memcpy(g.self_priv, priv, WG_KEY_LEN);
			memcpy(g.self_pub, id.static_public, WG_KEY_LEN);
		} else {
			memcpy(g.peer_pub[i], id.static_public, WG_KEY_LEN);
		}
	}
	memset(g.stranger, 0x5a, sizeof(g.stranger));
	memset(g.lease_seed, 0x4c, sizeof(g.lease_seed));
	memset(g.forge_seed, 0x46, sizeof(g.forge_seed));
	ed25519_public(g.lease_key, g.lease_seed);
	cfg.has_private_key = true;
	memcpy(cfg.private_key, g.self_priv, WG_KEY_LEN);
	CHECK(wg_device_set(g.dev, &cfg) == 0);
	wg_config_clear(&cfg);
	sodium_memzero(&id, sizeof(id));
	g.port_hop.kind = RT_HOP_PORT;
	wg_tx_direct_init(&g.tx, g.dev); /* nothing is sealed: no peer has a session */
	return 0;
}

/* After each input, so that nothing it made outlives it: the mesh freed
 * (peer->mesh lives in the peers' sodium_malloc'd memory, which
 * LeakSanitizer does not scan, so a mesh kept to the next input looks
 * leaked), the VMs gone, every peer there again, nothing left to send. */
static void teardown(void)
{
	wg_rwlock_wrlock(&g.dev->lock);
	mesh_free(g.dev);
	for (int f = 0; f < 2; f++) {
		for (unsigned int a = 0; a <= N_ADDRS; a++) {
			uint8_t addr[16];
			unsigned int idx;
			int family = pick_addr((uint8_t)((f ? 0x80 : 0) | a), addr, &idx);

			if (g.local[f][a])
				rt_remove(g.dev->allowed_ips, family, addr, host_cidr(family),
					  &g.port_hop);
			g.local[f][a] = false;
		}
	}
	wg_rwlock_unlock(&g.dev->lock);
	add_peers(~0u);
	drain_sent();
}

/* Before each input: a new mesh, the clocks at their first readings, the
 * model empty. */
static void reset(enum mesh_mode mode)
{
	g.now = START_NOW;
	g.real = START_REAL;
	set_clock();
	memset(g.may_hold, 0, sizeof(g.may_hold));
	g.n_notes = 0;
	CHECK(mesh_new(g.dev, &g.dev->mesh) == 0);
	set_mode(mode);
}

/* FUZZ_TRACE=1: the input's mesh counters that moved. */
static void trace_counters(void)
{
	struct mesh_stats st;

	mesh_get(g.dev, NULL, &st);
#define TRACE_COUNTER(name) \
	if (st.name)        \
		fprintf(stderr, " " #name "=%llu", (unsigned long long)st.name);
	MESH_COUNTERS(TRACE_COUNTER)
#undef TRACE_COUNTER
	fprintf(stderr, "\n");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cursor c = { data, data + size };
	uint8_t mode = next(&c);

	g.lease_mode = mode & 2;
	reset(mode & 1 ? MESH_MULTICAST : MESH_UNICAST);
	check();
	for (int ops = 0; c.p < c.end && ops < MAX_OPS; ops++) {
		switch ((enum op)(next(&c) % N_OPS)) {
		case OP_MSG: op_msg(&c); break;
		case OP_MISS: op_miss(&c); break;
		case OP_RECEIVE: op_receive(&c); break;
		case OP_TRANSIT: op_transit(&c); break;
		case OP_CLOCK: op_clock(&c); break;
		case OP_RUN: op_run(); break;
		case OP_VM: op_vm(&c); break;
		case OP_PEER: op_peer(&c); break;
		case OP_MODE:
			set_mode((enum mesh_mode)(next(&c) % 3));
			break;
		case OP_RELEASED: op_released(); break;
		case N_OPS: break;
		}
		check();
	}
	op_run();
	check();
	op_released();
	if (g.trace)
		trace_counters();
	teardown();
	return 0;
}


