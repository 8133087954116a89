/* The Internet checksum (RFC 1071, RFC 1624) for the offload code: a running
 * one's-complement sum that stays unfolded until the end, so that headers,
 * payload and a pseudo-header can be summed in separate pieces. */
#ifndef WEFT_PKT_CSUM_H
#define WEFT_PKT_CSUM_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>

/* A partial sum. It adds 16-bit words as they lie in memory, which makes it
 * byte-order neutral but opaque: only tun_csum_* functions may look inside.
 * Start a sum from 0. */
typedef uint64_t tun_csum_t;

/* Adds len bytes at data. A trailing odd byte is padded with a zero byte, so
 * in a chain of calls only the last piece may have an odd length. The result
 * stays below 2^33, so chaining any number of pieces cannot overflow. */
tun_csum_t tun_csum_add(tun_csum_t sum, const void *data, size_t len);

/* Adds a 16-bit (32-bit) value as if it were stored big-endian in the summed
 * bytes: a length, a protocol number. */
static inline tun_csum_t tun_csum_add16(tun_csum_t sum, uint16_t v)
{
	return sum + htobe16(v);
}

static inline tun_csum_t tun_csum_add32(tun_csum_t sum, uint32_t v)
{
	return sum + htobe32(v);
}

/* The folded 16-bit sum, not complemented, in host order: what a
 * NEEDS_CSUM (CHECKSUM_PARTIAL) packet carries in its checksum field. */
uint16_t tun_csum_fold(tun_csum_t sum);

/* The checksum to store (the complement of the folded sum), host order. A
 * block that includes a correct checksum finishes to 0. */
static inline uint16_t tun_csum_finish(tun_csum_t sum)
{
	return (uint16_t)~tun_csum_fold(sum);
}

/* The TCP/UDP pseudo-header sum of the IPv4 or IPv6 header at ip (version
 * read from its first nibble; the caller has checked that the addresses are
 * within bounds), for protocol proto and an L4 length of l4_len bytes. */
tun_csum_t tun_csum_pseudo(const uint8_t *ip, uint8_t proto, uint32_t l4_len);

/* RFC 1624 eqn. 3: the checksum check after one covered 16-bit field
 * changed from old to new (all in host order). */
uint16_t tun_csum_replace16(uint16_t check, uint16_t old, uint16_t new_val);

#endif
