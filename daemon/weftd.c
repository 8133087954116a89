/* weftd: the userspace WireGuard daemon, a drop-in for wireguard-go.
 *
 *   weftd [-f] [--ports FILE] [--mesh FILE] [--metrics [ADDR:]PORT
 *         [--metrics-public] [--metrics-peers]] IFNAME
 *
 * Creates the TUN device and /var/run/wireguard/INTERFACE-NAME.sock, then
 * runs until SIGTERM/SIGINT, until the TUN device is deleted, or until the
 * socket file is removed; SIGHUP re-applies the ports and mesh files. The
 * TUN link may be moved into another namespace (`ip link set IFNAME netns
 * NS`, WireGuard's container pattern): weftd serves it there, its sockets
 * stay here, and it stops when the link is deleted there or NS goes.
 * Without -f (or
 * WG_PROCESS_FOREGROUND=1) it detaches once the interface and socket are
 * ready, as wireguard-go does, so that wg-quick can configure it right
 * after it returns. Under systemd (Type=notify) it reports READY=1,
 * RELOADING=1, STOPPING=1 and a STATUS= line itself (daemon/notify.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crypto/aead.h"
#include "daemon/caps.h"
#include "daemon/control.h"
#include "daemon/host.h"
#include "daemon/memtrim.h"
#include "daemon/metrics.h"
#include "daemon/metrics_http.h"
#include "daemon/notify.h"
#include "daemon/uapi_server.h"
#include "mesh/file.h"
#include "port/file.h"
#include "port/ports.h"
#include "port/text.h"
#include "tun/netlink.h"
#include "tun/offload.h"
#include "tun/tun.h"
#include "wg/clock.h"
#include "wg/device.h"
#include "wg/log.h"
#include "wg/messages.h"
#include "wg/uapi.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "unknown"
#endif

enum {
	STATUS_EVERY_MS = 30 * 1000, /* how often STATUS= follows the counters */
};

static int stop_fd = -1; /* eventfd: written by any thread that wants us gone */

static void request_stop(void *ctx)
{
	uint64_t one = 1;

	(void)ctx;
	if (write(stop_fd, &one, sizeof(one)) < 0)
		_exit(1);
}

static int uapi_get(void *ctx, struct wg_device_config *cfg)
{
	return wg_device_get(ctx, cfg);
}

static int uapi_set(void *ctx, const struct wg_device_config *cfg)
{
	return wg_device_set(ctx, cfg);
}

static int uapi_stats(void *ctx, char **text, size_t *len)
{
	return wg_device_stats(ctx, text, len);
}

/* weft=metrics is served here rather than in control.c's table, so that
 * control.c (tested against a fake device) does not pull in the whole
 * device for the exposition. */
static int uapi_command(void *ctx, const char *verb, const char *body, size_t len, char **reply,
			size_t *reply_len)
{
	const char *why = NULL;
	int ret;

	if (strcmp(verb, "metrics"))
		return control_command(ctx, verb, body, len, reply, reply_len);
	*reply = NULL;
	*reply_len = 0;
	ret = metrics_control(ctx, body, len, reply, reply_len, &why);
	if (ret && why) {
		int n = asprintf(reply, "message=%s\n", why);

		*reply_len = n > 0 ? (size_t)n : 0;
		if (n < 0)
			*reply = NULL;
	}
	return ret;
}

static const struct uapi_server_ops uapi_ops = {
	.get = uapi_get,
	.set = uapi_set,
	.stats = uapi_stats,
	.gone = request_stop,
	.command = uapi_command,
};

/* WEFT_WORKERS (default: one per online CPU) and WEFT_CPUS ("0,1,...":
 * pin worker i to the i-th CPU listed). */
static int worker_plan(int *cpus)
{
	const char *env = getenv("WEFT_WORKERS"), *list = getenv("WEFT_CPUS");
	long n = env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
	int i = 0;

	if (n < 1)
		n = 1;
	if (n > WG_MAX_WORKERS)
		n = WG_MAX_WORKERS;
	for (int k = 0; k < WG_MAX_WORKERS; k++)
		cpus[k] = -1;
	while (list && *list && i < n) {
		char *end;
		long cpu = strtol(list, &end, 10);

		if (end == list)
			break;
		cpus[i++] = (int)cpu;
		list = *end == ',' ? end + 1 : end;
	}
	return (int)n;
}

/* Asks the TUN for the most offloads it takes, falling back step by step;
 * each fallback is logged once. Returns the TUN_F_* flags it took. */
static unsigned int setup_offloads(int fd)
{
	static const struct {
		unsigned int flags;
		const char *what;
	} tries[] = {
		{ TUN_OFFLOAD_FLAGS, "checksum, TSO and USO" },
		{ TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6, "checksum and TSO (no USO)" },
		{ TUN_F_CSUM, "checksum only (no TSO)" },
		{ 0, "none" },
	};

	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		if (!tun_set_offload(fd, tries[i].flags)) {
			wg_log(i ? WG_LOG_ERROR : WG_LOG_VERBOSE, "TUN offloads: %s", tries[i].what);
			return tries[i].flags;
		}
	}
	return 0;
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s [-f] [-p FILE] [--mesh FILE]\n"
		"       [-m [ADDR:]PORT [--metrics-public] [--metrics-peers]]\n"
		"       INTERFACE-NAME\n"
		"\n"
		"Creates the TUN interface INTERFACE-NAME and serves the WireGuard\n"
		"configuration socket /var/run/wireguard/INTERFACE-NAME.sock, as\n"
		"wireguard-go does; configure it with wg(8) or wg-quick(8), and its VM\n"
		"ports with weft(8). SIGHUP re-applies the ports and mesh files.\n"
		"\n"
		"Options:\n"
		"  -f, --foreground         stay in the foreground (also WG_PROCESS_FOREGROUND=1)\n"
		"  -p, --ports FILE         the VM ports of a ports file ([Port] sections, see\n"
		"                           weft(8)): added at start-up, where a bad file or a\n"
		"                           port that cannot be opened stops weftd; re-applied\n"
		"                           on SIGHUP (changed ports replaced, ports the file\n"
		"                           dropped removed, others untouched)\n"
		"      --mesh FILE          the mesh's mode and prefixes ([Mesh] with Mode and\n"
		"                           Prefix, see weft(8)): set at start-up, where a bad\n"
		"                           file stops weftd; re-applied on SIGHUP\n"
		"  -m, --metrics [ADDR:]PORT\n"
		"                           serve Prometheus metrics on http://ADDR:PORT/metrics\n"
		"                           (ADDR numeric, [IPv6] in brackets; a bare PORT is\n"
		"                           127.0.0.1:PORT); off by default\n"
		"      --metrics-public     allow a --metrics ADDR that is not loopback\n"
		"      --metrics-peers      add the per-peer series (public key and allowed IPs\n"
		"                           as labels) to what --metrics serves; without it\n"
		"                           only 'weft metrics' (root's socket) shows them\n"
		"  -h, --help               show this help\n"
		"  -v, -V, --version        show the version\n"
		"\n"
		"Environment:\n"
		"  LOG_LEVEL=error|verbose|debug|silent   log verbosity (default error)\n"
		"  JOURNAL_STREAM (set by systemd)        log lines with <N> priority prefixes\n"
		"  NOTIFY_SOCKET (set by systemd)         report READY=1, STATUS=, RELOADING=1\n"
		"  WEFT_WORKERS=N                         data-path threads (default: one per CPU)\n"
		"  WEFT_CPUS=0,1,...                      pin worker i to the i-th CPU listed\n"
		"  WEFT_TUN_OFFLOAD=0                     no virtio-net header, TSO or GRO on the TUN\n"
		"  WEFT_TAP_OFFLOAD=0                     no TSO or checksum offload on tap ports\n"
		"  WEFT_BPF=0                             no BPF bypass between attached ports\n"
		"  WEFT_UDP_GSO=0, WEFT_UDP_GRO=0         no UDP segmentation / coalescing\n"
		"  WEFT_TUN_TXQUEUELEN=N                  TUN queue length (default 500)\n"
		"  WEFT_SOCKET_BUFFER=BYTES               UDP socket buffers (default 1 MiB)\n"
		"  WEFT_AEAD=sodium|openssl|avx512        force a ChaCha20-Poly1305 backend\n"
		"                                         (default: the fastest on this CPU)\n"
		"  WEFT_TEST_UNDER_LOAD=1                 tests: always answer with cookies\n"
		"  WEFT_TEST_CLOCK_SPEEDUP=N              tests: protocol clock N times faster\n"
		"  WEFT_TEST_MESH_REFRESH=0               tests: no periodic mesh re-announcement\n"
		"  WEFT_TEST_IDLE_TRIM_MS=N               tests: give buffers back after N ms idle\n",
		prog);
}

/* Forks; the parent waits for the child's word that it is ready and exits
 * with its status. Returns the write end of the pipe in the child. */
static int daemonize(void)
{
	int p[2];
	pid_t pid;
	char status = 1;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0) {
		close(p[1]);
		if (read(p[0], &status, 1) != 1)
			status = 1;
		_exit(status);
	}
	close(p[0]);
	setsid();
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		close(null);
	}
	return p[1];
}

/* Detached and ready: stdout and stderr go to /dev/null, as wireguard-go's
 * do unless LOG_LEVEL asks for logs, so that a caller that reads them
 * (out=$(weftd wg0 2>&1), wg-quick piped, ssh) sees them close. Until now
 * they carried the start-up errors. */
static void detach_stdio(void)
{
	const char *lvl = getenv("LOG_LEVEL");
	int null;

	if (lvl && *lvl && strcmp(lvl, "silent"))
		return;
	null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null < 0)
		return;
	dup2(null, STDOUT_FILENO);
	dup2(null, STDERR_FILENO);
	close(null);
}

static void tell_parent(int fd, char status)
{
	if (fd < 0)
		return;
	if (write(fd, &status, 1) != 1)
		log_error("cannot report readiness: %s", strerror(errno));
	close(fd);
}

static void choose_aead(void)
{
	struct aead_measure report[AEAD_BACKENDS];
	const char *forced = getenv("WEFT_AEAD");
	const struct aead_backend *b = aead_select(report);

	for (int i = 0; i < AEAD_BACKENDS; i++) {
		log_info("AEAD %s: %s, %.0f MB/s", report[i].backend->name,
			 report[i].passed ? "passed self-test" : "FAILED self-test",
			 report[i].mbytes_per_sec);
		if (forced && report[i].backend == aead_by_name(forced)) {
			if (report[i].passed) {
				aead_use(report[i].backend);
				b = report[i].backend;
			} else {
				log_error("WEFT_AEAD=%s: that backend failed its self-test on this CPU; "
					  "not used", forced);
			}
		}
	}
	if (forced && !aead_by_name(forced))
		log_error("WEFT_AEAD=%s: no such backend (sodium, openssl, avx512); not used", forced);
	if (b)
		log_info("using %s for ChaCha20-Poly1305", b->name);
}

/* STATUS= for systemctl status: what runs and what it carried. */
static void notify_status(struct wg_device *dev, const char *prefix, const char *last_reload)
{
	char state[512];
	size_t n_ports = 0;
	struct port_info *ports = NULL;
	size_t n_peers;
	int c;

	if (!getenv("NOTIFY_SOCKET"))
		return;
	wg_rwlock_rdlock(&dev->lock);
	n_peers = dev->n_peers;
	wg_rwlock_unlock(&dev->lock);
	if (!port_list(dev, &ports, &n_ports))
		free(ports);
	snprintf(state, sizeof(state),
		 "%sSTATUS=%s up: %zu peer%s, %zu port%s, %d worker%s, %s; rx %llu tx %llu "
		 "packets%s%s\n",
		 prefix, dev->ifname, n_peers, n_peers == 1 ? "" : "s", n_ports,
		 n_ports == 1 ? "" : "s", dev->n_workers, dev->n_workers > 1 ? "s" : "",
		 aead_active()->name, (unsigned long long)atomic_load(&dev->stats.rx_packets),
		 (unsigned long long)atomic_load(&dev->stats.tx_packets),
		 last_reload ? "; last reload: " : "", last_reload ? last_reload : "");
	if ((c = notify_send(state)))
		log_error("cannot notify the service manager: %s", strerror(-c));
}

/* Takes on the TUN link's state as read where it lives: after
 * `ip link set wg0 netns NS` (WireGuard's container pattern) the link's MTU,
 * up flag and queue length are set in NS, and its MTU is what packets are
 * padded to. */
static void link_follow(struct wg_device *dev, const struct tun_link_state *st)
{
	int nsid = atomic_exchange(&dev->tun_nsid, st->nsid);

	if (nsid != st->nsid) {
		if (st->nsid < 0)
			log_info("TUN link %s is back in weftd's network namespace", st->name);
		else
			log_info("TUN link %s moved to the network namespace of id %d; serving it "
				 "there, sockets stay here",
				 st->name, st->nsid);
	}
	if (atomic_exchange(&dev->mtu, st->mtu) != st->mtu)
		log_info("TUN link %s: MTU %u", st->name, st->mtu);
	if (atomic_exchange(&dev->tun_up, st->up) != st->up)
		log_info("TUN link %s: %s", st->name, st->up ? "up" : "down");
	atomic_store(&dev->tun_txqlen, st->txqlen);
}

/* SIGHUP: the configuration files again, tunnels untouched. result gets
 * what each file did, for STATUS=. */
static void reload(struct wg_device *dev, const char *mesh_path, struct ports_file *pf,
		   char *result, size_t len)
{
	char mesh[128] = "", ports[128] = "";

	notify_send("RELOADING=1\n");
	log_info("Reloading");
	if (mesh_path)
		mesh_file_apply(mesh_path, dev, mesh, sizeof(mesh));
	if (pf->path)
		ports_file_apply(pf, dev, ports, sizeof(ports));
	if (!mesh_path && !pf->path)
		snprintf(result, len, "nothing to reload (no --ports, no --mesh)");
	else
		snprintf(result, len, "%s%s%s", mesh, mesh[0] && ports[0] ? "; " : "", ports);
	notify_status(dev, "READY=1\n", result);
}

/* "wg0 is already served by weftd (pid 1234)": the answer to a second
 * start, with the link untouched. Returns the exit status. */
static int already_served(const char *ifname, pid_t pid)
{
	char path[64], comm[64] = "another daemon";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (pid > 0 && (f = fopen(path, "re"))) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	if (pid > 0)
		log_error("%s is already served by %s (pid %d): its UAPI socket %s/%s.sock answers",
			  ifname, comm, (int)pid, WG_UAPI_DEFAULT_DIR, ifname);
	else
		log_error("%s is already served: its UAPI socket %s/%s.sock answers", ifname,
			  WG_UAPI_DEFAULT_DIR, ifname);
	return 1;
}

static int start_metrics(struct metrics_source *src, const char *spec, bool public,
			 struct metrics_http **out)
{
	struct sockaddr_storage ss;
	socklen_t len;
	const char *why;
	bool loopback;
	int err;

	if (metrics_http_parse_addr(spec, &ss, &len, &loopback, &why)) {
		log_error("--metrics %s: %s", spec, why);
		return -1;
	}
	/* Metrics name peers and their allowed IPs: not for every network
	 * unless the operator says so. */
	if (!loopback && !public) {
		log_error("--metrics %s: not a loopback address; add --metrics-public to serve "
			  "metrics beyond this host",
			  spec);
		return -1;
	}
	*out = metrics_http_start((struct sockaddr *)&ss, len, metrics_render_cb, src, 0, &err);
	if (!*out) {
		log_error("--metrics %s: %s", spec, strerror(-err));
		return -1;
	}
	{
		char host[INET6_ADDRSTRLEN] = "?";
		const void *a = ss.ss_family == AF_INET6
					? (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr
					: (const void *)&((struct sockaddr_in *)&ss)->sin_addr;

		inet_ntop(ss.ss_family, a, host, sizeof(host));
		log_info("Metrics on http://%s%s%s:%u/metrics", ss.ss_family == AF_INET6 ? "[" : "",
			 host, ss.ss_family == AF_INET6 ? "]" : "", metrics_http_port(*out));
	}
	return 0;
}

int main(int argc, char **argv)
{
	enum { OPT_METRICS_PUBLIC = 256, OPT_METRICS_PEERS, OPT_MESH };
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "metrics-public", no_argument, NULL, OPT_METRICS_PUBLIC },
		{ "metrics-peers", no_argument, NULL, OPT_METRICS_PEERS },
		{ "mesh", required_argument, NULL, OPT_MESH },
		{ "ports", required_argument, NULL, 'p' },
		{ "version", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	const char *env_fg = getenv("WG_PROCESS_FOREGROUND");
	const char *env_off = getenv("WEFT_TUN_OFFLOAD");
	bool vnet = !(env_off && !strcmp(env_off, "0"));
	bool foreground = env_fg && !strcmp(env_fg, "1");
	bool uso = false;
	bool metrics_public = false;
	struct metrics_source metrics_source = { 0 };
	char name[IFNAMSIZ], reload_result[256] = "";
	struct uapi_server *uapi = NULL;
	struct tun_link_watch *watch = NULL;
	struct metrics_http *metrics = NULL;
	struct wg_device *dev = NULL;
	struct ports_file ports = { 0 };
	int c, ready_fd = -1, sig_fd, ret = 1, n_workers, n_open = 0;
	const char *metrics_spec = NULL, *mesh_path = NULL;
	int tun_fds[WG_MAX_WORKERS], cpus[WG_MAX_WORKERS];
	sigset_t mask;

	while ((c = getopt_long(argc, argv, "fhvVp:m:", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			foreground = true;
			break;
		case 'p':
			ports.path = optarg;
			break;
		case 'm':
			metrics_spec = optarg;
			break;
		case OPT_METRICS_PUBLIC:
			metrics_public = true;
			break;
		case OPT_METRICS_PEERS:
			metrics_source.peer_series = true;
			break;
		case OPT_MESH:
			mesh_path = optarg;
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		case 'v':
		case 'V':
			printf("weftd v%s\n", WEFT_VERSION);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 1;
		}
	}
	if (optind != argc - 1) {
		usage(stderr, argv[0]);
		return 1;
	}
	if (strlen(argv[optind]) >= IFNAMSIZ) {
		fprintf(stderr, "Interface name too long: %s\n", argv[optind]);
		return 1;
	}
	if ((metrics_public || metrics_source.peer_series) && !metrics_spec) {
		fprintf(stderr, "%s without --metrics\n",
			metrics_public ? "--metrics-public" : "--metrics-peers");
		return 1;
	}

	wg_clock_init();
	wg_log_init(argv[optind]);
	if (aead_select(NULL) == NULL) {
		log_error("no ChaCha20-Poly1305 backend passes its self-test");
		return 1;
	}
	choose_aead();

	/* Before the TUN: opening it would attach to the running daemon's
	 * multi-queue device, and setting the MTU would undo the admin's. */
	if ((c = uapi_server_owner(NULL, argv[optind])))
		return already_served(argv[optind], c);
	n_workers = worker_plan(cpus);
	tun_fds[0] = tun_open_vnet(argv[optind], name, n_workers > 1, vnet);
	if (tun_fds[0] < 0) {
		log_error("Failed to create TUN device: %s", strerror(-tun_fds[0]));
		return 1;
	}
	for (n_open = 1; n_open < n_workers; n_open++) {
		tun_fds[n_open] = tun_open_queue(name, vnet);
		if (tun_fds[n_open] < 0) {
			log_error("Failed to open TUN queue %d: %s", n_open, strerror(-tun_fds[n_open]));
			while (n_open--)
				close(tun_fds[n_open]);
			return 1;
		}
	}
	if (vnet)
		uso = (setup_offloads(tun_fds[0]) & TUN_F_USO4) != 0;
	else
		log_info("TUN offloads off (WEFT_TUN_OFFLOAD=0)");
	{
		/* The kernel's 500, as wireguard-go has it: a burst of small
		 * datagrams (QUIC sends 64 at once) must fit. A queue of 16, once
		 * meant to keep 64 KiB TSO packets from piling up, dropped those
		 * bursts and bought no latency: under load packets wait in the
		 * receiving gateway's UDP socket, not here (bench/README.md). */
		const char *q = getenv("WEFT_TUN_TXQUEUELEN");
		long txq = q ? strtol(q, NULL, 10) : 500;

		if (txq > 0 && tun_link_set_txqlen(name, (unsigned int)txq) < 0)
			log_error("cannot set txqueuelen %ld on %s", txq, name);
	}
	if (tun_link_set_mtu(name, WG_DEFAULT_MTU) < 0)
		log_error("cannot set MTU %d on %s", WG_DEFAULT_MTU, name);

	if (!foreground) {
		ready_fd = daemonize();
		if (ready_fd < 0) {
			log_error("Failed to daemonize: %s", strerror(errno));
			return 1;
		}
	}

	/* Signals are read from a signalfd in the main loop; block them in
	 * every thread before any is started. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* As wireguard-go (Go catches them and does nothing): a stray
	 * SIGUSR1 or SIGUSR2 must not kill the daemon and leave its socket. */
	signal(SIGUSR1, SIG_IGN);
	signal(SIGUSR2, SIG_IGN);
	sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
	stop_fd = eventfd(0, EFD_CLOEXEC);

	dev = host_new(name, tun_fds, cpus, n_workers, vnet, WG_DEFAULT_MTU);
	if (!dev) {
		log_error("Failed to create device");
		for (int i = 0; i < n_workers; i++)
			close(tun_fds[i]);
		goto out;
	}
	log_info("%d data-path worker%s", n_workers, n_workers > 1 ? "s" : "");
	dev->tun_uso = uso;
	dev->on_fatal = request_stop;
	/* Before the capabilities go: the watch hears the link's namespace
	 * only with CAP_NET_BROADCAST at the time its socket is made. */
	watch = tun_link_watch_new(tun_fds[0]);
	if (!watch) {
		log_error(errno == ENODEV ? "TUN device vanished" : "cannot watch the TUN link: %s",
			  strerror(errno));
		goto out;
	}
	{
		struct tun_link_state st;

		if (tun_link_read(tun_fds[0], &st) == 0)
			link_follow(dev, &st);
	}
	/* Everything that needs more privilege than the runtime set is open
	 * now. Capabilities are per thread: drop them before the first thread
	 * starts, so that every thread (and the io_uring workers of the
	 * kernel) has only what caps.c keeps. */
	if ((c = caps_drop_to_runtime())) {
		/* Not a reason to go on with every capability root has. */
		log_error("cannot drop capabilities: %s", strerror(-c));
		goto out;
	}
	if (host_start(dev)) {
		log_error("Failed to start device threads");
		goto out;
	}
	uapi = uapi_server_start(NULL, name, &uapi_ops, dev);
	if (!uapi) {
		log_error("Failed to listen on UAPI socket: %s", strerror(errno));
		goto out;
	}
	/* The mesh before the ports, so their addresses are announced. */
	if (mesh_path && mesh_file_apply(mesh_path, dev, reload_result, sizeof(reload_result)))
		goto out;
	if (ports.path && ports_file_apply(&ports, dev, NULL, 0))
		goto out;
	reload_result[0] = '\0';
	metrics_source.dev = dev;
	if (metrics_spec && start_metrics(&metrics_source, metrics_spec, metrics_public, &metrics))
		goto out;
	log_info("Device started");
	log_debug("start-up code trimmed: %zu KiB of mappings", memtrim_code() / 1024);
	if (ready_fd >= 0)
		detach_stdio();
	tell_parent(ready_fd, 0);
	ready_fd = -1;
	notify_status(dev, "READY=1\n", NULL);

	for (;;) {
		/* The TUN fd is polled for nothing: its POLLERR says the device
		 * was unregistered, in whatever namespace it was. */
		struct pollfd pfd[4] = {
			{ .fd = sig_fd, .events = POLLIN },
			{ .fd = stop_fd, .events = POLLIN },
			{ .fd = tun_link_watch_fd(watch), .events = POLLIN },
			{ .fd = tun_fds[0], .events = 0 },
		};
		struct tun_link_state st;
		struct signalfd_siginfo si;
		int n = poll(pfd, 4, STATUS_EVERY_MS);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (n == 0) {
			notify_status(dev, "", reload_result[0] ? reload_result : NULL);
			continue;
		}
		if (pfd[0].revents) {
			if (read(sig_fd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo == SIGHUP) {
				reload(dev, mesh_path, &ports, reload_result,
				       sizeof(reload_result));
				continue;
			}
			log_info("Shutting down");
			break;
		}
		/* A move is not a deletion: the link is gone only when the
		 * device itself is, which the TUN fd tells. Asked before the
		 * workers' stop request, which a deletion also raises. */
		if (tun_link_watch_gone(watch)) {
			log_info("TUN device deleted; shutting down");
			break;
		}
		if (pfd[1].revents)
			break;
		if (pfd[2].revents && (c = tun_link_watch_update(watch, &st)) > 0)
			link_follow(dev, &st);
		if (pfd[2].revents && c < 0 && c != -EAGAIN)
			log_error("cannot read the TUN link: %s", strerror(-c));
		if (pfd[3].revents) {
			/* POLLERR without a deletion is not expected; stop
			 * polling it rather than spin. */
			log_error("TUN fd reports an error, yet the device is there");
			tun_fds[0] = -1;
		}
	}
	notify_send("STOPPING=1\n");
	ret = 0;
out:
	metrics_http_stop(metrics);
	if (uapi)
		uapi_server_stop(uapi);
	if (dev) {
		host_stop(dev);
		host_free(dev);
	}
	if (watch)
		tun_link_watch_free(watch);
	ports_file_free(&ports);
	/* A start that failed: the parent returns once the TUN and the
	 * socket are gone. */
	tell_parent(ready_fd, 1);
	return ret;
}
