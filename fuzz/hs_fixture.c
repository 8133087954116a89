/* The handshake fuzz target's fixed world (see hs_fixture.h). */
#include "fuzz/hs_fixture.h"

#include <arpa/inet.h>
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "crypto/tai64n.h"
#include "crypto/x25519.h"
#include "wg/noise_internal.h"

static void fill(uint8_t *out, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		out[i] = (uint8_t)(seed + 37 * i);
}

static void fail(const char *what)
{
	fprintf(stderr, "hs_fixture: %s\n", what);
	abort();
}

void hs_fixture_fix_secrets(struct hs_fixture *f, uint64_t now)
{
	fill(f->local_checker.secret, sizeof(f->local_checker.secret), 0x51);
	f->local_checker.secret_birthdate = now;
	fill(f->remote_checker.secret, sizeof(f->remote_checker.secret), 0x52);
	f->remote_checker.secret_birthdate = now;
}

bool hs_fixture_initiation(struct wg_msg_initiation *msg, struct wg_noise_handshake *hs,
			   const struct wg_noise_identity *from, const uint8_t e_priv[WG_KEY_LEN],
			   const uint8_t timestamp[WG_TIMESTAMP_LEN], uint32_t sender_index)
{
	struct wg_noise_symmetric st;
	uint8_t e[WG_KEY_LEN];
	bool ret = false;

	if (!from->has_identity)
		goto out;
	memcpy(e, e_priv, WG_KEY_LEN);
	x25519_clamp(e); /* as x25519_generate hands it out */
	memset(msg, 0, sizeof(*msg));
	msg->header.type = WG_MSG_HANDSHAKE_INITIATION;
	msg->sender_index = htole32(sender_index);
	if (!wg_noise_ik_write_msg1(&st, msg->unencrypted_ephemeral, &wg_noise_wireguard_protocol,
				    from->static_private, from->static_public, hs->remote_static,
				    hs->precomputed_static_static, e, timestamp, WG_TIMESTAMP_LEN))
		goto out;
	wg_noise_handshake_clear(hs);
	memcpy(hs->ephemeral_private, e, WG_KEY_LEN);
	hs->local_index = sender_index;
	memcpy(hs->chaining_key, st.chaining_key, sizeof(hs->chaining_key));
	memcpy(hs->hash, st.hash, sizeof(hs->hash));
	hs->state = WG_NOISE_CREATED_INITIATION;
	ret = true;
out:
	sodium_memzero(&st, sizeof(st));
	sodium_memzero(e, sizeof(e));
	return ret;
}

static void set_addr4(union wg_sockaddr *a, const char *ip, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->in4.sin_family = AF_INET;
	a->in4.sin_port = htons(port);
	inet_pton(AF_INET, ip, &a->in4.sin_addr);
}

void hs_fixture_take_cookie(struct hs_fixture *f, struct wg_cookie_maker *m,
			    const union wg_sockaddr *addr, uint64_t now)
{
	struct wg_msg_initiation msg = f->pending; /* any message of the right size */
	struct wg_msg_cookie reply;

	*m = f->remote_maker;
	wg_cookie_add_macs(m, (uint8_t *)&msg, sizeof(msg), now);
	if (!wg_cookie_create_reply(&reply, &f->local_checker, (const uint8_t *)&msg, sizeof(msg),
				    HS_IDX_REMOTE, addr, now) ||
	    !wg_cookie_consume_reply(m, &reply, now))
		fail("cookie round trip to the remote failed");
}

/* The pending state must be one a real remote completes. */
static void check_pending(struct hs_fixture *f, uint64_t now)
{
	struct wg_noise_handshake local = f->local_hs, remote = { 0 };
	struct wg_noise_session ls, rs;
	struct wg_noise_initiation in;
	struct wg_msg_response resp;

	wg_noise_handshake_init(&remote, &f->remote, f->local.static_public, f->psk);
	if (wg_cookie_validate(&f->remote_checker, (const uint8_t *)&f->pending, sizeof(f->pending),
			       &f->local_addr, false, now) != WG_COOKIE_VALID_MAC_NO_COOKIE ||
	    !wg_noise_open_initiation(&in, &f->pending, &f->remote) ||
	    !wg_noise_accept_initiation(&remote, &in) ||
	    !wg_noise_create_response(&resp, &remote, &f->remote, HS_IDX_REMOTE) ||
	    !wg_noise_consume_response(&resp, &local, &f->local) ||
	    !wg_noise_derive_session(&ls, &local) || !wg_noise_derive_session(&rs, &remote) ||
	    memcmp(ls.send_key, rs.recv_key, WG_KEY_LEN) || memcmp(ls.recv_key, rs.send_key, WG_KEY_LEN))
		fail("the pending initiation does not complete a handshake");
	sodium_memzero(&local, sizeof(local));
	sodium_memzero(&remote, sizeof(remote));
	sodium_memzero(&ls, sizeof(ls));
	sodium_memzero(&rs, sizeof(rs));
}

void hs_fixture_init(struct hs_fixture *f, uint64_t now)
{
	uint8_t key[WG_KEY_LEN], e[WG_KEY_LEN], ts[WG_TIMESTAMP_LEN];
	const struct timespec when = { .tv_sec = 1700000000, .tv_nsec = 0 };
	struct wg_cookie_maker m;
	struct wg_msg_cookie reply;

	if (sodium_init() < 0)
		fail("sodium_init");
	memset(f, 0, sizeof(*f));
	fill(key, sizeof(key), 0x11);
	wg_noise_identity_set(&f->local, key);
	fill(key, sizeof(key), 0x22);
	wg_noise_identity_set(&f->remote, key);
	fill(f->psk, sizeof(f->psk), 0x33);

	set_addr4(&f->local_addr, "192.0.2.1", 51820);

	wg_cookie_checker_init(&f->local_checker);
	wg_cookie_checker_set_key(&f->local_checker, f->local.static_public);
	wg_cookie_checker_init(&f->remote_checker);
	wg_cookie_checker_set_key(&f->remote_checker, f->remote.static_public);
	hs_fixture_fix_secrets(f, now);

	wg_noise_handshake_init(&f->local_hs, &f->local, f->remote.static_public, f->psk);
	wg_cookie_maker_init(&f->local_maker, f->remote.static_public);
	fill(e, sizeof(e), 0x44);
	tai64n_encode(ts, &when);
	if (!hs_fixture_initiation(&f->pending, &f->local_hs, &f->local, e, ts, HS_IDX_LOCAL_PENDING))
		fail("cannot build the pending initiation");
	wg_cookie_add_macs(&f->local_maker, (uint8_t *)&f->pending, sizeof(f->pending), now);

	wg_cookie_maker_init(&f->remote_maker, f->local.static_public);

	m = f->local_maker;
	if (!wg_cookie_create_reply(&reply, &f->remote_checker, (const uint8_t *)&f->pending,
				    sizeof(f->pending), HS_IDX_LOCAL_PENDING, &f->local_addr, now) ||
	    !wg_cookie_consume_reply(&m, &reply, now))
		fail("cookie round trip to local failed");
	memcpy(f->local_cookie, m.cookie, WG_COOKIE_LEN);

	check_pending(f, now);
	sodium_memzero(key, sizeof(key));
	sodium_memzero(e, sizeof(e));
}
