/* libFuzzer target for the text forms of the mesh (mesh/text.c): the
 * functions weftd calls on every weft=vm-add / vm-del / mesh-set body and
 * on a mesh config file, and the CLI on every mesh-show reply and VM file.
 * The first byte picks the parser (0 vm-add, 1 vm-del, 2 mesh-set,
 * 3 mesh-show reply, 4 mesh config file, 5 VM file; any other value modulo
 * 6, but 6 itself: a lease-add body), the rest is its text,
 * in an exact-size copy so ASan sees any read past the end.
 *
 * What parses formats back to text that parses to the same values; what
 * fails leaves nothing behind. A VM file is also planned against a host
 * whose ports hold each other's addresses: applied under the device's
 * rules, the plan ends in the file's state, and planning again does
 * nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mesh/text.h"
#include "text/text.h"

#define CHECK(cond)                                                                      \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "fuzz_mesh_text: check failed at %s:%d: %s\n",   \
				__FILE__, __LINE__, #cond);                              \
			abort();                                                         \
		}                                                                        \
	} while (0)

static bool same_list(const struct ip_prefix *a, const struct ip_prefix *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!ip_prefix_equal(&a[i], &b[i]))
			return false;
	return true;
}

static void check_vm_request(const char *text, size_t len, bool with_port)
{
	static struct mesh_text_vm_request a, b;
	char s[IP_PREFIX_STRLEN], *t = NULL;
	const char *why = NULL;
	size_t tl = 0;
	struct text_buf tb = { 0 };

	if (mesh_text_parse_vm_request(text, len, with_port, &a, &why)) {
		CHECK(why && !a.n_addrs && !a.port[0]);
		return;
	}
	CHECK(a.n_addrs >= 1 && a.n_addrs <= (with_port ? PORT_MAX_ADDRS : MESH_TEXT_MAX_DEL));
	CHECK(with_port == (a.port[0] != 0));
	CHECK(!with_port || port_name_ok(a.port, strlen(a.port)));
	if (with_port)
		text_buf_printf(&tb, "port=%s\n", a.port);
	for (size_t i = 0; i < a.n_addrs; i++) {
		ip_prefix_format(&a.addrs[i], s);
		text_buf_printf(&tb, "address=%s\n", s);
	}
	CHECK(text_buf_finish(&tb, &t, &tl) == 0);
	CHECK(mesh_text_parse_vm_request(t, tl, with_port, &b, &why) == 0);
	CHECK(!strcmp(a.port, b.port) && a.n_addrs == b.n_addrs &&
	      same_list(a.addrs, b.addrs, a.n_addrs));
	free(t);
}

static void check_set(const char *text, size_t len)
{
	struct mesh_text_set a, b;
	struct mesh_config cfg = { .mode = MESH_MULTICAST };
	char s[IP_PREFIX_STRLEN], *t = NULL;
	const char *why = NULL;
	size_t tl = 0;
	struct text_buf tb = { 0 };

	if (mesh_text_parse_set(text, len, &a, &why)) {
		CHECK(why && !a.has_mode && !a.n_prefixes && !a.set_lease_key);
		return;
	}
	CHECK(a.has_mode || a.n_prefixes || a.set_lease_key);
	CHECK(!a.has_mode || mesh_text_mode_name(a.mode));
	if (a.has_mode)
		text_buf_printf(&tb, "mode=%s\n", mesh_text_mode_name(a.mode));
	for (size_t i = 0; i < a.n_prefixes; i++) {
		ip_prefix_format(&a.prefixes[i], s);
		text_buf_printf(&tb, "prefix=%s\n", s);
	}
	if (a.set_lease_key && !a.has_lease_key)
		text_buf_printf(&tb, "lease_key=none\n");
	if (a.has_lease_key) {
		text_buf_printf(&tb, "lease_key=");
		for (size_t i = 0; i < 32; i++)
			text_buf_printf(&tb, "%02X", a.lease_key[i]); /* either case */
		text_buf_printf(&tb, "\n");
	}
	CHECK(text_buf_finish(&tb, &t, &tl) == 0);
	CHECK(mesh_text_parse_set(t, tl, &b, &why) == 0);
	CHECK(a.has_mode == b.has_mode && (!a.has_mode || a.mode == b.mode) &&
	      a.n_prefixes == b.n_prefixes && same_list(a.prefixes, b.prefixes, a.n_prefixes));
	CHECK(a.set_lease_key == b.set_lease_key && a.has_lease_key == b.has_lease_key &&
	      (!a.has_lease_key || !memcmp(a.lease_key, b.lease_key, 32)));
	free(t);
	mesh_text_apply_set(&a, &cfg);
	CHECK(cfg.mode == (a.has_mode ? a.mode : MESH_MULTICAST));
	CHECK(cfg.n_prefixes == a.n_prefixes);
}

static bool same_route(const struct mesh_route *a, const struct mesh_route *b)
{
	return ip_prefix_equal(&a->prefix, &b->prefix) &&
	       !memcmp(a->holder, b->holder, 32) && a->negative == b->negative && a->seq == b->seq;
}

static void check_show(const char *text, size_t len)
{
	struct mesh_text_show a, b;
	const char *why = NULL;
	char *t;
	size_t tl;

	if (mesh_text_parse_show(text, len, &a, &why)) {
		CHECK(why && !a.routes && !a.n_routes);
		return;
	}
	CHECK(a.n_routes <= MESH_TEXT_MAX_ROUTES && (a.n_routes == 0) == (a.routes == NULL));
	CHECK(mesh_text_format_show(&a.cfg, &a.stats, a.routes, a.n_routes, a.truncated, &t,
				    &tl) == 0);
	CHECK(strlen(t) == tl);
	CHECK(mesh_text_parse_show(t, tl, &b, &why) == 0);
	CHECK(a.cfg.mode == b.cfg.mode && a.cfg.n_prefixes == b.cfg.n_prefixes &&
	      same_list(a.cfg.prefixes, b.cfg.prefixes, a.cfg.n_prefixes));
	CHECK(!memcmp(&a.stats, &b.stats, sizeof(a.stats)) && a.truncated == b.truncated);
	CHECK(a.cfg.has_lease_key == b.cfg.has_lease_key &&
	      (!a.cfg.has_lease_key || !memcmp(a.cfg.lease_key, b.cfg.lease_key, 32)));
	CHECK(a.n_routes == b.n_routes);
	for (size_t i = 0; i < a.n_routes; i++)
		CHECK(same_route(&a.routes[i], &b.routes[i]));
	free(t);
	mesh_text_show_free(&a);
	mesh_text_show_free(&b);
}

static void check_config(const char *text, size_t len)
{
	struct mesh_config a, b;
	char s[IP_PREFIX_STRLEN], *t = NULL;
	const char *why = NULL;
	size_t tl = 0;
	int line = -1;
	struct text_buf tb = { 0 };

	if (mesh_text_parse_config(text, len, &a, &line, &why)) {
		CHECK(why && line >= 0);
		return;
	}
	CHECK(line == 0 && mesh_text_mode_name(a.mode) && a.n_prefixes <= MESH_MAX_PREFIXES);
	CHECK(a.mode == MESH_OFF || a.n_prefixes);
	text_buf_printf(&tb, "[Mesh]\nMode = %s\n", mesh_text_mode_name(a.mode));
	for (size_t i = 0; i < a.n_prefixes; i++) {
		ip_prefix_format(&a.prefixes[i], s);
		text_buf_printf(&tb, "Prefix = %s\n", s);
	}
	if (a.has_lease_key) {
		char key[MESH_TEXT_KEY_LEN];

		mesh_text_key_base64(a.lease_key, key);
		text_buf_printf(&tb, "LeaseKey = %s\n", key);
	}
	CHECK(text_buf_finish(&tb, &t, &tl) == 0);
	CHECK(mesh_text_parse_config(t, tl, &b, &line, &why) == 0);
	CHECK(a.mode == b.mode && a.n_prefixes == b.n_prefixes &&
	      same_list(a.prefixes, b.prefixes, a.n_prefixes));
	CHECK(a.has_lease_key == b.has_lease_key &&
	      (!a.has_lease_key || !memcmp(a.lease_key, b.lease_key, 32)));
	free(t);
}

/* A lease-add body: what parses formats back (one lease=TEXT line each)
 * to the same leases, byte for byte; what fails keeps none. */
static void check_lease_request(const char *text, size_t len)
{
	static struct mesh_text_lease_request a, b;
	struct text_buf tb = { 0 };
	const char *why = NULL;
	char *t = NULL;
	size_t tl = 0;

	if (mesh_text_parse_lease_request(text, len, &a, &why)) {
		CHECK(why && a.n == 0);
		return;
	}
	CHECK(a.n >= 1 && a.n <= MESH_TEXT_MAX_LEASES);
	for (size_t i = 0; i < a.n; i++) {
		char lt[MESH_LEASE_TEXT_LEN];

		mesh_lease_format(&a.leases[i], lt);
		text_buf_printf(&tb, "lease=%s\n", lt);
	}
	CHECK(text_buf_finish(&tb, &t, &tl) == 0);
	CHECK(mesh_text_parse_lease_request(t, tl, &b, &why) == 0 && b.n == a.n);
	for (size_t i = 0; i < a.n; i++) {
		uint8_t wa[MESH_LEASE_SIZE], wb[MESH_LEASE_SIZE];

		mesh_lease_encode(&a.leases[i], wa);
		mesh_lease_encode(&b.leases[i], wb);
		CHECK(!memcmp(wa, wb, sizeof(wa)));
	}
	free(t);
}

static bool listed_in(const struct mesh_text_vm *want, size_t n, const struct ip_prefix *a)
{
	for (size_t w = 0; w < n; w++)
		for (size_t k = 0; k < want[w].n_addrs; k++)
			if (ip_prefix_equal(&want[w].addrs[k], a))
				return true;
	return false;
}

/* Where a is on the model host; -1: nowhere. */
static int held_by(const struct port_info *have, size_t n, const struct ip_prefix *a, size_t *at)
{
	for (size_t h = 0; h < n; h++)
		for (size_t k = 0; k < have[h].cfg.n_addrs; k++)
			if (ip_prefix_equal(&have[h].cfg.addrs[k], a)) {
				*at = k;
				return (int)h;
			}
	return -1;
}

/* The host has want's ports, each holding the next one's addresses, and
 * one port the file does not name, holding two addresses the file does not
 * list. */
static void check_plan(const struct mesh_text_vm *want, size_t n)
{
	struct port_info *have = calloc(n + 1, sizeof(*have));
	static const char *const extra[] = { "192.0.2.1", "fd00:dead::1" };
	struct mesh_vm_step *steps;
	struct mesh_vm_plan_counts counts;
	size_t n_steps, bad, at;
	const char *why;
	struct ip_prefix x;
	int h;

	CHECK(have);
	for (size_t i = 0; i < n; i++) {
		const struct mesh_text_vm *next = &want[(i + 1) % n];

		strcpy(have[i].cfg.name, want[i].port);
		if (n > 1) {
			memcpy(have[i].cfg.addrs, next->addrs, next->n_addrs * sizeof(next->addrs[0]));
			have[i].cfg.n_addrs = next->n_addrs;
		}
	}
	strcpy(have[n].cfg.name, "fuzz-extra");
	for (size_t i = 0; i < 2; i++) {
		CHECK(ip_prefix_parse(extra[i], strlen(extra[i]), MESH_TEXT_CIDR, &x, &why) == 0);
		if (held_by(have, n, &x, &at) < 0 && !listed_in(want, n, &x))
			have[n].cfg.addrs[have[n].cfg.n_addrs++] = x;
	}
	CHECK(mesh_text_vm_plan(want, n, have, n + 1, &steps, &n_steps, &counts, &bad) == 0);
	for (size_t i = 0; i < n_steps; i++) {
		const struct mesh_vm_step *s = &steps[i];

		h = held_by(have, n + 1, &s->addr, &at);
		if (s->kind == MESH_VM_STEP_ADD) {
			struct port_config *c = &have[s->port].cfg;

			CHECK(s->port < n && h < 0 && c->n_addrs < PORT_MAX_ADDRS);
			c->addrs[c->n_addrs++] = s->addr;
		} else {
			struct port_config *c = &have[s->port].cfg;

			CHECK(h == (int)s->port);
			memmove(&c->addrs[at], &c->addrs[at + 1],
				(c->n_addrs - at - 1) * sizeof(c->addrs[0]));
			c->n_addrs--;
		}
	}
	free(steps);
	for (size_t i = 0; i < n; i++) {
		CHECK(have[i].cfg.n_addrs == want[i].n_addrs);
		for (size_t k = 0; k < want[i].n_addrs; k++)
			CHECK(held_by(have, n + 1, &want[i].addrs[k], &at) == (int)i);
	}
	CHECK(have[n].cfg.n_addrs == 0);
	CHECK(mesh_text_vm_plan(want, n, have, n + 1, &steps, &n_steps, &counts, &bad) == 0);
	CHECK(n_steps == 0 && !steps && !counts.added && !counts.moved && !counts.removed);
	free(have);
}

static void check_vm_file(const char *text, size_t len)
{
	struct mesh_text_vm *a, *b;
	char s[IP_PREFIX_STRLEN], *t = NULL;
	const char *why = NULL;
	size_t na, nb, tl = 0;
	int line = -1;
	struct text_buf tb = { 0 };

	if (mesh_text_parse_vm_file(text, len, &a, &na, &line, &why)) {
		CHECK(why && line >= 0 && !a && !na);
		return;
	}
	CHECK(line == 0 && na <= PORT_MAX && (na == 0) == (a == NULL));
	for (size_t i = 0; i < na; i++) {
		CHECK(port_name_ok(a[i].port, strlen(a[i].port)));
		CHECK(a[i].n_addrs <= PORT_MAX_ADDRS);
		text_buf_add(&tb, a[i].port, strlen(a[i].port));
		for (size_t k = 0; k < a[i].n_addrs; k++) {
			ip_prefix_format(&a[i].addrs[k], s);
			text_buf_printf(&tb, " %s", s);
		}
		text_buf_add(&tb, "\n", 1);
	}
	CHECK(text_buf_finish(&tb, &t, &tl) == 0);
	CHECK(mesh_text_parse_vm_file(t, tl, &b, &nb, &line, &why) == 0 && nb == na);
	for (size_t i = 0; i < na; i++)
		CHECK(!strcmp(a[i].port, b[i].port) && a[i].n_addrs == b[i].n_addrs &&
		      same_list(a[i].addrs, b[i].addrs, a[i].n_addrs));
	free(t);
	free(b);
	check_plan(a, na);
	free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if (size < 1)
		return 0;
	/* An exact-size copy: any read past the end is a heap overflow. */
	text = malloc(size - 1 ? size - 1 : 1);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	switch (data[0] == 6 ? 6 : data[0] % 6) {
	case 0:
		check_vm_request(text, size - 1, true);
		break;
	case 1:
		check_vm_request(text, size - 1, false);
		break;
	case 2:
		check_set(text, size - 1);
		break;
	case 3:
		check_show(text, size - 1);
		break;
	case 4:
		check_config(text, size - 1);
		break;
	case 5:
		check_vm_file(text, size - 1);
		break;
	case 6:
		check_lease_request(text, size - 1);
		break;
	}
	free(text);
	return 0;
}
