/* The next hop of the packets the host and its VMs send (drawn in
 * datapath/datapath.h): one table lookup on the destination, then a peer
 * (to be sealed), a VM port, the mesh (a miss to resolve), or the host. */
#include "datapath/internal.h"
#include "mesh/mesh.h"
#include "port/frame.h"
#include "port/ports.h"
#include "router/table.h"
#include "wg/device.h"
#include "wg/peer.h"
#include "wg/send.h"

static void put_all(struct wg_worker *w, struct wg_pkt **pkts, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		pkt_put(w, pkts[i]);
}

/* Packets that share one destination (one packet, or the segments of one
 * super-packet), from the host, a VM, or the mesh's queues: to their peer
 * (a static allowed IP or a learned location), a VM port, or the mesh's
 * discovery. What matches nothing is the host's: from a VM it goes to the
 * host (unrouted_to_host), from the host it is dropped. Consumes them. */
void wg_worker_route(struct wg_worker *w, struct wg_pkt **pkts, unsigned int n,
		     bool unrouted_to_host)
{
	struct wg_device *dev = w->dev;
	const uint8_t *dst;
	int family = frame_ip_destination(wg_pkt_payload(pkts[0]), pkts[0]->len, &dst);
	struct rt_hop *hop = family ? rt_lookup(dev->allowed_ips, family, dst) : NULL;
	struct wg_peer *peer;

	if (!family) {
		wg_stat_add(&dev->stats, drop_malformed, n);
		put_all(w, pkts, n);
		return;
	}
	switch (hop ? hop->kind : 0) {
	case RT_HOP_REMOTE:
		peer = mesh_loc_from_hop(hop)->peer;
		if (peer) {
			wg_send_to_peer(dev, peer, pkts, n, &w->tx);
			return;
		}
		wg_stat_add(&dev->stats, drop_no_route, n); /* known to be nowhere */
		break;
	case RT_HOP_PEER:
		wg_send_to_peer(dev, wg_peer_from_hop(hop), pkts, n, &w->tx);
		return;
	case RT_HOP_MESH:
		wg_mesh_miss(dev, pkts, n, family, dst);
		break;
	case RT_HOP_PORT:
		for (unsigned int i = 0; i < n; i++)
			wg_worker_port_output(w, wg_port_from_hop(hop), pkts[i],
					      wg_pkt_payload(pkts[i]), pkts[i]->len, NULL);
		break;
	default:
		if (!unrouted_to_host)
			wg_stat_add(&dev->stats, drop_no_route, n);
		for (unsigned int i = 0; unrouted_to_host && i < n; i++)
			wg_worker_host_output(w, pkts[i], wg_pkt_payload(pkts[i]), pkts[i]->len);
		break;
	}
	put_all(w, pkts, n);
}
