/* sodium_init() selects libsodium's fastest curve25519 code and seeds its
 * RNG; once per process is enough and cheaper than its lock per call. */
#include "crypto/sodium.h"

#include <pthread.h>
#include <stdlib.h>

#include <sodium.h>

static pthread_once_t sodium_once = PTHREAD_ONCE_INIT;

static void sodium_setup(void)
{
	/* Fails only when libsodium cannot set up its own locks; key generation
	 * must not go ahead on a library in an unknown state. */
	if (sodium_init() < 0)
		abort();
}

void crypto_sodium_ready(void)
{
	pthread_once(&sodium_once, sodium_setup);
}
