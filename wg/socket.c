/* UDP sockets for the device. */
#include "wg/socket.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wg/log.h"

enum { SOCKET_BUFFER_BYTES = 4 << 20 };

static int open_one(int family, uint16_t port, uint32_t fwmark)
{
	union wg_sockaddr a;
	int one = 1, size = SOCKET_BUFFER_BYTES;
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
	/* Bigger buffers absorb bursts between io_uring batches; the FORCE
	 * variants need CAP_NET_ADMIN, which weftd has at start-up. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	if (fwmark && setsockopt(fd, SOL_SOCKET, SO_MARK, &fwmark, sizeof(fwmark)))
		goto fail;
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

int wg_socket_open(struct wg_socket_set *s, uint16_t port, uint32_t fwmark)
{
	/* A random port must be free in both families: retry a few times. */
	for (int attempt = 0; attempt < 16; attempt++) {
		int fd4 = open_one(AF_INET, port, fwmark), fd6;

		if (fd4 < 0)
			return fd4;
		uint16_t p = bound_port(fd4);
		fd6 = open_one(AF_INET6, p, fwmark);
		if (fd6 == -EADDRINUSE && !port) {
			close(fd4);
			continue;
		}
		if (fd6 < 0 && fd6 != -EAFNOSUPPORT && fd6 != -EADDRNOTAVAIL) {
			close(fd4);
			return fd6;
		}
		if (fd6 < 0)
			log_info("IPv6 unavailable, listening on IPv4 only");
		atomic_store(&s->fd4, fd4);
		atomic_store(&s->fd6, fd6 < 0 ? -1 : fd6);
		s->port = p;
		return 0;
	}
	return -EADDRINUSE;
}

void wg_socket_close(struct wg_socket_set *s)
{
	int fd4 = atomic_exchange(&s->fd4, -1), fd6 = atomic_exchange(&s->fd6, -1);

	if (fd4 >= 0)
		close(fd4);
	if (fd6 >= 0)
		close(fd6);
}

int wg_socket_set_fwmark(struct wg_socket_set *s, uint32_t fwmark)
{
	int fds[2] = { atomic_load(&s->fd4), atomic_load(&s->fd6) };

	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0 && setsockopt(fds[i], SOL_SOCKET, SO_MARK, &fwmark, sizeof(fwmark)))
			return -errno;
	return 0;
}

int wg_socket_send(struct wg_socket_set *s, const void *buf, size_t len, const union wg_sockaddr *dst)
{
	int fd = dst->sa.sa_family == AF_INET6 ? atomic_load(&s->fd6) : atomic_load(&s->fd4);

	if (fd < 0)
		return -EAFNOSUPPORT;
	if (sendto(fd, buf, len, MSG_DONTWAIT, &dst->sa, wg_sockaddr_len(dst)) < 0)
		return -errno;
	return 0;
}
