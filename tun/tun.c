/* Opening the TUN character device: one fd per queue of a layer-3 tunnel
 * interface whose packets carry no extra protocol-information header.
 * Link configuration (MTU, up/down) lives in netlink.c. */
#include "tun/tun.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <net/if_arp.h>
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

int tun_set_mac(int fd, const uint8_t mac[6])
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_hwaddr.sa_family = ARPHRD_ETHER;
	memcpy(ifr.ifr_hwaddr.sa_data, mac, 6);
	return ioctl(fd, SIOCSIFHWADDR, &ifr) < 0 ? -errno : 0;
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

static uint32_t load32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

unsigned int tun_queue_for(const uint8_t *ip, size_t len, unsigned int n)
{
	const uint8_t *ports = NULL;
	uint64_t h = 0;
	uint8_t proto;

	if (n < 2 || len < 20)
		return 0;
	if ((ip[0] >> 4) == 4) {
		size_t ihl = (size_t)(ip[0] & 0x0f) * 4;
		bool fragment = (load32(ip + 4) & htobe32(0x3fff)) != 0; /* MF or offset */

		proto = ip[9];
		h = (uint64_t)load32(ip + 12) << 32 | load32(ip + 16);
		if (!fragment && ihl >= 20 && len >= ihl + 4)
			ports = ip + ihl;
	} else if ((ip[0] >> 4) == 6 && len >= 40) {
		proto = ip[6];
		for (int i = 8; i < 40; i += 4)
			h = (h ^ load32(ip + i)) * 0x9e3779b97f4a7c15ull;
		if (len >= 44)
			ports = ip + 40;
	} else {
		return 0;
	}
	if (ports && (proto == 6 || proto == 17))
		h ^= load32(ports);
	h ^= proto;
	h *= 0x9e3779b97f4a7c15ull;
	return (unsigned int)((h >> 32) % n);
}
