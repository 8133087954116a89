/* The handshake thread: every X25519 operation, cookie and rate-limit
 * decision happens here, off the data path. Workers hand it handshake
 * messages and initiation requests through a bounded queue; a queue that
 * fills past an eighth means "under load" (whitepaper §5.3). */
#ifndef WEFT_WG_HANDSHAKE_H
#define WEFT_WG_HANDSHAKE_H

#include <stdbool.h>
#include <stddef.h>

#include "wg/device.h"
#include "wg/endpoint.h"
#include "wg/hsqueue.h"
#include "wg/peer.h"

int wg_handshake_start(struct wg_device *dev);
void wg_handshake_stop(struct wg_device *dev);

/* From a worker: queue a received handshake message (already size-checked).
 * False (and counted) when the queue is full. */
bool wg_handshake_enqueue(struct wg_device *dev, const uint8_t *msg, size_t len,
			  const union wg_sockaddr *src);
/* Ask for an initiation to peer (not a retry); cheap and lock-free when one
 * is already queued. */
void wg_handshake_request(struct wg_device *dev, struct wg_peer *peer);

/* Handles one queued item as the handshake thread does (queued: how many
 * items were waiting, for the under-load decision). This is the entry point
 * of the handshake fuzz target. Device lock held shared. */
void wg_handshake_process(struct wg_device *dev, const struct wg_hs_item *item, unsigned int queued)
	WG_REQUIRES_SHARED(dev->lock);

/* Sends an initiation now, honouring the one-per-REKEY_TIMEOUT limit.
 * Called with the device lock shared, peer lock not held. */
void wg_handshake_send_initiation(struct wg_device *dev, struct wg_peer *peer, bool retry)
	WG_REQUIRES_SHARED(dev->lock) WG_EXCLUDES(peer->lock);

#endif
