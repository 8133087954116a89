/* The handshake thread's queue: workers hand it handshake messages and
 * initiation requests (wg/handshake.h); the device holds one. */
#ifndef WEFT_WG_HSQUEUE_H
#define WEFT_WG_HSQUEUE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "wg/endpoint.h"
#include "wg/messages.h"

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

#endif
