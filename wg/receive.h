/* The receive path for data messages. */
#ifndef WEFT_WG_RECEIVE_H
#define WEFT_WG_RECEIVE_H

#include <stdbool.h>

#include "wg/packet.h"
#include "wg/send.h"

struct wg_device;

/* A datagram from the UDP socket (payload at off, source in addr). Returns
 * true when pkt now holds an inner packet for the TUN; false when it was
 * consumed (handshake queued, keepalive) or dropped and counted — the
 * caller then releases it. Device lock held shared. */
bool wg_receive(struct wg_device *dev, struct wg_pkt *pkt, struct wg_tx *tx);

#endif
