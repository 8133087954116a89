/* Link setup over rtnetlink with libnl-route-3, and a watch that notices when
 * the tunnel link is deleted (by an admin, or by its netns going away).
 * Everything here is control plane: one short-lived socket per request. */
#include "tun/netlink.h"

#include <errno.h>
#include <limits.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <netlink/route/link.h>

/* libnl folds errno values into its own NLE_* codes (nl_syserr2nlerr) and
 * offers no way back; this table undoes that folding as closely as the codes
 * allow. Codes that have no errno origin become EIO. */
static const struct {
	int nle;
	int err;
} nle_errno[] = {
	{ NLE_INTR, EINTR },
	{ NLE_BAD_SOCK, EBADF },
	{ NLE_AGAIN, EAGAIN },
	{ NLE_NOMEM, ENOMEM },
	{ NLE_EXIST, EEXIST },
	{ NLE_INVAL, EINVAL },
	{ NLE_RANGE, ERANGE },
	{ NLE_MSGSIZE, EMSGSIZE },
	{ NLE_OPNOTSUPP, EOPNOTSUPP },
	{ NLE_AF_NOSUPPORT, EAFNOSUPPORT },
	{ NLE_OBJ_NOTFOUND, ENODEV }, /* a link lookup that found nothing */
	{ NLE_NOADDR, EADDRNOTAVAIL },
	{ NLE_BUSY, EBUSY },
	{ NLE_PROTO_MISMATCH, EPROTONOSUPPORT },
	{ NLE_NOACCESS, EACCES },
	{ NLE_PERM, EPERM },
	{ NLE_NODEV, ENODEV },
	{ NLE_MSG_TRUNC, EMSGSIZE },
	{ NLE_MSG_OVERFLOW, ENOBUFS },
};

/* Maps a libnl return code (negative NLE_*) to a negative errno. */
static int errno_of(int nlerr)
{
	size_t i;

	if (nlerr >= 0)
		return 0;
	for (i = 0; i < sizeof(nle_errno) / sizeof(nle_errno[0]); i++)
		if (nle_errno[i].nle == -nlerr)
			return -nle_errno[i].err;
	return -EIO;
}

static int check_name(const char *ifname)
{
	if (!ifname || !*ifname)
		return -EINVAL;
	if (strlen(ifname) >= IFNAMSIZ)
		return -ENAMETOOLONG;
	return 0;
}

/* Connects a fresh rtnetlink socket and fetches the link named ifname (or
 * with index ifindex when ifname is NULL). On success the caller owns both. */
static int fetch_link(const char *ifname, int ifindex, struct nl_sock **sk_out,
		      struct rtnl_link **link_out)
{
	struct nl_sock *sk;
	int err;

	if (ifname) {
		err = check_name(ifname);
		if (err < 0)
			return err;
	}
	sk = nl_socket_alloc();
	if (!sk)
		return -ENOMEM;
	err = nl_connect(sk, NETLINK_ROUTE);
	if (err < 0)
		goto out;
	err = rtnl_link_get_kernel(sk, ifname ? 0 : ifindex, ifname, link_out);
	if (err < 0)
		goto out;
	*sk_out = sk;
	return 0;
out:
	nl_socket_free(sk);
	return errno_of(err);
}

/* Sends the difference between the link's current state and change. */
static int change_link(const char *ifname, struct rtnl_link *change)
{
	struct nl_sock *sk = NULL;
	struct rtnl_link *link = NULL;
	int err;

	err = fetch_link(ifname, 0, &sk, &link);
	if (err < 0)
		return err;
	err = errno_of(rtnl_link_change(sk, link, change, 0));
	rtnl_link_put(link);
	nl_socket_free(sk);
	return err;
}

/* Applies one attribute change, built by set, to ifname. */
static int change_one(const char *ifname, void (*set)(struct rtnl_link *, unsigned int),
		      unsigned int value)
{
	struct rtnl_link *change = rtnl_link_alloc();
	int err;

	if (!change)
		return -ENOMEM;
	set(change, value);
	err = change_link(ifname, change);
	rtnl_link_put(change);
	return err;
}

int tun_link_set_mtu(const char *ifname, unsigned int mtu)
{
	return change_one(ifname, rtnl_link_set_mtu, mtu);
}

int tun_link_set_txqlen(const char *ifname, unsigned int txqlen)
{
	return change_one(ifname, rtnl_link_set_txqlen, txqlen);
}

static void set_flags(struct rtnl_link *link, unsigned int up)
{
	if (up)
		rtnl_link_set_flags(link, IFF_UP);
	else
		rtnl_link_unset_flags(link, IFF_UP);
}

int tun_link_set_up(const char *ifname, bool up)
{
	return change_one(ifname, set_flags, up);
}

int tun_link_index(const char *ifname)
{
	struct nl_sock *sk = NULL;
	struct rtnl_link *link = NULL;
	int err;

	err = fetch_link(ifname, 0, &sk, &link);
	if (err < 0)
		return err;
	err = rtnl_link_get_ifindex(link);
	rtnl_link_put(link);
	nl_socket_free(sk);
	return err > 0 ? err : -ENODEV;
}

int tun_link_get_mtu(const char *ifname)
{
	struct nl_sock *sk = NULL;
	struct rtnl_link *link = NULL;
	unsigned int mtu;
	int err;

	err = fetch_link(ifname, 0, &sk, &link);
	if (err < 0)
		return err;
	mtu = rtnl_link_get_mtu(link);
	rtnl_link_put(link);
	nl_socket_free(sk);
	/* Kernel MTUs fit in an int (IP_MAX_MTU is 0xFFFF; the attribute is
	 * u32 but nothing larger than INT_MAX can be set). */
	return mtu > (unsigned int)INT_MAX ? -ERANGE : (int)mtu;
}

/* Owned by one thread: the caller polls fd and calls tun_link_watch_gone. */
struct tun_link_watch {
	struct nl_sock *sk; /* non-blocking, member of RTNLGRP_LINK */
	int ifindex;
	bool gone; /* sticky once the link was seen deleted */
};

/* Notifications arrive with sequence number 0, so libnl's sequence check is
 * off and every message lands here. Only a generic (AF_UNSPEC) RTM_DELLINK
 * means the device left this namespace: the bridge code also sends
 * RTM_DELLINK with AF_BRIDGE when a port merely leaves its bridge. */
static int on_link_msg(struct nl_msg *msg, void *arg)
{
	struct tun_link_watch *w = arg;
	struct nlmsghdr *hdr = nlmsg_hdr(msg);
	const struct ifinfomsg *ifi;

	if (hdr->nlmsg_type != RTM_DELLINK)
		return NL_OK;
	if (!nlmsg_valid_hdr(hdr, sizeof(*ifi)))
		return NL_OK;
	ifi = nlmsg_data(hdr);
	if (ifi->ifi_family == AF_UNSPEC && ifi->ifi_index == w->ifindex)
		w->gone = true;
	return NL_OK;
}

/* NULL on failure, with errno set. */
struct tun_link_watch *tun_link_watch_new(int ifindex)
{
	struct tun_link_watch *w;
	int err;

	if (ifindex <= 0) {
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->ifindex = ifindex;
	w->sk = nl_socket_alloc();
	if (!w->sk) {
		err = -ENOMEM;
		goto fail;
	}
	nl_socket_disable_seq_check(w->sk);
	/* Peek first so that a link message larger than libnl's buffer is
	 * read whole instead of truncated and lost. */
	nl_socket_enable_msg_peek(w->sk);
	err = nl_socket_modify_cb(w->sk, NL_CB_VALID, NL_CB_CUSTOM, on_link_msg, w);
	if (err < 0)
		goto fail_nl;
	err = nl_connect(w->sk, NETLINK_ROUTE);
	if (err < 0)
		goto fail_nl;
	err = nl_socket_add_membership(w->sk, RTNLGRP_LINK);
	if (err < 0)
		goto fail_nl;
	err = nl_socket_set_nonblocking(w->sk);
	if (err < 0)
		goto fail_nl;
	return w;

fail_nl:
	err = errno_of(err);
fail:
	tun_link_watch_free(w);
	errno = -err;
	return NULL;
}

int tun_link_watch_fd(const struct tun_link_watch *w)
{
	return nl_socket_get_fd(w->sk);
}

/* Drains every queued notification, then asks the kernel directly. The query
 * covers a deletion that happened before the watch was subscribed and any
 * notification lost to a receive-buffer overrun (ENOBUFS). Call it once right
 * after tun_link_watch_new too: such an early deletion never makes the fd
 * readable. */
bool tun_link_watch_gone(struct tun_link_watch *w)
{
	struct nl_sock *sk = NULL;
	struct rtnl_link *link = NULL;
	struct nl_cb *cb;
	int err;

	if (w->gone)
		return true;
	/* One datagram per call; 0 or -NLE_AGAIN means the queue is empty.
	 * Any other error (an overrun) ends this drain early: the fd stays
	 * readable and the query below still gives the right answer. */
	cb = nl_socket_get_cb(w->sk);
	while (nl_recvmsgs_report(w->sk, cb) > 0)
		;
	nl_cb_put(cb);
	if (w->gone)
		return true;

	err = fetch_link(NULL, w->ifindex, &sk, &link);
	if (err == -ENODEV) {
		w->gone = true;
	} else if (err == 0) {
		rtnl_link_put(link);
		nl_socket_free(sk);
	}
	/* Other errors (no memory, no socket) say nothing about the link;
	 * report it present and let the next event ask again. */
	return w->gone;
}

void tun_link_watch_free(struct tun_link_watch *w)
{
	if (!w)
		return;
	nl_socket_free(w->sk);
	free(w);
}
