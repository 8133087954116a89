/* The listener behind `weftd --metrics`: a small HTTP/1.0 responder that
 * answers GET /metrics with Prometheus text exposition, several clients at
 * once with a deadline each, on its own thread, so a slow or hostile
 * scraper costs the data path and the other scrapers nothing. */
#ifndef WEFT_DAEMON_METRICS_HTTP_H
#define WEFT_DAEMON_METRICS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

enum {
	METRICS_HTTP_MAX_REQUEST = 4096, /* request line and headers, bytes */
	METRICS_HTTP_TIMEOUT_MS = 5000,  /* to read a request, and to write a reply */
	METRICS_HTTP_DEFAULT_PORT = 9586, /* the WireGuard exporters' port */
	METRICS_HTTP_MAX_CLIENTS = 16,   /* served at once; more wait in the backlog */
};

/* What a request asks for, once its headers are complete. */
enum metrics_http_verdict {
	METRICS_HTTP_INCOMPLETE = 0, /* no end of headers yet: read more */
	METRICS_HTTP_METRICS,        /* GET /metrics */
	METRICS_HTTP_METRICS_HEAD,   /* HEAD /metrics */
	METRICS_HTTP_INDEX,          /* GET or HEAD /: a pointer to /metrics */
	METRICS_HTTP_BAD_REQUEST,    /* 400: not an HTTP/1.x request line */
	METRICS_HTTP_NOT_FOUND,      /* 404 */
	METRICS_HTTP_BAD_METHOD,     /* 405: anything but GET and HEAD */
	METRICS_HTTP_TOO_LARGE,      /* 431: no end of headers within the limit */
};

/* Reads the first len bytes of a request (untrusted: never past len, no NUL
 * needed). The fuzzable core of the responder. */
enum metrics_http_verdict metrics_http_parse(const char *buf, size_t len);

/* Parses a listen address: "PORT", "IPv4:PORT" or "[IPv6]:PORT" (numeric
 * only; a bare port means 127.0.0.1). *loopback tells whether the address
 * is a loopback one (127/8, ::1, ::ffff:127/104). 0 or -EINVAL with *why. */
int metrics_http_parse_addr(const char *spec, struct sockaddr_storage *ss, socklen_t *len,
			    bool *loopback, const char **why);

/* Renders the exposition: malloc'd text (NUL-terminated, not counted). 0 or
 * -errno. Called on the responder thread. */
typedef int (*metrics_http_render_fn)(void *ctx, char **text, size_t *len);

struct metrics_http;

/* Binds and listens on addr, then serves on a new thread until stopped;
 * timeout_ms bounds reading a request and writing a reply (0:
 * METRICS_HTTP_TIMEOUT_MS). NULL with *err = -errno on failure
 * (-EADDRINUSE, -EACCES...). */
struct metrics_http *metrics_http_start(const struct sockaddr *addr, socklen_t len,
					metrics_http_render_fn render, void *ctx,
					unsigned int timeout_ms, int *err);
/* The port bound (useful with port 0). */
unsigned int metrics_http_port(const struct metrics_http *h);
/* Wakes the thread, waits for it, closes every connection and the socket.
 * NULL is fine. */
void metrics_http_stop(struct metrics_http *h);

#endif
