/* Neighbour solicitations from the VM: which get an NA and which do not,
 * and every byte of the NAs. The router answers for itself and for every
 * off-port address (proxy), never for the VM's own addresses, and never
 * answers a DAD probe except one for its own address. */
#include "frames.h"

static struct ndp_port_config cfg;
static struct ndp_port_state st;
static uint8_t frame[F_MAX], reply[F_MAX];
static size_t reply_len;

static enum ndp_verdict run(const struct nd *m)
{
	size_t len = nd_build(m, frame);
	enum ndp_verdict v;

	memset(reply, 0xa5, sizeof(reply));
	v = ndp_handle(&cfg, &st, 0, frame, len, reply, sizeof(reply), &reply_len);
	if (v == NDP_REPLY) {
		CHECK(reply_len > 0 && reply_len <= sizeof(reply));
		/* nothing written past the reply */
		for (size_t i = reply_len; i < sizeof(reply); i++)
			CHECK(reply[i] == 0xa5);
	} else {
		CHECK(reply_len == 0);
	}
	return v;
}

/* The NA in reply: to dst, for target, with exactly flags, and the router
 * MAC as its only option; from the router's address when it is the target,
 * else (a proxy's answer) from the target itself. */
static void check_na(const uint8_t *dst, const uint8_t *target, uint8_t flags)
{
	const uint8_t *src = memcmp(target, ROUTER_LL, 16) ? target : ROUTER_LL;
	size_t n;
	const uint8_t *na = check_nd_reply(reply, reply_len, src, dst, &n);
	static const uint8_t zero3[3];

	CHECK(n == 32);
	CHECK(na[0] == 136);
	CHECK(na[4] == flags);
	CHECK(!memcmp(na + 5, zero3, 3));
	CHECK(!memcmp(na + 8, target, 16));
	CHECK(na[24] == 2 && na[25] == 1); /* target link-layer address */
	CHECK(!memcmp(na + 26, ROUTER_MAC, 6));
}

enum { R = 0x80, S = 0x40, O = 0x20 };

static void test_router_address(void)
{
	struct nd m = nd_ns("fe80::5054:ff:fe12:3456", snm("fe80::77:65ff:fe66:7401"),
			    "fe80::77:65ff:fe66:7401", true);

	CHECK(run(&m) == NDP_REPLY);
	check_na(m.src.b, ROUTER_LL, R | S | O);
	CHECK(reply_len == 14 + 40 + 32);

	/* Unreachability detection: unicast, no source link-layer option. */
	m = nd_ns("fe80::5054:ff:fe12:3456", "fe80::77:65ff:fe66:7401",
		  "fe80::77:65ff:fe66:7401", false);
	CHECK(run(&m) == NDP_REPLY);
	check_na(m.src.b, ROUTER_LL, R | S | O);

	/* From one of the VM's global addresses: answered there. */
	m = nd_ns("2001:db8:1::10", "fe80::77:65ff:fe66:7401", "fe80::77:65ff:fe66:7401", true);
	CHECK(run(&m) == NDP_REPLY);
	check_na(ip6("2001:db8:1::10").b, ROUTER_LL, R | S | O);

	/* Unknown options (a nonce, RFC 3971 type 14) are skipped. */
	m = nd_ns("fe80::5054:ff:fe12:3456", snm("fe80::77:65ff:fe66:7401"),
		  "fe80::77:65ff:fe66:7401", true);
	nd_opt(&m, 14, 1, (const uint8_t *)"nonce!");
	CHECK(run(&m) == NDP_REPLY);
	check_na(m.src.b, ROUTER_LL, R | S | O);
	CHECK(atomic_load(&st.stats.tx_na_router) == 4);
}

static void test_proxy(void)
{
	static const char *const targets[] = {
		"2001:db8:1::20",    /* on the advertised prefix, another VM */
		"2001:db8:1::1",     /* what a VM may take for a gateway */
		"2001:db8:99::1",    /* elsewhere entirely */
		"fd00:1::11",        /* next to a registered ULA */
		"2606:4700::1111",
	};
	uint64_t before = atomic_load(&st.stats.tx_na_proxy);

	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		struct nd m = nd_ns("fe80::5054:ff:fe12:3456", snm(targets[i]), targets[i], true);

		CHECK(run(&m) == NDP_REPLY);
		/* O=0: a proxy must not override (RFC 4861 §7.2.4). */
		check_na(m.src.b, ip6(targets[i]).b, R | S);

		m = nd_ns("2001:db8:1::10", targets[i], targets[i], false);
		CHECK(run(&m) == NDP_REPLY);
		check_na(m.src.b, ip6(targets[i]).b, R | S);
	}
	CHECK(atomic_load(&st.stats.tx_na_proxy) == before + 10);
}

static void test_not_answered(void)
{
	/* The VM's own addresses, whoever asks and however. */
	struct nd m = nd_ns("fe80::5054:ff:fe12:3456", snm("2001:db8:1::10"), "2001:db8:1::10",
			    true);
	uint64_t own = atomic_load(&st.stats.ns_own);

	CHECK(run(&m) == NDP_CONSUMED);
	m = nd_ns("2001:db8:1::10", "fd00:1::10", "fd00:1::10", false);
	CHECK(run(&m) == NDP_CONSUMED);
	CHECK(atomic_load(&st.stats.ns_own) == own + 2);

	/* Link-local addresses other than the router's have no owner. */
	m = nd_ns("fe80::5054:ff:fe12:3456", snm("fe80::1"), "fe80::1", true);
	CHECK(run(&m) == NDP_CONSUMED);
	CHECK(atomic_load(&st.stats.ns_link_local) == 1);
}

static void test_dad(void)
{
	/* Whatever address the VM probes, the probe is not answered: its
	 * registered ones, SLAAC and privacy addresses from the prefix,
	 * its link-local one, anything. */
	static const char *const targets[] = {
		"2001:db8:1::10", "fd00:1::10", "2001:db8:1:0:5054:ff:fe12:3456",
		"2001:db8:1:0:1234:5678:9abc:def0", "fe80::5054:ff:fe12:3456",
		"2001:db8:99::1", "fe80::1",
	};
	uint64_t before = atomic_load(&st.stats.ns_dad);

	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		struct nd m = nd_ns("::", snm(targets[i]), targets[i], false);

		CHECK(run(&m) == NDP_CONSUMED);
	}
	CHECK(atomic_load(&st.stats.ns_dad) == before + 7);

	/* Except a probe for the router's own address, which it defends:
	 * to all-nodes, S=0, O=1 (RFC 4861 §7.2.4). */
	struct nd m = nd_ns("::", snm("fe80::77:65ff:fe66:7401"), "fe80::77:65ff:fe66:7401",
			    false);

	CHECK(run(&m) == NDP_REPLY);
	check_na(ip6("ff02::1").b, ROUTER_LL, R | O);
	CHECK(atomic_load(&st.stats.tx_na_defend) == 1);
}

static void test_configured_link_local(void)
{
	struct ndp_port_config c = cfg;
	struct nd m = nd_ns("fe80::5054:ff:fe12:3456", snm("fe80::1"), "fe80::1", true);
	size_t len = nd_build(&m, frame);
	uint8_t ll[16];

	memcpy(c.router_ll, ip6("fe80::1").b, 16);
	CHECK(ndp_port_config_check(&c) == 0);
	ndp_router_link_local(&c, ll);
	CHECK(!memcmp(ll, ip6("fe80::1").b, 16));
	CHECK(ndp_handle(&c, &st, 0, frame, len, reply, sizeof(reply), &reply_len) == NDP_REPLY);
	CHECK(reply_len == 86);
	CHECK(!memcmp(reply + 22, ip6("fe80::1").b, 16)); /* source */
	CHECK(!memcmp(reply + 38, m.src.b, 16));
	CHECK(!memcmp(reply + F_ICMP + 8, ip6("fe80::1").b, 16));
	CHECK(reply[F_ICMP + 4] == (R | S | O));
	CHECK(ref_icmp6_csum(reply + 22, reply + 38, reply + F_ICMP, 32) == 0);

	/* The EUI-64 address is now just another link-local: not answered. */
	m = nd_ns("fe80::5054:ff:fe12:3456", snm("fe80::77:65ff:fe66:7401"),
		  "fe80::77:65ff:fe66:7401", true);
	len = nd_build(&m, frame);
	CHECK(ndp_handle(&c, &st, 0, frame, len, reply, sizeof(reply), &reply_len) ==
	      NDP_CONSUMED);
}

static void test_na_from_vm(void)
{
	struct nd m = nd_base(136, "fe80::5054:ff:fe12:3456", "ff02::1");
	uint64_t before = atomic_load(&st.stats.rx_na);

	/* Unsolicited, after a MAC change or at start. */
	m.flags = O;
	m.target = ip6("2001:db8:1::10");
	nd_opt(&m, 2, 1, VM_MAC);
	CHECK(run(&m) == NDP_CONSUMED);

	/* Solicited, unicast to the router. */
	m = nd_base(136, "fe80::5054:ff:fe12:3456", "fe80::77:65ff:fe66:7401");
	m.flags = S | O;
	m.target = ip6("fe80::5054:ff:fe12:3456");
	CHECK(run(&m) == NDP_CONSUMED);

	/* Claiming the router's address is noted, not believed. */
	m = nd_base(136, "fe80::5054:ff:fe12:3456", "ff02::1");
	m.flags = O;
	m.target = ip6("fe80::77:65ff:fe66:7401");
	CHECK(run(&m) == NDP_CONSUMED);
	CHECK(atomic_load(&st.stats.na_router_addr) == 1);
	CHECK(atomic_load(&st.stats.rx_na) == before + 3);
}

static void test_no_room(void)
{
	struct nd m = nd_ns("fe80::5054:ff:fe12:3456", snm("2001:db8:1::20"), "2001:db8:1::20",
			    true);
	size_t len = nd_build(&m, frame);

	memset(reply, 0xa5, sizeof(reply));
	CHECK(ndp_handle(&cfg, &st, 0, frame, len, reply, 85, &reply_len) == NDP_DROP_NO_ROOM);
	CHECK(reply_len == 0);
	for (size_t i = 0; i < sizeof(reply); i++)
		CHECK(reply[i] == 0xa5);
	CHECK(ndp_handle(&cfg, &st, 0, frame, len, reply, 86, &reply_len) == NDP_REPLY);
	CHECK(reply_len == 86);
	CHECK(reply[86] == 0xa5);
}

int main(void)
{
	uint64_t total = 0;

	test_config(&cfg);
	test_router_address();
	test_proxy();
	test_not_answered();
	test_dad();
	test_configured_link_local();
	test_na_from_vm();
	test_no_room();

	/* Every call was counted under exactly one verdict. */
	for (int v = 0; v < NDP_VERDICT_COUNT; v++)
		total += verdicts(&st, v);
	CHECK(total == atomic_load(&st.stats.rx_ns) + atomic_load(&st.stats.rx_na));
	CHECK(verdicts(&st, NDP_REPLY) ==
	      atomic_load(&st.stats.tx_na_router) + atomic_load(&st.stats.tx_na_proxy) +
		      atomic_load(&st.stats.tx_na_defend));
	CHECK(verdicts(&st, NDP_DROP_NO_ROOM) == 1);
	printf("test_ndp_ns: ok\n");
	return 0;
}
