/* The receive path for data messages.
 *
 * Security model: everything in a datagram is attacker-controlled until the
 * AEAD tag verifies, and the inner packet is the peer's word until its source
 * routes back to that peer. Nothing is read past len; every reject has its
 * own counter. The replay window is updated only after authentication. */
#include "wg/receive.h"

#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <stdatomic.h>
#include <string.h>

#include "ndp/mesh_msg.h"
#include "router/table.h"
#include "wg/clock.h"
#include "wg/device.h"
#include "wg/handshake.h"
#include "wg/log.h"
#include "mesh/mesh.h"
#include "wg/peer.h"

/* Checks an inner IPv4/IPv6 header against the plaintext length, trims the
 * padding, and returns the family and source address; 0 when malformed. */
static int inner_source(uint8_t *p, uint32_t *len, const uint8_t **src)
{
	if (*len >= sizeof(struct iphdr) && (p[0] >> 4) == 4) {
		const struct iphdr *ip = (const struct iphdr *)p;
		uint32_t tot = ntohs(ip->tot_len);

		if (ip->ihl < 5 || tot < ip->ihl * 4u || tot > *len)
			return 0;
		*len = tot;
		*src = p + offsetof(struct iphdr, saddr);
		return AF_INET;
	}
	if (*len >= sizeof(struct ip6_hdr) && (p[0] >> 4) == 6) {
		const struct ip6_hdr *ip6 = (const struct ip6_hdr *)p;
		uint32_t tot = sizeof(*ip6) + ntohs(ip6->ip6_plen);

		if (tot > *len)
			return 0;
		*len = tot;
		*src = p + offsetof(struct ip6_hdr, ip6_src);
		return AF_INET6;
	}
	return 0;
}

static bool keypair_can_receive(const struct wg_keypair *kp, uint64_t now)
{
	return atomic_load_explicit(&kp->send_valid, memory_order_relaxed) &&
	       !wg_keypair_expired(kp, now);
}

/* With peer->lock held: should the initiator rekey before its keys expire?
 * (whitepaper §6.2: REJECT_AFTER_TIME - KEEPALIVE_TIMEOUT - REKEY_TIMEOUT) */
static bool wants_lastminute_rekey(struct wg_peer *peer, uint64_t now)
{
	struct wg_keypair *cur = peer->keypairs.current;

	if (!cur || !cur->keys.initiator || peer->sent_lastminute_handshake)
		return false;
	if (!wg_clock_after(now, cur->birthdate,
			    (uint64_t)(WG_REJECT_AFTER_TIME - WG_KEEPALIVE_TIMEOUT - WG_REKEY_TIMEOUT) *
				    NSEC_PER_SEC))
		return false;
	peer->sent_lastminute_handshake = true;
	return true;
}

static uint32_t receive_data(struct wg_device *dev, uint8_t *data, uint32_t datagram_len,
			     const union wg_sockaddr *src_addr, struct wg_tx *tx,
			     struct wg_peer **from)
{
	const struct wg_msg_data *hdr = (const struct wg_msg_data *)data;
	uint8_t *inner = data + sizeof(*hdr);
	uint32_t plain_len;
	uint64_t now = wg_clock_now(), counter;
	struct wg_keypair *kp;
	struct wg_peer *peer;
	const uint8_t *src;
	struct rt_hop *hop;
	size_t forwarded = 0;
	bool confirmed, rekey, ok;
	int family;

	kp = wg_index_get_keypair(&dev->index, le32toh(hdr->receiver_index));
	if (!kp) {
		wg_stat_inc(&dev->stats, drop_unknown_index);
		return 0;
	}
	if (!keypair_can_receive(kp, now)) {
		wg_stat_inc(&dev->stats, drop_key_expired);
		goto drop;
	}
	counter = le64toh(hdr->counter);
	plain_len = datagram_len - sizeof(*hdr) - WG_TAG_LEN;
	if (!aead_open(inner, inner, plain_len + WG_TAG_LEN, NULL, 0, counter, kp->keys.recv_key)) {
		wg_stat_inc(&dev->stats, drop_decrypt);
		goto drop;
	}
	pthread_spin_lock(&kp->replay_lock);
	ok = wg_replay_check(&kp->replay, counter, WG_REJECT_AFTER_MESSAGES);
	pthread_spin_unlock(&kp->replay_lock);
	if (!ok) {
		wg_stat_inc(&dev->stats, drop_replay);
		goto drop;
	}

	/* Authentic and fresh: it counts as traffic from this peer now, even
	 * if the inner packet turns out to be unacceptable. */
	peer = kp->entry.peer;
	pthread_mutex_lock(&peer->lock);
	peer->endpoint = *src_addr; /* roaming */
	confirmed = wg_keypairs_received_with(&peer->keypairs, kp);
	if (confirmed) {
		wg_timers_handshake_complete(&peer->timers);
		peer->sent_lastminute_handshake = false;
		atomic_store(&peer->last_handshake_ns, wg_clock_realtime_ns());
	}
	wg_timers_any_authenticated_packet_received(&peer->timers);
	wg_timers_any_authenticated_packet_traversal(&peer->timers, now);
	if (plain_len)
		wg_timers_data_received(&peer->timers, now);
	rekey = wants_lastminute_rekey(peer, now);
	pthread_mutex_unlock(&peer->lock);
	atomic_fetch_add_explicit(&peer->rx_bytes, datagram_len, memory_order_relaxed);
	wg_keypair_put(kp);
	if (confirmed)
		wg_send_staged(dev, peer, tx);
	if (rekey)
		wg_handshake_request(dev, peer);

	if (!plain_len)
		return 0; /* a keepalive: never written to the TUN */
	family = inner_source(inner, &plain_len, &src);
	if (!family) {
		wg_stat_inc(&dev->stats, drop_malformed);
		return 0;
	}
	if (family == AF_INET6 && wg_mesh_enabled(dev)) {
		if (mesh_msg_is_mesh(inner, plain_len)) {
			wg_mesh_received(dev, peer, inner, plain_len);
			return 0;
		}
		forwarded = mesh_fwd_unwrap(inner, plain_len);
		if (forwarded) {
			/* Sent on by the host the address moved away from, which
			 * checked the source: unwrapped, and only kept from
			 * claiming one of our own VMs. */
			plain_len = (uint32_t)forwarded;
			memmove(inner, inner + MESH_FWD_HLEN, plain_len);
			family = inner_source(inner, &plain_len, &src);
			if (!family) {
				wg_stat_inc(&dev->stats, drop_malformed);
				return 0;
			}
		}
	}
	hop = rt_lookup(dev->allowed_ips, family, src);
	if (forwarded) {
		if (hop && hop->kind == RT_HOP_PORT) {
			wg_stat_inc(&dev->stats, drop_inner_source);
			return 0;
		}
	} else if (hop != &peer->hop) {
		switch (wg_mesh_check_source(dev, peer, hop)) {
		case WG_MESH_ACCEPT:
			break;
		case WG_MESH_HOLD: /* it may have just moved to peer: checked first */
			wg_mesh_hold(dev, peer, family, src, inner, plain_len);
			return 0;
		case WG_MESH_DROP:
			wg_stat_inc(&dev->stats, drop_inner_source);
			log_ratelimited(WG_LOG_DEBUG, "packet has disallowed source address");
			return 0;
		}
	}
	*from = peer;
	wg_stat_inc(&dev->stats, rx_packets);
	wg_stat_add(&dev->stats, rx_bytes, plain_len);
	return plain_len;
drop:
	wg_keypair_put(kp);
	return 0;
}

uint32_t wg_receive(struct wg_device *dev, uint8_t *data, uint32_t len,
		    const union wg_sockaddr *src, struct wg_tx *tx)
{
	struct wg_peer *from;

	return wg_receive_from(dev, data, len, src, tx, &from);
}

uint32_t wg_receive_from(struct wg_device *dev, uint8_t *data, uint32_t len,
			 const union wg_sockaddr *src, struct wg_tx *tx, struct wg_peer **from)
{
	size_t want;

	if (len < sizeof(struct wg_message_header))
		goto malformed;
	/* The type is a little-endian 32-bit word on the wire: kernel WireGuard
	 * and wireguard-go compare all four bytes, so a message whose three
	 * reserved bytes are not zero is of no known type. */
	if (data[1] | data[2] | data[3])
		goto malformed;
	switch (data[0]) {
	case WG_MSG_DATA:
		if (len < WG_MSG_DATA_MIN)
			goto malformed;
		return receive_data(dev, data, len, src, tx, from);
	case WG_MSG_HANDSHAKE_INITIATION:
		want = sizeof(struct wg_msg_initiation);
		break;
	case WG_MSG_HANDSHAKE_RESPONSE:
		want = sizeof(struct wg_msg_response);
		break;
	case WG_MSG_HANDSHAKE_COOKIE:
		want = sizeof(struct wg_msg_cookie);
		break;
	default:
		goto malformed;
	}
	if (len != want)
		goto malformed;
	wg_handshake_enqueue(dev, data, len, src);
	return 0;
malformed:
	wg_stat_inc(&dev->stats, drop_malformed);
	return 0;
}
