/* The UAPI socket server against fake device callbacks that record their
 * calls: file modes, get/set/stats over a real connection, errno replies,
 * concurrency and the client limit, socket removal, a second daemon. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "daemon/uapi_server.h"
#include "wg/uapi.h"

#define CHECK(cond)                                                                 \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, \
				#cond);                                             \
			exit(1);                                                    \
		}                                                                   \
	} while (0)

struct fake {
	pthread_mutex_t lock;
	int n_get, n_set, n_stats;
	int set_ret;
	uint16_t last_port;
	size_t last_peers;
	sem_t gone;
};

static void fake_snapshot(struct wg_device_config *cfg)
{
	struct wg_peer_config *p;
	struct wg_allowed_ip *ip;

	memset(cfg->private_key, 0x11, WG_KEY_LEN);
	cfg->has_private_key = true;
	cfg->listen_port = 51820;
	cfg->has_listen_port = true;
	p = wg_config_add_peer(cfg);
	CHECK(p);
	memset(p->public_key, 0x22, WG_KEY_LEN);
	p->has_endpoint = true;
	p->endpoint.in4.sin_family = AF_INET;
	p->endpoint.in4.sin_port = htons(1234);
	p->endpoint.in4.sin_addr.s_addr = htonl(0x7f000001);
	p->rx_bytes = 42;
	ip = wg_config_add_allowed_ip(p);
	CHECK(ip);
	ip->prefix = (struct ip_prefix){ .family = AF_INET, .cidr = 24, .addr = { 10 } };
}

static int fake_get(void *ctx, struct wg_device_config *cfg)
{
	struct fake *f = ctx;

	pthread_mutex_lock(&f->lock);
	f->n_get++;
	pthread_mutex_unlock(&f->lock);
	fake_snapshot(cfg);
	return 0;
}

static int fake_set(void *ctx, const struct wg_device_config *cfg)
{
	struct fake *f = ctx;
	int ret;

	pthread_mutex_lock(&f->lock);
	f->n_set++;
	f->last_port = cfg->listen_port;
	f->last_peers = cfg->n_peers;
	ret = f->set_ret;
	pthread_mutex_unlock(&f->lock);
	return ret;
}

static int fake_stats(void *ctx, char **text, size_t *len)
{
	struct fake *f = ctx;

	pthread_mutex_lock(&f->lock);
	f->n_stats++;
	pthread_mutex_unlock(&f->lock);
	*text = strdup("rx_packets=1\ntx_packets=2");
	CHECK(*text);
	*len = strlen(*text);
	return 0;
}

static void fake_gone(void *ctx)
{
	struct fake *f = ctx;

	sem_post(&f->gone);
}

static const struct uapi_server_ops fake_ops = {
	.get = fake_get,
	.set = fake_set,
	.stats = fake_stats,
	.gone = fake_gone,
};

static int counter(struct fake *f, int *field)
{
	int v;

	pthread_mutex_lock(&f->lock);
	v = *field;
	pthread_mutex_unlock(&f->lock);
	return v;
}

static char sock_dir[64], sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

static int dial(void)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0);
	memcpy(addr.sun_path, sock_path, sizeof(addr.sun_path));
	CHECK(connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0);
	return fd;
}

static void send_str(int fd, const char *s)
{
	size_t len = strlen(s);

	CHECK(send(fd, s, len, MSG_NOSIGNAL) == (ssize_t)len);
}

/* Reads one reply: everything up to and including the first empty line. Returns
 * a malloc'd string; "" with *eof set when the server closed first. */
static char *read_reply(int fd, bool *eof)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	ssize_t n;

	CHECK(buf);
	*eof = false;
	for (;;) {
		if (len + 1 == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			CHECK(buf);
		}
		n = read(fd, buf + len, 1);
		CHECK(n >= 0);
		if (n == 0) {
			*eof = true;
			break;
		}
		len++;
		if (len >= 2 && buf[len - 1] == '\n' && buf[len - 2] == '\n')
			break;
	}
	buf[len] = '\0';
	return buf;
}

static void expect_reply(int fd, const char *want)
{
	bool eof;
	char *got = read_reply(fd, &eof);

	if (strcmp(got, want)) {
		fprintf(stderr, "reply:\n%s\nwanted:\n%s\n", got, want);
		CHECK(!"unexpected reply");
	}
	free(got);
}

static void expect_eof(int fd)
{
	char c;

	CHECK(read(fd, &c, 1) == 0);
}

static char *expected_get(void)
{
	struct wg_device_config cfg = { 0 };
	char *text;
	size_t len;

	fake_snapshot(&cfg);
	CHECK(wg_uapi_format_get(&cfg, &text, &len) == 0);
	wg_config_clear(&cfg);
	return text;
}

static struct uapi_server *start(struct fake *f)
{
	struct uapi_server *s = uapi_server_start(sock_dir, "wgtest0", &fake_ops, f);

	if (!s)
		fprintf(stderr, "uapi_server_start: %s\n", strerror(errno));
	CHECK(s);
	return s;
}

static void test_modes(struct fake *f)
{
	struct uapi_server *s = start(f);
	struct stat st;

	CHECK(stat(sock_dir, &st) == 0 && S_ISDIR(st.st_mode));
	CHECK((st.st_mode & 07777) == 0755);
	CHECK(lstat(sock_path, &st) == 0 && S_ISSOCK(st.st_mode));
	/* Owner read/write only: srw------- . */
	CHECK((st.st_mode & 07777) == 0600);
	/* The umask is restored afterwards. */
	CHECK(umask(022) == 022);
	uapi_server_stop(s);
	CHECK(lstat(sock_path, &st) < 0 && errno == ENOENT);
}

static void test_requests(struct fake *f)
{
	struct uapi_server *s = start(f);
	char *want = expected_get(), big[6000];
	int fd, sets;

	/* get, set, stats and get again on one connection. */
	fd = dial();
	send_str(fd, "get=1\n\n");
	expect_reply(fd, want);
	send_str(fd, "set=1\nlisten_port=12345\npublic_key=" "0123456789abcdef0123456789abcdef"
		     "0123456789abcdef0123456789abcdef" "\nallowed_ip=10.0.0.0/8\n\n");
	expect_reply(fd, "errno=0\n\n");
	CHECK(counter(f, &f->n_set) == 1);
	pthread_mutex_lock(&f->lock);
	CHECK(f->last_port == 12345 && f->last_peers == 1);
	pthread_mutex_unlock(&f->lock);
	send_str(fd, "stats=1\n\n");
	expect_reply(fd, "rx_packets=1\ntx_packets=2\nerrno=0\n\n");
	send_str(fd, "get=1\n\nget=1\n\n"); /* pipelined */
	expect_reply(fd, want);
	expect_reply(fd, want);
	CHECK(counter(f, &f->n_get) == 3 && counter(f, &f->n_stats) == 1);

	/* Malformed sets: wireguard-go's codes, the set op is not called, and
	 * the connection goes on. */
	sets = counter(f, &f->n_set);
	send_str(fd, "set=1\nlisten_port=abc\n\n");
	expect_reply(fd, "errno=-22\n\n");
	send_str(fd, "set=1\nnoequals\n\n");
	expect_reply(fd, "errno=-71\n\n");
	send_str(fd, "set=1\npublic_key=00\n\n");
	expect_reply(fd, "errno=-22\n\n");
	send_str(fd, "set=1\nendpoint=1.2.3.4:5\n\n");
	expect_reply(fd, "errno=-22\n\n");
	CHECK(counter(f, &f->n_set) == sets);
	send_str(fd, "get=1\n\n");
	expect_reply(fd, want);

	/* The device's own error goes back as a negative errno. */
	pthread_mutex_lock(&f->lock);
	f->set_ret = -EADDRINUSE;
	pthread_mutex_unlock(&f->lock);
	send_str(fd, "set=1\nlisten_port=1\n\n");
	expect_reply(fd, "errno=-98\n\n");
	pthread_mutex_lock(&f->lock);
	f->set_ret = 0;
	pthread_mutex_unlock(&f->lock);
	CHECK(counter(f, &f->n_set) == sets + 1);
	close(fd);

	/* An unknown operation: an errno reply, then the server hangs up. */
	fd = dial();
	send_str(fd, "foo=1\n\n");
	expect_reply(fd, "errno=-22\n\n");
	expect_eof(fd);
	close(fd);

	/* A character after "get=1\n": wireguard-go's -EINVAL. */
	fd = dial();
	send_str(fd, "get=1\nx");
	expect_reply(fd, "errno=-22\n\n");
	close(fd);

	/* A line longer than WG_UAPI_MAX_LINE: refused, nothing applied. */
	sets = counter(f, &f->n_set);
	fd = dial();
	memset(big, 'a', sizeof(big));
	memcpy(big, "set=1\nfwmark=", 13);
	memcpy(big + sizeof(big) - 3, "\n\n", 3);
	send_str(fd, big);
	expect_reply(fd, "errno=-5\n\n");
	expect_eof(fd);
	close(fd);
	CHECK(counter(f, &f->n_set) == sets);

	/* Connect and hang up, as `wg show` does when it lists interfaces; a set
	 * cut by EOF applies what came, as wireguard-go's scanner does. */
	close(dial());
	fd = dial();
	send_str(fd, "set=1\nlisten_port=777\n");
	CHECK(shutdown(fd, SHUT_WR) == 0);
	expect_reply(fd, "errno=0\n\n");
	expect_eof(fd);
	close(fd);
	CHECK(counter(f, &f->n_set) == sets + 1);
	pthread_mutex_lock(&f->lock);
	CHECK(f->last_port == 777);
	pthread_mutex_unlock(&f->lock);

	/* A client still connected when the server stops does not hold it up. */
	fd = dial();
	uapi_server_stop(s);
	{
		/* EOF once served; a reset when it was still in the backlog. */
		char c;
		ssize_t n = read(fd, &c, 1);

		CHECK(n == 0 || (n < 0 && errno == ECONNRESET));
	}
	close(fd);
	free(want);
}

struct worker {
	pthread_t thread;
	pthread_barrier_t *barrier;
	const char *want;
	int id;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char req[64];
	int fd = dial();

	/* All connected before anyone asks. */
	pthread_barrier_wait(w->barrier);
	send_str(fd, "get=1\n\n");
	expect_reply(fd, w->want);
	snprintf(req, sizeof(req), "set=1\nlisten_port=%d\n\n", 1000 + w->id);
	send_str(fd, req);
	expect_reply(fd, "errno=0\n\n");
	close(fd);
	return NULL;
}

static void test_concurrent(struct fake *f)
{
	enum { N = 16 };
	struct uapi_server *s = start(f);
	struct worker w[N];
	pthread_barrier_t barrier;
	char *want = expected_get();
	int i, gets = counter(f, &f->n_get), sets = counter(f, &f->n_set);

	pthread_barrier_init(&barrier, NULL, N);
	for (i = 0; i < N; i++) {
		w[i] = (struct worker){ .barrier = &barrier, .want = want, .id = i };
		CHECK(pthread_create(&w[i].thread, NULL, worker_main, &w[i]) == 0);
	}
	for (i = 0; i < N; i++)
		pthread_join(w[i].thread, NULL);
	CHECK(counter(f, &f->n_get) == gets + N && counter(f, &f->n_set) == sets + N);
	pthread_barrier_destroy(&barrier);
	free(want);
	uapi_server_stop(s);
}

/* Beyond WG_UAPI_MAX_CLIENTS, a client waits for a slot instead of being
 * refused or starving the others. */
static void test_client_limit(struct fake *f)
{
	struct uapi_server *s = start(f);
	int idle[WG_UAPI_MAX_CLIENTS], fd, i;
	char *want = expected_get();
	struct pollfd pfd;

	for (i = 0; i < WG_UAPI_MAX_CLIENTS; i++)
		idle[i] = dial();
	/* The kernel queues this one behind the others. */
	fd = dial();
	send_str(fd, "get=1\n\n");
	/* No answer while every slot is held (a wrong server could only be missed
	 * here, never a right one blamed). */
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	CHECK(poll(&pfd, 1, 200) == 0);
	close(idle[0]);
	expect_reply(fd, want);
	close(fd);
	for (i = 1; i < WG_UAPI_MAX_CLIENTS; i++)
		close(idle[i]);
	free(want);
	uapi_server_stop(s);
}

static void test_gone(struct fake *f)
{
	struct uapi_server *s = start(f);
	struct timespec deadline;

	CHECK(unlink(sock_path) == 0);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 30;
	CHECK(sem_timedwait(&f->gone, &deadline) == 0);
	uapi_server_stop(s);
}

static void test_second_daemon(struct fake *f)
{
	struct uapi_server *s = start(f), *t;
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char *want = expected_get();
	int fd;

	/* Someone answers on the socket: refused, and the first one keeps it. */
	errno = 0;
	t = uapi_server_start(sock_dir, "wgtest0", &fake_ops, f);
	CHECK(!t && errno == EADDRINUSE);
	fd = dial();
	send_str(fd, "get=1\n\n");
	expect_reply(fd, want);
	close(fd);
	uapi_server_stop(s);

	/* A stale socket file nobody listens on is replaced. */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	memcpy(addr.sun_path, sock_path, sizeof(addr.sun_path));
	CHECK(bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0);
	close(fd);
	s = start(f);
	fd = dial();
	send_str(fd, "get=1\n\n");
	expect_reply(fd, want);
	close(fd);
	uapi_server_stop(s);

	/* Bad names are refused before anything is created. */
	errno = 0;
	CHECK(!uapi_server_start(sock_dir, "a/b", &fake_ops, f) && errno == EINVAL);
	CHECK(!uapi_server_start(sock_dir, "", &fake_ops, f) && errno == EINVAL);
	free(want);
}

int main(void)
{
	char base[] = "/tmp/weft-uapi-XXXXXX";
	struct fake f = { .lock = PTHREAD_MUTEX_INITIALIZER };

	CHECK(sodium_init() >= 0);
	umask(022);
	CHECK(mkdtemp(base));
	/* A directory that does not exist yet: the server creates it. */
	snprintf(sock_dir, sizeof(sock_dir), "%s/run/wireguard", base);
	CHECK((size_t)snprintf(sock_path, sizeof(sock_path), "%s/wgtest0.sock", sock_dir) <
	      sizeof(sock_path));
	CHECK(sem_init(&f.gone, 0, 0) == 0);

	test_modes(&f);
	test_requests(&f);
	test_concurrent(&f);
	test_client_limit(&f);
	test_gone(&f);
	test_second_daemon(&f);

	rmdir(sock_dir);
	snprintf(sock_dir, sizeof(sock_dir), "%s/run", base);
	rmdir(sock_dir);
	rmdir(base);
	sem_destroy(&f.gone);
	puts("ok");
	return 0;
}
