/* weft: the command line for what wg(8) has no words for, starting with
 * VM ports. It speaks weft's own requests (weft=VERB, docs/cli.md) on the
 * same UAPI socket as wg, /var/run/wireguard/IFNAME.sock.
 *
 * Exit codes: 0 done, 1 failed (one line on stderr with the errno text),
 * 2 the command line was wrong. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "tun/port_text.h"
#include "wg/uapi.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "unknown"
#endif

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2 };
enum {
	REPLY_TIMEOUT_SEC = 30, /* a port add may wait for a tap or a socket */
	MAX_REPLY = 16 * 1024 * 1024,
};

static const char *prog = "weft";
static const char *opt_ifname;   /* -i, else $WEFT_INTERFACE */
static const char *opt_socket;   /* --socket */
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

static const char usage_text[] =
	"Usage: weft [-i IFNAME | --socket PATH] COMMAND [ARGS]\n"
	"\n"
	"Commands:\n"
	"  port add NAME tap|vhost-user [PATH [server|client]] mac MAC\n"
	"           [address CIDR]... [prefix CIDR]... [gateway4 IP] [mtu N]\n"
	"           [router-mac MAC]       add a VM port\n"
	"  port del NAME                   remove a VM port\n"
	"  port list [--json]              show the ports with their counters\n"
	"  port load FILE [--prune] [--dry-run]\n"
	"                                  make the ports those of a ports file\n"
	"  stats                           print weftd's counters\n"
	"\n"
	"Options:\n"
	"  -i, --interface IFNAME  the weftd interface (default: $WEFT_INTERFACE, else\n"
	"                          the only socket in " WG_UAPI_DEFAULT_DIR ")\n"
	"      --socket PATH       talk to this UAPI socket instead\n"
	"  -h, --help              show this help ('weft port --help' for ports)\n"
	"  -V, --version           show the version\n"
	"\n"
	"Exit status: 0 done, 1 failed, 2 wrong command line. See docs/cli.md.\n";

static const char port_usage_text[] =
	"Usage: weft [-i IFNAME] port add NAME tap|vhost-user [PATH [server|client]] mac MAC\n"
	"                 [address CIDR]... [prefix CIDR]... [gateway4 IP] [mtu N]\n"
	"                 [router-mac MAC]\n"
	"       weft [-i IFNAME] port del NAME\n"
	"       weft [-i IFNAME] port list [--json]\n"
	"       weft [-i IFNAME] port load FILE [--prune] [--dry-run]\n"
	"\n"
	"add   NAME is the tap's netdev name (1-15 of a-z A-Z 0-9 . - _). A vhost-user\n"
	"      port needs the absolute PATH of its socket; weftd listens on it\n"
	"      (server, the default) or connects to it (client).\n"
	"        mac MAC          the VM's MAC (required)\n"
	"        address CIDR     an address of the VM (bare: /32 or /128) or a prefix\n"
	"                         routed to it; repeatable, or comma-separated\n"
	"        prefix CIDR      an IPv6 prefix announced in router advertisements\n"
	"        gateway4 IP      the VM's IPv4 gateway (default 169.254.1.1)\n"
	"        mtu N            1280 to 9000 (default 1500)\n"
	"        router-mac MAC   the router side's MAC (default 02:77:65:66:74:01)\n"
	"del   removes the port NAME.\n"
	"list  a table of name, type, MAC, addresses, state, rx/tx packets and drops;\n"
	"      --json: every field and counter.\n"
	"load  adds the ports of FILE ([Port] sections, see docs/cli.md) that are\n"
	"      missing, replaces (removes and adds) those that differ, and with\n"
	"      --prune removes the ports FILE does not list. Running it twice changes\n"
	"      nothing the second time. --dry-run prints the plan only.\n";

__attribute__((format(printf, 1, 2)))
static int fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_ERROR;
}

__attribute__((format(printf, 1, 2)))
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see '%s --help')\n", prog);
	return EXIT_USAGE;
}

/* ---- finding and talking to weftd -------------------------------------- */

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n > m && !strcmp(s + n - m, suffix);
}

/* -i, $WEFT_INTERFACE, or the one socket in the folder. */
static int find_socket(void)
{
	const char *dir = WG_UAPI_DEFAULT_DIR, *ifname = opt_ifname;
	char names[512] = "", found[NAME_MAX + 1] = "";
	struct dirent *de;
	struct stat st;
	int count = 0, n;
	size_t used;
	DIR *d;

	if (opt_socket) {
		if (strlen(opt_socket) >= sizeof(sock_path))
			return usage_error("--socket: path too long");
		strcpy(sock_path, opt_socket);
		return EXIT_OK;
	}
	if (!ifname || !*ifname)
		ifname = getenv("WEFT_INTERFACE");
	if (ifname && *ifname) {
		if (strlen(ifname) >= IFNAMSIZ || strchr(ifname, '/'))
			return usage_error("bad interface name '%s'", ifname);
		snprintf(sock_path, sizeof(sock_path), "%s/%s.sock", dir, ifname);
		return EXIT_OK;
	}
	d = opendir(dir);
	if (!d)
		return fail("no weftd interface: %s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		if (!ends_with(de->d_name, ".sock") || fstatat(dirfd(d), de->d_name, &st, 0) ||
		    !S_ISSOCK(st.st_mode) || strlen(de->d_name) > IFNAMSIZ + 4)
			continue;
		used = strlen(names);
		snprintf(names + used, sizeof(names) - used, "%s%.*s", count++ ? ", " : "",
			 (int)strlen(de->d_name) - 5, de->d_name);
		snprintf(found, sizeof(found), "%s", de->d_name);
	}
	closedir(d);
	if (count == 0)
		return fail("no weftd interface: no socket in %s: %s", dir, strerror(ENOENT));
	if (count > 1)
		return usage_error("several interfaces (%s): choose one with -i", names);
	n = snprintf(sock_path, sizeof(sock_path), "%s/%s", dir, found);
	return n > 0 && (size_t)n < sizeof(sock_path) ? EXIT_OK : fail("socket path too long");
}

/* A daemon's answer: the lines before "errno=", and that errno (positive). */
struct reply {
	char *text;
	size_t len;
	int err;
	bool negative; /* "errno=-N": a wireguard-go style refusal of the request */
};

static void reply_free(struct reply *r)
{
	free(r->text);
	memset(r, 0, sizeof(*r));
}

/* Sends request (whole, with its empty line) and reads up to "errno=N\n\n". */
static int exchange(const char *request, size_t len, struct reply *r)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = REPLY_TIMEOUT_SEC };
	size_t cap = 4096, got = 0;
	char *buf = NULL, *grown, *line;
	ssize_t n;
	long v;
	int fd, ret = -EIO;

	memset(r, 0, sizeof(*r));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	strcpy(addr.sun_path, sock_path);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		ret = -errno;
		goto out;
	}
	for (size_t off = 0; off < len; off += (size_t)n) {
		n = send(fd, request + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR) {
			n = 0;
			continue;
		}
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			goto out;
		}
	}
	buf = malloc(cap);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	for (;;) {
		if (got + 1 >= cap) {
			if (cap >= MAX_REPLY) {
				ret = -EMSGSIZE;
				goto out;
			}
			grown = realloc(buf, cap * 2);
			if (!grown) {
				ret = -ENOMEM;
				goto out;
			}
			buf = grown;
			cap *= 2;
		}
		n = recv(fd, buf + got, cap - got - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = errno == EAGAIN ? -ETIMEDOUT : -errno;
			goto out;
		}
		got += (size_t)n;
		buf[got] = '\0';
		if (n == 0 || (got >= 2 && !memcmp(buf + got - 2, "\n\n", 2)))
			break;
	}
	/* The errno line is the last one. */
	if (got < 2 || memcmp(buf + got - 2, "\n\n", 2)) {
		ret = -EPROTO;
		goto out;
	}
	buf[got - 2] = '\0';
	line = strrchr(buf, '\n');
	line = line ? line + 1 : buf;
	if (strncmp(line, "errno=", 6)) {
		ret = -EPROTO;
		goto out;
	}
	v = strtol(line + 6, NULL, 10);
	r->negative = v < 0;
	r->err = (int)(v < 0 ? -v : v);
	*line = '\0';
	r->len = (size_t)(line - buf);
	r->text = buf;
	buf = NULL;
	ret = 0;
out:
	free(buf);
	close(fd);
	return ret;
}

/* Reports a failed exchange or a failed request; what names the action. */
static int report(const char *what, int ret, const struct reply *r)
{
	const char *msg = NULL;
	char *line;

	if (ret < 0)
		return fail("%s: %s: %s", what, sock_path, strerror(-ret));
	if (r->text && (line = strstr(r->text, "message=")) && (line == r->text || line[-1] == '\n')) {
		msg = line + 8;
		line = strchr(line, '\n');
		if (line)
			*line = '\0';
	}
	if (msg)
		return fail("%s: %s: %s", what, strerror(r->err), msg);
	if (r->negative && r->err == EINVAL)
		return fail("%s: %s (the daemon does not take weft requests: is it weftd?)", what,
			    strerror(r->err));
	return fail("%s: %s", what, strerror(r->err));
}

/* One weft=VERB request with a body; 0 or the exit code (reported). */
static int request(const char *verb, const char *body, const char *what, struct reply *r)
{
	char *req = NULL;
	int n, ret;

	memset(r, 0, sizeof(*r));
	n = asprintf(&req, "weft=%s\n%s\n", verb, body ? body : "");
	if (n < 0)
		return fail("%s: %s", what, strerror(ENOMEM));
	ret = exchange(req, (size_t)n, r);
	free(req);
	if (ret || r->err) {
		ret = report(what, ret, r);
		reply_free(r);
		return ret;
	}
	return EXIT_OK;
}

/* ---- port add / del ---------------------------------------------------- */

static int send_add(const struct port_config *cfg, const char *what)
{
	struct reply r;
	char *body;
	size_t len;
	int ret;

	if (port_text_format_request(cfg, &body, &len))
		return fail("%s: %s", what, strerror(ENOMEM));
	ret = request("port-add", body, what, &r);
	free(body);
	reply_free(&r);
	return ret;
}

static int send_del(const char *name, const char *what)
{
	struct reply r;
	char body[PORT_NAME_MAX + 8];
	int ret;

	snprintf(body, sizeof(body), "name=%s\n", name);
	ret = request("port-del", body, what, &r);
	reply_free(&r);
	return ret;
}

/* The words after "mac", "address"...: request keys. */
static const struct add_word {
	const char *word;
	const char *key;
} add_words[] = {
	{ "mac", "mac" },           { "address", "address" }, { "prefix", "prefix" },
	{ "gateway4", "gateway4" }, { "mtu", "mtu" },         { "router-mac", "router_mac" },
};

static const char *add_key(const char *word)
{
	for (size_t i = 0; i < sizeof(add_words) / sizeof(add_words[0]); i++)
		if (!strcmp(word, add_words[i].word))
			return add_words[i].key;
	return NULL;
}

/* Appends "key=value\n" for each comma-separated item of value. */
static bool add_line(FILE *f, const char *key, const char *value, bool list)
{
	if (strpbrk(value, "\n\r"))
		return false;
	if (!list)
		return fprintf(f, "%s=%s\n", key, value) > 0;
	for (const char *p = value;; p++) {
		size_t n = strcspn(p, ",");

		fprintf(f, "%s=%.*s\n", key, (int)n, p);
		p += n;
		if (!*p)
			return true;
	}
}

static int port_add(int argc, char **argv)
{
	struct port_config cfg;
	const char *why = NULL, *key;
	char *body = NULL, what[64];
	size_t len = 0;
	FILE *f;
	int i = 2, ret;
	bool vhost, ok = true;

	if (argc < 2)
		return usage_error("port add needs NAME and a type");
	snprintf(what, sizeof(what), "port add %s", argv[0]);
	f = open_memstream(&body, &len);
	if (!f)
		return fail("%s: %s", what, strerror(errno));
	ok &= add_line(f, "name", argv[0], false);
	ok &= add_line(f, "type", argv[1], false);
	vhost = !strcmp(argv[1], "vhost-user");
	if (vhost && i < argc && !add_key(argv[i]))
		ok &= add_line(f, "path", argv[i++], false);
	if (vhost && i < argc && (!strcmp(argv[i], "server") || !strcmp(argv[i], "client")))
		ok &= add_line(f, "mode", argv[i++], false);
	for (; i < argc; i += 2) {
		key = add_key(argv[i]);
		if (!key || i + 1 >= argc) {
			fclose(f);
			free(body);
			return key ? usage_error("'%s' needs a value", argv[i])
				   : usage_error("port add: unknown word '%s'", argv[i]);
		}
		ok &= add_line(f, key, argv[i + 1],
			       !strcmp(key, "address") || !strcmp(key, "prefix"));
	}
	if (fclose(f) || !ok) {
		free(body);
		return ok ? fail("%s: %s", what, strerror(ENOMEM))
			  : fail("%s: %s: a value with a line break", what, strerror(EINVAL));
	}
	/* Checked here first, so a mistake is named without asking weftd. */
	ret = port_text_parse_request(body, len, &cfg, &why);
	free(body);
	if (ret)
		return fail("%s: %s: %s", what, strerror(-ret), why);
	return send_add(&cfg, what);
}

static int port_del(int argc, char **argv)
{
	char what[64];

	if (argc != 1)
		return usage_error("port del takes one NAME");
	if (strpbrk(argv[0], "\n\r"))
		return fail("port del: %s", strerror(EINVAL));
	snprintf(what, sizeof(what), "port del %.32s", argv[0]);
	return send_del(argv[0], what);
}

/* ---- port list --------------------------------------------------------- */

static int fetch_ports(struct port_info **ports, size_t *n, const char *what)
{
	const char *why = NULL;
	struct reply r;
	int ret = request("port-list", NULL, what, &r);

	if (ret)
		return ret;
	ret = port_text_parse_info(r.text, r.len, ports, n, &why);
	reply_free(&r);
	if (ret)
		return fail("%s: the daemon's reply: %s: %s", what, strerror(-ret), why);
	return EXIT_OK;
}

static uint64_t counter(const struct port_info *p, size_t i)
{
	return *(const uint64_t *)((const char *)p + port_text_counters[i].offset);
}

static uint64_t drops(const struct port_info *p)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < port_text_n_counters; i++)
		if (port_text_counters[i].drop)
			sum += counter(p, i);
	return sum;
}

/* Addresses joined by ',' ("-" when none). */
static void join_addrs(const struct port_config *c, char *out, size_t cap)
{
	char s[PORT_TEXT_ADDR_LEN];
	size_t o = 0;

	snprintf(out, cap, "-");
	for (size_t i = 0; i < c->n_addrs && o < cap; i++) {
		port_text_addr(&c->addrs[i], s);
		o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? "," : "", s);
	}
}

static void print_table(const struct port_info *ports, size_t n)
{
	char addrs[PORT_MAX_ADDRS * PORT_TEXT_ADDR_LEN], mac[PORT_TEXT_MAC_LEN];
	int wn = 4, wa = 9;

	for (size_t i = 0; i < n; i++) {
		join_addrs(&ports[i].cfg, addrs, sizeof(addrs));
		wn = (int)strlen(ports[i].cfg.name) > wn ? (int)strlen(ports[i].cfg.name) : wn;
		wa = (int)strlen(addrs) > wa ? (int)strlen(addrs) : wa;
	}
	if (!n)
		return;
	printf("%-*s  %-10s  %-17s  %-*s  %-5s  %10s  %10s  %8s\n", wn, "NAME", "TYPE", "MAC", wa,
	       "ADDRESSES", "STATE", "RX-PACKETS", "TX-PACKETS", "DROPS");
	for (size_t i = 0; i < n; i++) {
		const struct port_info *p = &ports[i];

		join_addrs(&p->cfg, addrs, sizeof(addrs));
		port_text_mac(p->cfg.vm_mac, mac);
		printf("%-*s  %-10s  %-17s  %-*s  %-5s  %10llu  %10llu  %8llu\n", wn, p->cfg.name,
		       port_text_type_name(p->cfg.type), mac, wa, addrs, p->connected ? "up" : "down",
		       (unsigned long long)p->rx_packets, (unsigned long long)p->tx_packets,
		       (unsigned long long)drops(p));
	}
}

/* A JSON string: quotes, backslashes and control bytes escaped. */
static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_port(const struct port_info *p)
{
	const struct port_config *c = &p->cfg;
	char s[PORT_TEXT_ADDR_LEN];

	printf("  {\n    \"name\": ");
	json_str(c->name);
	printf(",\n    \"type\": \"%s\",\n    \"path\": ", port_text_type_name(c->type));
	if (c->type == PORT_VHOST_USER) {
		json_str(c->path);
		printf(",\n    \"mode\": \"%s\"", c->server ? "server" : "client");
	} else {
		printf("null,\n    \"mode\": null");
	}
	port_text_mac(c->vm_mac, s);
	printf(",\n    \"mac\": \"%s\"", s);
	port_text_mac(c->router_mac, s);
	printf(",\n    \"router_mac\": \"%s\",\n    \"gateway4\": ", s);
	if (c->has_gateway4)
		printf("\"%u.%u.%u.%u\"", c->gateway4[0], c->gateway4[1], c->gateway4[2],
		       c->gateway4[3]);
	else
		printf("null");
	printf(",\n    \"addresses\": [");
	for (size_t i = 0; i < c->n_addrs; i++) {
		port_text_addr(&c->addrs[i], s);
		printf("%s\"%s\"", i ? ", " : "", s);
	}
	printf("],\n    \"prefixes\": [");
	for (size_t i = 0; i < c->n_prefixes; i++) {
		port_text_prefix(&c->prefixes[i], s);
		printf("%s\"%s\"", i ? ", " : "", s);
	}
	printf("],\n    \"mtu\": %u,\n    \"connected\": %s,\n    \"counters\": {", c->mtu,
	       p->connected ? "true" : "false");
	for (size_t i = 0; i < port_text_n_counters; i++)
		printf("%s\n      \"%s\": %llu", i ? "," : "", port_text_counters[i].key,
		       (unsigned long long)counter(p, i));
	printf("\n    }\n  }");
}

static int port_list(int argc, char **argv)
{
	struct port_info *ports = NULL;
	size_t n = 0;
	bool json = false;
	int ret;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--json"))
			return usage_error("port list: unknown argument '%s'", argv[i]);
		json = true;
	}
	ret = fetch_ports(&ports, &n, "port list");
	if (ret)
		return ret;
	if (json) {
		printf("[");
		for (size_t i = 0; i < n; i++) {
			printf("%s\n", i ? "," : "");
			json_port(&ports[i]);
		}
		printf("%s]\n", n ? "\n" : "");
	} else {
		print_table(ports, n);
	}
	free(ports);
	return EXIT_OK;
}

/* ---- port load --------------------------------------------------------- */

static int read_file(const char *path, char **text, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	size_t cap = PORT_TEXT_MAX_FILE + 1;
	char *buf;

	if (!f)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		if (f != stdin)
			fclose(f);
		return -ENOMEM;
	}
	*len = fread(buf, 1, cap, f);
	if (ferror(f)) {
		free(buf);
		if (f != stdin)
			fclose(f);
		return -EIO;
	}
	if (f != stdin)
		fclose(f);
	*text = buf;
	return 0;
}

static int port_load(int argc, char **argv)
{
	struct port_config *want = NULL;
	struct port_info *have = NULL;
	struct port_step *steps = NULL;
	size_t n_want = 0, n_have = 0, n_steps = 0, len = 0, added = 0, replaced = 0, removed = 0;
	const char *file = NULL, *why = NULL, *name;
	bool prune = false, dry_run = false;
	char *text = NULL, what[64];
	int line = 0, ret;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--prune"))
			prune = true;
		else if (!strcmp(argv[i], "--dry-run") || !strcmp(argv[i], "-n"))
			dry_run = true;
		else if (!file && (argv[i][0] != '-' || !strcmp(argv[i], "-")))
			file = argv[i];
		else
			return usage_error("port load: unexpected argument '%s'", argv[i]);
	}
	if (!file)
		return usage_error("port load needs a FILE");
	ret = read_file(file, &text, &len);
	if (ret)
		return fail("port load: %s: %s", file, strerror(-ret));
	ret = port_text_parse_file(text, len, &want, &n_want, &line, &why);
	free(text);
	if (ret) {
		if (line)
			return fail("port load: %s:%d: %s: %s", file, line, strerror(-ret), why);
		return fail("port load: %s: %s: %s", file, strerror(-ret), why);
	}
	ret = fetch_ports(&have, &n_have, "port load");
	if (ret)
		goto out;
	if ((ret = port_text_plan(want, n_want, have, n_have, prune, &steps, &n_steps, &why))) {
		ret = fail("port load: %s: %s", strerror(-ret), why);
		goto out;
	}
	for (size_t i = 0; i < n_steps; i++) {
		bool del = steps[i].kind == PORT_STEP_DEL;

		name = del ? have[steps[i].index].cfg.name : want[steps[i].index].name;
		snprintf(what, sizeof(what), "port load: %s %s", del ? "removing" : "adding", name);
		if (!dry_run) {
			ret = del ? send_del(name, what) : send_add(&want[steps[i].index], what);
			if (ret)
				goto out;
		}
		/* A replaced port reports once, at its addition. */
		if (del && !steps[i].replace)
			removed++;
		else if (!del)
			steps[i].replace ? replaced++ : added++;
		if (!del || !steps[i].replace)
			printf("%s%s %s\n", dry_run ? "would have " : "",
			       del ? "removed" : steps[i].replace ? "replaced" : "added", name);
	}
	printf("%s%zu added, %zu replaced, %zu removed, %zu unchanged\n", dry_run ? "dry run: " : "",
	       added, replaced, removed, n_want - added - replaced);
	ret = EXIT_OK;
out:
	free(steps);
	free(have);
	free(want);
	return ret;
}

/* ---- stats ------------------------------------------------------------- */

static int stats(int argc, char **argv)
{
	static const char req[] = "stats=1\n\n";
	struct reply r;
	int ret;

	if (argc)
		return usage_error("stats takes no arguments");
	ret = exchange(req, sizeof(req) - 1, &r);
	if (ret || r.err) {
		ret = report("stats", ret, &r);
		reply_free(&r);
		return ret;
	}
	fwrite(r.text, 1, r.len, stdout);
	reply_free(&r);
	return EXIT_OK;
}

/* ---- dispatch ---------------------------------------------------------- */

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help; /* printed for -h/--help among its arguments; NULL: its own */
	bool needs_socket;
};

static int port(int argc, char **argv);

static const struct command port_commands[] = {
	{ "add", port_add, port_usage_text, true },
	{ "del", port_del, port_usage_text, true },
	{ "list", port_list, port_usage_text, true },
	{ "load", port_load, port_usage_text, true },
};

static const struct command commands[] = {
	{ "port", port, NULL, false },
	{ "stats", stats, usage_text, true },
};

static bool is_help(const char *arg)
{
	return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

static int dispatch(const struct command *table, size_t n, int argc, char **argv,
		    const char *what)
{
	int ret;

	for (size_t i = 0; i < n; i++) {
		if (strcmp(argv[0], table[i].name))
			continue;
		for (int k = 1; table[i].help && k < argc; k++) {
			if (is_help(argv[k])) {
				fputs(table[i].help, stdout);
				return EXIT_OK;
			}
		}
		if (table[i].needs_socket && (ret = find_socket()))
			return ret;
		return table[i].run(argc - 1, argv + 1);
	}
	return usage_error("unknown %s '%s'", what, argv[0]);
}

static int port(int argc, char **argv)
{
	if (!argc)
		return usage_error("port needs add, del, list or load");
	if (is_help(argv[0]) || !strcmp(argv[0], "help")) {
		fputs(port_usage_text, stdout);
		return EXIT_OK;
	}
	return dispatch(port_commands, sizeof(port_commands) / sizeof(port_commands[0]), argc,
			argv, "port command");
}

int main(int argc, char **argv)
{
	enum { OPT_SOCKET = 256 };
	static const struct option options[] = {
		{ "interface", required_argument, NULL, 'i' },
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c, ret;

	/* '+': options end at the command, whose own arguments may start with '-'. */
	while ((c = getopt_long(argc, argv, "+i:hV", options, NULL)) != -1) {
		switch (c) {
		case 'i':
			opt_ifname = optarg;
			break;
		case OPT_SOCKET:
			opt_socket = optarg;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return EXIT_OK;
		case 'V':
			printf("weft %s\n", WEFT_VERSION);
			return EXIT_OK;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	ret = dispatch(commands, sizeof(commands) / sizeof(commands[0]), argc - optind,
		       argv + optind, "command");
	if (fflush(stdout) && !ret)
		ret = fail("writing the output: %s", strerror(errno));
	return ret;
}
