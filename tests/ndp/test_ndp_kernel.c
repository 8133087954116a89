/* The Linux IPv6 and ARP stack as the VM: a tap device in a private network
 * namespace is the VM's NIC, and this program is the router on the other
 * end, feeding every frame the kernel sends to ndp_handle and writing the
 * replies back. The kernel must take the RA (SLAAC address, default route
 * via the router's link-local address, MTU, hop limit), finish DAD on its
 * addresses (nothing answered it), and, after our NA and ARP replies, send
 * datagrams for an on-link, an off-link and an IPv4 address to the router's
 * MAC. Needs root (a namespace and a tap device): exits 77 otherwise.
 *
 *      kernel (the VM)                      this program (the router)
 *   vm0 52:54:00:12:34:56  <-- tap fd -->  ndp_handle, 02:77:65:66:74:01
 *   10.1.0.10/24, SLAAC in 2001:db8:1::/64  gateway 10.1.0.1, fe80::77:65ff:fe66:7401
 */
#include "frames.h"

#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SKIP(...)                                     \
	do {                                          \
		fprintf(stderr, "skip: " __VA_ARGS__); \
		exit(77);                             \
	} while (0)

/* A hang guard, not a verdict: the loops below wait for the kernel's
 * state (SLAAC done, frames seen) and only give up after this. */
enum { DEADLINE_MS = 60000 };

static struct ndp_port_config cfg;
static struct ndp_port_state st;
static int tap;
/* Datagrams seen going to the router's MAC, by destination. */
static bool seen_onlink, seen_offlink, seen_ipv4;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void write_sysctl(const char *path, const char *value)
{
	FILE *f = fopen(path, "w");

	CHECK(f);
	CHECK(fputs(value, f) >= 0);
	CHECK(fclose(f) == 0);
}

static long read_sysctl(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	CHECK(f);
	CHECK(fscanf(f, "%ld", &v) == 1);
	fclose(f);
	return v;
}

static void setup(void)
{
	struct ifreq ifr = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
	int s;

	if (geteuid() != 0)
		SKIP("not root\n");
	if (unshare(CLONE_NEWNET) < 0)
		SKIP("unshare(CLONE_NEWNET): %m\n");
	tap = open("/dev/net/tun", O_RDWR | O_NONBLOCK);
	if (tap < 0)
		SKIP("/dev/net/tun: %m\n");
	strcpy(ifr.ifr_name, "vm0");
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	if (ioctl(tap, TUNSETIFF, &ifr) < 0)
		SKIP("TUNSETIFF: %m\n");

	s = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK(s >= 0);
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "vm0");
	ifr.ifr_hwaddr.sa_family = 1; /* ARPHRD_ETHER */
	memcpy(ifr.ifr_hwaddr.sa_data, VM_MAC, 6);
	CHECK(ioctl(s, SIOCSIFHWADDR, &ifr) == 0);
	/* Quick and plain: one DAD probe, no solicitation delay, no
	 * temporary addresses. */
	write_sysctl("/proc/sys/net/ipv6/conf/vm0/accept_ra", "1");
	write_sysctl("/proc/sys/net/ipv6/conf/vm0/autoconf", "1");
	write_sysctl("/proc/sys/net/ipv6/conf/vm0/dad_transmits", "1");
	write_sysctl("/proc/sys/net/ipv6/conf/vm0/router_solicitation_delay", "0");
	write_sysctl("/proc/sys/net/ipv6/conf/vm0/use_tempaddr", "0");
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "vm0");
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = inet_addr("10.1.0.10");
	CHECK(ioctl(s, SIOCSIFADDR, &ifr) == 0);
	sin->sin_addr.s_addr = inet_addr("255.255.255.0");
	CHECK(ioctl(s, SIOCSIFNETMASK, &ifr) == 0);
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "vm0");
	ifr.ifr_flags = IFF_UP;
	CHECK(ioctl(s, SIOCSIFFLAGS, &ifr) == 0);
	close(s);
}

/* Notes a datagram the kernel routed to the router. */
static void note_forwarded(const uint8_t *f, size_t len)
{
	if (len < 14 || memcmp(f, ROUTER_MAC, 6))
		return;
	if (get16(f + 12) == 0x86dd && len >= 54 && f[20] == 17) {
		if (!memcmp(f + 38, ip6("2001:db8:1::20").b, 16))
			seen_onlink = true;
		if (!memcmp(f + 38, ip6("2001:db8:99::1").b, 16))
			seen_offlink = true;
	}
	if (get16(f + 12) == 0x0800 && len >= 34 && f[23] == 17 &&
	    !memcmp(f + 30, ip4("10.1.0.77").b, 4))
		seen_ipv4 = true;
}

/* Serves the port for up to ms milliseconds. */
static void pump(int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	uint8_t f[F_MAX], reply[NDP_REPLY_MAX];

	for (uint64_t t = now_ms(); t < end; t = now_ms()) {
		struct pollfd p = { .fd = tap, .events = POLLIN };
		size_t reply_len;
		ssize_t n;

		if (poll(&p, 1, (int)(end - t)) <= 0)
			continue;
		while ((n = read(tap, f, sizeof(f))) > 0) {
			enum ndp_verdict v = ndp_handle(&cfg, &st, now_ms(), f, (size_t)n, reply,
							sizeof(reply), &reply_len);

			if (v == NDP_REPLY)
				CHECK(write(tap, reply, reply_len) == (ssize_t)reply_len);
			else if (v == NDP_NOT_NDP)
				note_forwarded(f, (size_t)n);
			else if (ndp_verdict_is_drop(v))
				fprintf(stderr, "dropped a frame from the kernel: %s\n",
					ndp_verdict_name(v));
			CHECK(!ndp_verdict_is_drop(v));
		}
	}
}

/* /proc/net/if_inet6 holds the SLAAC address, no longer tentative and
 * not failed. */
static bool slaac_done(void)
{
	FILE *f = fopen("/proc/net/if_inet6", "r");
	char addr[33], dev[32];
	unsigned int idx, plen, scope, flags;
	bool done = false;

	CHECK(f);
	while (fscanf(f, "%32s %x %x %x %x %31s", addr, &idx, &plen, &scope, &flags, dev) == 6)
		if (!strcmp(addr, "20010db800010000505400fffe123456") && !strcmp(dev, "vm0"))
			done = !(flags & (0x40 | 0x08)); /* IFA_F_TENTATIVE, IFA_F_DADFAILED */
	fclose(f);
	return done;
}

/* /proc/net/ipv6_route holds ::/0 via the router's link-local on vm0. */
static bool default_route(void)
{
	FILE *f = fopen("/proc/net/ipv6_route", "r");
	char line[512];
	bool found = false;

	CHECK(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "00000000000000000000000000000000 00 ", 36) &&
		    strstr(line, "fe80000000000000007765fffe667401") && strstr(line, "vm0"))
			found = true;
	fclose(f);
	return found;
}

static void send_udp(int family, const char *addr)
{
	int s = socket(family, SOCK_DGRAM, 0);

	CHECK(s >= 0);
	if (family == AF_INET6) {
		struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(9) };

		memcpy(&sa.sin6_addr, ip6(addr).b, 16);
		sendto(s, "x", 1, 0, (struct sockaddr *)&sa, sizeof(sa));
	} else {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(9) };

		memcpy(&sa.sin_addr, ip4(addr).b, 4);
		sendto(s, "x", 1, 0, (struct sockaddr *)&sa, sizeof(sa));
	}
	close(s);
}

int main(void)
{
	uint64_t start;

	test_config(&cfg);
	cfg.hop_limit = 61;
	setup();

	/* The kernel solicits, configures and runs DAD by itself. */
	start = now_ms();
	while (!(slaac_done() && default_route()) && now_ms() - start < DEADLINE_MS)
		pump(200);
	CHECK(slaac_done());
	CHECK(default_route());
	CHECK(read_sysctl("/proc/sys/net/ipv6/conf/vm0/mtu") == 1420);
	CHECK(read_sysctl("/proc/sys/net/ipv6/conf/vm0/hop_limit") == 61);
	CHECK(atomic_load(&st.stats.tx_ra) >= 1);
	CHECK(atomic_load(&st.stats.ns_dad) >= 2); /* link-local and SLAAC */

	/* Traffic to an on-link neighbour (proxy NA), through the default
	 * router, and over IPv4 (ARP): each must reach the router's MAC. */
	start = now_ms();
	while (!(seen_onlink && seen_offlink && seen_ipv4) && now_ms() - start < DEADLINE_MS) {
		if (!seen_onlink)
			send_udp(AF_INET6, "2001:db8:1::20");
		if (!seen_offlink)
			send_udp(AF_INET6, "2001:db8:99::1");
		if (!seen_ipv4)
			send_udp(AF_INET, "10.1.0.77");
		pump(500);
	}
	CHECK(seen_onlink && seen_offlink && seen_ipv4);
	CHECK(atomic_load(&st.stats.tx_na_proxy) >= 1);
	CHECK(atomic_load(&st.stats.tx_arp_reply) >= 1);
	CHECK(slaac_done());
	printf("test_ndp_kernel: ok (RA %llu, NA %llu, ARP %llu, DAD probes %llu)\n",
	       (unsigned long long)atomic_load(&st.stats.tx_ra),
	       (unsigned long long)atomic_load(&st.stats.tx_na_proxy) +
		       atomic_load(&st.stats.tx_na_router),
	       (unsigned long long)atomic_load(&st.stats.tx_arp_reply),
	       (unsigned long long)atomic_load(&st.stats.ns_dad));
	return 0;
}
