/* The text forms of the mesh (mesh/text.c): known answers for the
 * CIDR and key forms, every vm-add/vm-del/mesh-set body key, the exact
 * mesh-show reply and its parse back; tables of malformed bodies, mesh
 * files and VM files with the errno, reason and line expected; the limits
 * (16 addresses per port, 256 per vm-del, 8 prefixes, 256 ports, 1000
 * routes, 1 MiB files); and the vm sync plan against a naive model of a
 * host's ports: applied step by step under the device's rules (one port
 * per address, 16 per port), it ends in the file's state, never touches an
 * address that stays, and a second plan is empty. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "mesh/text.h"

static int failures;

#define CHECK(cond)                                                                      \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, \
				#cond);                                                  \
			failures++;                                                      \
		}                                                                        \
	} while (0)

/* A string literal and its length. */
#define S(lit) lit, strlen(lit)

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11) % n;
}

static struct ip_prefix cidr(const char *s)
{
	struct ip_prefix a;
	const char *why = NULL;

	if (ip_prefix_parse(s, strlen(s), MESH_TEXT_CIDR, &a, &why)) {
		fprintf(stderr, "bad test address %s: %s\n", s, why);
		failures++;
	}
	return a;
}

static bool addr_is(const struct ip_prefix *a, const char *text)
{
	char s[IP_PREFIX_STRLEN];

	ip_prefix_format(a, s);
	return !strcmp(s, text);
}

/* ---- values ------------------------------------------------------------ */

static void test_values(void)
{
	static const struct {
		const char *in, *out; /* out NULL: refused, with why containing err */
		const char *err;
	} cases[] = {
		{ "10.1.2.3", "10.1.2.3/32", NULL },
		{ "10.1.2.0/24", "10.1.2.0/24", NULL },
		{ "fd77::5", "fd77::5/128", NULL },
		{ "FD77:0::/64", "fd77::/64", NULL },
		{ "::ffff:10.0.0.1", "::ffff:10.0.0.1/128", NULL },
		{ "10.1.2.3/24", NULL, "host bits" },
		{ "fd77::1/64", NULL, "host bits" },
		{ "10.0.0.0/0", NULL, "length 0" },
		{ "10.0.0.1/33", NULL, "bad address" },
		{ "fd77::/129", NULL, "bad address" },
		{ "10.0.0.1/", NULL, "bad address" },
		{ "10.0.0.1/+8", NULL, "bad address" },
		{ "10.0.0", NULL, "bad address" },
		{ "010.0.0.1", NULL, "bad address" },
		{ "", NULL, "bad address" },
		{ "/32", NULL, "bad address" },
		{ "fd77:::1", NULL, "bad address" },
		{ "1234:5678:9abc:def0:1234:5678:9abc:def0:1234", NULL, "bad address" },
	};
	uint8_t key[32];
	char b64[MESH_TEXT_KEY_LEN];
	struct ip_prefix a;
	struct mesh_config m = { .n_prefixes = 2 };
	const char *why;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		why = NULL;
		int ret = ip_prefix_parse(S(cases[i].in), MESH_TEXT_CIDR, &a, &why);

		if (cases[i].out) {
			CHECK(ret == 0 && addr_is(&a, cases[i].out));
		} else {
			CHECK(ret == -EINVAL && why && strstr(why, cases[i].err));
			CHECK(a.family == 0 && a.cidr == 0);
		}
	}
	/* The length is read from [v, v+n) only. */
	CHECK(ip_prefix_parse("10.0.0.0/8x", 10, MESH_TEXT_CIDR, &a, &why) == 0 &&
	      addr_is(&a, "10.0.0.0/8"));
	CHECK(ip_prefix_parse("10.0.0.1\0", 9, MESH_TEXT_CIDR, &a, &why) == -EINVAL);

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)(i + 1);
	mesh_text_key_base64(key, b64);
	CHECK(!strcmp(b64, "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="));
	memset(key, 0xff, 32);
	mesh_text_key_base64(key, b64);
	CHECK(!strcmp(b64, "//////////////////////////////////////////8="));

	CHECK(!strcmp(mesh_text_mode_name(MESH_OFF), "off"));
	CHECK(!strcmp(mesh_text_mode_name(MESH_UNICAST), "unicast"));
	CHECK(!strcmp(mesh_text_mode_name(MESH_MULTICAST), "multicast"));
	CHECK(mesh_text_mode_name((enum mesh_mode)7) == NULL);

	m.prefixes[0] = cidr("fd77::/64");
	m.prefixes[1] = cidr("10.77.0.0/16");
	CHECK(mesh_text_in_prefix(&m, &(struct ip_prefix){ 0 }) == false);
	a = cidr("fd77::5");
	CHECK(mesh_text_in_prefix(&m, &a));
	a = cidr("fd77::/64");
	CHECK(mesh_text_in_prefix(&m, &a));
	a = cidr("fd77::/63");
	CHECK(!mesh_text_in_prefix(&m, &a));
	a = cidr("fd77:0:0:1::5");
	CHECK(!mesh_text_in_prefix(&m, &a));
	a = cidr("10.77.200.1");
	CHECK(mesh_text_in_prefix(&m, &a));
	a = cidr("10.78.0.1");
	CHECK(!mesh_text_in_prefix(&m, &a));
	/* a4d::1 starts with the bits of 10.77/16, but is IPv6. */
	a = cidr("a4d::1");
	CHECK(!mesh_text_in_prefix(&m, &a));

	CHECK(port_name_ok("vm-1.a_b", 8));
	CHECK(port_name_ok("abcdefghijklmno", 15));
	CHECK(!port_name_ok("abcdefghijklmnop", 16));
	CHECK(!port_name_ok("", 0));
	CHECK(!port_name_ok(".", 1));
	CHECK(!port_name_ok("..", 2));
	CHECK(port_name_ok("...", 3));
	CHECK(!port_name_ok("vm 1", 4));
	CHECK(!port_name_ok("vm/1", 4));
}

/* ---- request bodies ---------------------------------------------------- */

static void test_vm_request(void)
{
	static const struct {
		const char *body;
		bool with_port;
		int err;
		const char *why;
	} bad[] = {
		{ "port=vm1\n", true, -EINVAL, "no address" },
		{ "address=10.0.0.1\n", true, -EINVAL, "no port" },
		{ "", false, -EINVAL, "no address" },
		{ "port=vm1\naddress=10.0.0.1\nport=vm2\n", true, -EINVAL, "key given twice" },
		{ "port=vm1\naddress=10.0.0.1\naddress=10.0.0.1/32\n", true, -EINVAL,
		  "address given twice" },
		{ "port=vm1\naddress=10.0.0.1/8\n", true, -EINVAL, "host bits" },
		{ "port=vm1\naddress=\n", true, -EINVAL, "bad address" },
		{ "port=\naddress=10.0.0.1\n", true, -EINVAL, "bad port name" },
		{ "port=vm 1\naddress=10.0.0.1\n", true, -EINVAL, "bad port name" },
		{ "port=abcdefghijklmnop\naddress=10.0.0.1\n", true, -EINVAL, "bad port name" },
		{ "port=vm1\naddress=10.0.0.1\n", false, -EINVAL, "unknown key" },
		{ "port=vm1\nAddress=10.0.0.1\n", true, -EINVAL, "unknown key" },
		{ "port=vm1\naddress 10.0.0.1\n", true, -EPROTO, "without '='" },
	};
	struct mesh_text_vm_request r;
	char body[16384];
	const char *why;
	size_t o;

	CHECK(mesh_text_parse_vm_request(S("port=vm1\naddress=10.0.0.2\naddress=fd77::2/128"), true,
					 &r, &why) == 0);
	CHECK(!strcmp(r.port, "vm1") && r.n_addrs == 2 && addr_is(&r.addrs[0], "10.0.0.2/32") &&
	      addr_is(&r.addrs[1], "fd77::2/128"));
	CHECK(mesh_text_parse_vm_request(S("address=10.0.0.2\naddress=10.9.0.0/16\n"), false, &r,
					 &why) == 0);
	CHECK(!r.port[0] && r.n_addrs == 2 && addr_is(&r.addrs[1], "10.9.0.0/16"));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		int ret = mesh_text_parse_vm_request(bad[i].body, strlen(bad[i].body), bad[i].with_port,
						     &r, &why);

		if (ret != bad[i].err || !why || !strstr(why, bad[i].why)) {
			fprintf(stderr, "vm request %zu: got %d %s\n", i, ret, why ? why : "(null)");
			failures++;
		}
		CHECK(!r.n_addrs && !r.port[0]);
	}
	/* 16 addresses for vm-add, 256 for vm-del, one more refused. */
	for (int with_port = 0; with_port < 2; with_port++) {
		int max = with_port ? PORT_MAX_ADDRS : MESH_TEXT_MAX_DEL;

		o = (size_t)sprintf(body, "%s", with_port ? "port=vm1\n" : "");
		for (int i = 0; i < max; i++)
			o += (size_t)sprintf(body + o, "address=10.0.%d.%d\n", i / 200, i % 200 + 1);
		CHECK(mesh_text_parse_vm_request(body, o, with_port, &r, &why) == 0 &&
		      r.n_addrs == (size_t)max);
		o += (size_t)sprintf(body + o, "address=10.1.0.1\n");
		CHECK(mesh_text_parse_vm_request(body, o, with_port, &r, &why) == -EINVAL &&
		      strstr(why, "too many addresses"));
	}
}

static void test_set(void)
{
	static const struct {
		const char *body;
		int err;
		const char *why;
	} bad[] = {
		{ "", -EINVAL, "nothing to set" },
		{ "mode=broadcast\n", -EINVAL, "mode must be" },
		{ "mode=Unicast\n", -EINVAL, "mode must be" },
		{ "mode=unicast\nmode=off\n", -EINVAL, "key given twice" },
		{ "prefix=fd77::1/64\n", -EINVAL, "host bits" },
		{ "prefix=fd77::/64\nprefix=fd77::/64\n", -EINVAL, "given twice" },
		{ "prefix=fd77::/64\nprefix=fd77::/48\n", -EINVAL, "overlaps" },
		{ "prefix=10.0.0.0/8\nprefix=10.1.0.0/16\n", -EINVAL, "overlaps" },
		{ "prefixes=fd77::/64\n", -EINVAL, "unknown key" },
		{ "mode\n", -EPROTO, "without '='" },
		{ "lease_key=abcd\n", -EINVAL, "bad lease_key" },
		{ "lease_key=None\n", -EINVAL, "bad lease_key" },
		{ "lease_key=none\nlease_key=none\n", -EINVAL, "key given twice" },
	};
	struct mesh_text_set set;
	struct mesh_config cfg = { .mode = MESH_MULTICAST, .n_prefixes = 1 };
	char body[1024];
	const char *why;
	size_t o = 0;

	CHECK(mesh_text_parse_set(S("mode=unicast\nprefix=fd77::/64\nprefix=10.77.0.0/16\n"),
				  &set, &why) == 0);
	CHECK(set.has_mode && set.mode == MESH_UNICAST && set.n_prefixes == 2 &&
	      addr_is(&set.prefixes[0], "fd77::/64") && addr_is(&set.prefixes[1], "10.77.0.0/16"));
	/* 10/8 and fd00::/8 are not inside each other: different families. */
	CHECK(mesh_text_parse_set(S("prefix=10.0.0.0/8\nprefix=a00::/8"), &set, &why) == 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		int ret = mesh_text_parse_set(bad[i].body, strlen(bad[i].body), &set, &why);

		if (ret != bad[i].err || !why || !strstr(why, bad[i].why)) {
			fprintf(stderr, "set %zu: got %d %s\n", i, ret, why ? why : "(null)");
			failures++;
		}
		CHECK(!set.has_mode && !set.n_prefixes);
	}
	for (int i = 0; i < MESH_MAX_PREFIXES; i++)
		o += (size_t)sprintf(body + o, "prefix=fd77:%x::/64\n", i);
	CHECK(mesh_text_parse_set(body, o, &set, &why) == 0 && set.n_prefixes == 8);
	o += (size_t)sprintf(body + o, "prefix=fd78::/64\n");
	CHECK(mesh_text_parse_set(body, o, &set, &why) == -EINVAL && strstr(why, "too many"));

	/* get-modify-set: a mode alone keeps the prefixes; prefixes replace. */
	cfg.prefixes[0] = cidr("fd77::/64");
	CHECK(mesh_text_parse_set(S("mode=off"), &set, &why) == 0);
	mesh_text_apply_set(&set, &cfg);
	CHECK(cfg.mode == MESH_OFF && cfg.n_prefixes == 1 && addr_is(&cfg.prefixes[0], "fd77::/64"));
	CHECK(mesh_text_parse_set(S("prefix=10.7.0.0/16\nprefix=fd79::/64"), &set, &why) == 0);
	mesh_text_apply_set(&set, &cfg);
	CHECK(cfg.mode == MESH_OFF && cfg.n_prefixes == 2 &&
	      addr_is(&cfg.prefixes[0], "10.7.0.0/16") && addr_is(&cfg.prefixes[1], "fd79::/64"));

	/* A lease key alone keeps the rest; none takes it away. */
	o = (size_t)sprintf(body, "lease_key=");
	for (int i = 0; i < 32; i++)
		o += (size_t)sprintf(body + o, "%02x", i + 0xa0);
	CHECK(mesh_text_parse_set(body, o, &set, &why) == 0 && set.set_lease_key &&
	      set.has_lease_key && set.lease_key[0] == 0xa0 && set.lease_key[31] == 0xbf);
	mesh_text_apply_set(&set, &cfg);
	CHECK(cfg.has_lease_key && cfg.lease_key[31] == 0xbf && cfg.n_prefixes == 2);
	CHECK(mesh_text_parse_set(S("mode=unicast"), &set, &why) == 0 && !set.set_lease_key);
	mesh_text_apply_set(&set, &cfg);
	CHECK(cfg.has_lease_key && cfg.mode == MESH_UNICAST);
	CHECK(mesh_text_parse_set(S("lease_key=none"), &set, &why) == 0 && set.set_lease_key &&
	      !set.has_lease_key);
	mesh_text_apply_set(&set, &cfg);
	CHECK(!cfg.has_lease_key && cfg.mode == MESH_UNICAST);
}

/* ---- lease-add ----------------------------------------------------------- */

static void test_lease_request(void)
{
	struct mesh_text_lease_request *r = malloc(sizeof(*r));
	struct mesh_lease l = { .family = AF_INET6, .issued = 1, .expires = 2 };
	char text[MESH_LEASE_TEXT_LEN], body[17 * (MESH_LEASE_TEXT_LEN + 8)];
	const char *why;
	size_t o = 0;

	CHECK(r);
	inet_pton(AF_INET6, "fd77::9", l.addr);
	memset(l.holder, 0x42, sizeof(l.holder));
	mesh_lease_format(&l, text);
	for (int i = 0; i < MESH_TEXT_MAX_LEASES; i++)
		o += (size_t)sprintf(body + o, "lease=%s\n", text);
	CHECK(mesh_text_parse_lease_request(body, o, r, &why) == 0 && r->n == 16);
	CHECK(r->leases[15].family == AF_INET6 && r->leases[15].holder[0] == 0x42);
	o += (size_t)sprintf(body + o, "lease=%s\n", text);
	CHECK(mesh_text_parse_lease_request(body, o, r, &why) == -EINVAL && strstr(why, "too many") &&
	      r->n == 0);
	CHECK(mesh_text_parse_lease_request(S(""), r, &why) == -EINVAL && strstr(why, "no lease"));
	CHECK(mesh_text_parse_lease_request(S("lease=AAAA\n"), r, &why) == -EINVAL &&
	      strstr(why, "not a lease"));
	CHECK(mesh_text_parse_lease_request(S("leases=x\n"), r, &why) == -EINVAL &&
	      strstr(why, "unknown key"));
	CHECK(mesh_text_parse_lease_request(S("lease\n"), r, &why) == -EPROTO);
	free(r);
}

/* ---- mesh-show --------------------------------------------------------- */

static void test_show(void)
{
	struct mesh_config cfg = { .mode = MESH_UNICAST, .n_prefixes = 2 };
	struct mesh_stats st;
	struct mesh_route routes[2], *many;
	struct mesh_text_show show;
	char want[4096], *text, *cut;
	const char *why;
	size_t len, o = 0;
	uint64_t v = 0;

	memset(routes, 0, sizeof(routes)); /* padding too: compared with memcmp */
	cfg.prefixes[0] = cidr("fd77::/64");
	cfg.prefixes[1] = cidr("10.77.0.0/16");
	/* Every counter a different value, named here by the X-macro itself. */
#define SET(name) st.name = ++v * 1000003;
	MESH_COUNTERS(SET)
#undef SET
	st.locations = 12345678901234ull;
	st.pending = 7;
	st.leases = 3;
	routes[0].prefix.family = AF_INET6;
	routes[0].prefix.cidr = 128;
	inet_pton(AF_INET6, "fd77::5", routes[0].prefix.addr);
	for (int i = 0; i < 32; i++)
		routes[0].holder[i] = (uint8_t)(i + 1);
	routes[0].seq = 7;
	routes[1].prefix.family = AF_INET;
	routes[1].prefix.cidr = 32;
	inet_pton(AF_INET, "10.77.0.9", routes[1].prefix.addr);
	routes[1].negative = true;

	o += (size_t)sprintf(want + o, "mode=unicast\nprefix=fd77::/64\nprefix=10.77.0.0/16\n");
	v = 0;
#define LINE(name) o += (size_t)sprintf(want + o, #name "=%llu\n", ++v * 1000003ull);
	MESH_COUNTERS(LINE)
#undef LINE
	o += (size_t)sprintf(want + o,
			     "locations=12345678901234\npending=7\nleases=3\nroutes_truncated=false\n"
			     "route=fd77::5/128\n"
			     "holder=0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20\n"
			     "negative=false\nseq=7\n"
			     "route=10.77.0.9/32\nnegative=true\nseq=0\n");
	CHECK(mesh_text_format_show(&cfg, &st, routes, 2, false, &text, &len) == 0);
	CHECK(len == strlen(text) && !strcmp(text, want));
	if (strcmp(text, want))
		fprintf(stderr, "got:\n%s\nwant:\n%s\n", text, want);

	/* Parsed back: the same configuration, counters and routes. */
	CHECK(mesh_text_parse_show(text, len, &show, &why) == 0);
	CHECK(show.cfg.mode == MESH_UNICAST && show.cfg.n_prefixes == 2 &&
	      addr_is(&show.cfg.prefixes[1], "10.77.0.0/16"));
	CHECK(!memcmp(&show.stats, &st, sizeof(st)));
	CHECK(show.n_routes == 2 && !show.truncated && !memcmp(show.routes, routes, sizeof(routes)));
	CHECK(!show.cfg.has_lease_key);
	mesh_text_show_free(&show);
	free(text);

	/* The lease key, after the prefixes, and back. */
	cfg.has_lease_key = true;
	memset(cfg.lease_key, 0xc3, sizeof(cfg.lease_key));
	CHECK(mesh_text_format_show(&cfg, &st, routes, 0, false, &text, &len) == 0);
	CHECK(strstr(text, "prefix=10.77.0.0/16\nlease_key=c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3"
			   "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3\nsolicit_sent="));
	CHECK(mesh_text_parse_show(text, len, &show, &why) == 0 && show.cfg.has_lease_key &&
	      !memcmp(show.cfg.lease_key, cfg.lease_key, 32));
	mesh_text_show_free(&show);
	free(text);
	cfg.has_lease_key = false;

	/* A newer daemon's keys are skipped, in the header and in a route. */
	CHECK(mesh_text_parse_show(S("flux=1\nmode=off\nroute=fd77::1\nnegative=true\ncolour=red\n"), &show, &why) == 0);
	CHECK(show.cfg.mode == MESH_OFF && show.n_routes == 1 && show.routes[0].negative);
	mesh_text_show_free(&show);
	CHECK(mesh_text_parse_show(S("mode=off\n"), &show, &why) == 0 && !show.routes &&
	      !show.n_routes);

	static const struct {
		const char *text;
		int err;
		const char *why;
	} bad[] = {
		{ "", -EINVAL, "no mode" },
		{ "mode=on\n", -EINVAL, "bad mode" },
		{ "mode=off\nmode=off\n", -EINVAL, "bad mode" },
		{ "mode=off\nsolicit_sent=-1\n", -EINVAL, "bad counter" },
		{ "mode=off\nsolicit_sent=18446744073709551616\n", -EINVAL, "bad counter" },
		{ "mode=off\nroutes_truncated=yes\n", -EINVAL, "routes_truncated" },
		{ "mode=off\nroute=fd77::5\n", -EINVAL, "without a holder" },
		{ "mode=off\nroute=fd77::5\nnegative=true\nholder="
		  "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20\n",
		  -EINVAL, "negative route with a holder" },
		{ "mode=off\nroute=fd77::5\nholder=0102\n", -EINVAL, "bad holder" },
		{ "mode=off\nroute=fd77::5\nnegative=true\nseq=x\n", -EINVAL, "bad seq" },
		{ "mode=off\nroute=fd77::5/64\nnegative=true\n", -EINVAL, "host bits" },
		{ "mode=off\nprefix=fd77::/64\nprefix=fd77::/64\n", -EINVAL, "twice" },
		{ "mode=off\nbogus\n", -EPROTO, "without '='" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		int ret = mesh_text_parse_show(bad[i].text, strlen(bad[i].text), &show, &why);

		if (ret != bad[i].err || !why || !strstr(why, bad[i].why)) {
			fprintf(stderr, "show %zu: got %d %s\n", i, ret, why ? why : "(null)");
			failures++;
		}
		CHECK(!show.routes && !show.n_routes);
	}

	/* 1000 routes parse; 1001 do not. */
	many = calloc(MESH_TEXT_MAX_ROUTES + 1, sizeof(*many));
	for (size_t i = 0; i <= MESH_TEXT_MAX_ROUTES; i++) {
		many[i].prefix.family = AF_INET6;
		many[i].prefix.cidr = 128;
		many[i].prefix.addr[0] = 0xfd;
		many[i].prefix.addr[14] = (uint8_t)(i >> 8);
		many[i].prefix.addr[15] = (uint8_t)i;
		many[i].negative = i % 3 == 0;
		many[i].holder[0] = many[i].negative ? 0 : (uint8_t)(i | 1);
		many[i].seq = i;
	}
	CHECK(mesh_text_format_show(&cfg, &st, many, MESH_TEXT_MAX_ROUTES, true, &text, &len) == 0);
	CHECK(mesh_text_parse_show(text, len, &show, &why) == 0 &&
	      show.n_routes == MESH_TEXT_MAX_ROUTES && show.truncated &&
	      !memcmp(show.routes, many, MESH_TEXT_MAX_ROUTES * sizeof(*many)));
	mesh_text_show_free(&show);
	free(text);
	CHECK(mesh_text_format_show(&cfg, &st, many, MESH_TEXT_MAX_ROUTES + 1, false, &text,
				    &len) == 0);
	CHECK(mesh_text_parse_show(text, len, &show, &why) == -E2BIG && !show.routes);
	/* Cut anywhere inside a route block: parses or fails cleanly. */
	cut = strstr(text, "route=");
	CHECK(cut && mesh_text_parse_show(text, (size_t)(cut - text) + 8, &show, &why) == -EINVAL);
	free(text);
	free(many);
}

/* ---- mesh config files ------------------------------------------------- */

static void test_config(void)
{
	static const char good[] = "# the mesh of rack 4\n"
				   "\n"
				   "  [mesh]  # any case\n"
				   "MODE=multicast\n"
				   "Prefix = fd77::/64 , 10.77.0.0/16\r\n"
				   "\tprefix\t=\tfd78::/64\n";
	static const struct {
		const char *text;
		int line, err;
		const char *why;
	} bad[] = {
		{ "", 0, -EINVAL, "no [Mesh] section" },
		{ "# only a comment\n", 0, -EINVAL, "no [Mesh] section" },
		{ "Mode = off\n", 1, -EINVAL, "outside the [Mesh] section" },
		{ "[Mesh]\n[Mesh]\nMode = off\n", 2, -EINVAL, "a second [Mesh]" },
		{ "[Port]\n", 1, -EINVAL, "unknown section" },
		{ "[Mesh\n", 1, -EINVAL, "unknown section" },
		{ "[Mesh]\nMode off\n", 2, -EINVAL, "without '='" },
		{ "[Mesh]\nMode = off\nMode = off\n", 3, -EINVAL, "Mode given twice" },
		{ "[Mesh]\nMode = anycast\n", 2, -EINVAL, "Mode must be" },
		{ "[Mesh]\nMode =\n", 2, -EINVAL, "empty value" },
		{ "[Mesh]\nMode = off\nPrefix = fd77::/64,,fd78::/64\n", 3, -EINVAL, "empty item" },
		{ "[Mesh]\nMode = off\nPrefix = fd77::/64,\n", 3, -EINVAL, "empty item" },
		{ "[Mesh]\nMode = off\nPrefix = fd77::1/64\n", 3, -EINVAL, "host bits" },
		{ "[Mesh]\nMode = off\nPrefix = fd77::/64\n\nPrefix = fd77::/64\n", 5, -EINVAL,
		  "twice" },
		{ "[Mesh]\nMode = off\nPrefix = 10.0.0.0/8, 10.7.0.0/16\n", 3, -EINVAL, "overlaps" },
		{ "[Mesh]\nMode = off\nColour = blue\n", 3, -EINVAL, "unknown key" },
		{ "[Mesh]\nPrefix = fd77::/64\n", 1, -EINVAL, "no Mode" },
		{ "\n[Mesh]\nMode = unicast\n", 2, -EINVAL, "at least one Prefix" },
		{ "[Mesh]\nMode = off\nPrefix = fd77::/64 # x\0y\n", 3, -EINVAL, "NUL" },
		{ "[Mesh]\nMode = off\nLeaseKey = abc\n", 3, -EINVAL, "LeaseKey must be" },
		{ "[Mesh]\nMode = off\nLeaseKey = AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\n"
		  "LeaseKey = AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\n", 4, -EINVAL,
		  "LeaseKey given twice" },
	};
	struct mesh_config cfg;
	char *big;
	const char *why;
	int line;
	size_t o;

	CHECK(mesh_text_parse_config(good, sizeof(good) - 1, &cfg, &line, &why) == 0 && line == 0);
	CHECK(cfg.mode == MESH_MULTICAST && cfg.n_prefixes == 3 &&
	      addr_is(&cfg.prefixes[0], "fd77::/64") && addr_is(&cfg.prefixes[1], "10.77.0.0/16") &&
	      addr_is(&cfg.prefixes[2], "fd78::/64"));
	CHECK(!cfg.has_lease_key);
	CHECK(mesh_text_parse_config(S("[Mesh]\nMode = off"), &cfg, &line, &why) == 0 &&
	      cfg.mode == MESH_OFF && cfg.n_prefixes == 0);
	CHECK(mesh_text_parse_config(S("[Mesh]\nMode = off\nleasekey = "
				       "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\n"),
				     &cfg, &line, &why) == 0 &&
	      cfg.has_lease_key && cfg.lease_key[0] == 1 && cfg.lease_key[31] == 32);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		/* The NUL case is measured by hand. */
		size_t len = strlen(bad[i].text);
		int ret;

		if (strstr(bad[i].why, "NUL"))
			len += 1 + strlen(bad[i].text + len + 1);
		memset(&cfg, 0x5a, sizeof(cfg));
		why = NULL;
		line = -1;
		ret = mesh_text_parse_config(bad[i].text, len, &cfg, &line, &why);
		if (ret != bad[i].err || line != bad[i].line || !why || !strstr(why, bad[i].why)) {
			fprintf(stderr, "config %zu: got %d line %d %s\n", i, ret, line,
				why ? why : "(null)");
			failures++;
		}
		CHECK(cfg.n_prefixes == 0x5a5a5a5a5a5a5a5aull); /* untouched on failure */
	}
	/* 8 prefixes, then a 9th on its own line. */
	big = malloc(MESH_TEXT_MAX_FILE + 2);
	o = (size_t)sprintf(big, "[Mesh]\nMode = unicast\n");
	for (int i = 0; i < MESH_MAX_PREFIXES; i++)
		o += (size_t)sprintf(big + o, "Prefix = 10.%d.0.0/16\n", i);
	CHECK(mesh_text_parse_config(big, o, &cfg, &line, &why) == 0 && cfg.n_prefixes == 8);
	o += (size_t)sprintf(big + o, "Prefix = fd77::/64\n");
	CHECK(mesh_text_parse_config(big, o, &cfg, &line, &why) == -EINVAL && line == 11 &&
	      strstr(why, "too many"));
	/* 1 MiB of comments and the section is fine; one byte more is not. */
	o = (size_t)sprintf(big, "[Mesh]\nMode = off\n");
	memset(big + o, '#', MESH_TEXT_MAX_FILE - o);
	CHECK(mesh_text_parse_config(big, MESH_TEXT_MAX_FILE, &cfg, &line, &why) == 0);
	big[MESH_TEXT_MAX_FILE] = '\n';
	CHECK(mesh_text_parse_config(big, MESH_TEXT_MAX_FILE + 1, &cfg, &line, &why) == -E2BIG &&
	      line == 0);
	free(big);
}

/* ---- VM files ---------------------------------------------------------- */

static void test_vm_file(void)
{
	static const char good[] = "# PORT ADDRESS...\n"
				   "vm1 10.10.1.2 fd77::1:2   # the first VM\n"
				   "\n"
				   "\tvm2\tfd77::2:2/128\r\n"
				   "vm3\n"
				   "vm1 10.20.0.0/24";
	static const struct {
		const char *text;
		int line, err;
		const char *why;
	} bad[] = {
		{ "vm1 10.0.0.1\nvm/2 10.0.0.2\n", 2, -EINVAL, "bad port name" },
		{ "abcdefghijklmnop 10.0.0.1\n", 1, -EINVAL, "bad port name" },
		{ "vm1 10.0.0.1,10.0.0.2\n", 1, -EINVAL, "bad address" },
		{ "vm1 10.0.0.1/8\n", 1, -EINVAL, "host bits" },
		{ "vm1 10.0.0.1\n\n# x\nvm2 10.0.0.1/32\n", 4, -EINVAL, "listed twice" },
		{ "vm1 10.0.0.1 10.0.0.1\n", 1, -EINVAL, "listed twice" },
		{ "vm1\nvm1 fd77::1\0\n", 2, -EINVAL, "NUL" },
	};
	struct mesh_text_vm *vms;
	char *big;
	const char *why;
	size_t n, o;
	int line;

	CHECK(mesh_text_parse_vm_file(good, sizeof(good) - 1, &vms, &n, &line, &why) == 0);
	CHECK(n == 3 && line == 0);
	if (n == 3) {
		CHECK(!strcmp(vms[0].port, "vm1") && vms[0].n_addrs == 3 &&
		      addr_is(&vms[0].addrs[0], "10.10.1.2/32") &&
		      addr_is(&vms[0].addrs[1], "fd77::1:2/128") &&
		      addr_is(&vms[0].addrs[2], "10.20.0.0/24"));
		CHECK(!strcmp(vms[1].port, "vm2") && vms[1].n_addrs == 1 &&
		      addr_is(&vms[1].addrs[0], "fd77::2:2/128"));
		CHECK(!strcmp(vms[2].port, "vm3") && vms[2].n_addrs == 0);
	}
	free(vms);
	CHECK(mesh_text_parse_vm_file(S("# nothing\n\n"), &vms, &n, &line, &why) == 0 && !vms &&
	      !n);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = strlen(bad[i].text);
		int ret;

		if (strstr(bad[i].why, "NUL"))
			len += 1 + strlen(bad[i].text + len + 1);
		why = NULL;
		line = -1;
		ret = mesh_text_parse_vm_file(bad[i].text, len, &vms, &n, &line, &why);
		if (ret != bad[i].err || line != bad[i].line || !why || !strstr(why, bad[i].why)) {
			fprintf(stderr, "vm file %zu: got %d line %d %s\n", i, ret, line,
				why ? why : "(null)");
			failures++;
		}
		CHECK(!vms && !n);
	}
	big = malloc(MESH_TEXT_MAX_FILE + 2);
	/* 16 addresses for one port over two lines; the 17th is refused. */
	o = (size_t)sprintf(big, "vm1");
	for (int i = 0; i < PORT_MAX_ADDRS; i++)
		o += (size_t)sprintf(big + o, "%s10.0.0.%d", i == 8 ? "\nvm1 " : " ", i + 1);
	CHECK(mesh_text_parse_vm_file(big, o, &vms, &n, &line, &why) == 0 && n == 1 &&
	      vms[0].n_addrs == 16);
	free(vms);
	o += (size_t)sprintf(big + o, "\nvm2 10.1.0.1\nvm1 10.0.1.1\n");
	CHECK(mesh_text_parse_vm_file(big, o, &vms, &n, &line, &why) == -EINVAL && line == 4 &&
	      strstr(why, "more than 16"));
	/* 256 ports; the 257th is refused at its line. */
	o = 0;
	for (int i = 0; i < PORT_MAX; i++)
		o += (size_t)sprintf(big + o, "p%d 10.2.%d.%d\n", i, i / 200, i % 200 + 1);
	CHECK(mesh_text_parse_vm_file(big, o, &vms, &n, &line, &why) == 0 && n == 256 &&
	      !strcmp(vms[255].port, "p255"));
	free(vms);
	o += (size_t)sprintf(big + o, "p0 10.3.0.1\np256\n");
	CHECK(mesh_text_parse_vm_file(big, o, &vms, &n, &line, &why) == -E2BIG && line == 258 &&
	      strstr(why, "256 ports"));
	/* 1 MiB. */
	o = (size_t)sprintf(big, "vm1 10.0.0.1\n");
	memset(big + o, ' ', MESH_TEXT_MAX_FILE + 1 - o);
	CHECK(mesh_text_parse_vm_file(big, MESH_TEXT_MAX_FILE, &vms, &n, &line, &why) == 0 &&
	      n == 1);
	free(vms);
	CHECK(mesh_text_parse_vm_file(big, MESH_TEXT_MAX_FILE + 1, &vms, &n, &line, &why) ==
		      -E2BIG &&
	      line == 0);
	free(big);
}

/* ---- the sync plan against a model ------------------------------------- */

enum { POOL = 48, MODEL_PORTS = 5 };

static struct ip_prefix pool[POOL];

/* The model host: have[] as the device keeps it. */
static int model_find(const struct port_info *have, size_t n_have, const struct ip_prefix *a,
		      size_t *at)
{
	for (size_t h = 0; h < n_have; h++)
		for (size_t k = 0; k < have[h].cfg.n_addrs; k++)
			if (ip_prefix_equal(&have[h].cfg.addrs[k], a)) {
				if (at)
					*at = k;
				return (int)h;
			}
	return -1;
}

static bool listed_in(const struct mesh_text_vm *vm, const struct ip_prefix *a)
{
	for (size_t k = 0; k < vm->n_addrs; k++)
		if (ip_prefix_equal(&vm->addrs[k], a))
			return true;
	return false;
}

/* Applies the plan under the device's rules; false at the first step the
 * device would refuse or that touches an address that stays. */
static bool apply(struct port_info *have, size_t n_have, const struct mesh_text_vm *want,
		  size_t n_want, const int *want_at, const struct mesh_vm_step *steps, size_t n,
		  bool *had_room)
{
	const struct port_info *orig = NULL;
	struct port_info *before = malloc(n_have * sizeof(*before));
	size_t k = 0;
	int h;
	bool ok = true, room = true;

	memcpy(before, have, n_have * sizeof(*before));
	orig = before;
	for (size_t w = 0; w < n_want; w++) {
		size_t both = 0;

		for (k = 0; k < orig[want_at[w]].cfg.n_addrs; k++)
			both += !listed_in(&want[w], &orig[want_at[w]].cfg.addrs[k]);
		room &= both + want[w].n_addrs <= PORT_MAX_ADDRS;
	}
	*had_room = room;
	for (size_t i = 0; i < n && ok; i++) {
		const struct mesh_vm_step *s = &steps[i];

		if (s->kind == MESH_VM_STEP_ADD) {
			struct port_config *c = &have[want_at[s->port]].cfg;

			h = model_find(have, n_have, &s->addr, NULL);
			ok = h < 0 && c->n_addrs < PORT_MAX_ADDRS && listed_in(&want[s->port], &s->addr);
			if (ok)
				c->addrs[c->n_addrs++] = s->addr;
		} else {
			int o = model_find(orig, n_have, &s->addr, NULL);
			size_t w;

			h = model_find(have, n_have, &s->addr, &k);
			ok = h == (int)s->port;
			/* An address on the port that wants it is never removed. */
			for (w = 0; w < n_want; w++)
				if (want_at[w] == o && listed_in(&want[w], &s->addr))
					ok = false;
			/* With room everywhere, what goes goes after every addition. */
			if (room && s->from == SIZE_MAX)
				for (size_t j = i; j < n; j++)
					ok &= steps[j].kind != MESH_VM_STEP_ADD;
			if (ok) {
				struct port_config *c = &have[h].cfg;

				memmove(&c->addrs[k], &c->addrs[k + 1],
					(c->n_addrs - k - 1) * sizeof(c->addrs[0]));
				c->n_addrs--;
			}
		}
		if (!ok)
			fprintf(stderr, "plan step %zu of %zu refused\n", i, n);
	}
	free(before);
	return ok;
}

static void test_plan(void)
{
	struct port_info *have = calloc(MODEL_PORTS, sizeof(*have));
	struct mesh_text_vm *want = calloc(MODEL_PORTS, sizeof(*want));
	struct mesh_vm_step *steps;
	struct mesh_vm_plan_counts counts, model;
	int want_at[MODEL_PORTS];
	size_t n_steps, n_want, bad, moves_seen = 0, tight = 0;
	bool had_room;
	char s[32];

	for (int i = 0; i < POOL; i++) {
		snprintf(s, sizeof(s), i % 2 ? "fd77::%x" : "10.77.0.%d", i + 1);
		pool[i] = cidr(s);
	}
	for (int round = 0; round < 3000; round++) {
		uint8_t used[POOL] = { 0 };
		uint32_t fill = 1 + rnd(17);

		/* The host: each pool address on a random port or none. */
		memset(have, 0, MODEL_PORTS * sizeof(*have));
		for (int p = 0; p < MODEL_PORTS; p++)
			snprintf(have[p].cfg.name, sizeof(have[p].cfg.name), "vm%d", p);
		for (int i = 0; i < POOL; i++) {
			uint32_t p = rnd(MODEL_PORTS + 2);

			if (p < MODEL_PORTS && rnd(17) < fill &&
			    have[p].cfg.n_addrs < PORT_MAX_ADDRS)
				have[p].cfg.addrs[have[p].cfg.n_addrs++] = pool[i];
		}
		/* The file: a random subset of the ports, in a random order. */
		n_want = 0;
		for (int p = 0; p < MODEL_PORTS; p++) {
			if (rnd(4) == 0)
				continue;
			want_at[n_want] = p;
			memset(&want[n_want], 0, sizeof(want[0]));
			strcpy(want[n_want].port, have[p].cfg.name);
			n_want++;
		}
		for (size_t w = 0; w + 1 < n_want; w++) {
			size_t x = w + rnd((uint32_t)(n_want - w));
			int t = want_at[w];
			struct mesh_text_vm tv = want[w];

			want_at[w] = want_at[x];
			want[w] = want[x];
			want_at[x] = t;
			want[x] = tv;
		}
		for (size_t w = 0; w < n_want; w++) {
			uint32_t k = rnd(PORT_MAX_ADDRS + 1);

			for (uint32_t j = 0; j < k; j++) {
				uint32_t i = rnd(POOL);

				if (!used[i]) {
					used[i] = 1;
					want[w].addrs[want[w].n_addrs++] = pool[i];
				}
			}
		}
		/* What the counts must be. */
		memset(&model, 0, sizeof(model));
		for (size_t w = 0; w < n_want; w++) {
			for (size_t k = 0; k < want[w].n_addrs; k++) {
				int h = model_find(have, MODEL_PORTS, &want[w].addrs[k], NULL);

				if (h < 0)
					model.added++;
				else if (h == want_at[w])
					model.unchanged++;
				else
					model.moved++;
			}
		}
		for (int p = 0; p < MODEL_PORTS; p++) {
			for (size_t k = 0; k < have[p].cfg.n_addrs; k++) {
				bool kept = false;

				for (size_t w = 0; w < n_want; w++)
					kept |= listed_in(&want[w], &have[p].cfg.addrs[k]);
				model.removed += !kept;
			}
		}
		moves_seen += model.moved;

		CHECK(mesh_text_vm_plan(want, n_want, have, MODEL_PORTS, &steps, &n_steps, &counts,
					&bad) == 0);
		CHECK(!memcmp(&counts, &model, sizeof(model)));
		CHECK(apply(have, MODEL_PORTS, want, n_want, want_at, steps, n_steps, &had_room));
		tight += !had_room;
		free(steps);
		/* The host is now the file: wanted ports hold exactly their
		 * addresses (as sets), the others none. */
		for (int p = 0; p < MODEL_PORTS; p++) {
			const struct mesh_text_vm *vm = NULL;

			for (size_t w = 0; w < n_want; w++)
				if (want_at[w] == p)
					vm = &want[w];
			CHECK(have[p].cfg.n_addrs == (vm ? vm->n_addrs : 0));
			for (size_t k = 0; vm && k < vm->n_addrs; k++)
				CHECK(model_find(have, MODEL_PORTS, &vm->addrs[k], NULL) == p);
		}
		/* A second plan does nothing. */
		CHECK(mesh_text_vm_plan(want, n_want, have, MODEL_PORTS, &steps, &n_steps, &counts,
					&bad) == 0);
		CHECK(n_steps == 0 && !steps && counts.added + counts.moved + counts.removed == 0);
		free(steps);
	}
	/* The random cases cover moves and ports short of room. */
	CHECK(moves_seen > 1000 && tight > 100);
	printf("plan: %zu moves, %zu rounds with a port short of room\n", moves_seen, tight);

	/* A port the host does not have: -ENOENT naming it, nothing planned. */
	strcpy(want[0].port, "vm0");
	want[0].n_addrs = 0;
	strcpy(want[1].port, "vm9");
	want[1].n_addrs = 0;
	CHECK(mesh_text_vm_plan(want, 2, have, MODEL_PORTS, &steps, &n_steps, &counts, &bad) ==
		      -ENOENT &&
	      bad == 1 && !steps && !n_steps);
	/* Two entries for one port. */
	strcpy(want[1].port, "vm0");
	CHECK(mesh_text_vm_plan(want, 2, have, MODEL_PORTS, &steps, &n_steps, &counts, &bad) ==
		      -EINVAL &&
	      bad == 1);

	/* A known case, step by step: vm0 {a, b} vm1 {c}; the file says
	 * vm0 {a, d}, vm1 {b}: add d to vm0, move b (del, add), remove c. */
	memset(have, 0, 2 * sizeof(*have));
	strcpy(have[0].cfg.name, "vm0");
	strcpy(have[1].cfg.name, "vm1");
	have[0].cfg.addrs[0] = pool[0];
	have[0].cfg.addrs[1] = pool[1];
	have[0].cfg.n_addrs = 2;
	have[1].cfg.addrs[0] = pool[2];
	have[1].cfg.n_addrs = 1;
	memset(want, 0, 2 * sizeof(*want));
	strcpy(want[0].port, "vm0");
	want[0].addrs[0] = pool[0];
	want[0].addrs[1] = pool[3];
	want[0].n_addrs = 2;
	strcpy(want[1].port, "vm1");
	want[1].addrs[0] = pool[1];
	want[1].n_addrs = 1;
	CHECK(mesh_text_vm_plan(want, 2, have, 2, &steps, &n_steps, &counts, &bad) == 0);
	CHECK(n_steps == 4 && counts.added == 1 && counts.moved == 1 && counts.removed == 1 &&
	      counts.unchanged == 1);
	if (n_steps == 4) {
		CHECK(steps[0].kind == MESH_VM_STEP_ADD && steps[0].port == 0 &&
		      steps[0].from == SIZE_MAX && ip_prefix_equal(&steps[0].addr, &pool[3]));
		CHECK(steps[1].kind == MESH_VM_STEP_DEL && steps[1].port == 0 && steps[1].from == 1 &&
		      ip_prefix_equal(&steps[1].addr, &pool[1]));
		CHECK(steps[2].kind == MESH_VM_STEP_ADD && steps[2].port == 1 && steps[2].from == 0 &&
		      ip_prefix_equal(&steps[2].addr, &pool[1]));
		CHECK(steps[3].kind == MESH_VM_STEP_DEL && steps[3].port == 1 &&
		      steps[3].from == SIZE_MAX && ip_prefix_equal(&steps[3].addr, &pool[2]));
	}
	free(steps);
	free(want);
	free(have);
}

int main(void)
{
	test_values();
	test_vm_request();
	test_set();
	test_lease_request();
	test_show();
	test_config();
	test_vm_file();
	test_plan();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("mesh text: all checks passed\n");
	return 0;
}
