/* The metrics listener: HTTP/1.0, GET /metrics only, up to
 * METRICS_HTTP_MAX_CLIENTS clients at once on one thread.
 *
 * Security model: whoever can reach the listening address may send
 * anything. A request is read into a fixed buffer of
 * METRICS_HTTP_MAX_REQUEST bytes, parsed only up to what was received, and
 * must be complete within METRICS_HTTP_TIMEOUT_MS from its accept; the
 * reply must leave within the same time, and what the client sends after
 * its request is read and thrown away for at most a second. Only the
 * request line is looked at; headers are skipped, bodies never parsed. So
 * a client costs at most one slot for eleven seconds, and never a lock the
 * data path takes for longer than one `wg show` would (the render
 * callback); each connection has its own deadlines, so an idle one delays
 * no other scrape. With every slot taken, further clients wait in the
 * listen backlog. By default the listener is on loopback only (weftd
 * refuses other addresses without --metrics-public). */
#include "daemon/metrics_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "text/text.h"
#include "wg/log.h"

/* Every way a request ends, with its own counter. */
#define METRICS_HTTP_OUTCOMES(X)                                          \
	X(ok, "200")             /* metrics (or the index) sent */          \
	X(bad_request, "400")                                               \
	X(not_found, "404")                                                 \
	X(bad_method, "405")                                                \
	X(too_large, "431")                                                 \
	X(render_failed, "500")  /* the exposition could not be built */    \
	X(timeout, "timeout")    /* request or reply not done in time */    \
	X(closed, "closed")      /* the client left before a full request */ \
	X(io_error, "io_error")  /* the socket failed */

enum outcome {
#define OUTCOME_ENUM(name, label) OUT_##name,
	METRICS_HTTP_OUTCOMES(OUTCOME_ENUM)
#undef OUTCOME_ENUM
	OUT_COUNT
};

static const char *const outcome_label[OUT_COUNT] = {
#define OUTCOME_LABEL(name, label) label,
	METRICS_HTTP_OUTCOMES(OUTCOME_LABEL)
#undef OUTCOME_LABEL
};

enum { LINGER_MS = 1000, LINGER_BYTES = 256 * 1024 };

/* A client: reading its request, writing the reply, or lingering (reading
 * what it still sends after the reply, see conn_done). */
enum conn_phase { CONN_FREE, CONN_READ, CONN_WRITE, CONN_LINGER };

struct conn {
	int fd;
	enum conn_phase phase;
	int64_t deadline;   /* CLOCK_MONOTONIC ms: the phase ends by then */
	size_t got;         /* request bytes read; lingering: bytes thrown away */
	char *out;          /* the reply, header and body */
	size_t out_len, out_off;
	enum outcome outcome; /* the reply's, counted once it is sent */
	char req[METRICS_HTTP_MAX_REQUEST];
};

/* Owned by the responder thread but for stop_fd (written by stop). The
 * counters are written and read by that thread only. */
struct metrics_http {
	int fd;
	int stop_fd;
	unsigned int port;
	pthread_t thread;
	metrics_http_render_fn render;
	void *ctx;
	int64_t timeout_ms;   /* METRICS_HTTP_TIMEOUT_MS but in tests */
	int64_t accept_after; /* after EMFILE and the like: accept again then */
	uint64_t outcomes[OUT_COUNT];
	struct conn conns[METRICS_HTTP_MAX_CLIENTS];
};

/* ---- parsing ------------------------------------------------------------ */

static const char *find_end_of_headers(const char *buf, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i + 1] == '\n')
			return buf + i + 2;
		if (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n')
			return buf + i + 3;
	}
	return NULL;
}

static bool is_tchar(char c)
{
	/* c != 0: strchr finds the terminator of its string too. */
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

enum metrics_http_verdict metrics_http_parse(const char *buf, size_t len)
{
	const char *end, *line_end, *sp1, *sp2, *path_end;
	size_t mlen, plen, vlen;
	bool get, head;

	end = find_end_of_headers(buf, len);
	if (!end)
		return len >= METRICS_HTTP_MAX_REQUEST ? METRICS_HTTP_TOO_LARGE
						       : METRICS_HTTP_INCOMPLETE;
	line_end = memchr(buf, '\n', (size_t)(end - buf));
	if (line_end > buf && line_end[-1] == '\r')
		line_end--;
	/* METHOD SP TARGET SP HTTP/1.x, nothing else on the line. */
	sp1 = memchr(buf, ' ', (size_t)(line_end - buf));
	if (!sp1 || sp1 == buf)
		return METRICS_HTTP_BAD_REQUEST;
	sp2 = memchr(sp1 + 1, ' ', (size_t)(line_end - sp1 - 1));
	if (!sp2 || sp2 == sp1 + 1)
		return METRICS_HTTP_BAD_REQUEST;
	mlen = (size_t)(sp1 - buf);
	plen = (size_t)(sp2 - sp1 - 1);
	vlen = (size_t)(line_end - sp2 - 1);
	for (size_t i = 0; i < mlen; i++)
		if (!is_tchar(buf[i]))
			return METRICS_HTTP_BAD_REQUEST;
	for (size_t i = 0; i < plen; i++)
		if ((unsigned char)sp1[1 + i] <= ' ' || sp1[1 + i] == 0x7f)
			return METRICS_HTTP_BAD_REQUEST;
	if (vlen != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) || sp2[8] < '0' || sp2[8] > '9')
		return METRICS_HTTP_BAD_REQUEST;
	get = mlen == 3 && !memcmp(buf, "GET", 3);
	head = mlen == 4 && !memcmp(buf, "HEAD", 4);
	if (!get && !head)
		return METRICS_HTTP_BAD_METHOD;
	/* The query string, if any, is ignored (Prometheus sends none). */
	path_end = memchr(sp1 + 1, '?', plen);
	if (path_end)
		plen = (size_t)(path_end - sp1 - 1);
	if (plen == 8 && !memcmp(sp1 + 1, "/metrics", 8))
		return get ? METRICS_HTTP_METRICS : METRICS_HTTP_METRICS_HEAD;
	if (plen == 1 && sp1[1] == '/')
		return METRICS_HTTP_INDEX;
	return METRICS_HTTP_NOT_FOUND;
}

static int parse_port(const char *s, uint16_t *port)
{
	unsigned long v = 0;

	if (!*s || strlen(s) > 5)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v < 1 || v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

int metrics_http_parse_addr(const char *spec, struct sockaddr_storage *ss, socklen_t *len,
			    bool *loopback, const char **why)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *port_s;
	uint16_t port;
	size_t hlen;

	memset(ss, 0, sizeof(*ss));
	*why = "expected PORT, IPv4:PORT or [IPv6]:PORT";
	colon = strrchr(spec, ':');
	if (!colon) {
		/* A bare port: loopback, the safe default. */
		if (parse_port(spec, &port))
			return -EINVAL;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*len = sizeof(*sin);
		*loopback = true;
		return 0;
	}
	port_s = colon + 1;
	if (parse_port(port_s, &port)) {
		*why = "the port must be 1 to 65535";
		return -EINVAL;
	}
	hlen = (size_t)(colon - spec);
	if (hlen >= sizeof(host) || hlen == 0)
		return -EINVAL;
	memcpy(host, spec, hlen);
	host[hlen] = '\0';
	if (host[0] == '[') {
		if (hlen < 3 || host[hlen - 1] != ']')
			return -EINVAL;
		host[hlen - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &sin6->sin6_addr) != 1) {
			*why = "not a numeric IPv6 address";
			return -EINVAL;
		}
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		*len = sizeof(*sin6);
		*loopback = IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr) ||
			    (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr) &&
			     sin6->sin6_addr.s6_addr[12] == 127);
		return 0;
	}
	if (strchr(host, ':')) {
		*why = "an IPv6 address goes in brackets: [::1]:PORT";
		return -EINVAL;
	}
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1) {
		*why = "not a numeric IPv4 address";
		return -EINVAL;
	}
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	*len = sizeof(*sin);
	*loopback = (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
	return 0;
}

/* ---- serving ------------------------------------------------------------ */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The listener's own counters, appended to every scrape. */
static void append_own(struct metrics_http *h, struct text_buf *b)
{
	static const char family[] =
		"# HELP weft_metrics_requests_total Requests to the metrics listener by outcome "
		"(an HTTP status, timeout, closed or io_error), before this one.\n"
		"# TYPE weft_metrics_requests_total counter\n";

	text_buf_add(b, family, sizeof(family) - 1);
	for (int i = 0; i < OUT_COUNT; i++)
		text_buf_printf(b, "weft_metrics_requests_total{outcome=\"%s\"} %llu\n",
				outcome_label[i], (unsigned long long)h->outcomes[i]);
}

/* The whole reply to v, header and body, into c->out; c->outcome says
 * what it is. A reply that cannot be allocated ends the connection. */
static void build_reply(struct metrics_http *h, struct conn *c, enum metrics_http_verdict v)
{
	static const char index_body[] =
		"<html><head><title>weftd</title></head><body>"
		"<a href=\"/metrics\">/metrics</a></body></html>\n";
	const char *status = "200 OK", *type = "text/plain; version=0.0.4; charset=utf-8";
	const char *extra = "", *fixed = NULL;
	char *body = NULL, *text = NULL, line[64];
	size_t body_len = 0, text_len = 0;
	bool head = v == METRICS_HTTP_METRICS_HEAD;
	struct text_buf b = { 0 };

	c->outcome = OUT_ok;
	switch (v) {
	case METRICS_HTTP_METRICS:
	case METRICS_HTTP_METRICS_HEAD:
		if (!h->render(h->ctx, &text, &text_len)) {
			text_buf_add(&b, text, text_len);
			free(text);
			append_own(h, &b);
			if (!text_buf_finish(&b, &body, &body_len))
				break;
			body = NULL;
			body_len = 0;
		}
		status = "500 Internal Server Error";
		type = "text/plain";
		c->outcome = OUT_render_failed;
		break;
	case METRICS_HTTP_INDEX:
		type = "text/html";
		fixed = index_body;
		break;
	case METRICS_HTTP_NOT_FOUND:
		status = "404 Not Found";
		type = "text/plain";
		c->outcome = OUT_not_found;
		break;
	case METRICS_HTTP_BAD_METHOD:
		status = "405 Method Not Allowed";
		type = "text/plain";
		extra = "Allow: GET, HEAD\r\n";
		c->outcome = OUT_bad_method;
		break;
	case METRICS_HTTP_TOO_LARGE:
		status = "431 Request Header Fields Too Large";
		type = "text/plain";
		c->outcome = OUT_too_large;
		break;
	case METRICS_HTTP_BAD_REQUEST:
	case METRICS_HTTP_INCOMPLETE:
		status = "400 Bad Request";
		type = "text/plain";
		c->outcome = OUT_bad_request;
		break;
	}
	if (!body && !fixed) {
		/* Errors carry their status line as the body. */
		snprintf(line, sizeof(line), "%s\n", status);
		fixed = line;
	}
	if (fixed)
		body_len = strlen(fixed);
	text_buf_printf(&b, "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
			    "Connection: close\r\n\r\n",
			status, type, body_len, extra);
	if (!head)
		text_buf_add(&b, body ? body : fixed, body_len);
	free(body);
	if (text_buf_finish(&b, &c->out, &c->out_len)) {
		c->out = NULL;
		c->outcome = OUT_io_error;
	}
	c->out_off = 0;
}

/* A connection's request ends (or fails) with out: counted, and the
 * connection lingers (see linger) or closes. */
static void conn_done(struct metrics_http *h, struct conn *c, enum outcome out)
{
	h->outcomes[out]++;
	if (out != OUT_ok)
		log_ratelimited(WG_LOG_VERBOSE, "metrics listener: request ended: %s",
				outcome_label[out]);
	free(c->out);
	c->out = NULL;
	if (out == OUT_closed || out == OUT_io_error) {
		close(c->fd);
		c->phase = CONN_FREE;
		return;
	}
	/* The reply ends with a FIN; what the client still sends (a body, the
	 * rest of an oversized request) is read until it closes too: closing
	 * with unread input would reset the connection and could cost the
	 * client the reply. Bounded: LINGER_MS and LINGER_BYTES. */
	shutdown(c->fd, SHUT_WR);
	c->phase = CONN_LINGER;
	c->deadline = now_ms() + LINGER_MS;
	c->got = 0;
}

static void conn_read(struct metrics_http *h, struct conn *c)
{
	enum metrics_http_verdict v = METRICS_HTTP_INCOMPLETE;

	while (v == METRICS_HTTP_INCOMPLETE) {
		ssize_t n = recv(c->fd, c->req + c->got, sizeof(c->req) - c->got, MSG_DONTWAIT);

		if (n > 0) {
			c->got += (size_t)n;
			v = metrics_http_parse(c->req, c->got);
			continue;
		}
		if (n == 0)
			conn_done(h, c, OUT_closed);
		else if (errno != EAGAIN && errno != EINTR)
			conn_done(h, c, OUT_io_error);
		return;
	}
	build_reply(h, c, v);
	if (!c->out) {
		conn_done(h, c, OUT_io_error);
		return;
	}
	c->phase = CONN_WRITE;
	c->deadline = now_ms() + h->timeout_ms;
}

static void conn_write(struct metrics_http *h, struct conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			c->out_off += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			conn_done(h, c, OUT_io_error);
		return;
	}
	conn_done(h, c, c->outcome);
}

static void conn_linger(struct conn *c)
{
	char sink[4096];

	while (c->got < LINGER_BYTES) {
		ssize_t n = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);

		if (n > 0) {
			c->got += (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		break;
	}
	close(c->fd);
	c->phase = CONN_FREE;
}

/* A deadline passed: a request or a reply not done in time is a timeout;
 * a lingering connection just closes. */
static void conn_expired(struct metrics_http *h, struct conn *c)
{
	if (c->phase == CONN_LINGER) {
		close(c->fd);
		c->phase = CONN_FREE;
		return;
	}
	free(c->out);
	c->out = NULL;
	h->outcomes[OUT_timeout]++;
	log_ratelimited(WG_LOG_VERBOSE, "metrics listener: request ended: timeout");
	close(c->fd);
	c->phase = CONN_FREE;
}

static void accept_clients(struct metrics_http *h)
{
	for (size_t i = 0; i < METRICS_HTTP_MAX_CLIENTS; i++) {
		struct conn *c = &h->conns[i];
		int fd;

		if (c->phase != CONN_FREE)
			continue;
		fd = accept4(h->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				/* Out of descriptors: the client stays in the
				 * backlog; tried again shortly, not in a loop. */
				log_ratelimited(WG_LOG_ERROR, "metrics listener: accept: %s",
						strerror(errno));
				h->accept_after = now_ms() + 100;
			}
			return;
		}
		*c = (struct conn){ .fd = fd, .phase = CONN_READ,
				    .deadline = now_ms() + h->timeout_ms };
	}
}

/* One thread, every client a state machine with deadlines of its own, so a
 * slow or silent client delays nobody else. With every slot taken, new
 * clients wait in the listen backlog. */
static void *responder(void *arg)
{
	struct metrics_http *h = arg;
	struct pollfd p[2 + METRICS_HTTP_MAX_CLIENTS];
	struct conn *of[2 + METRICS_HTTP_MAX_CLIENTS];

	for (;;) {
		int64_t now = now_ms(), next = -1;
		size_t n = 0, busy = 0;
		int ready, timeout;

		p[n++] = (struct pollfd){ .fd = h->stop_fd, .events = POLLIN };
		for (size_t i = 0; i < METRICS_HTTP_MAX_CLIENTS; i++) {
			struct conn *c = &h->conns[i];

			if (c->phase == CONN_FREE)
				continue;
			busy++;
			if (c->deadline <= now) {
				conn_expired(h, c);
				busy--;
				continue;
			}
			if (next < 0 || c->deadline < next)
				next = c->deadline;
			of[n] = c;
			p[n++] = (struct pollfd){ .fd = c->fd,
						  .events = c->phase == CONN_WRITE ? POLLOUT : POLLIN };
		}
		if (busy < METRICS_HTTP_MAX_CLIENTS && now >= h->accept_after) {
			of[n] = NULL;
			p[n++] = (struct pollfd){ .fd = h->fd, .events = POLLIN };
		} else if (busy < METRICS_HTTP_MAX_CLIENTS &&
			   (next < 0 || h->accept_after < next)) {
			next = h->accept_after;
		}
		timeout = next < 0 ? -1 : (int)(next > now ? next - now : 0);
		ready = poll(p, n, timeout);
		if (ready < 0) {
			if (errno == EINTR)
				continue;
			log_error("metrics listener: poll: %s", strerror(errno));
			break;
		}
		if (p[0].revents)
			break;
		for (size_t i = 1; i < n && ready > 0; i++) {
			struct conn *c = of[i];

			if (!p[i].revents)
				continue;
			if (!c)
				accept_clients(h);
			else if (c->phase == CONN_READ)
				conn_read(h, c);
			else if (c->phase == CONN_WRITE)
				conn_write(h, c);
			else
				conn_linger(c);
		}
	}
	for (size_t i = 0; i < METRICS_HTTP_MAX_CLIENTS; i++) {
		if (h->conns[i].phase == CONN_FREE)
			continue;
		free(h->conns[i].out);
		close(h->conns[i].fd);
	}
	return NULL;
}

struct metrics_http *metrics_http_start(const struct sockaddr *addr, socklen_t len,
					metrics_http_render_fn render, void *ctx,
					unsigned int timeout_ms, int *err)
{
	struct metrics_http *h = calloc(1, sizeof(*h));
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	int one = 1, e;

	if (!h) {
		*err = -ENOMEM;
		return NULL;
	}
	h->fd = -1;
	h->render = render;
	h->ctx = ctx;
	h->timeout_ms = timeout_ms ? timeout_ms : METRICS_HTTP_TIMEOUT_MS;
	h->stop_fd = eventfd(0, EFD_CLOEXEC);
	h->fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (h->stop_fd < 0 || h->fd < 0)
		goto fail;
	setsockopt(h->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (addr->sa_family == AF_INET6)
		setsockopt(h->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(h->fd, addr, len) < 0 || listen(h->fd, 16) < 0)
		goto fail;
	if (getsockname(h->fd, (struct sockaddr *)&bound, &blen) == 0)
		h->port = ntohs(bound.ss_family == AF_INET6
					? ((struct sockaddr_in6 *)&bound)->sin6_port
					: ((struct sockaddr_in *)&bound)->sin_port);
	if ((e = pthread_create(&h->thread, NULL, responder, h))) {
		errno = e;
		goto fail;
	}
	return h;
fail:
	*err = errno ? -errno : -EIO;
	if (h->fd >= 0)
		close(h->fd);
	if (h->stop_fd >= 0)
		close(h->stop_fd);
	free(h);
	return NULL;
}

unsigned int metrics_http_port(const struct metrics_http *h)
{
	return h->port;
}

void metrics_http_stop(struct metrics_http *h)
{
	uint64_t one = 1;

	if (!h)
		return;
	if (write(h->stop_fd, &one, sizeof(one)) != sizeof(one))
		log_error("metrics listener: cannot wake its thread: %s", strerror(errno));
	pthread_join(h->thread, NULL);
	close(h->fd);
	close(h->stop_fd);
	free(h);
}
