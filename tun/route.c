/* Host routes over rtnetlink (libnl-route-3), one short-lived socket per
 * request: attached ports are added and removed by the control thread only. */
#include "tun/route.h"

#include <errno.h>
#include <stdbool.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <netlink/addr.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <netlink/route/route.h>

/* libnl's codes back to errno, for the few a route request gives. */
static int errno_of(int nlerr)
{
	switch (nlerr >= 0 ? 0 : -nlerr) {
	case 0:
		return 0;
	case NLE_EXIST:
		return -EEXIST;
	case NLE_OBJ_NOTFOUND:
		return -ESRCH;
	case NLE_NODEV:
		return -ENODEV;
	case NLE_PERM:
	case NLE_NOACCESS:
		return -EPERM;
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_INVAL:
		return -EINVAL;
	default:
		return -EIO;
	}
}

static struct rtnl_route *route_new(int family, const uint8_t *addr, uint8_t cidr, int ifindex)
{
	struct rtnl_route *r = rtnl_route_alloc();
	struct rtnl_nexthop *nh = rtnl_route_nh_alloc();
	struct nl_addr *dst = nl_addr_build(family, addr, family == AF_INET ? 4 : 16);

	if (!r || !nh || !dst)
		goto fail;
	nl_addr_set_prefixlen(dst, cidr);
	rtnl_route_set_family(r, (uint8_t)family);
	rtnl_route_set_table(r, RT_TABLE_MAIN);
	rtnl_route_set_protocol(r, TUN_ROUTE_PROTO);
	rtnl_route_set_scope(r, RT_SCOPE_LINK);
	rtnl_route_set_type(r, RTN_UNICAST);
	if (rtnl_route_set_dst(r, dst) < 0)
		goto fail;
	nl_addr_put(dst);
	rtnl_route_nh_set_ifindex(nh, ifindex);
	rtnl_route_add_nexthop(r, nh);
	return r;
fail:
	if (dst)
		nl_addr_put(dst);
	if (nh)
		rtnl_route_nh_free(nh);
	if (r)
		rtnl_route_put(r);
	return NULL;
}

/* One request on a fresh socket: add (replace) or delete r. */
static int request(struct rtnl_route *r, bool add)
{
	struct nl_sock *sk = nl_socket_alloc();
	int err = -NLE_NOMEM;

	if (sk) {
		err = nl_connect(sk, NETLINK_ROUTE);
		if (err >= 0)
			err = add ? rtnl_route_add(sk, r, NLM_F_CREATE | NLM_F_REPLACE)
				  : rtnl_route_delete(sk, r, 0);
		nl_socket_free(sk);
	}
	return errno_of(err);
}

int tun_route_add(int family, const uint8_t *addr, uint8_t cidr, int ifindex)
{
	struct rtnl_route *r = route_new(family, addr, cidr, ifindex);
	int err;

	if (!r)
		return -ENOMEM;
	err = request(r, true);
	rtnl_route_put(r);
	return err;
}

int tun_route_del(int family, const uint8_t *addr, uint8_t cidr, int ifindex)
{
	struct rtnl_route *r = route_new(family, addr, cidr, ifindex);
	int err;

	if (!r)
		return -ENOMEM;
	err = request(r, false);
	rtnl_route_put(r);
	return err == -ESRCH || err == -ENODEV ? 0 : err;
}

struct flush_ctx {
	struct nl_sock *sk;
	int ifindex;
	int err;
};

static void flush_one(struct nl_object *obj, void *arg)
{
	struct rtnl_route *r = (struct rtnl_route *)obj;
	struct flush_ctx *ctx = arg;
	struct rtnl_nexthop *nh;
	int err;

	if (rtnl_route_get_protocol(r) != TUN_ROUTE_PROTO || rtnl_route_get_nnexthops(r) != 1)
		return;
	nh = rtnl_route_nexthop_n(r, 0);
	if (ctx->ifindex && rtnl_route_nh_get_ifindex(nh) != ctx->ifindex)
		return;
	err = errno_of(rtnl_route_delete(ctx->sk, r, 0));
	if (err && err != -ESRCH && !ctx->err)
		ctx->err = err;
}

int tun_route_flush(int ifindex)
{
	struct flush_ctx ctx = { .ifindex = ifindex };
	struct nl_cache *cache = NULL;
	int err;

	ctx.sk = nl_socket_alloc();
	if (!ctx.sk)
		return -ENOMEM;
	err = nl_connect(ctx.sk, NETLINK_ROUTE);
	if (err >= 0)
		err = rtnl_route_alloc_cache(ctx.sk, AF_UNSPEC, 0, &cache);
	if (err >= 0) {
		nl_cache_foreach(cache, flush_one, &ctx);
		nl_cache_free(cache);
		err = ctx.err;
	} else {
		err = errno_of(err);
	}
	nl_socket_free(ctx.sk);
	return err;
}
