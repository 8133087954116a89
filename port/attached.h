/* Attached ports: existing host-namespace netdevs (a VMM's tap, the host
 * side of a veth) that weftd serves without owning them. The host kernel
 * carries the VM's frames: weftd installs "ADDR/CIDR dev NAME" routes for
 * the registered addresses (tun/route.h) and writes packets for the VM to
 * its TUN; the VM's off-host packets reach the TUN by the host's routes.
 * weftd answers the VM's NDP and ARP itself, from one thread that reads a
 * filtered packet socket per port, and, where BPF is available, lets the
 * tc bypass (port/bypass.h) carry frames between local VMs.
 *
 * Its per-port hooks are port_attached_class (port/ports.h), serialized by
 * the device's write lock but for open (before the port is published). */
#ifndef WEFT_PORT_ATTACHED_H
#define WEFT_PORT_ATTACHED_H

struct wg_device;
struct port;

/* At device stop, no lock held: the NDP thread ends. */
void port_attached_stop(struct wg_device *dev);
/* At teardown, after every port was closed: the bypass program goes. */
void port_attached_free(struct wg_device *dev);

#endif
