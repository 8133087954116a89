/* The host: one WireGuard device (wg/) with what runs above it, started
 * and stopped in order: the data-path workers (datapath/), the VM ports'
 * backends (port/) and the mesh (mesh/). The protocol knows them only
 * through the device's hooks, which host_new sets. */
#ifndef WEFT_DAEMON_HOST_H
#define WEFT_DAEMON_HOST_H

#include <stdbool.h>

struct wg_device;

/* wg_device_new's arguments; the device comes with its (disabled) mesh.
 * NULL on failure. */
struct wg_device *host_new(const char *ifname, const int *tun_fds, const int *cpus, int n,
			   bool tun_vnet, unsigned int mtu);
/* The device's threads, then one worker per TUN queue, then the mesh
 * thread. 0 or -errno. */
int host_start(struct wg_device *dev);
/* Safe on a host that never started, or started in part. */
void host_stop(struct wg_device *dev);
void host_free(struct wg_device *dev);

#endif
