/* What the parts of the weft CLI share: reporting, the request/reply
 * exchange with weftd (weft.c), subcommand tables, and the helpers more
 * than one command group uses. One file per command group: port_cmd.c,
 * vm_cmd.c, mesh_cmd.c, lease_cmd.c. */
#ifndef WEFT_CLI_CLI_H
#define WEFT_CLI_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "mesh/text.h"
#include "port/config.h"
#include "text/text.h"

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2 };

/* "weft: MESSAGE" on stderr; EXIT_ERROR. */
__attribute__((format(printf, 1, 2))) int cli_fail(const char *fmt, ...);
/* "weft: MESSAGE (see 'weft --help')" on stderr; EXIT_USAGE. */
__attribute__((format(printf, 1, 2))) int cli_usage_error(const char *fmt, ...);

/* A daemon's answer: the lines before "errno=", and that errno (positive). */
struct cli_reply {
	char *text;
	size_t len;
	int err;
	bool negative; /* "errno=-N": a wireguard-go style refusal of the request */
};

void cli_reply_free(struct cli_reply *r);
/* Sends request (whole, with its empty line) and reads up to "errno=N\n\n".
 * 0 or -errno. */
int cli_exchange(const char *request, size_t len, struct cli_reply *r);
/* Reports a failed exchange (ret < 0) or a failed request; what names the
 * action. The exit code. */
int cli_report(const char *what, int ret, const struct cli_reply *r);
/* One weft=VERB request with a body (NULL: none); 0 or the exit code,
 * reported. On success *r holds the reply, for cli_reply_free. */
int cli_request(const char *verb, const char *body, const char *what, struct cli_reply *r);

/* A subcommand: its name, what runs it, the help -h/--help among its
 * arguments prints (NULL: it handles them itself), and whether it talks
 * to weftd (the socket is found before it runs). */
struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
	bool needs_socket;
};

bool cli_is_help(const char *arg);
/* Runs the entry of table named argv[0]; what names the kind of word in
 * the error for an unknown one. */
int cli_dispatch(const struct cli_command *table, size_t n, int argc, char **argv,
		 const char *what);
/* weft GROUP ARGS...: the group's usage for help (or "help"), a usage
 * error naming its commands for none, else cli_dispatch. */
int cli_dispatch_group(const char *group, const struct cli_command *table, size_t n,
		       const char *usage, int argc, char **argv);

/* Reads a file ("-": stdin) whole, up to max + 1 bytes (a parser refuses
 * what is over max). *text is malloc'd. 0 or -errno. */
int cli_read_file(const char *path, size_t max, char **text, size_t *len);
/* Appends "key=value\n", or one line per comma-separated item of value
 * when list; false for a value with a line break. */
bool cli_add_line(struct text_buf *b, const char *key, const char *value, bool list);
/* Hands over the body built in b (malloc'd, NUL-terminated), ok false when
 * a cli_add_line refused a value: EXIT_OK, or the exit code of the failure
 * (that value, or memory that ran out), reported as "WHAT: ..."; b is
 * empty after either. */
int cli_finish_body(struct text_buf *b, bool ok, const char *what, char **body, size_t *len);
/* A JSON string on stdout: quotes, backslashes and control bytes escaped. */
void cli_json_str(const char *s);

/* The port-list reply, parsed (port_cmd.c). 0 or the exit code, reported. */
int cli_fetch_ports(struct port_info **ports, size_t *n, const char *what);
/* The mesh-show reply, parsed (mesh_cmd.c). 0 or the exit code, reported. */
int cli_fetch_mesh(struct mesh_text_show *show, const char *what);

/* The command groups: weft port|vm|mesh|lease ARGS... */
int cli_port(int argc, char **argv);
int cli_vm(int argc, char **argv);
int cli_mesh(int argc, char **argv);
int cli_lease(int argc, char **argv);

/* The UAPI socket of this run, once a command that needs it started. */
const char *cli_socket_path(void);
/* weft show and weft metrics (show_cmd.c, metrics_cmd.c), with their help. */
extern const char cmd_show_usage[], cmd_metrics_usage[];
int cmd_show(int argc, char **argv);
int cmd_metrics(int argc, char **argv);

#endif
