/* Router solicitations: the RA that answers them, field by field and option
 * by option, where it is sent, and the per-port rate limit driven by a fake
 * clock. Also ndp_build_ra, the unsolicited RA of the same content. */
#include "frames.h"

static struct ndp_port_config cfg;
static uint8_t frame[F_MAX], reply[F_MAX];
static size_t reply_len;

static enum ndp_verdict rs(const struct ndp_port_config *c, struct ndp_port_state *st,
			   uint64_t now, const char *src, bool slla, size_t cap)
{
	struct nd m = nd_base(133, src, "ff02::2");
	size_t len;

	if (slla)
		nd_opt(&m, 1, 1, VM_MAC);
	len = nd_build(&m, frame);
	return ndp_handle(c, st, now, frame, len, reply, cap, &reply_len);
}

/* The RA in reply[0..reply_len) against c: header fields, then exactly the
 * options c calls for, in order, with nothing after them. */
static void check_ra(const struct ndp_port_config *c, const uint8_t *dst)
{
	size_t n, off = 16;
	const uint8_t *ra = check_nd_reply(reply, reply_len, ROUTER_LL, dst, &n);

	CHECK(ra[0] == 134);
	CHECK(ra[4] == c->hop_limit);
	CHECK(ra[5] == 0); /* M=0, O=0, preference medium */
	CHECK(get16(ra + 6) == c->router_lifetime_s);
	CHECK(get32(ra + 8) == 0);  /* reachable time: unspecified */
	CHECK(get32(ra + 12) == 0); /* retrans timer: unspecified */

	CHECK(n >= off + 8);
	CHECK(ra[off] == 1 && ra[off + 1] == 1);
	CHECK(!memcmp(ra + off + 2, ROUTER_MAC, 6));
	off += 8;
	if (c->mtu) {
		CHECK(n >= off + 8);
		CHECK(ra[off] == 5 && ra[off + 1] == 1);
		CHECK(get16(ra + off + 2) == 0);
		CHECK(get32(ra + off + 4) == c->mtu);
		off += 8;
	}
	for (size_t i = 0; i < c->n_prefixes; i++) {
		const struct ndp_prefix *p = &c->prefixes[i];
		static const uint8_t zero4[4];

		CHECK(n >= off + 32);
		CHECK(ra[off] == 3 && ra[off + 1] == 4);
		CHECK(ra[off + 2] == p->len);
		CHECK(ra[off + 3] == ((p->on_link ? 0x80 : 0) | (p->autonomous ? 0x40 : 0)));
		CHECK(get32(ra + off + 4) == p->valid_lifetime_s);
		CHECK(get32(ra + off + 8) == p->preferred_lifetime_s);
		CHECK(!memcmp(ra + off + 12, zero4, 4));
		CHECK(!memcmp(ra + off + 16, p->prefix, 16));
		off += 32;
	}
	CHECK(off == n);
}

static void test_contents(void)
{
	struct ndp_port_state st = { 0 };

	CHECK(rs(&cfg, &st, 0, "fe80::5054:ff:fe12:3456", true, sizeof(reply)) == NDP_REPLY);
	check_ra(&cfg, ip6("fe80::5054:ff:fe12:3456").b);
	CHECK(reply_len == 14 + 40 + 16 + 8 + 8 + 32);
	CHECK(atomic_load(&st.stats.tx_ra) == 1 && atomic_load(&st.stats.rx_rs) == 1);

	/* From ::, before the VM has an address: to all-nodes. */
	CHECK(rs(&cfg, &st, 5000, "::", false, sizeof(reply)) == NDP_REPLY);
	check_ra(&cfg, ip6("ff02::1").b);
}

static void test_variants(void)
{
	struct ndp_port_config c = cfg;
	struct ndp_port_state st = { 0 };
	uint64_t now = 0;

	/* No MTU option, not a default router, hop limit unspecified. */
	c.mtu = 0;
	c.router_lifetime_s = 0;
	c.hop_limit = 0;
	c.n_prefixes = 0;
	CHECK(ndp_port_config_check(&c) == 0);
	CHECK(rs(&c, &st, now, "fe80::5054:ff:fe12:3456", true, sizeof(reply)) == NDP_REPLY);
	check_ra(&c, ip6("fe80::5054:ff:fe12:3456").b);
	CHECK(reply_len == 14 + 40 + 16 + 8);

	/* Every prefix slot, every flag combination, infinite lifetimes. */
	c = cfg;
	c.router_lifetime_s = 65535;
	c.mtu = 9000;
	for (int i = 0; i < NDP_MAX_PREFIXES; i++) {
		struct ndp_prefix *p = &c.prefixes[i];
		char text[64];

		snprintf(text, sizeof(text), "2001:db8:%x::", 0x100 + i);
		memcpy(p->prefix, ip6(text).b, 16);
		p->len = (uint8_t)(48 + 8 * i);
		p->on_link = i & 1;
		p->autonomous = i & 2;
		p->valid_lifetime_s = i == 3 ? NDP_LIFETIME_INFINITE : 3600u * (uint32_t)(i + 1);
		p->preferred_lifetime_s = i == 3 ? NDP_LIFETIME_INFINITE : 1800u * (uint32_t)i;
	}
	c.n_prefixes = NDP_MAX_PREFIXES;
	CHECK(ndp_port_config_check(&c) == 0);
	now += 1000;
	CHECK(rs(&c, &st, now, "fe80::5054:ff:fe12:3456", false, sizeof(reply)) == NDP_REPLY);
	check_ra(&c, ip6("fe80::5054:ff:fe12:3456").b);
	CHECK(reply_len == NDP_REPLY_MAX);
}

static void test_rate_limit(void)
{
	struct ndp_port_config c = cfg;
	struct ndp_port_state st = { 0 };

	/* The default interval, one second. */
	CHECK(rs(&c, &st, 0, "fe80::5054:ff:fe12:3456", true, sizeof(reply)) == NDP_REPLY);
	CHECK(rs(&c, &st, 0, "fe80::5054:ff:fe12:3456", true, sizeof(reply)) == NDP_CONSUMED);
	CHECK(reply_len == 0);
	CHECK(rs(&c, &st, 999, "::", false, sizeof(reply)) == NDP_CONSUMED);
	CHECK(rs(&c, &st, 1000, "::", false, sizeof(reply)) == NDP_REPLY);
	CHECK(rs(&c, &st, 1500, "::", false, sizeof(reply)) == NDP_CONSUMED);
	CHECK(atomic_load(&st.stats.rs_ratelimited) == 3);
	CHECK(atomic_load(&st.stats.tx_ra) == 2);
	CHECK(atomic_load(&st.stats.verdicts[NDP_CONSUMED]) == 3);

	/* A configured interval, counted from the last RA sent, not from
	 * the last RS. */
	c.ra_interval_ms = 5000;
	memset(&st, 0, sizeof(st));
	CHECK(rs(&c, &st, 100000, "::", false, sizeof(reply)) == NDP_REPLY);
	for (uint64_t t = 100000; t < 105000; t += 700)
		CHECK(rs(&c, &st, t, "::", false, sizeof(reply)) == NDP_CONSUMED);
	CHECK(rs(&c, &st, 105000, "::", false, sizeof(reply)) == NDP_REPLY);
	CHECK(rs(&c, &st, 109999, "::", false, sizeof(reply)) == NDP_CONSUMED);
	CHECK(rs(&c, &st, 200000, "::", false, sizeof(reply)) == NDP_REPLY);

	/* A reply buffer too small is the caller's fault: it does not use
	 * up the VM's RA. */
	memset(&st, 0, sizeof(st));
	CHECK(rs(&c, &st, 7, "::", false, 100) == NDP_DROP_NO_ROOM);
	CHECK(rs(&c, &st, 7, "::", false, sizeof(reply)) == NDP_REPLY);
	CHECK(atomic_load(&st.stats.verdicts[NDP_DROP_NO_ROOM]) == 1);
}

static void test_build_ra(void)
{
	struct ndp_port_state st = { 0 };
	uint8_t ra[F_MAX];
	size_t len;

	/* The unsolicited RA is the solicited one sent to all-nodes. */
	CHECK(rs(&cfg, &st, 0, "::", false, sizeof(reply)) == NDP_REPLY);
	len = ndp_build_ra(&cfg, NULL, ra, sizeof(ra));
	CHECK(len == reply_len && !memcmp(ra, reply, len));
	check_ra(&cfg, ip6("ff02::1").b);

	len = ndp_build_ra(&cfg, ip6("fe80::5054:ff:fe12:3456").b, reply, sizeof(reply));
	reply_len = len;
	check_ra(&cfg, ip6("fe80::5054:ff:fe12:3456").b);

	CHECK(ndp_build_ra(&cfg, NULL, ra, len - 1) == 0);
	CHECK(ndp_build_ra(&cfg, NULL, ra, len) == len);
	/* Building takes nothing from the rate limit. */
	CHECK(atomic_load(&st.ra_next_ms) == NDP_RA_INTERVAL_DEFAULT_MS);
}

int main(void)
{
	test_config(&cfg);
	test_contents();
	test_variants();
	test_rate_limit();
	test_build_ra();
	printf("test_ndp_ra: ok\n");
	return 0;
}
