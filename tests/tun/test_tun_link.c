/* tun_open and the rtnetlink helpers on real links, inside a private network
 * namespace so nothing leaks into the host. Link state is cross-checked with
 * the classic SIOCGIF* ioctls, which share no code with libnl. Needs root and
 * /dev/net/tun; exits 77 otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/route/link/bridge.h>

#include "tun/netlink.h"
#include "tun/tun.h"

#define FAIL(...) (fprintf(stderr, "%s:%d: ", __FILE__, __LINE__), \
		   fprintf(stderr, __VA_ARGS__), exit(1))
#define CHECK(c) ((c) ? (void)0 : FAIL("failed: %s\n", #c))
#define CHECK_EQ(a, b)                                                        \
	do {                                                                  \
		long long a_ = (a), b_ = (b);                                 \
		if (a_ != b_)                                                 \
			FAIL("%s == %lld, expected %lld\n", #a, a_, b_);      \
	} while (0)

#define TUN_FLAG_MASK (IFF_TUN | IFF_TAP | IFF_NO_PI | IFF_MULTI_QUEUE | IFF_VNET_HDR)

/* SIOCGIF* on the link: an answer that does not go through rtnetlink. */
static struct ifreq if_query(const char *name, unsigned long req)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	CHECK(s >= 0);
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
	CHECK(ioctl(s, req, &ifr) == 0);
	close(s);
	return ifr;
}
#define if_mtu(name) (if_query(name, SIOCGIFMTU).ifr_mtu)
#define if_up(name) (if_query(name, SIOCGIFFLAGS).ifr_flags & IFF_UP)

/* The TUNGETIFF view of an fd: its interface name and tun flags. */
static int fd_tun_flags(int fd, char *name)
{
	struct ifreq ifr = { 0 };

	CHECK(ioctl(fd, TUNGETIFF, &ifr) == 0);
	if (name)
		memcpy(name, ifr.ifr_name, IFNAMSIZ);
	return ifr.ifr_flags & TUN_FLAG_MASK;
}

/* The wait is a hang guard only: the kernel queues a notification before
 * the call that caused it returns, so a passing run never waits. */
static bool readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, timeout_ms) == 1;
}
#define wait_readable(fd) CHECK(readable(fd, 30000))

static void test_open(void)
{
	char n0[IFNAMSIZ], n1[IFNAMSIZ], qn[IFNAMSIZ];
	int fd0, fd1, fdm, fdq, fdv;

	CHECK_EQ(tun_open("weft-name-too-long", n0, false), -ENAMETOOLONG);
	CHECK_EQ(tun_open("weft%x", n0, false), -EINVAL);

	/* Fresh namespace: the pattern's first free number is 0. */
	fd0 = tun_open("weftt%d", n0, false);
	CHECK(fd0 >= 0 && strcmp(n0, "weftt0") == 0);
	CHECK(fcntl(fd0, F_GETFD) & FD_CLOEXEC);
	CHECK(!(fcntl(fd0, F_GETFL) & O_NONBLOCK));
	CHECK_EQ(fd_tun_flags(fd0, NULL), IFF_TUN | IFF_NO_PI);
	fd1 = tun_open("weftt%d", n1, false);
	CHECK(fd1 >= 0 && strcmp(n1, "weftt1") == 0);
	/* A single-queue TUN takes one fd only. */
	CHECK_EQ(tun_open("weftt0", n0, false), -EBUSY);

	fdm = tun_open("weftmq", qn, true);
	CHECK(fdm >= 0 && strcmp(qn, "weftmq") == 0);
	CHECK_EQ(fd_tun_flags(fdm, NULL), IFF_TUN | IFF_NO_PI | IFF_MULTI_QUEUE);
	fdq = tun_open_queue("weftmq", false);
	CHECK(fdq >= 0);
	memset(qn, 0, sizeof(qn));
	CHECK_EQ(fd_tun_flags(fdq, qn), IFF_TUN | IFF_NO_PI | IFF_MULTI_QUEUE);
	CHECK(strcmp(qn, "weftmq") == 0);
	/* The device was made without vnet headers. Recent kernels keep that
	 * and the queue is refused; older ones let the last attach rewrite the
	 * device's flags, and then the fd must really carry the header. */
	fdv = tun_open_queue("weftmq", true);
	CHECK(fdv >= 0 || fdv == -EINVAL);
	CHECK_EQ(fd_tun_flags(fdq, NULL), IFF_TUN | IFF_NO_PI | IFF_MULTI_QUEUE |
						  (fdv >= 0 ? IFF_VNET_HDR : 0));
	if (fdv >= 0)
		close(fdv);
	fdv = tun_open_queue("weftmq", false);
	CHECK(fdv >= 0);
	/* No queue may quietly create a new device, nor join a single-queue one. */
	CHECK_EQ(tun_open_queue("weftnone", false), -ENODEV);
	CHECK_EQ(if_nametoindex("weftnone"), 0);
	CHECK_EQ(tun_open_queue("weftt0", false), -EINVAL);
	CHECK_EQ(tun_open_queue("weftt%d", false), -EINVAL);

	/* Non-persistent links die with their last fd. */
	close(fdm);
	close(fdq);
	CHECK(if_nametoindex("weftmq") > 0);
	close(fdv);
	CHECK_EQ(if_nametoindex("weftmq"), 0);
	close(fd1);
	close(fd0);
}

static void test_link_ops(void)
{
	char name[IFNAMSIZ];
	int fd = tun_open("weftl%d", name, false);

	CHECK(fd >= 0);
	CHECK_EQ(tun_link_index(name), (int)if_nametoindex(name));
	CHECK_EQ(tun_link_get_mtu(name), if_mtu(name));
	CHECK_EQ(tun_link_set_mtu(name, 1420), 0);
	CHECK_EQ(if_mtu(name), 1420);
	CHECK_EQ(tun_link_get_mtu(name), 1420);
	/* Below the IPv4 minimum of 68: refused, and nothing changed. */
	CHECK_EQ(tun_link_set_mtu(name, 10), -EINVAL);
	CHECK_EQ(tun_link_get_mtu(name), 1420);

	CHECK(!if_up(name));
	CHECK_EQ(tun_link_set_up(name, true), 0);
	CHECK(if_up(name));
	CHECK_EQ(tun_link_set_up(name, false), 0);
	CHECK(!if_up(name));
	CHECK_EQ(tun_link_get_mtu(name), 1420);

	CHECK_EQ(tun_link_set_mtu("weftnone", 1420), -ENODEV);
	CHECK_EQ(tun_link_set_up("weftnone", true), -ENODEV);
	CHECK_EQ(tun_link_index("weftnone"), -ENODEV);
	CHECK_EQ(tun_link_get_mtu("weftnone"), -ENODEV);
	CHECK_EQ(tun_link_index("weft-name-too-long"), -ENAMETOOLONG);
	CHECK_EQ(tun_link_index(""), -EINVAL);
	close(fd);
}

/* Adds (at ifindex, if nonzero) or deletes a bridge; false on failure. */
static bool bridge_op(struct nl_sock *sk, const char *name, int ifindex, bool add)
{
	struct rtnl_link *br = rtnl_link_bridge_alloc();
	int err;

	CHECK(br);
	rtnl_link_set_name(br, name);
	rtnl_link_set_ifindex(br, ifindex);
	err = add ? rtnl_link_add(sk, br, NLM_F_CREATE | NLM_F_EXCL)
		  : rtnl_link_delete(sk, br);
	rtnl_link_put(br);
	return err == 0;
}

/* Deletes the link name over rtnetlink while its fds stay open, as
 * `ip link del` does. */
static void link_delete(const char *name)
{
	struct nl_sock *sk = nl_socket_alloc();
	struct rtnl_link *l = rtnl_link_alloc();

	CHECK(sk && l && nl_connect(sk, NETLINK_ROUTE) == 0);
	rtnl_link_set_name(l, name);
	CHECK_EQ(rtnl_link_delete(sk, l), 0);
	rtnl_link_put(l);
	nl_socket_free(sk);
}

/* Waits (hang guard only) for the POLLERR a TUN fd gets when its device is
 * unregistered. */
static bool tun_errors(int fd)
{
	struct pollfd p = { .fd = fd, .events = 0 };

	return poll(&p, 1, 30000) == 1 && (p.revents & POLLERR);
}

static void test_watch(void)
{
	char name[IFNAMSIZ], other[IFNAMSIZ];
	struct tun_link_watch *w, *wo;
	struct tun_link_state st;
	int fd, fdo;

	errno = 0;
	CHECK(tun_link_watch_new(-1) == NULL && errno == EBADF);

	fd = tun_open("weftw%d", name, false);
	fdo = tun_open("weftw%d", other, false);
	CHECK(fd >= 0 && fdo >= 0);
	w = tun_link_watch_new(fd);
	wo = tun_link_watch_new(fdo);
	CHECK(w && wo);
	CHECK(!tun_link_watch_gone(w));
	CHECK_EQ(tun_link_read(fd, &st), 0);
	CHECK(!strcmp(st.name, name) && st.ifindex == tun_link_index(name) && st.nsid == -1);
	CHECK_EQ(st.mtu, if_mtu(name));
	CHECK(!st.up);

	/* Another link's change is drained without a read. */
	CHECK_EQ(tun_link_set_mtu(other, 1300), 0);
	wait_readable(tun_link_watch_fd(w));
	CHECK_EQ(tun_link_watch_update(w, &st), 0);
	CHECK(!readable(tun_link_watch_fd(w), 0));

	/* The link's own change is read back. */
	CHECK_EQ(tun_link_set_mtu(name, 1300), 0);
	CHECK_EQ(tun_link_set_up(name, true), 0);
	CHECK_EQ(tun_link_set_txqlen(name, 77), 0);
	wait_readable(tun_link_watch_fd(w));
	CHECK_EQ(tun_link_watch_update(w, &st), 1);
	CHECK(st.mtu == 1300 && st.up && st.txqlen == 77 && st.nsid == -1);

	/* Deleting the other link, fds still open, concerns only the other. */
	link_delete(other);
	CHECK(tun_errors(fdo));
	CHECK(tun_link_watch_gone(wo));
	wait_readable(tun_link_watch_fd(wo));
	CHECK_EQ(tun_link_watch_update(wo, &st), -ENODEV);
	CHECK_EQ(tun_link_read(fdo, &st), -ENODEV);
	wait_readable(tun_link_watch_fd(w));
	CHECK_EQ(tun_link_watch_update(w, &st), 0);
	CHECK(!tun_link_watch_gone(w));
	tun_link_watch_free(wo);
	close(fdo);

	link_delete(name);
	CHECK(tun_errors(fd));
	CHECK(tun_link_watch_gone(w));
	CHECK_EQ(if_nametoindex(name), 0);
	tun_link_watch_free(w);
	close(fd);
}

/* A move into another namespace (WireGuard's container pattern) is followed,
 * not taken for a deletion; the namespace's end is the link's end. */
static void test_watch_netns(void)
{
	char name[IFNAMSIZ], path[64], c;
	struct tun_link_watch *w;
	struct tun_link_state st;
	struct rtnl_link *link, *change;
	struct nl_sock *sk;
	int fd, nsfd, hold[2], home;
	pid_t child;

	/* A child holds the second namespace open until its pipe closes. */
	CHECK(pipe(hold) == 0);
	child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		close(hold[1]);
		if (unshare(CLONE_NEWNET))
			_exit(1);
		_exit(read(hold[0], &c, 1) < 0);
	}
	close(hold[0]);
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)child);
	home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	CHECK(home >= 0);
	for (int i = 0; i < 3000; i++) { /* hang guard: until the child unshared */
		struct stat a, b;

		nsfd = open(path, O_RDONLY | O_CLOEXEC);
		CHECK(nsfd >= 0);
		CHECK(fstat(nsfd, &a) == 0 && fstat(home, &b) == 0);
		if (a.st_ino != b.st_ino)
			break;
		close(nsfd);
		nsfd = -1;
		usleep(10000);
	}
	CHECK(nsfd >= 0);

	fd = tun_open("weftm%d", name, false);
	CHECK(fd >= 0);
	w = tun_link_watch_new(fd);
	CHECK(w);
	sk = nl_socket_alloc();
	CHECK(sk && nl_connect(sk, NETLINK_ROUTE) == 0);
	CHECK(rtnl_link_get_kernel(sk, 0, name, &link) == 0);
	change = rtnl_link_alloc();
	CHECK(change);
	rtnl_link_set_ns_fd(change, nsfd);
	CHECK_EQ(rtnl_link_change(sk, link, change, 0), 0);
	rtnl_link_put(change);
	rtnl_link_put(link);
	nl_socket_free(sk);

	wait_readable(tun_link_watch_fd(w));
	CHECK_EQ(tun_link_watch_update(w, &st), 1);
	CHECK(!tun_link_watch_gone(w));
	CHECK(!strcmp(st.name, name) && st.nsid >= 0 && st.mtu > 0);
	CHECK_EQ(if_nametoindex(name), 0); /* not here any more */

	/* A change made in the new namespace is heard and read there. */
	CHECK(setns(nsfd, CLONE_NEWNET) == 0);
	CHECK_EQ(tun_link_set_mtu(name, 1280), 0);
	CHECK(setns(home, CLONE_NEWNET) == 0);
	wait_readable(tun_link_watch_fd(w));
	CHECK_EQ(tun_link_watch_update(w, &st), 1);
	CHECK(st.mtu == 1280 && st.nsid >= 0);

	/* The namespace goes with its last holder; the TUN link with it. */
	close(nsfd);
	close(hold[1]);
	CHECK(waitpid(child, NULL, 0) == child);
	CHECK(tun_errors(fd));
	CHECK(tun_link_watch_gone(w));
	CHECK_EQ(tun_link_read(fd, &st), -ENODEV);
	tun_link_watch_free(w);
	close(fd);
	close(home);
}

/* Watch cases that need a second link type; skipped without bridges. */
static void test_watch_bridge(void)
{
	struct tun_link_watch *w;
	struct tun_link_state st;
	struct nl_sock *sk;
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI };
	int fd, idx, br;

	sk = nl_socket_alloc();
	CHECK(sk && nl_connect(sk, NETLINK_ROUTE) == 0);
	if (!bridge_op(sk, "weftbr0", 0, true)) {
		fprintf(stderr, "no bridge support: skipping bridge cases\n");
		goto out;
	}
	br = tun_link_index("weftbr0");
	CHECK(br > 0);

	/* A port leaving its bridge produces an AF_BRIDGE RTM_DELLINK for the
	 * port; the port itself still exists. A TAP, since a TUN has no
	 * Ethernet header to bridge. */
	fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	snprintf(ifr.ifr_name, IFNAMSIZ, "weftp0");
	CHECK(ioctl(fd, TUNSETIFF, &ifr) == 0);
	idx = tun_link_index("weftp0");
	CHECK(idx > 0);
	w = tun_link_watch_new(fd);
	CHECK(w);
	CHECK_EQ(rtnl_link_enslave_ifindex(sk, br, idx), 0);
	CHECK_EQ(rtnl_link_release_ifindex(sk, idx), 0);
	wait_readable(tun_link_watch_fd(w));
	CHECK(tun_link_watch_update(w, &st) >= 0);
	CHECK(!tun_link_watch_gone(w));
	link_delete("weftp0");
	CHECK(tun_errors(fd));
	CHECK(tun_link_watch_gone(w));
	tun_link_watch_free(w);
	close(fd);
	CHECK(bridge_op(sk, "weftbr0", 0, false));
out:
	nl_socket_free(sk);
}

static uint16_t ip4_checksum(const uint8_t *h, size_t len)
{
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Which of the two queues the UDP "pong" comes out of within 1 s: 0, 1, or
 * -1. Anything else the kernel sends (IPv6 chatter) is skipped. */
static int queue_with_pong(const int fds[2])
{
	struct pollfd p[2] = { { .fd = fds[0], .events = POLLIN }, { .fd = fds[1], .events = POLLIN } };
	uint8_t buf[2048];

	while (poll(p, 2, 1000) > 0) {
		for (int i = 0; i < 2; i++) {
			ssize_t n;

			if (!(p[i].revents & POLLIN))
				continue;
			n = read(fds[i], buf, sizeof(buf));
			if (n == 32 && buf[0] == 0x45 && buf[9] == 17 && memcmp(buf + 28, "pong", 4) == 0)
				return i;
		}
	}
	return -1;
}

/* The kernel sends a flow out of the queue its packets were last written
 * to: a UDP datagram written in through queue tun_queue_for(...) gets its
 * reply back on that same queue, and over 32 flows both queues are used. */
static void test_queue_steering(void)
{
	char name[IFNAMSIZ];
	int fds[2], used[2] = { 0, 0 }, s;
	struct sockaddr_in local = { .sin_family = AF_INET, .sin_port = htons(5000) };

	fds[0] = tun_open("wsteer0", name, true);
	CHECK(fds[0] >= 0);
	fds[1] = tun_open_queue(name, false);
	CHECK(fds[1] >= 0);
	CHECK(system("sysctl -qw net.ipv6.conf.wsteer0.disable_ipv6=1 && ip link set wsteer0 up && "
		     "ip addr add 10.9.0.1/24 dev wsteer0") == 0);
	inet_pton(AF_INET, "10.9.0.1", &local.sin_addr);
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	CHECK(bind(s, (struct sockaddr *)&local, sizeof(local)) == 0);

	for (int flow = 0; flow < 32; flow++) {
		uint8_t pkt[20 + 8 + 4] = { 0x45, 0, 0, sizeof(pkt), 0, 0, 0x40, 0, 64, 17, 0, 0,
					    10, 9, 0, 2, 10, 9, 0, 1 };
		uint16_t sport = (uint16_t)(40000 + flow);
		struct sockaddr_in from;
		socklen_t from_len = sizeof(from);
		char got[16];
		unsigned int q;

		pkt[20] = (uint8_t)(sport >> 8);
		pkt[21] = (uint8_t)sport;
		pkt[22] = 5000 >> 8;
		pkt[23] = 5000 & 0xff;
		pkt[25] = 12; /* UDP length; checksum 0: none */
		memcpy(pkt + 28, "ping", 4);
		{
			uint16_t c = ip4_checksum(pkt, 20);

			pkt[10] = (uint8_t)(c >> 8);
			pkt[11] = (uint8_t)c;
		}
		q = tun_queue_for(pkt, sizeof(pkt), 2);
		CHECK(q < 2);
		CHECK(write(fds[q], pkt, sizeof(pkt)) == (ssize_t)sizeof(pkt));
		CHECK(recvfrom(s, got, sizeof(got), 0, (struct sockaddr *)&from, &from_len) == 4);
		CHECK(sendto(s, "pong", 4, 0, (struct sockaddr *)&from, from_len) == 4);
		CHECK_EQ(queue_with_pong(fds), q);
		used[q]++;
	}
	CHECK(used[0] > 0 && used[1] > 0);
	/* The same flow always maps to the same queue; short or foreign
	 * packets to queue 0. */
	CHECK_EQ(tun_queue_for((const uint8_t *)"\x45", 1, 2), 0);
	CHECK_EQ(tun_queue_for((const uint8_t *)"hello, this is not an IP packet!", 32, 4), 0);
	close(s);
	close(fds[0]);
	close(fds[1]);
}

int main(void)
{
	const char *skip = geteuid() != 0 ? "needs root"
			 : access("/dev/net/tun", R_OK | W_OK) ? "no /dev/net/tun"
			 : unshare(CLONE_NEWNET) ? "cannot unshare(CLONE_NEWNET)"
			 : NULL;

	if (skip) {
		fprintf(stderr, "SKIP: %s\n", skip);
		return 77;
	}
	test_open();
	test_link_ops();
	test_watch();
	test_watch_netns();
	test_watch_bridge();
	test_queue_steering();
	printf("test_tun_link: ok\n");
	return 0;
}
