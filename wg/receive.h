/* The receive path for data messages: opens a datagram and says what it
 * holds. Which inner sources a layer above (the mesh) accepts beyond the
 * peer's allowed IPs is that layer's decision, not the protocol's. */
#ifndef WEFT_WG_RECEIVE_H
#define WEFT_WG_RECEIVE_H

#include <stdbool.h>

#include "wg/device.h"
#include "wg/packet.h"
#include "wg/send.h"

struct rt_hop;

/* An opened data packet and its parsed inner IP header. */
struct wg_rx {
	struct wg_peer *peer; /* it came from (valid while the device lock is held) */
	uint8_t *pkt;         /* the inner packet: the datagram + WG_PKT_HEADROOM */
	uint32_t len;         /* trimmed to the IP header's length */
	int family;           /* AF_INET or AF_INET6 */
	const uint8_t *src;   /* the source address, inside pkt */
	const uint8_t *dst;   /* the destination address, inside pkt */
	struct rt_hop *hop;   /* where src routes in the forwarding table; NULL: nowhere */
};

enum wg_rx_verdict {
	WG_RX_DONE,    /* consumed (handshake queued, keepalive) or dropped and counted */
	WG_RX_PEER,    /* its source is one of the peer's allowed IPs */
	WG_RX_FOREIGN, /* authentic and well formed, but its source routes elsewhere */
};

/* One datagram data[0, len) from src, opened in place; *rx is filled unless
 * the verdict is WG_RX_DONE. A packet the caller delivers is counted with
 * wg_receive_accept; a foreign one it refuses, with wg_receive_reject.
 * Device lock held shared. */
enum wg_rx_verdict wg_receive_open(struct wg_device *dev, uint8_t *data, uint32_t len,
				   const union wg_sockaddr *src, struct wg_tx *tx, struct wg_rx *rx)
	WG_REQUIRES_SHARED(dev->lock);
/* Counts rx as received; returns its length. */
uint32_t wg_receive_accept(struct wg_device *dev, const struct wg_rx *rx);
/* Counts rx as dropped for its inner source. */
void wg_receive_reject(struct wg_device *dev);
/* Parses rx->pkt[0, rx->len) again (after the layer above unwrapped it):
 * family, source and length as wg_receive_open sets them. false when it is
 * malformed (then counted as such). */
bool wg_receive_reparse(struct wg_device *dev, struct wg_rx *rx);

/* wg_receive_open with no layer above: a packet from its peer's allowed IPs
 * is accepted and its length returned (it starts at data +
 * WG_PKT_HEADROOM), any other is rejected; 0 when nothing is to be
 * delivered. */
uint32_t wg_receive(struct wg_device *dev, uint8_t *data, uint32_t len,
		    const union wg_sockaddr *src, struct wg_tx *tx)
	WG_REQUIRES_SHARED(dev->lock);

#endif
