/* The vhost-user backend (tun/vhost_user.h) against a fake frontend on a
 * socketpair: feature and protocol-feature negotiation, a two-region memory
 * table of memfds, vring setup with kick/call eventfds, the enable rule,
 * GET_VRING_BASE, RESET_OWNER, NEED_REPLY acks; and what a hostile frontend
 * can send: oversized payloads, wrapping or overlapping regions, regions
 * past the end of their file, rings outside memory, bad ring sizes and
 * indices, missing and extra fds, split messages. No fd may leak. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "tun/vhost_user.h"

#define FAIL(...) (fprintf(stderr, "%s:%d: ", __FILE__, __LINE__), \
		   fprintf(stderr, __VA_ARGS__), exit(1))
#define CHECK(c) ((c) ? (void)0 : FAIL("failed: %s\n", #c))
#define CHECK_EQ(a, b)                                                        \
	do {                                                                  \
		long long a_ = (long long)(a), b_ = (long long)(b);           \
		if (a_ != b_)                                                 \
			FAIL("%s == %lld, expected %lld\n", #a, a_, b_);      \
	} while (0)

enum {
	MIB = 1 << 20,
	UVA0 = 0x10000000,
	UVA1 = 0x20000000,
	GPA1 = MIB,
	OFF1 = 4096,       /* region 1 starts this far into its memfd */
	NUM = 256,
};

static struct vhu_dev dev;
static int fe = -1, be = -1;      /* frontend and backend ends */
static int memfd[2];
static uint8_t *fe_mem[2];        /* the frontend's view of each region */

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	CHECK(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void connect_pair(void)
{
	int sv[2];

	if (fe >= 0)
		close(fe);
	if (be >= 0)
		close(be);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	fe = sv[0];
	be = sv[1];
	CHECK(fcntl(be, F_SETFL, O_NONBLOCK) == 0);
}

static void send_raw(const void *buf, size_t len, const int *fds, int n_fds)
{
	char ctl[CMSG_SPACE(sizeof(int) * 16)];
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (n_fds) {
		struct cmsghdr *cm;

		memset(ctl, 0, sizeof(ctl));
		mh.msg_control = ctl;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * n_fds);
	}
	CHECK_EQ(sendmsg(fe, &mh, 0), (ssize_t)len);
}

static void send_msg(uint32_t req, uint32_t flags, const void *payload, uint32_t size,
		     const int *fds, int n_fds)
{
	uint8_t buf[12 + 512];
	struct vhu_msg_hdr h = { .request = req, .flags = flags, .size = size };

	CHECK(size <= 512);
	memcpy(buf, &h, sizeof(h));
	if (size)
		memcpy(buf + 12, payload, size);
	send_raw(buf, 12 + size, fds, n_fds);
}

/* Sends a request and lets the backend handle it. */
static int call(uint32_t req, uint32_t flags, const void *payload, uint32_t size,
		const int *fds, int n_fds, struct vhu_result *res)
{
	send_msg(req, VHU_FLAG_VERSION | flags, payload, size, fds, n_fds);
	return vhu_handle_msg(&dev, be, res);
}

static void expect_no_reply(void)
{
	char b;

	CHECK_EQ(recv(fe, &b, 1, MSG_DONTWAIT), -1);
	CHECK_EQ(errno, EAGAIN);
}

/* Reads one reply to req with size payload bytes into payload. */
static void read_reply(uint32_t req, void *payload, uint32_t size)
{
	struct vhu_msg_hdr h;

	CHECK_EQ(recv(fe, &h, sizeof(h), MSG_DONTWAIT), sizeof(h));
	CHECK_EQ(h.request, req);
	CHECK_EQ(h.flags, VHU_FLAG_VERSION | VHU_FLAG_REPLY);
	CHECK_EQ(h.size, size);
	CHECK_EQ(recv(fe, payload, size, MSG_DONTWAIT), (ssize_t)size);
	expect_no_reply();
}

static uint64_t get_u64(uint32_t req)
{
	struct vhu_result res;
	uint64_t v;

	CHECK_EQ(call(req, 0, NULL, 0, NULL, 0, &res), 0);
	CHECK(res.reply && !res.disconnect);
	read_reply(req, &v, 8);
	return v;
}

static int set_u64(uint32_t req, uint32_t flags, uint64_t v, const int *fds, int n_fds,
		   struct vhu_result *res)
{
	return call(req, flags, &v, 8, fds, n_fds, res);
}

/* With NEED_REPLY: the ack value (0 ok). */
static uint64_t ack_of(uint32_t req)
{
	uint64_t v;

	read_reply(req, &v, 8);
	return v;
}

static struct vhu_memory two_regions(void)
{
	struct vhu_memory m = { .nregions = 2 };

	m.regions[0] = (struct vhu_mem_region){ .gpa = 0, .size = MIB, .uva = UVA0, .mmap_offset = 0 };
	m.regions[1] = (struct vhu_mem_region){ .gpa = GPA1, .size = MIB, .uva = UVA1,
						.mmap_offset = OFF1 };
	return m;
}

static int send_mem(const struct vhu_memory *m, uint32_t flags, const int *fds, int n_fds,
		    struct vhu_result *res)
{
	return call(VHU_SET_MEM_TABLE, flags, m, 8 + 32 * m->nregions, fds, n_fds, res);
}

static void setup_memory(void)
{
	memfd[0] = memfd_create("r0", MFD_CLOEXEC);
	memfd[1] = memfd_create("r1", MFD_CLOEXEC);
	CHECK(memfd[0] >= 0 && memfd[1] >= 0);
	CHECK(ftruncate(memfd[0], MIB) == 0);
	CHECK(ftruncate(memfd[1], MIB + OFF1) == 0);
	fe_mem[0] = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_SHARED, memfd[0], 0);
	fe_mem[1] = mmap(NULL, MIB + OFF1, PROT_READ | PROT_WRITE, MAP_SHARED, memfd[1], 0);
	CHECK(fe_mem[0] != MAP_FAILED && fe_mem[1] != MAP_FAILED);
	fe_mem[1] += OFF1;
}

static void test_negotiation(void)
{
	struct vhu_result res;

	/* A trimmed offer is what GET_FEATURES says. */
	vhu_dev_init(&dev, (VHU_FEATURES_DEFAULT & ~(1ull << VIRTIO_NET_F_MQ)) | (1ull << 28) |
				   (1ull << VIRTIO_F_RING_PACKED), 3);
	CHECK_EQ(get_u64(VHU_GET_FEATURES), VHU_FEATURES_DEFAULT & ~(1ull << VIRTIO_NET_F_MQ));
	CHECK_EQ(get_u64(VHU_GET_QUEUE_NUM), 6);
	vhu_dev_free(&dev);

	vhu_dev_init(&dev, VHU_FEATURES_DEFAULT, 100);
	CHECK_EQ(vhu_ring_count(&dev), 2 * VHU_MAX_QUEUE_PAIRS);
	vhu_dev_free(&dev);

	vhu_dev_init(&dev, VHU_FEATURES_DEFAULT, 1);
	CHECK_EQ(call(VHU_SET_OWNER, 0, NULL, 0, NULL, 0, &res), 0);
	expect_no_reply();
	CHECK(dev.owner);
	uint64_t f = get_u64(VHU_GET_FEATURES);
	CHECK_EQ(f, VHU_FEATURES_DEFAULT);
	CHECK(f & 1ull << VHU_F_PROTOCOL_FEATURES);
	CHECK(!(f & 1ull << VIRTIO_RING_F_INDIRECT_DESC));
	CHECK(!(f & 1ull << VIRTIO_F_RING_PACKED));
	uint64_t p = get_u64(VHU_GET_PROTOCOL_FEATURES);
	CHECK_EQ(p, (1ull << VHU_PROTOCOL_F_MQ) | (1ull << VHU_PROTOCOL_F_REPLY_ACK));
	CHECK_EQ(get_u64(VHU_GET_QUEUE_NUM), 2);

	/* Unoffered protocol feature, with and without NEED_REPLY. */
	CHECK_EQ(set_u64(VHU_SET_PROTOCOL_FEATURES, VHU_FLAG_NEED_REPLY, p | 1 << 1, NULL, 0, &res),
		 -EINVAL);
	CHECK(!res.disconnect);
	CHECK(ack_of(VHU_SET_PROTOCOL_FEATURES) != 0);
	CHECK_EQ(set_u64(VHU_SET_PROTOCOL_FEATURES, 0, p | 1 << 1, NULL, 0, &res), -EINVAL);
	CHECK(res.disconnect);
	expect_no_reply();
	CHECK_EQ(dev.protocol_features, 0);
	CHECK_EQ(set_u64(VHU_SET_PROTOCOL_FEATURES, VHU_FLAG_NEED_REPLY, p, NULL, 0, &res), 0);
	CHECK_EQ(ack_of(VHU_SET_PROTOCOL_FEATURES), 0);
	CHECK_EQ(dev.protocol_features, p);

	/* Unoffered virtio feature (packed ring). */
	CHECK_EQ(set_u64(VHU_SET_FEATURES, VHU_FLAG_NEED_REPLY, f | 1ull << VIRTIO_F_RING_PACKED,
			 NULL, 0, &res), -EINVAL);
	CHECK(ack_of(VHU_SET_FEATURES) != 0);
	CHECK_EQ(dev.features, 0);
	/* Wrong payload size. */
	CHECK_EQ(call(VHU_SET_FEATURES, VHU_FLAG_NEED_REPLY, &f, 4, NULL, 0, &res), -EINVAL);
	CHECK(ack_of(VHU_SET_FEATURES) != 0);
	CHECK_EQ(call(VHU_GET_FEATURES, 0, &f, 8, NULL, 0, &res), -EINVAL);
	CHECK(res.disconnect && !res.reply);
	expect_no_reply();
	CHECK_EQ(set_u64(VHU_SET_FEATURES, 0, f, NULL, 0, &res), 0);
	expect_no_reply();
	CHECK_EQ(dev.features, f);
	CHECK(!res.disconnect);
}

static void test_memory(void)
{
	struct vhu_memory m = two_regions();
	struct vhu_result res;
	int fds[2] = { memfd[0], memfd[1] };
	int before = count_fds();
	uint8_t *h;

	CHECK_EQ(send_mem(&m, VHU_FLAG_NEED_REPLY, fds, 2, &res), 0);
	CHECK_EQ(ack_of(VHU_SET_MEM_TABLE), 0);
	/* The backend closed its copies of the fds. */
	CHECK_EQ(count_fds(), before);
	CHECK_EQ(dev.mem.n, 2);
	CHECK(dev.stats.fds_closed >= 2);

	/* Both translations reach the same bytes the frontend sees. */
	fe_mem[0][0x1234] = 0xa5;
	fe_mem[1][0x10] = 0x5a;
	fe_mem[1][MIB - 1] = 0x77;
	h = virtq_mem_gpa(&dev.mem, 0x1234, 1);
	CHECK(h && *h == 0xa5);
	h = virtq_mem_gpa(&dev.mem, GPA1 + 0x10, 1);
	CHECK(h && *h == 0x5a);
	h = virtq_mem_uva(&dev.mem, UVA1 + MIB - 1, 1);
	CHECK(h && *h == 0x77);
	*h = 0x66;
	CHECK_EQ(fe_mem[1][MIB - 1], 0x66);
	CHECK(!virtq_mem_gpa(&dev.mem, GPA1 - 1, 2));
	CHECK(!virtq_mem_uva(&dev.mem, UVA1 + MIB - 1, 2));
	CHECK(!virtq_mem_uva(&dev.mem, UVA0 + MIB, 1));

	/* Refused tables leave the current one alone; each closes its fds. */
	struct {
		const char *what;
		struct vhu_memory m;
		int n_fds;
	} bad[] = {
		{ "gpa wraps", two_regions(), 2 },
		{ "uva wraps", two_regions(), 2 },
		{ "offset wraps", two_regions(), 2 },
		{ "offset past the file", two_regions(), 2 },
		{ "size past the file", two_regions(), 2 },
		{ "gpa overlap", two_regions(), 2 },
		{ "uva overlap", two_regions(), 2 },
		{ "empty region", two_regions(), 2 },
		{ "missing fd", two_regions(), 1 },
		{ "extra fd", two_regions(), 3 },
		{ "too many regions", two_regions(), 2 },
	};
	bad[0].m.regions[1].gpa = UINT64_MAX - MIB + 2;
	bad[1].m.regions[0].uva = UINT64_MAX - 5;
	bad[2].m.regions[1].mmap_offset = UINT64_MAX - 100;
	bad[3].m.regions[1].mmap_offset = MIB + OFF1;
	bad[4].m.regions[0].size = MIB + 1;
	bad[5].m.regions[1].gpa = MIB - 4096;
	bad[6].m.regions[0].uva = UVA1 + MIB - 1;
	bad[7].m.regions[0].size = 0;
	bad[10].m.nregions = 9;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int f3[3] = { memfd[0], memfd[1], memfd[0] };
		uint32_t size = bad[i].m.nregions > 8 ? 264 : 8 + 32 * bad[i].m.nregions;
		int r;

		r = call(VHU_SET_MEM_TABLE, VHU_FLAG_NEED_REPLY, &bad[i].m, size, f3,
			 bad[i].n_fds, &res);
		if (r >= 0)
			FAIL("%s: accepted\n", bad[i].what);
		CHECK(!res.disconnect);
		CHECK(ack_of(VHU_SET_MEM_TABLE) != 0);
		CHECK_EQ(count_fds(), before);
		CHECK_EQ(dev.mem.n, 2);
		h = virtq_mem_gpa(&dev.mem, 0x1234, 1);
		CHECK(h && *h == 0xa5);
	}
	/* Without NEED_REPLY the frontend cannot be told: disconnect. */
	CHECK(send_mem(&bad[0].m, 0, fds, 2, &res) < 0);
	CHECK(res.disconnect);
	expect_no_reply();
	/* A non-file fd (an eventfd) is not memory. */
	int efd = eventfd(0, EFD_CLOEXEC);
	struct vhu_memory one = two_regions();
	one.nregions = 1;
	CHECK(send_mem(&one, VHU_FLAG_NEED_REPLY, &efd, 1, &res) < 0);
	CHECK(ack_of(VHU_SET_MEM_TABLE) != 0);
	close(efd);
	CHECK_EQ(count_fds(), before);
}

static void ring_addr(uint32_t idx, uint64_t desc, uint64_t avail, uint64_t used, uint32_t flags,
		      int want, struct vhu_result *res)
{
	struct vhu_vring_addr a = { .index = idx, .flags = flags, .desc = desc, .used = used,
				    .avail = avail };

	CHECK_EQ(call(VHU_SET_VRING_ADDR, VHU_FLAG_NEED_REPLY, &a, sizeof(a), NULL, 0, res), want);
	CHECK_EQ(ack_of(VHU_SET_VRING_ADDR) != 0, want != 0);
}

static int ring_state(uint32_t req, uint32_t idx, uint32_t num, uint32_t flags,
		      struct vhu_result *res)
{
	struct vhu_vring_state s = { .index = idx, .num = num };

	return call(req, flags, &s, sizeof(s), NULL, 0, res);
}

/* The guest side of ring 0 (desc 0x1000, avail 0x4000, used 0x5000 in
 * region 0; buffers in region 1). */
static struct vring_desc *gdesc(void) { return (void *)(fe_mem[0] + 0x1000); }
static struct vring_avail *gavail(void) { return (void *)(fe_mem[0] + 0x4000); }
static struct vring_used *gused(void) { return (void *)(fe_mem[0] + 0x5000); }

static void test_vrings(void)
{
	struct vhu_result res;
	struct virtq_chain c;
	struct virtq *vq;
	int kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int callfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int before = count_fds();
	uint64_t v;

	CHECK(kick >= 0 && callfd >= 0);
	/* Ring size: a power of two up to the cap; the index in range. */
	CHECK_EQ(ring_state(VHU_SET_VRING_NUM, 0, 100, VHU_FLAG_NEED_REPLY, &res), -EINVAL);
	CHECK(ack_of(VHU_SET_VRING_NUM) != 0);
	CHECK_EQ(ring_state(VHU_SET_VRING_NUM, 0, 0, VHU_FLAG_NEED_REPLY, &res), -EINVAL);
	CHECK(ack_of(VHU_SET_VRING_NUM) != 0);
	CHECK_EQ(ring_state(VHU_SET_VRING_NUM, 0, 2048, VHU_FLAG_NEED_REPLY, &res), -EINVAL);
	CHECK(ack_of(VHU_SET_VRING_NUM) != 0);
	CHECK_EQ(ring_state(VHU_SET_VRING_NUM, 2, 256, VHU_FLAG_NEED_REPLY, &res), -EINVAL);
	CHECK(ack_of(VHU_SET_VRING_NUM) != 0);
	CHECK_EQ(ring_state(VHU_SET_VRING_NUM, 0, NUM, VHU_FLAG_NEED_REPLY, &res), 0);
	CHECK_EQ(ack_of(VHU_SET_VRING_NUM), 0);
	CHECK(res.changed & 1);

	/* Addresses: outside memory, misaligned, spanning, then good. */
	ring_addr(0, UVA0 + MIB - 16, UVA0 + 0x4000, UVA0 + 0x5000, 0, -EFAULT, &res);
	ring_addr(0, UVA0 + 0x1000, UVA0 + 0x4000, UVA1 + MIB - 100, 0, -EFAULT, &res);
	ring_addr(0, UVA0 + 0x1000, 0x1000, UVA0 + 0x5000, 0, -EFAULT, &res);
	ring_addr(0, UVA0 + 0x1008, UVA0 + 0x4000, UVA0 + 0x5000, 0, -EINVAL, &res);
	ring_addr(0, UVA0 + 0x1000, UVA0 + 0x4001, UVA0 + 0x5000, 0, -EINVAL, &res);
	ring_addr(0, UVA0 + 0x1000, UVA0 + 0x4000, UVA0 + 0x5002, 0, -EINVAL, &res);
	ring_addr(0, UVA0 + 0x1000, UVA0 + 0x4000, UVA0 + 0x5000, 0x2, -EINVAL, &res);
	ring_addr(5, UVA0 + 0x1000, UVA0 + 0x4000, UVA0 + 0x5000, 0, -EINVAL, &res);
	CHECK(!dev.rings[0].addr_set);
	ring_addr(0, UVA0 + 0x1000, UVA0 + 0x4000, UVA0 + 0x5000, 0, 0, &res);
	CHECK(dev.rings[0].vq.desc != NULL);
	CHECK(!vhu_ring_ready(&dev, 0));

	CHECK_EQ(ring_state(VHU_SET_VRING_BASE, 0, 70000, VHU_FLAG_NEED_REPLY, &res), -EINVAL);
	CHECK(ack_of(VHU_SET_VRING_BASE) != 0);
	CHECK_EQ(ring_state(VHU_SET_VRING_BASE, 0, 3, 0, &res), 0);
	expect_no_reply();

	/* KICK/CALL: the fd must come unless NOFD says otherwise. */
	CHECK_EQ(set_u64(VHU_SET_VRING_CALL, VHU_FLAG_NEED_REPLY, 0, NULL, 0, &res), -EBADF);
	CHECK(ack_of(VHU_SET_VRING_CALL) != 0);
	CHECK_EQ(set_u64(VHU_SET_VRING_KICK, 0, 0, NULL, 0, &res), -EBADF);
	CHECK(res.disconnect);
	CHECK_EQ(set_u64(VHU_SET_VRING_KICK, VHU_FLAG_NEED_REPLY, VHU_VRING_NOFD, &kick, 1, &res),
		 -EBADF);
	CHECK(ack_of(VHU_SET_VRING_KICK) != 0);
	CHECK_EQ(set_u64(VHU_SET_VRING_KICK, VHU_FLAG_NEED_REPLY, 0x200, &kick, 1, &res), -EINVAL);
	CHECK(ack_of(VHU_SET_VRING_KICK) != 0);
	CHECK_EQ(set_u64(VHU_SET_VRING_KICK, VHU_FLAG_NEED_REPLY, 7, &kick, 1, &res), -EINVAL);
	CHECK(ack_of(VHU_SET_VRING_KICK) != 0);
	CHECK_EQ(count_fds(), before);
	CHECK_EQ(set_u64(VHU_SET_VRING_CALL, 0, 0, &callfd, 1, &res), 0);
	CHECK_EQ(set_u64(VHU_SET_VRING_ERR, 0, VHU_VRING_NOFD, NULL, 0, &res), 0);
	CHECK_EQ(set_u64(VHU_SET_VRING_KICK, 0, 0, &kick, 1, &res), 0);
	CHECK(res.changed & 1);
	expect_no_reply();
	CHECK_EQ(count_fds(), before + 2);
	CHECK(vhu_ring_kick_fd(&dev, 0) >= 0);
	/* Protocol features were acked: the ring waits for ENABLE. */
	CHECK(!vhu_ring_ready(&dev, 0));
	CHECK_EQ(ring_state(VHU_SET_VRING_ENABLE, 0, 2, VHU_FLAG_NEED_REPLY, &res), -EINVAL);
	CHECK(ack_of(VHU_SET_VRING_ENABLE) != 0);
	CHECK_EQ(ring_state(VHU_SET_VRING_ENABLE, 0, 1, 0, &res), 0);
	CHECK(vhu_ring_ready(&dev, 0));
	CHECK(!vhu_ring_ready(&dev, 1));
	CHECK(!vhu_ring_ready(&dev, 99));

	/* The guest posts a buffer at avail slot 3 (the base); the data path
	 * sees it through the backend's mapping and answers through call. */
	vq = vhu_ring_vq(&dev, 0);
	CHECK(vq && vq->num == NUM && vq->hdr_len == 12 && vq->event_idx && vq->mrg_rxbuf);
	CHECK(vq->desc == virtq_mem_uva(&dev.mem, UVA0 + 0x1000, 16));
	gdesc()[9] = (struct vring_desc){ .addr = GPA1 + 0x100, .len = 64, .flags = 0 };
	memcpy(fe_mem[1] + 0x100, "hello", 5);
	gavail()->ring[3] = 9;
	gavail()->idx = 4;
	CHECK_EQ(virtq_pop(vq, &c, VIRTQ_CHAIN_OUT), 1);
	CHECK_EQ(c.head, 9);
	CHECK(memcmp(c.iov[0].base, "hello", 5) == 0);
	virtq_push(vq, 9, 0);
	CHECK_EQ(gused()->idx, 1);
	CHECK(virtq_should_notify(vq));
	CHECK_EQ(virtq_notify(vq), 0);
	CHECK_EQ(read(callfd, &v, 8), 8);

	/* GET_VRING_BASE stops the ring and returns last_avail. */
	struct vhu_vring_state st;
	CHECK_EQ(ring_state(VHU_GET_VRING_BASE, 0, 0, 0, &res), 0);
	read_reply(VHU_GET_VRING_BASE, &st, sizeof(st));
	CHECK_EQ(st.index, 0);
	CHECK_EQ(st.num, 4);
	CHECK(!vhu_ring_ready(&dev, 0));
	CHECK_EQ(vhu_ring_kick_fd(&dev, 0), -1);
	CHECK_EQ(count_fds(), before + 1);
	CHECK_EQ(ring_state(VHU_GET_VRING_BASE, 4, 0, VHU_FLAG_NEED_REPLY, &res), -EINVAL);
	CHECK(res.disconnect);      /* a GET cannot be answered with an ack */
	expect_no_reply();
	/* Restarted from a new base with a new kick. */
	CHECK_EQ(ring_state(VHU_SET_VRING_BASE, 0, 4, 0, &res), 0);
	CHECK_EQ(set_u64(VHU_SET_VRING_KICK, 0, 0, &kick, 1, &res), 0);
	CHECK(vhu_ring_ready(&dev, 0));
	CHECK_EQ(vq->last_avail, 4);
	CHECK_EQ(vq->used_idx, 1);
	CHECK_EQ(virtq_pop(vq, &c, VIRTQ_CHAIN_OUT), 0);

	/* A new memory table moves the ring with it; one that leaves the
	 * ring outside memory takes it down. */
	struct vhu_memory m = two_regions();
	int fds[2] = { memfd[1], memfd[0] };
	m.regions[0] = two_regions().regions[1];
	m.regions[1] = two_regions().regions[0];
	m.regions[0].uva = UVA1 + 0x100000000ull;
	CHECK_EQ(send_mem(&m, 0, fds, 2, &res), 0);
	CHECK_EQ(res.changed & 3, 3);
	CHECK(vhu_ring_ready(&dev, 0));
	CHECK(vq->desc == virtq_mem_uva(&dev.mem, UVA0 + 0x1000, 16));
	CHECK_EQ(vq->last_avail, 4);
	m.nregions = 1;
	CHECK_EQ(send_mem(&m, 0, fds, 1, &res), 0);
	CHECK(!vhu_ring_ready(&dev, 0));
	CHECK(vq->desc == NULL);
	CHECK_EQ(virtq_pop(vq, &c, VIRTQ_CHAIN_OUT), -EIO);
	m = two_regions();
	int fds2[2] = { memfd[0], memfd[1] };
	CHECK_EQ(send_mem(&m, 0, fds2, 2, &res), 0);
	CHECK(vhu_ring_ready(&dev, 0));
	CHECK_EQ(vq->last_avail, 4);
	/* A broken queue is not ready. */
	gavail()->idx = 4 + NUM + 1;
	CHECK_EQ(virtq_pop(vq, &c, VIRTQ_CHAIN_OUT), -EIO);
	CHECK(!vhu_ring_ready(&dev, 0));
	gavail()->idx = 4;

	/* A kick without fd stops the ring (weftd does not poll). */
	CHECK_EQ(set_u64(VHU_SET_VRING_KICK, 0, VHU_VRING_NOFD, NULL, 0, &res), 0);
	CHECK(!vhu_ring_ready(&dev, 0));
	CHECK_EQ(count_fds(), before + 1);

	/* RESET_OWNER: every fd and mapping goes. */
	CHECK_EQ(call(VHU_RESET_OWNER, VHU_FLAG_NEED_REPLY, NULL, 0, NULL, 0, &res), 0);
	CHECK_EQ(ack_of(VHU_RESET_OWNER), 0);
	CHECK_EQ(res.changed, 3);
	CHECK_EQ(count_fds(), before);
	CHECK_EQ(dev.mem.n, 0);
	CHECK_EQ(dev.features, 0);
	CHECK(!vhu_ring_ready(&dev, 0));
	close(kick);
	close(callfd);
}

/* Without VHOST_USER_F_PROTOCOL_FEATURES a ring is enabled when it starts. */
static void test_no_protocol_features(void)
{
	struct vhu_memory m = two_regions();
	struct vhu_result res;
	int fds[2] = { memfd[0], memfd[1] };
	int kick = eventfd(0, EFD_CLOEXEC);

	CHECK_EQ(set_u64(VHU_SET_FEATURES, 0, 1ull << VIRTIO_F_VERSION_1, NULL, 0, &res), 0);
	CHECK_EQ(send_mem(&m, 0, fds, 2, &res), 0);
	CHECK_EQ(ring_state(VHU_SET_VRING_NUM, 1, 64, 0, &res), 0);
	ring_addr(1, UVA1, UVA1 + 0x400, UVA1 + 0x1000, 1 /* log: ignored */, 0, &res);
	CHECK(!vhu_ring_ready(&dev, 1));
	CHECK_EQ(set_u64(VHU_SET_VRING_KICK, 0, 1, &kick, 1, &res), 0);
	CHECK(res.changed == 2);
	CHECK(vhu_ring_ready(&dev, 1));
	CHECK(!vhu_ring_vq(&dev, 1)->event_idx);
	/* Shrinking num keeps it mapped; the vq sees the new size. */
	CHECK_EQ(ring_state(VHU_SET_VRING_NUM, 1, 32, 0, &res), 0);
	CHECK(vhu_ring_ready(&dev, 1));
	CHECK_EQ(vhu_ring_vq(&dev, 1)->num, 32);
	close(kick);
	vhu_dev_reset(&dev);
}

static void test_unknown_and_malformed(void)
{
	struct vhu_result res;
	uint64_t v = 0;
	int efd = eventfd(0, EFD_CLOEXEC);
	int before = count_fds();

	/* Unknown requests: ignored, or an error ack when asked. */
	CHECK_EQ(call(99, 0, &v, 8, NULL, 0, &res), 0);
	CHECK(!res.disconnect && !res.reply && res.why);
	expect_no_reply();
	CHECK_EQ(call(VHU_SET_LOG_BASE, VHU_FLAG_NEED_REPLY, &v, 8, &efd, 1, &res), 0);
	CHECK(ack_of(VHU_SET_LOG_BASE) != 0);
	CHECK_EQ(count_fds(), before);
	CHECK(dev.stats.unknown >= 2);
	/* An fd where none belongs. */
	CHECK_EQ(call(VHU_SET_OWNER, VHU_FLAG_NEED_REPLY, NULL, 0, &efd, 1, &res), -EBADF);
	CHECK(ack_of(VHU_SET_OWNER) != 0);
	CHECK_EQ(count_fds(), before);

	/* Bad version: not even read. */
	CHECK(call(VHU_GET_FEATURES, 0x2 ^ VHU_FLAG_VERSION, NULL, 0, NULL, 0, &res) < 0);
	CHECK(res.disconnect);
	connect_pair();
	/* A reply flag from the frontend. */
	CHECK(call(VHU_GET_FEATURES, VHU_FLAG_REPLY, NULL, 0, NULL, 0, &res) < 0);
	CHECK(res.disconnect);
	connect_pair();

	/* Oversized payload: refused before it is read (the stream is then
	 * out of step, so the connection goes). */
	uint8_t big[400] = { 0 };
	CHECK_EQ(call(VHU_SET_MEM_TABLE, 0, big, 265, &efd, 1, &res), -EMSGSIZE);
	CHECK(res.disconnect);
	CHECK_EQ(count_fds(), before);
	connect_pair();
	/* The largest payload is fine. */
	struct vhu_memory m = two_regions();
	int fds[2] = { memfd[0], memfd[1] };
	CHECK_EQ(call(VHU_SET_MEM_TABLE, VHU_FLAG_NEED_REPLY, &m, 264, fds, 2, &res), 0);
	CHECK_EQ(ack_of(VHU_SET_MEM_TABLE), 0);

	/* More fds than a message may carry: all of them closed. */
	int many[12];
	for (int i = 0; i < 12; i++)
		many[i] = efd;
	CHECK(call(VHU_SET_OWNER, 0, NULL, 0, many, 12, &res) < 0);
	CHECK(res.disconnect);
	CHECK_EQ(count_fds(), before);
	connect_pair();

	/* EOF. */
	close(fe);
	fe = -1;
	CHECK_EQ(vhu_handle_msg(&dev, be, &res), 0);
	CHECK(res.disconnect);
	connect_pair();
	/* Nothing to read. */
	CHECK_EQ(vhu_handle_msg(&dev, be, &res), -EAGAIN);
	CHECK(!res.disconnect);
	/* EOF inside a message. */
	struct vhu_msg_hdr h = { VHU_SET_FEATURES, VHU_FLAG_VERSION, 8 };
	send_raw(&h, sizeof(h), NULL, 0);
	shutdown(fe, SHUT_WR);
	CHECK(vhu_handle_msg(&dev, be, &res) < 0);
	CHECK(res.disconnect);
	connect_pair();
	close(efd);
	vhu_dev_reset(&dev);
	CHECK_EQ(count_fds(), before - 1);
}

/* A message that arrives in pieces, the fd with the first one. The pieces
 * come 50 ms apart; the contract is a time here (IO_WAIT_MS, 1 s for the
 * rest of a started message), with a margin of 20 to it. */
static void *send_rest(void *arg)
{
	const uint8_t *buf = arg;

	usleep(50000);
	CHECK_EQ(write(fe, buf + 5, 4), 4);
	usleep(50000);
	CHECK_EQ(write(fe, buf + 9, 11), 11);
	return NULL;
}

static void test_split_message(void)
{
	static uint8_t buf[20];
	struct vhu_msg_hdr h = { VHU_SET_VRING_CALL, VHU_FLAG_VERSION | VHU_FLAG_NEED_REPLY, 8 };
	uint64_t v = 0;
	struct vhu_result res;
	pthread_t t;
	int efd = eventfd(0, EFD_CLOEXEC);

	memcpy(buf, &h, 12);
	memcpy(buf + 12, &v, 8);
	send_raw(buf, 5, &efd, 1);
	CHECK(pthread_create(&t, NULL, send_rest, buf) == 0);
	CHECK_EQ(vhu_handle_msg(&dev, be, &res), 0);
	pthread_join(t, NULL);
	CHECK_EQ(ack_of(VHU_SET_VRING_CALL), 0);
	CHECK(dev.rings[0].vq.call_fd >= 0);
	close(efd);
	vhu_dev_reset(&dev);
}

static void test_sockets(void)
{
	char dir[] = "/tmp/weft-vhu-XXXXXX", path[128];
	struct stat st;
	int l, c, a, f;

	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sock", dir);
	l = vhu_listen(path);
	CHECK(l >= 0);
	CHECK(lstat(path, &st) == 0);
	CHECK(S_ISSOCK(st.st_mode));
	CHECK_EQ(st.st_mode & 07777, 0600);
	c = vhu_connect(path);
	CHECK(c >= 0);
	a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	CHECK(a >= 0);
	/* The two ends speak the protocol. */
	vhu_dev_init(&dev, VHU_FEATURES_DEFAULT, 2);
	struct vhu_msg_hdr h = { VHU_GET_QUEUE_NUM, VHU_FLAG_VERSION, 0 };
	struct vhu_result res;
	struct vhu_msg reply;
	CHECK_EQ(write(c, &h, sizeof(h)), sizeof(h));
	CHECK_EQ(vhu_handle_msg(&dev, a, &res), 0);
	CHECK(res.reply && !res.disconnect);
	CHECK_EQ(vhu_read_msg(c, &reply), -EBADMSG);   /* replies are not requests */
	close(a);
	close(c);
	/* A live socket is not taken over. */
	CHECK_EQ(vhu_listen(path), -EADDRINUSE);
	/* A stale socket (nobody listening) is replaced. */
	close(l);
	l = vhu_listen(path);
	CHECK(l >= 0);
	close(l);
	unlink(path);
	/* Any other file is left alone. */
	f = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	CHECK(f >= 0);
	close(f);
	CHECK_EQ(vhu_listen(path), -EEXIST);
	unlink(path);
	CHECK_EQ(vhu_connect(path), -ENOENT);
	CHECK(vhu_listen("") < 0);
	char longp[200];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = 0;
	CHECK_EQ(vhu_listen(longp), -ENAMETOOLONG);
	rmdir(dir);
	vhu_dev_free(&dev);
}

/* vhu_dispatch directly: the request names and the header rules. */
static void test_dispatch_direct(void)
{
	struct vhu_msg msg = { .hdr = { VHU_GET_QUEUE_NUM, VHU_FLAG_VERSION, 0 } }, reply;
	struct vhu_result res;

	CHECK(strcmp(vhu_request_name(VHU_SET_MEM_TABLE), "SET_MEM_TABLE") == 0);
	CHECK(strcmp(vhu_request_name(6), "unknown") == 0);
	CHECK(strcmp(vhu_request_name(1000), "unknown") == 0);
	vhu_dev_init(&dev, VHU_FEATURES_DEFAULT, 4);
	CHECK_EQ(vhu_dispatch(&dev, &msg, &reply, &res), 0);
	CHECK(res.reply);
	CHECK_EQ(reply.hdr.size, 8);
	CHECK_EQ(reply.payload.u64, 8);
	msg.hdr.size = 1000;
	CHECK_EQ(vhu_dispatch(&dev, &msg, &reply, &res), -EBADMSG);
	CHECK(res.disconnect);
	vhu_dev_free(&dev);
}

int main(void)
{
	int start;

	setup_memory();
	start = count_fds();
	connect_pair();
	test_negotiation();
	test_memory();
	test_vrings();
	test_no_protocol_features();
	test_unknown_and_malformed();
	test_split_message();
	test_sockets();
	test_dispatch_direct();
	close(fe);
	close(be);
	CHECK_EQ(count_fds(), start);
	printf("test_vhost_user: ok\n");
	return 0;
}
