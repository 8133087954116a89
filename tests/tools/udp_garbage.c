/*
 * udp_garbage: send many random or mutated datagrams at a WireGuard port as
 * fast as sendmmsg allows, for the garbage integration test. Every datagram
 * is something a correct daemon must drop (and count): random bytes, or
 * WireGuard-looking headers with wrong sizes, random MACs, unknown receiver
 * indices and random counters.
 *
 *   udp_garbage [-n COUNT] [-m random|wg|mix|empty] [-s SEED] [-b BATCH] ADDR PORT
 *
 * Prints "sent=N" and the count of each kind on stdout. The contents come
 * from a seeded PRNG (xoshiro256**), so a failing run can be repeated with
 * the same -s.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "wg/messages.h"

enum {
	MAX_LEN = 1500,
	MAX_BATCH = 1024, /* UIO_MAXIOV */
	DEFAULT_BATCH = 256,
};

/* What each datagram imitates. The "right size" handshake kinds reach the
 * daemon's handshake queue; every other kind is rejected by the worker. */
enum kind {
	K_RANDOM,       /* random bytes, random length 0..MAX_LEN */
	K_INIT_OK,      /* type 1, 148 bytes, random MACs */
	K_INIT_BADLEN,  /* type 1, any other length */
	K_RESP_OK,      /* type 2, 92 bytes */
	K_RESP_BADLEN,
	K_COOKIE_OK,    /* type 3, 64 bytes, random receiver index */
	K_COOKIE_BADLEN,
	K_DATA,         /* type 4, random index and counter, 32..MAX_LEN */
	K_DATA_SHORT,   /* type 4, 4..31 bytes */
	K_BAD_TYPE,     /* type 0 or 5..255, zero reserved bytes */
	K_EMPTY,        /* zero-length datagram */
	N_KINDS,
};

static const char *const kind_names[N_KINDS] = {
	"random", "init_ok", "init_badlen", "resp_ok", "resp_badlen", "cookie_ok",
	"cookie_badlen", "data", "data_short", "bad_type", "empty",
};

/* xoshiro256** (Blackman and Vigna): fast, and reproducible from a seed. */
static uint64_t rng_s[4];

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(void)
{
	uint64_t r = rotl(rng_s[1] * 5, 7) * 9, t = rng_s[1] << 17;

	rng_s[2] ^= rng_s[0];
	rng_s[3] ^= rng_s[1];
	rng_s[1] ^= rng_s[2];
	rng_s[0] ^= rng_s[3];
	rng_s[2] ^= t;
	rng_s[3] = rotl(rng_s[3], 45);
	return r;
}

static void rng_seed(uint64_t seed)
{
	/* splitmix64 spreads one seed over the four words. */
	for (int i = 0; i < 4; i++) {
		uint64_t z = (seed += 0x9e3779b97f4a7c15ull);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		rng_s[i] = z ^ (z >> 31);
	}
}

static uint32_t rng_below(uint32_t n) { return (uint32_t)((rng_next() >> 32) * n >> 32); }

static void rng_fill(uint8_t *p, size_t n)
{
	uint64_t v;

	for (; n >= 8; n -= 8, p += 8) {
		v = rng_next();
		memcpy(p, &v, 8);
	}
	if (n) {
		v = rng_next();
		memcpy(p, &v, n);
	}
}

/* A length in 0..MAX_LEN other than want. */
static size_t other_len(size_t want)
{
	size_t n;

	do
		n = rng_below(MAX_LEN + 1);
	while (n == want);
	return n;
}

static enum kind pick_kind(const char *mode)
{
	if (!strcmp(mode, "random"))
		return K_RANDOM;
	if (!strcmp(mode, "empty"))
		return K_EMPTY;
	if (!strcmp(mode, "wg"))
		return (enum kind)(K_INIT_OK + rng_below(K_BAD_TYPE - K_INIT_OK + 1));
	/* mix: half random bytes, half WireGuard-looking. */
	if (rng_below(2))
		return K_RANDOM;
	return (enum kind)(K_INIT_OK + rng_below(K_BAD_TYPE - K_INIT_OK + 1));
}

/* Writes one datagram of kind k into buf; returns its length. */
static size_t make_datagram(uint8_t *buf, enum kind k)
{
	size_t len;
	uint8_t type;

	switch (k) {
	case K_RANDOM:
		len = rng_below(MAX_LEN + 1);
		rng_fill(buf, len);
		return len;
	case K_EMPTY:
		return 0;
	case K_INIT_OK:
	case K_INIT_BADLEN:
		type = WG_MSG_HANDSHAKE_INITIATION;
		len = k == K_INIT_OK ? sizeof(struct wg_msg_initiation)
				     : other_len(sizeof(struct wg_msg_initiation));
		break;
	case K_RESP_OK:
	case K_RESP_BADLEN:
		type = WG_MSG_HANDSHAKE_RESPONSE;
		len = k == K_RESP_OK ? sizeof(struct wg_msg_response)
				     : other_len(sizeof(struct wg_msg_response));
		break;
	case K_COOKIE_OK:
	case K_COOKIE_BADLEN:
		type = WG_MSG_HANDSHAKE_COOKIE;
		len = k == K_COOKIE_OK ? sizeof(struct wg_msg_cookie)
				       : other_len(sizeof(struct wg_msg_cookie));
		break;
	case K_DATA:
		type = WG_MSG_DATA;
		len = WG_MSG_DATA_MIN + rng_below(MAX_LEN - WG_MSG_DATA_MIN + 1);
		break;
	case K_DATA_SHORT:
		type = WG_MSG_DATA;
		len = sizeof(struct wg_message_header) +
		      rng_below(WG_MSG_DATA_MIN - sizeof(struct wg_message_header));
		break;
	case K_BAD_TYPE:
	default:
		type = (uint8_t)rng_below(256 - 4);
		if (type)
			type += 4; /* 0 or 5..255 */
		len = sizeof(struct wg_message_header) + rng_below(MAX_LEN - 3);
		break;
	}
	rng_fill(buf, len);
	if (len) {
		buf[0] = type;
		/* Mostly well-formed reserved bytes, sometimes not. */
		if (len >= sizeof(struct wg_message_header) && rng_below(4))
			memset(buf + 1, 0, 3);
	}
	return len;
}

static int parse_addr(const char *s, const char *port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	long p = strtol(port, NULL, 10);

	if (p <= 0 || p > 65535)
		return -1;
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)p);
		*len = sizeof(*in4);
		return 0;
	}
	if (inet_pton(AF_INET6, s, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)p);
		*len = sizeof(*in6);
		return 0;
	}
	return -1;
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-n COUNT] [-m random|wg|mix|empty] [-s SEED] [-b BATCH] ADDR PORT\n",
		prog);
	exit(2);
}

int main(int argc, char **argv)
{
	static uint8_t bufs[MAX_BATCH][MAX_LEN];
	static struct mmsghdr msgs[MAX_BATCH];
	static struct iovec iovs[MAX_BATCH];
	uint64_t count = 1000000, sent = 0, errors = 0, per_kind[N_KINDS] = { 0 };
	uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	enum kind kinds[MAX_BATCH];
	struct sockaddr_storage dst;
	const char *mode = "mix";
	unsigned int batch = DEFAULT_BATCH;
	socklen_t dst_len;
	int opt, fd, sndbuf = 4 << 20;

	while ((opt = getopt(argc, argv, "n:m:s:b:")) != -1) {
		switch (opt) {
		case 'n':
			count = strtoull(optarg, NULL, 10);
			break;
		case 'm':
			mode = optarg;
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'b':
			batch = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (argc - optind != 2 || batch < 1 || batch > MAX_BATCH ||
	    (strcmp(mode, "random") && strcmp(mode, "wg") && strcmp(mode, "mix") &&
	     strcmp(mode, "empty")))
		usage(argv[0]);
	if (parse_addr(argv[optind], argv[optind + 1], &dst, &dst_len)) {
		fprintf(stderr, "udp_garbage: bad address or port\n");
		return 2;
	}
	fd = socket(dst.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("udp_garbage: socket");
		return 1;
	}
	/* Best effort: a bigger buffer means fewer blocking sends. */
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	rng_seed(seed);
	fprintf(stderr, "udp_garbage: seed=%llu mode=%s count=%llu\n", (unsigned long long)seed,
		mode, (unsigned long long)count);

	for (unsigned int i = 0; i < MAX_BATCH; i++) {
		iovs[i].iov_base = bufs[i];
		msgs[i].msg_hdr.msg_iov = &iovs[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
		msgs[i].msg_hdr.msg_name = &dst;
		msgs[i].msg_hdr.msg_namelen = dst_len;
	}
	while (sent < count) {
		unsigned int n = count - sent < batch ? (unsigned int)(count - sent) : batch, done = 0;

		for (unsigned int i = 0; i < n; i++) {
			kinds[i] = pick_kind(mode);
			iovs[i].iov_len = make_datagram(bufs[i], kinds[i]);
		}
		/* sendmmsg may stop early; a send error (ICMP unreachable from
		 * an earlier datagram, a full queue) skips that one datagram. */
		while (done < n) {
			int r = sendmmsg(fd, msgs + done, n - done, 0);

			if (r < 0) {
				if (errno == EINTR)
					continue;
				errors++;
				done++;
				continue;
			}
			for (int i = 0; i < r; i++)
				per_kind[kinds[done + (unsigned int)i]]++;
			sent += (uint64_t)r;
			done += (unsigned int)r;
		}
		if (errors > count / 2 + 100) {
			fprintf(stderr, "udp_garbage: too many send errors (last: %s)\n", strerror(errno));
			break;
		}
	}
	close(fd);
	printf("sent=%llu\nerrors=%llu\n", (unsigned long long)sent, (unsigned long long)errors);
	for (int k = 0; k < N_KINDS; k++)
		if (per_kind[k])
			printf("%s=%llu\n", kind_names[k], (unsigned long long)per_kind[k]);
	return sent ? 0 : 1;
}
