/* The userspace configuration protocol: the set-request parser and the
 * get-reply formatter, answering the way wireguard-go does (device/uapi.go);
 * the socket server that wg(8) talks to is daemon/uapi_server.c.
 *
 * Security model: every byte of a request is untrusted. Every value is
 * checked before anything is applied, a malformed set changes nothing, and
 * buffers that held key material are wiped. */
#include "wg/uapi.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <sodium.h>

#include "pkt/prefix.h"
#include "text/text.h"
#include "wg/log.h"

enum { KEY_HEX_LEN = WG_KEY_LEN * 2 };

/* ---- set requests ------------------------------------------------------ */

struct set_parser {
	struct wg_device_config *cfg;
	struct wg_peer_config *peer; /* entry being filled; NULL in the device section */
	const char *why;             /* what failed, for the log line */
};

/* Which section of a set request a key belongs to: device keys come before the
 * first public_key, peer keys after it. */
enum { AT_DEVICE = 1, AT_PEER = 2, AT_ANY = AT_DEVICE | AT_PEER };

static bool value_is(const char *v, size_t n, const char *want)
{
	return n == strlen(want) && !memcmp(v, want, n);
}

/* strconv.ParseUint(v, 10, bits) as wireguard-go calls it: digits only, no
 * sign, no base prefix, leading zeros allowed. */
static bool parse_uint(const char *v, size_t n, uint64_t max, uint64_t *out)
{
	uint64_t x = 0;
	size_t i;

	if (!n)
		return false;
	for (i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return false;
		x = x * 10 + (uint64_t)(v[i] - '0');
		if (x > max)
			return false;
	}
	*out = x;
	return true;
}

/* Exactly 64 hex digits of either case, as Go's hex.DecodeString + length check. */
static bool parse_key(const char *v, size_t n, uint8_t key[WG_KEY_LEN])
{
	const char *end = NULL;
	size_t bin_len = 0;

	if (n != KEY_HEX_LEN)
		return false;
	if (sodium_hex2bin(key, WG_KEY_LEN, v, n, NULL, &bin_len, &end) != 0 ||
	    bin_len != WG_KEY_LEN || end != v + n) {
		sodium_memzero(key, WG_KEY_LEN);
		return false;
	}
	return true;
}

/* Copies a value into a NUL-terminated buffer for inet_pton and friends;
 * false when it does not fit or carries a NUL of its own. */
static bool copy_cstr(char *dst, size_t dst_len, const char *v, size_t n)
{
	if (n >= dst_len || memchr(v, '\0', n))
		return false;
	memcpy(dst, v, n);
	dst[n] = '\0';
	return true;
}

static int set_private_key(struct set_parser *p, const char *v, size_t n)
{
	uint8_t *key = p->cfg->private_key;

	if (!parse_key(v, n, key)) {
		p->why = "failed to set private_key";
		return IPC_ERROR_INVALID;
	}
	/* All zeros means "remove the private key" and stays unclamped, as
	 * NoisePrivateKey.FromMaybeZeroHex. */
	if (!sodium_is_zero(key, WG_KEY_LEN)) {
		key[0] &= 248;
		key[31] = (key[31] & 127) | 64;
	}
	p->cfg->has_private_key = true;
	return 0;
}

static int set_listen_port(struct set_parser *p, const char *v, size_t n)
{
	uint64_t port;

	if (!parse_uint(v, n, UINT16_MAX, &port)) {
		p->why = "failed to parse listen_port";
		return IPC_ERROR_INVALID;
	}
	p->cfg->has_listen_port = true;
	p->cfg->listen_port = (uint16_t)port;
	return 0;
}

static int set_fwmark(struct set_parser *p, const char *v, size_t n)
{
	uint64_t mark;

	if (!parse_uint(v, n, UINT32_MAX, &mark)) {
		p->why = "invalid fwmark";
		return IPC_ERROR_INVALID;
	}
	p->cfg->has_fwmark = true;
	p->cfg->fwmark = (uint32_t)mark;
	return 0;
}

static int set_replace_peers(struct set_parser *p, const char *v, size_t n)
{
	if (!value_is(v, n, "true")) {
		p->why = "failed to set replace_peers, invalid value";
		return IPC_ERROR_INVALID;
	}
	p->cfg->replace_peers = true;
	return 0;
}

static int set_public_key(struct set_parser *p, const char *v, size_t n)
{
	uint8_t key[WG_KEY_LEN];

	if (!parse_key(v, n, key)) {
		p->why = "failed to get peer by public key";
		return IPC_ERROR_INVALID;
	}
	if (p->cfg->n_peers >= WG_MAX_PEERS) {
		p->why = "too many peers";
		return IPC_ERROR_INVALID;
	}
	p->peer = wg_config_add_peer(p->cfg);
	if (!p->peer) {
		p->why = "out of memory";
		return -ENOMEM;
	}
	memcpy(p->peer->public_key, key, WG_KEY_LEN);
	return 0;
}

static int set_remove(struct set_parser *p, const char *v, size_t n)
{
	if (!value_is(v, n, "true")) {
		p->why = "failed to set remove, invalid value";
		return IPC_ERROR_INVALID;
	}
	p->peer->remove = true;
	return 0;
}

static int set_update_only(struct set_parser *p, const char *v, size_t n)
{
	if (!value_is(v, n, "true")) {
		p->why = "failed to set update only, invalid value";
		return IPC_ERROR_INVALID;
	}
	p->peer->update_only = true;
	return 0;
}

static int set_preshared_key(struct set_parser *p, const char *v, size_t n)
{
	if (!parse_key(v, n, p->peer->preshared_key)) {
		p->why = "failed to set preshared key";
		return IPC_ERROR_INVALID;
	}
	p->peer->has_preshared_key = true;
	return 0;
}

/* An IPv6 zone: an interface name, else a number (Go's zone cache does the same). */
static bool parse_zone(const char *v, size_t n, uint32_t *scope)
{
	char name[IF_NAMESIZE];
	uint64_t num;
	unsigned int idx;

	if (copy_cstr(name, sizeof(name), v, n) && n) {
		idx = if_nametoindex(name);
		if (idx) {
			*scope = idx;
			return true;
		}
	}
	if (!parse_uint(v, n, UINT32_MAX, &num))
		return false;
	*scope = (uint32_t)num;
	return true;
}

/* netip.ParseAddrPort: "a.b.c.d:port" or "[v6]:port" / "[v6%zone]:port".
 * Hostnames are refused: wg(8) resolves them before it talks to us. */
static bool parse_endpoint(const char *v, size_t n, union wg_sockaddr *out)
{
	char host[INET6_ADDRSTRLEN];
	const char *h, *port, *close, *zone;
	size_t hn, pn;
	uint64_t portnum;
	uint32_t scope = 0;

	memset(out, 0, sizeof(*out));
	if (n && v[0] == '[') {
		close = memchr(v, ']', n);
		if (!close || (size_t)(close - v) + 2 > n || close[1] != ':')
			return false;
		h = v + 1;
		hn = (size_t)(close - h);
		port = close + 2;
	} else {
		close = memrchr(v, ':', n);
		if (!close)
			return false;
		h = v;
		hn = (size_t)(close - v);
		port = close + 1;
	}
	pn = n - (size_t)(port - v);
	if (!parse_uint(port, pn, UINT16_MAX, &portnum))
		return false;

	if (v[0] != '[') {
		/* Unbracketed: IPv4 only, without a zone (inet_pton refuses '%'). */
		if (!copy_cstr(host, sizeof(host), h, hn) ||
		    inet_pton(AF_INET, host, &out->in4.sin_addr) != 1)
			return false;
		out->in4.sin_family = AF_INET;
		out->in4.sin_port = htons((uint16_t)portnum);
		return true;
	}
	zone = memchr(h, '%', hn);
	if (zone) {
		if (!parse_zone(zone + 1, hn - (size_t)(zone - h) - 1, &scope))
			return false;
		hn = (size_t)(zone - h);
	}
	/* Brackets are for IPv6 only: "[1.2.3.4]:5" is refused, as by Go. */
	if (!memchr(h, ':', hn) || !copy_cstr(host, sizeof(host), h, hn) ||
	    inet_pton(AF_INET6, host, &out->in6.sin6_addr) != 1)
		return false;
	out->in6.sin6_family = AF_INET6;
	out->in6.sin6_port = htons((uint16_t)portnum);
	out->in6.sin6_scope_id = scope;
	return true;
}

static int set_endpoint(struct set_parser *p, const char *v, size_t n)
{
	if (!parse_endpoint(v, n, &p->peer->endpoint)) {
		p->why = "failed to set endpoint";
		return IPC_ERROR_INVALID;
	}
	p->peer->has_endpoint = true;
	return 0;
}

static int set_keepalive(struct set_parser *p, const char *v, size_t n)
{
	uint64_t secs;

	if (!parse_uint(v, n, UINT16_MAX, &secs)) {
		p->why = "failed to set persistent keepalive interval";
		return IPC_ERROR_INVALID;
	}
	p->peer->has_keepalive = true;
	p->peer->persistent_keepalive = (uint16_t)secs;
	return 0;
}

static int set_replace_allowed_ips(struct set_parser *p, const char *v, size_t n)
{
	if (!value_is(v, n, "true")) {
		p->why = "failed to replace allowedips, invalid value";
		return IPC_ERROR_INVALID;
	}
	/* wireguard-go applies lines in order, so prefixes listed before this
	 * line are removed again by it: drop them here. */
	p->peer->replace_allowed_ips = true;
	p->peer->n_allowed_ips = 0;
	return 0;
}

static int set_allowed_ip(struct set_parser *p, const char *v, size_t n)
{
	struct wg_allowed_ip ip = { 0 }, *slot;

	if (n && v[0] == '-') {
		ip.remove = true;
		v++;
		n--;
	}
	/* netip.ParsePrefix: the length a must, no zone; its digits read as
	 * strconv.ParseUint does. Stored masked, as the trie keeps it. */
	if (ip_prefix_parse(v, n, IP_PREFIX_MASK | IP_PREFIX_LEN_ZEROS, &ip.prefix, NULL)) {
		p->why = "failed to set allowed ip";
		return IPC_ERROR_INVALID;
	}
	if (p->peer->n_allowed_ips >= WG_MAX_ALLOWEDIPS_PER_PEER) {
		p->why = "too many allowed ips for one peer";
		return IPC_ERROR_INVALID;
	}
	slot = wg_config_add_allowed_ip(p->peer);
	if (!slot) {
		p->why = "out of memory";
		return -ENOMEM;
	}
	*slot = ip;
	return 0;
}

static int set_protocol_version(struct set_parser *p, const char *v, size_t n)
{
	if (!value_is(v, n, "1")) {
		p->why = "invalid protocol version";
		return IPC_ERROR_INVALID;
	}
	return 0;
}

static const struct set_key {
	const char *name;
	uint8_t level;
	int (*parse)(struct set_parser *p, const char *v, size_t n);
} set_keys[] = {
	{ "private_key", AT_DEVICE, set_private_key },
	{ "listen_port", AT_DEVICE, set_listen_port },
	{ "fwmark", AT_DEVICE, set_fwmark },
	{ "replace_peers", AT_DEVICE, set_replace_peers },
	{ "public_key", AT_ANY, set_public_key },
	{ "remove", AT_PEER, set_remove },
	{ "update_only", AT_PEER, set_update_only },
	{ "preshared_key", AT_PEER, set_preshared_key },
	{ "endpoint", AT_PEER, set_endpoint },
	{ "persistent_keepalive_interval", AT_PEER, set_keepalive },
	{ "replace_allowed_ips", AT_PEER, set_replace_allowed_ips },
	{ "allowed_ip", AT_PEER, set_allowed_ip },
	{ "protocol_version", AT_PEER, set_protocol_version },
};

static const struct set_key *find_set_key(const char *k, size_t n)
{
	size_t i;

	for (i = 0; i < sizeof(set_keys) / sizeof(set_keys[0]); i++)
		if (value_is(k, n, set_keys[i].name))
			return &set_keys[i];
	return NULL;
}

int wg_uapi_parse_set_why(const uint8_t *data, size_t len, struct wg_device_config *cfg,
			  const char **why)
{
	struct set_parser p = { .cfg = cfg };
	const struct set_key *key;
	const char *line, *nl, *eq;
	size_t off = 0, n;
	int ret = 0;

	memset(cfg, 0, sizeof(*cfg));
	while (off < len) {
		line = (const char *)data + off;
		nl = memchr(line, '\n', len - off);
		n = nl ? (size_t)(nl - line) : len - off;
		off += n + (nl ? 1 : 0);
		/* bufio.ScanLines drops a '\r' before the '\n'; so do we. */
		if (n && line[n - 1] == '\r')
			n--;
		if (!n) {
			/* The server cuts the request at its empty line. */
			p.why = "empty line inside a set request";
			ret = IPC_ERROR_PROTOCOL;
			goto out;
		}
		eq = memchr(line, '=', n);
		if (!eq) {
			p.why = "failed to parse line";
			ret = IPC_ERROR_PROTOCOL;
			goto out;
		}
		key = find_set_key(line, (size_t)(eq - line));
		if (!key || !(key->level & (p.peer ? AT_PEER : AT_DEVICE))) {
			p.why = p.peer ? "invalid UAPI peer key" : "invalid UAPI device key";
			ret = IPC_ERROR_INVALID;
			goto out;
		}
		ret = key->parse(&p, eq + 1, n - (size_t)(eq - line) - 1);
		if (ret)
			goto out;
	}
out:
	if (ret)
		wg_config_clear(cfg);
	if (why)
		*why = p.why;
	return ret;
}

int wg_uapi_parse_set(const uint8_t *data, size_t len, struct wg_device_config *cfg)
{
	return wg_uapi_parse_set_why(data, len, cfg, NULL);
}

/* ---- get replies ------------------------------------------------------- */

static void text_key(struct text_buf *t, const char *name, const uint8_t key[WG_KEY_LEN])
{
	static const char hex[] = "0123456789abcdef";
	char line[32 + 1 + KEY_HEX_LEN + 1];
	size_t nl = strlen(name), i;
	char *o = line;

	if (nl > 32)
		return;
	memcpy(o, name, nl);
	o += nl;
	*o++ = '=';
	for (i = 0; i < WG_KEY_LEN; i++) {
		*o++ = hex[key[i] >> 4];
		*o++ = hex[key[i] & 0xf];
	}
	*o++ = '\n';
	text_buf_add(t, line, (size_t)(o - line));
	sodium_memzero(line, sizeof(line));
}

static void text_endpoint(struct text_buf *t, const union wg_sockaddr *ep)
{
	char addr[INET6_ADDRSTRLEN], zone[IF_NAMESIZE];
	const uint8_t *b;

	if (ep->sa.sa_family == AF_INET) {
		b = (const uint8_t *)&ep->in4.sin_addr;
		text_buf_printf(t, "endpoint=%u.%u.%u.%u:%u\n", b[0], b[1], b[2], b[3],
			    ntohs(ep->in4.sin_port));
	} else if (ep->sa.sa_family == AF_INET6) {
		ip_prefix_format_addr(AF_INET6, ep->in6.sin6_addr.s6_addr, addr);
		if (!ep->in6.sin6_scope_id) {
			text_buf_printf(t, "endpoint=[%s]:%u\n", addr, ntohs(ep->in6.sin6_port));
		} else if (if_indextoname(ep->in6.sin6_scope_id, zone)) {
			/* Named like the kernel's getnameinfo does; wg reads both. */
			text_buf_printf(t, "endpoint=[%s%%%s]:%u\n", addr, zone, ntohs(ep->in6.sin6_port));
		} else {
			text_buf_printf(t, "endpoint=[%s%%%u]:%u\n", addr, ep->in6.sin6_scope_id,
				    ntohs(ep->in6.sin6_port));
		}
	}
}

static void text_allowed_ip(struct text_buf *t, const struct wg_allowed_ip *ip)
{
	char s[IP_PREFIX_STRLEN];

	if (ip->prefix.family != AF_INET && ip->prefix.family != AF_INET6)
		return;
	ip_prefix_format(&ip->prefix, s);
	text_buf_printf(t, "allowed_ip=%s%s\n", ip->remove ? "-" : "", s);
}

int wg_uapi_format_get(const struct wg_device_config *cfg, char **out, size_t *out_len)
{
	const struct wg_peer_config *peer;
	struct text_buf t = { 0 };
	size_t i, j;

	/* Order and conditions as IpcGetOperation. */
	if (!sodium_is_zero(cfg->private_key, WG_KEY_LEN))
		text_key(&t, "private_key", cfg->private_key);
	if (cfg->listen_port)
		text_buf_printf(&t, "listen_port=%u\n", cfg->listen_port);
	if (cfg->fwmark)
		text_buf_printf(&t, "fwmark=%u\n", cfg->fwmark);
	for (i = 0; i < cfg->n_peers; i++) {
		peer = &cfg->peers[i];
		text_key(&t, "public_key", peer->public_key);
		text_key(&t, "preshared_key", peer->preshared_key);
		text_buf_printf(&t, "protocol_version=1\n");
		if (peer->has_endpoint)
			text_endpoint(&t, &peer->endpoint);
		text_buf_printf(&t, "last_handshake_time_sec=%llu\n",
			    (unsigned long long)peer->last_handshake_sec);
		text_buf_printf(&t, "last_handshake_time_nsec=%llu\n",
			    (unsigned long long)peer->last_handshake_nsec);
		text_buf_printf(&t, "tx_bytes=%llu\n", (unsigned long long)peer->tx_bytes);
		text_buf_printf(&t, "rx_bytes=%llu\n", (unsigned long long)peer->rx_bytes);
		text_buf_printf(&t, "persistent_keepalive_interval=%u\n", peer->persistent_keepalive);
		for (j = 0; j < peer->n_allowed_ips; j++)
			text_allowed_ip(&t, &peer->allowed_ips[j]);
	}
	text_buf_add(&t, "errno=0\n\n", 9);
	return text_buf_finish(&t, out, out_len);
}
