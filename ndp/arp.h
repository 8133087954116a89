/* The ARP responder of a VM port (RFC 826): weft answers, with the router's
 * MAC, every request for the IPv4 gateway or for any address that is not
 * the VM's own. ndp_handle calls it for frames of EtherType ARP. */
#ifndef WEFT_NDP_ARP_H
#define WEFT_NDP_ARP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ndp/ndp.h"

/* frame is a whole Ethernet frame of EtherType ARP (the caller has checked
 * the Ethernet header is there). Returns NDP_REPLY with the reply, padded
 * to the 60-byte Ethernet minimum, in reply[0..*reply_len); NDP_CONSUMED;
 * or a drop verdict. Counts its events in stats, not its verdict (that is
 * the caller's, ndp_handle). */
enum ndp_verdict ndp_arp_handle(const struct ndp_port_config *cfg, struct ndp_stats *stats,
				const uint8_t *frame, size_t len, uint8_t *reply,
				size_t reply_cap, size_t *reply_len);

/* The IPv4 part of ndp_port_config_check: the counts, and a gateway that
 * is an address ARP can answer for. */
bool ndp_arp_config_ok(const struct ndp_port_config *cfg);

#endif
