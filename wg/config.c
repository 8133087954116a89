/* Growth and teardown of a UAPI device configuration. Peers carry preshared
 * keys, so their array is never realloc'd in place: a move would leave a copy
 * of every key behind in freed memory. */
#include "wg/config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

enum { CONFIG_FIRST_PEERS = 4, CONFIG_FIRST_ALLOWED_IPS = 4 };

/* New capacity for an array of `cap` elements that must hold one more, at most
 * `limit`; 0 when it is full. */
static size_t grow_cap(size_t cap, size_t first, size_t limit)
{
	size_t next = cap ? cap * 2 : first;

	if (cap >= limit)
		return 0;
	return next > limit ? limit : next;
}

struct wg_peer_config *wg_config_add_peer(struct wg_device_config *cfg)
{
	struct wg_peer_config *peers;
	size_t cap;

	if (cfg->n_peers == cfg->cap_peers) {
		cap = grow_cap(cfg->cap_peers, CONFIG_FIRST_PEERS, WG_MAX_PEERS);
		if (!cap)
			return NULL;
		peers = calloc(cap, sizeof(*peers));
		if (!peers)
			return NULL;
		if (cfg->peers) {
			memcpy(peers, cfg->peers, cfg->n_peers * sizeof(*peers));
			sodium_memzero(cfg->peers, cfg->cap_peers * sizeof(*peers));
			free(cfg->peers);
		}
		cfg->peers = peers;
		cfg->cap_peers = cap;
	}
	peers = &cfg->peers[cfg->n_peers++];
	memset(peers, 0, sizeof(*peers));
	return peers;
}

struct wg_allowed_ip *wg_config_add_allowed_ip(struct wg_peer_config *peer)
{
	struct wg_allowed_ip *ips;
	size_t cap;

	if (peer->n_allowed_ips == peer->cap_allowed_ips) {
		cap = grow_cap(peer->cap_allowed_ips, CONFIG_FIRST_ALLOWED_IPS,
			       WG_MAX_ALLOWEDIPS_PER_PEER);
		if (!cap)
			return NULL;
		/* Prefixes are not secret: a plain realloc is fine here. */
		ips = realloc(peer->allowed_ips, cap * sizeof(*ips));
		if (!ips)
			return NULL;
		peer->allowed_ips = ips;
		peer->cap_allowed_ips = cap;
	}
	ips = &peer->allowed_ips[peer->n_allowed_ips++];
	memset(ips, 0, sizeof(*ips));
	return ips;
}

void wg_config_clear(struct wg_device_config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->n_peers; i++)
		free(cfg->peers[i].allowed_ips);
	if (cfg->peers) {
		sodium_memzero(cfg->peers, cfg->cap_peers * sizeof(*cfg->peers));
		free(cfg->peers);
	}
	sodium_memzero(cfg, sizeof(*cfg));
}
