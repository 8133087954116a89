/* The send path: staging, sealing and handing datagrams to a transmitter. */
#ifndef WEFT_WG_SEND_H
#define WEFT_WG_SEND_H

#include "wg/device.h"
#include "wg/packet.h"
#include "wg/peer.h"

/* Where sealed datagrams go. emit takes ownership of pkt, whose payload
 * [off, off + len) is the whole UDP datagram and addr its destination;
 * release takes back a packet that will not be sent. */
struct wg_tx {
	struct wg_device *dev;
	void (*emit)(struct wg_tx *tx, struct wg_pkt *pkt);
	void (*release)(struct wg_tx *tx, struct wg_pkt *pkt);
};

/* For threads off the data path: sends at once with sendto(), frees. */
void wg_tx_direct_init(struct wg_tx *tx, struct wg_device *dev);

/* Inner packets routed to peer (one packet, or the segments of one
 * super-packet), each with at least WG_PKT_HEADROOM bytes in front of its
 * payload: sealed and emitted, or staged while a handshake is needed.
 * Consumes them. Device lock held shared. */
void wg_send_to_peer(struct wg_device *dev, struct wg_peer *peer, struct wg_pkt **pkts,
		     unsigned int n, struct wg_tx *tx)
	WG_REQUIRES_SHARED(dev->lock) WG_EXCLUDES(peer->lock);
/* Seals whatever is staged for peer, or asks for a handshake. */
void wg_send_staged(struct wg_device *dev, struct wg_peer *peer, struct wg_tx *tx)
	WG_REQUIRES_SHARED(dev->lock) WG_EXCLUDES(peer->lock);
/* Staged packets if any, else an empty (keepalive) data message. */
void wg_send_keepalive(struct wg_device *dev, struct wg_peer *peer, struct wg_tx *tx)
	WG_REQUIRES_SHARED(dev->lock) WG_EXCLUDES(peer->lock);

#endif
