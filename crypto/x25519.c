/* X25519 (RFC 7748) on top of libsodium, plus WireGuard's rule that an
 * all-zero shared secret (a low-order peer point) is an error. */
#include "crypto/x25519.h"

#include <string.h>

#include <sodium.h>

#include "crypto/sodium.h"

bool x25519(uint8_t out[X25519_KEY_SIZE], const uint8_t scalar[X25519_KEY_SIZE],
	    const uint8_t point[X25519_KEY_SIZE])
{
	/* A temporary lets out alias scalar or point, and keeps a partial
	 * result from ever reaching the caller. */
	uint8_t shared[X25519_KEY_SIZE];
	bool ok;

	crypto_sodium_ready();
	/* libsodium already fails on an all-zero result; the explicit check
	 * keeps the rule independent of the library version. */
	ok = crypto_scalarmult(shared, scalar, point) == 0 && !sodium_is_zero(shared, sizeof(shared));
	if (ok)
		memcpy(out, shared, X25519_KEY_SIZE);
	else
		sodium_memzero(out, X25519_KEY_SIZE);
	sodium_memzero(shared, sizeof(shared));
	return ok;
}

bool x25519_public(uint8_t pub[X25519_KEY_SIZE], const uint8_t priv[X25519_KEY_SIZE])
{
	uint8_t tmp[X25519_KEY_SIZE];
	bool ok;

	crypto_sodium_ready();
	/* An all-zero private key is how configuration says "no key". */
	ok = !sodium_is_zero(priv, X25519_KEY_SIZE) && crypto_scalarmult_base(tmp, priv) == 0;
	if (ok)
		memcpy(pub, tmp, X25519_KEY_SIZE);
	else
		memset(pub, 0, X25519_KEY_SIZE);
	sodium_memzero(tmp, sizeof(tmp));
	return ok;
}

void x25519_clamp(uint8_t key[X25519_KEY_SIZE])
{
	key[0] &= 248;
	key[31] &= 127;
	key[31] |= 64;
}

void x25519_generate(uint8_t priv[X25519_KEY_SIZE])
{
	crypto_sodium_ready();
	randombytes_buf(priv, X25519_KEY_SIZE);
	x25519_clamp(priv);
}
