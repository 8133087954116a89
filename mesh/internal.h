/* What mesh/mesh.c (the mesh thread), mesh/control.c (its control plane),
 * mesh/records.c (its records) and mesh/path.c (the workers' entry points)
 * share. Private to them, and to fuzz/fuzz_mesh.c, which drives the thread's
 * rounds itself and checks the records' invariants. */
#ifndef WEFT_MESH_INTERNAL_H
#define WEFT_MESH_INTERNAL_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mesh/mesh.h"
#include "mesh/msg.h"
#include "pkt/siphash.h"
#include "wg/device.h"
#include "wg/lock.h"
#include "wg/noise.h"

enum loc_state {
	LOC_NONE,      /* local, or forgotten: not in the table */
	LOC_PENDING,   /* being solicited */
	LOC_RESOLVED,  /* peer holds it */
	LOC_NEGATIVE,  /* nobody holds it, for a while */
	LOC_VERIFY,    /* resolved, and solicited again to check a source */
};

enum {
	QUEUE_PER_DEST = 64,        /* packets waiting per destination */
	QUEUE_TOTAL = 4096,         /* and in all */
	RETRY_MS = 50,              /* between solicitations of one address */
	RECHECK_RETRY_MS = 1000,    /* the same, re-checking an old record (routed meanwhile) */
	MAX_TRIES = 3,              /* then it is nowhere */
	NEGATIVE_MS = 1000,         /* how long "nowhere" is believed */
	GRACE_MS = 5000,            /* a moved address's old holder stays accepted */
	SEQ_AHEAD_MS = 10000,       /* how far ahead of our clock a stamp may be */
	REFRESH_MS = 60000,         /* local addresses announced again, +-25 % */
	PEERS_UP_MAX = 16,          /* peers to re-announce to, else to all */
	ANNOUNCE_ROOM = 64,         /* outbox room a bucket's announcements need */
	ANNOUNCE_BUCKETS = 4096,    /* buckets a round looks at for them */
	INBOX_MAX = 1024,           /* received entries waiting for the thread */
	INBOX_PER_PEER = 256,       /* of them from one peer */
	HANDLE_BATCH = 128,         /* handled per hold of the device write lock */
	OUTBOX_MAX = 1024,          /* messages waiting to be sent */
	SOLICIT_PER_SEC = 2000,     /* all solicitations */
	SOLICIT_BURST = 200,
	TENANT_SOLICIT_PER_SEC = 250, /* one tenant's (mesh.h MESH_TENANT_*) */
	TENANT_SOLICIT_BURST = 50,
	TENANT_PENDING = 32,        /* one tenant's lookups under way */
	LEARN_PER_SEC = 200,        /* records one peer's ANNOUNCEs may make */
	LEARN_BURST = 20000,
	MESH_MAX_LOCS = 1 << 21,    /* records in all */
	LEARNED_TTL_MS = 300000,    /* a learned location unconfirmed this long is asked again */
	NOT_HERE_PER_SEC = 500,     /* all NOT_HERE answers */
	NOT_HERE_BURST = 50,
	PEER_NOT_HERE_PER_SEC = 100, /* those to one peer */
	PEER_NOT_HERE_BURST = 20,
	BUCKETS_MIN = 256,
	MESH_OWN_LEASES = 4096,     /* this host's leases (mesh_lease_add) */
	MESH_OWN_SLOTS = 2 * MESH_OWN_LEASES, /* their index's slots, a power of two */
};

_Static_assert(MESH_LEASE_SKEW_NS == (uint64_t)SEQ_AHEAD_MS * 1000000,
	       "a lease may be issued as far ahead as a stamp may be");

/* One received entry, or one to send. */
struct mesh_note {
	uint8_t peer[WG_KEY_LEN]; /* from, or to */
	bool all;                 /* to every member */
	enum mesh_type type;
	struct mesh_item item;
	bool lease_valid;         /* received: item.lease is signed by the
				   * lease key and valid (mesh_run checks it
				   * before it takes the locks) */
};

/* A token bucket: tokens in nanoseconds of credit. */
struct rate {
	uint64_t credit, last;
	uint64_t cost, burst;
};

/* What the mesh keeps per peer (wg_peer.mesh). */
struct mesh_peer {
	struct rate learn;          /* the records its ANNOUNCEs may make */
	struct rate not_here;       /* the NOT_HERE answers its packets get */
	unsigned int inbox;         /* its entries waiting in the inbox */
	uint16_t tenant;            /* its lookups' budget: MESH_TENANT_PEER0 + slot */
	bool own_slot;              /* the slot is its alone (peer_slots) */
};

struct mesh {
	struct wg_device *dev;
	_Atomic int mode;
	struct rt_hop prefix_hop;           /* RT_HOP_MESH: the table's value of the prefixes */

	struct wg_mutex lock;               /* everything below */
	pthread_cond_t cond;
	pthread_t thread;
	bool started, stop;
	struct mesh_config cfg;
	struct mesh_loc **buckets;          /* keyed by hash_key */
	struct siphash_key hash_key;
	size_t n_buckets, n_locs, n_located;
	struct mesh_loc *timed;             /* pending and negative records */
	size_t queued;                      /* packets in every queue */
	struct mesh_note *inbox, *outbox;
	size_t n_inbox, n_outbox;
	struct mesh_note *inbox_work;       /* the mesh thread's alone: what it handles */
	bool solicit_due;
	/* Re-announcement of the local addresses (mesh.c reannounce): to every
	 * address's home, or to the peers in peers_up only; a pass over the
	 * buckets from announce_from on, over several rounds if the outbox
	 * fills; another full pass after it when again is set. */
	bool announce_all, announce_again;
	uint8_t peers_up[PEERS_UP_MAX][WG_KEY_LEN];
	size_t n_peers_up, announce_from;
	uint64_t next_refresh;              /* wg_clock_now(): the periodic one */
	struct wg_pkt_queue rel_out, rel_in; /* released to worker 0 */
	_Atomic unsigned int n_released;
	uint64_t last_seq;
	struct mesh_lease *own;             /* this host's leases, MESH_OWN_LEASES */
	uint16_t *own_index;                /* MESH_OWN_SLOTS: 1 + an index in own, or 0 */
	size_t n_own;
	struct rate solicit_rate, not_here_rate;
	/* Per tenant: its solicitations, and its lookups under way (counted
	 * up by mesh/path.c pending, recounted from the timed list by every
	 * tick, so no transition out of pending needs to remember it). */
	struct rate tenant_solicit[MESH_TENANTS];
	unsigned int tenant_pending[MESH_TENANTS];
	uint64_t peer_slots[MESH_PEER_TENANTS / 64]; /* the peer tenant slots taken */
#define MESH_COUNTER_FIELD(name) _Atomic uint64_t name;
	struct {
		MESH_COUNTERS(MESH_COUNTER_FIELD)
	} c;
#undef MESH_COUNTER_FIELD
};

#define mesh_count(m, name, n) atomic_fetch_add_explicit(&(m)->c.name, (n), memory_order_relaxed)

/* Token buckets (mesh/budget.c): per_sec refills, burst at most. */
void mesh_rate_init(struct rate *r, unsigned int per_sec, unsigned int burst);
bool mesh_rate_take(struct rate *r, uint64_t now);

/* The records (mesh/records.c). */
size_t mesh_addr_len(int family);
/* Whether addr lies in one of the mesh's prefixes. */
bool mesh_in_prefixes(const struct mesh *m, int family, const uint8_t *addr);
/* The mesh thread's and the control plane's order: the device write lock,
 * then the mesh lock. */
static inline void mesh_lock(struct mesh *m) WG_ACQUIRE(m->dev->lock, m->lock)
{
	wg_rwlock_wrlock(&m->dev->lock);
	wg_mutex_lock(&m->lock);
}

static inline void mesh_unlock(struct mesh *m) WG_RELEASE(m->lock, m->dev->lock)
{
	wg_mutex_unlock(&m->lock);
	wg_rwlock_unlock(&m->dev->lock);
}

/* The analysis matches locks by name: where the caller holds the device
 * lock as dev->lock, these say that m->dev->lock (what the functions below
 * name) is that lock, as m is dev->mesh. */
static inline void mesh_dev_locked(const struct mesh *m, const struct wg_device *dev)
	WG_REQUIRES(dev->lock) WG_ASSERT(m->dev->lock)
{
	assert(m->dev == dev);
}

static inline void mesh_dev_locked_shared(const struct mesh *m, const struct wg_device *dev)
	WG_REQUIRES_SHARED(dev->lock) WG_ASSERT_SHARED(m->dev->lock)
{
	assert(m->dev == dev);
}

/* Mesh lock held: the record of an address, or NULL. */
struct mesh_loc *mesh_loc_find(struct mesh *m, int family, const uint8_t *addr, uint8_t cidr)
	WG_REQUIRES(m->lock);
/* Mesh lock held: the record of an address, made when missing (NULL: no
 * memory). */
struct mesh_loc *mesh_loc_get(struct mesh *m, int family, const uint8_t *addr, uint8_t cidr)
	WG_REQUIRES(m->lock);
/* Mesh lock held: the record hash grown for n more records, so that
 * making them (with the device write lock held too) does not rehash. */
void mesh_loc_reserve(struct mesh *m, size_t n)
	WG_REQUIRES(m->lock);
/* Mesh lock held: puts a record on the list of those with a deadline. */
void mesh_timed_add(struct mesh *m, struct mesh_loc *l)
	WG_REQUIRES(m->lock);
/* Device write lock held: the record goes into (publish) or out of
 * (unpublish) the forwarding table, where workers find it. */
void mesh_loc_publish(struct mesh *m, struct mesh_loc *l)
	WG_REQUIRES(m->dev->lock);
void mesh_loc_unpublish(struct mesh *m, struct mesh_loc *l)
	WG_REQUIRES(m->dev->lock);
/* Frees the packets of q. */
void mesh_queue_free(struct mesh *m, struct wg_pkt_queue *q);
/* Mesh lock held: l's waiting packets dropped, counted (queue_dropped for
 * those to it, spoofed for the unconfirmed sources from it). */
void mesh_loc_drop_queues(struct mesh *m, struct mesh_loc *l)
	WG_REQUIRES(m->lock);
/* Both locks held; l is out of the table and off the timed list. */
void mesh_loc_free(struct mesh *m, struct mesh_loc *l)
	WG_REQUIRES(m->lock, m->dev->lock);
/* Both locks held, the mode just set to off: every record but this host's
 * registrations is freed, and those are out of the table with nothing
 * pending or held. (While off, nothing is published or sent.) */
void mesh_forget(struct mesh *m)
	WG_REQUIRES(m->lock, m->dev->lock);
/* Mesh lock held: a message to send (to one peer, or all when to is NULL
 * and all is set) once the locks are dropped. */
void mesh_note_add(struct mesh *m, const uint8_t *to, bool all, enum mesh_type type,
		   const struct mesh_item *item)
	WG_REQUIRES(m->lock);
/* The item naming l's address; and its holder and stamp. */
void mesh_item_of(const struct mesh_loc *l, struct mesh_item *it);
void mesh_item_holder(struct mesh_item *it, const uint8_t *key, uint64_t seq);
/* With a lease key set: lease (if any) goes with the item, when it names
 * the host the item says holds the address (the sender, for an ANNOUNCE)
 * and has not expired. The item's holder is set first. */
void mesh_item_lease(struct mesh *m, struct mesh_item *it, const struct mesh_lease *lease)
	WG_REQUIRES(m->lock) WG_REQUIRES_SHARED(m->dev->lock);
/* l's lease made a copy of lease (NULL: none); false: no memory, and l
 * unchanged. */
bool mesh_loc_set_lease(struct mesh_loc *l, const struct mesh_lease *lease);
/* This host's lease for a host address, or NULL. */
const struct mesh_lease *mesh_own_lease(struct mesh *m, int family, const uint8_t *addr)
	WG_REQUIRES(m->lock);
/* The lease a claim about l's address must not be older than: the newer
 * of this host's (for an address registered here) and that of l's last
 * holder (l->lease: kept after the holder is forgotten, in a record kept
 * until the lease expires, so a replay stays old). */
const struct mesh_lease *mesh_known_lease(struct mesh *m, const struct mesh_loc *l)
	WG_REQUIRES(m->lock);
/* For an address registered here: whether l's peer holder took it after
 * this host did (it moved away). By the leases with a lease key and both
 * known, else by the stamps. */
bool mesh_peer_is_newer(struct mesh *m, const struct mesh_loc *l) WG_REQUIRES(m->lock);
/* This host's leases that expired by wall-clock wall are dropped; or all. */
void mesh_drop_expired_own(struct mesh *m, uint64_t wall) WG_REQUIRES(m->lock);
void mesh_own_clear(struct mesh *m) WG_REQUIRES(m->lock);
/* Whether a received entry says that a host holds its address. */
bool mesh_claims_holder(const struct mesh_note *n);
/* With a lease key: whether the entry's lease (checked by
 * mesh_check_leases) is for its address and names holder. */
bool mesh_lease_backs(const struct mesh_note *n, const struct wg_peer *holder);
/* Sets lease_valid on the received entries whose lease is the one their
 * record keeps (checked when it was learned) and has not expired, so a
 * refresh is not verified again; false on the others. */
void mesh_known_leases(struct mesh *m, struct mesh_note *in, size_t n) WG_REQUIRES(m->lock);
/* Sets lease_valid on the others too when their lease is signed by key
 * and valid now; with key NULL, false on all. No lock needed: the mesh
 * thread's own entries. */
void mesh_check_leases(struct mesh_note *in, size_t n, const uint8_t *key);
/* Both locks held, in the records' upkeep (mesh.c reannounce), for a
 * record not registered here whose lease expired by wall-clock wall: a
 * learned location is forgotten (the next packet to it asks again), a
 * record kept only for its lease is freed. True when l is done with
 * (forgotten or freed: not to be looked at again in this pass). */
bool mesh_lease_upkeep(struct mesh *m, struct mesh_loc *l, uint64_t wall, uint64_t now)
	WG_REQUIRES(m->lock, m->dev->lock);
/* mesh.c, shared with the control plane (control.c). */

/* peer's mesh state, made when missing (NULL: no memory) under the mesh
 * lock; freed by mesh_peer_free and mesh_free under the device write lock
 * (and the mesh lock). */
struct mesh_peer *mesh_peer_of(struct mesh *m, struct wg_peer *peer)
	WG_REQUIRES(m->lock) WG_REQUIRES_SHARED(m->dev->lock);
void mesh_peer_free(struct mesh *m, struct wg_peer *peer) WG_REQUIRES(m->lock, m->dev->lock);
/* The tenant of the lookups peer's packets make; false: no memory. */
bool mesh_peer_tenant(struct mesh *m, struct wg_peer *peer, unsigned int *tenant)
	WG_REQUIRES(m->lock) WG_REQUIRES_SHARED(m->dev->lock);

/* This host's public key, or NULL. */
const uint8_t *mesh_self_key(struct mesh *m) WG_REQUIRES_SHARED(m->dev->lock);
/* The home host of l's address among this host and its peers: NULL for
 * this host (*self set), else the peer. */
struct wg_peer *mesh_home_of(struct mesh *m, const struct mesh_loc *l, bool *self)
	WG_REQUIRES_SHARED(m->dev->lock);
/* The next registration stamp (wall clock ns, strictly increasing). */
uint64_t mesh_next_seq(struct mesh *m) WG_REQUIRES(m->lock);
/* Releases l's waiting packets that may go now. */
void mesh_release(struct mesh *m, struct mesh_loc *l) WG_REQUIRES(m->lock, m->dev->lock);
/* l's address, registered here, announced to its home or every member
 * (only: to that peer alone, if it should hear it). */
void mesh_announce(struct mesh *m, struct mesh_loc *l, const struct wg_peer *only)
	WG_REQUIRES(m->lock, m->dev->lock);
/* The noted messages, taken for sending once the locks are dropped. */
struct mesh_note *mesh_take_notes(struct mesh *m, size_t *n) WG_REQUIRES(m->lock);
/* Sends them (no lock held). */
void mesh_send_notes(struct mesh *m, struct mesh_note *notes, size_t n)
	WG_EXCLUDES(m->lock, m->dev->lock);
/* One round of the mesh thread's work (the inbox, re-announcements,
 * deadlines, then the messages sent); no lock held. Returns the next
 * deadline. The thread's loop, and fuzz/fuzz_mesh.c's. */
uint64_t mesh_run(struct mesh *m) WG_EXCLUDES(m->lock, m->dev->lock);
/* Wakes worker 0 when the thread released packets. */
void mesh_kick_worker(struct mesh *m);

/* Wakes the mesh thread, after a change made under the mesh lock (held or
 * not: the thread looks at the state under the lock before it waits). */
void mesh_wake(struct mesh *m);

#endif
