/* ARP from the VM: requests for the gateway or any off-port IPv4 address
 * are answered with the router's MAC (every byte of the reply checked);
 * probes, announcements, replies and requests for the VM's own addresses
 * are not; malformed packets are dropped, each for its reason. */
#include "frames.h"

static struct ndp_port_config cfg;
static struct ndp_port_state st;
static uint8_t frame[F_MAX], reply[F_MAX];
static size_t reply_len;

static enum ndp_verdict run_cfg(const struct ndp_port_config *c, const struct arp *a)
{
	size_t len = arp_build(a, frame);
	enum ndp_verdict v;

	memset(reply, 0xa5, sizeof(reply));
	v = ndp_handle(c, &st, 0, frame, len, reply, sizeof(reply), &reply_len);
	CHECK((v == NDP_REPLY) == (reply_len != 0));
	return v;
}

static enum ndp_verdict run(const struct arp *a)
{
	return run_cfg(&cfg, a);
}

/* The reply to a request from spa for tpa, byte by byte. */
static void check_reply(const char *spa, const char *tpa)
{
	uint8_t want[60] = {
		/* Ethernet */
		0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x02, 0x77, 0x65, 0x66, 0x74, 0x01, 0x08, 0x06,
		/* Ethernet/IPv4, 6/4, reply */
		0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x02,
		/* sender: the router's MAC, the asked-for address */
		0x02, 0x77, 0x65, 0x66, 0x74, 0x01, 0, 0, 0, 0,
		/* target: the VM */
		0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0, 0, 0, 0,
		/* padding to 60: zeros */
	};

	memcpy(want + 28, ip4(tpa).b, 4);
	memcpy(want + 38, ip4(spa).b, 4);
	CHECK(reply_len == 60);
	CHECK(!memcmp(reply, want, sizeof(want)));
	CHECK(reply[60] == 0xa5);
}

static void test_answered(void)
{
	static const char *const targets[] = {
		"10.1.0.1",        /* the gateway */
		"10.1.0.77",       /* another VM on the same subnet */
		"192.168.7.1",
		"8.8.8.8",
		"169.254.169.254", /* metadata services */
		"223.255.255.254",
	};
	struct arp a;

	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		a = arp_request("10.1.0.10", targets[i]);
		CHECK(run(&a) == NDP_REPLY);
		check_reply("10.1.0.10", targets[i]);
	}
	/* From the VM's other address; and an unpadded request. */
	a = arp_request("192.168.7.10", "192.168.7.1");
	CHECK(run(&a) == NDP_REPLY);
	check_reply("192.168.7.10", "192.168.7.1");
	a = arp_request("10.1.0.10", "10.1.0.1");
	a.len = 42;
	CHECK(run(&a) == NDP_REPLY);
	check_reply("10.1.0.10", "10.1.0.1");
	CHECK(atomic_load(&st.stats.tx_arp_reply) == 8);
}

static void test_not_answered(void)
{
	struct ndp_port_config c = cfg;
	struct arp a;

	/* The VM's own addresses, asked by the VM. */
	a = arp_request("192.168.7.10", "10.1.0.10");
	CHECK(run(&a) == NDP_CONSUMED);
	a = arp_request("10.1.0.10", "192.168.7.10");
	CHECK(run(&a) == NDP_CONSUMED);
	CHECK(atomic_load(&st.stats.arp_own) == 2);

	/* RFC 5227 probes: whatever the address, no answer. */
	a = arp_request("0.0.0.0", "10.1.0.10");
	CHECK(run(&a) == NDP_CONSUMED);
	a = arp_request("0.0.0.0", "10.1.0.50");
	CHECK(run(&a) == NDP_CONSUMED);
	a = arp_request("0.0.0.0", "10.1.0.1");
	CHECK(run(&a) == NDP_CONSUMED);
	CHECK(atomic_load(&st.stats.arp_probe) == 3);

	/* Announcements, as requests and as replies. */
	a = arp_request("10.1.0.10", "10.1.0.10");
	CHECK(run(&a) == NDP_CONSUMED);
	CHECK(atomic_load(&st.stats.arp_gratuitous) == 1);
	a.op = 2;
	CHECK(run(&a) == NDP_CONSUMED);
	CHECK(atomic_load(&st.stats.rx_arp_reply) == 1);

	/* A port without IPv4. */
	c.has_gateway4 = false;
	c.n_vm_ip4 = 0;
	CHECK(ndp_port_config_check(&c) == 0);
	a = arp_request("10.1.0.10", "10.1.0.1");
	CHECK(run_cfg(&c, &a) == NDP_CONSUMED);
	CHECK(atomic_load(&st.stats.arp_no_ipv4) == 1);
}

static void test_malformed(void)
{
	static const struct {
		const char *name;
		int field; /* which change, below */
		unsigned int value;
		enum ndp_verdict want;
	} cases[] = {
		{ "41 bytes", 0, 41, NDP_DROP_ARP_TRUNCATED },
		{ "14 bytes", 0, 14, NDP_DROP_ARP_TRUNCATED },
		{ "hardware type 6", 1, 6, NDP_DROP_ARP_FORMAT },
		{ "protocol IPv6", 2, 0x86dd, NDP_DROP_ARP_FORMAT },
		{ "hardware length 8", 3, 8, NDP_DROP_ARP_FORMAT },
		{ "protocol length 16", 4, 16, NDP_DROP_ARP_FORMAT },
		{ "RARP request", 5, 3, NDP_DROP_ARP_OP },
		{ "InARP request", 5, 8, NDP_DROP_ARP_OP },
		{ "op 0", 5, 0, NDP_DROP_ARP_OP },
		{ "sender MAC not the source", 6, 0, NDP_DROP_ARP_SENDER_MAC },
		{ "from another MAC", 7, 0, NDP_DROP_FOREIGN_MAC },
		{ "target 0.0.0.0", 8, 0x00000000, NDP_DROP_ARP_TARGET },
		{ "target 0.1.2.3", 8, 0x00010203, NDP_DROP_ARP_TARGET },
		{ "target loopback", 8, 0x7f000001, NDP_DROP_ARP_TARGET },
		{ "target multicast", 8, 0xe0000001, NDP_DROP_ARP_TARGET },
		{ "target class E", 8, 0xf0000001, NDP_DROP_ARP_TARGET },
		{ "target broadcast", 8, 0xffffffff, NDP_DROP_ARP_TARGET },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct arp a = arp_request("10.1.0.10", "10.1.0.1");
		struct ndp_port_state fresh = { 0 };
		size_t len;
		enum ndp_verdict v;

		switch (cases[i].field) {
		case 0: a.len = cases[i].value; break;
		case 1: a.htype = (uint16_t)cases[i].value; break;
		case 2: a.ptype = (uint16_t)cases[i].value; break;
		case 3: a.hlen = (uint8_t)cases[i].value; break;
		case 4: a.plen = (uint8_t)cases[i].value; break;
		case 5: a.op = (uint16_t)cases[i].value; break;
		case 6: memcpy(a.sha, OTHER_MAC, 6); break;
		case 7: memcpy(a.eth_src, OTHER_MAC, 6); memcpy(a.sha, OTHER_MAC, 6); break;
		case 8: put32(a.tpa.b, cases[i].value); break;
		}
		len = arp_build(&a, frame);
		v = ndp_handle(&cfg, &fresh, 0, frame, len, reply, sizeof(reply), &reply_len);
		if (v != cases[i].want)
			fprintf(stderr, "%s: got %s\n", cases[i].name, ndp_verdict_name(v));
		CHECK(v == cases[i].want);
		CHECK(reply_len == 0);
		CHECK(atomic_load(&fresh.stats.verdicts[v]) == 1);
	}

	/* Tagged ARP is not this module's. */
	struct arp a = arp_request("10.1.0.10", "10.1.0.1");
	size_t len = arp_build(&a, frame);

	put16(frame + 12, 0x8100);
	CHECK(ndp_handle(&cfg, &st, 0, frame, len, reply, sizeof(reply), &reply_len) ==
	      NDP_NOT_NDP);
}

static void test_no_room(void)
{
	struct arp a = arp_request("10.1.0.10", "10.1.0.1");
	size_t len = arp_build(&a, frame);

	CHECK(ndp_handle(&cfg, &st, 0, frame, len, reply, 59, &reply_len) == NDP_DROP_NO_ROOM);
	CHECK(ndp_handle(&cfg, &st, 0, frame, len, reply, 60, &reply_len) == NDP_REPLY);
}

static void test_config_checks(void)
{
	struct ndp_port_config c = cfg;

	c.gateway4[0] = 0;
	CHECK(ndp_port_config_check(&c) == -EINVAL);
	c = cfg;
	memcpy(c.gateway4, c.vm_ip4[1], 4);
	CHECK(ndp_port_config_check(&c) == -EINVAL);
	c = cfg;
	memcpy(c.vm_ip4[0], ip4("224.0.0.5").b, 4);
	CHECK(ndp_port_config_check(&c) == -EINVAL);
	c = cfg;
	c.n_vm_ip4 = NDP_MAX_ADDRS + 1;
	CHECK(ndp_port_config_check(&c) == -EINVAL);
	c = cfg;
	c.has_gateway4 = false;
	c.gateway4[0] = 0; /* ignored without a gateway */
	CHECK(ndp_port_config_check(&c) == 0);
}

int main(void)
{
	test_config(&cfg);
	test_answered();
	test_not_answered();
	test_malformed();
	test_no_room();
	test_config_checks();
	printf("test_ndp_arp: ok\n");
	return 0;
}
