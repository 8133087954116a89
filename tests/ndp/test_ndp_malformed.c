/* Malformed and foreign frames: a table of inputs, each with the verdict it
 * must get (a drop reason, or "not ND" for what belongs to the router), and
 * two sweeps over a valid NS (every truncation, every single-bit flip). */
#include "frames.h"

#define VM_LL "fe80::5054:ff:fe12:3456"
#define RT_LL "fe80::77:65ff:fe66:7401"
#define RT_SNM "ff02::1:ff66:7401"

static struct nd ns(void)
{
	return nd_ns(VM_LL, RT_SNM, RT_LL, true);
}

static struct nd rs(void)
{
	struct nd m = nd_base(133, VM_LL, "ff02::2");

	nd_opt(&m, 1, 1, VM_MAC);
	return m;
}

static struct nd na(void)
{
	struct nd m = nd_base(136, VM_LL, "ff02::1");

	m.target = ip6("2001:db8:1::10");
	m.flags = 0x20;
	nd_opt(&m, 2, 1, VM_MAC);
	return m;
}

/* Each case: a valid message, then one thing wrong with it. */
static struct nd hop_254(void) { struct nd m = ns(); m.hop = 254; return m; }
static struct nd hop_1(void) { struct nd m = rs(); m.hop = 1; return m; }
static struct nd bad_csum_ns(void) { struct nd m = ns(); m.bad_csum = true; return m; }
static struct nd bad_csum_rs(void) { struct nd m = rs(); m.bad_csum = true; return m; }
static struct nd code_1(void) { struct nd m = ns(); m.code = 1; return m; }
static struct nd code_rs(void) { struct nd m = rs(); m.code = 255; return m; }
static struct nd ns_23(void) { struct nd m = ns(); m.icmp_len_override = 23; return m; }
static struct nd rs_7(void) { struct nd m = rs(); m.icmp_len_override = 7; return m; }
static struct nd na_20(void) { struct nd m = na(); m.icmp_len_override = 20; return m; }
static struct nd opt_zero(void) { struct nd m = ns(); nd_opt(&m, 14, 0, NULL); return m; }
static struct nd opt_zero_rs(void) { struct nd m = rs(); nd_opt(&m, 1, 0, NULL); return m; }
static struct nd opt_zero_na(void) { struct nd m = na(); nd_opt(&m, 3, 0, NULL); return m; }
static struct nd opt_long(void)
{
	/* An option that claims 16 bytes where 8 are left. */
	struct nd m = nd_ns(VM_LL, RT_SNM, RT_LL, false);

	nd_opt(&m, 14, 1, (const uint8_t *)"abcdef");
	m.opts[1] = 2;
	return m;
}
static struct nd opt_tail(void) { struct nd m = ns(); m.icmp_len_override = 24 + 8 + 1; return m; }
static struct nd slla_16(void)
{
	struct nd m = nd_ns(VM_LL, RT_SNM, RT_LL, false);
	uint8_t body[14] = { 0 };

	memcpy(body, VM_MAC, 6);
	nd_opt(&m, 1, 2, body);
	return m;
}
static struct nd tlla_16(void)
{
	struct nd m = nd_base(136, VM_LL, "ff02::1");
	uint8_t body[14] = { 0 };

	m.target = ip6("2001:db8:1::10");
	nd_opt(&m, 2, 2, body);
	return m;
}
static struct nd slla_rs_24(void)
{
	struct nd m = nd_base(133, VM_LL, "ff02::2");
	uint8_t body[22] = { 0 };

	nd_opt(&m, 1, 3, body);
	return m;
}
static struct nd dad_slla(void) { struct nd m = nd_ns("::", RT_SNM, RT_LL, true); return m; }
static struct nd dad_slla_other(void)
{
	return nd_ns("::", snm("2001:db8:1::10"), "2001:db8:1::10", true);
}
static struct nd dad_unicast(void) { return nd_ns("::", RT_LL, RT_LL, false); }
static struct nd dad_all_nodes(void) { return nd_ns("::", "ff02::1", "2001:db8:1::10", false); }
static struct nd rs_unspec_slla(void) { struct nd m = rs(); m.src = ip6("::"); return m; }
static struct nd target_mc(void) { return nd_ns(VM_LL, "ff02::1", "ff02::1", true); }
static struct nd target_snm(void) { return nd_ns(VM_LL, RT_SNM, RT_SNM, true); }
static struct nd target_zero(void) { return nd_ns(VM_LL, "ff02::1:ff00:0", "::", true); }
static struct nd target_lo(void) { return nd_ns(VM_LL, "ff02::1:ff00:1", "::1", true); }
static struct nd na_target_mc(void) { struct nd m = na(); m.target = ip6("ff02::2"); return m; }
static struct nd na_s_mcast(void) { struct nd m = na(); m.flags = 0x60; return m; }
static struct nd src_mc(void) { struct nd m = ns(); m.src = ip6("ff02::1"); return m; }
static struct nd src_mc_rs(void) { struct nd m = rs(); m.src = ip6("ff05::2"); return m; }
static struct nd foreign(void) { struct nd m = rs(); memcpy(m.eth_src, OTHER_MAC, 6); return m; }
static struct nd foreign_ns(void)
{
	struct nd m = ns();

	memcpy(m.eth_src, ROUTER_MAC, 6);
	return m;
}
static struct nd with_ext(struct nd m, uint8_t type, uint16_t frag_off)
{
	m.has_ext = true;
	m.ext = type;
	m.frag_off = frag_off;
	return m;
}
static struct nd ext_hbh(void) { return with_ext(ns(), 0, 0); }
static struct nd ext_dst(void) { return with_ext(ns(), 60, 0); }
static struct nd ext_rt(void) { return with_ext(na(), 43, 0); }
/* offset 0 with M=1; then offset 8 (in 8-byte units, bits 3..15). */
static struct nd frag_first(void) { return with_ext(ns(), 44, 1); }
static struct nd frag_later(void) { return with_ext(ns(), 44, 8 << 3); }
static struct nd len_plus(void) { struct nd m = ns(); m.payload_delta = 1; return m; }
static struct nd len_minus(void) { struct nd m = ns(); m.payload_delta = -8; return m; }
static struct nd len_zero(void) { struct nd m = rs(); m.payload_delta = -16; return m; }
static struct nd trailer(void) { struct nd m = ns(); m.trailer = 4; return m; }
static struct nd ra_vm(void)
{
	struct nd m = nd_base(134, VM_LL, "ff02::1");

	m.icmp_len_override = 16;
	return m;
}
static struct nd ra_short(void) { struct nd m = ra_vm(); m.icmp_len_override = 12; return m; }
static struct nd redirect(void)
{
	struct nd m = nd_base(137, VM_LL, RT_LL);

	m.icmp_len_override = 40;
	return m;
}
/* An echo request to an address that is not the router's (test_ndp_echo
 * has the router's own). */
static struct nd echo(void)
{
	struct nd m = nd_base(128, "2001:db8::7", "2001:db8:1::1");

	m.icmp_len_override = 16;
	return m;
}
static struct nd mld(void)
{
	/* An MLDv2 report behind hop-by-hop, as every VM sends at start. */
	struct nd m = nd_base(143, VM_LL, "ff02::16");

	m.has_ext = true;
	m.ext = 0;
	m.hop = 1;
	m.icmp_len_override = 28;
	return m;
}
static struct nd vlan(void) { struct nd m = ns(); m.ethertype = 0x8100; return m; }
static struct nd qinq(void) { struct nd m = ns(); m.ethertype = 0x88a8; return m; }
static struct nd ipv4(void) { struct nd m = ns(); m.ethertype = 0x0800; return m; }

struct bad_case {
	const char *name;
	struct nd (*make)(void);
	enum ndp_verdict want;
};

static const struct bad_case cases[] = {
	{ "hop limit 254", hop_254, NDP_DROP_HOP_LIMIT },
	{ "RS hop limit 1", hop_1, NDP_DROP_HOP_LIMIT },
	{ "NS checksum", bad_csum_ns, NDP_DROP_CHECKSUM },
	{ "RS checksum", bad_csum_rs, NDP_DROP_CHECKSUM },
	{ "NS code 1", code_1, NDP_DROP_CODE },
	{ "RS code 255", code_rs, NDP_DROP_CODE },
	{ "NS of 23 bytes", ns_23, NDP_DROP_SHORT },
	{ "RS of 7 bytes", rs_7, NDP_DROP_SHORT },
	{ "NA of 20 bytes", na_20, NDP_DROP_SHORT },
	{ "RA of 12 bytes", ra_short, NDP_DROP_SHORT },
	{ "NS option of length 0", opt_zero, NDP_DROP_OPT_ZERO_LEN },
	{ "RS option of length 0", opt_zero_rs, NDP_DROP_OPT_ZERO_LEN },
	{ "NA option of length 0", opt_zero_na, NDP_DROP_OPT_ZERO_LEN },
	{ "option past the end", opt_long, NDP_DROP_OPT_TRUNCATED },
	{ "one byte after the options", opt_tail, NDP_DROP_OPT_TRUNCATED },
	{ "NS SLLA of 16 bytes", slla_16, NDP_DROP_BAD_LLADDR },
	{ "NA TLLA of 16 bytes", tlla_16, NDP_DROP_BAD_LLADDR },
	{ "RS SLLA of 24 bytes", slla_rs_24, NDP_DROP_BAD_LLADDR },
	{ "DAD with SLLA (router)", dad_slla, NDP_DROP_UNSPEC_SLLA },
	{ "DAD with SLLA (own)", dad_slla_other, NDP_DROP_UNSPEC_SLLA },
	{ "RS from :: with SLLA", rs_unspec_slla, NDP_DROP_UNSPEC_SLLA },
	{ "NS from :: unicast", dad_unicast, NDP_DROP_UNSPEC_DST },
	{ "NS from :: to all-nodes", dad_all_nodes, NDP_DROP_UNSPEC_DST },
	{ "NS target ff02::1", target_mc, NDP_DROP_BAD_TARGET },
	{ "NS target solicited-node", target_snm, NDP_DROP_BAD_TARGET },
	{ "NS target ::", target_zero, NDP_DROP_BAD_TARGET },
	{ "NS target ::1", target_lo, NDP_DROP_BAD_TARGET },
	{ "NA target multicast", na_target_mc, NDP_DROP_BAD_TARGET },
	{ "NA S=1 to multicast", na_s_mcast, NDP_DROP_NA_SOLICITED_MCAST },
	{ "NS from multicast", src_mc, NDP_DROP_BAD_SOURCE },
	{ "RS from multicast", src_mc_rs, NDP_DROP_BAD_SOURCE },
	{ "RS from another MAC", foreign, NDP_DROP_FOREIGN_MAC },
	{ "NS from the router MAC", foreign_ns, NDP_DROP_FOREIGN_MAC },
	{ "NS behind hop-by-hop", ext_hbh, NDP_DROP_EXT_HEADERS },
	{ "NS behind destination options", ext_dst, NDP_DROP_EXT_HEADERS },
	{ "NA behind routing header", ext_rt, NDP_DROP_EXT_HEADERS },
	{ "NS in a first fragment", frag_first, NDP_DROP_EXT_HEADERS },
	{ "payload length + 1", len_plus, NDP_DROP_LENGTH },
	{ "payload length - 8", len_minus, NDP_DROP_LENGTH },
	{ "payload length 0", len_zero, NDP_DROP_LENGTH },
	{ "4 bytes after the packet", trailer, NDP_DROP_LENGTH },
	{ "RA from the VM", ra_vm, NDP_DROP_UNEXPECTED },
	{ "Redirect from the VM", redirect, NDP_DROP_UNEXPECTED },
	{ "later fragment", frag_later, NDP_NOT_NDP },
	{ "echo request to another host", echo, NDP_NOT_NDP },
	{ "MLD report", mld, NDP_NOT_NDP },
	{ "802.1Q tagged", vlan, NDP_NOT_NDP },
	{ "802.1ad tagged", qinq, NDP_NOT_NDP },
	{ "EtherType IPv4", ipv4, NDP_NOT_NDP },
};

static struct ndp_port_config cfg;
static uint8_t frame[F_MAX], reply[F_MAX];

static void test_table(void)
{
	struct ndp_port_state st = { 0 };
	size_t reply_len, n = sizeof(cases) / sizeof(cases[0]);

	for (size_t i = 0; i < n; i++) {
		struct nd m = cases[i].make();
		size_t len;
		enum ndp_verdict v;

		len = nd_build(&m, frame);
		v = ndp_handle(&cfg, &st, 0, frame, len, reply, sizeof(reply), &reply_len);
		if (v != cases[i].want)
			fprintf(stderr, "%s: got %s, want %s\n", cases[i].name,
				ndp_verdict_name(v), ndp_verdict_name(cases[i].want));
		CHECK(v == cases[i].want);
		CHECK(reply_len == 0);
	}
	/* Each counted once, under its reason. */
	for (int v = 0; v < NDP_VERDICT_COUNT; v++) {
		uint64_t want = 0;

		for (size_t i = 0; i < n; i++)
			want += cases[i].want == (enum ndp_verdict)v;
		CHECK(atomic_load(&st.stats.verdicts[v]) == want);
	}
}

static void test_short_frames(void)
{
	struct ndp_port_state st = { 0 };
	uint8_t tiny[NDP_ETH_HLEN + NDP_IP6_HLEN] = { 0 };
	size_t reply_len;

	CHECK(ndp_handle(&cfg, &st, 0, tiny, 0, reply, sizeof(reply), &reply_len) ==
	      NDP_DROP_RUNT);
	CHECK(ndp_handle(&cfg, &st, 0, tiny, 13, reply, sizeof(reply), &reply_len) ==
	      NDP_DROP_RUNT);
	/* An IPv6 header cut short, or not version 6: the router's to drop. */
	put16(tiny + 12, 0x86dd);
	tiny[14] = 0x60;
	tiny[20] = 58;
	CHECK(ndp_handle(&cfg, &st, 0, tiny, sizeof(tiny) - 1, reply, sizeof(reply),
			 &reply_len) == NDP_NOT_NDP);
	CHECK(ndp_handle(&cfg, &st, 0, tiny, sizeof(tiny), reply, sizeof(reply), &reply_len) ==
	      NDP_NOT_NDP);
	struct nd m = ns();
	size_t len = nd_build(&m, frame);

	frame[F_ETH] = 0x40;
	CHECK(ndp_handle(&cfg, &st, 0, frame, len, reply, sizeof(reply), &reply_len) ==
	      NDP_NOT_NDP);
}

/* Every prefix of a valid NS: nothing is answered, and nothing is read
 * past the end (ASan watches the exact-size copy). */
static void test_truncations(void)
{
	struct ndp_port_state st = { 0 };
	struct nd m = ns();
	size_t len = nd_build(&m, frame), reply_len;

	CHECK(ndp_handle(&cfg, &st, 0, frame, len, reply, sizeof(reply), &reply_len) ==
	      NDP_REPLY);
	for (size_t cut = 0; cut < len; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1);
		enum ndp_verdict v;

		CHECK(copy);
		memcpy(copy, frame, cut);
		v = ndp_handle(&cfg, &st, 0, copy, cut, reply, sizeof(reply), &reply_len);
		CHECK(cut < F_ETH ? v == NDP_DROP_RUNT
				  : cut <= F_ICMP ? v == NDP_NOT_NDP : v == NDP_DROP_LENGTH);
		free(copy);
	}
}

/* Every single-bit flip after the ICMPv6 type byte breaks the checksum,
 * which is checked before anything the flip could otherwise trip. */
static void test_bit_flips(void)
{
	struct ndp_port_state st = { 0 };
	struct nd m = ns();
	size_t len = nd_build(&m, frame), reply_len;

	for (size_t i = F_ICMP + 1; i < len; i++) {
		for (int bit = 0; bit < 8; bit++) {
			frame[i] ^= (uint8_t)(1 << bit);
			CHECK(ndp_handle(&cfg, &st, 0, frame, len, reply, sizeof(reply),
					 &reply_len) == NDP_DROP_CHECKSUM);
			frame[i] ^= (uint8_t)(1 << bit);
		}
	}
	/* So do flips of the addresses, in the pseudo-header, unless the
	 * source becomes multicast-looking: still a checksum failure. */
	for (size_t i = F_ETH + 8; i < F_ICMP; i++) {
		frame[i] ^= 0x10;
		CHECK(ndp_handle(&cfg, &st, 0, frame, len, reply, sizeof(reply), &reply_len) ==
		      NDP_DROP_CHECKSUM);
		frame[i] ^= 0x10;
	}
}

int main(void)
{
	test_config(&cfg);
	test_table();
	test_short_frames();
	test_truncations();
	test_bit_flips();
	printf("test_ndp_malformed: ok\n");
	return 0;
}
