/* libFuzzer target for the consumer side of a guest's TX ring, end to end
 * as a worker serves it (datapath/port_vhost.c): vhost_drain takes each frame
 * with virtq_net_tx_read into a packet buffer laid out as production lays
 * it out, wport_received classifies it (frame_classify), parses its
 * virtio-net header when the guest offloaded (tun_offload_parse_hdr,
 * finishing a checksum in place with tun_offload_split), hands neighbour
 * discovery to ndp_handle, checks the IP packet (frame_ip_check) and routes
 * it (rt_lookup on a table with routes of every hop kind), splitting a
 * super-packet (tun_offload_split) where route_offloaded does.
 *
 * worker_port.c needs a whole worker (io_uring, pools, sockets), so the
 * steps are composed here from the same public functions, in the same
 * order, with the same arguments and buffer offsets; the frame's
 * virtio-net header is parsed by the same tun_offload_parse_frame.
 *
 * Guest memory is two 64 KiB regions mapped apart between PROT_NONE guard
 * areas; the packet buffer after the frame (and before the place the frame
 * was read to) is poisoned for ASan, so neither the ring code nor a
 * header field the guest chose (hdr_len, csum_start/offset, gso_size) can
 * make anything read outside the frame unnoticed; segment buffers are
 * allocated at exactly the size production guarantees.
 *
 * Input: a config byte (bit 0 EVENT_IDX, bit 1 MRG_RXBUF, bit 2 VERSION_1,
 * bit 3 the host's TUN takes virtio-net headers), log2 of the ring size
 * (mod 9), the 16-bit start index, the ring layout (three 16-bit offsets
 * into region A: descriptors, avail, used), a 16-bit length and that many
 * bytes copied into region A from 0, then operations: OP_FRAME (a 16-bit
 * length, the frame the guest sends, virtio-net header first, and a split
 * byte: 1 + bits 0-1 descriptors, cut where the next bytes say), posted as
 * a chain from region B; OP_HEAD (publish a raw 16-bit head); OP_POKE
 * (region, 16-bit offset, length byte, bytes); OP_DRAIN (the worker's turn).
 * The worker drains once more at the end.
 *
 * Checked for every frame: a drop has a named reason (< PORT_DROP_COUNT);
 * only ARP or ICMPv6 reaches the responder; a routed packet's source is
 * registered to the port (a naive prefix test), its Ethernet source is the
 * VM's MAC, it lies inside the frame, and the hop is the one a linear
 * longest-prefix scan of the routes gives; a split gives info.n_segs
 * packets, each inside its buffer and no longer than max_seg_len, whose
 * payloads concatenate to the original's; a finished checksum leaves the
 * packet's length alone. */
#include <errno.h>
#include <netinet/in.h>
#include <sanitizer/asan_interface.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ndp/ndp.h"
#include "port/ports.h"
#include "port/frame.h"
#include "router/hop.h"
#include "router/table.h"
#include "tun/offload.h"
#include "tun/virtq.h"
#include "wg/packet.h"

#define CHECK(cond)                                                                \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "fuzz_vm_tx: check failed at %s:%d: %s\n", \
				__FILE__, __LINE__, #cond);                        \
			abort();                                                   \
		}                                                                  \
	} while (0)

enum {
	KIB = 1024,
	REGION = 64 * KIB,
	/* datapath/internal.h's: a 10-byte virtio-net header in front of
	 * the Ethernet header. */
	PORT_VNET_LEN = TUN_VNET_HDR_LEN,
	PORT_L2_LEN = PORT_VNET_LEN + FRAME_ETH_HLEN,
	/* datapath/port_vhost.c's frames per ring per turn. */
	VHOST_DRAIN_BUDGET = 256,
	MAX_OPS = 64,
	OP_FRAME = 0,
	OP_HEAD = 1,
	OP_POKE = 2,
	OP_DRAIN = 3,
	CFG_EVENT_IDX = 1 << 0,
	CFG_MRG = 1 << 1,
	CFG_V1 = 1 << 2,
	CFG_TUN_VNET = 1 << 3,
};

static uint8_t *ra, *rb;

/* What an input wrote to guest memory (the harness or the device), zeroed
 * before the next one: zeroing all of it would cost more than the rest of
 * a short input. */
enum { MAX_DIRTY = 96 };
static struct {
	uint8_t *p;
	size_t len;
} dirty[MAX_DIRTY];
static unsigned int n_dirty;
static bool all_dirty;

static void mark(uint8_t *p, size_t len)
{
	if (n_dirty == MAX_DIRTY) {
		all_dirty = true;
		return;
	}
	dirty[n_dirty].p = p;
	dirty[n_dirty].len = len;
	n_dirty++;
}

static void clean(void)
{
	if (all_dirty) {
		memset(ra, 0, REGION);
		memset(rb, 0, REGION);
	} else {
		for (unsigned int i = 0; i < n_dirty; i++)
			memset(dirty[i].p, 0, dirty[i].len);
	}
	n_dirty = 0;
	all_dirty = false;
}
static struct virtq_mem mem;
static struct port_config cfg;
static struct ndp_port_config ndp_cfg;
static struct rt_table *table;
static struct wg_pkt *pkt;
static uint8_t *orig;            /* a copy of a super-packet before its split */
static int trace;

/* The forwarding table: every hop kind, nested prefixes, both families. */
struct route {
	int family;
	uint8_t addr[16];
	uint8_t cidr;
	struct rt_hop *hop;
};

static struct rt_hop peer_a = { RT_HOP_PEER }, peer_b = { RT_HOP_PEER };
static struct rt_hop port_b = { RT_HOP_PORT }, port_c = { RT_HOP_PORT };
static struct rt_hop remote = { RT_HOP_REMOTE }, mesh = { RT_HOP_MESH };

static const struct route routes[] = {
	{ AF_INET, { 10, 9 }, 16, &peer_a },
	{ AF_INET, { 10, 9, 5 }, 24, &remote },
	{ AF_INET, { 10, 9, 5, 7 }, 32, &port_c },
	{ AF_INET, { 10, 8 }, 16, &mesh },
	{ AF_INET, { 10, 0, 0 }, 24, &port_b },
	{ AF_INET, { 192, 168 }, 16, &peer_b },
	{ AF_INET, { 128 }, 1, &peer_b },
	{ AF_INET6, { 0xfd, 0x09 }, 32, &peer_a },
	{ AF_INET6, { 0xfd, 0x09, 0, 0, 0, 5 }, 48, &remote },
	{ AF_INET6, { 0xfd, 0x09, 0, 0, 0, 5, [15] = 7 }, 128, &port_c },
	{ AF_INET6, { 0xfd, 0x00 }, 64, &port_b },
	{ AF_INET6, { 0xfd, 0x08 }, 16, &mesh },
	{ AF_INET6, { 0x20 }, 3, &peer_b },
};

static const uint8_t vm_mac[6] = { 0x02, 0x66, 0, 0, 0, 0x01 };

/* The VM's port: its own addresses and a routed prefix of each family. */
static void port_setup(void)
{
	static const struct ip_prefix addrs[] = {
		{ .family = AF_INET, .addr = { 10, 0, 0, 2 }, .cidr = 32 },
		{ .family = AF_INET, .addr = { 10, 1, 0, 0 }, .cidr = 24 },
		{ .family = AF_INET6, .addr = { 0xfd, 0x00, [15] = 2 }, .cidr = 128 },
		{ .family = AF_INET6, .addr = { 0xfd, 0x00, 0, 1 }, .cidr = 64 },
	};
	static const uint8_t router_mac[6] = PORT_ROUTER_MAC_DEFAULT;

	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.name, sizeof(cfg.name), "vm0");
	cfg.type = PORT_VHOST_USER;
	memcpy(cfg.vm_mac, vm_mac, 6);
	cfg.has_router_mac = true;
	memcpy(cfg.router_mac, router_mac, 6);
	memcpy(cfg.addrs, addrs, sizeof(addrs));
	cfg.n_addrs = sizeof(addrs) / sizeof(addrs[0]);
	cfg.prefixes[0] = (struct ip_prefix){ .family = AF_INET6, .cidr = 64 };
	memcpy(cfg.prefixes[0].addr, addrs[3].addr, 16);
	cfg.n_prefixes = 1;
	cfg.mtu = 1500;
	port_ndp_config(&cfg, &ndp_cfg);
	CHECK(ndp_port_config_check(&ndp_cfg) == 0);
}

static void setup(void)
{
	uint8_t *reserve = mmap(NULL, 6 * REGION, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd = memfd_create("fuzz_vm_tx", MFD_CLOEXEC);

	CHECK(reserve != MAP_FAILED && fd >= 0);
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
	port_setup();
	table = rt_table_new();
	CHECK(table);
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		CHECK(rt_insert(table, routes[i].family, routes[i].addr, routes[i].cidr,
				routes[i].hop) == 0);
	/* A big pool buffer, as pkt_get gives vhost_drain. */
	pkt = malloc(sizeof(*pkt) + WG_PKT_BUF_SIZE);
	orig = malloc(WG_PKT_BUF_SIZE);
	CHECK(pkt && orig);
	trace = getenv("FUZZ_TRACE") != NULL;
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

static size_t take(struct input *in, void *out, size_t n)
{
	if (n > in->left)
		n = in->left;
	memcpy(out, in->p, n);
	in->p += n;
	in->left -= n;
	return n;
}

/* --- naive models --- */

static bool bit_of(const uint8_t *a, unsigned int i)
{
	return a[i / 8] >> (7 - i % 8) & 1;
}

static bool naive_match(const uint8_t *prefix, unsigned int cidr, const uint8_t *addr)
{
	for (unsigned int i = 0; i < cidr; i++)
		if (bit_of(prefix, i) != bit_of(addr, i))
			return false;
	return true;
}

static struct rt_hop *naive_lookup(int family, const uint8_t *dst)
{
	const struct route *best = NULL;

	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (routes[i].family == family && naive_match(routes[i].addr, routes[i].cidr, dst) &&
		    (!best || routes[i].cidr > best->cidr))
			best = &routes[i];
	return best ? best->hop : NULL;
}

static bool naive_registered(int family, const uint8_t *src)
{
	for (size_t i = 0; i < cfg.n_addrs; i++)
		if (cfg.addrs[i].family == family && naive_match(cfg.addrs[i].addr, cfg.addrs[i].cidr, src))
			return true;
	return false;
}

/* What became of one frame. */
enum outcome { OUT_DROP, OUT_NDP, OUT_ROUTED, OUT_SPLIT };

static struct {
	unsigned long frames, drops, ndp, routed, split;
} seen;

static void drop(enum port_drop why)
{
	CHECK((unsigned int)why < PORT_DROP_COUNT);
	seen.drops++;
}

/* A routed IP packet at ip, of the frame [frame, frame + len). */
static void check_routed(const uint8_t *frame, uint32_t len, const struct frame_ip *ip,
			 const struct rt_hop *hop)
{
	const uint8_t *pkt_ip = frame + FRAME_ETH_HLEN;
	int family = pkt_ip[0] >> 4 == 4 ? AF_INET : pkt_ip[0] >> 4 == 6 ? AF_INET6 : 0;

	CHECK(family && family == ip->family);
	CHECK(ip->len <= len - FRAME_ETH_HLEN);
	CHECK(ip->len >= (family == AF_INET ? 20u : 40u));
	CHECK(ip->dst == pkt_ip + (family == AF_INET ? 16 : 24));
	CHECK(naive_registered(family, pkt_ip + (family == AF_INET ? 12 : 8)));
	CHECK(!memcmp(frame + 6, vm_mac, 6));
	CHECK(hop == naive_lookup(family, ip->dst));
}

/* dp_split_super with buffers of exactly the size pkt_get_for
 * guarantees; checks the segments against the original. 0: dropped. */
static unsigned int split_super(const struct tun_offload_info *info, enum port_drop *why)
{
	static struct tun_offload_seg segs[TUN_OFFLOAD_MAX_SEGS];
	static uint8_t *bufs[TUN_OFFLOAD_MAX_SEGS];
	unsigned int n = info->n_segs, i;
	uint32_t total = 0, payload_at = info->hdrs_len;
	size_t seg_cap = WG_PKT_FRONT + info->max_seg_len;
	int r;

	CHECK(n >= 1 && n <= TUN_OFFLOAD_MAX_SEGS);
	CHECK(info->pkt == wg_pkt_payload(pkt));
	CHECK(info->len <= pkt->len);
	memcpy(orig, info->pkt, info->len);
	segs[0] = (struct tun_offload_seg){ .buf = pkt->data, .cap = pkt->cap - WG_PKT_TAILROOM };
	for (i = 1; i < n; i++) {
		bufs[i] = malloc(seg_cap + WG_PKT_TAILROOM);
		CHECK(bufs[i]);
		segs[i] = (struct tun_offload_seg){ .buf = bufs[i], .cap = (uint32_t)seg_cap };
	}
	r = tun_offload_split(info, segs, n, WG_PKT_FRONT);
	if (trace)
		fprintf(stderr, "  split %u (hdrs %u, gso %u, max %u) -> %d\n", n, info->hdrs_len,
			info->gso_size, info->max_seg_len, r);
	if (r < 0) {
		*why = PORT_DROP_malformed;
		n = 0;
		goto out;
	}
	CHECK((unsigned int)r == n);
	for (i = 0; i < n; i++) {
		const uint8_t *s = segs[i].buf + WG_PKT_FRONT;
		uint32_t body;

		CHECK(segs[i].len <= info->max_seg_len && WG_PKT_FRONT + segs[i].len <= segs[i].cap);
		CHECK(segs[i].len >= info->hdrs_len);
		CHECK(s[0] >> 4 == orig[0] >> 4);
		body = segs[i].len - info->hdrs_len;
		CHECK(payload_at + body <= info->len);
		CHECK(!memcmp(s + info->hdrs_len, orig + payload_at, body));
		payload_at += body;
		total += body;
	}
	CHECK(payload_at == info->len && total == info->len - info->hdrs_len);
	seen.split++;
out:
	for (i = 1; i < info->n_segs; i++)
		free(bufs[i]);
	return n;
}

/* route_offloaded: another VM, or the host's TUN when it takes virtio-net
 * headers, get the super-packet whole; a peer, the mesh and a host TUN
 * without them get it split. */
static void route_offloaded(const uint8_t *frame, uint32_t len, const struct frame_ip *ip,
			    const struct tun_offload_info *info, bool tun_vnet)
{
	struct rt_hop *hop = rt_lookup(table, ip->family, ip->dst);
	enum port_drop why;

	check_routed(frame, len, ip, hop);
	if ((hop && (hop->kind == RT_HOP_REMOTE || hop->kind == RT_HOP_MESH || hop->kind == RT_HOP_PEER)) ||
	    (!hop && !tun_vnet)) {
		if (!split_super(info, &why))
			drop(why);
		else
			seen.routed++;
		return;
	}
	seen.routed++;
}

/* wport_received: the frame at the payload of pkt, behind its header. */
static void received(uint32_t res, bool tun_vnet)
{
	uint8_t *frame = wg_pkt_payload(pkt) - FRAME_ETH_HLEN;
	const struct tun_vnet_hdr *raw = (const void *)(frame - PORT_VNET_LEN);
	uint32_t len = res - PORT_VNET_LEN;
	bool offloaded = res > PORT_VNET_LEN && (raw->gso_type != VIRTIO_NET_HDR_GSO_NONE ||
						  raw->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM);
	enum frame_verdict v = FRAME_DROP;
	enum port_drop why = PORT_DROP_malformed;
	struct tun_offload_info info;
	struct tun_vnet_hdr vnet;
	struct frame_ip ip;

	seen.frames++;
	if (res > PORT_L2_LEN)
		v = frame_classify(&cfg, frame, len, &why);
	if (trace)
		fprintf(stderr, "  frame %u bytes%s: classify %d\n", len, offloaded ? " offloaded" : "", v);
	if (v != FRAME_DROP && offloaded) {
		if (tun_offload_parse_frame(frame - PORT_VNET_LEN, frame, len, FRAME_ETH_HLEN, &vnet,
					    &info)) {
			v = FRAME_DROP;
			why = PORT_DROP_malformed;
		} else if (info.kind == TUN_OFFLOAD_CSUM) {
			struct tun_offload_seg seg = { .buf = pkt->data,
						       .cap = pkt->cap - WG_PKT_TAILROOM };
			int r = tun_offload_split(&info, &seg, 1, pkt->off);

			if (r < 0)
				v = FRAME_DROP;
			else
				CHECK(r == 1 && seg.len == info.len);
			offloaded = false;
		}
		if (trace)
			fprintf(stderr, "  offload kind %d -> %d\n", v == FRAME_DROP ? -1 : info.kind, v);
	}
	if (v == FRAME_NEIGHBOUR && !offloaded) {
		static struct ndp_port_state state;
		/* As port_neighbour sizes it: an echo reply is as long as
		 * its request. */
		size_t cap = len > NDP_REPLY_MAX ? len : NDP_REPLY_MAX;
		uint8_t *reply = malloc(cap);
		uint16_t type = (uint16_t)(frame[12] << 8 | frame[13]);
		size_t rlen = 0;
		enum ndp_verdict nv;

		CHECK(reply);
		CHECK(type == FRAME_ETH_P_ARP || type == FRAME_ETH_P_IPV6 ||
		      (type == FRAME_ETH_P_IP && cfg.has_gateway4));
		nv = ndp_handle(&ndp_cfg, &state, 1000, frame, len, reply, cap, &rlen);
		CHECK(rlen <= cap);
		free(reply);
		if (nv != NDP_NOT_NDP) {
			seen.ndp++;
			return;
		}
	}
	if (v != FRAME_DROP)
		v = frame_ip_check(&cfg, frame, len, &ip, &why);
	if (v == FRAME_DROP) {
		if (trace)
			fprintf(stderr, "  drop %d\n", why);
		drop(why);
		return;
	}
	CHECK(v == FRAME_ROUTE);
	pkt->len = ip.len;
	if (offloaded) {
		route_offloaded(frame, len, &ip, &info, tun_vnet);
	} else {
		/* dp_route: the destination re-read from the packet. */
		const uint8_t *dst;
		int family = frame_ip_destination(wg_pkt_payload(pkt), pkt->len, &dst);
		struct rt_hop *hop = family ? rt_lookup(table, family, dst) : NULL;

		CHECK(family == ip.family && dst == ip.dst);
		check_routed(frame, len, &ip, hop);
		if (trace)
			fprintf(stderr, "  routed to %d\n", hop ? hop->kind : 0);
		seen.routed++;
	}
}

/* vhost_drain on one ring: each frame read so that its IP packet lands at
 * WG_PKT_FRONT of the buffer. false once the ring is broken. */
static bool drain(struct virtq *vq, bool tun_vnet)
{
	for (unsigned int n = 0; n < VHOST_DRAIN_BUDGET; n++) {
		uint8_t *buf;
		size_t cap;
		int got;

		pkt->off = WG_PKT_FRONT;
		pkt->cap = WG_PKT_BUF_SIZE;
		pkt->len = 0;
		ASAN_UNPOISON_MEMORY_REGION(pkt->data, pkt->cap);
		buf = wg_pkt_payload(pkt) - FRAME_ETH_HLEN - vq->hdr_len;
		cap = pkt->cap - WG_PKT_TAILROOM - (uint32_t)(buf - pkt->data);
		got = virtq_net_tx_read(vq, buf, cap);
		if (trace)
			fprintf(stderr, " tx_read -> %d%s%s\n", got, vq->broken ? " broken: " : "",
				vq->broken ? vq->why : "");
		if (got <= 0 || (size_t)got < vq->hdr_len) {
			if (got == 0)
				break;
			if (got == -EIO)
				return false;
			CHECK(got == -EMSGSIZE || got == -EINVAL || got > 0);
			drop(got == -EMSGSIZE ? PORT_DROP_too_big : PORT_DROP_malformed);
			continue;
		}
		CHECK((size_t)got <= cap);
		/* Nothing in front of the read or behind the frame is the
		 * frame's: a read of it is a bug. */
		ASAN_POISON_MEMORY_REGION(pkt->data, (size_t)(buf - pkt->data));
		ASAN_POISON_MEMORY_REGION(buf + got, pkt->cap - (size_t)(buf - pkt->data) - (size_t)got);
		if (vq->hdr_len > PORT_VNET_LEN)
			memmove(buf + vq->hdr_len - PORT_VNET_LEN, buf, PORT_VNET_LEN);
		received((uint32_t)got - vq->hdr_len + PORT_VNET_LEN, tun_vnet);
		ASAN_UNPOISON_MEMORY_REGION(pkt->data, pkt->cap);
	}
	if (virtq_should_notify(vq))
		CHECK(virtq_notify(vq) == 0);
	return true;
}

/* The guest posts a frame: its bytes at the cursor in region B, as a
 * chain of 1-4 descriptors from the next free slot, the head published. */
struct guest {
	struct virtq *vq;
	struct vring_desc *desc;
	struct vring_avail *avail;
	uint16_t num, next_desc;
	uint32_t cursor;
};

static void publish(struct guest *g, uint16_t head)
{
	uint16_t idx = g->avail->idx;

	g->avail->ring[idx % g->num] = head;
	__atomic_store_n(&g->avail->idx, (uint16_t)(idx + 1), __ATOMIC_RELEASE);
}

static void post_frame(struct guest *g, struct input *in)
{
	static uint8_t frame[REGION];
	size_t len = take(in, frame, take16(in));
	uint8_t split = take8(in);
	unsigned int nd = 1 + (split & 3);
	size_t cuts[5] = { 0 };
	uint16_t head = g->next_desc % g->num;

	if (len > REGION / 2)
		len = REGION / 2;
	for (unsigned int i = 1; i < nd; i++) {
		size_t cut = len ? take8(in) * (len + 1) / 256 : 0;

		cuts[i] = cut < cuts[i - 1] ? cuts[i - 1] : cut;
	}
	cuts[nd] = len;
	if (g->cursor + len > REGION)
		g->cursor = 0;
	memcpy(rb + g->cursor, frame, len);
	mark(rb + g->cursor, len);
	for (unsigned int i = 0; i < nd; i++) {
		uint16_t slot = (uint16_t)((head + i) % g->num);

		g->desc[slot] = (struct vring_desc){
			.addr = REGION + g->cursor + cuts[i],
			.len = (uint32_t)(cuts[i + 1] - cuts[i]),
			.flags = i + 1 < nd ? VRING_DESC_F_NEXT : 0,
			.next = (uint16_t)((slot + 1) % g->num),
		};
	}
	g->next_desc = (uint16_t)(g->next_desc + nd);
	g->cursor = (uint32_t)((g->cursor + len + 15) & ~15u);
	publish(g, head);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct virtq vq;
	static bool ready;
	struct input in = { data, size };
	uint8_t conf, lg;
	uint16_t start, doff, aoff, uoff, fill;
	uint64_t features = 0;
	struct guest g = { .vq = &vq };
	bool tun_vnet, alive = true;

	if (!ready) {
		setup();
		ready = true;
	}
	conf = take8(&in);
	lg = take8(&in) % 9;
	start = take16(&in);
	doff = take16(&in) & ~15u;
	aoff = take16(&in) & ~1u;
	uoff = take16(&in) & ~3u;
	tun_vnet = conf & CFG_TUN_VNET;
	clean();
	fill = take16(&in);
	mark(ra, take(&in, ra, fill));

	g.num = (uint16_t)(1u << lg);
	g.desc = virtq_mem_gpa(&mem, doff, virtq_desc_size(g.num));
	g.avail = virtq_mem_gpa(&mem, aoff, virtq_avail_size(g.num));
	if (!g.desc || !g.avail || !virtq_mem_gpa(&mem, uoff, virtq_used_size(g.num)))
		return 0;
	if (conf & CFG_EVENT_IDX)
		features |= 1ull << VIRTIO_RING_F_EVENT_IDX;
	if (conf & CFG_MRG)
		features |= 1ull << VIRTIO_NET_F_MRG_RXBUF;
	if (conf & CFG_V1)
		features |= 1ull << VIRTIO_F_VERSION_1;
	/* The rings: the guest writes two, the device the used one. */
	mark((uint8_t *)g.desc, virtq_desc_size(g.num));
	mark((uint8_t *)g.avail, virtq_avail_size(g.num));
	mark(virtq_mem_gpa(&mem, uoff, virtq_used_size(g.num)), virtq_used_size(g.num));
	virtq_init(&vq);
	virtq_set_features(&vq, features);
	virtq_set_rings(&vq, &mem, g.num, g.desc, g.avail, virtq_mem_gpa(&mem, uoff, virtq_used_size(g.num)));
	virtq_start(&vq, start);
	g.next_desc = g.avail->idx;

	for (int n = 0; n < MAX_OPS && in.left && alive; n++) {
		uint8_t op = take8(&in);

		switch (op & 3) {
		case OP_FRAME:
			post_frame(&g, &in);
			break;
		case OP_HEAD:
			publish(&g, take16(&in));
			break;
		case OP_POKE: {
			uint8_t *r = take8(&in) & 1 ? rb : ra;
			uint16_t off = take16(&in);
			uint8_t buf[256];
			size_t len = take(&in, buf, take8(&in));

			if (off + len > REGION)
				len = REGION - off;
			memcpy(r + off, buf, len);
			mark(r + off, len);
			break;
		}
		default:
			alive = drain(&vq, tun_vnet);
			break;
		}
	}
	if (alive)
		drain(&vq, tun_vnet);
	return 0;
}
