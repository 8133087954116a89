/* A peer's UDP endpoint: an IPv4 or IPv6 socket address. */
#ifndef WEFT_WG_ENDPOINT_H
#define WEFT_WG_ENDPOINT_H

#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

union wg_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in in4;
	struct sockaddr_in6 in6;
};

static inline socklen_t wg_sockaddr_len(const union wg_sockaddr *a)
{
	return a->sa.sa_family == AF_INET6 ? sizeof(a->in6) :
	       a->sa.sa_family == AF_INET  ? sizeof(a->in4) : 0;
}

/* Same family, address and port (and scope for IPv6). */
static inline bool wg_sockaddr_equal(const union wg_sockaddr *a, const union wg_sockaddr *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return false;
	if (a->sa.sa_family == AF_INET)
		return a->in4.sin_port == b->in4.sin_port &&
		       a->in4.sin_addr.s_addr == b->in4.sin_addr.s_addr;
	if (a->sa.sa_family == AF_INET6)
		return a->in6.sin6_port == b->in6.sin6_port &&
		       a->in6.sin6_scope_id == b->in6.sin6_scope_id &&
		       !memcmp(&a->in6.sin6_addr, &b->in6.sin6_addr, 16);
	return false;
}

#endif
