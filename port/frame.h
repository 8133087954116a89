/* Frames a VM sends on its port, before they are routed: which are
 * neighbour discovery (for ndp/), which are IP packets weft may route, and
 * which are dropped, and why. Pure: no I/O, no allocation; the only write is
 * the TTL / hop-limit decrement of a packet that will be routed. This is the
 * "inner classification and source check" entry point of the fuzzers. */
#ifndef WEFT_PORT_FRAME_H
#define WEFT_PORT_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "port/config.h"

enum {
	FRAME_ETH_HLEN = 14,
	FRAME_ETH_P_IP = 0x0800,
	FRAME_ETH_P_ARP = 0x0806,
	FRAME_ETH_P_IPV6 = 0x86dd,
};

enum frame_verdict {
	FRAME_ROUTE,     /* an IP packet from a registered source: route it */
	FRAME_NEIGHBOUR, /* ARP or ICMPv6: for the NDP/ARP responder first */
	FRAME_DROP,      /* see the drop reason */
};

/* An IP packet inside a frame. */
struct frame_ip {
	int family;          /* AF_INET or AF_INET6 */
	uint32_t len;        /* the IP packet's length (Ethernet padding cut) */
	const uint8_t *dst;  /* its destination address (4 or 16 bytes) */
};

/* The first look at frame[0, len) (Ethernet, no virtio-net header)
 * received from the VM of the port cfg: FRAME_NEIGHBOUR for ARP, ICMPv6 and
 * ICMP to the gateway (give it to ndp_handle first), FRAME_ROUTE for other
 * IPv4 and IPv6 (check it with frame_ip_check), FRAME_DROP with *why. */
enum frame_verdict frame_classify(const struct port_config *cfg, const uint8_t *frame, size_t len,
				  enum port_drop *why);

/* The IP packet of a frame weft is to route. FRAME_ROUTE: ip describes the
 * packet at frame + FRAME_ETH_HLEN, from a registered source, to a unicast
 * destination, whose TTL (hop limit) was decremented, with the IPv4 header
 * checksum updated. FRAME_DROP: *why says why. */
enum frame_verdict frame_ip_check(const struct port_config *cfg, uint8_t *frame, size_t len,
				  struct frame_ip *ip, enum port_drop *why);

/* Whether the port cfg registered addr (4 or 16 bytes of family) as one of
 * its addresses or inside one of its prefixes. */
bool frame_source_registered(const struct port_config *cfg, int family, const uint8_t *addr);

/* The address family of the IP packet ip[0, len) and, in *dst, where its
 * destination address is; 0 when it is too short for its version's header
 * or of another version. */
int frame_ip_destination(const uint8_t *ip, size_t len, const uint8_t **dst);

/* A packet weft forwards between two tunnels: its TTL (hop limit)
 * decremented, with the IPv4 checksum updated. false: it ran out (or ip is
 * no IP packet), drop it. Bounds a forwarding loop between hosts that
 * disagree for a moment about where an address is. */
bool frame_ip_forward(uint8_t *ip, size_t len);

/* Writes an Ethernet header: dst, src, and the EtherType of an IP packet
 * of version ip_version (4 or 6). */
void frame_eth_header(uint8_t *hdr, const uint8_t dst[6], const uint8_t src[6], int ip_version);

#endif
