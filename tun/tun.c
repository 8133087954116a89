/* Opening the TUN character device: one fd per queue of a layer-3 tunnel
 * interface whose packets carry no extra protocol-information header.
 * Link configuration (MTU, up/down) lives in netlink.c. */
#include "tun/tun.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define TUN_CLONE_DEV "/dev/net/tun"

/* Copies ifname into the ifreq, refusing names the kernel would otherwise
 * truncate or reject with a less telling EINVAL. NULL or "" leaves the name
 * empty so that the kernel picks "tun%d". */
static int fill_name(struct ifreq *ifr, const char *ifname)
{
	size_t len;

	if (!ifname)
		return 0;
	len = strlen(ifname);
	if (len >= IFNAMSIZ)
		return -ENAMETOOLONG;
	memcpy(ifr->ifr_name, ifname, len);
	return 0;
}

/* Opens the clone device and binds the fd to an interface with flags.
 * On success the kernel's final name is copied to name_out (if given). */
static int attach(const char *ifname, short flags, char *name_out)
{
	struct ifreq ifr;
	int fd, err;

	memset(&ifr, 0, sizeof(ifr));
	err = fill_name(&ifr, ifname);
	if (err < 0)
		return err;
	ifr.ifr_flags = flags;

	fd = open(TUN_CLONE_DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	if (name_out) {
		/* The kernel always NUL-terminates ifr_name, but do not rely on
		 * it for a buffer the caller sized as IFNAMSIZ. */
		memcpy(name_out, ifr.ifr_name, IFNAMSIZ);
		name_out[IFNAMSIZ - 1] = '\0';
	}
	return fd;
}

int tun_open(const char *ifname, char *name_out, bool multi_queue)
{
	return tun_open_vnet(ifname, name_out, multi_queue, false);
}

int tun_open_vnet(const char *ifname, char *name_out, bool multi_queue, bool vnet_hdr)
{
	short flags = IFF_TUN | IFF_NO_PI;

	if (multi_queue)
		flags |= IFF_MULTI_QUEUE;
	if (vnet_hdr)
		flags |= IFF_VNET_HDR;
	return attach(ifname, flags, name_out);
}

int tun_set_offload(int fd, unsigned int flags)
{
	return ioctl(fd, TUNSETOFFLOAD, (unsigned long)flags) < 0 ? -errno : 0;
}

int tun_open_queue(const char *ifname, bool vnet_hdr)
{
	short flags = IFF_TUN | IFF_NO_PI | IFF_MULTI_QUEUE;
	struct ifreq ifr;
	int fd, err;

	/* TUNSETIFF creates the interface when the name is unknown; a queue
	 * for a device that is already gone must fail instead. A device that
	 * vanishes between this check and the ioctl yields a fresh,
	 * non-persistent one that dies with this fd, which is harmless. */
	if (!ifname || !*ifname || strchr(ifname, '%'))
		return -EINVAL;
	if (strlen(ifname) >= IFNAMSIZ)
		return -ENAMETOOLONG;
	if (if_nametoindex(ifname) == 0)
		return -ENODEV;

	if (vnet_hdr)
		flags |= IFF_VNET_HDR;
	fd = attach(ifname, flags, NULL);
	if (fd < 0)
		return fd;

	/* The vnet-header flag belongs to the device. Recent kernels keep the
	 * value chosen at creation and ignore the one asked for here, so a
	 * queue whose packets would not have the layout the caller expects
	 * is refused rather than handed out. */
	memset(&ifr, 0, sizeof(ifr));
	if (ioctl(fd, TUNGETIFF, &ifr) < 0) {
		err = -errno;
		goto fail;
	}
	if (!(ifr.ifr_flags & IFF_VNET_HDR) != !vnet_hdr) {
		err = -EINVAL;
		goto fail;
	}
	return fd;

fail:
	close(fd);
	return err;
}

int tun_open_tap(const char *ifname, int *fds, int n)
{
	short flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | IFF_MULTI_QUEUE;
	char name[IFNAMSIZ];
	int i, err;

	if (!ifname || !*ifname || strchr(ifname, '%') || n < 1)
		return -EINVAL;
	if (strlen(ifname) >= IFNAMSIZ)
		return -ENAMETOOLONG;
	/* TUNSETIFF would attach to a tap that exists already: someone
	 * else's netdev is not ours to serve. */
	if (if_nametoindex(ifname))
		return -EEXIST;
	for (i = 0; i < n; i++) {
		fds[i] = attach(ifname, flags, name);
		if (fds[i] < 0) {
			err = fds[i];
			goto fail;
		}
	}
	return 0;

fail:
	while (i--)
		close(fds[i]);
	return err;
}
