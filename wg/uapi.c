/* The userspace configuration protocol: a set-request parser, a get-reply
 * formatter and the unix socket server that wg(8) talks to, answering the way
 * wireguard-go does (device/uapi.go, ipc/uapi_linux.go).
 *
 * Security model: the socket is root-only (mode 0600 in a 0755 directory), but
 * a client may still be a buggy or hostile program, so every byte of a request
 * is untrusted. Lines and whole requests are bounded, every value is checked
 * before anything is applied, a malformed set changes nothing, and buffers that
 * held key material are wiped. A slow client holds only its own thread. */
#include "wg/uapi.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <sodium.h>

#include "tun/text.h"
#include "wg/log.h"

/* wireguard-go's ipcError* codes (ipc/uapi_unix.go): negative errno values. */
enum {
	IPC_ERROR_IO = -EIO,
	IPC_ERROR_PROTOCOL = -EPROTO,
	IPC_ERROR_INVALID = -EINVAL,
	IPC_ERROR_PORT_IN_USE = -EADDRINUSE,
	IPC_ERROR_UNKNOWN = -55, /* ENOANO */
};

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

/* netip.ParsePrefix after an optional '-' (removal): "a.b.c.d/n" or "v6/n",
 * the cidr mandatory, no zone. Stored masked, as the trie keeps it. */
static bool parse_prefix(const char *v, size_t n, struct wg_allowed_ip *ip)
{
	char host[INET6_ADDRSTRLEN];
	const char *slash = memrchr(v, '/', n);
	uint64_t cidr;
	unsigned int i, bits;

	if (!slash || !copy_cstr(host, sizeof(host), v, (size_t)(slash - v)))
		return false;
	if (strchr(host, ':')) {
		if (inet_pton(AF_INET6, host, &ip->addr.v6) != 1)
			return false;
		ip->family = AF_INET6;
		bits = 128;
	} else {
		if (inet_pton(AF_INET, host, &ip->addr.v4) != 1)
			return false;
		ip->family = AF_INET;
		bits = 32;
	}
	if (!parse_uint(slash + 1, n - (size_t)(slash - v) - 1, bits, &cidr))
		return false;
	ip->cidr = (uint8_t)cidr;
	for (i = 0; i < bits / 8; i++) {
		if (i * 8 >= cidr)
			ip->addr.bytes[i] = 0;
		else if (i * 8 + 8 > cidr)
			ip->addr.bytes[i] &= (uint8_t)(0xff00 >> (cidr - i * 8));
	}
	return true;
}

static int set_allowed_ip(struct set_parser *p, const char *v, size_t n)
{
	struct wg_allowed_ip ip = { 0 }, *slot;

	if (n && v[0] == '-') {
		ip.remove = true;
		v++;
		n--;
	}
	if (!parse_prefix(v, n, &ip)) {
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

static int parse_set(const uint8_t *data, size_t len, struct wg_device_config *cfg,
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
	return parse_set(data, len, cfg, NULL);
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

/* netip.Addr.String for IPv6: RFC 5952 (longest run of two or more zero
 * groups becomes "::", the first one on a tie), except that IPv4-mapped
 * addresses print as "::ffff:a.b.c.d". glibc's inet_ntop also prints
 * "::a.b.c.d" for IPv4-compatible ones, which Go does not. */
static void format_v6(char out[INET6_ADDRSTRLEN], const uint8_t a[16])
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	int i, best = -1, best_len = 0, run;
	uint16_t w[8];
	char *o = out;

	if (!memcmp(a, mapped, sizeof(mapped))) {
		snprintf(out, INET6_ADDRSTRLEN, "::ffff:%u.%u.%u.%u", a[12], a[13], a[14], a[15]);
		return;
	}
	for (i = 0; i < 8; i++)
		w[i] = (uint16_t)(a[2 * i] << 8 | a[2 * i + 1]);
	for (i = 0; i < 8; i++) {
		for (run = 0; i + run < 8 && !w[i + run]; run++)
			;
		if (run >= 2 && run > best_len) {
			best = i;
			best_len = run;
		}
	}
	for (i = 0; i < 8; i++) {
		if (i == best) {
			*o++ = ':';
			*o++ = ':';
			i += best_len - 1;
			continue;
		}
		if (i > 0 && i != best + best_len)
			*o++ = ':';
		o += sprintf(o, "%x", w[i]);
	}
	*o = '\0';
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
		format_v6(addr, ep->in6.sin6_addr.s6_addr);
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
	char addr[INET6_ADDRSTRLEN];
	const uint8_t *b = ip->addr.bytes;
	const char *sign = ip->remove ? "-" : "";

	if (ip->family == AF_INET) {
		text_buf_printf(t, "allowed_ip=%s%u.%u.%u.%u/%u\n", sign, b[0], b[1], b[2], b[3], ip->cidr);
	} else if (ip->family == AF_INET6) {
		format_v6(addr, b);
		text_buf_printf(t, "allowed_ip=%s%s/%u\n", sign, addr, ip->cidr);
	}
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

/* ---- the socket server ------------------------------------------------- */

enum client_state { CLIENT_FREE, CLIENT_RUNNING, CLIENT_DONE };

struct uapi_client {
	struct wg_uapi_server *server; /* immutable while the slot is in use */
	pthread_t thread;
	int fd;                        /* guarded by server->lock */
	enum client_state state;       /* guarded by server->lock */
};

struct wg_uapi_server {
	/* Immutable after wg_uapi_server_start. */
	const struct wg_uapi_ops *ops;
	void *ctx;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t dev; /* identity of our socket file, to tell it from a successor's */
	ino_t ino;
	int listen_fd;  /* accept thread only, until stop joined it */
	int inotify_fd; /* accept thread only */
	int wake_fd;    /* eventfd: stop, or a client slot freed */
	pthread_t accept_thread;
	atomic_bool stopping;

	/* Set transactions exclude each other and snapshots, like wireguard-go's ipcMutex. */
	pthread_rwlock_t ipc_lock;

	pthread_mutex_t lock; /* guards clients[].fd and clients[].state */
	struct uapi_client clients[WG_UAPI_MAX_CLIENTS];
};

/* One connection's input: a small read buffer and the current line. */
struct conn {
	int fd;
	size_t pos, len;
	uint8_t in[4096];
	char line[WG_UAPI_MAX_LINE];
};

static void wake(struct wg_uapi_server *s)
{
	uint64_t one = 1;

	/* Can only fail when the counter is saturated: the wakeup is pending anyway. */
	if (write(s->wake_fd, &one, sizeof(one)) < 0)
		return;
}

static int send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_errno(int fd, int code)
{
	char reply[32];
	int n = snprintf(reply, sizeof(reply), "errno=%d\n\n", code);

	return send_all(fd, reply, (size_t)n);
}

static int conn_fill(struct conn *c)
{
	ssize_t n;

	do
		n = read(c->fd, c->in, sizeof(c->in));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -EIO;
	c->pos = 0;
	c->len = (size_t)n;
	return (int)n;
}

/* Reads one line into c->line: its length with the '\n', a shorter one without
 * it when EOF cut it, 0 at EOF before any byte, -E2BIG when longer than
 * WG_UAPI_MAX_LINE, -EIO on a read error. */
static int conn_read_line(struct conn *c)
{
	size_t got = 0, take;
	const uint8_t *nl;
	int r;

	for (;;) {
		if (c->pos == c->len) {
			r = conn_fill(c);
			if (r <= 0)
				return r < 0 ? r : (int)got;
		}
		nl = memchr(c->in + c->pos, '\n', c->len - c->pos);
		take = nl ? (size_t)(nl - (c->in + c->pos)) + 1 : c->len - c->pos;
		if (got + take > sizeof(c->line))
			return -E2BIG;
		memcpy(c->line + got, c->in + c->pos, take);
		got += take;
		c->pos += take;
		if (nl)
			return (int)got;
	}
}

/* The byte after "get=1\n" must end the request. 1 if it does, 0 at EOF, -EIO. */
static int conn_read_empty_line(struct conn *c)
{
	int r;

	if (c->pos == c->len) {
		r = conn_fill(c);
		if (r <= 0)
			return r;
	}
	return c->in[c->pos++] == '\n' ? 1 : -EPROTO;
}

/* Replies to read requests (get, stats) carry a positive errno, as wg's
 * userspace_get_device reads "errno=" as an unsigned number; set replies and
 * protocol errors carry wireguard-go's negative codes, as wg's
 * userspace_set_device expects. Each serve_* returns 0 to keep the connection,
 * <0 to close it. */
static int serve_get(struct wg_uapi_server *s, struct conn *c)
{
	struct wg_device_config cfg = { 0 };
	char *text = NULL;
	size_t len = 0;
	int ret;

	ret = conn_read_empty_line(c);
	if (ret <= 0) {
		if (ret == -EPROTO) {
			log_error("IPC error %d: trailing character in UAPI get", IPC_ERROR_INVALID);
			send_errno(c->fd, IPC_ERROR_INVALID);
		}
		return -1;
	}
	pthread_rwlock_rdlock(&s->ipc_lock);
	ret = s->ops->get(s->ctx, &cfg);
	pthread_rwlock_unlock(&s->ipc_lock);
	if (!ret)
		ret = wg_uapi_format_get(&cfg, &text, &len);
	wg_config_clear(&cfg);
	if (ret) {
		ret = ret < 0 ? -ret : ret;
		log_error("IPC error %d: get failed: %s", ret, strerror(ret));
		return send_errno(c->fd, ret);
	}
	ret = send_all(c->fd, text, len);
	sodium_memzero(text, len);
	free(text);
	return ret;
}

static int serve_stats(struct wg_uapi_server *s, struct conn *c)
{
	char *text = NULL;
	size_t len = 0;
	int ret;

	ret = conn_read_empty_line(c);
	if (ret <= 0) {
		if (ret == -EPROTO)
			send_errno(c->fd, IPC_ERROR_INVALID);
		return -1;
	}
	ret = 0;
	if (s->ops->stats) {
		pthread_rwlock_rdlock(&s->ipc_lock);
		ret = s->ops->stats(s->ctx, &text, &len);
		pthread_rwlock_unlock(&s->ipc_lock);
	}
	if (ret) {
		ret = ret < 0 ? -ret : ret;
		ret = send_errno(c->fd, ret);
	} else if (!(ret = send_all(c->fd, text, len)) && len && text[len - 1] != '\n') {
		ret = send_all(c->fd, "\n", 1);
	}
	if (!ret)
		ret = send_all(c->fd, "errno=0\n\n", 9);
	free(text);
	return ret;
}

/* Collects a request's key=value lines up to the empty line (or EOF, which
 * ends it as bufio.Scanner does; *eof then says so) into body, at most max
 * bytes. 0, -EIO (the connection broke), -E2BIG or -ENOMEM. */
static int read_body(struct conn *c, size_t max, struct text_buf *body, bool *eof)
{
	for (;;) {
		int n = conn_read_line(c);

		if (n == 0) {
			*eof = true;
			return 0;
		}
		if (n == -EIO)
			return -EIO;
		if (n < 0 || body->len + (size_t)n > max)
			return -E2BIG;
		if ((n == 1 && c->line[0] == '\n') || (n == 2 && !memcmp(c->line, "\r\n", 2)))
			return 0;
		text_buf_add(body, c->line, (size_t)n);
		if (body->oom)
			return -ENOMEM;
	}
}

static int serve_set(struct wg_uapi_server *s, struct conn *c)
{
	struct wg_device_config cfg;
	struct text_buf body = { 0 };
	const char *why = NULL;
	bool eof = false;
	int n, ret;

	/* Collect the whole request first: nothing is applied unless all of it
	 * parses. */
	n = read_body(c, WG_UAPI_MAX_REQUEST, &body, &eof);
	if (n) {
		if (n == -E2BIG)
			log_error("IPC error %d: set request too large", IPC_ERROR_IO);
		if (n != -EIO)
			send_errno(c->fd, n == -E2BIG ? IPC_ERROR_IO : IPC_ERROR_UNKNOWN);
		ret = -1;
		goto out;
	}

	ret = parse_set((const uint8_t *)body.p, body.len, &cfg, &why);
	if (!ret) {
		pthread_rwlock_wrlock(&s->ipc_lock);
		ret = s->ops->set(s->ctx, &cfg);
		pthread_rwlock_unlock(&s->ipc_lock);
		wg_config_clear(&cfg);
		if (ret > 0)
			ret = -ret;
		why = ret ? strerror(-ret) : NULL;
	}
	if (ret)
		log_error("IPC error %d: %s", ret, why ? why : "set failed");
	else
		log_info("UAPI: configuration applied");
	ret = send_errno(c->fd, ret);
	if (eof)
		ret = -1;
out:
	text_buf_free(&body);
	return ret;
}

/* "weft=VERB\n": the verb as a C string, when it is one (a-z, 0-9, '-'). */
static bool command_verb(const char *line, size_t n, char verb[WG_UAPI_MAX_VERB + 1])
{
	static const size_t plen = sizeof("weft=") - 1;
	size_t vn, i;

	if (n < plen + 2 || memcmp(line, "weft=", plen) || line[n - 1] != '\n')
		return false;
	vn = n - plen - 1;
	if (vn > WG_UAPI_MAX_VERB)
		return false;
	for (i = 0; i < vn; i++) {
		char ch = line[plen + i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-'))
			return false;
		verb[i] = ch;
	}
	verb[vn] = '\0';
	return true;
}

/* weft's own requests: collected like a set, handed whole to ops->command,
 * answered with its reply lines and a positive errno, as a get is. */
static int serve_command(struct wg_uapi_server *s, struct conn *c)
{
	char verb[WG_UAPI_MAX_VERB + 1], *reply = NULL;
	const char *nl = memchr(c->line, '\n', sizeof(c->line));
	struct text_buf body = { 0 };
	size_t reply_len = 0;
	bool eof = false;
	int n, ret;

	/* serve_connection matched the line, so it is a verb and nl is its end. */
	if (!nl || !command_verb(c->line, (size_t)(nl - c->line) + 1, verb))
		return -1;
	n = read_body(c, WG_UAPI_MAX_COMMAND, &body, &eof);
	if (n == -E2BIG)
		log_error("weft=%s: request too large", verb);
	/* NUL-terminated for the handler's convenience, not counted. */
	if (!n)
		text_buf_add(&body, "", 1);
	if (n || body.oom) {
		if (n != -EIO)
			send_errno(c->fd, n == -E2BIG ? E2BIG : ENOMEM);
		ret = -1;
		goto out;
	}
	pthread_rwlock_wrlock(&s->ipc_lock);
	ret = s->ops->command(s->ctx, verb, body.p, body.len - 1, &reply, &reply_len);
	pthread_rwlock_unlock(&s->ipc_lock);
	ret = ret < 0 ? -ret : ret;
	n = 0;
	if (reply && reply_len) {
		n = send_all(c->fd, reply, reply_len);
		if (!n && reply[reply_len - 1] != '\n')
			n = send_all(c->fd, "\n", 1);
	}
	free(reply);
	if (!n)
		n = send_errno(c->fd, ret);
	ret = n || eof ? -1 : 0;
out:
	text_buf_free(&body);
	return ret;
}

/* Operations are whole lines, but for weft's requests, which share a prefix. */
static const struct uapi_op {
	const char *line;
	int (*serve)(struct wg_uapi_server *s, struct conn *c);
	bool prefix;
} uapi_ops[] = {
	{ "get=1\n", serve_get, false },
	{ "set=1\n", serve_set, false },
	{ "stats=1\n", serve_stats, false },
	{ "weft=", serve_command, true },
};

static bool op_matches(const struct wg_uapi_server *s, const struct uapi_op *op, const char *line,
		       size_t n)
{
	char verb[WG_UAPI_MAX_VERB + 1];

	/* The one prefix is "weft=", served only when the daemon has commands. */
	if (op->prefix)
		return s->ops->command && command_verb(line, n, verb);
	return n == strlen(op->line) && !memcmp(line, op->line, n);
}

static void serve_connection(struct wg_uapi_server *s, struct conn *c)
{
	const struct uapi_op *op;
	size_t i;
	int n;

	for (;;) {
		n = conn_read_line(c);
		if (n == 0 || n == -EIO)
			return;
		op = NULL;
		for (i = 0; n > 0 && i < sizeof(uapi_ops) / sizeof(uapi_ops[0]); i++)
			if (op_matches(s, &uapi_ops[i], c->line, (size_t)n))
				op = &uapi_ops[i];
		if (!op) {
			/* A line cut by EOF is no request at all. */
			if (n > 0 && c->line[n - 1] != '\n')
				return;
			log_error("invalid UAPI operation");
			send_errno(c->fd, IPC_ERROR_INVALID);
			return;
		}
		if (op->serve(s, c) < 0)
			return;
	}
}

static void *client_main(void *arg)
{
	struct uapi_client *cl = arg;
	struct wg_uapi_server *s = cl->server;
	struct conn *c = malloc(sizeof(*c));

	if (c) {
		c->fd = cl->fd;
		c->pos = c->len = 0;
		serve_connection(s, c);
		/* The buffers saw private keys. */
		sodium_memzero(c, sizeof(*c));
		free(c);
	}
	pthread_mutex_lock(&s->lock);
	close(cl->fd);
	cl->fd = -1;
	cl->state = CLIENT_DONE;
	pthread_mutex_unlock(&s->lock);
	wake(s);
	return NULL;
}

/* Joins finished client threads and returns a free slot, or -1 when all
 * WG_UAPI_MAX_CLIENTS are busy. */
static int reap_clients(struct wg_uapi_server *s)
{
	int i, free_slot = -1;

	pthread_mutex_lock(&s->lock);
	for (i = 0; i < WG_UAPI_MAX_CLIENTS; i++) {
		if (s->clients[i].state == CLIENT_DONE) {
			/* It set DONE as its last step under the lock: joining cannot block long. */
			pthread_join(s->clients[i].thread, NULL);
			s->clients[i].state = CLIENT_FREE;
		}
		if (s->clients[i].state == CLIENT_FREE && free_slot < 0)
			free_slot = i;
	}
	pthread_mutex_unlock(&s->lock);
	return free_slot;
}

static void start_client(struct wg_uapi_server *s, int slot, int fd)
{
	struct uapi_client *cl = &s->clients[slot];

	pthread_mutex_lock(&s->lock);
	cl->server = s;
	cl->fd = fd;
	cl->state = CLIENT_RUNNING;
	if (pthread_create(&cl->thread, NULL, client_main, cl)) {
		log_ratelimited(WG_LOG_ERROR, "UAPI: cannot start a client thread: %s", strerror(errno));
		close(fd);
		cl->fd = -1;
		cl->state = CLIENT_FREE;
	}
	pthread_mutex_unlock(&s->lock);
}

/* Removed, renamed away, or replaced by another daemon's socket. */
static bool socket_gone(const struct wg_uapi_server *s)
{
	struct stat st;

	if (lstat(s->path, &st) < 0)
		return errno == ENOENT || errno == ENOTDIR;
	return st.st_dev != s->dev || st.st_ino != s->ino;
}

static void drain(int fd)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

static void *accept_main(void *arg)
{
	struct wg_uapi_server *s = arg;
	struct pollfd pfd[3];
	int slot, fd;

	/* The file may have gone between bind and inotify_add_watch. */
	if (socket_gone(s))
		goto gone;
	while (!atomic_load(&s->stopping)) {
		slot = reap_clients(s);
		pfd[0] = (struct pollfd){ .fd = s->wake_fd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = s->inotify_fd, .events = POLLIN };
		/* With every slot busy, leave new connections in the backlog. */
		pfd[2] = (struct pollfd){ .fd = s->listen_fd, .events = slot >= 0 ? POLLIN : 0 };
		if (poll(pfd, 3, -1) < 0)
			continue;
		if (pfd[0].revents)
			drain(s->wake_fd);
		if (pfd[1].revents) {
			drain(s->inotify_fd);
			if (socket_gone(s))
				goto gone;
		}
		if (slot >= 0 && (pfd[2].revents & POLLIN)) {
			fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0) {
				/* A client that goes quiet mid-conversation gives its
				 * slot back, so idle connections cannot lock `wg` out. */
				struct timeval idle = { .tv_sec = WG_UAPI_IDLE_TIMEOUT_SEC };

				setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof(idle));
				setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &idle, sizeof(idle));
				start_client(s, slot, fd);
			} else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
				/* Out of descriptors: back off instead of spinning. */
				log_ratelimited(WG_LOG_ERROR, "UAPI: accept: %s", strerror(errno));
				poll(NULL, 0, 10);
			}
		}
	}
	return NULL;
gone:
	if (!atomic_load(&s->stopping)) {
		log_info("UAPI: socket file removed");
		if (s->ops->gone)
			s->ops->gone(s->ctx);
	}
	return NULL;
}

static int mkdir_p(const char *dir, mode_t mode)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	size_t i, n = strlen(dir);

	if (n >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, dir, n + 1);
	for (i = 1; i <= n; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		path[i] = '\0';
		if (mkdir(path, mode) < 0 && errno != EEXIST)
			return -errno;
		path[i] = dir[i];
	}
	return 0;
}

/* True when something accepts connections on path (a live daemon); a full
 * backlog counts too. */
static bool socket_answers(const struct sockaddr_un *addr)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	bool live;

	if (fd < 0)
		return false;
	live = !connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) || errno == EAGAIN;
	close(fd);
	return live;
}

/* Binds and listens like wireguard-go's UAPIOpen, but with umask 0177 around
 * bind so the socket is 0600 as DESIGN.md asks (wireguard-go's 077 gives
 * 0700; the x bit means nothing on a socket) (the
 * umask is process-wide, so this briefly affects files other threads create),
 * and a stale socket nobody answers on is removed. */
static int open_listener(const char *path, int *out)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	mode_t old_umask;
	int fd, ret;

	memcpy(addr.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	old_umask = umask(0177);
	ret = bind(fd, (struct sockaddr *)&addr, sizeof(addr));
	if (ret < 0 && errno == EADDRINUSE) {
		if (socket_answers(&addr))
			errno = EADDRINUSE;
		else if (unlink(path) == 0 || errno == ENOENT)
			ret = bind(fd, (struct sockaddr *)&addr, sizeof(addr));
	}
	ret = ret < 0 ? -errno : 0;
	umask(old_umask);
	if (!ret && listen(fd, SOMAXCONN) < 0) {
		ret = -errno;
		unlink(path);
	}
	if (ret) {
		close(fd);
		return ret;
	}
	*out = fd;
	return 0;
}

struct wg_uapi_server *wg_uapi_server_start(const char *dir, const char *ifname,
					    const struct wg_uapi_ops *ops, void *ctx)
{
	struct wg_uapi_server *s = NULL;
	bool bound = false, locks = false;
	struct stat st;
	int ret, n;

	if (!ifname || !*ifname || strchr(ifname, '/') || !ops || !ops->get || !ops->set) {
		errno = EINVAL;
		return NULL;
	}
	if (!dir)
		dir = WG_UAPI_DEFAULT_DIR;
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->ops = ops;
	s->ctx = ctx;
	s->listen_fd = s->inotify_fd = s->wake_fd = -1;
	n = snprintf(s->path, sizeof(s->path), "%s/%s.sock", dir, ifname);
	if (n < 0 || (size_t)n >= sizeof(s->path)) {
		ret = -ENAMETOOLONG;
		goto fail;
	}
	ret = mkdir_p(dir, 0755);
	if (ret)
		goto fail;
	ret = open_listener(s->path, &s->listen_fd);
	if (ret)
		goto fail;
	bound = true;
	if (stat(s->path, &st) < 0) {
		ret = -errno;
		goto fail;
	}
	s->dev = st.st_dev;
	s->ino = st.st_ino;

	/* IN_ATTRIB: unlinking drops the link count, while the bound socket keeps
	 * the inode alive, so IN_DELETE_SELF alone would never fire. */
	s->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (s->inotify_fd < 0 ||
	    inotify_add_watch(s->inotify_fd, s->path, IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF) < 0) {
		ret = -errno;
		goto fail;
	}
	s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->wake_fd < 0) {
		ret = -errno;
		goto fail;
	}
	for (n = 0; n < WG_UAPI_MAX_CLIENTS; n++)
		s->clients[n].fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_rwlock_init(&s->ipc_lock, NULL);
	locks = true;
	ret = -pthread_create(&s->accept_thread, NULL, accept_main, s);
	if (ret)
		goto fail;
	log_info("UAPI listener started");
	return s;

fail:
	if (locks) {
		pthread_mutex_destroy(&s->lock);
		pthread_rwlock_destroy(&s->ipc_lock);
	}
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	if (s->inotify_fd >= 0)
		close(s->inotify_fd);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (bound)
		unlink(s->path);
	free(s);
	errno = -ret;
	return NULL;
}

void wg_uapi_server_stop(struct wg_uapi_server *s)
{
	bool busy[WG_UAPI_MAX_CLIENTS];
	int i;

	if (!s)
		return;
	atomic_store(&s->stopping, true);
	wake(s);
	pthread_join(s->accept_thread, NULL);
	close(s->listen_fd);

	/* Wake clients blocked in read; each closes its own descriptor. With the
	 * accept thread gone no slot becomes busy again, so the ones seen busy
	 * here are all there is to join (outside the lock they need to finish). */
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < WG_UAPI_MAX_CLIENTS; i++) {
		busy[i] = s->clients[i].state != CLIENT_FREE;
		if (s->clients[i].state == CLIENT_RUNNING)
			shutdown(s->clients[i].fd, SHUT_RDWR);
	}
	pthread_mutex_unlock(&s->lock);
	for (i = 0; i < WG_UAPI_MAX_CLIENTS; i++)
		if (busy[i])
			pthread_join(s->clients[i].thread, NULL);

	/* Leave a successor's socket alone. */
	if (!socket_gone(s))
		unlink(s->path);
	close(s->inotify_fd);
	close(s->wake_fd);
	pthread_mutex_destroy(&s->lock);
	pthread_rwlock_destroy(&s->ipc_lock);
	free(s);
}
