/* Peer lifetime. */
#include "wg/peer.h"

#include <sodium.h>
#include <string.h>

#include "wg/device.h"

struct wg_peer *wg_peer_new(struct wg_device *dev, const uint8_t public_key[WG_KEY_LEN])
{
	size_t size = (sizeof(struct wg_peer) + 63) & ~(size_t)63;
	struct wg_peer *peer = sodium_malloc(size);

	if (!peer)
		return NULL;
	memset(peer, 0, size);
	peer->hop.kind = RT_HOP_PEER;
	peer->dev = dev;
	memcpy(peer->public_key, public_key, WG_KEY_LEN);
	wg_mutex_init(&peer->lock);
	peer->hs_entry.kind = WG_INDEX_HANDSHAKE;
	peer->hs_entry.peer = peer;
	wg_noise_handshake_init(&peer->handshake, dev->identity, public_key, NULL);
	wg_cookie_maker_init(&peer->cookie, public_key);
	wg_timers_init(&peer->timers);
	return peer;
}

void wg_peer_purge_staged(struct wg_peer *peer)
{
	struct wg_pkt *p;

	while ((p = wg_pkt_queue_pop(&peer->staged)))
		free(p);
}

void wg_peer_clear_sessions(struct wg_peer *peer)
{
	wg_index_remove(&peer->dev->index, &peer->hs_entry);
	wg_noise_handshake_clear(&peer->handshake);
	wg_keypairs_clear(&peer->keypairs);
}

void wg_peer_free(struct wg_peer *peer)
{
	wg_mutex_lock(&peer->lock);
	wg_peer_clear_sessions(peer);
	wg_peer_purge_staged(peer);
	wg_timers_stop(&peer->timers);
	wg_mutex_unlock(&peer->lock);
	wg_mutex_destroy(&peer->lock);
	sodium_free(peer); /* wipes keys */
}
