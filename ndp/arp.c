/* ARP for the VM's IPv4 (RFC 826): weft is the only other host on the port,
 * so every address the VM asks for, except its own, is reached through the
 * router, and the answer is always the router's MAC (proxy ARP for the
 * whole IPv4 space, the way a /32-per-VM cloud network behaves). */
#include "ndp/arp.h"

#include <endian.h>
#include <string.h>

#include "ndp/reply.h"

/* Security model: the frame comes from an untrusted guest and may be any
 * bytes of any length. Every field is read only after the length check
 * below covers it, and no field is trusted to agree with another: the
 * sender MAC must equal the Ethernet source, which must be the port's VM
 * MAC (the VM may not speak for another host). The reply is built from the
 * port's configuration and the two addresses of the request, never from a
 * length the guest wrote, so its size is fixed. Nothing the guest sends
 * changes any state but the counters. */

static bool ip4_is_zero(const uint8_t *a)
{
	return !(a[0] | a[1] | a[2] | a[3]);
}

/* Addresses no router answers for: "this network" 0/8, loopback 127/8,
 * multicast 224/4 and the reserved 240/4 (which holds the broadcast). */
static bool ip4_unanswerable(const uint8_t *a)
{
	return a[0] == 0 || a[0] == 127 || a[0] >= 224;
}

static bool vm_owns4(const struct ndp_port_config *cfg, const uint8_t *a)
{
	size_t n = cfg->n_vm_ip4 < NDP_MAX_ADDRS ? cfg->n_vm_ip4 : NDP_MAX_ADDRS;

	for (size_t i = 0; i < n; i++)
		if (!memcmp(cfg->vm_ip4[i], a, NDP_IP4_ADDR_LEN))
			return true;
	return false;
}

bool ndp_arp_config_ok(const struct ndp_port_config *cfg)
{
	if (cfg->n_vm_ip4 > NDP_MAX_ADDRS)
		return false;
	for (size_t i = 0; i < cfg->n_vm_ip4; i++)
		if (ip4_unanswerable(cfg->vm_ip4[i]))
			return false;
	return !cfg->has_gateway4 ||
	       (!ip4_unanswerable(cfg->gateway4) && !vm_owns4(cfg, cfg->gateway4));
}

static enum ndp_verdict reply_arp(const struct ndp_port_config *cfg, const struct ndp_arp *req,
				  uint8_t *reply, size_t reply_cap, size_t *reply_len)
{
	struct ndp_arp *arp = (struct ndp_arp *)(reply + NDP_ETH_HLEN);

	if (reply_cap < NDP_ETH_ZLEN)
		return NDP_DROP_NO_ROOM;
	/* Zero padding up to the Ethernet minimum: a tap or vhost-user
	 * peer does not pad for us. */
	memset(reply, 0, NDP_ETH_ZLEN);
	ndp_put_eth(cfg, reply, NDP_ETH_P_ARP);
	arp->htype = htobe16(NDP_ARP_HTYPE_ETHER);
	arp->ptype = htobe16(NDP_ETH_P_IPV4);
	arp->hlen = NDP_ETH_ALEN;
	arp->plen = NDP_IP4_ADDR_LEN;
	arp->op = htobe16(NDP_ARP_OP_REPLY);
	memcpy(arp->sha, cfg->router_mac, NDP_ETH_ALEN);
	memcpy(arp->spa, req->tpa, NDP_IP4_ADDR_LEN);
	memcpy(arp->tha, req->sha, NDP_ETH_ALEN);
	memcpy(arp->tpa, req->spa, NDP_IP4_ADDR_LEN);
	*reply_len = NDP_ETH_ZLEN;
	return NDP_REPLY;
}

enum ndp_verdict ndp_arp_handle(const struct ndp_port_config *cfg, struct ndp_stats *stats,
				const uint8_t *frame, size_t len, uint8_t *reply,
				size_t reply_cap, size_t *reply_len)
{
	const struct ndp_eth_hdr *eth = (const struct ndp_eth_hdr *)frame;
	const struct ndp_arp *arp = (const struct ndp_arp *)(frame + NDP_ETH_HLEN);
	enum ndp_verdict v;

	*reply_len = 0;
	/* Bytes past the ARP body are Ethernet padding and are ignored. */
	if (len < NDP_ETH_HLEN + sizeof(*arp))
		return NDP_DROP_ARP_TRUNCATED;
	if (memcmp(eth->src, cfg->vm_mac, NDP_ETH_ALEN))
		return NDP_DROP_FOREIGN_MAC;
	if (be16toh(arp->htype) != NDP_ARP_HTYPE_ETHER || be16toh(arp->ptype) != NDP_ETH_P_IPV4 ||
	    arp->hlen != NDP_ETH_ALEN || arp->plen != NDP_IP4_ADDR_LEN)
		return NDP_DROP_ARP_FORMAT;
	switch (be16toh(arp->op)) {
	case NDP_ARP_OP_REQUEST:
		ndp_stat_inc(stats, rx_arp_request);
		break;
	case NDP_ARP_OP_REPLY:
		ndp_stat_inc(stats, rx_arp_reply);
		break;
	default:
		return NDP_DROP_ARP_OP;
	}
	if (memcmp(arp->sha, eth->src, NDP_ETH_ALEN))
		return NDP_DROP_ARP_SENDER_MAC;
	/* A reply from the VM answers nobody (weft never asks: it knows the
	 * VM's MAC) and is an announcement at most. */
	if (be16toh(arp->op) == NDP_ARP_OP_REPLY)
		return NDP_CONSUMED;
	if (!cfg->has_gateway4) {
		ndp_stat_inc(stats, arp_no_ipv4);
		return NDP_CONSUMED;
	}
	/* RFC 5227: a probe (sender 0.0.0.0) checks that an address is
	 * free, an announcement (sender == target) claims it. Answering
	 * either would tell the VM its address is taken. */
	if (ip4_is_zero(arp->spa)) {
		ndp_stat_inc(stats, arp_probe);
		return NDP_CONSUMED;
	}
	if (!memcmp(arp->spa, arp->tpa, NDP_IP4_ADDR_LEN)) {
		ndp_stat_inc(stats, arp_gratuitous);
		return NDP_CONSUMED;
	}
	if (vm_owns4(cfg, arp->tpa)) {
		ndp_stat_inc(stats, arp_own);
		return NDP_CONSUMED;
	}
	/* The gateway is an ordinary off-port address here: no case of its
	 * own. 169.254/16 is answered too, for metadata services. */
	if (ip4_unanswerable(arp->tpa))
		return NDP_DROP_ARP_TARGET;
	v = reply_arp(cfg, arp, reply, reply_cap, reply_len);
	if (v == NDP_REPLY)
		ndp_stat_inc(stats, tx_arp_reply);
	return v;
}
