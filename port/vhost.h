/* The control side of a vhost-user port: the socket (listening in server
 * mode, connecting in client mode), the frontend's messages, and the device
 * state they build (tun/vhost_user.h). One thread per port; it applies each
 * message under the device's write lock, so workers never see a ring half
 * set up, and then bumps the device's port generation so that workers
 * re-read which rings they serve. */
#ifndef WEFT_PORT_VHOST_H
#define WEFT_PORT_VHOST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "tun/vhost_user.h"

struct wg_device;
struct wg_port;

enum { WG_VHOST_RECONNECT_MS = 1000 }; /* client mode: retry interval */

struct wg_vhost {
	struct vhu_dev vdev;           /* changed under the device write lock */
	int listen_fd;                 /* server mode, else -1 */
	int conn_fd;                   /* the frontend, -1: none */
	int wake_fd;                   /* eventfd: stop, or a worker found a broken ring */
	pthread_t thread;
	bool thread_started;
	_Atomic bool stop;
	_Atomic bool broken;           /* a worker saw virtq_pop say -EIO */
	_Atomic bool connected;
	/* Frontends dropped because a message, or the reply to one, stalled
	 * past the socket's I/O wait (tun/vhost_user.c IO_WAIT_MS). */
	_Atomic uint64_t stalls;
	/* Frontends dropped because a file of their guest memory shrank under
	 * weftd (a SIGBUS caught by tun/guestmem.c). */
	_Atomic uint64_t memory_faults;
	/* Guest RX rings (even) may be written by any worker: one lock each. */
	pthread_spinlock_t rx_lock[VHU_MAX_QUEUE_PAIRS];
};

/* Opens the socket (listen or first connect attempt) and starts the
 * thread. 0 or -errno. */
int wg_vhost_start(struct wg_device *dev, struct wg_port *port);
/* Stops the thread (no lock held: it takes the device lock), leaving the
 * guest's memory mapped for workers that may still be running. */
void wg_vhost_halt(struct wg_port *port);
/* wg_vhost_halt, then closes and unmaps everything (no worker serves the
 * port any more). */
void wg_vhost_stop(struct wg_port *port);
/* From a worker: the frontend broke a ring rule; disconnect it. */
void wg_vhost_report_broken(struct wg_port *port);

#endif
