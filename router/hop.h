/* What a forwarding-table entry points at. The table stores opaque
 * pointers; every object put in it starts with a struct rt_hop saying what
 * it is, so one table serves WireGuard peers (its allowed IPs) and local VM
 * ports alike. Addresses that match nothing belong to the host (the TUN). */
#ifndef WEFT_ROUTER_HOP_H
#define WEFT_ROUTER_HOP_H

#include <stdint.h>

enum rt_hop_kind {
	RT_HOP_PEER = 1, /* struct wg_peer: seal and send through the tunnel */
	RT_HOP_PORT = 2, /* struct port: a local VM */
	RT_HOP_REMOTE = 3, /* struct mesh_loc: a learned remote VM address */
	RT_HOP_MESH = 4, /* a mesh prefix: an address nobody told us about yet */
};

struct rt_hop {
	uint8_t kind; /* enum rt_hop_kind */
};

#endif
