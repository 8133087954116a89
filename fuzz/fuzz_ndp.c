/* libFuzzer target for ndp_handle, the function the VM port workers call
 * with every frame a VM sends. Beyond "no crash, no out-of-bounds access"
 * (the frame and the reply buffer are exact-size heap copies), every reply
 * (neighbour discovery, ARP, and the router's echo replies to ICMP and
 * ICMPv6 echo requests) is checked against a naive model of what may be
 * answered, re-parsed by
 * ndp_handle itself from the other side of the port, and the call is
 * repeated to check it is deterministic and that the RA rate limit holds.
 *
 * Input: a mode byte, then the frame.
 *   bit 0: the second port configuration (configured link-local, no IPv4,
 *          no MTU, no prefix) instead of the first (EUI-64 link-local,
 *          IPv4 gateway, four prefixes)
 *   bit 1: rewrite the IPv6 payload length to fit the frame
 *   bit 2: rewrite the ICMPv6 checksum (ICMPv6 right after the header)
 *   bit 3: a reply buffer of (the frame's first byte) bytes, not the full one
 *   bits 4-7: the clock, in seconds */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndp/ndp.h"

#define CHECK(cond)                                                                \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "fuzz_ndp: check failed at %s:%d: %s\n",  \
				__FILE__, __LINE__, #cond);                        \
			abort();                                                   \
		}                                                                  \
	} while (0)

enum { MODE_CFG_B = 1, MODE_FIX_LEN = 2, MODE_FIX_CSUM = 4, MODE_SMALL_REPLY = 8 };
enum { ETH = 14, ICMP = 54 };

static const uint8_t router_mac[6] = { 0x02, 0x77, 0x65, 0x66, 0x74, 0x01 };
static const uint8_t vm_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 1 };
static const uint8_t zero16[16];

/* cfgs[i] and its mirror, the same port seen from the VM's side: its
 * replies must be well-formed frames "from the VM" there. */
static struct ndp_port_config cfgs[2], mirrors[2];

static void set6(uint8_t *dst, const uint8_t *prefix8, uint8_t last)
{
	memset(dst, 0, 16);
	memcpy(dst, prefix8, 8);
	dst[15] = last;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const uint8_t doc[8] = { 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0 };
	static const uint8_t ll[8] = { 0xfe, 0x80 };
	struct ndp_port_config *a = &cfgs[0], *b = &cfgs[1];

	ndp_port_config_init(a);
	memcpy(a->router_mac, router_mac, 6);
	memcpy(a->vm_mac, vm_mac, 6);
	set6(a->vm_ip6[0], doc, 0x10);
	set6(a->vm_ip6[1], doc, 0x11);
	a->n_vm_ip6 = 2;
	a->has_gateway4 = true;
	memcpy(a->gateway4, (uint8_t[]){ 10, 1, 0, 1 }, 4);
	memcpy(a->vm_ip4[0], (uint8_t[]){ 10, 1, 0, 10 }, 4);
	a->n_vm_ip4 = 1;
	a->mtu = 1420;
	for (int i = 0; i < NDP_MAX_PREFIXES; i++) {
		struct ndp_prefix *p = &a->prefixes[i];

		set6(p->prefix, doc, 0);
		p->prefix[5] = (uint8_t)(i + 1);
		p->len = 64;
		p->on_link = i & 1;
		p->autonomous = i & 2;
		p->valid_lifetime_s = 7200;
		p->preferred_lifetime_s = 3600;
	}
	a->n_prefixes = NDP_MAX_PREFIXES;
	CHECK(ndp_port_config_check(a) == 0);

	*b = *a;
	set6(b->router_ll, ll, 1);
	b->has_gateway4 = false;
	b->n_vm_ip4 = 0;
	b->n_vm_ip6 = 1;
	b->mtu = 0;
	b->n_prefixes = 0;
	b->ra_interval_ms = 3000;
	CHECK(ndp_port_config_check(b) == 0);

	for (int i = 0; i < 2; i++) {
		mirrors[i] = cfgs[i];
		memcpy(mirrors[i].vm_mac, router_mac, 6);
		memcpy(mirrors[i].router_mac, vm_mac, 6);
	}
	return 0;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* The ICMPv6 checksum, summed naively (0 over a correct message). */
static uint16_t csum6(const uint8_t *ip, const uint8_t *msg, size_t len)
{
	uint64_t sum = len + 58;

	for (int i = 8; i < 40; i += 2)
		sum += get16(ip + i);
	for (size_t i = 0; i < len; i += 2)
		sum += (uint64_t)msg[i] << 8 | (i + 1 < len ? msg[i + 1] : 0);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static bool owns6(const struct ndp_port_config *c, const uint8_t *a)
{
	for (size_t i = 0; i < c->n_vm_ip6; i++)
		if (!memcmp(c->vm_ip6[i], a, 16))
			return true;
	return false;
}

static bool owns4(const struct ndp_port_config *c, const uint8_t *a)
{
	for (size_t i = 0; i < c->n_vm_ip4; i++)
		if (!memcmp(c->vm_ip4[i], a, 4))
			return true;
	return false;
}

/* The Internet checksum, summed naively from sum (0 over a correct block). */
static uint16_t csum(const uint8_t *p, size_t len, uint64_t sum)
{
	for (size_t i = 0; i < len; i += 2)
		sum += (uint64_t)p[i] << 8 | (i + 1 < len ? p[i + 1] : 0);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* An echo request to the gateway, whole and valid, gets the same message
 * back as an echo reply, from the gateway, behind a fresh IPv4 header. */
static void check_echo4(const struct ndp_port_config *c, const uint8_t *f, size_t len,
			const uint8_t *r, size_t rlen)
{
	const uint8_t *ip = f + ETH, *rip = r + ETH;
	size_t hlen = (size_t)(ip[0] & 15) * 4, total = get16(ip + 2);

	CHECK(c->has_gateway4 && len >= ETH + 20 && ip[0] >> 4 == 4 && hlen >= 20);
	CHECK(total >= hlen + 8 && ETH + total <= len);
	CHECK(ip[9] == 1 && !memcmp(ip + 16, c->gateway4, 4) && !(get16(ip + 6) & 0x3fff));
	CHECK(csum(ip, hlen, 0) == 0 && csum(ip + hlen, total - hlen, 0) == 0);
	CHECK(ip[hlen] == 8 && ip[hlen + 1] == 0);
	CHECK(ip[12] != 0 && ip[12] < 224);
	CHECK(rlen == ETH + 20 + total - hlen);
	CHECK(rip[0] == 0x45 && get16(rip + 2) == rlen - ETH && rip[8] == 64 && rip[9] == 1);
	CHECK(!memcmp(rip + 12, c->gateway4, 4) && !memcmp(rip + 16, ip + 12, 4));
	CHECK(csum(rip, 20, 0) == 0 && csum(rip + 20, rlen - ETH - 20, 0) == 0);
	CHECK(rip[20] == 0 && rip[21] == 0);
	CHECK(!memcmp(rip + 24, ip + hlen + 4, total - hlen - 4));
}

/* An echo request to the router's link-local address gets its message
 * back as an echo reply from that address. */
static void check_echo6(const uint8_t *f, size_t len, const uint8_t *r, size_t rlen,
			const uint8_t *ll)
{
	CHECK(get16(f + ETH + 4) == len - ICMP && len >= ICMP + 8);
	CHECK(!memcmp(f + ETH + 24, ll, 16));
	CHECK(f[ETH + 8] != 0xff && memcmp(f + ETH + 8, zero16, 16));
	CHECK(csum6(f + ETH, f + ICMP, len - ICMP) == 0 && f[ICMP + 1] == 0);
	CHECK(rlen == len && r[ETH] == 0x60 && get16(r + ETH + 4) == rlen - ICMP);
	CHECK(r[ETH + 6] == 58 && r[ETH + 7] == 64);
	CHECK(!memcmp(r + ETH + 8, ll, 16) && !memcmp(r + ETH + 24, f + ETH + 8, 16));
	CHECK(csum6(r + ETH, r + ICMP, rlen - ICMP) == 0);
	CHECK(r[ICMP] == 129 && r[ICMP + 1] == 0);
	CHECK(!memcmp(r + ICMP + 4, f + ICMP + 4, len - ICMP - 4));
}

/* What may be answered, and how, by a model written from docs/ndp.md. */
static void check_reply(const struct ndp_port_config *c, const uint8_t *f, size_t len,
			const uint8_t *r, size_t rlen)
{
	uint8_t ll[16];

	ndp_router_link_local(c, ll);
	CHECK(!memcmp(f + 6, vm_mac, 6)); /* only the VM is answered */
	CHECK(!memcmp(r, vm_mac, 6));
	CHECK(!memcmp(r + 6, router_mac, 6));
	CHECK(!memcmp(r + 12, f + 12, 2));
	if (get16(f + 12) == 0x0800) {
		check_echo4(c, f, len, r, rlen);
		return;
	}
	if (get16(f + 12) == 0x0806) {
		CHECK(c->has_gateway4 && len >= 42 && rlen == 60);
		CHECK(get16(f + 20) == 1);          /* a request */
		CHECK(memcmp(f + 28, zero16, 4));   /* not a probe */
		CHECK(memcmp(f + 28, f + 38, 4));   /* not an announcement */
		CHECK(!owns4(c, f + 38));
		CHECK(f[38] != 0 && f[38] != 127 && f[38] < 224);
		CHECK(get16(r + 20) == 2);
		CHECK(!memcmp(r + 22, router_mac, 6) && !memcmp(r + 32, vm_mac, 6));
		CHECK(!memcmp(r + 28, f + 38, 4) && !memcmp(r + 38, f + 28, 4));
		CHECK(!memcmp(r + 42, zero16, 16) && !r[58] && !r[59]);
		return;
	}
	if (get16(f + 12) == 0x86dd && len > ICMP && f[ETH + 6] == 58 && f[ICMP] == 128) {
		check_echo6(f, len, r, rlen, ll);
		return;
	}
	CHECK(get16(f + 12) == 0x86dd && f[ETH + 6] == 58 && f[ETH + 7] == 255);
	CHECK(get16(f + ETH + 4) == len - ICMP);
	CHECK(rlen >= ICMP + 8 && get16(r + ETH + 4) == rlen - ICMP);
	CHECK(r[ETH] == 0x60 && r[ETH + 6] == 58 && r[ETH + 7] == 255);
	/* From the router's link-local address, but a proxy NA, which comes
	 * from its target (checked below). */
	CHECK(!memcmp(r + ETH + 8, ll, 16) ||
	      (r[ICMP] == 136 && !memcmp(r + ETH + 8, r + ICMP + 8, 16)));
	CHECK(csum6(f + ETH, f + ICMP, len - ICMP) == 0);
	CHECK(csum6(r + ETH, r + ICMP, rlen - ICMP) == 0);
	CHECK(f[ICMP + 1] == 0 && r[ICMP + 1] == 0);
	bool unspec = !memcmp(f + ETH + 8, zero16, 16);
	const uint8_t *dst = r + ETH + 24;

	CHECK(!memcmp(dst, unspec ? all_nodes : f + ETH + 8, 16));
	if (f[ICMP] == 133) {
		CHECK(r[ICMP] == 134 && len >= ICMP + 8);
		CHECK(r[ICMP + 5] == 0 && get16(r + ICMP + 6) == c->router_lifetime_s);
		return;
	}
	CHECK(f[ICMP] == 135 && r[ICMP] == 136 && rlen == ICMP + 32 && len >= ICMP + 24);
	const uint8_t *target = f + ICMP + 8;
	bool router = !memcmp(target, ll, 16);

	CHECK(!memcmp(r + ICMP + 8, target, 16));
	CHECK(!memcmp(r + ETH + 8, router ? ll : target, 16));
	CHECK(!owns6(c, target));
	CHECK(target[0] != 0xff);
	/* DAD is answered only to defend the router's own address. */
	CHECK(!unspec || router);
	CHECK(router || !(target[0] == 0xfe && (target[1] & 0xc0) == 0x80));
	CHECK(r[ICMP + 4] == (0x80 | (unspec ? 0 : 0x40) | (router ? 0x20 : 0)));
	CHECK(r[ICMP + 24] == 2 && r[ICMP + 25] == 1 && !memcmp(r + ICMP + 26, router_mac, 6));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ndp_port_state st = { 0 }, st2 = { 0 };
	uint8_t mode, *frame, *reply, *reply2, *echo;
	size_t len, cap, rlen = 0, rlen2 = 0, elen = 0;
	const struct ndp_port_config *c;
	enum ndp_verdict v, v2;
	uint64_t now;

	if (!size)
		return 0;
	mode = data[0];
	len = size - 1;
	c = &cfgs[mode & MODE_CFG_B];
	now = (uint64_t)(mode >> 4) * 1000;
	/* As the workers give it: an echo reply is as long as its request. */
	cap = (mode & MODE_SMALL_REPLY) && len ? data[1] : len > NDP_REPLY_MAX ? len : NDP_REPLY_MAX;
	frame = malloc(len ? len : 1);
	reply = malloc(cap ? cap : 1);
	reply2 = malloc(cap ? cap : 1);
	echo = malloc(NDP_REPLY_MAX);
	CHECK(frame && reply && reply2 && echo);
	memcpy(frame, data + 1, len);
	if ((mode & MODE_FIX_LEN) && len >= ICMP)
		frame[ETH + 4] = (uint8_t)((len - ICMP) >> 8), frame[ETH + 5] = (uint8_t)(len - ICMP);
	if ((mode & MODE_FIX_CSUM) && len >= ICMP + 4 && frame[ETH + 6] == 58) {
		frame[ICMP + 2] = frame[ICMP + 3] = 0;
		uint16_t s = csum6(frame + ETH, frame + ICMP, len - ICMP);

		frame[ICMP + 2] = (uint8_t)(s >> 8);
		frame[ICMP + 3] = (uint8_t)s;
	}

	v = ndp_handle(c, &st, now, frame, len, reply, cap, &rlen);
	CHECK((unsigned int)v < NDP_VERDICT_COUNT);
	CHECK(atomic_load(&st.stats.verdicts[v]) == 1);
	CHECK(v == NDP_REPLY ? rlen > 0 && rlen <= cap : rlen == 0);
	if (v == NDP_REPLY)
		check_reply(c, frame, len, reply, rlen);

	/* The same again on a fresh port: the same answer, byte for byte. */
	v2 = ndp_handle(c, &st2, now, frame, len, reply2, cap, &rlen2);
	CHECK(v2 == v && rlen2 == rlen && !memcmp(reply, reply2, rlen));

	if (v == NDP_REPLY) {
		/* A second RS within the interval is not answered. */
		v2 = ndp_handle(c, &st, now, frame, len, reply2, cap, &rlen2);
		if (get16(frame + 12) == 0x86dd && frame[ICMP] == 133)
			CHECK(v2 == NDP_CONSUMED && atomic_load(&st.stats.rs_ratelimited) == 1);
		else
			CHECK(v2 == NDP_REPLY);

		/* Seen from the VM's side, the reply is valid: an NA or an
		 * ARP reply is taken, an RA gets as far as "routers do not
		 * take RAs from the VM", an echo reply is for routing. */
		bool echo_reply = get16(reply + 12) == 0x0800 ||
				  (get16(reply + 12) == 0x86dd && reply[ICMP] == 129);

		v2 = ndp_handle(&mirrors[mode & MODE_CFG_B], &st2, now, reply, rlen, echo,
				NDP_REPLY_MAX, &elen);
		CHECK(v2 == (echo_reply                                           ? NDP_NOT_NDP
			     : get16(reply + 12) == 0x86dd && reply[ICMP] == 134 ? NDP_DROP_UNEXPECTED
										  : NDP_CONSUMED));
	}
	free(frame);
	free(reply);
	free(reply2);
	free(echo);
	return 0;
}
