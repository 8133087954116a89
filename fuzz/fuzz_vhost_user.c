/* libFuzzer target for the vhost-user backend (tun/vhost_user.h): a
 * sequence of frontend messages fed to vhu_dispatch, the function
 * production calls for every message read from the socket, on one device,
 * with the data path run on every ring that becomes ready in between.
 *
 * Input: two bytes of device set-up (queue pairs; features trimmed off the
 * default offer), then records, each a control byte and its body:
 *  - REC_MSG: the 12-byte wire header and min(size, what is left) payload
 *    bytes; (ctl >> 2) & 7 fds come with it (7 means 8): dups of the
 *    harness's two memfds for SET_MEM_TABLE, of an eventfd otherwise; with
 *    ctl bit 5 the wrong kind (an eventfd as memory, a file as eventfd).
 *  - REC_POKE: a region byte, 16-bit offset, length byte and the bytes, written
 *    into the harness's memfd (the guest writing its memory).
 *  - REC_RUN: a ring byte and a length byte: on a ready ring, an RX write
 *    of 8 * length bytes (even rings) or a TX read (odd rings), then the
 *    notify decision and the notify.
 * A disconnect verdict is followed by vhu_dev_reset, as the integrator does.
 *
 * Checked after every message: the reply is a well-formed reply to it and
 * present exactly when asked for (a GET's value, or an ack with NEED_REPLY);
 * a refused message without NEED_REPLY says disconnect; the memory table
 * lies inside the backend's mappings; every ready ring's pointers are the
 * translations of its addresses, of its size, aligned; and after the input,
 * vhu_dev_reset leaves no fd open. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tun/vhost_user.h"

#define CHECK(cond)                                                                     \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "fuzz_vhost_user: check failed at %s:%d: %s\n", \
				__FILE__, __LINE__, #cond);                             \
			abort();                                                        \
		}                                                                       \
	} while (0)

enum {
	MEMFD_SIZE = 64 * 1024,
	REC_MSG = 0,
	REC_POKE = 1,
	REC_RUN = 2,
	CTL_SWAP_FDS = 1 << 5,
	MAX_RECORDS = 64,
	FRAME_MAX = 2048,
};

static int memfd[2] = { -1, -1 }, evfd = -1, junkfd = -1;
static bool ready;
static int trace = -1;

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

static void setup(void)
{
	for (int i = 0; i < 2; i++) {
		memfd[i] = memfd_create("fuzz_vhost_user", MFD_CLOEXEC);
		CHECK(memfd[i] >= 0);
	}
	evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	CHECK(evfd >= 0);
	/* A file given where an eventfd belongs: notifies write into it. */
	junkfd = memfd_create("fuzz_vhost_user_junk", MFD_CLOEXEC);
	CHECK(junkfd >= 0);
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

static size_t take(struct input *in, void *out, size_t n)
{
	if (n > in->left)
		n = in->left;
	memcpy(out, in->p, n);
	in->p += n;
	in->left -= n;
	return n;
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

		if (b && p >= b && len <= dev->maps[i].len && p - b <= (ptrdiff_t)(dev->maps[i].len - len))
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
		CHECK(vq->num && vq->num <= VIRTQ_NUM_MAX && !(vq->num & (vq->num - 1)));
		CHECK(vq->num == r->num);
		CHECK((void *)vq->desc ==
		      virtq_mem_uva(&dev->mem, r->desc_uva, virtq_desc_size(vq->num)));
		CHECK((void *)vq->avail ==
		      virtq_mem_uva(&dev->mem, r->avail_uva, virtq_avail_size(vq->num)));
		CHECK((void *)vq->used ==
		      virtq_mem_uva(&dev->mem, r->used_uva, virtq_used_size(vq->num)));
		CHECK((uintptr_t)vq->desc % 16 == 0 && (uintptr_t)vq->avail % 2 == 0 &&
		      (uintptr_t)vq->used % 4 == 0);
		CHECK(r->kick_fd >= 0);
	}
}

static void run_ring(struct vhu_dev *dev, unsigned int idx, size_t len)
{
	static uint8_t buf[65536], frame[FRAME_MAX];
	struct virtq *vq = vhu_ring_vq(dev, idx);
	int r;

	if (!vq || !vhu_ring_ready(dev, idx))
		return;
	/* virtio-net: even rings receive (weftd writes), odd ones transmit. */
	if (idx & 1) {
		r = virtq_net_tx_read(vq, buf, sizeof(buf));
		CHECK(r >= -EIO || r == -EMSGSIZE || r == -EINVAL);
		if (trace)
			fprintf(stderr, "ring %u: tx_read -> %d", idx, r);
	} else {
		memset(frame, 0x5a, len);
		r = virtq_net_rx_write(vq, NULL, frame, len);
		CHECK(r == -EIO || r == -ENOBUFS || r == -EMSGSIZE || r >= 1);
		if (trace)
			fprintf(stderr, "ring %u: rx_write %zu -> %d", idx, len, r);
	}
	if (trace)
		fprintf(stderr, "%s%s\n", vq->broken ? " broken: " : "", vq->broken ? vq->why : "");
	if (virtq_should_notify(vq))
		CHECK(virtq_notify(vq) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vhu_dev dev;
	struct input in = { data, size };
	uint64_t features;
	uint8_t pairs, trim;
	int base_fds;

	if (!ready)
		setup();
	/* libFuzzer opens files of its own between inputs: count per input. */
	base_fds = count_fds();
	/* A fresh guest memory for every input. */
	for (int i = 0; i < 2; i++) {
		CHECK(ftruncate(memfd[i], 0) == 0);
		CHECK(ftruncate(memfd[i], MEMFD_SIZE) == 0);
	}
	pairs = take8(&in);
	trim = take8(&in);
	features = VHU_FEATURES_DEFAULT;
	if (trim & 1)
		features &= ~(1ull << VIRTIO_NET_F_MRG_RXBUF);
	if (trim & 2)
		features &= ~(1ull << VIRTIO_RING_F_EVENT_IDX);
	if (trim & 4)
		features &= ~(1ull << VHU_F_PROTOCOL_FEATURES);
	if (trim & 8)
		features &= ~(1ull << VIRTIO_F_VERSION_1);
	vhu_dev_init(&dev, features, 1 + pairs % VHU_MAX_QUEUE_PAIRS);

	for (int rec = 0; rec < MAX_RECORDS && in.left; rec++) {
		uint8_t ctl = take8(&in);


		switch (ctl & 3) {
		case REC_MSG: {
			struct vhu_msg msg, reply;
			struct vhu_result res;
			uint32_t n_fds = (ctl >> 2) & 7;
			bool mem_fds;
			int r;

			if (n_fds == 7)
				n_fds = VHU_MAX_FDS;
			memset(&msg, 0, sizeof(msg));
			take(&in, &msg.hdr, sizeof(msg.hdr));
			take(&in, &msg.payload,
			     msg.hdr.size < VHU_PAYLOAD_MAX ? msg.hdr.size : VHU_PAYLOAD_MAX);
			mem_fds = msg.hdr.request == VHU_SET_MEM_TABLE;
			for (uint32_t i = 0; i < n_fds; i++) {
				if (ctl & CTL_SWAP_FDS)
					msg.fds[i] = dup(mem_fds ? evfd : junkfd);
				else
					msg.fds[i] = dup(mem_fds ? memfd[i % 2] : evfd);
				CHECK(msg.fds[i] >= 0);
			}
			msg.n_fds = n_fds;
			r = vhu_dispatch(&dev, &msg, &reply, &res);
			if (trace)
				fprintf(stderr, "%s (%u) size %u fds %u -> %d%s%s\n",
					vhu_request_name(msg.hdr.request), msg.hdr.request,
					msg.hdr.size, n_fds, r, res.why ? ": " : "",
					res.why ? res.why : "");
			CHECK(msg.n_fds == 0);
			CHECK(r <= 0);
			CHECK(!(res.reply && res.disconnect));
			if (res.reply) {
				CHECK(reply.hdr.request == msg.hdr.request);
				CHECK(reply.hdr.flags == (VHU_FLAG_VERSION | VHU_FLAG_REPLY));
				CHECK(reply.hdr.size == 8);
				CHECK(r == 0 || reply.payload.u64 != 0);
			}
			if (r < 0 && !(msg.hdr.flags & VHU_FLAG_NEED_REPLY))
				CHECK(res.disconnect);
			if (r == 0 && has_reply(msg.hdr.request))
				CHECK(res.reply);
			if (r == 0 && (msg.hdr.flags & VHU_FLAG_NEED_REPLY))
				CHECK(res.reply);
			check_dev(&dev);
			if (res.disconnect)
				vhu_dev_reset(&dev);
			break;
		}
		case REC_POKE: {
			uint8_t buf[256];
			int region = take8(&in) & 1;
			uint16_t off = take8(&in);
			size_t len;

			off = (uint16_t)(off | take8(&in) << 8);
			len = take(&in, buf, take8(&in));
			if (off + len > MEMFD_SIZE)
				len = MEMFD_SIZE - off;
			CHECK(pwrite(memfd[region], buf, len, off) == (ssize_t)len);
			break;
		}
		default: {
			unsigned int ring = take8(&in);
			size_t len = (size_t)take8(&in) * 8;

			run_ring(&dev, ring % VHU_MAX_RINGS, len);
			break;
		}
		}
	}
	vhu_dev_free(&dev);
	CHECK(count_fds() == base_fds);
	return 0;
}
