/* The cross-platform userspace configuration protocol
 * (https://www.wireguard.com/xplatform/), parsed and formatted the way
 * wireguard-go does, so that `wg` from wireguard-tools can drive weftd
 * unchanged. Its socket server is daemon/uapi_server.h. */
#ifndef WEFT_WG_UAPI_H
#define WEFT_WG_UAPI_H

#include <errno.h>
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

/* wireguard-go's ipcError* codes (ipc/uapi_unix.go): negative errno values. */
enum {
	IPC_ERROR_IO = -EIO,
	IPC_ERROR_PROTOCOL = -EPROTO,
	IPC_ERROR_INVALID = -EINVAL,
	IPC_ERROR_PORT_IN_USE = -EADDRINUSE,
	IPC_ERROR_UNKNOWN = -55, /* ENOANO */
};


/* Parses the body of a set request (the lines after "set=1\n", without the final empty line).
 * cfg must be empty (zeroed or cleared); it is filled on success and left cleared on failure.
 * 0 or -errno as wireguard-go reports it: -EPROTO for a line without '=', -EINVAL for an unknown
 * key, a key at the wrong level or a bad value, -ENOMEM. Never crashes on any input; this is the
 * entry point of the fuzz target. */
int wg_uapi_parse_set(const uint8_t *data, size_t len, struct wg_device_config *cfg);
/* The same, and *why (when why is not NULL) names what was wrong, for the
 * log. */
int wg_uapi_parse_set_why(const uint8_t *data, size_t len, struct wg_device_config *cfg,
			  const char **why);

/* Formats a get reply body (the key=value lines, ending with "errno=0\n\n"). malloc'd, 0 or -ENOMEM.
 * NUL-terminated (not counted in out_len). It may hold the private key: wipe it before free. */
int wg_uapi_format_get(const struct wg_device_config *cfg, char **out, size_t *out_len);

#endif
