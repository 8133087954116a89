/* Comparing port configurations, and the plan `weft port load` applies
 * (port/text.h): the steps that take a host's ports to those a ports file
 * wants. */
#include "port/text.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

void port_text_normalize(struct port_config *cfg)
{
	static const uint8_t router[6] = PORT_ROUTER_MAC_DEFAULT, gw[4] = PORT_GATEWAY4_DEFAULT;

	if (!cfg->mtu)
		cfg->mtu = PORT_MTU_DEFAULT;
	if (cfg->type == PORT_VHOST_USER && cfg->server && !cfg->socket_mode)
		cfg->socket_mode = 0600;
	if (!cfg->has_router_mac) {
		memcpy(cfg->router_mac, router, 6);
		cfg->has_router_mac = true;
	}
	for (size_t i = 0; !cfg->has_gateway4 && i < cfg->n_addrs && i < PORT_MAX_ADDRS; i++) {
		if (cfg->addrs[i].family == AF_INET) {
			memcpy(cfg->gateway4, gw, 4);
			cfg->has_gateway4 = true;
		}
	}
	/* Only vhost-user has a mode; a tap is always "server". */
	if (cfg->type == PORT_TAP || cfg->type == PORT_ATTACHED)
		cfg->server = true;
}

/* Whether every prefix of a[0, na) is also in b[0, nb). */
static bool within(const struct ip_prefix *a, size_t na, const struct ip_prefix *b, size_t nb)
{
	for (size_t i = 0; i < na; i++)
		if (!ip_prefix_listed(b, nb, &a[i]))
			return false;
	return true;
}

bool port_text_same_config(const struct port_config *a, const struct port_config *b)
{
	struct port_config x = *a, y = *b;

	port_text_normalize(&x);
	port_text_normalize(&y);
	/* Duplicates are refused by port_config_check, so equal counts and
	 * inclusion one way make equal sets; both ways guards the unchecked. */
	return !strncmp(x.name, y.name, PORT_NAME_MAX) && x.type == y.type &&
	       !strncmp(x.path, y.path, PORT_PATH_MAX) && x.server == y.server &&
	       x.has_socket_uid == y.has_socket_uid && x.socket_uid == y.socket_uid &&
	       x.has_socket_gid == y.has_socket_gid && x.socket_gid == y.socket_gid &&
	       x.socket_mode == y.socket_mode &&
	       !memcmp(x.vm_mac, y.vm_mac, 6) &&
	       /* An attached port's router MAC is its netdev's, whatever was asked. */
	       (x.type == PORT_ATTACHED || !memcmp(x.router_mac, y.router_mac, 6)) &&
	       x.has_gateway4 == y.has_gateway4 &&
	       (!x.has_gateway4 || !memcmp(x.gateway4, y.gateway4, 4)) && x.mtu == y.mtu &&
	       x.n_addrs == y.n_addrs && x.n_prefixes == y.n_prefixes &&
	       within(x.addrs, x.n_addrs, y.addrs, y.n_addrs) &&
	       within(y.addrs, y.n_addrs, x.addrs, x.n_addrs) &&
	       within(x.prefixes, x.n_prefixes, y.prefixes, y.n_prefixes) &&
	       within(y.prefixes, y.n_prefixes, x.prefixes, x.n_prefixes);
}

static const struct port_config *find_wanted(const struct port_config *want, size_t n,
					     const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strncmp(want[i].name, name, PORT_NAME_MAX))
			return &want[i];
	return NULL;
}

bool port_text_keep_registered(struct port_config *want, const struct port_info *have,
			       size_t n_have)
{
	for (size_t i = 0; i < n_have; i++) {
		const struct port_config *h = &have[i].cfg;
		bool same = want->n_addrs == h->n_addrs;

		if (strncmp(want->name, h->name, PORT_NAME_MAX))
			continue;
		for (size_t k = 0; same && k < h->n_addrs; k++)
			same = ip_prefix_listed(want->addrs, want->n_addrs, &h->addrs[k]);
		memcpy(want->addrs, h->addrs, sizeof(want->addrs));
		want->n_addrs = h->n_addrs;
		return !same;
	}
	return false;
}

int port_text_plan(const struct port_config *want, size_t n_want, const struct port_info *have,
		   size_t n_have, bool prune, struct port_step **steps, size_t *n_steps,
		   const char **why)
{
	struct port_step *s = NULL;
	const struct port_config *w;
	const char *unused;
	size_t n = 0;

	if (!why)
		why = &unused;
	*steps = NULL;
	*n_steps = 0;
	/* A port that stays must not hold an address a wanted one takes. */
	for (size_t i = 0; !prune && i < n_have; i++) {
		if (find_wanted(want, n_want, have[i].cfg.name))
			continue;
		for (size_t j = 0; j < n_want; j++) {
			if (port_config_share_addr(&have[i].cfg, &want[j])) {
				*why = "an address in the file belongs to a port not in the file "
				       "(remove it, or load with --prune)";
				return -EEXIST;
			}
		}
	}
	/* At most one removal per port had and one addition per port wanted. */
	if (n_have + n_want) {
		s = calloc(n_have + n_want, sizeof(*s));
		if (!s) {
			*why = "out of memory";
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < n_have; i++) {
		w = find_wanted(want, n_want, have[i].cfg.name);
		if (w ? !port_text_same_config(w, &have[i].cfg) : prune)
			s[n++] = (struct port_step){ PORT_STEP_DEL, i, w != NULL };
	}
	for (size_t j = 0; j < n_want; j++) {
		const struct port_config *had = NULL;

		for (size_t i = 0; i < n_have && !had; i++)
			if (!strncmp(want[j].name, have[i].cfg.name, PORT_NAME_MAX))
				had = &have[i].cfg;
		if (!had || !port_text_same_config(&want[j], had))
			s[n++] = (struct port_step){ PORT_STEP_ADD, j, had != NULL };
	}
	if (!n) {
		free(s);
		s = NULL;
	}
	*steps = s;
	*n_steps = n;
	return 0;
}
