/* The data-path worker. Reads are kept armed on the worker's TUN queue and
 * UDP sockets; each loop turn reaps a batch of completions under the
 * device's shared lock, turns them into sends and TUN writes, and submits
 * them all with the next wait: one io_uring_enter per batch.
 *
 * Receive takes UDP GRO runs (many datagrams per completion). Send gathers
 * the batch's sealed datagrams and sends each run of equal-sized datagrams
 * to one endpoint with a single UDP_SEGMENT (GSO) sendmsg.
 *
 * Buffers come from two fixed pools (only touched pages count as memory):
 * big ones for reads of up to 64 KiB, small ones for single packets.
 * Staged packets are copied out so a slow handshake cannot starve reads.
 *
 * The VM ports' data path (tap queues, guest rings) is in worker_port.c. */
#include "datapath/datapath.h"

#include <errno.h>
#include <liburing.h>
#include <netinet/udp.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "datapath/internal.h"
#include "datapath/pktpool.h"
#include "mesh/mesh.h"
#include "port/ports.h"
#include "port/frame.h"
#include "tun/offload.h"
#include "tun/tun.h"
#include "wg/device.h"
#include "wg/log.h"
#include "wg/peer.h"
#include "wg/receive.h"
#include "wg/send.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

static struct dp_worker *tx_worker(struct wg_tx *tx)
{
	return (struct dp_worker *)tx;
}

/* Ops and batches are taken from their arrays in order the first time, so
 * only as many pages are touched as traffic ever needed. */
static struct op *op_get(struct dp_worker *w, enum op_type type)
{
	struct op *op = w->free_ops;

	if (op)
		w->free_ops = op->next;
	else if (w->ops_carved < N_OPS)
		op = &w->ops[w->ops_carved++];
	else
		return NULL;
	w->ops_in_use++;
	memset(op, 0, sizeof(*op));
	op->type = type;
	op->in_use = true;
	op->owned_fd = -1;
	return op;
}

static bool ops_available(const struct dp_worker *w)
{
	return w->free_ops || w->ops_carved < N_OPS;
}

static void op_put(struct dp_worker *w, struct op *op)
{
	if (op->owned_fd >= 0)
		close(op->owned_fd);
	op->owned_fd = -1;
	op->in_use = false;
	op->next = w->free_ops;
	w->free_ops = op;
	w->ops_in_use--;
}

static struct io_uring_sqe *sqe_get(struct dp_worker *w)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);

	if (!sqe) {
		io_uring_submit(&w->ring);
		sqe = io_uring_get_sqe(&w->ring);
	}
	return sqe;
}

/* An op with an SQE, or NULL (nothing taken) when either pool is dry. */
struct op *dp_prepare(struct dp_worker *w, enum op_type type, struct io_uring_sqe **sqe)
{
	struct op *op = op_get(w, type);

	if (!op)
		return NULL;
	*sqe = sqe_get(w);
	if (!*sqe) {
		op_put(w, op);
		return NULL;
	}
	io_uring_sqe_set_data(*sqe, op);
	return op;
}

static void arm_tun_read(struct dp_worker *w)
{
	struct io_uring_sqe *sqe;
	struct wg_pkt *p = pkt_get(w);
	struct op *op = p ? dp_prepare(w, OP_TUN_READ, &sqe) : NULL;

	if (!op) {
		if (p)
			pkt_put(w, p);
		return;
	}
	op->pkt = p;
	if (w->vnet)
		io_uring_prep_read(sqe, w->tun_fd, wg_pkt_payload(p) - TUN_VNET_HDR_LEN,
				   WG_PKT_MAX_INNER + TUN_VNET_HDR_LEN, 0);
	else
		io_uring_prep_read(sqe, w->tun_fd, wg_pkt_payload(p), WG_PKT_MAX_INNER, 0);
	io_uring_sqe_set_data(sqe, op);
	w->tun_reads++;
}

static void arm_udp_recv(struct dp_worker *w, struct wsock *s)
{
	struct io_uring_sqe *sqe;
	struct wg_pkt *p = pkt_get(w);
	struct op *op = p ? dp_prepare(w, OP_UDP_RECV, &sqe) : NULL;

	if (!op) {
		if (p)
			pkt_put(w, p);
		return;
	}
	/* Datagrams land so that their inner packets start at WG_PKT_FRONT. */
	p->off = WG_PKT_FRONT - WG_PKT_HEADROOM;
	op->pkt = p;
	op->sock = s;
	op->iov.iov_base = wg_pkt_payload(p);
	op->iov.iov_len = p->cap - p->off;
	op->msg.msg_name = &p->addr;
	op->msg.msg_namelen = sizeof(p->addr);
	op->msg.msg_iov = &op->iov;
	op->msg.msg_iovlen = 1;
	op->msg.msg_control = op->cmsg;
	op->msg.msg_controllen = sizeof(op->cmsg);
	io_uring_prep_recvmsg(sqe, s->fd, &op->msg, 0);
	io_uring_sqe_set_data(sqe, op);
	s->recvs++;
	s->inflight++;
}

static void arm_wake(struct dp_worker *w)
{
	struct io_uring_sqe *sqe;

	if (dp_prepare(w, OP_WAKE, &sqe))
		io_uring_prep_read(sqe, w->wake_fd, &w->wake_val, sizeof(w->wake_val), 0);
}

static void drop_tx(struct dp_worker *w, struct wg_pkt **pkts, unsigned int n)
{
	wg_stat_add(&w->dev->stats, drop_tx_error, n);
	for (unsigned int i = 0; i < n; i++)
		pkt_put(w, pkts[i]);
}

/* One sendmsg for pkts[0, n): equal sizes but for a shorter last one. */
static void send_run(struct dp_worker *w, struct wg_pkt **pkts, unsigned int n, uint32_t seg)
{
	struct wsock *s = pkts[0]->addr.sa.sa_family == AF_INET6 ? w->cur6 : w->cur4;
	struct send_batch *b = w->free_batches;
	struct io_uring_sqe *sqe;
	struct op *op;

	if (!b && w->batches_carved < N_BATCHES)
		b = &w->batches[w->batches_carved++];
	else if (b)
		w->free_batches = b->next;
	if (!s || !b || !(op = dp_prepare(w, OP_UDP_SEND, &sqe))) {
		if (b) {
			b->next = w->free_batches;
			w->free_batches = b;
		}
		drop_tx(w, pkts, n);
		return;
	}
	b->n = n;
	b->dst = pkts[0]->addr;
	for (unsigned int i = 0; i < n; i++) {
		b->pkts[i] = pkts[i];
		b->iov[i].iov_base = wg_pkt_payload(pkts[i]);
		b->iov[i].iov_len = pkts[i]->len;
	}
	op->batch = b;
	op->sock = s;
	op->msg.msg_name = &b->dst;
	op->msg.msg_namelen = wg_sockaddr_len(&b->dst);
	op->msg.msg_iov = b->iov;
	op->msg.msg_iovlen = n;
	if (n > 1) {
		struct cmsghdr *cm = (struct cmsghdr *)(void *)b->cmsg;

		op->msg.msg_control = b->cmsg;
		op->msg.msg_controllen = sizeof(b->cmsg);
		cm->cmsg_level = SOL_UDP;
		cm->cmsg_type = UDP_SEGMENT;
		cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
		*(uint16_t *)(void *)CMSG_DATA(cm) = (uint16_t)seg;
	}
	io_uring_prep_sendmsg(sqe, s->fd, &op->msg, 0);
	s->inflight++;
}

/* Sends the batch's datagrams, grouping runs for GSO. */
static void flush_tx(struct dp_worker *w)
{
	unsigned int i = 0, n = w->n_pending;

	while (i < n) {
		struct wg_pkt *first = w->pending[i];
		uint32_t seg = first->len;
		unsigned int max = w->gso ? GSO_MAX_BYTES / seg : 1, j = i + 1;

		if (max > MAX_SEGS)
			max = MAX_SEGS;
		while (j < n && j - i < max) {
			struct wg_pkt *p = w->pending[j];

			if (p->len > seg || !wg_sockaddr_equal(&p->addr, &first->addr))
				break;
			j++;
			if (p->len < seg)
				break; /* a shorter datagram ends a GSO run */
		}
		send_run(w, &w->pending[i], j - i, seg);
		i = j;
	}
	w->n_pending = 0;
}

static void tx_emit(struct wg_tx *tx, struct wg_pkt *p)
{
	struct dp_worker *w = tx_worker(tx);

	if (w->n_pending == PENDING_MAX)
		flush_tx(w);
	w->pending[w->n_pending++] = p;
}

static void tx_release(struct wg_tx *tx, struct wg_pkt *p)
{
	pkt_put(tx_worker(tx), p);
}

/* Writes data[0, len) of p to the TUN, through the queue of its flow (see
 * tun_queue_for). Consumes p (released when the write is done). */
void dp_tun_write(struct dp_worker *w, struct wg_pkt *p, uint8_t *data, uint32_t len)
{
	struct wg_device *dev = w->dev;
	uint32_t hdr = w->vnet ? TUN_VNET_HDR_LEN : 0;
	struct io_uring_sqe *sqe;
	struct op *op;
	int fd = w->tun_fd;

	if (dev->n_workers > 1 && len > hdr) {
		fd = dev->tun_fds[tun_queue_for(data + hdr, len - hdr, (unsigned int)dev->n_workers)];
		if (fd < 0)
			fd = w->tun_fd;
	}
	op = dp_prepare(w, OP_TUN_WRITE, &sqe);
	if (!op) {
		wg_stat_inc(&dev->stats, drop_no_buffer);
		pkt_put(w, p);
		return;
	}
	op->pkt = p;
	io_uring_prep_write(sqe, fd, data, len, 0);
}

static struct wsock *sock_add(struct dp_worker *w, int fd)
{
	if (fd < 0)
		return NULL;
	for (int i = 0; i < MAX_SOCKS; i++) {
		if (w->socks[i].fd < 0) {
			w->socks[i] = (struct wsock){ .fd = fd };
			return &w->socks[i];
		}
	}
	return NULL;
}

/* A retired socket is closed here, by its only user, once nothing of ours
 * is in flight on it. */
static void sock_release(struct dp_worker *w, struct wsock *s)
{
	if (s->retired && !s->inflight) {
		close(s->fd);
		s->fd = -1;
	}
}

static void sock_retire(struct dp_worker *w, struct wsock *s)
{
	struct io_uring_sqe *sqe;

	if (!s)
		return;
	s->retired = true;
	if (dp_prepare(w, OP_CANCEL, &sqe))
		io_uring_prep_cancel_fd(sqe, s->fd, IORING_ASYNC_CANCEL_ALL);
	sock_release(w, s);
}

/* The control thread swapped the device's sockets (a new listen port). */
static void follow_sockets(struct dp_worker *w)
{
	struct wg_socket_pair *pair = &w->dev->sockets.pair[w->id];
	int fd4 = atomic_load(&pair->fd4), fd6 = atomic_load(&pair->fd6);

	w->gso = w->dev->sockets.gso;
	if ((w->cur4 ? w->cur4->fd : -1) != fd4) {
		sock_retire(w, w->cur4);
		w->cur4 = sock_add(w, fd4);
	}
	if ((w->cur6 ? w->cur6->fd : -1) != fd6) {
		sock_retire(w, w->cur6);
		w->cur6 = sock_add(w, fd6);
	}
}

static void tun_gone(struct dp_worker *w, int err)
{
	if (w->dead_tun)
		return;
	w->dead_tun = true;
	/* EBADFD: the netdev was deleted under us (ip link del), a normal end. */
	wg_log(err == -EBADFD ? WG_LOG_VERBOSE : WG_LOG_ERROR,
	       "TUN device read failed: %s; shutting down", strerror(-err));
	if (w->dev->on_fatal)
		w->dev->on_fatal(w->dev->on_fatal_ctx);
}

/* The host's own packet (from the TUN) at ip[0, len) of p, or one the host
 * must route for a VM, written to the TUN. Consumes p. */
void dp_host_output(struct dp_worker *w, struct wg_pkt *p, uint8_t *ip, uint32_t len)
{
	if (w->vnet) {
		memset(ip - TUN_VNET_HDR_LEN, 0, TUN_VNET_HDR_LEN);
		dp_tun_write(w, p, ip - TUN_VNET_HDR_LEN, len + TUN_VNET_HDR_LEN);
	} else {
		dp_tun_write(w, p, ip, len);
	}
}

/* Splits the parsed super-packet in p (its IP packet at the payload) into
 * w->seg_pkts[0, n), the first in place, each packet at WG_PKT_FRONT of its
 * buffer. Returns n, or 0 when it was dropped (p and every segment
 * released), with *why no_buffer or malformed. */
unsigned int dp_split_super(struct dp_worker *w, struct wg_pkt *p,
			    const struct tun_offload_info *info, enum port_drop *why)
{
	unsigned int n = info->n_segs, i;

	*why = PORT_DROP_no_buffer;
	w->seg_pkts[0] = p;
	w->segs[0] = (struct tun_offload_seg){ .buf = p->data, .cap = p->cap - WG_PKT_TAILROOM };
	for (i = 1; i < n; i++) {
		struct wg_pkt *s = pkt_get_for(w, info->max_seg_len);

		if (!s)
			goto drop;
		w->seg_pkts[i] = s;
		w->segs[i] = (struct tun_offload_seg){ .buf = s->data, .cap = s->cap - WG_PKT_TAILROOM };
	}
	if (tun_offload_split(info, w->segs, n, WG_PKT_FRONT) < 0) {
		*why = PORT_DROP_malformed;
		goto drop;
	}
	for (i = 0; i < n; i++)
		w->seg_pkts[i]->len = w->segs[i].len;
	return n;
drop:
	while (i--)
		pkt_put(w, w->seg_pkts[i]);
	return 0;
}

/* A TUN read with a virtio-net header: finish the checksum or split the
 * super-packet into MTU-sized packets, then route them. */
static void tun_read_vnet(struct dp_worker *w, struct wg_pkt *p, uint32_t res)
	WG_REQUIRES_SHARED(w->dev->lock)
{
	struct tun_offload_info info;
	enum port_drop why;
	unsigned int n;

	if (tun_offload_parse(wg_pkt_payload(p) - TUN_VNET_HDR_LEN, res, &info)) {
		wg_stat_inc(&w->dev->stats, drop_malformed);
		pkt_put(w, p);
		return;
	}
	n = dp_split_super(w, p, &info, &why);
	if (n)
		dp_route(w, w->seg_pkts, n);
	else if (why == PORT_DROP_no_buffer)
		wg_stat_add(&w->dev->stats, drop_no_buffer, info.n_segs);
	else
		wg_stat_inc(&w->dev->stats, drop_malformed);
}

static void send_done(struct dp_worker *w, struct op *op, int res)
{
	struct send_batch *b = op->batch;

	op->sock->inflight--;
	if (res < 0) {
		if (res == -EIO && b->n > 1 && w->gso) {
			/* The route's device cannot segment UDP: stop asking. */
			w->gso = false;
			log_info("UDP GSO send failed (EIO); sending datagrams one by one");
		}
		wg_stat_add(&w->dev->stats, drop_tx_error, b->n);
		log_ratelimited(WG_LOG_DEBUG, "UDP send failed: %s", strerror(-res));
	}
	for (unsigned int i = 0; i < b->n; i++)
		pkt_put(w, b->pkts[i]);
	b->next = w->free_batches;
	w->free_batches = b;
	sock_release(w, op->sock);
}

/* Whether op is a read into one of the worker's buffers. */
static bool reads_into_buffer(const struct op *op)
{
	return op->in_use &&
	       (op->type == OP_TUN_READ || op->type == OP_UDP_RECV || op->type == OP_PORT_READ);
}

static void complete(struct dp_worker *w, struct op *op, int res)
	WG_REQUIRES_SHARED(w->dev->lock)
{
	struct wg_device *dev = w->dev;
	struct wg_pkt *p = op->pkt;

	/* A read the trim cancelled, or the cancel itself, is no traffic. */
	if (op->type != OP_CANCEL &&
	    !(reads_into_buffer(op) && (res == -ECANCELED || res == -EINTR)))
		w->traffic = true;
	switch (op->type) {
	case OP_TUN_READ:
		w->tun_reads--;
		if (res > 0 && !atomic_load(&dev->stopping)) {
			if (w->vnet) {
				tun_read_vnet(w, p, (uint32_t)res);
				break;
			}
			p->len = (uint32_t)res;
			dp_route(w, &p, 1);
			break;
		}
		if (res < 0 && res != -EAGAIN && res != -EINTR && res != -ECANCELED)
			tun_gone(w, res);
		pkt_put(w, p);
		break;
	case OP_UDP_RECV:
		op->sock->recvs--;
		op->sock->inflight--;
		if (res >= 0 && !op->sock->retired) {
			if (op->msg.msg_flags & MSG_TRUNC)
				wg_stat_inc(&dev->stats, drop_malformed);
			else
				dp_rx_udp(w, op, (uint32_t)res);
		}
		pkt_put(w, p);
		sock_release(w, op->sock);
		break;
	case OP_UDP_SEND:
		send_done(w, op, res);
		break;
	case OP_TUN_WRITE:
		if (res < 0) {
			wg_stat_inc(&dev->stats, drop_tun_write);
			log_ratelimited(WG_LOG_DEBUG, "TUN write failed: %s", strerror(-res));
		}
		pkt_put(w, p);
		break;
	case OP_PORT_READ:
	case OP_PORT_WRITE:
	case OP_VHOST_KICK:
	case OP_VHOST_DRAIN:
		op->wport->io->completed(w, op, res);
		break;
	case OP_WAKE:
		follow_sockets(w);
		if (!atomic_load(&dev->stopping))
			arm_wake(w);
		break;
	case OP_CANCEL:
		break;
	}
	op_put(w, op);
}

static void refill(struct dp_worker *w)
{
	struct wsock *cur[2] = { w->cur4, w->cur6 };

	/* With TSO, arm only as many reads as the small pool can split. */
	unsigned int tun_reads = TUN_READS;

	if (w->vnet) {
		unsigned int room = dp_pktpool_room(&w->small) / SEGS_PER_READ;

		if (room < tun_reads)
			tun_reads = room ? room : 1;
	}
	if (!w->dead_tun)
		while (w->tun_reads < tun_reads && dp_pktpool_available(&w->big) && ops_available(w))
			arm_tun_read(w);
	for (int i = 0; i < 2; i++)
		while (cur[i] && cur[i]->recvs < UDP_RECVS && dp_pktpool_available(&w->big) &&
		       ops_available(w))
			arm_udp_recv(w, cur[i]);
	for (unsigned int i = 0; i < w->n_active; i++) {
		struct wport *wp = w->active[i];
		unsigned int tso_reads = PORT_BIG_BUDGET / w->n_active;

		if (tso_reads > PORT_READS_TSO)
			tso_reads = PORT_READS_TSO;
		else if (!tso_reads)
			tso_reads = 1;
		if (wp->io->arm)
			wp->io->arm(w, wp, tso_reads);
	}
}

static unsigned int reap(struct dp_worker *w)
	WG_REQUIRES_SHARED(w->dev->lock)
{
	struct io_uring_cqe *cqes[REAP_BATCH];
	unsigned int n = io_uring_peek_batch_cqe(&w->ring, cqes, REAP_BATCH);

	for (unsigned int i = 0; i < n; i++)
		complete(w, io_uring_cqe_get_data(cqes[i]), cqes[i]->res);
	io_uring_cq_advance(&w->ring, n);
	return n;
}

/* Cancels everything and waits (boundedly) until the kernel is done with
 * our buffers. */
static void drain(struct dp_worker *w)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);
	struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 100 * 1000 * 1000 };
	struct io_uring_cqe *cqe;

	for (unsigned int i = 0; i < w->n_pending; i++)
		pkt_put(w, w->pending[i]);
	w->n_pending = 0;
	{
		struct tun_gro_out out[TUN_GRO_MAX_ITEMS];
		int n = tun_gro_finish(&w->gro, out, TUN_GRO_MAX_ITEMS);

		for (int i = 0; i < n; i++)
			pkt_put(w, out[i].cookie);
	}
	if (w->gro_spare)
		pkt_put(w, w->gro_spare);
	w->gro_spare = NULL;
	if (sqe) {
		io_uring_prep_cancel(sqe, NULL, IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_ALL);
		io_uring_sqe_set_data(sqe, NULL);
	}
	io_uring_submit(&w->ring);
	for (int i = 0; i < 50 && w->ops_in_use; i++) {
		if (io_uring_wait_cqe_timeout(&w->ring, &cqe, &ts))
			continue;
		while (io_uring_peek_cqe(&w->ring, &cqe) == 0) {
			struct op *op = io_uring_cqe_get_data(cqe);

			if (op && op->type == OP_UDP_SEND)
				send_done(w, op, 0);
			else if (op && op->pkt)
				pkt_put(w, op->pkt);
			if (op && op->wport) {
				op->wport->inflight--;
				wport_release(w, op->wport);
			}
			if (op)
				op_put(w, op);
			io_uring_cqe_seen(&w->ring, cqe);
		}
	}
}

static bool buffer_reads_armed(const struct dp_worker *w)
{
	for (unsigned int i = 0; i < w->ops_carved; i++)
		if (reads_into_buffer(&w->ops[i]))
			return true;
	return false;
}

static void trim_finish(struct dp_worker *w)
{
	dp_pktpool_trim(&w->big);
	dp_pktpool_trim(&w->small);
	w->trimming = false;
	w->trimmed = true;
}

/* Quiet for a while: memory goes back to what idle needs. The buffers
 * under armed reads cannot be trimmed where they are: a TUN or tap read
 * runs in an io-wq thread, and so can a UDP receive (io_uring reissues a
 * poll-armed request there when another took the datagram it woke for).
 * That thread may be copying a packet in at that very moment, and pages
 * dropped under a copy lose what it wrote: datagrams failed
 * authentication, and a TUN read would be sealed with zeros (its checksum
 * completed over them). So the reads are
 * cancelled first; their buffers come back through complete(), and once
 * none is armed the pools are trimmed whole (trim_finish). Reads armed
 * again touch only their buffer's first page until data lands. Traffic
 * in the meantime calls the trim off (see worker_thread). */
static void trim_begin(struct dp_worker *w)
{
	struct io_uring_sqe *sqe;
	unsigned int reads = 0, carved = w->ops_carved;

	for (unsigned int i = 0; i < carved; i++)
		reads += reads_into_buffer(&w->ops[i]);
	/* One try per quiet spell: traffic clears it (worker_thread). */
	w->trimmed = true;
	/* Every read is cancelled or none: a source whose reads were all
	 * cancelled would hear nothing until some other traffic ended the trim.
	 * Without ops for all the cancels (many ports), the pages stay. */
	if (reads > N_OPS - w->ops_in_use)
		return;
	w->trimming = true;
	for (unsigned int i = 0; i < carved; i++) {
		struct op *op = &w->ops[i];

		if (!reads_into_buffer(op))
			continue;
		if (!dp_prepare(w, OP_CANCEL, &sqe)) {
			/* No SQE: the cancelled reads come back and are armed again. */
			w->trimming = false;
			return;
		}
		io_uring_prep_cancel(sqe, op, 0);
	}
	if (!buffer_reads_armed(w))
		trim_finish(w);
}

/* IDLE_TRIM_MS, or WEFT_TEST_IDLE_TRIM_MS (1 to 60000): tests trim between
 * bursts to prove that trimming never touches a buffer the kernel fills. */
static unsigned int idle_trim_ms(void)
{
	const char *s = getenv("WEFT_TEST_IDLE_TRIM_MS");
	char *end;
	unsigned long v;

	if (!s || !*s)
		return IDLE_TRIM_MS;
	v = strtoul(s, &end, 10);
	if (*end || v < 1 || v > 60000) {
		log_error("WEFT_TEST_IDLE_TRIM_MS=%s: not 1 to 60000, using %d", s, IDLE_TRIM_MS);
		return IDLE_TRIM_MS;
	}
	return (unsigned int)v;
}

static void *worker_thread(void *arg)
{
	struct dp_worker *w = arg;
	struct wg_device *dev = w->dev;

	if (w->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(w->cpu, &set);
		if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
			log_error("worker %d: cannot pin to CPU %d", w->id, w->cpu);
	}
	wg_rwlock_rdlock(&w->dev->lock);
	follow_sockets(w);
	wg_rwlock_unlock(&w->dev->lock);
	arm_wake(w);
	while (!atomic_load(&dev->stopping)) {
		struct __kernel_timespec idle = { .tv_sec = w->idle_trim_ms / 1000,
						  .tv_nsec = (w->idle_trim_ms % 1000) * 1000000L };
		struct io_uring_cqe *cqe;
		unsigned int n, reaped = 0;
		int ret;

		if (!w->trimming)
			refill(w);
		ret = io_uring_submit_and_wait_timeout(&w->ring, &cqe, 1,
						       w->trimmed || w->trimming ? NULL : &idle, NULL);
		if (ret == -ETIME) {
			trim_begin(w);
			continue;
		}
		if (ret < 0 && ret != -EINTR && ret != -EBUSY && ret != -EAGAIN) {
			log_error("io_uring_submit_and_wait: %s", strerror(-ret));
			break;
		}
		w->traffic = false;
		wg_rwlock_rdlock(&w->dev->lock);
		if (w->ports_gen != atomic_load(&dev->ports->gen))
			dp_follow_ports(w);
		do {
			n = reap(w);
			reaped += n;
		} while (n == REAP_BATCH);
		if (w->traffic) {
			w->trimmed = false;
			w->trimming = false;
		} else if (w->trimming && !buffer_reads_armed(w)) {
			trim_finish(w);
		}
		if (reaped) {
			atomic_fetch_add_explicit(&w->turns, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&w->completions, reaped, memory_order_relaxed);
		}
		if (w->id == 0 && mesh_has_released(dev))
			dp_rx_mesh_released(w);
		dp_rx_flush(w);
		flush_tx(w);
		wg_rwlock_unlock(&w->dev->lock);
	}
	drain(w);
	for (int i = 0; i < PORT_MAX; i++) {
		if (w->wports[i]) {
			w->wports[i]->retired = true;
			wport_release(w, w->wports[i]);
			w->wports[i] = NULL;
		}
	}
	return NULL;
}

static void worker_free(struct dp_worker *w)
{
	if (w->wake_fd >= 0)
		close(w->wake_fd);
	dp_pktpool_destroy(&w->big);
	dp_pktpool_destroy(&w->small);
	free(w->ops);
	free(w->batches);
	free(w);
}

int dp_worker_start(struct wg_device *dev, int id, int tun_fd, int cpu, struct dp_worker **out)
{
	struct dp_worker *w = calloc(1, sizeof(*w));
	struct io_uring_params params = { 0 };
	int err;

	if (!w)
		return -ENOMEM;
	w->dev = dev;
	w->id = id;
	w->cpu = cpu;
	w->tun_fd = tun_fd;
	w->wake_fd = -1;
	w->tx.dev = dev;
	w->tx.emit = tx_emit;
	w->tx.release = tx_release;
	for (int i = 0; i < MAX_SOCKS; i++)
		w->socks[i].fd = -1;
	w->ops = calloc(N_OPS, sizeof(*w->ops));
	w->batches = calloc(N_BATCHES, sizeof(*w->batches));
	w->vnet = dev->tun_vnet;
	w->idle_trim_ms = idle_trim_ms();
	/* Each segment was authenticated by Poly1305 just before: corruption
	 * on the wire cannot reach the table, so the TCP checksum pass that
	 * Linux GRO makes would only cost time (kernel WireGuard likewise marks
	 * decrypted packets CHECKSUM_UNNECESSARY). */
	tun_gro_init(&w->gro, false, dev->tun_uso);
	w->wake_fd = eventfd(0, EFD_CLOEXEC);
	if (!w->ops || !w->batches || w->wake_fd < 0 ||
	    dp_pktpool_init(&w->big, POOL_BIG, BIG_POOL, WG_PKT_BUF_SIZE) ||
	    dp_pktpool_init(&w->small, POOL_SMALL, SMALL_POOL, SMALL_CAP)) {
		worker_free(w);
		return -ENOMEM;
	}
	params.flags = IORING_SETUP_COOP_TASKRUN;
	err = io_uring_queue_init_params(RING_ENTRIES, &w->ring, &params);
	if (err) {
		worker_free(w);
		return err;
	}
	err = pthread_create(&w->thread, NULL, worker_thread, w);
	if (err) {
		io_uring_queue_exit(&w->ring);
		worker_free(w);
		return -err;
	}
	*out = w;
	return 0;
}

void dp_worker_read_counters(struct dp_worker *w, struct dp_worker_counters *c)
{
	c->turns = atomic_load_explicit(&w->turns, memory_order_relaxed);
	c->completions = atomic_load_explicit(&w->completions, memory_order_relaxed);
	c->gso = __atomic_load_n(&w->gso, __ATOMIC_RELAXED);
}

void dp_worker_kick(struct dp_worker *w)
{
	uint64_t one = 1;

	if (w && write(w->wake_fd, &one, sizeof(one)) < 0)
		log_error("cannot wake worker: %s", strerror(errno));
}

void dp_worker_stop(struct dp_worker *w)
{
	if (!w)
		return;
	dp_worker_kick(w);
	pthread_join(w->thread, NULL);
	io_uring_queue_exit(&w->ring);
	for (int i = 0; i < MAX_SOCKS; i++)
		if (w->socks[i].fd >= 0 && w->socks[i].retired)
			close(w->socks[i].fd);
	worker_free(w);
}
