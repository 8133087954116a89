/* X25519 (RFC 7748) from libsodium, with WireGuard's rule that an all-zero
 * shared secret is an error. */
#ifndef WEFT_CRYPTO_X25519_H
#define WEFT_CRYPTO_X25519_H

#include <stdbool.h>
#include <stdint.h>

enum { X25519_KEY_SIZE = 32 };

/* out = scalar * point. False (and out wiped) when the result is all zero. */
bool x25519(uint8_t out[X25519_KEY_SIZE], const uint8_t scalar[X25519_KEY_SIZE],
	    const uint8_t point[X25519_KEY_SIZE]);
/* False when priv is all zero (no key). */
bool x25519_public(uint8_t pub[X25519_KEY_SIZE], const uint8_t priv[X25519_KEY_SIZE]);
/* A fresh random private key, clamped. */
void x25519_generate(uint8_t priv[X25519_KEY_SIZE]);
void x25519_clamp(uint8_t key[X25519_KEY_SIZE]);

#endif
