/* BLAKE2s (RFC 7693), and the HMAC and HKDF that WireGuard builds from it.
 * libsodium has only BLAKE2b, so weft carries its own BLAKE2s. */
#ifndef WEFT_CRYPTO_BLAKE2S_H
#define WEFT_CRYPTO_BLAKE2S_H

#include <stddef.h>
#include <stdint.h>

enum {
	BLAKE2S_HASH_SIZE = 32,
	BLAKE2S_BLOCK_SIZE = 64,
	BLAKE2S_KEY_SIZE = 32,
};

struct blake2s_state {
	uint32_t h[8];
	uint32_t t[2];
	uint32_t f[2];
	uint8_t buf[BLAKE2S_BLOCK_SIZE];
	size_t buflen;
	size_t outlen;
};

/* outlen 1..32; keylen 0..32 (0 = unkeyed). */
void blake2s_init(struct blake2s_state *s, size_t outlen);
void blake2s_init_key(struct blake2s_state *s, size_t outlen, const void *key, size_t keylen);
void blake2s_update(struct blake2s_state *s, const void *in, size_t inlen);
/* Writes s->outlen bytes and wipes the state. */
void blake2s_final(struct blake2s_state *s, uint8_t *out);

/* One-shot; key may be NULL when keylen is 0. */
void blake2s(uint8_t *out, size_t outlen, const void *in, size_t inlen,
	     const void *key, size_t keylen);

/* HMAC-BLAKE2s (RFC 2104 over the 64-byte block), 32-byte output. */
void blake2s_hmac(uint8_t out[BLAKE2S_HASH_SIZE], const void *in, size_t inlen,
		  const void *key, size_t keylen);

/* WireGuard's KDF1/KDF2/KDF3 (HKDF with HMAC-BLAKE2s):
 *   prk = HMAC(chaining_key, data); out1 = HMAC(prk, 0x1);
 *   out2 = HMAC(prk, out1 || 0x2); out3 = HMAC(prk, out2 || 0x3).
 * out2/out3 may be NULL. All intermediates are wiped. */
void blake2s_hkdf(uint8_t out1[BLAKE2S_HASH_SIZE], uint8_t out2[BLAKE2S_HASH_SIZE],
		  uint8_t out3[BLAKE2S_HASH_SIZE], const void *data, size_t data_len,
		  const uint8_t chaining_key[BLAKE2S_HASH_SIZE]);

#endif
