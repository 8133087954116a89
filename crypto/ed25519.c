/* Ed25519 through libsodium's crypto_sign_*, with the private key held as
 * its seed (crypto/ed25519.h). */
#include "crypto/ed25519.h"

#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "crypto/sodium.h"

_Static_assert(ED25519_SEED_SIZE == crypto_sign_SEEDBYTES, "seed size");
_Static_assert(ED25519_PUBLIC_SIZE == crypto_sign_PUBLICKEYBYTES, "public key size");
_Static_assert(ED25519_SIG_SIZE == crypto_sign_BYTES, "signature size");

void ed25519_generate(uint8_t seed[ED25519_SEED_SIZE])
{
	crypto_sodium_ready();
	randombytes_buf(seed, ED25519_SEED_SIZE);
}

void ed25519_public(uint8_t pub[ED25519_PUBLIC_SIZE], const uint8_t seed[ED25519_SEED_SIZE])
{
	uint8_t sk[crypto_sign_SECRETKEYBYTES];

	crypto_sodium_ready();
	/* Fails only on a library in an unknown state, never for a seed. */
	if (crypto_sign_seed_keypair(pub, sk, seed) != 0)
		abort();
	sodium_memzero(sk, sizeof(sk));
}

void ed25519_sign(uint8_t sig[ED25519_SIG_SIZE], const uint8_t *msg, size_t len,
		  const uint8_t seed[ED25519_SEED_SIZE])
{
	uint8_t pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];

	crypto_sodium_ready();
	if (crypto_sign_seed_keypair(pk, sk, seed) != 0 ||
	    crypto_sign_detached(sig, NULL, msg, len, sk) != 0)
		abort();
	sodium_memzero(sk, sizeof(sk));
}

bool ed25519_verify(const uint8_t sig[ED25519_SIG_SIZE], const uint8_t *msg, size_t len,
		    const uint8_t pub[ED25519_PUBLIC_SIZE])
{
	crypto_sodium_ready();
	return crypto_sign_verify_detached(sig, msg, len, pub) == 0;
}
