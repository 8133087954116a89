/* libFuzzer target for the handshake messages (initiation, response, cookie
 * reply) as the handshake thread receives them: wg/handshake.c's
 * process_packet is static, so this runs the same public functions in the
 * same order: the size gate of wg_receive, wg_cookie_validate (without and
 * with the cookie check), a cookie reply when under load,
 * wg_noise_open_initiation + peer lookup + wg_noise_accept_initiation and
 * the response, wg_noise_consume_response against the pending handshake,
 * wg_cookie_consume_reply. The world is fixed (hs_fixture.h) and restored
 * before every input, so an input always takes the same path.
 *
 * Input: one flags byte, then either a whole message, type byte first, or,
 * with F_BUILD, the fields of two initiations the harness seals itself so
 * that the accept logic sees any key and timestamp. Not modelled, being
 * time-dependent and no parsers: the rate limiter and the 1/50 s guard. */
#include <endian.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "fuzz/hs_fixture.h"
#include "wg/clock.h"
#include "wg/log.h"

#define CHECK(cond)                                                                    \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "fuzz_handshake: check failed at %s:%d: %s\n", \
				__FILE__, __LINE__, #cond);                            \
			abort();                                                       \
		}                                                                      \
	} while (0)

enum {
	F_FIX_MACS = 1 << 0,   /* recompute the MACs as the remote would: mutations reach Noise */
	F_UNDER_LOAD = 1 << 1, /* the handshake queue is past its load mark */
	F_SRC_V6 = 1 << 2,     /* the datagram came from the remote's IPv6 address */
	F_HAS_COOKIE = 1 << 3, /* the remote holds a cookie for that address */
	F_BUILD = 1 << 4,      /* the rest: private key, ephemeral key, two timestamps */
};

enum outcome {
	OUT_GATE,         /* wg_receive would not have queued it */
	OUT_BAD_MAC,
	OUT_COOKIE_SENT,  /* under load without mac2: answered with a cookie */
	OUT_INIT_BAD,     /* does not open */
	OUT_INIT_UNKNOWN, /* opens, from a key that is not our peer's */
	OUT_INIT_OLD,     /* timestamp not newer than the latest seen */
	OUT_INIT_OK,
	OUT_RESP_BAD,
	OUT_RESP_OK,
	OUT_COOKIE_BAD,
	OUT_COOKIE_OK,
};

/* What the handshake thread and the peer hold; restored for every input. */
struct state {
	uint64_t now;
	unsigned int flags;
	const union wg_sockaddr *src;
	struct wg_noise_handshake hs;        /* local's handshake with the remote */
	struct wg_cookie_maker local_maker;  /* local's maker for the remote */
	struct wg_cookie_maker remote_maker; /* the remote's maker for local */
	enum wg_cookie_result mac_plain, mac_cookie;
	struct wg_msg_response resp;         /* local's answer to an accepted initiation */
	struct wg_noise_session session;     /* from an accepted initiation or response */
};

static struct hs_fixture fx;
static bool trace; /* FUZZ_TRACE=1: print each message's outcome */

static const char *const outcome_names[] = {
	"gate", "bad_mac", "cookie_sent", "init_bad", "init_unknown", "init_old", "init_ok",
	"resp_bad", "resp_ok", "cookie_bad", "cookie_ok",
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	wg_log_set_level(WG_LOG_SILENT);
	wg_clock_init();
	hs_fixture_init(&fx, wg_clock_now());
	trace = getenv("FUZZ_TRACE") != NULL;
	return 0;
}

static void restore(struct state *s, unsigned int flags)
{
	int v6 = !!(flags & F_SRC_V6);

	s->now = wg_clock_now();
	s->flags = flags;
	s->src = &fx.remote_addr[v6];
	hs_fixture_fix_secrets(&fx, s->now);
	s->hs = fx.local_hs;
	s->local_maker = fx.local_maker;
	if (flags & F_HAS_COOKIE) {
		s->remote_maker = fx.remote_maker_cookie[v6];
		s->remote_maker.cookie_birthdate = s->now;
	} else {
		s->remote_maker = fx.remote_maker;
	}
}

/* wg_receive's gate: the type byte and the exact size. */
static bool queued_by_receive(const uint8_t *msg, size_t len)
{
	if (len < sizeof(struct wg_message_header))
		return false;
	switch (msg[0]) {
	case WG_MSG_HANDSHAKE_INITIATION:
		return len == sizeof(struct wg_msg_initiation);
	case WG_MSG_HANDSHAKE_RESPONSE:
		return len == sizeof(struct wg_msg_response);
	case WG_MSG_HANDSHAKE_COOKIE:
		return len == sizeof(struct wg_msg_cookie);
	}
	return false;
}

static enum outcome send_cookie(struct state *s, const uint8_t *msg, size_t len)
{
	struct wg_cookie_maker m = s->remote_maker;
	uint8_t again[sizeof(struct wg_msg_initiation)];
	struct wg_msg_cookie reply;
	uint32_t sender;
	bool expect, ok;

	memcpy(&sender, msg + offsetof(struct wg_msg_initiation, sender_index), sizeof(sender));
	CHECK(wg_cookie_create_reply(&reply, &fx.local_checker, msg, len, le32toh(sender), s->src,
				     s->now));
	CHECK(reply.receiver_index == sender);
	/* The remote takes the reply iff it sent this mac1, and its next
	 * message then carries a mac2 we accept from that address. */
	expect = m.have_sent_mac1 &&
		 !memcmp(m.last_mac1_sent, msg + len - sizeof(struct wg_macs), WG_MAC_LEN);
	ok = wg_cookie_consume_reply(&m, &reply, s->now);
	CHECK(ok == expect);
	if (ok) {
		memcpy(again, msg, len);
		wg_cookie_add_macs(&m, again, len, s->now);
		CHECK(wg_cookie_validate(&fx.local_checker, again, len, s->src, true, s->now) ==
		      WG_COOKIE_VALID_MAC_WITH_COOKIE);
	}
	return OUT_COOKIE_SENT;
}

static enum outcome consume_initiation(struct state *s, const uint8_t *msg)
{
	struct wg_noise_initiation in;
	enum outcome out;

	if (!wg_noise_open_initiation(&in, (const struct wg_msg_initiation *)msg, &fx.local)) {
		out = OUT_INIT_BAD;
		goto done;
	}
	/* wg_device_lookup_peer: the remote is the one peer. */
	if (sodium_memcmp(in.remote_static, fx.remote.static_public, WG_KEY_LEN)) {
		out = OUT_INIT_UNKNOWN;
		goto done;
	}
	if (!wg_noise_accept_initiation(&s->hs, &in)) {
		out = OUT_INIT_OLD;
		goto done;
	}
	/* Accepted: answering and deriving the session cannot fail now. */
	CHECK(wg_noise_create_response(&s->resp, &s->hs, &fx.local, HS_IDX_LOCAL_RESPONSE));
	wg_cookie_add_macs(&s->local_maker, (uint8_t *)&s->resp, sizeof(s->resp), s->now);
	CHECK(wg_cookie_validate(&fx.remote_checker, (const uint8_t *)&s->resp, sizeof(s->resp),
				 &fx.local_addr, false, s->now) == WG_COOKIE_VALID_MAC_NO_COOKIE);
	CHECK(wg_noise_derive_session(&s->session, &s->hs));
	CHECK(!s->session.initiator);
	CHECK(s->session.local_index == HS_IDX_LOCAL_RESPONSE);
	CHECK(s->session.remote_index == in.remote_index);
	CHECK(s->hs.state == WG_NOISE_ZEROED);
	out = OUT_INIT_OK;
done:
	sodium_memzero(&in, sizeof(in));
	return out;
}

static enum outcome consume_response(struct state *s, const uint8_t *msg)
{
	const struct wg_msg_response *m = (const struct wg_msg_response *)msg;

	/* wg_index_get_handshake: only the pending initiation's index names a peer. */
	if (le32toh(m->receiver_index) != HS_IDX_LOCAL_PENDING)
		return OUT_RESP_BAD;
	if (!wg_noise_consume_response(m, &s->hs, &fx.local))
		return OUT_RESP_BAD;
	CHECK(wg_noise_derive_session(&s->session, &s->hs));
	CHECK(s->session.initiator);
	CHECK(s->session.local_index == HS_IDX_LOCAL_PENDING);
	CHECK(s->session.remote_index == le32toh(m->sender_index));
	return OUT_RESP_OK;
}

static enum outcome consume_cookie(struct state *s, const uint8_t *msg)
{
	const struct wg_msg_cookie *m = (const struct wg_msg_cookie *)msg;

	if (le32toh(m->receiver_index) != HS_IDX_LOCAL_PENDING)
		return OUT_COOKIE_BAD;
	if (!wg_cookie_consume_reply(&s->local_maker, m, s->now))
		return OUT_COOKIE_BAD;
	/* Only the remote can have made it, and it gives local_addr this cookie. */
	CHECK(!memcmp(s->local_maker.cookie, fx.local_cookie, WG_COOKIE_LEN));
	CHECK(!wg_cookie_consume_reply(&s->local_maker, m, s->now)); /* one reply per mac1 */
	return OUT_COOKIE_OK;
}

/* process_packet, from the handshake queue on. */
static enum outcome process(struct state *s, const uint8_t *msg, size_t len)
{
	bool load = s->flags & F_UNDER_LOAD;
	enum wg_cookie_result mac;

	if (!queued_by_receive(msg, len))
		return OUT_GATE;
	if (msg[0] == WG_MSG_HANDSHAKE_COOKIE)
		return consume_cookie(s, msg);
	s->mac_plain = wg_cookie_validate(&fx.local_checker, msg, len, s->src, false, s->now);
	s->mac_cookie = wg_cookie_validate(&fx.local_checker, msg, len, s->src, true, s->now);
	CHECK(s->mac_plain != WG_COOKIE_VALID_MAC_WITH_COOKIE);
	CHECK((s->mac_plain == WG_COOKIE_INVALID_MAC) == (s->mac_cookie == WG_COOKIE_INVALID_MAC));
	mac = load ? s->mac_cookie : s->mac_plain;
	if (load && mac == WG_COOKIE_VALID_MAC_NO_COOKIE)
		return send_cookie(s, msg, len);
	if (mac != (load ? WG_COOKIE_VALID_MAC_WITH_COOKIE : WG_COOKIE_VALID_MAC_NO_COOKIE))
		return OUT_BAD_MAC;
	if (msg[0] == WG_MSG_HANDSHAKE_INITIATION)
		return consume_initiation(s, msg);
	return consume_response(s, msg);
}

/* The MACs of a message the remote sent, as the remote computes them. */
static void check_fixed_macs(const struct state *s, enum outcome out)
{
	if (out == OUT_GATE || out == OUT_COOKIE_OK || out == OUT_COOKIE_BAD)
		return;
	CHECK(s->mac_plain == WG_COOKIE_VALID_MAC_NO_COOKIE);
	CHECK(s->mac_cookie == ((s->flags & F_HAS_COOKIE) ? WG_COOKIE_VALID_MAC_WITH_COOKIE :
							     WG_COOKIE_VALID_MAC_NO_COOKIE));
}

static void run_message(struct state *s, const uint8_t *data, size_t len)
{
	/* An exact-size copy: reading past the datagram trips ASan. */
	uint8_t *msg = malloc(len ? len : 1);
	enum outcome out;

	CHECK(msg);
	memcpy(msg, data, len);
	if ((s->flags & F_FIX_MACS) && queued_by_receive(msg, len) &&
	    msg[0] != WG_MSG_HANDSHAKE_COOKIE)
		wg_cookie_add_macs(&s->remote_maker, msg, len, s->now);
	out = process(s, msg, len);
	if (s->flags & F_FIX_MACS)
		check_fixed_macs(s, out);
	if (trace)
		fprintf(stderr, "flags %#x: %s\n", s->flags, outcome_names[out]);
	free(msg);
}

struct build_fields {
	uint8_t private_key[WG_KEY_LEN];
	uint8_t ephemeral[WG_KEY_LEN];
	uint8_t timestamp[2][WG_TIMESTAMP_LEN];
};

/* Two initiations sealed by the harness from a fuzzed static key, ephemeral
 * key and timestamps: each must open, and is accepted exactly when it comes
 * from our peer with a timestamp newer than the newest accepted before; the
 * initiator then completes the handshake with the same keys. */
static void run_build(struct state *s, const uint8_t *data, size_t len)
{
	struct build_fields f = { 0 };
	struct wg_noise_identity x;
	struct wg_noise_handshake xhs = { 0 };
	struct wg_noise_session xs;
	struct wg_msg_initiation m;
	uint8_t latest[WG_TIMESTAMP_LEN] = { 0 };
	bool is_peer;

	memcpy(&f, data, len < sizeof(f) ? len : sizeof(f));
	wg_noise_identity_set(&x, f.private_key);
	if (!x.has_identity)
		goto out;
	is_peer = !memcmp(x.static_public, fx.remote.static_public, WG_KEY_LEN);
	wg_noise_handshake_init(&xhs, &x, fx.local.static_public, fx.psk);
	for (int i = 0; i < 2; i++) {
		enum outcome out, want;

		CHECK(hs_fixture_initiation(&m, &xhs, &x, f.ephemeral, f.timestamp[i], HS_IDX_BUILT));
		wg_cookie_add_macs(&s->remote_maker, (uint8_t *)&m, sizeof(m), s->now);
		out = process(s, (const uint8_t *)&m, sizeof(m));
		check_fixed_macs(s, out);
		if (trace)
			fprintf(stderr, "flags %#x build %d: %s\n", s->flags, i, outcome_names[out]);
		if ((s->flags & F_UNDER_LOAD) && !(s->flags & F_HAS_COOKIE))
			want = OUT_COOKIE_SENT;
		else if (!is_peer)
			want = OUT_INIT_UNKNOWN;
		else if (memcmp(f.timestamp[i], latest, WG_TIMESTAMP_LEN) > 0)
			want = OUT_INIT_OK;
		else
			want = OUT_INIT_OLD;
		CHECK(out == want);
		if (out != OUT_INIT_OK)
			continue;
		memcpy(latest, f.timestamp[i], WG_TIMESTAMP_LEN);
		CHECK(wg_noise_consume_response(&s->resp, &xhs, &x));
		CHECK(wg_noise_derive_session(&xs, &xhs));
		CHECK(xs.initiator && xs.remote_index == HS_IDX_LOCAL_RESPONSE);
		CHECK(!memcmp(xs.send_key, s->session.recv_key, WG_KEY_LEN));
		CHECK(!memcmp(xs.recv_key, s->session.send_key, WG_KEY_LEN));
	}
out:
	sodium_memzero(&f, sizeof(f));
	sodium_memzero(&x, sizeof(x));
	sodium_memzero(&xhs, sizeof(xhs));
	sodium_memzero(&xs, sizeof(xs));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct state s;

	if (!size)
		return 0;
	restore(&s, data[0]);
	if (data[0] & F_BUILD)
		run_build(&s, data + 1, size - 1);
	else
		run_message(&s, data + 1, size - 1);
	sodium_memzero(&s, sizeof(s));
	return 0;
}
