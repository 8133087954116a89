/* The same-host bypass for attached ports (port/bypass.bpf.c): loading
 * the tc program, attaching it to each attached port's netdev, and keeping
 * its maps in step with the ports' registered addresses.
 *
 * Every call comes from the control plane (port add/del, registration),
 * serialized by the device's write lock; port_bypass_stats also under the
 * read lock (a syscall per call, no shared state). Without BPF (WEFT_BPF=0,
 * no privilege, a load failure) port_bypass_open returns NULL once logged,
 * and every other call takes NULL and does nothing. */
#ifndef WEFT_PORT_BYPASS_H
#define WEFT_PORT_BYPASS_H

#include <stdbool.h>
#include <stdint.h>

#include "port/config.h"

struct port_bypass;

/* Loads the program and creates its maps; NULL when off (logged once). */
struct port_bypass *port_bypass_open(void);
void port_bypass_close(struct port_bypass *b);

/* Attaches the program at ingress of ifindex (a tcx link; a clsact hook if
 * tcx is missing) for the port in slot, whose VM sends to router_mac.
 * 0 or -errno (then the port is not bypassed, and not anti-spoofed by BPF). */
int port_bypass_attach(struct port_bypass *b, int slot, int ifindex, const uint8_t router_mac[6]);
/* Detaches it and forgets the port's stats. */
void port_bypass_detach(struct port_bypass *b, int slot);

/* Maps a registered address to the port: frames for it are redirected to
 * ifindex with vm_mac <- router_mac. 0 or -errno. */
int port_bypass_route_add(struct port_bypass *b, const struct ip_prefix *a, int slot, int ifindex,
			  const uint8_t vm_mac[6], const uint8_t router_mac[6], bool is_veth);
/* Forgets it: from now on its frames pass to the kernel. */
void port_bypass_route_del(struct port_bypass *b, const struct ip_prefix *a);

/* The slot's counters summed over the CPUs. */
void port_bypass_stats(struct port_bypass *b, int slot, uint64_t *packets, uint64_t *bytes,
		       uint64_t *spoofed);

/* The program's fd, for tests that run it on crafted frames. */
int port_bypass_prog_fd(struct port_bypass *b);

#endif
