/* The data path of vhost-user ports: a worker takes the guest's frames
 * from the TX rings of its queue pairs (a kick read per ring, then a
 * drain), and places frames for the VM in a guest RX ring. The rings are
 * the port thread's to set up (port/vhost.c); workers only use them. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "datapath/internal.h"
#include "wg/device.h"
#include "wg/log.h"

/* Whether the guest negotiated what the virtio-net header h asks of it. */
static bool vhost_takes(const struct wport *wp, const struct tun_vnet_hdr *h)
{
	uint64_t f = wp->port->vhost->vdev.features;
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
static void vhost_write(struct dp_worker *w, struct wport *wp, struct wg_pkt *p,
			const struct tun_vnet_hdr *h, uint8_t *frame, uint32_t len)
{
	struct port *port = wp->port;
	struct port_vhost *v = port->vhost;
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
		port_vhost_report_broken(port);
	} else {
		port_count_drop(&port->counters, r == -EMSGSIZE ? PORT_DROP_too_big : PORT_DROP_no_buffer);
	}
}

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
static void vhost_arm_kick(struct dp_worker *w, struct wport *wp, unsigned int q)
{
	struct io_uring_sqe *sqe;
	struct op *op;
	int fd = fcntl(vhu_ring_kick_fd(&wp->port->vhost->vdev, 2 * q + 1), F_DUPFD_CLOEXEC, 0);

	if (fd < 0) {
		log_ratelimited(WG_LOG_ERROR, "port %s: cannot hold ring %u's kick fd: %s",
				wp->port->cfg.name, 2 * q + 1, strerror(errno));
		return;
	}
	op = dp_prepare(w, OP_VHOST_KICK, &sqe);
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
static void vhost_schedule_drain(struct dp_worker *w, struct wport *wp, unsigned int q)
{
	struct io_uring_sqe *sqe;
	struct op *op = dp_prepare(w, OP_VHOST_DRAIN, &sqe);

	if (!op)
		return;
	op->wport = wp;
	op->queue = q;
	wp->inflight++;
	io_uring_prep_nop(sqe);
}

/* Takes the guest's frames from TX ring q, each into its own buffer with
 * its IP packet at WG_PKT_FRONT, as a tap read would have put it. */
static void vhost_drain(struct dp_worker *w, struct wport *wp, unsigned int q)
	WG_REQUIRES_SHARED(w->dev->lock)
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
				port_vhost_report_broken(wp->port);
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
static void vhost_follow(struct dp_worker *w, struct wport *wp)
{
	unsigned int pairs = vhu_ring_count(&wp->port->vhost->vdev) / 2;

	for (unsigned int q = 0; q < VHU_MAX_QUEUE_PAIRS; q++) {
		struct io_uring_sqe *sqe;

		if (wp->kick[q] && dp_prepare(w, OP_CANCEL, &sqe))
			io_uring_prep_cancel(sqe, wp->kick[q], 0);
		wp->kick[q] = NULL;
		if (wp->retired || q >= pairs || q % (unsigned int)w->dev->n_workers != (unsigned int)w->id ||
		    !vhost_tx_ring(wp, q))
			continue;
		vhost_arm_kick(w, wp, q);
		vhost_schedule_drain(w, wp, q);
	}
}

static void vhost_completed(struct dp_worker *w, struct op *op, int res)
	WG_REQUIRES_SHARED(w->dev->lock)
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

static bool vhost_serves(const struct dp_worker *w, const struct port *port)
{
	return true; /* vhost_follow picks this worker's rings */
}

const struct dp_port_io dp_vhost_io = {
	.serves = vhost_serves,
	.follow = vhost_follow,
	.retire = vhost_follow, /* a retired port's kick reads are cancelled */
	.takes = vhost_takes,
	.write = vhost_write,
	.completed = vhost_completed,
};
