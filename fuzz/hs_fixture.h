/* The fixed world of the handshake fuzz target, shared with gen_corpus so
 * that the messages the generator writes are valid for the target in every
 * process: local (the identity of the device under test) and its one peer,
 * the remote, with fixed static keys, preshared key, cookie secrets and
 * indices, and a pending initiation from local to remote built from a fixed
 * ephemeral key and timestamp. Nothing here is random. The target installs
 * these keys and this state in a real device; the structures here are its
 * model of what the device holds. */
#ifndef WEFT_FUZZ_HS_FIXTURE_H
#define WEFT_FUZZ_HS_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "wg/cookie.h"
#include "wg/endpoint.h"
#include "wg/messages.h"
#include "wg/noise.h"

enum {
	HS_IDX_LOCAL_PENDING = 0x1badcafe,  /* local's index in its pending initiation */
	HS_IDX_LOCAL_RESPONSE = 0x2badcafe, /* local's index in the responses it sends */
	HS_IDX_REMOTE = 0x3badcafe,         /* remote's index in what it sends */
	HS_IDX_BUILT = 0x4badcafe,          /* sender index of harness-built initiations */
};

struct hs_fixture {
	struct wg_noise_identity local, remote;
	uint8_t psk[WG_KEY_LEN];
	union wg_sockaddr local_addr;     /* local as the remote sees it */
	/* local_checker has the secret the target gives the device's checker. */
	struct wg_cookie_checker local_checker, remote_checker;

	/* Local's state after sending `pending` to the remote: its handshake
	 * (CREATED_INITIATION) and its cookie maker (mac1 of pending sent). */
	struct wg_msg_initiation pending;
	struct wg_noise_handshake local_hs;
	struct wg_cookie_maker local_maker;

	/* The remote's cookie maker for local, holding no cookie. */
	struct wg_cookie_maker remote_maker;

	/* The cookie the remote's checker gives local_addr. */
	uint8_t local_cookie[WG_COOKIE_LEN];
};

/* Builds the world; aborts if the hand-built pending state does not
 * complete a handshake with the remote. */
void hs_fixture_init(struct hs_fixture *f, uint64_t now);

/* Sets both checkers' secrets to their fixed values, born at now, so that a
 * cookie does not depend on when or in which process it is computed. */
void hs_fixture_fix_secrets(struct hs_fixture *f, uint64_t now);

/* The remote's maker after one cookie round trip with local's checker from
 * addr: it holds the cookie local gives that address (and port). */
void hs_fixture_take_cookie(struct hs_fixture *f, struct wg_cookie_maker *m,
			    const union wg_sockaddr *addr, uint64_t now);

/* An initiation from `from` to the peer of `hs`, made as
 * wg_noise_create_initiation makes it but from a given ephemeral key and
 * timestamp; hs becomes CREATED_INITIATION. MACs are left zero. */
bool hs_fixture_initiation(struct wg_msg_initiation *msg, struct wg_noise_handshake *hs,
			   const struct wg_noise_identity *from, const uint8_t e_priv[WG_KEY_LEN],
			   const uint8_t timestamp[WG_TIMESTAMP_LEN], uint32_t sender_index);

#endif
