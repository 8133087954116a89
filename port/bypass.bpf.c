/* The same-host bypass: a tc ingress program on every attached port's
 * netdev (host namespace). A routed frame from one local VM to another
 * (IPv4 or IPv6, destination registered to another attached port) gets the
 * router -> VM MACs, one TTL/hop limit less, and is redirected straight to
 * that netdev: bpf_redirect_peer for a veth (into the VM's namespace),
 * bpf_redirect for a tap (to the VMM). Never BPF_F_INGRESS: towards a
 * host-side veth it lands on that veth's own ingress again and loops.
 *
 * Security model: the frame comes from a VM and is untrusted. Every header
 * is bounds-checked before it is read; whatever the program does not fully
 * understand (ARP, NDP, multicast, options it would have to walk, unknown
 * destinations, TTL running out) is passed to the kernel unchanged. The
 * one thing it drops: a routable IP source not registered to the port the
 * frame came in on (counted as spoofed). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "port/bypass_maps.h"

/* ICMPv6 133-137: RS, RA, NS, NA, redirect. */
enum { ICMPV6 = 58, NDP_FIRST = 133, NDP_LAST = 137 };

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, BYPASS_MAX_ROUTES);
	__type(key, struct bypass_key4);
	__type(value, struct bypass_dest);
} routes4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, BYPASS_MAX_ROUTES);
	__type(key, struct bypass_key6);
	__type(value, struct bypass_dest);
} routes6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BYPASS_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct bypass_port);
} ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BYPASS_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct bypass_stats);
} stats SEC(".maps");

static __always_inline int mac_eq(const __u8 *a, const __u8 *b)
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3] && a[4] == b[4] &&
	       a[5] == b[5];
}

static __always_inline int drop_spoofed(__u32 slot)
{
	struct bypass_stats *s = bpf_map_lookup_elem(&stats, &slot);

	if (s)
		s->spoofed++;
	return TC_ACT_SHOT;
}

/* Rewrites the Ethernet header for dest, counts, and redirects. */
static __always_inline int forward(struct __sk_buff *skb, struct ethhdr *eth, __u32 in_slot,
				   const struct bypass_dest *d)
{
	struct bypass_stats *s = bpf_map_lookup_elem(&stats, &in_slot);

	__builtin_memcpy(eth->h_dest, d->vm_mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, d->router_mac, ETH_ALEN);
	if (s) {
		s->packets++;
		s->bytes += skb->len;
	}
	if (d->is_veth)
		return bpf_redirect_peer(d->ifindex, 0);
	return bpf_redirect(d->ifindex, 0);
}

static __always_inline int ipv4(struct __sk_buff *skb, const struct bypass_port *in)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	struct bypass_key4 key = { .prefixlen = 32 };
	struct bypass_dest *src, *d;
	__u32 csum;

	if ((void *)(ip + 1) > end)
		return TC_ACT_OK;
	if (ip->ihl < 5 || ip->version != 4)
		return TC_ACT_OK;
	if (!ip->saddr) /* 0.0.0.0: DHCP and the like, never routed */
		return TC_ACT_OK;
	__builtin_memcpy(key.addr, &ip->saddr, 4);
	src = bpf_map_lookup_elem(&routes4, &key);
	if (!src || src->slot != in->slot)
		return drop_spoofed(in->slot);
	if (!mac_eq(eth->h_dest, in->router_mac) || ip->ttl <= 1)
		return TC_ACT_OK;
	__builtin_memcpy(key.addr, &ip->daddr, 4);
	d = bpf_map_lookup_elem(&routes4, &key);
	if (!d || d->slot == in->slot)
		return TC_ACT_OK;
	/* TTL is the high byte of its 16-bit word: the sum drops by 0x0100. */
	ip->ttl--;
	csum = ip->check + bpf_htons(0x0100);
	ip->check = (__u16)(csum + (csum >> 16));
	return forward(skb, eth, in->slot, d);
}

static __always_inline int ipv6(struct __sk_buff *skb, const struct bypass_port *in)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct ipv6hdr *ip = data + sizeof(*eth);
	struct bypass_key6 key = { .prefixlen = 128 };
	struct bypass_dest *src, *d;
	__u8 *icmp_type = (__u8 *)(ip + 1);
	const __u8 *s, *t;

	if ((void *)(ip + 1) > end || ip->version != 6)
		return TC_ACT_OK;
	s = ip->saddr.in6_u.u6_addr8;
	t = ip->daddr.in6_u.u6_addr8;
	/* Link-local and unspecified sources belong to the link (NDP, DAD)
	 * and are never routed: the kernel's. */
	if ((s[0] == 0xfe && (s[1] & 0xc0) == 0x80) ||
	    (ip->saddr.in6_u.u6_addr32[0] == 0 && ip->saddr.in6_u.u6_addr32[1] == 0 &&
	     ip->saddr.in6_u.u6_addr32[2] == 0 && ip->saddr.in6_u.u6_addr32[3] == 0))
		return TC_ACT_OK;
	__builtin_memcpy(key.addr, s, 16);
	src = bpf_map_lookup_elem(&routes6, &key);
	if (!src || src->slot != in->slot)
		return drop_spoofed(in->slot);
	if (!mac_eq(eth->h_dest, in->router_mac) || ip->hop_limit <= 1 || t[0] == 0xff ||
	    (t[0] == 0xfe && (t[1] & 0xc0) == 0x80))
		return TC_ACT_OK;
	if (ip->nexthdr == 0) /* hop-by-hop options are for the router to read */
		return TC_ACT_OK;
	if (ip->nexthdr == ICMPV6) { /* NDP is the kernel's and weftd's */
		if ((void *)(icmp_type + 1) > end)
			return TC_ACT_OK;
		if (*icmp_type >= NDP_FIRST && *icmp_type <= NDP_LAST)
			return TC_ACT_OK;
	}
	__builtin_memcpy(key.addr, t, 16);
	d = bpf_map_lookup_elem(&routes6, &key);
	if (!d || d->slot == in->slot)
		return TC_ACT_OK;
	ip->hop_limit--;
	return forward(skb, eth, in->slot, d);
}

SEC("tc")
int weft_bypass(struct __sk_buff *skb)
{
	__u32 ifindex = skb->ifindex;
	struct bypass_port *in = bpf_map_lookup_elem(&ports, &ifindex);
	void *data, *end;
	struct ethhdr *eth;
	__u32 want;
	__u16 proto;

	if (!in)
		return TC_ACT_OK;
	/* The headers read below, linear (a GSO frame from a veth may not be). */
	want = sizeof(struct ethhdr) + sizeof(struct ipv6hdr) + 1;
	bpf_skb_pull_data(skb, skb->len < want ? skb->len : want);
	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	eth = data;
	if ((void *)(eth + 1) > end)
		return TC_ACT_OK;
	proto = eth->h_proto;
	if (proto == bpf_htons(ETH_P_IP))
		return ipv4(skb, in);
	if (proto == bpf_htons(ETH_P_IPV6))
		return ipv6(skb, in);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL"; /* GPL-compatible, as the kernel requires */
