/* The WireGuard handshake, Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s (whitepaper
 * §5.4), in two layers: the generic Noise symmetric state and IKpsk2 message
 * processing (driven by the cacophony vectors in the tests), and WireGuard's
 * specialisation that fills the wire messages and the per-peer state.
 *
 * Security model: every byte of a received message is attacker-chosen until
 * its AEAD tag verifies. The readers work on copies of the state and commit
 * only on success, so a forged message cannot disturb a handshake in
 * progress. Keys and intermediate secrets on the stack are wiped at the one
 * exit of every function. */
#include "wg/noise.h"
#include "wg/noise_internal.h"

#include <endian.h>
#include <stddef.h>
#include <string.h>

#include <sodium.h>

static const char wg_construction[] = "Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s";
static const char wg_identifier[] = "WireGuard v1 zx2c4 Jason@zx2c4.com";

const struct wg_noise_protocol wg_noise_wireguard_protocol = {
	.name = wg_construction,
	.prologue = (const uint8_t *)wg_identifier,
	.prologue_len = sizeof(wg_identifier) - 1,
};

/* The generic messages are written straight into the wire structs, so the
 * Noise fields must sit back to back there. */
_Static_assert(offsetof(struct wg_msg_initiation, macs) -
			       offsetof(struct wg_msg_initiation, unencrypted_ephemeral) ==
		       WG_NOISE_IK_MSG1_OVERHEAD + WG_TIMESTAMP_LEN,
	       "initiation: e, s and timestamp are contiguous");
_Static_assert(offsetof(struct wg_msg_response, macs) -
			       offsetof(struct wg_msg_response, unencrypted_ephemeral) ==
		       WG_NOISE_IK_MSG2_OVERHEAD,
	       "response: e and the empty payload are contiguous");
_Static_assert((int)WG_KEY_LEN == (int)WG_NOISE_DH_LEN &&
		       (int)WG_KEY_LEN == (int)WG_NOISE_SYMMETRIC_KEY_LEN,
	       "one key size");

/* ---- Noise symmetric state ---- */

void wg_noise_symmetric_init(struct wg_noise_symmetric *st, const struct wg_noise_protocol *p)
{
	size_t len = strlen(p->name);

	/* Noise §5.2: a name that fits in HASHLEN is zero-padded, a longer
	 * one (WireGuard's is 37 bytes) is hashed. */
	if (len <= WG_NOISE_HASH_LEN) {
		memset(st->hash, 0, sizeof(st->hash));
		memcpy(st->hash, p->name, len);
	} else {
		blake2s(st->hash, sizeof(st->hash), p->name, len, NULL, 0);
	}
	memcpy(st->chaining_key, st->hash, sizeof(st->chaining_key));
	wg_noise_mix_hash(st, p->prologue, p->prologue_len);
}

void wg_noise_mix_hash(struct wg_noise_symmetric *st, const void *data, size_t len)
{
	struct blake2s_state b;

	blake2s_init(&b, WG_NOISE_HASH_LEN);
	blake2s_update(&b, st->hash, sizeof(st->hash));
	blake2s_update(&b, data, len);
	blake2s_final(&b, st->hash);
}

void wg_noise_mix_key(struct wg_noise_symmetric *st, uint8_t key[WG_NOISE_SYMMETRIC_KEY_LEN],
		      const void *ikm, size_t len)
{
	uint8_t ck[WG_NOISE_HASH_LEN];

	/* The KDF reads the old chaining key while writing the new one:
	 * go through a temporary rather than rely on its aliasing rules. */
	blake2s_hkdf(ck, key, NULL, ikm, len, st->chaining_key);
	memcpy(st->chaining_key, ck, sizeof(ck));
	sodium_memzero(ck, sizeof(ck));
}

bool wg_noise_mix_dh(struct wg_noise_symmetric *st, uint8_t key[WG_NOISE_SYMMETRIC_KEY_LEN],
		     const uint8_t priv[WG_NOISE_DH_LEN], const uint8_t pub[WG_NOISE_DH_LEN])
{
	uint8_t dh[WG_NOISE_DH_LEN];
	bool ret = false;

	/* An all-zero result means a low-order point: refuse it. */
	if (!x25519(dh, priv, pub))
		goto out;
	wg_noise_mix_key(st, key, dh, sizeof(dh));
	ret = true;
out:
	sodium_memzero(dh, sizeof(dh));
	return ret;
}

void wg_noise_mix_psk(struct wg_noise_symmetric *st, uint8_t key[WG_NOISE_SYMMETRIC_KEY_LEN],
		      const uint8_t psk[WG_NOISE_SYMMETRIC_KEY_LEN])
{
	uint8_t ck[WG_NOISE_HASH_LEN], tau[WG_NOISE_HASH_LEN];

	blake2s_hkdf(ck, tau, key, psk, WG_NOISE_SYMMETRIC_KEY_LEN, st->chaining_key);
	memcpy(st->chaining_key, ck, sizeof(ck));
	wg_noise_mix_hash(st, tau, sizeof(tau));
	sodium_memzero(ck, sizeof(ck));
	sodium_memzero(tau, sizeof(tau));
}

bool wg_noise_encrypt_and_hash(struct wg_noise_symmetric *st, uint8_t *dst, const uint8_t *src,
			       size_t len, const uint8_t key[WG_NOISE_SYMMETRIC_KEY_LEN])
{
	/* Every handshake key encrypts exactly once, so the nonce is 0. */
	if (!aead_seal(dst, src, len, st->hash, sizeof(st->hash), 0, key))
		return false;
	wg_noise_mix_hash(st, dst, len + AEAD_TAG_SIZE);
	return true;
}

bool wg_noise_decrypt_and_hash(struct wg_noise_symmetric *st, uint8_t *dst, const uint8_t *src,
			       size_t src_len, const uint8_t key[WG_NOISE_SYMMETRIC_KEY_LEN])
{
	struct wg_noise_symmetric next = *st;
	bool ret = false;

	if (src_len < AEAD_TAG_SIZE)
		goto out;
	/* Hash the ciphertext before opening: dst may overwrite src. */
	wg_noise_mix_hash(&next, src, src_len);
	if (!aead_open(dst, src, src_len, st->hash, sizeof(st->hash), 0, key))
		goto out;
	memcpy(st->hash, next.hash, sizeof(st->hash));
	ret = true;
out:
	sodium_memzero(&next, sizeof(next));
	return ret;
}

void wg_noise_split(uint8_t initiator_send[WG_NOISE_SYMMETRIC_KEY_LEN],
		    uint8_t responder_send[WG_NOISE_SYMMETRIC_KEY_LEN],
		    const struct wg_noise_symmetric *st)
{
	static const uint8_t nothing[1];

	blake2s_hkdf(initiator_send, responder_send, NULL, nothing, 0, st->chaining_key);
}

/* ---- IKpsk2 messages ---- */

/* The "e" token in a psk pattern: MixHash(e) and, because of the psk,
 * also MixKey(e) (Noise §9.2; WireGuard's C = KDF1(C, E)). */
static void mix_ephemeral(struct wg_noise_symmetric *st, const uint8_t e_pub[WG_NOISE_DH_LEN])
{
	wg_noise_mix_hash(st, e_pub, WG_NOISE_DH_LEN);
	wg_noise_mix_key(st, NULL, e_pub, WG_NOISE_DH_LEN);
}

bool wg_noise_ik_write_msg1(struct wg_noise_symmetric *out_st, uint8_t *msg,
			    const struct wg_noise_protocol *p,
			    const uint8_t s_priv[WG_NOISE_DH_LEN], const uint8_t s_pub[WG_NOISE_DH_LEN],
			    const uint8_t rs[WG_NOISE_DH_LEN], const uint8_t ss[WG_NOISE_DH_LEN],
			    const uint8_t e_priv[WG_NOISE_DH_LEN],
			    const uint8_t *payload, size_t payload_len)
{
	uint8_t *e_pub = msg;
	uint8_t *enc_static = e_pub + WG_NOISE_DH_LEN;
	uint8_t *enc_payload = enc_static + WG_NOISE_DH_LEN + AEAD_TAG_SIZE;
	uint8_t key[WG_NOISE_SYMMETRIC_KEY_LEN];
	struct wg_noise_symmetric st;
	bool ret = false;

	wg_noise_symmetric_init(&st, p);
	wg_noise_mix_hash(&st, rs, WG_NOISE_DH_LEN); /* pre-message: <- s */

	if (!x25519_public(e_pub, e_priv)) /* -> e */
		goto out;
	mix_ephemeral(&st, e_pub);
	if (!wg_noise_mix_dh(&st, key, e_priv, rs)) /* es */
		goto out;
	if (!wg_noise_encrypt_and_hash(&st, enc_static, s_pub, WG_NOISE_DH_LEN, key)) /* s */
		goto out;
	if (ss) { /* ss */
		if (sodium_is_zero(ss, WG_NOISE_DH_LEN))
			goto out;
		wg_noise_mix_key(&st, key, ss, WG_NOISE_DH_LEN);
	} else if (!wg_noise_mix_dh(&st, key, s_priv, rs)) {
		goto out;
	}
	if (!wg_noise_encrypt_and_hash(&st, enc_payload, payload, payload_len, key))
		goto out;

	*out_st = st;
	ret = true;
out:
	sodium_memzero(key, sizeof(key));
	sodium_memzero(&st, sizeof(st));
	return ret;
}

bool wg_noise_ik_read_msg1(struct wg_noise_symmetric *out_st, uint8_t out_rs[WG_NOISE_DH_LEN],
			   uint8_t out_re[WG_NOISE_DH_LEN], uint8_t *payload,
			   const uint8_t *msg, size_t len, const struct wg_noise_protocol *p,
			   const uint8_t s_priv[WG_NOISE_DH_LEN], const uint8_t s_pub[WG_NOISE_DH_LEN])
{
	const uint8_t *enc_static = msg + WG_NOISE_DH_LEN;
	const uint8_t *enc_payload = enc_static + WG_NOISE_DH_LEN + AEAD_TAG_SIZE;
	uint8_t key[WG_NOISE_SYMMETRIC_KEY_LEN];
	uint8_t rs[WG_NOISE_DH_LEN], re[WG_NOISE_DH_LEN];
	struct wg_noise_symmetric st;
	bool ret = false;

	if (len < WG_NOISE_IK_MSG1_OVERHEAD)
		goto out;
	wg_noise_symmetric_init(&st, p);
	wg_noise_mix_hash(&st, s_pub, WG_NOISE_DH_LEN); /* pre-message: <- s (ours) */

	memcpy(re, msg, WG_NOISE_DH_LEN); /* -> e */
	mix_ephemeral(&st, re);
	if (!wg_noise_mix_dh(&st, key, s_priv, re)) /* es */
		goto out;
	if (!wg_noise_decrypt_and_hash(&st, rs, enc_static, WG_NOISE_DH_LEN + AEAD_TAG_SIZE, key))
		goto out; /* s */
	/* ss: the initiator is not known yet, so nothing is precomputed. */
	if (!wg_noise_mix_dh(&st, key, s_priv, rs))
		goto out;
	if (!wg_noise_decrypt_and_hash(&st, payload, enc_payload,
				       len - (WG_NOISE_IK_MSG1_OVERHEAD - AEAD_TAG_SIZE), key))
		goto out;

	*out_st = st;
	memcpy(out_rs, rs, WG_NOISE_DH_LEN);
	memcpy(out_re, re, WG_NOISE_DH_LEN);
	ret = true;
out:
	sodium_memzero(key, sizeof(key));
	sodium_memzero(&st, sizeof(st));
	sodium_memzero(rs, sizeof(rs));
	sodium_memzero(re, sizeof(re));
	return ret;
}

bool wg_noise_ik_write_msg2(struct wg_noise_symmetric *io_st, uint8_t *msg,
			    const uint8_t re[WG_NOISE_DH_LEN], const uint8_t rs[WG_NOISE_DH_LEN],
			    const uint8_t psk[WG_NOISE_SYMMETRIC_KEY_LEN],
			    const uint8_t e_priv[WG_NOISE_DH_LEN],
			    const uint8_t *payload, size_t payload_len)
{
	uint8_t *e_pub = msg;
	uint8_t *enc_payload = msg + WG_NOISE_DH_LEN;
	uint8_t key[WG_NOISE_SYMMETRIC_KEY_LEN];
	struct wg_noise_symmetric st = *io_st;
	bool ret = false;

	if (!x25519_public(e_pub, e_priv)) /* <- e */
		goto out;
	mix_ephemeral(&st, e_pub);
	if (!wg_noise_mix_dh(&st, NULL, e_priv, re)) /* ee */
		goto out;
	if (!wg_noise_mix_dh(&st, NULL, e_priv, rs)) /* se */
		goto out;
	wg_noise_mix_psk(&st, key, psk); /* psk */
	if (!wg_noise_encrypt_and_hash(&st, enc_payload, payload, payload_len, key))
		goto out;

	*io_st = st;
	ret = true;
out:
	sodium_memzero(key, sizeof(key));
	sodium_memzero(&st, sizeof(st));
	return ret;
}

bool wg_noise_ik_read_msg2(struct wg_noise_symmetric *io_st, uint8_t out_re[WG_NOISE_DH_LEN],
			   uint8_t *payload, const uint8_t *msg, size_t len,
			   const uint8_t e_priv[WG_NOISE_DH_LEN], const uint8_t s_priv[WG_NOISE_DH_LEN],
			   const uint8_t psk[WG_NOISE_SYMMETRIC_KEY_LEN])
{
	uint8_t key[WG_NOISE_SYMMETRIC_KEY_LEN];
	uint8_t re[WG_NOISE_DH_LEN];
	struct wg_noise_symmetric st = *io_st;
	bool ret = false;

	if (len < WG_NOISE_IK_MSG2_OVERHEAD)
		goto out;
	memcpy(re, msg, WG_NOISE_DH_LEN); /* <- e */
	mix_ephemeral(&st, re);
	if (!wg_noise_mix_dh(&st, NULL, e_priv, re)) /* ee */
		goto out;
	if (!wg_noise_mix_dh(&st, NULL, s_priv, re)) /* se */
		goto out;
	wg_noise_mix_psk(&st, key, psk); /* psk */
	if (!wg_noise_decrypt_and_hash(&st, payload, msg + WG_NOISE_DH_LEN, len - WG_NOISE_DH_LEN, key))
		goto out;

	*io_st = st;
	memcpy(out_re, re, WG_NOISE_DH_LEN);
	ret = true;
out:
	sodium_memzero(key, sizeof(key));
	sodium_memzero(&st, sizeof(st));
	sodium_memzero(re, sizeof(re));
	return ret;
}

/* ---- WireGuard ---- */

void wg_noise_identity_set(struct wg_noise_identity *id, const uint8_t private_key[WG_KEY_LEN])
{
	bool zero = sodium_is_zero(private_key, WG_KEY_LEN);

	/* private_key may be id->static_private itself. */
	memmove(id->static_private, private_key, WG_KEY_LEN);
	/* Clamped once here, as the kernel does, so the stored key is the
	 * one actually used. */
	x25519_clamp(id->static_private);
	id->has_identity = !zero && x25519_public(id->static_public, id->static_private);
	if (!id->has_identity) {
		sodium_memzero(id->static_private, WG_KEY_LEN);
		sodium_memzero(id->static_public, WG_KEY_LEN);
	}
}

void wg_noise_handshake_init(struct wg_noise_handshake *hs, const struct wg_noise_identity *id,
			     const uint8_t remote_static[WG_KEY_LEN],
			     const uint8_t preshared_key[WG_KEY_LEN])
{
	uint8_t rs[WG_KEY_LEN], psk[WG_KEY_LEN] = { 0 };
	uint8_t timestamp[WG_TIMESTAMP_LEN] = { 0 };

	/* Callers re-initialise with hs's own fields as arguments: copy first. */
	memcpy(rs, remote_static, WG_KEY_LEN);
	if (preshared_key)
		memcpy(psk, preshared_key, WG_KEY_LEN);
	/* A new psk or identity for the same peer must not reopen the replay
	 * window: keep the newest timestamp seen from this key. */
	if (!memcmp(hs->remote_static, rs, WG_KEY_LEN))
		memcpy(timestamp, hs->latest_timestamp, WG_TIMESTAMP_LEN);

	sodium_memzero(hs, sizeof(*hs));
	memcpy(hs->remote_static, rs, WG_KEY_LEN);
	memcpy(hs->preshared_key, psk, WG_KEY_LEN);
	memcpy(hs->latest_timestamp, timestamp, WG_TIMESTAMP_LEN);
	/* Left all zero when there is no identity or the peer's key is a
	 * low-order point; create_initiation then refuses. */
	if (id && id->has_identity)
		x25519(hs->precomputed_static_static, id->static_private, rs);
	hs->state = WG_NOISE_ZEROED;

	sodium_memzero(psk, sizeof(psk));
}

void wg_noise_handshake_clear(struct wg_noise_handshake *hs)
{
	sodium_memzero(hs->ephemeral_private, sizeof(hs->ephemeral_private));
	sodium_memzero(hs->remote_ephemeral, sizeof(hs->remote_ephemeral));
	sodium_memzero(hs->hash, sizeof(hs->hash));
	sodium_memzero(hs->chaining_key, sizeof(hs->chaining_key));
	hs->remote_index = 0;
	hs->state = WG_NOISE_ZEROED;
}

static void set_state(struct wg_noise_handshake *hs, const struct wg_noise_symmetric *st,
		      enum wg_noise_state state)
{
	memcpy(hs->chaining_key, st->chaining_key, sizeof(hs->chaining_key));
	memcpy(hs->hash, st->hash, sizeof(hs->hash));
	hs->state = state;
}

static void fill_header(struct wg_message_header *h, enum wg_message_type type)
{
	h->type = type;
	memset(h->reserved, 0, sizeof(h->reserved));
}

bool wg_noise_create_initiation(struct wg_msg_initiation *msg, struct wg_noise_handshake *hs,
				const struct wg_noise_identity *id, uint32_t local_index)
{
	uint8_t e_priv[WG_KEY_LEN], timestamp[WG_TIMESTAMP_LEN];
	struct wg_noise_symmetric st;
	bool ret = false;

	if (!id->has_identity)
		goto out;
	fill_header(&msg->header, WG_MSG_HANDSHAKE_INITIATION);
	msg->sender_index = htole32(local_index);
	memset(&msg->macs, 0, sizeof(msg->macs));
	x25519_generate(e_priv);
	tai64n_now(timestamp);
	if (!wg_noise_ik_write_msg1(&st, msg->unencrypted_ephemeral, &wg_noise_wireguard_protocol,
				    id->static_private, id->static_public, hs->remote_static,
				    hs->precomputed_static_static, e_priv, timestamp,
				    sizeof(timestamp)))
		goto out;

	wg_noise_handshake_clear(hs);
	memcpy(hs->ephemeral_private, e_priv, WG_KEY_LEN);
	hs->local_index = local_index;
	set_state(hs, &st, WG_NOISE_CREATED_INITIATION);
	ret = true;
out:
	sodium_memzero(e_priv, sizeof(e_priv));
	sodium_memzero(&st, sizeof(st));
	return ret;
}

bool wg_noise_open_initiation(struct wg_noise_initiation *out, const struct wg_msg_initiation *msg,
			      const struct wg_noise_identity *id)
{
	uint8_t rs[WG_KEY_LEN], re[WG_KEY_LEN], timestamp[WG_TIMESTAMP_LEN];
	struct wg_noise_symmetric st;
	bool ret = false;

	if (!id->has_identity)
		goto out;
	if (!wg_noise_ik_read_msg1(&st, rs, re, timestamp, msg->unencrypted_ephemeral,
				   WG_NOISE_IK_MSG1_OVERHEAD + WG_TIMESTAMP_LEN,
				   &wg_noise_wireguard_protocol, id->static_private,
				   id->static_public))
		goto out;

	memcpy(out->remote_static, rs, WG_KEY_LEN);
	memcpy(out->remote_ephemeral, re, WG_KEY_LEN);
	memcpy(out->timestamp, timestamp, WG_TIMESTAMP_LEN);
	memcpy(out->hash, st.hash, sizeof(out->hash));
	memcpy(out->chaining_key, st.chaining_key, sizeof(out->chaining_key));
	out->remote_index = le32toh(msg->sender_index);
	ret = true;
out:
	sodium_memzero(&st, sizeof(st));
	return ret;
}

bool wg_noise_accept_initiation(struct wg_noise_handshake *hs, const struct wg_noise_initiation *in)
{
	/* The caller looked the peer up by this key; check it all the same. */
	if (crypto_verify_32(in->remote_static, hs->remote_static) != 0)
		return false;
	/* Replay protection (whitepaper §5.1): strictly newer only. */
	if (!tai64n_after(in->timestamp, hs->latest_timestamp))
		return false;

	wg_noise_handshake_clear(hs);
	memcpy(hs->remote_ephemeral, in->remote_ephemeral, WG_KEY_LEN);
	memcpy(hs->latest_timestamp, in->timestamp, WG_TIMESTAMP_LEN);
	hs->remote_index = in->remote_index;
	memcpy(hs->hash, in->hash, sizeof(hs->hash));
	memcpy(hs->chaining_key, in->chaining_key, sizeof(hs->chaining_key));
	hs->state = WG_NOISE_CONSUMED_INITIATION;
	return true;
}

bool wg_noise_create_response(struct wg_msg_response *msg, struct wg_noise_handshake *hs,
			      const struct wg_noise_identity *id, uint32_t local_index)
{
	static const uint8_t nothing[1];
	uint8_t e_priv[WG_KEY_LEN];
	struct wg_noise_symmetric st;
	bool ret = false;

	if (hs->state != WG_NOISE_CONSUMED_INITIATION || !id->has_identity)
		goto out;
	fill_header(&msg->header, WG_MSG_HANDSHAKE_RESPONSE);
	msg->sender_index = htole32(local_index);
	msg->receiver_index = htole32(hs->remote_index);
	memset(&msg->macs, 0, sizeof(msg->macs));
	x25519_generate(e_priv);
	memcpy(st.chaining_key, hs->chaining_key, sizeof(st.chaining_key));
	memcpy(st.hash, hs->hash, sizeof(st.hash));
	if (!wg_noise_ik_write_msg2(&st, msg->unencrypted_ephemeral, hs->remote_ephemeral,
				    hs->remote_static, hs->preshared_key, e_priv, nothing, 0))
		goto out;

	memcpy(hs->ephemeral_private, e_priv, WG_KEY_LEN);
	hs->local_index = local_index;
	set_state(hs, &st, WG_NOISE_CREATED_RESPONSE);
	ret = true;
out:
	sodium_memzero(e_priv, sizeof(e_priv));
	sodium_memzero(&st, sizeof(st));
	return ret;
}

bool wg_noise_consume_response(const struct wg_msg_response *msg, struct wg_noise_handshake *hs,
			       const struct wg_noise_identity *id)
{
	uint8_t nothing[1];
	uint8_t re[WG_KEY_LEN];
	struct wg_noise_symmetric st;
	bool ret = false;

	if (hs->state != WG_NOISE_CREATED_INITIATION || !id->has_identity)
		goto out;
	if (le32toh(msg->receiver_index) != hs->local_index)
		goto out;
	memcpy(st.chaining_key, hs->chaining_key, sizeof(st.chaining_key));
	memcpy(st.hash, hs->hash, sizeof(st.hash));
	if (!wg_noise_ik_read_msg2(&st, re, nothing, msg->unencrypted_ephemeral,
				   WG_NOISE_IK_MSG2_OVERHEAD, hs->ephemeral_private,
				   id->static_private, hs->preshared_key))
		goto out;

	memcpy(hs->remote_ephemeral, re, WG_KEY_LEN);
	hs->remote_index = le32toh(msg->sender_index);
	set_state(hs, &st, WG_NOISE_CONSUMED_RESPONSE);
	ret = true;
out:
	sodium_memzero(&st, sizeof(st));
	return ret;
}

bool wg_noise_derive_session(struct wg_noise_session *out, struct wg_noise_handshake *hs)
{
	uint8_t first[WG_KEY_LEN], second[WG_KEY_LEN];
	struct wg_noise_symmetric st;
	bool initiator, ret = false;

	if (hs->state == WG_NOISE_CONSUMED_RESPONSE)
		initiator = true;
	else if (hs->state == WG_NOISE_CREATED_RESPONSE)
		initiator = false;
	else
		goto out;

	memcpy(st.chaining_key, hs->chaining_key, sizeof(st.chaining_key));
	wg_noise_split(first, second, &st);
	memcpy(out->send_key, initiator ? first : second, WG_KEY_LEN);
	memcpy(out->recv_key, initiator ? second : first, WG_KEY_LEN);
	out->local_index = hs->local_index;
	out->remote_index = hs->remote_index;
	out->initiator = initiator;
	/* The handshake's secrets have done their job (forward secrecy). */
	wg_noise_handshake_clear(hs);
	ret = true;
out:
	sodium_memzero(first, sizeof(first));
	sodium_memzero(second, sizeof(second));
	sodium_memzero(&st, sizeof(st));
	return ret;
}
