/* The mesh's budgets per tenant (docs/mesh.md, "Budgets per tenant"), on a
 * real device with three peers and a stopped clock: a VM port, or a peer,
 * that floods misses to unknown mesh addresses uses up only its own
 * lookups under way, its own held sources and its own NOT_HERE answers;
 * the next tenant's first contact still starts a lookup. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mesh/internal.h"
#include "mesh/mesh.h"
#include "port/ports.h"
#include "router/table.h"
#include "wg/clock.h"
#include "wg/device.h"
#include "wg/log.h"
#include "wg/packet.h"
#include "wg/peer.h"
#include "wg/receive.h"
#include "wg/send.h"

#include "mesh_device.h"

enum { N_PEERS = 3, FLOOD = 3 * TENANT_PENDING };

static struct wg_device *dev;
static uint8_t peer_pub[N_PEERS][WG_KEY_LEN];
static struct wg_tx tx;

static void setup(void)
{
	dev = mesh_test_device("wefttenant0", N_PEERS, peer_pub, &tx);
}

static struct mesh_stats stats(void)
{
	return mesh_test_stats(dev);
}

static uint32_t udp4(uint8_t *buf, const uint8_t *src, const uint8_t *dst)
{
	memset(buf, 0, 28);
	buf[0] = 0x45;
	buf[3] = 28;
	buf[8] = 64;
	buf[9] = 17;
	memcpy(buf + 12, src, 4);
	memcpy(buf + 16, dst, 4);
	return 28;
}

/* Mesh address number n, unknown to every host: 10.77.(n / 256).(n % 256),
 * from 10.77.1.0 on. */
static void mesh_addr(unsigned int n, uint8_t addr[4])
{
	addr[0] = 10;
	addr[1] = 77;
	addr[2] = (uint8_t)(1 + n / 256);
	addr[3] = (uint8_t)n;
}

/* A VM port's packet (tenant: its slot) to mesh address n. */
static void vm_miss(unsigned int tenant, unsigned int n)
{
	struct wg_pkt *p = wg_pkt_alloc(64);
	uint8_t src[4] = { 10, 77, 0, 1 }, dst[4];

	CHECK(p);
	mesh_addr(n, dst);
	p->len = udp4(wg_pkt_payload(p), src, dst);
	wg_rwlock_rdlock(&dev->lock);
	mesh_miss(dev, &p, 1, AF_INET, dst, tenant);
	wg_rwlock_unlock(&dev->lock);
	free(p);
}

/* Peer i's packet through the tunnel to mesh address n, which this host
 * does not hold, where the receive path hands it to the mesh. */
static void peer_transit(int i, unsigned int n)
{
	uint8_t buf[64], src[4] = { 10, 10, (uint8_t)i, 5 }, dst[4];
	uint32_t len;
	struct wg_peer *p;
	struct rt_hop *hop;

	mesh_addr(n, dst);
	len = udp4(buf, src, dst);
	wg_rwlock_rdlock(&dev->lock);
	p = wg_device_lookup_peer(dev, peer_pub[i]);
	CHECK(p);
	hop = rt_lookup(dev->allowed_ips, AF_INET, dst);
	CHECK(hop && hop->kind == RT_HOP_MESH);
	mesh_transit(dev, p, hop, buf, len, &tx);
	wg_rwlock_unlock(&dev->lock);
}

/* Peer i's packet from mesh address n, which no one has said it holds:
 * held while the source is looked up. */
static void peer_spoof(int i, unsigned int n)
{
	uint8_t buf[64], src[4], dst[4] = { 10, 10, (uint8_t)N_PEERS, 1 };
	struct wg_rx rx = { 0 };
	struct wg_peer *p;

	mesh_addr(n, src);
	rx.len = udp4(buf, src, dst);
	rx.pkt = buf;
	wg_rwlock_rdlock(&dev->lock);
	CHECK((p = wg_device_lookup_peer(dev, peer_pub[i])));
	rx.peer = p;
	CHECK(wg_receive_reparse(dev, &rx));
	CHECK(!mesh_receive(dev, &rx, WG_RX_FOREIGN)); /* held, not delivered */
	wg_rwlock_unlock(&dev->lock);
}

/* VM port 0 floods; port 1's first miss still makes a lookup. */
static void test_ports(void)
{
	struct mesh_stats a, b;

	for (unsigned int n = 0; n < FLOOD; n++)
		vm_miss(0, n);
	a = stats();
	CHECK(a.lookups == TENANT_PENDING);
	CHECK(a.tenant_limited == FLOOD - TENANT_PENDING);
	vm_miss(1, 1000);
	b = stats();
	CHECK(b.lookups == a.lookups + 1);
	CHECK(b.tenant_limited == a.tenant_limited);
	/* The host's own packets are a tenant of their own too. */
	vm_miss(MESH_TENANT_HOST, 1001);
	CHECK(stats().lookups == b.lookups + 1);
}

/* Peer 0 floods packets to unknown addresses: its lookups stop at the
 * budget and its NOT_HERE answers at its own bucket's burst; peer 1's
 * first packet still gets both. */
static void test_peer_transit(void)
{
	struct mesh_stats a0 = stats(), a, b;

	for (unsigned int n = 0; n < FLOOD; n++)
		peer_transit(0, 2000 + n);
	a = stats();
	CHECK(a.lookups - a0.lookups == TENANT_PENDING);
	CHECK(a.tenant_limited - a0.tenant_limited == FLOOD - TENANT_PENDING);
	CHECK(a.not_here_sent - a0.not_here_sent == PEER_NOT_HERE_BURST);
	peer_transit(1, 3000);
	b = stats();
	CHECK(b.lookups == a.lookups + 1);
	CHECK(b.tenant_limited == a.tenant_limited);
	CHECK(b.not_here_sent == a.not_here_sent + 1);
}

/* Peer 2 sends from unknown mesh addresses: what it holds stops at its
 * budget (the rest is dropped as spoofed); peer 1's held source is still
 * looked up. Peer 2 removed: its slot is free for the next peer. */
static void test_peer_held(void)
{
	struct mesh_stats a0 = stats(), a, b;

	for (unsigned int n = 0; n < FLOOD; n++)
		peer_spoof(2, 4000 + n);
	a = stats();
	CHECK(a.held - a0.held == TENANT_PENDING);
	CHECK(a.spoofed - a0.spoofed == FLOOD - TENANT_PENDING);
	peer_spoof(1, 5000);
	b = stats();
	CHECK(b.held == a.held + 1);
	CHECK(b.lookups == a.lookups + 1);
}

/* Each peer's lookups are counted against a slot of its own. */
static void test_slots(void)
{
	unsigned int seen[N_PEERS];

	wg_rwlock_rdlock(&dev->lock);
	mesh_dev_locked_shared(dev->mesh, dev);
	wg_mutex_lock(&dev->mesh->lock);
	for (int i = 0; i < N_PEERS; i++) {
		struct wg_peer *p = wg_device_lookup_peer(dev, peer_pub[i]);

		CHECK(p && mesh_peer_tenant(dev->mesh, p, &seen[i]));
		CHECK(seen[i] >= MESH_TENANT_PEER0 && seen[i] < MESH_TENANTS);
		CHECK(p->mesh->own_slot);
		for (int j = 0; j < i; j++)
			CHECK(seen[j] != seen[i]);
	}
	wg_mutex_unlock(&dev->mesh->lock);
	wg_rwlock_unlock(&dev->lock);
}

int main(void)
{
	setup();
	test_ports();
	test_peer_transit();
	test_peer_held();
	test_slots();
	mesh_test_free(dev);
	printf("test_mesh_tenants: ok\n");
	return 0;
}
