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

/* The same, with IFF_VNET_HDR when vnet_hdr: every read and write then
 * starts with a 10-byte virtio-net header (tun/offload.h). */
int tun_open_vnet(const char *ifname, char *name_out, bool multi_queue, bool vnet_hdr);
/* TUNSETOFFLOAD on an fd of a vnet-header TUN (TUN_F_* flags); 0 or -errno
 * (-EINVAL when the kernel lacks one of them). */
int tun_set_offload(int fd, unsigned int flags);

/* Opens one more queue of the existing multi-queue TUN ifname (no pattern).
 * vnet_hdr asks for IFF_VNET_HDR, which the kernel keeps per device, not per
 * queue: it must match how the device was created (tun_open never sets it).
 * Returns the fd (O_CLOEXEC, blocking) or -errno (-ENODEV: no such link,
 * -EINVAL: not a multi-queue TUN, or its vnet-header setting differs). */
int tun_open_queue(const char *ifname, bool vnet_hdr);

/* Creates the tap netdev ifname (IFF_TAP|IFF_NO_PI|IFF_VNET_HDR|
 * IFF_MULTI_QUEUE, not persistent: it goes when the last fd closes) with n
 * queues, their fds (O_CLOEXEC, blocking) in fds[0, n). Frames carry a
 * 10-byte virtio-net header both ways. 0, -EEXIST (a netdev of that name
 * exists), -EINVAL, -ENAMETOOLONG or what the kernel said. */
int tun_open_tap(const char *ifname, int *fds, int n);

#endif
