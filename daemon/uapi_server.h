/* The UAPI socket server: /var/run/wireguard/IFNAME.sock answered the way
 * wireguard-go answers it (the requests' forms are wg/uapi.h). */
#ifndef WEFT_DAEMON_UAPI_SERVER_H
#define WEFT_DAEMON_UAPI_SERVER_H

#include <stddef.h>
#include <sys/types.h>

#include "wg/config.h"
#include "wg/uapi.h"

struct uapi_server_ops {
	/* Fill cfg with a full snapshot (private key, port, fwmark, all peers with all fields). 0 or -errno. */
	int (*get)(void *ctx, struct wg_device_config *cfg);
	/* Apply a parsed set transaction atomically. 0 or -errno (-EADDRINUSE when the port is taken, ...).
	 * Peer entries are applied in order; one key may appear in several entries. A peer entry with
	 * remove set ignores its other fields; update_only skips the entry when the peer does not exist;
	 * has_private_key with an all-zero key removes the private key; has_preshared_key with an all-zero
	 * key means no preshared key. Allowed IPs come masked to their cidr; replace_allowed_ips means
	 * "drop the peer's old ones first" (lines before it in the request were already discarded).
	 * The server never runs two set calls, or a set and a get, at the same time. */
	int (*set)(void *ctx, const struct wg_device_config *cfg);
	/* weft's own counters as "key=value\n" lines (malloc'd); for the "stats=1" request. */
	int (*stats)(void *ctx, char **text, size_t *len);
	/* Called (from the server thread) once the socket file was removed. Must not call
	 * uapi_server_stop: signal the thread that owns the server instead. */
	void (*gone)(void *ctx);
	/* weft's own requests (docs/cli.md): "weft=VERB\n" (VERB: 1 to WG_UAPI_MAX_VERB of a-z, 0-9,
	 * '-'), then key=value lines up to an empty line, as set=1. body holds those lines, each with
	 * its '\n', NUL-terminated at body[len]. *reply, when set, is malloc'd "key=value\n" lines
	 * (freed by the server) sent before "errno=N\n\n" even on failure (a message= line says why);
	 * N is the positive errno of the return value (0 or -errno). Runs alone, like set. Optional:
	 * without it, weft requests are refused as unknown operations. */
	int (*command)(void *ctx, const char *verb, const char *body, size_t len, char **reply,
		       size_t *reply_len);
};

struct uapi_server;

/* Creates `dir` (0755) and IFNAME.sock (mode 0700: umask 077 around bind, as wireguard-go), removes
 * a stale socket, refuses with EADDRINUSE if another daemon answers on it, starts an accept thread
 * that serves each client on its own thread (at most WG_UAPI_MAX_CLIENTS at once; more wait), and
 * watches the socket file with inotify, calling ops->gone once it is removed or replaced.
 * `dir` NULL means /var/run/wireguard. NULL with errno set on failure. */
struct uapi_server *uapi_server_start(const char *dir, const char *ifname,
				      const struct uapi_server_ops *ops, void *ctx);
/* Closes the socket, unlinks its file (when it is still ours), waits for every client thread. */
void uapi_server_stop(struct uapi_server *s);
/* Whether a daemon answers on dir/IFNAME.sock (dir NULL: /var/run/wireguard), asked before
 * anything touches the interface: its pid (SO_PEERCRED) when one does, 0 when none does (no
 * socket, or a stale one), -1 when one does but its pid is unknown (a full backlog). */
pid_t uapi_server_owner(const char *dir, const char *ifname);

#endif
