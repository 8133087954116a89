/* Leases enforced (docs/mesh.md, "Leases"), on a real device with three
 * peers and a stopped clock: with a lease key set, a claim that a host
 * holds an address is believed only with a lease the key signed, for that
 * address, naming that host, valid now; a newer lease wins whatever the
 * stamps say, an older one (a former holder's replay) loses; a learned
 * location whose lease expired is forgotten; this host's leases
 * (mesh_lease_add) are checked and go with what it says. Without a key,
 * claims need no lease. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/ed25519.h"
#include "mesh/internal.h"
#include "mesh/lease.h"
#include "mesh/mesh.h"
#include "mesh/msg.h"
#include "port/ports.h"
#include "router/hop.h"
#include "router/table.h"
#include "wg/clock.h"
#include "wg/device.h"
#include "wg/peer.h"
#include "wg/send.h"

#include "mesh_device.h"

enum { N_PEERS = 3 };

static const uint64_t NOW = 1000 * NSEC_PER_SEC;
static const uint64_t WALL = 1700000000ull * NSEC_PER_SEC;

static struct wg_device *dev;
static uint8_t peer_pub[N_PEERS][WG_KEY_LEN], self_pub[WG_KEY_LEN];
static uint8_t seed[ED25519_SEED_SIZE], other_seed[ED25519_SEED_SIZE];
static struct wg_peer *peers[N_PEERS];
static struct wg_tx tx;
static struct rt_hop port_hop = { .kind = RT_HOP_PORT };

static struct ip_prefix vm_addr(uint8_t last)
{
	return (struct ip_prefix){ .family = AF_INET, .cidr = 32, .addr = { 10, 77, 1, last } };
}

/* A lease for a, held by holder, issued at WALL + from_s, valid for
 * valid_s, signed with key. */
static struct mesh_lease lease(const struct ip_prefix *a, const uint8_t *holder, int64_t from_s,
			       uint64_t valid_s, const uint8_t *key)
{
	struct mesh_lease l = { .family = a->family };

	memcpy(l.addr, a->addr, 4);
	memcpy(l.holder, holder, WG_KEY_LEN);
	l.issued = (uint64_t)((int64_t)WALL + from_s * (int64_t)NSEC_PER_SEC);
	l.expires = l.issued + valid_s * NSEC_PER_SEC;
	mesh_lease_sign(&l, key);
	return l;
}

static void set_key(bool on)
{
	struct mesh_config cfg;

	mesh_get(dev, &cfg, NULL);
	cfg.has_lease_key = on;
	ed25519_public(cfg.lease_key, seed);
	CHECK(mesh_set(dev, &cfg) == 0);
}

/* Peer i says type of a (holder: NULL for an ANNOUNCE's sender), stamp
 * seq, with lease l when l is set; the mesh thread's round takes it. */
static void say(int i, enum mesh_type type, const struct ip_prefix *a, const uint8_t *holder,
		uint64_t seq, const struct mesh_lease *l)
{
	struct mesh_msg msg = { .type = type, .count = 1 };
	uint8_t buf[MESH_MAX_PACKET];
	size_t len;

	msg.items[0] = (struct mesh_item){ .family = a->family, .cidr = a->cidr, .seq = seq };
	memcpy(msg.items[0].addr, a->addr, 4);
	if (holder) {
		msg.items[0].has_holder = true;
		memcpy(msg.items[0].holder, holder, WG_KEY_LEN);
	}
	if (l) {
		msg.items[0].has_lease = true;
		msg.items[0].lease = *l;
	}
	len = mesh_msg_build(&msg, buf, sizeof(buf));
	CHECK(len > 0);
	wg_rwlock_rdlock(&dev->lock);
	mesh_received(dev, peers[i], buf, (uint32_t)len);
	wg_rwlock_unlock(&dev->lock);
	mesh_run(dev->mesh);
}

/* Who holds a here (NULL: no location), and the record's lease. */
static struct wg_peer *holder_of(const struct ip_prefix *a, struct mesh_lease *out)
{
	struct wg_peer *p = NULL;
	struct mesh_loc *l;

	mesh_lock(dev->mesh);
	l = mesh_loc_find(dev->mesh, a->family, a->addr, a->cidr);
	if (l) {
		p = l->peer;
		if (out && l->lease)
			*out = *l->lease;
	}
	mesh_unlock(dev->mesh);
	return p;
}

static uint64_t refused(void)
{
	return mesh_test_stats(dev).refused_lease;
}

static void same_lease(const struct mesh_lease *a, const struct mesh_lease *b)
{
	CHECK(mesh_lease_equal(a, b));
}

/* Every way a claim can lack authority is refused and counted, and makes
 * no record. */
static void test_refusals(void)
{
	struct ip_prefix x = vm_addr(1), y = vm_addr(2);
	struct mesh_lease forged = lease(&x, peer_pub[0], -60, 3600, other_seed);
	struct mesh_lease other_host = lease(&x, peer_pub[1], -60, 3600, seed);
	struct mesh_lease other_addr = lease(&y, peer_pub[0], -60, 3600, seed);
	struct mesh_lease expired = lease(&x, peer_pub[0], -7200, 3600, seed);
	struct mesh_lease early = lease(&x, peer_pub[0], 60, 3600, seed);
	uint64_t r = refused();

	say(0, MESH_ANNOUNCE, &x, NULL, WALL, NULL);
	say(0, MESH_ANNOUNCE, &x, NULL, WALL, &forged);
	say(0, MESH_ANNOUNCE, &x, NULL, WALL, &other_host);
	say(0, MESH_ANNOUNCE, &x, NULL, WALL, &other_addr);
	say(0, MESH_ANNOUNCE, &x, NULL, WALL, &expired);
	say(0, MESH_ANNOUNCE, &x, NULL, WALL, &early);
	CHECK(refused() == r + 6);
	CHECK(!holder_of(&x, NULL));
	mesh_lock(dev->mesh);
	CHECK(!mesh_loc_find(dev->mesh, x.family, x.addr, x.cidr));
	mesh_unlock(dev->mesh);
}

/* A valid lease makes the location; a former holder's older lease does
 * not take it back, whatever its stamp; a newer lease moves it even with
 * an older stamp; a redirect needs the new holder's lease. */
static void test_order(void)
{
	struct ip_prefix x = vm_addr(3);
	struct mesh_lease first = lease(&x, peer_pub[1], -600, 3600, seed);
	struct mesh_lease second = lease(&x, peer_pub[0], -60, 3600, seed);
	struct mesh_lease third = lease(&x, peer_pub[2], -30, 3600, seed);
	struct mesh_lease held;
	uint64_t r;

	say(1, MESH_ANNOUNCE, &x, NULL, WALL - 600 * NSEC_PER_SEC, &first);
	CHECK(holder_of(&x, &held) == peers[1]);
	same_lease(&held, &first);
	say(0, MESH_ANNOUNCE, &x, NULL, WALL - 60 * NSEC_PER_SEC, &second);
	CHECK(holder_of(&x, &held) == peers[0]);
	same_lease(&held, &second);

	/* Peer 1 replays its own valid lease with the largest stamp allowed. */
	r = refused();
	say(1, MESH_ANNOUNCE, &x, NULL, WALL + 9 * NSEC_PER_SEC, &first);
	CHECK(refused() == r + 1 && holder_of(&x, NULL) == peers[0]);

	/* The holder redirects to peer 2: without peer 2's lease, refused;
	 * with it, believed (its stamp older than the record's). */
	say(0, MESH_NOT_HERE, &x, peer_pub[2], WALL - 100 * NSEC_PER_SEC, &second);
	CHECK(refused() == r + 2 && holder_of(&x, NULL) == peers[0]);
	say(0, MESH_NOT_HERE, &x, peer_pub[2], WALL - 100 * NSEC_PER_SEC, &third);
	CHECK(holder_of(&x, &held) == peers[2]);
	same_lease(&held, &third);
	CHECK(refused() == r + 2);
}

/* A location whose lease expired is forgotten by the next pass over the
 * records (a peer's session beginning afresh starts one). */
static void test_expiry(void)
{
	struct ip_prefix x = vm_addr(4);
	struct mesh_lease l = lease(&x, peer_pub[0], -60, 120, seed);
	uint64_t before = mesh_test_stats(dev).lease_expired;

	say(0, MESH_ANNOUNCE, &x, NULL, WALL, &l);
	CHECK(holder_of(&x, NULL) == peers[0]);
	wg_clock_test_hold(NOW + 1, WALL + 61 * NSEC_PER_SEC);
	wg_rwlock_rdlock(&dev->lock);
	mesh_peer_up(dev, peers[1]);
	wg_rwlock_unlock(&dev->lock);
	mesh_run(dev->mesh);
	CHECK(mesh_test_stats(dev).lease_expired == before + 1);
	CHECK(!holder_of(&x, NULL));
	wg_clock_test_hold(NOW, WALL);
}

/* This host's leases: checked when given, kept newest first, and with an
 * announcement of the address it holds. */
static void test_own(void)
{
	struct ip_prefix x = vm_addr(5), out = { .family = AF_INET, .cidr = 32, .addr = { 10, 99 } };
	struct mesh_lease mine = lease(&x, self_pub, -60, 3600, seed);
	struct mesh_lease newer = lease(&x, self_pub, -30, 3600, seed);
	struct mesh_lease bad[] = {
		lease(&x, self_pub, -60, 3600, other_seed), lease(&x, peer_pub[0], -60, 3600, seed),
		lease(&x, self_pub, -7200, 3600, seed), lease(&x, self_pub, 60, 3600, seed),
		lease(&out, self_pub, -60, 3600, seed),
	};
	static const char *const reason[] = { "not signed", "another host", "expired",
					      "in the future", "no mesh prefix" };
	struct mesh_item it;
	struct mesh_loc *l;
	const char *why;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		CHECK(mesh_lease_add(dev, &bad[i], 1, &why) == -EINVAL && why &&
		      strstr(why, reason[i]));
	}
	CHECK(mesh_test_stats(dev).leases == 0);
	CHECK(mesh_lease_add(dev, &newer, 1, &why) == 0);
	CHECK(mesh_lease_add(dev, &mine, 1, &why) == 0); /* older: kept the newer */
	CHECK(mesh_test_stats(dev).leases == 1);

	wg_rwlock_wrlock(&dev->lock);
	CHECK(rt_insert(dev->allowed_ips, x.family, x.addr, x.cidr, &port_hop) == 0);
	wg_rwlock_unlock(&dev->lock);
	mesh_local_added(dev, &x, 1);
	mesh_lock(dev->mesh);
	l = mesh_loc_find(dev->mesh, x.family, x.addr, x.cidr);
	CHECK(l && l->local_seq && !l->lease && mesh_own_lease(dev->mesh, x.family, x.addr));
	CHECK(mesh_lease_equal(mesh_own_lease(dev->mesh, x.family, x.addr), &newer));
	same_lease(mesh_known_lease(dev->mesh, l), &newer);
	mesh_item_of(l, &it);
	mesh_item_holder(&it, NULL, l->local_seq);
	mesh_item_lease(dev->mesh, &it, mesh_own_lease(dev->mesh, x.family, x.addr));
	CHECK(it.has_lease);
	same_lease(&it.lease, &newer);
	mesh_unlock(dev->mesh);

	/* Another host's older lease does not take our VM's address. */
	struct mesh_lease theirs = lease(&x, peer_pub[0], -45, 3600, seed);
	uint64_t r = refused();

	say(0, MESH_ANNOUNCE, &x, NULL, WALL + 5 * NSEC_PER_SEC, &theirs);
	CHECK(refused() == r + 1 && !holder_of(&x, NULL));
}

/* Without a key, no lease is asked for; setting one forgets what was
 * learned without; taking it away again lets claims in unleased. */
static void test_without_key(void)
{
	struct ip_prefix x = vm_addr(6);
	const char *why = NULL;
	struct mesh_lease l = lease(&x, self_pub, -60, 3600, seed);

	CHECK(mesh_test_stats(dev).leases > 0);
	set_key(false);
	CHECK(mesh_test_stats(dev).leases == 0);
	CHECK(mesh_lease_add(dev, &l, 1, &why) == -ENOKEY && why);
	say(0, MESH_ANNOUNCE, &x, NULL, WALL, NULL);
	CHECK(holder_of(&x, NULL) == peers[0]);
	set_key(true);
	CHECK(!holder_of(&x, NULL));
}

/* A holder that withdraws (NOT_HERE without a holder) leaves its record
 * forgotten but kept while its lease is valid: an older lease replayed
 * afterwards still loses. */
static void test_replay_after_withdrawal(void)
{
	struct ip_prefix x = vm_addr(7);
	struct mesh_lease old = lease(&x, peer_pub[1], -600, 3600, seed);
	struct mesh_lease cur = lease(&x, peer_pub[0], -60, 3600, seed);
	uint64_t r;

	say(1, MESH_ANNOUNCE, &x, NULL, WALL - 600 * NSEC_PER_SEC, &old);
	say(0, MESH_ANNOUNCE, &x, NULL, WALL - 60 * NSEC_PER_SEC, &cur);
	CHECK(holder_of(&x, NULL) == peers[0]);
	say(0, MESH_NOT_HERE, &x, NULL, 0, NULL);
	mesh_run(dev->mesh); /* its tick would free a record without a lease */
	CHECK(!holder_of(&x, NULL));
	r = refused();
	say(1, MESH_ANNOUNCE, &x, NULL, WALL + 9 * NSEC_PER_SEC, &old);
	CHECK(refused() == r + 1 && !holder_of(&x, NULL));
}

/* Our VM's address taken by a newer lease with an older stamp: the move is
 * judged by the leases, so `vm del` leaves a forwarding entry to the new
 * holder, and answers name it. */
static void test_move_by_lease(void)
{
	struct ip_prefix x = vm_addr(8);
	struct mesh_lease mine = lease(&x, self_pub, -60, 3600, seed);
	struct mesh_lease theirs = lease(&x, peer_pub[0], -30, 3600, seed);
	struct rt_hop *hop;
	const char *why;

	CHECK(mesh_lease_add(dev, &mine, 1, &why) == 0);
	wg_rwlock_wrlock(&dev->lock);
	CHECK(rt_insert(dev->allowed_ips, x.family, x.addr, x.cidr, &port_hop) == 0);
	wg_rwlock_unlock(&dev->lock);
	mesh_local_added(dev, &x, 1);
	say(0, MESH_ANNOUNCE, &x, NULL, WALL - 100 * NSEC_PER_SEC, &theirs);
	CHECK(holder_of(&x, NULL) == peers[0]);
	wg_rwlock_wrlock(&dev->lock);
	CHECK(rt_remove(dev->allowed_ips, x.family, x.addr, x.cidr, &port_hop) == 0);
	wg_rwlock_unlock(&dev->lock);
	mesh_local_removed(dev, &x, 1);
	wg_rwlock_rdlock(&dev->lock);
	hop = rt_lookup(dev->allowed_ips, x.family, x.addr);
	CHECK(hop && hop->kind == RT_HOP_REMOTE && mesh_loc_from_hop(hop)->peer == peers[0]);
	wg_rwlock_unlock(&dev->lock);
}

/* MESH_OWN_LEASES at most, an expired one's room counted only once it is
 * dropped (an add at the limit once wrote past the table). */
static void test_own_capacity(void)
{
	struct mesh_lease *all = calloc(MESH_OWN_LEASES, sizeof(*all)), more[2];
	size_t held = mesh_test_stats(dev).leases;
	const char *why = NULL;

	CHECK(all);
	for (int i = 0; i < MESH_OWN_LEASES - (int)held; i++) {
		struct ip_prefix a = { .family = AF_INET, .cidr = 32,
				       .addr = { 10, 77, (uint8_t)(16 + i / 256), (uint8_t)i } };

		all[i] = lease(&a, self_pub, -10, i ? 3600 : 60, seed);
	}
	CHECK(mesh_lease_add(dev, all, MESH_OWN_LEASES - held, &why) == 0);
	CHECK(mesh_test_stats(dev).leases == MESH_OWN_LEASES);
	struct ip_prefix b = { .family = AF_INET, .cidr = 32, .addr = { 10, 77, 40, 1 } };
	more[0] = lease(&b, self_pub, -10, 3600, seed);
	CHECK(mesh_lease_add(dev, more, 1, &why) == -ENOSPC && strstr(why, "4096"));

	/* The first one expired: its address again and a new one need two
	 * slots, one is free. */
	wg_clock_test_hold(NOW, WALL + 120 * NSEC_PER_SEC);
	struct ip_prefix first = { .family = AF_INET, .cidr = 32, .addr = { 10, 77, 16, 0 } };
	more[0] = lease(&first, self_pub, 100, 3600, seed);
	more[1] = lease(&b, self_pub, 100, 3600, seed);
	CHECK(mesh_lease_add(dev, more, 2, &why) == -ENOSPC);
	CHECK(mesh_lease_add(dev, more + 1, 1, &why) == 0);
	CHECK(mesh_test_stats(dev).leases == MESH_OWN_LEASES);
	wg_clock_test_hold(NOW, WALL);
	free(all);
}

int main(void)
{
	uint8_t priv[WG_KEY_LEN];

	dev = mesh_test_device("weftauth0", N_PEERS, peer_pub, &tx);
	mesh_test_key_pair(N_PEERS, self_pub, priv);
	wg_rwlock_rdlock(&dev->lock);
	for (int i = 0; i < N_PEERS; i++)
		CHECK((peers[i] = wg_device_lookup_peer(dev, peer_pub[i])));
	wg_rwlock_unlock(&dev->lock);
	ed25519_generate(seed);
	ed25519_generate(other_seed);
	set_key(true);
	test_refusals();
	test_order();
	test_expiry();
	test_own();
	test_replay_after_withdrawal();
	test_move_by_lease();
	test_own_capacity();
	test_without_key();
	mesh_test_free(dev);
	printf("test_mesh_authority: ok\n");
	return 0;
}
