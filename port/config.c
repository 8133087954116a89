/* The defaults and the whole-configuration check of a VM port. What passes
 * port_config_check also passes the NDP responder's ndp_port_config_check
 * once mapped to it, so adding a port fails here, with a reason, rather
 * than deep in the device. */
#include "port/config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include "ndp/ndp.h"

bool port_config_share_addr(const struct port_config *a, const struct port_config *b)
{
	for (size_t i = 0; i < a->n_addrs; i++)
		if (ip_prefix_listed(b->addrs, b->n_addrs, &a->addrs[i]))
			return true;
	return false;
}

void port_config_init(struct port_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->server = true;
	cfg->mtu = PORT_MTU_DEFAULT;
}

bool port_name_ok(const char *name, size_t n)
{
	if (n == 0 || n >= PORT_NAME_MAX || (n == 1 && name[0] == '.') ||
	    (n == 2 && name[0] == '.' && name[1] == '.'))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '-' || c == '_'))
			return false;
	}
	return true;
}

/* Absolute, printable, and writable in a ports file: no '#' (a comment
 * there) and no blank at either end (trimmed there). */
static bool path_ok(const char *path)
{
	size_t n = strnlen(path, PORT_PATH_MAX);

	if (n < 2 || n >= PORT_PATH_MAX || path[0] != '/' || path[n - 1] == ' ')
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)path[i];

		if (c < 0x20 || c == 0x7f || c == '#')
			return false;
	}
	return true;
}

static bool mac_unicast(const uint8_t mac[6])
{
	static const uint8_t zero[6];

	return !(mac[0] & 1) && memcmp(mac, zero, 6);
}

/* The addresses a router cannot answer ARP for (as ndp/arp.c). */
static bool ip4_unanswerable(const uint8_t *a)
{
	return a[0] == 0 || a[0] == 127 || a[0] >= 224;
}

static bool ip6_unusable(const uint8_t *a)
{
	static const uint8_t zero[16], loopback[16] = { [15] = 1 };

	return !memcmp(a, zero, 16) || !memcmp(a, loopback, 16) || a[0] == 0xff;
}

/* The router's fe80:: address (modified EUI-64 of its MAC), which a VM may
 * not claim. */
static void router_link_local(const uint8_t mac[6], uint8_t out[16])
{
	memset(out, 0, 16);
	out[0] = 0xfe;
	out[1] = 0x80;
	out[8] = mac[0] ^ 0x02;
	out[9] = mac[1];
	out[10] = mac[2];
	out[11] = 0xff;
	out[12] = 0xfe;
	out[13] = mac[3];
	out[14] = mac[4];
	out[15] = mac[5];
}

static int check_addrs(const struct port_config *cfg, const uint8_t router_mac[6],
		       const char **why)
{
	uint8_t ll[16];
	size_t hosts4 = 0, hosts6 = 0;

	router_link_local(router_mac, ll);
	for (size_t i = 0; i < cfg->n_addrs; i++) {
		const struct ip_prefix *a = &cfg->addrs[i];
		unsigned int bits = a->family == AF_INET ? 32 : 128;

		if (a->family != AF_INET && a->family != AF_INET6) {
			*why = "address of an unknown family";
			return -EINVAL;
		}
		if (a->cidr > bits) {
			*why = "address prefix length too long";
			return -EINVAL;
		}
		if (!ip_prefix_masked(a)) {
			*why = "address has host bits set (give the VM's address as /32 or /128)";
			return -EINVAL;
		}
		if (a->cidr == bits && a->family == AF_INET) {
			if (ip4_unanswerable(a->addr)) {
				*why = "address is not a unicast IPv4 host address";
				return -EINVAL;
			}
			hosts4++;
		} else if (a->cidr == bits) {
			if (ip6_unusable(a->addr) || !memcmp(a->addr, ll, 16)) {
				*why = "address is not a unicast IPv6 host address of the VM";
				return -EINVAL;
			}
			hosts6++;
		}
		if (ip_prefix_listed(cfg->addrs, i, a)) {
			*why = "address listed twice";
			return -EINVAL;
		}
	}
	/* The NDP/ARP responder keeps a fixed number of the VM's own
	 * addresses per family. */
	if (hosts4 > NDP_MAX_ADDRS || hosts6 > NDP_MAX_ADDRS) {
		*why = "more than 8 host addresses (/32 or /128) of one family";
		return -EINVAL;
	}
	return 0;
}

static int check_prefixes(const struct port_config *cfg, const char **why)
{
	for (size_t i = 0; i < cfg->n_prefixes; i++) {
		const struct ip_prefix *p = &cfg->prefixes[i];

		if (p->family != AF_INET6) {
			*why = "RA prefix is not IPv6";
			return -EINVAL;
		}
		if (p->cidr < 1 || p->cidr > 128) {
			*why = "RA prefix length not in 1..128";
			return -EINVAL;
		}
		if (!ip_prefix_masked(p)) {
			*why = "RA prefix has host bits set";
			return -EINVAL;
		}
		if (p->addr[0] == 0xff || (p->addr[0] == 0xfe && (p->addr[1] & 0xc0) == 0x80)) {
			*why = "RA prefix is multicast or link-local";
			return -EINVAL;
		}
		if (ip_prefix_listed(cfg->prefixes, i, p)) {
			*why = "RA prefix listed twice";
			return -EINVAL;
		}
	}
	return 0;
}

/* The gateway in effect: the one given, or the default when the VM has
 * IPv4 (port.h). */
static int check_gateway4(const struct port_config *cfg, const char **why)
{
	static const uint8_t default_gw[4] = PORT_GATEWAY4_DEFAULT;
	const uint8_t *gw = cfg->has_gateway4 ? cfg->gateway4 : NULL;

	for (size_t i = 0; !gw && i < cfg->n_addrs; i++)
		if (cfg->addrs[i].family == AF_INET)
			gw = default_gw;
	if (!gw)
		return 0;
	if (ip4_unanswerable(gw)) {
		*why = "gateway4 is not a unicast IPv4 address";
		return -EINVAL;
	}
	for (size_t i = 0; i < cfg->n_addrs; i++) {
		if (cfg->addrs[i].family == AF_INET && cfg->addrs[i].cidr == 32 &&
		    !memcmp(cfg->addrs[i].addr, gw, 4)) {
			*why = "gateway4 is one of the VM's addresses";
			return -EINVAL;
		}
	}
	return 0;
}

int port_config_check(const struct port_config *cfg, const char **why)
{
	static const uint8_t default_router[6] = PORT_ROUTER_MAC_DEFAULT;
	const uint8_t *router_mac = cfg->has_router_mac ? cfg->router_mac : default_router;
	const char *unused;
	int ret;

	if (!why)
		why = &unused;
	if (!port_name_ok(cfg->name, strnlen(cfg->name, PORT_NAME_MAX))) {
		*why = "name must be 1 to 15 letters, digits, '.', '-' or '_'";
		return -EINVAL;
	}
	if (cfg->type == PORT_TAP || cfg->type == PORT_ATTACHED) {
		if (cfg->path[0]) {
			*why = "a tap or attached port takes no path";
			return -EINVAL;
		}
		if (!cfg->server) {
			*why = "client mode is for vhost-user ports";
			return -EINVAL;
		}
	} else if (cfg->type == PORT_VHOST_USER) {
		if (!path_ok(cfg->path)) {
			*why = "vhost-user needs an absolute socket path (under 108 bytes, no '#')";
			return -EINVAL;
		}
	} else {
		*why = "type must be tap, vhost-user or attached";
		return -EINVAL;
	}
	if (!mac_unicast(cfg->vm_mac)) {
		*why = "VM MAC missing, zero or multicast";
		return -EINVAL;
	}
	if (!mac_unicast(router_mac)) {
		*why = "router MAC zero or multicast";
		return -EINVAL;
	}
	if (!memcmp(cfg->vm_mac, router_mac, 6)) {
		*why = "VM MAC equals the router MAC";
		return -EINVAL;
	}
	if (cfg->n_addrs > PORT_MAX_ADDRS) {
		*why = "too many addresses";
		return -EINVAL;
	}
	if (cfg->n_prefixes > PORT_MAX_PREFIXES) {
		*why = "too many RA prefixes";
		return -EINVAL;
	}
	ret = check_addrs(cfg, router_mac, why);
	if (ret)
		return ret;
	ret = check_prefixes(cfg, why);
	if (ret)
		return ret;
	ret = check_gateway4(cfg, why);
	if (ret)
		return ret;
	if ((cfg->has_socket_uid || cfg->has_socket_gid || cfg->socket_mode) &&
	    (cfg->type != PORT_VHOST_USER || !cfg->server)) {
		*why = "socket owner, group and mode are for a vhost-user port in server mode";
		return -EINVAL;
	}
	if (cfg->socket_mode & ~0777) {
		*why = "socket mode must be 0 to 0777 (permission bits only)";
		return -EINVAL;
	}
	if (cfg->mtu && (cfg->mtu < PORT_MTU_MIN || cfg->mtu > PORT_MTU_MAX)) {
		*why = "MTU not in 1280..9000";
		return -EINVAL;
	}
	return 0;
}
