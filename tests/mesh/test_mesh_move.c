/* A VM that moves away (docs/mesh.md, "Stale entries and moves"), on a real
 * device with two peers and a stopped clock: this host registered X, peer
 * 0 announced X with a newer stamp, and `weft vm del` then leaves a
 * forwarding entry to peer 0, not a "gone" that makes the others forget X.
 * That holds too when a packet for X came through the tunnel between the
 * removal of the port's table entry and the mesh's part of `vm del`: its
 * lookup put the record under re-check (LOC_VERIFY), which the forwarding
 * entry must not overlook, and the packet that waited goes on to X's
 * holder (CI saw the mesh moves lose 25-31 pings to this). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mesh/internal.h"
#include "mesh/mesh.h"
#include "mesh/msg.h"
#include "port/ports.h"
#include "router/hop.h"
#include "router/table.h"
#include "wg/clock.h"
#include "wg/device.h"
#include "wg/log.h"
#include "wg/packet.h"
#include "wg/peer.h"
#include "wg/send.h"

#include "mesh_device.h"

enum { N_PEERS = 2 };

static struct wg_device *dev;
static uint8_t peer_pub[N_PEERS][WG_KEY_LEN];
static struct wg_tx tx;
/* What a VM port's entry in the table looks like to the mesh. */
static struct rt_hop port_hop = { .kind = RT_HOP_PORT };

/* The peers, looked up once: none goes away during the test. */
static struct wg_peer *peers[N_PEERS];

static void setup(void)
{
	dev = mesh_test_device("weftmove0", N_PEERS, peer_pub, &tx);
	wg_rwlock_rdlock(&dev->lock);
	for (int i = 0; i < N_PEERS; i++)
		CHECK((peers[i] = wg_device_lookup_peer(dev, peer_pub[i])));
	wg_rwlock_unlock(&dev->lock);
}

static struct mesh_stats stats(void)
{
	return mesh_test_stats(dev);
}

static struct wg_peer *peer(int i)
{
	return peers[i];
}

static struct ip_prefix vm_addr(uint8_t last)
{
	return (struct ip_prefix){ .family = AF_INET, .cidr = 32, .addr = { 10, 77, 0, last } };
}

/* What `weft vm add` does, the port left out: its table entry, then the
 * mesh's part. */
static void vm_add(const struct ip_prefix *a)
{
	wg_rwlock_wrlock(&dev->lock);
	CHECK(rt_insert(dev->allowed_ips, a->family, a->addr, a->cidr, &port_hop) == 0);
	wg_rwlock_unlock(&dev->lock);
	mesh_local_added(dev, a, 1);
}

/* What `weft vm del` does first (port_unregister). */
static void port_entry_del(const struct ip_prefix *a)
{
	wg_rwlock_wrlock(&dev->lock);
	CHECK(rt_remove(dev->allowed_ips, a->family, a->addr, a->cidr, &port_hop) == 0);
	wg_rwlock_unlock(&dev->lock);
}

/* The record of a, read under the locks. */
static struct mesh_loc read_loc(const struct ip_prefix *a)
{
	struct mesh_loc copy = { 0 };
	struct mesh_loc *l;

	mesh_lock(dev->mesh);
	l = mesh_loc_find(dev->mesh, a->family, a->addr, a->cidr);
	CHECK(l);
	copy = *l;
	mesh_unlock(dev->mesh);
	return copy;
}

/* Peer i announces a with stamp seq; the mesh thread's round takes it. */
static void announce_from(int i, const struct ip_prefix *a, uint64_t seq)
{
	struct mesh_msg msg = { .type = MESH_ANNOUNCE, .count = 1 };
	uint8_t buf[256];
	size_t len;

	msg.items[0] = (struct mesh_item){ .family = a->family, .cidr = a->cidr, .seq = seq };
	memcpy(msg.items[0].addr, a->addr, 4);
	len = mesh_msg_build(&msg, buf, sizeof(buf));
	CHECK(len > 0);
	wg_rwlock_rdlock(&dev->lock);
	mesh_received(dev, peer(i), buf, (uint32_t)len);
	wg_rwlock_unlock(&dev->lock);
	mesh_run(dev->mesh);
}

/* Peer i's packet through the tunnel to a, which has no table entry here
 * (the receive path hands it to the mesh). */
static void transit_from(int i, const struct ip_prefix *a)
{
	uint8_t ip[28] = { 0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 10, (uint8_t)i, 5 };
	struct rt_hop *hop;

	memcpy(ip + 16, a->addr, 4);
	wg_rwlock_rdlock(&dev->lock);
	hop = rt_lookup(dev->allowed_ips, AF_INET, a->addr);
	CHECK(hop && hop->kind == RT_HOP_MESH);
	mesh_transit(dev, peer(i), hop, ip, sizeof(ip), &tx);
	wg_rwlock_unlock(&dev->lock);
}

/* After `vm del`, a's table entry forwards to peer 0. */
static void check_forwarded(const struct ip_prefix *a)
{
	struct rt_hop *hop;

	wg_rwlock_rdlock(&dev->lock);
	hop = rt_lookup(dev->allowed_ips, a->family, a->addr);
	CHECK(hop && hop->kind == RT_HOP_REMOTE);
	CHECK(mesh_loc_from_hop(hop)->peer == peer(0));
	wg_rwlock_unlock(&dev->lock);
}

/* The ordinary move: the new holder's ANNOUNCE, then `vm del`. */
static void test_move(void)
{
	struct ip_prefix x = vm_addr(10);
	struct mesh_stats a;
	struct mesh_loc l;

	vm_add(&x);
	l = read_loc(&x);
	CHECK(l.local_seq);
	announce_from(0, &x, l.local_seq + 1000);
	l = read_loc(&x);
	CHECK(l.peer == peer(0) && l.state == LOC_RESOLVED);
	CHECK(!l.in_table); /* still ours: the port's entry routes it */
	a = stats();
	port_entry_del(&x);
	mesh_local_removed(dev, &x, 1);
	check_forwarded(&x);
	CHECK(stats().not_here_sent == a.not_here_sent); /* nobody is told it is gone */
}

/* A packet for X between the port entry's removal and the mesh's part of
 * `vm del`: its lookup re-checks the record; the forwarding entry comes
 * all the same, and the packet goes on. */
static void test_move_with_lookup(void)
{
	struct ip_prefix y = vm_addr(20);
	struct mesh_stats a, b;
	struct mesh_loc l;

	vm_add(&y);
	l = read_loc(&y);
	announce_from(0, &y, l.local_seq + 1000);
	port_entry_del(&y);
	a = stats();
	transit_from(1, &y);
	l = read_loc(&y);
	CHECK(l.state == LOC_VERIFY && l.peer == peer(0));
	CHECK(l.out.len == 1);
	mesh_local_removed(dev, &y, 1);
	check_forwarded(&y);
	b = stats();
	/* Only the NOT_HERE the transit answered peer 1 with (naming X's holder). */
	CHECK(b.not_here_sent == a.not_here_sent + 1);
	CHECK(b.flushed == a.flushed + 1);
	CHECK(b.queue_dropped == a.queue_dropped);
	CHECK(mesh_has_released(dev));
	CHECK(read_loc(&y).out.len == 0);
}

int main(void)
{
	setup();
	test_move();
	test_move_with_lookup();
	mesh_test_free(dev);
	printf("test_mesh_move: ok\n");
	return 0;
}
