/* weft's control requests on the UAPI socket: verb dispatch, the device
 * calls behind each verb, and replies with a reason when they fail.
 *
 * Security model: the body comes from whoever holds the root-only socket
 * and is parsed by tun/port_text.c, which bounds and checks every value;
 * only a configuration port_config_check accepted reaches the device. The
 * server runs one request at a time (its IPC lock), so a port-add and a
 * port-del never race here. */
#include "daemon/control.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tun/port_text.h"
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
		if (wg_device_port_list(dev, &ports, &n))
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

static int port_add(struct wg_device *dev, const char *body, size_t len, char **reply,
		    size_t *reply_len, const char **why)
{
	struct port_config cfg;
	int ret = port_text_parse_request(body, len, &cfg, why);

	if (ret)
		return ret;
	/* The device logs what it did; failures are logged with their reason
	 * by control_command. */
	ret = wg_device_port_add(dev, &cfg);
	if (ret)
		*why = add_failure(dev, &cfg, ret);
	return ret;
}

static int port_del(struct wg_device *dev, const char *body, size_t len, char **reply,
		    size_t *reply_len, const char **why)
{
	char name[PORT_NAME_MAX];
	int ret = port_text_parse_name(body, len, name, why);

	if (ret)
		return ret;
	ret = wg_device_port_del(dev, name);
	if (ret == -ENOENT)
		*why = "no port with this name";
	return ret;
}

static int port_list(struct wg_device *dev, const char *body, size_t len, char **reply,
		     size_t *reply_len, const char **why)
{
	struct port_info *ports = NULL;
	size_t n = 0;
	int ret;

	if (len) {
		*why = "port-list takes no keys";
		return -EINVAL;
	}
	ret = wg_device_port_list(dev, &ports, &n);
	if (!ret)
		ret = port_text_format_info(ports, n, reply, reply_len);
	free(ports);
	return ret;
}

static const struct control_verb {
	const char *verb;
	int (*run)(struct wg_device *dev, const char *body, size_t len, char **reply,
		   size_t *reply_len, const char **why);
} control_verbs[] = {
	{ "port-add", port_add },
	{ "port-del", port_del },
	{ "port-list", port_list },
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
