/* libsodium set up once per process, for the crypto/ wrappers that need its
 * fast code paths or its RNG (x25519.c, ed25519.c). */
#ifndef WEFT_CRYPTO_SODIUM_H
#define WEFT_CRYPTO_SODIUM_H

/* sodium_init() on the first call; aborts when libsodium cannot set up. */
void crypto_sodium_ready(void);

#endif
