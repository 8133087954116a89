/* An IP prefix and its one text form: what a WireGuard allowed IP, a VM
 * port's registered address and a mesh prefix all are, parsed, printed,
 * compared and matched here, so the UAPI, the port and mesh text forms and
 * the data path's source checks agree on what a prefix is. The forwarding
 * table (router/) keys on the same three fields. */
#ifndef WEFT_PKT_PREFIX_H
#define WEFT_PKT_PREFIX_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

/* family/cidr names the prefix as the router's rt_insert(family, addr,
 * cidr) does. An IPv4 address fills addr[0, 4) and the rest stays zero, so
 * a valid prefix has no bit set from cidr to the end of addr. */
struct ip_prefix {
	uint8_t family;   /* AF_INET or AF_INET6 */
	uint8_t cidr;     /* the prefix length: 0..32, 0..128 */
	uint8_t addr[16]; /* network order */
};

enum {
	IP_PREFIX_ADDR_STRLEN = INET6_ADDRSTRLEN, /* an address, with the NUL */
	IP_PREFIX_STRLEN = INET6_ADDRSTRLEN + 4,  /* and "/128" */
};

/* What the text forms differ in (ip_prefix_parse). Host bits (bits of the
 * address past the length) are kept as written unless MASK or
 * NO_HOST_BITS says otherwise, for a caller whose own check names them. */
enum {
	/* A bare address is a host prefix (/32, /128); else "/len" is a must. */
	IP_PREFIX_LEN_OPTIONAL = 1u << 0,
	/* /0 is refused ("prefix length 0"). */
	IP_PREFIX_NO_ZERO_LEN = 1u << 1,
	/* Host bits are refused ("host bits set ..."); wins over MASK. */
	IP_PREFIX_NO_HOST_BITS = 1u << 2,
	/* Host bits are cleared: the prefix as the forwarding table keeps it. */
	IP_PREFIX_MASK = 1u << 3,
	/* The length may carry any number of leading zeros ("/0000024"), as
	 * Go's strconv.ParseUint reads it for wireguard-go; without this flag
	 * it has at most 20 digits, as text/text.h reads weft's own numbers. */
	IP_PREFIX_LEN_ZEROS = 1u << 4,
};

/* Parses s[0, n) (no NUL needed, none allowed): "a.b.c.d[/len]" or an IPv6
 * address as inet_pton(3) reads it ("[/len]"), IPv6 exactly when the
 * address has a ':'. No blanks, no zone, no leading zeros in an IPv4
 * octet, no sign in the length. 0, or -EINVAL with *out zeroed and, when
 * why is not NULL, *why a static reason: "bad address (...)", "prefix
 * length 0" or "host bits set (...)". Untrusted input: never reads past
 * s + n. */
int ip_prefix_parse(const char *s, size_t n, unsigned int flags, struct ip_prefix *out,
		    const char **why);

/* The address as netip.Addr.String writes it (RFC 5952: the longest run
 * of two or more zero groups as "::", the first on a tie; an IPv4-mapped
 * address as "::ffff:a.b.c.d"), which is what wireguard-go's UAPI prints;
 * any family but AF_INET prints as IPv6. ip_prefix_format adds "/cidr". */
void ip_prefix_format_addr(int family, const uint8_t *addr, char out[IP_PREFIX_ADDR_STRLEN]);
void ip_prefix_format(const struct ip_prefix *p, char out[IP_PREFIX_STRLEN]);

/* Same family, length and address (the family's bytes of it). */
bool ip_prefix_equal(const struct ip_prefix *a, const struct ip_prefix *b);
/* Whether list[0, n) holds a prefix equal to a. */
bool ip_prefix_listed(const struct ip_prefix *list, size_t n, const struct ip_prefix *a);
/* Whether q is p or lies inside it: same family, q no shorter, and q's
 * first p->cidr bits are p's. */
bool ip_prefix_contains(const struct ip_prefix *p, const struct ip_prefix *q);
/* Whether no bit of addr is set from cidr on (up to 128 bits, so an IPv4
 * prefix also has addr[4, 16) zero). */
bool ip_prefix_masked(const struct ip_prefix *p);
/* A known family, a length that fits it, and masked. */
bool ip_prefix_valid(const struct ip_prefix *p);

/* Whether the address addr of family lies in p (p's first p->cidr bits);
 * p->cidr at most 128. Inline: the data path asks it per packet, for the
 * source of a VM's frame and for mesh addresses. */
static inline bool ip_prefix_has_addr(const struct ip_prefix *p, int family,
				      const uint8_t *addr)
{
	unsigned int bytes = p->cidr / 8, bits = p->cidr % 8;

	if (p->family != family)
		return false;
	if (memcmp(p->addr, addr, bytes))
		return false;
	return !bits || !((p->addr[bytes] ^ addr[bytes]) & (uint8_t)(0xff << (8 - bits)));
}

#endif
