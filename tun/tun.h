/* The TUN device that carries the host's own traffic. */
#ifndef WEFT_TUN_TUN_H
#define WEFT_TUN_TUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Which of n queues to write the IP packet ip[0, len) to. The kernel sends
 * a flow out of a multi-queue TUN through the queue its packets were last
 * written to (tun_automq_select_queue): writing every packet through the
 * writer's own queue would pull every flow whose replies one worker
 * receives onto that worker. A hash of addresses and ports (addresses only
 * for other protocols and fragments) spreads the flows over all queues and
 * keeps each flow on one. Returns 0..n-1; 0 when n < 2 or len is short. */
unsigned int tun_queue_for(const uint8_t *ip, size_t len, unsigned int n);

/* Creates the tap netdev ifname (IFF_TAP|IFF_NO_PI|IFF_VNET_HDR|
 * IFF_MULTI_QUEUE, not persistent: it goes when the last fd closes) with n
 * queues, their fds (O_CLOEXEC, blocking) in fds[0, n). Frames carry a
 * 10-byte virtio-net header both ways. 0, -EEXIST (a netdev of that name
 * exists), -EINVAL, -ENAMETOOLONG or what the kernel said. */
int tun_open_tap(const char *ifname, int *fds, int n);

/* SIOCSIFHWADDR through an fd of a tap: its netdev's MAC, wherever the
 * netdev lives. 0 or -errno. */
int tun_set_mac(int fd, const uint8_t mac[6]);

#endif
