/* One thread per vhost-user port: accept (or connect), read a message,
 * apply it with the workers held off, reply, and on disconnect reset the
 * device state so that the VMM can come back. */
#include "port/vhost.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "port/ports.h"
#include "wg/device.h"
#include "wg/log.h"

struct vhost_ctx {
	struct wg_device *dev;
	struct port *port;
};

/* Workers re-read the rings they serve at their next batch. */
static void rings_changed(struct wg_device *dev)
{
	atomic_fetch_add(&dev->ports->gen, 1);
	wg_device_kick(dev, -1);
}

static void disconnect(struct wg_device *dev, struct port *port, const char *why)
{
	struct port_vhost *v = port->vhost;

	wg_rwlock_wrlock(&dev->lock);
	vhu_dev_reset(&v->vdev);
	atomic_store(&v->connected, false);
	atomic_store(&v->broken, false);
	wg_rwlock_unlock(&dev->lock);
	close(v->conn_fd);
	v->conn_fd = -1;
	rings_changed(dev);
	log_info("port %s: vhost-user frontend disconnected (%s)", port->cfg.name, why);
}

static void connected(struct port *port, int fd)
{
	/* Non-blocking: a frontend that stalls mid-message is given a second
	 * (vhu_read_msg), not the port's thread and the device lock. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	port->vhost->conn_fd = fd;
	atomic_store(&port->vhost->connected, true);
	log_info("port %s: vhost-user frontend connected", port->cfg.name);
}

/* One message: read outside the lock (it may wait for a slow sender),
 * applied inside it, answered outside it again. */
static void serve_message(struct wg_device *dev, struct port *port)
{
	struct port_vhost *v = port->vhost;
	struct vhu_result res = { 0 };
	struct vhu_msg msg, reply;
	int r = vhu_read_msg(v->conn_fd, &msg);

	if (r == -EAGAIN)
		return;
	if (r == -ETIMEDOUT) {
		atomic_fetch_add(&v->stalls, 1);
		disconnect(dev, port, "stalled mid-message");
		return;
	}
	if (r <= 0) {
		disconnect(dev, port, r == 0 ? "closed by the frontend" : "unreadable message");
		return;
	}
	wg_rwlock_wrlock(&dev->lock);
	r = vhu_dispatch(&v->vdev, &msg, &reply, &res);
	wg_rwlock_unlock(&dev->lock);
	if (r < 0)
		log_ratelimited(WG_LOG_ERROR, "port %s: %s refused: %s", port->cfg.name,
				vhu_request_name(msg.hdr.request), res.why ? res.why : strerror(-r));
	if (res.reply) {
		r = vhu_send_reply(v->conn_fd, &reply);
		if (r == -ETIMEDOUT) {
			/* It does not read its replies. */
			atomic_fetch_add(&v->stalls, 1);
			res.why = "replies not read";
		}
		if (r < 0)
			res.disconnect = true;
	}
	if (res.disconnect) {
		disconnect(dev, port, res.why ? res.why : "protocol error");
		return;
	}
	if (res.changed)
		rings_changed(dev);
}

static void *vhost_thread(void *arg)
{
	struct vhost_ctx ctx = *(struct vhost_ctx *)arg;
	struct port *port = ctx.port;
	struct port_vhost *v = port->vhost;
	int timeout;

	free(arg);
	while (!atomic_load(&v->stop)) {
		struct pollfd pfd[2] = { { .fd = v->wake_fd, .events = POLLIN } };
		int sock = v->conn_fd >= 0 ? v->conn_fd : v->listen_fd;

		if (v->conn_fd < 0 && v->listen_fd < 0) {
			int fd = vhu_connect(port->cfg.path);

			if (fd >= 0)
				connected(port, fd);
			sock = fd;
		}
		pfd[1] = (struct pollfd){ .fd = sock, .events = POLLIN };
		timeout = sock < 0 ? PORT_VHOST_RECONNECT_MS : -1;
		if (poll(pfd, 2, timeout) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents) {
			uint64_t n;

			if (read(v->wake_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
				break;
			if (atomic_load(&v->vdev.guard.faulted) && v->conn_fd >= 0) {
				/* Its regions are zero pages now; nothing of the
				 * guest's is left to serve. */
				atomic_fetch_add(&v->memory_faults, 1);
				disconnect(ctx.dev, port, "guest memory shrank under weftd (SIGBUS caught)");
			}
			if (atomic_load(&v->broken) && v->conn_fd >= 0)
				disconnect(ctx.dev, port, "the guest broke a ring rule");
			continue;
		}
		if (!pfd[1].revents)
			continue;
		if (v->conn_fd >= 0) {
			serve_message(ctx.dev, port);
		} else {
			int fd = accept4(v->listen_fd, NULL, NULL, SOCK_CLOEXEC);

			if (fd >= 0)
				connected(port, fd);
		}
	}
	return NULL;
}

/* The listening socket is created 0600 root; a port may give it to the
 * VMM's user and group (QEMU under libvirt runs as libvirt-qemu) and a
 * wider mode. Mode first, while root still owns it (changing the mode of
 * another user's file would take CAP_FOWNER), owner second: at no moment
 * is it open to more than the final owner and group. */
static int hand_over_socket(const struct port_config *cfg)
{
	int err;

	if (cfg->socket_mode && chmod(cfg->path, cfg->socket_mode) < 0) {
		err = -errno;
		log_error("port %s: cannot set mode %04o on %s: %s", cfg->name, cfg->socket_mode,
			  cfg->path, strerror(-err));
		goto fail;
	}
	if ((cfg->has_socket_uid || cfg->has_socket_gid) &&
	    chown(cfg->path, cfg->has_socket_uid ? (uid_t)cfg->socket_uid : (uid_t)-1,
		  cfg->has_socket_gid ? (gid_t)cfg->socket_gid : (gid_t)-1) < 0) {
		err = -errno;
		log_error("port %s: cannot give %s to %d:%d: %s", cfg->name, cfg->path,
			  cfg->has_socket_uid ? (int)cfg->socket_uid : -1,
			  cfg->has_socket_gid ? (int)cfg->socket_gid : -1, strerror(-err));
		goto fail;
	}
	return 0;
fail:
	unlink(cfg->path);
	return err;
}

/* Opens the socket (listen or first connect attempt) and starts the
 * thread. 0 or -errno. */
static int vhost_start(struct wg_device *dev, struct port *port)
{
	struct port_vhost *v = calloc(1, sizeof(*v));
	struct vhost_ctx *ctx = calloc(1, sizeof(*ctx));
	int err;

	if (!v || !ctx) {
		free(v);
		free(ctx);
		return -ENOMEM;
	}
	port->vhost = v;
	vhu_dev_init(&v->vdev, VHU_FEATURES_DEFAULT, (uint32_t)dev->n_workers);
	for (int i = 0; i < VHU_MAX_QUEUE_PAIRS; i++)
		pthread_spin_init(&v->rx_lock[i], PTHREAD_PROCESS_PRIVATE);
	v->conn_fd = -1;
	v->listen_fd = -1;
	v->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (v->wake_fd < 0) {
		free(ctx);
		return -errno;
	}
	/* A frontend may truncate the files of its guest memory: the guard
	 * turns the SIGBUS of the next access into a wake-up of this thread. */
	err = guestmem_guard_install();
	if (err) {
		free(ctx);
		return err;
	}
	atomic_store(&v->vdev.guard.wake_fd, v->wake_fd);
	if (port->cfg.server) {
		v->listen_fd = vhu_listen(port->cfg.path);
		if (v->listen_fd < 0) {
			free(ctx);
			return v->listen_fd;
		}
		err = hand_over_socket(&port->cfg);
		if (err) {
			free(ctx);
			return err;
		}
	}
	ctx->dev = dev;
	ctx->port = port;
	err = pthread_create(&v->thread, NULL, vhost_thread, ctx);
	if (err) {
		free(ctx);
		return -err;
	}
	v->thread_started = true;
	return 0;
}

static void wake(struct port_vhost *v)
{
	uint64_t one = 1;

	if (write(v->wake_fd, &one, sizeof(one)) < 0)
		log_error("cannot wake a vhost-user thread: %s", strerror(errno));
}

void port_vhost_report_broken(struct port *port)
{
	if (!atomic_exchange(&port->vhost->broken, true))
		wake(port->vhost);
}

/* Stops the thread (no lock held: it takes the device lock), leaving the
 * guest's memory mapped for workers that may still be running. */
static void vhost_halt(struct port *port)
{
	struct port_vhost *v = port->vhost;

	if (!v || !v->thread_started)
		return;
	atomic_store(&v->stop, true);
	wake(v);
	pthread_join(v->thread, NULL);
	v->thread_started = false;
}

/* vhost_halt, then closes and unmaps everything (no worker serves the
 * port any more). */
static void vhost_stop(struct port *port)
{
	struct port_vhost *v = port->vhost;

	if (!v)
		return;
	vhost_halt(port);
	vhu_dev_free(&v->vdev);
	if (v->conn_fd >= 0)
		close(v->conn_fd);
	if (v->listen_fd >= 0) {
		close(v->listen_fd);
		unlink(port->cfg.path);
	}
	if (v->wake_fd >= 0)
		close(v->wake_fd);
	for (int i = 0; i < VHU_MAX_QUEUE_PAIRS; i++)
		pthread_spin_destroy(&v->rx_lock[i]);
	free(v);
	port->vhost = NULL;
}

static void vhost_info(struct wg_device *dev, const struct port *port, struct port_info *info)
{
	info->connected = atomic_load(&port->vhost->connected);
	info->frontend_stalls = atomic_load(&port->vhost->stalls);
	info->memory_faults = atomic_load(&port->vhost->memory_faults);
}

const struct port_class port_vhost_class = {
	.type = PORT_VHOST_USER,
	.open = vhost_start,
	.info = vhost_info,
	.halt = vhost_halt,
	.release = vhost_stop,
};
