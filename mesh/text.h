/* The text forms of the mesh (docs/cli.md): the bodies of the weft=vm-add,
 * vm-del and mesh-set requests, the mesh-show reply, a mesh config file
 * ([Mesh] with Mode and Prefix) and a VM file (`weft vm sync`); plus the
 * plan that turns the VM addresses a host has into those a VM file lists.
 *
 * Every parser takes untrusted text with its length (no NUL needed), never
 * reads past it, and checks every value before it hands anything back.
 * Reasons (*why) are static strings. This module uses mesh/mesh.h for its
 * structs only; of weft it links only pkt/ (the prefix) and tun/'s text
 * helpers. */
#ifndef WEFT_MESH_TEXT_H
#define WEFT_MESH_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mesh/lease.h"
#include "mesh/types.h"
#include "pkt/prefix.h"
#include "port/config.h"
#include "text/text.h"

enum {
	MESH_TEXT_MAX_FILE = 1024 * 1024,  /* bytes in a VM or mesh file */
	MESH_TEXT_MAX_DEL = 256,           /* addresses in one vm-del request */
	MESH_TEXT_MAX_ROUTES = 1000,       /* routes in a mesh-show reply */
	MESH_TEXT_KEY_LEN = 45,            /* a key in base64, with the NUL */
};

/* ---- values ---- */

/* How every mesh text form reads a CIDR (ip_prefix_parse): "addr" or
 * "addr/len", a bare address a host (/32, /128); host bits must be clear
 * and the length not 0. ip_prefix_format prints it. */
enum {
	MESH_TEXT_CIDR = IP_PREFIX_LEN_OPTIONAL | IP_PREFIX_NO_ZERO_LEN | IP_PREFIX_NO_HOST_BITS,
};
/* Whether a lies inside one of cfg's prefixes. */
bool mesh_text_in_prefix(const struct mesh_config *cfg, const struct ip_prefix *a);

/* "off", "unicast", "multicast"; NULL for anything else. */
const char *mesh_text_mode_name(enum mesh_mode mode);
/* A public key in standard base64 (44 characters). */
void mesh_text_key_base64(const uint8_t key[32], char out[MESH_TEXT_KEY_LEN]);
/* "NAME=" and a key in 64 lower-case hex digits, then a line break, as the
 * control requests and replies carry keys. */
void mesh_text_key_line(struct text_buf *b, const char *name, const uint8_t key[32]);

/* ---- vm-add and vm-del bodies ---- */

/* A vm-add body is "port=NAME" and 1 to PORT_MAX_ADDRS "address=CIDR"
 * lines; a vm-del body 1 to MESH_TEXT_MAX_DEL address lines and no port.
 * No address twice. */
struct mesh_text_vm_request {
	char port[PORT_NAME_MAX];       /* "" in a vm-del */
	struct ip_prefix addrs[MESH_TEXT_MAX_DEL];
	size_t n_addrs;
};

/* with_port: a vm-add body (else vm-del). 0, -EPROTO (a line without '='),
 * -EINVAL with *why. The fuzz entry point. */
int mesh_text_parse_vm_request(const char *text, size_t len, bool with_port,
			       struct mesh_text_vm_request *out, const char **why);

/* ---- lease-add body ---- */

enum { MESH_TEXT_MAX_LEASES = 16 };

/* 1 to MESH_TEXT_MAX_LEASES "lease=TEXT" lines (mesh_lease_parse's text
 * form). Signatures are the mesh's to check (mesh_lease_add). */
struct mesh_text_lease_request {
	struct mesh_lease leases[MESH_TEXT_MAX_LEASES];
	size_t n;
};

/* 0, -EPROTO (a line without '='), -EINVAL with *why. The fuzz entry
 * point. */
int mesh_text_parse_lease_request(const char *text, size_t len,
				  struct mesh_text_lease_request *out, const char **why);

/* ---- mesh-set body ---- */

/* "mode=off|unicast|multicast" at most once, "prefix=CIDR" up to
 * MESH_MAX_PREFIXES times (none twice, none inside another),
 * "lease_key=HEX|none" (the Ed25519 public key in 64 hex digits) at most
 * once; at least one of them. */
struct mesh_text_set {
	bool has_mode;
	enum mesh_mode mode;
	struct ip_prefix prefixes[MESH_MAX_PREFIXES];
	size_t n_prefixes;               /* 0: keep the prefixes there are */
	bool set_lease_key;              /* "lease_key=HEX" or "lease_key=none" */
	bool has_lease_key;              /* with set_lease_key: not none */
	uint8_t lease_key[32];
};

int mesh_text_parse_set(const char *text, size_t len, struct mesh_text_set *out,
			const char **why);

/* get-modify-set: cfg (what the mesh has) with set applied. */
void mesh_text_apply_set(const struct mesh_text_set *set, struct mesh_config *cfg);

/* ---- mesh-show reply ---- */

/* The counters of struct mesh_stats as the reply names them: every one
 * of MESH_COUNTERS, then "locations" and "pending"; a uint64_t at
 * offset each. */
struct mesh_text_counter {
	const char *key;
	size_t offset;
};
extern const struct mesh_text_counter mesh_text_counters[];
extern const size_t mesh_text_n_counters;

/* "mode=", "prefix=" lines, "lease_key=HEX" with a lease key, every counter, "routes_truncated=true|false",
 * then one block per route: "route=CIDR", "holder=HEX" (the holder's public
 * key; absent for a negative entry), "negative=true|false", "seq=N".
 * malloc'd, NUL-terminated. 0 or -ENOMEM. */
int mesh_text_format_show(const struct mesh_config *cfg, const struct mesh_stats *st,
			  const struct mesh_route *routes, size_t n, bool truncated, char **out,
			  size_t *len);

struct mesh_text_show {
	struct mesh_config cfg;
	struct mesh_stats stats;
	struct mesh_route *routes;    /* malloc'd; NULL when none */
	size_t n_routes;
	bool truncated;                  /* the daemon had more than it sent */
};

/* Parses a mesh-show reply (without its errno line). Keys it does not know
 * are skipped (a newer daemon may report more); at most
 * MESH_TEXT_MAX_ROUTES routes. 0 or -EINVAL/-EPROTO/-E2BIG/-ENOMEM with
 * *why; on failure out holds nothing to free. The fuzz entry point. */
int mesh_text_parse_show(const char *text, size_t len, struct mesh_text_show *out,
			 const char **why);
void mesh_text_show_free(struct mesh_text_show *show);

/* ---- mesh config file ---- */

/* One [Mesh] section: "Mode = off|unicast|multicast" (required, once),
 * "Prefix = CIDR[, CIDR]..." (repeatable; up to MESH_MAX_PREFIXES in all,
 * none twice or inside another; at least one unless the mode is off). Keys
 * and the section name are case-insensitive, '#' starts a comment, blanks
 * around keys and values are ignored. On failure *line is the 1-based line
 * at fault (0: the whole file) and *why the reason: -EINVAL, -E2BIG (over
 * MESH_TEXT_MAX_FILE). cfg is set only on success. The fuzz entry point. */
int mesh_text_parse_config(const char *text, size_t len, struct mesh_config *cfg, int *line,
			   const char **why);

/* ---- VM file ---- */

/* The VM addresses of a host, one port per line: "PORT [CIDR]..." with
 * blanks between words, '#' to the end of a line a comment. A port may
 * take several lines (its addresses add up); a port alone on a line is
 * listed with no address. */
struct mesh_text_vm {
	char port[PORT_NAME_MAX];
	struct ip_prefix addrs[PORT_MAX_ADDRS];
	size_t n_addrs;
};

/* *out is a malloc'd array of *n ports in the order they first appear
 * (NULL when none). No address twice in the file, at most PORT_MAX_ADDRS
 * per port and PORT_MAX ports. On failure *line is the 1-based line at
 * fault (0: the whole file), *why the reason: -EINVAL, -E2BIG, -ENOMEM.
 * The fuzz entry point. */
int mesh_text_parse_vm_file(const char *text, size_t len, struct mesh_text_vm **out, size_t *n,
			    int *line, const char **why);

/* ---- the sync plan ---- */

enum mesh_vm_step_kind {
	MESH_VM_STEP_DEL,     /* unregister addr (from have[port]) */
	MESH_VM_STEP_ADD,     /* register addr to want[port] */
};

struct mesh_vm_step {
	enum mesh_vm_step_kind kind;
	size_t port;          /* DEL: index in have; ADD: index in want */
	size_t from;          /* ADD of a moved address: its port in have;
			       * DEL of a moved address: where it goes in want;
			       * else SIZE_MAX */
	struct ip_prefix addr;
};

/* Turns the addresses of the ports a host has into want's: the ports want
 * names get exactly their addresses there, every other port none. New
 * addresses are added before anything is removed (a VM renumbered gains
 * the new address first); an address that changes port is unregistered
 * just before it is registered to its new port (it can be on one port
 * only); an address that stays is never touched; where a port has no room
 * for its additions (PORT_MAX_ADDRS), its departing addresses go first.
 * Consecutive steps of one kind (and, for additions, one port) can go in
 * one request. *steps is malloc'd (NULL when none); the counts are per
 * address. 0, -ENOENT (*bad: the index in want of a port have does not
 * have), -ENOMEM. */
struct mesh_vm_plan_counts {
	size_t added, moved, removed, unchanged;
};
int mesh_text_vm_plan(const struct mesh_text_vm *want, size_t n_want, const struct port_info *have,
		      size_t n_have, struct mesh_vm_step **steps, size_t *n_steps,
		      struct mesh_vm_plan_counts *counts, size_t *bad);

#endif
