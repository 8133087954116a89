/* Classifying a VM's frames: Ethernet checks, then the IP header, then the
 * anti-spoofing check of the source, then the TTL.
 *
 * Security model: the frame is the guest's, any length and any bytes. No
 * header field is read before the length says it is there; the IP header's
 * own lengths are checked against the frame, never trusted to match it; a
 * source address is accepted only when it lies in a prefix registered to the
 * port. Every refusal names its drop reason; a refused frame is not touched. */
#include "port/frame.h"

#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>

enum {
	IP4_HLEN = 20,
	IP6_HLEN = 40,
	IPPROTO_ICMP_ = 1,
	IPPROTO_ICMPV6_ = 58,
};

bool frame_source_registered(const struct port_config *cfg, int family, const uint8_t *addr)
{
	for (size_t i = 0; i < cfg->n_addrs; i++)
		if (ip_prefix_has_addr(&cfg->addrs[i], family, addr))
			return true;
	return false;
}

int frame_ip_destination(const uint8_t *ip, size_t len, const uint8_t **dst)
{
	if (len >= IP4_HLEN && ip[0] >> 4 == 4) {
		*dst = ip + 16;
		return AF_INET;
	}
	if (len >= IP6_HLEN && ip[0] >> 4 == 6) {
		*dst = ip + 24;
		return AF_INET6;
	}
	return 0;
}

void frame_eth_header(uint8_t *hdr, const uint8_t dst[6], const uint8_t src[6], int ip_version)
{
	uint16_t type = ip_version == 6 ? FRAME_ETH_P_IPV6 : FRAME_ETH_P_IP;

	memcpy(hdr, dst, 6);
	memcpy(hdr + 6, src, 6);
	hdr[12] = (uint8_t)(type >> 8);
	hdr[13] = (uint8_t)type;
}

static bool ip4_unicast(const uint8_t *a)
{
	/* 0/8, multicast, class E and broadcast are not destinations. */
	return a[0] != 0 && a[0] < 224;
}

/* RFC 1624 eqn. 3 for the one 16-bit word holding TTL and protocol. */
static void ip4_ttl_decrement(uint8_t *ip)
{
	uint16_t old_word = (uint16_t)(ip[8] << 8 | ip[9]);
	uint16_t new_word = (uint16_t)(old_word - 0x100);
	uint32_t sum = (uint16_t)~(ip[10] << 8 | ip[11]);

	sum += (uint16_t)~old_word;
	sum += new_word;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (uint16_t)~sum;
	ip[8]--;
	ip[10] = (uint8_t)(sum >> 8);
	ip[11] = (uint8_t)sum;
}

static enum frame_verdict drop(enum port_drop *why, enum port_drop reason)
{
	*why = reason;
	return FRAME_DROP;
}

static enum frame_verdict classify_ip4(const struct port_config *cfg, uint8_t *ip, size_t len,
				       struct frame_ip *out, enum port_drop *why)
{
	size_t hlen, total;

	if (len < IP4_HLEN || ip[0] >> 4 != 4)
		return drop(why, PORT_DROP_malformed);
	hlen = (size_t)(ip[0] & 0xf) * 4;
	total = (size_t)ip[2] << 8 | ip[3];
	if (hlen < IP4_HLEN || total < hlen || total > len)
		return drop(why, PORT_DROP_malformed);
	if (!ip4_unicast(ip + 16))
		return drop(why, PORT_DROP_unsupported);
	if (!frame_source_registered(cfg, AF_INET, ip + 12))
		return drop(why, PORT_DROP_spoofed_source);
	if (ip[8] <= 1)
		return drop(why, PORT_DROP_ttl);
	ip4_ttl_decrement(ip);
	*out = (struct frame_ip){ .family = AF_INET, .len = (uint32_t)total, .dst = ip + 16 };
	return FRAME_ROUTE;
}

static enum frame_verdict classify_ip6(const struct port_config *cfg, uint8_t *ip, size_t len,
				       struct frame_ip *out, enum port_drop *why)
{
	size_t total;

	if (len < IP6_HLEN || ip[0] >> 4 != 6)
		return drop(why, PORT_DROP_malformed);
	total = IP6_HLEN + ((size_t)ip[4] << 8 | ip[5]);
	if (total > len)
		return drop(why, PORT_DROP_malformed);
	if (ip[24] == 0xff)
		return drop(why, PORT_DROP_unsupported);
	if (ip[8] == 0xfe && (ip[9] & 0xc0) == 0x80)
		return drop(why, PORT_DROP_unsupported); /* link-local: not routed */
	if (!frame_source_registered(cfg, AF_INET6, ip + 8))
		return drop(why, PORT_DROP_spoofed_source);
	if (ip[7] <= 1)
		return drop(why, PORT_DROP_ttl);
	ip[7]--;
	*out = (struct frame_ip){ .family = AF_INET6, .len = (uint32_t)total, .dst = ip + 24 };
	return FRAME_ROUTE;
}

enum frame_verdict frame_classify(const struct port_config *cfg, const uint8_t *frame, size_t len,
				  enum port_drop *why)
{
	uint16_t type;

	if (len < FRAME_ETH_HLEN)
		return drop(why, PORT_DROP_malformed);
	if (memcmp(frame + 6, cfg->vm_mac, 6))
		return drop(why, PORT_DROP_foreign_mac);
	type = (uint16_t)(frame[12] << 8 | frame[13]);
	switch (type) {
	case FRAME_ETH_P_ARP:
		return FRAME_NEIGHBOUR;
	case FRAME_ETH_P_IP:
		/* ICMP to the gateway (an echo request) is the responder's
		 * too; what it leaves is routed. */
		if (cfg->has_gateway4 && len >= FRAME_ETH_HLEN + IP4_HLEN &&
		    frame[FRAME_ETH_HLEN + 9] == IPPROTO_ICMP_ &&
		    !memcmp(frame + FRAME_ETH_HLEN + 16, cfg->gateway4, 4))
			return FRAME_NEIGHBOUR;
		return FRAME_ROUTE;
	case FRAME_ETH_P_IPV6:
		/* Neighbour discovery and the rest of ICMPv6 meet the responder
		 * first; what it leaves (an echo request) is routed after all. */
		if (len >= FRAME_ETH_HLEN + IP6_HLEN && frame[FRAME_ETH_HLEN + 6] == IPPROTO_ICMPV6_)
			return FRAME_NEIGHBOUR;
		return FRAME_ROUTE;
	default:
		return drop(why, PORT_DROP_unsupported);
	}
}

enum frame_verdict frame_ip_check(const struct port_config *cfg, uint8_t *frame, size_t len,
				  struct frame_ip *ip, enum port_drop *why)
{
	if (len < FRAME_ETH_HLEN)
		return drop(why, PORT_DROP_malformed);
	switch (frame[12] << 8 | frame[13]) {
	case FRAME_ETH_P_IP:
		return classify_ip4(cfg, frame + FRAME_ETH_HLEN, len - FRAME_ETH_HLEN, ip, why);
	case FRAME_ETH_P_IPV6:
		return classify_ip6(cfg, frame + FRAME_ETH_HLEN, len - FRAME_ETH_HLEN, ip, why);
	default:
		return drop(why, PORT_DROP_unsupported);
	}
}

bool frame_ip_forward(uint8_t *ip, size_t len)
{
	if (len >= IP4_HLEN && ip[0] >> 4 == 4) {
		if (ip[8] <= 1)
			return false;
		ip4_ttl_decrement(ip);
		return true;
	}
	if (len >= IP6_HLEN && ip[0] >> 4 == 6) {
		if (ip[7] <= 1)
			return false;
		ip[7]--;
		return true;
	}
	return false;
}
