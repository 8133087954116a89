/* The worker's VM-port data path, whatever the port's type: which ports
 * this worker serves, frames read from a VM checked and routed, packets for
 * a VM framed and handed to the type's write (port_tap.c, port_vhost.c;
 * struct dp_port_io), or to the TUN for an attached port's. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "datapath/internal.h"
#include "ndp/ndp.h"
#include "wg/clock.h"
#include "wg/device.h"
#include "wg/log.h"
#include "wg/peer.h"

static struct wport *wport_of(struct dp_worker *w, struct port *port)
{
	struct wport *wp = w->wports[port->slot];

	return wp && wp->port == port ? wp : NULL;
}

/* A retired queue is let go by its only user once nothing of ours is in
 * flight on it. */
void wport_release(struct dp_worker *w, struct wport *wp)
{
	if (wp->retired && !wp->inflight) {
		port_put(wp->port);
		free(wp);
	}
}

/* The data-path half of each port type; none for a port whose VM the host
 * kernel reaches (port_class.via_host). */
static const struct dp_port_io *io_of(const struct port *port)
{
	if (port->class->via_host)
		return NULL;
	return port->cfg.type == PORT_VHOST_USER ? &dp_vhost_io : &dp_tap_io;
}

static void wport_retire(struct dp_worker *w, struct wport *wp)
{
	wp->retired = true;
	wp->io->retire(w, wp);
	wport_release(w, wp);
}

/* The device's ports changed: serve the new ones, let go of the gone. */
void dp_follow_ports(struct dp_worker *w)
{
	struct wg_device *dev = w->dev;

	w->ports_gen = atomic_load(&dev->ports->gen);
	w->n_active = 0;
	for (int i = 0; i < PORT_MAX; i++) {
		struct port *port = dev->ports->slot[i];
		const struct dp_port_io *io = port ? io_of(port) : NULL;
		struct wport *wp = w->wports[i];

		if (wp && wp->port != port) {
			w->wports[i] = NULL;
			wport_retire(w, wp);
			wp = NULL;
		}
		if (io && !wp && io->serves(w, port)) {
			wp = calloc(1, sizeof(*wp));
			if (!wp) {
				log_error("worker %d: no memory to serve port %s", w->id, port->cfg.name);
				continue;
			}
			port_get(port);
			wp->port = port;
			wp->io = io;
			wp->fd = port->fds[w->id];
			w->wports[i] = wp;
		}
		if (wp)
			w->active[w->n_active++] = wp;
	}
	for (unsigned int i = 0; i < w->n_active; i++)
		if (w->active[i]->io->follow)
			w->active[i]->io->follow(w, w->active[i]);
}

/* A super-packet or checksum-offloaded packet for a VM that did not
 * negotiate taking it so: split, checksums done, one frame each. Consumes
 * p. */
static void port_output_split(struct dp_worker *w, struct wport *wp, struct wg_pkt *p,
			      uint8_t *ip, uint32_t len, const struct tun_vnet_hdr *vnet)
{
	static const struct tun_vnet_hdr none;
	struct port *port = wp->port;
	struct tun_offload_info info;
	enum port_drop why;
	unsigned int n;

	/* Offloaded packets always sit at the payload of their own buffer. */
	if (ip != wg_pkt_payload(p) || tun_offload_parse_hdr(vnet, ip, len, &info)) {
		port_count_drop(&port->counters, PORT_DROP_malformed);
		pkt_put(w, p);
		return;
	}
	n = dp_split_super(w, p, &info, &why);
	if (!n)
		port_count_drop(&port->counters, why);
	for (unsigned int i = 0; i < n; i++) {
		struct wg_pkt *s = w->seg_pkts[i];
		uint8_t *seg = wg_pkt_payload(s);

		frame_eth_header(seg - FRAME_ETH_HLEN, port->cfg.vm_mac, port->ndp.router_mac,
				 seg[0] >> 4);
		wp->io->write(w, wp, s, &none, seg - FRAME_ETH_HLEN, s->len + FRAME_ETH_HLEN);
		pkt_put(w, s);
	}
}

/* An attached port's VM gets the IP packet through the TUN, as the host's.
 * Consumes p. */
static void attached_output(struct dp_worker *w, struct port *port, struct wg_pkt *p,
			    uint8_t *ip, uint32_t len, const struct tun_vnet_hdr *vnet)
	WG_REQUIRES_SHARED(w->dev->lock)
{
	if (vnet && vnet->gso_type != VIRTIO_NET_HDR_GSO_NONE && !w->vnet) {
		port_count_drop(&port->counters, PORT_DROP_too_big); /* a TUN without GSO */
		pkt_put(w, p);
		return;
	}
	port_count(&port->counters, tx_packets, 1);
	port_count(&port->counters, tx_bytes, len);
	if (vnet && w->vnet) {
		memcpy(ip - TUN_VNET_HDR_LEN, vnet, TUN_VNET_HDR_LEN);
		dp_tun_write(w, p, ip - TUN_VNET_HDR_LEN, len + TUN_VNET_HDR_LEN);
	} else {
		dp_host_output(w, p, ip, len);
	}
}

/* Sends the IP packet ip[0, len) of p to the VM of port: an Ethernet header
 * from the router in front, and a virtio-net header: vnet (a coalesced
 * super-packet's, whose offsets count from the IP header) or none. Consumes
 * p. */
void dp_port_output(struct dp_worker *w, struct port *port, struct wg_pkt *p,
		    uint8_t *ip, uint32_t len, const struct tun_vnet_hdr *vnet)
{
	struct wport *wp = wport_of(w, port);
	struct tun_vnet_hdr h = { 0 };

	/* An attached port's VM is the host kernel's to reach: through the
	 * TUN and the route weftd installed to its netdev. */
	if (port->class->via_host) {
		attached_output(w, port, p, ip, len, vnet);
		return;
	}
	if (!wp) {
		port_count_drop(&port->counters, PORT_DROP_no_route);
		pkt_put(w, p);
		return;
	}
	if (vnet) {
		h = *vnet;
		if (h.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)
			h.csum_start = (uint16_t)(h.csum_start + FRAME_ETH_HLEN);
		if (h.gso_type != VIRTIO_NET_HDR_GSO_NONE)
			h.hdr_len = (uint16_t)(h.hdr_len + FRAME_ETH_HLEN);
	}
	if (h.gso_type == VIRTIO_NET_HDR_GSO_NONE && len > port->cfg.mtu) {
		port_count_drop(&port->counters, PORT_DROP_too_big);
		pkt_put(w, p);
		return;
	}
	if (wp->io->takes && !wp->io->takes(wp, &h)) {
		port_output_split(w, wp, p, ip, len, vnet);
		return;
	}
	frame_eth_header(ip - FRAME_ETH_HLEN, port->cfg.vm_mac, port->ndp.router_mac, ip[0] >> 4);
	wp->io->write(w, wp, p, &h, ip - FRAME_ETH_HLEN, len + FRAME_ETH_HLEN);
	pkt_put(w, p);
}

/* ARP, ICMPv6 or ICMP to the gateway from the VM: true when the responder
 * took it (answered, consumed or dropped), false when it is for routing
 * after all. An echo reply is as long as its request. */
static bool port_neighbour(struct dp_worker *w, struct wport *wp, const uint8_t *frame,
			   uint32_t len)
{
	struct port *port = wp->port;
	struct wg_pkt *r = pkt_get_for(w, len > NDP_REPLY_MAX ? len : NDP_REPLY_MAX);
	enum ndp_verdict v;
	size_t rlen = 0;
	uint8_t *out;

	if (!r) {
		port_count_drop(&port->counters, PORT_DROP_no_buffer);
		return true;
	}
	out = wg_pkt_payload(r) - FRAME_ETH_HLEN;
	v = ndp_handle(&port->ndp, &port->ndp_state, wg_clock_now() / NSEC_PER_MSEC, frame, len,
		       out, r->cap - WG_PKT_TAILROOM - (r->off - FRAME_ETH_HLEN), &rlen);
	if (v == NDP_REPLY) {
		static const struct tun_vnet_hdr none;

		wp->io->write(w, wp, r, &none, out, (uint32_t)rlen);
	} else if (ndp_verdict_is_drop(v)) {
		port_count_drop(&port->counters, PORT_DROP_ndp);
	}
	pkt_put(w, r);
	return v != NDP_NOT_NDP;
}

/* A VM's super-packet (TSO) or checksum-offloaded packet, checked, at the
 * payload of p, with info from its virtio-net header (offsets from the IP
 * header), to h: another VM and the host's vnet TUN take it whole, a peer
 * or the mesh get it split. Consumes p. */
static void send_offloaded(struct dp_worker *w, struct wport *in, struct wg_pkt *p,
			   const struct dp_hop *h, const struct tun_offload_info *info,
			   const struct tun_vnet_hdr *vnet)
	WG_REQUIRES_SHARED(w->dev->lock)
{
	uint8_t *pkt = wg_pkt_payload(p);
	enum port_drop why;
	unsigned int n;

	if (h->to == DP_TO_PORT) {
		dp_port_output(w, h->port, p, pkt, p->len, vnet);
	} else if (h->to == DP_TO_HOST && w->vnet) {
		memcpy(pkt - TUN_VNET_HDR_LEN, vnet, TUN_VNET_HDR_LEN);
		dp_tun_write(w, p, pkt - TUN_VNET_HDR_LEN, p->len + TUN_VNET_HDR_LEN);
	} else {
		n = dp_split_super(w, p, info, &why);
		if (!n)
			port_count_drop(&in->port->counters, why);
		else
			dp_send(w, h, w->seg_pkts, n, in->port);
	}
}

/* A frame read from a VM's queue, behind its virtio-net header, with its IP
 * packet (if any) at the payload of p. Consumes p. */
void wport_received(struct dp_worker *w, struct wport *wp, struct wg_pkt *p, uint32_t res)
{
	struct port_counters *c = &wp->port->counters;
	uint8_t *frame = wg_pkt_payload(p) - FRAME_ETH_HLEN;
	const struct tun_vnet_hdr *raw = (const void *)(frame - PORT_VNET_LEN);
	uint32_t len = res - PORT_VNET_LEN;
	bool offloaded = res > PORT_VNET_LEN && (raw->gso_type != VIRTIO_NET_HDR_GSO_NONE ||
						  raw->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM);
	enum frame_verdict v = FRAME_DROP;
	enum port_drop why = PORT_DROP_malformed;
	struct tun_offload_info info;
	struct tun_vnet_hdr vnet;
	struct frame_ip ip;
	struct dp_hop h;

	port_count(c, rx_packets, 1);
	port_count(c, rx_bytes, res > PORT_VNET_LEN ? len : 0);
	if (res > PORT_L2_LEN)
		v = frame_classify(&wp->port->cfg, frame, len, &why);
	if (v != FRAME_DROP && offloaded) {
		/* The guest's header is replaced by one rebuilt from what was
		 * parsed: its hdr_len, DATA_VALID or any other field of its own
		 * never reaches the VM or host that gets the packet. */
		if (tun_offload_parse_frame(frame - PORT_VNET_LEN, frame, len, FRAME_ETH_HLEN, &vnet,
					    &info)) {
			v = FRAME_DROP;
			why = PORT_DROP_malformed;
		} else if (info.kind == TUN_OFFLOAD_CSUM) {
			/* One packet: finish its checksum here and carry on as
			 * if the VM had done it. */
			struct tun_offload_seg seg = { .buf = p->data, .cap = p->cap - WG_PKT_TAILROOM };

			if (tun_offload_split(&info, &seg, 1, p->off) < 0)
				v = FRAME_DROP;
			offloaded = false;
		}
	}
	if (v == FRAME_NEIGHBOUR && !offloaded && port_neighbour(w, wp, frame, len)) {
		pkt_put(w, p);
		return;
	}
	if (v != FRAME_DROP)
		v = frame_ip_check(&wp->port->cfg, frame, len, &ip, &why);
	if (v == FRAME_DROP) {
		port_count_drop(c, why);
		pkt_put(w, p);
		return;
	}
	p->len = ip.len;
	dp_next_hop(w, ip.family, ip.dst, &h);
	if (offloaded)
		send_offloaded(w, wp, p, &h, &info, &vnet);
	else
		dp_send(w, &h, &p, 1, wp->port); /* to a peer, another VM or the host */
}
