/* Attached ports: existing host-namespace netdevs (a VMM's tap, the host
 * side of a veth) that weftd serves without owning them. The host kernel
 * carries the VM's frames: weftd installs "ADDR/CIDR dev NAME" routes for
 * the registered addresses (tun/route.h) and writes packets for the VM to
 * its TUN; the VM's off-host packets reach the TUN by the host's routes.
 * weftd answers the VM's NDP and ARP itself, from one thread that reads a
 * filtered packet socket per port, and, where BPF is available, lets the
 * tc bypass (port/bypass.h) carry frames between local VMs.
 *
 * The device's write lock serializes every call here but wg_attached_open
 * (before the port is published) and wg_attached_stop (no lock held). */
#ifndef WEFT_PORT_ATTACHED_H
#define WEFT_PORT_ATTACHED_H

#include <stdint.h>

#include "port/config.h"

struct wg_device;
struct wg_port;

/* Before publishing: finds the netdev, takes its MAC as the router MAC
 * (the kernel then accepts the VM's routed frames as its own), opens its
 * packet socket and sets IPv4 rp_filter. 0 or -errno. */
int wg_attached_open(struct wg_device *dev, struct wg_port *port);
/* Once published (write lock): the NDP reader, the host routes, the
 * bypass program and its map entries. 0 or -errno. */
int wg_attached_published(struct wg_device *dev, struct wg_port *port);
/* Write lock: an address registered to or removed from the port. */
void wg_attached_addr_added(struct wg_device *dev, struct wg_port *port,
			    const struct ip_prefix *a);
void wg_attached_addr_removed(struct wg_device *dev, struct wg_port *port,
			      const struct ip_prefix *a);
/* Write lock, the port out of the slot table: its routes, map entries,
 * program and packet socket go. */
void wg_attached_close(struct wg_device *dev, struct wg_port *port);
/* The bypass counters of the port (zero without BPF); spoofed: frames the
 * program dropped for a source not registered to the port. */
void wg_attached_stats(struct wg_device *dev, const struct wg_port *port, uint64_t *packets,
		       uint64_t *bytes, uint64_t *spoofed);
/* At device stop, no lock held: the NDP thread ends. */
void wg_attached_stop(struct wg_device *dev);
/* At teardown, after every port was closed: the bypass program goes. */
void wg_attached_free(struct wg_device *dev);

#endif
