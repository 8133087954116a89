/* libFuzzer target for the text forms of a VM port (port/text.c), the
 * functions weftd calls on every weft=port-add / port-del body and the CLI
 * on every port-list reply and ports file. The first byte picks the parser
 * (0 request, 1 ports file, 2 port-list reply, 3 port-del body), the rest
 * is its text, in an exact-size copy so ASan sees any read past the end.
 *
 * What parses must pass port_config_check, format back to text that parses
 * to the same ports field by field and formats to the same text again; a
 * file's ports have distinct names and addresses, and loading a file onto
 * its own ports plans nothing. What fails leaves nothing behind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "port/text.h"

#define CHECK(cond)                                                                      \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "fuzz_port_text: check failed at %s:%d: %s\n",   \
				__FILE__, __LINE__, #cond);                              \
			abort();                                                         \
		}                                                                        \
	} while (0)

static bool identical(const struct port_config *a, const struct port_config *b)
{
	if (strcmp(a->name, b->name) || a->type != b->type || strcmp(a->path, b->path) ||
	    a->server != b->server || memcmp(a->vm_mac, b->vm_mac, 6) ||
	    a->has_router_mac != b->has_router_mac || a->has_gateway4 != b->has_gateway4 ||
	    a->n_addrs != b->n_addrs || a->n_prefixes != b->n_prefixes || a->mtu != b->mtu ||
	    a->has_socket_uid != b->has_socket_uid || a->socket_uid != b->socket_uid ||
	    a->has_socket_gid != b->has_socket_gid || a->socket_gid != b->socket_gid ||
	    a->socket_mode != b->socket_mode)
		return false;
	if ((a->has_router_mac && memcmp(a->router_mac, b->router_mac, 6)) ||
	    (a->has_gateway4 && memcmp(a->gateway4, b->gateway4, 4)))
		return false;
	for (size_t i = 0; i < a->n_addrs; i++)
		if (a->addrs[i].family != b->addrs[i].family || a->addrs[i].cidr != b->addrs[i].cidr ||
		    memcmp(a->addrs[i].addr, b->addrs[i].addr, 16))
			return false;
	for (size_t i = 0; i < a->n_prefixes; i++)
		if (a->prefixes[i].family != b->prefixes[i].family ||
		    a->prefixes[i].cidr != b->prefixes[i].cidr ||
		    memcmp(a->prefixes[i].addr, b->prefixes[i].addr, 16))
			return false;
	return true;
}

static void check_request(const char *text, size_t len)
{
	struct port_config a, b;
	const char *why = NULL;
	char *t1 = NULL, *t2 = NULL;
	size_t l1, l2;

	if (port_text_parse_request(text, len, &a, &why)) {
		CHECK(why && !a.name[0] && !a.n_addrs);
		return;
	}
	CHECK(port_config_check(&a, &why) == 0);
	CHECK(port_text_format_request(&a, &t1, &l1) == 0 && strlen(t1) == l1);
	CHECK(port_text_parse_request(t1, l1, &b, &why) == 0);
	CHECK(identical(&a, &b));
	CHECK(port_text_format_request(&b, &t2, &l2) == 0 && l1 == l2 && !memcmp(t1, t2, l1));
	CHECK(port_text_same_config(&a, &b));
	free(t1);
	free(t2);
}

static void check_file(const char *text, size_t len)
{
	struct port_config *a = NULL, *b = NULL;
	struct port_info *have = NULL;
	struct port_step *steps = NULL;
	size_t na = 0, nb = 0, ns = 0, l1, l2;
	char *t1 = NULL, *t2 = NULL;
	const char *why = NULL;
	int line = -1;

	if (port_text_parse_file(text, len, &a, &na, &line, &why)) {
		CHECK(!a && !na && why && line >= 0);
		return;
	}
	CHECK(line == 0 && na <= PORT_MAX && (na == 0) == (a == NULL));
	for (size_t i = 0; i < na; i++) {
		CHECK(port_config_check(&a[i], &why) == 0);
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(a[i].name, a[j].name));
	}
	CHECK(port_text_format_file(a, na, &t1, &l1) == 0 && strlen(t1) == l1);
	CHECK(port_text_parse_file(t1, l1, &b, &nb, &line, &why) == 0 && nb == na);
	for (size_t i = 0; i < na; i++)
		CHECK(identical(&a[i], &b[i]));
	CHECK(port_text_format_file(b, nb, &t2, &l2) == 0 && l1 == l2 && !memcmp(t1, t2, l1));

	/* Loaded onto a device that has exactly these ports: nothing to do;
	 * onto an empty one: every port added, in the file's order. */
	if (na) {
		have = calloc(na, sizeof(*have));
		CHECK(have);
		for (size_t i = 0; i < na; i++)
			have[i].cfg = a[i];
	}
	CHECK(port_text_plan(a, na, have, na, true, &steps, &ns, &why) == 0 && ns == 0 && !steps);
	CHECK(port_text_plan(a, na, NULL, 0, true, &steps, &ns, &why) == 0 && ns == na);
	for (size_t i = 0; i < ns; i++)
		CHECK(steps[i].kind == PORT_STEP_ADD && steps[i].index == i && !steps[i].replace);
	free(steps);
	free(have);
	free(t1);
	free(t2);
	free(a);
	free(b);
}

static void check_info(const char *text, size_t len)
{
	struct port_info *a = NULL, *b = NULL;
	size_t na = 0, nb = 0, l1, l2;
	char *t1 = NULL, *t2 = NULL;
	const char *why = NULL;

	if (port_text_parse_info(text, len, &a, &na, &why)) {
		CHECK(!a && !na && why);
		return;
	}
	CHECK(na <= PORT_MAX);
	CHECK(port_text_format_info(a, na, &t1, &l1) == 0 && strlen(t1) == l1);
	CHECK(port_text_parse_info(t1, l1, &b, &nb, &why) == 0 && nb == na);
	for (size_t i = 0; i < na; i++) {
		struct port_config want = a[i].cfg;

		CHECK(port_config_check(&a[i].cfg, &why) == 0);
		/* The list shows the defaults in effect. */
		port_text_normalize(&want);
		CHECK(identical(&want, &b[i].cfg));
		CHECK(a[i].connected == b[i].connected);
		for (size_t k = 0; k < port_text_n_counters; k++) {
			size_t off = port_text_counters[k].offset;

			CHECK(!memcmp((char *)&a[i] + off, (char *)&b[i] + off, sizeof(uint64_t)));
		}
	}
	CHECK(port_text_format_info(b, nb, &t2, &l2) == 0 && l1 == l2 && !memcmp(t1, t2, l1));
	free(t1);
	free(t2);
	free(a);
	free(b);
}

static void check_name(const char *text, size_t len)
{
	char name[PORT_NAME_MAX], again[PORT_NAME_MAX], line[PORT_NAME_MAX + 8];
	const char *why = NULL;
	int n;

	if (port_text_parse_name(text, len, name, &why)) {
		CHECK(why);
		return;
	}
	n = snprintf(line, sizeof(line), "name=%s\n", name);
	CHECK(n > 6 && port_text_parse_name(line, (size_t)n, again, &why) == 0);
	CHECK(!strcmp(name, again));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;
	size_t len;

	if (!size)
		return 0;
	len = size - 1;
	text = malloc(len ? len : 1);
	CHECK(text);
	memcpy(text, data + 1, len);
	switch (data[0] & 3) {
	case 0:
		check_request(text, len);
		break;
	case 1:
		check_file(text, len);
		break;
	case 2:
		check_info(text, len);
		break;
	default:
		check_name(text, len);
		break;
	}
	free(text);
	return 0;
}
