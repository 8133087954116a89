/* A WireGuard peer: its handshake, keypairs, endpoint, staged packets and
 * timers. Peers live in sodium_malloc memory (they hold keys). */
#ifndef WEFT_WG_PEER_H
#define WEFT_WG_PEER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "router/hop.h"
#include "wg/cookie.h"
#include "wg/endpoint.h"
#include "wg/index.h"
#include "wg/keypair.h"
#include "wg/lock.h"
#include "wg/noise.h"
#include "wg/packet.h"
#include "wg/timers.h"

struct wg_device;

struct wg_peer {
	/* Immutable after creation. */
	struct rt_hop hop;               /* first: the forwarding table's value */
	struct wg_device *dev;
	uint8_t public_key[WG_KEY_LEN];

	/* Guarded by the device's write lock (readers hold it shared). */
	struct wg_peer *hash_next;
	struct wg_peer *list_next, *list_prev;

	/* lock guards everything from here to the atomics. */
	struct wg_mutex lock;
	struct wg_noise_handshake handshake;
	struct wg_index_entry hs_entry;  /* the pending handshake's index */
	struct wg_cookie_maker cookie;
	struct wg_keypairs keypairs;
	union wg_sockaddr endpoint;      /* sa_family 0: none */
	struct wg_pkt_queue staged;      /* waiting for a keypair */
	struct wg_timers timers;
	uint64_t last_sent_handshake;    /* protocol clock; 0 = never */
	uint64_t last_initiation_consumption;
	bool sent_lastminute_handshake;
	bool fresh_unconfirmed;      /* a fresh session (peer_up) waits for its confirmation */
	/* The mesh's state of this peer (mesh/internal.h), opaque here; set
	 * and freed by the mesh with the device write lock held. */
	struct mesh_peer *mesh;

	/* Read and written lock-free. */
	_Atomic uint64_t rx_bytes;
	_Atomic uint64_t tx_bytes;
	_Atomic uint64_t last_handshake_ns; /* wall clock, epoch ns; 0 = never */
	_Atomic bool handshake_queued;      /* an initiation request is queued */
};

static inline struct wg_peer *wg_peer_from_hop(struct rt_hop *hop)
{
	return (struct wg_peer *)hop; /* hop is the first member */
}

struct wg_peer *wg_peer_new(struct wg_device *dev, const uint8_t public_key[WG_KEY_LEN]);
/* Unhashes its indices, drops keypairs and staged packets, wipes and frees.
 * The caller holds the device's write lock and has unlinked the peer. */
void wg_peer_free(struct wg_peer *peer) WG_EXCLUDES(peer->lock);

/* With peer->lock held: forget every session and pending handshake (key
 * change, key expiry). */
void wg_peer_clear_sessions(struct wg_peer *peer) WG_REQUIRES(peer->lock);
void wg_peer_purge_staged(struct wg_peer *peer) WG_REQUIRES(peer->lock);

#endif
