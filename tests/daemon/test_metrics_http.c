/* The metrics listener: its request parser against a table of requests and
 * verdicts, listen addresses against known parses, then a live listener on
 * 127.0.0.1 with a fake exposition: every status, the own counters counting
 * each outcome, a request over the size limit, a client that leaves early,
 * a failing renderer, and a stop while a client stalls. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "daemon/metrics_http.h"

#define CHECK(cond)                                                                 \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, \
				#cond);                                             \
			exit(1);                                                    \
		}                                                                   \
	} while (0)

static void test_parse(void)
{
	static const struct {
		const char *req;
		enum metrics_http_verdict want;
	} cases[] = {
		{ "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", METRICS_HTTP_METRICS },
		{ "GET /metrics HTTP/1.0\n\n", METRICS_HTTP_METRICS },
		{ "GET /metrics?name[]=x HTTP/1.1\r\n\r\n", METRICS_HTTP_METRICS },
		{ "HEAD /metrics HTTP/1.1\r\n\r\n", METRICS_HTTP_METRICS_HEAD },
		{ "GET / HTTP/1.1\r\n\r\n", METRICS_HTTP_INDEX },
		{ "HEAD / HTTP/1.1\r\n\r\n", METRICS_HTTP_INDEX },
		{ "GET /metricsx HTTP/1.1\r\n\r\n", METRICS_HTTP_NOT_FOUND },
		{ "GET /metric HTTP/1.1\r\n\r\n", METRICS_HTTP_NOT_FOUND },
		{ "GET /../metrics HTTP/1.1\r\n\r\n", METRICS_HTTP_NOT_FOUND },
		{ "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\n", METRICS_HTTP_BAD_METHOD },
		{ "get /metrics HTTP/1.1\r\n\r\n", METRICS_HTTP_BAD_METHOD },
		{ "DELETE / HTTP/1.1\r\n\r\n", METRICS_HTTP_BAD_METHOD },
		{ "GET /metrics HTTP/2.0\r\n\r\n", METRICS_HTTP_BAD_REQUEST },
		{ "GET /metrics\r\n\r\n", METRICS_HTTP_BAD_REQUEST },
		{ "GET  /metrics HTTP/1.1\r\n\r\n", METRICS_HTTP_BAD_REQUEST },
		{ "GET /metrics HTTP/1.1 x\r\n\r\n", METRICS_HTTP_BAD_REQUEST },
		{ " GET /metrics HTTP/1.1\r\n\r\n", METRICS_HTTP_BAD_REQUEST },
		{ "G(T /metrics HTTP/1.1\r\n\r\n", METRICS_HTTP_BAD_REQUEST },
		{ "GET /me\x01trics HTTP/1.1\r\n\r\n", METRICS_HTTP_BAD_REQUEST },
		{ "\r\n\r\n", METRICS_HTTP_BAD_REQUEST },
		{ "GET /metrics HTTP/1.1\r\n", METRICS_HTTP_INCOMPLETE },
		{ "GET /metrics HTTP/1.1\r\nHost: x\r\n\r", METRICS_HTTP_INCOMPLETE },
		{ "GET /met", METRICS_HTTP_INCOMPLETE },
		{ "", METRICS_HTTP_INCOMPLETE },
	};
	char big[METRICS_HTTP_MAX_REQUEST + 8];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum metrics_http_verdict v = metrics_http_parse(cases[i].req, strlen(cases[i].req));

		if (v != cases[i].want) {
			fprintf(stderr, "case %zu (%s): verdict %d, expected %d\n", i, cases[i].req,
				v, cases[i].want);
			exit(1);
		}
	}
	/* A NUL is no token character: 400, not 405 (found by fuzz_metrics_http). */
	{
		static const char nul_inside[] = "G\0T /metrics HTTP/1.1\r\n\r\n";
		static const char nul_only[] = "\0 / HTTP/1.1\n\n";

		CHECK(metrics_http_parse(nul_inside, sizeof(nul_inside) - 1) ==
		      METRICS_HTTP_BAD_REQUEST);
		CHECK(metrics_http_parse(nul_only, sizeof(nul_only) - 1) ==
		      METRICS_HTTP_BAD_REQUEST);
	}
	/* Only len bytes are read: a complete request cut short is incomplete. */
	CHECK(metrics_http_parse("GET / HTTP/1.1\n\nGARBAGE", 15) == METRICS_HTTP_INCOMPLETE);
	CHECK(metrics_http_parse("GET / HTTP/1.1\n\nGARBAGE", 16) == METRICS_HTTP_INDEX);
	/* Headers without an end: too large at the limit, not before. */
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
	CHECK(metrics_http_parse(big, METRICS_HTTP_MAX_REQUEST - 1) == METRICS_HTTP_INCOMPLETE);
	CHECK(metrics_http_parse(big, METRICS_HTTP_MAX_REQUEST) == METRICS_HTTP_TOO_LARGE);
	/* Every prefix of a good request is incomplete, the whole is good. */
	{
		const char *req = "GET /metrics HTTP/1.1\r\nAccept: */*\r\n\r\n";

		for (size_t n = 0; n < strlen(req); n++)
			CHECK(metrics_http_parse(req, n) == METRICS_HTTP_INCOMPLETE);
		CHECK(metrics_http_parse(req, strlen(req)) == METRICS_HTTP_METRICS);
	}
}

static void test_addr(void)
{
	static const struct {
		const char *spec;
		int family; /* 0: refused */
		const char *addr;
		unsigned int port;
		bool loopback;
	} cases[] = {
		{ "9586", AF_INET, "127.0.0.1", 9586, true },
		{ "127.0.0.1:1", AF_INET, "127.0.0.1", 1, true },
		{ "127.3.4.5:65535", AF_INET, "127.3.4.5", 65535, true },
		{ "0.0.0.0:9586", AF_INET, "0.0.0.0", 9586, false },
		{ "192.0.2.1:80", AF_INET, "192.0.2.1", 80, false },
		{ "[::1]:9586", AF_INET6, "::1", 9586, true },
		{ "[::]:9586", AF_INET6, "::", 9586, false },
		{ "[::ffff:127.0.0.1]:9586", AF_INET6, "::ffff:127.0.0.1", 9586, true },
		{ "[2001:db8::1]:9586", AF_INET6, "2001:db8::1", 9586, false },
		{ "0", 0, NULL, 0, false },
		{ "65536", 0, NULL, 0, false },
		{ "127.0.0.1:0", 0, NULL, 0, false },
		{ "127.0.0.1:", 0, NULL, 0, false },
		{ ":9586", 0, NULL, 0, false },
		{ "localhost:9586", 0, NULL, 0, false },
		{ "::1:9586", 0, NULL, 0, false },
		{ "[::1]9586", 0, NULL, 0, false },
		{ "[::1:9586", 0, NULL, 0, false },
		{ "[]:9586", 0, NULL, 0, false },
		{ "127.0.0.1:95x6", 0, NULL, 0, false },
		{ "127.0.0.1:-1", 0, NULL, 0, false },
		{ "127.0.0.1:009586", 0, NULL, 0, false },
		{ "", 0, NULL, 0, false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_storage ss;
		socklen_t len = 0;
		bool loop = false;
		const char *why = NULL;
		char text[INET6_ADDRSTRLEN];
		int ret = metrics_http_parse_addr(cases[i].spec, &ss, &len, &loop, &why);

		if (!cases[i].family) {
			if (ret != -EINVAL || !why) {
				fprintf(stderr, "'%s' accepted\n", cases[i].spec);
				exit(1);
			}
			continue;
		}
		if (ret) {
			fprintf(stderr, "'%s' refused: %s\n", cases[i].spec, why);
			exit(1);
		}
		CHECK(ss.ss_family == cases[i].family);
		CHECK(loop == cases[i].loopback);
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

			CHECK(len == sizeof(*sin));
			CHECK(ntohs(sin->sin_port) == cases[i].port);
			inet_ntop(AF_INET, &sin->sin_addr, text, sizeof(text));
		} else {
			struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

			CHECK(len == sizeof(*sin6));
			CHECK(ntohs(sin6->sin6_port) == cases[i].port);
			inet_ntop(AF_INET6, &sin6->sin6_addr, text, sizeof(text));
		}
		CHECK(!strcmp(text, cases[i].addr));
	}
}

/* ---- a live listener ------------------------------------------------------ */

static int fail_render;

static int fake_render(void *ctx, char **text, size_t *len)
{
	if (fail_render)
		return -ENOMEM;
	*text = strdup("# HELP fake_total A counter\n# TYPE fake_total counter\nfake_total 42\n");
	*len = strlen(*text);
	return 0;
}

static int connect_to(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(fd >= 0);
	CHECK(connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	return fd;
}

/* Sends req, reads the whole reply (the server closes) into a malloc'd
 * NUL-terminated string. */
static char *exchange(unsigned int port, const char *req, size_t len)
{
	size_t cap = 1 << 16, got = 0;
	char *buf = malloc(cap);
	int fd = connect_to(port);
	ssize_t n;

	CHECK(buf);
	for (size_t off = 0; off < len; off += (size_t)n) {
		n = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (n < 0)
			break; /* the server may answer and close before all of it */
	}
	while ((n = recv(fd, buf + got, cap - got - 1, 0)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd);
	return buf;
}

static void expect_status(unsigned int port, const char *req, const char *status)
{
	char *r = exchange(port, req, strlen(req));

	if (strncmp(r, status, strlen(status))) {
		fprintf(stderr, "request '%s': reply '%.80s', expected '%s'\n", req, r, status);
		exit(1);
	}
	free(r);
}

static unsigned long long counter(const char *text, const char *outcome)
{
	char key[96];
	const char *p;

	snprintf(key, sizeof(key), "weft_metrics_requests_total{outcome=\"%s\"} ", outcome);
	p = strstr(text, key);
	CHECK(p);
	return strtoull(p + strlen(key), NULL, 10);
}

static void test_live(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct metrics_http *h;
	unsigned int port;
	int idle[METRICS_HTTP_MAX_CLIENTS];
	char *r, *big;
	int err = 0, fd;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* A deadline of 60 s: a hang guard here, never reached by a client
	 * that sends its request at once. */
	h = metrics_http_start((struct sockaddr *)&sin, sizeof(sin), fake_render, NULL, 60000, &err);
	if (!h && (err == -EAFNOSUPPORT || err == -EADDRNOTAVAIL)) {
		fprintf(stderr, "no loopback: skipped\n");
		exit(77);
	}
	CHECK(h);
	port = metrics_http_port(h);
	CHECK(port > 0);

	/* Binding the same address again is refused with the errno. */
	sin.sin_port = htons((uint16_t)port);
	CHECK(!metrics_http_start((struct sockaddr *)&sin, sizeof(sin), fake_render, NULL, 0, &err));
	CHECK(err == -EADDRINUSE);

	r = exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 35);
	CHECK(!strncmp(r, "HTTP/1.0 200 OK\r\n", 17));
	CHECK(strstr(r, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
	{
		const char *body = strstr(r, "\r\n\r\n");
		const char *cl = strstr(r, "Content-Length: ");

		CHECK(body && cl);
		body += 4;
		CHECK(strtoul(cl + 16, NULL, 10) == strlen(body));
		CHECK(!strncmp(body, "# HELP fake_total", 17));
		CHECK(strstr(body, "\nfake_total 42\n"));
		CHECK(counter(body, "200") == 0);
	}
	free(r);

	expect_status(port, "HEAD /metrics HTTP/1.1\r\n\r\n", "HTTP/1.0 200 OK\r\n");
	r = exchange(port, "HEAD /metrics HTTP/1.0\r\n\r\n", 26);
	CHECK(strstr(r, "\r\n\r\n") && strstr(r, "\r\n\r\n")[4] == '\0'); /* no body */
	free(r);
	expect_status(port, "GET / HTTP/1.0\r\n\r\n", "HTTP/1.0 200 OK\r\n");
	expect_status(port, "GET /nothing HTTP/1.0\r\n\r\n", "HTTP/1.0 404 ");
	expect_status(port, "PUT /metrics HTTP/1.0\r\n\r\n", "HTTP/1.0 405 ");
	r = exchange(port, "POST /metrics HTTP/1.0\r\n\r\n", 26);
	CHECK(strstr(r, "\r\nAllow: GET, HEAD\r\n"));
	free(r);
	expect_status(port, "BREW /pot HTCPCP/1.0\r\n\r\n", "HTTP/1.0 400 ");

	/* 64 KiB of headers: refused at the limit, the rest never read. */
	big = malloc(65536);
	CHECK(big);
	memset(big, 'h', 65536);
	memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
	r = exchange(port, big, 65536);
	CHECK(!strncmp(r, "HTTP/1.0 431 ", 13));
	free(r);
	free(big);

	/* A client that leaves before its request ends. */
	fd = connect_to(port);
	CHECK(send(fd, "GET /met", 8, MSG_NOSIGNAL) == 8);
	close(fd);

	/* A renderer that fails: 500, and the listener goes on. */
	fail_render = 1;
	expect_status(port, "GET /metrics HTTP/1.0\r\n\r\n", "HTTP/1.0 500 ");
	fail_render = 0;

	/* Every outcome so far was counted once it ended (each exchange above
	 * waited for the server's close; the client that left was accepted
	 * before the 500's, and its end seen no later). */
	r = exchange(port, "GET /metrics HTTP/1.0\r\n\r\n", 25);
	CHECK(counter(r, "200") == 4);     /* GET, HEAD, HEAD, index */
	CHECK(counter(r, "404") == 1);
	CHECK(counter(r, "405") == 2);
	CHECK(counter(r, "400") == 1);
	CHECK(counter(r, "431") == 1);
	CHECK(counter(r, "closed") == 1);
	CHECK(counter(r, "500") == 1);
	CHECK(counter(r, "timeout") == 0);
	free(r);

	/* Clients that connect and say nothing delay no other: with every slot
	 * but one taken by a silent client, a scrape is answered while they
	 * all still wait (none has timed out when it is rendered). */
	for (int i = 0; i < METRICS_HTTP_MAX_CLIENTS - 1; i++)
		idle[i] = connect_to(port);
	r = exchange(port, "GET /metrics HTTP/1.0\r\n\r\n", 25);
	CHECK(!strncmp(r, "HTTP/1.0 200 ", 13));
	CHECK(counter(r, "200") == 5);
	CHECK(counter(r, "timeout") == 0);
	free(r);
	/* A client that stalls mid-request does not hold up the stop. */
	fd = connect_to(port);
	CHECK(send(fd, "GET /metrics HTTP/1.1\r\n", 23, MSG_NOSIGNAL) == 23);
	metrics_http_stop(h);
	close(fd);
	for (int i = 0; i < METRICS_HTTP_MAX_CLIENTS - 1; i++)
		close(idle[i]);
	metrics_http_stop(NULL);
}

/* Each silent client ends at its own deadline (2 s here): the server
 * closes it and counts a timeout. */
static void test_deadlines(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int idle[METRICS_HTTP_MAX_CLIENTS - 1], err = 0;
	struct metrics_http *h;
	unsigned int port;
	char *r;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	h = metrics_http_start((struct sockaddr *)&sin, sizeof(sin), fake_render, NULL, 2000, &err);
	CHECK(h);
	port = metrics_http_port(h);
	for (size_t i = 0; i < sizeof(idle) / sizeof(idle[0]); i++)
		idle[i] = connect_to(port);
	for (size_t i = 0; i < sizeof(idle) / sizeof(idle[0]); i++) {
		struct timeval guard = { .tv_sec = 60 }; /* a hang, not a verdict */
		char c;

		CHECK(!setsockopt(idle[i], SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof(guard)));
		CHECK(recv(idle[i], &c, 1, 0) == 0);
		close(idle[i]);
	}
	r = exchange(port, "GET /metrics HTTP/1.0\r\n\r\n", 25);
	CHECK(counter(r, "timeout") == sizeof(idle) / sizeof(idle[0]));
	CHECK(counter(r, "200") == 0);
	free(r);
	metrics_http_stop(h);
}

int main(void)
{
	test_parse();
	test_addr();
	test_live();
	test_deadlines();
	printf("test_metrics_http: ok\n");
	return 0;
}
