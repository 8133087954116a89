/* VM ports: the NICs weftd serves for virtual machines. A port is a tap
 * netdev weftd owns, the backend side of a vhost-user socket, or an
 * existing host-namespace netdev weftd attaches to (a VMM's tap, a veth). Each has
 * the router-side MAC, the VM's MAC, the VM's registered addresses (frames
 * from any other source are dropped), and an MTU.
 *
 * This header holds what the control plane says about a port
 * (struct port_config, its text forms and its parser) and what it can read
 * back (struct port_counters). The runtime object lives with the device. */
#ifndef WEFT_PORT_CONFIG_H
#define WEFT_PORT_CONFIG_H

#include <net/if.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pkt/prefix.h"

enum {
	PORT_NAME_MAX = IFNAMSIZ,   /* with the NUL; a tap's netdev name */
	PORT_PATH_MAX = 108,        /* sun_path, with the NUL */
	PORT_MAX_ADDRS = 16,        /* registered prefixes per port */
	PORT_MAX_PREFIXES = 4,      /* RA prefixes per port */
	PORT_MAX = 256,             /* ports per device */
	PORT_MTU_DEFAULT = 1500,
	PORT_MTU_MIN = 1280,
	PORT_MTU_MAX = 9000,
};

enum port_type {
	PORT_TAP = 1,
	PORT_VHOST_USER = 2,
	PORT_ATTACHED = 3, /* a netdev someone else owns; the host kernel routes */
};

struct port_config {
	char name[PORT_NAME_MAX];      /* unique per device; a tap's netdev name */
	enum port_type type;
	char path[PORT_PATH_MAX];      /* vhost-user: the socket */
	bool server;                   /* vhost-user: weftd listens (default) */
	/* vhost-user server: who may connect to the socket weftd creates (a
	 * VMM running as libvirt-qemu, say). Unset: root's, mode 0600. */
	bool has_socket_uid, has_socket_gid;
	uint32_t socket_uid, socket_gid;
	uint16_t socket_mode;          /* 0: 0600 */
	uint8_t vm_mac[6];
	bool has_router_mac;
	uint8_t router_mac[6];         /* default PORT_ROUTER_MAC_DEFAULT */
	bool has_gateway4;
	uint8_t gateway4[4];           /* default 169.254.1.1 when the VM has IPv4 */
	struct ip_prefix addrs[PORT_MAX_ADDRS]; /* the VM's own (/32, /128), or routed to it */
	size_t n_addrs;
	struct ip_prefix prefixes[PORT_MAX_PREFIXES]; /* RA prefixes (IPv6), as in ndp/ndp.h */
	size_t n_prefixes;
	uint32_t mtu;                  /* 0: PORT_MTU_DEFAULT */
};

/* A locally administered unicast MAC, the same on every port and host (the
 * router is one hop away on every port). */
#define PORT_ROUTER_MAC_DEFAULT { 0x02, 0x77, 0x65, 0x66, 0x74, 0x01 }
#define PORT_GATEWAY4_DEFAULT { 169, 254, 1, 1 }

/* Every reason a port drops a frame. X(name, "text") */
#define PORT_DROP_REASONS(X)                                                        \
	X(spoofed_source, "spoofed_source") /* IP source not registered to the port */ \
	X(foreign_mac, "foreign_mac")       /* Ethernet source is not the VM's MAC */  \
	X(malformed, "malformed")           /* bad Ethernet/IP header or vnet header */ \
	X(unsupported, "unsupported")       /* EtherType weft does not route */       \
	X(ndp, "ndp")                       /* malformed NDP/ARP (see ndp_*) */      \
	X(no_route, "no_route")             /* nowhere to send it */                  \
	X(too_big, "too_big")               /* over the port's MTU */                 \
	X(ttl, "ttl")                       /* TTL or hop limit ran out */            \
	X(no_buffer, "no_buffer")           /* the guest had no room, or we had none */ \
	X(tx_error, "tx_error")             /* the kernel refused a write */

/* Per-port counters; workers add with relaxed atomics. rx: from the VM;
 * tx: to the VM. */
struct port_counters {
	_Atomic uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes;
#define PORT_DROP_FIELD(name, text) _Atomic uint64_t drop_##name;
	PORT_DROP_REASONS(PORT_DROP_FIELD)
#undef PORT_DROP_FIELD
};

#define port_count(c, name, n) atomic_fetch_add_explicit(&(c)->name, (n), memory_order_relaxed)

/* The drop reasons as numbers, for code that picks one at run time. */
enum port_drop {
#define PORT_DROP_ENUM(name, text) PORT_DROP_##name,
	PORT_DROP_REASONS(PORT_DROP_ENUM)
#undef PORT_DROP_ENUM
	PORT_DROP_COUNT
};

static inline void port_count_drop(struct port_counters *c, enum port_drop why)
{
	switch (why) {
#define PORT_DROP_CASE(name, text)                    \
	case PORT_DROP_##name:                        \
		port_count(c, drop_##name, 1);        \
		break;
	PORT_DROP_REASONS(PORT_DROP_CASE)
#undef PORT_DROP_CASE
	case PORT_DROP_COUNT:
		break;
	}
}

/* What `weft port list` shows of one port. */
struct port_info {
	struct port_config cfg;
	bool connected;                /* vhost-user: a frontend is attached; tap: up */
	uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes;
#define PORT_DROP_INFO(name, text) uint64_t drop_##name;
	PORT_DROP_REASONS(PORT_DROP_INFO)
#undef PORT_DROP_INFO
	uint64_t ndp_replies;          /* NA/RA/ARP replies sent */
	uint64_t ndp_drops;            /* malformed NDP/ARP, all reasons */
	uint64_t bypass_packets;       /* attached: redirected by the BPF bypass */
	uint64_t bypass_bytes;
	uint64_t frontend_stalls;      /* vhost-user: frontends dropped for stalling */
	uint64_t memory_faults;        /* vhost-user: dropped when guest memory shrank */
};

/* name[0, n): letters, digits, '.', '-' and '_', not "." or "..", shorter
 * than PORT_NAME_MAX: a netdev name the kernel takes (dev_valid_name) that
 * every text form can also carry unquoted. */
bool port_name_ok(const char *name, size_t n);
/* Whether any address of a is also one of b's (ip_prefix_equal). */
bool port_config_share_addr(const struct port_config *a, const struct port_config *b);

/* Sets the defaults: server mode, MTU default, no addresses. */
void port_config_init(struct port_config *cfg);

/* Checks a whole configuration: name set and a valid netdev name, type set,
 * vhost-user with an absolute path, VM MAC unicast and non-zero and unlike
 * the router's, addresses with host bits clear, MTU in range. 0 or -EINVAL
 * with *why (static text) saying what is wrong. */
int port_config_check(const struct port_config *cfg, const char **why);

#endif
