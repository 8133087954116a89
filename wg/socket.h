/* The device's UDP sockets: for each worker one IPv4 and one IPv6 socket,
 * all on the same port with SO_REUSEPORT, so the kernel spreads flows over
 * the workers. The fds are published for lock-free senders; each worker
 * receives on its own pair. */
#ifndef WEFT_WG_SOCKET_H
#define WEFT_WG_SOCKET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wg/endpoint.h"

enum { WG_MAX_WORKERS = 16 };

struct wg_socket_pair {
	_Atomic int fd4;  /* -1 when none */
	_Atomic int fd6;  /* -1 when IPv6 is unavailable */
};

struct wg_socket_set {
	struct wg_socket_pair pair[WG_MAX_WORKERS];
	int n;
	uint16_t port;
	bool gro;          /* UDP_GRO enabled on every socket */
	bool gso;          /* UDP_SEGMENT accepted */
};

/* Offloads a caller may refuse (tests, troubleshooting). */
enum wg_socket_flags {
	WG_SOCKET_NO_GRO = 1 << 0,
	WG_SOCKET_NO_GSO = 1 << 1,
};

void wg_socket_init(struct wg_socket_set *s);
/* Binds n pairs to port (0: a random port free in both families) with
 * fwmark (0: none). On failure nothing stays open. 0 or -errno. */
int wg_socket_open(struct wg_socket_set *s, int n, uint16_t port, uint32_t fwmark,
		   unsigned int flags);
void wg_socket_close(struct wg_socket_set *s);
int wg_socket_set_fwmark(struct wg_socket_set *s, uint32_t fwmark);
/* A direct send for the slow path (handshakes, timers) on pair 0. */
int wg_socket_send(struct wg_socket_set *s, const void *buf, size_t len, const union wg_sockaddr *dst);

#endif
