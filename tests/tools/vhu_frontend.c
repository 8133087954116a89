/*
 * vhu_frontend: a scriptable vhost-user frontend (the VMM's side) for
 * weftd's resilience tests. It connects to a backend's socket, negotiates,
 * gives it one memfd of "guest memory" with SET_MEM_TABLE, sets up one
 * queue pair's split rings inside it, and then either behaves (mode good)
 * or breaks one rule and checks that the backend reacts exactly as its
 * contract says (tun/vhost_user.h: a refused message with NEED_REPLY gets an
 * error reply; without it, or when the rings break a rule, the connection
 * is closed).
 *
 *   vhu_frontend [options] MODE SOCKET
 *   vhu_frontend -l                    list every mode and case
 *
 *   -m MAC   the VM's MAC                  (default 52:54:00:12:34:56)
 *   -r MAC   the router's MAC              (default 02:77:65:66:74:01)
 *   -4 IP    the VM's IPv4 address: ARP requests for the gateway
 *   -g IP    the gateway asked for         (default 169.254.1.1)
 *   -6 IP    the VM's IPv6 address: NS for the router's link-local address
 *   -n N     ARP and NS round trips of a working session (default 3)
 *   -k CASE  which case of a hostile mode  (default 0)
 *   -t SECS  hang guard on each expected event (default 60): the backend
 *            is never judged on how fast it is, only on what it does; a
 *            wait that runs out is reported as "hang: ..."
 *   -s SEED  seed of the random bytes of mode garbage (default 1)
 *   -p PID   the backend's pid: after the session its mappings and fds of
 *            our guest memory must be gone, and it must be alive
 *   -e       negotiate VIRTIO_RING_F_EVENT_IDX
 *   -L       no VHOST_USER_F_PROTOCOL_FEATURES (no REPLY_ACK: rings start
 *            with their kick fd, refusals cannot be acknowledged)
 *   -v       say every step on stderr
 *
 * Modes (every one starts with the full working setup, and every hostile
 * one first proves that the session works):
 *   good          ARP and NS round trips through TX and RX; GET_VRING_BASE
 *                 returns how far each ring got; no byte of guest memory
 *                 outside the RX buffers is written. The frontend closes.
 *   tx-drops      runt, oversized, empty and foreign frames on TX: dropped,
 *                 every chain returned, the session keeps working.
 *   restart       the rings stopped (GET_VRING_BASE; a stopped TX ring is not
 *                 consumed) and restarted, then RESET_OWNER and a new setup
 *                 on the same connection.
 *   remap         the memory table replaced 20 times under TX traffic.
 *   odd-fds       CASE gives a kick or call fd that is not an eventfd: refused,
 *                 closed, or accepted without the backend spinning (-p).
 *   bad-memtable  bad tables with NEED_REPLY (each must get an error reply
 *                 and leave the old table working), then CASE without
 *                 NEED_REPLY: the backend must close.
 *   oob-ring      the same for vring sizes, addresses and indices.
 *   garbage       the same for unknown requests, wrong sizes and fds; then
 *                 CASE: a message the backend cannot parse, or one it must
 *                 not wait on for long (cut short, replies never read).
 *   desc-loop, oob-desc, huge-avail, bad-chain
 *                 CASE puts one broken chain or index on TX or RX and kicks:
 *                 the worker finds the queue broken and the backend must
 *                 close.
 *   shrink        (not listed by -l) the memory file shrinks under a queued
 *                 frame: the backend must survive (tun/vhost_user.c calls
 *                 this out of reach; it faults).
 *
 * Exit status: 0 the backend did what its contract says; 1 it did not (the
 * last line on stderr says what it did instead); 2 usage; 3 a local error
 * (no socket to connect to, memfd or eventfd failures).
 *
 * The wire structs below are written from the vhost-user spec, not taken
 * from tun/vhost_user.h, so that a mistake there cannot hide here.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <linux/virtio_ring.h>
#include <net/ethernet.h>
#include <netinet/icmp6.h>
#include <netinet/if_ether.h>
#include <netinet/ip6.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

enum exit_code {
	EXIT_PASS = 0,
	EXIT_BACKEND = 1,
	EXIT_USAGE = 2,
	EXIT_LOCAL = 3,
};

/* --- vhost-user wire format (front-end message types, little-endian) ---- */

enum request {
	REQ_GET_FEATURES = 1,
	REQ_SET_FEATURES = 2,
	REQ_SET_OWNER = 3,
	REQ_SET_MEM_TABLE = 5,
	REQ_SET_LOG_BASE = 6,
	REQ_SET_VRING_NUM = 8,
	REQ_SET_VRING_ADDR = 9,
	REQ_SET_VRING_BASE = 10,
	REQ_GET_VRING_BASE = 11,
	REQ_SET_VRING_KICK = 12,
	REQ_SET_VRING_CALL = 13,
	REQ_GET_PROTOCOL_FEATURES = 15,
	REQ_SET_PROTOCOL_FEATURES = 16,
	REQ_GET_QUEUE_NUM = 17,
	REQ_SET_VRING_ENABLE = 18,
};

enum {
	HDR_VERSION = 0x1,
	HDR_VERSION_MASK = 0x3,
	HDR_REPLY = 0x4,
	HDR_NEED_REPLY = 0x8,
	PROTO_F_MQ = 0,
	PROTO_F_REPLY_ACK = 3,
	F_PROTOCOL_FEATURES = 30,
	VRING_NOFD = 0x100,
	MAX_REGIONS = 8,
	MAX_FDS = 8,
};

struct msg_hdr {
	uint32_t request;
	uint32_t flags;
	uint32_t size;
};

struct vring_state {
	uint32_t index;
	uint32_t num;
};

struct vring_addr {
	uint32_t index;
	uint32_t flags;
	uint64_t desc;
	uint64_t used;
	uint64_t avail;
	uint64_t log;
};

struct mem_region {
	uint64_t gpa;
	uint64_t size;
	uint64_t uva;
	uint64_t mmap_offset;
};

struct mem_table {
	uint32_t nregions;
	uint32_t padding;
	struct mem_region r[MAX_REGIONS];
};

_Static_assert(sizeof(struct msg_hdr) == 12, "header is 12 bytes");
_Static_assert(sizeof(struct vring_state) == 8, "vring state is 8 bytes");
_Static_assert(sizeof(struct vring_addr) == 40, "vring address is 40 bytes");
_Static_assert(sizeof(struct mem_region) == 32, "region is 32 bytes");
_Static_assert(sizeof(struct mem_table) == 8 + MAX_REGIONS * 32, "memory table is 264 bytes");
_Static_assert(sizeof(struct vring_desc) == 16, "descriptor is 16 bytes");
_Static_assert(sizeof(struct virtio_net_hdr_mrg_rxbuf) == 12, "virtio-net header is 12 bytes");
_Static_assert(sizeof(struct ether_arp) == 28, "ARP for Ethernet and IPv4 is 28 bytes");
_Static_assert(sizeof(struct nd_neighbor_solicit) == 24, "NS is 24 bytes");

/* --- guest memory layout ------------------------------------------------ */

/* One memfd, given to the backend as two regions that are far apart in
 * guest-physical space and adjacent in our address space, so that a backend
 * mixing up gpa and uva, or a buffer crossing a region edge, shows. Every
 * byte starts as FILL; the rings start zeroed. */
enum {
	RING_NUM = 256,
	R0_SIZE = 256 << 10,        /* the rings */
	R1_SIZE = 768 << 10,        /* the buffers */
	MEM_SIZE = R0_SIZE + R1_SIZE,
	RX_DESC = 0x0000,
	RX_AVAIL = 0x1000,
	RX_USED = 0x2000,
	TX_DESC = 0x3000,
	TX_AVAIL = 0x4000,
	TX_USED = 0x5000,
	RINGS_END = 0x6000,
	SLOTS = 64,                 /* buffers per direction */
	SLOT_STRIDE = 4096,
	BUF_LEN = 2048,             /* the rest of a slot is a guard */
	TX_SLOTS = R0_SIZE,         /* file offsets of the slot arrays */
	RX_SLOTS = R0_SIZE + SLOTS * SLOT_STRIDE,
	SLOTS_END = RX_SLOTS + SLOTS * SLOT_STRIDE,
	FILL = 0xa5,
	HDR_LEN = 12,               /* VERSION_1 is always negotiated */
	FRAME_MAX = 9216,
};
#define R0_GPA 0x100000ull
#define R1_GPA 0x40000000ull

_Static_assert(RING_NUM * 16 <= RX_AVAIL - RX_DESC, "descriptor table fits");
_Static_assert(6 + 8 * RING_NUM <= TX_DESC - RX_USED, "used ring fits");
_Static_assert(SLOTS_END <= MEM_SIZE, "slots fit in region 1");

struct ring {
	const char *name;
	uint32_t index;             /* 0: RX, 1: TX */
	uint32_t desc_off, avail_off, used_off;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t avail_idx;         /* what we published */
	uint16_t used_seen;         /* used entries consumed */
	uint16_t next_desc;         /* TX: descriptors are taken in turn */
	uint32_t made_available;    /* chains published, ever */
	int kick, call;
};

struct opts {
	const char *mode;
	const char *path;
	uint8_t vm_mac[6], router_mac[6];
	bool has_ip4, has_ip6;
	uint8_t vm_ip4[4], gw4[4];
	uint8_t vm_ip6[16];
	unsigned int count, kase;
	int timeout_ms;
	uint64_t seed;
	pid_t backend_pid;
	bool event_idx, legacy, verbose;
};

struct fe {
	const struct opts *o;
	int sock;
	int memfd;                  /* the guest memory's file */
	char memfd_name[64];
	bool shm;                   /* a file in /dev/shm rather than a memfd */
	uint8_t *mem;
	uint64_t features, protocol_features;
	bool ack;                   /* REPLY_ACK negotiated */
	struct ring rx, tx;
	bool rx_posted[SLOTS];
	uint8_t *tx_shadow;         /* what we wrote into TX slots */
	unsigned int arp_replies, na_replies, other_frames;
};

static char verdict[512];

static void vlog(const struct fe *fe, const char *fmt, ...)
{
	va_list ap;

	if (!fe->o->verbose)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "vhu_frontend: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* Puts context around the recorded reason. */
static void verdict_wrap(const char *before, const char *after)
{
	char buf[sizeof(verdict) * 2 + 256];

	snprintf(buf, sizeof(buf), "%s%s%s", before, verdict, after);
	snprintf(verdict, sizeof(verdict), "%.*s", (int)sizeof(verdict) - 1, buf);
}

/* Records the first reason the run fails and returns the exit code. */
static int failf(int code, const char *fmt, ...)
{
	va_list ap;

	if (!verdict[0]) {
		va_start(ap, fmt);
		vsnprintf(verdict, sizeof(verdict), fmt, ap);
		va_end(ap);
	}
	return code;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *req_name(uint32_t req)
{
	static const char *const names[] = {
		[REQ_GET_FEATURES] = "GET_FEATURES",
		[REQ_SET_FEATURES] = "SET_FEATURES",
		[REQ_SET_OWNER] = "SET_OWNER",
		[REQ_SET_MEM_TABLE] = "SET_MEM_TABLE",
		[REQ_SET_LOG_BASE] = "SET_LOG_BASE",
		[REQ_SET_VRING_NUM] = "SET_VRING_NUM",
		[REQ_SET_VRING_ADDR] = "SET_VRING_ADDR",
		[REQ_SET_VRING_BASE] = "SET_VRING_BASE",
		[REQ_GET_VRING_BASE] = "GET_VRING_BASE",
		[REQ_SET_VRING_KICK] = "SET_VRING_KICK",
		[REQ_SET_VRING_CALL] = "SET_VRING_CALL",
		[REQ_GET_PROTOCOL_FEATURES] = "GET_PROTOCOL_FEATURES",
		[REQ_SET_PROTOCOL_FEATURES] = "SET_PROTOCOL_FEATURES",
		[REQ_GET_QUEUE_NUM] = "GET_QUEUE_NUM",
		[REQ_SET_VRING_ENABLE] = "SET_VRING_ENABLE",
	};

	if (req < sizeof(names) / sizeof(names[0]) && names[req])
		return names[req];
	return "request";
}

/* --- guest memory addresses ---------------------------------------------- */

static uint64_t gpa_of(uint64_t off)
{
	return off < R0_SIZE ? R0_GPA + off : R1_GPA + (off - R0_SIZE);
}

static uint64_t uva_of(const struct fe *fe, uint64_t off)
{
	return (uint64_t)(uintptr_t)fe->mem + off;
}

static struct mem_table good_table(const struct fe *fe)
{
	struct mem_table t;

	memset(&t, 0, sizeof(t));
	t.nregions = 2;
	t.r[0] = (struct mem_region){ R0_GPA, R0_SIZE, uva_of(fe, 0), 0 };
	t.r[1] = (struct mem_region){ R1_GPA, R1_SIZE, uva_of(fe, R0_SIZE), R0_SIZE };
	return t;
}

static uint64_t slot_off(bool rx, unsigned int slot)
{
	return (rx ? RX_SLOTS : TX_SLOTS) + (uint64_t)slot * SLOT_STRIDE;
}

/* --- socket I/O ------------------------------------------------------------ */

static int connect_backend(struct fe *fe)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int64_t end = now_ms() + fe->o->timeout_ms;

	if (strlen(fe->o->path) >= sizeof(sa.sun_path))
		return failf(EXIT_USAGE, "socket path too long");
	strcpy(sa.sun_path, fe->o->path);
	/* The script may start us right after `port add`: wait a little for
	 * the listener instead of failing on the first ENOENT. */
	for (;;) {
		fe->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fe->sock < 0)
			return failf(EXIT_LOCAL, "socket: %s", strerror(errno));
		if (!connect(fe->sock, (struct sockaddr *)&sa, sizeof(sa)))
			return 0;
		int err = errno;

		close(fe->sock);
		fe->sock = -1;
		if ((err != ENOENT && err != ECONNREFUSED) || now_ms() >= end)
			return failf(EXIT_LOCAL, "connect %s: %s", fe->o->path, strerror(err));
		usleep(20000);
	}
}

/* Sends one message: header, size bytes of payload (which may be fewer
 * than hdr_size claims, for the truncation cases), fds. */
static int send_raw(struct fe *fe, uint32_t req, uint32_t flags, uint32_t hdr_size,
		    const void *payload, size_t size, const int *fds, unsigned int n_fds)
{
	struct msg_hdr h = { .request = req, .flags = flags, .size = hdr_size };
	union {
		char buf[CMSG_SPACE(sizeof(int) * 16)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov[2] = {
		{ .iov_base = &h, .iov_len = sizeof(h) },
		{ .iov_base = (void *)payload, .iov_len = size },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = size ? 2 : 1 };
	ssize_t n;

	if (n_fds > 16)
		return failf(EXIT_LOCAL, "too many fds for one message");
	if (n_fds) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * n_fds);
	}
	do
		n = sendmsg(fe->sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return failf(EXIT_BACKEND, "%s not sent: %s (the backend closed the connection?)",
			     req_name(req), strerror(errno));
	if ((size_t)n != sizeof(h) + size)
		return failf(EXIT_BACKEND, "%s sent short (%zd bytes)", req_name(req), n);
	return 0;
}

static int send_msg(struct fe *fe, uint32_t req, bool need_reply, const void *payload,
		    uint32_t size, const int *fds, unsigned int n_fds)
{
	return send_raw(fe, req, HDR_VERSION | (need_reply ? HDR_NEED_REPLY : 0), size, payload,
			size, fds, n_fds);
}

/* Reads len bytes before the deadline. 0, or 1 on EOF, or -errno. */
static int read_deadline(int fd, void *buf, size_t len, int64_t end)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left = end - now_ms();
		ssize_t n;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!pfd.revents)
			continue;
		n = read(fd, p, len);
		if (n == 0)
			return 1;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			if (errno == ECONNRESET)
				return 1;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads the reply to req into payload (at most cap bytes). */
static int read_reply(struct fe *fe, uint32_t req, void *payload, uint32_t cap, uint32_t *size)
{
	int64_t end = now_ms() + fe->o->timeout_ms;
	struct msg_hdr h;
	int r;

	r = read_deadline(fe->sock, &h, sizeof(h), end);
	if (r == 1)
		return failf(EXIT_BACKEND, "the backend closed the connection instead of answering %s",
			     req_name(req));
	if (r == -ETIMEDOUT)
		return failf(EXIT_BACKEND, "hang: no reply to %s after %d s", req_name(req),
			     fe->o->timeout_ms / 1000);
	if (r)
		return failf(EXIT_BACKEND, "reading the reply to %s: %s", req_name(req), strerror(-r));
	if ((h.flags & HDR_VERSION_MASK) != HDR_VERSION || !(h.flags & HDR_REPLY))
		return failf(EXIT_BACKEND, "reply to %s has flags %#x (want version 1 and REPLY)",
			     req_name(req), h.flags);
	if (h.request != req)
		return failf(EXIT_BACKEND, "reply to %s names request %u", req_name(req), h.request);
	if (h.size > cap)
		return failf(EXIT_BACKEND, "reply to %s has %u payload bytes, expected at most %u",
			     req_name(req), h.size, cap);
	r = read_deadline(fe->sock, payload, h.size, end);
	if (r)
		return failf(EXIT_BACKEND, "reply to %s cut short", req_name(req));
	*size = h.size;
	return 0;
}

static int get_u64(struct fe *fe, uint32_t req, uint64_t *v)
{
	uint32_t size;
	int r = send_msg(fe, req, false, NULL, 0, NULL, 0);

	if (!r)
		r = read_reply(fe, req, v, sizeof(*v), &size);
	if (!r && size != sizeof(*v))
		r = failf(EXIT_BACKEND, "reply to %s has %u bytes, expected 8", req_name(req), size);
	return r;
}

/* A request the backend must accept: acknowledged with 0 when REPLY_ACK
 * was negotiated (what QEMU does for every SET with it). */
static int request_ok(struct fe *fe, uint32_t req, const void *payload, uint32_t size,
		      const int *fds, unsigned int n_fds)
{
	uint64_t ack = 0;
	uint32_t got;
	int r = send_msg(fe, req, fe->ack, payload, size, fds, n_fds);

	if (r || !fe->ack)
		return r;
	r = read_reply(fe, req, &ack, sizeof(ack), &got);
	if (r)
		return r;
	if (got != sizeof(ack))
		return failf(EXIT_BACKEND, "ack of %s has %u bytes, expected 8", req_name(req), got);
	if (ack)
		return failf(EXIT_BACKEND, "the backend refused a valid %s (ack %llu)", req_name(req),
			     (unsigned long long)ack);
	return 0;
}

/* A request the backend must refuse, sent with NEED_REPLY: an error reply
 * (a non-zero u64) and the connection left open. Skipped without
 * REPLY_ACK. */
static int expect_refused(struct fe *fe, const char *what, uint32_t req, const void *payload,
			  uint32_t size, const int *fds, unsigned int n_fds)
{
	uint64_t ack = 0;
	uint32_t got;
	int r;

	if (!fe->ack)
		return 0;
	vlog(fe, "refused with NEED_REPLY? %s", what);
	r = send_msg(fe, req, true, payload, size, fds, n_fds);
	if (r)
		return r;
	r = read_reply(fe, req, &ack, sizeof(ack), &got);
	if (r) {
		/* Say which case it was, not only what happened. */
		char before[256];

		snprintf(before, sizeof(before), "%s: ", what);
		verdict_wrap(before, " (NEED_REPLY asks for an error reply)");
		return r;
	}
	if (got != sizeof(ack))
		return failf(EXIT_BACKEND, "%s: error reply has %u bytes, expected 8", what, got);
	if (!ack)
		return failf(EXIT_BACKEND, "the backend accepted %s (ack 0)", what);
	return 0;
}

/* The backend must close the connection (waiting up to the hang guard).
 * Bytes that come first (a reply nobody asked for) are reported and
 * skipped. */
static int expect_close(struct fe *fe, const char *after)
{
	int64_t start = now_ms(), end = start + fe->o->timeout_ms;
	size_t stray = 0;
	uint8_t buf[512];

	for (;;) {
		struct pollfd pfd = { .fd = fe->sock, .events = POLLIN | POLLRDHUP };
		int64_t left = end - now_ms();
		ssize_t n;

		if (left <= 0)
			return failf(EXIT_BACKEND,
				     "hang: the backend still had the connection open %d s after %s%s",
				     fe->o->timeout_ms / 1000, after, stray ? " (it sent a reply)" : "");
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		n = read(fe->sock, buf, sizeof(buf));
		if (n > 0) {
			stray += (size_t)n;
			vlog(fe, "%zd bytes before the close (a reply?)", n);
			continue;
		}
		if (n == 0 || errno == ECONNRESET) {
			vlog(fe, "closed by the backend %lld ms after %s", (long long)(now_ms() - start),
			     after);
			return 0;
		}
		if (errno != EINTR && errno != EAGAIN)
			return failf(EXIT_BACKEND, "reading the socket: %s", strerror(errno));
	}
}

/* The connection is still open and answers. */
static int expect_alive(struct fe *fe, const char *after)
{
	uint64_t f;
	int r = get_u64(fe, REQ_GET_FEATURES, &f);

	if (r) {
		char before[256];

		snprintf(before, sizeof(before), "after %s: ", after);
		verdict_wrap(before, "");
	}
	return r;
}

/* --- rings (the driver's side of virtio 1.1, 2.6) ------------------------ */

static void ring_layout(struct fe *fe, struct ring *r, uint32_t index)
{
	r->index = index;
	r->name = index ? "TX" : "RX";
	r->desc_off = index ? TX_DESC : RX_DESC;
	r->avail_off = index ? TX_AVAIL : RX_AVAIL;
	r->used_off = index ? TX_USED : RX_USED;
	r->desc = (struct vring_desc *)(fe->mem + r->desc_off);
	r->avail = (struct vring_avail *)(fe->mem + r->avail_off);
	r->used = (struct vring_used *)(fe->mem + r->used_off);
}

static void set_desc(struct ring *r, uint16_t i, uint64_t addr, uint32_t len, uint16_t flags,
		     uint16_t next)
{
	r->desc[i].addr = addr;
	r->desc[i].len = len;
	r->desc[i].flags = flags;
	r->desc[i].next = next;
}

/* Puts head in the next avail slot; publish makes it visible. */
static void add_avail(struct ring *r, uint16_t head)
{
	r->avail->ring[r->avail_idx % RING_NUM] = head;
	r->avail_idx++;
	r->made_available++;
}

static void publish(struct ring *r)
{
	__atomic_store_n(&r->avail->idx, r->avail_idx, __ATOMIC_RELEASE);
}

static int kick(struct fe *fe, struct ring *r)
{
	uint64_t one = 1;

	if (write(r->kick, &one, sizeof(one)) != sizeof(one))
		return failf(EXIT_LOCAL, "kick %s: %s", r->name, strerror(errno));
	return 0;
}

static uint16_t used_idx(const struct ring *r)
{
	return __atomic_load_n(&r->used->idx, __ATOMIC_ACQUIRE);
}

/* Posts RX slot s as a one-descriptor, device-writable chain. */
static void post_rx(struct fe *fe, unsigned int s)
{
	set_desc(&fe->rx, (uint16_t)s, gpa_of(slot_off(true, s)), BUF_LEN, VRING_DESC_F_WRITE, 0);
	fe->rx_posted[s] = true;
	add_avail(&fe->rx, (uint16_t)s);
}

/* Takes n consecutive TX descriptors; returns the first. */
static uint16_t tx_take(struct fe *fe, unsigned int n)
{
	uint16_t first = fe->tx.next_desc;

	fe->tx.next_desc = (uint16_t)((fe->tx.next_desc + n) % RING_NUM);
	return first;
}

/* Writes len bytes into TX slot s (and its shadow copy). */
static uint64_t tx_fill(struct fe *fe, unsigned int s, size_t at, const void *data, size_t len)
{
	uint64_t off = slot_off(false, s) + at;

	memcpy(fe->mem + off, data, len);
	memcpy(fe->tx_shadow + (off - TX_SLOTS), data, len);
	return gpa_of(off);
}

/* Queues one frame on TX as two descriptors, the virtio-net header and the
 * frame (as Linux does without ANY_LAYOUT), and kicks. */
static int send_frame(struct fe *fe, const void *frame, size_t len)
{
	static unsigned int slot;
	struct virtio_net_hdr_mrg_rxbuf h;
	uint16_t d = tx_take(fe, 2);
	unsigned int s = slot++ % SLOTS;
	uint64_t hdr_gpa, frame_gpa;

	if (len > BUF_LEN - 64)
		return failf(EXIT_LOCAL, "frame too long for a slot");
	memset(&h, 0, sizeof(h));
	hdr_gpa = tx_fill(fe, s, 0, &h, HDR_LEN);
	frame_gpa = tx_fill(fe, s, 64, frame, len);
	set_desc(&fe->tx, d, hdr_gpa, HDR_LEN, VRING_DESC_F_NEXT, (uint16_t)((d + 1) % RING_NUM));
	set_desc(&fe->tx, (uint16_t)((d + 1) % RING_NUM), frame_gpa, (uint32_t)len, 0, 0);
	add_avail(&fe->tx, d);
	publish(&fe->tx);
	return kick(fe, &fe->tx);
}

/* --- frames ----------------------------------------------------------------- */

static size_t build_arp(const struct fe *fe, uint8_t *f)
{
	struct ether_header eh;
	struct ether_arp a;

	memset(eh.ether_dhost, 0xff, 6);
	memcpy(eh.ether_shost, fe->o->vm_mac, 6);
	eh.ether_type = htons(ETHERTYPE_ARP);
	memset(&a, 0, sizeof(a));
	a.arp_hrd = htons(ARPHRD_ETHER);
	a.arp_pro = htons(ETHERTYPE_IP);
	a.arp_hln = 6;
	a.arp_pln = 4;
	a.arp_op = htons(ARPOP_REQUEST);
	memcpy(a.arp_sha, fe->o->vm_mac, 6);
	memcpy(a.arp_spa, fe->o->vm_ip4, 4);
	memcpy(a.arp_tpa, fe->o->gw4, 4);
	memcpy(f, &eh, sizeof(eh));
	memcpy(f + sizeof(eh), &a, sizeof(a));
	return sizeof(eh) + sizeof(a);
}

static void router_ll(const struct fe *fe, uint8_t ll[16])
{
	const uint8_t *m = fe->o->router_mac;

	memset(ll, 0, 16);
	ll[0] = 0xfe;
	ll[1] = 0x80;
	ll[8] = m[0] ^ 0x02;
	ll[9] = m[1];
	ll[10] = m[2];
	ll[11] = 0xff;
	ll[12] = 0xfe;
	ll[13] = m[3];
	ll[14] = m[4];
	ll[15] = m[5];
}

/* The ICMPv6 checksum (RFC 8200 8.1) of msg between src and dst. */
static uint16_t icmp6_csum(const uint8_t *src, const uint8_t *dst, const uint8_t *msg, size_t len)
{
	uint32_t sum = 0;
	size_t i;

	for (i = 0; i < 16; i += 2)
		sum += (uint32_t)(src[i] << 8 | src[i + 1]) + (uint32_t)(dst[i] << 8 | dst[i + 1]);
	sum += (uint32_t)len + IPPROTO_ICMPV6;
	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(msg[i] << 8 | msg[i + 1]);
	if (len & 1)
		sum += (uint32_t)msg[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static size_t build_ns(const struct fe *fe, uint8_t *f)
{
	struct ether_header eh;
	struct ip6_hdr ip;
	struct {
		struct nd_neighbor_solicit ns;
		uint8_t opt[8];
	} m;
	uint8_t target[16], dst[16] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };
	uint16_t c;

	router_ll(fe, target);
	memcpy(dst + 13, target + 13, 3);
	memcpy(eh.ether_dhost, (uint8_t[]){ 0x33, 0x33, 0xff, target[13], target[14], target[15] }, 6);
	memcpy(eh.ether_shost, fe->o->vm_mac, 6);
	eh.ether_type = htons(ETHERTYPE_IPV6);
	memset(&m, 0, sizeof(m));
	m.ns.nd_ns_type = ND_NEIGHBOR_SOLICIT;
	memcpy(&m.ns.nd_ns_target, target, 16);
	m.opt[0] = ND_OPT_SOURCE_LINKADDR;
	m.opt[1] = 1;
	memcpy(m.opt + 2, fe->o->vm_mac, 6);
	c = icmp6_csum(fe->o->vm_ip6, dst, (const uint8_t *)&m, sizeof(m));
	m.ns.nd_ns_cksum = htons(c);
	memset(&ip, 0, sizeof(ip));
	ip.ip6_flow = htonl(6u << 28);
	ip.ip6_plen = htons(sizeof(m));
	ip.ip6_nxt = IPPROTO_ICMPV6;
	ip.ip6_hlim = 255;
	memcpy(&ip.ip6_src, fe->o->vm_ip6, 16);
	memcpy(&ip.ip6_dst, dst, 16);
	memcpy(f, &eh, sizeof(eh));
	memcpy(f + sizeof(eh), &ip, sizeof(ip));
	memcpy(f + sizeof(eh) + sizeof(ip), &m, sizeof(m));
	return sizeof(eh) + sizeof(ip) + sizeof(m);
}

enum frame_kind { FRAME_OTHER, FRAME_ARP_REPLY, FRAME_NA };

/* What a frame from the backend is; a reply that is ours but wrong fails. */
static int classify(struct fe *fe, const uint8_t *f, size_t len, enum frame_kind *kind)
{
	struct ether_header eh;

	*kind = FRAME_OTHER;
	if (len < sizeof(eh))
		return failf(EXIT_BACKEND, "a %zu-byte frame on RX", len);
	memcpy(&eh, f, sizeof(eh));
	if (ntohs(eh.ether_type) == ETHERTYPE_ARP && len >= sizeof(eh) + sizeof(struct ether_arp)) {
		struct ether_arp a;

		memcpy(&a, f + sizeof(eh), sizeof(a));
		if (ntohs(a.arp_op) != ARPOP_REPLY)
			return 0;
		if (!fe->o->has_ip4 || memcmp(a.arp_spa, fe->o->gw4, 4))
			return 0;
		if (memcmp(eh.ether_dhost, fe->o->vm_mac, 6) ||
		    memcmp(eh.ether_shost, fe->o->router_mac, 6) ||
		    memcmp(a.arp_sha, fe->o->router_mac, 6) || memcmp(a.arp_tha, fe->o->vm_mac, 6) ||
		    memcmp(a.arp_tpa, fe->o->vm_ip4, 4))
			return failf(EXIT_BACKEND, "ARP reply for the gateway with wrong addresses");
		*kind = FRAME_ARP_REPLY;
		return 0;
	}
	if (ntohs(eh.ether_type) == ETHERTYPE_IPV6 &&
	    len >= sizeof(eh) + sizeof(struct ip6_hdr) + sizeof(struct nd_neighbor_advert)) {
		const uint8_t *ip = f + sizeof(eh), *icmp = ip + sizeof(struct ip6_hdr);
		size_t plen = (size_t)(ip[4] << 8 | ip[5]), i;
		struct nd_neighbor_advert na;
		uint8_t target[16];
		bool tlla = false;

		if (ip[6] != IPPROTO_ICMPV6 || icmp[0] != ND_NEIGHBOR_ADVERT)
			return 0;
		router_ll(fe, target);
		memcpy(&na, icmp, sizeof(na));
		if (memcmp(&na.nd_na_target, target, 16))
			return 0;
		if (plen != len - sizeof(eh) - sizeof(struct ip6_hdr))
			return failf(EXIT_BACKEND, "NA: payload length %zu in a %zu-byte frame", plen, len);
		if (icmp6_csum(ip + 8, ip + 24, icmp, plen) != 0)
			return failf(EXIT_BACKEND, "NA with a bad ICMPv6 checksum");
		if (ip[7] != 255 || memcmp(ip + 8, target, 16) || memcmp(ip + 24, fe->o->vm_ip6, 16))
			return failf(EXIT_BACKEND, "NA for the router: wrong hop limit or addresses");
		if (!(na.nd_na_flags_reserved & ND_NA_FLAG_ROUTER) ||
		    !(na.nd_na_flags_reserved & ND_NA_FLAG_SOLICITED))
			return failf(EXIT_BACKEND, "NA for the router without R and S");
		for (i = sizeof(na); i + 8 <= plen; i += (size_t)icmp[i + 1] * 8) {
			if (!icmp[i + 1])
				break;
			if (icmp[i] == ND_OPT_TARGET_LINKADDR && !memcmp(icmp + i + 2, fe->o->router_mac, 6))
				tlla = true;
		}
		if (!tlla || memcmp(eh.ether_shost, fe->o->router_mac, 6) ||
		    memcmp(eh.ether_dhost, fe->o->vm_mac, 6))
			return failf(EXIT_BACKEND, "NA for the router without the router's MAC");
		*kind = FRAME_NA;
	}
	return 0;
}

/* Takes every frame the backend put on RX since last time, checks the used
 * elements, and posts the buffers again when repost. */
static int rx_drain(struct fe *fe, bool repost)
{
	static uint8_t frame[FRAME_MAX];
	struct ring *r = &fe->rx;
	uint16_t idx = used_idx(r);

	while (r->used_seen != idx) {
		size_t flen = 0, left_bufs = 1, got = 0;
		enum frame_kind kind;
		int rc;

		if ((uint16_t)(idx - r->used_seen) > RING_NUM)
			return failf(EXIT_BACKEND, "RX used index moved by %u (ring of %u)",
				     (uint16_t)(idx - r->used_seen), RING_NUM);
		while (left_bufs) {
			struct vring_used_elem e;
			uint32_t id, len;
			const uint8_t *buf;

			if (r->used_seen == idx) {
				idx = used_idx(r);
				if (r->used_seen == idx)
					return failf(EXIT_BACKEND,
						     "RX frame announced %zu buffers, %zu published",
						     left_bufs + got, got);
			}
			e = r->used->ring[r->used_seen % RING_NUM];
			id = e.id;
			len = e.len;
			r->used_seen++;
			if (id >= SLOTS || !fe->rx_posted[id])
				return failf(EXIT_BACKEND, "RX used element names buffer %u, not one we posted", id);
			if (len > BUF_LEN)
				return failf(EXIT_BACKEND, "RX used length %u in a %u-byte buffer", len, BUF_LEN);
			fe->rx_posted[id] = false;
			buf = fe->mem + slot_off(true, id);
			if (!got) {
				struct virtio_net_hdr_mrg_rxbuf h;

				if (len < HDR_LEN)
					return failf(EXIT_BACKEND, "RX used length %u, shorter than the header", len);
				memcpy(&h, buf, sizeof(h));
				left_bufs = (fe->features & (1ull << VIRTIO_NET_F_MRG_RXBUF)) ? h.num_buffers : 1;
				if (!left_bufs)
					return failf(EXIT_BACKEND, "RX header with num_buffers 0");
				buf += HDR_LEN;
				len -= HDR_LEN;
			}
			if (flen + len > sizeof(frame))
				return failf(EXIT_BACKEND, "RX frame over %zu bytes", sizeof(frame));
			memcpy(frame + flen, buf, len);
			flen += len;
			got++;
			left_bufs--;
			if (repost)
				post_rx(fe, id);
		}
		rc = classify(fe, frame, flen, &kind);
		if (rc)
			return rc;
		fe->arp_replies += kind == FRAME_ARP_REPLY;
		fe->na_replies += kind == FRAME_NA;
		fe->other_frames += kind == FRAME_OTHER;
		vlog(fe, "RX frame of %zu bytes (%s)", flen,
		     kind == FRAME_ARP_REPLY ? "ARP reply" : kind == FRAME_NA ? "NA" : "other");
	}
	if (repost) {
		publish(r);
		return kick(fe, r);
	}
	return 0;
}

/* Waits until done() holds, draining RX as frames come; the socket must
 * stay open meanwhile. */
static int wait_until(struct fe *fe, bool (*done)(struct fe *fe, const void *arg), const void *arg,
		      bool repost, const char *what)
{
	int64_t end = now_ms() + fe->o->timeout_ms;

	for (;;) {
		struct pollfd p[3] = {
			{ .fd = fe->sock, .events = POLLIN | POLLRDHUP },
			{ .fd = fe->rx.call, .events = POLLIN },
			{ .fd = fe->tx.call, .events = POLLIN },
		};
		uint64_t v;
		int rc = rx_drain(fe, repost);

		if (rc)
			return rc;
		if (done(fe, arg))
			return 0;
		if (now_ms() >= end)
			return failf(EXIT_BACKEND, "hang: %s: nothing after %d s", what,
				     fe->o->timeout_ms / 1000);
		/* The call eventfds say when to look; a short timeout covers
		 * a backend that (rightly, with EVENT_IDX) does not call. */
		if (poll(p, 3, 10) > 0) {
			if (p[0].revents) {
				uint8_t b;

				if (recv(fe->sock, &b, 1, MSG_PEEK | MSG_DONTWAIT) <= 0)
					return failf(EXIT_BACKEND, "the backend closed the connection while "
								   "we waited for %s", what);
				return failf(EXIT_BACKEND, "unexpected message from the backend while "
							   "we waited for %s", what);
			}
			if (p[1].revents && read(fe->rx.call, &v, sizeof(v)) < 0)
				return failf(EXIT_LOCAL, "reading the RX call eventfd");
			if (p[2].revents && read(fe->tx.call, &v, sizeof(v)) < 0)
				return failf(EXIT_LOCAL, "reading the TX call eventfd");
		}
	}
}

static bool arp_done(struct fe *fe, const void *arg)
{
	return fe->arp_replies >= *(const unsigned int *)arg;
}

static bool na_done(struct fe *fe, const void *arg)
{
	return fe->na_replies >= *(const unsigned int *)arg;
}

static bool tx_returned(struct fe *fe, const void *arg)
{
	return used_idx(&fe->tx) == fe->tx.avail_idx;
}

static bool any_frame(struct fe *fe, const void *arg)
{
	return fe->arp_replies + fe->na_replies + fe->other_frames >= *(const unsigned int *)arg;
}

/* Checks the used elements of TX: every chain we queued, by its head. */
static int tx_check_used(struct fe *fe)
{
	struct ring *r = &fe->tx;
	uint16_t idx = used_idx(r);

	if ((uint16_t)(r->avail_idx - idx) > RING_NUM)
		return failf(EXIT_BACKEND, "TX used index %u is past the avail index %u", idx,
			     r->avail_idx);
	for (; r->used_seen != idx; r->used_seen++) {
		struct vring_used_elem e = r->used->ring[r->used_seen % RING_NUM];

		if (e.id >= RING_NUM)
			return failf(EXIT_BACKEND, "TX used element names descriptor %u", e.id);
	}
	return 0;
}

/* One ARP and/or one NS round trip, each answered before the next. */
static int round_trips(struct fe *fe, unsigned int n)
{
	uint8_t f[128];
	unsigned int i, want;
	int rc = 0;

	for (i = 0; i < n && !rc; i++) {
		if (fe->o->has_ip4) {
			want = fe->arp_replies + 1;
			rc = send_frame(fe, f, build_arp(fe, f));
			if (!rc)
				rc = wait_until(fe, arp_done, &want, true, "the ARP reply for the gateway");
		}
		if (!rc && fe->o->has_ip6) {
			want = fe->na_replies + 1;
			rc = send_frame(fe, f, build_ns(fe, f));
			if (!rc)
				rc = wait_until(fe, na_done, &want, true, "the NA for the router");
		}
	}
	if (!rc)
		rc = wait_until(fe, tx_returned, NULL, true, "TX chains back in the used ring");
	if (!rc)
		rc = tx_check_used(fe);
	return rc;
}

/* A request that the backend answers through RX, for the data-path cases:
 * ARP when we have IPv4, else NS. */
static int provoke_rx(struct fe *fe)
{
	uint8_t f[128];

	return send_frame(fe, f, fe->o->has_ip4 ? build_arp(fe, f) : build_ns(fe, f));
}

/* --- the session ------------------------------------------------------------ */

static int negotiate(struct fe *fe)
{
	uint64_t offered, proto = 0, want;
	int rc;

	rc = get_u64(fe, REQ_GET_FEATURES, &offered);
	if (rc)
		return rc;
	vlog(fe, "features offered %#llx", (unsigned long long)offered);
	if (!(offered & (1ull << VIRTIO_F_VERSION_1)))
		return failf(EXIT_BACKEND, "the backend does not offer VIRTIO_F_VERSION_1");
	if (fe->o->legacy)
		offered &= ~(1ull << F_PROTOCOL_FEATURES);
	if (offered & (1ull << F_PROTOCOL_FEATURES)) {
		rc = get_u64(fe, REQ_GET_PROTOCOL_FEATURES, &proto);
		if (rc)
			return rc;
		fe->protocol_features = proto & (1ull << PROTO_F_REPLY_ACK | 1ull << PROTO_F_MQ);
		rc = send_msg(fe, REQ_SET_PROTOCOL_FEATURES, false, &fe->protocol_features, 8, NULL, 0);
		if (rc)
			return rc;
		fe->ack = fe->protocol_features & (1ull << PROTO_F_REPLY_ACK);
		if (fe->protocol_features & (1ull << PROTO_F_MQ)) {
			uint64_t queues;

			rc = get_u64(fe, REQ_GET_QUEUE_NUM, &queues);
			if (rc)
				return rc;
			if (queues < 1)
				return failf(EXIT_BACKEND, "GET_QUEUE_NUM says %llu", (unsigned long long)queues);
		}
	}
	rc = request_ok(fe, REQ_SET_OWNER, NULL, 0, NULL, 0);
	if (rc)
		return rc;
	/* No offloads: the backend must then send plain frames. */
	want = 1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_NET_F_MRG_RXBUF |
	       1ull << F_PROTOCOL_FEATURES;
	if (fe->o->event_idx)
		want |= 1ull << VIRTIO_RING_F_EVENT_IDX;
	fe->features = want & offered;
	return request_ok(fe, REQ_SET_FEATURES, &fe->features, 8, NULL, 0);
}

static int set_mem_table(struct fe *fe, const struct mem_table *t, unsigned int n_fds)
{
	int fds[MAX_REGIONS] = { fe->memfd, fe->memfd, fe->memfd, fe->memfd,
				 fe->memfd, fe->memfd, fe->memfd, fe->memfd };

	return request_ok(fe, REQ_SET_MEM_TABLE, t, sizeof(*t), fds, n_fds);
}

static struct vring_addr ring_addr(const struct fe *fe, const struct ring *r)
{
	return (struct vring_addr){ .index = r->index,
				    .desc = uva_of(fe, r->desc_off),
				    .used = uva_of(fe, r->used_off),
				    .avail = uva_of(fe, r->avail_off) };
}

static int setup_ring(struct fe *fe, struct ring *r)
{
	struct vring_state num = { r->index, RING_NUM }, base = { r->index, 0 };
	struct vring_addr a = ring_addr(fe, r);
	uint64_t file = r->index;
	int rc;

	r->kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r->call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->kick < 0 || r->call < 0)
		return failf(EXIT_LOCAL, "eventfd: %s", strerror(errno));
	/* QEMU's order: size, base, addresses, call, kick, enable. */
	rc = request_ok(fe, REQ_SET_VRING_NUM, &num, sizeof(num), NULL, 0);
	if (!rc)
		rc = request_ok(fe, REQ_SET_VRING_BASE, &base, sizeof(base), NULL, 0);
	if (!rc)
		rc = request_ok(fe, REQ_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
	if (!rc)
		rc = request_ok(fe, REQ_SET_VRING_CALL, &file, 8, &r->call, 1);
	if (!rc)
		rc = request_ok(fe, REQ_SET_VRING_KICK, &file, 8, &r->kick, 1);
	if (!rc && (fe->features & (1ull << F_PROTOCOL_FEATURES))) {
		struct vring_state en = { r->index, 1 };

		rc = request_ok(fe, REQ_SET_VRING_ENABLE, &en, sizeof(en), NULL, 0);
	}
	return rc;
}

/* Negotiates, hands over memory and sets up RX and TX from scratch (empty
 * rings, new eventfds) with rx_bufs receive buffers posted. */
static int configure(struct fe *fe, unsigned int rx_bufs)
{
	struct ring *rings[2] = { &fe->rx, &fe->tx };
	struct mem_table t;
	unsigned int i;
	int rc;

	/* Its replies also say that the backend is done with what came
	 * before (a RESET_OWNER): only then are the old rings ours again. */
	rc = negotiate(fe);
	if (rc)
		return rc;
	for (i = 0; i < 2; i++) {
		if (rings[i]->kick >= 0)
			close(rings[i]->kick);
		if (rings[i]->call >= 0)
			close(rings[i]->call);
		*rings[i] = (struct ring){ .kick = -1, .call = -1 };
		ring_layout(fe, rings[i], i);
	}
	memset(fe->mem, 0, RINGS_END);
	memset(fe->rx_posted, 0, sizeof(fe->rx_posted));
	t = good_table(fe);
	rc = set_mem_table(fe, &t, 2);
	for (i = 0; i < rx_bufs && i < SLOTS; i++)
		post_rx(fe, i);
	publish(&fe->rx);
	if (!rc)
		rc = setup_ring(fe, &fe->rx);
	if (!rc)
		rc = setup_ring(fe, &fe->tx);
	if (!rc)
		rc = kick(fe, &fe->rx);
	if (!rc)
		vlog(fe, "session set up (features %#llx, protocol features %#llx)",
		     (unsigned long long)fe->features, (unsigned long long)fe->protocol_features);
	return rc;
}

static int setup(struct fe *fe, unsigned int rx_bufs)
{
	int rc = connect_backend(fe);

	return rc ? rc : configure(fe, rx_bufs);
}

/* Nothing outside the RX buffers and the rings may have changed. */
static int check_guest_memory(struct fe *fe)
{
	uint64_t off;

	for (off = RINGS_END; off < MEM_SIZE; off++) {
		bool rx_buf = off >= RX_SLOTS && off < SLOTS_END && (off - RX_SLOTS) % SLOT_STRIDE < BUF_LEN;
		uint8_t want;

		if (rx_buf)
			continue;
		if (off >= TX_SLOTS && off < RX_SLOTS)
			want = fe->tx_shadow[off - TX_SLOTS];
		else
			want = FILL;
		if (fe->mem[off] != want)
			return failf(EXIT_BACKEND,
				     "guest memory at offset %#llx (gpa %#llx) changed: %#x, was %#x",
				     (unsigned long long)off, (unsigned long long)gpa_of(off),
				     fe->mem[off], want);
	}
	return 0;
}

/* Whether pid maps our memfd or holds an fd of it. */
static bool holds_memory(const struct fe *fe, pid_t pid)
{
	char path[64], line[PATH_MAX + 256];
	struct dirent *e;
	bool held = false;
	FILE *f;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	while (f && !held && fgets(line, sizeof(line), f))
		held = strstr(line, fe->memfd_name) != NULL;
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	while (d && !held && (e = readdir(d))) {
		char link[PATH_MAX];
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(line, sizeof(line), "%s/%s", path, e->d_name);
		n = readlink(line, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		held = strstr(link, fe->memfd_name) != NULL;
	}
	if (d)
		closedir(d);
	return held;
}

/* With -p: the backend is alive and has let go of our memory (no mapping,
 * no fd of our memfd), waiting up to the hang guard. */
static int check_released(struct fe *fe)
{
	int64_t end = now_ms() + fe->o->timeout_ms;
	pid_t pid = fe->o->backend_pid;

	if (!pid)
		return 0;
	for (;;) {
		if (kill(pid, 0) < 0)
			return failf(EXIT_BACKEND, "the backend (pid %d) is gone", (int)pid);
		if (!holds_memory(fe, pid))
			return 0;
		if (now_ms() >= end)
			return failf(EXIT_BACKEND,
				     "hang: %d s after the session the backend still maps or holds "
				     "our guest memory (%s)",
				     fe->o->timeout_ms / 1000, fe->memfd_name);
		usleep(20000);
	}
}

/* --- modes ------------------------------------------------------------------- */

/* GET_VRING_BASE on both rings (the VM stops): the backend says how far
 * it got, which is what it consumed (RX: what it used, read once the ring
 * is stopped). */
static int stop_rings(struct fe *fe, uint16_t base[2])
{
	for (unsigned int i = 0; i < 2; i++) {
		struct ring *r = i ? &fe->tx : &fe->rx;
		struct vring_state q = { r->index, 0 }, s;
		uint32_t size;
		int rc;

		rc = send_msg(fe, REQ_GET_VRING_BASE, false, &q, sizeof(q), NULL, 0);
		if (!rc)
			rc = read_reply(fe, REQ_GET_VRING_BASE, &s, sizeof(s), &size);
		if (rc)
			return rc;
		base[i] = i ? r->avail_idx : used_idx(r);
		if (size != sizeof(s) || s.index != r->index || s.num != base[i])
			return failf(EXIT_BACKEND, "GET_VRING_BASE %s: ring %u at %u, expected %u",
				     r->name, s.index, s.num, base[i]);
	}
	return 0;
}

static int mode_good(struct fe *fe, unsigned int k)
{
	uint16_t base[2];
	int rc;

	rc = setup(fe, SLOTS);
	if (!rc)
		rc = round_trips(fe, fe->o->count);
	if (!rc)
		rc = stop_rings(fe, base);
	if (!rc)
		rc = check_guest_memory(fe);
	if (!rc)
		vlog(fe, "%u ARP replies, %u NAs, %u other frames", fe->arp_replies, fe->na_replies,
		     fe->other_frames);
	return rc;
}

/* Frames the backend must drop (and return) without giving up on us. */
static int mode_tx_drops(struct fe *fe, unsigned int k)
{
	uint8_t f[128];
	struct ring *t = &fe->tx;
	uint16_t d;
	size_t len;
	int rc;

	rc = setup(fe, SLOTS);
	if (!rc)
		rc = round_trips(fe, 1);
	if (rc)
		return rc;
	/* A runt: shorter than the virtio-net header. */
	d = tx_take(fe, 1);
	set_desc(t, d, tx_fill(fe, 0, 0, "\0\0\0\0", 4), 4, 0, 0);
	add_avail(t, d);
	/* Zero-length descriptors only. */
	d = tx_take(fe, 2);
	set_desc(t, d, gpa_of(slot_off(false, 1)), 0, VRING_DESC_F_NEXT, (uint16_t)((d + 1) % RING_NUM));
	set_desc(t, (uint16_t)((d + 1) % RING_NUM), gpa_of(slot_off(false, 1)), 0, 0, 0);
	add_avail(t, d);
	/* 40 buffers of 2 KiB: 80 KiB, over any frame the backend takes. */
	d = tx_take(fe, 40);
	for (unsigned int i = 0; i < 40; i++) {
		uint16_t di = (uint16_t)((d + i) % RING_NUM);

		set_desc(t, di, gpa_of(slot_off(false, 10 + i)), BUF_LEN,
			 i < 39 ? VRING_DESC_F_NEXT : 0, (uint16_t)((di + 1) % RING_NUM));
	}
	add_avail(t, d);
	publish(t);
	rc = kick(fe, t);
	/* An ARP from a foreign MAC, a truncated ARP, an unknown EtherType. */
	len = build_arp(fe, f);
	f[6] ^= 0x40;
	if (!rc)
		rc = send_frame(fe, f, len);
	len = build_arp(fe, f);
	if (!rc)
		rc = send_frame(fe, f, 20);
	f[12] = 0x88;
	f[13] = 0xb5;
	if (!rc)
		rc = send_frame(fe, f, len);
	if (!rc)
		rc = wait_until(fe, tx_returned, NULL, true, "every dropped TX chain back");
	if (!rc)
		rc = tx_check_used(fe);
	if (!rc)
		rc = round_trips(fe, fe->o->count);
	if (!rc)
		rc = expect_alive(fe, "the dropped frames");
	if (!rc)
		rc = check_guest_memory(fe);
	return rc;
}

/* The VM pauses and resumes (rings stopped, restarted with new kick fds),
 * then the VMM resets the device and starts over on the same connection. */
static int mode_restart(struct fe *fe, unsigned int k)
{
	uint16_t base[2];
	uint8_t f[128];
	int64_t end;
	int rc;

	rc = setup(fe, SLOTS);
	if (!rc)
		rc = round_trips(fe, 1);
	if (!rc)
		rc = stop_rings(fe, base);
	if (!rc)
		rc = send_frame(fe, f, build_arp(fe, f));
	/* A stopped ring is not looked at, kick or not. (A negative check
	 * needs a window; a slow backend can only make it pass.) */
	for (end = now_ms() + 300; !rc && now_ms() < end; usleep(10000))
		if (used_idx(&fe->tx) != base[1])
			rc = failf(EXIT_BACKEND, "TX chain consumed while the ring was stopped");
	for (unsigned int i = 0; i < 2 && !rc; i++) {
		struct ring *r = i ? &fe->tx : &fe->rx;
		struct vring_state b = { r->index, base[i] };
		uint64_t file = r->index;

		vlog(fe, "restarting %s at %u", r->name, base[i]);
		close(r->kick);
		r->kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (r->kick < 0)
			return failf(EXIT_LOCAL, "eventfd: %s", strerror(errno));
		rc = request_ok(fe, REQ_SET_VRING_BASE, &b, sizeof(b), NULL, 0);
		if (!rc)
			rc = request_ok(fe, REQ_SET_VRING_KICK, &file, 8, &r->kick, 1);
	}
	if (!rc)
		rc = kick(fe, &fe->tx);
	if (!rc)
		rc = round_trips(fe, 1);
	if (!rc) {
		vlog(fe, "RESET_OWNER, then everything again");
		rc = send_msg(fe, 4 /* RESET_OWNER */, false, NULL, 0, NULL, 0);
	}
	if (!rc)
		rc = configure(fe, SLOTS);
	if (!rc)
		rc = round_trips(fe, fe->o->count);
	if (!rc)
		rc = check_guest_memory(fe);
	return rc;
}

/* The memory table replaced (the same layout) while TX frames are in
 * flight, again and again: the backend must swap it under the workers
 * without losing a chain or a reply. */
static int mode_remap(struct fe *fe, unsigned int k)
{
	struct mem_table t = good_table(fe);
	uint8_t f[128];
	int rc;

	rc = setup(fe, SLOTS);
	for (unsigned int round = 0; round < 20 && !rc; round++) {
		unsigned int want = fe->arp_replies + 16;

		for (unsigned int i = 0; i < 16 && !rc; i++)
			rc = send_frame(fe, f, build_arp(fe, f));
		if (!rc)
			rc = set_mem_table(fe, &t, 2);
		if (!rc)
			rc = wait_until(fe, arp_done, &want, true, "ARP replies across a new memory table");
		if (!rc)
			rc = wait_until(fe, tx_returned, NULL, true, "TX chains across a new memory table");
	}
	if (!rc)
		rc = tx_check_used(fe);
	if (!rc)
		rc = check_guest_memory(fe);
	return rc;
}

static const char *const odd_fd_cases[] = {
	"TX kick fd: a pipe at EOF",
	"TX kick fd: a regular file",
	"RX call fd: a pipe nobody reads",
};

/* CPU time (ms) the process pid has used, all threads. */
static int64_t cpu_ms(pid_t pid)
{
	unsigned long long ut = 0, st = 0;
	char path[64], buf[1024], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	/* After "comm)": state, then fields 4..13, then utime and stime. */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (int64_t)((ut + st) * 1000 / (unsigned long long)sysconf(_SC_CLK_TCK));
}

/* Kick and call fds that are not eventfds. The backend may refuse them or
 * close; what it accepts must not make it spin (with -p: under half a
 * core over a second) nor stop the session. */
static int mode_odd_fds(struct fe *fe, unsigned int k)
{
	struct ring *r = k == 2 ? &fe->rx : &fe->tx;
	uint64_t file = r->index, ack = 0;
	int pipefd[2], odd, rc;
	uint32_t got;

	rc = setup(fe, SLOTS);
	if (!rc)
		rc = round_trips(fe, 1);
	if (rc)
		return rc;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return failf(EXIT_LOCAL, "pipe: %s", strerror(errno));
	odd = k == 2 ? pipefd[1] : pipefd[0];
	close(k == 2 ? pipefd[0] : pipefd[1]);
	if (k == 1) {
		close(odd);
		odd = fe->memfd;
	}
	vlog(fe, "%s", odd_fd_cases[k]);
	rc = send_msg(fe, k == 2 ? REQ_SET_VRING_CALL : REQ_SET_VRING_KICK, fe->ack, &file, 8, &odd, 1);
	if (odd != fe->memfd)
		close(odd);
	if (!rc && fe->ack) {
		int64_t end = now_ms() + fe->o->timeout_ms;
		struct msg_hdr h;

		/* An error reply, or a close, ends the case. */
		rc = read_deadline(fe->sock, &h, sizeof(h), end);
		if (rc == 1)
			return 0;
		if (!rc && h.size == 8)
			rc = read_deadline(fe->sock, &ack, sizeof(ack), end);
		if (rc == -ETIMEDOUT)
			return failf(EXIT_BACKEND, "hang: %s: no ack after %d s", odd_fd_cases[k],
				     fe->o->timeout_ms / 1000);
		if (rc)
			return failf(EXIT_BACKEND, "%s: no ack", odd_fd_cases[k]);
		got = h.size;
		if (got != 8 || h.request != (k == 2 ? REQ_SET_VRING_CALL : REQ_SET_VRING_KICK))
			return failf(EXIT_BACKEND, "%s: a malformed ack", odd_fd_cases[k]);
		if (ack) {
			vlog(fe, "refused");
			return expect_alive(fe, odd_fd_cases[k]);
		}
	}
	vlog(fe, "accepted");
	if (fe->o->backend_pid) {
		int64_t c0 = cpu_ms(fe->o->backend_pid), c1;

		/* A rate, not a deadline: a spinning backend uses a core
		 * whatever the machine's load (more load only lowers what it
		 * gets), an idle one uses next to nothing. */
		usleep(1000000);
		c1 = cpu_ms(fe->o->backend_pid);
		vlog(fe, "backend CPU: %lld ms in 1000 ms", (long long)(c1 - c0));
		if (c0 >= 0 && c1 - c0 > 500)
			return failf(EXIT_BACKEND, "%s accepted, and the backend burns %lld ms of CPU per second",
				     odd_fd_cases[k], (long long)(c1 - c0));
	}
	/* Closing once the fd turns out odd is as good as refusing it. */
	{
		struct pollfd pfd = { .fd = fe->sock, .events = POLLRDHUP };

		if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP))) {
			vlog(fe, "closed by the backend");
			return 0;
		}
	}
	return round_trips(fe, 1);
}

/* The VMM shrinks its memory file under a queued frame: the buffers'
 * region goes, the rings stay. The backend's next access to the frame
 * faults (SIGBUS on a shared mapping past the end of its file); weftd's
 * guard (tun/guestmem.c) must turn that into a dropped frontend: the
 * connection closed, the backend alive. Case 1 uses a file in /dev/shm,
 * which cannot be sealed, as QEMU's memory-backend-file does. */
static const char *const shrink_cases[] = {
	"an unsealed memfd truncated under a queued frame",
	"a /dev/shm file truncated under a queued frame",
};

static int mode_shrink(struct fe *fe, unsigned int k)
{
	uint8_t f[128];
	uint16_t d;
	size_t len;
	int rc;

	rc = setup(fe, SLOTS);
	if (!rc)
		rc = round_trips(fe, 1);
	if (rc)
		return rc;
	len = build_arp(fe, f);
	d = tx_take(fe, 1);
	set_desc(&fe->tx, d, tx_fill(fe, 63, 0, f, len), (uint32_t)len, 0, 0);
	add_avail(&fe->tx, d);
	if (ftruncate(fe->memfd, R0_SIZE) < 0)
		return failf(EXIT_LOCAL, "ftruncate: %s", strerror(errno));
	publish(&fe->tx);
	(void)k; /* the file's kind was chosen by make_memory */
	rc = kick(fe, &fe->tx);
	if (!rc)
		rc = expect_close(fe, "its memory file shrank under a queued frame");
	if (!rc && fe->o->backend_pid && kill(fe->o->backend_pid, 0) < 0)
		rc = failf(EXIT_BACKEND, "the backend died when the frame's memory went away");
	return rc;
}

static const char *const memtable_cases[] = {
	"two regions overlapping in guest-physical space",
	"two regions overlapping in frontend addresses",
	"a region whose guest-physical range wraps 2^64",
	"a region whose frontend address range wraps 2^64",
	"mmap_offset beyond the end of the file",
	"mmap_offset + size wrapping 2^64",
	"a region larger than its file",
	"an empty region",
	"nregions 9 (over the limit of 8)",
	"2 regions with 1 fd",
	"1 region with 2 fds",
	"a region whose fd is an eventfd, not a file",
	"nregions 2 in a payload that holds 1",
};
enum { MEMTABLE_CASES = sizeof(memtable_cases) / sizeof(memtable_cases[0]) };

/* Builds bad table k: the payload, its size and its fds. */
static void bad_table(struct fe *fe, unsigned int k, struct mem_table *t, uint32_t *size, int *fds,
		      unsigned int *n_fds, int evfd)
{
	*t = good_table(fe);
	*size = sizeof(*t);
	*n_fds = 2;
	for (unsigned int i = 0; i < MAX_REGIONS; i++)
		fds[i] = fe->memfd;
	switch (k) {
	case 0:
		t->r[1].gpa = R0_GPA + 4096;
		break;
	case 1:
		t->r[1].uva = uva_of(fe, 4096);
		break;
	case 2:
		t->r[0].gpa = UINT64_MAX - 4095;
		break;
	case 3:
		t->r[0].uva = UINT64_MAX - 4095;
		break;
	case 4:
		t->r[1].mmap_offset = MEM_SIZE;
		break;
	case 5:
		t->r[1].mmap_offset = UINT64_MAX - 4095;
		break;
	case 6:
		t->r[1].size = MEM_SIZE;
		break;
	case 7:
		t->r[1].size = 0;
		break;
	case 8:
		t->nregions = 9;
		*n_fds = 8;
		break;
	case 9:
		*n_fds = 1;
		break;
	case 10:
		t->nregions = 1;
		break;
	case 11:
		fds[1] = evfd;
		break;
	case 12:
		*size = 8 + sizeof(struct mem_region);
		*n_fds = 2;
		break;
	}
}

static int mode_bad_memtable(struct fe *fe, unsigned int k)
{
	struct mem_table t;
	int fds[MAX_REGIONS], evfd = eventfd(0, EFD_CLOEXEC), rc;
	unsigned int i, n;
	uint32_t size;

	if (evfd < 0)
		return failf(EXIT_LOCAL, "eventfd: %s", strerror(errno));
	rc = setup(fe, SLOTS);
	if (!rc)
		rc = round_trips(fe, 1);
	for (i = 0; i < MEMTABLE_CASES && !rc; i++) {
		bad_table(fe, i, &t, &size, fds, &n, evfd);
		rc = expect_refused(fe, memtable_cases[i], REQ_SET_MEM_TABLE, &t, size, fds, n);
	}
	/* A refused table changes nothing: the old one still carries frames. */
	if (!rc)
		rc = round_trips(fe, 1);
	if (!rc) {
		bad_table(fe, k, &t, &size, fds, &n, evfd);
		vlog(fe, "without NEED_REPLY: %s", memtable_cases[k]);
		rc = send_msg(fe, REQ_SET_MEM_TABLE, false, &t, size, fds, n);
	}
	if (!rc)
		rc = expect_close(fe, memtable_cases[k]);
	close(evfd);
	return rc;
}

static const char *const ring_cases[] = {
	"SET_VRING_ADDR: the descriptor table beyond guest memory",
	"SET_VRING_ADDR: the avail ring across the edge between two regions",
	"SET_VRING_ADDR: the used ring past the end of guest memory",
	"SET_VRING_ADDR: the used ring at a wrapping address",
	"SET_VRING_ADDR: guest-physical addresses where frontend addresses belong",
	"SET_VRING_ADDR: a misaligned descriptor table",
	"SET_VRING_ADDR: unknown flags",
	"SET_VRING_ADDR: ring index 16",
	"SET_VRING_NUM: 3 (not a power of two)",
	"SET_VRING_NUM: 0",
	"SET_VRING_NUM: 65536",
	"SET_VRING_NUM: ring index 0xffffffff",
	"SET_VRING_BASE: ring index 16",
	"SET_VRING_BASE: 0x10000 (beyond 16 bits)",
	"SET_VRING_ENABLE: 2",
	"SET_VRING_KICK: ring index 99 (no fd)",
	"SET_VRING_CALL: unknown bits (no fd)",
	"GET_VRING_BASE: ring index 99",
};
enum { RING_CASES = sizeof(ring_cases) / sizeof(ring_cases[0]) };

struct bad_msg {
	uint32_t req;
	uint32_t size;
	union {
		uint64_t u64;
		struct vring_state state;
		struct vring_addr addr;
	} p;
};

static struct bad_msg bad_ring_msg(struct fe *fe, unsigned int k)
{
	struct bad_msg m = { .req = REQ_SET_VRING_ADDR, .size = sizeof(struct vring_addr) };

	m.p.addr = ring_addr(fe, &fe->tx);
	switch (k) {
	case 0:
		m.p.addr.desc = uva_of(fe, MEM_SIZE + 0x100000);
		break;
	case 1:
		m.p.addr.avail = uva_of(fe, R0_SIZE - 8);
		break;
	case 2:
		m.p.addr.used = uva_of(fe, MEM_SIZE - 16);
		break;
	case 3:
		m.p.addr.used = UINT64_MAX - 7;
		break;
	case 4:
		m.p.addr.desc = gpa_of(TX_DESC);
		m.p.addr.avail = gpa_of(TX_AVAIL);
		m.p.addr.used = gpa_of(TX_USED);
		break;
	case 5:
		m.p.addr.desc += 8;
		break;
	case 6:
		m.p.addr.flags = 0x2;
		break;
	case 7:
		m.p.addr.index = 16;
		break;
	case 8:
	case 9:
	case 10:
	case 11:
		m.req = REQ_SET_VRING_NUM;
		m.size = sizeof(struct vring_state);
		m.p.state.index = k == 11 ? 0xffffffffu : 1;
		m.p.state.num = k == 8 ? 3 : k == 9 ? 0 : k == 10 ? 65536 : RING_NUM;
		break;
	case 12:
	case 13:
		m.req = REQ_SET_VRING_BASE;
		m.size = sizeof(struct vring_state);
		m.p.state.index = k == 12 ? 16 : 1;
		m.p.state.num = k == 12 ? 0 : 0x10000;
		break;
	case 14:
		m.req = REQ_SET_VRING_ENABLE;
		m.size = sizeof(struct vring_state);
		m.p.state = (struct vring_state){ 1, 2 };
		break;
	case 15:
		m.req = REQ_SET_VRING_KICK;
		m.size = 8;
		m.p.u64 = 99 | VRING_NOFD;
		break;
	case 16:
		m.req = REQ_SET_VRING_CALL;
		m.size = 8;
		m.p.u64 = 1 | VRING_NOFD | 0x10000;
		break;
	case 17:
		m.req = REQ_GET_VRING_BASE;
		m.size = sizeof(struct vring_state);
		m.p.state = (struct vring_state){ 99, 0 };
		break;
	}
	return m;
}

static int mode_oob_ring(struct fe *fe, unsigned int k)
{
	struct mem_table t;
	struct bad_msg m;
	unsigned int i;
	int rc;

	rc = setup(fe, SLOTS);
	if (!rc)
		rc = round_trips(fe, 1);
	/* A GET has no error reply (the answer is its value): the last case
	 * is for the final step only. */
	for (i = 0; i + 1 < RING_CASES && !rc; i++) {
		m = bad_ring_msg(fe, i);
		rc = expect_refused(fe, ring_cases[i], m.req, &m.p, m.size, NULL, 0);
	}
	if (!rc)
		rc = round_trips(fe, 1);
	/* A memory table without the rings' region is valid: the rings stop
	 * (nothing of them is touched), and come back with the region. */
	if (!rc) {
		t = good_table(fe);
		t.nregions = 1;
		t.r[0] = t.r[1];
		vlog(fe, "memory table without the rings' region");
		rc = set_mem_table(fe, &t, 1);
	}
	if (!rc)
		rc = provoke_rx(fe);
	if (!rc)
		rc = expect_alive(fe, "a memory table without the rings");
	if (!rc) {
		t = good_table(fe);
		rc = set_mem_table(fe, &t, 2);
	}
	if (!rc)
		rc = kick(fe, &fe->tx);
	if (!rc)
		rc = round_trips(fe, 1);
	if (!rc) {
		m = bad_ring_msg(fe, k);
		vlog(fe, "without NEED_REPLY: %s", ring_cases[k]);
		/* The GET case asks for a reply it cannot get. */
		rc = send_msg(fe, m.req, k == RING_CASES - 1, &m.p, m.size, NULL, 0);
	}
	if (!rc)
		rc = expect_close(fe, ring_cases[k]);
	return rc;
}

/* The loops are of empty descriptors, which add no buffer: only the loop
 * rule can stop them (case 4 has buffers, which the buffer cap may stop
 * first). */
static const char *const loop_cases[] = {
	"TX: a chain 0 -> 1 -> 0 of empty descriptors",
	"TX: an empty descriptor whose next is itself",
	"TX: next = ring size (out of range)",
	"RX: a chain 0 -> 1 -> 0 of empty descriptors",
	"TX: a chain 0 -> 1 -> 0 of 64-byte buffers",
};
static const char *const oob_desc_cases[] = {
	"TX: a buffer across the end of region 0",
	"TX: a buffer in the hole between the regions",
	"TX: a buffer at an address that wraps 2^64",
	"TX: a buffer of length 0xffffffff",
	"RX: a device-writable buffer in the hole between the regions",
	"RX: a device-writable buffer across the end of guest memory",
};
static const char *const avail_cases[] = {
	"TX: avail->idx ahead by ring size + 1",
	"TX: avail->idx ahead by 0x8000",
	"TX: avail->idx moved backwards",
	"TX: an avail entry >= ring size",
	"RX: avail->idx ahead by ring size + 1",
};
static const char *const chain_cases[] = {
	"TX: an INDIRECT descriptor (not negotiated)",
	"TX: a device-writable descriptor",
	"TX: a chain of 65 buffers",
	"RX: a device-readable descriptor",
	"RX: a buffer smaller than the virtio-net header",
};

/* The ring a data-path case breaks: its text starts with TX or RX. */
static bool case_on_rx(const char *text)
{
	return !strncmp(text, "RX", 2);
}

/* Writes the broken chain of case k of mode into r's descriptor table
 * (RX: descriptor 60; TX: the next free ones) and puts it in the avail
 * ring, unpublished. */
static void broken_chain(struct fe *fe, struct ring *r, const char *mode, unsigned int k)
{
	bool rx = r == &fe->rx;
	uint16_t flags = rx ? VRING_DESC_F_WRITE : 0;
	uint64_t buf = gpa_of(slot_off(rx, rx ? 60 : 0));
	uint16_t d = rx ? 60 : tx_take(fe, 66);
	uint16_t d1 = (uint16_t)((d + 1) % RING_NUM);

	if (!strcmp(mode, "desc-loop")) {
		uint32_t len = k == 2 || k == 4 ? 64 : 0;

		if (k == 1) {
			set_desc(r, d, buf, len, flags | VRING_DESC_F_NEXT, d);
		} else {
			set_desc(r, d, buf, len, flags | VRING_DESC_F_NEXT, k == 2 ? RING_NUM : d1);
			set_desc(r, d1, buf + 64, len, flags | VRING_DESC_F_NEXT, d);
		}
	} else if (!strcmp(mode, "oob-desc")) {
		static const uint64_t addr[] = { R0_GPA + R0_SIZE - 8, 0x200000, UINT64_MAX - 15,
						 R1_GPA, 0x200000, R1_GPA + R1_SIZE - 8 };
		set_desc(r, d, addr[k], k == 3 ? 0xffffffffu : 64, flags, 0);
	} else if (!strcmp(mode, "bad-chain")) {
		switch (k) {
		case 0:
			set_desc(r, d, buf, 16, VRING_DESC_F_INDIRECT, 0);
			break;
		case 1:
			set_desc(r, d, buf, HDR_LEN, VRING_DESC_F_NEXT, d1);
			set_desc(r, d1, buf + 64, 60, VRING_DESC_F_WRITE, 0);
			break;
		case 2:
			for (unsigned int i = 0; i < 65; i++) {
				uint16_t di = (uint16_t)((d + i) % RING_NUM);

				set_desc(r, di, buf + 16 * i, 16, i < 64 ? VRING_DESC_F_NEXT : 0,
					 (uint16_t)((di + 1) % RING_NUM));
			}
			break;
		case 3:
			set_desc(r, d, buf, BUF_LEN, 0, 0);
			break;
		case 4:
			set_desc(r, d, buf, 4, VRING_DESC_F_WRITE, 0);
			break;
		}
	} else {
		/* huge-avail: a sane chain, a broken index. */
		set_desc(r, d, buf, rx ? BUF_LEN : 64, flags, 0);
	}
	if (rx)
		fe->rx_posted[60] = true;
	add_avail(r, d);
}

static int mode_data_path(struct fe *fe, unsigned int k)
{
	const char *mode = fe->o->mode, *text;
	struct ring *r;
	unsigned int one = 1;
	int rc;

	if (!strcmp(mode, "desc-loop"))
		text = loop_cases[k];
	else if (!strcmp(mode, "oob-desc"))
		text = oob_desc_cases[k];
	else if (!strcmp(mode, "huge-avail"))
		text = avail_cases[k];
	else
		text = chain_cases[k];
	r = case_on_rx(text) ? &fe->rx : &fe->tx;

	/* First the session must work: one frame through each ring. For an
	 * RX case only one buffer is posted, so that the broken chain is the
	 * next one the backend takes. */
	rc = setup(fe, r == &fe->rx ? 1 : SLOTS);
	if (!rc)
		rc = provoke_rx(fe);
	if (!rc)
		rc = wait_until(fe, any_frame, &one, r != &fe->rx, "a first frame on RX");
	if (!rc)
		rc = wait_until(fe, tx_returned, NULL, r != &fe->rx, "the first TX chain back");
	if (rc)
		return rc;

	vlog(fe, "%s", text);
	broken_chain(fe, r, mode, k);
	if (!strcmp(mode, "huge-avail")) {
		if (k == 0 || k == 4)
			r->avail_idx = (uint16_t)(r->avail_idx + RING_NUM);
		else if (k == 1)
			r->avail_idx = (uint16_t)(r->avail_idx + 0x7fff);
		else if (k == 2)
			r->avail_idx = (uint16_t)(r->avail_idx - 3);
		else
			r->avail->ring[(uint16_t)(r->avail_idx - 1) % RING_NUM] = RING_NUM + 7;
	}
	publish(r);
	rc = kick(fe, r);
	/* An RX chain is only looked at when there is a frame for us. */
	if (!rc && r == &fe->rx)
		rc = provoke_rx(fe);
	if (!rc)
		rc = expect_close(fe, text);
	return rc;
}

static const char *const garbage_cases[] = {
	"random bytes (a header of version 0)",
	"a header announcing a 1 MiB payload",
	"12 fds on one message",
	"the REPLY flag on a request",
	"a header cut short, then silence",
	"a payload cut short, then silence",
	"an fd on SET_OWNER (which takes none)",
	"GET_FEATURES until the socket is full, replies never read",
};
enum { GARBAGE_CASES = sizeof(garbage_cases) / sizeof(garbage_cases[0]) };

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int mode_garbage(struct fe *fe, unsigned int k)
{
	uint64_t u64 = 1ull << 63, seed = fe->o->seed ? fe->o->seed : 1;
	uint8_t junk[4096];
	int fds[12], rc;
	unsigned int i;

	for (i = 0; i < 12; i++)
		fds[i] = fe->memfd;
	rc = setup(fe, SLOTS);
	if (!rc)
		rc = round_trips(fe, 1);
	/* Refusals the backend can answer. */
	if (!rc && fe->ack) {
		uint64_t ack = 0;
		uint32_t got;

		vlog(fe, "unknown request 77 with NEED_REPLY: an error reply");
		rc = send_msg(fe, 77, true, NULL, 0, NULL, 0);
		if (!rc)
			rc = read_reply(fe, 77, &ack, sizeof(ack), &got);
		if (!rc && (got != 8 || !ack))
			rc = failf(EXIT_BACKEND, "unknown request with NEED_REPLY: reply of %u bytes, value %llu",
				   got, (unsigned long long)ack);
	}
	if (!rc)
		rc = expect_refused(fe, "SET_LOG_BASE (dirty logging never offered)", REQ_SET_LOG_BASE,
				    &u64, 8, NULL, 0);
	if (!rc)
		rc = expect_refused(fe, "SET_FEATURES with a bit never offered", REQ_SET_FEATURES, &u64,
				    8, NULL, 0);
	if (!rc)
		rc = expect_refused(fe, "SET_FEATURES with a 4-byte payload", REQ_SET_FEATURES,
				    &fe->features, 4, NULL, 0);
	if (!rc)
		rc = expect_refused(fe, "SET_PROTOCOL_FEATURES with a bit never offered",
				    REQ_SET_PROTOCOL_FEATURES, &u64, 8, NULL, 0);
	if (!rc)
		rc = expect_refused(fe, "SET_OWNER with an 8-byte payload", REQ_SET_OWNER, &u64, 8, NULL, 0);
	if (!rc) {
		uint64_t nofd = 1 | VRING_NOFD;

		rc = expect_refused(fe, "SET_VRING_KICK saying 'no fd' with an fd", REQ_SET_VRING_KICK,
				    &nofd, 8, fds, 1);
	}
	/* Unknown requests without NEED_REPLY are ignored (vhu_dispatch). */
	if (!rc)
		rc = send_msg(fe, 77, false, &u64, 8, NULL, 0);
	if (!rc)
		rc = expect_alive(fe, "an unknown request without NEED_REPLY");
	if (!rc)
		rc = round_trips(fe, 1);
	if (rc)
		return rc;

	vlog(fe, "%s", garbage_cases[k]);
	for (i = 0; i < sizeof(junk); i += 8) {
		uint64_t v = xorshift(&seed);

		memcpy(junk + i, &v, 8);
	}
	switch (k) {
	case 0: {
		struct msg_hdr h;

		memcpy(&h, junk, sizeof(h));
		h.flags &= ~(uint32_t)HDR_VERSION_MASK;
		memcpy(junk, &h, sizeof(h));
		if (send(fe->sock, junk, sizeof(junk), MSG_NOSIGNAL) < 0)
			rc = failf(EXIT_BACKEND, "send: %s", strerror(errno));
		break;
	}
	case 1:
		rc = send_raw(fe, REQ_SET_MEM_TABLE, HDR_VERSION, 1u << 20, junk, 64, NULL, 0);
		break;
	case 2:
		rc = send_raw(fe, REQ_GET_FEATURES, HDR_VERSION, 0, NULL, 0, fds, 12);
		break;
	case 3:
		rc = send_raw(fe, REQ_SET_OWNER, HDR_VERSION | HDR_REPLY, 0, NULL, 0, NULL, 0);
		break;
	case 4: {
		struct msg_hdr h = { REQ_SET_FEATURES, HDR_VERSION, 8 };

		if (send(fe->sock, &h, 6, MSG_NOSIGNAL) < 0)
			rc = failf(EXIT_BACKEND, "send: %s", strerror(errno));
		break;
	}
	case 5:
		rc = send_raw(fe, REQ_SET_FEATURES, HDR_VERSION, 8, &fe->features, 4, NULL, 0);
		break;
	case 6:
		rc = send_raw(fe, REQ_SET_OWNER, HDR_VERSION, 0, NULL, 0, fds, 1);
		break;
	case 7: {
		/* Requests keep coming (as fast as the backend takes them) and
		 * its replies pile up unread: once its send buffer is full it
		 * cannot send the next reply, and must give up. Stopping when
		 * our own buffer is full would not do: a backend whose buffer
		 * held every reply would answer them all and then, rightly,
		 * wait for more (seen with 278 requests, not with 279). */
		struct msg_hdr h = { REQ_GET_FEATURES, HDR_VERSION, 0 };
		int64_t start = now_ms(), end = start + fe->o->timeout_ms;
		unsigned int sent = 0;

		for (;;) {
			struct pollfd pfd = { .fd = fe->sock, .events = POLLOUT };

			if (send(fe->sock, &h, sizeof(h), MSG_NOSIGNAL | MSG_DONTWAIT) > 0) {
				if (++sent == 1u << 22)
					return failf(EXIT_BACKEND, "the backend read %u requests whose "
						     "replies nobody read", sent);
				continue;
			}
			if (errno == EPIPE || errno == ECONNRESET)
				break;
			if (errno != EAGAIN && errno != EINTR)
				return failf(EXIT_BACKEND, "send: %s", strerror(errno));
			if (now_ms() >= end)
				return failf(EXIT_BACKEND,
					     "hang: the backend still had the connection open %d s "
					     "after %s (%u requests sent)",
					     fe->o->timeout_ms / 1000, garbage_cases[k], sent);
			/* Room again (it read some), or its close. */
			if (poll(&pfd, 1, 100) > 0 && (pfd.revents & (POLLHUP | POLLERR)))
				break;
		}
		vlog(fe, "hung up by the backend %lld ms and %u requests into %s",
		     (long long)(now_ms() - start), sent, garbage_cases[k]);
		return 0;
	}
	}
	if (!rc)
		rc = expect_close(fe, garbage_cases[k]);
	return rc;
}

/* --- main ----------------------------------------------------------------------- */

struct mode {
	const char *name;
	int (*run)(struct fe *fe, unsigned int k);
	const char *const *cases;
	unsigned int n_cases;
	bool needs_frames;           /* needs -4 or -6 */
};

#define CASES(a) a, sizeof(a) / sizeof(a[0])
static const struct mode modes[] = {
	{ "good", mode_good, NULL, 1, true },
	{ "tx-drops", mode_tx_drops, NULL, 1, true },
	{ "restart", mode_restart, NULL, 1, true },
	{ "remap", mode_remap, NULL, 1, true },
	{ "odd-fds", mode_odd_fds, CASES(odd_fd_cases), true },
	{ "bad-memtable", mode_bad_memtable, CASES(memtable_cases), true },
	{ "oob-ring", mode_oob_ring, CASES(ring_cases), true },
	{ "desc-loop", mode_data_path, CASES(loop_cases), true },
	{ "oob-desc", mode_data_path, CASES(oob_desc_cases), true },
	{ "huge-avail", mode_data_path, CASES(avail_cases), true },
	{ "bad-chain", mode_data_path, CASES(chain_cases), true },
	{ "garbage", mode_garbage, CASES(garbage_cases), true },
	{ "shrink", mode_shrink, CASES(shrink_cases), true },
};
#undef CASES

static void list_modes(void)
{
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		if (!modes[m].cases)
			printf("%s 0 %s\n", modes[m].name, "the whole mode");
		for (unsigned int k = 0; modes[m].cases && k < modes[m].n_cases; k++)
			printf("%s %u %s\n", modes[m].name, k, modes[m].cases[k]);
	}
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-m MAC] [-r MAC] [-4 IP] [-g IP] [-6 IP] [-n N] [-k CASE] [-t SECS]\n"
		"          [-s SEED] [-p PID] [-e] [-L] [-v] MODE SOCKET\n"
		"       %s -l   (modes and cases)\n",
		prog, prog);
	exit(EXIT_USAGE);
}

static bool parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char end;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &end) != 6)
		return false;
	for (int i = 0; i < 6; i++) {
		if (b[i] > 0xff)
			return false;
		mac[i] = (uint8_t)b[i];
	}
	return true;
}

/* Guest memory: the memfd, filled, the rings zeroed. */
static int make_memory(struct fe *fe)
{
	snprintf(fe->memfd_name, sizeof(fe->memfd_name), "vhu-frontend-%d", (int)getpid());
	if (fe->shm) {
		char path[96];

		/* Unlinked at once: /proc/PID/maps still names it. */
		snprintf(path, sizeof(path), "/dev/shm/%s", fe->memfd_name);
		fe->memfd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fe->memfd >= 0)
			unlink(path);
	} else {
		fe->memfd = memfd_create(fe->memfd_name, MFD_CLOEXEC);
	}
	if (fe->memfd < 0 || ftruncate(fe->memfd, MEM_SIZE) < 0)
		return failf(EXIT_LOCAL, "memfd: %s", strerror(errno));
	fe->mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fe->memfd, 0);
	if (fe->mem == MAP_FAILED)
		return failf(EXIT_LOCAL, "mmap: %s", strerror(errno));
	fe->tx_shadow = malloc(RX_SLOTS - TX_SLOTS);
	if (!fe->tx_shadow)
		return failf(EXIT_LOCAL, "out of memory");
	memset(fe->mem, FILL, MEM_SIZE);
	memset(fe->mem, 0, RINGS_END);
	memset(fe->tx_shadow, FILL, RX_SLOTS - TX_SLOTS);
	ring_layout(fe, &fe->rx, 0);
	ring_layout(fe, &fe->tx, 1);
	return 0;
}

static void release(struct fe *fe)
{
	const struct ring *rings[2] = { &fe->rx, &fe->tx };

	for (unsigned int i = 0; i < 2; i++) {
		if (rings[i]->kick >= 0)
			close(rings[i]->kick);
		if (rings[i]->call >= 0)
			close(rings[i]->call);
	}
	if (fe->mem && fe->mem != MAP_FAILED)
		munmap(fe->mem, MEM_SIZE);
	if (fe->memfd >= 0)
		close(fe->memfd);
	free(fe->tx_shadow);
}

int main(int argc, char **argv)
{
	static const uint8_t router_mac[6] = { 0x02, 0x77, 0x65, 0x66, 0x74, 0x01 };
	static const uint8_t vm_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
	struct opts o = { .count = 3, .timeout_ms = 60000, .seed = 1, .gw4 = { 169, 254, 1, 1 } };
	struct fe fe = { .o = &o, .sock = -1, .memfd = -1, .rx = { .kick = -1, .call = -1 },
			 .tx = { .kick = -1, .call = -1 } };
	const struct mode *mode = NULL;
	int c, rc;

	memcpy(o.router_mac, router_mac, 6);
	memcpy(o.vm_mac, vm_mac, 6);
	while ((c = getopt(argc, argv, "m:r:4:g:6:n:k:t:s:p:eLvlh")) != -1) {
		switch (c) {
		case 'm':
			if (!parse_mac(optarg, o.vm_mac))
				usage(argv[0]);
			break;
		case 'r':
			if (!parse_mac(optarg, o.router_mac))
				usage(argv[0]);
			break;
		case '4':
			if (inet_pton(AF_INET, optarg, o.vm_ip4) != 1)
				usage(argv[0]);
			o.has_ip4 = true;
			break;
		case 'g':
			if (inet_pton(AF_INET, optarg, o.gw4) != 1)
				usage(argv[0]);
			break;
		case '6':
			if (inet_pton(AF_INET6, optarg, o.vm_ip6) != 1)
				usage(argv[0]);
			o.has_ip6 = true;
			break;
		case 'n':
			o.count = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'k':
			o.kase = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 't':
			o.timeout_ms = (int)(strtod(optarg, NULL) * 1000);
			break;
		case 's':
			o.seed = strtoull(optarg, NULL, 0);
			break;
		case 'p':
			o.backend_pid = (pid_t)strtol(optarg, NULL, 0);
			break;
		case 'e':
			o.event_idx = true;
			break;
		case 'L':
			o.legacy = true;
			break;
		case 'v':
			o.verbose = true;
			break;
		case 'l':
			list_modes();
			return EXIT_PASS;
		default:
			usage(argv[0]);
		}
	}
	if (argc - optind != 2 || o.timeout_ms <= 0)
		usage(argv[0]);
	o.mode = argv[optind];
	o.path = argv[optind + 1];
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
		if (!strcmp(modes[m].name, o.mode))
			mode = &modes[m];
	if (!mode || o.kase >= mode->n_cases) {
		fprintf(stderr, "vhu_frontend: unknown mode or case (see -l)\n");
		return EXIT_USAGE;
	}
	if (mode->needs_frames && !o.has_ip4 && !o.has_ip6) {
		fprintf(stderr, "vhu_frontend: mode %s needs -4 or -6\n", o.mode);
		return EXIT_USAGE;
	}

	fe.shm = mode->run == mode_shrink && o.kase == 1;
	rc = make_memory(&fe);
	if (!rc)
		rc = mode->run(&fe, o.kase);
	if (fe.sock >= 0)
		close(fe.sock);
	/* Whether the backend closed or we did, it must let go of the memory. */
	if (!rc)
		rc = check_released(&fe);
	release(&fe);
	if (rc == EXIT_PASS)
		fprintf(stderr, "vhu_frontend: %s %u: PASS%s%s\n", o.mode, o.kase,
			mode->cases ? ": " : "", mode->cases ? mode->cases[o.kase] : "");
	else
		fprintf(stderr, "vhu_frontend: %s %u: FAIL: %s\n", o.mode, o.kase, verdict);
	return rc;
}
