/* The TUN device that carries the host's own traffic. */
#ifndef WEFT_TUN_TUN_H
#define WEFT_TUN_TUN_H

#include <stdbool.h>
#include <stddef.h>

/* Opens /dev/net/tun as IFF_TUN|IFF_NO_PI (plus IFF_MULTI_QUEUE when
 * multi_queue) named ifname (may be a printf pattern like "wg%d"); the kernel's
 * chosen name is written back to name_out (IFNAMSIZ bytes). Returns the fd
 * (O_CLOEXEC, blocking) or -errno. */
int tun_open(const char *ifname, char *name_out, bool multi_queue);

#endif
