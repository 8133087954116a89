/* WireGuard's wire messages and protocol constants (whitepaper §5.4, §6).
 * All multi-byte integer fields are little-endian on the wire. */
#ifndef WEFT_WG_MESSAGES_H
#define WEFT_WG_MESSAGES_H

#include <stdint.h>

#include "crypto/aead.h"
#include "crypto/blake2s.h"
#include "crypto/tai64n.h"
#include "crypto/x25519.h"

enum wg_message_type {
	WG_MSG_INVALID = 0,
	WG_MSG_HANDSHAKE_INITIATION = 1,
	WG_MSG_HANDSHAKE_RESPONSE = 2,
	WG_MSG_HANDSHAKE_COOKIE = 3,
	WG_MSG_DATA = 4,
};


/* Counter limits are 64-bit, so they live in defines. */
#define WG_REKEY_AFTER_MESSAGES (1ull << 60)
#define WG_REJECT_AFTER_MESSAGES (UINT64_MAX - 8192ull) /* 2^64 - 2^13 - 1, whitepaper §6.1 */

/* Timer constants in seconds (whitepaper §6.1). */
enum wg_timer_seconds {
	WG_REKEY_AFTER_TIME = 120,
	WG_REJECT_AFTER_TIME = 180,
	WG_REKEY_ATTEMPT_TIME = 90,
	WG_REKEY_TIMEOUT = 5,
	WG_KEEPALIVE_TIMEOUT = 10,
	WG_COOKIE_SECRET_MAX_AGE = 120,
};
enum {
	WG_REKEY_TIMEOUT_JITTER_MAX_MS = 334,
	WG_MAX_TIMER_HANDSHAKES = WG_REKEY_ATTEMPT_TIME / WG_REKEY_TIMEOUT,
	WG_INITIATIONS_PER_SECOND = 50, /* the 20 ms initiation guard */
	WG_MAX_STAGED_PACKETS = 128,
	WG_MAX_PEERS = 1 << 20,
	WG_MAX_ALLOWEDIPS_PER_PEER = 1 << 16,
};

enum wg_sizes {
	WG_KEY_LEN = 32,
	WG_COOKIE_LEN = 16,
	WG_COOKIE_NONCE_LEN = XAEAD_NONCE_SIZE,
	WG_MAC_LEN = 16,
	WG_TAG_LEN = AEAD_TAG_SIZE,
	WG_TIMESTAMP_LEN = TAI64N_SIZE,
	WG_PADDING_MULTIPLE = 16,
	WG_DEFAULT_MTU = 1420,
	/* The largest datagram weft accepts or sends. */
	WG_MAX_DATAGRAM = 65535,
};


struct wg_message_header {
	uint8_t type;
	uint8_t reserved[3];
} __attribute__((packed));

struct wg_macs {
	uint8_t mac1[WG_MAC_LEN];
	uint8_t mac2[WG_MAC_LEN];
} __attribute__((packed));

struct wg_msg_initiation {
	struct wg_message_header header;
	uint32_t sender_index;
	uint8_t unencrypted_ephemeral[WG_KEY_LEN];
	uint8_t encrypted_static[WG_KEY_LEN + WG_TAG_LEN];
	uint8_t encrypted_timestamp[WG_TIMESTAMP_LEN + WG_TAG_LEN];
	struct wg_macs macs;
} __attribute__((packed));

struct wg_msg_response {
	struct wg_message_header header;
	uint32_t sender_index;
	uint32_t receiver_index;
	uint8_t unencrypted_ephemeral[WG_KEY_LEN];
	uint8_t encrypted_nothing[WG_TAG_LEN];
	struct wg_macs macs;
} __attribute__((packed));

struct wg_msg_cookie {
	struct wg_message_header header;
	uint32_t receiver_index;
	uint8_t nonce[WG_COOKIE_NONCE_LEN];
	uint8_t encrypted_cookie[WG_COOKIE_LEN + WG_TAG_LEN];
} __attribute__((packed));

struct wg_msg_data {
	struct wg_message_header header;
	uint32_t receiver_index;
	uint64_t counter;
	uint8_t encrypted_data[];
} __attribute__((packed));

_Static_assert(sizeof(struct wg_msg_initiation) == 148, "initiation is 148 bytes");
_Static_assert(sizeof(struct wg_msg_response) == 92, "response is 92 bytes");
_Static_assert(sizeof(struct wg_msg_cookie) == 64, "cookie reply is 64 bytes");
_Static_assert(sizeof(struct wg_msg_data) == 16, "data header is 16 bytes");

enum {
	WG_MSG_DATA_MIN = sizeof(struct wg_msg_data) + WG_TAG_LEN, /* a keepalive */
	/* Outer overhead of a data message: header and tag. */
	WG_DATA_OVERHEAD = sizeof(struct wg_msg_data) + WG_TAG_LEN,
};

#endif
