/* vhost-user backend: reads the frontend's messages, keeps the device state
 * they describe (features, guest memory, vrings) and answers them.
 *
 * Security model: the frontend (the VMM) is less trusted than weftd. Never
 * trust a field of a received message: sizes are checked against the
 * request's table entry before the payload is read as anything, every ring
 * index and count is range-checked, a memory region must lie inside its fd
 * and not wrap or overlap another, and ring addresses are used only after
 * they translate in full into a mapped region. A message that breaks a rule
 * is refused as a whole and changes nothing. A VMM that shrinks a mapped
 * file afterwards makes the next access to it fault: every region is
 * watched by the SIGBUS guard (tun/guestmem.h), which turns that into a
 * dropped frontend; the socket is root-only. Reading and writing the
 * messages on the socket is tun/vhost_sock.c. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "tun/vhost_user.h"

/* How many fds a request comes with. */
enum fds_rule {
	FDS_NONE,              /* none */
	FDS_VRING,             /* one, unless the u64 has VHU_VRING_NOFD */
	FDS_REGIONS,           /* one per memory region */
};

/* Payload size rule: exactly size, or at least size (SIZE_AT_LEAST). */
enum { SIZE_EXACT = 0, SIZE_AT_LEAST = 1 };

struct handler {
	const char *name;
	uint32_t size;
	uint8_t size_rule;
	uint8_t fds;
	bool has_reply;        /* answers with a payload of its own */
	int (*fn)(struct vhu_dev *dev, struct vhu_msg *msg, struct vhu_msg *reply,
		  struct vhu_result *res);
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static uint32_t all_rings(const struct vhu_dev *dev)
{
	return (uint32_t)((1ull << vhu_ring_count(dev)) - 1);
}

static void ring_init(struct vhu_ring *r)
{
	memset(r, 0, sizeof(*r));
	virtq_init(&r->vq);
	r->kick_fd = -1;
	r->err_fd = -1;
}

static void ring_free(struct vhu_ring *r)
{
	close_fd(&r->kick_fd);
	close_fd(&r->err_fd);
	close_fd(&r->vq.call_fd);
	ring_init(r);
}

static void unmap_all(struct vhu_dev *dev)
{
	uint32_t i;

	for (i = 0; i < VIRTQ_MEM_MAX_REGIONS; i++) {
		guestmem_unwatch(dev->maps[i].guard);
		dev->maps[i].guard = -1;
		if (dev->maps[i].base)
			munmap(dev->maps[i].base, dev->maps[i].len);
		dev->maps[i].base = NULL;
		dev->maps[i].len = 0;
	}
	memset(&dev->mem, 0, sizeof(dev->mem));
}

void vhu_dev_init(struct vhu_dev *dev, uint64_t features, uint32_t queue_pairs)
{
	uint32_t i;

	memset(dev, 0, sizeof(*dev));
	dev->offered_features = features & VHU_FEATURES_DEFAULT;
	if (queue_pairs < 1)
		queue_pairs = 1;
	if (queue_pairs > VHU_MAX_QUEUE_PAIRS)
		queue_pairs = VHU_MAX_QUEUE_PAIRS;
	dev->queue_pairs = queue_pairs;
	for (i = 0; i < VHU_MAX_RINGS; i++)
		ring_init(&dev->rings[i]);
	for (i = 0; i < VIRTQ_MEM_MAX_REGIONS; i++)
		dev->maps[i].guard = -1;
	guestmem_owner_init(&dev->guard);
}

void vhu_dev_reset(struct vhu_dev *dev)
{
	uint32_t i;

	for (i = 0; i < VHU_MAX_RINGS; i++)
		ring_free(&dev->rings[i]);
	unmap_all(dev);
	atomic_store(&dev->guard.faulted, false);
	dev->features = 0;
	dev->protocol_features = 0;
	dev->owner = false;
}

void vhu_dev_free(struct vhu_dev *dev)
{
	vhu_dev_reset(dev);
}

unsigned int vhu_ring_count(const struct vhu_dev *dev)
{
	return 2 * dev->queue_pairs;
}

bool vhu_ring_ready(const struct vhu_dev *dev, unsigned int idx)
{
	const struct vhu_ring *r;

	if (idx >= vhu_ring_count(dev))
		return false;
	r = &dev->rings[idx];
	/* Without VHOST_USER_F_PROTOCOL_FEATURES a ring is enabled as soon
	 * as it starts; with it, only after SET_VRING_ENABLE 1. */
	return r->live && !r->vq.broken && r->kick_fd >= 0 &&
	       (r->enabled || !(dev->features & (1ull << VHU_F_PROTOCOL_FEATURES)));
}

struct virtq *vhu_ring_vq(struct vhu_dev *dev, unsigned int idx)
{
	return idx < vhu_ring_count(dev) ? &dev->rings[idx].vq : NULL;
}

int vhu_ring_kick_fd(const struct vhu_dev *dev, unsigned int idx)
{
	return idx < vhu_ring_count(dev) ? dev->rings[idx].kick_fd : -1;
}

/* Translates the ring's addresses under the current memory table and num,
 * or takes its rings down. 0, -EFAULT (outside guest memory) or -EINVAL
 * (misaligned). */
static int map_ring(struct vhu_dev *dev, struct vhu_ring *r)
{
	struct vring_desc *desc = NULL;
	struct vring_avail *avail = NULL;
	struct vring_used *used = NULL;
	int err = 0;

	if (!r->addr_set || !r->num || !dev->mem.n)
		goto out;
	desc = virtq_mem_uva(&dev->mem, r->desc_uva, virtq_desc_size(r->num));
	avail = virtq_mem_uva(&dev->mem, r->avail_uva, virtq_avail_size(r->num));
	used = virtq_mem_uva(&dev->mem, r->used_uva, virtq_used_size(r->num));
	if (!desc || !avail || !used) {
		err = -EFAULT;
		goto out;
	}
	/* virtio 1.1, 2.6: descriptor table 16, avail 2, used 4. Checked on
	 * the host pointer too, since the data path does aligned atomics. */
	if ((r->desc_uva | (uintptr_t)desc) % 16 || (r->avail_uva | (uintptr_t)avail) % 2 ||
	    (r->used_uva | (uintptr_t)used) % 4)
		err = -EINVAL;
out:
	if (err || !desc || !avail || !used)
		virtq_set_rings(&r->vq, NULL, 0, NULL, NULL, NULL);
	else
		virtq_set_rings(&r->vq, &dev->mem, r->num, desc, avail, used);
	return err;
}

/* After anything that can change a ring: re-translate it, and start or stop
 * its virtqueue. A live ring keeps its indices across a re-translation (a
 * new memory table, a new num); one that stops remembers last_avail. */
static int ring_sync(struct vhu_dev *dev, struct vhu_ring *r)
{
	int err = map_ring(dev, r);
	bool mapped = r->vq.desc != NULL;

	virtq_set_features(&r->vq, dev->features);
	if (mapped && r->started) {
		if (!r->live)
			virtq_start(&r->vq, r->base);
		r->live = true;
	} else {
		if (r->live)
			r->base = r->vq.last_avail;
		r->live = false;
	}
	return err;
}

static void sync_all(struct vhu_dev *dev, struct vhu_result *res)
{
	unsigned int i;

	for (i = 0; i < vhu_ring_count(dev); i++)
		ring_sync(dev, &dev->rings[i]);
	res->changed |= all_rings(dev);
}

/* The ring a message names, or NULL (and res->why) when out of range. */
static struct vhu_ring *ring_of(struct vhu_dev *dev, uint32_t idx, struct vhu_result *res)
{
	if (idx >= vhu_ring_count(dev)) {
		res->why = "ring index out of range";
		return NULL;
	}
	res->changed |= 1u << idx;
	return &dev->rings[idx];
}

static void reply_u64(struct vhu_msg *reply, uint64_t v)
{
	reply->hdr.size = sizeof(reply->payload.u64);
	reply->payload.u64 = v;
}

static int get_features(struct vhu_dev *dev, struct vhu_msg *msg, struct vhu_msg *reply,
			struct vhu_result *res)
{
	reply_u64(reply, dev->offered_features);
	return 0;
}

static int set_features(struct vhu_dev *dev, struct vhu_msg *msg, struct vhu_msg *reply,
			struct vhu_result *res)
{
	if (msg->payload.u64 & ~dev->offered_features) {
		res->why = "feature not offered";
		return -EINVAL;
	}
	dev->features = msg->payload.u64;
	/* The header length, EVENT_IDX and the enable rule may change. */
	sync_all(dev, res);
	return 0;
}

static int set_owner(struct vhu_dev *dev, struct vhu_msg *msg, struct vhu_msg *reply,
		     struct vhu_result *res)
{
	dev->owner = true;
	return 0;
}

static int reset_owner(struct vhu_dev *dev, struct vhu_msg *msg, struct vhu_msg *reply,
		       struct vhu_result *res)
{
	res->changed |= all_rings(dev);
	vhu_dev_reset(dev);
	return 0;
}

/* Checks one region against its fd: non-empty, no wrap, inside the file. */
static int check_region(const struct vhu_mem_region *m, int fd, struct vhu_result *res,
			size_t *map_len)
{
	struct stat st;
	uint64_t end, align;

	if (!m->size) {
		res->why = "empty memory region";
		return -EINVAL;
	}
	if (m->gpa + m->size < m->gpa || m->uva + m->size < m->uva ||
	    m->mmap_offset + m->size < m->mmap_offset) {
		res->why = "memory region wraps around";
		return -EINVAL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		res->why = "memory region fd is not a file";
		return -EINVAL;
	}
	end = m->mmap_offset + m->size;
	/* Touching a shared mapping past the end of its file faults. */
	if (st.st_size < 0 || end > (uint64_t)st.st_size) {
		res->why = "memory region beyond the end of its file";
		return -EINVAL;
	}
	/* hugetlbfs reports its page size as the block size and unmaps only
	 * whole pages: map whole blocks (never touched past end). */
	align = st.st_blksize > 0 && !(st.st_blksize & (st.st_blksize - 1)) ? (uint64_t)st.st_blksize
									   : 4096;
	if (end > SIZE_MAX - align) {
		res->why = "memory region too large";
		return -EINVAL;
	}
	*map_len = (size_t)((end + align - 1) & ~(align - 1));
	return 0;
}

static bool overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

static int set_mem_table(struct vhu_dev *dev, struct vhu_msg *msg, struct vhu_msg *reply,
			 struct vhu_result *res)
{
	const struct vhu_memory *m = &msg->payload.mem;
	void *base[VIRTQ_MEM_MAX_REGIONS] = { 0 };
	size_t len[VIRTQ_MEM_MAX_REGIONS] = { 0 };
	int guard[VIRTQ_MEM_MAX_REGIONS];
	uint32_t n = m->nregions, i, j;
	int err = 0;

	/* nregions, the payload size and the fd count were checked by
	 * dispatch (check_fds). Validate everything before the old table is
	 * touched, so a refused table leaves the old one in place. */
	for (i = 0; i < n && !err; i++) {
		err = check_region(&m->regions[i], msg->fds[i], res, &len[i]);
		for (j = 0; j < i && !err; j++) {
			const struct vhu_mem_region *a = &m->regions[i], *b = &m->regions[j];

			if (overlap(a->gpa, a->size, b->gpa, b->size) ||
			    overlap(a->uva, a->size, b->uva, b->size)) {
				res->why = "memory regions overlap";
				err = -EINVAL;
			}
		}
	}
	for (i = 0; i < n && !err; i++) {
		base[i] = mmap(NULL, len[i], PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
			       msg->fds[i], 0);
		if (base[i] == MAP_FAILED) {
			base[i] = NULL;
			err = -errno;
			res->why = "mmap of a memory region failed";
		}
	}
	/* The file may shrink later, whatever its size is now: every region
	 * is watched by the SIGBUS guard (tun/guestmem.h) from the start. */
	for (i = 0; i < VIRTQ_MEM_MAX_REGIONS; i++)
		guard[i] = -1;
	for (i = 0; i < n && !err; i++) {
		guard[i] = guestmem_watch(base[i], len[i], &dev->guard);
		if (guard[i] < 0) {
			err = guard[i];
			res->why = "too many guest memory regions in this process";
		}
	}
	if (err)
		goto out;

	/* The data path is quiesced: nothing holds a pointer into the old
	 * table while it goes. */
	unmap_all(dev);
	for (i = 0; i < n; i++) {
		dev->maps[i].base = base[i];
		dev->maps[i].len = len[i];
		dev->maps[i].guard = guard[i];
		guard[i] = -1;
		dev->mem.r[i] = (struct virtq_mem_region){
			.gpa = m->regions[i].gpa,
			.uva = m->regions[i].uva,
			.size = m->regions[i].size,
			.host = (uint8_t *)base[i] + m->regions[i].mmap_offset,
		};
		base[i] = NULL;
	}
	dev->mem.n = n;
	sync_all(dev, res);
out:
	for (i = 0; i < n; i++) {
		if (guard[i] >= 0)
			guestmem_unwatch(guard[i]);
		if (base[i])
			munmap(base[i], len[i]);
	}
	/* The mappings keep the files; dispatch closes the fds. */
	return err;
}

static int set_vring_num(struct vhu_dev *dev, struct vhu_msg *msg, struct vhu_msg *reply,
			 struct vhu_result *res)
{
	const struct vhu_vring_state *s = &msg->payload.state;
	struct vhu_ring *r = ring_of(dev, s->index, res);

	if (!r)
		return -EINVAL;
	if (!s->num || s->num > VIRTQ_NUM_MAX || (s->num & (s->num - 1))) {
		res->why = "ring size not a power of two up to 1024";
		return -EINVAL;
	}
	r->num = (uint16_t)s->num;
	/* Ring addresses that fit the old size may not fit this one: then the
	 * ring waits for a new SET_VRING_ADDR. */
	ring_sync(dev, r);
	return 0;
}

static int set_vring_addr(struct vhu_dev *dev, struct vhu_msg *msg, struct vhu_msg *reply,
			  struct vhu_result *res)
{
	const struct vhu_vring_addr *a = &msg->payload.addr;
	struct vhu_ring *r = ring_of(dev, a->index, res);
	struct vhu_ring old;
	int err;

	if (!r)
		return -EINVAL;
	if (a->flags & ~(uint32_t)VHU_VRING_F_LOG) {
		res->why = "unknown vring address flags";
		return -EINVAL;
	}
	if (!r->num) {
		res->why = "vring address before its size";
		return -EINVAL;
	}
	if (!dev->mem.n) {
		res->why = "vring address before the memory table";
		return -EINVAL;
	}
	/* The log flag asks for dirty logging, which needs VHOST_F_LOG_ALL:
	 * never offered, so there is nothing to log. */
	old = *r;
	r->desc_uva = a->desc;
	r->avail_uva = a->avail;
	r->used_uva = a->used;
	r->addr_set = true;
	err = ring_sync(dev, r);
	if (err) {
		/* Refused: the ring stays as it was. */
		*r = old;
		ring_sync(dev, r);
		res->why = err == -EFAULT ? "vring outside guest memory" : "vring misaligned";
	}
	return err;
}

static int set_vring_base(struct vhu_dev *dev, struct vhu_msg *msg, struct vhu_msg *reply,
			  struct vhu_result *res)
{
	const struct vhu_vring_state *s = &msg->payload.state;
	struct vhu_ring *r = ring_of(dev, s->index, res);

	if (!r)
		return -EINVAL;
	if (s->num > UINT16_MAX) {
		res->why = "vring base beyond 16 bits";
		return -EINVAL;
	}
	r->base = (uint16_t)s->num;
	if (r->live)
		virtq_start(&r->vq, r->base);
	return 0;
}

static int get_vring_base(struct vhu_dev *dev, struct vhu_msg *msg, struct vhu_msg *reply,
			  struct vhu_result *res)
{
	const struct vhu_vring_state *s = &msg->payload.state;
	struct vhu_ring *r = ring_of(dev, s->index, res);

	if (!r)
		return -EINVAL;
	/* Stops the ring: no more kicks are looked at until a new kick fd. */
	r->started = false;
	close_fd(&r->kick_fd);
	ring_sync(dev, r);
	reply->hdr.size = sizeof(reply->payload.state);
	reply->payload.state.index = s->index;
	reply->payload.state.num = r->base;
	return 0;
}

/* The ring and fd of SET_VRING_KICK/CALL/ERR: *fd is the message's fd
 * (taken from it) or -1 with VHU_VRING_NOFD. */
static bool is_eventfd(int fd)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return false;
	link[n] = '\0';
	return !strcmp(link, "anon_inode:[eventfd]");
}

static struct vhu_ring *vring_file(struct vhu_dev *dev, struct vhu_msg *msg,
				   struct vhu_result *res, int *fd)
{
	uint64_t v = msg->payload.u64;
	struct vhu_ring *r;

	if (v & ~(uint64_t)(VHU_VRING_IDX_MASK | VHU_VRING_NOFD)) {
		res->why = "unknown bits in the vring file word";
		return NULL;
	}
	r = ring_of(dev, (uint32_t)(v & VHU_VRING_IDX_MASK), res);
	if (!r)
		return NULL;
	*fd = -1;
	if (!(v & VHU_VRING_NOFD)) {
		*fd = msg->fds[0];
		msg->fds[0] = -1;
	}
	/* A pipe at EOF or a plain file would make every kick read complete
	 * at once: a worker spinning for as long as the frontend likes. */
	if (*fd >= 0 && !is_eventfd(*fd)) {
		close(*fd);
		*fd = -1;
		res->why = "a vring fd that is not an eventfd";
		return NULL;
	}
	return r;
}

static int set_vring_kick(struct vhu_dev *dev, struct vhu_msg *msg, struct vhu_msg *reply,
			  struct vhu_result *res)
{
	int fd;
	struct vhu_ring *r = vring_file(dev, msg, res, &fd);

	if (!r)
		return -EINVAL;
	close_fd(&r->kick_fd);
	r->kick_fd = fd;
	/* The ring starts with its kick fd. Without one the frontend wants
	 * the rings polled, which weftd does not do: the ring stays stopped. */
	r->started = fd >= 0;
	ring_sync(dev, r);
	return 0;
}

static int set_vring_call(struct vhu_dev *dev, struct vhu_msg *msg, struct vhu_msg *reply,
			  struct vhu_result *res)
{
	int fd;
	struct vhu_ring *r = vring_file(dev, msg, res, &fd);

	if (!r)
		return -EINVAL;
	close_fd(&r->vq.call_fd);
	r->vq.call_fd = fd;
	return 0;
}

static int set_vring_err(struct vhu_dev *dev, struct vhu_msg *msg, struct vhu_msg *reply,
			 struct vhu_result *res)
{
	int fd;
	struct vhu_ring *r = vring_file(dev, msg, res, &fd);

	if (!r)
		return -EINVAL;
	close_fd(&r->err_fd);
	r->err_fd = fd;
	return 0;
}

static int get_protocol_features(struct vhu_dev *dev, struct vhu_msg *msg,
				 struct vhu_msg *reply, struct vhu_result *res)
{
	reply_u64(reply, VHU_PROTOCOL_FEATURES);
	return 0;
}

static int set_protocol_features(struct vhu_dev *dev, struct vhu_msg *msg,
				 struct vhu_msg *reply, struct vhu_result *res)
{
	if (msg->payload.u64 & ~VHU_PROTOCOL_FEATURES) {
		res->why = "protocol feature not offered";
		return -EINVAL;
	}
	dev->protocol_features = msg->payload.u64;
	return 0;
}

static int get_queue_num(struct vhu_dev *dev, struct vhu_msg *msg, struct vhu_msg *reply,
			 struct vhu_result *res)
{
	/* The spec counts virtqueues (QEMU compares queue pairs against it,
	 * which only makes it more lenient). */
	reply_u64(reply, vhu_ring_count(dev));
	return 0;
}

static int set_vring_enable(struct vhu_dev *dev, struct vhu_msg *msg, struct vhu_msg *reply,
			    struct vhu_result *res)
{
	const struct vhu_vring_state *s = &msg->payload.state;
	struct vhu_ring *r = ring_of(dev, s->index, res);

	if (!r)
		return -EINVAL;
	if (s->num > 1) {
		res->why = "vring enable is neither 0 nor 1";
		return -EINVAL;
	}
	r->enabled = s->num;
	return 0;
}

#define H(req, fn_, size_, rule_, fds_, reply_) \
	[VHU_##req] = { #req, size_, rule_, fds_, reply_, fn_ }

static const struct handler handlers[VHU_REQUEST_MAX] = {
	H(GET_FEATURES, get_features, 0, SIZE_EXACT, FDS_NONE, true),
	H(SET_FEATURES, set_features, 8, SIZE_EXACT, FDS_NONE, false),
	H(SET_OWNER, set_owner, 0, SIZE_EXACT, FDS_NONE, false),
	H(RESET_OWNER, reset_owner, 0, SIZE_EXACT, FDS_NONE, false),
	H(SET_MEM_TABLE, set_mem_table, VHU_MEMORY_HDR_SIZE, SIZE_AT_LEAST, FDS_REGIONS, false),
	H(SET_VRING_NUM, set_vring_num, VHU_STATE_SIZE, SIZE_EXACT, FDS_NONE, false),
	H(SET_VRING_ADDR, set_vring_addr, VHU_ADDR_SIZE, SIZE_EXACT, FDS_NONE, false),
	H(SET_VRING_BASE, set_vring_base, VHU_STATE_SIZE, SIZE_EXACT, FDS_NONE, false),
	H(GET_VRING_BASE, get_vring_base, VHU_STATE_SIZE, SIZE_EXACT, FDS_NONE, true),
	H(SET_VRING_KICK, set_vring_kick, 8, SIZE_EXACT, FDS_VRING, false),
	H(SET_VRING_CALL, set_vring_call, 8, SIZE_EXACT, FDS_VRING, false),
	H(SET_VRING_ERR, set_vring_err, 8, SIZE_EXACT, FDS_VRING, false),
	H(GET_PROTOCOL_FEATURES, get_protocol_features, 0, SIZE_EXACT, FDS_NONE, true),
	H(SET_PROTOCOL_FEATURES, set_protocol_features, 8, SIZE_EXACT, FDS_NONE, false),
	H(GET_QUEUE_NUM, get_queue_num, 0, SIZE_EXACT, FDS_NONE, true),
	H(SET_VRING_ENABLE, set_vring_enable, VHU_STATE_SIZE, SIZE_EXACT, FDS_NONE, false),
};

#undef H

const char *vhu_request_name(uint32_t request)
{
	if (request < VHU_REQUEST_MAX && handlers[request].fn)
		return handlers[request].name;
	return "unknown";
}

/* The payload size and fd count the request's table entry asks for. */
static int check_msg(const struct handler *h, const struct vhu_msg *msg, struct vhu_result *res)
{
	uint32_t size = msg->hdr.size, want_fds = 0;

	if (h->size_rule == SIZE_EXACT ? size != h->size : size < h->size) {
		res->why = "payload size wrong for the request";
		return -EINVAL;
	}
	switch (h->fds) {
	case FDS_NONE:
		break;
	case FDS_VRING:
		want_fds = msg->payload.u64 & VHU_VRING_NOFD ? 0 : 1;
		break;
	case FDS_REGIONS:
		want_fds = msg->payload.mem.nregions;
		if (want_fds > VIRTQ_MEM_MAX_REGIONS ||
		    size < VHU_MEMORY_HDR_SIZE + want_fds * VHU_REGION_SIZE) {
			res->why = "memory table larger than its payload or the limit";
			return -EINVAL;
		}
		break;
	}
	if (msg->n_fds != want_fds) {
		res->why = msg->n_fds < want_fds ? "missing fd" : "unexpected fd";
		return -EBADF;
	}
	return 0;
}

int vhu_dispatch(struct vhu_dev *dev, struct vhu_msg *msg, struct vhu_msg *reply,
		 struct vhu_result *res)
{
	const struct handler *h = NULL;
	bool need_reply = msg->hdr.flags & VHU_FLAG_NEED_REPLY;
	uint32_t i, n_fds = msg->n_fds < VHU_MAX_FDS ? msg->n_fds : VHU_MAX_FDS;
	int err = 0;

	memset(res, 0, sizeof(*res));
	memset(&reply->hdr, 0, sizeof(reply->hdr));
	reply->n_fds = 0;
	reply->hdr.request = msg->hdr.request;
	reply->hdr.flags = VHU_FLAG_VERSION | VHU_FLAG_REPLY;
	dev->stats.msgs++;

	if ((msg->hdr.flags & VHU_FLAG_VERSION_MASK) != VHU_FLAG_VERSION ||
	    (msg->hdr.flags & VHU_FLAG_REPLY) || msg->hdr.size > VHU_PAYLOAD_MAX ||
	    msg->n_fds > VHU_MAX_FDS) {
		res->why = "bad message header";
		err = -EBADMSG;
		need_reply = false;    /* nothing sane to answer */
		goto out;
	}
	if (msg->hdr.request < VHU_REQUEST_MAX)
		h = &handlers[msg->hdr.request];
	if (!h || !h->fn) {
		dev->stats.unknown++;
		res->why = "unknown request ignored";
		if (need_reply) {
			reply_u64(reply, 1);
			res->reply = true;
		}
		goto close_fds;
	}
	err = check_msg(h, msg, res);
	if (!err)
		err = h->fn(dev, msg, reply, res);
	if (!err) {
		if (h->has_reply) {
			res->reply = true;
		} else if (need_reply) {
			reply_u64(reply, 0);
			res->reply = true;
		}
		goto close_fds;
	}
	/* A GET has nothing to answer with but its value: the frontend
	 * would wait forever, so it must be dropped like one that did not
	 * ask for an answer. */
	if (h->has_reply)
		need_reply = false;
out:
	dev->stats.refused++;
	if (need_reply) {
		reply_u64(reply, 1);
		res->reply = true;
	} else {
		res->disconnect = true;
	}
close_fds:
	for (i = 0; i < n_fds; i++) {
		if (msg->fds[i] >= 0) {
			dev->stats.fds_closed++;
			close_fd(&msg->fds[i]);
		}
	}
	msg->n_fds = 0;
	return err;
}
