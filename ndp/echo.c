/* Echo replies from the VM's router: weft is the VM's first hop, and a VM
 * (or its operator) checks the network by pinging the gateway first. */
#include "ndp/echo.h"

#include <endian.h>
#include <string.h>

#include "ndp/reply.h"
#include "pkt/csum.h"

/* Security model: the frame comes from an untrusted guest and may be any
 * bytes of any length. Every field is read after a length check covers it;
 * the IPv4 total length and the IPv6 payload length, which the guest wrote,
 * bound the message only once checked against the frame (Ethernet padding
 * is cut). The reply is the request's ICMP message with its type changed,
 * so it is never longer than the request; it goes only to the port's VM,
 * from the router, so the guest cannot aim it at anyone else. Nothing the
 * guest sends changes any state but the counters. */

enum {
	IP4_HLEN = 20,
	IPPROTO_ICMP4 = 1,
	ICMP4_ECHO_REPLY = 0,
	ICMP4_ECHO_REQUEST = 8,
	ICMP6_ECHO_REPLY = 129,
	ECHO_HLEN = 8,       /* type, code, checksum, identifier, sequence */
	REPLY_HOP_LIMIT = 64, /* an ordinary packet's, not ND's 255 */
};

static uint16_t load_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static bool sum_ok(tun_csum_t sum, const uint8_t *p, size_t len)
{
	return tun_csum_finish(tun_csum_add(sum, p, len)) == 0;
}

/* The Echo Reply to the request icmp[0, len) at out: the same identifier,
 * sequence and data, type reply_type; checksum left for the caller. */
static void put_echo(uint8_t *out, const uint8_t *icmp, size_t len, uint8_t reply_type)
{
	memcpy(out, icmp, len);
	out[0] = reply_type;
	out[1] = 0;
	out[2] = out[3] = 0;
}

enum ndp_verdict ndp_echo_handle4(const struct ndp_port_config *cfg, struct ndp_stats *stats,
				  const uint8_t *frame, size_t len, uint8_t *reply,
				  size_t reply_cap, size_t *reply_len)
{
	const uint8_t *ip = frame + NDP_ETH_HLEN, *icmp;
	size_t ip_len = len - NDP_ETH_HLEN, hlen, total, icmp_len;
	uint8_t *rip, *ricmp;
	uint16_t csum;

	if (!cfg->has_gateway4 || ip_len < IP4_HLEN || ip[0] >> 4 != 4)
		return NDP_NOT_NDP;
	hlen = (size_t)(ip[0] & 0x0f) * 4;
	total = load_be16(ip + 2);
	/* Not to the gateway, not ICMP, or a fragment: the router's. */
	if (ip[9] != IPPROTO_ICMP4 || memcmp(ip + 16, cfg->gateway4, NDP_IP4_ADDR_LEN) ||
	    (load_be16(ip + 6) & 0x3fff))
		return NDP_NOT_NDP;
	if (hlen < IP4_HLEN || total < hlen || total > ip_len)
		return NDP_DROP_LENGTH;
	if (total - hlen < 1 || ip[hlen] != ICMP4_ECHO_REQUEST)
		return NDP_NOT_NDP;
	ndp_stat_inc(stats, rx_echo);
	if (memcmp(frame + NDP_ETH_ALEN, cfg->vm_mac, NDP_ETH_ALEN))
		return NDP_DROP_FOREIGN_MAC;
	icmp = ip + hlen;
	icmp_len = total - hlen;
	if (icmp_len < ECHO_HLEN)
		return NDP_DROP_SHORT;
	if (!sum_ok(0, ip, hlen) || !sum_ok(0, icmp, icmp_len))
		return NDP_DROP_CHECKSUM;
	if (icmp[1] != 0)
		return NDP_DROP_CODE;
	/* 0/8, multicast, class E and the broadcast: no host to answer. */
	if (ip[12] == 0 || ip[12] >= 224)
		return NDP_DROP_BAD_SOURCE;
	if (reply_cap < NDP_ETH_HLEN + IP4_HLEN + icmp_len)
		return NDP_DROP_NO_ROOM;

	ndp_put_eth(cfg, reply, NDP_ETH_P_IPV4);
	rip = reply + NDP_ETH_HLEN;
	memset(rip, 0, IP4_HLEN);
	rip[0] = 0x45;
	rip[1] = ip[1]; /* the request's DSCP and ECN */
	rip[2] = (uint8_t)((IP4_HLEN + icmp_len) >> 8);
	rip[3] = (uint8_t)(IP4_HLEN + icmp_len);
	rip[6] = 0x40; /* DF */
	rip[8] = REPLY_HOP_LIMIT;
	rip[9] = IPPROTO_ICMP4;
	memcpy(rip + 12, cfg->gateway4, NDP_IP4_ADDR_LEN);
	memcpy(rip + 16, ip + 12, NDP_IP4_ADDR_LEN);
	csum = tun_csum_finish(tun_csum_add(0, rip, IP4_HLEN));
	rip[10] = (uint8_t)(csum >> 8);
	rip[11] = (uint8_t)csum;
	ricmp = rip + IP4_HLEN;
	put_echo(ricmp, icmp, icmp_len, ICMP4_ECHO_REPLY);
	csum = tun_csum_finish(tun_csum_add(0, ricmp, icmp_len));
	ricmp[2] = (uint8_t)(csum >> 8);
	ricmp[3] = (uint8_t)csum;
	*reply_len = NDP_ETH_HLEN + IP4_HLEN + icmp_len;
	ndp_stat_inc(stats, tx_echo_reply);
	return NDP_REPLY;
}

enum ndp_verdict ndp_echo_handle6(const struct ndp_port_config *cfg, struct ndp_stats *stats,
				  const uint8_t *router_ll, const uint8_t *frame, size_t len,
				  uint8_t *reply, size_t reply_cap, size_t *reply_len)
{
	const struct ndp_ip6_hdr *ip = (const struct ndp_ip6_hdr *)(frame + NDP_ETH_HLEN);
	const uint8_t *icmp = frame + NDP_ETH_HLEN + NDP_IP6_HLEN;
	size_t icmp_len = len - NDP_ETH_HLEN - NDP_IP6_HLEN;
	uint8_t *ricmp;

	if (!ndp_ip6_eq(ip->dst, router_ll))
		return NDP_NOT_NDP;
	ndp_stat_inc(stats, rx_echo);
	if (memcmp(frame + NDP_ETH_ALEN, cfg->vm_mac, NDP_ETH_ALEN))
		return NDP_DROP_FOREIGN_MAC;
	if (be16toh(ip->payload_len) != icmp_len)
		return NDP_DROP_LENGTH;
	if (icmp_len < ECHO_HLEN)
		return NDP_DROP_SHORT;
	if (!sum_ok(tun_csum_pseudo((const uint8_t *)ip, NDP_IPPROTO_ICMPV6, (uint32_t)icmp_len),
		    icmp, icmp_len))
		return NDP_DROP_CHECKSUM;
	if (icmp[1] != 0)
		return NDP_DROP_CODE;
	if (ndp_ip6_is_multicast(ip->src) || ndp_ip6_is_zero(ip->src))
		return NDP_DROP_BAD_SOURCE;
	if (reply_cap < NDP_ETH_HLEN + NDP_IP6_HLEN + icmp_len)
		return NDP_DROP_NO_ROOM;

	ricmp = ndp_put_ip6(cfg, reply, router_ll, ip->src, icmp_len, REPLY_HOP_LIMIT);
	put_echo(ricmp, icmp, icmp_len, ICMP6_ECHO_REPLY);
	ndp_put_icmp6_checksum(reply + NDP_ETH_HLEN, icmp_len);
	*reply_len = NDP_ETH_HLEN + NDP_IP6_HLEN + icmp_len;
	ndp_stat_inc(stats, tx_echo_reply);
	return NDP_REPLY;
}
