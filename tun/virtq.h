/* Split virtqueues (virtio 1.1, section 2.6) read and written by weftd in
 * a VM's memory, and the virtio-net framing on top of them: one guest TX
 * frame out of a chain, one frame into RX buffers (MRG_RXBUF aware).
 *
 * Everything in guest memory is hostile: the guest may rewrite rings and
 * descriptors while we read them. Each field is loaded once into a local
 * before it is checked, every buffer is translated in full through the
 * memory table (struct virtq_mem), and a chain that breaks a rule marks the
 * queue broken (the integrator disconnects the frontend) instead of being
 * trusted. No allocation; the only system call is virtq_notify.
 *
 * Threading: the control thread (tun/vhost_user.c) sets up and changes the
 * queue while the data path is quiesced; afterwards exactly one worker at a
 * time calls virtq_pop/push/should_notify/net_* on a queue. */
#ifndef WEFT_TUN_VIRTQ_H
#define WEFT_TUN_VIRTQ_H

#include <linux/virtio_net.h>
#include <linux/virtio_ring.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	/* VHOST_MEMORY_BASELINE_NREGIONS of the vhost-user spec. */
	VIRTQ_MEM_MAX_REGIONS = 8,
	/* The spec allows 32768; weftd caps rings at QEMU's largest
	 * virtio-net queue size so per-frame scratch stays small. */
	VIRTQ_NUM_MAX = 1024,
	/* Buffers of one chain weftd accepts. Linux posts at most
	 * MAX_SKB_FRAGS + 2 (19); a longer chain breaks the queue. */
	VIRTQ_IOV_MAX = 64,
	/* struct virtio_net_hdr_mrg_rxbuf, and the legacy header without
	 * num_buffers. */
	VIRTQ_NET_HDR_LEN = 12,
	VIRTQ_NET_HDR_LEGACY_LEN = 10,
};

_Static_assert(sizeof(struct virtio_net_hdr_mrg_rxbuf) == VIRTQ_NET_HDR_LEN, "12-byte header");
_Static_assert(sizeof(struct virtio_net_hdr) == VIRTQ_NET_HDR_LEGACY_LEN, "10-byte header");
_Static_assert(sizeof(struct vring_desc) == 16, "descriptor is 16 bytes");
_Static_assert(sizeof(struct vring_used_elem) == 8, "used element is 8 bytes");

/* One region of guest memory, mapped by the control thread. */
struct virtq_mem_region {
	uint64_t gpa;     /* guest-physical start */
	uint64_t uva;     /* the frontend's (VMM's) virtual address of it */
	uint64_t size;    /* bytes; gpa + size and uva + size do not wrap */
	uint8_t *host;    /* where it is mapped in weftd */
};

/* The guest's memory table. Written only while the data path is quiesced. */
struct virtq_mem {
	uint32_t n;
	struct virtq_mem_region r[VIRTQ_MEM_MAX_REGIONS];
};

/* Host pointer for guest-physical [gpa, gpa + len), or NULL unless the whole
 * range lies in one region. len 0 needs gpa inside a region. */
void *virtq_mem_gpa(const struct virtq_mem *mem, uint64_t gpa, uint64_t len);
/* The same for a frontend virtual address (vring addresses of
 * SET_VRING_ADDR are VMM user addresses). */
void *virtq_mem_uva(const struct virtq_mem *mem, uint64_t uva, uint64_t len);

/* Bytes of ring memory (virtio 1.1, 2.6): the used_event / avail_event
 * words are always counted, negotiated or not. */
static inline uint64_t virtq_desc_size(uint32_t num) { return 16ull * num; }
static inline uint64_t virtq_avail_size(uint32_t num) { return 6ull + 2ull * num; }
static inline uint64_t virtq_used_size(uint32_t num) { return 6ull + 8ull * num; }

/* Which descriptors a chain may have. */
enum virtq_chain_kind {
	VIRTQ_CHAIN_ANY = 0,   /* device-readable ones, then device-writable ones */
	VIRTQ_CHAIN_OUT = 1,   /* only device-readable (virtio-net TX) */
	VIRTQ_CHAIN_IN = 2,    /* only device-writable (virtio-net RX) */
};

struct virtq_iov {
	uint8_t *base;         /* host pointer, translated in full */
	uint32_t len;
};

/* A popped chain: its head (for virtq_push) and its buffers, the readable
 * ones first (n_out of them), then the writable ones (n_in). Descriptors
 * of length 0 are skipped. */
struct virtq_chain {
	uint16_t head;
	uint16_t n_out, n_in;
	uint64_t out_len, in_len;
	struct virtq_iov iov[VIRTQ_IOV_MAX];
};

/* A split virtqueue. Fields under "control" are set by the control thread
 * while the data path is quiesced (virtq_set_rings, virtq_set_features,
 * call_fd); the rest belong to the one worker serving the queue, and are
 * (re)set by virtq_start. */
struct virtq {
	/* control */
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	const struct virtq_mem *mem;
	uint16_t num;              /* power of two, <= VIRTQ_NUM_MAX */
	bool event_idx;            /* VIRTIO_RING_F_EVENT_IDX negotiated */
	bool mrg_rxbuf;            /* VIRTIO_NET_F_MRG_RXBUF negotiated */
	uint8_t hdr_len;           /* virtio-net header: 12 or 10 */
	int call_fd;               /* eventfd to interrupt the guest, or -1 */
	/* worker */
	uint16_t last_avail;       /* next avail entry to take */
	uint16_t used_idx;         /* our used->idx (published with release) */
	uint16_t signalled_used;   /* used_idx at the last notify decision */
	bool broken;               /* a rule was broken: sticky until restart */
	const char *why;           /* static text: the first broken rule */
};

/* An idle queue: no rings, no call fd, the legacy header. */
void virtq_init(struct virtq *vq);

/* Points the queue at translated rings (control thread). desc must be
 * 16-byte aligned, avail 2, used 4, each as long as num asks; indices are
 * kept, so a ring stays where it was when the memory table is replaced.
 * NULL pointers take the queue down (pop returns -EIO). */
void virtq_set_rings(struct virtq *vq, const struct virtq_mem *mem, uint16_t num,
		     struct vring_desc *desc, struct vring_avail *avail, struct vring_used *used);

/* Starts the queue (control thread; rings set): last_avail is where the
 * frontend says to start (SET_VRING_BASE), used_idx is read from the used
 * ring, and a broken queue is whole again. */
void virtq_start(struct virtq *vq, uint16_t last_avail);

/* Negotiated features that change the data path (VIRTIO_F_*,
 * VIRTIO_NET_F_*, VIRTIO_RING_F_* bits). */
void virtq_set_features(struct virtq *vq, uint64_t features);

/* The virtio-net header length that features imply: 12 with VERSION_1 or
 * MRG_RXBUF, else 10. */
size_t virtq_net_hdr_len(uint64_t features);

/* Takes the next available chain. 1 and *c filled, 0 when the ring is
 * empty, -EIO when the guest broke a rule (vq->broken and vq->why set;
 * every later call returns -EIO). Rules: avail->idx moves by at most num,
 * head and every next < num, at most num descriptors (a loop), no INDIRECT,
 * at most VIRTQ_IOV_MAX non-empty buffers, each wholly inside one memory
 * region, readable before writable and as kind asks. With EVENT_IDX it
 * keeps avail_event at last_avail so the guest kicks on new work. */
int virtq_pop(struct virtq *vq, struct virtq_chain *c, enum virtq_chain_kind kind);

/* Returns the chain of head to the guest with len bytes written. The used
 * element is published with a release store of used->idx. */
void virtq_push(struct virtq *vq, uint16_t head, uint32_t len);

/* After a batch of pushes: must the guest be interrupted? With EVENT_IDX,
 * vring_need_event on used_event; without it, unless the guest set
 * VRING_AVAIL_F_NO_INTERRUPT. False when nothing was pushed since the last
 * call. */
bool virtq_should_notify(struct virtq *vq);

/* Writes 1 to the call eventfd (nothing without one). 0 or -errno. */
int virtq_notify(const struct virtq *vq);

/* Copies one guest TX frame (the virtio-net header, then the Ethernet
 * frame) into buf and returns the chain to the guest (used len 0).
 * Returns the bytes copied (> 0), 0 when the ring is empty, -EMSGSIZE when
 * the frame exceeds cap, -EINVAL when it is shorter than the header (both
 * drops: the chain is returned), -EIO when the queue is broken. */
int virtq_net_tx_read(struct virtq *vq, void *buf, size_t cap);

/* Places one frame for the guest: the header (hdr, num_buffers filled in
 * here when the header has it; NULL for a zero header) and then frame.
 * With MRG_RXBUF the frame may fill several chains (num_buffers says how
 * many); without it, one chain must hold it all. Returns the number of
 * chains used (>= 1), -ENOBUFS when the guest posted too little room (no
 * chain taken: retry later or drop), -EMSGSIZE without MRG_RXBUF when the
 * next chain is too small (not taken; drop), -EIO when broken. */
int virtq_net_rx_write(struct virtq *vq, const struct virtio_net_hdr *hdr,
		       const void *frame, size_t len);

#endif
