/* Echo replies from the VM's router (RFC 792, RFC 4443 §4): a VM that pings
 * its gateway, 169.254.1.1 or the router's link-local address, gets an
 * answer from weft, as it would from any first-hop router. ndp_handle calls
 * these for IPv4 frames and for ICMPv6 Echo Requests. */
#ifndef WEFT_NDP_ECHO_H
#define WEFT_NDP_ECHO_H

#include <stddef.h>
#include <stdint.h>

#include "ndp/ndp.h"

/* frame[0, len) is an Ethernet frame of EtherType IPv4 (the caller checked
 * the Ethernet header is there). An ICMP Echo Request to the port's
 * gateway4: NDP_REPLY with the Echo Reply in reply[0..*reply_len), or a
 * drop verdict. Anything else, fragments included: NDP_NOT_NDP (routed). */
enum ndp_verdict ndp_echo_handle4(const struct ndp_port_config *cfg, struct ndp_stats *stats,
				  const uint8_t *frame, size_t len, uint8_t *reply,
				  size_t reply_cap, size_t *reply_len);

/* frame[0, len) is an Ethernet frame of an IPv6 packet whose ICMPv6 message
 * (an Echo Request, the caller checked its type byte is there) follows the
 * IPv6 header, without extension headers. To the router's link-local
 * address router_ll: NDP_REPLY or a drop verdict; to anything else:
 * NDP_NOT_NDP (routed). */
enum ndp_verdict ndp_echo_handle6(const struct ndp_port_config *cfg, struct ndp_stats *stats,
				  const uint8_t *router_ll, const uint8_t *frame, size_t len,
				  uint8_t *reply, size_t reply_cap, size_t *reply_len);

#endif
