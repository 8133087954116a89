/* A real device for the mesh's tests (test_mesh_tenants, test_mesh_move):
 * this host and n peers, peer i owning 10.10.i.0/24, the mesh on
 * 10.77.0.0/16 in unicast mode, a direct sender (nothing is sealed: no
 * peer has a session). */
#ifndef WEFT_TESTS_MESH_DEVICE_H
#define WEFT_TESTS_MESH_DEVICE_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "mesh/mesh.h"
#include "port/ports.h"
#include "wg/clock.h"
#include "wg/config.h"
#include "wg/device.h"
#include "wg/log.h"
#include "wg/noise.h"
#include "wg/send.h"

#define CHECK(cond) do {                                                      \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: check failed: %s\n",         \
				__FILE__, __LINE__, #cond);                   \
			exit(1);                                              \
		}                                                             \
	} while (0)

static inline void mesh_test_key_pair(int i, uint8_t pub[WG_KEY_LEN], uint8_t priv[WG_KEY_LEN])
{
	struct wg_noise_identity id;

	for (size_t b = 0; b < WG_KEY_LEN; b++)
		priv[b] = (uint8_t)(0x29 * (i + 1) + 11 * b);
	wg_noise_identity_set(&id, priv);
	memcpy(pub, id.static_public, WG_KEY_LEN);
	sodium_memzero(&id, sizeof(id));
}

/* The device named name with n peers, whose public keys go to pubs[i],
 * on a stopped clock (no bucket refills, no lookup times out between a
 * test's steps) with the log silent. */
static inline struct wg_device *mesh_test_device(const char *name, int n,
						 uint8_t (*pubs)[WG_KEY_LEN], struct wg_tx *tx)
{
	struct wg_device_config cfg = { 0 };
	struct mesh_config mc = { .mode = MESH_UNICAST, .n_prefixes = 1 };
	uint8_t pub[WG_KEY_LEN], priv[WG_KEY_LEN];
	struct wg_device *dev;
	int fd;

	CHECK(sodium_init() >= 0);
	wg_log_set_level(WG_LOG_SILENT);
	wg_clock_init();
	wg_clock_test_hold(1000 * NSEC_PER_SEC, 1700000000ull * NSEC_PER_SEC);
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	dev = wg_device_new(name, &fd, NULL, 1, false, WG_DEFAULT_MTU);
	CHECK(dev && port_table_new(dev) == 0);
	dev->hooks.peer_removed = mesh_peer_removed;
	dev->hooks.peer_up = mesh_peer_up;
	mesh_test_key_pair(n, pub, priv);
	cfg.has_private_key = true;
	memcpy(cfg.private_key, priv, WG_KEY_LEN);
	for (int i = 0; i < n; i++) {
		struct wg_peer_config *pc = wg_config_add_peer(&cfg);
		struct wg_allowed_ip *a;

		CHECK(pc);
		mesh_test_key_pair(i, pubs[i], priv);
		memcpy(pc->public_key, pubs[i], WG_KEY_LEN);
		CHECK((a = wg_config_add_allowed_ip(pc)));
		a->prefix = (struct ip_prefix){ .family = AF_INET, .cidr = 24,
						.addr = { 10, 10, (uint8_t)i, 0 } };
	}
	sodium_memzero(priv, sizeof(priv));
	CHECK(wg_device_set(dev, &cfg) == 0);
	wg_config_clear(&cfg);
	CHECK(mesh_new(dev, &dev->mesh) == 0);
	mc.prefixes[0] = (struct ip_prefix){ .family = AF_INET, .cidr = 16, .addr = { 10, 77 } };
	CHECK(mesh_set(dev, &mc) == 0);
	wg_tx_direct_init(tx, dev);
	return dev;
}

static inline struct mesh_stats mesh_test_stats(struct wg_device *dev)
{
	struct mesh_stats st;

	mesh_get(dev, NULL, &st);
	return st;
}

static inline void mesh_test_free(struct wg_device *dev)
{
	wg_rwlock_wrlock(&dev->lock);
	mesh_free(dev);
	port_table_free(dev);
	wg_rwlock_unlock(&dev->lock);
	wg_device_free(dev);
}

#endif
