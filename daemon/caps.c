/* Capability dropping with the raw capset(2)/prctl(2) interface, so weftd
 * needs no libcap. What stays and why is documented in caps.h and in
 * docs/security.md. */
#include "daemon/caps.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/* NET_RAW and BPF: attached ports' NDP/ARP packet sockets and the bypass.
 * CHOWN: a vhost-user socket handed to the VMM's user or group
 * (socket-owner, socket-group). */
static const int keep[] = { CAP_NET_ADMIN, CAP_NET_BIND_SERVICE, CAP_NET_RAW, CAP_BPF, CAP_CHOWN };

static int kept(int cap)
{
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (keep[i] == cap)
			return 1;
	return 0;
}

int caps_drop_to_runtime(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { { 0 } };
	struct __user_cap_data_struct have[_LINUX_CAPABILITY_U32S_3] = { { 0 } };

	for (int cap = 0; cap <= CAP_LAST_CAP; cap++) {
		if (kept(cap))
			continue;
		/* EINVAL: the running kernel does not know this one. */
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) && errno != EINVAL && errno != EPERM)
			return -errno;
	}
	/* Of the kept ones, those the process has: started without some (a
	 * unit's CapabilityBoundingSet=), it runs without what they serve. */
	if (syscall(SYS_capget, &hdr, have))
		return -errno;
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		uint32_t bit = 1u << (keep[i] % 32);

		if (!(have[keep[i] / 32].permitted & bit))
			continue;
		data[keep[i] / 32].effective |= bit;
		data[keep[i] / 32].permitted |= bit;
	}
	hdr.pid = 0;
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return 0;
}
