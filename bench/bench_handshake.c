/* Handshakes per second on one core: complete WireGuard handshakes
 * (initiation with mac1, its validation and opening, response with mac1, its
 * validation and consumption, session keys on both sides) through
 * wg/noise.h and wg/cookie.h, with the time of each side reported apart.
 *
 *   bench_handshake [SECONDS]     (default 1.0)
 *
 * Output, key=value for scripts:
 *   handshakes=N seconds=S handshakes_per_sec=R initiator_us=I responder_us=R_US
 * initiator_us / responder_us: the average time one side spends per handshake;
 * 1e6 / responder_us is what one core can answer when only responding. */
#include "bench_util.h"
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <sodium.h>

#include "wg/clock.h"
#include "wg/cookie.h"
#include "wg/noise.h"

struct side {
	struct wg_noise_identity id;
	struct wg_noise_handshake hs;      /* toward the other side */
	struct wg_cookie_checker checker;  /* validates what the other side sends */
	struct wg_cookie_maker maker;      /* MACs what we send to the other side */
	union wg_sockaddr addr;            /* our UDP endpoint, as the other side sees it */
};

static void side_init(struct side *s, const char *ip, uint16_t port)
{
	uint8_t priv[WG_KEY_LEN];

	memset(s, 0, sizeof(*s));
	x25519_generate(priv);
	wg_noise_identity_set(&s->id, priv);
	sodium_memzero(priv, sizeof(priv));
	wg_cookie_checker_init(&s->checker);
	wg_cookie_checker_set_key(&s->checker, s->id.static_public);
	s->addr.in4.sin_family = AF_INET;
	s->addr.in4.sin_port = htons(port);
	inet_pton(AF_INET, ip, &s->addr.in4.sin_addr);
}

static void side_pair(struct side *a, const struct side *b)
{
	wg_noise_handshake_init(&a->hs, &a->id, b->id.static_public, NULL);
	wg_cookie_maker_init(&a->maker, b->id.static_public);
}

/* One complete handshake ini -> resp; adds each side's time. False on any
 * refusal, which would make the numbers meaningless. */
static bool handshake(struct side *ini, struct side *resp, uint32_t n, uint64_t *t_ini, uint64_t *t_resp)
{
	struct wg_msg_initiation m1;
	struct wg_msg_response m2;
	struct wg_noise_initiation in;
	struct wg_noise_session si, sr;
	uint64_t t0, t1, t2, t3, now = wg_clock_now();
	bool ok = true;

	t0 = now_ns();
	ok &= wg_noise_create_initiation(&m1, &ini->hs, &ini->id, 2 * n);
	wg_cookie_add_macs(&ini->maker, (uint8_t *)&m1, sizeof(m1), now);

	t1 = now_ns();
	ok &= wg_cookie_validate(&resp->checker, (const uint8_t *)&m1, sizeof(m1), &ini->addr, false,
				 now) == WG_COOKIE_VALID_MAC_NO_COOKIE;
	ok &= wg_noise_open_initiation(&in, &m1, &resp->id);
	/* TAI64N timestamps are rounded to 2^24 ns, so back-to-back initiations
	 * carry equal timestamps and the replay rule would refuse all but one
	 * per 16.8 ms. The comparison itself is what we keep; forget the last. */
	memset(resp->hs.latest_timestamp, 0, sizeof(resp->hs.latest_timestamp));
	ok &= wg_noise_accept_initiation(&resp->hs, &in);
	ok &= wg_noise_create_response(&m2, &resp->hs, &resp->id, 2 * n + 1);
	wg_cookie_add_macs(&resp->maker, (uint8_t *)&m2, sizeof(m2), now);
	ok &= wg_noise_derive_session(&sr, &resp->hs);

	t2 = now_ns();
	ok &= wg_cookie_validate(&ini->checker, (const uint8_t *)&m2, sizeof(m2), &resp->addr, false,
				 now) == WG_COOKIE_VALID_MAC_NO_COOKIE;
	ok &= wg_noise_consume_response(&m2, &ini->hs, &ini->id);
	ok &= wg_noise_derive_session(&si, &ini->hs);
	t3 = now_ns();

	ok &= sodium_memcmp(si.send_key, sr.recv_key, WG_KEY_LEN) == 0 &&
	      sodium_memcmp(si.recv_key, sr.send_key, WG_KEY_LEN) == 0;
	*t_ini += (t1 - t0) + (t3 - t2);
	*t_resp += t2 - t1;
	sodium_memzero(&si, sizeof(si));
	sodium_memzero(&sr, sizeof(sr));
	sodium_memzero(&in, sizeof(in));
	return ok;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	struct side a, b;
	uint64_t start, elapsed, t_ini = 0, t_resp = 0;
	uint32_t n = 0;
	int rc = 0;

	if (secs <= 0 || secs > 60) {
		fprintf(stderr, "usage: %s [SECONDS (0..60]]\n", argv[0]);
		return 2;
	}
	if (sodium_init() < 0) {
		fprintf(stderr, "sodium_init failed\n");
		return 1;
	}
	wg_clock_init();
	aead_select(NULL); /* the backend weftd would pick (the handshake's AEAD) */
	side_init(&a, "192.0.2.1", 51820);
	side_init(&b, "192.0.2.2", 51821);
	side_pair(&a, &b);
	side_pair(&b, &a);

	start = now_ns();
	do {
		if (!handshake(&a, &b, n, &t_ini, &t_resp)) {
			fprintf(stderr, "handshake %u was refused\n", n);
			rc = 1;
			goto out;
		}
		n++;
		elapsed = now_ns() - start;
	} while (elapsed < (uint64_t)(secs * 1e9));

	printf("handshakes=%u seconds=%.3f handshakes_per_sec=%.1f initiator_us=%.1f responder_us=%.1f "
	       "aead=%s\n",
	       n, (double)elapsed / 1e9, n / ((double)elapsed / 1e9), (double)t_ini / n / 1e3,
	       (double)t_resp / n / 1e3, aead_active()->name);
out:
	wg_cookie_checker_destroy(&a.checker);
	wg_cookie_checker_destroy(&b.checker);
	sodium_memzero(&a, sizeof(a));
	sodium_memzero(&b, sizeof(b));
	return rc;
}
