/* Neighbour discovery on a VM port (RFC 4861): recognises the ND messages
 * in a frame from the VM, validates them as §6.1.1 and §7.1 require, and
 * answers NS and RS as the VM's only router. ARP is in arp.c, echo
 * replies from the router in echo.c. */
#include "ndp/ndp.h"

#include <endian.h>
#include <string.h>

#include "ndp/arp.h"
#include "ndp/echo.h"
#include "ndp/reply.h"
#include "pkt/csum.h"

/* Security model: the frame comes from an untrusted guest and may be any
 * bytes of any length. The parser reads only inside frame[0..len): every
 * offset is checked against len before the bytes under it are read, and
 * the IPv6 payload length and option lengths, which the guest wrote, are
 * checked against the frame before they bound anything. A frame that is
 * not recognisably ND goes to the router untouched (NDP_NOT_NDP); one that
 * is ND but breaks a rule is dropped with its own reason. Replies are built
 * from the port's configuration plus at most two addresses copied from the
 * request (its source and target), so their size never depends on the
 * guest. The only state the guest can move is the RA rate limit (bounded
 * by the port's interval) and the counters. */

static const uint8_t all_nodes[NDP_IP6_ADDR_LEN] = { 0xff, 0x02, [15] = 0x01 };

/* The fixed part of each ND message type (RFC 4861 §4.1–§4.5). */
static const uint8_t min_len[] = {
	[NDP_ICMP6_RS - NDP_ICMP6_RS] = 8,
	[NDP_ICMP6_RA - NDP_ICMP6_RS] = 16,
	[NDP_ICMP6_NS - NDP_ICMP6_RS] = 24,
	[NDP_ICMP6_NA - NDP_ICMP6_RS] = 24,
	[NDP_ICMP6_REDIRECT - NDP_ICMP6_RS] = 40,
};

static const char *const verdict_names[NDP_VERDICT_COUNT] = {
	[NDP_NOT_NDP] = "not_ndp",
	[NDP_REPLY] = "reply",
	[NDP_CONSUMED] = "consumed",
#define NDP_VERDICT_NAME(name, str) [NDP_DROP_##name] = str,
	NDP_DROP_REASONS(NDP_VERDICT_NAME)
#undef NDP_VERDICT_NAME
};

/* One ND message being handled: the ICMPv6 part lies in icmp[0..icmp_len)
 * inside the frame, right after ip. */
struct nd_msg {
	const struct ndp_port_config *cfg;
	struct ndp_port_state *state;
	uint64_t now_ms;
	const struct ndp_ip6_hdr *ip;
	const uint8_t *icmp;
	size_t icmp_len;
	uint8_t router_ll[NDP_IP6_ADDR_LEN];
	uint8_t *reply;
	size_t reply_cap;
	size_t *reply_len;
};

const char *ndp_verdict_name(enum ndp_verdict v)
{
	return (unsigned int)v < NDP_VERDICT_COUNT ? verdict_names[v] : "invalid";
}

static size_t clamp(size_t n, size_t max)
{
	return n < max ? n : max;
}

static bool vm_owns6(const struct ndp_port_config *cfg, const uint8_t *a)
{
	size_t n = clamp(cfg->n_vm_ip6, NDP_MAX_ADDRS);

	for (size_t i = 0; i < n; i++)
		if (ndp_ip6_eq(cfg->vm_ip6[i], a))
			return true;
	return false;
}

static uint16_t load_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* Steps over the extension header of type *nh at frame[*off], only to see
 * whether an ND message hides behind it. false when it is not one that may
 * precede ICMPv6, does not fit, or is a fragment other than the first
 * (which has no ICMPv6 header to look at). */
static bool skip_ext_header(const uint8_t *frame, size_t len, uint8_t *nh, size_t *off)
{
	size_t left = len - *off, hlen;

	switch (*nh) {
	case NDP_IPPROTO_HOPOPTS:
	case NDP_IPPROTO_ROUTING:
	case NDP_IPPROTO_DSTOPTS:
		if (left < 2)
			return false;
		hlen = ((size_t)frame[*off + 1] + 1) * 8;
		break;
	case NDP_IPPROTO_FRAGMENT:
		if (left < 8 || (load_be16(frame + *off + 2) & 0xfff8))
			return false;
		hlen = 8;
		break;
	default:
		return false;
	}
	if (left < hlen)
		return false;
	*nh = frame[*off];
	*off += hlen;
	return true;
}

static bool checksum_ok(const struct nd_msg *m)
{
	tun_csum_t sum = tun_csum_pseudo((const uint8_t *)m->ip, NDP_IPPROTO_ICMPV6,
					 (uint32_t)m->icmp_len);

	return tun_csum_finish(tun_csum_add(sum, m->icmp, m->icmp_len)) == 0;
}

/* Walks the options that follow the fixed part (RFC 4861 §4.6) and notes
 * whether the link-layer address option of type ll_type is there. Options
 * of other types are skipped, as §9 requires of unknown ones. */
static bool scan_options(const struct nd_msg *m, size_t fixed, uint8_t ll_type, bool *has_ll,
			 enum ndp_verdict *why)
{
	const uint8_t *p = m->icmp + fixed;
	size_t left = m->icmp_len - fixed;

	*has_ll = false;
	while (left) {
		size_t olen;

		if (left < sizeof(struct ndp_opt_hdr)) {
			*why = NDP_DROP_OPT_TRUNCATED;
			return false;
		}
		olen = (size_t)p[1] * NDP_OPT_UNIT;
		if (!olen) {
			*why = NDP_DROP_OPT_ZERO_LEN;
			return false;
		}
		if (olen > left) {
			*why = NDP_DROP_OPT_TRUNCATED;
			return false;
		}
		/* An Ethernet address fills exactly one unit; any other
		 * length means the option is not for this link. */
		if (p[0] == ll_type) {
			if (olen != sizeof(struct ndp_opt_lladdr)) {
				*why = NDP_DROP_BAD_LLADDR;
				return false;
			}
			*has_ll = true;
		}
		p += olen;
		left -= olen;
	}
	return true;
}

void ndp_put_eth(const struct ndp_port_config *cfg, uint8_t *out, uint16_t type)
{
	struct ndp_eth_hdr *eth = (struct ndp_eth_hdr *)out;

	memcpy(eth->dst, cfg->vm_mac, NDP_ETH_ALEN);
	memcpy(eth->src, cfg->router_mac, NDP_ETH_ALEN);
	eth->type = htobe16(type);
}

uint8_t *ndp_put_ip6(const struct ndp_port_config *cfg, uint8_t *out, const uint8_t *src,
		     const uint8_t *dst, size_t icmp_len, uint8_t hop_limit)
{
	struct ndp_ip6_hdr *ip = (struct ndp_ip6_hdr *)(out + NDP_ETH_HLEN);

	ndp_put_eth(cfg, out, NDP_ETH_P_IPV6);
	ip->ver_tc_flow = htobe32(6u << 28);
	ip->payload_len = htobe16((uint16_t)icmp_len);
	ip->next_header = NDP_IPPROTO_ICMPV6;
	ip->hop_limit = hop_limit;
	memcpy(ip->src, src, NDP_IP6_ADDR_LEN);
	memcpy(ip->dst, dst, NDP_IP6_ADDR_LEN);
	return out + NDP_ETH_HLEN + NDP_IP6_HLEN;
}

void ndp_put_icmp6_checksum(uint8_t *ip, size_t icmp_len)
{
	struct ndp_icmp6_hdr *h = (struct ndp_icmp6_hdr *)(ip + NDP_IP6_HLEN);
	tun_csum_t sum = tun_csum_pseudo(ip, NDP_IPPROTO_ICMPV6, (uint32_t)icmp_len);

	h->checksum = 0;
	sum = tun_csum_add(sum, h, icmp_len);
	h->checksum = htobe16(tun_csum_finish(sum));
}

static size_t ra_len(const struct ndp_port_config *cfg)
{
	return NDP_ETH_HLEN + NDP_IP6_HLEN + sizeof(struct ndp_ra) +
	       sizeof(struct ndp_opt_lladdr) + (cfg->mtu ? sizeof(struct ndp_opt_mtu) : 0) +
	       clamp(cfg->n_prefixes, NDP_MAX_PREFIXES) * sizeof(struct ndp_opt_prefix);
}

static void put_ra(const struct ndp_port_config *cfg, const uint8_t *router_ll,
		   const uint8_t *dst, uint8_t *out, size_t len)
{
	size_t icmp_len = len - NDP_ETH_HLEN - NDP_IP6_HLEN;
	uint8_t *p = ndp_put_ip6(cfg, out, router_ll, dst, icmp_len, NDP_IP6_ND_HOP_LIMIT);
	struct ndp_ra *ra = (struct ndp_ra *)p;
	struct ndp_opt_lladdr *ll;

	memset(p, 0, icmp_len);
	/* M=O=0: addresses come from SLAAC or registration, never DHCPv6.
	 * Reachable time and retrans timer 0: the VM keeps its defaults. */
	ra->hdr.type = NDP_ICMP6_RA;
	ra->cur_hop_limit = cfg->hop_limit;
	ra->router_lifetime = htobe16(cfg->router_lifetime_s);
	p += sizeof(*ra);
	ll = (struct ndp_opt_lladdr *)p;
	ll->hdr.type = NDP_OPT_SLLA;
	ll->hdr.len = sizeof(*ll) / NDP_OPT_UNIT;
	memcpy(ll->mac, cfg->router_mac, NDP_ETH_ALEN);
	p += sizeof(*ll);
	if (cfg->mtu) {
		struct ndp_opt_mtu *mtu = (struct ndp_opt_mtu *)p;

		mtu->hdr.type = NDP_OPT_MTU;
		mtu->hdr.len = sizeof(*mtu) / NDP_OPT_UNIT;
		mtu->mtu = htobe32(cfg->mtu);
		p += sizeof(*mtu);
	}
	for (size_t i = 0; i < clamp(cfg->n_prefixes, NDP_MAX_PREFIXES); i++) {
		const struct ndp_prefix *src = &cfg->prefixes[i];
		struct ndp_opt_prefix *pi = (struct ndp_opt_prefix *)p;

		pi->hdr.type = NDP_OPT_PREFIX;
		pi->hdr.len = sizeof(*pi) / NDP_OPT_UNIT;
		pi->prefix_len = src->len;
		pi->flags = (src->on_link ? NDP_PREFIX_F_ONLINK : 0) |
			    (src->autonomous ? NDP_PREFIX_F_AUTONOMOUS : 0);
		pi->valid_lifetime = htobe32(src->valid_lifetime_s);
		pi->preferred_lifetime = htobe32(src->preferred_lifetime_s);
		memcpy(pi->prefix, src->prefix, NDP_IP6_ADDR_LEN);
		p += sizeof(*pi);
	}
	ndp_put_icmp6_checksum(out + NDP_ETH_HLEN, icmp_len);
}

size_t ndp_build_ra(const struct ndp_port_config *cfg, const uint8_t *dst, uint8_t *out,
		    size_t cap)
{
	uint8_t ll[NDP_IP6_ADDR_LEN];
	size_t len = ra_len(cfg);

	if (cap < len)
		return 0;
	ndp_router_link_local(cfg, ll);
	put_ra(cfg, ll, dst ? dst : all_nodes, out, len);
	return len;
}

/* Takes the port's one RA per interval, if it is free. A compare-exchange,
 * so that two workers serving the port's queues cannot both take it. */
static bool ra_allowed(const struct nd_msg *m)
{
	uint32_t interval = m->cfg->ra_interval_ms ? m->cfg->ra_interval_ms
						   : NDP_RA_INTERVAL_DEFAULT_MS;
	uint64_t next = atomic_load_explicit(&m->state->ra_next_ms, memory_order_relaxed);

	if (m->now_ms < next)
		return false;
	return atomic_compare_exchange_strong_explicit(&m->state->ra_next_ms, &next,
						       m->now_ms + interval,
						       memory_order_relaxed,
						       memory_order_relaxed);
}

/* RS (validation: RFC 4861 §6.1.1; answer: §6.2.6, unicast). */
static enum ndp_verdict handle_rs(struct nd_msg *m)
{
	size_t len = ra_len(m->cfg);
	enum ndp_verdict why;
	bool slla;

	if (!scan_options(m, sizeof(struct ndp_rs), NDP_OPT_SLLA, &slla, &why))
		return why;
	if (ndp_ip6_is_zero(m->ip->src) && slla)
		return NDP_DROP_UNSPEC_SLLA;
	/* Checked before the rate limit, so that a caller's mistake does
	 * not use up the VM's RA. */
	if (m->reply_cap < len)
		return NDP_DROP_NO_ROOM;
	if (!ra_allowed(m)) {
		ndp_stat_inc(&m->state->stats, rs_ratelimited);
		return NDP_CONSUMED;
	}
	put_ra(m->cfg, m->router_ll, ndp_ip6_is_zero(m->ip->src) ? all_nodes : m->ip->src, m->reply,
	       len);
	*m->reply_len = len;
	ndp_stat_inc(&m->state->stats, tx_ra);
	return NDP_REPLY;
}

/* An NA from the router for target, with the router MAC as the target
 * link-layer address (RFC 4861 §7.2.4), from src. */
static enum ndp_verdict send_na(struct nd_msg *m, const uint8_t *src, const uint8_t *dst,
				const uint8_t *target, uint8_t flags)
{
	size_t icmp_len = sizeof(struct ndp_ns_na) + sizeof(struct ndp_opt_lladdr);
	size_t len = NDP_ETH_HLEN + NDP_IP6_HLEN + icmp_len;
	struct ndp_ns_na *na;
	struct ndp_opt_lladdr *ll;
	uint8_t *p;

	if (m->reply_cap < len)
		return NDP_DROP_NO_ROOM;
	p = ndp_put_ip6(m->cfg, m->reply, src, dst, icmp_len, NDP_IP6_ND_HOP_LIMIT);
	memset(p, 0, icmp_len);
	na = (struct ndp_ns_na *)p;
	na->hdr.type = NDP_ICMP6_NA;
	na->flags = flags;
	memcpy(na->target, target, NDP_IP6_ADDR_LEN);
	ll = (struct ndp_opt_lladdr *)(p + sizeof(*na));
	ll->hdr.type = NDP_OPT_TLLA;
	ll->hdr.len = sizeof(*ll) / NDP_OPT_UNIT;
	memcpy(ll->mac, m->cfg->router_mac, NDP_ETH_ALEN);
	ndp_put_icmp6_checksum(m->reply + NDP_ETH_HLEN, icmp_len);
	*m->reply_len = len;
	return NDP_REPLY;
}

static bool bad_target(const uint8_t *t)
{
	return ndp_ip6_is_multicast(t) || ndp_ip6_is_zero(t) || ndp_ip6_is_loopback(t);
}

/* NS (validation: RFC 4861 §7.1.1; answer: §7.2.3, §7.2.4, §7.2.8). */
static enum ndp_verdict handle_ns(struct nd_msg *m)
{
	const struct ndp_ns_na *ns = (const struct ndp_ns_na *)m->icmp;
	struct ndp_stats *stats = &m->state->stats;
	const uint8_t *src = m->ip->src;
	enum ndp_verdict why, v;
	bool slla;

	if (!scan_options(m, sizeof(*ns), NDP_OPT_SLLA, &slla, &why))
		return why;
	if (bad_target(ns->target))
		return NDP_DROP_BAD_TARGET;
	if (ndp_ip6_is_zero(src)) {
		if (!ndp_ip6_is_solicited_node(m->ip->dst))
			return NDP_DROP_UNSPEC_DST;
		if (slla)
			return NDP_DROP_UNSPEC_SLLA;
		/* A DAD probe. The router defends its own address, to
		 * all-nodes with S=0 (§7.2.4), so that the VM does not take
		 * it; every other probe must go unanswered for the VM's DAD
		 * to succeed, proxy or not. */
		if (!ndp_ip6_eq(ns->target, m->router_ll)) {
			ndp_stat_inc(stats, ns_dad);
			return NDP_CONSUMED;
		}
		v = send_na(m, m->router_ll, all_nodes, ns->target,
			    NDP_NA_F_ROUTER | NDP_NA_F_OVERRIDE);
		if (v == NDP_REPLY)
			ndp_stat_inc(stats, tx_na_defend);
		return v;
	}
	if (vm_owns6(m->cfg, ns->target)) {
		ndp_stat_inc(stats, ns_own);
		return NDP_CONSUMED;
	}
	if (ndp_ip6_eq(ns->target, m->router_ll)) {
		v = send_na(m, m->router_ll, src, ns->target,
			    NDP_NA_F_ROUTER | NDP_NA_F_SOLICITED | NDP_NA_F_OVERRIDE);
		if (v == NDP_REPLY)
			ndp_stat_inc(stats, tx_na_router);
		return v;
	}
	/* Nothing but the router and the VM is on the port, and the router
	 * forwards no link-local traffic: another fe80:: address has no
	 * owner to stand in for. */
	if (ndp_ip6_is_link_local(ns->target)) {
		ndp_stat_inc(stats, ns_link_local);
		return NDP_CONSUMED;
	}
	/* Off-port: the router proxies (§7.2.8), with O=0 as §7.2.4 asks of
	 * a proxy. No random delay: no real owner is on the link to win. The
	 * NA comes from the target itself, as an anycast answer does (Linux
	 * ndisc_send_na): resolvers such as ndisc6 take an answer only from
	 * the address they asked for. */
	v = send_na(m, ns->target, src, ns->target, NDP_NA_F_ROUTER | NDP_NA_F_SOLICITED);
	if (v == NDP_REPLY)
		ndp_stat_inc(stats, tx_na_proxy);
	return v;
}

/* NA (validation: RFC 4861 §7.1.2). weft learns nothing from it: the VM's
 * addresses are registered, not discovered. */
static enum ndp_verdict handle_na(struct nd_msg *m)
{
	const struct ndp_ns_na *na = (const struct ndp_ns_na *)m->icmp;
	enum ndp_verdict why;
	bool tlla;

	if (!scan_options(m, sizeof(*na), NDP_OPT_TLLA, &tlla, &why))
		return why;
	if (bad_target(na->target))
		return NDP_DROP_BAD_TARGET;
	if (ndp_ip6_is_multicast(m->ip->dst) && (na->flags & NDP_NA_F_SOLICITED))
		return NDP_DROP_NA_SOLICITED_MCAST;
	if (ndp_ip6_eq(na->target, m->router_ll))
		ndp_stat_inc(&m->state->stats, na_router_addr);
	return NDP_CONSUMED;
}

/* Recognises an ND message (ICMPv6 types 133-137) and checks what all of
 * them share; anything else is the router's. */
static enum ndp_verdict handle_ipv6(struct nd_msg *m, const uint8_t *frame, size_t len)
{
	const struct ndp_eth_hdr *eth = (const struct ndp_eth_hdr *)frame;
	size_t off = NDP_ETH_HLEN + NDP_IP6_HLEN;
	struct ndp_stats *stats = &m->state->stats;
	bool ext = false;
	uint8_t nh, type;

	if (len < off || (frame[NDP_ETH_HLEN] >> 4) != 6)
		return NDP_NOT_NDP;
	m->ip = (const struct ndp_ip6_hdr *)(frame + NDP_ETH_HLEN);
	nh = m->ip->next_header;
	while (nh != NDP_IPPROTO_ICMPV6) {
		if (!skip_ext_header(frame, len, &nh, &off))
			return NDP_NOT_NDP;
		ext = true;
	}
	if (off >= len)
		return NDP_NOT_NDP;
	type = frame[off];
	if (type == NDP_ICMP6_ECHO_REQUEST && !ext)
		return ndp_echo_handle6(m->cfg, stats, m->router_ll, frame, len, m->reply,
					m->reply_cap, m->reply_len);
	if (type < NDP_ICMP6_RS || type > NDP_ICMP6_REDIRECT)
		return NDP_NOT_NDP;

	if (type == NDP_ICMP6_RS)
		ndp_stat_inc(stats, rx_rs);
	else if (type == NDP_ICMP6_NS)
		ndp_stat_inc(stats, rx_ns);
	else if (type == NDP_ICMP6_NA)
		ndp_stat_inc(stats, rx_na);
	if (memcmp(eth->src, m->cfg->vm_mac, NDP_ETH_ALEN))
		return NDP_DROP_FOREIGN_MAC;
	/* RFC 6980 forbids fragmented ND; other extension headers are legal
	 * but no ND sender uses them, and refusing them keeps every ND
	 * message away from the router without a second parser. */
	if (ext)
		return NDP_DROP_EXT_HEADERS;
	if (be16toh(m->ip->payload_len) != len - off)
		return NDP_DROP_LENGTH;
	if (m->ip->hop_limit != NDP_IP6_ND_HOP_LIMIT)
		return NDP_DROP_HOP_LIMIT;
	m->icmp = frame + off;
	m->icmp_len = len - off;
	if (m->icmp_len < min_len[type - NDP_ICMP6_RS])
		return NDP_DROP_SHORT;
	if (!checksum_ok(m))
		return NDP_DROP_CHECKSUM;
	if (m->icmp[1] != 0)
		return NDP_DROP_CODE;
	if (ndp_ip6_is_multicast(m->ip->src))
		return NDP_DROP_BAD_SOURCE;
	switch (type) {
	case NDP_ICMP6_RS:
		return handle_rs(m);
	case NDP_ICMP6_NS:
		return handle_ns(m);
	case NDP_ICMP6_NA:
		return handle_na(m);
	default:
		/* RA and Redirect are a router's to send: from a VM they
		 * are a rogue router at best. */
		return NDP_DROP_UNEXPECTED;
	}
}

enum ndp_verdict ndp_handle(const struct ndp_port_config *cfg, struct ndp_port_state *state,
			    uint64_t now_ms, const uint8_t *frame, size_t len, uint8_t *reply,
			    size_t reply_cap, size_t *reply_len)
{
	struct nd_msg m = {
		.cfg = cfg,
		.state = state,
		.now_ms = now_ms,
		.reply = reply,
		.reply_cap = reply_cap,
		.reply_len = reply_len,
	};
	enum ndp_verdict v;

	*reply_len = 0;
	if (len < NDP_ETH_HLEN) {
		v = NDP_DROP_RUNT;
		goto out;
	}
	switch (load_be16(frame + 2 * NDP_ETH_ALEN)) {
	case NDP_ETH_P_ARP:
		v = ndp_arp_handle(cfg, &state->stats, frame, len, reply, reply_cap, reply_len);
		break;
	case NDP_ETH_P_IPV6:
		ndp_router_link_local(cfg, m.router_ll);
		v = handle_ipv6(&m, frame, len);
		break;
	case NDP_ETH_P_IPV4:
		/* Only an echo request to the gateway is the router's own. */
		v = ndp_echo_handle4(cfg, &state->stats, frame, len, reply, reply_cap, reply_len);
		break;
	default:
		/* VLAN-tagged frames of any kind: weft's ports are untagged,
		 * the router decides what to do with them. */
		v = NDP_NOT_NDP;
		break;
	}
out:
	if (v != NDP_REPLY)
		*reply_len = 0;
	atomic_fetch_add_explicit(&state->stats.verdicts[v], 1, memory_order_relaxed);
	return v;
}
