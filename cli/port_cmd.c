/* weft port: add, remove, list and load the VM ports of weftd (docs/cli.md,
 * "Command line" and "The ports file"). The text forms of a port and the
 * load plan are port/text.c's; this is the command line around them. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "port/text.h"

static const char port_usage_text[] =
	"Usage: weft [-i IFNAME] port add NAME tap|vhost-user|attached [PATH [server|client]]\n"
	"                 mac MAC\n"
	"                 [address CIDR]... [prefix CIDR]... [gateway4 IP] [mtu N]\n"
	"                 [router-mac MAC]\n"
	"                 [socket-owner USER] [socket-group GROUP] [socket-mode MODE]\n"
	"       weft [-i IFNAME] port del NAME\n"
	"       weft [-i IFNAME] port list [--json]\n"
	"       weft [-i IFNAME] port load FILE [--prune] [-n|--dry-run]\n"
	"\n"
	"add   NAME is the tap's netdev name (1-15 of a-z A-Z 0-9 . - _). A vhost-user\n"
	"      port needs the absolute PATH of its socket; weftd listens on it\n"
	"      (server, the default) or connects to it (client). An attached port is\n"
	"      an existing netdev weftd does not own (a VMM's tap, a host-side veth).\n"
	"        mac MAC          the VM's MAC (required)\n"
	"        address CIDR     an address of the VM (bare: /32 or /128) or a prefix\n"
	"                         routed to it; repeatable, or comma-separated\n"
	"        prefix CIDR      an IPv6 prefix announced in router advertisements\n"
	"        gateway4 IP      the VM's IPv4 gateway (default 169.254.1.1)\n"
	"        mtu N            1280 to 9000 (default 1500)\n"
	"        router-mac MAC   the router side's MAC (default 02:77:65:66:74:01)\n"
	"        socket-owner USER, socket-group GROUP, socket-mode MODE\n"
	"                         a vhost-user server socket's owner, group and\n"
	"                         octal mode (default root, root, 0600), so that a\n"
	"                         VMM run as another user can connect\n"
	"del   removes the port NAME.\n"
	"list  a table of name, type, MAC, addresses, state, rx/tx packets and drops;\n"
	"      --json: every field and counter.\n"
	"load  adds the ports of FILE ([Port] sections, see docs/cli.md) that are\n"
	"      missing, replaces (removes and adds) those that differ, and with\n"
	"      --prune removes the ports FILE does not list. A port that exists keeps\n"
	"      the addresses weft vm gave it: FILE's apply when it creates one.\n"
	"      Running it twice changes nothing the second time. --dry-run prints\n"
	"      the plan only.\n";

/* ---- port add / del ---------------------------------------------------- */

static int send_add(const struct port_config *cfg, const char *what)
{
	struct cli_reply r;
	char *body;
	size_t len;
	int ret;

	if (port_text_format_request(cfg, &body, &len))
		return cli_fail("%s: %s", what, strerror(ENOMEM));
	ret = cli_request("port-add", body, what, &r);
	free(body);
	cli_reply_free(&r);
	return ret;
}

static int send_del(const char *name, const char *what)
{
	struct cli_reply r;
	char body[PORT_NAME_MAX + 8];
	int ret;

	snprintf(body, sizeof(body), "name=%s\n", name);
	ret = cli_request("port-del", body, what, &r);
	cli_reply_free(&r);
	return ret;
}

/* The words after "mac", "address"...: request keys. */
static const struct add_word {
	const char *word;
	const char *key;
} add_words[] = {
	{ "mac", "mac" },           { "address", "address" }, { "prefix", "prefix" },
	{ "gateway4", "gateway4" }, { "mtu", "mtu" },         { "router-mac", "router_mac" },
	{ "socket-owner", "socket_owner" }, { "socket-group", "socket_group" },
	{ "socket-mode", "socket_mode" },
};

static const char *add_key(const char *word)
{
	for (size_t i = 0; i < sizeof(add_words) / sizeof(add_words[0]); i++)
		if (!strcmp(word, add_words[i].word))
			return add_words[i].key;
	return NULL;
}

static int cmd_port_add(int argc, char **argv)
{
	struct port_config cfg;
	const char *why = NULL, *key;
	struct text_buf b = { 0 };
	char *body = NULL, what[64];
	size_t len = 0;
	int i = 2, ret;
	bool vhost, ok = true;

	if (argc < 2)
		return cli_usage_error("port add needs NAME and a type");
	snprintf(what, sizeof(what), "port add %s", argv[0]);
	ok &= cli_add_line(&b, "name", argv[0], false);
	ok &= cli_add_line(&b, "type", argv[1], false);
	vhost = !strcmp(argv[1], "vhost-user");
	if (vhost && i < argc && !add_key(argv[i]))
		ok &= cli_add_line(&b, "path", argv[i++], false);
	if (vhost && i < argc && (!strcmp(argv[i], "server") || !strcmp(argv[i], "client")))
		ok &= cli_add_line(&b, "mode", argv[i++], false);
	for (; i < argc; i += 2) {
		key = add_key(argv[i]);
		if (!key || i + 1 >= argc) {
			text_buf_free(&b);
			return key ? cli_usage_error("'%s' needs a value", argv[i])
				   : cli_usage_error("port add: unknown word '%s'", argv[i]);
		}
		ok &= cli_add_line(&b, key, argv[i + 1],
				   !strcmp(key, "address") || !strcmp(key, "prefix"));
	}
	ret = cli_finish_body(&b, ok, what, &body, &len);
	if (ret)
		return ret;
	/* Checked here first, so a mistake is named without asking weftd. */
	ret = port_text_parse_request(body, len, &cfg, &why);
	free(body);
	if (ret)
		return cli_fail("%s: %s: %s", what, strerror(-ret), why);
	return send_add(&cfg, what);
}

static int cmd_port_del(int argc, char **argv)
{
	char what[64];

	if (argc != 1)
		return cli_usage_error("port del takes one NAME");
	if (strpbrk(argv[0], "\n\r"))
		return cli_fail("port del: %s", strerror(EINVAL));
	snprintf(what, sizeof(what), "port del %.32s", argv[0]);
	return send_del(argv[0], what);
}

/* ---- port list --------------------------------------------------------- */

int cli_fetch_ports(struct port_info **ports, size_t *n, const char *what)
{
	const char *why = NULL;
	struct cli_reply r;
	int ret = cli_request("port-list", NULL, what, &r);

	if (ret)
		return ret;
	ret = port_text_parse_info(r.text, r.len, ports, n, &why);
	cli_reply_free(&r);
	if (ret)
		return cli_fail("%s: the daemon's reply: %s: %s", what, strerror(-ret), why);
	return EXIT_OK;
}

static uint64_t counter(const struct port_info *p, size_t i)
{
	return *(const uint64_t *)((const char *)p + port_text_counters[i].offset);
}

static uint64_t drops(const struct port_info *p)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < port_text_n_counters; i++)
		if (port_text_counters[i].drop)
			sum += counter(p, i);
	return sum;
}

/* Addresses joined by ',' ("-" when none). */
static void join_addrs(const struct port_config *c, char *out, size_t cap)
{
	char s[IP_PREFIX_STRLEN];
	size_t o = 0;

	snprintf(out, cap, "-");
	for (size_t i = 0; i < c->n_addrs && o < cap; i++) {
		ip_prefix_format(&c->addrs[i], s);
		o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? "," : "", s);
	}
}

static void print_table(const struct port_info *ports, size_t n)
{
	char addrs[PORT_MAX_ADDRS * IP_PREFIX_STRLEN], mac[PORT_TEXT_MAC_LEN];
	int wn = 4, wa = 9;

	for (size_t i = 0; i < n; i++) {
		join_addrs(&ports[i].cfg, addrs, sizeof(addrs));
		wn = (int)strlen(ports[i].cfg.name) > wn ? (int)strlen(ports[i].cfg.name) : wn;
		wa = (int)strlen(addrs) > wa ? (int)strlen(addrs) : wa;
	}
	if (!n)
		return;
	printf("%-*s  %-10s  %-17s  %-*s  %-5s  %10s  %10s  %8s\n", wn, "NAME", "TYPE", "MAC", wa,
	       "ADDRESSES", "STATE", "RX-PACKETS", "TX-PACKETS", "DROPS");
	for (size_t i = 0; i < n; i++) {
		const struct port_info *p = &ports[i];

		join_addrs(&p->cfg, addrs, sizeof(addrs));
		port_text_mac(p->cfg.vm_mac, mac);
		printf("%-*s  %-10s  %-17s  %-*s  %-5s  %10llu  %10llu  %8llu\n", wn, p->cfg.name,
		       port_text_type_name(p->cfg.type), mac, wa, addrs, p->connected ? "up" : "down",
		       (unsigned long long)p->rx_packets, (unsigned long long)p->tx_packets,
		       (unsigned long long)drops(p));
	}
}

static void json_port(const struct port_info *p)
{
	const struct port_config *c = &p->cfg;
	char s[IP_PREFIX_STRLEN];

	printf("  {\n    \"name\": ");
	cli_json_str(c->name);
	printf(",\n    \"type\": \"%s\",\n    \"path\": ", port_text_type_name(c->type));
	if (c->type == PORT_VHOST_USER) {
		cli_json_str(c->path);
		printf(",\n    \"mode\": \"%s\"", c->server ? "server" : "client");
		if (c->server) {
			printf(",\n    \"socket_owner\": %ld,\n    \"socket_group\": %ld",
			       c->has_socket_uid ? (long)c->socket_uid : 0L,
			       c->has_socket_gid ? (long)c->socket_gid : 0L);
			printf(",\n    \"socket_mode\": \"%04o\"", c->socket_mode ? c->socket_mode : 0600);
		}
	} else {
		printf("null,\n    \"mode\": null");
	}
	port_text_mac(c->vm_mac, s);
	printf(",\n    \"mac\": \"%s\"", s);
	port_text_mac(c->router_mac, s);
	printf(",\n    \"router_mac\": \"%s\",\n    \"gateway4\": ", s);
	if (c->has_gateway4)
		printf("\"%u.%u.%u.%u\"", c->gateway4[0], c->gateway4[1], c->gateway4[2],
		       c->gateway4[3]);
	else
		printf("null");
	printf(",\n    \"addresses\": [");
	for (size_t i = 0; i < c->n_addrs; i++) {
		ip_prefix_format(&c->addrs[i], s);
		printf("%s\"%s\"", i ? ", " : "", s);
	}
	printf("],\n    \"prefixes\": [");
	for (size_t i = 0; i < c->n_prefixes; i++) {
		ip_prefix_format(&c->prefixes[i], s);
		printf("%s\"%s\"", i ? ", " : "", s);
	}
	printf("],\n    \"mtu\": %u,\n    \"connected\": %s,\n    \"counters\": {", c->mtu,
	       p->connected ? "true" : "false");
	for (size_t i = 0; i < port_text_n_counters; i++)
		printf("%s\n      \"%s\": %llu", i ? "," : "", port_text_counters[i].key,
		       (unsigned long long)counter(p, i));
	printf("\n    }\n  }");
}

static int cmd_port_list(int argc, char **argv)
{
	struct port_info *ports = NULL;
	size_t n = 0;
	bool json = false;
	int ret;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--json"))
			return cli_usage_error("port list: unknown argument '%s'", argv[i]);
		json = true;
	}
	ret = cli_fetch_ports(&ports, &n, "port list");
	if (ret)
		return ret;
	if (json) {
		printf("[");
		for (size_t i = 0; i < n; i++) {
			printf("%s\n", i ? "," : "");
			json_port(&ports[i]);
		}
		printf("%s]\n", n ? "\n" : "");
	} else {
		print_table(ports, n);
	}
	free(ports);
	return EXIT_OK;
}

/* ---- port load --------------------------------------------------------- */

static int cmd_port_load(int argc, char **argv)
{
	struct port_config *want = NULL;
	struct port_info *have = NULL;
	struct port_step *steps = NULL;
	size_t n_want = 0, n_have = 0, n_steps = 0, len = 0, added = 0, replaced = 0, removed = 0;
	const char *file = NULL, *why = NULL, *name;
	bool prune = false, dry_run = false;
	char *text = NULL, what[64];
	int line = 0, ret;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--prune"))
			prune = true;
		else if (!strcmp(argv[i], "--dry-run") || !strcmp(argv[i], "-n"))
			dry_run = true;
		else if (!file && (argv[i][0] != '-' || !strcmp(argv[i], "-")))
			file = argv[i];
		else
			return cli_usage_error("port load: unexpected argument '%s'", argv[i]);
	}
	if (!file)
		return cli_usage_error("port load needs a FILE");
	ret = cli_read_file(file, PORT_TEXT_MAX_FILE, &text, &len);
	if (ret)
		return cli_fail("port load: %s: %s", file, strerror(-ret));
	ret = port_text_parse_file(text, len, &want, &n_want, &line, &why);
	free(text);
	if (ret) {
		if (line)
			return cli_fail("port load: %s:%d: %s: %s", file, line, strerror(-ret), why);
		return cli_fail("port load: %s: %s: %s", file, strerror(-ret), why);
	}
	ret = cli_fetch_ports(&have, &n_have, "port load");
	if (ret)
		goto out;
	for (size_t j = 0; j < n_want; j++)
		if (port_text_keep_registered(&want[j], have, n_have))
			printf("%s keeps its registered addresses (weft vm changes them)\n",
			       want[j].name);
	if ((ret = port_text_plan(want, n_want, have, n_have, prune, &steps, &n_steps, &why))) {
		ret = cli_fail("port load: %s: %s", strerror(-ret), why);
		goto out;
	}
	for (size_t i = 0; i < n_steps; i++) {
		bool del = steps[i].kind == PORT_STEP_DEL;

		name = del ? have[steps[i].index].cfg.name : want[steps[i].index].name;
		snprintf(what, sizeof(what), "port load: %s %s", del ? "removing" : "adding", name);
		if (!dry_run) {
			ret = del ? send_del(name, what) : send_add(&want[steps[i].index], what);
			if (ret)
				goto out;
		}
		/* A replaced port reports once, at its addition. */
		if (del && !steps[i].replace)
			removed++;
		else if (!del)
			steps[i].replace ? replaced++ : added++;
		if (!del || !steps[i].replace)
			printf("%s%s %s\n", dry_run ? "would have " : "",
			       del ? "removed" : steps[i].replace ? "replaced" : "added", name);
	}
	printf("%s%zu added, %zu replaced, %zu removed, %zu unchanged\n", dry_run ? "dry run: " : "",
	       added, replaced, removed, n_want - added - replaced);
	ret = EXIT_OK;
out:
	free(steps);
	free(have);
	free(want);
	return ret;
}

static const struct cli_command port_commands[] = {
	{ "add", cmd_port_add, port_usage_text, true },
	{ "del", cmd_port_del, port_usage_text, true },
	{ "list", cmd_port_list, port_usage_text, true },
	{ "load", cmd_port_load, port_usage_text, true },
};

int cli_port(int argc, char **argv)
{
	return cli_dispatch_group("port", port_commands, sizeof(port_commands) / sizeof(port_commands[0]),
				  port_usage_text, argc, argv);
}
