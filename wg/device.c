/* The device: configuration (UAPI get/set), the peer table, the timer
 * thread, and the start and stop of the threads. */
#include "wg/device.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crypto/aead.h"
#include "pkt/prefix.h"
#include "router/hop.h"
#include "text/text.h"
#include "wg/clock.h"
#include "wg/handshake.h"
#include "wg/log.h"
#include "wg/peer.h"
#include "wg/send.h"

static uint8_t peer_hash_key[crypto_shorthash_KEYBYTES];

static struct wg_peer **peer_bucket(struct wg_device *dev, const uint8_t key[WG_KEY_LEN])
{
	uint8_t h[crypto_shorthash_BYTES];
	uint64_t v;

	crypto_shorthash(h, key, WG_KEY_LEN, peer_hash_key);
	memcpy(&v, h, sizeof(v));
	return &dev->peer_buckets[v & (WG_PEER_BUCKETS - 1)];
}

struct wg_peer *wg_device_lookup_peer(struct wg_device *dev, const uint8_t public_key[32])
{
	for (struct wg_peer *p = *peer_bucket(dev, public_key); p; p = p->hash_next)
		if (!sodium_memcmp(p->public_key, public_key, WG_KEY_LEN))
			return p;
	return NULL;
}

/* Write lock held. */
static struct wg_peer *add_peer(struct wg_device *dev, const uint8_t public_key[WG_KEY_LEN])
	WG_REQUIRES(dev->lock)
{
	struct wg_peer *peer, **b;

	if (dev->n_peers >= WG_MAX_PEERS)
		return NULL;
	peer = wg_peer_new(dev, public_key);
	if (!peer)
		return NULL;
	b = peer_bucket(dev, public_key);
	peer->hash_next = *b;
	*b = peer;
	peer->list_prev = dev->peers_tail;
	if (dev->peers_tail)
		dev->peers_tail->list_next = peer;
	else
		dev->peers_head = peer;
	dev->peers_tail = peer;
	dev->n_peers++;
	return peer;
}

/* Write lock held: no reader holds a pointer to peer, so it can go at once.
 * Step 1 unlinks it from every table a reader could find it through
 * (public key, allowed IPs; its indices go in wg_peer_free), step 2 frees. */
static void remove_peer(struct wg_device *dev, struct wg_peer *peer) WG_REQUIRES(dev->lock)
{
	for (struct wg_peer **pp = peer_bucket(dev, peer->public_key); *pp; pp = &(*pp)->hash_next) {
		if (*pp == peer) {
			*pp = peer->hash_next;
			break;
		}
	}
	if (peer->list_prev)
		peer->list_prev->list_next = peer->list_next;
	else
		dev->peers_head = peer->list_next;
	if (peer->list_next)
		peer->list_next->list_prev = peer->list_prev;
	else
		dev->peers_tail = peer->list_prev;
	dev->n_peers--;
	rt_remove_value(dev->allowed_ips, peer);
	if (dev->hooks.peer_removed)
		dev->hooks.peer_removed(dev, peer);
	wg_peer_free(peer);
}

static void remove_all_peers(struct wg_device *dev) WG_REQUIRES(dev->lock)
{
	while (dev->peers_head)
		remove_peer(dev, dev->peers_head);
}

/* Write lock held. Peers' precomputed DH and sessions depend on our key. */
static void set_private_key(struct wg_device *dev, const uint8_t key[WG_KEY_LEN])
	WG_REQUIRES(dev->lock)
{
	uint8_t psk[WG_KEY_LEN];
	struct wg_peer *peer, *next;

	if (dev->identity->has_identity && !sodium_memcmp(dev->identity->static_private, key, WG_KEY_LEN))
		return;
	wg_noise_identity_set(dev->identity, key);
	wg_cookie_checker_set_key(&dev->cookie_checker,
				  dev->identity->has_identity ? dev->identity->static_public : NULL);
	for (peer = dev->peers_head; peer; peer = next) {
		next = peer->list_next;
		/* A peer with our own public key would be ourselves. */
		if (dev->identity->has_identity &&
		    !sodium_memcmp(peer->public_key, dev->identity->static_public, WG_KEY_LEN)) {
			remove_peer(dev, peer);
			continue;
		}
		wg_mutex_lock(&peer->lock);
		wg_peer_clear_sessions(peer);
		memcpy(psk, peer->handshake.preshared_key, WG_KEY_LEN);
		wg_noise_handshake_init(&peer->handshake, dev->identity, peer->public_key, psk);
		wg_mutex_unlock(&peer->lock);
	}
	sodium_memzero(psk, sizeof(psk));
}

/* Whether p lies inside a prefix that a layer above routes itself (the
 * mesh's prefixes: their addresses are learned, and must not also be a
 * peer's by configuration). */
static bool inside_mesh(struct wg_device *dev, const struct ip_prefix *p) WG_REQUIRES_SHARED(dev->lock)
{
	const struct rt_hop *first = rt_lookup(dev->allowed_ips, p->family, p->addr);

	/* Inside a mesh prefix, p's first address routes to the prefix, to a
	 * location learned in it or to a local VM's address: one lookup
	 * settles every other case (a peer's allowed IP never lies inside). */
	if (!first || first->kind == RT_HOP_PEER)
		return false;
	for (unsigned int c = 0; c <= p->cidr; c++) {
		const struct rt_hop *h = rt_get(dev->allowed_ips, p->family, p->addr, (uint8_t)c);

		if (h && h->kind == RT_HOP_MESH)
			return true;
	}
	return false;
}

/* Write lock held: -EEXIST (and logged) when an allowed IP the set would add
 * lies inside a mesh prefix, before anything changes. */
static int check_allowed_ips(struct wg_device *dev, const struct wg_device_config *cfg)
	WG_REQUIRES(dev->lock)
{
	char text[IP_PREFIX_STRLEN];

	for (size_t i = 0; i < cfg->n_peers; i++) {
		const struct wg_peer_config *pc = &cfg->peers[i];

		for (size_t j = 0; !pc->remove && j < pc->n_allowed_ips; j++) {
			const struct ip_prefix *a = &pc->allowed_ips[j].prefix;

			if (pc->allowed_ips[j].remove || !inside_mesh(dev, a))
				continue;
			ip_prefix_format(a, text);
			log_error("allowed IP %s lies inside a mesh prefix (its addresses are "
				  "learned, not configured): refused", text);
			return -EEXIST;
		}
	}
	return 0;
}

/* Write lock held. Returns the peer if it should get a keepalive now. */
static int apply_peer(struct wg_device *dev, const struct wg_peer_config *pc, struct wg_peer **kick,
		      struct wg_peer **added)
	WG_REQUIRES(dev->lock)
{
	struct wg_peer *peer = wg_device_lookup_peer(dev, pc->public_key);
	bool keepalive_was_off;

	*kick = NULL;
	*added = NULL;
	if (pc->remove) {
		if (peer)
			remove_peer(dev, peer);
		return 0;
	}
	if (!peer) {
		if (pc->update_only)
			return 0;
		if (dev->identity->has_identity &&
		    !sodium_memcmp(pc->public_key, dev->identity->static_public, WG_KEY_LEN))
			return 0; /* ourselves: ignored, as the kernel does */
		peer = add_peer(dev, pc->public_key);
		if (!peer)
			return -ENOMEM;
		*added = peer;
	}
	wg_mutex_lock(&peer->lock);
	if (pc->has_preshared_key)
		wg_noise_handshake_init(&peer->handshake, dev->identity, peer->public_key,
					pc->preshared_key);
	if (pc->has_endpoint)
		peer->endpoint = pc->endpoint;
	keepalive_was_off = !peer->timers.persistent_keepalive_interval;
	if (pc->has_keepalive)
		peer->timers.persistent_keepalive_interval = pc->persistent_keepalive;
	if (pc->has_keepalive && keepalive_was_off && pc->persistent_keepalive)
		*kick = peer;
	wg_mutex_unlock(&peer->lock);

	if (pc->replace_allowed_ips)
		rt_remove_value(dev->allowed_ips, peer);
	for (size_t i = 0; i < pc->n_allowed_ips; i++) {
		const struct ip_prefix *a = &pc->allowed_ips[i].prefix;
		int err;

		if (pc->allowed_ips[i].remove) {
			rt_remove(dev->allowed_ips, a->family, a->addr, a->cidr, peer);
			continue;
		}
		err = rt_insert(dev->allowed_ips, a->family, a->addr, a->cidr, peer);
		if (err)
			return err;
	}
	return 0;
}

/* Write lock held: the workers retire and close the old fds themselves
 * once nothing is in flight on them; without workers nobody uses them. */
static void swap_sockets(struct wg_device *dev, struct wg_socket_set *fresh) WG_REQUIRES(dev->lock)
{
	for (int i = 0; i < fresh->n; i++) {
		int old4 = atomic_exchange(&dev->sockets.pair[i].fd4, atomic_load(&fresh->pair[i].fd4));
		int old6 = atomic_exchange(&dev->sockets.pair[i].fd6, atomic_load(&fresh->pair[i].fd6));

		if (!dev->running) {
			if (old4 >= 0)
				close(old4);
			if (old6 >= 0)
				close(old6);
		}
	}
	dev->sockets.port = fresh->port;
	dev->sockets.gro = fresh->gro;
	dev->sockets.gso = fresh->gso;
	dev->listen_port = fresh->port;
}

void wg_device_kick(struct wg_device *dev, int worker)
{
	if (dev->hooks.kick)
		dev->hooks.kick(dev, worker);
}

int wg_device_set(struct wg_device *dev, const struct wg_device_config *cfg)
{
	struct wg_socket_set fresh;
	struct wg_peer **kick = NULL;
	uint8_t (*added)[WG_KEY_LEN] = NULL; /* keys: a later entry may remove one */
	size_t n_kick = 0, n_added = 0;
	int err = 0;

	/* The one step that can fail on the system's word comes first, so a
	 * taken port changes nothing. */
	wg_socket_init(&fresh);
	if (cfg->has_listen_port && cfg->listen_port != dev->listen_port) {
		err = wg_socket_open(&fresh, dev->n_workers, cfg->listen_port,
				     cfg->has_fwmark ? cfg->fwmark : dev->fwmark, dev->socket_flags);
		if (err)
			return err;
	}
	kick = calloc(cfg->n_peers ? cfg->n_peers : 1, sizeof(*kick));
	added = calloc(cfg->n_peers ? cfg->n_peers : 1, sizeof(*added));
	if (!kick || !added) {
		free(kick);
		free(added);
		wg_socket_close(&fresh);
		return -ENOMEM;
	}

	wg_rwlock_wrlock(&dev->lock);
	err = check_allowed_ips(dev, cfg);
	if (err) {
		wg_rwlock_unlock(&dev->lock);
		free(kick);
		free(added);
		wg_socket_close(&fresh);
		return err;
	}
	if (fresh.n)
		swap_sockets(dev, &fresh);
	if (cfg->has_fwmark && cfg->fwmark != dev->fwmark) {
		dev->fwmark = cfg->fwmark;
		wg_socket_set_fwmark(&dev->sockets, cfg->fwmark);
	}
	if (cfg->has_private_key)
		set_private_key(dev, cfg->private_key);
	if (cfg->replace_peers)
		remove_all_peers(dev);
	for (size_t i = 0; i < cfg->n_peers && !err; i++) {
		struct wg_peer *p, *a;

		err = apply_peer(dev, &cfg->peers[i], &p, &a);
		if (p)
			kick[n_kick++] = p;
		if (a)
			memcpy(added[n_added++], a->public_key, WG_KEY_LEN);
	}
	/* Persistent keepalives start at once (as the kernel does). */
	if (!err && dev->running) {
		struct wg_tx tx;

		wg_tx_direct_init(&tx, dev);
		for (size_t i = 0; i < n_kick; i++)
			wg_send_keepalive(dev, kick[i], &tx);
	}
	/* New peers the layers above tell what they should know. */
	for (size_t i = 0; !err && dev->hooks.peer_up && i < n_added; i++) {
		struct wg_peer *p = wg_device_lookup_peer(dev, added[i]);

		if (p)
			dev->hooks.peer_up(dev, p);
	}
	wg_rwlock_unlock(&dev->lock);
	free(kick);
	free(added);
	if (fresh.n)
		wg_device_kick(dev, -1);
	return err;
}

struct walk_ctx {
	struct wg_peer_config *pc;
	int err;
};

static void collect_allowed_ip(void *arg, int family, const uint8_t *addr, uint8_t cidr)
{
	struct walk_ctx *ctx = arg;
	struct wg_allowed_ip *a = wg_config_add_allowed_ip(ctx->pc);

	if (!a) {
		ctx->err = -ENOMEM;
		return;
	}
	a->prefix.family = (uint8_t)family;
	a->prefix.cidr = cidr;
	memcpy(a->prefix.addr, addr, family == AF_INET ? 4 : 16);
}

int wg_device_get(struct wg_device *dev, struct wg_device_config *cfg)
{
	int err = 0;

	memset(cfg, 0, sizeof(*cfg));
	wg_rwlock_rdlock(&dev->lock);
	if (dev->identity->has_identity) {
		cfg->has_private_key = true;
		memcpy(cfg->private_key, dev->identity->static_private, WG_KEY_LEN);
	}
	cfg->has_listen_port = true;
	cfg->listen_port = dev->listen_port;
	cfg->has_fwmark = dev->fwmark != 0;
	cfg->fwmark = dev->fwmark;
	for (struct wg_peer *peer = dev->peers_head; peer && !err; peer = peer->list_next) {
		struct wg_peer_config *pc = wg_config_add_peer(cfg);
		struct walk_ctx ctx = { .pc = pc };
		uint64_t hs;

		if (!pc) {
			err = -ENOMEM;
			break;
		}
		memcpy(pc->public_key, peer->public_key, WG_KEY_LEN);
		wg_mutex_lock(&peer->lock);
		pc->has_preshared_key = true;
		memcpy(pc->preshared_key, peer->handshake.preshared_key, WG_KEY_LEN);
		pc->has_endpoint = peer->endpoint.sa.sa_family != 0;
		pc->endpoint = peer->endpoint;
		pc->has_keepalive = true;
		pc->persistent_keepalive = peer->timers.persistent_keepalive_interval;
		wg_mutex_unlock(&peer->lock);
		hs = atomic_load(&peer->last_handshake_ns);
		pc->last_handshake_sec = hs / NSEC_PER_SEC;
		pc->last_handshake_nsec = hs % NSEC_PER_SEC;
		pc->rx_bytes = atomic_load(&peer->rx_bytes);
		pc->tx_bytes = atomic_load(&peer->tx_bytes);
		rt_walk_value(dev->allowed_ips, peer, collect_allowed_ip, &ctx);
		err = ctx.err;
	}
	wg_rwlock_unlock(&dev->lock);
	if (err)
		wg_config_clear(cfg);
	return err;
}

int wg_device_stats(struct wg_device *dev, char **text, size_t *len)
{
	struct text_buf b = { 0 };
	size_t n_peers;

#define WG_STATS_PRINT(name) \
	text_buf_printf(&b, #name "=%llu\n", (unsigned long long)atomic_load(&dev->stats.name));
	WG_STATS(WG_STATS_PRINT)
#undef WG_STATS_PRINT
	wg_rwlock_rdlock(&dev->lock);
	n_peers = dev->n_peers;
	wg_rwlock_unlock(&dev->lock);
	text_buf_printf(&b, "peers=%zu\n", n_peers);
	text_buf_printf(&b, "aead_backend=%s\n", aead_active()->name);
	return text_buf_finish(&b, text, len);
}

/* The timer thread: fires every peer's due timers on a short tick. */
static void run_timers(struct wg_device *dev, uint64_t now) WG_REQUIRES_SHARED(dev->lock)
{
	struct wg_tx tx;

	wg_tx_direct_init(&tx, dev);
	for (struct wg_peer *peer = dev->peers_head; peer; peer = peer->list_next) {
		unsigned int actions;

		wg_mutex_lock(&peer->lock);
		actions = wg_timers_due(&peer->timers, now);
		if (actions & WG_TIMER_GIVE_UP)
			wg_peer_purge_staged(peer);
		if (actions & WG_TIMER_ZERO_KEYS)
			wg_peer_clear_sessions(peer);
		wg_mutex_unlock(&peer->lock);

		if (actions & WG_TIMER_GIVE_UP)
			log_debug("handshake did not complete after %d attempts, giving up",
				  WG_MAX_TIMER_HANDSHAKES + 2);
		if (actions & WG_TIMER_SEND_INITIATION)
			wg_handshake_send_initiation(dev, peer, true);
		if (actions & WG_TIMER_NEW_HANDSHAKE)
			wg_handshake_send_initiation(dev, peer, false);
		if (actions & WG_TIMER_SEND_KEEPALIVE)
			wg_send_keepalive(dev, peer, &tx);
	}
}

static void *timer_thread(void *arg)
{
	struct wg_device *dev = arg;
	/* 50 ms of protocol time, at least 5 ms of real time. */
	uint64_t tick = wg_clock_to_real(50 * NSEC_PER_MSEC);

	if (tick < 5 * NSEC_PER_MSEC)
		tick = 5 * NSEC_PER_MSEC;
	pthread_mutex_lock(&dev->timer_lock);
	while (!atomic_load(&dev->stopping)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)tick;
		ts.tv_sec += ts.tv_nsec / (long)NSEC_PER_SEC;
		ts.tv_nsec %= (long)NSEC_PER_SEC;
		pthread_cond_timedwait(&dev->timer_cond, &dev->timer_lock, &ts);
		if (atomic_load(&dev->stopping))
			break;
		pthread_mutex_unlock(&dev->timer_lock);
		wg_rwlock_rdlock(&dev->lock);
		run_timers(dev, wg_clock_now());
		wg_rwlock_unlock(&dev->lock);
		pthread_mutex_lock(&dev->timer_lock);
	}
	pthread_mutex_unlock(&dev->timer_lock);
	return NULL;
}

struct wg_device *wg_device_new(const char *ifname, const int *tun_fds, const int *cpus, int n,
				bool tun_vnet, unsigned int mtu)
{
	struct wg_device *dev = calloc(1, sizeof(*dev));
	pthread_rwlockattr_t attr;
	pthread_condattr_t cattr;
	const char *load = getenv("WEFT_TEST_UNDER_LOAD");

	if (!dev)
		return NULL;
	if (sodium_init() < 0)
		goto fail;
	randombytes_buf(peer_hash_key, sizeof(peer_hash_key));
	snprintf(dev->ifname, sizeof(dev->ifname), "%s", ifname);
	if (n < 1 || n > WG_MAX_WORKERS)
		n = 1;
	dev->n_workers = n;
	for (int i = 0; i < WG_MAX_WORKERS; i++) {
		dev->tun_fds[i] = i < n ? tun_fds[i] : -1;
		dev->cpus[i] = cpus && i < n ? cpus[i] : -1;
	}
	atomic_init(&dev->mtu, mtu);
	atomic_init(&dev->tun_nsid, -1);
	dev->tun_vnet = tun_vnet;
	wg_socket_init(&dev->sockets);
	/* Writers (configuration) are rare and must not starve behind a busy
	 * data path that re-takes the shared lock every batch. */
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	wg_rwlock_init(&dev->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	pthread_mutex_init(&dev->timer_lock, NULL);
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&dev->timer_cond, &cattr);
	pthread_condattr_destroy(&cattr);
	dev->force_under_load = load && !strcmp(load, "1");

	dev->identity = sodium_malloc(sizeof(*dev->identity));
	dev->allowed_ips = rt_table_new();
	if (!dev->identity || !dev->allowed_ips)
		goto fail;
	memset(dev->identity, 0, sizeof(*dev->identity));
	wg_index_init(&dev->index);
	wg_cookie_checker_init(&dev->cookie_checker);
	if (wg_ratelimiter_init(&dev->ratelimiter) || wg_handshake_init(&dev->hsq))
		goto fail;
	/* WEFT_UDP_GRO=0 / WEFT_UDP_GSO=0 turn the UDP offloads off. */
	if (getenv("WEFT_UDP_GRO") && !strcmp(getenv("WEFT_UDP_GRO"), "0"))
		dev->socket_flags |= WG_SOCKET_NO_GRO;
	if (getenv("WEFT_UDP_GSO") && !strcmp(getenv("WEFT_UDP_GSO"), "0"))
		dev->socket_flags |= WG_SOCKET_NO_GSO;
	if (wg_socket_open(&dev->sockets, n, 0, 0, dev->socket_flags))
		goto fail;
	if (!dev->sockets.gro)
		log_info("UDP GRO unavailable: one datagram per receive");
	if (!dev->sockets.gso)
		log_info("UDP GSO unavailable: one datagram per send");
	dev->listen_port = dev->sockets.port;
	return dev;
fail:
	wg_device_free(dev);
	return NULL;
}

int wg_device_start(struct wg_device *dev)
{
	int err = wg_handshake_start(dev);

	if (err)
		return err;
	err = pthread_create(&dev->timer_thread, NULL, timer_thread, dev);
	if (err)
		return -err;
	dev->running = true;
	return 0;
}

void wg_device_stop(struct wg_device *dev)
{
	atomic_store(&dev->stopping, true);
	dev->running = false;
	wg_handshake_stop(dev);
	pthread_mutex_lock(&dev->timer_lock);
	pthread_cond_broadcast(&dev->timer_cond);
	pthread_mutex_unlock(&dev->timer_lock);
	if (dev->timer_thread) {
		pthread_join(dev->timer_thread, NULL);
		dev->timer_thread = 0;
	}
}

void wg_device_free(struct wg_device *dev)
{
	if (!dev)
		return;
	if (dev->identity) {
		wg_rwlock_wrlock(&dev->lock);
		remove_all_peers(dev);
		wg_rwlock_unlock(&dev->lock);
		sodium_free(dev->identity);
	}
	if (dev->allowed_ips)
		rt_table_free(dev->allowed_ips);
	wg_socket_close(&dev->sockets);
	wg_handshake_destroy(&dev->hsq);
	wg_ratelimiter_destroy(&dev->ratelimiter);
	wg_cookie_checker_destroy(&dev->cookie_checker);
	wg_index_destroy(&dev->index);
	for (int i = 0; i < WG_MAX_WORKERS; i++)
		if (dev->tun_fds[i] >= 0)
			close(dev->tun_fds[i]);
	wg_rwlock_destroy(&dev->lock);
	free(dev);
}
