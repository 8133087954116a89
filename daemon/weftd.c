/* weftd: the userspace WireGuard daemon, a drop-in for wireguard-go.
 *
 *   weftd [-f/--foreground] INTERFACE-NAME
 *
 * Creates the TUN device and /var/run/wireguard/INTERFACE-NAME.sock, then
 * runs until SIGTERM/SIGINT, until the TUN device is deleted, or until the
 * socket file is removed. Without -f (or WG_PROCESS_FOREGROUND=1) it
 * detaches once the interface and socket are ready, as wireguard-go does,
 * so that wg-quick can configure it right after it returns. */
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
#include "daemon/notify.h"
#include "tun/netlink.h"
#include "tun/offload.h"
#include "tun/port_text.h"
#include "tun/tun.h"
#include "wg/clock.h"
#include "wg/device.h"
#include "wg/log.h"
#include "wg/messages.h"
#include "wg/uapi.h"

#define WEFT_VERSION "0.1.0"

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

static const struct wg_uapi_ops uapi_ops = {
	.get = uapi_get,
	.set = uapi_set,
	.stats = uapi_stats,
	.gone = request_stop,
	.command = control_command,
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
 * each fallback is logged once. */
static void setup_offloads(int fd)
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
			return;
		}
	}
}

/* The ports of a ports file, so that a host's VM ports survive a restart.
 * 0, or -1 after logging what is wrong. */
static int load_ports(struct wg_device *dev, const char *path)
{
	struct port_config *cfgs = NULL;
	const char *why = NULL;
	size_t n = 0, len = 0;
	char *text = NULL;
	int line = 0, err = -1;
	FILE *f = fopen(path, "r");

	if (!f || getdelim(&text, &len, '\0', f) < 0) {
		log_error("ports file %s: %s", path, strerror(errno));
		goto out;
	}
	if (port_text_parse_file(text, strlen(text), &cfgs, &n, &line, &why)) {
		log_error("ports file %s:%d: %s", path, line, why ? why : "invalid");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		int e = wg_device_port_add(dev, &cfgs[i]);

		if (e) {
			log_error("ports file %s: port %s: %s", path, cfgs[i].name, strerror(-e));
			goto out;
		}
	}
	log_info("%zu port%s from %s", n, n == 1 ? "" : "s", path);
	err = 0;
out:
	if (f)
		fclose(f);
	free(text);
	free(cfgs);
	return err;
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s [-f/--foreground] [--ports FILE] INTERFACE-NAME\n"
		"\n"
		"Creates the TUN interface INTERFACE-NAME and serves the WireGuard\n"
		"configuration socket /var/run/wireguard/INTERFACE-NAME.sock, as\n"
		"wireguard-go does; configure it with wg(8) or wg-quick(8).\n"
		"\n"
		"  -f, --foreground  stay in the foreground (also WG_PROCESS_FOREGROUND=1)\n"
		"  -p, --ports FILE  add the VM ports of a ports file at start-up ([Port]\n"
		"                    sections, see docs/cli.md); a bad file\n"
		"                    or a port that cannot be opened stops weftd\n"
		"  -h, --help        show this help\n"
		"  -v, --version     show the version\n"
		"\n"
		"Environment:\n"
		"  LOG_LEVEL=error|verbose|debug|silent   log verbosity (default error)\n"
		"  WEFT_WORKERS=N                         data-path threads (default: one per CPU)\n"
		"  WEFT_CPUS=0,1,...                      pin worker i to the i-th CPU listed\n"
		"  WEFT_TUN_OFFLOAD=0                     no virtio-net header, TSO or GRO on the TUN\n"
		"  WEFT_UDP_GSO=0, WEFT_UDP_GRO=0         no UDP segmentation / coalescing\n"
		"  WEFT_TUN_TXQUEUELEN=N                  TUN queue length (default 16 with TSO)\n"
		"  WEFT_SOCKET_BUFFER=BYTES               UDP socket buffers (default 1 MiB)\n"
		"  WEFT_AEAD=sodium|openssl               force a ChaCha20-Poly1305 backend\n"
		"                                         (default: the faster on this CPU)\n",
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
	struct aead_measure report[2];
	const char *forced = getenv("WEFT_AEAD");
	const struct aead_backend *b = aead_select(report);

	for (int i = 0; i < 2; i++)
		log_info("AEAD %s: %s, %.0f MB/s", report[i].backend->name,
			 report[i].passed ? "passed self-test" : "FAILED self-test",
			 report[i].mbytes_per_sec);
	if (forced && aead_by_name(forced)) {
		aead_use(aead_by_name(forced));
		b = aead_active();
	}
	if (b)
		log_info("using %s for ChaCha20-Poly1305", b->name);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "ports", required_argument, NULL, 'p' },
		{ "version", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	const char *env_fg = getenv("WG_PROCESS_FOREGROUND");
	const char *env_off = getenv("WEFT_TUN_OFFLOAD");
	bool vnet = !(env_off && !strcmp(env_off, "0"));
	bool foreground = env_fg && !strcmp(env_fg, "1");
	char name[IFNAMSIZ];
	struct wg_uapi_server *uapi = NULL;
	struct tun_link_watch *watch = NULL;
	struct wg_device *dev = NULL;
	int c, ready_fd = -1, sig_fd, ret = 1, n_workers, n_open = 0;
	const char *ports_file = NULL;
	int tun_fds[WG_MAX_WORKERS], cpus[WG_MAX_WORKERS];
	sigset_t mask;

	while ((c = getopt_long(argc, argv, "fhvp:", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			foreground = true;
			break;
		case 'p':
			ports_file = optarg;
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		case 'v':
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

	wg_clock_init();
	wg_log_init(argv[optind]);
	if (aead_select(NULL) == NULL) {
		log_error("no ChaCha20-Poly1305 backend passes its self-test");
		return 1;
	}
	choose_aead();

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
		setup_offloads(tun_fds[0]);
	else
		log_info("TUN offloads off (WEFT_TUN_OFFLOAD=0)");
	{
		/* With TSO each queued packet may be 64 KiB: a short queue in
		 * front of the TUN keeps latency under load low (bufferbloat). */
		const char *q = getenv("WEFT_TUN_TXQUEUELEN");
		long txq = q ? strtol(q, NULL, 10) : (vnet ? 16 : 500);

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
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
	stop_fd = eventfd(0, EFD_CLOEXEC);

	dev = wg_device_new(name, tun_fds, cpus, n_workers, vnet, WG_DEFAULT_MTU);
	if (!dev) {
		log_error("Failed to create device");
		for (int i = 0; i < n_workers; i++)
			close(tun_fds[i]);
		goto out;
	}
	log_info("%d data-path worker%s", n_workers, n_workers > 1 ? "s" : "");
	dev->on_fatal = request_stop;
	if (wg_device_start(dev)) {
		log_error("Failed to start device threads");
		goto out;
	}
	uapi = wg_uapi_server_start(NULL, name, &uapi_ops, dev);
	if (!uapi) {
		log_error("Failed to listen on UAPI socket: %s", strerror(errno));
		goto out;
	}
	if (ports_file && load_ports(dev, ports_file))
		goto out;
	watch = tun_link_watch_new(tun_link_index(name));
	if (watch && tun_link_watch_gone(watch)) {
		log_error("TUN device vanished");
		goto out;
	}
	/* Everything that needs more privilege is open now. */
	if ((c = caps_drop_to_runtime()))
		log_info("cannot drop capabilities: %s", strerror(-c));
	log_info("Device started");
	tell_parent(ready_fd, 0);
	ready_fd = -1;
	{
		char state[128];

		snprintf(state, sizeof(state), "READY=1\nSTATUS=%s up, %d worker%s, %s\n", name,
			 n_workers, n_workers > 1 ? "s" : "", aead_active()->name);
		if ((c = notify_send(state)))
			log_error("cannot notify the service manager: %s", strerror(-c));
	}

	for (;;) {
		struct pollfd pfd[3] = {
			{ .fd = sig_fd, .events = POLLIN },
			{ .fd = stop_fd, .events = POLLIN },
			{ .fd = watch ? tun_link_watch_fd(watch) : -1, .events = POLLIN },
		};

		if (poll(pfd, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[0].revents) {
			log_info("Shutting down");
			break;
		}
		if (pfd[1].revents)
			break;
		if (pfd[2].revents && tun_link_watch_gone(watch)) {
			log_info("TUN device deleted; shutting down");
			break;
		}
	}
	notify_send("STOPPING=1\n");
	ret = 0;
out:
	tell_parent(ready_fd, 1);
	if (uapi)
		wg_uapi_server_stop(uapi);
	if (dev) {
		wg_device_stop(dev);
		wg_device_free(dev);
	}
	if (watch)
		tun_link_watch_free(watch);
	return ret;
}
