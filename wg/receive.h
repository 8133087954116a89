/* The receive path for data messages. */
#ifndef WEFT_WG_RECEIVE_H
#define WEFT_WG_RECEIVE_H

#include <stdbool.h>

#include "wg/packet.h"
#include "wg/send.h"

struct wg_device;
struct wg_peer;

/* One datagram data[0, len) from src, opened in place. Returns the length
 * of the inner packet, which then starts at data + WG_PKT_HEADROOM, ready
 * for the TUN; 0 when the datagram was consumed (handshake queued,
 * keepalive) or dropped and counted. Device lock held shared. */
uint32_t wg_receive(struct wg_device *dev, uint8_t *data, uint32_t len,
		    const union wg_sockaddr *src, struct wg_tx *tx);
/* The same, and *from is the peer it came from when it returns non-zero
 * (valid while the device lock is held). */
uint32_t wg_receive_from(struct wg_device *dev, uint8_t *data, uint32_t len,
			 const union wg_sockaddr *src, struct wg_tx *tx, struct wg_peer **from);

#endif
