/* Attached ports (port/attached.h): the netdev's MAC and kind, its NDP/ARP
 * packet socket and the one thread that serves them all, its host routes,
 * and the bypass program on it. */
#include "port/attached.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ndp/ndp.h"
#include "port/bypass.h"
#include "port/ports.h"
#include "tun/netlink.h"
#include "tun/route.h"
#include "wg/clock.h"
#include "wg/device.h"
#include "wg/log.h"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

enum {
	FRAME_MAX = 2048,        /* NDP and ARP are small; longer ones are cut */
	EVENTS_MAX = 16,
	READS_PER_EVENT = 32,    /* then the other ports get their turn */
};

/* The device's attached-port machinery, created with its first attached
 * port. Only the control plane (write lock) changes it; the thread reads
 * epfd and stop_fd, fixed while it runs. */
struct port_attached {
	pthread_t thread;
	bool running;
	int epfd;
	int stop_fd;
	bool bypass_tried;
	struct port_bypass *bypass;  /* NULL: no BPF, userspace forwards */
};

/* ARP, and ICMPv6 types 133-136 (RS, RA, NS, NA) right after a plain IPv6
 * header: what ndp_handle answers. No VLAN tags, no extension headers. */
static struct sock_filter ndp_filter[] = {
	BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12),                 /* EtherType */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_ARP, 6, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IPV6, 0, 6),
	BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 14 + 6),             /* next header */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 58, 0, 4),
	BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 14 + 40),            /* ICMPv6 type */
	BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 133, 0, 2),
	BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, 136, 1, 0),
	BPF_STMT(BPF_RET | BPF_K, FRAME_MAX),
	BPF_STMT(BPF_RET | BPF_K, 0),
};

/* ioctl req about the netdev ifr names (the name set): 0 or -errno. */
static int netdev_ioctl(unsigned long req, struct ifreq *ifr)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, req, ifr))
		err = -errno;
	close(fd);
	return err;
}

static int netdev_mac(const char *name, uint8_t mac[6])
{
	struct ifreq ifr = { 0 };
	int err;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	err = netdev_ioctl(SIOCGIFHWADDR, &ifr);
	if (err)
		return err;
	if (ifr.ifr_hwaddr.sa_family != 1 /* ARPHRD_ETHER */)
		return -EINVAL;
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	return 0;
}

/* A veth takes bpf_redirect_peer; anything else (a tap) bpf_redirect. */
static bool netdev_is_veth(const char *name)
{
	struct ethtool_drvinfo info = { .cmd = ETHTOOL_GDRVINFO };
	struct ifreq ifr = { 0 };

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_data = (void *)&info;
	return !netdev_ioctl(SIOCETHTOOL, &ifr) && !strcmp(info.driver, "veth");
}

/* The port's netdev's IPv4 rp_filter sysctl. */
static int open_rp_filter(const struct port *port, int flags)
{
	char path[64 + IFNAMSIZ];

	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/rp_filter", port->cfg.name);
	return open(path, flags | O_CLOEXEC);
}

/* Anti-spoofing without BPF, IPv4 only: the kernel drops a VM's packet
 * whose source does not route back through its netdev. The netdev is not
 * weftd's: its rp_filter is read first, and put back when the port goes
 * (restore_rp_filter). */
static void set_rp_filter(struct port *port)
{
	const char *name = port->cfg.name;
	char was = 0;
	int fd = open_rp_filter(port, O_RDWR);

	if (fd >= 0 && (read(fd, &was, 1) != 1 || was < '0' || was > '2'))
		was = 0;
	if (fd < 0 || pwrite(fd, "1", 1, 0) != 1)
		log_error("port %s: cannot set rp_filter: %s", name, strerror(errno));
	else
		port->rp_filter_was = was;
	if (fd >= 0)
		close(fd);
}

static void restore_rp_filter(struct port *port)
{
	int fd;

	if (!port->rp_filter_was || port->rp_filter_was == '1')
		return;
	fd = open_rp_filter(port, O_WRONLY);
	if (fd < 0 || write(fd, &port->rp_filter_was, 1) != 1)
		log_info("port %s: cannot restore rp_filter %c: %s", port->cfg.name,
			 port->rp_filter_was, strerror(errno)); /* the netdev may be gone */
	if (fd >= 0)
		close(fd);
	port->rp_filter_was = 0;
}

static int open_socket(int ifindex)
{
	struct sock_fprog prog = { .len = sizeof(ndp_filter) / sizeof(ndp_filter[0]),
				   .filter = ndp_filter };
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
				   .sll_ifindex = ifindex };
	int one = 1, fd;

	/* Protocol 0 until the filter is on, so nothing unfiltered queues up. */
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) ||
	    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* Before publishing: finds the netdev, takes its MAC as the router MAC
 * (the kernel then accepts the VM's routed frames as its own), opens its
 * packet socket and sets IPv4 rp_filter. 0 or -errno. */
static int attached_open(struct wg_device *dev, struct port *port)
{
	const char *name = port->cfg.name;
	int err, ifindex = tun_link_index(name);

	(void)dev;
	if (ifindex < 0)
		return ifindex;
	err = netdev_mac(name, port->cfg.router_mac);
	if (err)
		return err;
	if (!memcmp(port->cfg.router_mac, port->cfg.vm_mac, 6)) {
		log_error("port %s: the VM's MAC is the netdev's own", name);
		return -EINVAL;
	}
	port->cfg.has_router_mac = true;
	port_ndp_config(&port->cfg, &port->ndp);
	if (ndp_port_config_check(&port->ndp))
		return -EINVAL;
	port->ifindex = ifindex;
	port->is_veth = netdev_is_veth(name);
	port->pkt_fd = open_socket(ifindex);
	if (port->pkt_fd < 0)
		return port->pkt_fd;
	set_rp_filter(port);
	return 0;
}

/* ---- the NDP/ARP thread ------------------------------------------------ */

static void serve(struct port *port)
{
	uint8_t frame[FRAME_MAX], reply[NDP_REPLY_MAX];
	size_t rlen;

	for (int i = 0; i < READS_PER_EVENT; i++) {
		ssize_t n = recv(port->pkt_fd, frame, sizeof(frame), MSG_DONTWAIT);
		enum ndp_verdict v;

		if (n < 0)
			return;
		v = ndp_handle(&port->ndp, &port->ndp_state, wg_clock_now() / NSEC_PER_MSEC, frame,
			       (size_t)n, reply, sizeof(reply), &rlen);
		if (v == NDP_REPLY && send(port->pkt_fd, reply, rlen, MSG_DONTWAIT) < 0)
			port_count_drop(&port->counters, PORT_DROP_tx_error);
		else if (ndp_verdict_is_drop(v))
			port_count_drop(&port->counters, PORT_DROP_ndp);
	}
}

static void *thread_main(void *arg)
{
	struct wg_device *dev = arg;
	struct port_attached *at = dev->ports->attached;
	struct epoll_event ev[EVENTS_MAX];

	for (;;) {
		int n = epoll_wait(at->epfd, ev, EVENTS_MAX, -1);

		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			uint32_t slot = (uint32_t)ev[i].data.u64;
			int fd = (int)(ev[i].data.u64 >> 32);
			struct port *port;

			if (fd == at->stop_fd)
				return NULL;
			/* The port is looked up again under the lock: one removed
			 * since epoll_wait is no longer in its slot. */
			wg_rwlock_rdlock(&dev->lock);
			port = slot < PORT_MAX ? dev->ports->slot[slot] : NULL;
			if (port && port->class == &port_attached_class && port->pkt_fd == fd)
				serve(port);
			wg_rwlock_unlock(&dev->lock);
		}
	}
	log_error("attached ports: epoll_wait: %s", strerror(errno));
	return NULL;
}

static struct port_attached *state(struct wg_device *dev)
{
	struct port_attached *at = dev->ports->attached;
	struct epoll_event ev = { .events = EPOLLIN };

	if (at)
		return at;
	at = calloc(1, sizeof(*at));
	if (!at)
		return NULL;
	at->epfd = epoll_create1(EPOLL_CLOEXEC);
	at->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ev.data.u64 = (uint64_t)(uint32_t)at->stop_fd << 32;
	if (at->epfd < 0 || at->stop_fd < 0 ||
	    epoll_ctl(at->epfd, EPOLL_CTL_ADD, at->stop_fd, &ev))
		goto fail;
	dev->ports->attached = at;
	if (pthread_create(&at->thread, NULL, thread_main, dev)) {
		dev->ports->attached = NULL;
		goto fail;
	}
	at->running = true;
	return at;
fail:
	if (at->epfd >= 0)
		close(at->epfd);
	if (at->stop_fd >= 0)
		close(at->stop_fd);
	free(at);
	return NULL;
}

/* ---- routes and the bypass -------------------------------------------- */

/* Write lock: an address registered to or removed from the port. */
static void attached_addr_added(struct wg_device *dev, struct port *port,
				const struct ip_prefix *a)
{
	struct port_attached *at = dev->ports->attached;
	int err = tun_route_add(a->family, a->addr, a->cidr, port->ifindex);

	if (err)
		log_error("port %s: cannot add a host route: %s", port->cfg.name, strerror(-err));
	if (at && port->bypassed) {
		err = port_bypass_route_add(at->bypass, a, port->slot, port->ifindex,
					    port->cfg.vm_mac, port->cfg.router_mac, port->is_veth);
		if (err)
			log_error("port %s: bypass map: %s", port->cfg.name, strerror(-err));
	}
}

static void attached_addr_removed(struct wg_device *dev, struct port *port,
				  const struct ip_prefix *a)
{
	struct port_attached *at = dev->ports->attached;

	/* The map entry first: from then on the kernel routes the address. */
	if (at)
		port_bypass_route_del(at->bypass, a);
	tun_route_del(a->family, a->addr, a->cidr, port->ifindex);
}

/* Once published (write lock): the NDP reader, the host routes, the
 * bypass program and its map entries. 0 or -errno. */
static int attached_published(struct wg_device *dev, struct port *port)
{
	struct port_attached *at = state(dev);
	struct epoll_event ev = { .events = EPOLLIN };
	int err;

	if (!at)
		return -ENOMEM;
	ev.data.u64 = (uint64_t)(uint32_t)port->pkt_fd << 32 | (uint32_t)port->slot;
	if (epoll_ctl(at->epfd, EPOLL_CTL_ADD, port->pkt_fd, &ev))
		return -errno;
	if (!at->bypass_tried) {
		at->bypass = port_bypass_open();
		at->bypass_tried = true;
	}
	if (at->bypass) {
		err = port_bypass_attach(at->bypass, port->slot, port->ifindex, port->cfg.router_mac);
		if (err)
			log_error("port %s: no bypass (%s): its VM's frames take the kernel's way",
				  port->cfg.name, strerror(-err));
		port->bypassed = !err;
	}
	/* Routes through this netdev that a previous weftd left (a crash)
	 * would outlive the addresses; the port's own follow. */
	tun_route_flush(port->ifindex);
	for (size_t i = 0; i < port->cfg.n_addrs; i++)
		attached_addr_added(dev, port, &port->cfg.addrs[i]);
	return 0;
}

/* Write lock, the port out of the slot table: its routes, map entries,
 * program and packet socket go, and the netdev's rp_filter is put back. */
static void attached_close(struct wg_device *dev, struct port *port)
{
	struct port_attached *at = dev->ports->attached;

	for (size_t i = 0; i < port->cfg.n_addrs; i++)
		attached_addr_removed(dev, port, &port->cfg.addrs[i]);
	if (at && port->bypassed)
		port_bypass_detach(at->bypass, port->slot);
	port->bypassed = false;
	restore_rp_filter(port);
	if (port->pkt_fd >= 0) {
		if (at)
			epoll_ctl(at->epfd, EPOLL_CTL_DEL, port->pkt_fd, NULL);
		close(port->pkt_fd);
		port->pkt_fd = -1;
	}
}

/* Whether the netdev is there, up and has a carrier: a veth whose VM side
 * is down, or a VMM's tap whose VMM closed it, has none. It lives in
 * weftd's namespace (by its index, which a rename keeps). */
static bool netdev_running(int ifindex)
{
	struct ifreq ifr = { 0 };

	if (!if_indextoname((unsigned int)ifindex, ifr.ifr_name))
		return false; /* deleted */
	return !netdev_ioctl(SIOCGIFFLAGS, &ifr) &&
	       (ifr.ifr_flags & (IFF_UP | IFF_RUNNING)) == (IFF_UP | IFF_RUNNING);
}

/* The netdev's state, and the bypass program's counters (zero without
 * BPF); what it dropped for a source not registered to the port counts
 * with userspace's drops. */
static void attached_info(struct wg_device *dev, const struct port *port,
			  struct port_info *info)
{
	struct port_attached *at = dev->ports->attached;
	uint64_t spoofed = 0;

	info->connected = netdev_running(port->ifindex);

	if (at && port->bypassed)
		port_bypass_stats(at->bypass, port->slot, &info->bypass_packets, &info->bypass_bytes,
				  &spoofed);
	info->drop_spoofed_source += spoofed;
}

void port_attached_stop(struct wg_device *dev)
{
	struct port_attached *at = dev->ports->attached;
	uint64_t one = 1;

	if (!at || !at->running)
		return;
	if (write(at->stop_fd, &one, sizeof(one)) != sizeof(one))
		log_error("attached ports: cannot stop the NDP thread: %s", strerror(errno));
	pthread_join(at->thread, NULL);
	at->running = false;
}

void port_attached_free(struct wg_device *dev)
{
	struct port_attached *at = dev->ports->attached;

	if (!at)
		return;
	port_attached_stop(dev);
	port_bypass_close(at->bypass);
	close(at->epfd);
	close(at->stop_fd);
	free(at);
	dev->ports->attached = NULL;
}

const struct port_class port_attached_class = {
	.type = PORT_ATTACHED,
	.open = attached_open,
	.published = attached_published,
	.unpublished = attached_close,
	.release = restore_rp_filter, /* a port opened but never published */
	.addr_added = attached_addr_added,
	.addr_removed = attached_addr_removed,
	.info = attached_info,
	.via_host = true,
};
