/* The send path. A packet from the TUN is routed to its peer by destination
 * (cryptokey routing), sealed with the current keypair under a fresh nonce,
 * padded to a multiple of 16 within the MTU, and handed to a transmitter.
 * Without a usable keypair it is staged (bounded) and a handshake asked for. */
#include "wg/send.h"

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

static void direct_emit(struct wg_tx *tx, struct wg_pkt *pkt)
{
	int err = wg_socket_send(&tx->dev->sockets, wg_pkt_payload(pkt), pkt->len, &pkt->addr);

	if (err) {
		wg_stat_inc(&tx->dev->stats, drop_tx_error);
		log_ratelimited(WG_LOG_DEBUG, "send failed: %s", strerror(-err));
	}
	free(pkt);
}

static void direct_release(struct wg_tx *tx, struct wg_pkt *pkt)
{
	free(pkt);
}

void wg_tx_direct_init(struct wg_tx *tx, struct wg_device *dev)
{
	tx->dev = dev;
	tx->emit = direct_emit;
	tx->release = direct_release;
}

static size_t padded_len(size_t len, unsigned int mtu)
{
	size_t padded = (len + WG_PADDING_MULTIPLE - 1) & ~(size_t)(WG_PADDING_MULTIPLE - 1);

	if (padded > mtu)
		padded = len > mtu ? len : mtu;
	return padded;
}

/* Seals pkt's inner payload in place into a data message. */
static void seal(struct wg_pkt *pkt, struct wg_keypair *kp, uint64_t nonce, unsigned int mtu)
{
	size_t plen = padded_len(pkt->len, mtu);
	uint8_t *inner = wg_pkt_payload(pkt);
	struct wg_msg_data *hdr = (struct wg_msg_data *)(inner - sizeof(*hdr));

	memset(inner + pkt->len, 0, plen - pkt->len);
	hdr->header.type = WG_MSG_DATA;
	memset(hdr->header.reserved, 0, sizeof(hdr->header.reserved));
	hdr->receiver_index = htole32(kp->keys.remote_index);
	hdr->counter = htole64(nonce);
	aead_seal(inner, inner, plen, NULL, 0, nonce, kp->keys.send_key);
	pkt->off -= sizeof(*hdr);
	pkt->len = (uint32_t)(sizeof(*hdr) + plen + WG_TAG_LEN);
}

/* Whether the current keypair is old enough that we should start a new
 * handshake while still using it (whitepaper §6.2). */
static bool wants_rekey(const struct wg_keypair *kp, uint64_t nonce, uint64_t now)
{
	return nonce > WG_REKEY_AFTER_MESSAGES ||
	       (kp->keys.initiator &&
		wg_clock_after(now, kp->birthdate, (uint64_t)WG_REKEY_AFTER_TIME * NSEC_PER_SEC));
}

/* With peer->lock held: the timer events of sending one authenticated message. */
static void sent_events(struct wg_peer *peer, bool data, uint64_t now) WG_REQUIRES(peer->lock)
{
	if (data)
		wg_timers_data_sent(&peer->timers, now);
	wg_timers_any_authenticated_packet_sent(&peer->timers);
	wg_timers_any_authenticated_packet_traversal(&peer->timers, now);
}

static void stage(struct wg_device *dev, struct wg_peer *peer, struct wg_pkt *pkt, struct wg_tx *tx)
{
	struct wg_pkt *copy = pkt;

	if (pkt->pooled) {
		/* Worker buffers are few: keep a heap copy while we wait. */
		copy = wg_pkt_alloc(pkt->len);
		if (copy) {
			memcpy(wg_pkt_payload(copy), wg_pkt_payload(pkt), pkt->len);
			copy->len = pkt->len;
		}
		tx->release(tx, pkt);
		if (!copy) {
			wg_stat_inc(&dev->stats, drop_no_memory);
			return;
		}
	}
	if (peer->staged.len >= WG_MAX_STAGED_PACKETS) {
		/* Drop the oldest, as the kernel does: the newest matter more. */
		free(wg_pkt_queue_pop(&peer->staged));
		wg_stat_inc(&dev->stats, drop_staged_overflow);
	}
	wg_pkt_queue_push(&peer->staged, copy);
}

void wg_send_staged(struct wg_device *dev, struct wg_peer *peer, struct wg_tx *tx)
{
	struct wg_pkt_queue out = { 0 };
	struct wg_keypair *kp;
	union wg_sockaddr dst;
	uint64_t now = wg_clock_now(), nonce = 0;
	bool rekey = false, need_handshake = false;
	struct wg_pkt *p;

	wg_mutex_lock(&peer->lock);
	if (!peer->staged.len) {
		wg_mutex_unlock(&peer->lock);
		return;
	}
	kp = wg_keypairs_get_sending(&peer->keypairs, now);
	if (!kp || !peer->endpoint.sa.sa_family) {
		wg_mutex_unlock(&peer->lock);
		wg_keypair_put(kp);
		wg_handshake_request(dev, peer);
		return;
	}
	dst = peer->endpoint;
	while ((p = wg_pkt_queue_pop(&peer->staged))) {
		nonce = atomic_fetch_add_explicit(&kp->send_counter, 1, memory_order_relaxed);
		if (nonce >= WG_REJECT_AFTER_MESSAGES) {
			/* Exhausted: put it back in front and start over. */
			p->next = peer->staged.head;
			peer->staged.head = p;
			if (!peer->staged.tail)
				peer->staged.tail = p;
			peer->staged.len++;
			need_handshake = true;
			break;
		}
		p->nonce = nonce;
		sent_events(peer, p->len > 0, now);
		wg_pkt_queue_push(&out, p);
	}
	rekey = wants_rekey(kp, nonce, now);
	wg_mutex_unlock(&peer->lock);

	while ((p = wg_pkt_queue_pop(&out))) {
		size_t inner = p->len;

		seal(p, kp, p->nonce, atomic_load_explicit(&dev->mtu, memory_order_relaxed));
		p->addr = dst;
		atomic_fetch_add_explicit(&peer->tx_bytes, p->len, memory_order_relaxed);
		wg_stat_inc(&dev->stats, tx_packets);
		wg_stat_add(&dev->stats, tx_bytes, inner);
		tx->emit(tx, p);
	}
	wg_keypair_put(kp);
	if (rekey || need_handshake)
		wg_handshake_request(dev, peer);
}

void wg_send_keepalive(struct wg_device *dev, struct wg_peer *peer, struct wg_tx *tx)
{
	wg_mutex_lock(&peer->lock);
	if (!peer->staged.len) {
		struct wg_pkt *p = wg_pkt_alloc(0);
		if (p)
			wg_pkt_queue_push(&peer->staged, p);
	}
	wg_mutex_unlock(&peer->lock);
	wg_send_staged(dev, peer, tx);
}

/* The destination of an inner IPv4/IPv6 packet, or 0 when malformed. */
static void release_all(struct wg_tx *tx, struct wg_pkt **pkts, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		tx->release(tx, pkts[i]);
}

void wg_send_to_peer(struct wg_device *dev, struct wg_peer *peer, struct wg_pkt **pkts,
		     unsigned int n, struct wg_tx *tx)
{
	struct wg_keypair *kp;
	uint64_t now, nonce;

	/* The common case: nothing staged and a live keypair, so take n nonces
	 * at once and seal every packet in its own buffer without copying. */
	now = wg_clock_now();
	wg_mutex_lock(&peer->lock);
	kp = peer->staged.len ? NULL : wg_keypairs_get_sending(&peer->keypairs, now);
	if (kp && peer->endpoint.sa.sa_family) {
		nonce = atomic_fetch_add_explicit(&kp->send_counter, n, memory_order_relaxed);
		if (nonce + n <= WG_REJECT_AFTER_MESSAGES && nonce + n > nonce) {
			union wg_sockaddr ep = peer->endpoint;
			bool rekey = wants_rekey(kp, nonce + n - 1, now);
			uint64_t bytes = 0;
			unsigned int mtu = atomic_load_explicit(&dev->mtu, memory_order_relaxed);

			sent_events(peer, true, now);
			wg_mutex_unlock(&peer->lock);
			for (unsigned int i = 0; i < n; i++) {
				struct wg_pkt *p = pkts[i];

				wg_stat_add(&dev->stats, tx_bytes, p->len);
				seal(p, kp, nonce + i, mtu);
				p->addr = ep;
				bytes += p->len;
				tx->emit(tx, p);
			}
			wg_keypair_put(kp);
			atomic_fetch_add_explicit(&peer->tx_bytes, bytes, memory_order_relaxed);
			wg_stat_add(&dev->stats, tx_packets, n);
			if (rekey)
				wg_handshake_request(dev, peer);
			return;
		}
	}
	if (!peer->endpoint.sa.sa_family) {
		wg_mutex_unlock(&peer->lock);
		wg_keypair_put(kp);
		wg_stat_add(&dev->stats, drop_no_endpoint, n);
		release_all(tx, pkts, n);
		return;
	}
	for (unsigned int i = 0; i < n; i++)
		stage(dev, peer, pkts[i], tx);
	wg_mutex_unlock(&peer->lock);
	wg_keypair_put(kp);
	wg_send_staged(dev, peer, tx);
}
