/* ChaCha20 (RFC 8439) with the IETF 96-bit nonce: a portable one-block
 * version and a 16-block AVX-512 version, for the AEAD in crypto/aead.c. */
#ifndef WEFT_CRYPTO_CHACHA20_H
#define WEFT_CRYPTO_CHACHA20_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	CHACHA20_KEY_SIZE = 32,
	CHACHA20_NONCE_SIZE = 12,
	CHACHA20_BLOCK_SIZE = 64,
	/* What one call of the wide version produces: 16 blocks. */
	CHACHA20_WIDE_SIZE = 16 * CHACHA20_BLOCK_SIZE,
};

/* True when this CPU runs chacha20_wide (AVX-512 F, BW and VL). */
bool chacha20_wide_supported(void);

/* Keystream blocks counter .. counter+blocks-1 into out (64 x blocks
 * bytes); blocks is 16 or 8 (8 costs about 2/3 of 16). Only when
 * chacha20_wide_supported(). */
void chacha20_wide(uint8_t *out, unsigned int blocks, const uint8_t key[CHACHA20_KEY_SIZE],
		   const uint8_t nonce[CHACHA20_NONCE_SIZE], uint32_t counter);

/* dst = src XOR ks, len bytes (any of them may be the same buffer as
 * another); AVX-512 when the CPU has it. */
void chacha20_xor_stream(uint8_t *dst, const uint8_t *src, const uint8_t *ks, size_t len);

/* dst = src XOR the keystream from block counter on; dst == src is allowed.
 * Uses the wide version when the CPU has it. The 32-bit block counter must
 * not wrap within len (RFC 8439 caps a message at 256 GiB). */
void chacha20_xor(uint8_t *dst, const uint8_t *src, size_t len,
		  const uint8_t key[CHACHA20_KEY_SIZE], const uint8_t nonce[CHACHA20_NONCE_SIZE],
		  uint32_t counter);

#endif
