/* Port configuration: the EUI-64 link-local address against known answers,
 * the defaults, what ndp_port_config_check refuses, and the verdict names
 * the logs and metrics use. */
#include "frames.h"

static void test_eui64(void)
{
	static const struct {
		uint8_t mac[6];
		const char *ll;
	} known[] = {
		/* QEMU's default NIC, as every Linux guest shows it. */
		{ { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 }, "fe80::5054:ff:fe12:3456" },
		/* RFC 7042's documentation MAC: universal, so the bit goes on. */
		{ { 0x00, 0x00, 0x5e, 0x00, 0x53, 0x01 }, "fe80::200:5eff:fe00:5301" },
		{ { 0x02, 0x77, 0x65, 0x66, 0x74, 0x01 }, "fe80::77:65ff:fe66:7401" },
		{ { 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff }, "fe80::fcff:ffff:feff:ffff" },
	};
	struct ndp_port_config cfg;
	uint8_t out[16];

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		ndp_eui64_link_local(known[i].mac, out);
		CHECK(!memcmp(out, ip6(known[i].ll).b, 16));
	}
	test_config(&cfg);
	ndp_router_link_local(&cfg, out);
	CHECK(!memcmp(out, ROUTER_LL, 16));
}

static void test_defaults(void)
{
	struct ndp_port_config cfg;

	memset(&cfg, 0xee, sizeof(cfg));
	ndp_port_config_init(&cfg);
	CHECK(cfg.router_lifetime_s == 1800);
	CHECK(cfg.hop_limit == 64);
	CHECK(cfg.mtu == 1500);
	CHECK(cfg.ra_interval_ms == 0);
	CHECK(!cfg.has_gateway4 && !cfg.n_vm_ip6 && !cfg.n_vm_ip4 && !cfg.n_prefixes);
	/* Without MACs it is not usable yet. */
	CHECK(ndp_port_config_check(&cfg) == -EINVAL);
	memcpy(cfg.router_mac, ROUTER_MAC, 6);
	memcpy(cfg.vm_mac, VM_MAC, 6);
	CHECK(ndp_port_config_check(&cfg) == 0);
}

static void test_refused(void)
{
	struct ndp_port_config good, c;

	test_config(&good);
#define REFUSED(change)                                           \
	do {                                                      \
		c = good;                                         \
		change;                                           \
		CHECK(ndp_port_config_check(&c) == -EINVAL);      \
	} while (0)
	REFUSED(memset(c.router_mac, 0, 6));
	REFUSED(c.router_mac[0] |= 1);
	REFUSED(memset(c.vm_mac, 0, 6));
	REFUSED(memset(c.vm_mac, 0xff, 6));
	REFUSED(memcpy(c.vm_mac, c.router_mac, 6));
	REFUSED(memcpy(c.router_ll, ip6("2001:db8::1").b, 16));
	REFUSED(memcpy(c.router_ll, ip6("ff02::1").b, 16));
	REFUSED(c.n_vm_ip6 = NDP_MAX_ADDRS + 1);
	REFUSED(memset(c.vm_ip6[1], 0, 16));
	REFUSED(memcpy(c.vm_ip6[1], ip6("::1").b, 16));
	REFUSED(memcpy(c.vm_ip6[1], ip6("ff02::1:ff00:10").b, 16));
	REFUSED(memcpy(c.vm_ip6[1], ROUTER_LL, 16));
	REFUSED(c.mtu = 1279);
	REFUSED(c.n_prefixes = NDP_MAX_PREFIXES + 1);
	REFUSED(c.prefixes[0].len = 129);
	REFUSED(c.prefixes[0].len = 16); /* 2001:db8:1:: has bits past /16 */
	REFUSED(c.prefixes[0].preferred_lifetime_s = 86401);
	REFUSED(memcpy(c.prefixes[0].prefix, ip6("2001:db8:1::1").b, 16));
#undef REFUSED

	/* And their neighbours, which are fine. */
	c = good;
	c.mtu = 1280;
	c.prefixes[0].len = 48;
	c.prefixes[0].preferred_lifetime_s = 86400;
	memcpy(c.router_ll, ip6("fe80::1").b, 16);
	CHECK(ndp_port_config_check(&c) == 0);
	c.mtu = 0;
	c.prefixes[0].len = 128;
	memcpy(c.prefixes[0].prefix, ip6("2001:db8:1::1").b, 16);
	CHECK(ndp_port_config_check(&c) == 0);
	c.n_vm_ip6 = 0;
	c.n_prefixes = 0;
	CHECK(ndp_port_config_check(&c) == 0);
}

static void test_names(void)
{
	CHECK(!strcmp(ndp_verdict_name(NDP_NOT_NDP), "not_ndp"));
	CHECK(!strcmp(ndp_verdict_name(NDP_REPLY), "reply"));
	CHECK(!strcmp(ndp_verdict_name(NDP_CONSUMED), "consumed"));
	CHECK(!strcmp(ndp_verdict_name(NDP_DROP_HOP_LIMIT), "hop_limit"));
	CHECK(!strcmp(ndp_verdict_name(NDP_VERDICT_COUNT), "invalid"));
	CHECK(!strcmp(ndp_verdict_name((enum ndp_verdict)-1), "invalid"));
	for (int v = 0; v < NDP_VERDICT_COUNT; v++) {
		const char *name = ndp_verdict_name(v);

		CHECK(name && *name && strcmp(name, "invalid"));
		CHECK(ndp_verdict_is_drop(v) == (v > NDP_CONSUMED));
		for (int w = 0; w < v; w++)
			CHECK(strcmp(name, ndp_verdict_name(w)));
	}
	/* The largest reply: Ethernet, IPv6, RA, SLLA, MTU, four prefixes. */
	CHECK(NDP_REPLY_MAX == 14 + 40 + 16 + 8 + 8 + 4 * 32);
}

int main(void)
{
	test_eui64();
	test_defaults();
	test_refused();
	test_names();
	printf("test_ndp_config: ok\n");
	return 0;
}
