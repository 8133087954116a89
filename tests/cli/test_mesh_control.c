/* The mesh requests end to end without root: the real UAPI server
 * (wg/uapi.c) with daemon/control.c as its command op, on the fake device
 * of fake_device.c. Raw exchanges check the wire of vm-add, vm-del,
 * mesh-set and mesh-show (exact replies, errno values and messages, the
 * get-modify-set of mesh-set, the route cap); then, when the build made
 * the CLI (WEFT_CLI), the weft binary is run against the same socket:
 * vm add/del/list/sync and mesh set/show, their exit codes and messages,
 * and `vm sync` run twice changing nothing the second time. */
#include <arpa/inet.h>
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
#include "mesh/text.h"
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
	size_t cap = 1 << 20, got = 0;
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

static char *exchange(const char *req)
{
	return exchange_at(sock_path, req, strlen(req));
}

static bool replies(const char *req, const char *want)
{
	char *got = exchange(req);
	bool ok = !strcmp(got, want);

	if (!ok)
		fprintf(stderr, "request %.60s...\n  got  %s\n  want %s\n", req, got, want);
	free(got);
	return ok;
}

static void add_port(const char *name, int mac, const char *addrs)
{
	char req[512];

	snprintf(req, sizeof(req), "weft=port-add\nname=%s\ntype=tap\nmac=52:54:00:00:00:%02x\n%s\n",
		 name, mac, addrs);
	CHECK(replies(req, "errno=0\n\n"));
}

/* The counter lines of a mesh-show reply with every counter zero. */
static void zero_counters(char *out, size_t cap)
{
	size_t o = 0;

#define ZERO(name) o += (size_t)snprintf(out + o, cap - o, #name "=0\n");
	MESH_COUNTERS(ZERO)
#undef ZERO
	snprintf(out + o, cap - o, "locations=0\npending=0\nleases=0\n");
}

static void test_vm_wire(void)
{
	fake_reset();
	add_port("vm1", 1, "address=10.0.0.2\n");
	add_port("vm2", 2, "");

	CHECK(replies("weft=vm-add\nport=vm1\naddress=fd77::1:2\naddress=10.0.1.0/24\n\n",
		      "errno=0\n\n"));
	CHECK(fake_vm_adds == 1 && fake_ports[0].cfg.n_addrs == 3 &&
	      fake_port_has("vm1", "fd77::1:2/128") && fake_port_has("vm1", "10.0.1.0/24"));
	/* Idempotent for what the port has. */
	CHECK(replies("weft=vm-add\nport=vm1\naddress=fd77::1:2/128\n\n", "errno=0\n\n"));
	CHECK(fake_ports[0].cfg.n_addrs == 3);
	CHECK(replies("weft=vm-add\nport=vm9\naddress=fd77::9\n\n",
		      "message=no port with this name\nerrno=2\n\n"));
	CHECK(replies("weft=vm-add\nport=vm2\naddress=fd77::1:2\n\n",
		      "message=an address belongs to another port\nerrno=17\n\n"));
	CHECK(replies("weft=vm-add\nport=vm2\naddress=127.0.0.1\n\n",
		      "message=the device refused an address\nerrno=22\n\n"));
	CHECK(replies("weft=vm-add\nport=vm2\naddress=fd77::1/64\n\n",
		      "message=host bits set (the address is not the start of its prefix)\n"
		      "errno=22\n\n"));
	CHECK(replies("weft=vm-add\naddress=fd77::3\n\n", "message=no port\nerrno=22\n\n"));
	CHECK(replies("weft=vm-add\nport=vm2\n\n", "message=no address\nerrno=22\n\n"));
	CHECK(replies("weft=vm-add\nport=vm2\naddress\n\n", "message=a line without '='\nerrno=71\n\n"));
	CHECK(replies("weft=vm-del\nport=vm2\naddress=fd77::1:2\n\n",
		      "message=unknown key\nerrno=22\n\n"));
	/* 16 addresses fit in a port (8 hosts per family); the 17th does not. */
	{
		char req[2048];
		size_t o = (size_t)sprintf(req, "weft=vm-add\nport=vm2\n");

		for (int i = 0; i < 8; i++)
			o += (size_t)sprintf(req + o, "address=fd77::2:%x\naddress=10.2.0.%d\n", i + 1,
					     i + 1);
		strcpy(req + o, "\n");
		CHECK(replies(req, "errno=0\n\n"));
		CHECK(replies("weft=vm-add\nport=vm2\naddress=10.3.0.0/24\n\n",
			      "message=the port would have more than 16 addresses\nerrno=28\n\n"));
		CHECK(fake_ports[1].cfg.n_addrs == 16);
	}
	CHECK(replies("weft=vm-del\naddress=fd77::1:2\naddress=10.0.1.0/24\n\n", "errno=0\n\n"));
	CHECK(!fake_port_has("vm1", "fd77::1:2/128") && fake_ports[0].cfg.n_addrs == 1);
	/* One address registered nowhere: nothing is done. */
	CHECK(replies("weft=vm-del\naddress=10.0.0.2\naddress=fd77::1:2\n\n",
		      "message=address fd77::1:2/128 is registered to no port\nerrno=2\n\n"));
	CHECK(fake_port_has("vm1", "10.0.0.2/32"));
	fake_reset();
}

static void test_mesh_wire(void)
{
	char zeros[4096], want[8192], *got;
	size_t n;

	fake_reset();
	zero_counters(zeros, sizeof(zeros));
	snprintf(want, sizeof(want), "mode=off\n%sroutes_truncated=false\nerrno=0\n\n", zeros);
	CHECK(replies("weft=mesh-show\n\n", want));
	CHECK(replies("weft=mesh-show\nroutes=1\n\n", "message=mesh-show takes no keys\nerrno=22\n\n"));

	/* The fake refuses a discovering mesh without prefixes, as weftd may. */
	CHECK(replies("weft=mesh-set\nmode=unicast\n\n",
		      "message=the mesh refused the configuration\nerrno=22\n\n"));
	CHECK(replies("weft=mesh-set\nprefix=fd77::/64\n\n", "errno=0\n\n"));
	CHECK(fake_mesh.mode == MESH_OFF && fake_mesh.n_prefixes == 1);
	/* A mode alone keeps the prefixes. */
	CHECK(replies("weft=mesh-set\nmode=unicast\n\n", "errno=0\n\n"));
	CHECK(fake_mesh.mode == MESH_UNICAST && fake_mesh.n_prefixes == 1);
	/* Prefixes replace the old ones and keep the mode. */
	CHECK(replies("weft=mesh-set\nprefix=10.77.0.0/16\nprefix=fd78::/64\n\n", "errno=0\n\n"));
	CHECK(fake_mesh.mode == MESH_UNICAST && fake_mesh.n_prefixes == 2);
	CHECK(replies("weft=mesh-set\n\n",
		      "message=nothing to set (want mode, prefix or lease_key)\nerrno=22\n\n"));
	/* A lease key alone keeps the rest; none takes it away; the leases
	 * need one. */
	CHECK(replies("weft=lease-add\nlease=AAAA\n\n",
		      "message=not a lease in base64\nerrno=22\n\n"));
	CHECK(replies("weft=mesh-set\nlease_key=" "abababababababababababababababab"
		      "abababababababababababababababab\n\n", "errno=0\n\n"));
	CHECK(fake_mesh.has_lease_key && fake_mesh.lease_key[31] == 0xab &&
	      fake_mesh.mode == MESH_UNICAST && fake_mesh.n_prefixes == 2);
	CHECK(replies("weft=mesh-set\nlease_key=abab\n\n",
		      "message=bad lease_key (want 64 hex digits or none)\nerrno=22\n\n"));
	CHECK(fake_mesh.has_lease_key);
	CHECK(replies("weft=mesh-set\nlease_key=none\n\n", "errno=0\n\n"));
	CHECK(!fake_mesh.has_lease_key && fake_mesh.n_prefixes == 2);

	/* lease-add: each lease=TEXT line handed to the mesh, which says no
	 * without a key. */
	struct mesh_lease l = { .family = AF_INET, .issued = 1, .expires = 2, .addr = { 10, 77, 0, 9 } };
	char req[512], text[MESH_LEASE_TEXT_LEN];

	memset(l.holder, 0x61, sizeof(l.holder));
	mesh_lease_format(&l, text);
	snprintf(req, sizeof(req), "weft=lease-add\nlease=%s\nlease=%s\n\n", text, text);
	CHECK(replies(req, "message=the mesh has no lease key\nerrno=126\n\n"));
	CHECK(fake_n_leases == 0);
	fake_mesh.has_lease_key = true;
	CHECK(replies(req, "errno=0\n\n"));
	CHECK(fake_n_leases == 2 && fake_leases[1].addr[3] == 9 && fake_leases[1].holder[0] == 0x61);
	fake_mesh.has_lease_key = false;
	fake_n_leases = 0;
	CHECK(replies("weft=mesh-set\nmode=broadcast\n\n",
		      "message=mode must be off, unicast or multicast\nerrno=22\n\n"));
	CHECK(replies("weft=mesh-set\nprefix=10.0.0.0/8\nprefix=10.1.0.0/16\n\n",
		      "message=a prefix overlaps another\nerrno=22\n\n"));
	CHECK(fake_mesh.n_prefixes == 2);

	/* Counters and routes, exactly. */
	fake_mesh_stats.solicit_sent = 3;
	fake_mesh_stats.pending = 1;
	fake_routes = calloc(MESH_TEXT_MAX_ROUTES + 5, sizeof(*fake_routes));
	fake_routes[0].prefix.family = AF_INET6;
	fake_routes[0].prefix.cidr = 128;
	inet_pton(AF_INET6, "fd78::5", fake_routes[0].prefix.addr);
	memset(fake_routes[0].holder, 0xab, 32);
	fake_routes[0].seq = 9;
	fake_routes[1].prefix.family = AF_INET;
	fake_routes[1].prefix.cidr = 32;
	inet_pton(AF_INET, "10.77.0.9", fake_routes[1].prefix.addr);
	fake_routes[1].negative = true;
	fake_n_routes = 2;
	got = exchange("weft=mesh-show\n\n");
	CHECK(!strncmp(got, "mode=unicast\nprefix=10.77.0.0/16\nprefix=fd78::/64\nsolicit_sent=3\n",
		       65));
	CHECK(strstr(got, "\npending=1\nleases=0\nroutes_truncated=false\nroute=fd78::5/128\nholder="
			  "abababababababababababababababababababababababababababababababab\n"
			  "negative=false\nseq=9\nroute=10.77.0.9/32\nnegative=true\nseq=0\n"
			  "errno=0\n\n"));
	free(got);
	/* More than 1000: the first 1000 and the flag. */
	for (size_t i = 2; i < MESH_TEXT_MAX_ROUTES + 5; i++) {
		fake_routes[i] = fake_routes[0];
		fake_routes[i].prefix.addr[14] = (uint8_t)(i >> 8);
		fake_routes[i].prefix.addr[15] = (uint8_t)i;
	}
	fake_n_routes = MESH_TEXT_MAX_ROUTES + 5;
	got = exchange("weft=mesh-show\n\n");
	n = 0;
	for (const char *p = got; (p = strstr(p, "\nroute=")); p++)
		n++;
	CHECK(n == MESH_TEXT_MAX_ROUTES && strstr(got, "routes_truncated=true\n"));
	free(got);
	fake_n_routes = 2;
}

/* ---- the CLI ------------------------------------------------------------ */

static const char *cli;
static char out[1 << 18], err[1 << 16], dir[64];

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
	char *argv[40], o[96], e[96];
	int n = 0, status;
	va_list ap;
	pid_t pid;

	argv[n++] = (char *)cli;
	argv[n++] = "--socket";
	argv[n++] = sock_path;
	va_start(ap, first);
	for (const char *a = first; a && n < 39; a = va_arg(ap, const char *))
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

static bool jq(const char *filter)
{
	char cmd[1024];

	if (system("command -v jq >/dev/null 2>&1"))
		return true; /* checked without jq elsewhere */
	snprintf(cmd, sizeof(cmd), "jq -e '%s' %s/out >/dev/null", filter, dir);
	return system(cmd) == 0;
}

static void test_cli_usage(void)
{
	CHECK(run("--help", NULL) == 0 && strstr(out, "vm add") && strstr(out, "vm sync") &&
	      strstr(out, "mesh set") && strstr(out, "mesh show") && strstr(out, "port load"));
	CHECK(run("vm", "--help", NULL) == 0 && strstr(out, "vm add PORT CIDR") &&
	      strstr(out, "--dry-run") && strstr(out, "16"));
	CHECK(run("vm", "list", "--help", NULL) == 0 && strstr(out, "--json"));
	CHECK(run("mesh", "--help", NULL) == 0 && strstr(out, "multicast") &&
	      strstr(out, "negative"));
	CHECK(run("mesh", "set", "-h", NULL) == 0 && strstr(out, "prefix CIDR"));
	CHECK(run("vm", NULL) == 2 && one_line(err));
	CHECK(run("vm", "frob", NULL) == 2 && strstr(err, "unknown vm command 'frob'"));
	CHECK(run("vm", "add", "vm1", NULL) == 2);
	CHECK(run("vm", "del", NULL) == 2);
	CHECK(run("vm", "list", "--yaml", NULL) == 2);
	CHECK(run("vm", "sync", NULL) == 2);
	CHECK(run("vm", "sync", "a", "b", NULL) == 2);
	CHECK(run("mesh", NULL) == 2);
	CHECK(run("mesh", "set", NULL) == 2);
	CHECK(run("mesh", "set", "mode", NULL) == 2 && strstr(err, "'mode' needs a value"));
	CHECK(run("mesh", "set", "colour", "red", NULL) == 2);
	CHECK(run("mesh", "show", "--yaml", NULL) == 2);
}

static void test_cli_vm(void)
{
	unsigned int adds;

	fake_reset();
	add_port("vm1", 1, "address=10.0.0.2\n");
	add_port("vm2", 2, "");
	fake_mesh.n_prefixes = 1;
	fake_mesh.prefixes[0] = (struct ip_prefix){ .family = AF_INET6, .cidr = 64 };
	inet_pton(AF_INET6, "fd77::", fake_mesh.prefixes[0].addr);

	CHECK(run("vm", "add", "vm1", "fd77::1:2", "10.0.1.0/24,fd77::1:3", NULL) == 0 && !out[0]);
	CHECK(fake_port_has("vm1", "fd77::1:2/128") && fake_port_has("vm1", "fd77::1:3/128") &&
	      fake_port_has("vm1", "10.0.1.0/24"));
	/* Mistakes named before weftd is asked. */
	adds = fake_vm_adds;
	CHECK(run("vm", "add", "vm2", "fd77::1/64", NULL) == 1 && strstr(err, "Invalid argument") &&
	      strstr(err, "host bits") && one_line(err));
	CHECK(run("vm", "add", "vm/2", "fd77::9", NULL) == 1 && strstr(err, "bad port name"));
	CHECK(run("vm", "add", "vm2", "fd77::9\nport=vm1", NULL) == 1 && strstr(err, "line break"));
	CHECK(run("vm", "add", "vm2", "fd77::9", "fd77::9", NULL) == 1 && strstr(err, "twice"));
	CHECK(fake_vm_adds == adds);
	/* The daemon's refusals. */
	CHECK(run("vm", "add", "vm9", "fd77::9", NULL) == 1 && strstr(err, "vm add vm9") &&
	      strstr(err, "No such file or directory") && strstr(err, "no port with this name") &&
	      one_line(err));
	CHECK(run("vm", "add", "vm2", "fd77::1:2", NULL) == 1 && strstr(err, "File exists") &&
	      strstr(err, "another port"));

	CHECK(run("vm", "list", NULL) == 0);
	CHECK(!strcmp(out, "PORT  ADDRESS        MESH\n"
			   "vm1   10.0.0.2/32    no\n"
			   "vm1   fd77::1:2/128  yes\n"
			   "vm1   10.0.1.0/24    no\n"
			   "vm1   fd77::1:3/128  yes\n"));
	CHECK(run("vm", "list", "--json", NULL) == 0 && out[0] == '[' &&
	      strstr(out, "\"port\": \"vm1\"") &&
	      strstr(out, "{ \"address\": \"fd77::1:2/128\", \"mesh\": true }") &&
	      strstr(out, "\"port\": \"vm2\",\n    \"addresses\": []"));
	CHECK(jq("length == 2 and (.[0].addresses | length) == 4 and .[0].addresses[1].mesh and "
		 "(.[0].addresses[0].mesh | not) and .[1].addresses == []"));

	CHECK(run("vm", "del", "fd77::1:3", "10.0.1.0/24", NULL) == 0 && !out[0]);
	CHECK(!fake_port_has("vm1", "fd77::1:3/128") && fake_ports[0].cfg.n_addrs == 2);
	CHECK(run("vm", "del", "fd77::1:3", NULL) == 1 && strstr(err, "vm del") &&
	      strstr(err, "address fd77::1:3/128 is registered to no port"));
	/* With no addresses anywhere, the table is empty. */
	CHECK(run("vm", "del", "fd77::1:2", "10.0.0.2", NULL) == 0);
	CHECK(run("vm", "list", NULL) == 0 && !out[0]);
	fake_reset();
}

static void test_cli_sync(void)
{
	char file[96], bad[96];
	unsigned int adds, dels;

	fake_reset();
	add_port("vm1", 1, "address=10.0.0.2\naddress=fd77::1:9\n");
	add_port("vm2", 2, "address=fd77::2:2\n");
	add_port("vm3", 3, "address=fd77::3:3\n");
	snprintf(file, sizeof(file), "%s/vms", dir);
	/* vm1 keeps 10.0.0.2, gains fd77::1:2, loses fd77::1:9; fd77::2:2
	 * moves from vm2 to vm1; vm2 gains fd77::2:5; vm3 is not named. */
	write_file(file, "# the VMs of this host\n"
			 "vm1 10.0.0.2 fd77::1:2\n"
			 "vm2 fd77::2:5   # renumbered\n"
			 "vm1 fd77::2:2\n");
	CHECK(run("vm", "sync", file, "--dry-run", NULL) == 0);
	CHECK(!strcmp(out, "would have added fd77::1:2/128 to vm1\n"
			   "would have moved fd77::2:2/128 from vm2 to vm1\n"
			   "would have added fd77::2:5/128 to vm2\n"
			   "would have removed fd77::1:9/128 from vm1\n"
			   "would have removed fd77::3:3/128 from vm3\n"
			   "dry run: 2 added, 1 moved, 2 removed, 1 unchanged\n"));
	CHECK(fake_vm_adds == 0 && fake_vm_dels == 0);
	CHECK(run("vm", "sync", file, NULL) == 0);
	CHECK(!strcmp(out, "added fd77::1:2/128 to vm1\n"
			   "moved fd77::2:2/128 from vm2 to vm1\n"
			   "added fd77::2:5/128 to vm2\n"
			   "removed fd77::1:9/128 from vm1\n"
			   "removed fd77::3:3/128 from vm3\n"
			   "2 added, 1 moved, 2 removed, 1 unchanged\n"));
	CHECK(fake_ports[0].cfg.n_addrs == 3 && fake_port_has("vm1", "10.0.0.2/32") &&
	      fake_port_has("vm1", "fd77::1:2/128") && fake_port_has("vm1", "fd77::2:2/128"));
	CHECK(fake_ports[1].cfg.n_addrs == 1 && fake_port_has("vm2", "fd77::2:5/128"));
	CHECK(fake_ports[2].cfg.n_addrs == 0);
	/* Twice changes nothing, and says so. */
	adds = fake_vm_adds;
	dels = fake_vm_dels;
	CHECK(run("vm", "sync", file, NULL) == 0 &&
	      !strcmp(out, "0 added, 0 moved, 0 removed, 4 unchanged\n"));
	CHECK(fake_vm_adds == adds && fake_vm_dels == dels);

	/* A bad file changes nothing and names its line. */
	snprintf(bad, sizeof(bad), "%s/bad", dir);
	write_file(bad, "vm1 10.0.0.2\n\nvm2 10.0.0.1/8\n");
	CHECK(run("vm", "sync", bad, NULL) == 1 && strstr(err, "bad:3:") &&
	      strstr(err, "host bits") && one_line(err));
	write_file(bad, "vm1 10.0.0.2\nvm9 fd77::9\n");
	CHECK(run("vm", "sync", bad, NULL) == 1 && strstr(err, "no port vm9") && one_line(err));
	CHECK(run("vm", "sync", "/nonexistent/vms", NULL) == 1 &&
	      strstr(err, "No such file or directory"));
	CHECK(fake_vm_adds == adds && fake_vm_dels == dels);
	/* An empty file empties every port. */
	write_file(bad, "# nothing\n");
	CHECK(run("vm", "sync", bad, NULL) == 0 &&
	      strstr(out, "0 added, 0 moved, 4 removed, 0 unchanged\n"));
	CHECK(fake_ports[0].cfg.n_addrs == 0 && fake_ports[1].cfg.n_addrs == 0);
	fake_reset();
}

static void test_cli_mesh(void)
{
	fake_reset();
	CHECK(run("mesh", "set", "mode", "multicast", NULL) == 1 &&
	      strstr(err, "mesh set: Invalid argument: the mesh refused") && one_line(err));
	CHECK(run("mesh", "set", "prefix", "fd77::/64,10.77.0.0/16", "mode", "multicast", NULL) == 0 &&
	      !out[0]);
	CHECK(fake_mesh.mode == MESH_MULTICAST && fake_mesh.n_prefixes == 2);
	CHECK(run("mesh", "set", "mode", "unicast", NULL) == 0 && fake_mesh.n_prefixes == 2 &&
	      fake_mesh.mode == MESH_UNICAST);
	CHECK(run("mesh", "set", "prefix", "fd77::1/64", NULL) == 1 && strstr(err, "host bits"));
	CHECK(run("mesh", "set", "mode", "anycast", NULL) == 1 && strstr(err, "mode must be"));
	CHECK(fake_mesh.n_prefixes == 2 && fake_mesh.mode == MESH_UNICAST);

	fake_mesh_stats.advert_received = 4;
	fake_mesh_stats.locations = 1;
	fake_routes = calloc(MESH_TEXT_MAX_ROUTES + 1, sizeof(*fake_routes));
	fake_routes[0].prefix.family = AF_INET6;
	fake_routes[0].prefix.cidr = 128;
	inet_pton(AF_INET6, "fd77::5", fake_routes[0].prefix.addr);
	for (int i = 0; i < 32; i++)
		fake_routes[0].holder[i] = (uint8_t)(i + 1);
	fake_routes[0].seq = 3;
	fake_routes[1].prefix.family = AF_INET;
	fake_routes[1].prefix.cidr = 32;
	inet_pton(AF_INET, "10.77.0.9", fake_routes[1].prefix.addr);
	fake_routes[1].negative = true;
	fake_n_routes = 2;
	CHECK(run("mesh", "show", NULL) == 0);
	CHECK(!strncmp(out, "mode: unicast\nprefixes: fd77::/64, 10.77.0.0/16\n"
			  "lease key: none (any member is believed)\ncounters:\n", 97));
	CHECK(strstr(out, "  advert_received    4\n") && strstr(out, "  locations          1\n"));
	CHECK(strstr(out, "routes:\n  fd77::5/128 -> AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\n"
			  "  10.77.0.9/32 -> negative\n"));
	CHECK(!strstr(out, "the first"));
	CHECK(run("mesh", "show", "--json", NULL) == 0 && out[0] == '{' &&
	      strstr(out, "\"mode\": \"unicast\"") && strstr(out, "\"advert_received\": 4") &&
	      strstr(out, "\"holder\": \"AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\"") &&
	      strstr(out, "\"holder\": null, \"negative\": true"));
	CHECK(jq(".mode == \"unicast\" and .prefixes == [\"fd77::/64\", \"10.77.0.0/16\"] and "
		 ".counters.advert_received == 4 and .counters.pending == 0 and "
		 "(.routes | length) == 2 and .routes[0].seq == 3 and .routes[1].negative and "
		 "(.routes_truncated | not)"));
	/* Truncated. */
	for (size_t i = 2; i <= MESH_TEXT_MAX_ROUTES; i++) {
		fake_routes[i] = fake_routes[0];
		fake_routes[i].prefix.addr[14] = (uint8_t)(i >> 8);
		fake_routes[i].prefix.addr[15] = (uint8_t)i;
	}
	fake_n_routes = MESH_TEXT_MAX_ROUTES + 1;
	CHECK(run("mesh", "show", NULL) == 0 && strstr(out, "  (the first 1000 routes only)\n"));
	CHECK(run("mesh", "show", "--json", NULL) == 0 && jq("(.routes | length) == 1000 and "
							      ".routes_truncated"));
	free(fake_routes);
	fake_routes = NULL;
	fake_reset();
}

/* A daemon without weft requests refuses them; the CLI says so. */
static void test_no_command(void)
{
	char path2[128];
	struct uapi_server *s = uapi_server_start(dir, "wt1", &fake_ops_without_command, NULL);

	CHECK(s != NULL);
	if (!s)
		return;
	snprintf(path2, sizeof(path2), "%s/wt1.sock", dir);
	if (cli) {
		char save[108];

		strcpy(save, sock_path);
		strcpy(sock_path, path2);
		CHECK(run("mesh", "show", NULL) == 1 && strstr(err, "is it weftd?"));
		CHECK(run("vm", "list", NULL) == 1);
		strcpy(sock_path, save);
	}
	uapi_server_stop(s);
}

int main(void)
{
	struct uapi_server *s;

	if (sodium_init() < 0)
		return 1;
	wg_log_set_level(WG_LOG_SILENT);
	strcpy(dir, "/tmp/weft-test-mesh-XXXXXX");
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
	test_vm_wire();
	test_mesh_wire();
	free(fake_routes);
	fake_routes = NULL;
	cli = getenv("WEFT_CLI");
	if (cli && access(cli, X_OK) == 0) {
		test_cli_usage();
		test_cli_vm();
		test_cli_sync();
		test_cli_mesh();
	} else {
		fprintf(stderr, "WEFT_CLI not set: the CLI part is skipped\n");
	}
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
	printf("mesh control: all checks passed\n");
	return 0;
}
