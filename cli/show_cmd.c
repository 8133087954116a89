/* weft show: the state of one weftd interface in one place, as `wg show`
 * prints it (interface, peers) plus what weft adds: its counters, the VM
 * ports and the mesh. It asks weftd four things over the UAPI socket:
 * get=1 (as wg does), stats=1, weft=port-list and weft=mesh-show.
 *
 * The get reply carries the private key: it is turned into the public key
 * at once and wiped, with the reply, before anything is printed. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "cli/cli.h"
#include "mesh/text.h"
#include "port/text.h"

const char cmd_show_usage[] =
	"Usage: weft [-i IFNAME] show [--json]\n"
	"\n"
	"Shows the interface (public key, listening port, AEAD backend, packets,\n"
	"drops by reason, handshakes), each peer (endpoint, allowed ips, latest\n"
	"handshake, transfer), each VM port (type, state, MAC, addresses,\n"
	"packets, drops) and the mesh (mode, prefixes, discovery counters,\n"
	"learned routes). --json prints the same as one object. See weft(8).\n";

enum { KEY_B64 = sodium_base64_ENCODED_LEN(32, sodium_base64_VARIANT_ORIGINAL) };

struct peer {
	char key[KEY_B64];
	char *endpoint;      /* NULL: none */
	char *allowed;       /* "a/n, b/m"; NULL: none */
	bool psk;
	uint64_t handshake;  /* UNIX seconds, 0: never */
	uint64_t rx, tx;
	unsigned int keepalive;
};

struct iface {
	bool has_key;
	char key[KEY_B64];
	unsigned int listen_port;
	uint32_t fwmark;
	struct peer *peers;
	size_t n_peers;
};

/* A stats=1 reply: key=value lines, kept whole and searched. */
struct stats {
	char *text;
	size_t len;
};

static void free_iface(struct iface *ifc)
{
	for (size_t i = 0; i < ifc->n_peers; i++) {
		free(ifc->peers[i].endpoint);
		free(ifc->peers[i].allowed);
	}
	free(ifc->peers);
}

static bool hex_key(const char *hex, size_t n, uint8_t out[32])
{
	size_t got = 0;

	return n == 64 && !sodium_hex2bin(out, 32, hex, n, NULL, &got, NULL) && got == 32;
}

static bool append(char **list, const char *item, size_t n)
{
	size_t old = *list ? strlen(*list) : 0;
	char *grown = realloc(*list, old + n + 3);

	if (!grown)
		return false;
	if (old)
		memcpy(grown + old, ", ", 2), old += 2;
	memcpy(grown + old, item, n);
	grown[old + n] = '\0';
	*list = grown;
	return true;
}

/* The lines of a get=1 reply, as wireguard-go writes them. Unknown keys
 * are skipped. */
static int parse_get(char *text, size_t len, struct iface *ifc)
{
	struct peer *p = NULL;
	uint8_t key[32];
	char *line = text, *end = text + len;

	memset(ifc, 0, sizeof(*ifc));
	while (line < end) {
		char *nl = memchr(line, '\n', (size_t)(end - line));
		char *eq;
		size_t kn, vn;
		const char *v;

		if (!nl)
			nl = end;
		eq = memchr(line, '=', (size_t)(nl - line));
		if (!eq)
			goto next;
		kn = (size_t)(eq - line);
		v = eq + 1;
		vn = (size_t)(nl - v);
#define IS(k) (kn == sizeof(k) - 1 && !memcmp(line, k, kn))
		if (IS("private_key")) {
			uint8_t pub[32];

			if (hex_key(v, vn, key) && !sodium_is_zero(key, 32) &&
			    !crypto_scalarmult_curve25519_base(pub, key)) {
				ifc->has_key = true;
				sodium_bin2base64(ifc->key, sizeof(ifc->key), pub, 32,
						  sodium_base64_VARIANT_ORIGINAL);
			}
			sodium_memzero(key, sizeof(key));
		} else if (IS("listen_port")) {
			ifc->listen_port = (unsigned int)strtoul(v, NULL, 10);
		} else if (IS("fwmark")) {
			ifc->fwmark = (uint32_t)strtoul(v, NULL, 10);
		} else if (IS("public_key")) {
			struct peer *grown = realloc(ifc->peers, (ifc->n_peers + 1) * sizeof(*grown));

			if (!grown || !hex_key(v, vn, key)) {
				if (grown)
					ifc->peers = grown;
				return grown ? -EPROTO : -ENOMEM;
			}
			ifc->peers = grown;
			p = &ifc->peers[ifc->n_peers++];
			memset(p, 0, sizeof(*p));
			sodium_bin2base64(p->key, sizeof(p->key), key, 32,
					  sodium_base64_VARIANT_ORIGINAL);
		} else if (!p) {
			goto next;
		} else if (IS("preshared_key")) {
			p->psk = hex_key(v, vn, key) && !sodium_is_zero(key, 32);
			sodium_memzero(key, sizeof(key));
		} else if (IS("endpoint")) {
			free(p->endpoint);
			p->endpoint = strndup(v, vn);
		} else if (IS("allowed_ip")) {
			if (!append(&p->allowed, v, vn))
				return -ENOMEM;
		} else if (IS("last_handshake_time_sec")) {
			p->handshake = strtoull(v, NULL, 10);
		} else if (IS("rx_bytes")) {
			p->rx = strtoull(v, NULL, 10);
		} else if (IS("tx_bytes")) {
			p->tx = strtoull(v, NULL, 10);
		} else if (IS("persistent_keepalive_interval")) {
			p->keepalive = (unsigned int)strtoul(v, NULL, 10);
		}
#undef IS
next:
		line = nl + 1;
	}
	return 0;
}

/* One get=1 exchange; the reply (with the private key) wiped after use. */
static int fetch_iface(struct iface *ifc)
{
	static const char req[] = "get=1\n\n";
	struct cli_reply r;
	int ret = cli_exchange(req, sizeof(req) - 1, &r);

	if (ret || r.err) {
		ret = cli_report("show", ret, &r);
		if (r.text)
			sodium_memzero(r.text, r.len);
		cli_reply_free(&r);
		return ret;
	}
	ret = parse_get(r.text, r.len, ifc);
	sodium_memzero(r.text, r.len);
	cli_reply_free(&r);
	if (ret)
		return cli_fail("show: the daemon's get reply: %s", strerror(-ret));
	return EXIT_OK;
}

static int fetch_stats(struct stats *st)
{
	static const char req[] = "stats=1\n\n";
	struct cli_reply r;
	int ret = cli_exchange(req, sizeof(req) - 1, &r);

	memset(st, 0, sizeof(*st));
	if (ret || r.err) {
		ret = cli_report("show", ret, &r);
		cli_reply_free(&r);
		return ret;
	}
	st->text = r.text;
	st->len = r.len;
	return EXIT_OK;
}

/* The value of key in the stats reply; NULL when absent. Points into the
 * text, up to the end of its line. */
static const char *stat_str(const struct stats *st, const char *key, size_t *n)
{
	size_t kn = strlen(key);

	for (const char *l = st->text; l && l < st->text + st->len;) {
		const char *nl = memchr(l, '\n', (size_t)(st->text + st->len - l));

		if (!nl)
			nl = st->text + st->len;
		if ((size_t)(nl - l) > kn && !memcmp(l, key, kn) && l[kn] == '=') {
			*n = (size_t)(nl - l - (ptrdiff_t)kn - 1);
			return l + kn + 1;
		}
		l = nl + 1;
	}
	return NULL;
}

static uint64_t stat_u64(const struct stats *st, const char *key)
{
	size_t n;
	const char *v = stat_str(st, key, &n);

	return v ? strtoull(v, NULL, 10) : 0;
}

/* The mesh, when the daemon has one; false (and nothing printed) for a
 * daemon without mesh requests. */
static bool fetch_mesh(struct mesh_text_show *m)
{
	static const char req[] = "weft=mesh-show\n\n";
	struct cli_reply r;
	bool ok;

	memset(m, 0, sizeof(*m));
	if (cli_exchange(req, sizeof(req) - 1, &r) || r.err) {
		cli_reply_free(&r);
		return false;
	}
	ok = !mesh_text_parse_show(r.text, r.len, m, NULL);
	cli_reply_free(&r);
	return ok;
}

/* ---- text ----------------------------------------------------------------- */

static void print_bytes(uint64_t b)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int u = -1;

	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		printf("%llu B", (unsigned long long)b);
	else
		printf("%.2f %s", v, units[u]);
}

static void print_ago(uint64_t when)
{
	static const struct {
		const char *unit;
		uint64_t secs;
	} parts[] = { { "day", 86400 }, { "hour", 3600 }, { "minute", 60 }, { "second", 1 } };
	uint64_t now = (uint64_t)time(NULL), left;
	bool any = false;

	if (when > now) {
		printf("in the future");
		return;
	}
	left = now - when;
	if (!left) {
		printf("now");
		return;
	}
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		uint64_t n = left / parts[i].secs;

		if (!n)
			continue;
		left %= parts[i].secs;
		printf("%s%llu %s%s", any ? ", " : "", (unsigned long long)n, parts[i].unit,
		       n == 1 ? "" : "s");
		any = true;
	}
	printf(" ago");
}

/* " (name value, name value)" of the non-zero stats=1 keys with prefix;
 * with sum_only, nothing is printed. Returns their sum. */
static uint64_t stat_prefix(const struct stats *st, const char *prefix, bool sum_only)
{
	size_t pn = strlen(prefix);
	uint64_t sum = 0;
	bool any = false;

	for (const char *l = st->text; l && l < st->text + st->len;) {
		const char *nl = memchr(l, '\n', (size_t)(st->text + st->len - l));
		const char *eq;

		if (!nl)
			nl = st->text + st->len;
		eq = memchr(l, '=', (size_t)(nl - l));
		if (eq && (size_t)(eq - l) > pn && !memcmp(l, prefix, pn)) {
			uint64_t v = strtoull(eq + 1, NULL, 10);

			if (v && !sum_only) {
				printf("%s%.*s %llu", any ? ", " : " (", (int)(eq - l - (ptrdiff_t)pn),
				       l + pn, (unsigned long long)v);
				any = true;
			}
			sum += v;
		}
		l = nl + 1;
	}
	if (any)
		putchar(')');
	return sum;
}

static uint64_t port_counter(const struct port_info *p, size_t i)
{
	uint64_t v;

	memcpy(&v, (const char *)p + port_text_counters[i].offset, sizeof(v));
	return v;
}

static void text_iface(const char *ifname, const struct iface *ifc, const struct stats *st)
{
	size_t n;
	const char *aead = stat_str(st, "aead_backend", &n);

	printf("interface: %s\n", ifname);
	if (ifc->has_key)
		printf("  public key: %s\n", ifc->key);
	printf("  listening port: %u\n", ifc->listen_port);
	if (ifc->fwmark)
		printf("  fwmark: 0x%x\n", ifc->fwmark);
	if (aead)
		printf("  aead backend: %.*s\n", (int)n, aead);
	printf("  packets: %llu received (", (unsigned long long)stat_u64(st, "rx_packets"));
	print_bytes(stat_u64(st, "rx_bytes"));
	printf("), %llu sent (", (unsigned long long)stat_u64(st, "tx_packets"));
	print_bytes(stat_u64(st, "tx_bytes"));
	printf(")\n  drops: %llu", (unsigned long long)stat_prefix(st, "drop_", true));
	stat_prefix(st, "drop_", false);
	printf("\n  handshakes: %llu initiations sent, %llu received, %llu responses sent, "
	       "%llu received, %llu cookie replies sent, %llu failed\n",
	       (unsigned long long)stat_u64(st, "hs_initiations_sent"),
	       (unsigned long long)stat_u64(st, "hs_initiations_received"),
	       (unsigned long long)stat_u64(st, "hs_responses_sent"),
	       (unsigned long long)stat_u64(st, "hs_responses_received"),
	       (unsigned long long)stat_u64(st, "hs_cookies_sent"),
	       (unsigned long long)stat_u64(st, "hs_failed"));
}

static void text_peer(const struct peer *p)
{
	printf("\npeer: %s\n", p->key);
	if (p->psk)
		printf("  preshared key: (hidden)\n");
	if (p->endpoint)
		printf("  endpoint: %s\n", p->endpoint);
	printf("  allowed ips: %s\n", p->allowed ? p->allowed : "(none)");
	if (p->handshake) {
		printf("  latest handshake: ");
		print_ago(p->handshake);
		putchar('\n');
	}
	if (p->rx || p->tx) {
		printf("  transfer: ");
		print_bytes(p->rx);
		printf(" received, ");
		print_bytes(p->tx);
		printf(" sent\n");
	}
	if (p->keepalive)
		printf("  persistent keepalive: every %u second%s\n", p->keepalive,
		       p->keepalive == 1 ? "" : "s");
}

static void text_port(const struct port_info *p)
{
	char mac[PORT_TEXT_MAC_LEN], addr[IP_PREFIX_STRLEN];
	uint64_t drops = 0;
	bool any = false;

	port_text_mac(p->cfg.vm_mac, mac);
	printf("\nport: %s\n  type: %s%s%s\n  state: %s\n  mac: %s\n", p->cfg.name,
	       port_text_type_name(p->cfg.type), p->cfg.type == PORT_VHOST_USER ? " " : "",
	       p->cfg.type == PORT_VHOST_USER ? p->cfg.path : "", p->connected ? "up" : "down",
	       mac);
	printf("  addresses:");
	for (size_t i = 0; i < p->cfg.n_addrs; i++) {
		ip_prefix_format(&p->cfg.addrs[i], addr);
		printf("%s%s", i ? ", " : " ", addr);
	}
	printf("%s\n", p->cfg.n_addrs ? "" : " (none)");
	printf("  packets: %llu from the VM (", (unsigned long long)p->rx_packets);
	print_bytes(p->rx_bytes);
	printf("), %llu to it (", (unsigned long long)p->tx_packets);
	print_bytes(p->tx_bytes);
	printf(")\n  drops:");
	for (size_t i = 0; i < port_text_n_counters; i++)
		if (port_text_counters[i].drop)
			drops += port_counter(p, i);
	printf(" %llu", (unsigned long long)drops);
	for (size_t i = 0; i < port_text_n_counters; i++) {
		uint64_t v = port_counter(p, i);

		if (!port_text_counters[i].drop || !v)
			continue;
		printf("%s%s %llu", any ? ", " : " (", port_text_counters[i].key + 5,
		       (unsigned long long)v);
		any = true;
	}
	printf("%s\n", any ? ")" : "");
}

static void text_mesh(const struct mesh_text_show *m)
{
	char addr[IP_PREFIX_STRLEN], key[MESH_TEXT_KEY_LEN];

	printf("\nmesh: %s\n  prefixes:", mesh_text_mode_name(m->cfg.mode));
	for (size_t i = 0; i < m->cfg.n_prefixes; i++) {
		ip_prefix_format(&m->cfg.prefixes[i], addr);
		printf("%s%s", i ? ", " : " ", addr);
	}
	printf("%s\n", m->cfg.n_prefixes ? "" : " (none)");
	printf("  locations: %llu learned, %llu being resolved\n",
	       (unsigned long long)m->stats.locations, (unsigned long long)m->stats.pending);
	printf("  discovery: %llu solicits sent, %llu received, %llu adverts sent, %llu received, "
	       "%llu lookups, %llu resolved, %llu negative\n",
	       (unsigned long long)m->stats.solicit_sent,
	       (unsigned long long)m->stats.solicit_received,
	       (unsigned long long)m->stats.advert_sent,
	       (unsigned long long)m->stats.advert_received,
	       (unsigned long long)m->stats.lookups, (unsigned long long)m->stats.resolved,
	       (unsigned long long)m->stats.negative);
	for (size_t i = 0; i < m->n_routes; i++) {
		ip_prefix_format(&m->routes[i].prefix, addr);
		if (m->routes[i].negative) {
			printf("  route: %s nowhere\n", addr);
		} else {
			mesh_text_key_base64(m->routes[i].holder, key);
			printf("  route: %s via peer %s\n", addr, key);
		}
	}
	if (m->truncated)
		printf("  (more routes than shown)\n");
}

/* ---- JSON ----------------------------------------------------------------- */

static void json_key(const char *k, bool *first)
{
	printf("%s\n    ", *first ? "" : ",");
	cli_json_str(k);
	printf(": ");
	*first = false;
}

/* The stats=1 reply as an object; numbers as numbers. */
static void json_stats(const struct stats *st)
{
	bool first = true;

	printf("{");
	for (const char *l = st->text; l && l < st->text + st->len;) {
		const char *nl = memchr(l, '\n', (size_t)(st->text + st->len - l));
		const char *eq;
		char key[64], val[128];
		size_t kn, vn, digits;

		if (!nl)
			nl = st->text + st->len;
		eq = memchr(l, '=', (size_t)(nl - l));
		if (eq) {
			kn = (size_t)(eq - l) < sizeof(key) - 1 ? (size_t)(eq - l) : sizeof(key) - 1;
			vn = (size_t)(nl - eq - 1) < sizeof(val) - 1 ? (size_t)(nl - eq - 1)
								     : sizeof(val) - 1;
			memcpy(key, l, kn);
			key[kn] = '\0';
			memcpy(val, eq + 1, vn);
			val[vn] = '\0';
			digits = strspn(val, "0123456789");
			printf("%s", first ? "" : ", ");
			cli_json_str(key);
			printf(": ");
			if (vn && digits == vn && vn < 21)
				printf("%s", val);
			else
				cli_json_str(val);
			first = false;
		}
		l = nl + 1;
	}
	printf("}");
}

static void json_peer(const struct peer *p)
{
	printf("{\"public_key\": ");
	cli_json_str(p->key);
	printf(", \"preshared_key\": %s, \"endpoint\": ", p->psk ? "true" : "false");
	if (p->endpoint)
		cli_json_str(p->endpoint);
	else
		printf("null");
	printf(", \"allowed_ips\": [");
	for (const char *a = p->allowed; a && *a;) {
		size_t n = strcspn(a, ",");
		char item[IP_PREFIX_STRLEN + 8];

		snprintf(item, sizeof(item), "%.*s", (int)n, a);
		printf("%s", a == p->allowed ? "" : ", ");
		cli_json_str(item);
		a += n;
		a += strspn(a, ", ");
	}
	printf("], \"latest_handshake\": %llu, \"rx_bytes\": %llu, \"tx_bytes\": %llu, "
	       "\"persistent_keepalive\": %u}",
	       (unsigned long long)p->handshake, (unsigned long long)p->rx,
	       (unsigned long long)p->tx, p->keepalive);
}

static void json_port(const struct port_info *p)
{
	char mac[PORT_TEXT_MAC_LEN], addr[IP_PREFIX_STRLEN];

	port_text_mac(p->cfg.vm_mac, mac);
	printf("{\"name\": ");
	cli_json_str(p->cfg.name);
	printf(", \"type\": ");
	cli_json_str(port_text_type_name(p->cfg.type));
	printf(", \"path\": ");
	if (p->cfg.type == PORT_VHOST_USER)
		cli_json_str(p->cfg.path);
	else
		printf("null");
	printf(", \"mac\": \"%s\", \"connected\": %s, \"addresses\": [", mac,
	       p->connected ? "true" : "false");
	for (size_t i = 0; i < p->cfg.n_addrs; i++) {
		ip_prefix_format(&p->cfg.addrs[i], addr);
		printf("%s\"%s\"", i ? ", " : "", addr);
	}
	printf("], \"counters\": {");
	for (size_t i = 0; i < port_text_n_counters; i++)
		printf("%s\"%s\": %llu", i ? ", " : "", port_text_counters[i].key,
		       (unsigned long long)port_counter(p, i));
	printf("}}");
}

static void json_mesh(const struct mesh_text_show *m)
{
	char addr[IP_PREFIX_STRLEN], key[MESH_TEXT_KEY_LEN];

	printf("{\"mode\": \"%s\", \"prefixes\": [", mesh_text_mode_name(m->cfg.mode));
	for (size_t i = 0; i < m->cfg.n_prefixes; i++) {
		ip_prefix_format(&m->cfg.prefixes[i], addr);
		printf("%s\"%s\"", i ? ", " : "", addr);
	}
	printf("], \"counters\": {");
	for (size_t i = 0; i < mesh_text_n_counters; i++) {
		uint64_t v;

		memcpy(&v, (const char *)&m->stats + mesh_text_counters[i].offset, sizeof(v));
		printf("%s\"%s\": %llu", i ? ", " : "", mesh_text_counters[i].key,
		       (unsigned long long)v);
	}
	printf("}, \"routes\": [");
	for (size_t i = 0; i < m->n_routes; i++) {
		ip_prefix_format(&m->routes[i].prefix, addr);
		printf("%s{\"route\": \"%s\", \"holder\": ", i ? ", " : "", addr);
		if (m->routes[i].negative) {
			printf("null");
		} else {
			mesh_text_key_base64(m->routes[i].holder, key);
			printf("\"%s\"", key);
		}
		printf(", \"seq\": %llu}", (unsigned long long)m->routes[i].seq);
	}
	printf("], \"routes_truncated\": %s}", m->truncated ? "true" : "false");
}

static void json_all(const char *ifname, const struct iface *ifc, const struct stats *st,
		     const struct port_info *ports, size_t n_ports, const struct mesh_text_show *m)
{
	bool first = true;

	printf("{");
	json_key("interface", &first);
	cli_json_str(ifname);
	json_key("public_key", &first);
	if (ifc->has_key)
		cli_json_str(ifc->key);
	else
		printf("null");
	json_key("listen_port", &first);
	printf("%u", ifc->listen_port);
	json_key("fwmark", &first);
	printf("%u", ifc->fwmark);
	json_key("stats", &first);
	json_stats(st);
	json_key("peers", &first);
	printf("[");
	for (size_t i = 0; i < ifc->n_peers; i++) {
		printf("%s\n      ", i ? "," : "");
		json_peer(&ifc->peers[i]);
	}
	printf("]");
	json_key("ports", &first);
	printf("[");
	for (size_t i = 0; i < n_ports; i++) {
		printf("%s\n      ", i ? "," : "");
		json_port(&ports[i]);
	}
	printf("]");
	json_key("mesh", &first);
	if (m)
		json_mesh(m);
	else
		printf("null");
	printf("\n}\n");
}

/* The interface: the socket's name without ".sock". */
static void socket_ifname(char *out, size_t len)
{
	const char *path = cli_socket_path(), *base = strrchr(path, '/');
	size_t n;

	base = base ? base + 1 : path;
	n = strlen(base);
	if (n > 5 && !strcmp(base + n - 5, ".sock"))
		n -= 5;
	snprintf(out, len, "%.*s", (int)n, base);
}

int cmd_show(int argc, char **argv)
{
	struct iface ifc = { 0 };
	struct stats st = { 0 };
	struct port_info *ports = NULL;
	struct mesh_text_show mesh;
	size_t n_ports = 0;
	bool json = false, has_mesh;
	char ifname[64];
	int ret;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else
			return cli_usage_error("show: unexpected argument '%s'", argv[i]);
	}
	if (sodium_init() < 0)
		return cli_fail("show: libsodium does not start");
	if ((ret = fetch_iface(&ifc)) || (ret = fetch_stats(&st)) ||
	    (ret = cli_fetch_ports(&ports, &n_ports, "show")))
		goto out;
	has_mesh = fetch_mesh(&mesh);
	socket_ifname(ifname, sizeof(ifname));
	if (json) {
		json_all(ifname, &ifc, &st, ports, n_ports, has_mesh ? &mesh : NULL);
	} else {
		text_iface(ifname, &ifc, &st);
		for (size_t i = 0; i < ifc.n_peers; i++)
			text_peer(&ifc.peers[i]);
		for (size_t i = 0; i < n_ports; i++)
			text_port(&ports[i]);
		if (has_mesh)
			text_mesh(&mesh);
	}
	if (has_mesh)
		mesh_text_show_free(&mesh);
	ret = EXIT_OK;
out:
	free(ports);
	free(st.text);
	free_iface(&ifc);
	return ret;
}
