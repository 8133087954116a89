/* UDP sockets for the device. */
#include "wg/socket.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wg/log.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

/* Socket buffers: big enough for bursts between batches, small enough not
 * to hold milliseconds of traffic (WEFT_SOCKET_BUFFER overrides, bytes). */
enum { SOCKET_BUFFER_BYTES = 1 << 20 };

static int socket_buffer_bytes(void)
{
	const char *env = getenv("WEFT_SOCKET_BUFFER");
	long v = env ? strtol(env, NULL, 10) : SOCKET_BUFFER_BYTES;

	return v >= 65536 && v <= (64 << 20) ? (int)v : SOCKET_BUFFER_BYTES;
}

void wg_socket_init(struct wg_socket_set *s)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < WG_MAX_WORKERS; i++) {
		atomic_init(&s->pair[i].fd4, -1);
		atomic_init(&s->pair[i].fd6, -1);
	}
}

static int open_one(int family, uint16_t port, uint32_t fwmark, bool reuse, bool *gro, bool *gso)
{
	union wg_sockaddr a;
	int one = 1, size = socket_buffer_bytes(), seg = 1280;
	int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);

	if (fd < 0)
		return -errno;
	memset(&a, 0, sizeof(a));
	if (family == AF_INET6) {
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		a.in6.sin6_family = AF_INET6;
		a.in6.sin6_port = htons(port);
		a.in6.sin6_addr = in6addr_any;
	} else {
		a.in4.sin_family = AF_INET;
		a.in4.sin_port = htons(port);
		a.in4.sin_addr.s_addr = htonl(INADDR_ANY);
	}
	/* Every worker binds the same port; the kernel hashes flows over them. */
	if (reuse && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)))
		goto fail;
	/* Bigger buffers absorb bursts between io_uring batches; the FORCE
	 * variants need CAP_NET_ADMIN, which weftd has at start-up. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	if (fwmark && setsockopt(fd, SOL_SOCKET, SO_MARK, &fwmark, sizeof(fwmark)))
		goto fail;
	if (!*gro || setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one)))
		*gro = false;
	/* Probing UDP_SEGMENT as a socket option tells whether GSO sends are
	 * understood; reset to 0 so only our per-send cmsg applies. */
	if (setsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &seg, sizeof(seg)))
		*gso = false;
	seg = 0;
	setsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &seg, sizeof(seg));
	if (bind(fd, &a.sa, wg_sockaddr_len(&a)))
		goto fail;
	return fd;
fail:
	{
		int err = -errno;
		close(fd);
		return err;
	}
}

static uint16_t bound_port(int fd)
{
	union wg_sockaddr a;
	socklen_t len = sizeof(a);

	if (getsockname(fd, &a.sa, &len))
		return 0;
	return ntohs(a.sa.sa_family == AF_INET6 ? a.in6.sin6_port : a.in4.sin_port);
}

/* SO_REUSEPORT would let us join another daemon's group on a taken port
 * (same user), so first make sure the port is free with plain binds, which
 * also pick the random port. */
static int probe_port(uint16_t *port)
{
	bool gro = false, gso = false;
	int fd4 = open_one(AF_INET, *port, 0, false, &gro, &gso), fd6;

	if (fd4 < 0)
		return fd4;
	*port = bound_port(fd4);
	fd6 = open_one(AF_INET6, *port, 0, false, &gro, &gso);
	close(fd4);
	if (fd6 >= 0)
		close(fd6);
	return fd6 == -EADDRINUSE ? fd6 : 0;
}

static int open_group(struct wg_socket_set *s, int n, uint16_t port, uint32_t fwmark,
		      unsigned int flags)
{
	bool v6 = true, reuse = n > 1;

	s->gro = !(flags & WG_SOCKET_NO_GRO);
	s->gso = true;
	if (reuse) {
		int err = probe_port(&port);
		if (err)
			return err;
	}
	for (int i = 0; i < n; i++) {
		int fd4 = open_one(AF_INET, port, fwmark, reuse, &s->gro, &s->gso), fd6 = -1;

		if (fd4 < 0)
			return fd4;
		atomic_store(&s->pair[i].fd4, fd4);
		if (!port)
			port = bound_port(fd4);
		if (v6) {
			fd6 = open_one(AF_INET6, port, fwmark, reuse, &s->gro, &s->gso);
			if (fd6 == -EAFNOSUPPORT || fd6 == -EADDRNOTAVAIL) {
				log_info("IPv6 unavailable, listening on IPv4 only");
				v6 = false;
			} else if (fd6 < 0) {
				return fd6;
			}
		}
		atomic_store(&s->pair[i].fd6, fd6 < 0 ? -1 : fd6);
		s->n = i + 1;
	}
	s->port = port;
	if (flags & WG_SOCKET_NO_GSO)
		s->gso = false;
	return 0;
}

int wg_socket_open(struct wg_socket_set *s, int n, uint16_t port, uint32_t fwmark,
		   unsigned int flags)
{
	int err = -EADDRINUSE;

	if (n < 1 || n > WG_MAX_WORKERS)
		return -EINVAL;
	/* A random port must be free in both families: retry a few times. */
	for (int attempt = 0; attempt < 16; attempt++) {
		wg_socket_init(s);
		err = open_group(s, n, port, fwmark, flags);
		if (!err)
			return 0;
		wg_socket_close(s);
		if (err != -EADDRINUSE || port)
			break;
	}
	return err;
}

void wg_socket_close(struct wg_socket_set *s)
{
	for (int i = 0; i < WG_MAX_WORKERS; i++) {
		int fd4 = atomic_exchange(&s->pair[i].fd4, -1);
		int fd6 = atomic_exchange(&s->pair[i].fd6, -1);

		if (fd4 >= 0)
			close(fd4);
		if (fd6 >= 0)
			close(fd6);
	}
	s->n = 0;
}

int wg_socket_set_fwmark(struct wg_socket_set *s, uint32_t fwmark)
{
	for (int i = 0; i < s->n; i++) {
		int fds[2] = { atomic_load(&s->pair[i].fd4), atomic_load(&s->pair[i].fd6) };

		for (int j = 0; j < 2; j++)
			if (fds[j] >= 0 &&
			    setsockopt(fds[j], SOL_SOCKET, SO_MARK, &fwmark, sizeof(fwmark)))
				return -errno;
	}
	return 0;
}

int wg_socket_send(struct wg_socket_set *s, const void *buf, size_t len, const union wg_sockaddr *dst)
{
	int fd = dst->sa.sa_family == AF_INET6 ? atomic_load(&s->pair[0].fd6) :
						 atomic_load(&s->pair[0].fd4);

	if (fd < 0)
		return -EAFNOSUPPORT;
	if (sendto(fd, buf, len, MSG_DONTWAIT, &dst->sa, wg_sockaddr_len(dst)) < 0)
		return -errno;
	return 0;
}
