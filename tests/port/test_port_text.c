/* The text forms of a VM port (port/text.c) and port_config_check:
 * known answers for every key of a request, a ports file and a port-list
 * reply; a table of malformed inputs with the reason (and line) expected;
 * round trips format -> parse over random valid configurations; and the
 * load plan checked against a naive model of the device (the result is
 * what the file says, and a second plan is empty). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "port/text.h"

static int failures;

#define CHECK(cond)                                                                      \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, \
				#cond);                                                  \
			failures++;                                                      \
		}                                                                        \
	} while (0)

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11) % n;
}

static int parse_req(const char *s, struct port_config *c, const char **why)
{
	return port_text_parse_request(s, strlen(s), c, why);
}

/* Field by field, exactly (no normalisation, order kept). */
static bool config_identical(const struct port_config *a, const struct port_config *b)
{
	if (strcmp(a->name, b->name) || a->type != b->type || strcmp(a->path, b->path) ||
	    a->server != b->server || memcmp(a->vm_mac, b->vm_mac, 6) ||
	    a->has_router_mac != b->has_router_mac || a->has_gateway4 != b->has_gateway4 ||
	    a->n_addrs != b->n_addrs || a->n_prefixes != b->n_prefixes || a->mtu != b->mtu ||
	    a->has_socket_uid != b->has_socket_uid || a->socket_uid != b->socket_uid ||
	    a->has_socket_gid != b->has_socket_gid || a->socket_gid != b->socket_gid ||
	    a->socket_mode != b->socket_mode)
		return false;
	if (a->has_router_mac && memcmp(a->router_mac, b->router_mac, 6))
		return false;
	if (a->has_gateway4 && memcmp(a->gateway4, b->gateway4, 4))
		return false;
	for (size_t i = 0; i < a->n_addrs; i++)
		if (a->addrs[i].family != b->addrs[i].family || a->addrs[i].cidr != b->addrs[i].cidr ||
		    memcmp(a->addrs[i].addr, b->addrs[i].addr, 16))
			return false;
	for (size_t i = 0; i < a->n_prefixes; i++)
		if (a->prefixes[i].family != b->prefixes[i].family ||
		    a->prefixes[i].cidr != b->prefixes[i].cidr ||
		    memcmp(a->prefixes[i].addr, b->prefixes[i].addr, 16))
			return false;
	return true;
}

/* ---- requests ---------------------------------------------------------- */

static void test_request_every_key(void)
{
	static const char body[] = "name=vm1\n"
				   "type=vhost-user\n"
				   "path=/run/weft/vm1.sock\n"
				   "mode=client\n"
				   "mac=52:54:00:AB:cd:01\n"
				   "router_mac=02:00:00:00:00:fe\n"
				   "gateway4=192.0.2.1\n"
				   "address=10.10.1.2\n"
				   "address=fd00:10::2\n"
				   "address=10.20.0.0/24\n"
				   "address=fd00:20::/64\n"
				   "prefix=2001:db8:1::/64\n"
				   "mtu=9000"; /* the last line may lack its '\n' */
	static const uint8_t v6[16] = { 0xfd, 0, 0, 0x10, [15] = 2 };
	static const uint8_t p6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 1 };
	struct port_config c;
	const char *why = NULL;

	CHECK(parse_req(body, &c, &why) == 0);
	CHECK(!strcmp(c.name, "vm1"));
	CHECK(c.type == PORT_VHOST_USER);
	CHECK(!strcmp(c.path, "/run/weft/vm1.sock"));
	CHECK(!c.server);
	CHECK(!memcmp(c.vm_mac, "\x52\x54\x00\xab\xcd\x01", 6));
	CHECK(c.has_router_mac && !memcmp(c.router_mac, "\x02\0\0\0\0\xfe", 6));
	CHECK(c.has_gateway4 && !memcmp(c.gateway4, "\xc0\x00\x02\x01", 4));
	CHECK(c.n_addrs == 4);
	CHECK(c.addrs[0].family == AF_INET && c.addrs[0].cidr == 32 &&
	      !memcmp(c.addrs[0].addr, "\x0a\x0a\x01\x02", 4));
	CHECK(c.addrs[1].family == AF_INET6 && c.addrs[1].cidr == 128 &&
	      !memcmp(c.addrs[1].addr, v6, 16));
	CHECK(c.addrs[2].family == AF_INET && c.addrs[2].cidr == 24);
	CHECK(c.addrs[3].family == AF_INET6 && c.addrs[3].cidr == 64);
	CHECK(c.n_prefixes == 1 && c.prefixes[0].family == AF_INET6 && c.prefixes[0].cidr == 64 &&
	      !memcmp(c.prefixes[0].addr, p6, 16));
	CHECK(c.mtu == 9000);

	/* The defaults: server mode, MTU 1500, no router MAC or gateway given. */
	CHECK(parse_req("name=t0\ntype=tap\nmac=52:54:00:00:00:01\n", &c, &why) == 0);
	CHECK(c.type == PORT_TAP && c.server && c.mtu == PORT_MTU_DEFAULT);
	CHECK(!c.has_router_mac && !c.has_gateway4 && !c.n_addrs && !c.path[0]);
	CHECK(parse_req("name=h\ntype=vhost-user\npath=/x.sock\nmac=52:54:00:00:00:01\n", &c, &why) ==
	      0);
	CHECK(c.server);
}

struct bad_case {
	const char *body; /* after a valid "name=vm1\ntype=tap\nmac=52:54:00:00:00:01\n" unless full */
	bool full;
	int err;
	const char *why; /* a substring of the reason */
};

static const struct bad_case bad_requests[] = {
	{ "hello\n", false, -EPROTO, "without '='" },
	{ "colour=blue\n", false, -EINVAL, "unknown key" },
	{ "Name=vm2\n", false, -EINVAL, "unknown key" }, /* the wire form is case-sensitive */
	{ "mac=52:54:00:00:00:02\n", false, -EINVAL, "twice" },
	{ "mtu=1500\nmtu=1500\n", false, -EINVAL, "twice" },
	{ "name=abcdefghijklmnop\ntype=tap\nmac=52:54:00:00:00:01\n", true, -EINVAL, "too long" },
	{ "name=abcdefghijklmno\ntype=tap\nmac=52:54:00:00:00:01\n", true, 0, NULL },
	{ "name=vm/1\ntype=tap\nmac=52:54:00:00:00:01\n", true, -EINVAL, "name must be" },
	{ "name=vm 1\ntype=tap\nmac=52:54:00:00:00:01\n", true, -EINVAL, "name must be" },
	{ "name=..\ntype=tap\nmac=52:54:00:00:00:01\n", true, -EINVAL, "name must be" },
	{ "name=\ntype=tap\nmac=52:54:00:00:00:01\n", true, -EINVAL, "name must be" },
	{ "type=tap\nmac=52:54:00:00:00:01\n", true, -EINVAL, "name must be" },
	{ "name=vm1\nmac=52:54:00:00:00:01\n", true, -EINVAL, "type must be" },
	{ "name=vm1\ntype=tun\nmac=52:54:00:00:00:01\n", true, -EINVAL, "type must be" },
	{ "name=vm1\ntype=tap\n", true, -EINVAL, "VM MAC missing" },
	{ "path=/run/x.sock\n", false, -EINVAL, "takes no path" },
	{ "mode=client\n", false, -EINVAL, "client mode" },
	{ "mode=listen\n", false, -EINVAL, "server or client" },
	{ "name=v\ntype=vhost-user\nmac=52:54:00:00:00:01\n", true, -EINVAL, "absolute" },
	{ "name=v\ntype=vhost-user\npath=run/x\nmac=52:54:00:00:00:01\n", true, -EINVAL, "absolute" },
	{ "name=v\ntype=vhost-user\npath=/run/#x\nmac=52:54:00:00:00:01\n", true, -EINVAL, "absolute" },
	{ "name=v\ntype=vhost-user\npath=/run/x\tb\nmac=52:54:00:00:00:01\n", true, -EINVAL,
	  "absolute" },
	{ "name=t\ntype=tap\nmac=52:54:00:00:00\n", true, -EINVAL, "bad MAC" },
	{ "name=t\ntype=tap\nmac=52:54:00:00:00:0g\n", true, -EINVAL, "bad MAC" },
	{ "name=t\ntype=tap\nmac=52-54-00-00-00-01\n", true, -EINVAL, "bad MAC" },
	{ "name=t\ntype=tap\nmac=52:54:00:00:00:01:\n", true, -EINVAL, "bad MAC" },
	{ "name=t\ntype=tap\nmac=01:00:5e:00:00:01\n", true, -EINVAL, "multicast" },
	{ "name=t\ntype=tap\nmac=00:00:00:00:00:00\n", true, -EINVAL, "zero" },
	{ "name=t\ntype=tap\nmac=02:77:65:66:74:01\n", true, -EINVAL, "equals the router" },
	{ "router_mac=52:54:00:00:00:01\n", false, -EINVAL, "equals the router" },
	{ "router_mac=ff:ff:ff:ff:ff:ff\n", false, -EINVAL, "router MAC" },
	{ "router_mac=00:00:00:00:00:00\n", false, -EINVAL, "router MAC" },
	{ "address=10.0.0.1/24\n", false, -EINVAL, "host bits" },
	{ "address=fd00::1/64\n", false, -EINVAL, "host bits" },
	{ "address=10.0.0.0/33\n", false, -EINVAL, "bad address" },
	{ "address=fd00::/129\n", false, -EINVAL, "bad address" },
	{ "address=10.0.0.0/\n", false, -EINVAL, "bad address" },
	{ "address=10.0.0.0/-1\n", false, -EINVAL, "bad address" },
	{ "address=10.0.0.256\n", false, -EINVAL, "bad address" },
	{ "address=fe80::1%eth0\n", false, -EINVAL, "bad address" },
	{ "address=host.example\n", false, -EINVAL, "bad address" },
	{ "address=\n", false, -EINVAL, "bad address" },
	{ "address=0.0.0.0\n", false, -EINVAL, "unicast IPv4" },
	{ "address=127.0.0.1\n", false, -EINVAL, "unicast IPv4" },
	{ "address=224.0.0.1\n", false, -EINVAL, "unicast IPv4" },
	{ "address=::\n", false, -EINVAL, "unicast IPv6" },
	{ "address=::1\n", false, -EINVAL, "unicast IPv6" },
	{ "address=ff02::1\n", false, -EINVAL, "unicast IPv6" },
	/* The router's EUI-64 link-local address. */
	{ "address=fe80::77:65ff:fe66:7401\n", false, -EINVAL, "unicast IPv6" },
	{ "address=10.1.1.1\naddress=10.1.1.1/32\n", false, -EINVAL, "twice" },
	{ "address=169.254.1.1\n", false, -EINVAL, "gateway4 is one of" },
	{ "address=10.1.1.1\ngateway4=10.1.1.1\n", false, -EINVAL, "gateway4 is one of" },
	{ "address=169.254.1.1\ngateway4=10.1.1.1\n", false, 0, NULL },
	{ "gateway4=239.1.1.1\n", false, -EINVAL, "gateway4 is not" },
	{ "gateway4=10.0.0\n", false, -EINVAL, "bad gateway4" },
	{ "gateway4=fd00::1\n", false, -EINVAL, "bad gateway4" },
	{ "prefix=10.0.0.0/24\n", false, -EINVAL, "bad RA prefix" },
	{ "prefix=fd00::\n", false, -EINVAL, "bad RA prefix" },
	{ "prefix=fd00::1/64\n", false, -EINVAL, "host bits" },
	{ "prefix=::/0\n", false, -EINVAL, "1..128" },
	{ "prefix=fe80::/64\n", false, -EINVAL, "link-local" },
	{ "prefix=ff00::/8\n", false, -EINVAL, "multicast" },
	{ "prefix=fd00:1::/64\nprefix=fd00:1::/64\n", false, -EINVAL, "twice" },
	{ "prefix=fd00:1::/64\nprefix=fd00:2::/64\nprefix=fd00:3::/64\nprefix=fd00:4::/64\n"
	  "prefix=fd00:5::/64\n",
	  false, -EINVAL, "too many RA" },
	{ "mtu=1279\n", false, -EINVAL, "MTU not in" },
	{ "mtu=0\n", false, -EINVAL, "MTU not in" },
	{ "mtu=9001\n", false, -EINVAL, "MTU not in" },
	{ "mtu=1280\n", false, 0, NULL },
	{ "mtu=9000\n", false, 0, NULL },
	{ "mtu=-1\n", false, -EINVAL, "bad MTU" },
	{ "mtu=1500x\n", false, -EINVAL, "bad MTU" },
	{ "mtu=4294967296\n", false, -EINVAL, "bad MTU" },
	{ "mtu=\n", false, -EINVAL, "bad MTU" },
	{ "mtu= 1500\n", false, -EINVAL, "bad MTU" },
	{ "\n", false, -EPROTO, "without '='" },
};

static void test_request_errors(void)
{
	for (size_t i = 0; i < sizeof(bad_requests) / sizeof(bad_requests[0]); i++) {
		const struct bad_case *t = &bad_requests[i];
		char body[1024];
		struct port_config c;
		const char *why = NULL;
		int ret;

		snprintf(body, sizeof(body), "%s%s",
			 t->full ? "" : "name=vm1\ntype=tap\nmac=52:54:00:00:00:01\n", t->body);
		ret = parse_req(body, &c, &why);
		if (ret != t->err || (t->why && (!why || !strstr(why, t->why)))) {
			fprintf(stderr, "request %zu %s: got %d (%s), want %d (%s)\n", i, t->body,
				ret, why ? why : "-", t->err, t->why ? t->why : "-");
			failures++;
		}
		/* A failed parse leaves the defaults, not half a port. */
		if (ret)
			CHECK(!c.name[0] && !c.n_addrs && c.mtu == PORT_MTU_DEFAULT);
	}
}

/* The limits: 16 addresses, 8 hosts of a family, a value with a NUL. */
static void test_request_limits(void)
{
	char body[2048];
	struct port_config c;
	const char *why = NULL;
	size_t o;

	o = (size_t)snprintf(body, sizeof(body), "name=t\ntype=tap\nmac=52:54:00:00:00:01\n");
	for (int i = 0; i < PORT_MAX_ADDRS; i++)
		o += (size_t)snprintf(body + o, sizeof(body) - o, "address=10.%d.0.0/16\n", i);
	CHECK(parse_req(body, &c, &why) == 0 && c.n_addrs == PORT_MAX_ADDRS);
	snprintf(body + o, sizeof(body) - o, "address=10.99.0.0/16\n");
	CHECK(parse_req(body, &c, &why) == -EINVAL && strstr(why, "too many addresses"));

	o = (size_t)snprintf(body, sizeof(body), "name=t\ntype=tap\nmac=52:54:00:00:00:01\n");
	for (int i = 0; i < 8; i++)
		o += (size_t)snprintf(body + o, sizeof(body) - o, "address=fd00::%d\n", i + 1);
	CHECK(parse_req(body, &c, &why) == 0);
	snprintf(body + o, sizeof(body) - o, "address=fd00::99\n");
	CHECK(parse_req(body, &c, &why) == -EINVAL && strstr(why, "8 host addresses"));

	/* Exactly len bytes are read: a NUL inside a value is refused. */
	static const char nul[] = "name=t\0x\ntype=tap\nmac=52:54:00:00:00:01\n";
	CHECK(port_text_parse_request(nul, sizeof(nul) - 1, &c, &why) == -EINVAL);
	/* And a body cut anywhere never reads past its end (ASan watches). */
	static const char whole[] = "name=vm1\ntype=tap\nmac=52:54:00:00:00:01\naddress=10.0.0.2\n";
	for (size_t n = 0; n <= sizeof(whole) - 1; n++) {
		char *cut = malloc(n ? n : 1);

		memcpy(cut, whole, n);
		port_text_parse_request(cut, n, &c, &why);
		free(cut);
	}
	/* Path: 107 bytes fit, 108 do not. */
	char path[128];
	memset(path, 'p', sizeof(path));
	path[0] = '/';
	path[107] = '\0';
	snprintf(body, sizeof(body), "name=v\ntype=vhost-user\nmac=52:54:00:00:00:01\npath=%s\n", path);
	CHECK(parse_req(body, &c, &why) == 0 && strlen(c.path) == 107);
	path[107] = 'p';
	path[108] = '\0';
	snprintf(body, sizeof(body), "name=v\ntype=vhost-user\nmac=52:54:00:00:00:01\npath=%s\n", path);
	CHECK(parse_req(body, &c, &why) == -EINVAL && strstr(why, "path too long"));
}

static void test_parse_name(void)
{
	char name[PORT_NAME_MAX];
	const char *why = NULL;

	CHECK(port_text_parse_name("name=vm1\n", 9, name, &why) == 0 && !strcmp(name, "vm1"));
	CHECK(port_text_parse_name("name=vm1", 8, name, &why) == 0 && !strcmp(name, "vm1"));
	CHECK(port_text_parse_name("", 0, name, &why) == -EINVAL && strstr(why, "no name"));
	CHECK(port_text_parse_name("name=a\nname=b\n", 14, name, &why) == -EINVAL);
	CHECK(port_text_parse_name("type=tap\n", 9, name, &why) == -EINVAL);
	CHECK(port_text_parse_name("vm1\n", 4, name, &why) == -EPROTO);
	CHECK(port_text_parse_name("name=abcdefghijklmnop\n", 22, name, &why) == -EINVAL);
}

/* ---- random valid ports, for the round trips and the plan -------------- */

/* Port k of a family of ports whose addresses never collide (k picks
 * them); variant changes the configuration without changing the name. */
static void random_port(struct port_config *c, unsigned int k, unsigned int variant)
{
	const char *why = NULL;
	size_t n4 = rnd(4), n6 = rnd(4), nr = rnd(3);

	port_config_init(c);
	snprintf(c->name, sizeof(c->name), "p%u", k);
	if (rnd(3) == 0) {
		c->type = PORT_VHOST_USER;
		snprintf(c->path, sizeof(c->path), "/run/weft/p%u-%u.sock", k, variant);
		c->server = rnd(2);
		if (c->server && rnd(2)) {
			c->has_socket_uid = true;
			c->socket_uid = 64000 + k;
			c->has_socket_gid = rnd(2);
			c->socket_gid = c->has_socket_gid ? 900 + variant : 0;
			c->socket_mode = rnd(2) ? 0660 : 0;
		}
	} else {
		c->type = PORT_TAP;
	}
	c->vm_mac[0] = 0x52;
	c->vm_mac[1] = 0x54;
	c->vm_mac[4] = (uint8_t)k;
	c->vm_mac[5] = (uint8_t)variant;
	if (rnd(4) == 0) {
		memcpy(c->router_mac, "\x02\x00\x00\x00\x00\x01", 6);
		c->router_mac[5] = (uint8_t)(variant | 1);
		c->has_router_mac = true;
	}
	for (size_t i = 0; i < n4; i++) {
		struct ip_prefix *a = &c->addrs[c->n_addrs++];

		a->family = AF_INET;
		a->cidr = 32;
		memcpy(a->addr, (uint8_t[]){ 10, (uint8_t)k, (uint8_t)i, (uint8_t)(2 + variant) }, 4);
	}
	for (size_t i = 0; i < n6; i++) {
		struct ip_prefix *a = &c->addrs[c->n_addrs++];

		a->family = AF_INET6;
		a->cidr = 128;
		memcpy(a->addr, (uint8_t[]){ 0xfd, 0, 0, (uint8_t)k, [14] = (uint8_t)i, [15] = 9 }, 16);
	}
	for (size_t i = 0; i < nr; i++) {
		struct ip_prefix *a = &c->addrs[c->n_addrs++];

		a->family = i ? AF_INET6 : AF_INET;
		a->cidr = i ? 64 : 24;
		if (i)
			memcpy(a->addr, (uint8_t[]){ 0xfd, 1, (uint8_t)k, (uint8_t)(100 + i) }, 4);
		else
			memcpy(a->addr, (uint8_t[]){ 10, 200, (uint8_t)k, 0 }, 4);
	}
	if (n4 && rnd(2)) {
		memcpy(c->gateway4, "\x0a\x00\x00\x01", 4);
		c->has_gateway4 = true;
	}
	for (size_t i = 0, np = rnd(3); i < np; i++) {
		struct ip_prefix *p = &c->prefixes[c->n_prefixes++];

		p->family = AF_INET6;
		memcpy(p->addr, (uint8_t[]){ 0x20, 0x01, 0x0d, 0xb8, (uint8_t)k, (uint8_t)i }, 6);
		p->cidr = 48 + (uint8_t)(16 * (i % 2));
	}
	c->mtu = rnd(3) ? PORT_MTU_DEFAULT : PORT_MTU_MIN + rnd(PORT_MTU_MAX - PORT_MTU_MIN + 1);
	if (port_config_check(c, &why)) {
		fprintf(stderr, "generator made a bad port: %s\n", why);
		failures++;
	}
}

static void test_round_trips(void)
{
	for (int round = 0; round < 300; round++) {
		struct port_config c, back, *files = NULL, many[5];
		struct port_info info[3], *infos = NULL;
		const char *why = NULL;
		char *text = NULL;
		size_t len = 0, n = 0;
		int line = -1;

		random_port(&c, (unsigned int)round % 200, (unsigned int)round % 7);
		CHECK(port_text_format_request(&c, &text, &len) == 0 && strlen(text) == len);
		CHECK(port_text_parse_request(text, len, &back, &why) == 0);
		CHECK(config_identical(&c, &back));
		free(text);

		/* The list shows what is in effect; counters come back exactly. */
		for (int i = 0; i < 3; i++) {
			memset(&info[i], 0, sizeof(info[i]));
			random_port(&info[i].cfg, (unsigned int)(round + i), 0);
			info[i].connected = rnd(2);
			for (size_t k = 0; k < port_text_n_counters; k++)
				*(uint64_t *)((char *)&info[i] + port_text_counters[k].offset) =
					((uint64_t)rnd(1u << 31) << 33) ^ rnd(1000) ^ k;
		}
		CHECK(port_text_format_info(info, 3, &text, &len) == 0);
		CHECK(port_text_parse_info(text, len, &infos, &n, &why) == 0 && n == 3);
		for (size_t i = 0; infos && i < 3 && n == 3; i++) {
			struct port_config want = info[i].cfg;

			port_text_normalize(&want);
			CHECK(config_identical(&want, &infos[i].cfg));
			CHECK(port_text_same_config(&info[i].cfg, &infos[i].cfg));
			CHECK(infos[i].connected == info[i].connected);
			for (size_t k = 0; k < port_text_n_counters; k++) {
				size_t off = port_text_counters[k].offset;

				CHECK(*(uint64_t *)((char *)&infos[i] + off) ==
				      *(uint64_t *)((char *)&info[i] + off));
			}
		}
		free(infos);
		free(text);

		/* A file of distinct ports. */
		for (int i = 0; i < 5; i++)
			random_port(&many[i], (unsigned int)(round + 10 * i) % 250, 1);
		CHECK(port_text_format_file(many, 5, &text, &len) == 0);
		CHECK(port_text_parse_file(text, len, &files, &n, &line, &why) == 0 && n == 5);
		for (size_t i = 0; files && i < 5 && n == 5; i++)
			CHECK(config_identical(&many[i], &files[i]));
		free(files);
		free(text);
	}
}

/* ---- port-list replies ------------------------------------------------- */

static void test_info_known(void)
{
	struct port_info p = { 0 }, *got = NULL;
	const char *why = NULL;
	char *text = NULL;
	size_t len, n;

	port_config_init(&p.cfg);
	strcpy(p.cfg.name, "vm1");
	p.cfg.type = PORT_TAP;
	memcpy(p.cfg.vm_mac, "\x52\x54\x00\x00\x00\x01", 6);
	p.cfg.addrs[0] = (struct ip_prefix){ .family = AF_INET, .addr = { 10, 10, 1, 2 }, .cidr = 32 };
	p.cfg.n_addrs = 1;
	p.cfg.mtu = 0;
	p.connected = true;
	p.rx_packets = 7;
	p.drop_spoofed_source = 3;
	p.ndp_drops = 18446744073709551615ull;
	CHECK(port_text_format_info(&p, 1, &text, &len) == 0);
	/* The defaults in effect are written out. */
	static const char head[] = "port=vm1\ntype=tap\nmac=52:54:00:00:00:01\n"
				   "router_mac=02:77:65:66:74:01\ngateway4=169.254.1.1\n"
				   "address=10.10.1.2/32\nmtu=1500\nconnected=true\n"
				   "rx_packets=7\nrx_bytes=0\n";
	CHECK(len > sizeof(head) && !strncmp(text, head, sizeof(head) - 1));
	CHECK(strstr(text, "\ndrop_spoofed_source=3\n"));
	CHECK(strstr(text, "\nndp_drops=18446744073709551615\n"));
	for (size_t k = 0; k < port_text_n_counters; k++) {
		char key[64];

		snprintf(key, sizeof(key), "\n%s=", port_text_counters[k].key);
		CHECK(strstr(text, key));
	}
	free(text);

	/* Nothing to list is an empty text. */
	CHECK(port_text_format_info(NULL, 0, &text, &len) == 0 && len == 0 && !*text);
	free(text);
	CHECK(port_text_parse_info("", 0, &got, &n, &why) == 0 && n == 0 && !got);

	/* A newer daemon's extra keys are skipped; missing counters read 0. */
	static const char newer[] = "port=a\ntype=tap\nmac=52:54:00:00:00:01\nflux=9\n"
				    "rx_packets=5\nport=b\ntype=tap\nmac=52:54:00:00:00:02\n";
	CHECK(port_text_parse_info(newer, sizeof(newer) - 1, &got, &n, &why) == 0 && n == 2);
	CHECK(got && got[0].rx_packets == 5 && got[1].rx_packets == 0 && !strcmp(got[1].cfg.name, "b"));
	free(got);

	static const struct {
		const char *text;
		int err;
	} bad[] = {
		{ "type=tap\n", -EINVAL },
		{ "port=a\ntype=tap\nmac=52:54:00:00:00:01\nrx_packets=x\n", -EINVAL },
		{ "port=a\ntype=tap\nmac=52:54:00:00:00:01\nrx_packets=1\nrx_packets=1\n", -EINVAL },
		{ "port=a\ntype=tap\nmac=52:54:00:00:00:01\nrx_packets=18446744073709551616\n", -EINVAL },
		{ "port=a\ntype=tap\nmac=52:54:00:00:00:01\nconnected=yes\n", -EINVAL },
		{ "port=a\ntype=tap\nmac=52:54:00:00:00:01\nconnected=true\nconnected=true\n", -EINVAL },
		{ "port=a\ntype=tap\n", -EINVAL },
		{ "port=a\ntype=tap\nmac=52:54:00:00:00:01\ngarbage\n", -EPROTO },
		{ "port=a\ntype=tap\nmac=52:54:00:00:00:01\nport=a b\n", -EINVAL },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int ret = port_text_parse_info(bad[i].text, strlen(bad[i].text), &got, &n, &why);

		if (ret != bad[i].err) {
			fprintf(stderr, "info %zu: got %d, want %d\n", i, ret, bad[i].err);
			failures++;
		}
		CHECK(!got && !n);
	}

	/* No more ports than a device holds. */
	size_t cap = (PORT_MAX + 1) * 48, o = 0;
	char *many = malloc(cap);
	for (int i = 0; i <= PORT_MAX; i++)
		o += (size_t)snprintf(many + o, cap - o, "port=p%d\ntype=tap\nmac=52:54:00:00:01:%02x\n",
				      i, i & 0xff);
	CHECK(port_text_parse_info(many, o, &got, &n, &why) == -EINVAL && strstr(why, "more ports"));
	free(many);
}

/* ---- ports files ------------------------------------------------------- */

static void test_file_known(void)
{
	static const char file[] =
		"# the ports of this host\n"
		"[Port]\n"
		"Name = vm1\n"
		"Type = tap\n"
		"MAC = 52:54:00:00:00:01\n"
		"Address = 10.10.1.2/32, fd00:10::2/128\n"
		"MTU = 1500\n"
		"\n"
		"[port]   # section names in any case\r\n"
		"  name=vm2\r\n"
		"TYPE\t=\tvhost-user\n"
		"path = /run/vm 2.sock   # a comment after a value\n"
		"Mode = client\n"
		"mac = 52:54:00:00:00:02\n"
		"routermac = 02:00:00:00:00:07\n"
		"gateway4 = 10.10.2.1\n"
		"address = 10.10.2.2\n"
		"ADDRESS = 10.20.0.0/24,fd00:20::/64\n"
		"Prefix = 2001:db8:2::/64, 2001:db8:3::/64\n";
	struct port_config *p = NULL;
	const char *why = NULL;
	size_t n = 0;
	int line = -1;

	CHECK(port_text_parse_file(file, sizeof(file) - 1, &p, &n, &line, &why) == 0);
	CHECK(n == 2 && line == 0);
	if (n == 2 && p) {
		CHECK(!strcmp(p[0].name, "vm1") && p[0].type == PORT_TAP && p[0].n_addrs == 2);
		CHECK(p[0].addrs[1].family == AF_INET6 && p[0].addrs[1].cidr == 128);
		CHECK(p[0].mtu == 1500 && !p[0].has_gateway4 && !p[0].has_router_mac);
		CHECK(!strcmp(p[1].name, "vm2") && p[1].type == PORT_VHOST_USER);
		CHECK(!strcmp(p[1].path, "/run/vm 2.sock") && !p[1].server);
		CHECK(p[1].has_router_mac && p[1].router_mac[5] == 7);
		CHECK(p[1].has_gateway4 && p[1].gateway4[3] == 1);
		CHECK(p[1].n_addrs == 3 && p[1].addrs[2].cidr == 64 && p[1].n_prefixes == 2);
	}
	free(p);

	CHECK(port_text_parse_file("", 0, &p, &n, &line, &why) == 0 && n == 0 && !p);
	CHECK(port_text_parse_file("# nothing\n\n", 11, &p, &n, &line, &why) == 0 && n == 0);
}

static const struct bad_file {
	const char *text;
	int err, line;
	const char *why;
} bad_files[] = {
	{ "Name = vm1\n", -EINVAL, 1, "outside a [Port]" },
	{ "[Interface]\n", -EINVAL, 1, "unknown section" },
	{ "[Port\n", -EINVAL, 1, "unknown section" },
	{ "[Port]\nName vm1\n", -EINVAL, 2, "without '='" },
	{ "[Port]\nName = vm1\nColour = red\n", -EINVAL, 3, "unknown key" },
	{ "[Port]\nName = vm1\nName = vm2\n", -EINVAL, 3, "twice" },
	{ "[Port]\nName =\n", -EINVAL, 2, "empty value" },
	{ "[Port]\nName = vm1\nAddress = 10.0.0.1,,10.0.0.2\n", -EINVAL, 3, "empty item" },
	{ "[Port]\nName = vm1\nAddress = 10.0.0.1,\n", -EINVAL, 3, "empty item" },
	{ "[Port]\nName = vm1\nMAC = 52:54:00:00:00:1\n", -EINVAL, 3, "bad MAC" },
	{ "[Port]\nName=vm1\nType=tap\nMAC=52:54:00:00:00:01\nMTU = 100000\n", -EINVAL, 5,
	  "MTU not in" },
	/* A port that fails the check is reported at its [Port] line. */
	{ "# c\n[Port]\nName = vm1\nType = tap\n", -EINVAL, 2, "VM MAC missing" },
	{ "[Port]\nName=a\nType=tap\nMAC=52:54:00:00:00:01\nAddress=10.0.0.1/8\n", -EINVAL, 1,
	  "host bits" },
	{ "[Port]\nName=a\nType=tap\nMAC=52:54:00:00:00:01\n\n[Port]\nName=a\nType=tap\n"
	  "MAC=52:54:00:00:00:02\n",
	  -EINVAL, 6, "name used by an earlier" },
	{ "[Port]\nName=a\nType=tap\nMAC=52:54:00:00:00:01\nAddress=10.0.0.1\n[Port]\nName=b\n"
	  "Type=tap\nMAC=52:54:00:00:00:02\nAddress=10.0.0.2, 10.0.0.1\n",
	  -EINVAL, 6, "address used by an earlier" },
	{ "[Port]\nName=a\nType=tap\nMAC=52:54:00:00:00:01\n[Port]\nName=b\nType=tap\n", -EINVAL, 5,
	  "VM MAC missing" },
};

static void test_file_errors(void)
{
	for (size_t i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
		const struct bad_file *t = &bad_files[i];
		struct port_config *p = (void *)1;
		const char *why = NULL;
		size_t n = 99;
		int line = -1, ret;

		ret = port_text_parse_file(t->text, strlen(t->text), &p, &n, &line, &why);
		if (ret != t->err || line != t->line || !why || !strstr(why, t->why)) {
			fprintf(stderr, "file %zu: got %d line %d (%s), want %d line %d (%s)\n", i, ret,
				line, why ? why : "-", t->err, t->line, t->why);
			failures++;
		}
		CHECK(!p && !n);
	}

	/* A NUL byte, reported on its line. */
	static const char nul[] = "[Port]\nName = a\0b\n";
	struct port_config *p = NULL;
	const char *why = NULL;
	size_t n;
	int line;

	CHECK(port_text_parse_file(nul, sizeof(nul) - 1, &p, &n, &line, &why) == -EINVAL &&
	      line == 2 && strstr(why, "NUL"));

	/* 256 ports fit, 257 do not; a file over 1 MiB is refused whole. */
	size_t cap = 300 * 80, o = 0;
	char *big = malloc(PORT_TEXT_MAX_FILE + 2);
	for (int i = 0; i < PORT_MAX; i++)
		o += (size_t)snprintf(big + o, cap - o, "[Port]\nName=p%d\nType=tap\nMAC=52:54:00:00:%02x:%02x\n",
				      i, i >> 8, i & 0xff);
	CHECK(port_text_parse_file(big, o, &p, &n, &line, &why) == 0 && n == PORT_MAX);
	free(p);
	o += (size_t)snprintf(big + o, cap - o, "[Port]\nName=x\nType=tap\nMAC=52:54:00:01:00:00\n");
	CHECK(port_text_parse_file(big, o, &p, &n, &line, &why) == -E2BIG &&
	      line == 4 * PORT_MAX + 1);
	memset(big, '#', PORT_TEXT_MAX_FILE + 1);
	CHECK(port_text_parse_file(big, PORT_TEXT_MAX_FILE, &p, &n, &line, &why) == 0 && n == 0);
	CHECK(port_text_parse_file(big, PORT_TEXT_MAX_FILE + 1, &p, &n, &line, &why) == -E2BIG &&
	      line == 0);
	free(big);
}

/* ---- comparing and the load plan --------------------------------------- */

static void test_same_config(void)
{
	struct port_config a, b;
	const char *why;

	CHECK(parse_req("name=a\ntype=tap\nmac=52:54:00:00:00:01\naddress=10.0.0.2\naddress=fd00::2\n",
			&a, &why) == 0);
	CHECK(parse_req("name=a\ntype=tap\nmac=52:54:00:00:00:01\naddress=fd00::2\naddress=10.0.0.2\n"
			"router_mac=02:77:65:66:74:01\ngateway4=169.254.1.1\nmtu=1500\n",
			&b, &why) == 0);
	CHECK(port_text_same_config(&a, &b));
	a.mtu = 0;
	CHECK(port_text_same_config(&a, &b));
	b.mtu = 1400;
	CHECK(!port_text_same_config(&a, &b));
	b.mtu = 1500;
	b.addrs[0].cidr = 127;
	CHECK(!port_text_same_config(&a, &b));
	b.addrs[0].cidr = 128;
	b.gateway4[3] = 2;
	CHECK(!port_text_same_config(&a, &b));
	b.gateway4[3] = 1;
	b.vm_mac[5] = 2;
	CHECK(!port_text_same_config(&a, &b));
}

/* A naive device: a list of configurations by name. */
struct model {
	struct port_info p[64];
	size_t n;
};

static void model_apply(struct model *m, const struct port_step *s, size_t n_steps,
			const struct port_config *want, const struct port_info *have, size_t n_have)
{
	bool seen_add = false;

	for (size_t i = 0; i < n_steps; i++) {
		if (s[i].kind == PORT_STEP_DEL) {
			CHECK(!seen_add); /* removals first: they free names and addresses */
			CHECK(s[i].index < n_have);
			for (size_t j = 0; j < m->n; j++) {
				if (!strcmp(m->p[j].cfg.name, have[s[i].index].cfg.name)) {
					m->p[j] = m->p[--m->n];
					break;
				}
			}
		} else {
			seen_add = true;
			for (size_t j = 0; j < m->n; j++) {
				CHECK(strcmp(m->p[j].cfg.name, want[s[i].index].name));
				for (size_t k = 0; k < want[s[i].index].n_addrs; k++)
					for (size_t l = 0; l < m->p[j].cfg.n_addrs; l++)
						CHECK(memcmp(&m->p[j].cfg.addrs[l].addr,
							     &want[s[i].index].addrs[k].addr, 16) ||
						      m->p[j].cfg.addrs[l].cidr !=
							      want[s[i].index].addrs[k].cidr);
			}
			memset(&m->p[m->n], 0, sizeof(m->p[0]));
			m->p[m->n++].cfg = want[s[i].index];
		}
	}
}

static void test_plan(void)
{
	for (int round = 0; round < 500; round++) {
		struct model m = { 0 }, before;
		struct port_config want[16];
		struct port_step *steps = NULL;
		const char *why = NULL;
		size_t n_want = rnd(8), n_steps = 0;
		bool prune = rnd(2);
		unsigned int base = rnd(4) * 8;

		/* Ports 0..15 by number; the device and the file pick some, with
		 * the same or another variant. Numbers never share addresses,
		 * and the file's numbers (2i or 2i+1) are distinct. */
		for (unsigned int k = 0; k < 16; k++) {
			if (rnd(2))
				random_port(&m.p[m.n++].cfg, base + k, rnd(2));
		}
		for (size_t i = 0; i < n_want; i++)
			random_port(&want[i], base + (unsigned int)(i * 2 + rnd(2)), rnd(2));
		before = m;
		CHECK(port_text_plan(want, n_want, before.p, before.n, prune, &steps, &n_steps, &why) ==
		      0);
		model_apply(&m, steps, n_steps, want, before.p, before.n);
		free(steps);

		/* Every wanted port is there as wanted... */
		for (size_t i = 0; i < n_want; i++) {
			size_t found = 0;

			for (size_t j = 0; j < m.n; j++)
				found += !strcmp(m.p[j].cfg.name, want[i].name) &&
					 port_text_same_config(&m.p[j].cfg, &want[i]);
			CHECK(found == 1);
		}
		/* ...and the others only without prune, untouched. */
		size_t others = 0;

		for (size_t j = 0; j < before.n; j++) {
			bool wanted = false, kept = false;

			for (size_t i = 0; i < n_want; i++)
				wanted |= !strcmp(want[i].name, before.p[j].cfg.name);
			for (size_t i = 0; i < m.n; i++)
				kept |= !strcmp(m.p[i].cfg.name, before.p[j].cfg.name);
			if (!wanted) {
				CHECK(kept == !prune);
				others++;
			}
		}
		CHECK(m.n == n_want + (prune ? 0 : others));

		/* A second plan has nothing to do. */
		CHECK(port_text_plan(want, n_want, m.p, m.n, prune, &steps, &n_steps, &why) == 0);
		CHECK(n_steps == 0 && !steps);
		free(steps);
	}

	/* An address of the file held by a port that stays: refused. */
	struct port_info have = { 0 };
	struct port_config w;
	struct port_step *steps = NULL;
	const char *why = NULL;
	size_t n = 0;

	CHECK(parse_req("name=old\ntype=tap\nmac=52:54:00:00:00:01\naddress=10.0.0.2\n", &have.cfg,
			&why) == 0);
	CHECK(parse_req("name=new\ntype=tap\nmac=52:54:00:00:00:02\naddress=10.0.0.2\n", &w, &why) ==
	      0);
	CHECK(port_text_plan(&w, 1, &have, 1, false, &steps, &n, &why) == -EEXIST &&
	      strstr(why, "--prune") && !steps);
	CHECK(port_text_plan(&w, 1, &have, 1, true, &steps, &n, &why) == 0 && n == 2 &&
	      steps[0].kind == PORT_STEP_DEL && !steps[0].replace && steps[1].kind == PORT_STEP_ADD);
	free(steps);
	/* A changed port is replaced: del then add, both marked. */
	w = have.cfg;
	w.mtu = 9000;
	CHECK(port_text_plan(&w, 1, &have, 1, false, &steps, &n, &why) == 0 && n == 2 &&
	      steps[0].replace && steps[1].replace);
	free(steps);
}

/* A port that exists keeps the addresses it has; a new one the file's. */
static void test_keep_registered(void)
{
	struct port_info have = { 0 };
	struct port_config w, fresh;
	const char *why = NULL;

	CHECK(parse_req("name=vm1\ntype=tap\nmac=52:54:00:00:00:01\naddress=10.0.0.2\n"
			"address=fd00::2\n", &have.cfg, &why) == 0);
	CHECK(parse_req("name=vm1\ntype=tap\nmac=52:54:00:00:00:01\naddress=10.0.0.9\n", &w,
			&why) == 0);
	CHECK(port_text_keep_registered(&w, &have, 1));
	CHECK(w.n_addrs == 2 && port_text_same_config(&w, &have.cfg));
	/* Again: the addresses are the same now, nothing to say. */
	CHECK(!port_text_keep_registered(&w, &have, 1) && w.n_addrs == 2);
	CHECK(parse_req("name=vm2\ntype=tap\nmac=52:54:00:00:00:02\naddress=10.0.0.3\n", &fresh,
			&why) == 0);
	CHECK(!port_text_keep_registered(&fresh, &have, 1));
	CHECK(fresh.n_addrs == 1 && fresh.addrs[0].family == AF_INET && fresh.addrs[0].addr[3] == 3);
	CHECK(!port_text_keep_registered(&fresh, NULL, 0));
}

/* The vhost-user socket's owner, group and mode: numbers and names, and
 * where they are refused. */
static void test_socket_owner(void)
{
	static const char base[] = "name=vu\ntype=vhost-user\npath=/run/weft/vu.sock\n"
				   "mac=52:54:00:00:00:01\n";
	static const struct {
		const char *extra, *why; /* why NULL: accepted */
	} cases[] = {
		{ "socket_owner=64055\nsocket_group=0\nsocket_mode=0660\n", NULL },
		{ "socket_owner=root\nsocket_group=root\nsocket_mode=660\n", NULL },
		{ "socket_mode=1777\n", "octal" },
		{ "socket_mode=0\n", "octal" },
		{ "socket_mode=0680\n", "octal" },
		{ "socket_owner=no-such-user-weft\n", "no such user" },
		{ "socket_group=no-such-group-weft\n", "no such group" },
		{ "socket_owner=4294967295\n", "no such user" },
		{ "mode=client\nsocket_owner=0\n", "server mode" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char body[512];
		struct port_config c;
		const char *why = NULL;
		int ret;

		snprintf(body, sizeof(body), "%s%s", base, cases[i].extra);
		ret = parse_req(body, &c, &why);
		if (cases[i].why ? ret != -EINVAL || !why || !strstr(why, cases[i].why) : ret != 0) {
			fprintf(stderr, "socket case %zu: got %d (%s)\n", i, ret, why ? why : "-");
			failures++;
		}
		if (i == 0)
			CHECK(!ret && c.has_socket_uid && c.socket_uid == 64055 && c.has_socket_gid &&
			      c.socket_gid == 0 && c.socket_mode == 0660);
		if (i == 1)
			CHECK(!ret && c.socket_uid == 0 && c.socket_gid == 0 && c.socket_mode == 0660);
	}
	/* A tap port takes none of them. */
	{
		struct port_config c;
		const char *why = NULL;

		CHECK(parse_req("name=t\ntype=tap\nmac=52:54:00:00:00:01\nsocket_mode=0660\n", &c,
				&why) == -EINVAL && why && strstr(why, "server mode"));
	}
}

int main(void)
{
	test_request_every_key();
	test_request_errors();
	test_request_limits();
	test_parse_name();
	test_round_trips();
	test_info_known();
	test_file_known();
	test_file_errors();
	test_same_config();
	test_plan();
	test_keep_registered();
	test_socket_owner();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("port text: all checks passed\n");
	return 0;
}
