/* Packet buffers. A buffer keeps WG_PKT_HEADROOM bytes in front of the inner
 * packet for the data-message header and WG_PKT_TAILROOM behind it for
 * padding and the tag, so sealing and opening happen in place. */
#ifndef WEFT_WG_PACKET_H
#define WEFT_WG_PACKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "wg/endpoint.h"
#include "wg/messages.h"

enum {
	WG_PKT_HEADROOM = sizeof(struct wg_msg_data),
	WG_PKT_TAILROOM = WG_PADDING_MULTIPLE + WG_TAG_LEN,
	/* Where a worker's buffers put an inner packet: room in front for the
	 * data-message header, or for a virtio-net header and an Ethernet
	 * header when the packet goes to a VM port. */
	WG_PKT_FRONT = 32,
	/* The largest inner packet (an IPv4/IPv6 datagram) weft carries. */
	WG_PKT_MAX_INNER = 65535 - WG_DATA_OVERHEAD - 48,
	WG_PKT_BUF_SIZE = WG_PKT_FRONT + WG_PKT_MAX_INNER + WG_PKT_TAILROOM,
};

struct wg_pkt {
	struct wg_pkt *next;   /* staged queue / free list linkage */
	uint32_t off;          /* start of the payload within data */
	uint32_t len;          /* payload length */
	uint32_t cap;          /* size of data */
	bool pooled;           /* belongs to a worker's pool */
	uint8_t pool_id;       /* which of the worker's pools */
	uint16_t refs;         /* TUN writes pointing into a received batch */
	uint64_t nonce;        /* assigned under the peer lock, sealed after */
	void *egress;          /* a worker's: the VM port a packet goes to */
	union wg_sockaddr addr; /* source (received) or destination (to send) */
	uint8_t data[];
};

static inline uint8_t *wg_pkt_payload(struct wg_pkt *p)
{
	return p->data + p->off;
}

/* A heap buffer for a payload of up to inner_len bytes with head and tail room. */
static inline struct wg_pkt *wg_pkt_alloc(size_t inner_len)
{
	size_t cap = WG_PKT_HEADROOM + inner_len + WG_PKT_TAILROOM;
	struct wg_pkt *p = malloc(sizeof(*p) + cap);

	if (!p)
		return NULL;
	p->next = NULL;
	p->off = WG_PKT_HEADROOM;
	p->len = 0;
	p->cap = (uint32_t)cap;
	p->pooled = false;
	p->pool_id = 0;
	p->refs = 1;
	p->egress = NULL;
	return p;
}

/* A simple FIFO of packets. */
struct wg_pkt_queue {
	struct wg_pkt *head, *tail;
	unsigned int len;
};

static inline void wg_pkt_queue_push(struct wg_pkt_queue *q, struct wg_pkt *p)
{
	p->next = NULL;
	if (q->tail)
		q->tail->next = p;
	else
		q->head = p;
	q->tail = p;
	q->len++;
}

static inline struct wg_pkt *wg_pkt_queue_pop(struct wg_pkt_queue *q)
{
	struct wg_pkt *p = q->head;

	if (!p)
		return NULL;
	q->head = p->next;
	if (!q->head)
		q->tail = NULL;
	q->len--;
	p->next = NULL;
	return p;
}

#endif
