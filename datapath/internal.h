/* What the worker core (worker.c) and its VM-port data path (worker_port.c)
 * share: the worker's state, its io_uring ops, its buffer pools, and the
 * few functions each file calls in the other. Private to those two files. */
#ifndef WEFT_DATAPATH_INTERNAL_H
#define WEFT_DATAPATH_INTERNAL_H

#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "datapath/pktpool.h"
#include "port/ports.h"
#include "port/vhost.h"
#include "port/frame.h"
#include "tun/offload.h"
#include "wg/send.h"

enum {
	BIG_POOL = 160,
	SMALL_POOL = 1536,     /* single packets: TSO segments */
	SMALL_CAP = 2048,      /* inner packets up to about 2000 bytes */
	IDLE_TRIM_MS = 1000,   /* idle this long: give buffer pages back */
	TUN_READS = 32,
	SEGS_PER_READ = 48,    /* with TSO a read may become this many packets */
	UDP_RECVS = 16,        /* per socket */
	PORT_READS = 8,        /* per port queue */
	PORT_READS_TSO = 16,   /* the same, of 64 KiB buffers, ... */
	PORT_BIG_BUDGET = 64,  /* ... shared by all ports: the rest is the TUN's and UDP's */
	N_OPS = 640,
	N_BATCHES = 256,
	MAX_SEGS = 64,         /* datagrams per GSO send (kernel allows 128) */
	GSO_MAX_BYTES = 65000, /* UDP payload limit of one GSO send */
	PENDING_MAX = 256,
	RING_ENTRIES = 1024,
	REAP_BATCH = 128,
	MAX_SOCKS = 8,         /* two current, the rest retiring */
};

enum op_type {
	OP_TUN_READ, OP_TUN_WRITE, OP_UDP_RECV, OP_UDP_SEND, OP_PORT_READ, OP_PORT_WRITE,
	OP_VHOST_KICK,  /* a guest TX ring's kick eventfd fired */
	OP_VHOST_DRAIN, /* (a no-op) go on draining a guest TX ring */
	OP_WAKE, OP_CANCEL,
};

/* The bytes in front of an Ethernet frame on a port queue, and in front of
 * the IP packet inside it. */
enum {
	PORT_VNET_LEN = TUN_VNET_HDR_LEN,
	PORT_L2_LEN = PORT_VNET_LEN + FRAME_ETH_HLEN,
};
_Static_assert((int)PORT_L2_LEN <= (int)WG_PKT_FRONT, "buffers leave room for a frame's headers");

/* This worker's queue of a VM port. */
struct wport {
	struct port *port; /* a reference, dropped when retired and idle */
	const struct dp_port_io *io;
	int fd;               /* tap: this worker's queue */
	unsigned int reads;   /* armed reads */
	unsigned int inflight;
	bool retired;
	bool dead;            /* reads fail: the netdev is gone */
	/* vhost-user: this worker's guest TX rings (queue pair q = ring 2q+1) */
	struct op *kick[VHU_MAX_QUEUE_PAIRS];  /* the armed kick read, or NULL */
	uint64_t kick_val[VHU_MAX_QUEUE_PAIRS];
};

struct wsock {
	int fd;             /* -1: slot free */
	unsigned int recvs; /* armed receives */
	unsigned int inflight;
	bool retired;
};

/* One GSO send: a run of datagrams to one endpoint. */
struct send_batch {
	struct wg_pkt *pkts[MAX_SEGS];
	struct iovec iov[MAX_SEGS];
	unsigned int n;
	union wg_sockaddr dst;
	/* cmsghdr itself ends in a flexible array: align the bytes instead. */
	_Alignas(struct cmsghdr) char cmsg[CMSG_SPACE(sizeof(uint16_t))];
	struct send_batch *next;
};

struct op {
	enum op_type type;
	bool in_use;
	struct wsock *sock;
	struct wport *wport;
	unsigned int queue;   /* OP_VHOST_*: the queue pair */
	int owned_fd;         /* closed when the op is put back, or -1 */
	struct wg_pkt *pkt;
	struct send_batch *batch;
	struct msghdr msg;
	struct iovec iov;
	_Alignas(struct cmsghdr) char cmsg[CMSG_SPACE(sizeof(int))];
	struct op *next;
};

/* Owned by the worker thread alone, but for wake_fd (anyone may kick). */
struct dp_worker {
	struct wg_tx tx;      /* the tx callbacks find the worker through it */
	struct wg_device *dev;
	int id;
	int cpu;              /* -1: not pinned */
	int tun_fd;
	struct io_uring ring;
	pthread_t thread;
	int wake_fd;
	uint64_t wake_val;
	struct op *ops;
	struct op *free_ops;
	unsigned int ops_carved;    /* ops[] and batches[] are used in order */
	unsigned int ops_in_use;
	struct send_batch *batches;
	struct send_batch *free_batches;
	unsigned int batches_carved;
	struct dp_pktpool big;      /* 64 KiB reads and coalesced writes */
	struct dp_pktpool small;    /* single packets */
	unsigned int idle_trim_ms;  /* IDLE_TRIM_MS but in tests */
	bool trimmed;               /* pools trimmed since the last traffic */
	bool trimming;              /* reads cancelled for a trim, not yet all in */
	bool traffic;               /* this turn completed more than cancels */
	struct wg_pkt *gro_spare;   /* a big buffer for the next TCP packet */
	struct tun_gro gro;         /* this batch's coalescing table */
	struct tun_offload_seg segs[TUN_OFFLOAD_MAX_SEGS];
	struct wg_pkt *seg_pkts[TUN_OFFLOAD_MAX_SEGS];
	bool vnet;                  /* TUN frames carry a virtio-net header */
	struct wg_pkt *pending[PENDING_MAX];
	unsigned int n_pending;
	unsigned int tun_reads;
	struct wsock socks[MAX_SOCKS];
	struct wsock *cur4, *cur6;
	struct wport *wports[PORT_MAX]; /* by the device's port slot */
	struct wport *active[PORT_MAX]; /* the same, packed */
	unsigned int n_active;
	uint64_t ports_gen;
	bool gso;
	bool dead_tun;
	_Atomic uint64_t turns, completions; /* dp_worker_read_counters */
};

enum { POOL_BIG = 1, POOL_SMALL = 2 };

static inline struct wg_pkt *pkt_get(struct dp_worker *w)
{
	return dp_pktpool_get(&w->big);
}

/* A buffer for one packet of inner length len: small when it fits. */
static inline struct wg_pkt *pkt_get_for(struct dp_worker *w, uint32_t len)
{
	if (WG_PKT_FRONT + len + WG_PKT_TAILROOM <= SMALL_CAP - sizeof(struct wg_pkt))
		return dp_pktpool_get(&w->small);
	return dp_pktpool_get(&w->big);
}

static inline void pkt_put(struct dp_worker *w, struct wg_pkt *p)
{
	if (--p->refs)
		return;
	if (!p->pooled)
		free(p);
	else
		dp_pktpool_put(p->pool_id == POOL_SMALL ? &w->small : &w->big, p);
}

/* worker.c: the core */

struct op *dp_prepare(struct dp_worker *w, enum op_type type, struct io_uring_sqe **sqe);
/* Both consume p. */
void dp_tun_write(struct dp_worker *w, struct wg_pkt *p, uint8_t *data, uint32_t len);
void dp_host_output(struct dp_worker *w, struct wg_pkt *p, uint8_t *ip, uint32_t len)
	WG_REQUIRES_SHARED(w->dev->lock);
unsigned int dp_split_super(struct dp_worker *w, struct wg_pkt *p,
			    const struct tun_offload_info *info, enum port_drop *why);

/* rx.c: the receive direction */

/* A completed UDP receive of len bytes into op's packet (one datagram, or
 * a GRO run of them). */
void dp_rx_udp(struct dp_worker *w, struct op *op, uint32_t len)
	WG_REQUIRES_SHARED(w->dev->lock);
/* Worker 0: the packets the mesh thread released. */
void dp_rx_mesh_released(struct dp_worker *w)
	WG_REQUIRES_SHARED(w->dev->lock);
/* End of a batch: writes the coalesced TCP packets out. */
void dp_rx_flush(struct dp_worker *w)
	WG_REQUIRES_SHARED(w->dev->lock);

/* nexthop.c: the next hop */

/* Where a packet goes, from its destination. */
enum dp_egress {
	DP_TO_HOST,   /* matches nothing: the host's */
	DP_TO_PEER,   /* a peer's allowed IP: sealed for it */
	DP_TO_PORT,   /* a VM of this host */
	DP_TO_REMOTE, /* a VM of another host, at a learned location (peer NULL:
		       * known to be nowhere) */
	DP_TO_MISS,   /* a mesh address with no location yet */
};

struct dp_hop {
	enum dp_egress to;
	struct rt_hop *hop;     /* the table's entry, NULL for the host */
	struct wg_peer *peer;   /* DP_TO_PEER, DP_TO_REMOTE */
	struct port *port;   /* DP_TO_PORT */
	int family;             /* the destination, as given */
	const uint8_t *dst;
};

/* The one decision of a packet's egress: one table lookup on dst, which
 * the caller parsed where the packet entered. Device lock held shared, as
 * long as *h is used. */
void dp_next_hop(struct dp_worker *w, int family, const uint8_t *dst, struct dp_hop *h)
	WG_REQUIRES_SHARED(w->dev->lock);
/* Packets that share one destination (one packet, or the segments of one
 * super-packet), from the VM of port from, or (from NULL) the host or the
 * mesh's queues, to h: to their peer (a static allowed IP or a learned
 * location), a VM port, or the mesh's discovery (as from's lookup: mesh.h
 * MESH_TENANT_*). What matches nothing is the host's: from a VM it goes to
 * the host, from the host it is dropped. Consumes them. */
void dp_send(struct dp_worker *w, const struct dp_hop *h, struct wg_pkt **pkts, unsigned int n,
	     const struct port *from)
	WG_REQUIRES_SHARED(w->dev->lock);
/* dp_next_hop on the destination read from pkts[0], then dp_send: for
 * packets from the TUN and the mesh's queues. Consumes them. */
void dp_route(struct dp_worker *w, struct wg_pkt **pkts, unsigned int n)
	WG_REQUIRES_SHARED(w->dev->lock);

/* worker_port.c, port_tap.c, port_vhost.c: the VM ports */

/* The data-path half of a port type (the control half is struct
 * port_class, port/ports.h): how a worker serves its queues. port_tap.c
 * and port_vhost.c; an attached port has none, as its VM is reached
 * through the TUN. A hook left NULL does nothing. */
struct dp_port_io {
	/* Whether worker w serves a queue of the port. */
	bool (*serves)(const struct dp_worker *w, const struct port *port);
	/* wp is new to the worker, or the port's queues changed. */
	void (*follow)(struct dp_worker *w, struct wport *wp);
	/* wp is retired: the reads armed on it are cancelled. */
	void (*retire)(struct dp_worker *w, struct wport *wp);
	/* Tops up the reads armed on wp (tso_reads: of super-packet size). */
	void (*arm)(struct dp_worker *w, struct wport *wp, unsigned int tso_reads);
	/* Whether the VM takes a frame with virtio-net header h whole (else
	 * it gets the packet split); NULL: always. */
	bool (*takes)(const struct wport *wp, const struct tun_vnet_hdr *h);
	/* Sends the Ethernet frame[0, len) in p, with header h, to the VM;
	 * there are PORT_VNET_LEN bytes of room in front of frame. p stays
	 * the caller's. */
	void (*write)(struct dp_worker *w, struct wport *wp, struct wg_pkt *p,
		      const struct tun_vnet_hdr *h, uint8_t *frame, uint32_t len);
	/* An operation on wp (op->wport) completed with res. */
	void (*completed)(struct dp_worker *w, struct op *op, int res);
};

extern const struct dp_port_io dp_tap_io, dp_vhost_io;

void dp_follow_ports(struct dp_worker *w)
	WG_REQUIRES_SHARED(w->dev->lock);
void wport_release(struct dp_worker *w, struct wport *wp);
void wport_received(struct dp_worker *w, struct wport *wp, struct wg_pkt *p, uint32_t res)
	WG_REQUIRES_SHARED(w->dev->lock);
/* The IP packet ip[0, len) of p to the VM of port, with vnet (a super-packet)
 * or NULL. Consumes p. */
void dp_port_output(struct dp_worker *w, struct port *port, struct wg_pkt *p,
		    uint8_t *ip, uint32_t len, const struct tun_vnet_hdr *vnet)
	WG_REQUIRES_SHARED(w->dev->lock);

#endif
