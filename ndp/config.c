/* A port's NDP configuration: defaults, the checks the control thread runs
 * before a configuration is published to the workers, and the router's
 * link-local address. */
#include "ndp/ndp.h"

#include <errno.h>
#include <string.h>

#include "ndp/arp.h"

void ndp_port_config_init(struct ndp_port_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mtu = 1500;
	cfg->router_lifetime_s = NDP_ROUTER_LIFETIME_DEFAULT_S;
	cfg->hop_limit = NDP_HOP_LIMIT_DEFAULT;
}

void ndp_eui64_link_local(const uint8_t mac[NDP_ETH_ALEN], uint8_t out[NDP_IP6_ADDR_LEN])
{
	/* RFC 4291 appendix A: ff:fe in the middle, universal/local bit
	 * inverted. */
	memset(out, 0, NDP_IP6_ADDR_LEN);
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

void ndp_router_link_local(const struct ndp_port_config *cfg, uint8_t out[NDP_IP6_ADDR_LEN])
{
	if (ndp_ip6_is_zero(cfg->router_ll))
		ndp_eui64_link_local(cfg->router_mac, out);
	else
		memcpy(out, cfg->router_ll, NDP_IP6_ADDR_LEN);
}

static bool prefix_ok(const struct ndp_prefix *p)
{
	if (p->len > 128 || p->preferred_lifetime_s > p->valid_lifetime_s)
		return false;
	for (unsigned int i = 0; i < NDP_IP6_ADDR_LEN; i++) {
		unsigned int keep = p->len > i * 8 ? p->len - i * 8 : 0;

		if (keep < 8 && (p->prefix[i] & (0xffu >> keep)))
			return false;
	}
	return true;
}

int ndp_port_config_check(const struct ndp_port_config *cfg)
{
	uint8_t ll[NDP_IP6_ADDR_LEN];

	/* Equal MACs would make the router's frames look like the VM's. */
	if (!ndp_mac_is_unicast(cfg->router_mac) || !ndp_mac_is_unicast(cfg->vm_mac) ||
	    !memcmp(cfg->router_mac, cfg->vm_mac, NDP_ETH_ALEN))
		return -EINVAL;
	if (!ndp_ip6_is_zero(cfg->router_ll) && !ndp_ip6_is_link_local(cfg->router_ll))
		return -EINVAL;
	if (cfg->n_vm_ip6 > NDP_MAX_ADDRS || cfg->n_prefixes > NDP_MAX_PREFIXES)
		return -EINVAL;
	ndp_router_link_local(cfg, ll);
	for (size_t i = 0; i < cfg->n_vm_ip6; i++) {
		const uint8_t *a = cfg->vm_ip6[i];

		if (ndp_ip6_is_zero(a) || ndp_ip6_is_loopback(a) || ndp_ip6_is_multicast(a) ||
		    ndp_ip6_eq(a, ll))
			return -EINVAL;
	}
	if (cfg->mtu && cfg->mtu < NDP_MIN_MTU)
		return -EINVAL;
	for (size_t i = 0; i < cfg->n_prefixes; i++)
		if (!prefix_ok(&cfg->prefixes[i]))
			return -EINVAL;
	return ndp_arp_config_ok(cfg) ? 0 : -EINVAL;
}
