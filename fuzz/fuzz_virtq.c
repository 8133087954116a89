/* libFuzzer target for the split virtqueue data path (tun/virtq.h): the
 * functions the workers call on a vhost-user port, virtq_pop, virtq_push,
 * virtq_should_notify, virtq_net_tx_read and virtq_net_rx_write, on rings
 * that the input writes into a fixed guest memory of two 64 KiB regions
 * (gpa-adjacent, mapped apart with PROT_NONE guard areas around both, so
 * any access outside them faults).
 *
 * Input: a config byte (bit 0 EVENT_IDX, bit 1 MRG_RXBUF, bit 2 VERSION_1),
 * log2 of the ring size (mod 9), the 16-bit start index, a 16-bit length and
 * that many bytes copied into region A from gpa 0 (descriptor table at 0,
 * avail ring at 0x1000, used ring at 0x1800), then operations, one byte
 * each plus operands: pop (any/out/in) and push, TX read, RX write, notify
 * decision, poke guest memory, publish a head.
 *
 * Checked: every buffer a pop returns lies in one region and the chain's
 * totals add up; a broken queue stays broken and writes nothing more;
 * used->idx follows every push; TX reads and RX writes return only what
 * their contract allows and consume exactly the chains they say; RX writes
 * fill exactly header + frame bytes; the notification decision equals a
 * naive model of vring_need_event / NO_INTERRUPT. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tun/virtq.h"

#define CHECK(cond)                                                                \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "fuzz_virtq: check failed at %s:%d: %s\n", \
				__FILE__, __LINE__, #cond);                        \
			abort();                                                   \
		}                                                                  \
	} while (0)

enum {
	KIB = 1024,
	REGION = 64 * KIB,
	DESC_GPA = 0,
	AVAIL_GPA = 0x1000,
	USED_GPA = 0x1800,
	F_EVENT_IDX = 1 << 0,
	F_MRG = 1 << 1,
	F_V1 = 1 << 2,
	MAX_OPS = 256,
	FRAME_MAX = 4096,
	TX_CAP_MAX = 65536,
};

static uint8_t *reserve;       /* 4 x 64 KiB: guard, A, guard, B (then guard) */
static uint8_t *ra, *rb;
static struct virtq_mem mem;
static int trace = -1;

static void setup(void)
{
	int fd;

	reserve = mmap(NULL, 6 * REGION, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(reserve != MAP_FAILED);
	fd = memfd_create("fuzz_virtq", MFD_CLOEXEC);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, 2 * REGION) == 0);
	ra = mmap(reserve + REGION, REGION, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
	rb = mmap(reserve + 3 * REGION, REGION, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
		  REGION);
	CHECK(ra == reserve + REGION && rb == reserve + 3 * REGION);
	close(fd);
	mem.n = 2;
	mem.r[0] = (struct virtq_mem_region){ .gpa = 0, .uva = 0x100000, .size = REGION, .host = ra };
	mem.r[1] = (struct virtq_mem_region){ .gpa = REGION, .uva = 0x200000, .size = REGION,
					      .host = rb };
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

static bool in_one_region(const uint8_t *p, uint32_t len)
{
	return (p >= ra && p + len <= ra + REGION) || (p >= rb && p + len <= rb + REGION);
}

static void check_chain(const struct virtq *vq, const struct virtq_chain *c)
{
	uint64_t out = 0, in = 0;

	CHECK(c->head < vq->num);
	CHECK(c->n_out + c->n_in <= VIRTQ_IOV_MAX);
	for (int i = 0; i < c->n_out + c->n_in; i++) {
		CHECK(c->iov[i].len > 0);
		CHECK(in_one_region(c->iov[i].base, c->iov[i].len));
		if (i < c->n_out)
			out += c->iov[i].len;
		else
			in += c->iov[i].len;
	}
	CHECK(out == c->out_len && in == c->in_len);
}

static uint16_t used_idx(void)
{
	return ((struct vring_used *)(ra + USED_GPA))->idx;
}

static bool model_need_event(uint16_t event, uint16_t old, uint16_t now)
{
	for (uint16_t i = old; i != now; i++)
		if (i == event)
			return true;
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t frame[FRAME_MAX], txbuf[TX_CAP_MAX];
	struct input in = { data, size };
	struct virtq vq;
	struct virtq_chain c;
	struct vring_avail *avail;
	uint8_t cfg, lg;
	uint16_t num, start, blob, avail_idx;
	uint64_t features = 0;
	bool was_broken = false;

	if (!reserve)
		setup();
	if (trace < 0)
		trace = getenv("FUZZ_TRACE") != NULL;
	memset(ra, 0, REGION);
	memset(rb, 0, REGION);

	cfg = take8(&in);
	lg = take8(&in) % 9;
	num = (uint16_t)(1u << lg);
	start = take16(&in);
	blob = take16(&in);
	if (blob > in.left)
		blob = (uint16_t)in.left;
	memcpy(ra, in.p, blob);
	in.p += blob;
	in.left -= blob;

	if (cfg & F_EVENT_IDX)
		features |= 1ull << VIRTIO_RING_F_EVENT_IDX;
	if (cfg & F_MRG)
		features |= 1ull << VIRTIO_NET_F_MRG_RXBUF;
	if (cfg & F_V1)
		features |= 1ull << VIRTIO_F_VERSION_1;
	avail = (struct vring_avail *)(ra + AVAIL_GPA);
	avail_idx = avail->idx;
	virtq_init(&vq);
	virtq_set_features(&vq, features);
	virtq_set_rings(&vq, &mem, num, (void *)(ra + DESC_GPA), avail, (void *)(ra + USED_GPA));
	virtq_start(&vq, start);
	CHECK(vq.used_idx == used_idx());
	if (trace)
		fprintf(stderr, "num %u start %u features %#llx\n", num, start,
			(unsigned long long)features);

	for (int op = 0; op < MAX_OPS && in.left; op++) {
		uint8_t kind = take8(&in) % 8;
		/* The guest's used->idx, and ours: they differ only after an
		 * RX write that was refused wrote into a buffer the guest put
		 * over its own used ring (its problem, not weftd's). */
		uint16_t before = vq.used_idx, guest_before = used_idx(), last = vq.last_avail;
		bool pushed = false;
		int r = 0;

		switch (kind) {
		case 0:
		case 1:
		case 2: {
			static const enum virtq_chain_kind kinds[] = { VIRTQ_CHAIN_ANY, VIRTQ_CHAIN_OUT,
								       VIRTQ_CHAIN_IN };
			uint8_t len = take8(&in);

			r = virtq_pop(&vq, &c, kinds[kind]);
			CHECK(r == 1 || r == 0 || r == -EIO);
			if (r == 1) {
				check_chain(&vq, &c);
				CHECK(vq.last_avail == (uint16_t)(last + 1));
				if (kind == 1)
					CHECK(c.n_in == 0);
				if (kind == 2)
					CHECK(c.n_out == 0);
				virtq_push(&vq, c.head, len);
				CHECK(vq.used_idx == (uint16_t)(before + 1));
				pushed = true;
			} else {
				CHECK(vq.used_idx == before);
			}
			break;
		}
		case 3: {
			uint32_t cap = take16(&in);

			r = virtq_net_tx_read(&vq, txbuf, cap);
			CHECK(r == 0 || r == -EIO || r == -EMSGSIZE || r == -EINVAL ||
			      (r >= (int)vq.hdr_len && r <= (int)cap));
			if (r == 0 || r == -EIO) {
				CHECK(vq.used_idx == before);
			} else {
				CHECK(vq.used_idx == (uint16_t)(before + 1));
				pushed = true;
			}
			break;
		}
		case 4: {
			struct virtio_net_hdr h;
			size_t len = take16(&in) % FRAME_MAX;
			uint16_t n;

			memset(&h, take8(&in), sizeof(h));
			memset(frame, (int)len, len);
			r = virtq_net_rx_write(&vq, &h, frame, len);
			CHECK(r == -EIO || r == -ENOBUFS || r == -EMSGSIZE || r >= 1);
			if (r < 1) {
				CHECK(vq.used_idx == before);
				if (r != -EIO)
					CHECK(vq.last_avail == last);
				break;
			}
			CHECK(r == 1 || vq.mrg_rxbuf);
			CHECK(vq.used_idx == (uint16_t)(before + r));
			pushed = true;
			CHECK(vq.last_avail == (uint16_t)(last + r));
			n = (uint16_t)r;
			uint64_t total = 0;
			struct vring_used *u = (struct vring_used *)(ra + USED_GPA);
			for (uint16_t i = 0; i < n; i++) {
				uint32_t l = u->ring[(uint16_t)(before + i) & (num - 1)].len;

				CHECK(l > 0);
				total += l;
			}
			CHECK(total == vq.hdr_len + len);
			break;
		}
		case 5: {
			uint16_t old = vq.signalled_used, now = vq.used_idx;
			uint16_t event = *(uint16_t *)&avail->ring[num];
			bool want, got;

			if (vq.broken || old == now)
				want = false;
			else if (vq.event_idx)
				want = model_need_event(event, old, now);
			else
				want = !(avail->flags & VRING_AVAIL_F_NO_INTERRUPT);
			got = virtq_should_notify(&vq);
			CHECK(got == want);
			break;
		}
		case 6: {
			uint16_t off = take16(&in) % REGION;
			uint8_t len = take8(&in);

			/* Anything but used->idx, which only the device writes
			 * (a guest that does only hurts itself). */
			for (uint8_t i = 0; i < len && off + i < REGION; i++) {
				uint8_t b = take8(&in);

				if (off + i != USED_GPA + 2 && off + i != USED_GPA + 3)
					ra[off + i] = b;
			}
			break;
		}
		case 7:
			avail->ring[avail_idx & (num - 1)] = take8(&in) % (2 * num);
			avail_idx++;
			avail->idx = avail_idx;
			break;
		}
		if (trace)
			fprintf(stderr, "op %u -> %d%s%s\n", kind, r, vq.broken ? " broken: " : "",
				vq.broken ? vq.why : "");
		/* Broken is for good: nothing more reaches the used ring. */
		if (was_broken) {
			CHECK(vq.broken);
			CHECK(vq.used_idx == before && used_idx() == guest_before);
		}
		if (vq.broken) {
			CHECK(vq.why);
			was_broken = true;
		}
		/* A push publishes used->idx last. */
		if (pushed)
			CHECK(vq.used_idx == used_idx());
	}
	return 0;
}
