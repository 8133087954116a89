/* The same-host bypass program (port/bypass.bpf.c) run by the kernel on
 * crafted frames (BPF_PROG_TEST_RUN), with its maps filled through
 * port/bypass.c: what it redirects and how it rewrites the frame (MACs, TTL,
 * IPv4 checksum against a plain recomputation), what it passes, what it
 * drops as spoofed, and that a removed address is passed at once. Needs
 * root (CAP_BPF, a network namespace of its own): 77 without. */
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <bpf/bpf.h>
#include <linux/pkt_cls.h>

#include "port/bypass.h"

static int failures;

#define CHECK(cond, ...)                                  \
	do {                                              \
		if (!(cond)) {                            \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);     \
			fputc('\n', stderr);              \
			failures++;                       \
		}                                         \
	} while (0)

enum { SLOT_A = 0, SLOT_B = 1, IFINDEX_A = 1 /* lo, in our namespace */, IFINDEX_B = 42 };

static const uint8_t router_a[6] = { 0x02, 0, 0, 0, 0, 0xa0 };
static const uint8_t router_b[6] = { 0x02, 0, 0, 0, 0, 0xb0 };
static const uint8_t vm_a[6] = { 0x52, 0x54, 0, 0, 0, 0x0a };
static const uint8_t vm_b[6] = { 0x52, 0x54, 0, 0, 0, 0x0b };

struct frame {
	uint8_t b[128];
	uint32_t len;
};

static uint16_t naive_csum(const uint8_t *p, size_t n)
{
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void eth(struct frame *f, const uint8_t dst[6], const uint8_t src[6], uint16_t type)
{
	memcpy(f->b, dst, 6);
	memcpy(f->b + 6, src, 6);
	f->b[12] = (uint8_t)(type >> 8);
	f->b[13] = (uint8_t)type;
}

/* An ICMP echo from src to dst with ttl, sent by VM A to its router. */
static struct frame ipv4(const char *src, const char *dst, uint8_t ttl)
{
	struct frame f = { .len = 14 + 20 + 8 };
	uint8_t *ip = f.b + 14;
	uint16_t c;

	eth(&f, router_a, vm_a, 0x0800);
	ip[0] = 0x45;
	ip[3] = 28;
	ip[8] = ttl;
	ip[9] = 1;
	inet_pton(AF_INET, src, ip + 12);
	inet_pton(AF_INET, dst, ip + 16);
	c = naive_csum(ip, 20);
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	ip[20] = 8; /* echo request */
	return f;
}

static struct frame ipv6(const char *src, const char *dst, uint8_t next, uint8_t type)
{
	struct frame f = { .len = 14 + 40 + 8 };
	uint8_t *ip = f.b + 14;

	eth(&f, router_a, vm_a, 0x86dd);
	ip[0] = 0x60;
	ip[5] = 8;
	ip[6] = next;
	ip[7] = 64;
	inet_pton(AF_INET6, src, ip + 8);
	inet_pton(AF_INET6, dst, ip + 24);
	ip[40] = type;
	return f;
}

/* Runs the program on f; the frame as it leaves is put back in f. */
static int run(int prog, struct frame *f)
{
	uint8_t out[sizeof(f->b)];
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = f->b, .data_size_in = f->len,
		    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);

	if (bpf_prog_test_run_opts(prog, &opts)) {
		fprintf(stderr, "test run of %u bytes: %s\n", f->len, strerror(errno));
		exit(1);
	}
	memcpy(f->b, out, opts.data_size_out < sizeof(out) ? opts.data_size_out : sizeof(out));
	return (int)opts.retval;
}

static struct ip_prefix addr(const char *text)
{
	struct ip_prefix a = { .family = strchr(text, ':') ? AF_INET6 : AF_INET };

	inet_pton(a.family, text, a.addr);
	a.cidr = a.family == AF_INET ? 32 : 128;
	return a;
}

int main(void)
{
	struct ip_prefix a4 = addr("10.9.0.1"), b4 = addr("10.9.0.2");
	struct ip_prefix a6 = addr("fd00:9::1"), b6 = addr("fd00:9::2");
	uint64_t packets, bytes, spoofed;
	struct port_bypass *b;
	struct frame f, orig;
	int prog, ret;

	/* Our own lo to attach to: the host's is left alone. */
	if (unshare(CLONE_NEWNET)) {
		perror("unshare(CLONE_NEWNET), skipped");
		return 77;
	}
	b = port_bypass_open();
	if (!b) {
		fprintf(stderr, "no BPF here, skipped\n");
		return 77;
	}
	prog = port_bypass_prog_fd(b);
	CHECK(port_bypass_attach(b, SLOT_A, IFINDEX_A, router_a) == 0, "attach to lo");
	CHECK(!port_bypass_route_add(b, &a4, SLOT_A, IFINDEX_A, vm_a, router_a, true), "add a4");
	CHECK(!port_bypass_route_add(b, &a6, SLOT_A, IFINDEX_A, vm_a, router_a, true), "add a6");
	CHECK(!port_bypass_route_add(b, &b4, SLOT_B, IFINDEX_B, vm_b, router_b, false), "add b4");
	CHECK(!port_bypass_route_add(b, &b6, SLOT_B, IFINDEX_B, vm_b, router_b, true), "add b6");

	/* A -> B, IPv4: redirected, MACs router_b -> vm_b, TTL 63, checksum right. */
	f = ipv4("10.9.0.1", "10.9.0.2", 64);
	ret = run(prog, &f);
	CHECK(ret == TC_ACT_REDIRECT, "IPv4 A -> B: verdict %d", ret);
	CHECK(!memcmp(f.b, vm_b, 6) && !memcmp(f.b + 6, router_b, 6), "IPv4 A -> B: MACs");
	CHECK(f.b[14 + 8] == 63, "IPv4 A -> B: TTL %u", f.b[14 + 8]);
	CHECK(naive_csum(f.b + 14, 20) == 0, "IPv4 A -> B: header checksum does not verify");
	/* The checksum with a carry (TTL 0x01 -> 0x00 is not forwarded; 0xff is). */
	f = ipv4("10.9.0.1", "10.9.0.2", 255);
	CHECK(run(prog, &f) == TC_ACT_REDIRECT && naive_csum(f.b + 14, 20) == 0,
	      "IPv4 TTL 255: checksum");

	/* What passes unchanged. */
	struct {
		const char *what;
		struct frame f;
	} passes[] = {
		{ "TTL 1", ipv4("10.9.0.1", "10.9.0.2", 1) },
		{ "unknown destination", ipv4("10.9.0.1", "10.9.0.77", 64) },
		{ "destination on the same port", ipv4("10.9.0.1", "10.9.0.1", 64) },
		{ "source 0.0.0.0", ipv4("0.0.0.0", "10.9.0.2", 64) },
		{ "IPv6 NS to B", ipv6("fd00:9::1", "fd00:9::2", 58, 135) },
		{ "IPv6 link-local source", ipv6("fe80::1", "fd00:9::2", 17, 0) },
		{ "IPv6 multicast", ipv6("fd00:9::1", "ff02::1", 17, 0) },
		{ "IPv6 hop-by-hop", ipv6("fd00:9::1", "fd00:9::2", 0, 0) },
	};
	for (size_t i = 0; i < sizeof(passes) / sizeof(passes[0]); i++) {
		orig = passes[i].f;
		ret = run(prog, &passes[i].f);
		CHECK(ret == TC_ACT_OK, "%s: verdict %d, expected pass", passes[i].what, ret);
		CHECK(!memcmp(orig.b, passes[i].f.b, orig.len), "%s: frame changed", passes[i].what);
	}
	f = ipv4("10.9.0.1", "10.9.0.2", 64);
	memset(f.b, 0xff, 6);
	CHECK(run(prog, &f) == TC_ACT_OK, "broadcast destination MAC passes");
	f = ipv4("10.9.0.1", "10.9.0.2", 64);
	f.b[12] = 0x08;
	f.b[13] = 0x06;
	CHECK(run(prog, &f) == TC_ACT_OK, "ARP passes");

	/* A -> B, IPv6 (B is a veth): redirected, hop limit 63. */
	f = ipv6("fd00:9::1", "fd00:9::2", 17, 0);
	ret = run(prog, &f);
	CHECK(ret == TC_ACT_REDIRECT, "IPv6 A -> B: verdict %d", ret);
	CHECK(f.b[14 + 7] == 63 && !memcmp(f.b, vm_b, 6), "IPv6 A -> B: hop limit, MAC");

	/* Spoofed: a source registered nowhere, or to B. */
	f = ipv4("10.9.0.9", "10.9.0.2", 64);
	CHECK(run(prog, &f) == TC_ACT_SHOT, "IPv4 unregistered source dropped");
	f = ipv6("fd00:9::2", "fd00:9::1", 17, 0);
	CHECK(run(prog, &f) == TC_ACT_SHOT, "IPv6 source of another port dropped");
	port_bypass_stats(b, SLOT_A, &packets, &bytes, &spoofed);
	CHECK(packets == 3 && spoofed == 2, "stats: %llu packets, %llu spoofed",
	      (unsigned long long)packets, (unsigned long long)spoofed);
	CHECK(bytes == 2 * (14 + 28) + 14 + 48, "stats: %llu bytes", (unsigned long long)bytes);

	/* B unregistered: its frames pass at once. */
	port_bypass_route_del(b, &b4);
	f = ipv4("10.9.0.1", "10.9.0.2", 64);
	CHECK(run(prog, &f) == TC_ACT_OK, "after route_del: passes");
	/* Detached: the port is unknown, nothing is checked. */
	port_bypass_detach(b, SLOT_A);
	f = ipv4("10.9.0.9", "10.9.0.2", 64);
	CHECK(run(prog, &f) == TC_ACT_OK, "after detach: passes");
	port_bypass_close(b);
	if (failures)
		return 1;
	printf("test_bypass: ok\n");
	return 0;
}
