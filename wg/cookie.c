/* MAC1/MAC2 and cookie replies (whitepaper §5.4.4, §5.4.7). mac1 proves the
 * sender knows our public key; mac2, keyed by a cookie we handed to its
 * source address, proves it can receive there. Under load the responder
 * answers handshakes without a valid mac2 with a cookie reply instead of
 * doing Diffie-Hellman.
 *
 * Security model: the message bytes and the source address are
 * attacker-chosen; only MACs computed here over them are trusted, and they
 * are compared in constant time. */
#include "wg/cookie.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "wg/clock.h"

enum {
	COOKIE_LABEL_LEN = 8,
	/* A cookie is dropped this long before the responder's secret can
	 * rotate, so mac2 is never computed with a cookie it cannot check. */
	COOKIE_SECRET_LATENCY = 5,
};

static const uint8_t mac1_label[COOKIE_LABEL_LEN] = "mac1----";
static const uint8_t cookie_label[COOKIE_LABEL_LEN] = "cookie--";

_Static_assert(WG_COOKIE_LEN == WG_MAC_LEN, "a cookie keys a MAC of the same size");

/* HASH(label || public key) */
static void derive_key(uint8_t key[BLAKE2S_HASH_SIZE], const uint8_t label[COOKIE_LABEL_LEN],
		       const uint8_t public_key[WG_KEY_LEN])
{
	struct blake2s_state b;

	blake2s_init(&b, BLAKE2S_HASH_SIZE);
	blake2s_update(&b, label, COOKIE_LABEL_LEN);
	blake2s_update(&b, public_key, WG_KEY_LEN);
	blake2s_final(&b, key);
}

/* mac1 covers the message up to mac1, mac2 up to mac2 (mac1 included). */
static void compute_mac1(uint8_t mac[WG_MAC_LEN], const uint8_t *msg, size_t len,
			 const uint8_t key[BLAKE2S_HASH_SIZE])
{
	len = len - sizeof(struct wg_macs) + offsetof(struct wg_macs, mac1);
	blake2s(mac, WG_MAC_LEN, msg, len, key, BLAKE2S_HASH_SIZE);
}

static void compute_mac2(uint8_t mac[WG_MAC_LEN], const uint8_t *msg, size_t len,
			 const uint8_t cookie[WG_COOKIE_LEN])
{
	len = len - sizeof(struct wg_macs) + offsetof(struct wg_macs, mac2);
	blake2s(mac, WG_MAC_LEN, msg, len, cookie, WG_COOKIE_LEN);
}

static const struct wg_macs *macs_of(const uint8_t *msg, size_t len)
{
	return (const struct wg_macs *)(msg + len - sizeof(struct wg_macs));
}

/* cookie = MAC(secret, source address || source port), the address as its
 * 4 or 16 bytes and the port in network order, as the kernel hashes the IP
 * and UDP headers. False for any other address family. */
static bool make_cookie(uint8_t cookie[WG_COOKIE_LEN], struct wg_cookie_checker *c,
			const union wg_sockaddr *src, uint64_t now)
{
	struct blake2s_state b;
	const void *addr, *port;
	size_t addr_len;

	if (src->sa.sa_family == AF_INET) {
		addr = &src->in4.sin_addr;
		addr_len = sizeof(src->in4.sin_addr);
		port = &src->in4.sin_port;
	} else if (src->sa.sa_family == AF_INET6) {
		addr = &src->in6.sin6_addr;
		addr_len = sizeof(src->in6.sin6_addr);
		port = &src->in6.sin6_port;
	} else {
		return false;
	}
	_Static_assert(sizeof(src->in4.sin_port) == 2 && sizeof(src->in6.sin6_port) == 2,
		       "ports are 16-bit big-endian");

	pthread_mutex_lock(&c->lock);
	if (wg_clock_after(now, c->secret_birthdate, WG_COOKIE_SECRET_MAX_AGE * NSEC_PER_SEC)) {
		randombytes_buf(c->secret, sizeof(c->secret));
		c->secret_birthdate = now;
	}
	blake2s_init_key(&b, WG_COOKIE_LEN, c->secret, sizeof(c->secret));
	pthread_mutex_unlock(&c->lock);

	blake2s_update(&b, addr, addr_len);
	blake2s_update(&b, port, 2);
	blake2s_final(&b, cookie);
	return true;
}

/* ---- responder ---- */

void wg_cookie_checker_init(struct wg_cookie_checker *c)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	if (sodium_init() < 0)
		abort();
	/* Random from the start; birthdate 0 lets the first use at a real
	 * boot time older than the max age draw a fresh one anyway. */
	randombytes_buf(c->secret, sizeof(c->secret));
	c->secret_birthdate = 0;
}

void wg_cookie_checker_destroy(struct wg_cookie_checker *c)
{
	pthread_mutex_destroy(&c->lock);
	sodium_memzero(c, sizeof(*c));
}

void wg_cookie_checker_set_key(struct wg_cookie_checker *c, const uint8_t public_key[WG_KEY_LEN])
{
	if (public_key) {
		derive_key(c->mac1_key, mac1_label, public_key);
		derive_key(c->cookie_encryption_key, cookie_label, public_key);
		c->have_keys = true;
	} else {
		sodium_memzero(c->mac1_key, sizeof(c->mac1_key));
		sodium_memzero(c->cookie_encryption_key, sizeof(c->cookie_encryption_key));
		c->have_keys = false;
	}
}

enum wg_cookie_result wg_cookie_validate(struct wg_cookie_checker *c, const uint8_t *msg, size_t len,
					 const union wg_sockaddr *src, bool check_cookie, uint64_t now)
{
	const struct wg_macs *macs;
	uint8_t computed[WG_MAC_LEN], cookie[WG_COOKIE_LEN];
	enum wg_cookie_result ret = WG_COOKIE_INVALID_MAC;

	if (!c->have_keys || len < sizeof(struct wg_message_header) + sizeof(struct wg_macs))
		goto out;
	macs = macs_of(msg, len);
	compute_mac1(computed, msg, len, c->mac1_key);
	if (crypto_verify_16(computed, macs->mac1) != 0)
		goto out;

	ret = WG_COOKIE_VALID_MAC_NO_COOKIE;
	if (!check_cookie || !make_cookie(cookie, c, src, now))
		goto out;
	compute_mac2(computed, msg, len, cookie);
	if (crypto_verify_16(computed, macs->mac2) != 0)
		goto out;
	ret = WG_COOKIE_VALID_MAC_WITH_COOKIE;
out:
	sodium_memzero(cookie, sizeof(cookie));
	sodium_memzero(computed, sizeof(computed));
	return ret;
}

bool wg_cookie_create_reply(struct wg_msg_cookie *out, struct wg_cookie_checker *c,
			    const uint8_t *msg, size_t len, uint32_t sender_index,
			    const union wg_sockaddr *src, uint64_t now)
{
	uint8_t cookie[WG_COOKIE_LEN];
	bool ret = false;

	if (!c->have_keys || len < sizeof(struct wg_message_header) + sizeof(struct wg_macs))
		goto out;
	if (!make_cookie(cookie, c, src, now))
		goto out;
	out->header.type = WG_MSG_HANDSHAKE_COOKIE;
	memset(out->header.reserved, 0, sizeof(out->header.reserved));
	out->receiver_index = htole32(sender_index);
	randombytes_buf(out->nonce, sizeof(out->nonce));
	/* Bound to the mac1 we answer, so only its sender can use the reply. */
	ret = xaead_seal(out->encrypted_cookie, cookie, sizeof(cookie), macs_of(msg, len)->mac1,
			 WG_MAC_LEN, out->nonce, c->cookie_encryption_key);
out:
	sodium_memzero(cookie, sizeof(cookie));
	return ret;
}

/* ---- initiator ---- */

void wg_cookie_maker_init(struct wg_cookie_maker *m, const uint8_t peer_public[WG_KEY_LEN])
{
	sodium_memzero(m, sizeof(*m));
	derive_key(m->mac1_key, mac1_label, peer_public);
	derive_key(m->cookie_decryption_key, cookie_label, peer_public);
}

void wg_cookie_add_macs(struct wg_cookie_maker *m, uint8_t *msg, size_t len, uint64_t now)
{
	struct wg_macs *macs = (struct wg_macs *)(msg + len - sizeof(struct wg_macs));

	compute_mac1(macs->mac1, msg, len, m->mac1_key);
	memcpy(m->last_mac1_sent, macs->mac1, WG_MAC_LEN);
	m->have_sent_mac1 = true;

	if (m->cookie_birthdate &&
	    !wg_clock_after(now, m->cookie_birthdate,
			    (WG_COOKIE_SECRET_MAX_AGE - COOKIE_SECRET_LATENCY) * NSEC_PER_SEC))
		compute_mac2(macs->mac2, msg, len, m->cookie);
	else
		memset(macs->mac2, 0, WG_MAC_LEN);
}

bool wg_cookie_consume_reply(struct wg_cookie_maker *m, const struct wg_msg_cookie *msg, uint64_t now)
{
	uint8_t cookie[WG_COOKIE_LEN];
	bool ret = false;

	if (!m->have_sent_mac1)
		goto out;
	if (!xaead_open(cookie, msg->encrypted_cookie, sizeof(msg->encrypted_cookie),
			m->last_mac1_sent, WG_MAC_LEN, msg->nonce, m->cookie_decryption_key))
		goto out;
	memcpy(m->cookie, cookie, WG_COOKIE_LEN);
	m->cookie_birthdate = now ? now : 1; /* 0 means "no cookie" */
	/* One reply per mac1: a second copy of it is refused. */
	m->have_sent_mac1 = false;
	ret = true;
out:
	sodium_memzero(cookie, sizeof(cookie));
	return ret;
}
