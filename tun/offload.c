/* TUN offloads: parse and split GSO super-packets read from the TUN, and
 * coalesce the TCP segments of one receive batch into super-packets for the
 * TUN write. Facts come from Linux (include/linux/virtio_net.h, tcp_offload.c,
 * udp_offload.c, tcp_gro_receive) and the virtio 1.x spec.
 *
 * Security model. Everything tun_offload_parse reads is untrusted: today the
 * header and packet come from the local kernel, but the same code will take
 * frames from a VM guest over vhost-user, where every byte is chosen by the
 * guest. So no field is used before it is checked against the buffer:
 * csum_start/csum_offset must fall inside the packet (and match the L4
 * header for GSO), gso_size must be at least TUN_OFFLOAD_MIN_GSO_SIZE so one
 * read cannot fan out into more than TUN_OFFLOAD_MAX_SEGS packets, IP
 * version, IHL, total/payload length, TCP data offset and UDP header must
 * fit, IPv6 GSO must carry TCP/UDP directly (extension headers are refused),
 * hdr_len is ignored (the kernel's own value is unreliable on forwarded
 * packets) and every output length is checked against the caller's buffer
 * before anything is written. The GRO side reads decrypted packets from
 * authenticated peers, but a peer is no more trusted than a guest: it checks
 * the same way and never merges what it cannot fully verify. */
#include "tun/offload.h"

#include "pkt/csum.h"

#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

enum {
	IP4_HDR_MIN = 20,
	IP6_HDR_LEN = 40,
	TCP_HDR_MIN = 20,
	UDP_HDR_LEN = 8,
	TCP_CSUM_OFF = 16,
	UDP_CSUM_OFF = 6,
	IP_MAX_LEN = 65535,

	/* IPv4 fields */
	IP4_ID = 4,
	IP4_FRAG = 6,
	IP4_TTL = 8,
	IP4_PROTO = 9,
	IP4_CSUM = 10,
	IP4_SRC = 12,
	IP4_DF = 0x4000,
	IP4_MF = 0x2000,
	IP4_OFF_MASK = 0x1fff,
	/* IPv6 fields */
	IP6_PLEN = 4,
	IP6_NEXT = 6,
	IP6_HOPS = 7,
	IP6_SRC = 8,
	/* TCP fields */
	TCP_SEQ = 4,
	TCP_ACK = 8,
	TCP_DOFF = 12,
	TCP_FLAGS = 13,
	TCP_WIN = 14,
	TCP_FIN = 0x01,
	TCP_SYN = 0x02,
	TCP_RST = 0x04,
	TCP_PSH = 0x08,
	TCP_ACKF = 0x10,
	TCP_CWR = 0x80,
	/* UDP fields */
	UDP_LEN = 4,
};

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* The IP header of any packet: version, header length and total length
 * against the buffer. Bytes after the total length (padding) are dropped. */
struct ip_view {
	uint32_t len;       /* IP total length */
	uint16_t l3_len;    /* header length: where the next header starts */
	uint8_t version;
	uint8_t proto;      /* IPv4 protocol or IPv6 first next header */
	bool fragment;      /* an IPv4 fragment (MF or an offset) */
};

static int parse_ip(const uint8_t *p, size_t len, struct ip_view *ip)
{
	if (len < 1)
		return -EINVAL;
	ip->version = p[0] >> 4;
	if (ip->version == 4) {
		if (len < IP4_HDR_MIN)
			return -EINVAL;
		ip->l3_len = (uint16_t)((p[0] & 0x0f) * 4);
		ip->len = get16(p + 2);
		if (ip->l3_len < IP4_HDR_MIN || ip->len < ip->l3_len || ip->len > len)
			return -EINVAL;
		ip->proto = p[IP4_PROTO];
		ip->fragment = (get16(p + IP4_FRAG) & (IP4_MF | IP4_OFF_MASK)) != 0;
		return 0;
	}
	if (ip->version == 6) {
		if (len < IP6_HDR_LEN)
			return -EINVAL;
		ip->l3_len = IP6_HDR_LEN;
		ip->len = IP6_HDR_LEN + (uint32_t)get16(p + IP6_PLEN);
		if (ip->len > len)
			return -EINVAL;
		ip->proto = p[IP6_NEXT];
		ip->fragment = false;
		return 0;
	}
	return -EPROTONOSUPPORT;
}

/* The L4 protocol a GSO type needs, with the IP version it needs (0: any);
 * 0 for a type weft does not take. */
static uint8_t gso_proto(uint8_t gso_type, uint8_t *version)
{
	switch (gso_type) {
	case VIRTIO_NET_HDR_GSO_TCPV4:
		*version = 4;
		return IPPROTO_TCP;
	case VIRTIO_NET_HDR_GSO_TCPV6:
		*version = 6;
		return IPPROTO_TCP;
	case VIRTIO_NET_HDR_GSO_UDP_L4:
		*version = 0;
		return IPPROTO_UDP;
	default:
		return 0;
	}
}

/* Checks the L4 header of a GSO super-packet and derives its segmentation. */
static int parse_gso(const struct tun_vnet_hdr *h, const uint8_t *pkt, const struct ip_view *ip,
		     struct tun_offload_info *info)
{
	uint8_t type = h->gso_type & ~VIRTIO_NET_HDR_GSO_ECN, version;
	uint8_t proto = gso_proto(type, &version);
	uint32_t l4_len, payload, n;

	if (type == VIRTIO_NET_HDR_GSO_UDP)
		return -EPROTONOSUPPORT; /* UFO: IP fragmentation, never asked for */
	if (!proto || (version && version != ip->version))
		return -EINVAL;
	if ((h->gso_type & VIRTIO_NET_HDR_GSO_ECN) && proto != IPPROTO_TCP)
		return -EINVAL;
	if (ip->proto != proto) {
		/* An IPv6 next header that is neither TCP nor UDP is an
		 * extension header: well-formed, but not segmented here. */
		if (ip->version == 6 && ip->proto != IPPROTO_TCP && ip->proto != IPPROTO_UDP)
			return -EPROTONOSUPPORT;
		return -EINVAL;
	}
	if (ip->fragment)
		return -EPROTONOSUPPORT;
	/* Segmentation recomputes every checksum, but a GSO packet without
	 * NEEDS_CSUM is malformed (virtio 1.x 5.1.6.2) and says the sender's
	 * idea of the packet differs from ours. */
	if (!(h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) || le16toh(h->csum_start) != ip->l3_len ||
	    le16toh(h->csum_offset) != (proto == IPPROTO_TCP ? TCP_CSUM_OFF : UDP_CSUM_OFF))
		return -EINVAL;

	if (proto == IPPROTO_TCP) {
		const uint8_t *th = pkt + ip->l3_len;

		if (ip->l3_len + (uint32_t)TCP_HDR_MIN > ip->len)
			return -EINVAL;
		l4_len = (uint32_t)(th[TCP_DOFF] >> 4) * 4;
		if (l4_len < TCP_HDR_MIN || ip->l3_len + l4_len > ip->len)
			return -EINVAL;
		/* A handshake or reset segment is never a TSO burst; copying
		 * SYN or RST into every segment would be wrong. */
		if (th[TCP_FLAGS] & (TCP_SYN | TCP_RST))
			return -EINVAL;
		info->kind = TUN_OFFLOAD_TCP;
	} else {
		l4_len = UDP_HDR_LEN;
		if (ip->l3_len + l4_len > ip->len)
			return -EINVAL;
		info->kind = TUN_OFFLOAD_UDP;
	}

	info->gso_size = le16toh(h->gso_size);
	if (info->gso_size < TUN_OFFLOAD_MIN_GSO_SIZE)
		return -EINVAL;
	info->hdrs_len = (uint16_t)(ip->l3_len + l4_len);
	info->csum_start = ip->l3_len;
	info->csum_offset = proto == IPPROTO_TCP ? TCP_CSUM_OFF : UDP_CSUM_OFF;
	payload = ip->len - info->hdrs_len;
	n = payload ? (payload + info->gso_size - 1) / info->gso_size : 1;
	if (n > TUN_OFFLOAD_MAX_SEGS)
		return -EINVAL;
	info->n_segs = (uint16_t)n;
	info->max_seg_len = info->hdrs_len + min_u32(payload, info->gso_size);
	return 0;
}

int tun_offload_parse_hdr(const void *vnet, const uint8_t *pkt, size_t len,
			  struct tun_offload_info *info)
{
	struct tun_vnet_hdr h;
	struct ip_view ip;
	uint32_t start, off;
	int err;

	memcpy(&h, vnet, sizeof(h));
	/* DATA_VALID (the kernel verified the checksum) needs nothing from us;
	 * any other flag is one the device never offered. */
	if (h.flags & ~(VIRTIO_NET_HDR_F_NEEDS_CSUM | VIRTIO_NET_HDR_F_DATA_VALID))
		return -EINVAL;
	err = parse_ip(pkt, len, &ip);
	if (err)
		return err;

	memset(info, 0, sizeof(*info));
	info->pkt = pkt;
	info->len = ip.len;
	info->l3_len = ip.l3_len;
	info->n_segs = 1;
	info->max_seg_len = ip.len;
	info->kind = TUN_OFFLOAD_PLAIN;

	if (h.gso_type != VIRTIO_NET_HDR_GSO_NONE)
		return parse_gso(&h, pkt, &ip, info);
	if (!(h.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM))
		return 0;

	/* One packet with a partial checksum: any protocol may ask, so only
	 * the bounds are checked, and the sum may not start inside the IP
	 * header it would otherwise corrupt. */
	start = le16toh(h.csum_start);
	off = le16toh(h.csum_offset);
	if (start < ip.l3_len || start + off + 2 > ip.len)
		return -EINVAL;
	info->kind = TUN_OFFLOAD_CSUM;
	info->csum_start = (uint16_t)start;
	info->csum_offset = (uint16_t)off;
	return 0;
}

void tun_offload_vnet_hdr(const struct tun_offload_info *info, struct tun_vnet_hdr *h)
{
	bool v6 = (info->pkt[0] >> 4) == 6;

	memset(h, 0, sizeof(*h));
	switch (info->kind) {
	case TUN_OFFLOAD_PLAIN:
		return;
	case TUN_OFFLOAD_CSUM:
		break;
	case TUN_OFFLOAD_TCP:
		h->gso_type = v6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4;
		if (info->pkt[info->l3_len + TCP_FLAGS] & TCP_CWR)
			h->gso_type |= VIRTIO_NET_HDR_GSO_ECN;
		break;
	case TUN_OFFLOAD_UDP:
		h->gso_type = VIRTIO_NET_HDR_GSO_UDP_L4;
		break;
	}
	h->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	if (h->gso_type != VIRTIO_NET_HDR_GSO_NONE) {
		h->hdr_len = htole16(info->hdrs_len);
		h->gso_size = htole16(info->gso_size);
	}
	h->csum_start = htole16(info->csum_start);
	h->csum_offset = htole16(info->csum_offset);
}

int tun_offload_parse_frame(const void *hdr_in, const uint8_t *frame, size_t len, size_t l2_len,
			    struct tun_vnet_hdr *vnet, struct tun_offload_info *info)
{
	int err;

	if (len < l2_len)
		return -EINVAL;
	memcpy(vnet, hdr_in, sizeof(*vnet));
	if (vnet->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
		if (vnet->csum_start < l2_len)
			return -EINVAL;
		vnet->csum_start = (uint16_t)(vnet->csum_start - l2_len);
	}
	vnet->hdr_len = vnet->hdr_len > l2_len ? (uint16_t)(vnet->hdr_len - l2_len) : 0;
	err = tun_offload_parse_hdr(vnet, frame + l2_len, len - l2_len, info);
	if (!err)
		tun_offload_vnet_hdr(info, vnet);
	return err;
}

int tun_offload_parse(const uint8_t *frame, size_t len, struct tun_offload_info *info)
{
	if (len < TUN_VNET_HDR_LEN)
		return -EINVAL;
	return tun_offload_parse_hdr(frame, frame + TUN_VNET_HDR_LEN, len - TUN_VNET_HDR_LEN, info);
}

/* The length of packet i of a split. */
static uint32_t seg_len(const struct tun_offload_info *info, unsigned int i)
{
	uint32_t payload = info->len - info->hdrs_len;

	if (info->kind == TUN_OFFLOAD_PLAIN || info->kind == TUN_OFFLOAD_CSUM)
		return info->len;
	if (!payload)
		return info->hdrs_len;
	return info->hdrs_len + min_u32(info->gso_size, payload - i * info->gso_size);
}

/* Finishes the IP header of one segment of len bytes. */
static void fix_ip(uint8_t *p, uint32_t len, uint16_t l3_len, uint16_t id)
{
	if ((p[0] >> 4) == 4) {
		put16(p + 2, (uint16_t)len);
		put16(p + IP4_ID, id);
		put16(p + IP4_CSUM, 0);
		put16(p + IP4_CSUM, tun_csum_finish(tun_csum_add(0, p, l3_len)));
	} else {
		put16(p + IP6_PLEN, (uint16_t)(len - IP6_HDR_LEN));
	}
}

/* Finishes the TCP or UDP header of one segment: sequence number and flags
 * (as tcp_gso_segment leaves them: CWR only on the first, FIN and PSH only
 * on the last), length, and the whole checksum with its pseudo-header. */
static void fix_l4(const struct tun_offload_info *info, uint8_t *p, uint32_t len, unsigned int i)
{
	uint8_t *l4 = p + info->l3_len;
	uint32_t l4_len = len - info->l3_len;
	uint16_t check;

	if (info->kind == TUN_OFFLOAD_TCP) {
		uint8_t flags = info->pkt[info->l3_len + TCP_FLAGS];

		put32(l4 + TCP_SEQ, get32(info->pkt + info->l3_len + TCP_SEQ) + i * info->gso_size);
		if (i + 1u != info->n_segs)
			flags &= (uint8_t)~(TCP_FIN | TCP_PSH);
		if (i != 0)
			flags &= (uint8_t)~TCP_CWR;
		l4[TCP_FLAGS] = flags;
	} else {
		put16(l4 + UDP_LEN, (uint16_t)l4_len);
	}
	put16(l4 + info->csum_offset, 0);
	check = tun_csum_finish(tun_csum_add(tun_csum_pseudo(p, info->kind == TUN_OFFLOAD_TCP ?
							     IPPROTO_TCP : IPPROTO_UDP, l4_len),
					     l4, l4_len));
	/* A zero UDP checksum means "none"; its one's-complement twin does
	 * not (RFC 768; RFC 8200 forbids zero for IPv6). */
	if (info->kind == TUN_OFFLOAD_UDP && check == 0)
		check = 0xffff;
	put16(l4 + info->csum_offset, check);
}

int tun_offload_split(const struct tun_offload_info *info, struct tun_offload_seg *segs,
		      unsigned int n_segs, size_t headroom)
{
	const uint8_t *src = info->pkt;
	uint16_t id0 = (src[0] >> 4) == 4 ? get16(src + IP4_ID) : 0;
	unsigned int i;
	bool in_place;

	if (n_segs < info->n_segs)
		return -ENOSPC;
	in_place = segs[0].buf + headroom == src;
	for (i = 0; i < info->n_segs; i++)
		if (headroom > segs[i].cap || seg_len(info, i) > segs[i].cap - headroom)
			return -EMSGSIZE;

	if (info->kind == TUN_OFFLOAD_PLAIN || info->kind == TUN_OFFLOAD_CSUM) {
		uint8_t *dst = segs[0].buf + headroom;

		if (!in_place)
			memcpy(dst, src, info->len);
		if (info->kind == TUN_OFFLOAD_CSUM) {
			/* The field holds the pseudo-header sum already: sum
			 * over it, as a device would (skb_checksum_help). */
			uint8_t *field = dst + info->csum_start + info->csum_offset;
			uint16_t check = tun_csum_finish(tun_csum_add(0, dst + info->csum_start,
								      info->len - info->csum_start));

			put16(field, check ? check : 0xffff);
		}
		segs[0].len = info->len;
		return 1;
	}

	/* Backwards, so that an in-place first segment, whose headers are the
	 * template of all the others, is changed last. */
	for (i = info->n_segs; i-- > 0;) {
		uint8_t *dst = segs[i].buf + headroom;
		uint32_t len = seg_len(info, i);

		if (i != 0 || !in_place) {
			memcpy(dst, src, info->hdrs_len);
			memcpy(dst + info->hdrs_len, src + info->hdrs_len + i * info->gso_size,
			       len - info->hdrs_len);
		}
		/* IDs count up from the first, as inet_gso_segment does
		 * without SKB_GSO_TCP_FIXEDID, which a TUN cannot ask for. */
		fix_ip(dst, len, info->l3_len, (uint16_t)(id0 + i));
		fix_l4(info, dst, len, i);
		segs[i].len = len;
	}
	return info->n_segs;
}

/* --- GRO --- */

/* What the coalescing code needs of a TCP or UDP packet. */
struct l4_view {
	uint32_t len;       /* IP total length */
	uint32_t seq;       /* TCP */
	uint16_t payload;   /* L4 payload bytes */
	uint8_t l3_len;
	uint8_t l4_len;
	uint8_t flags;      /* TCP */
	uint8_t proto;
	bool mergeable;     /* may start or extend a super-packet */
};

/* A TCP packet whose ports are readable is keyed: it belongs to a flow and
 * takes part in that flow's ordering even if it cannot be merged. So is a
 * UDP packet when the table coalesces UDP. */
static bool view_l4(const struct tun_gro *gro, const uint8_t *p, size_t len, struct l4_view *v)
{
	struct ip_view ip;
	const uint8_t *th;

	if (parse_ip(p, len, &ip) || ip.fragment ||
	    !(ip.proto == IPPROTO_TCP || (ip.proto == IPPROTO_UDP && gro->udp)))
		return false;
	th = p + ip.l3_len;
	v->len = ip.len;
	v->l3_len = (uint8_t)ip.l3_len;
	v->proto = ip.proto;
	v->seq = 0;
	v->flags = 0;
	if (ip.proto == IPPROTO_UDP) {
		if (ip.l3_len + (uint32_t)UDP_HDR_LEN > ip.len)
			return false;
		v->l4_len = UDP_HDR_LEN;
		v->payload = (uint16_t)(ip.len - ip.l3_len - UDP_HDR_LEN);
		/* A UDP length that disagrees with the IP length would not
		 * survive resegmentation. */
		v->mergeable = v->payload > 0 && get16(th + UDP_LEN) == ip.len - ip.l3_len;
	} else {
		if (ip.l3_len + (uint32_t)TCP_HDR_MIN > ip.len)
			return false;
		v->l4_len = (uint8_t)((th[TCP_DOFF] >> 4) * 4);
		if (v->l4_len < TCP_HDR_MIN || ip.l3_len + v->l4_len > ip.len)
			return false;
		v->seq = get32(th + TCP_SEQ);
		v->flags = th[TCP_FLAGS];
		v->payload = (uint16_t)(ip.len - ip.l3_len - v->l4_len);
		/* Only plain data segments merge: ACK, and PSH on the last
		 * one (no SYN, FIN, RST, URG, and no ECN signals, which
		 * tcp_gro_receive also refuses to fold). */
		v->mergeable = v->payload > 0 &&
			       (v->flags == TCP_ACKF || v->flags == (TCP_ACKF | TCP_PSH));
	}
	/* IPv4 options and a bad header checksum stop it too, as in
	 * inet_gro_receive. */
	if (v->mergeable && ip.version == 4)
		v->mergeable = ip.l3_len == IP4_HDR_MIN && tun_csum_finish(tun_csum_add(0, p, IP4_HDR_MIN)) == 0;
	if (v->mergeable && gro->verify_csum)
		v->mergeable = tun_csum_finish(tun_csum_add(tun_csum_pseudo(p, ip.proto, ip.len - ip.l3_len),
							    th, ip.len - ip.l3_len)) == 0;
	return true;
}

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Hash of version, addresses and ports. Not keyed: colliding flows only
 * lengthen a probe in a table that is at most half full and one batch long. */
static uint32_t flow_hash(const uint8_t *p, uint8_t l3_len)
{
	const uint64_t mul = 0x9e3779b97f4a7c15ull;
	bool v6 = (p[0] >> 4) == 6;
	const uint8_t *addrs = p + (v6 ? IP6_SRC : IP4_SRC);
	unsigned int n = v6 ? 32 : 8, i;
	uint32_t ports;
	uint64_t h = v6;

	for (i = 0; i < n; i += 8)
		h = (h ^ load64(addrs + i)) * mul;
	memcpy(&ports, p + l3_len, sizeof(ports));
	h = (h ^ ports) * mul;
	return (uint32_t)(h >> 32);
}

static bool same_flow(const struct tun_gro_item *it, const uint8_t *p, uint8_t l3_len,
		      uint8_t proto)
{
	const uint8_t *q = it->pkt;

	if (it->proto != proto || (q[0] >> 4) != (p[0] >> 4))
		return false;
	if ((p[0] >> 4) == 6) {
		if (memcmp(q + IP6_SRC, p + IP6_SRC, 32))
			return false;
	} else if (memcmp(q + IP4_SRC, p + IP4_SRC, 8)) {
		return false;
	}
	/* Ports behind each packet's own IP header: IPv4 options do not make
	 * another flow. */
	return memcmp(q + it->l3_len, p + l3_len, 4) == 0;
}

/* The slot of p's flow: the one holding it, or the empty one to take. */
static unsigned int flow_slot(const struct tun_gro *gro, const uint8_t *p, uint8_t l3_len,
			      uint8_t proto, uint32_t hash, bool *found)
{
	unsigned int s = hash & (TUN_GRO_SLOTS - 1);

	for (;;) {
		const struct tun_gro_item *it;

		if (gro->slots[s].gen != gro->gen) {
			*found = false;
			return s;
		}
		it = &gro->items[gro->slots[s].item];
		if (it->hash == hash && same_flow(it, p, l3_len, proto)) {
			*found = true;
			return s;
		}
		s = (s + 1) & (TUN_GRO_SLOTS - 1);
	}
}

/* Whether segment p may be appended to the flow's latest item: the same
 * headers apart from lengths, IPv4 ID and checksums (so the kernel's
 * resegmentation gives back what was sent), the next sequence number, and
 * a payload no longer than the first (only the last may be shorter). */
/* The IP fields a super-packet carries one copy of: the same in p as in
 * the item's first packet, and for IPv4 without DF, IDs that count up as
 * a sender's segmentation made them (with DF the ID carries nothing). */
static bool same_ip_fields(const struct tun_gro_item *it, const uint8_t *p)
{
	const uint8_t *q = it->pkt;

	if ((p[0] >> 4) == 6)
		/* version, traffic class, flow label; hop limit */
		return memcmp(p, q, 4) == 0 && p[IP6_HOPS] == q[IP6_HOPS];
	/* TOS, TTL, DF */
	if (p[1] != q[1] || p[IP4_TTL] != q[IP4_TTL] || ((p[IP4_FRAG] ^ q[IP4_FRAG]) & 0xe0))
		return false;
	return (get16(p + IP4_FRAG) & IP4_DF) || get16(p + IP4_ID) == it->next_id;
}

static bool can_merge(const struct tun_gro_item *it, const uint8_t *p, const struct l4_view *v)
{
	const uint8_t *tp = p + v->l3_len, *tq = it->pkt + it->l3_len;

	if (!it->open || !v->mergeable || v->l4_len != it->l4_len ||
	    v->payload > it->gso_size || it->len + v->payload > it->room)
		return false;
	/* The kernel resegments at most this many datagrams. */
	if (v->proto == IPPROTO_UDP)
		return it->segs < TUN_GRO_UDP_MAX_SEGS && same_ip_fields(it, p);
	if (v->seq != it->next_seq)
		return false;
	/* Data offset with the reserved and AE bits, acknowledgment, window,
	 * options: one super-packet carries one copy of each. */
	if (tp[TCP_DOFF] != tq[TCP_DOFF] || memcmp(tp + TCP_ACK, tq + TCP_ACK, 4) ||
	    memcmp(tp + TCP_WIN, tq + TCP_WIN, 2) ||
	    memcmp(tp + TCP_HDR_MIN, tq + TCP_HDR_MIN, v->l4_len - TCP_HDR_MIN))
		return false;
	return same_ip_fields(it, p);
}

void tun_gro_init(struct tun_gro *gro, bool verify_csum, bool udp)
{
	memset(gro, 0, sizeof(*gro));
	gro->verify_csum = verify_csum;
	gro->udp = udp;
	gro->gen = 1;
}

int tun_gro_add(struct tun_gro *gro, uint8_t *buf, size_t cap, size_t off, size_t len,
		void *cookie)
{
	struct tun_gro_item *it;
	struct l4_view v;
	unsigned int slot = 0;
	uint8_t *p;
	bool keyed, found = false;
	uint32_t hash = 0;

	if (!buf || off < TUN_VNET_HDR_LEN || off > cap || len == 0 || len > cap - off)
		return -EINVAL;
	p = buf + off;
	keyed = view_l4(gro, p, len, &v);
	if (keyed) {
		hash = flow_hash(p, v.l3_len);
		slot = flow_slot(gro, p, v.l3_len, v.proto, hash, &found);
	}
	if (found) {
		it = &gro->items[gro->slots[slot].item];
		if (can_merge(it, p, &v)) {
			memcpy(it->pkt + it->len, p + v.l3_len + v.l4_len, v.payload);
			it->len += v.payload;
			it->segs++;
			it->next_seq += v.payload;
			it->next_id++;
			if (v.payload < it->gso_size)
				it->open = false;
			if (v.proto == IPPROTO_TCP && (v.flags & TCP_PSH)) {
				it->pkt[it->l3_len + TCP_FLAGS] |= TCP_PSH;
				it->open = false;
			}
			return TUN_GRO_MERGED;
		}
	}

	if (gro->n_items == TUN_GRO_MAX_ITEMS)
		return -ENOSPC;
	it = &gro->items[gro->n_items];
	memset(it, 0, sizeof(*it));
	it->pkt = p;
	it->cookie = cookie;
	it->len = keyed ? v.len : (uint32_t)len;
	it->room = cap - off > IP_MAX_LEN ? IP_MAX_LEN : (uint32_t)(cap - off);
	it->segs = 1;
	if (keyed) {
		/* This packet is now the flow's latest, even if it cannot
		 * take more: a later segment must not jump ahead of it. */
		it->keyed = true;
		it->hash = hash;
		it->l3_len = v.l3_len;
		it->l4_len = v.l4_len;
		it->proto = v.proto;
		it->gso_size = v.payload;
		it->next_seq = v.seq + v.payload;
		it->next_id = (uint16_t)((p[0] >> 4) == 4 ? get16(p + IP4_ID) + 1 : 0);
		it->open = v.mergeable && !(v.flags & TCP_PSH);
		gro->slots[slot].gen = gro->gen;
		gro->slots[slot].item = gro->n_items;
	}
	gro->n_items++;
	return TUN_GRO_HELD;
}

/* Turns an item of several segments into one GSO write: IP (and UDP)
 * lengths, and the L4 checksum field holding the pseudo-header sum over
 * the whole length, as __tcp_v4_send_check leaves it for CHECKSUM_PARTIAL. */
static void finish_super(const struct tun_gro_item *it, struct tun_vnet_hdr *h)
{
	uint8_t *p = it->pkt;
	bool v6 = (p[0] >> 4) == 6;

	if (v6) {
		put16(p + IP6_PLEN, (uint16_t)(it->len - IP6_HDR_LEN));
	} else {
		uint16_t old = get16(p + 2);

		put16(p + 2, (uint16_t)it->len);
		/* The header checksum was verified when the item opened. */
		put16(p + IP4_CSUM, tun_csum_replace16(get16(p + IP4_CSUM), old, (uint16_t)it->len));
	}
	if (it->proto == IPPROTO_UDP) {
		put16(p + it->l3_len + UDP_LEN, (uint16_t)(it->len - it->l3_len));
		put16(p + it->l3_len + UDP_CSUM_OFF,
		      tun_csum_fold(tun_csum_pseudo(p, IPPROTO_UDP, it->len - it->l3_len)));
		h->gso_type = VIRTIO_NET_HDR_GSO_UDP_L4;
		h->csum_offset = htole16(UDP_CSUM_OFF);
	} else {
		put16(p + it->l3_len + TCP_CSUM_OFF,
		      tun_csum_fold(tun_csum_pseudo(p, IPPROTO_TCP, it->len - it->l3_len)));
		h->gso_type = v6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4;
		h->csum_offset = htole16(TCP_CSUM_OFF);
	}
	h->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h->hdr_len = htole16((uint16_t)(it->l3_len + it->l4_len));
	h->gso_size = htole16(it->gso_size);
	h->csum_start = htole16(it->l3_len);
}

int tun_gro_finish(struct tun_gro *gro, struct tun_gro_out *out, unsigned int n_out)
{
	unsigned int i, n = gro->n_items;

	if (n_out < n)
		return -ENOSPC;
	for (i = 0; i < n; i++) {
		const struct tun_gro_item *it = &gro->items[i];
		struct tun_vnet_hdr h;

		memset(&h, 0, sizeof(h));
		if (it->segs > 1)
			finish_super(it, &h);
		memcpy(it->pkt - TUN_VNET_HDR_LEN, &h, sizeof(h));
		out[i].data = it->pkt - TUN_VNET_HDR_LEN;
		out[i].len = TUN_VNET_HDR_LEN + it->len;
		out[i].cookie = it->cookie;
		out[i].segs = it->segs;
	}
	gro->n_items = 0;
	/* A new generation empties every slot at once; on wrap-around the
	 * old generation numbers could come back, so clear them for real. */
	if (++gro->gen == 0) {
		memset(gro->slots, 0, sizeof(gro->slots));
		gro->gen = 1;
	}
	return (int)n;
}
