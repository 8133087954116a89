/* Mesh discovery messages: how weft hosts tell each other which host holds
 * a VM address. They travel inside the WireGuard tunnels between hosts, so
 * they are authenticated by the tunnel and the sender is the peer whose
 * session opened them. Wire format (docs/mesh.md):
 *
 *   an IPv6 packet: version 6, next header MESH_IP_PROTO (253, RFC 3692
 *   experimentation), hop limit 255, source and destination MESH_LL_ADDR
 *   (link-local: never routed), no extension headers; its payload is
 *
 *   struct mesh_hdr, then count struct mesh_entry, then one lease
 *   (MESH_LEASE_SIZE bytes, mesh/lease.h) per entry flagged MESH_F_LEASE,
 *   in the entries' order, and nothing else (the payload length is exactly
 *   that; bytes past it are ignored); the whole packet at most
 *   MESH_MAX_PACKET bytes.
 *
 * Traffic class and flow label are ignored (written 0). Every entry field
 * holds the one value the builder would write: reserved bytes 0, host bits
 * past cidr 0, the 12 bytes after an IPv4 address 0, the holder 0 unless
 * MESH_F_HOLDER (and not 0 with it: no X25519 key is), a lease only on a
 * claim that a host holds the address (enum mesh_flags) and well-formed
 * (mesh_lease_decode), plus the per-type rules of enum mesh_type. So a
 * message has exactly one encoding.
 *
 * Pure functions: no I/O, no allocation. mesh_msg_parse is the entry point
 * of fuzz/fuzz_mesh_msg.c and of the data path (mesh/mesh.c). */
#ifndef WEFT_MESH_MSG_H
#define WEFT_MESH_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mesh/lease.h"

enum {
	MESH_IP_PROTO = 253,
	MESH_VERSION = 1,
	MESH_MAX_ENTRIES = 16,
	MESH_IP6_HLEN = 40,
	MESH_KEY_LEN = 32,
	/* IPv6's minimum MTU: a message crosses any tunnel unfragmented. 16
	 * entries fit without leases, 6 with a lease each. */
	MESH_MAX_PACKET = 1280,
};

/* fe80::77:65ff:fe66:7401, the router's link-local address on VM ports. */
#define MESH_LL_ADDR                                                                          \
	{ 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x77, 0x65, 0xff, 0xfe, 0x66, 0x74, 0x01 }

enum mesh_type {
	/* Who holds addr? Unicast mode: to the address's home host, which
	 * answers from its records; multicast mode: to every member, and only
	 * the holder answers. seq 0, no MESH_F_HOLDER. */
	MESH_SOLICIT = 1,
	/* addr is held by holder since seq. Without MESH_F_HOLDER: "nobody
	 * holds it" (a home host's negative answer). Any seq. */
	MESH_ADVERT = 2,
	/* The sender now holds addr, registered at seq (sent on registration:
	 * to the home host in unicast mode, to every member in multicast).
	 * seq != 0; no MESH_F_HOLDER: the sender is the holder. */
	MESH_ANNOUNCE = 3,
	/* The sender received a packet for addr, which it does not hold; with
	 * MESH_F_HOLDER it says where addr went (it forwarded the packet
	 * there). The receiver re-resolves. Any seq, holder optional. */
	MESH_NOT_HERE = 4,
	/* To the previous holder, from the home host: addr moved to holder at
	 * seq. The previous holder forwards what still reaches it.
	 * MESH_F_HOLDER and seq != 0. */
	MESH_MOVED = 5,
};

enum mesh_flags {
	MESH_F_HOLDER = 1 << 0, /* holder is set */
	/* A lease follows the entries for this one: only on an entry that
	 * says a host holds its address (an ANNOUNCE, a MOVED, an ADVERT or a
	 * NOT_HERE with a holder). Whether the lease covers the claim is the
	 * receiver's check (docs/mesh.md, "Leases"). */
	MESH_F_LEASE = 1 << 1,
	MESH_F_ALL = MESH_F_HOLDER | MESH_F_LEASE,
};

/* 8 bytes, network byte order. */
struct mesh_hdr {
	uint8_t magic[2];   /* 'w', 'm' */
	uint8_t version;    /* MESH_VERSION */
	uint8_t type;       /* enum mesh_type */
	uint16_t count;     /* entries that follow, 1..MESH_MAX_ENTRIES */
	uint16_t reserved;  /* 0 */
};
_Static_assert(sizeof(struct mesh_hdr) == 8, "mesh_hdr is 8 bytes on the wire");

/* 64 bytes, network byte order. */
struct mesh_entry {
	uint8_t family;     /* 4 or 6 */
	uint8_t cidr;       /* <= 32 or 128 */
	uint8_t flags;      /* enum mesh_flags */
	uint8_t reserved[5];/* 0 */
	uint64_t seq;       /* registration stamp (ns since the epoch); 0 in a SOLICIT */
	uint8_t addr[16];   /* IPv4 in the first 4 bytes; host bits and the rest 0 */
	uint8_t holder[MESH_KEY_LEN]; /* a host's WireGuard public key; 0 without MESH_F_HOLDER */
};
_Static_assert(sizeof(struct mesh_entry) == 64, "mesh_entry is 64 bytes on the wire");

/* One entry, in host order. */
struct mesh_item {
	int family;          /* AF_INET or AF_INET6 */
	uint8_t cidr;
	bool has_holder;
	uint64_t seq;
	uint8_t addr[16];
	uint8_t holder[MESH_KEY_LEN];
	bool has_lease;
	struct mesh_lease lease; /* with has_lease */
};

struct mesh_msg {
	enum mesh_type type;
	size_t count;
	struct mesh_item items[MESH_MAX_ENTRIES];
};

/* Why a message was refused. */
enum mesh_error {
	MESH_OK = 0,
	MESH_ERR_SHORT = -1,      /* shorter than its headers, entries or leases */
	MESH_ERR_IP = -2,         /* not IPv6 / next header 253 / link-local / hop limit 255 */
	MESH_ERR_MAGIC = -3,      /* bad magic or version */
	MESH_ERR_TYPE = -4,       /* unknown type */
	MESH_ERR_COUNT = -5,      /* 0 or more than MESH_MAX_ENTRIES entries, header
				   * reserved not 0, a payload longer than its
				   * entries and leases, or a packet longer than
				   * MESH_MAX_PACKET */
	MESH_ERR_ENTRY = -6,      /* bad family, cidr, host bits, flags or reserved bytes,
				   * a holder without its flag (or a zero one with it),
				   * a SOLICIT with a seq or holder, an ANNOUNCE with a
				   * holder, an ANNOUNCE/MOVED without what it needs,
				   * or a lease flag on an entry that claims no holder */
	MESH_ERR_LEASE = -7,      /* a lease that mesh_lease_decode refuses */
};

/* Whether ip[0, len) is a mesh message at all (IPv6, next header 253):
 * the data path's cheap test before mesh_msg_parse. */
bool mesh_msg_is_mesh(const uint8_t *ip, size_t len);

/* Parses the IPv6 packet ip[0, len) (trailing bytes beyond its payload
 * length are ignored). MESH_OK and *msg filled, or a mesh_error, checked in
 * the order of docs/mesh.md "Refusals": SHORT (IPv6 header), IP, SHORT
 * (payload), MAGIC, TYPE, COUNT, SHORT (entries), ENTRY, SHORT (leases),
 * COUNT (longer than its parts, or than MESH_MAX_PACKET), LEASE. */
int mesh_msg_parse(const uint8_t *ip, size_t len, struct mesh_msg *msg);

/* Writes msg as a whole IPv6 packet to out[0, cap): its length, or 0 when
 * it does not fit or msg is invalid (what mesh_msg_parse would refuse).
 * Bytes of an item that have no place on the wire are not read: addr[4, 16)
 * of an IPv4 item, holder when !has_holder, lease when !has_lease. */
size_t mesh_msg_build(const struct mesh_msg *msg, uint8_t *out, size_t cap);

/* The length of the packet of a message of count entries, leases of them
 * with a lease. */
static inline size_t mesh_msg_size(size_t count, size_t leases)
{
	return MESH_IP6_HLEN + sizeof(struct mesh_hdr) + count * sizeof(struct mesh_entry) +
	       leases * MESH_LEASE_SIZE;
}

const char *mesh_type_name(enum mesh_type type);

/* A packet one host forwards to another because the address it was sent
 * to moved there is wrapped in an IPv6 header: source and destination
 * MESH_LL_ADDR, hop limit 255, next header 4 (IPv4) or 41 (IPv6), payload
 * the whole packet. The mark tells the receiver that the forwarding host
 * checked the source against the host it came from, so the receiver's own
 * source check (which host holds the source) does not apply. */
enum { MESH_FWD_HLEN = 40 };

/* Writes the wrapping header at hdr[0, MESH_FWD_HLEN) for the IP packet
 * ip[0, len) that follows it; false when ip is no IPv4/IPv6 packet or len
 * does not fit a payload length. */
bool mesh_fwd_wrap(uint8_t *hdr, const uint8_t *ip, size_t len);
/* The length of the forwarded packet inside ip[0, len) (which starts at
 * ip + MESH_FWD_HLEN), or 0 when ip is not a well-formed wrapping: all of
 * the header as mesh_fwd_wrap writes it, the inner packet's version
 * matching the next header. */
size_t mesh_fwd_unwrap(const uint8_t *ip, size_t len);

#endif
