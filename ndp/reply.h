/* What every reply of the responder starts with (ndp.c, arp.c, echo.c):
 * an Ethernet header from the router to the VM, and for IPv6 the IPv6
 * header and the ICMPv6 checksum. Internal to ndp/. */
#ifndef WEFT_NDP_REPLY_H
#define WEFT_NDP_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "ndp/ndp.h"

/* The Ethernet header at out: to the VM's MAC from the router's, type. */
void ndp_put_eth(const struct ndp_port_config *cfg, uint8_t *out, uint16_t type);
/* The Ethernet and IPv6 headers at out of an ICMPv6 message of icmp_len
 * bytes from src to dst with hop_limit; returns where the message goes. */
uint8_t *ndp_put_ip6(const struct ndp_port_config *cfg, uint8_t *out, const uint8_t *src,
		     const uint8_t *dst, size_t icmp_len, uint8_t hop_limit);
/* Fills in the checksum of the ICMPv6 message after the IPv6 header at ip. */
void ndp_put_icmp6_checksum(uint8_t *ip, size_t icmp_len);

#endif
