/* weft's control requests on the UAPI socket: verb dispatch, the device
 * and mesh calls behind each verb, and replies with a reason when they fail.
 *
 * Security model: the body comes from whoever holds the root-only socket
 * and is parsed by port/text.c (ports) or mesh/text.c (VM
 * addresses, the mesh), which bound and check every value; only a port
 * configuration port_config_check accepted, and only addresses with their
 * host bits clear, reach the device. The server runs one request at a time
 * (its IPC lock), so a port-add and a port-del never race here, and the
 * get-modify-set of mesh-set is not interleaved with another request. */
#include "daemon/control.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mesh/mesh.h"
#include "port/ports.h"
#include "mesh/text.h"
#include "port/text.h"
#include "wg/device.h"
#include "wg/log.h"

static bool share_addr(const struct port_config *a, const struct port_config *b)
{
	for (size_t i = 0; i < a->n_addrs; i++)
		for (size_t j = 0; j < b->n_addrs; j++)
			if (a->addrs[i].family == b->addrs[j].family &&
			    a->addrs[i].cidr == b->addrs[j].cidr &&
			    !memcmp(a->addrs[i].addr, b->addrs[j].addr, sizeof(a->addrs[i].addr)))
				return true;
	return false;
}

/* Why a device call failed, in words the CLI prints after strerror. An
 * -EEXIST is the device's (a name or an address of another port) or the
 * kernel's (a netdev of that name): the port list tells which. */
static const char *add_failure(struct wg_device *dev, const struct port_config *cfg, int err)
{
	const char *why = "a network device with this name exists";
	struct port_info *ports = NULL;
	size_t n = 0;

	switch (err) {
	case -EEXIST:
		if (port_list(dev, &ports, &n))
			return "the name or an address is taken";
		for (size_t i = 0; i < n; i++) {
			if (!strncmp(ports[i].cfg.name, cfg->name, PORT_NAME_MAX)) {
				why = "a port with this name exists";
				break;
			}
			if (share_addr(&ports[i].cfg, cfg))
				why = "an address of the port belongs to another port";
		}
		free(ports);
		return why;
	case -ENOSPC:
		return "the device has as many ports as it can take (256)";
	case -EINVAL:
		return "the device refused the configuration";
	default:
		return NULL;
	}
}

static int verb_port_add(struct wg_device *dev, const char *body, size_t len, char **reply,
			 size_t *reply_len, const char **why)
{
	struct port_config cfg;
	int ret = port_text_parse_request(body, len, &cfg, why);

	if (ret)
		return ret;
	/* The device logs what it did; failures are logged with their reason
	 * by control_command. */
	ret = port_add(dev, &cfg);
	if (ret)
		*why = add_failure(dev, &cfg, ret);
	return ret;
}

static int verb_port_del(struct wg_device *dev, const char *body, size_t len, char **reply,
			 size_t *reply_len, const char **why)
{
	char name[PORT_NAME_MAX];
	int ret = port_text_parse_name(body, len, name, why);

	if (ret)
		return ret;
	ret = port_del(dev, name);
	if (ret == -ENOENT)
		*why = "no port with this name";
	return ret;
}

static int verb_port_list(struct wg_device *dev, const char *body, size_t len, char **reply,
			  size_t *reply_len, const char **why)
{
	struct port_info *ports = NULL;
	size_t n = 0;
	int ret;

	if (len) {
		*why = "port-list takes no keys";
		return -EINVAL;
	}
	ret = port_list(dev, &ports, &n);
	if (!ret)
		ret = port_text_format_info(ports, n, reply, reply_len);
	free(ports);
	return ret;
}

/* ---- VM addresses and the mesh ----------------------------------------- */

static int verb_vm_add(struct wg_device *dev, const char *body, size_t len, char **reply,
		       size_t *reply_len, const char **why)
{
	struct mesh_text_vm_request *req = malloc(sizeof(*req));
	int ret;

	if (!req)
		return -ENOMEM;
	ret = mesh_text_parse_vm_request(body, len, true, req, why);
	if (!ret)
		ret = mesh_vm_add(dev, req->port, req->addrs, req->n_addrs);
	free(req);
	switch (ret) {
	case -ENOENT:
		*why = "no port with this name";
		break;
	case -EEXIST:
		*why = "an address belongs to another port";
		break;
	case -ENOSPC:
		*why = "the port would have more than 16 addresses";
		break;
	case -EINVAL:
		if (!*why)
			*why = "the device refused an address";
		break;
	}
	return ret;
}

/* The reason of a refused vm-del, naming the first of addrs that no port
 * has: "address 10.0.0.9/32 is registered to no port" (in a buffer of the
 * UAPI client's thread, valid until its next request). */
static const char *unregistered(struct wg_device *dev, const struct ip_prefix *addrs, size_t n)
{
	static _Thread_local char why[48 + IP_PREFIX_STRLEN];
	struct port_info *ports = NULL;
	size_t n_ports = 0;

	if (port_list(dev, &ports, &n_ports))
		return "an address is registered to no port";
	for (size_t i = 0; i < n; i++) {
		bool found = false;

		for (size_t j = 0; j < n_ports && !found; j++)
			found = ip_prefix_listed(ports[j].cfg.addrs, ports[j].cfg.n_addrs, &addrs[i]);
		if (!found) {
			char text[IP_PREFIX_STRLEN];

			ip_prefix_format(&addrs[i], text);
			snprintf(why, sizeof(why), "address %s is registered to no port", text);
			free(ports);
			return why;
		}
	}
	free(ports);
	return "an address is registered to no port";
}

static int verb_vm_del(struct wg_device *dev, const char *body, size_t len, char **reply,
		       size_t *reply_len, const char **why)
{
	struct mesh_text_vm_request *req = malloc(sizeof(*req));
	int ret;

	if (!req)
		return -ENOMEM;
	ret = mesh_text_parse_vm_request(body, len, false, req, why);
	if (!ret) {
		ret = mesh_vm_del(dev, req->addrs, req->n_addrs);
		if (ret == -ENOENT)
			*why = unregistered(dev, req->addrs, req->n_addrs);
	}
	free(req);
	return ret;
}

/* get-modify-set: what the request leaves out stays as it is. */
static int verb_mesh_set(struct wg_device *dev, const char *body, size_t len, char **reply,
			 size_t *reply_len, const char **why)
{
	struct mesh_config cfg;
	struct mesh_stats st;
	struct mesh_text_set set;
	int ret = mesh_text_parse_set(body, len, &set, why);

	if (ret)
		return ret;
	mesh_get(dev, &cfg, &st);
	mesh_text_apply_set(&set, &cfg);
	ret = mesh_set(dev, &cfg);
	if (ret == -EINVAL)
		*why = "the mesh refused the configuration";
	else if (ret == -EEXIST)
		*why = "a prefix holds a peer's allowed IP (mesh prefixes and allowed IPs must not overlap)";
	return ret;
}

static int verb_mesh_show(struct wg_device *dev, const char *body, size_t len, char **reply,
			  size_t *reply_len, const char **why)
{
	struct mesh_route *routes = NULL;
	struct mesh_config cfg;
	struct mesh_stats st;
	size_t n = 0;
	bool truncated;
	int ret;

	if (len) {
		*why = "mesh-show takes no keys";
		return -EINVAL;
	}
	mesh_get(dev, &cfg, &st);
	/* One more than is shown, to know whether there were more. */
	ret = mesh_routes(dev, &routes, &n, MESH_TEXT_MAX_ROUTES + 1);
	if (ret)
		return ret;
	truncated = n > MESH_TEXT_MAX_ROUTES;
	ret = mesh_text_format_show(&cfg, &st, routes, truncated ? MESH_TEXT_MAX_ROUTES : n,
				    truncated, reply, reply_len);
	free(routes);
	return ret;
}

static int verb_lease_add(struct wg_device *dev, const char *body, size_t len, char **reply,
			  size_t *reply_len, const char **why)
{
	struct mesh_text_lease_request *req = malloc(sizeof(*req));
	int ret;

	if (!req)
		return -ENOMEM;
	ret = mesh_text_parse_lease_request(body, len, req, why);
	if (!ret)
		ret = mesh_lease_add(dev, req->leases, req->n, why);
	free(req);
	return ret;
}

static const struct control_verb {
	const char *verb;
	int (*run)(struct wg_device *dev, const char *body, size_t len, char **reply,
		   size_t *reply_len, const char **why);
} control_verbs[] = {
	{ "port-add", verb_port_add },
	{ "port-del", verb_port_del },
	{ "port-list", verb_port_list },
	{ "vm-add", verb_vm_add },
	{ "vm-del", verb_vm_del },
	{ "mesh-set", verb_mesh_set },
	{ "mesh-show", verb_mesh_show },
	{ "lease-add", verb_lease_add },
};

int control_command(void *ctx, const char *verb, const char *body, size_t len, char **reply,
		    size_t *reply_len)
{
	const struct control_verb *v = NULL;
	const char *why = NULL;
	char *msg;
	int ret, n;

	*reply = NULL;
	*reply_len = 0;
	for (size_t i = 0; i < sizeof(control_verbs) / sizeof(control_verbs[0]); i++)
		if (!strcmp(verb, control_verbs[i].verb))
			v = &control_verbs[i];
	if (v) {
		ret = v->run(ctx, body, len, reply, reply_len, &why);
	} else {
		why = "unknown weft request";
		ret = -EOPNOTSUPP;
	}
	if (!ret)
		return 0;
	log_error("weft=%s: %s%s%s", verb, strerror(-ret), why ? ": " : "", why ? why : "");
	free(*reply);
	*reply = NULL;
	*reply_len = 0;
	/* The reason goes back as one line; without memory the errno alone does. */
	if (why) {
		n = asprintf(&msg, "message=%s\n", why);
		if (n > 0) {
			*reply = msg;
			*reply_len = (size_t)n;
		}
	}
	return ret;
}
