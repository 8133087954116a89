/* The fake device of the control tests (fake_device.h): ports in an array,
 * a mesh configuration, counters and routes the tests set. */
#include "tests/cli/fake_device.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/control.h"
#include "port/ports.h"
#include "mesh/text.h"
#include "wg/device.h"

static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
struct port_info fake_ports[FAKE_CAPACITY];
size_t fake_n;
unsigned int fake_adds, fake_dels, fake_vm_adds, fake_vm_dels;
struct mesh_config fake_mesh;
struct mesh_stats fake_mesh_stats;
struct mesh_lease fake_leases[16];
size_t fake_n_leases;
struct mesh_route *fake_routes;
size_t fake_n_routes;

/* The port holding a, or -1. */
static int holder(const struct ip_prefix *a)
{
	for (size_t i = 0; i < fake_n; i++)
		for (size_t j = 0; j < fake_ports[i].cfg.n_addrs; j++)
			if (ip_prefix_equal(&fake_ports[i].cfg.addrs[j], a))
				return (int)i;
	return -1;
}

static bool fake_taken(const struct port_config *cfg)
{
	for (size_t k = 0; k < cfg->n_addrs; k++)
		if (holder(&cfg->addrs[k]) >= 0)
			return true;
	return false;
}

int port_add(struct wg_device *dev, const struct port_config *cfg)
{
	int ret = 0;

	if (port_config_check(cfg, NULL))
		return -EINVAL;
	pthread_mutex_lock(&fake_lock);
	for (size_t i = 0; i < fake_n; i++)
		if (!strcmp(fake_ports[i].cfg.name, cfg->name))
			ret = -EEXIST;
	if (!ret && fake_taken(cfg))
		ret = -EEXIST;
	/* As the kernel refuses a tap whose netdev name is in use. */
	if (!ret && !strcmp(cfg->name, "busy0"))
		ret = -EEXIST;
	if (!ret && fake_n == FAKE_CAPACITY)
		ret = -ENOSPC;
	if (!ret) {
		memset(&fake_ports[fake_n], 0, sizeof(fake_ports[0]));
		fake_ports[fake_n].cfg = *cfg;
		fake_ports[fake_n].rx_packets = 10 + fake_n;
		fake_ports[fake_n].drop_foreign_mac = 2;
		fake_ports[fake_n++].connected = true;
		fake_adds++;
	}
	pthread_mutex_unlock(&fake_lock);
	return ret;
}

int port_del(struct wg_device *dev, const char *name)
{
	int ret = -ENOENT;

	pthread_mutex_lock(&fake_lock);
	for (size_t i = 0; i < fake_n && ret; i++) {
		if (!strcmp(fake_ports[i].cfg.name, name)) {
			memmove(&fake_ports[i], &fake_ports[i + 1],
				(fake_n - i - 1) * sizeof(fake_ports[0]));
			fake_n--;
			fake_dels++;
			ret = 0;
		}
	}
	pthread_mutex_unlock(&fake_lock);
	return ret;
}

int port_list(struct wg_device *dev, struct port_info **out, size_t *n)
{
	pthread_mutex_lock(&fake_lock);
	*out = malloc((fake_n ? fake_n : 1) * sizeof(**out));
	if (*out)
		memcpy(*out, fake_ports, fake_n * sizeof(**out));
	*n = fake_n;
	pthread_mutex_unlock(&fake_lock);
	return *out ? 0 : -ENOMEM;
}

/* ---- the mesh ---------------------------------------------------------- */

/* As the real mesh might: a mode that discovers needs a prefix. */
int mesh_set(struct wg_device *dev, const struct mesh_config *cfg)
{
	int ret = 0;

	if ((unsigned int)cfg->mode > MESH_MULTICAST || cfg->n_prefixes > MESH_MAX_PREFIXES ||
	    (cfg->mode != MESH_OFF && !cfg->n_prefixes))
		return -EINVAL;
	pthread_mutex_lock(&fake_lock);
	fake_mesh = *cfg;
	pthread_mutex_unlock(&fake_lock);
	return ret;
}

void mesh_get(struct wg_device *dev, struct mesh_config *cfg, struct mesh_stats *st)
{
	pthread_mutex_lock(&fake_lock);
	*cfg = fake_mesh;
	*st = fake_mesh_stats;
	pthread_mutex_unlock(&fake_lock);
}

int mesh_vm_add(struct wg_device *dev, const char *port, const struct ip_prefix *addrs,
		size_t n)
{
	struct port_config c;
	int p = -1, h, ret = 0;

	pthread_mutex_lock(&fake_lock);
	for (size_t i = 0; i < fake_n; i++)
		if (!strcmp(fake_ports[i].cfg.name, port))
			p = (int)i;
	if (p < 0) {
		ret = -ENOENT;
		goto out;
	}
	c = fake_ports[p].cfg;
	for (size_t k = 0; k < n; k++) {
		h = holder(&addrs[k]);
		if (h >= 0 && h != p) {
			ret = -EEXIST;
			goto out;
		}
		if (h == p)
			continue;
		if (c.n_addrs == PORT_MAX_ADDRS) {
			ret = -ENOSPC;
			goto out;
		}
		c.addrs[c.n_addrs++] = addrs[k];
	}
	if (port_config_check(&c, NULL)) {
		ret = -EINVAL;
		goto out;
	}
	fake_ports[p].cfg = c;
	fake_vm_adds++;
out:
	pthread_mutex_unlock(&fake_lock);
	return ret;
}

int mesh_lease_add(struct wg_device *dev, const struct mesh_lease *leases, size_t n,
		   const char **why)
{
	int ret = 0;

	pthread_mutex_lock(&fake_lock);
	if (!fake_mesh.has_lease_key) {
		*why = "the mesh has no lease key";
		ret = -ENOKEY;
	}
	for (size_t i = 0; !ret && i < n && fake_n_leases < 16; i++)
		fake_leases[fake_n_leases++] = leases[i];
	pthread_mutex_unlock(&fake_lock);
	return ret;
}

int mesh_vm_del(struct wg_device *dev, const struct ip_prefix *addrs, size_t n)
{
	int ret = 0, h;

	pthread_mutex_lock(&fake_lock);
	for (size_t k = 0; k < n; k++)
		if (holder(&addrs[k]) < 0)
			ret = -ENOENT;
	for (size_t k = 0; k < n && !ret; k++) {
		struct port_config *c;

		h = holder(&addrs[k]);
		c = &fake_ports[h].cfg;
		for (size_t j = 0; j < c->n_addrs; j++) {
			if (ip_prefix_equal(&c->addrs[j], &addrs[k])) {
				memmove(&c->addrs[j], &c->addrs[j + 1],
					(c->n_addrs - j - 1) * sizeof(c->addrs[0]));
				c->n_addrs--;
				break;
			}
		}
	}
	if (!ret)
		fake_vm_dels++;
	pthread_mutex_unlock(&fake_lock);
	return ret;
}

int mesh_routes(struct wg_device *dev, struct mesh_route **out, size_t *n, size_t max)
{
	pthread_mutex_lock(&fake_lock);
	*n = fake_n_routes < max ? fake_n_routes : max;
	*out = malloc((*n ? *n : 1) * sizeof(**out));
	if (*out && *n)
		memcpy(*out, fake_routes, *n * sizeof(**out));
	pthread_mutex_unlock(&fake_lock);
	return *out ? 0 : -ENOMEM;
}

/* ---- UAPI ops ---------------------------------------------------------- */

void fake_reset(void)
{
	pthread_mutex_lock(&fake_lock);
	fake_n = 0;
	fake_adds = fake_dels = fake_vm_adds = fake_vm_dels = 0;
	memset(&fake_mesh, 0, sizeof(fake_mesh));
	memset(&fake_mesh_stats, 0, sizeof(fake_mesh_stats));
	fake_n_routes = 0;
	pthread_mutex_unlock(&fake_lock);
}

bool fake_port_has(const char *name, const char *cidr)
{
	struct ip_prefix a;
	const char *why;
	bool found = false;

	if (ip_prefix_parse(cidr, strlen(cidr), MESH_TEXT_CIDR, &a, &why))
		return false;
	pthread_mutex_lock(&fake_lock);
	for (size_t i = 0; i < fake_n; i++)
		if (!strcmp(fake_ports[i].cfg.name, name))
			for (size_t j = 0; j < fake_ports[i].cfg.n_addrs; j++)
				found |= ip_prefix_equal(&fake_ports[i].cfg.addrs[j], &a);
	pthread_mutex_unlock(&fake_lock);
	return found;
}

static int fake_get(void *ctx, struct wg_device_config *cfg)
{
	cfg->listen_port = 51820;
	return 0;
}

static int fake_set(void *ctx, const struct wg_device_config *cfg)
{
	return 0;
}

static int fake_stats(void *ctx, char **text, size_t *len)
{
	*text = strdup("rx_packets=1\ntx_packets=2\n");
	*len = *text ? strlen(*text) : 0;
	return *text ? 0 : -ENOMEM;
}

const struct uapi_server_ops fake_ops = {
	.get = fake_get,
	.set = fake_set,
	.stats = fake_stats,
	.command = control_command,
};

const struct uapi_server_ops fake_ops_without_command = {
	.get = fake_get,
	.set = fake_set,
};
