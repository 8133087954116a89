/*
 * hs_flood: flood a WireGuard responder with handshake initiations that carry
 * a valid mac1 (computed with weft's own cookie code from the responder's
 * public key) and random bytes everywhere else, from many IPv4 source
 * addresses, for the handshake-flood integration test.
 *
 *   hs_flood [-c] [-d SECS] [-r PPS] [-b BATCH] [-p PORT]
 *            PUBKEY_BASE64 DST_ADDR DST_PORT SRC_FIRST NSRC
 *
 * Sources are SRC_FIRST, SRC_FIRST+1, ... (NSRC addresses that must exist on
 * a local interface); one socket bound to the wildcard address picks the
 * source of each datagram with IP_PKTINFO and learns from IP_PKTINFO which
 * source a cookie reply came back to. With -c the flooder behaves like an
 * attacker who owns its addresses: a source without a cookie waits (up to a
 * second) for the reply to its last initiation, decrypts it, and sends its
 * later initiations with a valid mac2, which only the
 * responder's per-source rate limit can hold back.
 *
 * Prints key=value totals on stdout when the time is up or on SIGTERM.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "wg/clock.h"
#include "wg/cookie.h"
#include "wg/messages.h"

enum {
	MAX_BATCH = 1024,
	DEFAULT_BATCH = 256,
	MAX_SOURCES = 65536,
	RECV_BATCH = 256,
	/* Pacing gives up on catching up after falling this far behind. */
	MAX_LAG_NS = 100 * 1000 * 1000,
	/* -c: how long a source waits for its cookie reply before it sends
	 * a fresh initiation anyway (the reply may have been dropped). */
	COOKIE_WAIT_NS = 1000 * 1000 * 1000,
};

struct flood_totals {
	uint64_t sent, send_errors, sent_with_mac2, cookie_replies, cookies_valid, other_replies;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig) { stop = sig; }

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { .tv_sec = (time_t)(t / NSEC_PER_SEC), .tv_nsec = (long)(t % NSEC_PER_SEC) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !stop)
		;
}

/* Reads every reply waiting on fd. With answer_cookies, a cookie reply is
 * consumed by the maker of the source address it came back to. */
static void drain_replies(int fd, struct wg_cookie_maker *makers, uint32_t first, uint32_t nsrc,
			  bool answer_cookies, struct flood_totals *t)
{
	static uint8_t bufs[RECV_BATCH][256];
	static union {
		char buf[CMSG_SPACE(sizeof(struct in_pktinfo))];
		struct cmsghdr align;
	} ctl[RECV_BATCH];
	static struct mmsghdr msgs[RECV_BATCH];
	static struct iovec iovs[RECV_BATCH];
	int n;

	for (;;) {
		for (int i = 0; i < RECV_BATCH; i++) {
			iovs[i] = (struct iovec){ .iov_base = bufs[i], .iov_len = sizeof(bufs[i]) };
			msgs[i].msg_hdr = (struct msghdr){ .msg_iov = &iovs[i], .msg_iovlen = 1,
							   .msg_control = ctl[i].buf,
							   .msg_controllen = sizeof(ctl[i].buf) };
		}
		n = recvmmsg(fd, msgs, RECV_BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			return;
		for (int i = 0; i < n; i++) {
			const struct wg_msg_cookie *reply = (const void *)bufs[i];
			struct cmsghdr *c;
			uint32_t slot = UINT32_MAX;

			if (msgs[i].msg_len != sizeof(*reply) || bufs[i][0] != WG_MSG_HANDSHAKE_COOKIE) {
				t->other_replies++;
				continue;
			}
			t->cookie_replies++;
			if (!answer_cookies)
				continue;
			for (c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c)) {
				if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
					struct in_pktinfo pi;

					memcpy(&pi, CMSG_DATA(c), sizeof(pi));
					slot = ntohl(pi.ipi_addr.s_addr) - first;
				}
			}
			if (slot < nsrc && wg_cookie_consume_reply(&makers[slot], reply, wg_clock_now()))
				t->cookies_valid++;
		}
	}
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-c] [-d SECS] [-r PPS] [-b BATCH] [-p PORT] PUBKEY_BASE64 DST_ADDR DST_PORT SRC_FIRST NSRC\n",
		prog);
	exit(2);
}

int main(int argc, char **argv)
{
	static uint8_t msgbuf[MAX_BATCH][sizeof(struct wg_msg_initiation)];
	static union {
		char buf[CMSG_SPACE(sizeof(struct in_pktinfo))];
		struct cmsghdr align;
	} ctl[MAX_BATCH];
	static struct mmsghdr msgs[MAX_BATCH];
	static struct iovec iovs[MAX_BATCH];
	uint8_t pub[WG_KEY_LEN];
	struct wg_cookie_maker *makers;
	uint64_t *sent_at; /* per source: when its last initiation went */
	struct flood_totals t = { 0 };
	struct sockaddr_in dst = { .sin_family = AF_INET }, bind_addr = { .sin_family = AF_INET };
	struct in_addr first_addr;
	double secs = 10, rate = 20000;
	unsigned int batch = DEFAULT_BATCH;
	bool answer_cookies = false;
	uint32_t first, nsrc, cursor = 0;
	uint64_t start, deadline, next, interval;
	size_t pub_len = 0;
	long port = 0, dport;
	int opt, fd, one = 1, rcvbuf = 4 << 20;

	while ((opt = getopt(argc, argv, "cd:r:b:p:")) != -1) {
		switch (opt) {
		case 'c':
			answer_cookies = true;
			break;
		case 'd':
			secs = strtod(optarg, NULL);
			break;
		case 'r':
			rate = strtod(optarg, NULL);
			break;
		case 'b':
			batch = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'p':
			port = strtol(optarg, NULL, 10);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (argc - optind != 5 || batch < 1 || batch > MAX_BATCH || secs <= 0 || rate <= 0 ||
	    port < 0 || port > 65535)
		usage(argv[0]);
	if (sodium_init() < 0)
		return 1;
	if (sodium_base642bin(pub, sizeof(pub), argv[optind], strlen(argv[optind]), NULL, &pub_len,
			      NULL, sodium_base64_VARIANT_ORIGINAL) ||
	    pub_len != sizeof(pub)) {
		fprintf(stderr, "hs_flood: bad public key\n");
		return 2;
	}
	dport = strtol(argv[optind + 2], NULL, 10);
	nsrc = (uint32_t)strtoul(argv[optind + 4], NULL, 10);
	if (inet_pton(AF_INET, argv[optind + 1], &dst.sin_addr) != 1 || dport <= 0 || dport > 65535 ||
	    inet_pton(AF_INET, argv[optind + 3], &first_addr) != 1 || nsrc < 1 || nsrc > MAX_SOURCES) {
		fprintf(stderr, "hs_flood: bad address, port or source count\n");
		return 2;
	}
	dst.sin_port = htons((uint16_t)dport);
	first = ntohl(first_addr.s_addr);

	makers = calloc(nsrc, sizeof(*makers));
	sent_at = calloc(nsrc, sizeof(*sent_at));
	if (!makers || !sent_at)
		return 1;
	for (uint32_t i = 0; i < nsrc; i++)
		wg_cookie_maker_init(&makers[i], pub);

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bind_addr.sin_port = htons((uint16_t)port);
	if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&bind_addr, sizeof(bind_addr))) {
		perror("hs_flood: socket");
		return 1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &rcvbuf, sizeof(rcvbuf));

	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	wg_clock_init();
	for (unsigned int i = 0; i < MAX_BATCH; i++) {
		iovs[i] = (struct iovec){ .iov_base = msgbuf[i], .iov_len = sizeof(msgbuf[i]) };
		msgs[i].msg_hdr = (struct msghdr){ .msg_name = &dst, .msg_namelen = sizeof(dst),
						   .msg_iov = &iovs[i], .msg_iovlen = 1,
						   .msg_control = ctl[i].buf,
						   .msg_controllen = sizeof(ctl[i].buf) };
	}

	start = next = mono_ns();
	deadline = start + (uint64_t)(secs * 1e9);
	interval = (uint64_t)(batch * 1e9 / rate);
	while (!stop && mono_ns() < deadline) {
		uint64_t now = wg_clock_now();
		unsigned int done = 0, n = 0;

		randombytes_buf(msgbuf, batch * sizeof(msgbuf[0]));
		for (uint32_t tries = 0; n < batch && tries < nsrc; tries++) {
			unsigned int i = n;
			struct wg_msg_initiation *m = (struct wg_msg_initiation *)msgbuf[i];
			uint32_t slot = cursor++ % nsrc;
			struct cmsghdr *c = CMSG_FIRSTHDR(&msgs[i].msg_hdr);
			struct in_pktinfo pi = { .ipi_spec_dst.s_addr = htonl(first + slot) };

			/* With -c, a source waiting for the cookie reply to its last
			 * initiation sends no other (a reply is sealed to the mac1
			 * of the one it answers), up to COOKIE_WAIT_NS: so the
			 * cookies are usable however late the replies come, as for
			 * an attacker who waits for them. */
			if (answer_cookies && !makers[slot].cookie_birthdate &&
			    makers[slot].have_sent_mac1 && now - sent_at[slot] < COOKIE_WAIT_NS)
				continue;
			sent_at[slot] = now;
			n++;

			m->header.type = WG_MSG_HANDSHAKE_INITIATION;
			memset(m->header.reserved, 0, sizeof(m->header.reserved));
			if (makers[slot].cookie_birthdate)
				t.sent_with_mac2++;
			wg_cookie_add_macs(&makers[slot], msgbuf[i], sizeof(msgbuf[i]), now);
			c->cmsg_level = IPPROTO_IP;
			c->cmsg_type = IP_PKTINFO;
			c->cmsg_len = CMSG_LEN(sizeof(pi));
			memcpy(CMSG_DATA(c), &pi, sizeof(pi));
		}
		while (done < n && !stop) {
			int r = sendmmsg(fd, msgs + done, n - done, 0);

			if (r < 0) {
				if (errno == EINTR)
					continue;
				t.send_errors++;
				done++;
				continue;
			}
			done += (unsigned int)r;
			t.sent += (uint64_t)r;
		}
		drain_replies(fd, makers, first, nsrc, answer_cookies, &t);
		next += interval;
		if (mono_ns() > next + MAX_LAG_NS)
			next = mono_ns();
		sleep_until(next < deadline ? next : deadline);
	}
	/* Late replies to the last batches. */
	usleep(100 * 1000);
	drain_replies(fd, makers, first, nsrc, answer_cookies, &t);
	printf("sent=%llu\nsend_errors=%llu\nsent_with_mac2=%llu\ncookie_replies=%llu\n"
	       "cookies_valid=%llu\nother_replies=%llu\nseconds=%.2f\n",
	       (unsigned long long)t.sent, (unsigned long long)t.send_errors,
	       (unsigned long long)t.sent_with_mac2, (unsigned long long)t.cookie_replies,
	       (unsigned long long)t.cookies_valid, (unsigned long long)t.other_replies,
	       (double)(mono_ns() - start) / 1e9);
	sodium_memzero(makers, nsrc * sizeof(*makers));
	free(makers);
	free(sent_at);
	close(fd);
	return t.sent ? 0 : 1;
}
