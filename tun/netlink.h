/* Link setup over rtnetlink (libnl-route-3): MTU, up/down, index lookup,
 * and a watch that tells when a link is deleted. */
#ifndef WEFT_TUN_NETLINK_H
#define WEFT_TUN_NETLINK_H

#include <stdbool.h>

/* 0 or -errno. */
int tun_link_set_mtu(const char *ifname, unsigned int mtu);
int tun_link_set_up(const char *ifname, bool up);
/* The length of the qdisc queue in front of the device, in packets. */
int tun_link_set_txqlen(const char *ifname, unsigned int txqlen);
/* The ifindex, or -errno. */
int tun_link_index(const char *ifname);
int tun_link_get_mtu(const char *ifname); /* MTU or -errno */

/* A netlink socket subscribed to link changes. tun_link_watch_fd gives an fd
 * to poll; tun_link_watch_gone returns true once ifindex has been deleted
 * (call it when the fd is readable). */
struct tun_link_watch;
struct tun_link_watch *tun_link_watch_new(int ifindex);
int tun_link_watch_fd(const struct tun_link_watch *w);
bool tun_link_watch_gone(struct tun_link_watch *w);
void tun_link_watch_free(struct tun_link_watch *w);

#endif
