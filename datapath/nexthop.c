/* The next hop (drawn in datapath/datapath.h): the one place where a
 * packet's egress is chosen, from one table lookup on its destination,
 * and where the packets the host and its VMs send are handed to it: a peer
 * (to be sealed), a VM port, the mesh (a miss to resolve), or the host. */
#include "datapath/internal.h"
#include "mesh/mesh.h"
#include "port/frame.h"
#include "port/ports.h"
#include "router/table.h"
#include "wg/device.h"
#include "wg/peer.h"
#include "wg/send.h"

void dp_next_hop(struct dp_worker *w, int family, const uint8_t *dst, struct dp_hop *h)
{
	struct rt_hop *hop = rt_lookup(w->dev->allowed_ips, family, dst);

	*h = (struct dp_hop){ .to = DP_TO_HOST, .hop = hop, .family = family, .dst = dst };
	switch (hop ? hop->kind : 0) {
	case RT_HOP_PEER:
		h->to = DP_TO_PEER;
		h->peer = wg_peer_from_hop(hop);
		break;
	case RT_HOP_REMOTE:
		h->to = DP_TO_REMOTE;
		h->peer = mesh_loc_from_hop(hop)->peer;
		break;
	case RT_HOP_MESH:
		h->to = DP_TO_MISS;
		break;
	case RT_HOP_PORT:
		h->to = DP_TO_PORT;
		h->port = port_from_hop(hop);
		break;
	}
}

static void put_all(struct dp_worker *w, struct wg_pkt **pkts, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		pkt_put(w, pkts[i]);
}

void dp_send(struct dp_worker *w, const struct dp_hop *h, struct wg_pkt **pkts, unsigned int n,
	     const struct port *from)
{
	switch (h->to) {
	case DP_TO_PEER:
		wg_send_to_peer(w->dev, h->peer, pkts, n, &w->tx);
		return;
	case DP_TO_REMOTE:
		if (h->peer) {
			wg_send_to_peer(w->dev, h->peer, pkts, n, &w->tx);
			return;
		}
		wg_stat_add(&w->dev->stats, drop_no_route, n); /* known to be nowhere */
		break;
	case DP_TO_MISS:
		mesh_miss(w->dev, pkts, n, h->family, h->dst,
			  from ? (unsigned int)from->slot : MESH_TENANT_HOST);
		break;
	case DP_TO_PORT:
		for (unsigned int i = 0; i < n; i++)
			dp_port_output(w, h->port, pkts[i], wg_pkt_payload(pkts[i]),
				       pkts[i]->len, NULL);
		return;
	case DP_TO_HOST:
		if (!from) {
			wg_stat_add(&w->dev->stats, drop_no_route, n);
			break;
		}
		for (unsigned int i = 0; i < n; i++)
			dp_host_output(w, pkts[i], wg_pkt_payload(pkts[i]), pkts[i]->len);
		return;
	}
	put_all(w, pkts, n);
}

void dp_route(struct dp_worker *w, struct wg_pkt **pkts, unsigned int n)
{
	const uint8_t *dst;
	int family = frame_ip_destination(wg_pkt_payload(pkts[0]), pkts[0]->len, &dst);
	struct dp_hop h;

	if (!family) {
		wg_stat_add(&w->dev->stats, drop_malformed, n);
		put_all(w, pkts, n);
		return;
	}
	dp_next_hop(w, family, dst, &h);
	dp_send(w, &h, pkts, n, NULL);
}
