/* The cross-platform userspace configuration protocol
 * (https://www.wireguard.com/xplatform/) on /var/run/wireguard/IFNAME.sock,
 * answered the way wireguard-go answers it, so that `wg` from wireguard-tools
 * can drive weftd unchanged. */
#ifndef WEFT_WG_UAPI_H
#define WEFT_WG_UAPI_H

#include <stddef.h>
#include <stdint.h>

#include "wg/config.h"

#define WG_UAPI_DEFAULT_DIR "/var/run/wireguard"

enum {
	WG_UAPI_MAX_LINE = 4096,               /* bytes per request line, '\n' included */
	WG_UAPI_MAX_REQUEST = 16 * 1024 * 1024, /* bytes per set request */
	WG_UAPI_MAX_CLIENTS = 64,
	/* A connection idle this long mid-request (or between requests) is closed. */
	WG_UAPI_IDLE_TIMEOUT_SEC = 10,              /* connections served at once; more wait */
	WG_UAPI_MAX_VERB = 32,                 /* bytes of VERB in "weft=VERB" */
	WG_UAPI_MAX_COMMAND = 64 * 1024,       /* bytes of a weft request's body */
};

struct wg_uapi_ops {
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
	 * wg_uapi_server_stop: signal the thread that owns the server instead. */
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

/* Parses the body of a set request (the lines after "set=1\n", without the final empty line).
 * cfg must be empty (zeroed or cleared); it is filled on success and left cleared on failure.
 * 0 or -errno as wireguard-go reports it: -EPROTO for a line without '=', -EINVAL for an unknown
 * key, a key at the wrong level or a bad value, -ENOMEM. Never crashes on any input; this is the
 * entry point of the fuzz target. */
int wg_uapi_parse_set(const uint8_t *data, size_t len, struct wg_device_config *cfg);

/* Formats a get reply body (the key=value lines, ending with "errno=0\n\n"). malloc'd, 0 or -ENOMEM.
 * NUL-terminated (not counted in out_len). It may hold the private key: wipe it before free. */
int wg_uapi_format_get(const struct wg_device_config *cfg, char **out, size_t *out_len);

struct wg_uapi_server;

/* Creates `dir` (0755) and IFNAME.sock (mode 0700: umask 077 around bind, as wireguard-go), removes
 * a stale socket, refuses with EADDRINUSE if another daemon answers on it, starts an accept thread
 * that serves each client on its own thread (at most WG_UAPI_MAX_CLIENTS at once; more wait), and
 * watches the socket file with inotify, calling ops->gone once it is removed or replaced.
 * `dir` NULL means /var/run/wireguard. NULL with errno set on failure. */
struct wg_uapi_server *wg_uapi_server_start(const char *dir, const char *ifname,
					    const struct wg_uapi_ops *ops, void *ctx);
/* Closes the socket, unlinks its file (when it is still ours), waits for every client thread. */
void wg_uapi_server_stop(struct wg_uapi_server *s);

#endif
