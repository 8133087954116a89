/* The UAPI socket server (daemon/uapi_server.h), answering the way
 * wireguard-go does (ipc/uapi_linux.go); requests are parsed and replies
 * formatted by wg/uapi.c.
 *
 * Security model: the socket is root-only (mode 0600 in a 0755 directory), but
 * a client may still be a buggy or hostile program, so every byte of a request
 * is untrusted. Lines and whole requests are bounded, and buffers that held
 * key material are wiped. A slow client holds only its own thread. */
#include "daemon/uapi_server.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
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

#include "text/text.h"
#include "wg/log.h"

/* ---- the socket server ------------------------------------------------- */

enum client_state { CLIENT_FREE, CLIENT_RUNNING, CLIENT_DONE };

struct uapi_client {
	struct uapi_server *server; /* immutable while the slot is in use */
	pthread_t thread;
	int fd;                        /* guarded by server->lock */
	enum client_state state;       /* guarded by server->lock */
};

struct uapi_server {
	/* Immutable after uapi_server_start. */
	const struct uapi_server_ops *ops;
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

static void wake(struct uapi_server *s)
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
static int serve_get(struct uapi_server *s, struct conn *c)
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

static int serve_stats(struct uapi_server *s, struct conn *c)
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

static int serve_set(struct uapi_server *s, struct conn *c)
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

	ret = wg_uapi_parse_set_why((const uint8_t *)body.p, body.len, &cfg, &why);
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
static int serve_command(struct uapi_server *s, struct conn *c)
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
	int (*serve)(struct uapi_server *s, struct conn *c);
	bool prefix;
} uapi_ops[] = {
	{ "get=1\n", serve_get, false },
	{ "set=1\n", serve_set, false },
	{ "stats=1\n", serve_stats, false },
	{ "weft=", serve_command, true },
};

static bool op_matches(const struct uapi_server *s, const struct uapi_op *op, const char *line,
		       size_t n)
{
	char verb[WG_UAPI_MAX_VERB + 1];

	/* The one prefix is "weft=", served only when the daemon has commands. */
	if (op->prefix)
		return s->ops->command && command_verb(line, n, verb);
	return n == strlen(op->line) && !memcmp(line, op->line, n);
}

static void serve_connection(struct uapi_server *s, struct conn *c)
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
	struct uapi_server *s = cl->server;
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
static int reap_clients(struct uapi_server *s)
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

static void start_client(struct uapi_server *s, int slot, int fd)
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
static bool socket_gone(const struct uapi_server *s)
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
	struct uapi_server *s = arg;
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

/* Who accepts connections on addr: the pid of a live daemon (SO_PEERCRED),
 * -1 when one answers but its pid is unknown (a full backlog), 0 when
 * nothing does (no socket, or a stale one). */
static pid_t socket_owner(const struct sockaddr_un *addr)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct ucred cred;
	socklen_t len = sizeof(cred);
	pid_t pid = 0;

	if (fd < 0)
		return 0;
	if (!connect(fd, (const struct sockaddr *)addr, sizeof(*addr)))
		pid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) || cred.pid <= 0 ? -1
											   : cred.pid;
	else if (errno == EAGAIN)
		pid = -1;
	close(fd);
	return pid;
}

pid_t uapi_server_owner(const char *dir, const char *ifname)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int n = snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s.sock",
			 dir ? dir : WG_UAPI_DEFAULT_DIR, ifname);

	if (n < 0 || (size_t)n >= sizeof(addr.sun_path))
		return 0;
	return socket_owner(&addr);
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
		if (socket_owner(&addr))
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

struct uapi_server *uapi_server_start(const char *dir, const char *ifname,
				      const struct uapi_server_ops *ops, void *ctx)
{
	struct uapi_server *s = NULL;
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

void uapi_server_stop(struct uapi_server *s)
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
