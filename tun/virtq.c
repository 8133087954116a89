/* Split virtqueues over guest memory, and virtio-net frames on them.
 *
 * Security model: the guest owns the rings and every buffer and may change
 * them at any moment, including while we read. So each guest word is loaded
 * exactly once (a relaxed atomic load into a local) and only the local is
 * checked and used; every index is range-checked before it is used as one;
 * every buffer is translated in full to weftd's mapping of one memory
 * region, so no guest value can make us touch memory outside the guest's
 * regions. A broken rule breaks the queue for good: the integrator turns
 * that into a disconnect, and the frontend resets the device. */
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "tun/virtq.h"

/* Guest memory accessors: one load or store each, never torn or repeated by
 * the compiler. Virtio 1.x rings are little-endian. */
static inline uint16_t ld16(const void *p)
{
	return le16toh(__atomic_load_n((const uint16_t *)p, __ATOMIC_RELAXED));
}

static inline uint32_t ld32(const void *p)
{
	return le32toh(__atomic_load_n((const uint32_t *)p, __ATOMIC_RELAXED));
}

static inline uint64_t ld64(const void *p)
{
	return le64toh(__atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED));
}

static inline void st16(void *p, uint16_t v)
{
	__atomic_store_n((uint16_t *)p, htole16(v), __ATOMIC_RELAXED);
}

static inline void st32(void *p, uint32_t v)
{
	__atomic_store_n((uint32_t *)p, htole32(v), __ATOMIC_RELAXED);
}

static void *translate(const struct virtq_mem *mem, uint64_t addr, uint64_t len, bool by_gpa)
{
	uint32_t i;

	for (i = 0; i < mem->n && i < VIRTQ_MEM_MAX_REGIONS; i++) {
		const struct virtq_mem_region *r = &mem->r[i];
		uint64_t start = by_gpa ? r->gpa : r->uva;
		uint64_t off;

		if (addr < start)
			continue;
		off = addr - start;
		/* Written so nothing can wrap: off < size, then len <= rest. */
		if (off < r->size && len <= r->size - off)
			return r->host + off;
	}
	return NULL;
}

void *virtq_mem_gpa(const struct virtq_mem *mem, uint64_t gpa, uint64_t len)
{
	return translate(mem, gpa, len, true);
}

void *virtq_mem_uva(const struct virtq_mem *mem, uint64_t uva, uint64_t len)
{
	return translate(mem, uva, len, false);
}

void virtq_init(struct virtq *vq)
{
	memset(vq, 0, sizeof(*vq));
	vq->call_fd = -1;
	vq->hdr_len = VIRTQ_NET_HDR_LEGACY_LEN;
}

void virtq_set_rings(struct virtq *vq, const struct virtq_mem *mem, uint16_t num,
		     struct vring_desc *desc, struct vring_avail *avail, struct vring_used *used)
{
	vq->mem = mem;
	vq->num = num;
	vq->desc = desc;
	vq->avail = avail;
	vq->used = used;
}

void virtq_start(struct virtq *vq, uint16_t last_avail)
{
	vq->last_avail = last_avail;
	/* The used ring is where the previous backend (or this one, before a
	 * GET_VRING_BASE) left it; carrying on from there keeps the guest's
	 * view and ours the same. */
	vq->used_idx = vq->used ? ld16(&vq->used->idx) : 0;
	vq->signalled_used = vq->used_idx;
	vq->broken = false;
	vq->why = NULL;
}

size_t virtq_net_hdr_len(uint64_t features)
{
	if (features & (1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_NET_F_MRG_RXBUF))
		return VIRTQ_NET_HDR_LEN;
	return VIRTQ_NET_HDR_LEGACY_LEN;
}

void virtq_set_features(struct virtq *vq, uint64_t features)
{
	vq->event_idx = features & (1ull << VIRTIO_RING_F_EVENT_IDX);
	vq->mrg_rxbuf = features & (1ull << VIRTIO_NET_F_MRG_RXBUF);
	vq->hdr_len = (uint8_t)virtq_net_hdr_len(features);
}

static int broken(struct virtq *vq, const char *why)
{
	if (!vq->broken) {
		vq->broken = true;
		vq->why = why;
	}
	return -EIO;
}

/* avail_event lives right after the used ring, used_event right after the
 * avail ring (virtio 1.1, 2.6.7 and 2.6.8). */
static inline void *avail_event(const struct virtq *vq)
{
	return &vq->used->ring[vq->num];
}

static inline const void *used_event(const struct virtq *vq)
{
	return &vq->avail->ring[vq->num];
}

/* How many entries the guest has made available past last_avail, or -EIO
 * when its index jumped further than the ring holds. */
static int avail_pending(struct virtq *vq)
{
	uint16_t idx = le16toh(__atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE));
	uint16_t pending = (uint16_t)(idx - vq->last_avail);

	if (pending > vq->num)
		return broken(vq, "avail index moved by more than the ring size");
	if (pending || !vq->event_idx)
		return pending;
	/* Going idle: ask for a kick at last_avail, then look again, in case
	 * the guest published before it could see the request (it does the
	 * mirror image: store idx, full barrier, load avail_event). */
	st16(avail_event(vq), vq->last_avail);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	idx = le16toh(__atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE));
	pending = (uint16_t)(idx - vq->last_avail);
	if (pending > vq->num)
		return broken(vq, "avail index moved by more than the ring size");
	return pending;
}

int virtq_pop(struct virtq *vq, struct virtq_chain *c, enum virtq_chain_kind kind)
{
	uint16_t num = vq->num, idx, head;
	bool seen_in = false;
	uint32_t count = 0;
	int pending;

	if (vq->broken)
		return -EIO;
	if (!vq->desc || !vq->avail || !vq->used || !num)
		return -EIO;
	pending = avail_pending(vq);
	if (pending <= 0)
		return pending;

	head = ld16(&vq->avail->ring[vq->last_avail & (num - 1)]);
	if (head >= num)
		return broken(vq, "avail ring entry out of range");
	c->head = head;
	c->n_out = c->n_in = 0;
	c->out_len = c->in_len = 0;

	for (idx = head;;) {
		const struct vring_desc *d = &vq->desc[idx];
		uint64_t addr = ld64(&d->addr);
		uint32_t len = ld32(&d->len);
		uint16_t flags = ld16(&d->flags);
		uint16_t next = ld16(&d->next);
		bool write = flags & VRING_DESC_F_WRITE;
		uint8_t *p;

		/* A chain can use each descriptor once: more means a loop. */
		if (++count > num)
			return broken(vq, "descriptor chain loops");
		if (flags & VRING_DESC_F_INDIRECT)
			return broken(vq, "indirect descriptor (not negotiated)");
		if (write) {
			if (kind == VIRTQ_CHAIN_OUT)
				return broken(vq, "device-writable descriptor in an output chain");
			seen_in = true;
		} else {
			if (kind == VIRTQ_CHAIN_IN)
				return broken(vq, "device-readable descriptor in an input chain");
			if (seen_in)
				return broken(vq, "readable descriptor after a writable one");
		}
		if (len) {
			if (c->n_out + c->n_in >= VIRTQ_IOV_MAX)
				return broken(vq, "chain has too many buffers");
			p = virtq_mem_gpa(vq->mem, addr, len);
			if (!p)
				return broken(vq, "buffer outside guest memory");
			c->iov[c->n_out + c->n_in] = (struct virtq_iov){ .base = p, .len = len };
			if (write) {
				c->n_in++;
				c->in_len += len;
			} else {
				c->n_out++;
				c->out_len += len;
			}
		}
		if (!(flags & VRING_DESC_F_NEXT))
			break;
		if (next >= num)
			return broken(vq, "descriptor next out of range");
		idx = next;
	}

	vq->last_avail++;
	if (vq->event_idx)
		st16(avail_event(vq), vq->last_avail);
	return 1;
}

/* Writes n used elements, then publishes them with one release store. */
static void push_n(struct virtq *vq, const struct vring_used_elem *e, uint32_t n)
{
	uint16_t mask = vq->num - 1;
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct vring_used_elem *u = &vq->used->ring[(uint16_t)(vq->used_idx + i) & mask];

		st32(&u->id, e[i].id);
		st32(&u->len, e[i].len);
	}
	vq->used_idx = (uint16_t)(vq->used_idx + n);
	__atomic_store_n(&vq->used->idx, htole16(vq->used_idx), __ATOMIC_RELEASE);
}

void virtq_push(struct virtq *vq, uint16_t head, uint32_t len)
{
	struct vring_used_elem e = { .id = head, .len = len };

	/* A broken queue is not written again: the guest will be reset. */
	if (vq->broken || !vq->used || !vq->num)
		return;
	push_n(vq, &e, 1);
}

bool virtq_should_notify(struct virtq *vq)
{
	uint16_t old = vq->signalled_used, now = vq->used_idx;

	if (vq->broken || !vq->avail || !vq->num || old == now)
		return false;
	vq->signalled_used = now;
	/* Our used->idx store must be visible before we read what the guest
	 * asked for; the guest orders its request before reading used->idx. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (vq->event_idx) {
		uint16_t event = ld16(used_event(vq));

		/* vring_need_event: did used->idx step past event? */
		return (uint16_t)(now - event - 1) < (uint16_t)(now - old);
	}
	return !(ld16(&vq->avail->flags) & VRING_AVAIL_F_NO_INTERRUPT);
}

int virtq_notify(const struct virtq *vq)
{
	uint64_t one = 1;

	if (vq->call_fd < 0)
		return 0;
	/* EAGAIN means the counter is saturated: the guest is interrupted. */
	if (write(vq->call_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return -errno;
	return 0;
}

int virtq_net_tx_read(struct virtq *vq, void *buf, size_t cap)
{
	struct virtq_chain c;
	uint8_t *out = buf;
	uint16_t i;
	int r;

	r = virtq_pop(vq, &c, VIRTQ_CHAIN_OUT);
	if (r <= 0)
		return r;
	if (cap > INT_MAX)
		cap = INT_MAX;
	if (c.out_len > cap) {
		r = -EMSGSIZE;
		goto out;
	}
	if (c.out_len < vq->hdr_len) {
		r = -EINVAL;
		goto out;
	}
	for (i = 0; i < c.n_out; i++) {
		memcpy(out, c.iov[i].base, c.iov[i].len);
		out += c.iov[i].len;
	}
	r = (int)c.out_len;
out:
	/* Dropped or not, the guest gets its buffer back; TX writes nothing. */
	virtq_push(vq, c.head, 0);
	return r;
}

/* Copies len bytes of src into the writable buffers of c from byte off. */
static void chain_write(const struct virtq_chain *c, uint64_t off, const void *src, size_t len)
{
	const uint8_t *s = src;
	uint16_t i;

	for (i = c->n_out; i < c->n_out + c->n_in && len; i++) {
		const struct virtq_iov *v = &c->iov[i];
		size_t n;

		if (off >= v->len) {
			off -= v->len;
			continue;
		}
		n = v->len - off;
		if (n > len)
			n = len;
		memcpy(v->base + off, s, n);
		s += n;
		len -= n;
		off = 0;
	}
}

int virtq_net_rx_write(struct virtq *vq, const struct virtio_net_hdr *hdr,
		       const void *frame, size_t len)
{
	struct vring_used_elem used[VIRTQ_NUM_MAX];
	struct virtq_chain first, more;
	struct virtio_net_hdr_mrg_rxbuf h;
	const uint8_t *src = frame;
	size_t hl = vq->hdr_len, left = len;
	uint16_t start = vq->last_avail;
	uint32_t n = 0;
	int r;

	if (vq->broken || !vq->used || !vq->num)
		return -EIO;
	if (len > UINT32_MAX - hl)
		return -EMSGSIZE;

	/* Fill chains as they come; publish nothing until the frame is all
	 * placed. On a shortage rewind last_avail: the buffers are still ours
	 * until they appear in the used ring, so the guest sees nothing. */
	do {
		struct virtq_chain *c = n ? &more : &first;
		uint64_t skip = n ? 0 : hl, room, take;

		/* A guest that keeps publishing while we pop could feed us
		 * more chains than the ring holds; a frame that needs that
		 * many buffers cannot be placed anyway. */
		if (n >= vq->num || n >= VIRTQ_NUM_MAX) {
			vq->last_avail = start;
			return -ENOBUFS;
		}
		r = virtq_pop(vq, c, VIRTQ_CHAIN_IN);
		if (r < 0)
			return r;
		if (r == 0) {
			vq->last_avail = start;
			return -ENOBUFS;
		}
		if (c->in_len < skip)
			return broken(vq, "receive buffer smaller than the virtio-net header");
		if (c->in_len == 0)
			return broken(vq, "receive chain without room");
		if (!vq->mrg_rxbuf && c->in_len < hl + len) {
			vq->last_avail = start;
			return -EMSGSIZE;
		}
		room = c->in_len - skip;
		take = room < left ? room : left;
		chain_write(c, skip, src, take);
		src += take;
		left -= take;
		used[n].id = c->head;
		used[n].len = (uint32_t)(skip + take);
		n++;
	} while (left && vq->mrg_rxbuf);

	memset(&h, 0, sizeof(h));
	if (hdr)
		memcpy(&h.hdr, hdr, sizeof(h.hdr));
	h.num_buffers = htole16((uint16_t)n);
	chain_write(&first, 0, &h, hl);
	push_n(vq, used, n);
	return (int)n;
}
