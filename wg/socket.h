/* The device's UDP sockets: one IPv4 and one IPv6 socket on the same port.
 * The fds are published for lock-free senders; workers receive on them. */
#ifndef WEFT_WG_SOCKET_H
#define WEFT_WG_SOCKET_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "wg/endpoint.h"

struct wg_socket_set {
	_Atomic int fd4;  /* -1 when none */
	_Atomic int fd6;  /* -1 when IPv6 is unavailable */
	uint16_t port;
};

/* Binds both sockets to port (0: a random free port shared by both) with
 * fwmark (0: none). 0 or -errno (-EADDRINUSE). */
int wg_socket_open(struct wg_socket_set *s, uint16_t port, uint32_t fwmark);
void wg_socket_close(struct wg_socket_set *s);
int wg_socket_set_fwmark(struct wg_socket_set *s, uint32_t fwmark);
/* A direct send for the slow path (handshakes, timers); 0 or -errno. */
int wg_socket_send(struct wg_socket_set *s, const void *buf, size_t len, const union wg_sockaddr *dst);

#endif
