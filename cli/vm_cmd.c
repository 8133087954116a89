/* weft vm: register and unregister VM addresses on the ports of weftd
 * (weft=vm-add, vm-del), list them, and make them those of a VM file
 * (`vm sync`, planned by mesh_text_vm_plan). docs/cli.md, "VM addresses". */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "mesh/text.h"

static const char vm_usage_text[] =
	"Usage: weft [-i IFNAME] vm add PORT CIDR...\n"
	"       weft [-i IFNAME] vm del CIDR...\n"
	"       weft [-i IFNAME] vm list [--json]\n"
	"       weft [-i IFNAME] vm sync FILE [-n|--dry-run]\n"
	"\n"
	"A VM address is an address of a port (`port add ... address`): weftd takes\n"
	"packets from the VM with it as source and routes it to the port. One inside\n"
	"a mesh prefix (`weft mesh show`) is also announced to the other hosts.\n"
	"\n"
	"add   registers up to 16 addresses (bare: /32 or /128; comma-separated lists\n"
	"      too) to the port PORT; addresses it already has are left alone. An\n"
	"      address of another port is refused: `vm del` it first.\n"
	"del   unregisters up to 256 addresses from whichever port holds them; if one\n"
	"      is registered nowhere, nothing is done.\n"
	"list  one line per address: its port, the address, and whether it is in a\n"
	"      mesh prefix; --json: every port with its addresses.\n"
	"sync  makes the addresses of every port exactly those FILE lists (lines of\n"
	"      PORT CIDR..., '#' comments); a port FILE does not name ends with none.\n"
	"      Port by port, it registers the new addresses and moves in those of\n"
	"      another port (unregistered there just before); what no port keeps is\n"
	"      removed last. Running it twice changes nothing the second time.\n"
	"      --dry-run prints the plan only.\n";

/* ---- add / del --------------------------------------------------------- */

/* Builds a vm-add (port set) or vm-del body from CIDR words, and checks it
 * with weftd's own parser so a mistake is named before weftd is asked. */
static int vm_body(const char *port, int argc, char **argv, const char *what, char **body)
{
	struct mesh_text_vm_request *req;
	struct text_buf b = { 0 };
	const char *why = NULL;
	size_t len = 0;
	bool ok = true;
	int ret;

	*body = NULL;
	if (port)
		ok &= cli_add_line(&b, "port", port, false);
	for (int i = 0; i < argc; i++)
		ok &= cli_add_line(&b, "address", argv[i], true);
	ret = cli_finish_body(&b, ok, what, body, &len);
	if (ret)
		return ret;
	req = malloc(sizeof(*req));
	ret = req ? mesh_text_parse_vm_request(*body, len, port != NULL, req, &why) : -ENOMEM;
	free(req);
	if (ret) {
		free(*body);
		*body = NULL;
		return cli_fail("%s: %s: %s", what, strerror(-ret), why ? why : "out of memory");
	}
	return EXIT_OK;
}

static int send_body(const char *verb, const char *body, const char *what)
{
	struct cli_reply r;
	int ret = cli_request(verb, body, what, &r);

	cli_reply_free(&r);
	return ret;
}

static int vm_add(int argc, char **argv)
{
	char what[64], *body;
	int ret;

	if (argc < 2)
		return cli_usage_error("vm add needs PORT and at least one CIDR");
	snprintf(what, sizeof(what), "vm add %.32s", argv[0]);
	ret = vm_body(argv[0], argc - 1, argv + 1, what, &body);
	if (ret)
		return ret;
	ret = send_body("vm-add", body, what);
	free(body);
	return ret;
}

static int vm_del(int argc, char **argv)
{
	char *body;
	int ret;

	if (argc < 1)
		return cli_usage_error("vm del needs at least one CIDR");
	ret = vm_body(NULL, argc, argv, "vm del", &body);
	if (ret)
		return ret;
	ret = send_body("vm-del", body, "vm del");
	free(body);
	return ret;
}

/* ---- list -------------------------------------------------------------- */

static void print_table(const struct port_info *ports, size_t n, const struct mesh_config *m)
{
	char s[IP_PREFIX_STRLEN];
	int wp = 4, wa = 7;
	bool any = false;

	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < ports[i].cfg.n_addrs; k++) {
			ip_prefix_format(&ports[i].cfg.addrs[k], s);
			wp = (int)strlen(ports[i].cfg.name) > wp ? (int)strlen(ports[i].cfg.name) : wp;
			wa = (int)strlen(s) > wa ? (int)strlen(s) : wa;
			any = true;
		}
	}
	if (!any)
		return;
	printf("%-*s  %-*s  %s\n", wp, "PORT", wa, "ADDRESS", "MESH");
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < ports[i].cfg.n_addrs; k++) {
			ip_prefix_format(&ports[i].cfg.addrs[k], s);
			printf("%-*s  %-*s  %s\n", wp, ports[i].cfg.name, wa, s,
			       mesh_text_in_prefix(m, &ports[i].cfg.addrs[k]) ? "yes" : "no");
		}
	}
}

static void print_json(const struct port_info *ports, size_t n, const struct mesh_config *m)
{
	char s[IP_PREFIX_STRLEN];

	printf("[");
	for (size_t i = 0; i < n; i++) {
		printf("%s\n  {\n    \"port\": ", i ? "," : "");
		cli_json_str(ports[i].cfg.name);
		printf(",\n    \"addresses\": [");
		for (size_t k = 0; k < ports[i].cfg.n_addrs; k++) {
			ip_prefix_format(&ports[i].cfg.addrs[k], s);
			printf("%s\n      { \"address\": \"%s\", \"mesh\": %s }", k ? "," : "", s,
			       mesh_text_in_prefix(m, &ports[i].cfg.addrs[k]) ? "true" : "false");
		}
		printf("%s]\n  }", ports[i].cfg.n_addrs ? "\n    " : "");
	}
	printf("%s]\n", n ? "\n" : "");
}

static int vm_list(int argc, char **argv)
{
	struct port_info *ports = NULL;
	struct mesh_text_show mesh;
	bool json = false;
	size_t n = 0;
	int ret;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--json"))
			return cli_usage_error("vm list: unknown argument '%s'", argv[i]);
		json = true;
	}
	ret = cli_fetch_ports(&ports, &n, "vm list");
	if (ret)
		return ret;
	ret = cli_fetch_mesh(&mesh, "vm list");
	if (ret) {
		free(ports);
		return ret;
	}
	if (json)
		print_json(ports, n, &mesh.cfg);
	else
		print_table(ports, n, &mesh.cfg);
	mesh_text_show_free(&mesh);
	free(ports);
	return EXIT_OK;
}

/* ---- sync -------------------------------------------------------------- */

/* Whether steps a and b can share a request: one kind, one port (so that
 * an error names the port). */
static bool same_request(const struct mesh_vm_step *a, const struct mesh_vm_step *b)
{
	return a->kind == b->kind && a->port == b->port;
}

/* Sends steps[0, n) (one kind, one port) as one request. */
static int send_steps(const struct mesh_vm_step *steps, size_t n, const struct mesh_text_vm *want,
		      const char *what)
{
	char s[IP_PREFIX_STRLEN], *body;
	struct text_buf b = { 0 };
	size_t len;
	int ret;

	if (steps[0].kind == MESH_VM_STEP_ADD)
		text_buf_printf(&b, "port=%s\n", want[steps[0].port].port);
	for (size_t i = 0; i < n; i++) {
		ip_prefix_format(&steps[i].addr, s);
		text_buf_printf(&b, "address=%s\n", s);
	}
	if (text_buf_finish(&b, &body, &len))
		return cli_fail("%s: %s", what, strerror(ENOMEM));
	ret = send_body(steps[0].kind == MESH_VM_STEP_ADD ? "vm-add" : "vm-del", body, what);
	free(body);
	return ret;
}

/* One line per address changed; the deletion half of a move says nothing. */
static void print_step(const struct mesh_vm_step *st, const struct mesh_text_vm *want,
		       const struct port_info *have, bool dry_run)
{
	const char *would = dry_run ? "would have " : "";
	char s[IP_PREFIX_STRLEN];

	ip_prefix_format(&st->addr, s);
	if (st->kind == MESH_VM_STEP_ADD && st->from == SIZE_MAX)
		printf("%sadded %s to %s\n", would, s, want[st->port].port);
	else if (st->kind == MESH_VM_STEP_ADD)
		printf("%smoved %s from %s to %s\n", would, s, have[st->from].cfg.name,
		       want[st->port].port);
	else if (st->from == SIZE_MAX)
		printf("%sremoved %s from %s\n", would, s, have[st->port].cfg.name);
}

static int vm_sync(int argc, char **argv)
{
	struct mesh_text_vm *want = NULL;
	struct port_info *have = NULL;
	struct mesh_vm_step *steps = NULL;
	struct mesh_vm_plan_counts counts;
	size_t n_want = 0, n_have = 0, n_steps = 0, len = 0, bad = 0, k;
	const char *file = NULL, *why = NULL;
	bool dry_run = false;
	char *text = NULL, what[64];
	int line = 0, ret;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--dry-run") || !strcmp(argv[i], "-n"))
			dry_run = true;
		else if (!file && (argv[i][0] != '-' || !strcmp(argv[i], "-")))
			file = argv[i];
		else
			return cli_usage_error("vm sync: unexpected argument '%s'", argv[i]);
	}
	if (!file)
		return cli_usage_error("vm sync needs a FILE");
	ret = cli_read_file(file, MESH_TEXT_MAX_FILE, &text, &len);
	if (ret)
		return cli_fail("vm sync: %s: %s", file, strerror(-ret));
	ret = mesh_text_parse_vm_file(text, len, &want, &n_want, &line, &why);
	free(text);
	if (ret) {
		if (line)
			return cli_fail("vm sync: %s:%d: %s: %s", file, line, strerror(-ret), why);
		return cli_fail("vm sync: %s: %s: %s", file, strerror(-ret), why);
	}
	ret = cli_fetch_ports(&have, &n_have, "vm sync");
	if (ret)
		goto out;
	ret = mesh_text_vm_plan(want, n_want, have, n_have, &steps, &n_steps, &counts, &bad);
	if (ret == -ENOENT) {
		ret = cli_fail("vm sync: %s: %s: no port %s", file, strerror(ENOENT), want[bad].port);
		goto out;
	}
	if (ret) {
		ret = cli_fail("vm sync: %s", strerror(-ret));
		goto out;
	}
	for (size_t i = 0; i < n_steps; i = k) {
		for (k = i + 1; k < n_steps && k - i < MESH_TEXT_MAX_DEL &&
				same_request(&steps[i], &steps[k]);
		     k++)
			;
		if (!dry_run) {
			if (steps[i].kind == MESH_VM_STEP_ADD)
				snprintf(what, sizeof(what), "vm sync: adding to %s",
					 want[steps[i].port].port);
			else
				snprintf(what, sizeof(what), "vm sync: removing from %s",
					 have[steps[i].port].cfg.name);
			ret = send_steps(&steps[i], k - i, want, what);
			if (ret)
				goto out;
		}
		for (size_t j = i; j < k; j++)
			print_step(&steps[j], want, have, dry_run);
	}
	printf("%s%zu added, %zu moved, %zu removed, %zu unchanged\n", dry_run ? "dry run: " : "",
	       counts.added, counts.moved, counts.removed, counts.unchanged);
	ret = EXIT_OK;
out:
	free(steps);
	free(have);
	free(want);
	return ret;
}

/* ---- dispatch ---------------------------------------------------------- */

static const struct cli_command vm_commands[] = {
	{ "add", vm_add, vm_usage_text, true },
	{ "del", vm_del, vm_usage_text, true },
	{ "list", vm_list, vm_usage_text, true },
	{ "sync", vm_sync, vm_usage_text, true },
};

int cli_vm(int argc, char **argv)
{
	return cli_dispatch_group("vm", vm_commands, sizeof(vm_commands) / sizeof(vm_commands[0]),
				  vm_usage_text, argc, argv);
}
