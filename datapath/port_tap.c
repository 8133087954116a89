/* The data path of tap ports: each worker has its own queue of the tap
 * (port->fds[w->id]), reads frames from it and writes frames for the VM to
 * it, behind a virtio-net header, on the worker's ring. */
#include <errno.h>
#include <string.h>

#include "datapath/internal.h"
#include "wg/device.h"
#include "wg/log.h"

static bool tap_serves(const struct dp_worker *w, const struct port *port)
{
	return port->n_fds > w->id;
}

static void tap_retire(struct dp_worker *w, struct wport *wp)
{
	struct io_uring_sqe *sqe;

	if (wp->reads && dp_prepare(w, OP_CANCEL, &sqe))
		io_uring_prep_cancel_fd(sqe, wp->fd, IORING_ASYNC_CANCEL_ALL);
}

static bool tap_arm_read(struct dp_worker *w, struct wport *wp)
{
	struct io_uring_sqe *sqe;
	/* With TSO a frame may be a 64 KiB super-packet. */
	struct wg_pkt *p = wp->port->offload ? pkt_get(w) : pkt_get_for(w, wp->port->cfg.mtu);
	struct op *op = p ? dp_prepare(w, OP_PORT_READ, &sqe) : NULL;

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

static void tap_arm(struct dp_worker *w, struct wport *wp, unsigned int tso_reads)
{
	while (!wp->dead && wp->reads < (wp->port->offload ? tso_reads : PORT_READS) &&
	       tap_arm_read(w, wp))
		;
}

/* Writes the frame behind its virtio-net header h; p stays referenced
 * until the write is done. */
static void tap_write(struct dp_worker *w, struct wport *wp, struct wg_pkt *p,
		      const struct tun_vnet_hdr *h, uint8_t *frame, uint32_t len)
{
	struct port_counters *c = &wp->port->counters;
	struct io_uring_sqe *sqe;
	struct op *op = dp_prepare(w, OP_PORT_WRITE, &sqe);

	if (!op) {
		port_count_drop(c, PORT_DROP_no_buffer);
		return;
	}
	memcpy(frame - PORT_VNET_LEN, h, PORT_VNET_LEN);
	p->refs++;
	op->pkt = p;
	op->wport = wp;
	wp->inflight++;
	io_uring_prep_write(sqe, wp->fd, frame - PORT_VNET_LEN, len + PORT_VNET_LEN, 0);
	port_count(c, tx_packets, 1);
	port_count(c, tx_bytes, len);
}

static void tap_completed(struct dp_worker *w, struct op *op, int res)
	WG_REQUIRES_SHARED(w->dev->lock)
{
	struct wport *wp = op->wport;
	struct wg_pkt *p = op->pkt;

	wp->inflight--;
	if (op->type == OP_PORT_WRITE) {
		if (res < 0) {
			port_count_drop(&wp->port->counters, PORT_DROP_tx_error);
			log_ratelimited(WG_LOG_DEBUG, "port %s: write failed: %s", wp->port->cfg.name,
					strerror(-res));
		}
		pkt_put(w, p);
	} else if (res > 0 && !wp->retired && !atomic_load(&w->dev->stopping)) {
		wp->reads--;
		wport_received(w, wp, p, (uint32_t)res);
	} else {
		wp->reads--;
		if (res < 0 && res != -EAGAIN && res != -EINTR && res != -ECANCELED && !wp->dead) {
			/* The netdev went away under its VM: stop reading. */
			wp->dead = true;
			log_error("port %s: read failed: %s; port stopped", wp->port->cfg.name,
				  strerror(-res));
		}
		pkt_put(w, p);
	}
	wport_release(w, wp);
}

const struct dp_port_io dp_tap_io = {
	.serves = tap_serves,
	.retire = tap_retire,
	.arm = tap_arm,
	.write = tap_write,
	.completed = tap_completed,
};
