/* Offloads of a TUN opened with IFF_VNET_HDR and TUNSETOFFLOAD: the
 * virtio-net header in front of every packet, the split of a GSO
 * super-packet into MTU-sized IP packets before sealing (send side), and the
 * coalescing of decrypted TCP segments into one super-packet per TUN write
 * (receive side, GRO). Pure code: no I/O, no allocation; callers own every
 * buffer and every table. */
#ifndef WEFT_TUN_OFFLOAD_H
#define WEFT_TUN_OFFLOAD_H

#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Linux 6.2 added UDP segmentation offload to TUN; the 6.1 UAPI headers of
 * Debian 12 lack these (values from the newer headers). */
#ifndef TUN_F_USO4
#define TUN_F_USO4 0x20
#endif
#ifndef TUN_F_USO6
#define TUN_F_USO6 0x40
#endif
#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5
#endif

/* What weftd asks of the TUN with TUNSETOFFLOAD. USO needs CSUM, and USO4
 * and USO6 only work together. */
#define TUN_OFFLOAD_FLAGS \
	(TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_USO4 | TUN_F_USO6)

/* The virtio-net header (virtio 1.x, section 5.1.6) without num_buffers: the
 * 10 bytes a TUN read starts with and a TUN write must start with. The
 * 16-bit fields are little-endian (virtio 1.x); a TUN uses host order unless
 * told otherwise, which is the same on the little-endian hosts weft runs on
 * (big-endian hosts would need TUNSETVNETLE). */
struct tun_vnet_hdr {
	uint8_t flags;         /* VIRTIO_NET_HDR_F_* */
	uint8_t gso_type;      /* VIRTIO_NET_HDR_GSO_*, maybe | GSO_ECN */
	uint16_t hdr_len;      /* le: bytes of headers (not trusted on input) */
	uint16_t gso_size;     /* le: payload bytes per segment */
	uint16_t csum_start;   /* le: where the L4 checksum sum starts */
	uint16_t csum_offset;  /* le: where the sum goes, from csum_start */
};

enum {
	TUN_VNET_HDR_LEN = 10,
	/* The smallest segment payload accepted. Linux never sends a TCP MSS
	 * below 48 (TCP_MIN_SND_MSS); smaller values only serve to multiply
	 * one read into thousands of packets. */
	TUN_OFFLOAD_MIN_GSO_SIZE = 48,
	/* Hence at most this many segments per super-packet. */
	TUN_OFFLOAD_MAX_SEGS = (65535 + TUN_OFFLOAD_MIN_GSO_SIZE - 1) / TUN_OFFLOAD_MIN_GSO_SIZE,
};

_Static_assert(sizeof(struct tun_vnet_hdr) == TUN_VNET_HDR_LEN, "virtio_net_hdr is 10 bytes");
_Static_assert(sizeof(struct tun_vnet_hdr) == sizeof(struct virtio_net_hdr), "same as the kernel's");

/* What a read from the TUN holds, as tun_offload_parse found it. */
enum tun_offload_kind {
	TUN_OFFLOAD_PLAIN,  /* an IP packet to send as it is */
	TUN_OFFLOAD_CSUM,   /* one packet whose L4 checksum must be completed */
	TUN_OFFLOAD_TCP,    /* a TCP super-packet (GSO_TCPV4/TCPV6) */
	TUN_OFFLOAD_UDP,    /* a UDP super-packet (GSO_UDP_L4) */
};

/* The result of tun_offload_parse; read-only input of tun_offload_split. */
struct tun_offload_info {
	const uint8_t *pkt;     /* the IP packet (after the virtio-net header) */
	uint32_t len;           /* its length by its IP header (padding dropped) */
	uint16_t l3_len;        /* IP header length: where TCP/UDP starts */
	uint16_t hdrs_len;      /* headers repeated in each segment (TCP/UDP) */
	uint16_t gso_size;      /* payload bytes per segment (TCP/UDP) */
	uint16_t n_segs;        /* packets tun_offload_split writes (>= 1) */
	uint32_t max_seg_len;   /* the longest of them */
	uint16_t csum_start;    /* CSUM: sum from here to the end ... */
	uint16_t csum_offset;   /* ... and store it this far after csum_start */
	uint8_t kind;           /* enum tun_offload_kind */
};

/* Validates the virtio-net header vnet (10 bytes, any alignment) and the IP
 * packet pkt of len bytes behind it. On success fills info and returns 0;
 * otherwise returns -EINVAL (malformed header or packet), or
 * -EPROTONOSUPPORT (well-formed but not supported: UFO, GSO over IPv6
 * extension headers, IP fragments, an IP version other than 4 and 6). */
int tun_offload_parse_hdr(const void *vnet, const uint8_t *pkt, size_t len,
			  struct tun_offload_info *info);

/* The virtio-net header that describes a parsed packet, built from info
 * alone: offsets from the IP header, NEEDS_CSUM for a partial checksum or a
 * super-packet, never DATA_VALID, hdr_len the headers' real length, GSO_ECN
 * exactly when the TCP header has CWR. A packet passed on from one VM to
 * another (or to the host) carries this, never the sender's own header:
 * its fields are the sender's word, not facts about the packet. */
void tun_offload_vnet_hdr(const struct tun_offload_info *info, struct tun_vnet_hdr *h);

/* The same for a VM's frame: the virtio-net header hdr_in, whose offsets
 * count from the start of the frame, then l2_len bytes of link header, then
 * the IP packet, len bytes in all. On success *vnet is the header rebuilt by
 * tun_offload_vnet_hdr (offsets from the IP header) and info is filled. */
int tun_offload_parse_frame(const void *hdr_in, const uint8_t *frame, size_t len, size_t l2_len,
			    struct tun_vnet_hdr *vnet, struct tun_offload_info *info);

/* The same for what one TUN read returns: the header, then the packet. This
 * is also the fuzzing entry point. */
int tun_offload_parse(const uint8_t *frame, size_t len, struct tun_offload_info *info);

/* One output buffer of tun_offload_split. */
struct tun_offload_seg {
	uint8_t *buf;   /* the caller's buffer; the packet goes to buf + headroom */
	uint32_t cap;   /* bytes usable from buf on (tail room already left out) */
	uint32_t len;   /* out: length of the IP packet written */
};

/* Writes the info->n_segs IP packets of a parsed read into segs[0..], each
 * at buf + headroom with its lengths, IPv4 ID and header checksum, TCP
 * sequence number and flags, and its L4 checksum computed in full.
 * segs[0] may be the input itself (segs[0].buf + headroom == info->pkt):
 * then the first packet is finished in place and nothing is copied for it;
 * no other segment buffer may overlap the input. Returns the number of
 * packets, -ENOSPC when n_segs is too small, or -EMSGSIZE when a packet does
 * not fit its buffer; on error nothing has been written. */
int tun_offload_split(const struct tun_offload_info *info, struct tun_offload_seg *segs,
		      unsigned int n_segs, size_t headroom);

/* --- Coalescing (GRO) of the packets of one receive batch --- */

enum {
	/* TUN writes one batch can produce; tun_gro_add says -ENOSPC after. */
	TUN_GRO_MAX_ITEMS = 256,
	/* Flow hash slots: a power of two, at most half of them in use. */
	TUN_GRO_SLOTS = 2 * TUN_GRO_MAX_ITEMS,
	/* Datagrams in one UDP super-packet (the kernel's UDP_MAX_SEGMENTS
	 * was 64 before Linux 6.2). */
	TUN_GRO_UDP_MAX_SEGS = 64,
};

/* One pending TUN write. Private to offload.c. */
struct tun_gro_item {
	uint8_t *pkt;        /* the IP packet in the caller's buffer */
	void *cookie;        /* the caller's handle for that buffer */
	uint32_t len;        /* bytes of the (super-)packet so far */
	uint32_t room;       /* bytes it may grow to: buffer space, at most 65535 */
	uint32_t next_seq;   /* TCP sequence number that may follow */
	uint32_t hash;       /* flow hash (keyed items) */
	uint16_t gso_size;   /* payload of the first segment */
	uint16_t segs;       /* segments merged in (1: none yet) */
	uint16_t next_id;    /* IPv4 ID that may follow (without DF) */
	uint8_t l3_len;      /* IP header length */
	uint8_t l4_len;      /* TCP or UDP header length */
	uint8_t proto;       /* IPPROTO_TCP or IPPROTO_UDP (keyed items) */
	bool keyed;          /* a TCP (or UDP) flow's packet: in the flow table */
	bool open;           /* may still take segments */
};

/* A batch's coalescing table. One thread owns it; it holds pointers into
 * the caller's buffers from tun_gro_add until tun_gro_finish. About 16 KiB:
 * embed it in the worker, do not put it on a small stack. */
struct tun_gro {
	bool verify_csum;          /* check each TCP/UDP checksum before merging */
	bool udp;                  /* coalesce UDP datagrams too (GSO_UDP_L4) */
	uint16_t n_items;
	uint32_t gen;              /* slots of another generation are empty */
	struct {
		uint32_t gen;
		uint16_t item;     /* the flow's latest item */
	} slots[TUN_GRO_SLOTS];
	struct tun_gro_item items[TUN_GRO_MAX_ITEMS];
};

/* One TUN write produced by tun_gro_finish. */
struct tun_gro_out {
	uint8_t *data;   /* the virtio-net header, the packet right behind it */
	size_t len;      /* TUN_VNET_HDR_LEN + packet length */
	void *cookie;    /* as given to tun_gro_add with the buffer */
	uint16_t segs;   /* IP packets carried (1: passed through as it was) */
};

/* verify_csum: merge only segments whose TCP checksum is right, as Linux
 * GRO does (a merged super-packet is written as NEEDS_CSUM, which the
 * kernel trusts). Turn it off only if the sender is trusted to be right.
 * udp: also merge consecutive datagrams of one UDP flow of one size (the
 * last may be shorter) into a GSO_UDP_L4 super-packet; only for a writer
 * whose kernel takes USO (TUN_F_USO4/6 accepted). */
void tun_gro_init(struct tun_gro *gro, bool verify_csum, bool udp);

enum tun_gro_result {
	TUN_GRO_HELD = 0,    /* the buffer now belongs to the table until finish */
	TUN_GRO_MERGED = 1,  /* payload copied into an earlier buffer: reuse it */
};

/* Feeds one IP packet: len bytes at buf + off, in a buffer of cap bytes.
 * off must leave TUN_VNET_HDR_LEN bytes for the header; the room behind the
 * packet (up to cap) is where later segments of its flow are appended.
 * Returns an enum tun_gro_result, -EINVAL for a bad buffer description, or
 * -ENOSPC when the table is full (finish the batch, then add again). */
int tun_gro_add(struct tun_gro *gro, uint8_t *buf, size_t cap, size_t off, size_t len,
		void *cookie);

/* Completes the headers of every pending write, fills out[] in the order
 * the writes' first packets were added (packets of one flow keep their
 * order) and empties the table for the next batch. Returns the number of
 * writes, or -ENOSPC (table untouched) when n_out is too small. */
int tun_gro_finish(struct tun_gro *gro, struct tun_gro_out *out, unsigned int n_out);

#endif
