/* sd_notify(3) without libsystemd: READY=1 and STATUS= to $NOTIFY_SOCKET. */
#ifndef WEFT_DAEMON_NOTIFY_H
#define WEFT_DAEMON_NOTIFY_H

/* Sends state (e.g. "READY=1\nSTATUS=...") when NOTIFY_SOCKET is set.
 * 0 when sent or not asked for; -errno on failure. */
int notify_send(const char *state);

#endif
