/* The Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s handshake with WireGuard's
 * construction, identifier and prologue (whitepaper §5.4). This module only
 * computes: peers, indices, locks and timers belong to the caller. */
#ifndef WEFT_WG_NOISE_H
#define WEFT_WG_NOISE_H

#include <stdbool.h>
#include <stdint.h>

#include "wg/messages.h"

/* The device's own static key pair. */
struct wg_noise_identity {
	bool has_identity;
	uint8_t static_private[WG_KEY_LEN];
	uint8_t static_public[WG_KEY_LEN];
};

enum wg_noise_state {
	WG_NOISE_ZEROED = 0,
	WG_NOISE_CREATED_INITIATION,
	WG_NOISE_CONSUMED_INITIATION,
	WG_NOISE_CREATED_RESPONSE,
	WG_NOISE_CONSUMED_RESPONSE,
};

/* Per-peer handshake state. Owned by the peer, guarded by the peer's lock. */
struct wg_noise_handshake {
	enum wg_noise_state state;
	uint8_t remote_static[WG_KEY_LEN];
	uint8_t precomputed_static_static[WG_KEY_LEN]; /* DH(our static, their static) */
	uint8_t preshared_key[WG_KEY_LEN];             /* zeros when none */
	uint8_t ephemeral_private[WG_KEY_LEN];
	uint8_t remote_ephemeral[WG_KEY_LEN];
	uint8_t hash[BLAKE2S_HASH_SIZE];
	uint8_t chaining_key[BLAKE2S_HASH_SIZE];
	uint8_t latest_timestamp[WG_TIMESTAMP_LEN];    /* greatest initiation timestamp seen */
	uint32_t local_index;
	uint32_t remote_index;
};

/* The result of opening an initiation, before the caller has found the peer. */
struct wg_noise_initiation {
	uint8_t remote_static[WG_KEY_LEN];
	uint8_t remote_ephemeral[WG_KEY_LEN];
	uint8_t timestamp[WG_TIMESTAMP_LEN];
	uint8_t hash[BLAKE2S_HASH_SIZE];
	uint8_t chaining_key[BLAKE2S_HASH_SIZE];
	uint32_t remote_index;
};

/* Session keys derived at the end of a handshake. */
struct wg_noise_session {
	uint8_t send_key[WG_KEY_LEN];
	uint8_t recv_key[WG_KEY_LEN];
	uint32_t local_index;
	uint32_t remote_index;
	bool initiator;
};

/* Sets identity->static_public from static_private (zero key: no identity). */
void wg_noise_identity_set(struct wg_noise_identity *id, const uint8_t private_key[WG_KEY_LEN]);

/* Prepares a peer's handshake: remembers its public key and preshared key
 * (NULL = none) and precomputes the static-static DH. Call again whenever the
 * identity or the preshared key changes. State becomes ZEROED. hs must be
 * zeroed before the first call: a later call for the same remote key keeps
 * latest_timestamp, so reconfiguring does not reopen the replay window. */
void wg_noise_handshake_init(struct wg_noise_handshake *hs, const struct wg_noise_identity *id,
			     const uint8_t remote_static[WG_KEY_LEN],
			     const uint8_t preshared_key[WG_KEY_LEN]);
/* Wipes the ephemeral state and returns to ZEROED, keeping keys and timestamp. */
void wg_noise_handshake_clear(struct wg_noise_handshake *hs);

/* Initiator: fills everything but the MACs; state CREATED_INITIATION. */
bool wg_noise_create_initiation(struct wg_msg_initiation *msg, struct wg_noise_handshake *hs,
				const struct wg_noise_identity *id, uint32_t local_index);

/* Responder, step 1: decrypts the initiator's static key and timestamp. */
bool wg_noise_open_initiation(struct wg_noise_initiation *out, const struct wg_msg_initiation *msg,
			      const struct wg_noise_identity *id);
/* Responder, step 2, once the caller found the peer by out->remote_static
 * and checked its replay/flood rules: false when the timestamp is not newer
 * than the latest seen. Otherwise stores the state; CONSUMED_INITIATION. */
bool wg_noise_accept_initiation(struct wg_noise_handshake *hs, const struct wg_noise_initiation *in);

/* Responder: fills everything but the MACs; state CREATED_RESPONSE. */
bool wg_noise_create_response(struct wg_msg_response *msg, struct wg_noise_handshake *hs,
			      const struct wg_noise_identity *id, uint32_t local_index);
/* Initiator: requires CREATED_INITIATION and msg->receiver_index == local_index. */
bool wg_noise_consume_response(const struct wg_msg_response *msg, struct wg_noise_handshake *hs,
			       const struct wg_noise_identity *id);

/* After CREATED_RESPONSE or CONSUMED_RESPONSE: derives the transport keys,
 * wipes the handshake's ephemeral state (ZEROED). False in any other state. */
bool wg_noise_derive_session(struct wg_noise_session *out, struct wg_noise_handshake *hs);

#endif
