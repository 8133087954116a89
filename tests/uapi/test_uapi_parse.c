/* The UAPI set parser and get formatter: known answers for what wg(8) sends
 * and what wireguard-go prints, a table of malformed requests with the errno
 * wireguard-go answers, IPv6 formatting checked against inet_ntop, and random
 * mutations that must never crash the parser. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "wg/uapi.h"

#define CHECK(cond)                                                                 \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, \
				#cond);                                             \
			exit(1);                                                    \
		}                                                                   \
	} while (0)

#define K64(c) c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c \
	c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c
#define KA K64("a")
#define KB K64("b")
#define KC K64("c")
#define KZ K64("0")

static int parse(const char *s, struct wg_device_config *cfg)
{
	return wg_uapi_parse_set((const uint8_t *)s, strlen(s), cfg);
}

static bool is_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		if (*b++)
			return false;
	return true;
}

/* An allowed IP's IPv4 address as a number. */
static uint32_t addr4(const uint8_t *a)
{
	return (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
}

static void fill(uint8_t key[WG_KEY_LEN], uint8_t v)
{
	memset(key, v, WG_KEY_LEN);
}

static bool sockaddr_same(const union wg_sockaddr *a, const union wg_sockaddr *b)
{
	return wg_sockaddr_equal(a, b);
}

/* Field-wise equality of two parsed configurations. */
static bool config_equal(const struct wg_device_config *a, const struct wg_device_config *b)
{
	size_t i, j;

	if (a->has_private_key != b->has_private_key ||
	    memcmp(a->private_key, b->private_key, WG_KEY_LEN) ||
	    a->has_listen_port != b->has_listen_port || a->listen_port != b->listen_port ||
	    a->has_fwmark != b->has_fwmark || a->fwmark != b->fwmark ||
	    a->replace_peers != b->replace_peers || a->n_peers != b->n_peers)
		return false;
	for (i = 0; i < a->n_peers; i++) {
		const struct wg_peer_config *p = &a->peers[i], *q = &b->peers[i];

		if (memcmp(p->public_key, q->public_key, WG_KEY_LEN) || p->remove != q->remove ||
		    p->update_only != q->update_only ||
		    p->replace_allowed_ips != q->replace_allowed_ips ||
		    p->has_preshared_key != q->has_preshared_key ||
		    memcmp(p->preshared_key, q->preshared_key, WG_KEY_LEN) ||
		    p->has_endpoint != q->has_endpoint ||
		    (p->has_endpoint && !sockaddr_same(&p->endpoint, &q->endpoint)) ||
		    p->has_keepalive != q->has_keepalive ||
		    p->persistent_keepalive != q->persistent_keepalive ||
		    p->n_allowed_ips != q->n_allowed_ips)
			return false;
		for (j = 0; j < p->n_allowed_ips; j++) {
			const struct wg_allowed_ip *x = &p->allowed_ips[j], *y = &q->allowed_ips[j];

			if (!ip_prefix_equal(&x->prefix, &y->prefix) || x->remove != y->remove ||
			    memcmp(x->prefix.addr, y->prefix.addr, 16))
				return false;
		}
	}
	return true;
}

/* A get reply minus what a set request may not carry: the get-only keys, the
 * errno line and the final empty line. */
static char *strip_get_only(const char *text)
{
	static const char *const get_only[] = {
		"last_handshake_time_sec=", "last_handshake_time_nsec=", "tx_bytes=", "rx_bytes=",
		"errno=",
	};
	char *out = calloc(1, strlen(text) + 1), *o = out;
	const char *line = text, *nl;
	size_t i, n;
	bool keep;

	CHECK(out);
	for (; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		CHECK(nl);
		n = (size_t)(nl - line) + 1;
		keep = n > 1;
		for (i = 0; i < sizeof(get_only) / sizeof(get_only[0]); i++)
			if (!strncmp(line, get_only[i], strlen(get_only[i])))
				keep = false;
		if (keep) {
			memcpy(o, line, n);
			o += n;
		}
	}
	return out;
}

static void test_round_trip(void)
{
	static const char text[] =
		"private_key=" K64("f") "\n"
		"listen_port=51820\n"
		"fwmark=4660\n"
		"public_key=" KA "\n"
		"preshared_key=" KB "\n"
		"protocol_version=1\n"
		"endpoint=192.0.2.1:51820\n"
		"persistent_keepalive_interval=25\n"
		"allowed_ip=10.0.0.0/24\n"
		"allowed_ip=fd00::/64\n"
		"public_key=" KB "\n"
		"preshared_key=" KZ "\n"
		"endpoint=[2001:db8::1]:443\n"
		"persistent_keepalive_interval=0\n"
		"allowed_ip=0.0.0.0/0\n"
		"allowed_ip=::/0\n"
		"public_key=" KC "\n"
		"preshared_key=" KZ "\n"
		"endpoint=[fe80::1%1]:51820\n"
		"persistent_keepalive_interval=0\n";
	char expect[4096], lo[IF_NAMESIZE] = "1";
	struct wg_device_config a, b;
	struct wg_peer_config *p;
	char *out, *stripped;
	size_t len;

	CHECK(parse(text, &a) == 0);
	/* Known answers for what was parsed. The private key comes back clamped. */
	CHECK(a.has_private_key && a.private_key[0] == 0xf8 && a.private_key[31] == 0x7f);
	CHECK(a.private_key[1] == 0xff && a.private_key[30] == 0xff);
	CHECK(a.has_listen_port && a.listen_port == 51820);
	CHECK(a.has_fwmark && a.fwmark == 4660 && !a.replace_peers);
	CHECK(a.n_peers == 3);
	p = &a.peers[0];
	CHECK(p->public_key[0] == 0xaa && p->public_key[31] == 0xaa);
	CHECK(p->has_preshared_key && p->preshared_key[5] == 0xbb);
	CHECK(p->has_endpoint && p->endpoint.sa.sa_family == AF_INET);
	CHECK(p->endpoint.in4.sin_addr.s_addr == htonl(0xc0000201));
	CHECK(ntohs(p->endpoint.in4.sin_port) == 51820);
	CHECK(p->has_keepalive && p->persistent_keepalive == 25);
	CHECK(p->n_allowed_ips == 2);
	CHECK(p->allowed_ips[0].prefix.family == AF_INET && p->allowed_ips[0].prefix.cidr == 24);
	CHECK(addr4(p->allowed_ips[0].prefix.addr) == 0x0a000000);
	CHECK(p->allowed_ips[1].prefix.family == AF_INET6 && p->allowed_ips[1].prefix.cidr == 64);
	CHECK(p->allowed_ips[1].prefix.addr[0] == 0xfd &&
	      is_zero(p->allowed_ips[1].prefix.addr + 1, 15));
	p = &a.peers[1];
	CHECK(p->has_preshared_key && is_zero(p->preshared_key, WG_KEY_LEN));
	CHECK(p->endpoint.sa.sa_family == AF_INET6 && ntohs(p->endpoint.in6.sin6_port) == 443);
	CHECK(p->endpoint.in6.sin6_scope_id == 0);
	CHECK(p->has_keepalive && p->persistent_keepalive == 0);
	CHECK(p->n_allowed_ips == 2 && p->allowed_ips[0].prefix.cidr == 0 &&
	      p->allowed_ips[1].prefix.cidr == 0);
	p = &a.peers[2];
	CHECK(p->endpoint.in6.sin6_scope_id == 1 && p->n_allowed_ips == 0);

	/* The get reply, byte for byte as wireguard-go lays it out (the zone by name,
	 * as the kernel prints it). */
	a.peers[0].last_handshake_sec = 1700000000;
	a.peers[0].last_handshake_nsec = 123456789;
	a.peers[0].tx_bytes = 1000;
	a.peers[0].rx_bytes = 18446744073709551615ull;
	if (!if_indextoname(1, lo))
		strcpy(lo, "1");
	snprintf(expect, sizeof(expect),
		 "private_key=f8ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f\n"
		 "listen_port=51820\n"
		 "fwmark=4660\n"
		 "public_key=" KA "\n"
		 "preshared_key=" KB "\n"
		 "protocol_version=1\n"
		 "endpoint=192.0.2.1:51820\n"
		 "last_handshake_time_sec=1700000000\n"
		 "last_handshake_time_nsec=123456789\n"
		 "tx_bytes=1000\n"
		 "rx_bytes=18446744073709551615\n"
		 "persistent_keepalive_interval=25\n"
		 "allowed_ip=10.0.0.0/24\n"
		 "allowed_ip=fd00::/64\n"
		 "public_key=" KB "\n"
		 "preshared_key=" KZ "\n"
		 "protocol_version=1\n"
		 "endpoint=[2001:db8::1]:443\n"
		 "last_handshake_time_sec=0\n"
		 "last_handshake_time_nsec=0\n"
		 "tx_bytes=0\n"
		 "rx_bytes=0\n"
		 "persistent_keepalive_interval=0\n"
		 "allowed_ip=0.0.0.0/0\n"
		 "allowed_ip=::/0\n"
		 "public_key=" KC "\n"
		 "preshared_key=" KZ "\n"
		 "protocol_version=1\n"
		 "endpoint=[fe80::1%%%s]:51820\n"
		 "last_handshake_time_sec=0\n"
		 "last_handshake_time_nsec=0\n"
		 "tx_bytes=0\n"
		 "rx_bytes=0\n"
		 "persistent_keepalive_interval=0\n"
		 "errno=0\n\n",
		 lo);
	CHECK(wg_uapi_format_get(&a, &out, &len) == 0);
	CHECK(len == strlen(out));
	if (strcmp(out, expect)) {
		fprintf(stderr, "got:\n%s\nexpected:\n%s\n", out, expect);
		CHECK(!"get reply differs");
	}

	/* parse -> format -> parse gives the same configuration. */
	stripped = strip_get_only(out);
	CHECK(parse(stripped, &b) == 0);
	CHECK(config_equal(&a, &b));
	free(stripped);
	sodium_memzero(out, len);
	free(out);
	wg_config_clear(&a);
	wg_config_clear(&b);
	CHECK(is_zero(&a, sizeof(a)));
}

/* Bodies exactly as wg(8) writes them (wireguard-tools src/ipc-uapi.c: key
 * order private_key, listen_port, fwmark, replace_peers, then per peer
 * public_key, remove | preshared_key, endpoint, persistent_keepalive_interval,
 * replace_allowed_ips, allowed_ip...). */
static void test_wg_strings(void)
{
	struct wg_device_config c;
	struct wg_peer_config *p;
	unsigned int lo = if_nametoindex("lo");

	/* wg set wg0 peer K allowed-ips 10.0.0.0/24,fd00::/64 endpoint [::1]:51820 */
	CHECK(parse("public_key=" KA "\n"
		    "endpoint=[::1]:51820\n"
		    "replace_allowed_ips=true\n"
		    "allowed_ip=10.0.0.0/24\n"
		    "allowed_ip=fd00::/64\n", &c) == 0);
	CHECK(!c.has_private_key && !c.has_listen_port && !c.has_fwmark && c.n_peers == 1);
	p = &c.peers[0];
	CHECK(p->has_endpoint && p->endpoint.sa.sa_family == AF_INET6);
	CHECK(IN6_IS_ADDR_LOOPBACK(&p->endpoint.in6.sin6_addr));
	CHECK(ntohs(p->endpoint.in6.sin6_port) == 51820);
	CHECK(p->replace_allowed_ips && p->n_allowed_ips == 2 && !p->has_preshared_key);
	CHECK(!p->has_keepalive && !p->remove && !p->update_only);
	wg_config_clear(&c);

	/* wg set wg0 listen-port 51821 fwmark 0x10 private-key /dev/null */
	CHECK(parse("private_key=" KZ "\nlisten_port=51821\nfwmark=16\n", &c) == 0);
	CHECK(c.has_private_key && is_zero(c.private_key, WG_KEY_LEN)); /* = remove the key */
	CHECK(c.listen_port == 51821 && c.fwmark == 16 && c.n_peers == 0);
	wg_config_clear(&c);

	/* wg set wg0 fwmark off */
	CHECK(parse("fwmark=0\n", &c) == 0 && c.has_fwmark && c.fwmark == 0);
	wg_config_clear(&c);

	/* wg set wg0 peer K remove */
	CHECK(parse("public_key=" KA "\nremove=true\n", &c) == 0);
	CHECK(c.n_peers == 1 && c.peers[0].remove);
	wg_config_clear(&c);

	/* wg setconf / syncconf */
	CHECK(parse("private_key=" KA "\n"
		    "listen_port=51820\n"
		    "replace_peers=true\n"
		    "public_key=" KB "\n"
		    "preshared_key=" KC "\n"
		    "endpoint=198.51.100.7:1\n"
		    "persistent_keepalive_interval=25\n"
		    "replace_allowed_ips=true\n"
		    "allowed_ip=10.9.0.2/32\n"
		    "public_key=" KC "\n"
		    "replace_allowed_ips=true\n", &c) == 0);
	CHECK(c.replace_peers && c.n_peers == 2);
	CHECK(c.peers[0].has_preshared_key && c.peers[0].preshared_key[0] == 0xcc);
	CHECK(c.peers[1].replace_allowed_ips && c.peers[1].n_allowed_ips == 0);
	CHECK(c.private_key[0] == 0xa8 && c.private_key[31] == 0x6a); /* clamped */
	wg_config_clear(&c);

	/* wg set wg0 peer K allowed-ips -10.0.0.0/24 (wireguard-tools >= 1.0.20250521) */
	CHECK(parse("public_key=" KA "\nallowed_ip=-10.0.0.0/24\nallowed_ip=fd00::1/64\n", &c) == 0);
	p = &c.peers[0];
	CHECK(!p->replace_allowed_ips && p->n_allowed_ips == 2);
	CHECK(p->allowed_ips[0].remove && p->allowed_ips[0].prefix.family == AF_INET);
	CHECK(p->allowed_ips[0].prefix.cidr == 24 &&
	      addr4(p->allowed_ips[0].prefix.addr) == 0x0a000000);
	CHECK(!p->allowed_ips[1].remove && p->allowed_ips[1].prefix.cidr == 64);
	/* Stored masked: fd00::1/64 is fd00::/64. */
	CHECK(p->allowed_ips[1].prefix.addr[0] == 0xfd &&
	      is_zero(p->allowed_ips[1].prefix.addr + 1, 15));
	wg_config_clear(&c);

	/* Endpoints wg formats with getnameinfo(NI_NUMERICHOST): a link-local zone
	 * by name, IPv4-mapped IPv6 in brackets. */
	if (lo) {
		CHECK(parse("public_key=" KA "\nendpoint=[fe80::1%lo]:51820\n", &c) == 0);
		CHECK(c.peers[0].endpoint.in6.sin6_scope_id == lo);
		wg_config_clear(&c);
	}
	CHECK(parse("public_key=" KA "\nendpoint=[fe80::1%7]:1\n", &c) == 0);
	CHECK(c.peers[0].endpoint.in6.sin6_scope_id == 7);
	wg_config_clear(&c);
	CHECK(parse("public_key=" KA "\nendpoint=[::ffff:192.0.2.9]:9\n", &c) == 0);
	CHECK(c.peers[0].endpoint.sa.sa_family == AF_INET6);
	CHECK(IN6_IS_ADDR_V4MAPPED(&c.peers[0].endpoint.in6.sin6_addr));
	wg_config_clear(&c);
	/* Leading zeros in a port are fine for strconv.ParseUint. */
	CHECK(parse("public_key=" KA "\nendpoint=1.2.3.4:0080\n", &c) == 0);
	CHECK(ntohs(c.peers[0].endpoint.in4.sin_port) == 80);
	wg_config_clear(&c);
}

/* Request semantics that follow from wireguard-go applying lines in order. */
static void test_semantics(void)
{
	struct wg_device_config c;
	struct wg_peer_config *p;

	/* Prefixes before replace_allowed_ips are removed again by it. */
	CHECK(parse("public_key=" KA "\nallowed_ip=1.1.1.1/32\nreplace_allowed_ips=true\n"
		    "allowed_ip=10.1.2.3/8\n", &c) == 0);
	p = &c.peers[0];
	CHECK(p->replace_allowed_ips && p->n_allowed_ips == 1);
	CHECK(addr4(p->allowed_ips[0].prefix.addr) == 0x0a000000 &&
	      p->allowed_ips[0].prefix.cidr == 8);
	wg_config_clear(&c);

	/* One key twice: two entries, applied in order. */
	CHECK(parse("public_key=" KA "\nremove=true\npublic_key=" KA "\nupdate_only=true\n", &c) == 0);
	CHECK(c.n_peers == 2 && c.peers[0].remove && !c.peers[0].update_only);
	CHECK(!c.peers[1].remove && c.peers[1].update_only);
	wg_config_clear(&c);

	/* bufio.Scanner semantics: "\r\n" endings, a last line without '\n'. */
	CHECK(parse("listen_port=5\r\nfwmark=3", &c) == 0);
	CHECK(c.listen_port == 5 && c.fwmark == 3);
	wg_config_clear(&c);
	CHECK(parse("", &c) == 0 && c.n_peers == 0 && !c.has_listen_port);
	wg_config_clear(&c);

	/* The last value wins; protocol_version=1 is accepted and not stored. */
	CHECK(parse("listen_port=1\nlisten_port=2\npublic_key=" KA "\nprotocol_version=1\n"
		    "persistent_keepalive_interval=65535\n", &c) == 0);
	CHECK(c.listen_port == 2 && c.peers[0].persistent_keepalive == 65535);
	wg_config_clear(&c);

	/* Uppercase hex is accepted (Go's hex.DecodeString). */
	CHECK(parse("public_key=" K64("AB") "\n", &c) == -EINVAL); /* 128 digits */
	CHECK(parse("public_key=" K64("A") "\n", &c) == 0 && c.peers[0].public_key[0] == 0xaa);
	wg_config_clear(&c);

	/* Allowed IPs at both limits of the cidr; leading zeros in it. */
	CHECK(parse("public_key=" KA "\nallowed_ip=10.0.0.1/32\nallowed_ip=::1/128\n"
		    "allowed_ip=10.1.0.0/08\n", &c) == 0);
	p = &c.peers[0];
	CHECK(addr4(p->allowed_ips[0].prefix.addr) == 0x0a000001);
	CHECK(p->allowed_ips[1].prefix.addr[15] == 1 && p->allowed_ips[2].prefix.cidr == 8);
	wg_config_clear(&c);

	/* A removal entry is formatted back with its '-'. */
	{
		char *out;
		size_t len;

		CHECK(parse("public_key=" KA "\nallowed_ip=-fd00::/8\n", &c) == 0);
		CHECK(wg_uapi_format_get(&c, &out, &len) == 0);
		CHECK(memmem(out, len, "\nallowed_ip=-fd00::/8\n", 22));
		free(out);
		wg_config_clear(&c);
	}
}

struct bad_case {
	const char *data;
	size_t len;
	int err;
};

#define BAD(s, e) { s, sizeof(s) - 1, e }
#define PEER "public_key=" KA "\n"

static const struct bad_case bad_cases[] = {
	/* protocol errors: a line without '=', an empty line in the body */
	BAD("noequals\n", -EPROTO),
	BAD("listen_port=1\n\nfwmark=1\n", -EPROTO),
	BAD(PEER "endpoint\n", -EPROTO),
	/* unknown keys and keys at the wrong level */
	BAD("bogus=1\n", -EINVAL),
	BAD("=5\n", -EINVAL),
	BAD("Listen_port=5\n", -EINVAL),
	BAD("last_handshake_time_sec=0\n", -EINVAL),
	BAD("endpoint=1.2.3.4:5\n", -EINVAL),
	BAD("allowed_ip=10.0.0.0/8\n", -EINVAL),
	BAD("remove=true\n", -EINVAL),
	BAD(PEER "private_key=" KA "\n", -EINVAL),
	BAD(PEER "listen_port=5\n", -EINVAL),
	BAD(PEER "replace_peers=true\n", -EINVAL),
	BAD(PEER "tx_bytes=0\n", -EINVAL),
	/* device values */
	BAD("listen_port=\n", -EINVAL),
	BAD("listen_port=abc\n", -EINVAL),
	BAD("listen_port=+5\n", -EINVAL),
	BAD("listen_port=-1\n", -EINVAL),
	BAD("listen_port= 5\n", -EINVAL),
	BAD("listen_port=65536\n", -EINVAL),
	BAD("listen_port=99999999999999999999999\n", -EINVAL),
	BAD("listen_port=0x10\n", -EINVAL),
	BAD("listen_port=5\0\n", -EINVAL),
	BAD("fwmark=4294967296\n", -EINVAL),
	BAD("fwmark=0x10\n", -EINVAL),
	BAD("replace_peers=True\n", -EINVAL),
	BAD("replace_peers=1\n", -EINVAL),
	BAD("replace_peers=\n", -EINVAL),
	BAD("private_key=\n", -EINVAL),
	BAD("private_key=" K64("a") "a\n", -EINVAL),
	BAD("private_key=" K64("a") "aa\n", -EINVAL),
	BAD("private_key=g" K64("a") "\n", -EINVAL),
	BAD("private_key=0x" K64("a") "\n", -EINVAL),
	/* a good line before a bad one: nothing is kept */
	BAD("private_key=" KA "\nlisten_port=x\n", -EINVAL),
	/* peer values */
	BAD("public_key=\n", -EINVAL),
	BAD("public_key=" KA "a\n", -EINVAL),
	BAD("public_key=zz" KA "\n", -EINVAL),
	BAD(PEER "remove=yes\n", -EINVAL),
	BAD(PEER "update_only=false\n", -EINVAL),
	BAD(PEER "replace_allowed_ips=1\n", -EINVAL),
	BAD(PEER "protocol_version=2\n", -EINVAL),
	BAD(PEER "protocol_version=01\n", -EINVAL),
	BAD(PEER "protocol_version=\n", -EINVAL),
	BAD(PEER "persistent_keepalive_interval=65536\n", -EINVAL),
	BAD(PEER "persistent_keepalive_interval=-1\n", -EINVAL),
	BAD(PEER "preshared_key=" K64("c") "c\n", -EINVAL),
	BAD(PEER "preshared_key=xyz\n", -EINVAL),
	/* endpoints: no hostnames, IPv6 only in brackets, a port always */
	BAD(PEER "endpoint=\n", -EINVAL),
	BAD(PEER "endpoint=1.2.3.4\n", -EINVAL),
	BAD(PEER "endpoint=1.2.3.4:\n", -EINVAL),
	BAD(PEER "endpoint=1.2.3.4:65536\n", -EINVAL),
	BAD(PEER "endpoint=1.2.3.4:5x\n", -EINVAL),
	BAD(PEER "endpoint=1.2.3.4:-5\n", -EINVAL),
	BAD(PEER "endpoint=01.2.3.4:5\n", -EINVAL),
	BAD(PEER "endpoint=1.2.3:5\n", -EINVAL),
	BAD(PEER "endpoint=1.2.3.4%lo:5\n", -EINVAL),
	BAD(PEER "endpoint=1.2.3.4\0:5\n", -EINVAL),
	BAD(PEER "endpoint=::1:5\n", -EINVAL),
	BAD(PEER "endpoint=[1.2.3.4]:5\n", -EINVAL),
	BAD(PEER "endpoint=[::1]\n", -EINVAL),
	BAD(PEER "endpoint=[::1]5\n", -EINVAL),
	BAD(PEER "endpoint=[::1]:\n", -EINVAL),
	BAD(PEER "endpoint=[::1:5\n", -EINVAL),
	BAD(PEER "endpoint=[]:5\n", -EINVAL),
	BAD(PEER "endpoint=[fe80::1%]:5\n", -EINVAL),
	BAD(PEER "endpoint=[fe80::1%no-such-if0]:5\n", -EINVAL),
	BAD(PEER "endpoint=[fe80::1%4294967296]:5\n", -EINVAL),
	BAD(PEER "endpoint=host.example:51820\n", -EINVAL),
	BAD(PEER "endpoint=localhost:51820\n", -EINVAL),
	/* allowed IPs: the cidr is mandatory, no zone, no host names */
	BAD(PEER "allowed_ip=\n", -EINVAL),
	BAD(PEER "allowed_ip=-\n", -EINVAL),
	BAD(PEER "allowed_ip=10.0.0.1\n", -EINVAL),
	BAD(PEER "allowed_ip=-10.0.0.1\n", -EINVAL),
	BAD(PEER "allowed_ip=--10.0.0.0/8\n", -EINVAL),
	BAD(PEER "allowed_ip=10.0.0.0/\n", -EINVAL),
	BAD(PEER "allowed_ip=10.0.0.0/33\n", -EINVAL),
	BAD(PEER "allowed_ip=10.0.0.0/+8\n", -EINVAL),
	BAD(PEER "allowed_ip=10.0.0.0/-1\n", -EINVAL),
	BAD(PEER "allowed_ip=10.0.0.0/8/8\n", -EINVAL),
	BAD(PEER "allowed_ip=::/129\n", -EINVAL),
	BAD(PEER "allowed_ip=fe80::1%lo/64\n", -EINVAL),
	BAD(PEER "allowed_ip=010.0.0.0/8\n", -EINVAL),
	BAD(PEER "allowed_ip=10.0.0/8\n", -EINVAL),
	BAD(PEER "allowed_ip= 10.0.0.0/8\n", -EINVAL),
	BAD(PEER "allowed_ip=10.0.0.0/8 \n", -EINVAL),
	BAD(PEER "allowed_ip=[::1]/128\n", -EINVAL),
	BAD(PEER "allowed_ip=example.com/32\n", -EINVAL),
};

static void test_bad_inputs(void)
{
	struct wg_device_config c;
	size_t i;
	int ret;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		memset(&c, 0xa5, sizeof(c)); /* the parser must not rely on a zeroed cfg */
		ret = wg_uapi_parse_set((const uint8_t *)bad_cases[i].data, bad_cases[i].len, &c);
		if (ret != bad_cases[i].err) {
			fprintf(stderr, "case %zu (%.*s): got %d, want %d\n", i, (int)bad_cases[i].len,
				bad_cases[i].data, ret, bad_cases[i].err);
			CHECK(!"wrong errno");
		}
		/* Left cleared, key material included. */
		CHECK(is_zero(&c, sizeof(c)));
	}
}

/* Formatting of IPv6 addresses: known answers for Go's netip.Addr.String. */
static void test_v6_format_known(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "::", "::" },
		{ "::1", "::1" },
		{ "1::", "1::" },
		{ "2001:db8::1", "2001:db8::1" },
		{ "2001:db8:0:1:0:0:0:1", "2001:db8:0:1::1" },
		{ "2001:0:0:1:0:0:0:1", "2001:0:0:1::1" },
		{ "1:0:0:1:0:0:1:1", "1::1:0:0:1:1" },
		{ "1:0:1:1:1:1:1:1", "1:0:1:1:1:1:1:1" },
		{ "FD00:00AB::", "fd00:ab::" },
		{ "::ffff:1.2.3.4", "::ffff:1.2.3.4" },
		{ "::1.2.3.4", "::102:304" }, /* Go, not glibc's "::1.2.3.4" */
		{ "64:ff9b::1.2.3.4", "64:ff9b::102:304" },
	};
	struct wg_device_config c = { 0 };
	struct wg_peer_config *p;
	struct wg_allowed_ip *ip;
	char *out, want[128];
	size_t i, len;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		p = wg_config_add_peer(&c);
		CHECK(p);
		ip = wg_config_add_allowed_ip(p);
		CHECK(ip);
		ip->prefix.family = AF_INET6;
		ip->prefix.cidr = 128;
		CHECK(inet_pton(AF_INET6, cases[i].in, ip->prefix.addr) == 1);
		p->has_endpoint = true;
		p->endpoint.in6.sin6_family = AF_INET6;
		p->endpoint.in6.sin6_port = htons(7);
		memcpy(&p->endpoint.in6.sin6_addr, ip->prefix.addr, 16);
		CHECK(wg_uapi_format_get(&c, &out, &len) == 0);
		snprintf(want, sizeof(want), "\nallowed_ip=%s/128\n", cases[i].out);
		if (!memmem(out, len, want, strlen(want))) {
			fprintf(stderr, "%s: %.*s", cases[i].in, (int)len, out);
			CHECK(!"v6 format");
		}
		snprintf(want, sizeof(want), "\nendpoint=[%s]:7\n", cases[i].out);
		CHECK(memmem(out, len, want, strlen(want)));
		free(out);
		wg_config_clear(&c);
	}
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Against a reference: glibc's inet_ntop agrees with RFC 5952 (and so with Go)
 * whenever the first 96 bits are neither all zero nor the IPv4-mapped prefix. */
static void test_v6_format_vs_inet_ntop(void)
{
	struct wg_device_config c = { 0 };
	struct wg_allowed_ip *ip;
	char ref[INET6_ADDRSTRLEN], want[80], *out;
	size_t len;
	int i, g;

	CHECK(wg_config_add_peer(&c));
	ip = wg_config_add_allowed_ip(&c.peers[0]);
	CHECK(ip);
	ip->prefix.family = AF_INET6;
	ip->prefix.cidr = 128;
	for (i = 0; i < 20000; i++) {
		/* Mostly zero groups, so that runs of every length show up. */
		for (g = 0; g < 8; g++) {
			uint16_t w = rnd() % 3 ? 0 : (uint16_t)rnd();
			ip->prefix.addr[2 * g] = (uint8_t)(w >> 8);
			ip->prefix.addr[2 * g + 1] = (uint8_t)w;
		}
		if (is_zero(ip->prefix.addr, 10) &&
		    ((ip->prefix.addr[10] == 0 && ip->prefix.addr[11] == 0) ||
		     (ip->prefix.addr[10] == 0xff && ip->prefix.addr[11] == 0xff)))
			continue;
		CHECK(inet_ntop(AF_INET6, ip->prefix.addr, ref, sizeof(ref)));
		snprintf(want, sizeof(want), "\nallowed_ip=%s/128\n", ref);
		CHECK(wg_uapi_format_get(&c, &out, &len) == 0);
		if (!memmem(out, len, want, strlen(want))) {
			fprintf(stderr, "inet_ntop says %s; got %.*s", ref, (int)len, out);
			CHECK(!"v6 format differs from inet_ntop");
		}
		free(out);
	}
	wg_config_clear(&c);
}

/* Random mutations of a valid request: the parser never crashes, fails with
 * one of the documented codes, and what it accepts formats and parses back. */
static void test_mutations(void)
{
	static const char seed[] =
		"private_key=" KA "\nlisten_port=51820\nfwmark=1\nreplace_peers=true\n"
		"public_key=" KB "\npreshared_key=" KC "\nendpoint=[fe80::1%1]:51820\n"
		"persistent_keepalive_interval=25\nreplace_allowed_ips=true\n"
		"allowed_ip=10.0.0.0/24\nallowed_ip=-fd00::/64\nprotocol_version=1\n"
		"public_key=" KC "\nendpoint=192.0.2.1:1\nupdate_only=true\nremove=true\n";
	static const char alphabet[] = "0123456789abcdef=\n:/[]%.-\r\0xtrue";
	uint8_t buf[sizeof(seed) + 64];
	struct wg_device_config c, d;
	size_t len, k, pos;
	int i, ret, edits;
	char *out, *out2, *stripped;
	size_t len2;

	for (i = 0; i < 30000; i++) {
		memcpy(buf, seed, sizeof(seed) - 1);
		len = sizeof(seed) - 1;
		edits = 1 + (int)(rnd() % 4);
		for (k = 0; k < (size_t)edits; k++) {
			pos = rnd() % len;
			switch (rnd() % 3) {
			case 0: /* replace a byte */
				buf[pos] = rnd() % 2 ? (uint8_t)alphabet[rnd() % (sizeof(alphabet) - 1)]
						     : (uint8_t)rnd();
				break;
			case 1: /* delete a byte */
				memmove(buf + pos, buf + pos + 1, len - pos - 1);
				len--;
				break;
			default: /* insert a byte */
				if (len < sizeof(buf)) {
					memmove(buf + pos + 1, buf + pos, len - pos);
					buf[pos] = (uint8_t)alphabet[rnd() % (sizeof(alphabet) - 1)];
					len++;
				}
			}
		}
		ret = wg_uapi_parse_set(buf, len, &c);
		CHECK(ret == 0 || ret == -EINVAL || ret == -EPROTO);
		if (ret) {
			CHECK(is_zero(&c, sizeof(c)));
			continue;
		}
		/* Flags and zero keys do not survive a get reply; compare the rest by
		 * formatting both sides. */
		CHECK(wg_uapi_format_get(&c, &out, &len) == 0);
		stripped = strip_get_only(out);
		CHECK(parse(stripped, &d) == 0);
		CHECK(wg_uapi_format_get(&d, &out2, &len2) == 0);
		CHECK(len2 == len && !memcmp(out, out2, len));
		free(out2);
		wg_config_clear(&d);
		free(stripped);
		free(out);
		wg_config_clear(&c);
	}
}

/* wg_config_* growth: arrays move, contents stay, limits answer NULL. */
static void test_config_growth(void)
{
	struct wg_device_config c = { 0 };
	struct wg_peer_config *p;
	struct wg_allowed_ip *ip;
	size_t i;

	for (i = 0; i < 1000; i++) {
		p = wg_config_add_peer(&c);
		CHECK(p && is_zero(p, sizeof(*p)));
		fill(p->public_key, (uint8_t)i);
		fill(p->preshared_key, (uint8_t)~i);
	}
	CHECK(c.n_peers == 1000 && c.cap_peers >= 1000);
	for (i = 0; i < 1000; i++)
		CHECK(c.peers[i].public_key[31] == (uint8_t)i && c.peers[i].preshared_key[0] == (uint8_t)~i);
	p = &c.peers[999];
	for (i = 0; i < WG_MAX_ALLOWEDIPS_PER_PEER; i++) {
		ip = wg_config_add_allowed_ip(p);
		CHECK(ip && ip->prefix.cidr == 0);
		ip->prefix.cidr = (uint8_t)(i % 33);
	}
	CHECK(!wg_config_add_allowed_ip(p)); /* the cap */
	CHECK(p->n_allowed_ips == WG_MAX_ALLOWEDIPS_PER_PEER &&
	      p->allowed_ips[32].prefix.cidr == 32);
	wg_config_clear(&c);
	CHECK(is_zero(&c, sizeof(c)));

	/* The peer cap, reached cheaply by pretending the array is full. */
	c.n_peers = c.cap_peers = WG_MAX_PEERS;
	c.peers = NULL;
	CHECK(!wg_config_add_peer(&c));
	memset(&c, 0, sizeof(c));
}

int main(void)
{
	CHECK(sodium_init() >= 0);
	test_config_growth();
	test_round_trip();
	test_wg_strings();
	test_semantics();
	test_bad_inputs();
	test_v6_format_known();
	test_v6_format_vs_inet_ntop();
	test_mutations();
	puts("ok");
	return 0;
}
