/* The data-path worker. Reads are kept armed on the TUN and on each UDP
 * socket; each loop turn reaps a batch of completions under the device's
 * shared lock, turns them into sends and TUN writes, and submits them all
 * with the next wait: one io_uring_enter per batch.
 *
 * Buffers come from a fixed pool (touched pages only count as memory);
 * staged packets are copied out of it so a slow handshake cannot starve
 * the reads. */
#include "wg/worker.h"

#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "wg/device.h"
#include "wg/log.h"
#include "wg/receive.h"
#include "wg/send.h"

enum {
	POOL_SIZE = 256,
	TUN_READS = 32,
	UDP_RECVS = 32,      /* per socket */
	N_OPS = POOL_SIZE + 64,
	RING_ENTRIES = 512,
	BATCH = 128,
	MAX_SOCKS = 8,       /* two current, the rest retiring */
};

enum op_type { OP_TUN_READ, OP_TUN_WRITE, OP_UDP_RECV, OP_UDP_SEND, OP_WAKE, OP_CANCEL };

struct wsock {
	int fd;             /* -1: slot free */
	unsigned int recvs; /* armed receives */
	unsigned int inflight;
	bool retired;
};

struct op {
	enum op_type type;
	struct wsock *sock;
	struct wg_pkt *pkt;
	struct msghdr msg;
	struct iovec iov;
	struct op *next;
};

/* Owned by the worker thread alone, but for wake_fd (anyone may kick). */
struct wg_worker {
	struct wg_device *dev;
	struct wg_tx tx;      /* first: the tx callbacks find the worker */
	struct io_uring ring;
	pthread_t thread;
	int wake_fd;
	uint64_t wake_val;
	struct op ops[N_OPS];
	struct op *free_ops;
	unsigned int ops_in_use;
	uint8_t *pool_mem;
	struct wg_pkt *free_pkts;
	unsigned int tun_reads;
	struct wsock socks[MAX_SOCKS];
	struct wsock *cur4, *cur6;
	bool dead_tun;
};

static struct wg_worker *tx_worker(struct wg_tx *tx)
{
	return (struct wg_worker *)((char *)tx - offsetof(struct wg_worker, tx));
}

static struct wg_pkt *pkt_get(struct wg_worker *w)
{
	struct wg_pkt *p = w->free_pkts;

	if (p) {
		w->free_pkts = p->next;
		p->next = NULL;
		p->off = WG_PKT_HEADROOM;
		p->len = 0;
	}
	return p;
}

static void pkt_put(struct wg_worker *w, struct wg_pkt *p)
{
	if (!p->pooled) {
		free(p);
		return;
	}
	p->next = w->free_pkts;
	w->free_pkts = p;
}

static struct op *op_get(struct wg_worker *w, enum op_type type)
{
	struct op *op = w->free_ops;

	if (!op)
		return NULL;
	w->free_ops = op->next;
	w->ops_in_use++;
	memset(op, 0, sizeof(*op));
	op->type = type;
	return op;
}

static void op_put(struct wg_worker *w, struct op *op)
{
	op->next = w->free_ops;
	w->free_ops = op;
	w->ops_in_use--;
}

static struct io_uring_sqe *sqe_get(struct wg_worker *w)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);

	if (!sqe) {
		io_uring_submit(&w->ring);
		sqe = io_uring_get_sqe(&w->ring);
	}
	return sqe;
}

static void arm_tun_read(struct wg_worker *w)
{
	struct wg_pkt *p = pkt_get(w);
	struct op *op = p ? op_get(w, OP_TUN_READ) : NULL;
	struct io_uring_sqe *sqe = op ? sqe_get(w) : NULL;

	if (!sqe) {
		if (op)
			op_put(w, op);
		if (p)
			pkt_put(w, p);
		return;
	}
	op->pkt = p;
	io_uring_prep_read(sqe, w->dev->tun_fd, wg_pkt_payload(p), WG_PKT_MAX_INNER, 0);
	io_uring_sqe_set_data(sqe, op);
	w->tun_reads++;
}

static void arm_udp_recv(struct wg_worker *w, struct wsock *s)
{
	struct wg_pkt *p = pkt_get(w);
	struct op *op = p ? op_get(w, OP_UDP_RECV) : NULL;
	struct io_uring_sqe *sqe = op ? sqe_get(w) : NULL;

	if (!sqe) {
		if (op)
			op_put(w, op);
		if (p)
			pkt_put(w, p);
		return;
	}
	p->off = 0;
	op->pkt = p;
	op->sock = s;
	op->iov.iov_base = p->data;
	op->iov.iov_len = p->cap;
	op->msg.msg_name = &p->addr;
	op->msg.msg_namelen = sizeof(p->addr);
	op->msg.msg_iov = &op->iov;
	op->msg.msg_iovlen = 1;
	io_uring_prep_recvmsg(sqe, s->fd, &op->msg, 0);
	io_uring_sqe_set_data(sqe, op);
	s->recvs++;
	s->inflight++;
}

static void arm_wake(struct wg_worker *w)
{
	struct op *op = op_get(w, OP_WAKE);
	struct io_uring_sqe *sqe = op ? sqe_get(w) : NULL;

	if (!sqe) {
		if (op)
			op_put(w, op);
		return;
	}
	io_uring_prep_read(sqe, w->wake_fd, &w->wake_val, sizeof(w->wake_val), 0);
	io_uring_sqe_set_data(sqe, op);
}

static void tx_emit(struct wg_tx *tx, struct wg_pkt *p)
{
	struct wg_worker *w = tx_worker(tx);
	struct wsock *s = p->addr.sa.sa_family == AF_INET6 ? w->cur6 : w->cur4;
	struct op *op = s ? op_get(w, OP_UDP_SEND) : NULL;
	struct io_uring_sqe *sqe = op ? sqe_get(w) : NULL;

	if (!sqe) {
		if (op)
			op_put(w, op);
		wg_stat_inc(&w->dev->stats, drop_tx_error);
		pkt_put(w, p);
		return;
	}
	op->pkt = p;
	op->sock = s;
	op->iov.iov_base = wg_pkt_payload(p);
	op->iov.iov_len = p->len;
	op->msg.msg_name = &p->addr;
	op->msg.msg_namelen = wg_sockaddr_len(&p->addr);
	op->msg.msg_iov = &op->iov;
	op->msg.msg_iovlen = 1;
	io_uring_prep_sendmsg(sqe, s->fd, &op->msg, 0);
	io_uring_sqe_set_data(sqe, op);
	s->inflight++;
}

static void tx_release(struct wg_tx *tx, struct wg_pkt *p)
{
	pkt_put(tx_worker(tx), p);
}

static void tun_write(struct wg_worker *w, struct wg_pkt *p)
{
	struct op *op = op_get(w, OP_TUN_WRITE);
	struct io_uring_sqe *sqe = op ? sqe_get(w) : NULL;

	if (!sqe) {
		if (op)
			op_put(w, op);
		pkt_put(w, p);
		return;
	}
	op->pkt = p;
	io_uring_prep_write(sqe, w->dev->tun_fd, wg_pkt_payload(p), p->len, 0);
	io_uring_sqe_set_data(sqe, op);
}

static struct wsock *sock_add(struct wg_worker *w, int fd)
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
static void sock_release(struct wg_worker *w, struct wsock *s)
{
	if (s->retired && !s->inflight) {
		close(s->fd);
		s->fd = -1;
	}
}

static void sock_retire(struct wg_worker *w, struct wsock *s)
{
	struct io_uring_sqe *sqe;
	struct op *op;

	if (!s)
		return;
	s->retired = true;
	op = op_get(w, OP_CANCEL);
	sqe = op ? sqe_get(w) : NULL;
	if (sqe) {
		io_uring_prep_cancel_fd(sqe, s->fd, IORING_ASYNC_CANCEL_ALL);
		io_uring_sqe_set_data(sqe, op);
	} else if (op) {
		op_put(w, op);
	}
	sock_release(w, s);
}

/* The control thread swapped the device's sockets (a new listen port). */
static void follow_sockets(struct wg_worker *w)
{
	int fd4 = atomic_load(&w->dev->sockets.fd4), fd6 = atomic_load(&w->dev->sockets.fd6);

	if ((w->cur4 ? w->cur4->fd : -1) != fd4) {
		sock_retire(w, w->cur4);
		w->cur4 = sock_add(w, fd4);
	}
	if ((w->cur6 ? w->cur6->fd : -1) != fd6) {
		sock_retire(w, w->cur6);
		w->cur6 = sock_add(w, fd6);
	}
}

static void tun_gone(struct wg_worker *w, int err)
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

static void complete(struct wg_worker *w, struct op *op, int res, unsigned int flags)
{
	struct wg_device *dev = w->dev;
	struct wg_pkt *p = op->pkt;

	switch (op->type) {
	case OP_TUN_READ:
		w->tun_reads--;
		if (res > 0 && !atomic_load(&dev->stopping)) {
			p->len = (uint32_t)res;
			wg_send_from_tun(dev, p, &w->tx);
			break;
		}
		if (res < 0 && res != -EAGAIN && res != -EINTR && res != -ECANCELED)
			tun_gone(w, res);
		pkt_put(w, p);
		break;
	case OP_UDP_RECV:
		op->sock->recvs--;
		op->sock->inflight--;
		if (res >= 0 && !op->sock->retired && !(op->msg.msg_flags & MSG_TRUNC)) {
			p->len = (uint32_t)res;
			if (wg_receive(dev, p, &w->tx)) {
				tun_write(w, p);
				p = NULL;
			}
		} else if (res >= 0) {
			wg_stat_inc(&dev->stats, drop_malformed);
		}
		if (p)
			pkt_put(w, p);
		sock_release(w, op->sock);
		break;
	case OP_UDP_SEND:
		op->sock->inflight--;
		if (res < 0) {
			wg_stat_inc(&dev->stats, drop_tx_error);
			log_ratelimited(WG_LOG_DEBUG, "UDP send failed: %s", strerror(-res));
		}
		pkt_put(w, p);
		sock_release(w, op->sock);
		break;
	case OP_TUN_WRITE:
		if (res < 0)
			log_ratelimited(WG_LOG_DEBUG, "TUN write failed: %s", strerror(-res));
		pkt_put(w, p);
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

static void refill(struct wg_worker *w)
{
	struct wsock *cur[2] = { w->cur4, w->cur6 };

	if (!w->dead_tun)
		while (w->tun_reads < TUN_READS && w->free_pkts && w->free_ops)
			arm_tun_read(w);
	for (int i = 0; i < 2; i++)
		while (cur[i] && cur[i]->recvs < UDP_RECVS && w->free_pkts && w->free_ops)
			arm_udp_recv(w, cur[i]);
}

static unsigned int reap(struct wg_worker *w)
{
	struct io_uring_cqe *cqes[BATCH];
	unsigned int n = io_uring_peek_batch_cqe(&w->ring, cqes, BATCH);

	for (unsigned int i = 0; i < n; i++)
		complete(w, io_uring_cqe_get_data(cqes[i]), cqes[i]->res, cqes[i]->flags);
	io_uring_cq_advance(&w->ring, n);
	return n;
}

/* Cancels everything and waits (boundedly) until the kernel is done with
 * our buffers. */
static void drain(struct wg_worker *w)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);
	struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 100 * 1000 * 1000 };
	struct io_uring_cqe *cqe;

	if (sqe) {
		io_uring_prep_cancel(sqe, NULL, IORING_ASYNC_CANCEL_ANY);
		io_uring_sqe_set_data(sqe, NULL);
	}
	io_uring_submit(&w->ring);
	for (int i = 0; i < 50 && w->ops_in_use; i++) {
		if (io_uring_wait_cqe_timeout(&w->ring, &cqe, &ts))
			continue;
		while (io_uring_peek_cqe(&w->ring, &cqe) == 0) {
			struct op *op = io_uring_cqe_get_data(cqe);
			if (op) {
				if (op->pkt)
					pkt_put(w, op->pkt);
				op_put(w, op);
			}
			io_uring_cqe_seen(&w->ring, cqe);
		}
	}
}

static void *worker_thread(void *arg)
{
	struct wg_worker *w = arg;
	struct wg_device *dev = w->dev;

	pthread_rwlock_rdlock(&dev->lock);
	follow_sockets(w);
	pthread_rwlock_unlock(&dev->lock);
	arm_wake(w);
	while (!atomic_load(&dev->stopping)) {
		refill(w);
		int ret = io_uring_submit_and_wait(&w->ring, 1);
		if (ret < 0 && ret != -EINTR && ret != -EBUSY && ret != -EAGAIN) {
			log_error("io_uring_submit_and_wait: %s", strerror(-ret));
			break;
		}
		pthread_rwlock_rdlock(&dev->lock);
		while (reap(w) == BATCH)
			;
		pthread_rwlock_unlock(&dev->lock);
	}
	drain(w);
	return NULL;
}

int wg_worker_start(struct wg_device *dev, struct wg_worker **out)
{
	struct wg_worker *w = calloc(1, sizeof(*w));
	size_t slot = (sizeof(struct wg_pkt) + WG_PKT_BUF_SIZE + 63) & ~(size_t)63;
	struct io_uring_params params = { 0 };
	int err;

	if (!w)
		return -ENOMEM;
	w->dev = dev;
	w->tx.dev = dev;
	w->tx.emit = tx_emit;
	w->tx.release = tx_release;
	for (int i = 0; i < MAX_SOCKS; i++)
		w->socks[i].fd = -1;
	for (int i = N_OPS - 1; i >= 0; i--) {
		w->ops[i].next = w->free_ops;
		w->free_ops = &w->ops[i];
	}
	w->pool_mem = mmap(NULL, slot * POOL_SIZE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w->pool_mem == MAP_FAILED) {
		free(w);
		return -ENOMEM;
	}
	for (int i = POOL_SIZE - 1; i >= 0; i--) {
		struct wg_pkt *p = (struct wg_pkt *)(w->pool_mem + slot * (size_t)i);
		p->cap = WG_PKT_BUF_SIZE;
		p->pooled = true;
		p->next = w->free_pkts;
		w->free_pkts = p;
	}
	w->wake_fd = eventfd(0, EFD_CLOEXEC);
	params.flags = IORING_SETUP_COOP_TASKRUN;
	err = w->wake_fd < 0 ? -errno : io_uring_queue_init_params(RING_ENTRIES, &w->ring, &params);
	if (err) {
		if (w->wake_fd >= 0)
			close(w->wake_fd);
		munmap(w->pool_mem, slot * POOL_SIZE);
		free(w);
		return err;
	}
	err = pthread_create(&w->thread, NULL, worker_thread, w);
	if (err) {
		io_uring_queue_exit(&w->ring);
		close(w->wake_fd);
		munmap(w->pool_mem, slot * POOL_SIZE);
		free(w);
		return -err;
	}
	*out = w;
	return 0;
}

void wg_worker_kick(struct wg_worker *w)
{
	uint64_t one = 1;

	if (w && write(w->wake_fd, &one, sizeof(one)) < 0)
		log_error("cannot wake worker: %s", strerror(errno));
}

void wg_worker_stop(struct wg_worker *w)
{
	size_t slot = (sizeof(struct wg_pkt) + WG_PKT_BUF_SIZE + 63) & ~(size_t)63;

	if (!w)
		return;
	wg_worker_kick(w);
	pthread_join(w->thread, NULL);
	io_uring_queue_exit(&w->ring);
	for (int i = 0; i < MAX_SOCKS; i++)
		if (w->socks[i].fd >= 0 && w->socks[i].retired)
			close(w->socks[i].fd);
	close(w->wake_fd);
	munmap(w->pool_mem, slot * POOL_SIZE);
	free(w);
}
