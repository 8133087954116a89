/* The backend side of the vhost-user protocol
 * (https://qemu-project.gitlab.io/qemu/interop/vhost-user.html) for a
 * virtio-net device: messages read from the frontend's (the VMM's) unix
 * socket with their SCM_RIGHTS fds, a table-driven dispatch that keeps the
 * device state (features, guest memory table, vrings and their eventfds),
 * and the replies. The rings themselves are tun/virtq.h's.
 *
 * Threading contract:
 *  - One control thread owns a struct vhu_dev and calls vhu_dispatch (or
 *    vhu_handle_msg) with the data path quiesced: the integrator holds a
 *    lock that excludes every worker of this device. Dispatch may unmap
 *    guest memory, move, start and stop rings, and close eventfds.
 *  - Between messages, ring i's struct virtq (vhu_ring_vq) belongs to one
 *    worker at a time, which may call the virtq_* data-path functions on it
 *    when vhu_ring_ready says so. The worker writes nothing else here.
 *  - After each message res.changed has bit i set for every ring whose
 *    readiness, eventfds or ring addresses may have changed: re-read
 *    vhu_ring_ready and vhu_ring_kick_fd for those (re-arm kick polling).
 *  - A queue the data path finds broken (virtq_pop -> -EIO) and
 *    res.disconnect both mean: close the socket and vhu_dev_reset. */
#ifndef WEFT_TUN_VHOST_USER_H
#define WEFT_TUN_VHOST_USER_H

#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <linux/virtio_ring.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tun/guestmem.h"
#include "tun/virtq.h"

/* Front-end requests (the spec's "front-end message types"). Only those
 * weftd serves have handlers; the rest follow features it never offers. */
enum vhu_request {
	VHU_GET_FEATURES = 1,
	VHU_SET_FEATURES = 2,
	VHU_SET_OWNER = 3,
	VHU_RESET_OWNER = 4,
	VHU_SET_MEM_TABLE = 5,
	VHU_SET_LOG_BASE = 6,
	VHU_SET_LOG_FD = 7,
	VHU_SET_VRING_NUM = 8,
	VHU_SET_VRING_ADDR = 9,
	VHU_SET_VRING_BASE = 10,
	VHU_GET_VRING_BASE = 11,
	VHU_SET_VRING_KICK = 12,
	VHU_SET_VRING_CALL = 13,
	VHU_SET_VRING_ERR = 14,
	VHU_GET_PROTOCOL_FEATURES = 15,
	VHU_SET_PROTOCOL_FEATURES = 16,
	VHU_GET_QUEUE_NUM = 17,
	VHU_SET_VRING_ENABLE = 18,
	VHU_REQUEST_MAX = 19,      /* one past the last request in the table */
};

/* Header flags. */
enum {
	VHU_FLAG_VERSION_MASK = 0x3,
	VHU_FLAG_VERSION = 0x1,
	VHU_FLAG_REPLY = 0x4,
	VHU_FLAG_NEED_REPLY = 0x8,
};

/* Protocol features (bit numbers) and the virtio feature bit that says the
 * frontend may use them. */
enum {
	VHU_PROTOCOL_F_MQ = 0,
	VHU_PROTOCOL_F_REPLY_ACK = 3,
	VHU_F_PROTOCOL_FEATURES = 30,
};
#define VHU_PROTOCOL_FEATURES \
	((1ull << VHU_PROTOCOL_F_MQ) | (1ull << VHU_PROTOCOL_F_REPLY_ACK))

/* The virtio features weftd can serve; vhu_dev_init offers a subset. No
 * indirect descriptors, no packed rings, no dirty logging (migration). */
#define VHU_FEATURES_DEFAULT                                                   \
	((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_NET_F_MRG_RXBUF) |     \
	 (1ull << VIRTIO_RING_F_EVENT_IDX) | (1ull << VIRTIO_NET_F_CSUM) |     \
	 (1ull << VIRTIO_NET_F_GUEST_CSUM) | (1ull << VIRTIO_NET_F_HOST_TSO4) | \
	 (1ull << VIRTIO_NET_F_HOST_TSO6) | (1ull << VIRTIO_NET_F_GUEST_TSO4) | \
	 (1ull << VIRTIO_NET_F_GUEST_TSO6) | (1ull << VIRTIO_NET_F_MQ) |       \
	 (1ull << VHU_F_PROTOCOL_FEATURES))

enum {
	VHU_MAX_FDS = 8,                  /* SCM_RIGHTS fds of one message */
	VHU_MAX_QUEUE_PAIRS = 8,
	VHU_MAX_RINGS = 2 * VHU_MAX_QUEUE_PAIRS,
	VHU_VRING_IDX_MASK = 0xff,        /* SET_VRING_KICK/CALL/ERR u64 */
	VHU_VRING_NOFD = 0x100,           /* ... no fd comes with it */
	VHU_VRING_F_LOG = 0x1,            /* SET_VRING_ADDR flags */
};

/* Wire format: little-endian, no padding (hosts weft runs on are
 * little-endian, so fields are used as they are). */
struct vhu_msg_hdr {
	uint32_t request;
	uint32_t flags;
	uint32_t size;         /* payload bytes that follow */
};

struct vhu_vring_state {
	uint32_t index;
	uint32_t num;
};

struct vhu_vring_addr {
	uint32_t index;
	uint32_t flags;
	uint64_t desc;         /* frontend virtual addresses */
	uint64_t used;
	uint64_t avail;
	uint64_t log;          /* guest-physical; only with logging */
};

struct vhu_mem_region {
	uint64_t gpa;
	uint64_t size;
	uint64_t uva;
	uint64_t mmap_offset;  /* where the region starts in its fd */
};

struct vhu_memory {
	uint32_t nregions;
	uint32_t padding;
	struct vhu_mem_region regions[VIRTQ_MEM_MAX_REGIONS];
};

union vhu_payload {
	uint64_t u64;
	struct vhu_vring_state state;
	struct vhu_vring_addr addr;
	struct vhu_memory mem;
};

enum {
	VHU_HDR_SIZE = 12,
	VHU_STATE_SIZE = 8,
	VHU_ADDR_SIZE = 40,
	VHU_REGION_SIZE = 32,
	VHU_MEMORY_HDR_SIZE = 8,
	/* The largest payload accepted: a full memory table. */
	VHU_PAYLOAD_MAX = VHU_MEMORY_HDR_SIZE + VIRTQ_MEM_MAX_REGIONS * VHU_REGION_SIZE,
};

_Static_assert(sizeof(struct vhu_msg_hdr) == VHU_HDR_SIZE, "header is 12 bytes");
_Static_assert(sizeof(struct vhu_vring_state) == VHU_STATE_SIZE, "vring state is 8 bytes");
_Static_assert(sizeof(struct vhu_vring_addr) == VHU_ADDR_SIZE, "vring address is 40 bytes");
_Static_assert(sizeof(struct vhu_mem_region) == VHU_REGION_SIZE, "region is 32 bytes");
_Static_assert(sizeof(struct vhu_memory) == VHU_PAYLOAD_MAX, "memory table is 264 bytes");
_Static_assert(sizeof(union vhu_payload) == VHU_PAYLOAD_MAX, "no payload is larger");

/* One message, as read or to be sent. The fds belong to the message until
 * vhu_dispatch takes them (it closes every one it does not keep). */
struct vhu_msg {
	struct vhu_msg_hdr hdr;
	union vhu_payload payload;
	int fds[VHU_MAX_FDS];
	uint32_t n_fds;
};

/* One vring of the device: what the frontend said about it, and the
 * virtqueue the data path uses. Control thread only, except vq (see top). */
struct vhu_ring {
	struct virtq vq;
	uint64_t desc_uva, avail_uva, used_uva;
	bool addr_set;            /* SET_VRING_ADDR accepted */
	uint16_t num;             /* SET_VRING_NUM; 0: not yet */
	uint16_t base;            /* last_avail while the ring is not live */
	int kick_fd, err_fd;      /* -1: none (the call fd is vq.call_fd) */
	bool started;             /* a kick fd came and no GET_VRING_BASE since */
	bool enabled;             /* SET_VRING_ENABLE 1 */
	bool live;                /* started over mapped rings: vq is running */
};

/* Control-thread counters. */
struct vhu_stats {
	uint64_t msgs;            /* messages dispatched */
	uint64_t refused;         /* refused: malformed, or a bad value */
	uint64_t unknown;         /* requests without a handler */
	uint64_t fds_closed;      /* message fds closed: used up (mmap'd) or refused */
};

struct vhu_dev {
	uint64_t offered_features;     /* GET_FEATURES */
	uint64_t features;             /* SET_FEATURES (acked) */
	uint64_t protocol_features;    /* SET_PROTOCOL_FEATURES (acked) */
	uint32_t queue_pairs;          /* 1..VHU_MAX_QUEUE_PAIRS */
	bool owner;
	struct virtq_mem mem;
	struct {
		void *base;
		size_t len;
		int guard;             /* its guestmem slot, or -1 */
	} maps[VIRTQ_MEM_MAX_REGIONS];
	/* Told by the SIGBUS guard when a mapped file shrank under us: the
	 * user drops the frontend (its regions are zero pages by then). */
	struct guestmem_owner guard;
	struct vhu_ring rings[VHU_MAX_RINGS];
	struct vhu_stats stats;
};

/* What one message did. */
struct vhu_result {
	uint32_t changed;      /* bit i: re-read ring i's readiness and kick fd */
	bool reply;            /* the reply message is to be sent */
	bool disconnect;       /* close the connection, then vhu_dev_reset */
	const char *why;       /* static text when something was refused or ignored */
};

/* A device offering features & VHU_FEATURES_DEFAULT with queue_pairs
 * queue pairs (clamped to 1..VHU_MAX_QUEUE_PAIRS). */
void vhu_dev_init(struct vhu_dev *dev, uint64_t features, uint32_t queue_pairs);
/* Back to the state after vhu_dev_init: every mapping unmapped, every fd
 * closed (RESET_OWNER, or after a disconnect). */
void vhu_dev_reset(struct vhu_dev *dev);
/* Releases everything (the struct itself is the caller's). */
void vhu_dev_free(struct vhu_dev *dev);

/* Handles one message: the production entry point and the fuzz target's.
 * Takes msg's fds (closes those it does not keep). Fills reply when
 * res->reply. Returns 0, or -errno when the message was refused
 * (res->why says why; res->disconnect when the frontend cannot be told,
 * i.e. it did not ask for a reply). Unknown requests are ignored (with an
 * error reply when NEED_REPLY is set): weftd offers no feature that makes
 * a frontend send one. */
int vhu_dispatch(struct vhu_dev *dev, struct vhu_msg *msg, struct vhu_msg *reply,
		 struct vhu_result *res);

/* Ring state for the integrator. */
bool vhu_ring_ready(const struct vhu_dev *dev, unsigned int idx);
struct virtq *vhu_ring_vq(struct vhu_dev *dev, unsigned int idx);
int vhu_ring_kick_fd(const struct vhu_dev *dev, unsigned int idx);
/* Rings the device has: 2 * queue_pairs (RX is even, TX odd). */
unsigned int vhu_ring_count(const struct vhu_dev *dev);
/* "SET_MEM_TABLE", or "unknown". */
const char *vhu_request_name(uint32_t request);

/* Reads one message. 1: read (fds in msg); 0: the frontend closed the
 * socket; -EAGAIN: nothing to read (non-blocking socket); -errno: a
 * broken message (bad version, reply flag, payload over VHU_PAYLOAD_MAX,
 * more than VHU_MAX_FDS fds, EOF inside it; every fd closed). A message
 * started is read to its end, waiting up to a second for stragglers. */
int vhu_read_msg(int fd, struct vhu_msg *msg);
/* Sends a reply (header and hdr.size payload bytes). 0 or -errno. */
int vhu_send_reply(int fd, const struct vhu_msg *reply);
/* vhu_read_msg, vhu_dispatch, and vhu_send_reply when a reply is due.
 * Returns what vhu_read_msg or vhu_dispatch returned; res->disconnect is
 * also set on EOF, read errors and failed sends. */
int vhu_handle_msg(struct vhu_dev *dev, int sock, struct vhu_result *res);

/* A listening socket at path (mode 0600; a stale socket file is replaced,
 * a live one is -EADDRINUSE, anything else there -EEXIST), or -errno. */
int vhu_listen(const char *path);
/* Connects to a frontend listening at path (client mode). fd or -errno. */
int vhu_connect(const char *path);

#endif
