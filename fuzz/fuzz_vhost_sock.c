/* libFuzzer target for the vhost-user receive path with descriptors
 * attached: what port/vhost.c's serve_message does for every message,
 * vhu_read_msg on a non-blocking unix stream socket, vhu_dispatch,
 * vhu_send_reply, over a real socketpair whose other end the input drives
 * as a hostile VMM would: messages cut into chunks (a header split across
 * writes, a payload that arrives in parts), each chunk optionally carrying
 * SCM_RIGHTS fds of every kind (memfds, an eventfd, /dev/null, pipe ends, a
 * socket), more fds than the request wants or than the receive buffer
 * holds (MSG_CTRUNC), with rings made live on a memory table, driven
 * through the virtq data path, and the table replaced under them.
 *
 * The port thread calls vhu_read_msg when the socket is readable and waits
 * up to a second for the rest of a started message. The harness, which is
 * the only sender, calls it once the stream holds a complete message (as
 * if the rest arrived within that second), and when nothing is pending
 * (then it must say -EAGAIN). A message still incomplete at the end of the
 * input meets EOF (the frontend shuts its side) and must be refused
 * unapplied. A disconnect verdict or a read error is a disconnect as in
 * production: vhu_dev_reset, and the frontend comes back on a new pair.
 *
 * Guest memory: the device's mappings are placed (mmap interposed while
 * dispatch runs) between PROT_NONE guard pages, and every whole page of a
 * mapping outside its region is made PROT_NONE after the table is taken,
 * so any access outside the current regions faults; the old table is
 * unmapped when a new one comes, so a ring left pointing into it faults.
 *
 * Input: a set-up byte (bits 0-1: queue pairs - 1; bits 2-5 trim MRG_RXBUF,
 * EVENT_IDX, PROTOCOL_FEATURES, VERSION_1 off the offer), three memfd size
 * bytes ((b & 15) + 1 pages, less 100 bytes with bit 4), then operations
 * (a byte: bits 0-2 the kind, the rest the kind's flags), see the OP_*
 * comments. Every message is sent with a send spec: a byte (bits 0-1:
 * chunks - 1; bit 2: the fds ride the last chunk instead of the first;
 * bit 3: nine extra fds (truncated control data)), then one cut byte per
 * extra chunk.
 *
 * Checked: no crash and no stray access; after vhu_dev_free no fd of the
 * input is left open (/proc/self/fd); a reply is on the socket exactly
 * when the request asked for one (a GET's value, or an ack with
 * NEED_REPLY), well formed, and nothing else ever is; a refused message
 * changes no device state (statistics aside); the memory table lies inside
 * the device's mappings and every ready ring's pointers are the
 * translations of its addresses; data-path calls return only what their
 * contract allows. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tun/vhost_user.h"

#define CHECK(cond)                                                                     \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "fuzz_vhost_sock: check failed at %s:%d: %s\n", \
				__FILE__, __LINE__, #cond);                             \
			abort();                                                        \
		}                                                                       \
	} while (0)

enum {
	PAGE = 4096,
	N_MEMFD = 3,
	MAX_OPS = 48,
	STREAM_MAX = 4096,
	CTRUNC_FDS = 9,
	MAX_SEND_FDS = VHU_MAX_FDS + CTRUNC_FDS + 2,
	FRAME_MAX = 2048,
	MAX_GUARDED = 64,
	FD_PROBE = 512,
};

/* Operations. */
enum {
	OP_RAW = 0,    /* 12-byte header, min(size, 300) payload bytes, an fd count
			* byte (mod 13) and one kind byte per fd; send spec */
	OP_MEM = 1,    /* SET_MEM_TABLE: nregions (mod 10), per region 7 bytes (memfd,
			* gpa page 16 bits, pages, uva page 16 bits, offset pages);
			* flags bit 3 NEED_REPLY, bits 4-5: fds right / one missing /
			* one extra / the first not a file; send spec */
	OP_RING = 2,   /* ring, log2 num, desc, avail, used (32 bits each), base (16):
			* SET_VRING_NUM, _ADDR, _BASE, _KICK (flag bit 3: no fd, bit 4:
			* a pipe as the kick), then _CALL (bit 5), _ENABLE 1 (bit 6);
			* one send spec for all */
	OP_POST = 3,   /* the guest posts a chain on a ready ring: ring, head,
			* descriptors (1 + bits 3-4), each gpa 32 bits, len 16 bits,
			* write flag byte */
	OP_RUN = 4,    /* ring, length byte: a TX read (odd ring) or an RX write of
			* 8 * length bytes (even), then the notify decision */
	OP_POKE = 5,   /* memfd, 16-bit offset, length byte, bytes */
	OP_SIMPLE = 6, /* request byte (mod 19), u64 or state from 8 bytes, flags
			* bit 3 NEED_REPLY: sized as the request wants, no fds */
	OP_RESET = 7,  /* the frontend goes away and comes back */
};

enum fd_kind {
	K_MEMFD0, K_MEMFD1, K_MEMFD2, K_EVENTFD, K_DEVNULL, K_PIPE_R, K_PIPE_W, K_SOCKET,
	N_KINDS,
};

static int pool[N_KINDS] = { -1, -1, -1, -1, -1, -1, -1, -1 };
static uint8_t *hmap[N_MEMFD];       /* the harness's (the guest's) view of the memfds */
static size_t fsize[N_MEMFD];
/* A memfd of every size an input can ask for, per slot, made on first use
 * and kept: resizing one memfd per input (ftruncate, which zaps the
 * harness's mapping, then faulting the pages back in) took a fifth of
 * every execution. The input's choice picks one; it is zeroed each time. */
enum { N_SIZES = 32 };
static struct {
	int fd;
	uint8_t *map;
} sized[N_MEMFD][N_SIZES];
static bool ready;
static int trace;

/* --- guarded placement of the device's mappings --- */

static bool guarding;
static struct {
	uint8_t *addr;
	size_t len;
} guarded[MAX_GUARDED];

static void *raw_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static size_t page_up(size_t n)
{
	return (n + PAGE - 1) & ~(size_t)(PAGE - 1);
}

/* Overrides libc's (and ASan's weak interceptor): while dispatch runs, a
 * file mapping is placed with a PROT_NONE page on either side, so nothing
 * lies next to it that a stray access could reach without a fault. */
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	size_t span = page_up(len);
	uint8_t *r, *m;
	int i, err;

	if (!guarding || addr || fd < 0 || (flags & MAP_FIXED))
		return raw_mmap(addr, len, prot, flags, fd, off);
	for (i = 0; i < MAX_GUARDED && guarded[i].addr; i++)
		;
	CHECK(i < MAX_GUARDED);
	r = raw_mmap(NULL, span + 2 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		     -1, 0);
	if (r == MAP_FAILED)
		return MAP_FAILED;
	m = raw_mmap(r + PAGE, len, prot, flags | MAP_FIXED, fd, off);
	if (m == MAP_FAILED) {
		err = errno;
		syscall(SYS_munmap, r, span + 2 * PAGE);
		errno = err;
		return MAP_FAILED;
	}
	guarded[i].addr = m;
	guarded[i].len = span;
	return m;
}

int munmap(void *addr, size_t len)
{
	for (int i = 0; i < MAX_GUARDED; i++) {
		if (guarded[i].addr && guarded[i].addr == addr) {
			CHECK(page_up(len) == guarded[i].len);
			guarded[i].addr = NULL;
			return (int)syscall(SYS_munmap, (uint8_t *)addr - PAGE, guarded[i].len + 2 * PAGE);
		}
	}
	return (int)syscall(SYS_munmap, addr, len);
}

/* Every whole page of the device's mappings outside its regions becomes
 * inaccessible (the region itself stays as it was). */
static void fence_regions(const struct vhu_dev *dev)
{
	for (uint32_t i = 0; i < dev->mem.n; i++) {
		uint8_t *base = dev->maps[i].base, *end = base + dev->maps[i].len;
		uint8_t *host = dev->mem.r[i].host;
		uintptr_t lo = (uintptr_t)host & ~(uintptr_t)(PAGE - 1);
		uintptr_t hi = page_up((uintptr_t)host + dev->mem.r[i].size);

		if ((uintptr_t)base < lo)
			CHECK(mprotect(base, lo - (uintptr_t)base, PROT_NONE) == 0);
		if (hi < (uintptr_t)end)
			CHECK(mprotect((void *)hi, (uintptr_t)end - hi, PROT_NONE) == 0);
	}
}

/* --- harness state --- */

static int proc_fd_dir = -1;
/* The input's fd count before its first fd went out, -1 while none has;
 * every 64th input counts from the start whatever it sends. */
static int base_fds = -1;
static unsigned long n_inputs;

/* Entries of /proc/self/fd (the directory's own fd included), with one
 * directory fd kept open: fewer system calls than opendir per count. */
static int list_fds(void)
{
	static char buf[32768];
	int n = 0;
	long got;

	CHECK(lseek(proc_fd_dir, 0, SEEK_SET) == 0);
	while ((got = syscall(SYS_getdents64, proc_fd_dir, buf, sizeof(buf))) > 0) {
		for (long at = 0; at < got;) {
			unsigned short reclen;

			memcpy(&reclen, buf + at + 16, sizeof(reclen));
			at += reclen;
			n++;
		}
	}
	CHECK(got == 0);
	return n;
}

/* Open fds below FD_PROBE, from one poll (a closed fd comes back
 * POLLNVAL): listing /proc/self/fd costs a dentry per fd, and the memfds
 * kept per size make that a hundred. Exact while every fd lies below
 * FD_PROBE, which the counts from the start (every 64th input) check
 * against /proc. */
static int count_fds(bool also_proc)
{
	static struct pollfd p[FD_PROBE];
	int n = 0;

	for (int i = 0; i < FD_PROBE; i++)
		p[i] = (struct pollfd){ .fd = i };
	CHECK(poll(p, FD_PROBE, 0) >= 0);
	for (int i = 0; i < FD_PROBE; i++)
		n += !(p[i].revents & POLLNVAL);
	if (also_proc)
		CHECK(list_fds() == n + 2); /* the listing has . and .. */
	return n;
}

/* Memfd slot i of this input is a fresh, zeroed guest memory of the size
 * the byte b says: (b & 15) + 1 pages, less 100 bytes with bit 4. Nothing
 * maps it but the harness (the device of the last input was freed). */
static void use_memfd(int i, uint8_t b)
{
	unsigned int k = b & (N_SIZES - 1);
	size_t want = (size_t)((b & 15) + 1) * PAGE - (b & 16 ? 100 : 0);

	if (!sized[i][k].map) {
		int fd = memfd_create("fuzz_vhost_sock", MFD_CLOEXEC);

		CHECK(fd >= 0);
		CHECK(ftruncate(fd, (off_t)want) == 0);
		sized[i][k].map = raw_mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		CHECK(sized[i][k].map != MAP_FAILED);
		sized[i][k].fd = fd;
	}
	pool[K_MEMFD0 + i] = sized[i][k].fd;
	hmap[i] = sized[i][k].map;
	fsize[i] = want;
	memset(hmap[i], 0, want);
}

static void setup(void)
{
	int p[2], s[2];

	for (int i = 0; i < N_MEMFD; i++)
		use_memfd(i, 15);
	pool[K_EVENTFD] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pool[K_DEVNULL] = open("/dev/null", O_RDWR | O_CLOEXEC);
	CHECK(pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0);
	pool[K_PIPE_R] = p[0];
	pool[K_PIPE_W] = p[1];
	CHECK(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, s) == 0);
	pool[K_SOCKET] = s[0];
	close(s[1]);
	for (int i = 0; i < N_KINDS; i++)
		CHECK(pool[i] >= 0);
	proc_fd_dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(proc_fd_dir >= 0);
	trace = getenv("FUZZ_TRACE") != NULL;
	ready = true;
}

struct input {
	const uint8_t *p;
	size_t left;
};

static uint8_t take8(struct input *in)
{
	if (!in->left)
		return 0;
	in->left--;
	return *in->p++;
}

static uint16_t take16(struct input *in)
{
	uint16_t lo = take8(in);

	return (uint16_t)(lo | take8(in) << 8);
}

static uint32_t take32(struct input *in)
{
	uint32_t lo = take16(in);

	return lo | (uint32_t)take16(in) << 16;
}

static size_t take(struct input *in, void *out, size_t n)
{
	if (n > in->left)
		n = in->left;
	memcpy(out, in->p, n);
	in->p += n;
	in->left -= n;
	return n;
}

/* One frontend connection: the device end (non-blocking, as the port
 * thread sets it) and the VMM's, and the bytes sent but not yet read. */
struct conn {
	struct vhu_dev *dev;
	int back, front;
	uint8_t stream[STREAM_MAX];
	size_t pending;
	bool shut;
};

static void conn_open(struct conn *c)
{
	int s[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) == 0);
	c->back = s[0];
	c->front = s[1];
	CHECK(fcntl(c->back, F_SETFL, fcntl(c->back, F_GETFL) | O_NONBLOCK) == 0);
	c->pending = 0;
	c->shut = false;
}

static void conn_close(struct conn *c)
{
	close(c->back);
	close(c->front);
}

/* Reads what the device left unread (after a failed read the model does
 * not know how much that is), closing any fds that come with it. */
static void drain(struct conn *c)
{
	for (;;) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * MAX_SEND_FDS)];
			struct cmsghdr align;
		} ctl;
		uint8_t junk[STREAM_MAX];
		struct iovec iov = { .iov_base = junk, .iov_len = sizeof(junk) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
				     .msg_controllen = sizeof(ctl.buf) };
		ssize_t n = recvmsg(c->back, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		struct cmsghdr *cm;

		if (n < 0) {
			CHECK(errno == EAGAIN);
			break;
		}
		CHECK(n > 0 && (size_t)n <= c->pending);
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (size_t k = 0; k < nfd; k++) {
				int f;

				memcpy(&f, CMSG_DATA(cm) + k * sizeof(int), sizeof(f));
				close(f);
			}
		}
	}
	c->pending = 0;
}

/* The frontend left (or was sent away): the port thread resets the device
 * and the VMM connects again. A new connection is the old pair with what
 * the device did not read drained (socket pairs are costly here, and the
 * device cannot tell). */
static void reconnect(struct conn *c)
{
	vhu_dev_reset(c->dev);
	drain(c);
}

/* How many pending bytes make up the next message as vhu_read_msg reads
 * it: the header alone when it is refused as such, else header and
 * payload; 0 while incomplete. */
static size_t next_msg_len(const struct conn *c)
{
	struct vhu_msg_hdr h;

	if (c->pending < VHU_HDR_SIZE)
		return 0;
	memcpy(&h, c->stream, sizeof(h));
	if ((h.flags & VHU_FLAG_VERSION_MASK) != VHU_FLAG_VERSION || (h.flags & VHU_FLAG_REPLY) ||
	    h.size > VHU_PAYLOAD_MAX)
		return VHU_HDR_SIZE;
	return c->pending >= VHU_HDR_SIZE + h.size ? VHU_HDR_SIZE + h.size : 0;
}

static void consume(struct conn *c, size_t n)
{
	memmove(c->stream, c->stream + n, c->pending - n);
	c->pending -= n;
}

static bool has_reply(uint32_t req)
{
	return req == VHU_GET_FEATURES || req == VHU_GET_PROTOCOL_FEATURES ||
	       req == VHU_GET_QUEUE_NUM || req == VHU_GET_VRING_BASE;
}

static bool in_maps(const struct vhu_dev *dev, const uint8_t *p, uint64_t len)
{
	for (int i = 0; i < VIRTQ_MEM_MAX_REGIONS; i++) {
		const uint8_t *b = dev->maps[i].base;

		if (b && p >= b && len <= dev->maps[i].len &&
		    p - b <= (ptrdiff_t)(dev->maps[i].len - len))
			return true;
	}
	return false;
}

static void check_dev(struct vhu_dev *dev)
{
	CHECK(dev->mem.n <= VIRTQ_MEM_MAX_REGIONS);
	for (uint32_t i = 0; i < dev->mem.n; i++)
		CHECK(in_maps(dev, dev->mem.r[i].host, dev->mem.r[i].size));
	for (unsigned int i = 0; i < vhu_ring_count(dev); i++) {
		const struct vhu_ring *r = &dev->rings[i];
		const struct virtq *vq = &r->vq;

		if (!vhu_ring_ready(dev, i))
			continue;
		CHECK(vq->num == r->num && vq->mem == &dev->mem);
		CHECK((void *)vq->desc ==
		      virtq_mem_uva(&dev->mem, r->desc_uva, virtq_desc_size(vq->num)));
		CHECK((void *)vq->avail ==
		      virtq_mem_uva(&dev->mem, r->avail_uva, virtq_avail_size(vq->num)));
		CHECK((void *)vq->used ==
		      virtq_mem_uva(&dev->mem, r->used_uva, virtq_used_size(vq->num)));
		CHECK(r->kick_fd >= 0);
	}
}

/* The reply on the frontend's side: exactly the one the device said it
 * sends, or nothing. */
static void check_reply_on_wire(struct conn *c, const struct vhu_msg *reply, bool sent)
{
	uint8_t buf[VHU_HDR_SIZE + VHU_PAYLOAD_MAX + 1];
	ssize_t n = recv(c->front, buf, sizeof(buf), MSG_DONTWAIT);

	if (!sent) {
		CHECK(n < 0 && errno == EAGAIN);
		return;
	}
	CHECK(n == (ssize_t)(VHU_HDR_SIZE + reply->hdr.size));
	CHECK(!memcmp(buf, &reply->hdr, VHU_HDR_SIZE));
	CHECK(!memcmp(buf + VHU_HDR_SIZE, &reply->payload, reply->hdr.size));
}

/* The device state a refused message must leave alone. */
static bool same_state(const struct vhu_dev *a, const struct vhu_dev *b)
{
	return !memcmp(a, b, offsetof(struct vhu_dev, stats));
}

/* The port thread's turn: every complete message read, applied, answered;
 * -EAGAIN when nothing is pending. */
static void serve(struct conn *c)
{
	static struct vhu_dev before;
	size_t len;

	while ((len = next_msg_len(c))) {
		struct vhu_msg msg, reply;
		struct vhu_result res = { 0 };
		struct vhu_msg_hdr h;
		int r = vhu_read_msg(c->back, &msg);

		memcpy(&h, c->stream, sizeof(h));
		if (trace)
			fprintf(stderr, "  read %s (%u) size %u: %d, %u fds\n",
				vhu_request_name(h.request), h.request, h.size, r, r > 0 ? msg.n_fds : 0);
		CHECK(r != 0 && r != -EAGAIN);
		if (r < 0) {
			/* A broken header, or truncated fds: unreadable, the
			 * port disconnects. */
			CHECK(r == -EBADMSG || r == -EMSGSIZE);
			CHECK(len == VHU_HDR_SIZE || r == -EMSGSIZE);
			reconnect(c);
			return;
		}
		CHECK(!memcmp(&msg.hdr, &h, sizeof(h)));
		CHECK(!memcmp(&msg.payload, c->stream + VHU_HDR_SIZE, h.size));
		CHECK(msg.n_fds <= VHU_MAX_FDS);
		consume(c, len);
		before = *c->dev;
		guarding = true;
		r = vhu_dispatch(c->dev, &msg, &reply, &res);
		guarding = false;
		if (trace)
			fprintf(stderr, "  dispatch -> %d%s%s%s%s\n", r, res.why ? ": " : "",
				res.why ? res.why : "", res.reply ? " reply" : "",
				res.disconnect ? " disconnect" : "");
		CHECK(msg.n_fds == 0 && r <= 0);
		CHECK(!(res.reply && res.disconnect));
		if (r < 0) {
			CHECK(same_state(&before, c->dev));
			if (!(h.flags & VHU_FLAG_NEED_REPLY))
				CHECK(res.disconnect);
		}
		if (r == 0 && (has_reply(h.request) || (h.flags & VHU_FLAG_NEED_REPLY)))
			CHECK(res.reply);
		if (r == 0 && !has_reply(h.request) && !(h.flags & VHU_FLAG_NEED_REPLY))
			CHECK(!res.reply);
		if (res.reply) {
			CHECK(reply.hdr.request == h.request);
			CHECK(reply.hdr.flags == (VHU_FLAG_VERSION | VHU_FLAG_REPLY));
			CHECK(reply.hdr.size == 8);
			CHECK(r == 0 || reply.payload.u64 != 0);
			CHECK(vhu_send_reply(c->back, &reply) == 0);
		}
		check_reply_on_wire(c, &reply, res.reply);
		if (r == 0 && h.request == VHU_SET_MEM_TABLE)
			fence_regions(c->dev);
		check_dev(c->dev);
		if (res.disconnect) {
			reconnect(c);
			return;
		}
	}
	if (!c->pending) {
		struct vhu_msg msg;

		CHECK(vhu_read_msg(c->back, &msg) == -EAGAIN);
	}
}

/* Sends bytes [0, len) with n_fds fds (pool kinds) as the send spec in
 * the input says, serving after every chunk. */
static void send_msg(struct conn *c, struct input *in, const uint8_t *bytes, size_t len,
		     const uint8_t *kinds, unsigned int n_fds)
{
	uint8_t spec = take8(in);
	unsigned int chunks = 1 + (spec & 3), fd_chunk = spec & 4 ? chunks - 1 : 0;
	size_t cuts[5] = { 0 }, at = 0;
	int fds[MAX_SEND_FDS];
	unsigned int total = 0;

	for (unsigned int i = 0; i < n_fds && total < MAX_SEND_FDS; i++)
		fds[total++] = pool[kinds[i] % N_KINDS];
	if (spec & 8)
		for (unsigned int i = 0; i < CTRUNC_FDS && total < MAX_SEND_FDS; i++)
			fds[total++] = pool[K_EVENTFD];
	/* Cut points, ascending; a chunk may come out empty (then skipped). */
	for (unsigned int i = 1; i < chunks; i++) {
		size_t cut = len ? take8(in) % (len + 1) : 0;

		cuts[i] = cut < cuts[i - 1] ? cuts[i - 1] : cut;
	}
	cuts[chunks] = len;
	/* The stream is served after every chunk: never more than a message
	 * and this one pending. */
	CHECK(c->pending + len <= STREAM_MAX);
	for (unsigned int i = 0; i < chunks; i++) {
		size_t n = cuts[i + 1] - at;
		union {
			char buf[CMSG_SPACE(sizeof(int) * MAX_SEND_FDS)];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = { .iov_base = (void *)(bytes + at), .iov_len = n };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t sent;

		if (!n)
			continue;
		if (i == fd_chunk && total) {
			struct cmsghdr *cm;

			/* Only fds sent can leak (dispatch opens none of its
			 * own), so an input counts once it sends some. */
			if (base_fds < 0)
				base_fds = count_fds(false);
			memset(&ctl, 0, sizeof(ctl));
			mh.msg_control = ctl.buf;
			mh.msg_controllen = CMSG_SPACE(sizeof(int) * total);
			cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int) * total);
			memcpy(CMSG_DATA(cm), fds, sizeof(int) * total);
		}
		sent = sendmsg(c->front, &mh, MSG_NOSIGNAL);
		CHECK(sent == (ssize_t)n);
		memcpy(c->stream + c->pending, bytes + at, n);
		c->pending += n;
		at += n;
		serve(c);
	}
}

static void put_hdr(uint8_t *buf, uint32_t req, uint32_t flags, uint32_t size)
{
	struct vhu_msg_hdr h = { req, flags, size };

	memcpy(buf, &h, sizeof(h));
}

static void op_raw(struct conn *c, struct input *in)
{
	uint8_t buf[VHU_HDR_SIZE + 300], kinds[13];
	struct vhu_msg_hdr h = { 0 };
	size_t n;
	unsigned int n_fds;

	take(in, &h, sizeof(h));
	memcpy(buf, &h, sizeof(h));
	n = take(in, buf + VHU_HDR_SIZE, h.size < 300 ? h.size : 300);
	n_fds = take8(in) % 13;
	for (unsigned int i = 0; i < n_fds; i++)
		kinds[i] = take8(in);
	send_msg(c, in, buf, VHU_HDR_SIZE + n, kinds, n_fds);
}

static void op_mem(struct conn *c, struct input *in, uint8_t op)
{
	uint8_t buf[VHU_HDR_SIZE + VHU_PAYLOAD_MAX], kinds[VIRTQ_MEM_MAX_REGIONS + 1];
	struct vhu_memory m = { 0 };
	uint32_t sent_regions, n_fds;

	m.nregions = take8(in) % 10;
	sent_regions = m.nregions < VIRTQ_MEM_MAX_REGIONS ? m.nregions : VIRTQ_MEM_MAX_REGIONS;
	for (uint32_t i = 0; i < sent_regions; i++) {
		struct vhu_mem_region *r = &m.regions[i];

		kinds[i] = K_MEMFD0 + take8(in) % N_MEMFD;
		r->gpa = (uint64_t)take16(in) * PAGE;
		r->size = (uint64_t)take8(in) * PAGE;
		r->uva = (uint64_t)take16(in) * PAGE;
		r->mmap_offset = (uint64_t)take8(in) * PAGE;
	}
	n_fds = sent_regions;
	switch ((op >> 4) & 3) {
	case 1:
		if (n_fds)
			n_fds--;
		break;
	case 2:
		kinds[n_fds++] = K_EVENTFD;
		break;
	case 3:
		if (n_fds)
			kinds[0] = K_DEVNULL + take8(in) % 4;
		break;
	}
	put_hdr(buf, VHU_SET_MEM_TABLE, VHU_FLAG_VERSION | (op & VHU_FLAG_NEED_REPLY),
		VHU_MEMORY_HDR_SIZE + sent_regions * VHU_REGION_SIZE);
	memcpy(buf + VHU_HDR_SIZE, &m, VHU_MEMORY_HDR_SIZE + sent_regions * VHU_REGION_SIZE);
	send_msg(c, in, buf, VHU_HDR_SIZE + VHU_MEMORY_HDR_SIZE + sent_regions * VHU_REGION_SIZE,
		 kinds, n_fds);
}

static size_t build(uint8_t *p, uint32_t req, const void *payload, uint32_t size)
{
	put_hdr(p, req, VHU_FLAG_VERSION, size);
	memcpy(p + VHU_HDR_SIZE, payload, size);
	return VHU_HDR_SIZE + size;
}

static void op_ring(struct conn *c, struct input *in, uint8_t op)
{
	uint8_t buf[6 * (VHU_HDR_SIZE + VHU_ADDR_SIZE)], kinds[1];
	uint32_t idx = take8(in) % VHU_MAX_RINGS;
	struct vhu_vring_state num = { idx, 1u << (take8(in) % 12) }, base = { idx, 0 };
	struct vhu_vring_addr addr = { .index = idx };
	uint64_t kick = idx | (op & 8 ? VHU_VRING_NOFD : 0), call = idx;
	struct vhu_vring_state en = { idx, 1 };
	size_t n = 0;

	addr.desc = take32(in);
	addr.avail = take32(in);
	addr.used = take32(in);
	base.num = take16(in);
	/* Size, addresses and base in one write sequence, then the kick with
	 * its fd, then the call fd and the enable. */
	n += build(buf + n, VHU_SET_VRING_NUM, &num, sizeof(num));
	n += build(buf + n, VHU_SET_VRING_ADDR, &addr, sizeof(addr));
	n += build(buf + n, VHU_SET_VRING_BASE, &base, sizeof(base));
	send_msg(c, in, buf, n, NULL, 0);
	kinds[0] = op & 16 ? K_PIPE_R : K_EVENTFD;
	n = build(buf, VHU_SET_VRING_KICK, &kick, 8);
	send_msg(c, in, buf, n, kinds, op & 8 ? 0 : 1);
	if (op & 32) {
		n = build(buf, VHU_SET_VRING_CALL, &call, 8);
		send_msg(c, in, buf, n, (const uint8_t[]){ K_EVENTFD }, 1);
	}
	if (op & 64) {
		n = build(buf, VHU_SET_VRING_ENABLE, &en, sizeof(en));
		send_msg(c, in, buf, n, NULL, 0);
	}
}

/* The guest posts a chain: descriptors written at head.., the head put in
 * the avail ring, avail->idx moved on (release: the data path acquires). */
static void op_post(struct conn *c, struct input *in, uint8_t op)
{
	unsigned int ring = take8(in) % VHU_MAX_RINGS, nd = 1 + ((op >> 3) & 3);
	uint16_t head = take16(in);
	struct virtq *vq = vhu_ring_vq(c->dev, ring);
	struct vring_desc d[4];
	uint16_t idx;

	for (unsigned int j = 0; j < nd; j++) {
		d[j].addr = take32(in);
		d[j].len = take16(in);
		d[j].flags = (uint16_t)((j + 1 < nd ? VRING_DESC_F_NEXT : 0) |
					(take8(in) & 1 ? VRING_DESC_F_WRITE : 0));
	}
	if (!vq || !vhu_ring_ready(c->dev, ring))
		return;
	head %= vq->num;
	for (unsigned int j = 0; j < nd; j++) {
		d[j].next = (uint16_t)((head + j + 1) % vq->num);
		vq->desc[(head + j) % vq->num] = d[j];
	}
	idx = vq->avail->idx;
	vq->avail->ring[idx % vq->num] = head;
	__atomic_store_n(&vq->avail->idx, (uint16_t)(idx + 1), __ATOMIC_RELEASE);
}

static void op_run(struct conn *c, struct input *in)
{
	static uint8_t buf[65536], frame[FRAME_MAX];
	unsigned int ring = take8(in) % VHU_MAX_RINGS;
	size_t len = (size_t)take8(in) * 8;
	struct virtq *vq = vhu_ring_vq(c->dev, ring);
	int r;

	if (!vq || !vhu_ring_ready(c->dev, ring))
		return;
	if (ring & 1) {
		r = virtq_net_tx_read(vq, buf, sizeof(buf));
		CHECK(r == -EIO || r == -EMSGSIZE || r == -EINVAL || (r >= 0 && r <= (int)sizeof(buf)));
	} else {
		memset(frame, 0x5a, len);
		r = virtq_net_rx_write(vq, NULL, frame, len);
		CHECK(r == -EIO || r == -ENOBUFS || r == -EMSGSIZE || r >= 1);
	}
	if (trace)
		fprintf(stderr, "  ring %u: %s -> %d%s%s\n", ring, ring & 1 ? "tx_read" : "rx_write", r,
			vq->broken ? " broken: " : "", vq->broken ? vq->why : "");
	if (virtq_should_notify(vq))
		CHECK(virtq_notify(vq) == 0);
	/* A broken ring is a disconnect in production (port_vhost_report_broken). */
	if (vq->broken)
		reconnect(c);
}

static void op_poke(struct input *in)
{
	uint8_t buf[256];
	unsigned int k = take8(in) % N_MEMFD;
	size_t off = take16(in), len = take(in, buf, take8(in));

	if (off >= fsize[k])
		return;
	if (len > fsize[k] - off)
		len = fsize[k] - off;
	memcpy(hmap[k] + off, buf, len);
}

static void op_simple(struct conn *c, struct input *in, uint8_t op)
{
	uint8_t buf[VHU_HDR_SIZE + 8], payload[8];
	uint32_t req = take8(in) % VHU_REQUEST_MAX, size;

	take(in, payload, sizeof(payload));
	size = req == VHU_GET_FEATURES || req == VHU_SET_OWNER || req == VHU_RESET_OWNER ||
	       req == VHU_GET_PROTOCOL_FEATURES || req == VHU_GET_QUEUE_NUM ? 0 : 8;
	put_hdr(buf, req, VHU_FLAG_VERSION | (op & VHU_FLAG_NEED_REPLY), size);
	memcpy(buf + VHU_HDR_SIZE, payload, size);
	send_msg(c, in, buf, VHU_HDR_SIZE + size, NULL, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vhu_dev dev;
	static struct conn c;
	struct input in = { data, size };
	uint64_t features = VHU_FEATURES_DEFAULT;
	uint8_t set;
	bool full_count;

	if (!ready) {
		setup();
		conn_open(&c);
	}
	set = take8(&in);
	if (set & 4)
		features &= ~(1ull << VIRTIO_NET_F_MRG_RXBUF);
	if (set & 8)
		features &= ~(1ull << VIRTIO_RING_F_EVENT_IDX);
	if (set & 16)
		features &= ~(1ull << VHU_F_PROTOCOL_FEATURES);
	if (set & 32)
		features &= ~(1ull << VIRTIO_F_VERSION_1);
	for (int i = 0; i < N_MEMFD; i++)
		use_memfd(i, take8(&in));
	/* libFuzzer opens files of its own between inputs: count per input
	 * (after use_memfd, which may make one). */
	full_count = n_inputs++ % 64 == 0;
	base_fds = full_count ? count_fds(true) : -1;
	vhu_dev_init(&dev, features, 1 + (set & 3));
	c.dev = &dev;

	for (int n = 0; n < MAX_OPS && in.left; n++) {
		uint8_t op = take8(&in);

		if (trace)
			fprintf(stderr, "op %u flags 0x%x\n", op & 7, op & ~7u);
		switch (op & 7) {
		case OP_RAW:
			op_raw(&c, &in);
			break;
		case OP_MEM:
			op_mem(&c, &in, op);
			break;
		case OP_RING:
			op_ring(&c, &in, op);
			break;
		case OP_POST:
			op_post(&c, &in, op);
			break;
		case OP_RUN:
			op_run(&c, &in);
			break;
		case OP_POKE:
			op_poke(&in);
			break;
		case OP_SIMPLE:
			op_simple(&c, &in, op);
			break;
		default:
			reconnect(&c);
			break;
		}
	}
	/* A message still incomplete meets EOF: refused, nothing applied. */
	if (c.pending) {
		struct vhu_msg msg;
		int r;

		CHECK(shutdown(c.front, SHUT_WR) == 0);
		r = vhu_read_msg(c.back, &msg);
		if (trace)
			fprintf(stderr, "  EOF inside a message: %d\n", r);
		CHECK(r < 0 && r != -EAGAIN);
		/* This pair is done: the next input gets a new one. */
		conn_close(&c);
		conn_open(&c);
	}
	vhu_dev_free(&dev);
	for (int i = 0; i < MAX_GUARDED; i++)
		CHECK(!guarded[i].addr);
	if (base_fds >= 0)
		CHECK(count_fds(full_count) == base_fds);
	return 0;
}
