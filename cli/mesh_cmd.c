/* weft mesh: the host mesh of weftd (docs/mesh.md): change its mode and
 * prefixes (weft=mesh-set), and show them with the mesh's counters and the
 * locations it has learned (weft=mesh-show). docs/cli.md, "The mesh". */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "mesh/lease.h"
#include "mesh/text.h"

static const char mesh_usage_text[] =
	"Usage: weft [-i IFNAME] mesh set [mode off|unicast|multicast] [prefix CIDR]...\n"
	"                                 [lease-key KEY|none]\n"
	"       weft [-i IFNAME] mesh show [--json]\n"
	"\n"
	"set   changes the mesh: its discovery mode (multicast: solicit every\n"
	"      member; unicast: the address's home host; off), and its prefixes, the\n"
	"      VM address space (up to 8, none inside another; repeatable or\n"
	"      comma-separated). Prefixes given replace all the old ones; without\n"
	"      any, the prefixes stay as they are, and without a mode, the mode does.\n"
	"      lease-key: the mesh's Ed25519 public key (weft lease pubkey); with\n"
	"      it, a host is believed to hold an address only with a lease it signed\n"
	"      (weft lease add); none: any member is believed. Changing it forgets\n"
	"      what was learned and this host's leases.\n"
	"show  the mode, the prefixes, the lease key, every mesh counter, and the learned\n"
	"      locations (up to 1000) as ADDRESS -> HOLDER (the public key of the\n"
	"      host that has it) or ADDRESS -> negative (known to be nowhere);\n"
	"      --json: the same as one object.\n";

/* ---- set --------------------------------------------------------------- */

/* "lease_key=HEX" (or none) for the key in base64; false: not a key. */
static bool lease_key_line(struct text_buf *b, const char *text)
{
	uint8_t key[32];

	if (!strcmp(text, "none")) {
		text_buf_add(b, "lease_key=none\n", 15);
		return true;
	}
	if (mesh_lease_parse_key(text, strlen(text), key))
		return false;
	mesh_text_key_line(b, "lease_key", key);
	return true;
}

static int cmd_mesh_set(int argc, char **argv)
{
	struct mesh_text_set set;
	struct text_buf b = { 0 };
	struct cli_reply r;
	const char *why = NULL;
	char *body = NULL;
	size_t len = 0;
	bool ok = true;
	int ret;

	if (!argc)
		return cli_usage_error("mesh set needs mode, prefix or lease-key");
	for (int i = 0; i < argc; i += 2) {
		if (strcmp(argv[i], "mode") && strcmp(argv[i], "prefix") &&
		    strcmp(argv[i], "lease-key"))
			return cli_usage_error("mesh set: unknown word '%s'", argv[i]);
		if (i + 1 >= argc)
			return cli_usage_error("'%s' needs a value", argv[i]);
	}
	for (int i = 0; i < argc && ok; i += 2) {
		if (!strcmp(argv[i], "lease-key")) {
			if (!lease_key_line(&b, argv[i + 1])) {
				text_buf_free(&b);
				return cli_fail("mesh set: '%s' is not a public key in base64 (or none)",
						argv[i + 1]);
			}
			continue;
		}
		ok &= cli_add_line(&b, argv[i], argv[i + 1], !strcmp(argv[i], "prefix"));
	}
	ret = cli_finish_body(&b, ok, "mesh set", &body, &len);
	if (ret)
		return ret;
	/* Checked here first, so a mistake is named without asking weftd. */
	ret = mesh_text_parse_set(body, len, &set, &why);
	if (ret) {
		free(body);
		return cli_fail("mesh set: %s: %s", strerror(-ret), why);
	}
	ret = cli_request("mesh-set", body, "mesh set", &r);
	free(body);
	cli_reply_free(&r);
	return ret;
}

/* ---- show -------------------------------------------------------------- */

int cli_fetch_mesh(struct mesh_text_show *show, const char *what)
{
	const char *why = NULL;
	struct cli_reply r;
	int ret = cli_request("mesh-show", NULL, what, &r);

	memset(show, 0, sizeof(*show));
	if (ret)
		return ret;
	ret = mesh_text_parse_show(r.text, r.len, show, &why);
	cli_reply_free(&r);
	if (ret)
		return cli_fail("%s: the daemon's reply: %s: %s", what, strerror(-ret), why);
	return EXIT_OK;
}

static uint64_t counter(const struct mesh_text_show *m, size_t i)
{
	return *(const uint64_t *)((const char *)&m->stats + mesh_text_counters[i].offset);
}

static void print_text(const struct mesh_text_show *m)
{
	char s[IP_PREFIX_STRLEN], key[MESH_TEXT_KEY_LEN];
	const char *mode = mesh_text_mode_name(m->cfg.mode);

	printf("mode: %s\nprefixes:", mode ? mode : "?");
	for (size_t i = 0; i < m->cfg.n_prefixes; i++) {
		ip_prefix_format(&m->cfg.prefixes[i], s);
		printf("%s %s", i ? "," : "", s);
	}
	printf("%s\n", m->cfg.n_prefixes ? "" : " none");
	if (m->cfg.has_lease_key) {
		mesh_text_key_base64(m->cfg.lease_key, key);
		printf("lease key: %s\n", key);
	} else {
		printf("lease key: none (any member is believed)\n");
	}
	printf("counters:\n");
	for (size_t i = 0; i < mesh_text_n_counters; i++)
		printf("  %-18s %llu\n", mesh_text_counters[i].key,
		       (unsigned long long)counter(m, i));
	printf("routes:%s\n", m->n_routes ? "" : " none");
	for (size_t i = 0; i < m->n_routes; i++) {
		ip_prefix_format(&m->routes[i].prefix, s);
		if (m->routes[i].negative) {
			printf("  %s -> negative\n", s);
		} else {
			mesh_text_key_base64(m->routes[i].holder, key);
			printf("  %s -> %s\n", s, key);
		}
	}
	if (m->truncated)
		printf("  (the first %zu routes only)\n", m->n_routes);
}

static void print_json(const struct mesh_text_show *m)
{
	char s[IP_PREFIX_STRLEN], key[MESH_TEXT_KEY_LEN];
	const char *mode = mesh_text_mode_name(m->cfg.mode);

	printf("{\n  \"mode\": \"%s\",\n  \"prefixes\": [", mode ? mode : "?");
	for (size_t i = 0; i < m->cfg.n_prefixes; i++) {
		ip_prefix_format(&m->cfg.prefixes[i], s);
		printf("%s\"%s\"", i ? ", " : "", s);
	}
	printf("],\n  \"lease_key\": ");
	if (m->cfg.has_lease_key) {
		mesh_text_key_base64(m->cfg.lease_key, key);
		printf("\"%s\"", key);
	} else {
		printf("null");
	}
	printf(",\n  \"counters\": {");
	for (size_t i = 0; i < mesh_text_n_counters; i++)
		printf("%s\n    \"%s\": %llu", i ? "," : "", mesh_text_counters[i].key,
		       (unsigned long long)counter(m, i));
	printf("\n  },\n  \"routes\": [");
	for (size_t i = 0; i < m->n_routes; i++) {
		ip_prefix_format(&m->routes[i].prefix, s);
		printf("%s\n    { \"address\": \"%s\", \"holder\": ", i ? "," : "", s);
		if (m->routes[i].negative) {
			printf("null");
		} else {
			mesh_text_key_base64(m->routes[i].holder, key);
			printf("\"%s\"", key);
		}
		printf(", \"negative\": %s, \"seq\": %llu }",
		       m->routes[i].negative ? "true" : "false",
		       (unsigned long long)m->routes[i].seq);
	}
	printf("%s],\n  \"routes_truncated\": %s\n}\n", m->n_routes ? "\n  " : "",
	       m->truncated ? "true" : "false");
}

static int cmd_mesh_show(int argc, char **argv)
{
	struct mesh_text_show m;
	bool json = false;
	int ret;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--json"))
			return cli_usage_error("mesh show: unknown argument '%s'", argv[i]);
		json = true;
	}
	ret = cli_fetch_mesh(&m, "mesh show");
	if (ret)
		return ret;
	if (json)
		print_json(&m);
	else
		print_text(&m);
	mesh_text_show_free(&m);
	return EXIT_OK;
}

/* ---- dispatch ---------------------------------------------------------- */

static const struct cli_command mesh_commands[] = {
	{ "set", cmd_mesh_set, mesh_usage_text, true },
	{ "show", cmd_mesh_show, mesh_usage_text, true },
};

int cli_mesh(int argc, char **argv)
{
	return cli_dispatch_group("mesh", mesh_commands, sizeof(mesh_commands) / sizeof(mesh_commands[0]),
				  mesh_usage_text, argc, argv);
}
