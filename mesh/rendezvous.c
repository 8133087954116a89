/* Rendezvous hashing (mesh/rendezvous.h): which mesh member is the home
 * host of a VM address in unicast discovery mode. Every host must compute
 * bit for bit the same weights, so the hash input is fixed here:
 *
 *   key   = the member's public key, bytes [0, 16) XOR bytes [16, 32)
 *   input = family (1 byte: 4 or 6), cidr (1 byte), the address masked to
 *           cidr bits (4 bytes for IPv4, 16 for IPv6): 6 or 18 bytes
 *   hash  = SipHash-2-4 (libsodium crypto_shorthash) of input under key;
 *           its 8 output bytes read as a little-endian uint64 are the weight
 *
 * SipHash is a PRF: without the key an address's weights look independent
 * and uniform, so each of n members is home of about 1/n of the addresses,
 * and removing one member reassigns only its own addresses (every other
 * weight is unchanged). Public keys are public, so this balances but does
 * not hide: anyone can compute a home, which is the point. */
#include "mesh/rendezvous.h"

#include <endian.h>
#include <string.h>
#include <sys/socket.h>

#include <sodium.h>

_Static_assert(crypto_shorthash_KEYBYTES * 2 == RDV_KEY_LEN, "two halves of a public key");
_Static_assert(crypto_shorthash_BYTES == sizeof(uint64_t), "a 64-bit weight");

enum { RDV_INPUT_MAX = 2 + 16 };

/* crypto_shorthash is plain portable C in libsodium (no CPU dispatch, no
 * randomness), so it needs no sodium_init(); skipping it keeps this call,
 * which the data path makes on a miss, free of libsodium's init lock. */
uint64_t rdv_weight(const uint8_t key[RDV_KEY_LEN], int family, const uint8_t *addr, uint8_t cidr)
{
	uint8_t k[crypto_shorthash_KEYBYTES], in[RDV_INPUT_MAX], out[crypto_shorthash_BYTES];
	unsigned int len, bits;
	uint64_t w;

	if (family == AF_INET)
		len = 4;
	else if (family == AF_INET6)
		len = 16;
	else
		return 0;
	bits = len * 8;
	/* A cidr past the family's width means the whole address. */
	if (cidr > bits)
		cidr = (uint8_t)bits;

	for (size_t i = 0; i < sizeof(k); i++)
		k[i] = key[i] ^ key[i + sizeof(k)];
	memset(in, 0, sizeof(in));
	in[0] = family == AF_INET ? 4 : 6;
	in[1] = cidr;
	memcpy(in + 2, addr, cidr / 8);
	if (cidr % 8)
		in[2 + cidr / 8] = addr[cidr / 8] & (uint8_t)(0xff << (8 - cidr % 8));

	crypto_shorthash(out, in, 2 + len, k);
	memcpy(&w, out, sizeof(w));
	return le64toh(w);
}

long rdv_home(const uint8_t (*keys)[RDV_KEY_LEN], size_t n, int family, const uint8_t *addr,
	      uint8_t cidr)
{
	uint64_t best = 0;
	long home = -1;

	for (size_t i = 0; i < n; i++) {
		uint64_t w = rdv_weight(keys[i], family, addr, cidr);

		/* Strictly greater: a tie keeps the lower index. */
		if (home < 0 || w > best) {
			best = w;
			home = (long)i;
		}
	}
	return home;
}
