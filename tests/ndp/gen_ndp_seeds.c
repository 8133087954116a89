/* Writes the seed corpus of fuzz/fuzz_ndp.c (one file per seed: a mode
 * byte, then a frame) with the tests' frame builder. Not a test: run by
 * hand when the input format changes,
 *   build/tests/ndp/gen_ndp_seeds fuzz/corpus/fuzz_ndp */
#include "frames.h"

#define VM_LL "fe80::5054:ff:fe12:3456"
#define RT_LL "fe80::77:65ff:fe66:7401"

enum { CFG_B = 1, FIX_LEN = 2, FIX_CSUM = 4 };

static const char *dir;
static uint8_t frame[F_MAX];

static void put(const char *name, uint8_t mode, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	CHECK(f);
	CHECK(fwrite(&mode, 1, 1, f) == 1);
	CHECK(fwrite(frame, 1, len, f) == len);
	CHECK(fclose(f) == 0);
}

static void nd(const char *name, uint8_t mode, struct nd m)
{
	put(name, mode, nd_build(&m, frame));
}

static void arp(const char *name, uint8_t mode, struct arp a)
{
	put(name, mode, arp_build(&a, frame));
}

int main(int argc, char **argv)
{
	struct nd m;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	nd("ns_router", 0, nd_ns(VM_LL, snm(RT_LL), RT_LL, true));
	nd("ns_router_b", CFG_B, nd_ns(VM_LL, snm("fe80::1"), "fe80::1", true));
	nd("ns_nud", FIX_LEN | FIX_CSUM, nd_ns(VM_LL, RT_LL, RT_LL, false));
	nd("ns_proxy", 0, nd_ns(VM_LL, snm("2001:db8:1::20"), "2001:db8:1::20", true));
	nd("ns_proxy_global", 0, nd_ns("2001:db8:1::10", "2001:db8:99::1", "2001:db8:99::1", false));
	nd("ns_own", 0, nd_ns(VM_LL, snm("2001:db8:1::10"), "2001:db8:1::10", true));
	nd("ns_link_local", 0, nd_ns(VM_LL, snm("fe80::99"), "fe80::99", true));
	nd("ns_dad", 0, nd_ns("::", snm("2001:db8:1::10"), "2001:db8:1::10", false));
	nd("ns_dad_router", 0, nd_ns("::", snm(RT_LL), RT_LL, false));
	m = nd_ns(VM_LL, snm(RT_LL), RT_LL, true);
	nd_opt(&m, 14, 1, (const uint8_t *)"nonce!");
	nd_opt(&m, 3, 4, (const uint8_t *)"0123456789abcdefghijklmnopqrstu");
	nd("ns_options", FIX_LEN | FIX_CSUM, m);
	m = nd_base(133, VM_LL, "ff02::2");
	nd_opt(&m, 1, 1, VM_MAC);
	nd("rs", 0x10, m);
	nd("rs_b", 0x20 | CFG_B, m);
	nd("rs_unspec", FIX_LEN | FIX_CSUM, nd_base(133, "::", "ff02::2"));
	m = nd_base(136, VM_LL, "ff02::1");
	m.flags = 0x20;
	m.target = ip6("2001:db8:1::10");
	nd_opt(&m, 2, 1, VM_MAC);
	nd("na", 0, m);
	m = nd_base(134, VM_LL, "ff02::1");
	m.icmp_len_override = 16;
	nd("ra_from_vm", 0, m);
	m = nd_ns(VM_LL, snm(RT_LL), RT_LL, true);
	m.has_ext = true;
	m.ext = 0;
	nd("ns_hop_by_hop", 0, m);
	m.ext = 44;
	nd("ns_fragment", 0, m);
	m = nd_ns(VM_LL, snm(RT_LL), RT_LL, true);
	m.ethertype = 0x8100;
	nd("ns_vlan", 0, m);
	arp("arp_gateway", 0, arp_request("10.1.0.10", "10.1.0.1"));
	arp("arp_off_port", 0, arp_request("10.1.0.10", "10.1.0.99"));
	arp("arp_no_ipv4", CFG_B, arp_request("10.1.0.10", "10.1.0.1"));
	arp("arp_probe", 0, arp_request("0.0.0.0", "10.1.0.10"));
	arp("arp_announce", 0, arp_request("10.1.0.10", "10.1.0.10"));
	struct arp a = arp_request("10.1.0.10", "10.1.0.1");

	a.len = 42;
	arp("arp_unpadded", 0, a);
	put("echo4_gateway", 0, icmp4_build(frame, 8, "10.1.0.10", "10.1.0.1", 56, 5));
	put("echo4_options", 0, icmp4_build(frame, 8, "10.1.0.10", "10.1.0.1", 8, 6));
	m = nd_base(128, VM_LL, RT_LL);
	m.hop = 64;
	m.icmp_len_override = 64;
	nd("echo6_router", FIX_LEN | FIX_CSUM, m);
	return 0;
}
