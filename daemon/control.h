/* weft's own control requests, the ones `wg` has no words for: the daemon
 * side of the `weft` CLI. The UAPI server (wg/uapi.c) hands over each
 * "weft=VERB" request; this turns it into calls on the device and formats
 * the reply. The verbs and their keys are in docs/cli.md. */
#ifndef WEFT_DAEMON_CONTROL_H
#define WEFT_DAEMON_CONTROL_H

#include <stddef.h>

/* The uapi_server_ops.command of weftd; ctx is the struct wg_device. Verbs:
 * port-add (a port_text request body), port-del (name=NAME), port-list (no
 * keys; replies with port_text_format_info); vm-add (port=NAME and
 * address=CIDR lines: mesh_vm_add), vm-del (address lines:
 * mesh_vm_del), mesh-set (mode=, prefix=: mesh_set of what
 * mesh_get gave with those changed; lease_key=), mesh-show (no keys;
 * replies with mesh_text_format_show), lease-add (lease= lines:
 * mesh_lease_add). 0 or -errno; on failure *reply may hold a
 * "message=WHY\n" line. */
int control_command(void *ctx, const char *verb, const char *body, size_t len, char **reply,
		    size_t *reply_len);

#endif
