/* weft: the command line for what wg(8) has no words for: VM ports, VM
 * addresses and the host mesh. It speaks weft's own requests (weft=VERB,
 * docs/cli.md) on the same UAPI socket as wg, /var/run/wireguard/IFNAME.sock.
 * This file holds main, the options, finding the socket, the request/reply
 * exchange and the dispatch; the command groups are port_cmd.c, vm_cmd.c,
 * mesh_cmd.c and lease_cmd.c (which needs no weftd).
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

#include "cli/cli.h"
#include "wg/uapi.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "unknown"
#endif

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
	"  port add NAME tap|vhost-user|attached [PATH [server|client]] mac MAC\n"
	"           [address CIDR]... [prefix CIDR]... [gateway4 IP] [mtu N]\n"
	"           [router-mac MAC] [socket-owner USER] [socket-group GROUP]\n"
	"           [socket-mode MODE]     add a VM port\n"
	"  port del NAME                   remove a VM port\n"
	"  port list [--json]              show the ports with their counters\n"
	"  port load FILE [--prune] [--dry-run]\n"
	"                                  make the ports those of a ports file\n"
	"  vm add PORT CIDR...             register VM addresses to a port\n"
	"  vm del CIDR...                  unregister VM addresses\n"
	"  vm list [--json]                show the addresses of every port\n"
	"  vm sync FILE [--dry-run]        make the addresses of the ports those of a file\n"
	"  mesh set [mode off|unicast|multicast] [prefix CIDR]... [lease-key KEY|none]\n"
	"                                  change the mesh's mode, prefixes or lease key\n"
	"  mesh show [--json]              show the mesh: mode, prefixes, counters, routes\n"
	"  lease genkey                    print a new lease key (private)\n"
	"  lease pubkey                    print the public key of the key on stdin\n"
	"  lease sign ADDRESS HOLDER [valid DURATION] [from SECONDS]\n"
	"                                  sign a registration lease (key on stdin)\n"
	"  lease show LEASE [key PUBLIC-KEY]\n"
	"                                  show a lease, check its signature\n"
	"  lease add LEASE...              give weftd this host's leases\n"
	"  stats                           print weftd's counters\n"
	"  show [--json]                   interface, peers, ports and mesh at a glance\n"
	"  metrics                         weftd's counters as Prometheus text\n"
	"\n"
	"Options:\n"
	"  -i, --interface IFNAME  the weftd interface (default: $WEFT_INTERFACE, else\n"
	"                          the only socket in " WG_UAPI_DEFAULT_DIR ")\n"
	"      --socket PATH       talk to this UAPI socket instead\n"
	"  -h, --help              show this help ('weft port --help', 'weft vm --help',\n"
	"                          'weft mesh --help' and 'weft lease --help' for each\n"
	"                          group)\n"
	"  -v, -V, --version       show the version\n"
	"\n"
	"Exit status: 0 done, 1 failed, 2 wrong command line. See docs/cli.md.\n";

int cli_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_ERROR;
}

int cli_usage_error(const char *fmt, ...)
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
			return cli_usage_error("--socket: path too long");
		strcpy(sock_path, opt_socket);
		return EXIT_OK;
	}
	if (!ifname || !*ifname)
		ifname = getenv("WEFT_INTERFACE");
	if (ifname && *ifname) {
		if (strlen(ifname) >= IFNAMSIZ || strchr(ifname, '/'))
			return cli_usage_error("bad interface name '%s'", ifname);
		snprintf(sock_path, sizeof(sock_path), "%s/%s.sock", dir, ifname);
		return EXIT_OK;
	}
	d = opendir(dir);
	if (!d)
		return cli_fail("no weftd interface: %s: %s", dir, strerror(errno));
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
		return cli_fail("no weftd interface: no socket in %s: %s", dir, strerror(ENOENT));
	if (count > 1)
		return cli_usage_error("several interfaces (%s): choose one with -i", names);
	n = snprintf(sock_path, sizeof(sock_path), "%s/%s", dir, found);
	return n > 0 && (size_t)n < sizeof(sock_path) ? EXIT_OK : cli_fail("socket path too long");
}

const char *cli_socket_path(void)
{
	return sock_path;
}

void cli_reply_free(struct cli_reply *r)
{
	free(r->text);
	memset(r, 0, sizeof(*r));
}

int cli_exchange(const char *request, size_t len, struct cli_reply *r)
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
	/* Closed with no reply at all: what wireguard-go does with a request
	 * it does not know (weft=VERB). */
	if (!got) {
		ret = -EPROTONOSUPPORT;
		goto out;
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

int cli_report(const char *what, int ret, const struct cli_reply *r)
{
	const char *msg = NULL;
	char *line;

	if (ret == -EPROTONOSUPPORT)
		return cli_fail("%s: %s is not a weftd socket (the daemon there closed the "
				"connection without a reply, as wireguard-go does)",
				what, sock_path);
	if (ret < 0)
		return cli_fail("%s: %s: %s", what, sock_path, strerror(-ret));
	if (r->text && (line = strstr(r->text, "message=")) && (line == r->text || line[-1] == '\n')) {
		msg = line + 8;
		line = strchr(line, '\n');
		if (line)
			*line = '\0';
	}
	if (msg)
		return cli_fail("%s: %s: %s", what, strerror(r->err), msg);
	if (r->negative && r->err == EINVAL)
		return cli_fail("%s: %s (the daemon does not take weft requests: is it weftd?)",
				what, strerror(r->err));
	return cli_fail("%s: %s", what, strerror(r->err));
}

int cli_request(const char *verb, const char *body, const char *what, struct cli_reply *r)
{
	char *req = NULL;
	int n, ret;

	memset(r, 0, sizeof(*r));
	n = asprintf(&req, "weft=%s\n%s\n", verb, body ? body : "");
	if (n < 0)
		return cli_fail("%s: %s", what, strerror(ENOMEM));
	ret = cli_exchange(req, (size_t)n, r);
	free(req);
	if (ret || r->err) {
		ret = cli_report(what, ret, r);
		cli_reply_free(r);
		return ret;
	}
	return EXIT_OK;
}

/* ---- shared by the command groups -------------------------------------- */

int cli_read_file(const char *path, size_t max, char **text, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	size_t cap = max + 1;
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

bool cli_add_line(struct text_buf *b, const char *key, const char *value, bool list)
{
	if (strpbrk(value, "\n\r"))
		return false;
	if (!list) {
		text_buf_printf(b, "%s=%s\n", key, value);
		return true;
	}
	for (const char *p = value;; p++) {
		size_t n = strcspn(p, ",");

		text_buf_printf(b, "%s=%.*s\n", key, (int)n, p);
		p += n;
		if (!*p)
			return true;
	}
}

int cli_finish_body(struct text_buf *b, bool ok, const char *what, char **body, size_t *len)
{
	if (!ok) {
		text_buf_free(b);
		return cli_fail("%s: %s: a value with a line break", what, strerror(EINVAL));
	}
	if (text_buf_finish(b, body, len))
		return cli_fail("%s: %s", what, strerror(ENOMEM));
	return EXIT_OK;
}

void cli_json_str(const char *s)
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

/* ---- stats ------------------------------------------------------------- */

static int stats(int argc, char **argv)
{
	static const char req[] = "stats=1\n\n";
	struct cli_reply r;
	int ret;

	if (argc)
		return cli_usage_error("stats takes no arguments");
	ret = cli_exchange(req, sizeof(req) - 1, &r);
	if (ret || r.err) {
		ret = cli_report("stats", ret, &r);
		cli_reply_free(&r);
		return ret;
	}
	fwrite(r.text, 1, r.len, stdout);
	cli_reply_free(&r);
	return EXIT_OK;
}

/* ---- dispatch ---------------------------------------------------------- */

static const struct cli_command commands[] = {
	{ "port", cli_port, NULL, false },
	{ "vm", cli_vm, NULL, false },
	{ "mesh", cli_mesh, NULL, false },
	{ "lease", cli_lease, NULL, false },
	{ "stats", stats, usage_text, true },
	{ "show", cmd_show, cmd_show_usage, true },
	{ "metrics", cmd_metrics, cmd_metrics_usage, true },
};

bool cli_is_help(const char *arg)
{
	return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

int cli_dispatch(const struct cli_command *table, size_t n, int argc, char **argv,
		 const char *what)
{
	int ret;

	for (size_t i = 0; i < n; i++) {
		if (strcmp(argv[0], table[i].name))
			continue;
		for (int k = 1; table[i].help && k < argc; k++) {
			if (cli_is_help(argv[k])) {
				fputs(table[i].help, stdout);
				return EXIT_OK;
			}
		}
		if (table[i].needs_socket && (ret = find_socket()))
			return ret;
		return table[i].run(argc - 1, argv + 1);
	}
	return cli_usage_error("unknown %s '%s'", what, argv[0]);
}

int cli_dispatch_group(const char *group, const struct cli_command *table, size_t n,
		       const char *usage, int argc, char **argv)
{
	char what[64];

	if (!argc) {
		char names[256] = "";
		size_t used = 0;

		for (size_t i = 0; i < n && used < sizeof(names); i++)
			used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s",
						 !i ? "" : i + 1 < n ? ", " : " or ", table[i].name);
		return cli_usage_error("%s needs %s", group, names);
	}
	if (cli_is_help(argv[0]) || !strcmp(argv[0], "help")) {
		fputs(usage, stdout);
		return EXIT_OK;
	}
	snprintf(what, sizeof(what), "%s command", group);
	return cli_dispatch(table, n, argc, argv, what);
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
	while ((c = getopt_long(argc, argv, "+i:hvV", options, NULL)) != -1) {
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
		case 'v':
		case 'V':
			printf("weft v%s\n", WEFT_VERSION);
			return EXIT_OK;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return cli_usage_error("a COMMAND is needed: port, vm, mesh, lease, show, stats or metrics");
	ret = cli_dispatch(commands, sizeof(commands) / sizeof(commands[0]), argc - optind,
			   argv + optind, "command");
	if (fflush(stdout) && !ret)
		ret = cli_fail("writing the output: %s", strerror(errno));
	return ret;
}
