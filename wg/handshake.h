/* The handshake thread: every X25519 operation, cookie and rate-limit
 * decision happens here, off the data path. Workers hand it handshake
 * messages and initiation requests through a bounded queue; a queue that
 * fills past an eighth means "under load" (whitepaper §5.3). */
#ifndef WEFT_WG_HANDSHAKE_H
#define WEFT_WG_HANDSHAKE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wg/endpoint.h"
#include "wg/messages.h"

struct wg_device;
struct wg_peer;

enum {
	WG_HSQ_CAPACITY = 1024,
	WG_HSQ_UNDER_LOAD = WG_HSQ_CAPACITY / 8,
};

enum wg_hs_item_kind {
	WG_HS_PACKET,    /* a handshake message from the network */
	WG_HS_INITIATE,  /* send an initiation to the peer with this key */
};

struct wg_hs_item {
	uint8_t kind;
	uint16_t len;
	union wg_sockaddr src;
	uint8_t data[sizeof(struct wg_msg_initiation)]; /* or the peer's key */
};

/* lock guards the ring; cond wakes the thread. */
struct wg_handshake_queue {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct wg_hs_item *items;
	unsigned int head, count;
	uint64_t last_under_load;  /* handshake thread only */
	pthread_t thread;
	bool running;
};

int wg_handshake_init(struct wg_handshake_queue *q);
void wg_handshake_destroy(struct wg_handshake_queue *q);
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
void wg_handshake_process(struct wg_device *dev, const struct wg_hs_item *item, unsigned int queued);

/* Sends an initiation now, honouring the one-per-REKEY_TIMEOUT limit.
 * Called with the device lock shared, peer lock not held. */
void wg_handshake_send_initiation(struct wg_device *dev, struct wg_peer *peer, bool retry);

#endif
