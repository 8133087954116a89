/* MAC1/MAC2 and cookie replies (whitepaper §5.4.4, §5.4.7): the DoS
 * mitigation that makes an initiator prove it owns its source address. */
#ifndef WEFT_WG_COOKIE_H
#define WEFT_WG_COOKIE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wg/endpoint.h"
#include "wg/messages.h"

/* The responder side: one per device. The secret rotates every
 * WG_COOKIE_SECRET_MAX_AGE seconds; lock guards secret and birthdate. */
struct wg_cookie_checker {
	pthread_mutex_t lock;
	uint8_t secret[BLAKE2S_HASH_SIZE];
	uint64_t secret_birthdate;
	uint8_t mac1_key[BLAKE2S_HASH_SIZE];              /* HASH("mac1----" || our public) */
	uint8_t cookie_encryption_key[BLAKE2S_HASH_SIZE]; /* HASH("cookie--" || our public) */
	bool have_keys;
};

/* The initiator side: one per peer, guarded by the peer's lock. */
struct wg_cookie_maker {
	uint8_t mac1_key[BLAKE2S_HASH_SIZE];              /* from the peer's public key */
	uint8_t cookie_decryption_key[BLAKE2S_HASH_SIZE];
	uint8_t cookie[WG_COOKIE_LEN];
	uint64_t cookie_birthdate;                         /* 0: no cookie */
	bool have_sent_mac1;
	uint8_t last_mac1_sent[WG_MAC_LEN];
};

enum wg_cookie_result {
	WG_COOKIE_INVALID_MAC,
	WG_COOKIE_VALID_MAC_NO_COOKIE,
	WG_COOKIE_VALID_MAC_WITH_COOKIE,
};

void wg_cookie_checker_init(struct wg_cookie_checker *c);
void wg_cookie_checker_destroy(struct wg_cookie_checker *c);
/* Call whenever the device's public key changes (NULL: no identity). */
void wg_cookie_checker_set_key(struct wg_cookie_checker *c, const uint8_t public_key[WG_KEY_LEN]);

/* msg is a whole handshake message (initiation or response) of len bytes
 * ending in struct wg_macs. mac2 is checked only when check_cookie. */
enum wg_cookie_result wg_cookie_validate(struct wg_cookie_checker *c, const uint8_t *msg, size_t len,
					 const union wg_sockaddr *src, bool check_cookie, uint64_t now);
/* Builds the cookie reply to the handshake message msg from src;
 * sender_index is that message's sender index in host byte order. */
bool wg_cookie_create_reply(struct wg_msg_cookie *out, struct wg_cookie_checker *c,
			    const uint8_t *msg, size_t len, uint32_t sender_index,
			    const union wg_sockaddr *src, uint64_t now);

void wg_cookie_maker_init(struct wg_cookie_maker *m, const uint8_t peer_public[WG_KEY_LEN]);
/* Writes mac1, and mac2 when a cookie younger than the max age is held. */
void wg_cookie_add_macs(struct wg_cookie_maker *m, uint8_t *msg, size_t len, uint64_t now);
/* Decrypts a cookie reply against the last mac1 we sent; false when it
 * does not authenticate. */
bool wg_cookie_consume_reply(struct wg_cookie_maker *m, const struct wg_msg_cookie *msg, uint64_t now);

#endif
