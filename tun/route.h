/* Host routes weftd installs for attached ports: "ADDR/CIDR dev IFINDEX"
 * in the main table, marked with weftd's own rtm_protocol so that they can
 * be told apart from an operator's and removed, also after a crash. */
#ifndef WEFT_TUN_ROUTE_H
#define WEFT_TUN_ROUTE_H

#include <stdint.h>

/* rtm_protocol of weftd's routes ("ip route show proto 0x77"); unassigned
 * in /etc/iproute2/rt_protos. */
enum { TUN_ROUTE_PROTO = 0x77 };

/* Adds (or replaces) the link-scope route of family (AF_INET, AF_INET6)
 * addr/cidr through ifindex. 0 or -errno. */
int tun_route_add(int family, const uint8_t *addr, uint8_t cidr, int ifindex);
/* Removes it; a route already gone is not an error. 0 or -errno. */
int tun_route_del(int family, const uint8_t *addr, uint8_t cidr, int ifindex);
/* Removes every TUN_ROUTE_PROTO route through ifindex (ifindex 0: any; a
 * namespace may hold several weftds), such as those a previous weftd left
 * behind. 0 or -errno. */
int tun_route_flush(int ifindex);

#endif
