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
struct port;

enum { PORT_VHOST_RECONNECT_MS = 1000 }; /* client mode: retry interval */

struct port_vhost {
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

/* From a worker: the frontend broke a ring rule; disconnect it. */
void port_vhost_report_broken(struct port *port);

#endif
