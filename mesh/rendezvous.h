/* Rendezvous (highest random weight) hashing: the home host of a VM
 * address in unicast discovery mode. Every host computes the same answer
 * from the same membership, without coordination, and a host joining or
 * leaving moves only the addresses whose home it is or becomes.
 *
 * The weight of member m for address a is a keyed 64-bit hash of
 * (family, cidr, masked address) under m's public key; the home is the
 * member with the highest weight (ties, which need equal keys, go to the
 * lower index). Pure; no allocation. */
#ifndef WEFT_MESH_RENDEZVOUS_H
#define WEFT_MESH_RENDEZVOUS_H

#include <stddef.h>
#include <stdint.h>

enum { RDV_KEY_LEN = 32 };

/* The weight of the member with public key key for the address (family
 * AF_INET or AF_INET6, 4 or 16 bytes at addr, cidr bits of it). */
uint64_t rdv_weight(const uint8_t key[RDV_KEY_LEN], int family, const uint8_t *addr, uint8_t cidr);

/* The index in keys[0, n) of the address's home; -1 when n is 0. */
long rdv_home(const uint8_t (*keys)[RDV_KEY_LEN], size_t n, int family, const uint8_t *addr,
	      uint8_t cidr);

#endif
