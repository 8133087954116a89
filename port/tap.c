/* Tap ports: a tap netdev weftd creates with one queue per worker, which
 * the VMM (or a test) opens by name, or which is moved into the VM's
 * namespace. The workers read and write its queues (datapath/). */
#include <stdlib.h>
#include <string.h>

#include "port/ports.h"
#include "tun/netlink.h"
#include "tun/offload.h"
#include "tun/tun.h"
#include "wg/device.h"
#include "wg/log.h"

/* Lets the VM's kernel hand over TCP super-packets and leave checksums to
 * us, as it would to a virtio-net NIC (WEFT_TAP_OFFLOAD=0: off). */
static bool tap_offload(struct port *port)
{
	const char *env = getenv("WEFT_TAP_OFFLOAD");
	int err = 0;

	if (env && !strcmp(env, "0"))
		return false;
	for (int i = 0; i < port->n_fds && !err; i++)
		err = tun_set_offload(port->fds[i], TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6);
	if (err) {
		log_info("port %s: no TSO on the tap (%s): one packet per frame", port->cfg.name,
			 strerror(-err));
		for (int i = 0; i < port->n_fds; i++)
			tun_set_offload(port->fds[i], 0);
	}
	return !err;
}

static int tap_open(struct wg_device *dev, struct port *port)
{
	int err = tun_open_tap(port->cfg.name, port->fds, dev->n_workers);

	if (err)
		return err;
	port->n_fds = dev->n_workers;
	port->offload = tap_offload(port);
	/* The VM's MAC: a tap moved into a namespace (or a VMM that takes the
	 * netdev's address) sends as the port expects, with no step by hand. */
	err = tun_set_mac(port->fds[0], port->cfg.vm_mac);
	if (!err)
		err = tun_link_set_mtu(port->cfg.name, port->cfg.mtu);
	if (!err)
		err = tun_link_set_up(port->cfg.name, true);
	return err;
}

/* A tap is usually moved into its VM's namespace: its state is read where
 * it lives, through its fd, not by name here. */
static void tap_info(struct wg_device *dev, const struct port *port, struct port_info *info)
{
	struct tun_link_state st;

	info->connected = tun_link_read(port->fds[0], &st) == 0 && st.up;
}

const struct port_class port_tap_class = {
	.type = PORT_TAP,
	.open = tap_open,
	.info = tap_info,
};
