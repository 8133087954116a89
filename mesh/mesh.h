/* The mesh: every host is a WireGuard peer of every other, and hosts learn
 * which host holds a VM address instead of configuring it as an allowed IP
 * (docs/mesh.md).
 *
 * Addresses inside a mesh prefix are VM addresses. A local VM's address is
 * registered to its port (weft vm add); a remote one is learned, and lives
 * in the forwarding table as a struct mesh_loc pointing at the peer that
 * holds it. A packet to a mesh address the table does not know waits in a
 * bounded per-destination queue while the mesh thread solicits the holder
 * (every member in multicast mode, the address's home host in unicast
 * mode); the answer installs the location and flushes the queue.
 *
 * The mesh thread owns every change: it takes the device write lock to
 * change the table. Workers only read the table and hand misses, held
 * packets and received messages to the thread (mesh_* below). */
#ifndef WEFT_MESH_MESH_H
#define WEFT_MESH_MESH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mesh/lease.h"
#include "mesh/types.h"
#include "router/hop.h"
#include "port/config.h"
#include "wg/device.h"
#include "wg/lock.h"
#include "wg/packet.h"
#include "wg/receive.h"

/* What this host knows about one mesh address: the record of the mesh
 * thread, and, while it says where the address is (or that it is nowhere),
 * the forwarding-table value workers find. Workers read only hop, peer,
 * prev and prev_until, under the device lock; everything is written with
 * the device write lock and the mesh lock held. */
struct mesh_loc {
	struct rt_hop hop;          /* RT_HOP_REMOTE; first */
	struct wg_peer *peer;       /* the holder; NULL: nobody (negative) */
	struct wg_peer *prev;       /* the holder before a move, still accepted
				     * as a source until prev_until */
	uint64_t prev_until;        /* wg_clock_now() ns */
	/* The mesh thread's, under the mesh lock. */
	uint64_t seq;               /* the holder's registration stamp */
	uint64_t local_seq;         /* registered on a local port at; 0: not local */
	uint64_t deadline;          /* pending: next solicit; negative: forget */
	uint64_t asked_at;          /* pending: when the lookup started */
	uint64_t confirmed;         /* learned: when an answer last said so */
	struct mesh_lease *lease;   /* with a lease key: the lease of the last
				     * peer that held it (malloc'd); this host's
				     * own are in struct mesh's own */
	struct mesh_loc *hash_next;
	struct mesh_loc *timed_next; /* on the list of pending and negative records */
	struct wg_pkt_queue out;    /* packets to it, waiting for an answer */
	struct wg_pkt_queue in;     /* packets from it, waiting for a source check */
	uint8_t state;              /* enum in mesh/mesh.c */
	uint8_t tries;
	uint16_t tenant;            /* whose lookup it is (mesh_miss) */
	bool expiring;              /* re-checked for its age: no answer, forgotten */
	bool in_table;
	bool timed;
	int family;
	uint8_t cidr;
	uint8_t addr[16];
};

static inline struct mesh_loc *mesh_loc_from_hop(struct rt_hop *hop)
{
	return (struct mesh_loc *)hop;
}

struct mesh;

int mesh_new(struct wg_device *dev, struct mesh **out);
int mesh_start(struct mesh *mesh);
void mesh_stop(struct mesh *mesh);
/* Frees dev->mesh (if any) and clears it. */
void mesh_free(struct wg_device *dev) WG_REQUIRES(dev->lock);

/* Control plane (any thread, no device lock held). 0 or -errno. */
int mesh_set(struct wg_device *dev, const struct mesh_config *cfg)
	WG_EXCLUDES(dev->lock);
void mesh_get(struct wg_device *dev, struct mesh_config *cfg, struct mesh_stats *st)
	WG_EXCLUDES(dev->lock);

/* Registers addrs[0, n) to the local port named port (as `address` of its
 * configuration: the port's anti-spoofing set and the forwarding table) and
 * announces those inside a mesh prefix. Idempotent for addresses the port
 * already has. 0, -ENOENT (no such port), -EEXIST (an address belongs to
 * another port), -ENOSPC (PORT_MAX_ADDRS), -EINVAL. */
int mesh_vm_add(struct wg_device *dev, const char *port, const struct ip_prefix *addrs,
		size_t n)
	WG_EXCLUDES(dev->lock);
/* Unregisters addrs from whichever port holds them; the host forwards what
 * still reaches it to where the address went, when it knows. 0 or -ENOENT
 * (an address is registered nowhere; nothing changed). */
int mesh_vm_del(struct wg_device *dev, const struct ip_prefix *addrs, size_t n)
	WG_EXCLUDES(dev->lock);

/* This host's leases (docs/mesh.md, "Leases"), kept for the addresses
 * it holds or will: each must be signed by the mesh's lease key, name this
 * host and be valid now; a newer one replaces the one held for its
 * address, an older one changes nothing. A lease for an address registered
 * here is announced at once. 0, or -EINVAL with *why naming the lease's
 * fault, -ENOKEY (no lease key set), -ENOSPC (MESH_OWN_LEASES held). */
int mesh_lease_add(struct wg_device *dev, const struct mesh_lease *leases, size_t n,
		   const char **why)
	WG_EXCLUDES(dev->lock);

/* Learned locations, for listing (struct mesh_route, mesh/types.h). */
int mesh_routes(struct wg_device *dev, struct mesh_route **out, size_t *n, size_t max)
	WG_EXCLUDES(dev->lock);

/* The data path's side (workers, device lock held shared). */

/* Whether the mesh is on (lock-free). */
bool mesh_enabled(const struct wg_device *dev);
/* Who asks the mesh to find an address: a VM port (its slot), the host
 * (its own packets, and those the mesh released), or a peer (packets that
 * came through the tunnel: each peer has a slot of its own while there are
 * fewer than MESH_PEER_TENANTS, the later ones share by a keyed hash).
 * Each has its own budget of lookups under way and of solicitations, so
 * one abusive tenant degrades only itself. */
enum {
	MESH_TENANT_HOST = PORT_MAX,
	MESH_TENANT_UPKEEP, /* the mesh's own re-checks of old records */
	MESH_TENANT_PEER0,  /* + a peer's slot */
	MESH_PEER_TENANTS = 1024,
	MESH_TENANTS = MESH_TENANT_PEER0 + MESH_PEER_TENANTS,
};

/* Packets from tenant to dst (family, a mesh address with no location
 * yet), each a whole inner packet at its payload: copied into the
 * destination's queue (bounded; drops counted), and the address solicited
 * unless the tenant has too many lookups under way. The caller keeps its
 * packets. */
void mesh_miss(struct wg_device *dev, struct wg_pkt *const *pkts, unsigned int n, int family,
	       const uint8_t *dst, unsigned int tenant)
	WG_REQUIRES_SHARED(dev->lock);

/* The mesh's word on a packet wg_receive_open let through with verdict v
 * (WG_RX_PEER or WG_RX_FOREIGN), when the mesh is enabled: a mesh message
 * is taken (false); a packet forwarded by the host an address moved away
 * from is unwrapped in place (rx re-parsed) and goes on (true) unless it
 * claims one of our VMs; a foreign source goes on when its address lives
 * behind the peer, is held while that is re-resolved (false), or is
 * rejected and counted (false). */
bool mesh_receive(struct wg_device *dev, struct wg_rx *rx, enum wg_rx_verdict v)
	WG_REQUIRES_SHARED(dev->lock);
/* A packet from peer through the tunnel to a mesh address this host does
 * not hold (hop: its table entry, RT_HOP_REMOTE or RT_HOP_MESH): sent on to
 * where the address went, or queued while that is found out, and peer is
 * told NOT_HERE. The caller keeps ip. */
void mesh_transit(struct wg_device *dev, struct wg_peer *peer, struct rt_hop *hop,
		  uint8_t *ip, uint32_t len, struct wg_tx *tx)
	WG_REQUIRES_SHARED(dev->lock);
/* The tag (struct wg_pkt egress) of a queued packet that came through the
 * tunnel for an address that had moved away: when its destination is
 * found, it is forwarded wrapped (mesh_forward), not sent as ours. */
#define MESH_FORWARDED ((void *)1)
/* Worker 0, for a released packet tagged MESH_FORWARDED: sends it on,
 * wrapped, to the holder of its destination and returns true; false when
 * the destination is not remote (any more): the caller routes it. The
 * caller keeps p. */
bool mesh_forward(struct wg_device *dev, struct wg_pkt *p, struct wg_tx *tx)
	WG_REQUIRES_SHARED(dev->lock);
/* A mesh message ip[0, len) (mesh_msg_is_mesh) opened from peer. */
void mesh_received(struct wg_device *dev, struct wg_peer *peer, const uint8_t *ip,
		   uint32_t len)
	WG_REQUIRES_SHARED(dev->lock);
/* Worker 0, every turn: packets the mesh thread has released. out: to be
 * routed (their destination now has a location); in: checked, to be
 * delivered here. Heap packets with the IP packet at WG_PKT_FRONT. */
bool mesh_has_released(const struct wg_device *dev);
void mesh_take_released(struct wg_device *dev, struct wg_pkt_queue *out,
			struct wg_pkt_queue *in)
	WG_REQUIRES_SHARED(dev->lock);

/* Device hooks. Write lock held: a peer is going away. */
void mesh_peer_removed(struct wg_device *dev, struct wg_peer *peer)
	WG_REQUIRES(dev->lock);
/* The handshake thread: a session with peer began afresh (wg/device.h
 * peer_up): the local addresses it should know are announced to it again. */
void mesh_peer_up(struct wg_device *dev, struct wg_peer *peer)
	WG_REQUIRES_SHARED(dev->lock);
/* No lock held: a port with these addresses was added or removed. */
void mesh_local_added(struct wg_device *dev, const struct ip_prefix *addrs, size_t n)
	WG_EXCLUDES(dev->lock);
void mesh_local_removed(struct wg_device *dev, const struct ip_prefix *addrs, size_t n)
	WG_EXCLUDES(dev->lock);

#endif
