/* Registration leases (docs/mesh.md, "Leases"). With a lease key configured
 * for the mesh (an Ed25519 public key), a host believes a claim that a host
 * holds a VM address only with a lease: the key's signature that this
 * address is held by this host (its WireGuard public key) from issued until
 * expires. A compromised member cannot forge one; whoever keeps the private
 * key (the provider's registry) issues them, `weft lease sign` among others.
 *
 * This file holds the lease's wire form (MESH_LEASE_SIZE bytes, network byte
 * order, carried after a message's entries), signing and checking it, and its
 * text form: the wire form in standard base64, as `weft lease sign` prints it
 * and `weft lease add` gives it to weftd. Every decoder takes untrusted
 * bytes. */
#ifndef WEFT_MESH_LEASE_H
#define WEFT_MESH_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/ed25519.h"
#include "pkt/prefix.h"

enum {
	MESH_LEASE_VERSION = 1,
	MESH_LEASE_SIGNED = 72,  /* the bytes the signature covers: all before it */
	MESH_LEASE_SIZE = MESH_LEASE_SIGNED + ED25519_SIG_SIZE,
	MESH_LEASE_TEXT_LEN = 185, /* base64 of the wire form, with the NUL */
	MESH_LEASE_KEY_SIZE = ED25519_PUBLIC_SIZE,
};

/* The wire form:
 *   0  'w' 'l' MESH_LEASE_VERSION family (4 or 6)
 *   4  4 bytes 0
 *   8  issued, 64-bit ns since the epoch
 *  16  expires, the same; after issued
 *  24  addr[16]: the VM's address, IPv4 in the first 4 bytes, the rest 0
 *  40  holder[32]: the host's WireGuard public key, not all zero
 *  72  sig[64]: Ed25519 of bytes [0, 72) by the lease key
 * The magic and version lead the signed bytes, so a signature made for
 * anything else never reads as a lease. */
struct mesh_lease {
	int family;        /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	uint8_t holder[32];
	uint64_t issued;
	uint64_t expires;
	uint8_t sig[ED25519_SIG_SIZE];
};

/* How far ahead of a host's clock a lease may be issued: the hosts'
 * clocks differ (the same as the mesh's stamps, mesh/internal.h). */
#define MESH_LEASE_SKEW_NS (10ull * 1000000000ull)

/* What mesh_lease_check says of a well-formed lease. */
enum mesh_lease_verdict {
	MESH_LEASE_VALID = 0,
	MESH_LEASE_FORGED,   /* not signed by the lease key */
	MESH_LEASE_EARLY,    /* issued later than now plus the allowed skew */
	MESH_LEASE_EXPIRED,  /* expires at or before now */
};

void mesh_lease_encode(const struct mesh_lease *l, uint8_t out[MESH_LEASE_SIZE]);
/* 0, or -EINVAL with *why (static), checked in this order: magic, version,
 * family, reserved bytes, expires not after issued, bytes after an IPv4
 * address, an all-zero holder. The signature is not checked here. */
int mesh_lease_decode(const uint8_t in[MESH_LEASE_SIZE], struct mesh_lease *l, const char **why);

/* Fills l->sig: the lease signed with the lease key's private seed. */
void mesh_lease_sign(struct mesh_lease *l, const uint8_t seed[ED25519_SEED_SIZE]);
/* The verdict on l under key at wall-clock now_ns, allowing issued to be
 * up to skew_ns ahead (the hosts' clocks differ). */
enum mesh_lease_verdict mesh_lease_check(const struct mesh_lease *l,
					 const uint8_t key[MESH_LEASE_KEY_SIZE], uint64_t now_ns,
					 uint64_t skew_ns);
const char *mesh_lease_verdict_name(enum mesh_lease_verdict v);

/* Whether l is for the host address a. */
bool mesh_lease_covers(const struct mesh_lease *l, const struct ip_prefix *a);
/* Whether a and b are the same lease (by their fields: the struct has
 * padding). */
bool mesh_lease_equal(const struct mesh_lease *a, const struct mesh_lease *b);
/* Whether a replaces b for their address: issued later, and for the same
 * issued the larger wire form, so every host picks the same one. */
bool mesh_lease_newer(const struct mesh_lease *a, const struct mesh_lease *b);

/* The text form. mesh_lease_parse takes len bytes (no NUL needed; spaces
 * and line breaks around it are allowed): 0, or -EINVAL with *why. */
void mesh_lease_format(const struct mesh_lease *l, char out[MESH_LEASE_TEXT_LEN]);
int mesh_lease_parse(const char *text, size_t len, struct mesh_lease *l, const char **why);

/* A 32-byte key in standard base64 (44 characters, spaces and line breaks
 * around it allowed), as lease keys and WireGuard keys are written. 0 or
 * -EINVAL. */
int mesh_lease_parse_key(const char *text, size_t len, uint8_t key[32]);

#endif
