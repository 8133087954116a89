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

#include "router/table.h"
#include "wg/clock.h"
#include "wg/device.h"
#include "wg/handshake.h"
#include "wg/log.h"
#include "wg/peer.h"

/* Checks an inner IPv4/IPv6 header against the plaintext length, trims the
 * padding, and returns the family, with the source and destination
 * addresses (the one parse of the header); 0 when malformed. */
static int inner_header(uint8_t *p, uint32_t *len, const uint8_t **src, const uint8_t **dst)
{
	if (*len >= sizeof(struct iphdr) && (p[0] >> 4) == 4) {
		const struct iphdr *ip = (const struct iphdr *)p;
		uint32_t tot = ntohs(ip->tot_len);

		if (ip->ihl < 5 || tot < ip->ihl * 4u || tot > *len)
			return 0;
		*len = tot;
		*src = p + offsetof(struct iphdr, saddr);
		*dst = p + offsetof(struct iphdr, daddr);
		return AF_INET;
	}
	if (*len >= sizeof(struct ip6_hdr) && (p[0] >> 4) == 6) {
		const struct ip6_hdr *ip6 = (const struct ip6_hdr *)p;
		uint32_t tot = sizeof(*ip6) + ntohs(ip6->ip6_plen);

		if (tot > *len)
			return 0;
		*len = tot;
		*src = p + offsetof(struct ip6_hdr, ip6_src);
		*dst = p + offsetof(struct ip6_hdr, ip6_dst);
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
static bool wants_lastminute_rekey(struct wg_peer *peer, uint64_t now) WG_REQUIRES(peer->lock)
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

static enum wg_rx_verdict receive_data(struct wg_device *dev, uint8_t *data,
				       uint32_t datagram_len, const union wg_sockaddr *src_addr,
				       struct wg_tx *tx, struct wg_rx *rx)
	WG_REQUIRES_SHARED(dev->lock)
{
	const struct wg_msg_data *hdr = (const struct wg_msg_data *)data;
	uint8_t *inner = data + sizeof(*hdr);
	uint32_t plain_len;
	uint64_t now = wg_clock_now(), counter;
	struct wg_keypair *kp;
	struct wg_peer *peer;
	bool confirmed, rekey, ok, up = false;

	kp = wg_index_get_keypair(&dev->index, le32toh(hdr->receiver_index));
	if (!kp) {
		wg_stat_inc(&dev->stats, drop_unknown_index);
		return WG_RX_DONE;
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
	wg_mutex_lock(&peer->lock);
	peer->endpoint = *src_addr; /* roaming */
	confirmed = wg_keypairs_received_with(&peer->keypairs, kp);
	if (confirmed) {
		wg_timers_handshake_complete(&peer->timers);
		peer->sent_lastminute_handshake = false;
		atomic_store(&peer->last_handshake_ns, wg_clock_realtime_ns());
		up = peer->fresh_unconfirmed;
		peer->fresh_unconfirmed = false;
	}
	wg_timers_any_authenticated_packet_received(&peer->timers);
	wg_timers_any_authenticated_packet_traversal(&peer->timers, now);
	if (plain_len)
		wg_timers_data_received(&peer->timers, now);
	rekey = wants_lastminute_rekey(peer, now);
	wg_mutex_unlock(&peer->lock);
	atomic_fetch_add_explicit(&peer->rx_bytes, datagram_len, memory_order_relaxed);
	wg_keypair_put(kp);
	if (confirmed)
		wg_send_staged(dev, peer, tx);
	/* Only now can what the layers above send reach the peer: until its
	 * first packet, this side still sends with the keys before. */
	if (up && dev->hooks.peer_up)
		dev->hooks.peer_up(dev, peer);
	if (rekey)
		wg_handshake_request(dev, peer);

	if (!plain_len)
		return WG_RX_DONE; /* a keepalive: never written to the TUN */
	*rx = (struct wg_rx){ .peer = peer, .pkt = inner, .len = plain_len };
	if (!wg_receive_reparse(dev, rx))
		return WG_RX_DONE;
	return rx->hop == &peer->hop ? WG_RX_PEER : WG_RX_FOREIGN;
drop:
	wg_keypair_put(kp);
	return WG_RX_DONE;
}

bool wg_receive_reparse(struct wg_device *dev, struct wg_rx *rx)
{
	rx->family = inner_header(rx->pkt, &rx->len, &rx->src, &rx->dst);
	if (!rx->family) {
		wg_stat_inc(&dev->stats, drop_malformed);
		return false;
	}
	rx->hop = rt_lookup(dev->allowed_ips, rx->family, rx->src);
	return true;
}

uint32_t wg_receive_accept(struct wg_device *dev, const struct wg_rx *rx)
{
	wg_stat_inc(&dev->stats, rx_packets);
	wg_stat_add(&dev->stats, rx_bytes, rx->len);
	return rx->len;
}

void wg_receive_reject(struct wg_device *dev)
{
	wg_stat_inc(&dev->stats, drop_inner_source);
	log_ratelimited(WG_LOG_DEBUG, "packet has disallowed source address");
}

uint32_t wg_receive(struct wg_device *dev, uint8_t *data, uint32_t len,
		    const union wg_sockaddr *src, struct wg_tx *tx)
{
	struct wg_rx rx;

	switch (wg_receive_open(dev, data, len, src, tx, &rx)) {
	case WG_RX_PEER:
		return wg_receive_accept(dev, &rx);
	case WG_RX_FOREIGN:
		wg_receive_reject(dev);
		return 0;
	case WG_RX_DONE:
		break;
	}
	return 0;
}

enum wg_rx_verdict wg_receive_open(struct wg_device *dev, uint8_t *data, uint32_t len,
				   const union wg_sockaddr *src, struct wg_tx *tx, struct wg_rx *rx)
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
		return receive_data(dev, data, len, src, tx, rx);
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
	return WG_RX_DONE;
malformed:
	wg_stat_inc(&dev->stats, drop_malformed);
	return WG_RX_DONE;
}
