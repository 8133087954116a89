/* The host's start and stop (daemon/host.h). */
#include "daemon/host.h"

#include <pthread.h>
#include <stdatomic.h>

#include "datapath/datapath.h"
#include "mesh/mesh.h"
#include "port/ports.h"
#include "wg/device.h"

static void kick(struct wg_device *dev, int worker)
{
	if (worker >= 0) {
		if (worker < dev->n_workers)
			dp_worker_kick(dev->workers[worker]);
		return;
	}
	for (int i = 0; i < dev->n_workers; i++)
		dp_worker_kick(dev->workers[i]);
}

struct wg_device *host_new(const char *ifname, const int *tun_fds, const int *cpus, int n,
			   bool tun_vnet, unsigned int mtu)
{
	struct wg_device *dev = wg_device_new(ifname, tun_fds, cpus, n, tun_vnet, mtu);

	if (!dev)
		return NULL;
	if (port_table_new(dev) || mesh_new(dev, &dev->mesh)) {
		host_free(dev);
		return NULL;
	}
	dev->hooks.kick = kick;
	dev->hooks.peer_removed = mesh_peer_removed;
	dev->hooks.peer_up = mesh_peer_up;
	dev->hooks.local_added = mesh_local_added;
	dev->hooks.local_removed = mesh_local_removed;
	return dev;
}

int host_start(struct wg_device *dev)
{
	int err = wg_device_start(dev);

	for (int i = 0; !err && i < dev->n_workers; i++)
		err = dp_worker_start(dev, i, dev->tun_fds[i], dev->cpus[i], &dev->workers[i]);
	return err ? err : mesh_start(dev->mesh);
}

void host_stop(struct wg_device *dev)
{
	atomic_store(&dev->stopping, true);
	mesh_stop(dev->mesh);
	port_table_halt_backends(dev);
	for (int i = 0; i < dev->n_workers; i++) {
		dp_worker_stop(dev->workers[i]);
		dev->workers[i] = NULL;
	}
	wg_device_stop(dev);
}

void host_free(struct wg_device *dev)
{
	if (!dev)
		return;
	port_table_halt_backends(dev);
	wg_rwlock_wrlock(&dev->lock);
	mesh_free(dev);
	port_table_free(dev);
	wg_rwlock_unlock(&dev->lock);
	wg_device_free(dev);
}
