/* weft's requests end to end without root: the real UAPI server
 * (wg/uapi.c) with daemon/control.c as its command op, on a fake device
 * that keeps ports in an array. Raw exchanges check the wire (replies,
 * errno values, message lines, refusals of malformed verbs, the body
 * limit, several requests on one connection); then, when the build made
 * the CLI (WEFT_CLI), the weft binary is run against the same socket:
 * every subcommand, its exit codes and messages, and `port load` run twice
 * changing nothing the second time. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "daemon/uapi_server.h"
#include "port/text.h"
#include "tests/cli/fake_device.h"
#include "wg/log.h"
#include "wg/uapi.h"

static int failures;

#define CHECK(cond)                                                                      \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, \
				#cond);                                                  \
			failures++;                                                      \
		}                                                                        \
	} while (0)

/* ---- raw exchanges ------------------------------------------------------ */

static char sock_path[108];

/* Sends req, half-closes, returns everything read until EOF (malloc'd). */
static char *exchange_at(const char *path, const char *req, size_t len)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 10 };
	size_t cap = 1 << 16, got = 0;
	char *buf = malloc(cap);
	ssize_t n;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	strcpy(addr.sun_path, path);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		perror("connect");
		exit(1);
	}
	for (size_t off = 0; off < len; off += (size_t)n) {
		n = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (n <= 0)
			break;
	}
	shutdown(fd, SHUT_WR);
	while (got + 1 < cap && (n = read(fd, buf + got, cap - got - 1)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd);
	return buf;
}

static bool replies(const char *req, const char *want)
{
	char *got = exchange_at(sock_path, req, strlen(req));
	bool ok = !strcmp(got, want);

	if (!ok)
		fprintf(stderr, "request %.40s...\n  got  %s\n  want %s\n", req, got, want);
	free(got);
	return ok;
}

static void test_wire(void)
{
	char *big, *got;
	size_t n;

	fake_reset();
	CHECK(replies("weft=port-list\n\n", "errno=0\n\n"));
	CHECK(replies("weft=port-add\nname=vm1\ntype=tap\nmac=52:54:00:00:00:01\naddress=10.0.0.2\n\n",
		      "errno=0\n\n"));
	CHECK(fake_n == 1 && fake_adds == 1);
	CHECK(replies("weft=port-add\nname=vm1\ntype=tap\nmac=52:54:00:00:00:02\n\n",
		      "message=a port with this name exists\nerrno=17\n\n"));
	CHECK(replies("weft=port-add\nname=vm2\ntype=tap\nmac=52:54:00:00:00:02\naddress=10.0.0.2\n\n",
		      "message=an address of the port belongs to another port\nerrno=17\n\n"));
	CHECK(replies("weft=port-add\nname=busy0\ntype=tap\nmac=52:54:00:00:00:02\n\n",
		      "message=a network device with this name exists\nerrno=17\n\n"));
	CHECK(replies("weft=port-add\nname=vm2\ntype=tap\nmac=52:54:00:00:00:0z\n\n",
		      "message=bad MAC (want xx:xx:xx:xx:xx:xx)\nerrno=22\n\n"));
	CHECK(replies("weft=port-add\nname=vm2\nbogus\n\n", "message=a line without '='\nerrno=71\n\n"));
	CHECK(fake_n == 1 && fake_adds == 1);

	/* The list parses back to what was added. */
	got = exchange_at(sock_path, "weft=port-list\n\n", 16);
	n = strlen(got);
	CHECK(n > 9 && !strcmp(got + n - 9, "errno=0\n\n"));
	CHECK(!strncmp(got, "port=vm1\ntype=tap\nmac=52:54:00:00:00:01\n", 40));
	if (n > 9) {
		struct port_info *ports = NULL;
		size_t count = 0;
		const char *why = NULL;

		CHECK(port_text_parse_info(got, n - 9, &ports, &count, &why) == 0 && count == 1);
		CHECK(ports && port_text_same_config(&ports[0].cfg, &fake_ports[0].cfg));
		CHECK(ports && ports[0].rx_packets == 10 && ports[0].drop_foreign_mac == 2);
		free(ports);
	}
	free(got);

	CHECK(replies("weft=port-list\nname=vm1\n\n", "message=port-list takes no keys\nerrno=22\n\n"));
	CHECK(replies("weft=port-del\nname=vm9\n\n", "message=no port with this name\nerrno=2\n\n"));
	CHECK(replies("weft=port-del\n\n", "message=no name\nerrno=22\n\n"));
	CHECK(replies("weft=port-del\nname=vm1\n\n", "errno=0\n\n"));
	CHECK(fake_n == 0 && fake_dels == 1);
	CHECK(replies("weft=reboot\n\n", "message=unknown weft request\nerrno=95\n\n"));

	/* Not a verb: refused as an unknown operation, the connection closed. */
	CHECK(replies("weft=Port-List\n\nget=1\n\n", "errno=-22\n\n"));
	CHECK(replies("weft=\n\n", "errno=-22\n\n"));
	CHECK(replies("weft=port list\n\n", "errno=-22\n\n"));
	CHECK(replies("weft=port-list", ""));
	/* WG_UAPI_MAX_VERB bytes of verb, then one more. */
	{
		char req[64] = "weft=";

		memset(req + 5, 'a', WG_UAPI_MAX_VERB);
		strcpy(req + 5 + WG_UAPI_MAX_VERB, "\n\n");
		CHECK(replies(req, "message=unknown weft request\nerrno=95\n\n"));
		memset(req + 5, 'a', WG_UAPI_MAX_VERB + 1);
		strcpy(req + 6 + WG_UAPI_MAX_VERB, "\n\n");
		CHECK(replies(req, "errno=-22\n\n"));
	}

	/* Requests follow each other on one connection, like get and set;
	 * a body cut by EOF is still a request. */
	CHECK(replies("weft=port-list\n\nget=1\n\nweft=port-list\n\n",
		      "errno=0\n\nlisten_port=51820\nerrno=0\n\nerrno=0\n\n"));
	CHECK(replies("weft=port-add\nname=e\ntype=tap\nmac=52:54:00:00:00:05\n", "errno=0\n\n"));
	CHECK(fake_n == 1);
	CHECK(replies("stats=1\n\n", "rx_packets=1\ntx_packets=2\nerrno=0\n\n"));

	/* The device's limit. */
	for (int i = 0; i < FAKE_CAPACITY; i++) {
		char req[128];

		snprintf(req, sizeof(req), "weft=port-add\nname=f%d\ntype=tap\nmac=52:54:00:00:01:%02x\n\n",
			 i, i);
		got = exchange_at(sock_path, req, strlen(req));
		CHECK(i < FAKE_CAPACITY - 1 ? !strcmp(got, "errno=0\n\n")
					    : !strcmp(got, "message=the device has as many ports "
							   "as it can take (256)\nerrno=28\n\n"));
		free(got);
	}

	/* A body over WG_UAPI_MAX_COMMAND. */
	n = WG_UAPI_MAX_COMMAND + 100;
	big = malloc(n + 32);
	strcpy(big, "weft=port-add\n");
	for (size_t o = strlen(big); o < n; o += 10)
		memcpy(big + o, "mtu=1500\nx", 10);
	memcpy(big + n, "\n\n", 3);
	got = exchange_at(sock_path, big, n + 2);
	CHECK(!strcmp(got, "errno=7\n\n"));
	free(got);
	free(big);
	fake_reset();
}

/* ---- the CLI ------------------------------------------------------------ */

static const char *cli;
static char out[1 << 16], err[1 << 16], dir[64];

static void slurp(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, cap - 1) : -1;

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

/* Runs weft --socket SOCK ARGS...; its exit code, stdout in out, stderr in err. */
static int run(const char *first, ...)
{
	char *argv[32], o[96], e[96];
	int n = 0, status;
	va_list ap;
	pid_t pid;

	argv[n++] = (char *)cli;
	argv[n++] = "--socket";
	argv[n++] = sock_path;
	va_start(ap, first);
	for (const char *a = first; a && n < 31; a = va_arg(ap, const char *))
		argv[n++] = (char *)a;
	va_end(ap);
	argv[n] = NULL;
	snprintf(o, sizeof(o), "%s/out", dir);
	snprintf(e, sizeof(e), "%s/err", dir);
	pid = fork();
	if (pid == 0) {
		int fo = open(o, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int fe = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(fo, 1);
		dup2(fe, 2);
		execv(cli, argv);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	slurp(o, out, sizeof(out));
	slurp(e, err, sizeof(err));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	fputs(text, f);
	fclose(f);
}

/* The message is one line on stderr. */
static bool one_line(const char *s)
{
	const char *nl = strchr(s, '\n');

	return nl && !nl[1];
}

static void test_cli(void)
{
	char file[96], bad[96];
	unsigned int adds;

	fake_reset();
	CHECK(run("--version", NULL) == 0 && !strncmp(out, "weft ", 5));
	CHECK(run("--help", NULL) == 0);
	for (const char *const *w = (const char *const[]){ "port add", "port del", "port list",
							     "port load", "--prune", "--json",
							     "stats", "-i", "--socket", NULL };
	     *w; w++)
		CHECK(strstr(out, *w));
	CHECK(run("port", "--help", NULL) == 0 && strstr(out, "port add") && strstr(out, "router-mac"));
	CHECK(run("port", "list", "--help", NULL) == 0 && strstr(out, "--json"));
	CHECK(run(NULL) == 2);
	CHECK(run("frobnicate", NULL) == 2 && one_line(err));
	CHECK(run("port", NULL) == 2);
	CHECK(run("port", "add", "vm1", NULL) == 2);
	CHECK(run("port", "add", "vm1", "tap", "mac", NULL) == 2);
	CHECK(run("port", "add", "vm1", "tap", "colour", "red", NULL) == 2);
	CHECK(run("port", "del", NULL) == 2);
	CHECK(run("port", "list", "--yaml", NULL) == 2);
	CHECK(run("port", "load", NULL) == 2);

	CHECK(run("port", "add", "vm1", "tap", "mac", "52:54:00:00:00:01", "address",
		  "10.10.1.2,fd00:10::2", "address", "10.20.0.0/24", "prefix", "2001:db8::/64",
		  "mtu", "1400", "gateway4", "10.10.1.1", "router-mac", "02:00:00:00:00:01", NULL) == 0);
	CHECK(fake_n == 1 && fake_ports[0].cfg.n_addrs == 3 && fake_ports[0].cfg.mtu == 1400 &&
	      fake_ports[0].cfg.n_prefixes == 1 && fake_ports[0].cfg.has_router_mac &&
	      fake_ports[0].cfg.has_gateway4);
	CHECK(run("port", "add", "vm1", "tap", "mac", "52:54:00:00:00:09", NULL) == 1);
	CHECK(strstr(err, "File exists") && strstr(err, "name exists") && one_line(err));
	/* A mistake is named before weftd is asked. */
	adds = fake_adds;
	CHECK(run("port", "add", "vm2", "tap", "mac", "52:54:00:00:00", NULL) == 1);
	CHECK(strstr(err, "Invalid argument") && strstr(err, "bad MAC") && one_line(err));
	CHECK(run("port", "add", "vm2", "tap", "mac", "52:54:00:00:00:02", "address", "10.9.9.9/8",
		  NULL) == 1 && strstr(err, "host bits"));
	CHECK(run("port", "add", "vm2", "tap", "mac", "52:54:00:00:00:02\nmtu=9000", NULL) == 1);
	CHECK(run("port", "add", "vm2", "vhost-user", "mac", "52:54:00:00:00:02", NULL) == 1 &&
	      strstr(err, "absolute"));
	CHECK(fake_adds == adds);
	CHECK(run("port", "add", "vm2", "vhost-user", "/run/vm2.sock", "client", "mac",
		  "52:54:00:00:00:02", NULL) == 0);
	CHECK(fake_n == 2 && fake_ports[1].cfg.type == PORT_VHOST_USER && !fake_ports[1].cfg.server &&
	      !strcmp(fake_ports[1].cfg.path, "/run/vm2.sock"));

	CHECK(run("port", "list", NULL) == 0);
	CHECK(strstr(out, "NAME") && strstr(out, "vm1") && strstr(out, "vhost-user") &&
	      strstr(out, "10.10.1.2/32,fd00:10::2/128,10.20.0.0/24") &&
	      strstr(out, "52:54:00:00:00:01"));
	CHECK(run("port", "list", "--json", NULL) == 0);
	CHECK(out[0] == '[' && strstr(out, "\"name\": \"vm1\"") && strstr(out, "\"mtu\": 1400") &&
	      strstr(out, "\"drop_foreign_mac\": 2") && strstr(out, "\"path\": \"/run/vm2.sock\"") &&
	      strstr(out, "\"mode\": \"client\"") && strstr(out, "\"gateway4\": \"10.10.1.1\""));
	if (!system("command -v jq >/dev/null 2>&1")) {
		char cmd[512];

		snprintf(cmd, sizeof(cmd),
			 "jq -e 'length == 2 and .[0].name == \"vm1\" and .[0].counters.rx_packets == 10 "
			 "and (.[1].addresses | length) == 0 and .[1].connected' %s/out >/dev/null",
			 dir);
		CHECK(system(cmd) == 0);
	}

	CHECK(run("port", "del", "nope", NULL) == 1 && strstr(err, "No such file or directory") &&
	      strstr(err, "no port with this name"));
	CHECK(run("port", "del", "vm2", NULL) == 0 && fake_n == 1);
	CHECK(run("stats", NULL) == 0 && !strcmp(out, "rx_packets=1\ntx_packets=2\n"));

	/* load: add what is missing, replace what differs, keep the rest. vm1
	 * is replaced for its MTU, and keeps the addresses it was given
	 * (10.20.0.0/24 besides the file's two): they are VM registration's. */
	snprintf(file, sizeof(file), "%s/ports.conf", dir);
	write_file(file, "# two ports\n[Port]\nName = vm1\nType = tap\nMAC = 52:54:00:00:00:01\n"
			 "Address = 10.10.1.2/32, fd00:10::2/128\nMTU = 1500\n\n"
			 "[Port]\nName = vm3\nType = tap\nMAC = 52:54:00:00:00:03\n"
			 "Address = 10.10.3.2\n");
	CHECK(run("port", "load", file, "--dry-run", NULL) == 0 && fake_adds == 2 && fake_dels == 1);
	CHECK(strstr(out, "would have replaced vm1") && strstr(out, "would have added vm3"));
	CHECK(strstr(out, "vm1 keeps its registered addresses (weft vm changes them)\n"));
	CHECK(run("port", "load", file, NULL) == 0);
	CHECK(strstr(out, "replaced vm1") && strstr(out, "added vm3") &&
	      strstr(out, "1 added, 1 replaced, 0 removed, 0 unchanged"));
	CHECK(fake_n == 2 && fake_adds == 4 && fake_dels == 2);
	CHECK(run("port", "list", NULL) == 0 && strstr(out, "10.10.1.2/32,fd00:10::2/128,10.20.0.0/24"));
	/* Twice changes nothing. */
	CHECK(run("port", "load", file, NULL) == 0);
	CHECK(!strcmp(out, "vm1 keeps its registered addresses (weft vm changes them)\n"
			   "0 added, 0 replaced, 0 removed, 2 unchanged\n"));
	CHECK(fake_adds == 4 && fake_dels == 2);
	/* A port the file does not list stays, unless --prune. */
	CHECK(run("port", "add", "vm4", "tap", "mac", "52:54:00:00:00:04", NULL) == 0);
	CHECK(run("port", "load", file, NULL) == 0 && fake_n == 3);
	CHECK(run("port", "load", file, "--prune", NULL) == 0 && fake_n == 2);
	CHECK(strstr(out, "removed vm4") && strstr(out, "0 added, 0 replaced, 1 removed, 2 unchanged"));
	CHECK(run("port", "load", file, "--prune", NULL) == 0 &&
	      strstr(out, "\n0 added, 0 replaced, 0 removed, 2 unchanged\n"));
	/* A bad file changes nothing and names its line. */
	snprintf(bad, sizeof(bad), "%s/bad.conf", dir);
	write_file(bad, "[Port]\nName = vm1\nColour = blue\n");
	CHECK(run("port", "load", bad, "--prune", NULL) == 1 && strstr(err, "bad.conf:3:") &&
	      strstr(err, "unknown key") && one_line(err) && fake_n == 2);
	CHECK(run("port", "load", "/nonexistent/ports.conf", NULL) == 1 &&
	      strstr(err, "No such file or directory"));
	/* An empty file with --prune empties the device. */
	write_file(file, "");
	CHECK(run("port", "load", file, "--prune", NULL) == 0 && fake_n == 0);
	fake_reset();
}

/* A daemon without weft requests (wireguard-go) refuses them; the CLI says so. */
static void test_no_command(void)
{
	char path2[128], *got;
	struct uapi_server *s;

	s = uapi_server_start(dir, "wt1", &fake_ops_without_command, NULL);
	CHECK(s != NULL);
	if (!s)
		return;
	snprintf(path2, sizeof(path2), "%s/wt1.sock", dir);
	got = exchange_at(path2, "weft=port-list\n\n", 16);
	CHECK(!strcmp(got, "errno=-22\n\n"));
	free(got);
	if (cli) {
		char *argv[] = { (char *)cli, "--socket", path2, "port", "list", NULL };
		int status;
		pid_t pid = fork();

		if (pid == 0) {
			int fd = open("/dev/null", O_WRONLY);

			dup2(fd, 2);
			execv(cli, argv);
			_exit(127);
		}
		waitpid(pid, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	}
	uapi_server_stop(s);
}

int main(void)
{
	struct uapi_server *s;

	if (sodium_init() < 0)
		return 1;
	wg_log_set_level(WG_LOG_SILENT);
	strcpy(dir, "/tmp/weft-test-control-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	s = uapi_server_start(dir, "wt0", &fake_ops, NULL);
	if (!s) {
		perror("uapi_server_start");
		return 1;
	}
	snprintf(sock_path, sizeof(sock_path), "%s/wt0.sock", dir);
	test_wire();
	cli = getenv("WEFT_CLI");
	if (cli && access(cli, X_OK) == 0)
		test_cli();
	else
		fprintf(stderr, "WEFT_CLI not set: the CLI part is skipped\n");
	test_no_command();
	uapi_server_stop(s);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			failures++;
	}
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("port control: all checks passed\n");
	return 0;
}
