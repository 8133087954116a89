/* The receive direction (drawn in datapath/datapath.h): datagrams from
 * the UDP sockets, opened by the protocol (wg_receive_open), given to the
 * mesh when it is on, then delivered to the TUN or a VM port (TCP
 * coalesced) or sent on to the host that holds their destination; and the
 * packets the mesh thread releases. */
#include <netinet/udp.h>
#include <string.h>
#include <sys/socket.h>

#include "datapath/internal.h"
#include "mesh/mesh.h"
#include "port/frame.h"
#include "port/ports.h"
#include "tun/offload.h"
#include "wg/device.h"
#include "wg/receive.h"

/* The segment size of a UDP GRO run, or 0 when the datagram came alone. */
static uint32_t gro_size(struct msghdr *msg)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO) {
			int v;
			memcpy(&v, CMSG_DATA(cm), sizeof(v));
			return v > 0 ? (uint32_t)v : 0;
		}
	}
	return 0;
}

/* Writes this batch's coalesced TCP packets to the TUN or their VM, each
 * with the table's reference. */
void dp_rx_flush(struct dp_worker *w)
{
	struct tun_gro_out out[TUN_GRO_MAX_ITEMS];
	int n = tun_gro_finish(&w->gro, out, TUN_GRO_MAX_ITEMS);

	for (int i = 0; i < n; i++) {
		struct wg_pkt *p = out[i].cookie;

		if (p->egress)
			dp_port_output(w, p->egress, p, out[i].data + TUN_VNET_HDR_LEN,
				       (uint32_t)out[i].len - TUN_VNET_HDR_LEN,
				       (const void *)out[i].data);
		else
			dp_tun_write(w, p, out[i].data, (uint32_t)out[i].len);
	}
}

/* An inner packet from the tunnel for the host or a VM (port): TCP goes
 * through the coalescing table (copied into a buffer with room to grow)
 * where the way out takes super-packets, and so does UDP for a TUN that
 * takes UDP GSO writes; anything else leaves from where it lies. The caller
 * keeps p: one buffer holds every datagram of a GRO run. */
static void deliver(struct dp_worker *w, struct wg_pkt *p, uint8_t *ip, uint32_t len,
		    struct port *port)
	WG_REQUIRES_SHARED(w->dev->lock)
{
	uint8_t proto = ip[0] >> 4 == 4 && len >= 20 ? ip[9] : ip[0] >> 4 == 6 && len >= 40 ? ip[6] : 0;
	bool tcp = proto == IPPROTO_TCP;
	bool coalesce;
	struct wg_pkt *spare;
	int ret;

	/* An attached port's VM is reached through the TUN, like the host. */
	if (port && port->class->via_host) {
		port_count(&port->counters, tx_packets, 1);
		port_count(&port->counters, tx_bytes, len);
		port = NULL;
	}
	coalesce = (tcp && (port || w->vnet)) ||
		   (proto == IPPROTO_UDP && !port && w->vnet && w->dev->tun_uso);

	if (coalesce && !w->gro_spare)
		w->gro_spare = pkt_get(w);
	spare = w->gro_spare;
	if (!coalesce || !spare) {
		p->refs++; /* for the write, which consumes it */
		if (port)
			dp_port_output(w, port, p, ip, len, NULL);
		else
			dp_host_output(w, p, ip, len);
		return;
	}
	memcpy(spare->data + WG_PKT_FRONT, ip, len);
	spare->egress = port;
	ret = tun_gro_add(&w->gro, spare->data, spare->cap, WG_PKT_FRONT, len, spare);
	if (ret == -ENOSPC) {
		dp_rx_flush(w);
		ret = tun_gro_add(&w->gro, spare->data, spare->cap, WG_PKT_FRONT, len, spare);
	}
	if (ret == TUN_GRO_HELD)
		w->gro_spare = NULL; /* the table holds its reference now */
	else if (ret < 0)
		wg_stat_inc(&w->dev->stats, drop_malformed);
}

/* Worker 0: packets the mesh thread released. Those it checked the source
 * of are delivered here as if just received; the others are routed, now
 * that their destination has a location. */
void dp_rx_mesh_released(struct dp_worker *w)
{
	struct wg_pkt_queue out, in;
	struct wg_pkt *p;

	mesh_take_released(w->dev, &out, &in);
	while ((p = wg_pkt_queue_pop(&out))) {
		bool forwarded = p->egress == MESH_FORWARDED;

		p->egress = NULL;
		if (forwarded && mesh_forward(w->dev, p, &w->tx))
			pkt_put(w, p);
		else
			dp_route(w, &p, 1);
	}
	/* Parked packets: their header is read again (mesh/path.c keeps the
	 * packet, not the parse). */
	while ((p = wg_pkt_queue_pop(&in))) {
		const uint8_t *dst;
		int family = frame_ip_destination(wg_pkt_payload(p), p->len, &dst);
		struct dp_hop h = { .to = DP_TO_HOST };

		if (family)
			dp_next_hop(w, family, dst, &h);
		deliver(w, p, wg_pkt_payload(p), p->len, h.to == DP_TO_PORT ? h.port : NULL);
		pkt_put(w, p);
	}
}

void dp_rx_udp(struct dp_worker *w, struct op *op, uint32_t len)
{
	struct wg_pkt *p = op->pkt;
	uint32_t seg = gro_size(&op->msg);
	bool mesh = mesh_enabled(w->dev); /* once per GRO run */

	if (!len) {
		wg_stat_inc(&w->dev->stats, drop_malformed); /* an empty datagram */
		return;
	}
	if (!seg || seg > len)
		seg = len;
	for (uint32_t off = 0; off < len; off += seg) {
		uint32_t dlen = len - off < seg ? len - off : seg;
		uint8_t *d = wg_pkt_payload(p) + off;
		struct wg_rx rx;
		enum wg_rx_verdict v = wg_receive_open(w->dev, d, dlen, &p->addr, &w->tx, &rx);
		uint8_t *ip = d + WG_PKT_HEADROOM;
		struct dp_hop h;
		uint32_t inner;

		if (v == WG_RX_DONE)
			continue;
		if (mesh) {
			if (!mesh_receive(w->dev, &rx, v))
				continue;
		} else if (v == WG_RX_FOREIGN) {
			wg_receive_reject(w->dev);
			continue;
		}
		inner = wg_receive_accept(w->dev, &rx);
		dp_next_hop(w, rx.family, rx.dst, &h);
		if (h.to == DP_TO_REMOTE || h.to == DP_TO_MISS)
			mesh_transit(w->dev, rx.peer, h.hop, ip, inner, &w->tx);
		else
			deliver(w, p, ip, inner, h.to == DP_TO_PORT ? h.port : NULL);
	}
}
