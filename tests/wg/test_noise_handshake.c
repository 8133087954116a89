/* The WireGuard handshake end to end through wg/noise.h: two identities
 * complete it in both directions, with and without a preshared key, and
 * derive matching transport keys; replays, wrong keys, tampered fields,
 * wrong indices, wrong states and all-zero keys are refused. */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "wg/noise.h"

static int failures;

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__,   \
				__LINE__, #cond);                                \
			failures++;                                              \
		}                                                                \
	} while (0)

struct side {
	struct wg_noise_identity id;
	struct wg_noise_handshake hs; /* toward the other side */
};

static void make_identity(struct wg_noise_identity *id)
{
	uint8_t priv[WG_KEY_LEN];

	x25519_generate(priv);
	memset(id, 0, sizeof(*id));
	wg_noise_identity_set(id, priv);
}

/* a and b know each other; psk_a/psk_b may differ to test a mismatch. */
static void pair(struct side *a, struct side *b, const uint8_t *psk_a, const uint8_t *psk_b)
{
	memset(&a->hs, 0, sizeof(a->hs));
	memset(&b->hs, 0, sizeof(b->hs));
	wg_noise_handshake_init(&a->hs, &a->id, b->id.static_public, psk_a);
	wg_noise_handshake_init(&b->hs, &b->id, a->id.static_public, psk_b);
}

static bool all_zero(const void *p, size_t n)
{
	return sodium_is_zero(p, n);
}

/* The transport keys work: i seals, r opens, and the other way round. */
static void check_transport(const struct wg_noise_session *i, const struct wg_noise_session *r)
{
	static const uint8_t text[] = "the quick brown fox";
	uint8_t sealed[sizeof(text) + WG_TAG_LEN], opened[sizeof(text)];

	CHECK(aead_seal(sealed, text, sizeof(text), NULL, 0, 7, i->send_key));
	CHECK(aead_open(opened, sealed, sizeof(sealed), NULL, 0, 7, r->recv_key));
	CHECK(!memcmp(opened, text, sizeof(text)));
	CHECK(!aead_open(opened, sealed, sizeof(sealed), NULL, 0, 7, r->send_key));
	CHECK(aead_seal(sealed, text, sizeof(text), NULL, 0, 0, r->send_key));
	CHECK(aead_open(opened, sealed, sizeof(sealed), NULL, 0, 0, i->recv_key));
	CHECK(!memcmp(opened, text, sizeof(text)));
}

/* A full exchange, initiator -> responder, checking every step. */
static void handshake(struct side *ini, struct side *resp)
{
	struct wg_msg_initiation m1;
	struct wg_msg_response m2;
	struct wg_noise_initiation in;
	struct wg_noise_session si, sr;

	CHECK(wg_noise_create_initiation(&m1, &ini->hs, &ini->id, 0x11223344));
	CHECK(m1.header.type == WG_MSG_HANDSHAKE_INITIATION);
	CHECK(le32toh(m1.sender_index) == 0x11223344);
	CHECK(ini->hs.state == WG_NOISE_CREATED_INITIATION);

	CHECK(wg_noise_open_initiation(&in, &m1, &resp->id));
	CHECK(!memcmp(in.remote_static, ini->id.static_public, WG_KEY_LEN));
	CHECK(!memcmp(in.remote_ephemeral, m1.unencrypted_ephemeral, WG_KEY_LEN));
	CHECK(in.remote_index == 0x11223344);
	CHECK(wg_noise_accept_initiation(&resp->hs, &in));
	CHECK(resp->hs.state == WG_NOISE_CONSUMED_INITIATION);
	CHECK(!memcmp(resp->hs.latest_timestamp, in.timestamp, WG_TIMESTAMP_LEN));

	CHECK(wg_noise_create_response(&m2, &resp->hs, &resp->id, 0x55667788));
	CHECK(m2.header.type == WG_MSG_HANDSHAKE_RESPONSE);
	CHECK(le32toh(m2.sender_index) == 0x55667788);
	CHECK(le32toh(m2.receiver_index) == 0x11223344);
	CHECK(resp->hs.state == WG_NOISE_CREATED_RESPONSE);

	CHECK(wg_noise_consume_response(&m2, &ini->hs, &ini->id));
	CHECK(ini->hs.state == WG_NOISE_CONSUMED_RESPONSE);
	CHECK(!memcmp(ini->hs.hash, resp->hs.hash, sizeof(ini->hs.hash)));
	CHECK(!memcmp(ini->hs.chaining_key, resp->hs.chaining_key, sizeof(ini->hs.chaining_key)));

	CHECK(wg_noise_derive_session(&si, &ini->hs));
	CHECK(wg_noise_derive_session(&sr, &resp->hs));
	CHECK(si.initiator && !sr.initiator);
	CHECK(!memcmp(si.send_key, sr.recv_key, WG_KEY_LEN));
	CHECK(!memcmp(si.recv_key, sr.send_key, WG_KEY_LEN));
	CHECK(memcmp(si.send_key, si.recv_key, WG_KEY_LEN));
	CHECK(si.local_index == 0x11223344 && si.remote_index == 0x55667788);
	CHECK(sr.local_index == 0x55667788 && sr.remote_index == 0x11223344);
	check_transport(&si, &sr);

	/* Forward secrecy: the handshake secrets are gone, the keys are kept. */
	for (struct side *s = ini; s; s = (s == ini) ? resp : NULL) {
		CHECK(s->hs.state == WG_NOISE_ZEROED);
		CHECK(all_zero(s->hs.ephemeral_private, WG_KEY_LEN));
		CHECK(all_zero(s->hs.remote_ephemeral, WG_KEY_LEN));
		CHECK(all_zero(s->hs.hash, sizeof(s->hs.hash)));
		CHECK(all_zero(s->hs.chaining_key, sizeof(s->hs.chaining_key)));
		CHECK(!all_zero(s->hs.remote_static, WG_KEY_LEN));
		CHECK(!all_zero(s->hs.precomputed_static_static, WG_KEY_LEN));
	}
	CHECK(!all_zero(resp->hs.latest_timestamp, WG_TIMESTAMP_LEN));
	/* Only once. */
	CHECK(!wg_noise_derive_session(&si, &ini->hs));
}

static void test_complete(void)
{
	struct side a, b;
	uint8_t psk[WG_KEY_LEN];

	make_identity(&a.id);
	make_identity(&b.id);
	CHECK(a.id.has_identity && b.id.has_identity);

	pair(&a, &b, NULL, NULL);
	CHECK(all_zero(a.hs.preshared_key, WG_KEY_LEN));
	CHECK(!memcmp(a.hs.precomputed_static_static, b.hs.precomputed_static_static, WG_KEY_LEN));
	handshake(&a, &b);
	handshake(&b, &a); /* the other direction, on the same handshake state */

	randombytes_buf(psk, sizeof(psk));
	pair(&a, &b, psk, psk);
	handshake(&a, &b);
	handshake(&b, &a);
}

static void test_psk_mismatch(void)
{
	struct side a, b;
	uint8_t psk[WG_KEY_LEN], other[WG_KEY_LEN];
	struct wg_msg_initiation m1;
	struct wg_msg_response m2;
	struct wg_noise_initiation in;

	make_identity(&a.id);
	make_identity(&b.id);
	randombytes_buf(psk, sizeof(psk));
	memcpy(other, psk, sizeof(psk));
	other[31] ^= 1;

	for (int psk_on_initiator = 0; psk_on_initiator < 2; psk_on_initiator++) {
		/* psk against another psk, and psk against none. */
		for (int none = 0; none < 2; none++) {
			const uint8_t *pa = psk, *pb = none ? NULL : other;

			if (!psk_on_initiator) {
				const uint8_t *t = pa;
				pa = pb;
				pb = t;
			}
			pair(&a, &b, pa, pb);
			CHECK(wg_noise_create_initiation(&m1, &a.hs, &a.id, 1));
			/* The psk enters in message 2 only. */
			CHECK(wg_noise_open_initiation(&in, &m1, &b.id));
			CHECK(wg_noise_accept_initiation(&b.hs, &in));
			CHECK(wg_noise_create_response(&m2, &b.hs, &b.id, 2));
			CHECK(!wg_noise_consume_response(&m2, &a.hs, &a.id));
			CHECK(a.hs.state == WG_NOISE_CREATED_INITIATION);
		}
	}
}

/* Adds delta (-255..255) to a 96-bit big-endian timestamp. */
static void timestamp_add(uint8_t ts[WG_TIMESTAMP_LEN], int delta)
{
	int carry = delta;

	for (int i = WG_TIMESTAMP_LEN - 1; i >= 0 && carry; i--) {
		int v = ts[i] + carry;

		ts[i] = (uint8_t)(v & 0xff);
		carry = v < 0 ? -1 : v >> 8;
	}
}

static void test_replay(void)
{
	struct side a, b;
	struct wg_msg_initiation m1;
	struct wg_msg_response m2;
	struct wg_noise_initiation in, in2;

	make_identity(&a.id);
	make_identity(&b.id);
	pair(&a, &b, NULL, NULL);

	CHECK(wg_noise_create_initiation(&m1, &a.hs, &a.id, 9));
	CHECK(wg_noise_open_initiation(&in, &m1, &b.id));
	CHECK(wg_noise_accept_initiation(&b.hs, &in));
	CHECK(wg_noise_create_response(&m2, &b.hs, &b.id, 10));

	/* The same message again: it still decrypts, but is not newer. */
	CHECK(wg_noise_open_initiation(&in2, &m1, &b.id));
	CHECK(!wg_noise_accept_initiation(&b.hs, &in2));
	CHECK(b.hs.state == WG_NOISE_CREATED_RESPONSE); /* untouched */

	/* The rule itself: older and equal timestamps lose, newer wins. */
	in2 = in;
	timestamp_add(in2.timestamp, -1);
	CHECK(!wg_noise_accept_initiation(&b.hs, &in2));
	timestamp_add(in2.timestamp, 2);
	CHECK(wg_noise_accept_initiation(&b.hs, &in2));
	CHECK(!wg_noise_accept_initiation(&b.hs, &in2));

	/* Reconfiguring the peer (new psk) keeps the replay window shut. */
	wg_noise_handshake_init(&b.hs, &b.id, b.hs.remote_static, NULL);
	CHECK(!wg_noise_accept_initiation(&b.hs, &in));
	CHECK(!wg_noise_accept_initiation(&b.hs, &in2));
}

static void test_wrong_peer(void)
{
	struct side a, b, c;
	struct wg_msg_initiation m1;
	struct wg_noise_initiation in;

	make_identity(&a.id);
	make_identity(&b.id);
	make_identity(&c.id);
	pair(&a, &b, NULL, NULL);
	memset(&c.hs, 0, sizeof(c.hs));
	wg_noise_handshake_init(&c.hs, &b.id, c.id.static_public, NULL); /* b's handshake with c */

	CHECK(wg_noise_create_initiation(&m1, &a.hs, &a.id, 1));
	/* Addressed to b: c cannot open it. */
	CHECK(!wg_noise_open_initiation(&in, &m1, &c.id));
	/* b opens it, but it is not from the peer whose state is offered. */
	CHECK(wg_noise_open_initiation(&in, &m1, &b.id));
	CHECK(!wg_noise_accept_initiation(&c.hs, &in));
	CHECK(c.hs.state == WG_NOISE_ZEROED);
}

static void test_tamper(void)
{
	struct side a, b;
	struct wg_msg_initiation m1, bad1;
	struct wg_msg_response m2, bad2;
	struct wg_noise_initiation in;
	const size_t m1_from = offsetof(struct wg_msg_initiation, unencrypted_ephemeral);
	const size_t m1_to = offsetof(struct wg_msg_initiation, macs);
	const size_t m2_from = offsetof(struct wg_msg_response, unencrypted_ephemeral);
	const size_t m2_to = offsetof(struct wg_msg_response, macs);

	make_identity(&a.id);
	make_identity(&b.id);
	pair(&a, &b, NULL, NULL);
	CHECK(wg_noise_create_initiation(&m1, &a.hs, &a.id, 1));

	/* Every byte of ephemeral, encrypted static and encrypted timestamp. */
	for (size_t i = m1_from; i < m1_to; i++) {
		for (int bit = 0; bit < 8; bit += 7) {
			bad1 = m1;
			((uint8_t *)&bad1)[i] ^= (uint8_t)(1u << bit);
			CHECK(!wg_noise_open_initiation(&in, &bad1, &b.id));
		}
	}
	CHECK(wg_noise_open_initiation(&in, &m1, &b.id));
	CHECK(wg_noise_accept_initiation(&b.hs, &in));
	CHECK(wg_noise_create_response(&m2, &b.hs, &b.id, 2));

	/* Every byte of ephemeral and encrypted nothing; a failure must leave
	 * the initiator able to take the genuine response afterwards. */
	for (size_t i = m2_from; i < m2_to; i++) {
		bad2 = m2;
		((uint8_t *)&bad2)[i] ^= 0x01;
		CHECK(!wg_noise_consume_response(&bad2, &a.hs, &a.id));
		CHECK(a.hs.state == WG_NOISE_CREATED_INITIATION);
	}
	/* A response for another handshake (wrong receiver index). */
	bad2 = m2;
	bad2.receiver_index = htole32(le32toh(m2.receiver_index) + 1);
	CHECK(!wg_noise_consume_response(&bad2, &a.hs, &a.id));

	CHECK(wg_noise_consume_response(&m2, &a.hs, &a.id));
	/* Consumed once; the state machine refuses a second copy. */
	CHECK(!wg_noise_consume_response(&m2, &a.hs, &a.id));
}

static void test_states(void)
{
	struct side a, b;
	struct wg_msg_response m2;
	struct wg_noise_session s;

	make_identity(&a.id);
	make_identity(&b.id);
	pair(&a, &b, NULL, NULL);
	CHECK(!wg_noise_create_response(&m2, &b.hs, &b.id, 1)); /* nothing consumed */
	CHECK(!wg_noise_derive_session(&s, &b.hs));
	memset(&m2, 0, sizeof(m2));
	CHECK(!wg_noise_consume_response(&m2, &a.hs, &a.id)); /* nothing sent */
}

static void test_zero_keys(void)
{
	static const uint8_t zero[WG_KEY_LEN];
	struct side a, b;
	struct wg_noise_identity none;
	struct wg_msg_initiation m1;
	struct wg_noise_initiation in;

	/* A zero private key is no identity. */
	memset(&none, 0xaa, sizeof(none));
	wg_noise_identity_set(&none, zero);
	CHECK(!none.has_identity);
	CHECK(all_zero(none.static_public, WG_KEY_LEN));

	make_identity(&a.id);
	make_identity(&b.id);
	memset(&a.hs, 0, sizeof(a.hs));
	wg_noise_handshake_init(&a.hs, &none, b.id.static_public, NULL);
	CHECK(all_zero(a.hs.precomputed_static_static, WG_KEY_LEN));
	CHECK(!wg_noise_create_initiation(&m1, &a.hs, &none, 1));

	/* A peer whose public key is zero (a low-order point) gives a zero DH. */
	memset(&a.hs, 0, sizeof(a.hs));
	wg_noise_handshake_init(&a.hs, &a.id, zero, NULL);
	CHECK(all_zero(a.hs.precomputed_static_static, WG_KEY_LEN));
	CHECK(!wg_noise_create_initiation(&m1, &a.hs, &a.id, 1));
	CHECK(a.hs.state == WG_NOISE_ZEROED);

	/* Without an identity nothing can be opened. */
	pair(&a, &b, NULL, NULL);
	CHECK(wg_noise_create_initiation(&m1, &a.hs, &a.id, 1));
	CHECK(!wg_noise_open_initiation(&in, &m1, &none));

	/* An initiation whose ephemeral is a low-order point is refused. */
	memset(m1.unencrypted_ephemeral, 0, WG_KEY_LEN);
	CHECK(!wg_noise_open_initiation(&in, &m1, &b.id));

	/* The public key matches the clamped private key. */
	{
		uint8_t priv[WG_KEY_LEN], pub[WG_KEY_LEN];
		struct wg_noise_identity id;

		randombytes_buf(priv, sizeof(priv));
		wg_noise_identity_set(&id, priv);
		x25519_clamp(priv);
		CHECK(id.has_identity && !memcmp(id.static_private, priv, WG_KEY_LEN));
		CHECK(x25519_public(pub, priv) && !memcmp(pub, id.static_public, WG_KEY_LEN));
	}
}

int main(void)
{
	if (sodium_init() < 0)
		return 1;
	/* Both AEAD backends; the response's empty payload is the edge case. */
	aead_use(&aead_openssl);
	test_complete();
	aead_use(&aead_sodium);
	test_complete();
	test_psk_mismatch();
	test_replay();
	test_wrong_peer();
	test_tamper();
	test_states();
	test_zero_keys();
	if (failures) {
		fprintf(stderr, "test_noise_handshake: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_noise_handshake: ok\n");
	return 0;
}
