/* The text forms of a VM port: port-add request bodies, port-list replies
 * and ports files (docs/cli.md). The plan `weft port load` applies is
 * port/plan.c.
 *
 * Security model: a request body comes from any program that can open the
 * root-only control socket, a reply from whatever answers on it, a file
 * from disk; all three are untrusted. Parsers read exactly [text, text+len),
 * copy a value only after checking its length, bound every count (keys,
 * addresses, ports) before it grows anything, and hand back only
 * configurations port_config_check accepted. One table of keys serves all
 * three forms, so they cannot drift apart. */
#include "port/text.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pkt/prefix.h"
#include "text/text.h"

/* ---- values ------------------------------------------------------------ */

static bool copy_cstr(char *dst, size_t cap, const char *v, size_t n)
{
	if (n >= cap || memchr(v, '\0', n))
		return false;
	memcpy(dst, v, n);
	dst[n] = '\0';
	return true;
}

/* Exactly six pairs of hex digits joined by ':'. */
static bool parse_mac(const char *v, size_t n, uint8_t mac[6])
{
	if (n != 17)
		return false;
	for (size_t i = 0; i < 6; i++) {
		int hi = text_hexval(v[3 * i]), lo = text_hexval(v[3 * i + 1]);

		if (hi < 0 || lo < 0 || (i < 5 && v[3 * i + 2] != ':'))
			return false;
		mac[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

static bool parse_ip4(const char *v, size_t n, uint8_t out[4])
{
	char s[INET_ADDRSTRLEN];

	return copy_cstr(s, sizeof(s), v, n) && inet_pton(AF_INET, s, out) == 1;
}

void port_text_mac(const uint8_t mac[6], char out[PORT_TEXT_MAC_LEN])
{
	snprintf(out, PORT_TEXT_MAC_LEN, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2],
		 mac[3], mac[4], mac[5]);
}


const char *port_text_type_name(enum port_type type)
{
	switch (type) {
	case PORT_TAP:
		return "tap";
	case PORT_VHOST_USER:
		return "vhost-user";
	case PORT_ATTACHED:
		return "attached";
	}
	return NULL;
}

/* ---- the keys of a port, shared by every form -------------------------- */

static int set_name(struct port_config *c, const char *v, size_t n, const char **why)
{
	if (!copy_cstr(c->name, sizeof(c->name), v, n)) {
		*why = "name too long (15 characters at most)";
		return -EINVAL;
	}
	return 0;
}

static int set_type(struct port_config *c, const char *v, size_t n, const char **why)
{
	if (n == 3 && !memcmp(v, "tap", 3)) {
		c->type = PORT_TAP;
	} else if (n == 10 && !memcmp(v, "vhost-user", 10)) {
		c->type = PORT_VHOST_USER;
	} else if (n == 8 && !memcmp(v, "attached", 8)) {
		c->type = PORT_ATTACHED;
	} else {
		*why = "type must be tap, vhost-user or attached";
		return -EINVAL;
	}
	return 0;
}

static int set_path(struct port_config *c, const char *v, size_t n, const char **why)
{
	if (!copy_cstr(c->path, sizeof(c->path), v, n)) {
		*why = "path too long (107 bytes at most)";
		return -EINVAL;
	}
	return 0;
}

static int set_mode(struct port_config *c, const char *v, size_t n, const char **why)
{
	if (n == 6 && !memcmp(v, "server", 6)) {
		c->server = true;
	} else if (n == 6 && !memcmp(v, "client", 6)) {
		c->server = false;
	} else {
		*why = "mode must be server or client";
		return -EINVAL;
	}
	return 0;
}

/* A user or group: a number, or a name looked up now (the CLI sends the
 * number it found). */
static int parse_id(const char *v, size_t n, bool group, uint32_t *id, const char **why)
{
	char s[256];
	uint64_t num;

	if (text_parse_u64(v, n, UINT32_MAX - 1, &num)) {
		*id = (uint32_t)num;
		return 0;
	}
	if (!copy_cstr(s, sizeof(s), v, n) || !s[0]) {
		*why = group ? "bad group" : "bad user";
		return -EINVAL;
	}
	if (group) {
		struct group gr, *res = NULL;
		char buf[4096];

		if (getgrnam_r(s, &gr, buf, sizeof(buf), &res) || !res) {
			*why = "no such group";
			return -EINVAL;
		}
		*id = (uint32_t)res->gr_gid;
	} else {
		struct passwd pw, *res = NULL;
		char buf[4096];

		if (getpwnam_r(s, &pw, buf, sizeof(buf), &res) || !res) {
			*why = "no such user";
			return -EINVAL;
		}
		*id = (uint32_t)res->pw_uid;
	}
	return 0;
}

static int set_socket_owner(struct port_config *c, const char *v, size_t n, const char **why)
{
	c->has_socket_uid = true;
	return parse_id(v, n, false, &c->socket_uid, why);
}

static int set_socket_group(struct port_config *c, const char *v, size_t n, const char **why)
{
	c->has_socket_gid = true;
	return parse_id(v, n, true, &c->socket_gid, why);
}

/* Octal permission bits, as chmod takes them (0660, 660). */
static int set_socket_mode(struct port_config *c, const char *v, size_t n, const char **why)
{
	unsigned int mode = 0;

	if (!n || n > 4)
		goto bad;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '7')
			goto bad;
		mode = mode * 8 + (unsigned int)(v[i] - '0');
	}
	if (!mode || mode > 0777)
		goto bad;
	c->socket_mode = (uint16_t)mode;
	return 0;
bad:
	*why = "socket mode must be octal permission bits, 1 to 0777 (e.g. 0660)";
	return -EINVAL;
}

static int set_mac(struct port_config *c, const char *v, size_t n, const char **why)
{
	if (!parse_mac(v, n, c->vm_mac)) {
		*why = "bad MAC (want xx:xx:xx:xx:xx:xx)";
		return -EINVAL;
	}
	return 0;
}

static int set_router_mac(struct port_config *c, const char *v, size_t n, const char **why)
{
	if (!parse_mac(v, n, c->router_mac)) {
		*why = "bad router MAC (want xx:xx:xx:xx:xx:xx)";
		return -EINVAL;
	}
	c->has_router_mac = true;
	return 0;
}

static int set_gateway4(struct port_config *c, const char *v, size_t n, const char **why)
{
	if (!parse_ip4(v, n, c->gateway4)) {
		*why = "bad gateway4 (want an IPv4 address)";
		return -EINVAL;
	}
	c->has_gateway4 = true;
	return 0;
}

static int set_address(struct port_config *c, const char *v, size_t n, const char **why)
{
	if (c->n_addrs >= PORT_MAX_ADDRS) {
		*why = "too many addresses (16 at most)";
		return -EINVAL;
	}
	/* Host bits are kept for port_config_check, which names them. */
	if (ip_prefix_parse(v, n, IP_PREFIX_LEN_OPTIONAL, &c->addrs[c->n_addrs], why))
		return -EINVAL;
	c->n_addrs++;
	return 0;
}

static int set_prefix(struct port_config *c, const char *v, size_t n, const char **why)
{
	struct ip_prefix *p;

	if (c->n_prefixes >= PORT_MAX_PREFIXES) {
		*why = "too many RA prefixes (4 at most)";
		return -EINVAL;
	}
	p = &c->prefixes[c->n_prefixes];
	/* The length a must; /0 and host bits are port_config_check's. */
	if (ip_prefix_parse(v, n, 0, p, NULL) || p->family != AF_INET6) {
		memset(p, 0, sizeof(*p));
		*why = "bad RA prefix (want an IPv6 prefix address/length)";
		return -EINVAL;
	}
	c->n_prefixes++;
	return 0;
}

static int set_mtu(struct port_config *c, const char *v, size_t n, const char **why)
{
	uint64_t mtu;

	if (!text_parse_u64(v, n, UINT32_MAX, &mtu)) {
		*why = "bad MTU (want a number)";
		return -EINVAL;
	}
	/* In text an MTU is always a real one: leave the key out for the
	 * default, so that 0 never has to round-trip. */
	if (mtu < PORT_MTU_MIN || mtu > PORT_MTU_MAX) {
		*why = "MTU not in 1280..9000";
		return -EINVAL;
	}
	c->mtu = (uint32_t)mtu;
	return 0;
}

static const struct port_key {
	const char *key;  /* in requests and replies */
	const char *file; /* in ports files, any case */
	bool list;        /* may repeat */
	int (*set)(struct port_config *c, const char *v, size_t n, const char **why);
} port_keys[] = {
	{ "name", "Name", false, set_name },
	{ "type", "Type", false, set_type },
	{ "path", "Path", false, set_path },
	{ "mode", "Mode", false, set_mode },
	{ "socket_owner", "SocketOwner", false, set_socket_owner },
	{ "socket_group", "SocketGroup", false, set_socket_group },
	{ "socket_mode", "SocketMode", false, set_socket_mode },
	{ "mac", "MAC", false, set_mac },
	{ "router_mac", "RouterMAC", false, set_router_mac },
	{ "gateway4", "Gateway4", false, set_gateway4 },
	{ "address", "Address", true, set_address },
	{ "prefix", "Prefix", true, set_prefix },
	{ "mtu", "MTU", false, set_mtu },
};
enum { N_PORT_KEYS = sizeof(port_keys) / sizeof(port_keys[0]), KEY_NAME = 0 };

static int find_key(const char *k, size_t n, bool file)
{
	for (int i = 0; i < N_PORT_KEYS; i++) {
		const char *want = file ? port_keys[i].file : port_keys[i].key;

		if (strlen(want) == n &&
		    (file ? !strncasecmp(k, want, n) : !memcmp(k, want, n)))
			return i;
	}
	return -1;
}

/* Applies key i; non-list keys only once per port (seen: a bit per key). */
static int apply_key(struct port_config *c, int i, unsigned int *seen, const char *v, size_t n,
		     const char **why)
{
	if (!port_keys[i].list && (*seen & (1u << i))) {
		*why = "key given twice";
		return -EINVAL;
	}
	*seen |= 1u << i;
	return port_keys[i].set(c, v, n, why);
}

#define COUNTER(key, field, drop) { key, offsetof(struct port_info, field), drop }
#define DROP_COUNTER(name, text) COUNTER("drop_" text, drop_##name, true),
const struct port_text_counter port_text_counters[] = {
	COUNTER("rx_packets", rx_packets, false),
	COUNTER("rx_bytes", rx_bytes, false),
	COUNTER("tx_packets", tx_packets, false),
	COUNTER("tx_bytes", tx_bytes, false),
	PORT_DROP_REASONS(DROP_COUNTER)
	COUNTER("ndp_replies", ndp_replies, false),
	COUNTER("ndp_drops", ndp_drops, false),
	COUNTER("bypass_packets", bypass_packets, false),
	COUNTER("bypass_bytes", bypass_bytes, false),
	COUNTER("frontend_stalls", frontend_stalls, false),
	COUNTER("memory_faults", memory_faults, false),
};
#undef DROP_COUNTER
#undef COUNTER
const size_t port_text_n_counters = sizeof(port_text_counters) / sizeof(port_text_counters[0]);
_Static_assert(sizeof(port_text_counters) / sizeof(port_text_counters[0]) <= 32,
	       "counters are tracked in a 32-bit mask");

/* ---- key=value lines --------------------------------------------------- */

int port_text_parse_request(const char *text, size_t len, struct port_config *out,
			    const char **why)
{
	const char *line, *v, *unused;
	size_t off = 0, n, kn, vn;
	unsigned int seen = 0;
	int i, ret;

	if (!why)
		why = &unused;
	port_config_init(out);
	while (text_next_line(text, len, &off, &line, &n)) {
		if (!text_split_kv(line, n, &kn, &v, &vn)) {
			*why = "a line without '='";
			ret = -EPROTO;
			goto fail;
		}
		i = find_key(line, kn, false);
		if (i < 0) {
			*why = "unknown key";
			ret = -EINVAL;
			goto fail;
		}
		ret = apply_key(out, i, &seen, v, vn, why);
		if (ret)
			goto fail;
	}
	ret = port_config_check(out, why);
	if (!ret)
		return 0;
fail:
	port_config_init(out);
	return ret;
}

int port_text_parse_name(const char *text, size_t len, char name[PORT_NAME_MAX],
			 const char **why)
{
	struct port_config c;
	const char *line, *v, *unused;
	size_t off = 0, n, kn, vn;
	unsigned int seen = 0;
	int ret;

	if (!why)
		why = &unused;
	port_config_init(&c);
	while (text_next_line(text, len, &off, &line, &n)) {
		if (!text_split_kv(line, n, &kn, &v, &vn)) {
			*why = "a line without '='";
			return -EPROTO;
		}
		if (find_key(line, kn, false) != KEY_NAME) {
			*why = "unknown key (only name)";
			return -EINVAL;
		}
		ret = apply_key(&c, KEY_NAME, &seen, v, vn, why);
		if (ret)
			return ret;
	}
	if (!c.name[0]) {
		*why = "no name";
		return -EINVAL;
	}
	memcpy(name, c.name, PORT_NAME_MAX);
	return 0;
}

/* The lines of cfg, the first one "first=NAME". */
static void format_config(struct text_buf *b, const struct port_config *c, const char *first)
{
	char s[IP_PREFIX_STRLEN];

	text_buf_printf(b, "%s=%s\n", first, c->name);
	text_buf_printf(b, "type=%s\n", port_text_type_name(c->type) ? port_text_type_name(c->type) : "");
	if (c->type == PORT_VHOST_USER) {
		text_buf_printf(b, "path=%s\n", c->path);
		text_buf_printf(b, "mode=%s\n", c->server ? "server" : "client");
		if (c->has_socket_uid)
			text_buf_printf(b, "socket_owner=%u\n", c->socket_uid);
		if (c->has_socket_gid)
			text_buf_printf(b, "socket_group=%u\n", c->socket_gid);
		if (c->socket_mode)
			text_buf_printf(b, "socket_mode=%04o\n", c->socket_mode);
	}
	port_text_mac(c->vm_mac, s);
	text_buf_printf(b, "mac=%s\n", s);
	if (c->has_router_mac) {
		port_text_mac(c->router_mac, s);
		text_buf_printf(b, "router_mac=%s\n", s);
	}
	if (c->has_gateway4) {
		inet_ntop(AF_INET, c->gateway4, s, sizeof(s));
		text_buf_printf(b, "gateway4=%s\n", s);
	}
	for (size_t i = 0; i < c->n_addrs && i < PORT_MAX_ADDRS; i++) {
		ip_prefix_format(&c->addrs[i], s);
		text_buf_printf(b, "address=%s\n", s);
	}
	for (size_t i = 0; i < c->n_prefixes && i < PORT_MAX_PREFIXES; i++) {
		ip_prefix_format(&c->prefixes[i], s);
		text_buf_printf(b, "prefix=%s\n", s);
	}
	if (c->mtu)
		text_buf_printf(b, "mtu=%u\n", c->mtu);
}

int port_text_format_request(const struct port_config *cfg, char **out, size_t *len)
{
	struct text_buf b = { 0 };

	format_config(&b, cfg, "name");
	return text_buf_finish(&b, out, len);
}

/* ---- port-list replies ------------------------------------------------- */

static uint64_t *counter_at(struct port_info *p, size_t i)
{
	return (uint64_t *)((char *)p + port_text_counters[i].offset);
}

int port_text_format_info(const struct port_info *ports, size_t n, char **out, size_t *len)
{
	struct text_buf b = { 0 };

	for (size_t i = 0; i < n; i++) {
		struct port_info p = ports[i];

		port_text_normalize(&p.cfg);
		format_config(&b, &p.cfg, "port");
		text_buf_printf(&b, "connected=%s\n", p.connected ? "true" : "false");
		for (size_t k = 0; k < port_text_n_counters; k++)
			text_buf_printf(&b, "%s=%llu\n", port_text_counters[k].key,
				   (unsigned long long)*counter_at(&p, k));
	}
	return text_buf_finish(&b, out, len);
}

static int find_counter(const char *k, size_t n)
{
	for (size_t i = 0; i < port_text_n_counters; i++)
		if (strlen(port_text_counters[i].key) == n && !memcmp(k, port_text_counters[i].key, n))
			return (int)i;
	return -1;
}

/* One port-list block being read. */
struct info_block {
	struct port_info *p;
	unsigned int seen, seen_counters;
	bool seen_connected;
};

static int info_line(struct info_block *blk, const char *k, size_t kn, const char *v, size_t vn,
		     const char **why)
{
	int i = find_key(k, kn, false);
	uint64_t x;

	if (i > KEY_NAME)
		return apply_key(&blk->p->cfg, i, &blk->seen, v, vn, why);
	if (kn == 9 && !memcmp(k, "connected", 9)) {
		if (blk->seen_connected || !(vn == 4 ? !memcmp(v, "true", 4)
						   : vn == 5 && !memcmp(v, "false", 5))) {
			*why = "bad or repeated connected (true or false)";
			return -EINVAL;
		}
		blk->seen_connected = true;
		blk->p->connected = vn == 4;
		return 0;
	}
	i = find_counter(k, kn);
	if (i >= 0) {
		if ((blk->seen_counters & (1u << i)) || !text_parse_u64(v, vn, UINT64_MAX, &x)) {
			*why = "bad or repeated counter";
			return -EINVAL;
		}
		blk->seen_counters |= 1u << i;
		*counter_at(blk->p, (size_t)i) = x;
	}
	/* Anything else is from a newer daemon: skipped. */
	return 0;
}

int port_text_parse_info(const char *text, size_t len, struct port_info **out, size_t *n,
			 const char **why)
{
	struct port_info *ports = NULL, *grown;
	struct info_block blk = { 0 };
	const char *line, *v, *unused;
	size_t off = 0, ln, kn, vn, count = 0, cap = 0;
	int ret = 0;

	if (!why)
		why = &unused;
	while (text_next_line(text, len, &off, &line, &ln)) {
		if (!text_split_kv(line, ln, &kn, &v, &vn)) {
			*why = "a line without '='";
			ret = -EPROTO;
			goto fail;
		}
		if (kn == 4 && !memcmp(line, "port", 4)) {
			if (blk.p && (ret = port_config_check(&blk.p->cfg, why)))
				goto fail;
			if (count == PORT_MAX) {
				*why = "more ports than a device can have";
				ret = -EINVAL;
				goto fail;
			}
			if (count == cap) {
				cap = cap ? 2 * cap : 8;
				grown = realloc(ports, cap * sizeof(*ports));
				if (!grown) {
					*why = "out of memory";
					ret = -ENOMEM;
					goto fail;
				}
				ports = grown;
			}
			blk = (struct info_block){ .p = &ports[count++] };
			memset(blk.p, 0, sizeof(*blk.p));
			port_config_init(&blk.p->cfg);
			ret = apply_key(&blk.p->cfg, KEY_NAME, &blk.seen, v, vn, why);
		} else if (!blk.p) {
			*why = "a line before the first port=";
			ret = -EINVAL;
		} else {
			ret = info_line(&blk, line, kn, v, vn, why);
		}
		if (ret)
			goto fail;
	}
	if (blk.p && (ret = port_config_check(&blk.p->cfg, why)))
		goto fail;
	*out = ports;
	*n = count;
	return 0;
fail:
	free(ports);
	*out = NULL;
	*n = 0;
	return ret;
}

/* ---- ports files ------------------------------------------------------- */

/* A section ended: its port must pass the check and share no name or
 * address with the ports before it. */
static int finish_section(const struct port_config *ports, size_t count, const char **why)
{
	const struct port_config *c = &ports[count - 1];
	int ret = port_config_check(c, why);

	if (ret)
		return ret;
	for (size_t i = 0; i + 1 < count; i++) {
		if (!strcmp(ports[i].name, c->name)) {
			*why = "name used by an earlier [Port]";
			return -EINVAL;
		}
		if (port_config_share_addr(&ports[i], c)) {
			*why = "address used by an earlier [Port]";
			return -EINVAL;
		}
	}
	return 0;
}

/* "Key = a, b, c": each comma-separated item applied in turn. */
static int file_value(struct port_config *c, int key, unsigned int *seen, const char *v,
		      size_t vn, const char **why)
{
	const char *item, *comma;
	size_t in;
	int ret;

	if (!vn) {
		*why = "empty value";
		return -EINVAL;
	}
	if (!port_keys[key].list)
		return apply_key(c, key, seen, v, vn, why);
	for (;;) {
		comma = memchr(v, ',', vn);
		item = v;
		in = comma ? (size_t)(comma - v) : vn;
		text_trim(&item, &in);
		if (!in) {
			*why = "empty item in a list";
			return -EINVAL;
		}
		ret = apply_key(c, key, seen, item, in, why);
		if (ret || !comma)
			return ret;
		vn -= (size_t)(comma - v) + 1;
		v = comma + 1;
	}
}

int port_text_parse_file(const char *text, size_t len, struct port_config **out, size_t *n,
			 int *err_line, const char **why)
{
	struct port_config *ports = NULL, *grown;
	const char *line, *hash, *v, *unused;
	size_t off = 0, ln, kn, vn, count = 0, cap = 0;
	unsigned int seen = 0;
	int lineno = 0, section_line = 0, key, ret = 0, dummy;

	if (!why)
		why = &unused;
	if (!err_line)
		err_line = &dummy;
	*err_line = 0;
	if (len > PORT_TEXT_MAX_FILE) {
		*why = "file larger than 1 MiB";
		ret = -E2BIG;
		goto fail;
	}
	while (text_next_line(text, len, &off, &line, &ln)) {
		lineno++;
		*err_line = lineno;
		if (memchr(line, '\0', ln)) {
			*why = "a NUL byte";
			ret = -EINVAL;
			goto fail;
		}
		hash = memchr(line, '#', ln);
		if (hash)
			ln = (size_t)(hash - line);
		text_trim(&line, &ln);
		if (!ln)
			continue;
		if (line[0] == '[') {
			if (ln != 6 || strncasecmp(line, "[Port]", 6)) {
				*why = "unknown section (only [Port])";
				ret = -EINVAL;
				goto fail;
			}
			if (count) {
				*err_line = section_line;
				if ((ret = finish_section(ports, count, why)))
					goto fail;
				*err_line = lineno;
			}
			if (count == PORT_MAX) {
				*why = "more than 256 ports";
				ret = -E2BIG;
				goto fail;
			}
			if (count == cap) {
				cap = cap ? 2 * cap : 8;
				grown = realloc(ports, cap * sizeof(*ports));
				if (!grown) {
					*why = "out of memory";
					ret = -ENOMEM;
					goto fail;
				}
				ports = grown;
			}
			port_config_init(&ports[count++]);
			seen = 0;
			section_line = lineno;
			continue;
		}
		if (!text_split_kv(line, ln, &kn, &v, &vn)) {
			*why = "a line without '='";
			ret = -EINVAL;
			goto fail;
		}
		text_trim(&line, &kn);
		text_trim(&v, &vn);
		key = find_key(line, kn, true);
		if (key < 0) {
			*why = "unknown key";
			ret = -EINVAL;
			goto fail;
		}
		if (!count) {
			*why = "a key outside a [Port] section";
			ret = -EINVAL;
			goto fail;
		}
		if ((ret = file_value(&ports[count - 1], key, &seen, v, vn, why)))
			goto fail;
	}
	if (count) {
		*err_line = section_line;
		if ((ret = finish_section(ports, count, why)))
			goto fail;
	}
	*err_line = 0;
	*out = ports;
	*n = count;
	return 0;
fail:
	free(ports);
	*out = NULL;
	*n = 0;
	return ret;
}

int port_text_format_file(const struct port_config *cfgs, size_t n, char **out, size_t *len)
{
	struct text_buf b = { 0 };
	char s[IP_PREFIX_STRLEN];

	for (size_t i = 0; i < n; i++) {
		const struct port_config *c = &cfgs[i];

		text_buf_printf(&b, "%s[Port]\nName = %s\nType = %s\n", i ? "\n" : "", c->name,
			   port_text_type_name(c->type) ? port_text_type_name(c->type) : "");
		if (c->type == PORT_VHOST_USER) {
			text_buf_printf(&b, "Path = %s\nMode = %s\n", c->path,
				   c->server ? "server" : "client");
			if (c->has_socket_uid)
				text_buf_printf(&b, "SocketOwner = %u\n", c->socket_uid);
			if (c->has_socket_gid)
				text_buf_printf(&b, "SocketGroup = %u\n", c->socket_gid);
			if (c->socket_mode)
				text_buf_printf(&b, "SocketMode = %04o\n", c->socket_mode);
		}
		port_text_mac(c->vm_mac, s);
		text_buf_printf(&b, "MAC = %s\n", s);
		if (c->has_router_mac) {
			port_text_mac(c->router_mac, s);
			text_buf_printf(&b, "RouterMAC = %s\n", s);
		}
		if (c->has_gateway4) {
			inet_ntop(AF_INET, c->gateway4, s, sizeof(s));
			text_buf_printf(&b, "Gateway4 = %s\n", s);
		}
		for (size_t k = 0; k < c->n_addrs && k < PORT_MAX_ADDRS; k++) {
			ip_prefix_format(&c->addrs[k], s);
			text_buf_printf(&b, "%s%s", k ? ", " : "Address = ", s);
		}
		text_buf_printf(&b, "%s", c->n_addrs ? "\n" : "");
		for (size_t k = 0; k < c->n_prefixes && k < PORT_MAX_PREFIXES; k++) {
			ip_prefix_format(&c->prefixes[k], s);
			text_buf_printf(&b, "%s%s", k ? ", " : "Prefix = ", s);
		}
		text_buf_printf(&b, "%s", c->n_prefixes ? "\n" : "");
		if (c->mtu)
			text_buf_printf(&b, "MTU = %u\n", c->mtu);
	}
	return text_buf_finish(&b, out, len);
}
