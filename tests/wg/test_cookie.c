/* MAC1/MAC2 and cookie replies through wg/cookie.h, with a fake clock: mac1
 * and the cookie checked against a naive recomputation from the whitepaper's
 * definitions, tampering, the cookie round trip, binding to mac1 and to the
 * source address and port, the maker's cookie lifetime and the checker's
 * secret rotation. */
#include <arpa/inet.h>
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "wg/clock.h"
#include "wg/cookie.h"

static int failures;

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__,   \
				__LINE__, #cond);                                \
			failures++;                                              \
		}                                                                \
	} while (0)

#define SEC NSEC_PER_SEC
static const uint64_t T0 = 1000 * SEC; /* an arbitrary boot-time "now" */

static uint8_t responder_public[WG_KEY_LEN];

static void addr4(union wg_sockaddr *a, const char *ip, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->in4.sin_family = AF_INET;
	a->in4.sin_port = htons(port);
	inet_pton(AF_INET, ip, &a->in4.sin_addr);
}

static void addr6(union wg_sockaddr *a, const char *ip, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->in6.sin6_family = AF_INET6;
	a->in6.sin6_port = htons(port);
	inet_pton(AF_INET6, ip, &a->in6.sin6_addr);
}

/* A handshake initiation with random contents and zero MACs. */
static void random_initiation(struct wg_msg_initiation *m)
{
	randombytes_buf(m, sizeof(*m));
	m->header.type = WG_MSG_HANDSHAKE_INITIATION;
	memset(&m->macs, 0, sizeof(m->macs));
}

/* The reference: the whitepaper's definitions spelled out byte by byte. */
static void naive_key(uint8_t out[32], const char *label)
{
	uint8_t in[8 + WG_KEY_LEN];

	memcpy(in, label, 8);
	memcpy(in + 8, responder_public, WG_KEY_LEN);
	blake2s(out, 32, in, sizeof(in), NULL, 0);
}

static void naive_mac1(uint8_t out[16], const struct wg_msg_initiation *m)
{
	uint8_t key[32];

	naive_key(key, "mac1----");
	blake2s(out, 16, m, offsetof(struct wg_msg_initiation, macs), key, 32);
}

static void naive_cookie(uint8_t out[16], const uint8_t secret[32], const union wg_sockaddr *a)
{
	uint8_t in[18];
	size_t n;

	if (a->sa.sa_family == AF_INET) {
		memcpy(in, &a->in4.sin_addr, 4);
		in[4] = (uint8_t)(ntohs(a->in4.sin_port) >> 8);
		in[5] = (uint8_t)ntohs(a->in4.sin_port);
		n = 6;
	} else {
		memcpy(in, &a->in6.sin6_addr, 16);
		in[16] = (uint8_t)(ntohs(a->in6.sin6_port) >> 8);
		in[17] = (uint8_t)ntohs(a->in6.sin6_port);
		n = 18;
	}
	blake2s(out, 16, in, n, secret, 32);
}

static void test_mac1(struct wg_cookie_checker *c)
{
	struct wg_cookie_maker m;
	struct wg_msg_initiation msg, bad;
	union wg_sockaddr src;
	uint8_t expect[16];

	addr4(&src, "192.0.2.1", 51820);
	wg_cookie_maker_init(&m, responder_public);
	random_initiation(&msg);
	wg_cookie_add_macs(&m, (uint8_t *)&msg, sizeof(msg), T0);

	naive_mac1(expect, &msg);
	CHECK(!memcmp(msg.macs.mac1, expect, 16));
	CHECK(sodium_is_zero(msg.macs.mac2, 16)); /* no cookie yet */
	CHECK(m.have_sent_mac1 && !memcmp(m.last_mac1_sent, msg.macs.mac1, 16));

	CHECK(wg_cookie_validate(c, (uint8_t *)&msg, sizeof(msg), &src, false, T0) ==
	      WG_COOKIE_VALID_MAC_NO_COOKIE);
	CHECK(wg_cookie_validate(c, (uint8_t *)&msg, sizeof(msg), &src, true, T0) ==
	      WG_COOKIE_VALID_MAC_NO_COOKIE);

	/* Any change to the covered bytes or to mac1 itself breaks it; mac2
	 * is outside mac1. */
	for (size_t i = 0; i < offsetof(struct wg_msg_initiation, macs.mac2); i++) {
		bad = msg;
		((uint8_t *)&bad)[i] ^= 0x04;
		CHECK(wg_cookie_validate(c, (uint8_t *)&bad, sizeof(bad), &src, false, T0) ==
		      WG_COOKIE_INVALID_MAC);
	}
	bad = msg;
	bad.macs.mac2[0] ^= 1;
	CHECK(wg_cookie_validate(c, (uint8_t *)&bad, sizeof(bad), &src, false, T0) ==
	      WG_COOKIE_VALID_MAC_NO_COOKIE);

	/* A maker for another responder produces a mac1 we refuse. */
	{
		uint8_t other[WG_KEY_LEN];
		struct wg_cookie_maker o;

		randombytes_buf(other, sizeof(other));
		wg_cookie_maker_init(&o, other);
		bad = msg;
		wg_cookie_add_macs(&o, (uint8_t *)&bad, sizeof(bad), T0);
		CHECK(wg_cookie_validate(c, (uint8_t *)&bad, sizeof(bad), &src, false, T0) ==
		      WG_COOKIE_INVALID_MAC);
	}
}

static void test_cookie_round_trip(struct wg_cookie_checker *c)
{
	struct wg_cookie_maker m;
	struct wg_msg_initiation msg;
	struct wg_msg_cookie reply, bad;
	union wg_sockaddr src, other;
	uint8_t key[32], cookie[16], expect[16];
	const uint64_t t = T0 + 3 * SEC;

	addr4(&src, "198.51.100.7", 40000);
	wg_cookie_maker_init(&m, responder_public);
	random_initiation(&msg);
	msg.sender_index = htole32(0xabcdef01);
	wg_cookie_add_macs(&m, (uint8_t *)&msg, sizeof(msg), t);

	CHECK(wg_cookie_create_reply(&reply, c, (uint8_t *)&msg, sizeof(msg), 0xabcdef01, &src, t));
	CHECK(reply.header.type == WG_MSG_HANDSHAKE_COOKIE);
	CHECK(le32toh(reply.receiver_index) == 0xabcdef01);

	/* The reply carries MAC(secret, address || port) under the
	 * cookie key, with mac1 as associated data. */
	naive_key(key, "cookie--");
	CHECK(xaead_open(cookie, reply.encrypted_cookie, sizeof(reply.encrypted_cookie),
			 msg.macs.mac1, 16, reply.nonce, key));
	naive_cookie(expect, c->secret, &src);
	CHECK(!memcmp(cookie, expect, 16));

	/* Tampered replies are refused, and do not use up the mac1. */
	for (size_t i = offsetof(struct wg_msg_cookie, nonce); i < sizeof(reply); i++) {
		bad = reply;
		((uint8_t *)&bad)[i] ^= 0x20;
		CHECK(!wg_cookie_consume_reply(&m, &bad, t));
	}
	CHECK(m.cookie_birthdate == 0);
	CHECK(wg_cookie_consume_reply(&m, &reply, t));
	CHECK(!memcmp(m.cookie, expect, 16));
	CHECK(!wg_cookie_consume_reply(&m, &reply, t)); /* one reply per mac1 */

	/* The next message carries mac2 and passes the cookie check from the
	 * same address and port only. */
	random_initiation(&msg);
	wg_cookie_add_macs(&m, (uint8_t *)&msg, sizeof(msg), t + SEC);
	CHECK(!sodium_is_zero(msg.macs.mac2, 16));
	CHECK(wg_cookie_validate(c, (uint8_t *)&msg, sizeof(msg), &src, true, t + SEC) ==
	      WG_COOKIE_VALID_MAC_WITH_COOKIE);
	CHECK(wg_cookie_validate(c, (uint8_t *)&msg, sizeof(msg), &src, false, t + SEC) ==
	      WG_COOKIE_VALID_MAC_NO_COOKIE);
	addr4(&other, "198.51.100.7", 40001);
	CHECK(wg_cookie_validate(c, (uint8_t *)&msg, sizeof(msg), &other, true, t + SEC) ==
	      WG_COOKIE_VALID_MAC_NO_COOKIE);
	addr4(&other, "198.51.100.8", 40000);
	CHECK(wg_cookie_validate(c, (uint8_t *)&msg, sizeof(msg), &other, true, t + SEC) ==
	      WG_COOKIE_VALID_MAC_NO_COOKIE);
	/* A flipped mac2 bit fails the cookie check but not mac1. */
	msg.macs.mac2[15] ^= 0x80;
	CHECK(wg_cookie_validate(c, (uint8_t *)&msg, sizeof(msg), &src, true, t + SEC) ==
	      WG_COOKIE_VALID_MAC_NO_COOKIE);
}

static void test_ipv6(struct wg_cookie_checker *c)
{
	struct wg_cookie_maker m;
	struct wg_msg_initiation msg;
	struct wg_msg_cookie reply;
	union wg_sockaddr src, other;
	uint8_t key[32], cookie[16], expect[16];
	const uint64_t t = T0 + 5 * SEC;

	addr6(&src, "2001:db8::1", 51820);
	wg_cookie_maker_init(&m, responder_public);
	random_initiation(&msg);
	wg_cookie_add_macs(&m, (uint8_t *)&msg, sizeof(msg), t);
	CHECK(wg_cookie_create_reply(&reply, c, (uint8_t *)&msg, sizeof(msg), 1, &src, t));
	naive_key(key, "cookie--");
	CHECK(xaead_open(cookie, reply.encrypted_cookie, sizeof(reply.encrypted_cookie),
			 msg.macs.mac1, 16, reply.nonce, key));
	naive_cookie(expect, c->secret, &src);
	CHECK(!memcmp(cookie, expect, 16));
	CHECK(wg_cookie_consume_reply(&m, &reply, t));

	random_initiation(&msg);
	wg_cookie_add_macs(&m, (uint8_t *)&msg, sizeof(msg), t);
	CHECK(wg_cookie_validate(c, (uint8_t *)&msg, sizeof(msg), &src, true, t) ==
	      WG_COOKIE_VALID_MAC_WITH_COOKIE);
	addr6(&other, "2001:db8::2", 51820);
	CHECK(wg_cookie_validate(c, (uint8_t *)&msg, sizeof(msg), &other, true, t) ==
	      WG_COOKIE_VALID_MAC_NO_COOKIE);
	addr6(&other, "2001:db8::1", 51821);
	CHECK(wg_cookie_validate(c, (uint8_t *)&msg, sizeof(msg), &other, true, t) ==
	      WG_COOKIE_VALID_MAC_NO_COOKIE);
}

static void test_reply_for_other_mac1(struct wg_cookie_checker *c)
{
	struct wg_cookie_maker m;
	struct wg_msg_initiation sent, other;
	struct wg_msg_cookie reply;
	union wg_sockaddr src;

	addr4(&src, "203.0.113.5", 1234);
	wg_cookie_maker_init(&m, responder_public);

	/* Nothing sent yet: nothing to bind a reply to. */
	random_initiation(&sent);
	wg_cookie_add_macs(&m, (uint8_t *)&sent, sizeof(sent), T0);
	CHECK(wg_cookie_create_reply(&reply, c, (uint8_t *)&sent, sizeof(sent), 1, &src, T0));
	{
		struct wg_cookie_maker fresh;

		wg_cookie_maker_init(&fresh, responder_public);
		CHECK(!wg_cookie_consume_reply(&fresh, &reply, T0));
	}

	/* The maker has since sent another message: the reply answers an
	 * old mac1 and is refused. */
	random_initiation(&other);
	wg_cookie_add_macs(&m, (uint8_t *)&other, sizeof(other), T0);
	CHECK(!wg_cookie_consume_reply(&m, &reply, T0));
	CHECK(m.cookie_birthdate == 0);
	/* A reply to the current one works. */
	CHECK(wg_cookie_create_reply(&reply, c, (uint8_t *)&other, sizeof(other), 1, &src, T0));
	CHECK(wg_cookie_consume_reply(&m, &reply, T0));
}

static void test_cookie_lifetime(struct wg_cookie_checker *c)
{
	struct wg_cookie_maker m;
	struct wg_msg_initiation msg;
	struct wg_msg_cookie reply;
	union wg_sockaddr src;
	const uint64_t t = T0 + 7 * SEC;
	/* The maker stops 5 s before the checker's secret may rotate. */
	const uint64_t max_age = (WG_COOKIE_SECRET_MAX_AGE - 5) * SEC;

	addr4(&src, "192.0.2.99", 5555);
	wg_cookie_maker_init(&m, responder_public);
	random_initiation(&msg);
	wg_cookie_add_macs(&m, (uint8_t *)&msg, sizeof(msg), t);
	CHECK(wg_cookie_create_reply(&reply, c, (uint8_t *)&msg, sizeof(msg), 1, &src, t));
	CHECK(wg_cookie_consume_reply(&m, &reply, t));

	wg_cookie_add_macs(&m, (uint8_t *)&msg, sizeof(msg), t + max_age - 1);
	CHECK(!sodium_is_zero(msg.macs.mac2, 16));
	wg_cookie_add_macs(&m, (uint8_t *)&msg, sizeof(msg), t + max_age);
	CHECK(sodium_is_zero(msg.macs.mac2, 16));
	CHECK(wg_cookie_validate(c, (uint8_t *)&msg, sizeof(msg), &src, true, t + max_age) ==
	      WG_COOKIE_VALID_MAC_NO_COOKIE);
}

static void test_secret_rotation(void)
{
	struct wg_cookie_checker c;
	struct wg_cookie_maker m;
	struct wg_msg_initiation msg;
	struct wg_msg_cookie reply;
	union wg_sockaddr src;
	uint8_t old_secret[32];
	const uint64_t t = 5000 * SEC;

	wg_cookie_checker_init(&c);
	wg_cookie_checker_set_key(&c, responder_public);
	addr4(&src, "192.0.2.50", 7);
	wg_cookie_maker_init(&m, responder_public);
	random_initiation(&msg);
	wg_cookie_add_macs(&m, (uint8_t *)&msg, sizeof(msg), t);
	CHECK(wg_cookie_create_reply(&reply, &c, (uint8_t *)&msg, sizeof(msg), 1, &src, t));
	CHECK(c.secret_birthdate == t); /* drawn fresh: the initial one was too old */
	memcpy(old_secret, c.secret, 32);
	CHECK(wg_cookie_consume_reply(&m, &reply, t));

	/* Just before the max age the secret stays; at it, it changes, and a
	 * mac2 made with the old cookie no longer validates. */
	wg_cookie_add_macs(&m, (uint8_t *)&msg, sizeof(msg), t);
	CHECK(wg_cookie_validate(&c, (uint8_t *)&msg, sizeof(msg), &src, true,
				 t + WG_COOKIE_SECRET_MAX_AGE * SEC - 1) ==
	      WG_COOKIE_VALID_MAC_WITH_COOKIE);
	CHECK(!memcmp(old_secret, c.secret, 32));
	CHECK(wg_cookie_validate(&c, (uint8_t *)&msg, sizeof(msg), &src, true,
				 t + WG_COOKIE_SECRET_MAX_AGE * SEC) ==
	      WG_COOKIE_VALID_MAC_NO_COOKIE);
	CHECK(memcmp(old_secret, c.secret, 32));
	CHECK(c.secret_birthdate == t + WG_COOKIE_SECRET_MAX_AGE * SEC);

	/* Without keys nothing validates and no reply is made. */
	wg_cookie_checker_set_key(&c, NULL);
	CHECK(wg_cookie_validate(&c, (uint8_t *)&msg, sizeof(msg), &src, false, t) ==
	      WG_COOKIE_INVALID_MAC);
	CHECK(!wg_cookie_create_reply(&reply, &c, (uint8_t *)&msg, sizeof(msg), 1, &src, t));
	wg_cookie_checker_destroy(&c);
}

int main(void)
{
	struct wg_cookie_checker c;

	if (sodium_init() < 0)
		return 1;
	randombytes_buf(responder_public, sizeof(responder_public));
	wg_cookie_checker_init(&c);
	wg_cookie_checker_set_key(&c, responder_public);

	test_mac1(&c);
	test_cookie_round_trip(&c);
	test_ipv6(&c);
	test_reply_for_other_mac1(&c);
	test_cookie_lifetime(&c);
	test_secret_rotation();

	wg_cookie_checker_destroy(&c);
	if (failures) {
		fprintf(stderr, "test_cookie: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_cookie: ok\n");
	return 0;
}
