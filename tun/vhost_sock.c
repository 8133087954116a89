/* The vhost-user socket (tun/vhost_user.h): listening and connecting,
 * reading a frontend's messages with their fds, and sending replies. A
 * message is read whole or refused: its header and payload sizes are
 * checked before anything is read into them, and fds beyond what fits are
 * closed. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "tun/vhost_user.h"

enum {
	IO_WAIT_MS = 1000,     /* for the rest of a message already started */
	LISTEN_BACKLOG = 4,
};

/* Waits up to IO_WAIT_MS for fd to be ready. 0 or -errno. */
static int wait_fd(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };
	int n;

	do
		n = poll(&p, 1, IO_WAIT_MS);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n ? 0 : -ETIMEDOUT;
}

/* Reads exactly len bytes of a message already started. */
static int read_full(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	ssize_t n;
	int err;

	while (len) {
		n = read(fd, p, len);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		err = wait_fd(fd, POLLIN);
		if (err)
			return err;
	}
	return 0;
}

int vhu_read_msg(int fd, struct vhu_msg *msg)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VHU_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = &msg->hdr, .iov_len = sizeof(msg->hdr) };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl.buf,
		.msg_controllen = sizeof(ctl.buf),
	};
	struct cmsghdr *cm;
	ssize_t n;
	uint32_t i;
	int err = 0;

	msg->n_fds = 0;
	memset(&msg->payload, 0, sizeof(msg->payload));
	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return 0;

	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		size_t k, nfd;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < nfd; k++) {
			int f;

			memcpy(&f, CMSG_DATA(cm) + k * sizeof(int), sizeof(f));
			if (msg->n_fds < VHU_MAX_FDS)
				msg->fds[msg->n_fds++] = f;
			else
				close(f);
		}
	}
	/* More fds than the buffer holds: the kernel dropped the rest, so
	 * the message cannot be what the frontend meant. */
	if (mh.msg_flags & MSG_CTRUNC) {
		err = -EMSGSIZE;
		goto fail;
	}
	if ((size_t)n < sizeof(msg->hdr)) {
		err = read_full(fd, (uint8_t *)&msg->hdr + n, sizeof(msg->hdr) - (size_t)n);
		if (err)
			goto fail;
	}
	if ((msg->hdr.flags & VHU_FLAG_VERSION_MASK) != VHU_FLAG_VERSION ||
	    (msg->hdr.flags & VHU_FLAG_REPLY)) {
		err = -EBADMSG;
		goto fail;
	}
	if (msg->hdr.size > VHU_PAYLOAD_MAX) {
		err = -EMSGSIZE;
		goto fail;
	}
	err = read_full(fd, &msg->payload, msg->hdr.size);
	if (err)
		goto fail;
	return 1;
fail:
	for (i = 0; i < msg->n_fds; i++)
		close(msg->fds[i]);
	msg->n_fds = 0;
	return err;
}

int vhu_send_reply(int fd, const struct vhu_msg *reply)
{
	size_t size = reply->hdr.size <= VHU_PAYLOAD_MAX ? reply->hdr.size : VHU_PAYLOAD_MAX;
	struct iovec iov[2] = {
		{ .iov_base = (void *)&reply->hdr, .iov_len = sizeof(reply->hdr) },
		{ .iov_base = (void *)&reply->payload, .iov_len = size },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	ssize_t n;
	int err;

	while (iov[0].iov_len || iov[1].iov_len) {
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			err = wait_fd(fd, POLLOUT);
			if (err)
				return err;
			continue;
		}
		/* A short send: skip what went out. */
		while (n > 0 && mh.msg_iovlen) {
			size_t k = (size_t)n < mh.msg_iov->iov_len ? (size_t)n : mh.msg_iov->iov_len;

			mh.msg_iov->iov_base = (uint8_t *)mh.msg_iov->iov_base + k;
			mh.msg_iov->iov_len -= k;
			n -= (ssize_t)k;
			if (!mh.msg_iov->iov_len) {
				mh.msg_iov++;
				mh.msg_iovlen--;
			}
		}
		if (!mh.msg_iovlen)
			break;
	}
	return 0;
}

int vhu_handle_msg(struct vhu_dev *dev, int sock, struct vhu_result *res)
{
	struct vhu_msg msg, reply;
	int r;

	memset(res, 0, sizeof(*res));
	r = vhu_read_msg(sock, &msg);
	if (r == -EAGAIN)
		return r;
	if (r <= 0) {
		res->disconnect = true;
		res->why = r == 0 ? "frontend closed the connection" : "unreadable message";
		return r;
	}
	r = vhu_dispatch(dev, &msg, &reply, res);
	if (res->reply && vhu_send_reply(sock, &reply) < 0) {
		res->disconnect = true;
		res->why = "reply not sent";
	}
	return r;
}

static int unix_addr(const char *path, struct sockaddr_un *sa)
{
	size_t len = strlen(path);

	if (!len || len >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, len + 1);
	return 0;
}

/* Removes a socket file nobody listens on; a live socket or any other file
 * stays and is an error. */
static int remove_stale(const struct sockaddr_un *sa)
{
	struct stat st;
	int fd, err = 0;

	if (lstat(sa->sun_path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
		err = -EADDRINUSE;
	else if (errno != ECONNREFUSED)
		err = -errno;
	close(fd);
	if (!err && unlink(sa->sun_path) < 0 && errno != ENOENT)
		err = -errno;
	return err;
}

int vhu_listen(const char *path)
{
	struct sockaddr_un sa;
	int fd, err;

	err = unix_addr(path, &sa);
	if (err)
		return err;
	err = remove_stale(&sa);
	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Linux creates the socket file with the socket inode's mode (less
	 * the umask), so this makes it 0600 from the first moment, without
	 * touching the process-wide umask; the chmod repeats it in case. */
	if (fchmod(fd, 0600) < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	if (chmod(path, 0600) < 0 || listen(fd, LISTEN_BACKLOG) < 0) {
		err = -errno;
		unlink(path);
		close(fd);
		return err;
	}
	return fd;
}

int vhu_connect(const char *path)
{
	struct sockaddr_un sa;
	int fd, err;

	err = unix_addr(path, &sa);
	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}
