/* The worker's VM-port data path: each worker's queues of the device's tap
 * and vhost-user ports, frames read from a VM checked and routed, packets
 * for a VM framed and written to its tap queue or its guest's RX ring. */
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

static struct wport *wport_of(struct wg_worker *w, struct wg_port *port)
{
	struct wport *wp = w->wports[port->slot];

	return wp && wp->port == port ? wp : NULL;
}

/* A retired queue is let go by its only user once nothing of ours is in
 * flight on it. */
void wport_release(struct wg_worker *w, struct wport *wp)
{
	if (wp->retired && !wp->inflight) {
		wg_port_put(wp->port);
		free(wp);
	}
}

static void vhost_follow(struct wg_worker *w, struct wport *wp);

static void wport_retire(struct wg_worker *w, struct wport *wp)
{
	struct io_uring_sqe *sqe;

	wp->retired = true;
	if (wp->port->vhost)
		vhost_follow(w, wp); /* cancels the kick reads */
	else if (wp->reads && wg_worker_prepare(w, OP_CANCEL, &sqe))
		io_uring_prep_cancel_fd(sqe, wp->fd, IORING_ASYNC_CANCEL_ALL);
	wport_release(w, wp);
}

/* The device's ports changed: serve the new ones, let go of the gone. */
void wg_worker_follow_ports(struct wg_worker *w)
{
	struct wg_device *dev = w->dev;

	w->ports_gen = atomic_load(&dev->ports->gen);
	w->n_active = 0;
	for (int i = 0; i < PORT_MAX; i++) {
		struct wg_port *port = dev->ports->slot[i];
		struct wport *wp = w->wports[i];

		if (wp && wp->port != port) {
			w->wports[i] = NULL;
			wport_retire(w, wp);
			wp = NULL;
		}
		if (port && !wp && (port->vhost || port->n_fds > w->id)) {
			wp = calloc(1, sizeof(*wp));
			if (!wp) {
				log_error("worker %d: no memory to serve port %s", w->id, port->cfg.name);
				continue;
			}
			wg_port_get(port);
			wp->port = port;
			wp->fd = port->fds[w->id];
			w->wports[i] = wp;
		}
		if (wp)
			w->active[w->n_active++] = wp;
	}
	for (unsigned int i = 0; i < w->n_active; i++)
		if (w->active[i]->port->vhost)
			vhost_follow(w, w->active[i]);
}

bool wport_arm_read(struct wg_worker *w, struct wport *wp)
{
	struct io_uring_sqe *sqe;
	/* With TSO a frame may be a 64 KiB super-packet. */
	struct wg_pkt *p = wp->port->offload ? pkt_get(w) : pkt_get_for(w, wp->port->cfg.mtu);
	struct op *op = p ? wg_worker_prepare(w, OP_PORT_READ, &sqe) : NULL;

	if (!op) {
		if (p)
			pkt_put(w, p);
		return false;
	}
	op->pkt = p;
	op->wport = wp;
	/* The frame lands so that its IP packet starts at WG_PKT_FRONT. */
	io_uring_prep_read(sqe, wp->fd, wg_pkt_payload(p) - PORT_L2_LEN,
			   p->cap - WG_PKT_TAILROOM - (p->off - PORT_L2_LEN), 0);
	wp->reads++;
	wp->inflight++;
	return true;
}

/* Writes the frame (behind its virtio-net header) at buf[0, len) of p to
 * the VM; p stays referenced until done. */
static void port_write(struct wg_worker *w, struct wport *wp, struct wg_pkt *p, uint8_t *buf,
		       uint32_t len)
{
	struct port_counters *c = &wp->port->counters;
	struct io_uring_sqe *sqe;
	struct op *op = wg_worker_prepare(w, OP_PORT_WRITE, &sqe);

	if (!op) {
		port_count_drop(c, PORT_DROP_no_buffer);
		return;
	}
	p->refs++;
	op->pkt = p;
	op->wport = wp;
	wp->inflight++;
	io_uring_prep_write(sqe, wp->fd, buf, len, 0);
	port_count(c, tx_packets, 1);
	port_count(c, tx_bytes, len - PORT_VNET_LEN);
}

/* --- vhost-user ports: guest rings --- */

/* Whether the guest negotiated what the virtio-net header h asks of it. */
static bool vhost_guest_takes(const struct wg_port *port, const struct tun_vnet_hdr *h)
{
	uint64_t f = port->vhost->vdev.features;
	unsigned int gso = h->gso_type & ~VIRTIO_NET_HDR_GSO_ECN;

	if ((h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) && !(f & (1ull << VIRTIO_NET_F_GUEST_CSUM)))
		return false;
	if (gso == VIRTIO_NET_HDR_GSO_TCPV4)
		return f & (1ull << VIRTIO_NET_F_GUEST_TSO4);
	if (gso == VIRTIO_NET_HDR_GSO_TCPV6)
		return f & (1ull << VIRTIO_NET_F_GUEST_TSO6);
	return gso == VIRTIO_NET_HDR_GSO_NONE;
}

/* Places one frame (with its virtio-net header h) in the guest's RX ring
 * of this worker's queue pair, under that ring's lock (workers share the
 * guest's queues when it has fewer than there are workers). */
static void vhost_output(struct wg_worker *w, struct wg_port *port, const struct tun_vnet_hdr *h,
			 const uint8_t *frame, uint32_t len)
{
	struct wg_vhost *v = port->vhost;
	unsigned int pairs = vhu_ring_count(&v->vdev) / 2, q = pairs ? (unsigned int)w->id % pairs : 0;
	struct virtq *vq;
	bool notify = false;
	int r = -ENOBUFS;

	if (pairs && !vhu_ring_ready(&v->vdev, 2 * q))
		q = 0;
	if (pairs && vhu_ring_ready(&v->vdev, 2 * q)) {
		vq = vhu_ring_vq(&v->vdev, 2 * q);
		pthread_spin_lock(&v->rx_lock[q]);
		r = virtq_net_rx_write(vq, (const struct virtio_net_hdr *)h, frame, len);
		notify = r > 0 && virtq_should_notify(vq);
		pthread_spin_unlock(&v->rx_lock[q]);
		if (notify)
			virtq_notify(vq);
	}
	if (r > 0) {
		port_count(&port->counters, tx_packets, 1);
		port_count(&port->counters, tx_bytes, len);
	} else if (r == -EIO) {
		port_count_drop(&port->counters, PORT_DROP_tx_error);
		wg_vhost_report_broken(port);
	} else {
		port_count_drop(&port->counters, r == -EMSGSIZE ? PORT_DROP_too_big : PORT_DROP_no_buffer);
	}
}

/* A super-packet or checksum-offloaded packet for a guest that did not
 * negotiate taking it so: split, checksums done, one frame each. */
static void vhost_output_split(struct wg_worker *w, struct wg_port *port, struct wg_pkt *p,
			       uint8_t *ip, uint32_t len, const struct tun_vnet_hdr *vnet)
{
	static const struct tun_vnet_hdr none;
	struct tun_offload_info info;
	enum port_drop why;
	unsigned int n;

	/* Offloaded packets always sit at the payload of their own buffer. */
	if (ip != wg_pkt_payload(p) || tun_offload_parse_hdr(vnet, ip, len, &info)) {
		port_count_drop(&port->counters, PORT_DROP_malformed);
		return;
	}
	p->refs++; /* wg_worker_split_super consumes one: the caller keeps its own */
	n = wg_worker_split_super(w, p, &info, &why);
	if (!n)
		port_count_drop(&port->counters, why);
	for (unsigned int i = 0; i < n; i++) {
		uint8_t *seg = wg_pkt_payload(w->seg_pkts[i]);

		frame_eth_header(seg - FRAME_ETH_HLEN, port->cfg.vm_mac, port->ndp.router_mac,
				 seg[0] >> 4);
		vhost_output(w, port, &none, seg - FRAME_ETH_HLEN, w->seg_pkts[i]->len + FRAME_ETH_HLEN);
		pkt_put(w, w->seg_pkts[i]);
	}
}

/* Sends the IP packet ip[0, len) of p to the VM of port: an Ethernet header
 * from the router in front, and a virtio-net header: vnet (a coalesced
 * super-packet's, whose offsets count from the IP header) or none. */
static void attached_output(struct wg_worker *w, struct wg_port *port, struct wg_pkt *p,
			    uint8_t *ip, uint32_t len, const struct tun_vnet_hdr *vnet)
{
	if (vnet && vnet->gso_type != VIRTIO_NET_HDR_GSO_NONE && !w->vnet) {
		port_count_drop(&port->counters, PORT_DROP_too_big); /* a TUN without GSO */
		return;
	}
	port_count(&port->counters, tx_packets, 1);
	port_count(&port->counters, tx_bytes, len);
	if (vnet && w->vnet) {
		memcpy(ip - TUN_VNET_HDR_LEN, vnet, TUN_VNET_HDR_LEN);
		wg_worker_tun_write(w, p, ip - TUN_VNET_HDR_LEN, len + TUN_VNET_HDR_LEN);
	} else {
		wg_worker_host_output(w, p, ip, len);
	}
}

void wg_worker_port_output(struct wg_worker *w, struct wg_port *port, struct wg_pkt *p,
			   uint8_t *ip, uint32_t len, const struct tun_vnet_hdr *vnet)
{
	struct wport *wp = wport_of(w, port);
	struct tun_vnet_hdr h = { 0 };

	/* An attached port's VM is the host kernel's to reach: through the
	 * TUN and the route weftd installed to its netdev. */
	if (port->cfg.type == PORT_ATTACHED) {
		attached_output(w, port, p, ip, len, vnet);
		return;
	}
	if (!wp) {
		port_count_drop(&port->counters, PORT_DROP_no_route);
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
		return;
	}
	if (port->vhost && !vhost_guest_takes(port, &h)) {
		vhost_output_split(w, port, p, ip, len, vnet);
		return;
	}
	frame_eth_header(ip - FRAME_ETH_HLEN, port->cfg.vm_mac, port->ndp.router_mac, ip[0] >> 4);
	if (port->vhost) {
		vhost_output(w, port, &h, ip - FRAME_ETH_HLEN, len + FRAME_ETH_HLEN);
		return;
	}
	memcpy(ip - PORT_L2_LEN, &h, sizeof(h));
	port_write(w, wp, p, ip - PORT_L2_LEN, len + PORT_L2_LEN);
}

/* ARP or ICMPv6 from the VM: true when the responder took it (answered,
 * consumed or dropped), false when it is for routing after all. */
static bool port_neighbour(struct wg_worker *w, struct wport *wp, const uint8_t *frame,
			   uint32_t len)
{
	struct wg_port *port = wp->port;
	struct wg_pkt *r = pkt_get_for(w, NDP_REPLY_MAX);
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
	if (v == NDP_REPLY && port->vhost) {
		static const struct tun_vnet_hdr none;

		vhost_output(w, port, &none, out, (uint32_t)rlen);
	} else if (v == NDP_REPLY) {
		memset(out - PORT_VNET_LEN, 0, PORT_VNET_LEN);
		port_write(w, wp, r, out - PORT_VNET_LEN, (uint32_t)rlen + PORT_VNET_LEN);
	} else if (ndp_verdict_is_drop(v)) {
		port_count_drop(&port->counters, PORT_DROP_ndp);
	}
	pkt_put(w, r);
	return v != NDP_NOT_NDP;
}

/* A VM's super-packet (TSO) or checksum-offloaded packet, checked, at the
 * payload of p, with info from its virtio-net header (offsets from the IP
 * header): another VM and the host's vnet TUN take it whole, a peer gets
 * it split. Consumes p. */
static void route_offloaded(struct wg_worker *w, struct wport *in, struct wg_pkt *p,
			    const struct frame_ip *ip, const struct tun_offload_info *info,
			    const struct tun_vnet_hdr *vnet)
{
	struct rt_hop *hop = rt_lookup(w->dev->allowed_ips, ip->family, ip->dst);
	uint8_t *pkt = wg_pkt_payload(p);
	enum port_drop why;
	unsigned int n;

	if (hop && (hop->kind == RT_HOP_REMOTE || hop->kind == RT_HOP_MESH)) {
		/* A VM elsewhere in the mesh: segments, routed one by one. */
		n = wg_worker_split_super(w, p, info, &why);
		if (!n)
			port_count_drop(&in->port->counters, why);
		else
			wg_worker_route(w, w->seg_pkts, n, false);
		return;
	}
	if (hop && hop->kind == RT_HOP_PORT) {
		wg_worker_port_output(w, wg_port_from_hop(hop), p, pkt, p->len, vnet);
	} else if (!hop && w->vnet) {
		memcpy(pkt - TUN_VNET_HDR_LEN, vnet, TUN_VNET_HDR_LEN);
		wg_worker_tun_write(w, p, pkt - TUN_VNET_HDR_LEN, p->len + TUN_VNET_HDR_LEN);
	} else {
		n = wg_worker_split_super(w, p, info, &why);
		if (!n) {
			port_count_drop(&in->port->counters, why);
			return;
		}
		if (hop) {
			wg_send_to_peer(w->dev, wg_peer_from_hop(hop), w->seg_pkts, n, &w->tx);
			return;
		}
		for (unsigned int i = 0; i < n; i++) {
			wg_worker_host_output(w, w->seg_pkts[i], wg_pkt_payload(w->seg_pkts[i]),
					      w->seg_pkts[i]->len);
			pkt_put(w, w->seg_pkts[i]);
		}
		return;
	}
	pkt_put(w, p);
}

/* A frame read from a VM's queue, behind its virtio-net header, with its IP
 * packet (if any) at the payload of p. Consumes p. */
void wport_received(struct wg_worker *w, struct wport *wp, struct wg_pkt *p, uint32_t res)
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
	if (offloaded)
		route_offloaded(w, wp, p, &ip, &info, &vnet);
	else
		wg_worker_route(w, &p, 1, true); /* to a peer, another VM or the host */
}

/* --- vhost-user ports: guest TX rings --- */

enum { VHOST_DRAIN_BUDGET = 256 }; /* frames per ring per turn */

static struct virtq *vhost_tx_ring(struct wport *wp, unsigned int q)
{
	struct vhu_dev *vdev = &wp->port->vhost->vdev;

	return vhu_ring_ready(vdev, 2 * q + 1) ? vhu_ring_vq(vdev, 2 * q + 1) : NULL;
}

/* The read is prepared here, under the device's read lock, but submitted
 * at the next loop turn, after the lock is let go. The port thread may close
 * the ring's kick eventfd in between (a new SET_VRING_KICK, a disconnect), and
 * the number may be handed to another file at once: a read on the bare
 * number would then land on that file. So the read goes to a duplicate that
 * the operation owns and closes when it is put back (op_put); nobody else
 * can close it, and once submitted the kernel holds the file itself. */
static void vhost_arm_kick(struct wg_worker *w, struct wport *wp, unsigned int q)
{
	struct io_uring_sqe *sqe;
	struct op *op;
	int fd = fcntl(vhu_ring_kick_fd(&wp->port->vhost->vdev, 2 * q + 1), F_DUPFD_CLOEXEC, 0);

	if (fd < 0) {
		log_ratelimited(WG_LOG_ERROR, "port %s: cannot hold ring %u's kick fd: %s",
				wp->port->cfg.name, 2 * q + 1, strerror(errno));
		return;
	}
	op = wg_worker_prepare(w, OP_VHOST_KICK, &sqe);
	if (!op) {
		close(fd);
		return;
	}
	op->owned_fd = fd;
	op->wport = wp;
	op->queue = q;
	wp->inflight++;
	wp->kick[q] = op;
	io_uring_prep_read(sqe, fd, &wp->kick_val[q], sizeof(wp->kick_val[q]), 0);
}

/* Comes back to ring q at the next loop turn (a no-op's completion). */
static void vhost_schedule_drain(struct wg_worker *w, struct wport *wp, unsigned int q)
{
	struct io_uring_sqe *sqe;
	struct op *op = wg_worker_prepare(w, OP_VHOST_DRAIN, &sqe);

	if (!op)
		return;
	op->wport = wp;
	op->queue = q;
	wp->inflight++;
	io_uring_prep_nop(sqe);
}

/* Takes the guest's frames from TX ring q, each into its own buffer with
 * its IP packet at WG_PKT_FRONT, as a tap read would have put it. */
static void vhost_drain(struct wg_worker *w, struct wport *wp, unsigned int q)
{
	struct virtq *vq = vhost_tx_ring(wp, q);
	struct port_counters *c = &wp->port->counters;
	bool more = true;

	if (!vq)
		return;
	for (unsigned int n = 0; n < VHOST_DRAIN_BUDGET; n++) {
		struct wg_pkt *p = pkt_get(w);
		uint8_t *buf;
		int got;

		if (!p)
			break; /* the frame waits in the ring */
		buf = wg_pkt_payload(p) - FRAME_ETH_HLEN - vq->hdr_len;
		got = virtq_net_tx_read(vq, buf, p->cap - WG_PKT_TAILROOM - (uint32_t)(buf - p->data));
		if (got <= 0 || (size_t)got < vq->hdr_len) {
			pkt_put(w, p);
			if (got == 0) {
				more = false;
				break;
			}
			if (got == -EIO) {
				log_ratelimited(WG_LOG_ERROR, "port %s: guest broke TX ring %u: %s",
						wp->port->cfg.name, q, vq->why ? vq->why : "?");
				wg_vhost_report_broken(wp->port);
				return;
			}
			port_count_drop(c, got == -EMSGSIZE ? PORT_DROP_too_big : PORT_DROP_malformed);
			continue;
		}
		/* The 12-byte header's num_buffers means nothing on TX: keep
		 * the 10-byte header right in front of the frame. */
		if (vq->hdr_len > PORT_VNET_LEN)
			memmove(buf + vq->hdr_len - PORT_VNET_LEN, buf, PORT_VNET_LEN);
		wport_received(w, wp, p, (uint32_t)got - vq->hdr_len + PORT_VNET_LEN);
	}
	if (virtq_should_notify(vq))
		virtq_notify(vq);
	if (more)
		vhost_schedule_drain(w, wp, q); /* out of budget or of buffers */
}

/* The rings of a vhost-user port changed (or the port is new): drop the
 * kick reads armed on the old eventfds and arm them for the rings that are
 * ready now, draining each once in case the guest queued before. */
static void vhost_follow(struct wg_worker *w, struct wport *wp)
{
	unsigned int pairs = vhu_ring_count(&wp->port->vhost->vdev) / 2;

	for (unsigned int q = 0; q < VHU_MAX_QUEUE_PAIRS; q++) {
		struct io_uring_sqe *sqe;

		if (wp->kick[q] && wg_worker_prepare(w, OP_CANCEL, &sqe))
			io_uring_prep_cancel(sqe, wp->kick[q], 0);
		wp->kick[q] = NULL;
		if (wp->retired || q >= pairs || q % (unsigned int)w->dev->n_workers != (unsigned int)w->id ||
		    !vhost_tx_ring(wp, q))
			continue;
		vhost_arm_kick(w, wp, q);
		vhost_schedule_drain(w, wp, q);
	}
}

void wport_vhost_completed(struct wg_worker *w, struct op *op, int res)
{
	struct wport *wp = op->wport;
	unsigned int q = op->queue;

	/* A kick read that is no longer the ring's was cancelled (the ring
	 * moved on), or took a kick just before: that kick is still served. */
	bool current = op->type != OP_VHOST_KICK || wp->kick[q] == op;

	wp->inflight--;
	if (op->type == OP_VHOST_KICK) {
		if (current)
			wp->kick[q] = NULL;
		if (res < 0 && res != -EINTR && res != -EAGAIN)
			goto out;
	}
	if (!wp->retired && !atomic_load(&w->dev->stopping) && vhost_tx_ring(wp, q)) {
		if (op->type == OP_VHOST_KICK && current)
			vhost_arm_kick(w, wp, q);
		/* A drain no-op may be one of several: take what is there. */
		vhost_drain(w, wp, q);
	}
out:
	wport_release(w, wp);
}
