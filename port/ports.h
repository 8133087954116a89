/* The device's VM ports at run time (the configuration is in port/config.h).
 *
 * A port sits in the device's slot table and in the forwarding table (its
 * registered addresses), both changed under the device's write lock, and is
 * reference counted: the device holds one reference, and every worker that
 * serves one of its queues holds one until its last I/O on the port is
 * done, so a port removed while frames are in flight goes away only after
 * them. */
#ifndef WEFT_PORT_PORTS_H
#define WEFT_PORT_PORTS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ndp/ndp.h"
#include "port/config.h"
#include "router/hop.h"
#include "wg/socket.h"

struct wg_device;
struct port;
struct port_vhost;

/* What differs between the kinds of port: one table per type, as OVS has
 * netdev_class, in the file of the type: tap (port/tap.c), vhost-user
 * (port/vhost.c), attached (port/attached.c). A hook left NULL does
 * nothing. The data path has the I/O half (datapath/worker_port.c). */
struct port_class {
	enum port_type type;
	/* Before the port is published, no lock held: opens its queues or
	 * its backend. 0 or -errno; the port is put on failure, which calls
	 * release. */
	int (*open)(struct wg_device *dev, struct port *port);
	/* With the write lock, just after the port entered the tables, and
	 * just before it leaves them (or at teardown). */
	int (*published)(struct wg_device *dev, struct port *port);
	void (*unpublished)(struct wg_device *dev, struct port *port);
	/* With the write lock: an address registered to or removed from it. */
	void (*addr_added)(struct wg_device *dev, struct port *port, const struct ip_prefix *a);
	void (*addr_removed)(struct wg_device *dev, struct port *port, const struct ip_prefix *a);
	/* With the read lock: whether its VM is connected, and the type's own
	 * counters, into info (which holds the common ones). */
	void (*info)(struct wg_device *dev, const struct port *port, struct port_info *info);
	/* At device stop, no lock held: the port's own thread ends. */
	void (*halt)(struct port *port);
	/* Once no worker touches the port, or at its last reference: the
	 * backend goes (called again, it does nothing). */
	void (*release)(struct port *port);
	/* Its VM is reached through the TUN and the host's routes, not
	 * through queues of weftd's own. */
	bool via_host;
};

extern const struct port_class port_tap_class, port_vhost_class, port_attached_class;

struct port {
	struct rt_hop hop;               /* first: the forwarding table's value */
	const struct port_class *class;  /* by cfg.type */
	struct port_config cfg;          /* with defaults filled in; immutable */
	struct ndp_port_config ndp;      /* derived from cfg; immutable */
	struct ndp_port_state ndp_state;
	struct port_counters counters;
	int fds[WG_MAX_WORKERS];         /* tap: one queue per worker */
	int n_fds;
	struct port_vhost *vhost;          /* vhost-user: the backend; NULL: tap */
	bool offload;                    /* tap: TSO and checksum offload on */
	int ifindex;                     /* attached: the netdev */
	int pkt_fd;                      /* attached: its NDP/ARP packet socket */
	bool is_veth;                    /* attached: a veth (else a tap) */
	bool bypassed;                   /* attached: the BPF bypass is on it */
	char rp_filter_was;              /* attached: its rp_filter before ('0'-'2'; 0: unknown) */
	int slot;                        /* index in dev->ports->slot[] */
	uint64_t seq;                    /* creation order */
	_Atomic int refs;
};

/* The device's VM ports (dev->ports), changed under the device write lock. */
struct port_table {
	struct port *slot[PORT_MAX];  /* NULL: free */
	uint64_t seq;                    /* the next port's creation stamp */
	_Atomic uint64_t gen;            /* bumped on every port change */
	struct port_attached *attached;    /* port/attached.h; NULL: none yet */
};

static inline struct port *port_from_hop(struct rt_hop *hop)
{
	return (struct port *)hop;
}

void port_get(struct port *port);
/* Drops a reference; the last one closes the port's fds and frees it. */
void port_put(struct port *port);

/* The NDP/ARP responder's view of a port configuration (defaults filled). */
void port_ndp_config(const struct port_config *cfg, struct ndp_port_config *ndp);

/* The device's empty port table (dev->ports), before it starts: 0 or
 * -ENOMEM. */
int port_table_new(struct wg_device *dev);
/* At device stop, before the workers stop: the vhost-user threads, with no
 * lock held (they take the device lock and wake the workers). Then, at
 * teardown with the write lock held, port_table_free frees every port and the
 * table. */
void port_table_halt_backends(struct wg_device *dev);
void port_table_free(struct wg_device *dev);

/* Adds a VM port (port/config.h), checked with port_config_check first: 0, -EEXIST (name or an address taken by another port), -EINVAL,
 * -ENOSPC (PORT_MAX), or what opening the tap or vhost-user socket said. */
int port_add(struct wg_device *dev, const struct port_config *cfg);
/* Removes a port by name. 0 or -ENOENT. */
int port_del(struct wg_device *dev, const char *name);
/* A snapshot of every port in creation order (malloc'd array, the caller
 * frees it). 0 or -ENOMEM. */
int port_list(struct wg_device *dev, struct port_info **out, size_t *n);

/* Registers addrs[0, n) (checked like a port's `address`) to the port
 * named name, at run time: its anti-spoofing set, its NDP view and the
 * forwarding table. Addresses it has already are skipped. 0, -ENOENT (no
 * such port), -EEXIST (another port has one), -ENOSPC (PORT_MAX_ADDRS),
 * -EINVAL. All or nothing but for -ENOMEM. */
int port_register(struct wg_device *dev, const char *name, const struct ip_prefix *addrs,
		  size_t n);
/* Unregisters addrs from whichever ports have them: 0, or -ENOENT when one
 * is registered nowhere (then nothing changed). */
int port_unregister(struct wg_device *dev, const struct ip_prefix *addrs, size_t n);

#endif
