/* Adding, removing and listing VM ports. The control thread opens a port's
 * queues before it takes the device lock and publishes the port in one
 * step under it; workers notice the changed generation at their next batch
 * and start (or stop) serving the port's queues. */
#include "port/ports.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "port/attached.h"
#include "wg/device.h"
#include "wg/log.h"

enum { PORT_RELEASE_WAIT_MS = 5000 };

void port_get(struct port *port)
{
	atomic_fetch_add(&port->refs, 1);
}

void port_put(struct port *port)
{
	if (atomic_fetch_sub(&port->refs, 1) != 1)
		return;
	if (port->class && port->class->release)
		port->class->release(port);
	for (int i = 0; i < port->n_fds; i++)
		if (port->fds[i] >= 0)
			close(port->fds[i]);
	if (port->pkt_fd >= 0)
		close(port->pkt_fd);
	free(port);
}

void port_ndp_config(const struct port_config *cfg, struct ndp_port_config *ndp)
{
	static const uint8_t router_mac[6] = PORT_ROUTER_MAC_DEFAULT;
	static const uint8_t gateway4[4] = PORT_GATEWAY4_DEFAULT;

	ndp_port_config_init(ndp);
	memcpy(ndp->router_mac, cfg->has_router_mac ? cfg->router_mac : router_mac, 6);
	memcpy(ndp->vm_mac, cfg->vm_mac, 6);
	for (size_t i = 0; i < cfg->n_addrs; i++) {
		const struct ip_prefix *a = &cfg->addrs[i];

		if (a->family == AF_INET6 && a->cidr == 128 && ndp->n_vm_ip6 < NDP_MAX_ADDRS)
			memcpy(ndp->vm_ip6[ndp->n_vm_ip6++], a->addr, 16);
		else if (a->family == AF_INET && a->cidr == 32 && ndp->n_vm_ip4 < NDP_MAX_ADDRS)
			memcpy(ndp->vm_ip4[ndp->n_vm_ip4++], a->addr, 4);
		if (a->family == AF_INET)
			ndp->has_gateway4 = true;
	}
	if (ndp->has_gateway4)
		memcpy(ndp->gateway4, cfg->has_gateway4 ? cfg->gateway4 : gateway4, 4);
	ndp->mtu = cfg->mtu ? cfg->mtu : PORT_MTU_DEFAULT;
	/* Off-link prefixes: the VM sends everything to the router, which is
	 * what weft wants to see anyway (it answers every NS as a proxy). */
	for (size_t i = 0; i < cfg->n_prefixes && i < NDP_MAX_PREFIXES; i++) {
		struct ndp_prefix *p = &ndp->prefixes[ndp->n_prefixes++];

		memcpy(p->prefix, cfg->prefixes[i].addr, 16);
		p->len = cfg->prefixes[i].cidr;
		p->on_link = false;
		p->autonomous = p->len == 64;
		p->valid_lifetime_s = NDP_LIFETIME_INFINITE;
		p->preferred_lifetime_s = NDP_LIFETIME_INFINITE;
	}
}

static struct port *port_by_name(struct wg_device *dev, const char *name)
{
	for (int i = 0; i < PORT_MAX; i++)
		if (dev->ports->slot[i] && !strcmp(dev->ports->slot[i]->cfg.name, name))
			return dev->ports->slot[i];
	return NULL;
}

/* Another port registered one of cfg's prefixes already. */
static bool addresses_taken(struct wg_device *dev, const struct port_config *cfg)
{
	for (int i = 0; i < PORT_MAX; i++) {
		const struct port *other = dev->ports->slot[i];

		if (other && port_config_share_addr(&other->cfg, cfg))
			return true;
	}
	return false;
}

static const struct port_class *class_of(enum port_type type)
{
	switch (type) {
	case PORT_TAP:
		return &port_tap_class;
	case PORT_VHOST_USER:
		return &port_vhost_class;
	case PORT_ATTACHED:
		return &port_attached_class;
	}
	return NULL;
}

static struct port *port_new(struct wg_device *dev, const struct port_config *cfg, int *err)
{
	struct port *port = calloc(1, sizeof(*port));

	*err = -ENOMEM;
	if (!port)
		return NULL;
	port->class = class_of(cfg->type);
	port->hop.kind = RT_HOP_PORT;
	port->cfg = *cfg;
	if (!port->cfg.mtu)
		port->cfg.mtu = PORT_MTU_DEFAULT;
	port_ndp_config(&port->cfg, &port->ndp);
	memcpy(port->cfg.router_mac, port->ndp.router_mac, 6);
	port->cfg.has_router_mac = true;
	if (port->ndp.has_gateway4) {
		memcpy(port->cfg.gateway4, port->ndp.gateway4, 4);
		port->cfg.has_gateway4 = true;
	}
	for (int i = 0; i < WG_MAX_WORKERS; i++)
		port->fds[i] = -1;
	port->pkt_fd = -1;
	atomic_init(&port->refs, 1);
	if (ndp_port_config_check(&port->ndp)) {
		*err = -EINVAL;
		goto fail;
	}
	*err = port->class ? port->class->open(dev, port) : -EINVAL;
	if (*err)
		goto fail;
	return port;
fail:
	port_put(port);
	return NULL;
}

/* With the write lock: the port's prefixes into the forwarding table, the
 * port into a free slot. */
static int publish(struct wg_device *dev, struct port *port)
{
	int slot = -1, err = 0;
	size_t i;

	if (port_by_name(dev, port->cfg.name) || addresses_taken(dev, &port->cfg))
		return -EEXIST;
	for (int s = 0; s < PORT_MAX && slot < 0; s++)
		if (!dev->ports->slot[s])
			slot = s;
	if (slot < 0)
		return -ENOSPC;
	for (i = 0; i < port->cfg.n_addrs && !err; i++) {
		const struct ip_prefix *a = &port->cfg.addrs[i];

		err = rt_insert(dev->allowed_ips, a->family, a->addr, a->cidr, &port->hop);
	}
	if (err) {
		rt_remove_value(dev->allowed_ips, &port->hop);
		return err;
	}
	port->slot = slot;
	port->seq = dev->ports->seq++;
	dev->ports->slot[slot] = port;
	atomic_fetch_add(&dev->ports->gen, 1);
	return 0;
}

/* With the write lock: the port out of the tables (and off its netdev). */
static void unpublish(struct wg_device *dev, struct port *port)
{
	rt_remove_value(dev->allowed_ips, &port->hop);
	dev->ports->slot[port->slot] = NULL;
	atomic_fetch_add(&dev->ports->gen, 1);
	if (port->class->unpublished)
		port->class->unpublished(dev, port);
}

int port_add(struct wg_device *dev, const struct port_config *cfg)
{
	const char *why = NULL;
	struct port *port;
	int err;

	if (port_config_check(cfg, &why)) {
		log_error("port %s: %s", cfg->name, why ? why : "invalid configuration");
		return -EINVAL;
	}
	/* Cheap checks first, so a duplicate never touches the netdevs. */
	wg_rwlock_rdlock(&dev->lock);
	err = port_by_name(dev, cfg->name) || addresses_taken(dev, cfg) ? -EEXIST : 0;
	wg_rwlock_unlock(&dev->lock);
	if (err)
		return err;
	port = port_new(dev, cfg, &err);
	if (!port) {
		log_error("port %s: cannot open: %s", cfg->name, strerror(-err));
		return err;
	}
	wg_rwlock_wrlock(&dev->lock);
	err = publish(dev, port);
	if (!err && port->class->published) {
		err = port->class->published(dev, port);
		if (err)
			unpublish(dev, port);
	}
	wg_rwlock_unlock(&dev->lock);
	if (err) {
		port_put(port);
		return err;
	}
	wg_device_kick(dev, -1);
	log_info("port %s added", cfg->name);
	if (dev->hooks.local_added)
		dev->hooks.local_added(dev, port->cfg.addrs, port->cfg.n_addrs);
	return 0;
}

/* Removal completes once every worker has let go of the port (its reads
 * cancelled), so that the tap netdev is gone when port del returns and its
 * name can be taken again at once. Bounded: a wedged worker costs a log
 * line, not a hung control socket. */
static bool wait_workers_gone(struct port *port)
{
	for (int ms = 0; atomic_load(&port->refs) > 1; ms++) {
		if (ms == PORT_RELEASE_WAIT_MS) {
			log_error("port %s: workers still hold it after %d ms", port->cfg.name, ms);
			return false;
		}
		usleep(1000);
	}
	return true;
}

int port_del(struct wg_device *dev, const char *name)
{
	struct port *port;

	wg_rwlock_wrlock(&dev->lock);
	port = port_by_name(dev, name);
	if (port)
		unpublish(dev, port);
	wg_rwlock_unlock(&dev->lock);
	if (!port)
		return -ENOENT;
	wg_device_kick(dev, -1);
	if (dev->hooks.local_removed)
		dev->hooks.local_removed(dev, port->cfg.addrs, port->cfg.n_addrs);
	/* Then no worker touches the guest's memory any more. */
	if (wait_workers_gone(port) && port->class->release)
		port->class->release(port);
	log_info("port %s removed", name);
	port_put(port);
	return 0;
}

static struct port *port_with_addr(struct wg_device *dev, const struct ip_prefix *a,
				   size_t *index)
{
	for (int i = 0; i < PORT_MAX; i++)
		for (size_t j = 0; dev->ports->slot[i] && j < dev->ports->slot[i]->cfg.n_addrs; j++)
			if (ip_prefix_equal(&dev->ports->slot[i]->cfg.addrs[j], a)) {
				*index = j;
				return dev->ports->slot[i];
			}
	return NULL;
}

/* The port's NDP view follows its addresses (it never answers for them). */
static void port_readdressed(struct port *port)
{
	port_ndp_config(&port->cfg, &port->ndp);
	if (port->ndp.has_gateway4 && !port->cfg.has_gateway4) {
		memcpy(port->cfg.gateway4, port->ndp.gateway4, 4);
		port->cfg.has_gateway4 = true;
	}
}

int port_register(struct wg_device *dev, const char *name, const struct ip_prefix *addrs,
		  size_t n)
{
	struct port_config next;
	struct port *port, *other;
	const char *why = NULL;
	size_t idx, added = 0;
	int err = 0;

	wg_rwlock_wrlock(&dev->lock);
	port = port_by_name(dev, name);
	if (!port) {
		err = -ENOENT;
		goto out;
	}
	/* The port's configuration as it would be, checked as a whole. */
	next = port->cfg;
	for (size_t i = 0; i < n; i++) {
		bool dup = false;

		other = port_with_addr(dev, &addrs[i], &idx);
		if (other && other != port) {
			err = -EEXIST;
			goto out;
		}
		for (size_t j = 0; j < next.n_addrs; j++)
			dup |= ip_prefix_equal(&next.addrs[j], &addrs[i]);
		if (dup)
			continue;
		if (next.n_addrs == PORT_MAX_ADDRS) {
			err = -ENOSPC;
			goto out;
		}
		next.addrs[next.n_addrs++] = addrs[i];
	}
	if (port_config_check(&next, &why)) {
		log_error("port %s: %s", name, why ? why : "invalid address");
		err = -EINVAL;
		goto out;
	}
	for (size_t i = port->cfg.n_addrs; i < next.n_addrs && !err; i++) {
		err = rt_insert(dev->allowed_ips, next.addrs[i].family, next.addrs[i].addr,
				next.addrs[i].cidr, &port->hop);
		if (!err) {
			port->cfg.addrs[port->cfg.n_addrs++] = next.addrs[i];
			added++;
			if (port->class->addr_added)
				port->class->addr_added(dev, port, &next.addrs[i]);
		}
	}
	if (added)
		port_readdressed(port);
out:
	wg_rwlock_unlock(&dev->lock);
	if (added)
		log_info("port %s: %zu addresses registered", name, added);
	return err;
}

int port_unregister(struct wg_device *dev, const struct ip_prefix *addrs, size_t n)
{
	struct port *port;
	size_t idx;
	int err = 0;

	wg_rwlock_wrlock(&dev->lock);
	for (size_t i = 0; i < n && !err; i++)
		if (!port_with_addr(dev, &addrs[i], &idx))
			err = -ENOENT;
	for (size_t i = 0; i < n && !err; i++) {
		port = port_with_addr(dev, &addrs[i], &idx);
		if (!port)
			continue; /* named twice */
		rt_remove(dev->allowed_ips, addrs[i].family, addrs[i].addr, addrs[i].cidr, &port->hop);
		if (port->class->addr_removed)
			port->class->addr_removed(dev, port, &addrs[i]);
		memmove(&port->cfg.addrs[idx], &port->cfg.addrs[idx + 1],
			(port->cfg.n_addrs - idx - 1) * sizeof(port->cfg.addrs[0]));
		port->cfg.n_addrs--;
		port_readdressed(port);
	}
	wg_rwlock_unlock(&dev->lock);
	return err;
}

static void fill_info(struct wg_device *dev, const struct port *port, struct port_info *info)
{
	const struct port_counters *c = &port->counters;
	const struct ndp_stats *ns = &port->ndp_state.stats;

	memset(info, 0, sizeof(*info));
	info->cfg = port->cfg;
	info->connected = true;
	info->rx_packets = atomic_load(&c->rx_packets);
	info->rx_bytes = atomic_load(&c->rx_bytes);
	info->tx_packets = atomic_load(&c->tx_packets);
	info->tx_bytes = atomic_load(&c->tx_bytes);
#define PORT_DROP_COPY(name, text) info->drop_##name = atomic_load(&c->drop_##name);
	PORT_DROP_REASONS(PORT_DROP_COPY)
#undef PORT_DROP_COPY
	info->ndp_replies = atomic_load(&ns->verdicts[NDP_REPLY]);
	for (int v = 0; v < NDP_VERDICT_COUNT; v++)
		if (ndp_verdict_is_drop((enum ndp_verdict)v))
			info->ndp_drops += atomic_load(&ns->verdicts[v]);
	if (port->class->info)
		port->class->info(dev, port, info);
}

int port_list(struct wg_device *dev, struct port_info **out, size_t *n)
{
	struct port_info *info;
	uint64_t *seq;
	size_t count = 0;

	wg_rwlock_rdlock(&dev->lock);
	info = calloc(PORT_MAX, sizeof(*info));
	seq = calloc(PORT_MAX, sizeof(*seq));
	if (!info || !seq) {
		wg_rwlock_unlock(&dev->lock);
		free(info);
		free(seq);
		return -ENOMEM;
	}
	for (int i = 0; i < PORT_MAX; i++) {
		if (!dev->ports->slot[i])
			continue;
		fill_info(dev, dev->ports->slot[i], &info[count]);
		seq[count++] = dev->ports->slot[i]->seq;
	}
	wg_rwlock_unlock(&dev->lock);
	/* Creation order: a small insertion sort keyed by seq. */
	for (size_t i = 1; i < count; i++) {
		for (size_t j = i; j > 0 && seq[j - 1] > seq[j]; j--) {
			struct port_info t = info[j];
			uint64_t s = seq[j];

			info[j] = info[j - 1];
			seq[j] = seq[j - 1];
			info[j - 1] = t;
			seq[j - 1] = s;
		}
	}
	free(seq);
	*out = info;
	*n = count;
	return 0;
}

int port_table_new(struct wg_device *dev)
{
	dev->ports = calloc(1, sizeof(*dev->ports));
	return dev->ports ? 0 : -ENOMEM;
}

void port_table_halt_backends(struct wg_device *dev)
{
	if (!dev->ports)
		return;
	for (int i = 0; i < PORT_MAX; i++)
		if (dev->ports->slot[i] && dev->ports->slot[i]->class->halt)
			dev->ports->slot[i]->class->halt(dev->ports->slot[i]);
	port_attached_stop(dev);
}

void port_table_free(struct wg_device *dev)
{
	if (!dev->ports)
		return;
	for (int i = 0; i < PORT_MAX; i++) {
		if (!dev->ports->slot[i])
			continue;
		rt_remove_value(dev->allowed_ips, &dev->ports->slot[i]->hop);
		if (dev->ports->slot[i]->class->unpublished)
			dev->ports->slot[i]->class->unpublished(dev, dev->ports->slot[i]);
		port_put(dev->ports->slot[i]);
		dev->ports->slot[i] = NULL;
	}
	port_attached_free(dev);
	free(dev->ports);
	dev->ports = NULL;
}
