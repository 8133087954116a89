/* Mesh discovery messages (mesh/msg.h, docs/mesh.md): the parser the
 * data path runs on every mesh packet a tunnel opens, and the builder of
 * what the mesh thread sends. One validator of the host-order form serves
 * both, so the builder writes exactly what the parser takes. */
#include "mesh/msg.h"

#include <endian.h>
#include <string.h>
#include <sys/socket.h>

#include "mesh/bytes.h"
#include "ndp/wire.h"

/* Security model: the packet comes out of a WireGuard session, so its
 * sender is an authenticated peer, but not necessarily a mesh member, nor
 * honest, nor bug-free: every byte is untrusted and the packet may have any
 * length. The parser reads only inside ip[0, len): the fixed IPv6 header
 * only after len >= 40, the payload only after the payload length (which
 * the sender wrote) is checked against len, the entries only after count
 * times their size is checked against the payload. Every field is checked
 * to hold one of the values the builder writes (reserved bytes 0, host bits
 * 0, a holder only with its flag, the per-type rules), so a message has one
 * encoding and the mesh thread never sees a value it must second-guess.
 * The leases after the entries are read only after their number (the
 * flagged entries) times their size is checked against the payload, and
 * the whole packet against MESH_MAX_PACKET, so no message is larger than
 * what the builder can write; each is decoded by mesh_lease_decode, which
 * reads exactly its MESH_LEASE_SIZE bytes. The parser checks no signature
 * (a worker holds the device lock here). Whether the claims are true (is
 * the sender allowed to say it holds addr, does its lease say so?) is the
 * mesh thread's business, not the parser's. */

static const uint8_t mesh_ll[NDP_IP6_ADDR_LEN] = MESH_LL_ADDR;

_Static_assert(MESH_IP6_HLEN == sizeof(struct ndp_ip6_hdr), "the IPv6 fixed header");
_Static_assert(MESH_KEY_LEN == sizeof(((struct mesh_entry *)0)->holder), "holder size");
_Static_assert(MESH_MAX_PACKET - MESH_IP6_HLEN <= 0xffff,
	       "the largest message fits the IPv6 payload length");
_Static_assert(sizeof(struct mesh_hdr) + MESH_MAX_ENTRIES * sizeof(struct mesh_entry) <=
		       MESH_MAX_PACKET - MESH_IP6_HLEN,
	       "a full message without leases fits MESH_MAX_PACKET");

static const char *const type_names[] = {
	[MESH_SOLICIT] = "solicit",
	[MESH_ADVERT] = "advert",
	[MESH_ANNOUNCE] = "announce",
	[MESH_NOT_HERE] = "not_here",
	[MESH_MOVED] = "moved",
};

enum { FAMILY_WIRE_4 = 4, FAMILY_WIRE_6 = 6 };

const char *mesh_type_name(enum mesh_type type)
{
	if ((unsigned int)type >= sizeof(type_names) / sizeof(type_names[0]) || !type_names[type])
		return "unknown";
	return type_names[type];
}

static bool type_known(unsigned int type)
{
	return type >= MESH_SOLICIT && type <= MESH_MOVED;
}

/* Whether the bits of addr[0, len) past the first cidr are all zero. */
static bool host_bits_zero(const uint8_t *addr, size_t len, uint8_t cidr)
{
	unsigned int full = cidr / 8, rem = cidr % 8;

	if (rem && (addr[full] & (0xff >> rem)))
		return false;
	full += rem ? 1 : 0;
	return full >= len || mesh_all_zero(addr + full, len - full);
}

/* The rules of one entry in host order, shared by parse and build: the
 * family and its prefix length, host bits, and what each type must and
 * must not carry (mesh_msg.h, enum mesh_type). */
static bool item_valid(enum mesh_type type, const struct mesh_item *it)
{
	if (it->family != AF_INET && it->family != AF_INET6)
		return false;
	if (it->cidr > mesh_family_len(it->family) * 8)
		return false;
	if (!host_bits_zero(it->addr, mesh_family_len(it->family), it->cidr))
		return false;
	/* X25519 never yields the all-zero public key, so a flagged zero
	 * holder is a sender's bug, not a host. */
	if (it->has_holder && mesh_all_zero(it->holder, MESH_KEY_LEN))
		return false;
	/* A lease backs a claim that a host holds the address. */
	if (it->has_lease && type != MESH_ANNOUNCE && !it->has_holder)
		return false;
	switch (type) {
	case MESH_SOLICIT:
		return it->seq == 0 && !it->has_holder;
	case MESH_ANNOUNCE:
		return it->seq != 0 && !it->has_holder;
	case MESH_MOVED:
		return it->seq != 0 && it->has_holder;
	case MESH_ADVERT:
	case MESH_NOT_HERE:
		return true;
	}
	return false;
}

bool mesh_msg_is_mesh(const uint8_t *ip, size_t len)
{
	return len >= MESH_IP6_HLEN && ip[0] >> 4 == 6 &&
	       ip[offsetof(struct ndp_ip6_hdr, next_header)] == MESH_IP_PROTO;
}

/* Decodes one wire entry; false when a wire-only rule (family code, flag
 * bits, reserved bytes, bytes past an IPv4 address, a holder without its
 * flag) is broken. */
static bool entry_decode(const uint8_t *p, struct mesh_item *it)
{
	struct mesh_entry e;

	memcpy(&e, p, sizeof(e));
	memset(it, 0, sizeof(*it));
	if (e.family == FAMILY_WIRE_4)
		it->family = AF_INET;
	else if (e.family == FAMILY_WIRE_6)
		it->family = AF_INET6;
	else
		return false;
	if (e.flags & ~MESH_F_ALL)
		return false;
	if (!mesh_all_zero(e.reserved, sizeof(e.reserved)))
		return false;
	if (it->family == AF_INET && !mesh_all_zero(e.addr + 4, sizeof(e.addr) - 4))
		return false;
	it->has_holder = e.flags & MESH_F_HOLDER;
	it->has_lease = e.flags & MESH_F_LEASE;
	if (!it->has_holder && !mesh_all_zero(e.holder, sizeof(e.holder)))
		return false;
	it->cidr = e.cidr;
	it->seq = be64toh(e.seq);
	memcpy(it->addr, e.addr, sizeof(it->addr));
	if (it->has_holder)
		memcpy(it->holder, e.holder, sizeof(it->holder));
	return true;
}

int mesh_msg_parse(const uint8_t *ip, size_t len, struct mesh_msg *msg)
{
	struct ndp_ip6_hdr ip6;
	struct mesh_hdr hdr;
	size_t payload, need, leases = 0;
	const uint8_t *p;

	if (len < MESH_IP6_HLEN)
		return MESH_ERR_SHORT;
	memcpy(&ip6, ip, sizeof(ip6));
	if (!mesh_msg_is_mesh(ip, len) || ip6.hop_limit != 255 || !ndp_ip6_eq(ip6.src, mesh_ll) ||
	    !ndp_ip6_eq(ip6.dst, mesh_ll))
		return MESH_ERR_IP;
	payload = be16toh(ip6.payload_len);
	if (payload > len - MESH_IP6_HLEN || payload < sizeof(hdr))
		return MESH_ERR_SHORT;
	p = ip + MESH_IP6_HLEN;
	memcpy(&hdr, p, sizeof(hdr));
	if (hdr.magic[0] != 'w' || hdr.magic[1] != 'm' || hdr.version != MESH_VERSION)
		return MESH_ERR_MAGIC;
	if (!type_known(hdr.type))
		return MESH_ERR_TYPE;
	msg->type = hdr.type;
	msg->count = be16toh(hdr.count);
	if (msg->count == 0 || msg->count > MESH_MAX_ENTRIES || hdr.reserved != 0)
		return MESH_ERR_COUNT;
	need = mesh_msg_size(msg->count, 0) - MESH_IP6_HLEN;
	if (payload < need)
		return MESH_ERR_SHORT;
	p += sizeof(hdr);
	for (size_t i = 0; i < msg->count; i++, p += sizeof(struct mesh_entry)) {
		if (!entry_decode(p, &msg->items[i]) || !item_valid(msg->type, &msg->items[i]))
			return MESH_ERR_ENTRY;
		leases += msg->items[i].has_lease;
	}
	need = mesh_msg_size(msg->count, leases) - MESH_IP6_HLEN;
	if (payload < need)
		return MESH_ERR_SHORT;
	/* Bytes inside the payload that no entry or lease claims would be a
	 * second encoding of the same message (or a smuggled one): refused;
	 * so is a packet the builder would not write. */
	if (payload > need || MESH_IP6_HLEN + need > MESH_MAX_PACKET)
		return MESH_ERR_COUNT;
	for (size_t i = 0; i < msg->count; i++) {
		const char *why;

		if (!msg->items[i].has_lease)
			continue;
		if (mesh_lease_decode(p, &msg->items[i].lease, &why))
			return MESH_ERR_LEASE;
		p += MESH_LEASE_SIZE;
	}
	return MESH_OK;
}

static void entry_encode(const struct mesh_item *it, uint8_t *p)
{
	struct mesh_entry e;

	memset(&e, 0, sizeof(e));
	e.family = it->family == AF_INET ? FAMILY_WIRE_4 : FAMILY_WIRE_6;
	e.cidr = it->cidr;
	e.flags = (it->has_holder ? MESH_F_HOLDER : 0) | (it->has_lease ? MESH_F_LEASE : 0);
	e.seq = htobe64(it->seq);
	memcpy(e.addr, it->addr, mesh_family_len(it->family));
	if (it->has_holder)
		memcpy(e.holder, it->holder, sizeof(e.holder));
	memcpy(p, &e, sizeof(e));
}

size_t mesh_msg_build(const struct mesh_msg *msg, uint8_t *out, size_t cap)
{
	struct ndp_ip6_hdr ip6;
	struct mesh_hdr hdr;
	size_t size, leases = 0;
	uint8_t *p;

	if (!type_known(msg->type) || msg->count == 0 || msg->count > MESH_MAX_ENTRIES)
		return 0;
	for (size_t i = 0; i < msg->count; i++) {
		if (!item_valid(msg->type, &msg->items[i]))
			return 0;
		leases += msg->items[i].has_lease;
	}
	size = mesh_msg_size(msg->count, leases);
	if (size > cap || size > MESH_MAX_PACKET)
		return 0;

	memset(&ip6, 0, sizeof(ip6));
	ip6.ver_tc_flow = htobe32(6u << 28);
	ip6.payload_len = htobe16((uint16_t)(size - MESH_IP6_HLEN));
	ip6.next_header = MESH_IP_PROTO;
	ip6.hop_limit = 255;
	memcpy(ip6.src, mesh_ll, sizeof(ip6.src));
	memcpy(ip6.dst, mesh_ll, sizeof(ip6.dst));
	memcpy(out, &ip6, sizeof(ip6));

	memset(&hdr, 0, sizeof(hdr));
	hdr.magic[0] = 'w';
	hdr.magic[1] = 'm';
	hdr.version = MESH_VERSION;
	hdr.type = (uint8_t)msg->type;
	hdr.count = htobe16((uint16_t)msg->count);
	p = out + MESH_IP6_HLEN;
	memcpy(p, &hdr, sizeof(hdr));
	p += sizeof(hdr);
	for (size_t i = 0; i < msg->count; i++, p += sizeof(struct mesh_entry))
		entry_encode(&msg->items[i], p);
	for (size_t i = 0; i < msg->count; i++) {
		struct mesh_lease check;
		const char *why;

		if (!msg->items[i].has_lease)
			continue;
		/* What the parser would refuse is not written. */
		mesh_lease_encode(&msg->items[i].lease, p);
		if (mesh_lease_decode(p, &check, &why))
			return 0;
		p += MESH_LEASE_SIZE;
	}
	return size;
}

bool mesh_fwd_wrap(uint8_t *hdr, const uint8_t *ip, size_t len)
{
	struct ndp_ip6_hdr ip6;

	if (!len || (ip[0] >> 4 != 4 && ip[0] >> 4 != 6) || len > 0xffff)
		return false;
	memset(&ip6, 0, sizeof(ip6));
	ip6.ver_tc_flow = htobe32(6u << 28);
	ip6.payload_len = htobe16((uint16_t)len);
	ip6.next_header = ip[0] >> 4 == 4 ? 4 : 41;
	ip6.hop_limit = 255;
	memcpy(ip6.src, mesh_ll, sizeof(ip6.src));
	memcpy(ip6.dst, mesh_ll, sizeof(ip6.dst));
	memcpy(hdr, &ip6, sizeof(ip6));
	return true;
}

size_t mesh_fwd_unwrap(const uint8_t *ip, size_t len)
{
	struct ndp_ip6_hdr ip6;
	size_t inner;

	if (len <= MESH_FWD_HLEN || ip[0] >> 4 != 6)
		return 0;
	memcpy(&ip6, ip, sizeof(ip6));
	inner = be16toh(ip6.payload_len);
	if (ip6.hop_limit != 255 || !ndp_ip6_eq(ip6.src, mesh_ll) || !ndp_ip6_eq(ip6.dst, mesh_ll) ||
	    !inner || inner > len - MESH_FWD_HLEN)
		return 0;
	if ((ip6.next_header == 4 && ip[MESH_FWD_HLEN] >> 4 == 4) ||
	    (ip6.next_header == 41 && ip[MESH_FWD_HLEN] >> 4 == 6))
		return inner;
	return 0;
}
