/* The handshake thread and the messages it sends.
 *
 * Security model: handshake messages are unauthenticated until mac1 checks
 * out, cost an X25519 operation after that, and so are the DoS surface:
 * they are size-checked by the worker, queued boundedly, answered with a
 * cookie instead of work when under load, and rate-limited per source. */
#include "wg/handshake.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "wg/clock.h"
#include "wg/device.h"
#include "wg/log.h"
#include "wg/peer.h"
#include "wg/send.h"

int wg_handshake_init(struct wg_handshake_queue *q)
{
	memset(q, 0, sizeof(*q));
	q->items = calloc(WG_HSQ_CAPACITY, sizeof(*q->items));
	if (!q->items)
		return -ENOMEM;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	return 0;
}

void wg_handshake_destroy(struct wg_handshake_queue *q)
{
	if (!q->items)
		return;
	sodium_memzero(q->items, WG_HSQ_CAPACITY * sizeof(*q->items));
	free(q->items);
	q->items = NULL;
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->cond);
}

static bool push(struct wg_handshake_queue *q, const struct wg_hs_item *item)
{
	bool ok = false;

	pthread_mutex_lock(&q->lock);
	if (q->count < WG_HSQ_CAPACITY) {
		q->items[(q->head + q->count) % WG_HSQ_CAPACITY] = *item;
		q->count++;
		ok = true;
		pthread_cond_signal(&q->cond);
	}
	pthread_mutex_unlock(&q->lock);
	return ok;
}

bool wg_handshake_enqueue(struct wg_device *dev, const uint8_t *msg, size_t len,
			  const union wg_sockaddr *src)
{
	struct wg_hs_item item = { .kind = WG_HS_PACKET, .len = (uint16_t)len, .src = *src };

	memcpy(item.data, msg, len);
	if (push(&dev->hsq, &item))
		return true;
	wg_stat_inc(&dev->stats, hs_queue_full);
	return false;
}

void wg_handshake_request(struct wg_device *dev, struct wg_peer *peer)
{
	struct wg_hs_item item = { .kind = WG_HS_INITIATE, .len = WG_KEY_LEN };

	if (atomic_exchange(&peer->handshake_queued, true))
		return;
	memcpy(item.data, peer->public_key, WG_KEY_LEN);
	if (!push(&dev->hsq, &item)) {
		atomic_store(&peer->handshake_queued, false);
		wg_stat_inc(&dev->stats, hs_queue_full);
	}
}

static void send_to(struct wg_device *dev, struct wg_peer *peer, const void *msg, size_t len,
		    const union wg_sockaddr *dst)
{
	int err = wg_socket_send(&dev->sockets, msg, len, dst);

	if (err) {
		wg_stat_inc(&dev->stats, drop_tx_error);
		log_ratelimited(WG_LOG_DEBUG, "handshake send failed: %s", strerror(-err));
		return;
	}
	if (peer)
		atomic_fetch_add(&peer->tx_bytes, len);
}

/* With peer->lock held: the pending handshake gets a fresh index. */
static uint32_t new_handshake_index(struct wg_device *dev, struct wg_peer *peer)
	WG_REQUIRES(peer->lock)
{
	wg_index_remove(&dev->index, &peer->hs_entry);
	return wg_index_insert(&dev->index, &peer->hs_entry);
}

void wg_handshake_send_initiation(struct wg_device *dev, struct wg_peer *peer, bool retry)
{
	struct wg_msg_initiation msg;
	union wg_sockaddr dst;
	uint64_t now = wg_clock_now();
	bool ok = false;

	wg_mutex_lock(&peer->lock);
	if (!retry)
		peer->timers.handshake_attempts = 0;
	if (!dev->identity->has_identity || !peer->endpoint.sa.sa_family)
		goto out;
	/* At most one initiation per REKEY_TIMEOUT. */
	if (peer->last_sent_handshake &&
	    !wg_clock_after(now, peer->last_sent_handshake, (uint64_t)WG_REKEY_TIMEOUT * NSEC_PER_SEC))
		goto out;
	if (!wg_noise_create_initiation(&msg, &peer->handshake, dev->identity,
					new_handshake_index(dev, peer)))
		goto out;
	wg_cookie_add_macs(&peer->cookie, (uint8_t *)&msg, sizeof(msg), now);
	peer->last_sent_handshake = now;
	wg_timers_any_authenticated_packet_traversal(&peer->timers, now);
	wg_timers_any_authenticated_packet_sent(&peer->timers);
	wg_timers_handshake_initiated(&peer->timers, now);
	dst = peer->endpoint;
	ok = true;
out:
	wg_mutex_unlock(&peer->lock);
	if (ok) {
		log_debug("sending handshake initiation%s", retry ? " (retry)" : "");
		send_to(dev, peer, &msg, sizeof(msg), &dst);
		wg_stat_inc(&dev->stats, hs_initiations_sent);
	}
	sodium_memzero(&msg, sizeof(msg));
}

/* Whether a session beginning now is not a routine rekey: the first with
 * the peer, one after the last expired, or one long before a rekey was due
 * (the peer restarted, or lost its keys). */
static bool fresh_session(const struct wg_peer *peer, uint64_t now) WG_REQUIRES(peer->lock)
{
	const struct wg_keypair *last = peer->keypairs.next ? peer->keypairs.next
							    : peer->keypairs.current;
	uint64_t age;

	if (!last)
		return true;
	age = now - last->birthdate;
	return age < (uint64_t)(WG_REKEY_AFTER_TIME - WG_REKEY_TIMEOUT) * NSEC_PER_SEC ||
	       age >= (uint64_t)WG_REJECT_AFTER_TIME * NSEC_PER_SEC;
}

/* With peer->lock held: turns the finished handshake into a keypair;
 * *fresh says whether it is a fresh session (fresh_session). */
static bool begin_session(struct wg_device *dev, struct wg_peer *peer, uint64_t now, bool *fresh)
	WG_REQUIRES(peer->lock)
{
	struct wg_noise_session session;
	struct wg_keypair *kp;
	bool ok = false;

	*fresh = fresh_session(peer, now);
	if (!wg_noise_derive_session(&session, &peer->handshake))
		goto out;
	kp = wg_keypair_new(&dev->index, peer, &session, now);
	if (!kp)
		goto out;
	wg_index_replace(&dev->index, &peer->hs_entry, &kp->entry);
	wg_keypairs_add(&peer->keypairs, kp);
	wg_timers_session_derived(&peer->timers, now);
	wg_stat_inc(&dev->stats, keypairs_created);
	ok = true;
out:
	sodium_memzero(&session, sizeof(session));
	return ok;
}

static void authenticated_from(struct wg_peer *peer, const union wg_sockaddr *src, size_t len,
			       uint64_t now)
{
	peer->endpoint = *src;
	atomic_fetch_add(&peer->rx_bytes, len);
	wg_timers_any_authenticated_packet_received(&peer->timers);
	wg_timers_any_authenticated_packet_traversal(&peer->timers, now);
}

static void consume_initiation(struct wg_device *dev, const struct wg_hs_item *item, uint64_t now)
	WG_REQUIRES_SHARED(dev->lock)
{
	const struct wg_msg_initiation *msg = (const void *)item->data;
	struct wg_noise_initiation in;
	struct wg_msg_response resp;
	struct wg_peer *peer = NULL;
	bool ok = false, fresh = false;

	wg_stat_inc(&dev->stats, hs_initiations_received);
	if (!wg_noise_open_initiation(&in, msg, dev->identity))
		goto fail;
	peer = wg_device_lookup_peer(dev, in.remote_static);
	if (!peer)
		goto fail;
	wg_mutex_lock(&peer->lock);
	/* A peer gets at most one initiation per 1/50 s consumed. */
	if (peer->last_initiation_consumption &&
	    !wg_clock_after(now, peer->last_initiation_consumption,
			    NSEC_PER_SEC / WG_INITIATIONS_PER_SECOND))
		goto unlock;
	if (!wg_noise_accept_initiation(&peer->handshake, &in))
		goto unlock;
	peer->last_initiation_consumption = now;
	authenticated_from(peer, &item->src, item->len, now);
	if (!wg_noise_create_response(&resp, &peer->handshake, dev->identity,
				      new_handshake_index(dev, peer)))
		goto unlock;
	wg_cookie_add_macs(&peer->cookie, (uint8_t *)&resp, sizeof(resp), now);
	if (!begin_session(dev, peer, now, &fresh))
		goto unlock;
	/* As responder, the layers above hear of a fresh session once the
	 * initiator confirms it (wg/receive.c). */
	peer->fresh_unconfirmed = fresh;
	peer->last_sent_handshake = now;
	wg_timers_any_authenticated_packet_traversal(&peer->timers, now);
	wg_timers_any_authenticated_packet_sent(&peer->timers);
	ok = true;
unlock:
	wg_mutex_unlock(&peer->lock);
	if (ok) {
		send_to(dev, peer, &resp, sizeof(resp), &item->src);
		wg_stat_inc(&dev->stats, hs_responses_sent);
	}
fail:
	if (!ok) {
		wg_stat_inc(&dev->stats, hs_failed);
		log_ratelimited(WG_LOG_DEBUG, "invalid handshake initiation");
	}
	sodium_memzero(&in, sizeof(in));
	sodium_memzero(&resp, sizeof(resp));
}

static void consume_response(struct wg_device *dev, const struct wg_hs_item *item, uint64_t now)
	WG_REQUIRES_SHARED(dev->lock)
{
	const struct wg_msg_response *msg = (const void *)item->data;
	struct wg_peer *peer;
	struct wg_tx tx;
	bool ok = false, fresh = false;

	wg_stat_inc(&dev->stats, hs_responses_received);
	peer = wg_index_get_handshake(&dev->index, le32toh(msg->receiver_index));
	if (!peer)
		goto out;
	wg_mutex_lock(&peer->lock);
	if (wg_noise_consume_response(msg, &peer->handshake, dev->identity) &&
	    begin_session(dev, peer, now, &fresh)) {
		authenticated_from(peer, &item->src, item->len, now);
		wg_timers_handshake_complete(&peer->timers);
		peer->sent_lastminute_handshake = false;
		atomic_store(&peer->last_handshake_ns, wg_clock_realtime_ns());
		ok = true;
	}
	wg_mutex_unlock(&peer->lock);
	if (ok) {
		/* Staged packets, or a keepalive, confirm the session to the
		 * responder. */
		wg_tx_direct_init(&tx, dev);
		wg_send_keepalive(dev, peer, &tx);
		if (fresh && dev->hooks.peer_up)
			dev->hooks.peer_up(dev, peer);
	}
out:
	if (!ok) {
		wg_stat_inc(&dev->stats, hs_failed);
		log_ratelimited(WG_LOG_DEBUG, "invalid handshake response");
	}
}

static void consume_cookie(struct wg_device *dev, const struct wg_hs_item *item, uint64_t now)
	WG_REQUIRES_SHARED(dev->lock)
{
	const struct wg_msg_cookie *msg = (const void *)item->data;
	struct wg_peer *peer = wg_index_get_handshake(&dev->index, le32toh(msg->receiver_index));
	bool ok = false;

	if (peer) {
		wg_mutex_lock(&peer->lock);
		ok = wg_cookie_consume_reply(&peer->cookie, msg, now);
		wg_mutex_unlock(&peer->lock);
	}
	if (ok)
		wg_stat_inc(&dev->stats, hs_cookies_received);
	else
		wg_stat_inc(&dev->stats, hs_failed);
}

static bool under_load(struct wg_device *dev, unsigned int queued, uint64_t now)
{
	struct wg_handshake_queue *q = &dev->hsq;

	if (dev->force_under_load || queued >= WG_HSQ_UNDER_LOAD) {
		q->last_under_load = now;
		return true;
	}
	/* Stay under load for a second after the queue drains. */
	if (q->last_under_load && !wg_clock_after(now, q->last_under_load, NSEC_PER_SEC))
		return true;
	q->last_under_load = 0;
	return false;
}

static void process_packet(struct wg_device *dev, const struct wg_hs_item *item, unsigned int queued)
	WG_REQUIRES_SHARED(dev->lock)
{
	uint64_t now = wg_clock_now();
	enum wg_cookie_result mac;
	bool load, needs_cookie;
	uint32_t sender;

	if (item->data[0] == WG_MSG_HANDSHAKE_COOKIE) {
		consume_cookie(dev, item, now);
		return;
	}
	load = under_load(dev, queued, now);
	mac = wg_cookie_validate(&dev->cookie_checker, item->data, item->len, &item->src, load, now);
	if ((load && mac == WG_COOKIE_VALID_MAC_WITH_COOKIE) ||
	    (!load && mac == WG_COOKIE_VALID_MAC_NO_COOKIE)) {
		needs_cookie = false;
	} else if (load && mac == WG_COOKIE_VALID_MAC_NO_COOKIE) {
		needs_cookie = true;
	} else {
		wg_stat_inc(&dev->stats, hs_invalid_mac);
		log_ratelimited(WG_LOG_DEBUG, "invalid MAC of handshake, dropping packet");
		return;
	}
	if (load && !needs_cookie && !wg_ratelimiter_allow(&dev->ratelimiter, &item->src, now)) {
		wg_stat_inc(&dev->stats, hs_ratelimited);
		return;
	}
	if (needs_cookie) {
		struct wg_msg_cookie reply;

		memcpy(&sender, item->data + offsetof(struct wg_msg_initiation, sender_index),
		       sizeof(sender));
		if (wg_cookie_create_reply(&reply, &dev->cookie_checker, item->data, item->len,
					   le32toh(sender), &item->src, now)) {
			send_to(dev, NULL, &reply, sizeof(reply), &item->src);
			wg_stat_inc(&dev->stats, hs_cookies_sent);
		}
		return;
	}
	if (item->data[0] == WG_MSG_HANDSHAKE_INITIATION)
		consume_initiation(dev, item, now);
	else
		consume_response(dev, item, now);
}

void wg_handshake_process(struct wg_device *dev, const struct wg_hs_item *item, unsigned int queued)
{
	struct wg_peer *peer;

	if (item->kind == WG_HS_PACKET) {
		process_packet(dev, item, queued);
		return;
	}
	peer = wg_device_lookup_peer(dev, item->data);
	if (!peer)
		return;
	atomic_store(&peer->handshake_queued, false);
	wg_handshake_send_initiation(dev, peer, false);
}

static void *handshake_thread(void *arg)
{
	struct wg_device *dev = arg;
	struct wg_handshake_queue *q = &dev->hsq;
	struct wg_hs_item item;
	unsigned int queued;

	for (;;) {
		pthread_mutex_lock(&q->lock);
		while (!q->count && !atomic_load(&dev->stopping))
			pthread_cond_wait(&q->cond, &q->lock);
		if (atomic_load(&dev->stopping)) {
			pthread_mutex_unlock(&q->lock);
			break;
		}
		queued = q->count;
		item = q->items[q->head];
		q->head = (q->head + 1) % WG_HSQ_CAPACITY;
		q->count--;
		pthread_mutex_unlock(&q->lock);

		wg_rwlock_rdlock(&dev->lock);
		wg_handshake_process(dev, &item, queued);
		wg_rwlock_unlock(&dev->lock);
	}
	sodium_memzero(&item, sizeof(item));
	return NULL;
}

int wg_handshake_start(struct wg_device *dev)
{
	int err = pthread_create(&dev->hsq.thread, NULL, handshake_thread, dev);

	if (err)
		return -err;
	dev->hsq.running = true;
	return 0;
}

void wg_handshake_stop(struct wg_device *dev)
{
	if (!dev->hsq.running)
		return;
	pthread_mutex_lock(&dev->hsq.lock);
	pthread_cond_broadcast(&dev->hsq.cond);
	pthread_mutex_unlock(&dev->hsq.lock);
	pthread_join(dev->hsq.thread, NULL);
	dev->hsq.running = false;
}
