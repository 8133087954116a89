/* Link setup over rtnetlink with libnl-route-3, and a watch that follows the
 * tunnel link into whatever namespace it is moved to (WireGuard's container
 * pattern) and notices when it is deleted there or its namespace goes away.
 * Everything here is control plane: one short-lived socket per request. */
#include "tun/netlink.h"

#include <errno.h>
#include <limits.h>
#include <linux/if_tun.h>
#include <linux/net_namespace.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* What tun_link_read gathers from one RTM_NEWLINK reply. */
struct link_reply {
	struct tun_link_state *st;
	bool seen;
};

static int on_link_reply(struct nl_msg *msg, void *arg)
{
	struct link_reply *r = arg;
	struct nlmsghdr *hdr = nlmsg_hdr(msg);
	struct nlattr *tb[IFLA_MAX + 1];
	const struct ifinfomsg *ifi;

	if (hdr->nlmsg_type != RTM_NEWLINK ||
	    nlmsg_parse(hdr, sizeof(*ifi), tb, IFLA_MAX, NULL) < 0)
		return NL_SKIP;
	ifi = nlmsg_data(hdr);
	r->st->ifindex = ifi->ifi_index;
	r->st->up = (ifi->ifi_flags & IFF_UP) != 0;
	if (tb[IFLA_MTU])
		r->st->mtu = nla_get_u32(tb[IFLA_MTU]);
	if (tb[IFLA_TXQLEN])
		r->st->txqlen = nla_get_u32(tb[IFLA_TXQLEN]);
	r->seen = true;
	return NL_OK;
}

static int on_nsid_reply(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *hdr = nlmsg_hdr(msg);
	struct nlattr *tb[NETNSA_MAX + 1];

	if (hdr->nlmsg_type == RTM_NEWNSID &&
	    nlmsg_parse(hdr, sizeof(struct rtgenmsg), tb, NETNSA_MAX, NULL) >= 0 && tb[NETNSA_NSID])
		*(int *)arg = (int)nla_get_s32(tb[NETNSA_NSID]);
	return NL_OK;
}

/* Sends req on a fresh socket; replies go to parse (may be NULL), then the
 * kernel's acknowledgement is awaited. 0 or -errno. */
static int request(struct nl_msg *req, nl_recvmsg_msg_cb_t parse, void *arg)
{
	struct nl_sock *sk = nl_socket_alloc();
	int err;

	if (!sk)
		return -ENOMEM;
	err = nl_connect(sk, NETLINK_ROUTE);
	if (err >= 0 && parse)
		err = nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, parse, arg);
	if (err >= 0)
		err = nl_send_auto(sk, req);
	if (err >= 0 && parse)
		err = nl_recvmsgs_default(sk);
	if (err >= 0)
		err = nl_wait_for_ack(sk);
	nl_socket_free(sk);
	return errno_of(err);
}

/* RTM_GETNSID (type RTM_GETNSID) or RTM_NEWNSID for the namespace of nsfd. */
static int nsid_request(int type, int nsfd, int *nsid)
{
	struct rtgenmsg g = { .rtgen_family = AF_UNSPEC };
	struct nl_msg *req = nlmsg_alloc_simple(type, 0);
	int err = -ENOMEM;

	if (!req)
		return err;
	if (nlmsg_append(req, &g, sizeof(g), NLMSG_ALIGNTO) < 0 ||
	    nla_put_u32(req, NETNSA_FD, (uint32_t)nsfd) < 0 ||
	    (type == RTM_NEWNSID && nla_put_s32(req, NETNSA_NSID, NETNSA_NSID_NOT_ASSIGNED) < 0))
		goto out;
	err = request(req, type == RTM_GETNSID ? on_nsid_reply : NULL, nsid);
out:
	nlmsg_free(req);
	return err;
}

/* The id of nsfd's namespace in ours, -1 when it is ours; assigns one when it
 * has none, since both the queries and the notifications of another
 * namespace name it by that id. 0 or -errno. */
static int nsid_of(int nsfd, int *nsid)
{
	struct stat ns, self;
	int err;

	*nsid = NETNSA_NSID_NOT_ASSIGNED;
	if (fstat(nsfd, &ns) || stat("/proc/self/ns/net", &self))
		return -errno;
	if (ns.st_dev == self.st_dev && ns.st_ino == self.st_ino)
		return 0;
	err = nsid_request(RTM_GETNSID, nsfd, nsid);
	if (!err && *nsid < 0) {
		err = nsid_request(RTM_NEWNSID, nsfd, nsid);
		if (!err || err == -EEXIST) /* EEXIST: someone assigned one meanwhile */
			err = nsid_request(RTM_GETNSID, nsfd, nsid);
		if (!err && *nsid < 0)
			err = -ENOENT;
	}
	return err;
}

int tun_link_read(int fd, struct tun_link_state *st)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
	struct link_reply r = { .st = st };
	struct nl_msg *req = NULL;
	struct ifreq ifr;
	int nsfd, err;

	memset(st, 0, sizeof(*st));
	memset(&ifr, 0, sizeof(ifr));
	/* EBADFD: the netdev was unregistered and the fd detached from it. */
	if (ioctl(fd, TUNGETIFF, &ifr) < 0)
		return errno == EBADFD ? -ENODEV : -errno;
	memcpy(st->name, ifr.ifr_name, IFNAMSIZ);
	st->name[IFNAMSIZ - 1] = '\0';
	st->nsid = NETNSA_NSID_NOT_ASSIGNED;
	/* Kernels before 5.2 lack TUNGETDEVNETNS: the link is taken to be here. */
	nsfd = ioctl(fd, TUNGETDEVNETNS);
	if (nsfd >= 0) {
		err = nsid_of(nsfd, &st->nsid);
		close(nsfd);
		if (err)
			return err;
	} else if (errno == EBADFD) {
		return -ENODEV;
	}

	err = -ENOMEM;
	req = nlmsg_alloc_simple(RTM_GETLINK, 0);
	if (!req)
		return err;
	if (nlmsg_append(req, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
	    nla_put_string(req, IFLA_IFNAME, st->name) < 0 ||
	    (st->nsid >= 0 && nla_put_s32(req, IFLA_TARGET_NETNSID, st->nsid) < 0))
		goto out;
	err = request(req, on_link_reply, &r);
	if (!err && !r.seen)
		err = -ENODEV;
	/* The link may have gone between the ioctl and the query, or been
	 * renamed there: the fd has the last word. */
	if (err == -ENODEV && ioctl(fd, TUNGETIFF, &ifr) == 0)
		err = -EAGAIN;
out:
	nlmsg_free(req);
	return err;
}

/* Owned by one thread: the caller polls fd and calls tun_link_watch_update. */
struct tun_link_watch {
	struct nl_sock *sk; /* non-blocking, RTNLGRP_LINK of all namespaces with an id */
	int fd;             /* the TUN fd, not owned */
	int ifindex;        /* the link's index where it was last read */
	bool concerned;     /* a notification named ifindex since the last read */
};

/* Notifications arrive with sequence number 0, so libnl's sequence check is
 * off and every message lands here. A message of any namespace that names
 * the link's last index counts: indexes are per namespace, so another
 * namespace's link of that index costs one needless read, nothing more. A
 * move shows up as an RTM_DELLINK of the old namespace (with
 * IFLA_NEW_NETNSID), which is why a deletion is never concluded from here. */
static int on_link_msg(struct nl_msg *msg, void *arg)
{
	struct tun_link_watch *w = arg;
	struct nlmsghdr *hdr = nlmsg_hdr(msg);
	const struct ifinfomsg *ifi;

	if (hdr->nlmsg_type != RTM_NEWLINK && hdr->nlmsg_type != RTM_DELLINK)
		return NL_OK;
	if (!nlmsg_valid_hdr(hdr, sizeof(*ifi)))
		return NL_OK;
	ifi = nlmsg_data(hdr);
	if (ifi->ifi_family == AF_UNSPEC && ifi->ifi_index == w->ifindex)
		w->concerned = true;
	return NL_OK;
}

struct tun_link_watch *tun_link_watch_new(int fd)
{
	struct tun_link_state st;
	struct tun_link_watch *w;
	int one = 1, err;

	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->fd = fd;
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
	if (setsockopt(nl_socket_get_fd(w->sk), SOL_NETLINK, NETLINK_LISTEN_ALL_NSID, &one,
		       sizeof(one))) {
		err = -errno;
		goto fail;
	}
	err = nl_socket_add_membership(w->sk, RTNLGRP_LINK);
	if (err < 0)
		goto fail_nl;
	err = nl_socket_set_nonblocking(w->sk);
	if (err < 0)
		goto fail_nl;
	/* Subscribed first, read second: a change in between is read too. */
	err = tun_link_read(fd, &st);
	if (err)
		goto fail;
	w->ifindex = st.ifindex;
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

int tun_link_watch_update(struct tun_link_watch *w, struct tun_link_state *st)
{
	struct nl_cb *cb;
	int err;

	/* One datagram per call; 0 or -NLE_AGAIN means the queue is empty.
	 * Any other error (an overrun, ENOBUFS) may have lost a notification
	 * about the link: read it to be sure. */
	cb = nl_socket_get_cb(w->sk);
	while ((err = nl_recvmsgs_report(w->sk, cb)) > 0)
		;
	nl_cb_put(cb);
	if (err < 0 && err != -NLE_AGAIN)
		w->concerned = true;
	if (!w->concerned)
		return 0;
	err = tun_link_read(w->fd, st);
	if (err)
		return err;
	w->concerned = false;
	w->ifindex = st->ifindex;
	return 1;
}

bool tun_link_watch_gone(const struct tun_link_watch *w)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	return ioctl(w->fd, TUNGETIFF, &ifr) < 0 && errno == EBADFD;
}

void tun_link_watch_free(struct tun_link_watch *w)
{
	if (!w)
		return;
	nl_socket_free(w->sk);
	free(w);
}
