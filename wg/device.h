/* The device: one WireGuard interface with its identity, peers, allowed
 * IPs, sockets and threads.
 *
 * Threads and what they may touch:
 *  - workers (datapath/worker.c) move packets between the TUN and UDP sockets;
 *  - the handshake thread (wg/handshake.c) does all X25519 work, cookies and
 *    rate limiting, fed through a bounded queue;
 *  - the timer thread (in device.c) fires per-peer timers;
 *  - UAPI client threads (wg/uapi.c) apply configuration through
 *    wg_device_set/get.
 * lock is taken exclusively only to change configuration (identity, the peer
 * table, allowed IPs, sockets) and shared by everyone else, per batch on the
 * data path, so a peer or table entry a reader found stays valid until it
 * drops the lock. Per-peer state has its own lock (wg/peer.h). */
#ifndef WEFT_WG_DEVICE_H
#define WEFT_WG_DEVICE_H

#include <net/if.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "router/table.h"
#include "wg/config.h"
#include "wg/cookie.h"
#include "wg/hsqueue.h"
#include "wg/index.h"
#include "wg/lock.h"
#include "wg/noise.h"
#include "wg/ratelimiter.h"
#include "wg/socket.h"
#include "wg/stats.h"

struct ip_prefix;
struct port_table;
struct dp_worker;
struct mesh;
struct wg_device;
struct wg_peer;

enum { WG_PEER_BUCKETS = 1 << 12 };

/* What the layers above the protocol (the data path, the mesh) are told,
 * set once before wg_device_start; any may be NULL. */
struct wg_device_hooks {
	/* Wake worker (-1: every one): see wg_device_kick. */
	void (*kick)(struct wg_device *dev, int worker);
	/* Device lock held exclusively: peer is being removed; forget every
	 * pointer to it. */
	void (*peer_removed)(struct wg_device *dev, struct wg_peer *peer);
	/* Device lock held (shared at least): peer was just added (wg set),
	 * or a session with it began that is not a routine rekey (its first,
	 * one after the last expired, or one long before the rekey was due:
	 * the peer restarted; the handshake thread), so the mesh tells it
	 * again what it should know. */
	void (*peer_up)(struct wg_device *dev, struct wg_peer *peer);
	/* No lock held: a VM port with addrs[0, n) was added or removed
	 * (port/ports.c), so the mesh announces or withdraws them. */
	void (*local_added)(struct wg_device *dev, const struct ip_prefix *addrs, size_t n);
	void (*local_removed)(struct wg_device *dev, const struct ip_prefix *addrs, size_t n);
};

struct wg_device {
	char ifname[IFNAMSIZ];
	int tun_fds[WG_MAX_WORKERS];  /* one TUN queue per worker */
	int cpus[WG_MAX_WORKERS];     /* each worker's CPU, -1: not pinned */
	int n_workers;
	bool tun_vnet;                /* TUN opened with IFF_VNET_HDR + offloads */
	bool tun_uso;                 /* ... and it takes UDP GSO writes (USO) */
	unsigned int socket_flags;    /* enum wg_socket_flags, from the environment */
	/* The TUN link's MTU (what packets are padded to), up flag, queue
	 * length and namespace id (-1: weftd's own), as last read where the
	 * link lives: written by the main thread when the link changes, read
	 * lock-free by the workers and the metrics. */
	_Atomic unsigned int mtu;
	_Atomic bool tun_up;
	_Atomic unsigned int tun_txqlen;
	_Atomic int tun_nsid;

	/* The device lock: the peers, the forwarding table, the ports table,
	 * the sockets and the mesh pointer below change under it held
	 * exclusively; the workers read them with it held shared. */
	struct wg_rwlock lock;
	struct wg_noise_identity *identity;  /* sodium_malloc */
	struct wg_peer *peer_buckets[WG_PEER_BUCKETS];
	struct wg_peer *peers_head, *peers_tail; /* in creation order */
	size_t n_peers;
	/* The forwarding table: prefix -> struct rt_hop, a peer (its allowed
	 * IPs) or a VM port (its registered addresses). */
	struct rt_table *allowed_ips;
	struct port_table *ports;            /* port/ports.h; NULL: no ports */
	uint16_t listen_port;
	uint32_t fwmark;
	struct wg_socket_set sockets;        /* a pair per worker; fds read lock-free */

	struct mesh *mesh;                /* mesh/mesh.h; NULL: no mesh */

	struct wg_index_table index;
	struct wg_cookie_checker cookie_checker;
	struct wg_ratelimiter ratelimiter;
	struct wg_handshake_queue hsq;
	struct wg_stats stats;

	struct dp_worker *workers[WG_MAX_WORKERS];
	bool running;
	pthread_t timer_thread;
	pthread_mutex_t timer_lock;   /* with timer_cond, wakes the timer thread */
	pthread_cond_t timer_cond;
	_Atomic bool stopping;
	bool force_under_load;        /* WEFT_TEST_UNDER_LOAD */
	void (*on_fatal)(void *ctx);  /* the TUN went away */
	void *on_fatal_ctx;
	struct wg_device_hooks hooks;
};

/* Takes ownership of the n TUN queue fds (one worker each; n <= WG_MAX_WORKERS)
 * and pins worker i to cpus[i] when cpus is not NULL (-1: no pinning).
 * tun_vnet: the TUN was opened with IFF_VNET_HDR (and offloads).
 * Opens the UDP sockets on a random port. */
struct wg_device *wg_device_new(const char *ifname, const int *tun_fds, const int *cpus, int n,
				bool tun_vnet, unsigned int mtu);
/* Starts the handshake and timer threads; the data path's workers are the
 * caller's (daemon/host.h starts everything). */
int wg_device_start(struct wg_device *dev);
void wg_device_stop(struct wg_device *dev);
void wg_device_free(struct wg_device *dev) WG_EXCLUDES(dev->lock);

/* UAPI: a snapshot, and an atomic set (all or nothing). 0 or -errno. */
int wg_device_get(struct wg_device *dev, struct wg_device_config *cfg) WG_EXCLUDES(dev->lock);
int wg_device_set(struct wg_device *dev, const struct wg_device_config *cfg) WG_EXCLUDES(dev->lock);
/* "key=value\n" lines of the counters (malloc'd). */
int wg_device_stats(struct wg_device *dev, char **text, size_t *len) WG_EXCLUDES(dev->lock);

/* Tells the data path that the sockets, the ports or the mesh's released
 * packets changed: worker (-1: every one) looks again. */
void wg_device_kick(struct wg_device *dev, int worker);

/* With the device lock held (shared is enough). */
struct wg_peer *wg_device_lookup_peer(struct wg_device *dev, const uint8_t public_key[32])
	WG_REQUIRES_SHARED(dev->lock);

#endif
