/* Loading and feeding the same-host bypass (port/bypass.bpf.c, embedded
 * in this file by its bpftool skeleton: no object file to install). */
#include "port/bypass.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "port/bypass_maps.h"
#include "wg/log.h"

#include "bypass.skel.h"

/* Not in libbpf 1.1's headers; the kernel has had it since 6.6. */
enum { BYPASS_TCX_INGRESS = 46 };

_Static_assert((int)BYPASS_MAX_PORTS == (int)PORT_MAX, "a port's slot indexes the stats map");

/* How the program sits on one port's netdev. */
struct attachment {
	int ifindex;                 /* 0: nothing attached */
	int link_fd;                 /* tcx: the link, closing it detaches */
	bool clsact;                 /* the fallback: a clsact filter */
};

struct port_bypass {
	struct bypass_bpf *skel;
	int n_cpus;
	struct attachment at[PORT_MAX];
};

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

struct port_bypass *port_bypass_open(void)
{
	const char *env = getenv("WEFT_BPF");
	struct port_bypass *b;
	int err;

	if (env && !strcmp(env, "0")) {
		log_info("bypass: off (WEFT_BPF=0): VM-to-VM frames go through userspace");
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	libbpf_set_print(libbpf_quiet);
	b->n_cpus = libbpf_num_possible_cpus();
	b->skel = bypass_bpf__open_and_load();
	err = b->skel ? 0 : -errno;
	if (err || b->n_cpus <= 0) {
		log_info("bypass: cannot load the BPF program (%s): VM-to-VM frames go through "
			 "userspace",
			 strerror(err ? -err : EINVAL));
		port_bypass_close(b);
		return NULL;
	}
	log_info("bypass: loaded");
	return b;
}

void port_bypass_close(struct port_bypass *b)
{
	if (!b)
		return;
	for (int i = 0; i < PORT_MAX; i++)
		port_bypass_detach(b, i);
	if (b->skel)
		bypass_bpf__destroy(b->skel);
	free(b);
}

/* The clsact fallback (kernels before tcx): lost if the netdev changes
 * namespace, which an attached port's netdev does not. */
static int attach_clsact(struct port_bypass *b, int ifindex)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = 1, .priority = 1,
			    .prog_fd = bpf_program__fd(b->skel->progs.weft_bypass));
	int err = bpf_tc_hook_create(&hook);

	if (err && err != -EEXIST)
		return err;
	return bpf_tc_attach(&hook, &opts);
}

static void detach_clsact(int ifindex)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = 1, .priority = 1);

	bpf_tc_detach(&hook, &opts);
}

int port_bypass_attach(struct port_bypass *b, int slot, int ifindex, const uint8_t router_mac[6])
{
	struct bypass_port port = { .slot = (uint32_t)slot };
	struct bypass_stats *zero;
	struct attachment *at;
	uint32_t key = (uint32_t)ifindex, s = (uint32_t)slot;
	int err, fd;

	if (!b || slot < 0 || slot >= PORT_MAX)
		return -EINVAL;
	at = &b->at[slot];
	port_bypass_detach(b, slot);
	memcpy(port.router_mac, router_mac, 6);
	/* A reused slot starts from zero. */
	zero = calloc((size_t)b->n_cpus, sizeof(*zero));
	if (!zero)
		return -ENOMEM;
	err = bpf_map_update_elem(bpf_map__fd(b->skel->maps.stats), &s, zero, BPF_ANY) ? -errno : 0;
	free(zero);
	if (!err && bpf_map_update_elem(bpf_map__fd(b->skel->maps.ports), &key, &port, BPF_ANY))
		err = -errno;
	if (err)
		return err;
	fd = bpf_link_create(bpf_program__fd(b->skel->progs.weft_bypass), ifindex,
			     (enum bpf_attach_type)BYPASS_TCX_INGRESS, NULL);
	if (fd >= 0) {
		*at = (struct attachment){ .ifindex = ifindex, .link_fd = fd };
		return 0;
	}
	err = attach_clsact(b, ifindex);
	if (err) {
		bpf_map_delete_elem(bpf_map__fd(b->skel->maps.ports), &key);
		return err;
	}
	log_info("bypass: no tcx link on ifindex %d, a clsact filter instead", ifindex);
	*at = (struct attachment){ .ifindex = ifindex, .link_fd = -1, .clsact = true };
	return 0;
}

void port_bypass_detach(struct port_bypass *b, int slot)
{
	struct attachment *at;
	uint32_t key;

	if (!b || slot < 0 || slot >= PORT_MAX || !b->at[slot].ifindex)
		return;
	at = &b->at[slot];
	key = (uint32_t)at->ifindex;
	if (at->clsact)
		detach_clsact(at->ifindex);
	else
		close(at->link_fd);
	bpf_map_delete_elem(bpf_map__fd(b->skel->maps.ports), &key);
	*at = (struct attachment){ 0 };
}

/* The trie and key of a: key points into k4 or k6. */
static int route_key(struct port_bypass *b, const struct ip_prefix *a, struct bypass_key4 *k4,
		     struct bypass_key6 *k6, const void **key)
{
	if (a->family == AF_INET) {
		k4->prefixlen = a->cidr;
		memcpy(k4->addr, a->addr, 4);
		*key = k4;
		return bpf_map__fd(b->skel->maps.routes4);
	}
	k6->prefixlen = a->cidr;
	memcpy(k6->addr, a->addr, 16);
	*key = k6;
	return bpf_map__fd(b->skel->maps.routes6);
}

int port_bypass_route_add(struct port_bypass *b, const struct ip_prefix *a, int slot, int ifindex,
			  const uint8_t vm_mac[6], const uint8_t router_mac[6], bool is_veth)
{
	struct bypass_dest d = { .ifindex = (uint32_t)ifindex, .is_veth = is_veth,
				 .slot = (uint16_t)slot };
	struct bypass_key4 k4;
	struct bypass_key6 k6;
	const void *key;
	int fd;

	if (!b)
		return 0;
	memcpy(d.vm_mac, vm_mac, 6);
	memcpy(d.router_mac, router_mac, 6);
	fd = route_key(b, a, &k4, &k6, &key);
	return bpf_map_update_elem(fd, key, &d, BPF_ANY) ? -errno : 0;
}

void port_bypass_route_del(struct port_bypass *b, const struct ip_prefix *a)
{
	struct bypass_key4 k4;
	struct bypass_key6 k6;
	const void *key;
	int fd;

	if (!b)
		return;
	fd = route_key(b, a, &k4, &k6, &key);
	bpf_map_delete_elem(fd, key);
}

void port_bypass_stats(struct port_bypass *b, int slot, uint64_t *packets, uint64_t *bytes,
		       uint64_t *spoofed)
{
	struct bypass_stats *per_cpu;
	uint32_t key = (uint32_t)slot;

	*packets = *bytes = *spoofed = 0;
	if (!b || slot < 0 || slot >= PORT_MAX || !b->at[slot].ifindex)
		return;
	per_cpu = calloc((size_t)b->n_cpus, sizeof(*per_cpu));
	if (per_cpu && !bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.stats), &key, per_cpu)) {
		for (int i = 0; i < b->n_cpus; i++) {
			*packets += per_cpu[i].packets;
			*bytes += per_cpu[i].bytes;
			*spoofed += per_cpu[i].spoofed;
		}
	}
	free(per_cpu);
}

int port_bypass_prog_fd(struct port_bypass *b)
{
	return b ? bpf_program__fd(b->skel->progs.weft_bypass) : -EINVAL;
}
