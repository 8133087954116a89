/* The generic layer under wg/noise.c: Noise symmetric-state operations and
 * IKpsk2 message processing, parameterised by protocol name, prologue,
 * payloads and ephemeral keys. WireGuard's functions in noise.h are thin
 * specialisations of these. Exposed only so tests can run the cacophony
 * vectors; production code calls noise.h. */
#ifndef WEFT_WG_NOISE_INTERNAL_H
#define WEFT_WG_NOISE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/aead.h"
#include "crypto/blake2s.h"
#include "crypto/x25519.h"

enum {
	WG_NOISE_DH_LEN = X25519_KEY_SIZE,
	WG_NOISE_HASH_LEN = BLAKE2S_HASH_SIZE,
	WG_NOISE_SYMMETRIC_KEY_LEN = AEAD_KEY_SIZE,
	/* -> e, es, s, ss: ephemeral, encrypted static, then payload + tag */
	WG_NOISE_IK_MSG1_OVERHEAD = WG_NOISE_DH_LEN + WG_NOISE_DH_LEN + AEAD_TAG_SIZE + AEAD_TAG_SIZE,
	/* <- e, ee, se, psk: ephemeral, then payload + tag */
	WG_NOISE_IK_MSG2_OVERHEAD = WG_NOISE_DH_LEN + AEAD_TAG_SIZE,
};

/* One instantiation of the pattern: WireGuard's, or a test vector's. */
struct wg_noise_protocol {
	const char *name;        /* e.g. "Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s" */
	const uint8_t *prologue; /* WireGuard: its identifier string */
	size_t prologue_len;
};

/* WireGuard's construction with its identifier as prologue (whitepaper §5.4). */
extern const struct wg_noise_protocol wg_noise_wireguard_protocol;

/* Noise's SymmetricState without the cipher key k: k lives only on the
 * stack of the message function that uses it, and is wiped there. */
struct wg_noise_symmetric {
	uint8_t chaining_key[WG_NOISE_HASH_LEN];
	uint8_t hash[WG_NOISE_HASH_LEN];
};

/* InitializeSymmetric(name) then MixHash(prologue). */
void wg_noise_symmetric_init(struct wg_noise_symmetric *st, const struct wg_noise_protocol *p);
/* h = HASH(h || data) */
void wg_noise_mix_hash(struct wg_noise_symmetric *st, const void *data, size_t len);
/* (ck, key) = KDF2(ck, ikm); key may be NULL (KDF1). */
void wg_noise_mix_key(struct wg_noise_symmetric *st, uint8_t key[WG_NOISE_SYMMETRIC_KEY_LEN],
		      const void *ikm, size_t len);
/* MixKey(DH(priv, pub)); false when the shared secret is all zero. */
bool wg_noise_mix_dh(struct wg_noise_symmetric *st, uint8_t key[WG_NOISE_SYMMETRIC_KEY_LEN],
		     const uint8_t priv[WG_NOISE_DH_LEN], const uint8_t pub[WG_NOISE_DH_LEN]);
/* MixKeyAndHash(psk): (ck, t, key) = KDF3(ck, psk); h = HASH(h || t). */
void wg_noise_mix_psk(struct wg_noise_symmetric *st, uint8_t key[WG_NOISE_SYMMETRIC_KEY_LEN],
		      const uint8_t psk[WG_NOISE_SYMMETRIC_KEY_LEN]);
/* dst = AEAD(key, 0, src, h) (len + tag bytes); h = HASH(h || dst). */
bool wg_noise_encrypt_and_hash(struct wg_noise_symmetric *st, uint8_t *dst, const uint8_t *src,
			       size_t len, const uint8_t key[WG_NOISE_SYMMETRIC_KEY_LEN]);
/* The reverse; h changes only when the tag verifies. dst == src is allowed. */
bool wg_noise_decrypt_and_hash(struct wg_noise_symmetric *st, uint8_t *dst, const uint8_t *src,
			       size_t src_len, const uint8_t key[WG_NOISE_SYMMETRIC_KEY_LEN]);
/* Split(): the initiator sends with the first key, the responder with the second. */
void wg_noise_split(uint8_t initiator_send[WG_NOISE_SYMMETRIC_KEY_LEN],
		    uint8_t responder_send[WG_NOISE_SYMMETRIC_KEY_LEN],
		    const struct wg_noise_symmetric *st);

/* The four halves of IKpsk2. Each works on a copy of the state and commits
 * it (and its other outputs) only on success, so a forged message leaves
 * the caller's state as it was. On failure the message buffer being
 * written may hold garbage.
 *
 * Initiator, message 1: writes WG_NOISE_IK_MSG1_OVERHEAD + payload_len bytes
 * to msg and sets *st. ss is DH(s, rs) when precomputed (all zero: fail),
 * or NULL to compute it here. */
bool wg_noise_ik_write_msg1(struct wg_noise_symmetric *st, uint8_t *msg,
			    const struct wg_noise_protocol *p,
			    const uint8_t s_priv[WG_NOISE_DH_LEN], const uint8_t s_pub[WG_NOISE_DH_LEN],
			    const uint8_t rs[WG_NOISE_DH_LEN], const uint8_t ss[WG_NOISE_DH_LEN],
			    const uint8_t e_priv[WG_NOISE_DH_LEN],
			    const uint8_t *payload, size_t payload_len);
/* Responder, message 1 of len bytes: sets *st, the initiator's static rs and
 * ephemeral re, and writes len - WG_NOISE_IK_MSG1_OVERHEAD payload bytes. */
bool wg_noise_ik_read_msg1(struct wg_noise_symmetric *st, uint8_t rs[WG_NOISE_DH_LEN],
			   uint8_t re[WG_NOISE_DH_LEN], uint8_t *payload,
			   const uint8_t *msg, size_t len, const struct wg_noise_protocol *p,
			   const uint8_t s_priv[WG_NOISE_DH_LEN], const uint8_t s_pub[WG_NOISE_DH_LEN]);
/* Responder, message 2: *st is the state after message 1; writes
 * WG_NOISE_IK_MSG2_OVERHEAD + payload_len bytes to msg. */
bool wg_noise_ik_write_msg2(struct wg_noise_symmetric *st, uint8_t *msg,
			    const uint8_t re[WG_NOISE_DH_LEN], const uint8_t rs[WG_NOISE_DH_LEN],
			    const uint8_t psk[WG_NOISE_SYMMETRIC_KEY_LEN],
			    const uint8_t e_priv[WG_NOISE_DH_LEN],
			    const uint8_t *payload, size_t payload_len);
/* Initiator, message 2 of len bytes: sets re and writes
 * len - WG_NOISE_IK_MSG2_OVERHEAD payload bytes. */
bool wg_noise_ik_read_msg2(struct wg_noise_symmetric *st, uint8_t re[WG_NOISE_DH_LEN],
			   uint8_t *payload, const uint8_t *msg, size_t len,
			   const uint8_t e_priv[WG_NOISE_DH_LEN], const uint8_t s_priv[WG_NOISE_DH_LEN],
			   const uint8_t psk[WG_NOISE_SYMMETRIC_KEY_LEN]);

#endif
