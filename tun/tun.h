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

/* Opens one more queue of the existing multi-queue TUN ifname (no pattern).
 * vnet_hdr asks for IFF_VNET_HDR, which the kernel keeps per device, not per
 * queue: it must match how the device was created (tun_open never sets it).
 * Returns the fd (O_CLOEXEC, blocking) or -errno (-ENODEV: no such link,
 * -EINVAL: not a multi-queue TUN, or its vnet-header setting differs). */
int tun_open_queue(const char *ifname, bool vnet_hdr);

#endif
