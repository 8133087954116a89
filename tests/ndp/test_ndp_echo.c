/* Echo requests to the VM's router: to the IPv4 gateway and to the
 * router's link-local address they are answered (every byte of the reply
 * checked against an independent build), to any other address they are
 * routed; malformed ones are dropped, each for its reason; the reply never
 * outgrows the caller's buffer. */
#include "frames.h"

static struct ndp_port_config cfg;
static struct ndp_port_state st;
static uint8_t frame[F_MAX], reply[F_MAX], want[F_MAX];
static size_t reply_len;

static size_t icmp4(uint8_t type, const char *src, const char *dst, size_t n, size_t ihl)
{
	return icmp4_build(frame, type, src, dst, n, ihl);
}

/* An ICMPv6 echo request from src to dst with n data bytes. */
static size_t echo6(const char *src, const char *dst, size_t n)
{
	struct nd m = nd_base(128, src, dst);
	size_t len;

	m.hop = 64;
	m.icmp_len_override = 8 + n;
	len = nd_build(&m, frame);
	put16(frame + F_ICMP + 4, 0x1234);
	put16(frame + F_ICMP + 6, 7);
	for (size_t i = 0; i < n; i++)
		frame[F_ICMP + 8 + i] = (uint8_t)(i * 7 + 1);
	put16(frame + F_ICMP + 2, 0);
	put16(frame + F_ICMP + 2, ref_icmp6_csum(m.src.b, m.dst.b, frame + F_ICMP, 8 + n));
	return len;
}

static enum ndp_verdict run(size_t len, size_t cap)
{
	enum ndp_verdict v;

	memset(reply, 0xa5, sizeof(reply));
	v = ndp_handle(&cfg, &st, 0, frame, len, reply, cap, &reply_len);
	CHECK((v == NDP_REPLY) == (reply_len != 0));
	return v;
}

static void test_ipv4(void)
{
	static const size_t sizes[] = { 0, 1, 56, 1372 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i], len = icmp4(8, "10.1.0.10", "10.1.0.1", n, 5);
		uint8_t *ip = want + 14;

		CHECK(run(len, sizeof(reply)) == NDP_REPLY);
		/* Ethernet to the VM from the router; IPv4 20 bytes, the
		 * request's TOS, DF, TTL 64, from the gateway to the VM. */
		memset(want, 0, sizeof(want));
		memcpy(want, VM_MAC, 6);
		memcpy(want + 6, ROUTER_MAC, 6);
		put16(want + 12, 0x0800);
		ip[0] = 0x45;
		ip[1] = 0x10;
		put16(ip + 2, (unsigned int)(28 + n));
		put16(ip + 6, 0x4000);
		ip[8] = 64;
		ip[9] = 1;
		memcpy(ip + 12, ip4("10.1.0.1").b, 4);
		memcpy(ip + 16, ip4("10.1.0.10").b, 4);
		put16(ip + 10, ref_csum(ip, 20, 0));
		memcpy(ip + 20, frame + 14 + 20, 8 + n);
		ip[20] = 0;
		put16(ip + 22, 0);
		put16(ip + 22, ref_csum(ip + 20, 8 + n, 0));
		CHECK(reply_len == 14 + 28 + n);
		CHECK(!memcmp(reply, want, reply_len));
		CHECK(reply[reply_len] == 0xa5);
	}
	/* IPv4 options in the request: the reply has none. */
	CHECK(run(icmp4(8, "10.1.0.10", "10.1.0.1", 4, 6), sizeof(reply)) == NDP_REPLY);
	CHECK(reply_len == 14 + 28 + 4 && reply[14] == 0x45);
}

static void test_ipv6(void)
{
	static const size_t sizes[] = { 0, 56, 1352 };
	char router[64];

	inet_ntop(AF_INET6, ROUTER_LL, router, sizeof(router));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i], len = echo6("fe80::5054:ff:fe12:3456", router, n);
		uint8_t *ip = want + 14;

		CHECK(run(len, sizeof(reply)) == NDP_REPLY);
		memset(want, 0, sizeof(want));
		memcpy(want, VM_MAC, 6);
		memcpy(want + 6, ROUTER_MAC, 6);
		put16(want + 12, 0x86dd);
		ip[0] = 0x60;
		put16(ip + 4, (unsigned int)(8 + n));
		ip[6] = 58;
		ip[7] = 64;
		memcpy(ip + 8, ROUTER_LL, 16);
		memcpy(ip + 24, ip6("fe80::5054:ff:fe12:3456").b, 16);
		memcpy(ip + 40, frame + F_ICMP, 8 + n);
		ip[40] = 129;
		put16(ip + 42, 0);
		put16(ip + 42, ref_icmp6_csum(ip + 8, ip + 24, ip + 40, 8 + n));
		CHECK(reply_len == 14 + 48 + n);
		CHECK(!memcmp(reply, want, reply_len));
	}
	/* From a global address too. */
	CHECK(run(echo6("2001:db8:1::10", router, 8), sizeof(reply)) == NDP_REPLY);
}

/* Not the router's: routed as before. */
static void test_routed(void)
{
	CHECK(run(icmp4(8, "10.1.0.10", "10.1.0.77", 8, 5), sizeof(reply)) == NDP_NOT_NDP);
	CHECK(run(icmp4(0, "10.1.0.10", "10.1.0.1", 8, 5), sizeof(reply)) == NDP_NOT_NDP);
	CHECK(run(echo6("2001:db8:1::10", "2001:db8:1::1", 8), sizeof(reply)) == NDP_NOT_NDP);
	/* A fragment to the gateway is the router's to reassemble, not
	 * answered piecemeal. */
	icmp4(8, "10.1.0.10", "10.1.0.1", 8, 5);
	put16(frame + 14 + 6, 0x2000);
	put16(frame + 14 + 10, 0);
	put16(frame + 14 + 10, ref_csum(frame + 14, 20, 0));
	CHECK(run(60, sizeof(reply)) == NDP_NOT_NDP);
	/* A port without IPv4. */
	{
		struct ndp_port_config c = cfg;

		c.has_gateway4 = false;
		c.n_vm_ip4 = 0;
		icmp4(8, "10.1.0.10", "10.1.0.1", 8, 5);
		CHECK(ndp_handle(&c, &st, 0, frame, 60, reply, sizeof(reply), &reply_len) ==
		      NDP_NOT_NDP);
	}
}

static void test_malformed(void)
{
	char router[64];
	size_t len;

	inet_ntop(AF_INET6, ROUTER_LL, router, sizeof(router));
	len = icmp4(8, "10.1.0.10", "10.1.0.1", 8, 5);
	frame[14 + 10] ^= 1;
	CHECK(run(len, sizeof(reply)) == NDP_DROP_CHECKSUM);
	len = icmp4(8, "10.1.0.10", "10.1.0.1", 8, 5);
	frame[14 + 20 + 2] ^= 1;
	CHECK(run(len, sizeof(reply)) == NDP_DROP_CHECKSUM);
	len = icmp4(8, "10.1.0.10", "10.1.0.1", 8, 5);
	memcpy(frame + 6, OTHER_MAC, 6);
	CHECK(run(len, sizeof(reply)) == NDP_DROP_FOREIGN_MAC);
	/* A total length past the frame. */
	len = icmp4(8, "10.1.0.10", "10.1.0.1", 100, 5);
	CHECK(run(len - 1, sizeof(reply)) == NDP_DROP_LENGTH);
	/* Shorter than an echo header. */
	len = icmp4(8, "10.1.0.10", "10.1.0.1", 0, 5);
	put16(frame + 14 + 2, 24);
	put16(frame + 14 + 10, 0);
	put16(frame + 14 + 10, ref_csum(frame + 14, 20, 0));
	CHECK(run(len, sizeof(reply)) == NDP_DROP_SHORT);
	/* A code that is not 0, checksummed. */
	len = icmp4(8, "10.1.0.10", "10.1.0.1", 8, 5);
	frame[14 + 20 + 1] = 1;
	put16(frame + 14 + 22, 0);
	put16(frame + 14 + 22, ref_csum(frame + 14 + 20, 16, 0));
	CHECK(run(len, sizeof(reply)) == NDP_DROP_CODE);
	/* From 0.0.0.0 and from multicast: nobody to answer. */
	CHECK(run(icmp4(8, "0.0.0.0", "10.1.0.1", 8, 5), sizeof(reply)) == NDP_DROP_BAD_SOURCE);
	CHECK(run(icmp4(8, "224.0.0.1", "10.1.0.1", 8, 5), sizeof(reply)) ==
	      NDP_DROP_BAD_SOURCE);

	len = echo6("fe80::5054:ff:fe12:3456", router, 8);
	frame[F_ICMP + 9] ^= 1;
	CHECK(run(len, sizeof(reply)) == NDP_DROP_CHECKSUM);
	len = echo6("fe80::5054:ff:fe12:3456", router, 8);
	CHECK(run(len + 2, sizeof(reply)) == NDP_DROP_LENGTH);
	len = echo6("::", router, 8);
	CHECK(run(len, sizeof(reply)) == NDP_DROP_BAD_SOURCE);
	len = echo6("fe80::5054:ff:fe12:3456", router, 8);
	memcpy(frame + 6, OTHER_MAC, 6);
	CHECK(run(len, sizeof(reply)) == NDP_DROP_FOREIGN_MAC);
}

/* The reply fits the caller's buffer or is not built. */
static void test_no_room(void)
{
	size_t len = icmp4(8, "10.1.0.10", "10.1.0.1", 100, 5);

	CHECK(run(len, 14 + 28 + 99) == NDP_DROP_NO_ROOM);
	CHECK(run(len, 14 + 28 + 100) == NDP_REPLY);
}

int main(void)
{
	test_config(&cfg);
	test_ipv4();
	test_ipv6();
	test_routed();
	test_malformed();
	test_no_room();
	CHECK(atomic_load(&st.stats.tx_echo_reply) == 4 + 1 + 3 + 1 + 1);
	printf("test_ndp_echo: ok\n");
	return 0;
}
