/* Split virtqueues (tun/virtq.h) over a memfd-backed "guest memory" of two
 * regions that are adjacent in guest-physical space but not in weftd's
 * address space (a PROT_NONE hole between them): pop and push of single and
 * chained descriptors, every rule a hostile guest can break, EVENT_IDX
 * notification decisions against a naive model, and the virtio-net TX read
 * and RX write with and without MRG_RXBUF. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tun/virtq.h"

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
	REGION_SIZE = MIB,
	NUM = 16,
	DESC_GPA = 0x1000,
	AVAIL_GPA = 0x2000,
	USED_GPA = 0x3000,
	BUF_GPA = 0x10000,
	UVA_BASE = 0x7f0000000000ull >> 8,
};

struct guest {
	uint8_t *reserve;          /* 4 MiB: A, hole, B, hole */
	struct virtq_mem mem;
	struct virtq vq;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t avail_idx;        /* the guest's next avail index */
};

static struct guest g;

/* Two regions of one memfd: gpa [0, 1M) and [1M, 2M), mapped 2 MiB apart. */
static void guest_map(void)
{
	int fd = memfd_create("guest", MFD_CLOEXEC);

	CHECK(fd >= 0);
	CHECK(ftruncate(fd, 2 * REGION_SIZE) == 0);
	g.reserve = mmap(NULL, 4 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(g.reserve != MAP_FAILED);
	CHECK(mmap(g.reserve, REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
	      g.reserve);
	CHECK(mmap(g.reserve + 2 * MIB, REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		   fd, REGION_SIZE) == g.reserve + 2 * MIB);
	close(fd);
	g.mem.n = 2;
	g.mem.r[0] = (struct virtq_mem_region){ .gpa = 0, .uva = UVA_BASE, .size = REGION_SIZE,
						.host = g.reserve };
	g.mem.r[1] = (struct virtq_mem_region){ .gpa = REGION_SIZE, .uva = UVA_BASE + 8 * MIB,
						.size = REGION_SIZE, .host = g.reserve + 2 * MIB };
}

/* The test's own translation (the harness knows the layout). */
static void *gp(uint64_t gpa)
{
	if (gpa < REGION_SIZE)
		return g.reserve + gpa;
	CHECK(gpa < 2 * REGION_SIZE);
	return g.reserve + 2 * MIB + (gpa - REGION_SIZE);
}

/* Fresh rings, zeroed; used->idx and the avail index start at start. */
static void ring_reset(uint64_t features, uint16_t start)
{
	memset(gp(0), 0, 0x10000);
	g.desc = gp(DESC_GPA);
	g.avail = gp(AVAIL_GPA);
	g.used = gp(USED_GPA);
	g.used->idx = start;
	g.avail->idx = start;
	g.avail_idx = start;
	virtq_init(&g.vq);
	virtq_set_features(&g.vq, features);
	virtq_set_rings(&g.vq, &g.mem, NUM, g.desc, g.avail, g.used);
	virtq_start(&g.vq, start);
}

static void set_desc(uint16_t i, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	g.desc[i] = (struct vring_desc){ .addr = addr, .len = len, .flags = flags, .next = next };
}

static void publish(uint16_t head)
{
	g.avail->ring[g.avail_idx % NUM] = head;
	g.avail_idx++;
	__atomic_store_n(&g.avail->idx, g.avail_idx, __ATOMIC_RELEASE);
}

static uint16_t avail_event(void)
{
	return *(uint16_t *)&g.used->ring[NUM];
}

static void test_translate(void)
{
	CHECK(virtq_mem_gpa(&g.mem, 0, REGION_SIZE) == g.reserve);
	CHECK(virtq_mem_gpa(&g.mem, REGION_SIZE - 1, 1) == g.reserve + REGION_SIZE - 1);
	CHECK(virtq_mem_gpa(&g.mem, REGION_SIZE, 16) == g.reserve + 2 * MIB);
	CHECK(virtq_mem_gpa(&g.mem, 2 * REGION_SIZE - 16, 16) == g.reserve + 3 * MIB - 16);
	/* Spanning the two regions, even though gpa-contiguous. */
	CHECK(!virtq_mem_gpa(&g.mem, REGION_SIZE - 8, 16));
	CHECK(!virtq_mem_gpa(&g.mem, 0, REGION_SIZE + 1));
	/* Past the end, and wrapping. */
	CHECK(!virtq_mem_gpa(&g.mem, 2 * REGION_SIZE, 0));
	CHECK(!virtq_mem_gpa(&g.mem, 2 * REGION_SIZE - 1, 2));
	CHECK(!virtq_mem_gpa(&g.mem, UINT64_MAX - 3, 8));
	CHECK(!virtq_mem_gpa(&g.mem, 16, UINT64_MAX));
	CHECK(virtq_mem_gpa(&g.mem, 16, 0) == g.reserve + 16);
	/* The same by frontend virtual address. */
	CHECK(virtq_mem_uva(&g.mem, UVA_BASE + 5, 10) == g.reserve + 5);
	CHECK(virtq_mem_uva(&g.mem, UVA_BASE + 8 * MIB, REGION_SIZE) == g.reserve + 2 * MIB);
	CHECK(!virtq_mem_uva(&g.mem, UVA_BASE + REGION_SIZE - 1, 2));
	CHECK(!virtq_mem_uva(&g.mem, UVA_BASE - 1, 1));
	CHECK(!virtq_mem_uva(&g.mem, 5, 1));
	/* An empty table translates nothing. */
	struct virtq_mem none = { 0 };
	CHECK(!virtq_mem_gpa(&none, 0, 0));
}

static void test_pop_push(void)
{
	struct virtq_chain c;

	ring_reset(0, 0);
	CHECK_EQ(virtq_pop(&g.vq, &c, VIRTQ_CHAIN_ANY), 0);

	/* One readable buffer. */
	set_desc(3, BUF_GPA, 100, 0, 0);
	publish(3);
	CHECK_EQ(virtq_pop(&g.vq, &c, VIRTQ_CHAIN_OUT), 1);
	CHECK_EQ(c.head, 3);
	CHECK_EQ(c.n_out, 1);
	CHECK_EQ(c.n_in, 0);
	CHECK_EQ(c.out_len, 100);
	CHECK(c.iov[0].base == gp(BUF_GPA));
	CHECK_EQ(virtq_pop(&g.vq, &c, VIRTQ_CHAIN_OUT), 0);
	virtq_push(&g.vq, 3, 77);
	CHECK_EQ(g.used->idx, 1);
	CHECK_EQ(g.used->ring[0].id, 3);
	CHECK_EQ(g.used->ring[0].len, 77);

	/* Three readable, a zero-length one (skipped), two writable, one
	 * of them in the second region. */
	set_desc(5, BUF_GPA + 0x100, 10, VRING_DESC_F_NEXT, 9);
	set_desc(9, BUF_GPA + 0x200, 20, VRING_DESC_F_NEXT, 0);
	set_desc(0, BUF_GPA + 0x300, 30, VRING_DESC_F_NEXT, 1);
	set_desc(1, BUF_GPA + 0x400, 0, VRING_DESC_F_NEXT, 2);
	set_desc(2, BUF_GPA + 0x500, 40, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 15);
	set_desc(15, REGION_SIZE + 0x40, 50, VRING_DESC_F_WRITE, 0);
	publish(5);
	CHECK_EQ(virtq_pop(&g.vq, &c, VIRTQ_CHAIN_ANY), 1);
	CHECK_EQ(c.head, 5);
	CHECK_EQ(c.n_out, 3);
	CHECK_EQ(c.n_in, 2);
	CHECK_EQ(c.out_len, 60);
	CHECK_EQ(c.in_len, 90);
	CHECK(c.iov[1].base == gp(BUF_GPA + 0x200));
	CHECK_EQ(c.iov[2].len, 30);
	CHECK(c.iov[3].base == gp(BUF_GPA + 0x500));
	CHECK(c.iov[4].base == gp(REGION_SIZE + 0x40));
	virtq_push(&g.vq, 5, 90);
	CHECK_EQ(g.used->idx, 2);
	CHECK_EQ(g.used->ring[1].id, 5);
	CHECK_EQ(g.used->ring[1].len, 90);
	CHECK(!g.vq.broken);

	/* The longest chain: every descriptor once. */
	for (int i = 0; i < NUM; i++)
		set_desc((uint16_t)i, BUF_GPA + i, 1, i < NUM - 1 ? VRING_DESC_F_NEXT : 0,
			 (uint16_t)((i + 1) % NUM));
	publish(0);
	CHECK_EQ(virtq_pop(&g.vq, &c, VIRTQ_CHAIN_OUT), 1);
	CHECK_EQ(c.n_out, NUM);
	CHECK_EQ(c.out_len, NUM);
	virtq_push(&g.vq, 0, 0);

	/* The ring wraps: NUM * 3 single-buffer chains in a row. */
	for (int i = 0; i < 3 * NUM; i++) {
		set_desc(i % NUM, BUF_GPA + i, 1, 0, 0);
		publish(i % NUM);
		CHECK_EQ(virtq_pop(&g.vq, &c, VIRTQ_CHAIN_OUT), 1);
		CHECK_EQ(c.head, i % NUM);
		virtq_push(&g.vq, c.head, 0);
	}
	CHECK_EQ(g.used->idx, 3 + 3 * NUM);
}

/* Publishes head after set-up and expects the pop to break the queue. */
static void expect_broken(enum virtq_chain_kind kind, uint16_t head, const char *why_part)
{
	struct virtq_chain c;

	publish(head);
	CHECK_EQ(virtq_pop(&g.vq, &c, kind), -EIO);
	CHECK(g.vq.broken);
	CHECK(g.vq.why && strstr(g.vq.why, why_part));
	/* Broken for good, and nothing more reaches the used ring. */
	CHECK_EQ(virtq_pop(&g.vq, &c, kind), -EIO);
	virtq_push(&g.vq, 0, 0);
	CHECK_EQ(g.used->idx, 0);
}

static void test_malformed(void)
{
	struct virtq_chain c;

	ring_reset(0, 0);
	set_desc(0, BUF_GPA, 8, VRING_DESC_F_NEXT, 1);
	set_desc(1, BUF_GPA, 8, VRING_DESC_F_NEXT, 0);
	expect_broken(VIRTQ_CHAIN_ANY, 0, "loops");

	ring_reset(0, 0);
	set_desc(4, BUF_GPA, 8, VRING_DESC_F_NEXT, 4);
	expect_broken(VIRTQ_CHAIN_ANY, 4, "loops");

	/* Empty buffers take no iov slot: only the loop rule stops these. */
	ring_reset(0, 0);
	set_desc(6, BUF_GPA, 0, VRING_DESC_F_NEXT, 7);
	set_desc(7, BUF_GPA, 0, VRING_DESC_F_NEXT, 6);
	expect_broken(VIRTQ_CHAIN_ANY, 6, "loops");

	ring_reset(0, 0);
	expect_broken(VIRTQ_CHAIN_ANY, NUM, "avail ring entry");

	ring_reset(0, 0);
	set_desc(0, BUF_GPA, 8, VRING_DESC_F_NEXT, NUM);
	expect_broken(VIRTQ_CHAIN_ANY, 0, "next out of range");

	ring_reset(0, 0);
	set_desc(0, BUF_GPA, 8, VRING_DESC_F_INDIRECT, 0);
	expect_broken(VIRTQ_CHAIN_ANY, 0, "indirect");

	ring_reset(0, 0);
	set_desc(0, 2 * REGION_SIZE, 8, 0, 0);
	expect_broken(VIRTQ_CHAIN_ANY, 0, "outside");

	ring_reset(0, 0);
	set_desc(0, 2 * REGION_SIZE - 4, 8, 0, 0);
	expect_broken(VIRTQ_CHAIN_ANY, 0, "outside");

	ring_reset(0, 0);
	set_desc(0, REGION_SIZE - 4, 8, 0, 0);    /* spans the two regions */
	expect_broken(VIRTQ_CHAIN_ANY, 0, "outside");

	ring_reset(0, 0);
	set_desc(0, UINT64_MAX - 2, 8, 0, 0);
	expect_broken(VIRTQ_CHAIN_ANY, 0, "outside");

	ring_reset(0, 0);
	set_desc(0, BUF_GPA, 8, VRING_DESC_F_WRITE, 0);
	expect_broken(VIRTQ_CHAIN_OUT, 0, "writable descriptor in an output");

	ring_reset(0, 0);
	set_desc(0, BUF_GPA, 8, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 1);
	set_desc(1, BUF_GPA, 8, 0, 0);
	expect_broken(VIRTQ_CHAIN_IN, 0, "readable descriptor in an input");

	ring_reset(0, 0);
	set_desc(0, BUF_GPA, 8, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 1);
	set_desc(1, BUF_GPA, 8, 0, 0);
	expect_broken(VIRTQ_CHAIN_ANY, 0, "readable descriptor after");

	/* The avail index may move by num, not more. */
	ring_reset(0, 0);
	for (int i = 0; i < NUM; i++)
		set_desc(i, BUF_GPA, 1, 0, 0);
	g.avail->idx = NUM;
	CHECK_EQ(virtq_pop(&g.vq, &c, VIRTQ_CHAIN_OUT), 1);
	ring_reset(0, 0);
	g.avail->idx = NUM + 1;
	CHECK_EQ(virtq_pop(&g.vq, &c, VIRTQ_CHAIN_OUT), -EIO);
	CHECK(strstr(g.vq.why, "avail index"));
	/* ... also backwards, and across the 16-bit wrap. */
	ring_reset(0, 100);
	g.avail->idx = 99;
	CHECK_EQ(virtq_pop(&g.vq, &c, VIRTQ_CHAIN_OUT), -EIO);
	ring_reset(0, 65530);
	g.avail->idx = (uint16_t)(65530 + NUM);
	for (int i = 0; i < NUM; i++)
		g.avail->ring[(65530 + i) % NUM] = (uint16_t)i;
	for (int i = 0; i < NUM; i++)
		CHECK_EQ(virtq_pop(&g.vq, &c, VIRTQ_CHAIN_OUT), 1);
	CHECK_EQ(virtq_pop(&g.vq, &c, VIRTQ_CHAIN_OUT), 0);

	/* A longer chain than the iov array holds (on a bigger ring). */
	{
		struct vring_desc *bd = gp(0x8000);

		ring_reset(0, 0);
		virtq_set_rings(&g.vq, &g.mem, 128, bd, g.avail, g.used);
		for (int i = 0; i < 128; i++)
			bd[i] = (struct vring_desc){ .addr = BUF_GPA, .len = 1,
						     .flags = VRING_DESC_F_NEXT, .next = (uint16_t)(i + 1) };
		bd[127].flags = 0;
		g.avail->ring[0] = 0;
		g.avail->idx = 1;
		CHECK_EQ(virtq_pop(&g.vq, &c, VIRTQ_CHAIN_OUT), -EIO);
		CHECK(strstr(g.vq.why, "too many buffers"));
	}

	/* A queue without rings is an error, not a crash. */
	struct virtq idle;
	virtq_init(&idle);
	CHECK_EQ(virtq_pop(&idle, &c, VIRTQ_CHAIN_ANY), -EIO);
	virtq_push(&idle, 0, 0);
	CHECK(!virtq_should_notify(&idle));
}

/* The naive model: the guest asked to be interrupted when used->idx passes
 * event; the pushes took it from old to now one step at a time. */
static bool model_need_event(uint16_t event, uint16_t old, uint16_t now)
{
	for (uint16_t i = old; i != now; i++)
		if (i == event)
			return true;
	return false;
}

static void test_event_idx(void)
{
	struct virtq_chain c;
	uint64_t seed = 0x1234567;
	int notified = 0, not_notified = 0;

	for (int round = 0; round < 4000; round++) {
		uint16_t start;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		start = (uint16_t)(seed >> 33);
		if (round % 3 == 0)
			start = (uint16_t)(65536 - NUM / 2 + (seed >> 60));
		ring_reset(1ull << VIRTIO_RING_F_EVENT_IDX, start);
		for (int batch = 0; batch < 6; batch++) {
			uint16_t old = g.vq.used_idx, event;
			int k;

			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			k = (int)((seed >> 40) % (NUM + 1));
			event = (uint16_t)(old + (int)((seed >> 20) % (2 * NUM + 1)) - NUM);
			if (batch == 5)
				event = (uint16_t)(seed >> 48);
			*(uint16_t *)&g.avail->ring[NUM] = event;
			for (int i = 0; i < k; i++) {
				set_desc((uint16_t)i, BUF_GPA, 1, 0, 0);
				publish((uint16_t)i);
				CHECK_EQ(virtq_pop(&g.vq, &c, VIRTQ_CHAIN_OUT), 1);
				/* The guest learns where we are. */
				CHECK_EQ(avail_event(), g.vq.last_avail);
				virtq_push(&g.vq, c.head, 0);
			}
			bool want = model_need_event(event, old, g.vq.used_idx);
			bool got = virtq_should_notify(&g.vq);
			if (got != want)
				FAIL("event %u old %u new %u: notify %d, model %d\n", event, old,
				     g.vq.used_idx, got, want);
			notified += got;
			not_notified += !got;
			/* A second decision without pushes never notifies. */
			CHECK(!virtq_should_notify(&g.vq));
		}
	}
	CHECK(notified > 1000 && not_notified > 1000);

	/* Going idle leaves avail_event at last_avail. */
	ring_reset(1ull << VIRTIO_RING_F_EVENT_IDX, 40);
	*(uint16_t *)&g.used->ring[NUM] = 7;
	CHECK_EQ(virtq_pop(&g.vq, &c, VIRTQ_CHAIN_OUT), 0);
	CHECK_EQ(avail_event(), 40);

	/* Without EVENT_IDX: the NO_INTERRUPT flag decides. */
	ring_reset(0, 0);
	set_desc(0, BUF_GPA, 1, 0, 0);
	CHECK(!virtq_should_notify(&g.vq));
	publish(0);
	CHECK_EQ(virtq_pop(&g.vq, &c, VIRTQ_CHAIN_OUT), 1);
	virtq_push(&g.vq, 0, 0);
	CHECK(virtq_should_notify(&g.vq));
	CHECK(!virtq_should_notify(&g.vq));
	g.avail->flags = VRING_AVAIL_F_NO_INTERRUPT;
	publish(0);
	CHECK_EQ(virtq_pop(&g.vq, &c, VIRTQ_CHAIN_OUT), 1);
	virtq_push(&g.vq, 0, 0);
	CHECK(!virtq_should_notify(&g.vq));
	/* Nor is avail_event written without EVENT_IDX. */
	CHECK_EQ(avail_event(), 0);

	/* The notify itself: 1 on the call eventfd. */
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	uint64_t v = 0;
	CHECK(efd >= 0);
	CHECK_EQ(virtq_notify(&g.vq), 0);    /* no call fd: nothing */
	g.vq.call_fd = efd;
	CHECK_EQ(virtq_notify(&g.vq), 0);
	CHECK_EQ(virtq_notify(&g.vq), 0);
	CHECK_EQ(read(efd, &v, sizeof(v)), 8);
	CHECK_EQ(v, 2);
	close(efd);
	g.vq.call_fd = -1;
}

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 8) + 1);
}

static void test_net_tx(void)
{
	uint8_t frame[2000], buf[2000];
	uint8_t *b = gp(BUF_GPA);

	CHECK_EQ(virtq_net_hdr_len(0), 10);
	CHECK_EQ(virtq_net_hdr_len(1ull << VIRTIO_F_VERSION_1), 12);
	CHECK_EQ(virtq_net_hdr_len(1ull << VIRTIO_NET_F_MRG_RXBUF), 12);

	ring_reset(1ull << VIRTIO_F_VERSION_1, 0);
	for (size_t i = 0; i < sizeof(frame); i++)
		frame[i] = pattern(i);
	/* Header alone, then the frame in two pieces (one in region B). */
	memcpy(b, frame, 12);
	memcpy(b + 0x1000, frame + 12, 500);
	memcpy(gp(REGION_SIZE + 0x800), frame + 512, 1000);
	set_desc(7, BUF_GPA, 12, VRING_DESC_F_NEXT, 8);
	set_desc(8, BUF_GPA + 0x1000, 500, VRING_DESC_F_NEXT, 9);
	set_desc(9, REGION_SIZE + 0x800, 1000, 0, 0);
	publish(7);
	CHECK_EQ(virtq_net_tx_read(&g.vq, buf, sizeof(buf)), 1512);
	CHECK(memcmp(buf, frame, 1512) == 0);
	CHECK_EQ(g.used->idx, 1);
	CHECK_EQ(g.used->ring[0].id, 7);
	CHECK_EQ(g.used->ring[0].len, 0);
	CHECK_EQ(virtq_net_tx_read(&g.vq, buf, sizeof(buf)), 0);

	/* Too long for the caller: dropped, but the chain goes back. */
	publish(7);
	CHECK_EQ(virtq_net_tx_read(&g.vq, buf, 1511), -EMSGSIZE);
	CHECK_EQ(g.used->idx, 2);
	CHECK_EQ(g.used->ring[1].id, 7);
	/* Exactly the cap fits. */
	publish(7);
	CHECK_EQ(virtq_net_tx_read(&g.vq, buf, 1512), 1512);
	/* Shorter than the header. */
	set_desc(3, BUF_GPA, 11, 0, 0);
	publish(3);
	CHECK_EQ(virtq_net_tx_read(&g.vq, buf, sizeof(buf)), -EINVAL);
	CHECK_EQ(g.used->idx, 4);
	CHECK_EQ(g.used->ring[3].id, 3);
	/* A writable descriptor in a TX chain breaks the queue. */
	set_desc(3, BUF_GPA, 100, VRING_DESC_F_WRITE, 0);
	publish(3);
	CHECK_EQ(virtq_net_tx_read(&g.vq, buf, sizeof(buf)), -EIO);
	CHECK_EQ(g.used->idx, 4);
	CHECK(g.vq.broken);
}

/* Posts n writable single-descriptor RX buffers of len bytes each. */
static void post_rx(uint16_t first, int n, uint32_t len)
{
	for (int i = 0; i < n; i++) {
		uint16_t d = (uint16_t)((first + i) % NUM);

		set_desc(d, BUF_GPA + (uint64_t)d * 0x1000, len, VRING_DESC_F_WRITE, 0);
		publish(d);
	}
}

/* Reassembles what the guest received from used elements [from, from+n). */
static size_t rx_collect(uint16_t from, uint16_t n, uint8_t *out)
{
	size_t off = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct vring_used_elem *e = &g.used->ring[(uint16_t)(from + i) % NUM];

		memcpy(out + off, gp(BUF_GPA + (uint64_t)e->id * 0x1000), e->len);
		off += e->len;
	}
	return off;
}

static void test_net_rx(void)
{
	uint8_t frame[4000], got[8000];
	struct virtio_net_hdr h = { .flags = VIRTIO_NET_HDR_F_DATA_VALID, .gso_type = 0,
				    .hdr_len = 0x1234 };
	struct virtio_net_hdr_mrg_rxbuf *mh;

	for (size_t i = 0; i < sizeof(frame); i++)
		frame[i] = pattern(i * 3);

	/* Legacy header (10 bytes), one chain of two buffers. */
	ring_reset(0, 0);
	set_desc(2, BUF_GPA, 600, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 3);
	set_desc(3, REGION_SIZE, 2000, VRING_DESC_F_WRITE, 0);
	publish(2);
	CHECK_EQ(virtq_net_rx_write(&g.vq, &h, frame, 1500), 1);
	CHECK_EQ(g.used->idx, 1);
	CHECK_EQ(g.used->ring[0].id, 2);
	CHECK_EQ(g.used->ring[0].len, 1510);
	CHECK(memcmp(gp(BUF_GPA), &h, 10) == 0);
	CHECK(memcmp(gp(BUF_GPA + 10), frame, 590) == 0);
	CHECK(memcmp(gp(REGION_SIZE), frame + 590, 910) == 0);

	/* VERSION_1 without MRG_RXBUF: 12-byte header, num_buffers 1. */
	ring_reset(1ull << VIRTIO_F_VERSION_1, 0);
	post_rx(0, 1, 1600);
	CHECK_EQ(virtq_net_rx_write(&g.vq, NULL, frame, 1500), 1);
	mh = gp(BUF_GPA);
	CHECK_EQ(mh->hdr.flags, 0);
	CHECK_EQ(mh->num_buffers, 1);
	CHECK_EQ(g.used->ring[0].len, 1512);
	CHECK(memcmp(gp(BUF_GPA + 12), frame, 1500) == 0);
	/* No buffer: no room. A buffer too small: not taken, dropped. */
	CHECK_EQ(virtq_net_rx_write(&g.vq, NULL, frame, 100), -ENOBUFS);
	post_rx(1, 1, 1000);
	CHECK_EQ(virtq_net_rx_write(&g.vq, NULL, frame, 1500), -EMSGSIZE);
	CHECK_EQ(g.vq.last_avail, 1);
	CHECK_EQ(g.used->idx, 1);
	/* ... but a frame that fits takes it. */
	CHECK_EQ(virtq_net_rx_write(&g.vq, NULL, frame, 988), 1);
	CHECK_EQ(g.used->ring[1].len, 1000);

	/* MRG_RXBUF: 512-byte buffers, 1500 + 12 bytes -> 3 buffers. */
	ring_reset(1ull << VIRTIO_NET_F_MRG_RXBUF | 1ull << VIRTIO_F_VERSION_1, 0);
	post_rx(0, 8, 512);
	CHECK_EQ(virtq_net_rx_write(&g.vq, &h, frame, 1500), 3);
	CHECK_EQ(g.used->idx, 3);
	CHECK_EQ(g.used->ring[0].len, 512);
	CHECK_EQ(g.used->ring[1].len, 512);
	CHECK_EQ(g.used->ring[2].len, 488);
	mh = gp(BUF_GPA);
	CHECK_EQ(mh->num_buffers, 3);
	CHECK_EQ(mh->hdr.flags, VIRTIO_NET_HDR_F_DATA_VALID);
	CHECK_EQ(mh->hdr.hdr_len, 0x1234);
	CHECK_EQ(rx_collect(0, 3, got), 1512);
	CHECK(memcmp(got + 12, frame, 1500) == 0);
	/* Five buffers left, 2560 bytes: 3000 + 12 does not fit. Nothing is
	 * taken; once the guest posts more, the same frame goes in. */
	CHECK_EQ(virtq_net_rx_write(&g.vq, &h, frame, 3000), -ENOBUFS);
	CHECK_EQ(g.vq.last_avail, 3);
	CHECK_EQ(g.used->idx, 3);
	post_rx(8, 1, 512);
	CHECK_EQ(virtq_net_rx_write(&g.vq, &h, frame, 3000), 6);
	CHECK_EQ(((struct virtio_net_hdr_mrg_rxbuf *)gp(BUF_GPA + 3 * 0x1000))->num_buffers, 6);
	CHECK_EQ(rx_collect(3, 6, got), 3012);
	CHECK(memcmp(got + 12, frame, 3000) == 0);

	/* A first buffer smaller than the header breaks the queue. */
	ring_reset(1ull << VIRTIO_NET_F_MRG_RXBUF, 0);
	post_rx(0, 1, 8);
	CHECK_EQ(virtq_net_rx_write(&g.vq, NULL, frame, 10), -EIO);
	CHECK(g.vq.broken);
	/* A readable descriptor in an RX chain too. */
	ring_reset(1ull << VIRTIO_NET_F_MRG_RXBUF, 0);
	set_desc(0, BUF_GPA, 100, 0, 0);
	publish(0);
	CHECK_EQ(virtq_net_rx_write(&g.vq, NULL, frame, 10), -EIO);

	/* Random buffer and frame sizes against the obvious model: the
	 * frame fills buffers in order; each used len is what went in. */
	uint64_t seed = 99;
	for (int round = 0; round < 3000; round++) {
		uint32_t sizes[NUM];
		int posted;
		size_t len, room = 0, need;
		bool mrg;
		uint16_t start;
		int r;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		mrg = seed >> 63;
		start = (uint16_t)(seed >> 20);
		ring_reset((mrg ? 1ull << VIRTIO_NET_F_MRG_RXBUF : 0) | 1ull << VIRTIO_F_VERSION_1,
			   start);
		posted = (int)((seed >> 30) % (NUM + 1));
		len = (size_t)((seed >> 40) % sizeof(frame));
		for (int i = 0; i < posted; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			sizes[i] = 12 + (uint32_t)((seed >> 33) % 1500);
			set_desc((uint16_t)i, BUF_GPA + (uint64_t)i * 0x1000, sizes[i],
				 VRING_DESC_F_WRITE, 0);
			publish((uint16_t)i);
		}
		need = len + 12;
		int want_n = 0;
		if (mrg) {
			for (int i = 0; i < posted && room < need; i++, want_n++)
				room += sizes[i];
		} else if (posted) {
			room = sizes[0];
			want_n = 1;
		}
		memset(gp(BUF_GPA), 0xee, (size_t)NUM * 0x1000);
		r = virtq_net_rx_write(&g.vq, NULL, frame, len);
		if (room < need) {
			CHECK_EQ(r, posted == 0 || mrg ? -ENOBUFS : -EMSGSIZE);
			/* Nothing taken, nothing published. */
			CHECK_EQ(g.vq.last_avail, start);
			CHECK_EQ(g.used->idx, start);
			continue;
		}
		CHECK_EQ(r, want_n);
		uint16_t from = (uint16_t)(g.used->idx - want_n);
		for (int i = 0; i < want_n; i++) {
			uint32_t expect = i < want_n - 1 ? sizes[i] : (uint32_t)(need - (room - sizes[i]));
			CHECK_EQ(g.used->ring[(uint16_t)(from + i) % NUM].id, i);
			CHECK_EQ(g.used->ring[(uint16_t)(from + i) % NUM].len, expect);
		}
		CHECK_EQ(rx_collect(from, (uint16_t)want_n, got), need);
		CHECK_EQ(((struct virtio_net_hdr_mrg_rxbuf *)got)->num_buffers, want_n);
		CHECK(memcmp(got + 12, frame, len) == 0);
	}
}

int main(void)
{
	guest_map();
	test_translate();
	test_pop_push();
	test_malformed();
	test_event_idx();
	test_net_tx();
	test_net_rx();
	printf("test_virtq: ok\n");
	return 0;
}
