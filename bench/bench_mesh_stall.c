/* How long the mesh thread stalls the data path (issue 16, "No stall of the
 * data path by the mesh"): the real mesh (mesh/mesh.c) on a real device
 * with PEERS peers, its rounds run here (mesh_run), and a reader thread
 * that does what a worker does per burst: take the device lock shared, look
 * addresses up, drop it. The reader records how long each wait for the lock
 * took; the longest is the data path's stall.
 *
 * Each round fills the mesh's inbox as the workers would (mesh_received: one
 * 16-entry ANNOUNCE after another, every peer its share) with addresses it
 * has never seen, so that the round learns and publishes 1,024 routes into a
 * table that grows to ROUNDS x 1,024 of them.
 *
 * usage: bench_mesh_stall [--quick]
 * Prints a Markdown table, then one JSON object. */
#include "bench_util.h"
#include "mesh/internal.h"
#include "mesh/mesh.h"
#include "mesh/msg.h"
#include "port/ports.h"
#include "router/table.h"
#include "wg/clock.h"
#include "wg/config.h"
#include "wg/device.h"
#include "wg/log.h"
#include "wg/noise.h"
#include "wg/peer.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

enum { PEERS = 16, BATCH = 32 };

static struct wg_device *dev;
static uint8_t peer_pub[PEERS][WG_KEY_LEN];
static _Atomic bool stop;
static _Atomic uint64_t worst_wait, waits, lookups;

static void die(const char *what)
{
	fprintf(stderr, "bench_mesh_stall: %s\n", what);
	exit(1);
}

/* A worker's bursts: lock, BATCH lookups of learned addresses, unlock. */
static void *reader(void *arg)
{
	uint32_t x = 1;
	struct sched_param sp = { .sched_priority = 1 };

	(void)arg;
	/* Real-time priority (root), so that on a busy machine the reader
	 * still runs beside the mesh thread and its waits are the lock's. */
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp))
		fprintf(stderr, "bench_mesh_stall: reader at normal priority (%s)\n",
			"no SCHED_FIFO: waits include the scheduler's");
	while (!atomic_load(&stop)) {
		uint64_t t0 = now_ns(), wait;

		wg_rwlock_rdlock(&dev->lock);
		wait = now_ns() - t0;
		for (int i = 0; i < BATCH; i++) {
			uint8_t a[4] = { 10, 90, 0, 0 };

			x = x * 1103515245u + 12345u;
			a[2] = (uint8_t)(x >> 16);
			a[3] = (uint8_t)(x >> 24);
			(void)rt_lookup(dev->allowed_ips, AF_INET, a);
		}
		wg_rwlock_unlock(&dev->lock);
		if (wait > atomic_load(&worst_wait))
			atomic_store(&worst_wait, wait);
		atomic_fetch_add(&waits, 1);
		atomic_fetch_add(&lookups, BATCH);
	}
	return NULL;
}

static void setup(void)
{
	struct wg_device_config cfg = { 0 };
	struct mesh_config mc = { .mode = MESH_UNICAST, .n_prefixes = 1 };
	struct wg_noise_identity id;
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	wg_log_set_level(WG_LOG_SILENT);
	wg_clock_init();
	if (sodium_init() < 0 || fd < 0)
		die("init");
	dev = wg_device_new("weftbench0", &fd, NULL, 1, false, WG_DEFAULT_MTU);
	if (!dev || port_table_new(dev) || mesh_new(dev, &dev->mesh))
		die("device");
	cfg.has_private_key = true;
	randombytes_buf(cfg.private_key, WG_KEY_LEN);
	for (int i = 0; i < PEERS; i++) {
		struct wg_peer_config *pc = wg_config_add_peer(&cfg);
		uint8_t priv[WG_KEY_LEN];

		if (!pc)
			die("config");
		randombytes_buf(priv, sizeof(priv));
		wg_noise_identity_set(&id, priv);
		memcpy(peer_pub[i], id.static_public, WG_KEY_LEN);
		memcpy(pc->public_key, peer_pub[i], WG_KEY_LEN);
	}
	if (wg_device_set(dev, &cfg))
		die("wg_device_set");
	wg_config_clear(&cfg);
	mc.prefixes[0] = (struct ip_prefix){ .family = AF_INET, .cidr = 8, .addr = { 10 } };
	if (mesh_set(dev, &mc))
		die("mesh_set");
}

/* One round's inbox: INBOX_MAX new addresses, from every peer in turn. */
static void fill_inbox(uint32_t *next_addr)
{
	size_t per_peer = INBOX_PER_PEER < INBOX_MAX / PEERS ? INBOX_PER_PEER : INBOX_MAX / PEERS;

	wg_rwlock_rdlock(&dev->lock);
	for (int p = 0; p < PEERS; p++) {
		struct wg_peer *peer = wg_device_lookup_peer(dev, peer_pub[p]);

		for (size_t done = 0; done < per_peer;) {
			struct mesh_msg msg = { .type = MESH_ANNOUNCE };
			uint8_t pkt[MESH_IP6_HLEN + 8 + MESH_MAX_ENTRIES * 64];
			size_t len;

			for (; msg.count < MESH_MAX_ENTRIES && done < per_peer; msg.count++, done++) {
				struct mesh_item *it = &msg.items[msg.count];
				uint32_t a = 0x0a5a0000u + (*next_addr)++; /* 10.90.x.y on */

				*it = (struct mesh_item){ .family = AF_INET, .cidr = 32,
							  .seq = wg_clock_realtime_ns() };
				it->addr[0] = (uint8_t)(a >> 24);
				it->addr[1] = (uint8_t)(a >> 16);
				it->addr[2] = (uint8_t)(a >> 8);
				it->addr[3] = (uint8_t)a;
			}
			len = mesh_msg_build(&msg, pkt, sizeof(pkt));
			if (!len)
				die("mesh_msg_build");
			mesh_received(dev, peer, pkt, (uint32_t)len);
		}
	}
	wg_rwlock_unlock(&dev->lock);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	int rounds = quick ? 50 : 300;
	uint64_t *stall = calloc((size_t)rounds, sizeof(*stall));
	uint64_t *run_ns = calloc((size_t)rounds, sizeof(*run_ns));
	uint32_t next_addr = 0;
	pthread_t t;
	struct mesh_stats st;

	if (!stall || !run_ns)
		die("memory");
	setup();
	if (pthread_create(&t, NULL, reader, NULL))
		die("thread");
	for (int r = 0; r < rounds; r++) {
		uint64_t t0;

		fill_inbox(&next_addr);
		usleep(2000); /* the reader at its pace again */
		atomic_store(&worst_wait, 0);
		t0 = now_ns();
		mesh_run(dev->mesh);
		run_ns[r] = now_ns() - t0;
		usleep(2000);
		stall[r] = atomic_load(&worst_wait);
	}
	atomic_store(&stop, true);
	pthread_join(t, NULL);
	mesh_get(dev, NULL, &st);
	qsort(stall, (size_t)rounds, sizeof(*stall), cmp_u64);
	qsort(run_ns, (size_t)rounds, sizeof(*run_ns), cmp_u64);
	printf("| rounds | routes learned | round p50 | round max | reader's longest wait p50 | p99 | max |\n");
	printf("|---:|---:|---:|---:|---:|---:|---:|\n");
	printf("| %d | %llu | %.0f µs | %.0f µs | %.0f µs | %.0f µs | %.0f µs |\n", rounds,
	       (unsigned long long)st.locations, run_ns[rounds / 2] / 1e3, run_ns[rounds - 1] / 1e3,
	       stall[rounds / 2] / 1e3, stall[rounds * 99 / 100] / 1e3, stall[rounds - 1] / 1e3);
	printf("{\"rounds\": %d, \"locations\": %llu, \"round_p50_us\": %.1f, \"round_max_us\": %.1f, "
	       "\"stall_p50_us\": %.1f, \"stall_p99_us\": %.1f, \"stall_max_us\": %.1f}\n",
	       rounds, (unsigned long long)st.locations, run_ns[rounds / 2] / 1e3,
	       run_ns[rounds - 1] / 1e3, stall[rounds / 2] / 1e3, stall[rounds * 99 / 100] / 1e3,
	       stall[rounds - 1] / 1e3);
	free(stall);
	free(run_ns);
	return 0;
}
