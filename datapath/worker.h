/* A data-path worker: one io_uring that reads the TUN and the UDP sockets,
 * seals and opens in batches, and writes back, with one submission system
 * call per batch rather than per packet. */
#ifndef WEFT_DATAPATH_WORKER_H
#define WEFT_DATAPATH_WORKER_H

#include <stdbool.h>
#include <stdint.h>

struct wg_device;
struct wg_worker;

/* Worker id serves TUN queue tun_fd and socket pair id, pinned to cpu
 * (-1: not pinned). 0 or -errno. The worker runs until wg_worker_stop. */
int wg_worker_start(struct wg_device *dev, int id, int tun_fd, int cpu, struct wg_worker **out);
/* Wakes the worker to notice new sockets or a stop. */
void wg_worker_kick(struct wg_worker *w);
void wg_worker_stop(struct wg_worker *w);

/* What a worker has done, for the metrics (read from any thread). The
 * average batch is completions / turns. */
struct wg_worker_counters {
	uint64_t turns;       /* loop turns that handled completions */
	uint64_t completions; /* io_uring completions handled */
	bool gso;             /* still sending with UDP GSO (off after an EIO) */
};
void wg_worker_read_counters(struct wg_worker *w, struct wg_worker_counters *c);

#endif
