/* The text forms of a VM port (docs/cli.md): the body of a weft=port-add
 * request, the port-list reply, and the [Port] sections of a ports file;
 * plus what `weft port load` (and weftd --ports) does with a file: the
 * plan that turns the ports a device has into the ports a file lists.
 *
 * Every parser takes untrusted text with its length (no NUL needed), never
 * reads past it, and on success hands back configurations that passed
 * port_config_check. Reasons (*why) are static strings. */
#ifndef WEFT_PORT_TEXT_H
#define WEFT_PORT_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "port/config.h"

enum {
	PORT_TEXT_MAX_FILE = 1024 * 1024, /* bytes in a ports file */
	PORT_TEXT_MAC_LEN = 18,           /* "xx:xx:xx:xx:xx:xx" with the NUL */
};

/* Parses a port-add request body: key=value lines (name, type, path, mode,
 * mac, router_mac, gateway4, address..., prefix..., mtu), each ending in
 * '\n' (the last may lack it). 0, -EPROTO (a line without '='), or -EINVAL
 * (unknown or repeated key, bad value, or a configuration port_config_check
 * refuses); *why says what. out is set up by the call. The fuzz entry point. */
int port_text_parse_request(const char *text, size_t len, struct port_config *out,
			    const char **why);

/* The port-add body for cfg (as the CLI sends it). malloc'd, NUL-terminated
 * (not counted). 0 or -ENOMEM. */
int port_text_format_request(const struct port_config *cfg, char **out, size_t *len);

/* Parses a port-del body: exactly one name=NAME line. 0 or -EINVAL/-EPROTO. */
int port_text_parse_name(const char *text, size_t len, char name[PORT_NAME_MAX],
			 const char **why);

/* The port-list reply: one block per port, starting "port=NAME", with the
 * configuration as it is in effect (defaults filled in), the state and
 * every counter. malloc'd, NUL-terminated. 0 or -ENOMEM. */
int port_text_format_info(const struct port_info *ports, size_t n, char **out, size_t *len);

/* Parses a port-list reply (without the errno line) back: *out is a
 * malloc'd array of *n ports (NULL when none). Unknown keys inside a block
 * are skipped (a newer daemon may report more); anything else wrong is
 * -EINVAL/-EPROTO with *why. */
int port_text_parse_info(const char *text, size_t len, struct port_info **out, size_t *n,
			 const char **why);

/* Parses a ports file: [Port] sections of "Key = Value" lines, keys and
 * section names case-insensitive, '#' to the end of the line a comment,
 * Address and Prefix repeatable and comma-separated. *out is a malloc'd
 * array of *n checked ports (NULL when none). On failure *err_line is the
 * 1-based line at fault (0: the whole file), *why the reason: -EINVAL,
 * -E2BIG (over PORT_TEXT_MAX_FILE or PORT_MAX ports), -ENOMEM. Names and
 * addresses must be unique across the file. The fuzz entry point. */
int port_text_parse_file(const char *text, size_t len, struct port_config **out, size_t *n,
			 int *err_line, const char **why);

/* A ports file listing cfgs. malloc'd, NUL-terminated. 0 or -ENOMEM. */
int port_text_format_file(const struct port_config *cfgs, size_t n, char **out, size_t *len);

/* Fills in the defaults port_config_init leaves implicit: the MTU, the
 * router MAC, and the IPv4 gateway of a VM with IPv4 addresses. */
void port_text_normalize(struct port_config *cfg);

/* Whether a and b configure the same port: equal once normalized, with
 * addresses and prefixes compared as sets. */
bool port_text_same_config(const struct port_config *a, const struct port_config *b);

/* One step of a load plan. */
enum port_step_kind {
	PORT_STEP_DEL,     /* remove have[index] (not in the file, or replaced) */
	PORT_STEP_ADD,     /* add want[index] */
};

struct port_step {
	enum port_step_kind kind;
	size_t index;
	bool replace;      /* part of a del+add of a port whose config differs */
};

/* What turns the ports a device has into the ones wanted: every removal
 * first (ports that differ, and with prune the ports not wanted), then the
 * additions in the order wanted; ports that are the same are left alone,
 * so running a plan twice does nothing the second time. *steps is malloc'd
 * (NULL when there is nothing to do). -EEXIST with *why when a wanted port
 * would collide, by an address, with a port that stays (not wanted, no
 * prune): then nothing should be applied. 0, -EEXIST or -ENOMEM. */
int port_text_plan(const struct port_config *want, size_t n_want, const struct port_info *have,
		   size_t n_have, bool prune, struct port_step **steps, size_t *n_steps,
		   const char **why);

/* The addresses of a port that exists belong to VM registration (weft vm
 * add, del, sync), not to a ports file, which gives only the first ones:
 * want, when have lists a port of its name, takes that port's addresses.
 * True when they differed from want's (then say so), false when they were
 * the same or the port is new. The daemon's reload and `weft port load`
 * both apply it before port_text_plan. */
bool port_text_keep_registered(struct port_config *want, const struct port_info *have,
			       size_t n_have);

/* The counters of struct port_info as the port-list reply names them
 * ("rx_packets", ..., "drop_<reason>", "ndp_replies", "ndp_drops"), in
 * that order: a uint64_t at offset in struct port_info each. */
struct port_text_counter {
	const char *key;
	size_t offset;
	bool drop;         /* a drop_<reason> counter */
};
extern const struct port_text_counter port_text_counters[];
extern const size_t port_text_n_counters;

/* "tap", "vhost-user"; NULL for anything else. */
const char *port_text_type_name(enum port_type type);

/* "52:54:00:00:00:01", shared with the CLI (addresses and RA prefixes are
 * ip_prefix_format's). */
void port_text_mac(const uint8_t mac[6], char out[PORT_TEXT_MAC_LEN]);

#endif
