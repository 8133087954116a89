/* Ed25519 signatures (RFC 8032) from libsodium, for the mesh's registration
 * leases (mesh/lease.h). A private key is kept as its 32-byte seed, the form
 * a WireGuard key has in files; the 64-byte expanded key exists only on the
 * stack while one call signs, and is wiped. */
#ifndef WEFT_CRYPTO_ED25519_H
#define WEFT_CRYPTO_ED25519_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	ED25519_SEED_SIZE = 32,
	ED25519_PUBLIC_SIZE = 32,
	ED25519_SIG_SIZE = 64,
};

/* A fresh random private key (seed). */
void ed25519_generate(uint8_t seed[ED25519_SEED_SIZE]);
void ed25519_public(uint8_t pub[ED25519_PUBLIC_SIZE], const uint8_t seed[ED25519_SEED_SIZE]);
void ed25519_sign(uint8_t sig[ED25519_SIG_SIZE], const uint8_t *msg, size_t len,
		  const uint8_t seed[ED25519_SEED_SIZE]);
/* Whether sig is pub's signature of msg. libsodium refuses non-canonical
 * signatures and small-order public keys, so no other bytes verify. */
bool ed25519_verify(const uint8_t sig[ED25519_SIG_SIZE], const uint8_t *msg, size_t len,
		    const uint8_t pub[ED25519_PUBLIC_SIZE]);

#endif
