/* Link setup over rtnetlink (libnl-route-3): MTU, up/down, index lookup,
 * and a watch that follows a TUN link wherever it lives. */
#ifndef WEFT_TUN_NETLINK_H
#define WEFT_TUN_NETLINK_H

#include <net/if.h>
#include <stdbool.h>

/* 0 or -errno. */
int tun_link_set_mtu(const char *ifname, unsigned int mtu);
int tun_link_set_up(const char *ifname, bool up);
/* The length of the qdisc queue in front of the device, in packets. */
int tun_link_set_txqlen(const char *ifname, unsigned int txqlen);
/* The ifindex, or -errno. */
int tun_link_index(const char *ifname);
int tun_link_get_mtu(const char *ifname); /* MTU or -errno */

/* The link a TUN or tap fd serves, read where it lives now. WireGuard's
 * namespace pattern creates the interface in one namespace (its birthplace,
 * where weftd and its UDP and UAPI sockets stay) and moves it into a
 * container's: name, index, MTU and flags must then be read in the new
 * namespace, never by name in the birthplace. */
struct tun_link_state {
	char name[IFNAMSIZ];
	int ifindex;
	int nsid;            /* the namespace's id in the birthplace; -1: the birthplace */
	unsigned int mtu;
	unsigned int txqlen;
	bool up;
};

/* Reads the link of fd (TUNGETIFF, TUNGETDEVNETNS, then RTM_GETLINK with
 * IFLA_TARGET_NETNSID). 0, -ENODEV once the link is gone (deleted in any
 * namespace, or its namespace destroyed), or another -errno. */
int tun_link_read(int fd, struct tun_link_state *st);

/* Follows the link of fd (not owned; it must stay open) through moves
 * between namespaces. A netlink socket of the birthplace subscribed to
 * RTNLGRP_LINK of every namespace that has an id there
 * (NETLINK_LISTEN_ALL_NSID): create the watch before capabilities are
 * dropped, since the kernel checks CAP_NET_BROADCAST against the socket's
 * opener. Owned by one thread, which polls tun_link_watch_fd. */
struct tun_link_watch;
/* NULL with errno set (ENODEV: the link is gone already). */
struct tun_link_watch *tun_link_watch_new(int fd);
int tun_link_watch_fd(const struct tun_link_watch *w);
/* Drains the notifications; when one concerned the link (a change, a move,
 * a deletion) re-reads it into st. 1: st refreshed, 0: nothing about the
 * link, -ENODEV: the link is gone, other -errno. */
int tun_link_watch_update(struct tun_link_watch *w, struct tun_link_state *st);
/* True once the device behind fd is gone: TUNGETIFF fails with EBADFD.
 * A move leaves the device attached; only a deletion detaches it. */
bool tun_link_watch_gone(const struct tun_link_watch *w);
void tun_link_watch_free(struct tun_link_watch *w);

#endif
