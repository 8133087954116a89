/* The text forms of the mesh: vm-add, vm-del and mesh-set bodies, the
 * mesh-show reply, mesh config files and VM files (docs/cli.md). The plan
 * `weft vm sync` applies is mesh/plan.c.
 *
 * Security model: a request body comes from any program that can open the
 * root-only control socket, a reply from whatever answers on it, a file
 * from disk; all are untrusted. Parsers read exactly [text, text+len),
 * copy a value only after checking its length, and bound every count
 * (addresses, prefixes, ports, routes) before it grows anything. */
#include "mesh/text.h"
#include "mesh/lease.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "pkt/prefix.h"
#include "text/text.h"

/* ---- values ------------------------------------------------------------ */

bool mesh_text_in_prefix(const struct mesh_config *cfg, const struct ip_prefix *a)
{
	for (size_t i = 0; i < cfg->n_prefixes && i < MESH_MAX_PREFIXES; i++)
		if (ip_prefix_contains(&cfg->prefixes[i], a))
			return true;
	return false;
}

static const char *const mode_names[] = {
	[MESH_OFF] = "off",
	[MESH_UNICAST] = "unicast",
	[MESH_MULTICAST] = "multicast",
};
enum { N_MODES = sizeof(mode_names) / sizeof(mode_names[0]) };

const char *mesh_text_mode_name(enum mesh_mode mode)
{
	return (unsigned int)mode < N_MODES ? mode_names[mode] : NULL;
}

static bool parse_mode(const char *v, size_t n, enum mesh_mode *mode)
{
	for (unsigned int i = 0; i < N_MODES; i++) {
		if (strlen(mode_names[i]) == n && !memcmp(v, mode_names[i], n)) {
			*mode = (enum mesh_mode)i;
			return true;
		}
	}
	return false;
}

void mesh_text_key_base64(const uint8_t key[32], char out[MESH_TEXT_KEY_LEN])
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;

	/* 30 bytes in ten groups of three, then 2 bytes and one '='. */
	for (size_t i = 0; i < 30; i += 3) {
		uint32_t w = (uint32_t)key[i] << 16 | (uint32_t)key[i + 1] << 8 | key[i + 2];

		out[o++] = abc[w >> 18 & 63];
		out[o++] = abc[w >> 12 & 63];
		out[o++] = abc[w >> 6 & 63];
		out[o++] = abc[w & 63];
	}
	{
		uint32_t w = (uint32_t)key[30] << 16 | (uint32_t)key[31] << 8;

		out[o++] = abc[w >> 18 & 63];
		out[o++] = abc[w >> 12 & 63];
		out[o++] = abc[w >> 6 & 63];
		out[o++] = '=';
	}
	out[o] = '\0';
}

void mesh_text_key_line(struct text_buf *b, const char *name, const uint8_t key[32])
{
	text_buf_printf(b, "%s=", name);
	for (size_t k = 0; k < 32; k++)
		text_buf_printf(b, "%02x", key[k]);
	text_buf_add(b, "\n", 1);
}

static bool parse_key_hex(const char *v, size_t n, uint8_t key[32])
{
	if (n != 64)
		return false;
	for (size_t i = 0; i < 32; i++) {
		int hi = text_hexval(v[2 * i]), lo = text_hexval(v[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		key[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

/* Adds p to a mesh's prefix list: none twice, none inside another. */
static int add_prefix(struct ip_prefix *list, size_t *n, const char *v, size_t vn,
		      const char **why)
{
	struct ip_prefix p;
	int ret = ip_prefix_parse(v, vn, MESH_TEXT_CIDR, &p, why);

	if (ret)
		return ret;
	if (*n >= MESH_MAX_PREFIXES) {
		*why = "too many prefixes (8 at most)";
		return -EINVAL;
	}
	for (size_t i = 0; i < *n; i++) {
		if (ip_prefix_equal(&list[i], &p)) {
			*why = "prefix given twice";
			return -EINVAL;
		}
		if (ip_prefix_contains(&list[i], &p) || ip_prefix_contains(&p, &list[i])) {
			*why = "a prefix overlaps another";
			return -EINVAL;
		}
	}
	list[(*n)++] = p;
	return 0;
}

/* ---- lines ------------------------------------------------------------- */

static bool key_is(const char *k, size_t kn, const char *want)
{
	return strlen(want) == kn && !memcmp(k, want, kn);
}

/* The next key=value line of a request body: 1 with it (*k, *kn the key),
 * 0 at the end, or -EPROTO with *why for a line without '='. */
static int next_kv(const char *text, size_t len, size_t *off, const char **k, size_t *kn,
		   const char **v, size_t *vn, const char **why)
{
	size_t n;

	if (!text_next_line(text, len, off, k, &n))
		return 0;
	if (!text_split_kv(*k, n, kn, v, vn)) {
		*why = "a line without '='";
		return -EPROTO;
	}
	return 1;
}

/* ---- vm-add and vm-del ------------------------------------------------- */

int mesh_text_parse_vm_request(const char *text, size_t len, bool with_port,
			       struct mesh_text_vm_request *out, const char **why)
{
	size_t max = with_port ? PORT_MAX_ADDRS : MESH_TEXT_MAX_DEL, off = 0, kn, vn;
	const char *line, *v, *unused;
	struct ip_prefix a;
	int ret;

	if (!why)
		why = &unused;
	memset(out, 0, sizeof(*out));
	while ((ret = next_kv(text, len, &off, &line, &kn, &v, &vn, why)) > 0) {
		ret = -EINVAL;
		if (with_port && key_is(line, kn, "port")) {
			if (out->port[0]) {
				*why = "key given twice";
				goto fail;
			}
			if (!port_name_ok(v, vn)) {
				*why = "bad port name (1-15 of a-z A-Z 0-9 . - _)";
				goto fail;
			}
			memcpy(out->port, v, vn);
			out->port[vn] = '\0';
		} else if (key_is(line, kn, "address")) {
			if ((ret = ip_prefix_parse(v, vn, MESH_TEXT_CIDR, &a, why)))
				goto fail;
			ret = -EINVAL;
			if (out->n_addrs >= max) {
				*why = with_port ? "too many addresses (16 at most)"
						 : "too many addresses (256 at most)";
				goto fail;
			}
			if (ip_prefix_listed(out->addrs, out->n_addrs, &a)) {
				*why = "address given twice";
				goto fail;
			}
			out->addrs[out->n_addrs++] = a;
		} else {
			*why = "unknown key";
			goto fail;
		}
	}
	if (ret < 0)
		goto fail;
	ret = -EINVAL;
	if (with_port && !out->port[0]) {
		*why = "no port";
		goto fail;
	}
	if (!out->n_addrs) {
		*why = "no address";
		goto fail;
	}
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return ret;
}

/* ---- lease-add --------------------------------------------------------- */

int mesh_text_parse_lease_request(const char *text, size_t len,
				  struct mesh_text_lease_request *out, const char **why)
{
	const char *line, *v, *unused;
	size_t off = 0, kn, vn;
	int ret;

	if (!why)
		why = &unused;
	memset(out, 0, sizeof(*out));
	while ((ret = next_kv(text, len, &off, &line, &kn, &v, &vn, why)) > 0) {
		ret = -EINVAL;
		if (!key_is(line, kn, "lease")) {
			*why = "unknown key";
			goto fail;
		}
		if (out->n == MESH_TEXT_MAX_LEASES) {
			*why = "too many leases (16 at most)";
			goto fail;
		}
		if ((ret = mesh_lease_parse(v, vn, &out->leases[out->n], why)))
			goto fail;
		out->n++;
	}
	if (ret < 0)
		goto fail;
	if (!out->n) {
		*why = "no lease";
		ret = -EINVAL;
		goto fail;
	}
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return ret;
}

/* ---- mesh-set ---------------------------------------------------------- */

int mesh_text_parse_set(const char *text, size_t len, struct mesh_text_set *out,
			const char **why)
{
	const char *line, *v, *unused;
	size_t off = 0, kn, vn;
	int ret;

	if (!why)
		why = &unused;
	memset(out, 0, sizeof(*out));
	while ((ret = next_kv(text, len, &off, &line, &kn, &v, &vn, why)) > 0) {
		ret = -EINVAL;
		if (key_is(line, kn, "mode")) {
			if (out->has_mode) {
				*why = "key given twice";
				goto fail;
			}
			if (!parse_mode(v, vn, &out->mode)) {
				*why = "mode must be off, unicast or multicast";
				goto fail;
			}
			out->has_mode = true;
		} else if (key_is(line, kn, "prefix")) {
			if ((ret = add_prefix(out->prefixes, &out->n_prefixes, v, vn, why)))
				goto fail;
		} else if (key_is(line, kn, "lease_key")) {
			if (out->set_lease_key) {
				*why = "key given twice";
				goto fail;
			}
			out->set_lease_key = true;
			out->has_lease_key = !(vn == 4 && !memcmp(v, "none", 4));
			if (out->has_lease_key && !parse_key_hex(v, vn, out->lease_key)) {
				*why = "bad lease_key (want 64 hex digits or none)";
				goto fail;
			}
		} else {
			*why = "unknown key";
			goto fail;
		}
	}
	if (ret < 0)
		goto fail;
	if (!out->has_mode && !out->n_prefixes && !out->set_lease_key) {
		*why = "nothing to set (want mode, prefix or lease_key)";
		ret = -EINVAL;
		goto fail;
	}
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return ret;
}

void mesh_text_apply_set(const struct mesh_text_set *set, struct mesh_config *cfg)
{
	if (set->has_mode)
		cfg->mode = set->mode;
	if (set->n_prefixes) {
		memset(cfg->prefixes, 0, sizeof(cfg->prefixes));
		memcpy(cfg->prefixes, set->prefixes, set->n_prefixes * sizeof(set->prefixes[0]));
		cfg->n_prefixes = set->n_prefixes;
	}
	if (set->set_lease_key) {
		cfg->has_lease_key = set->has_lease_key;
		memcpy(cfg->lease_key, set->lease_key, sizeof(cfg->lease_key));
	}
}

/* ---- mesh-show --------------------------------------------------------- */

#define MESH_COUNTER(name) { #name, offsetof(struct mesh_stats, name) },
const struct mesh_text_counter mesh_text_counters[] = {
	MESH_COUNTERS(MESH_COUNTER)
	MESH_COUNTER(locations)
	MESH_COUNTER(pending)
	MESH_COUNTER(leases)
};
#undef MESH_COUNTER
const size_t mesh_text_n_counters = sizeof(mesh_text_counters) / sizeof(mesh_text_counters[0]);
_Static_assert(sizeof(mesh_text_counters) / sizeof(mesh_text_counters[0]) ==
		       sizeof(struct mesh_stats) / sizeof(uint64_t),
	       "every field of struct mesh_stats is a counter of the reply");

static uint64_t *counter_at(struct mesh_stats *st, size_t i)
{
	return (uint64_t *)((char *)st + mesh_text_counters[i].offset);
}

int mesh_text_format_show(const struct mesh_config *cfg, const struct mesh_stats *st,
			  const struct mesh_route *routes, size_t n, bool truncated, char **out,
			  size_t *len)
{
	const char *mode = mesh_text_mode_name(cfg->mode);
	char s[IP_PREFIX_STRLEN];
	struct text_buf b = { 0 };

	text_buf_printf(&b, "mode=%s\n", mode ? mode : "off");
	for (size_t i = 0; i < cfg->n_prefixes && i < MESH_MAX_PREFIXES; i++) {
		ip_prefix_format(&cfg->prefixes[i], s);
		text_buf_printf(&b, "prefix=%s\n", s);
	}
	if (cfg->has_lease_key)
		mesh_text_key_line(&b, "lease_key", cfg->lease_key);
	for (size_t i = 0; i < mesh_text_n_counters; i++)
		text_buf_printf(&b, "%s=%llu\n", mesh_text_counters[i].key,
				(unsigned long long)*counter_at((struct mesh_stats *)st, i));
	text_buf_printf(&b, "routes_truncated=%s\n", truncated ? "true" : "false");
	for (size_t i = 0; i < n; i++) {
		ip_prefix_format(&routes[i].prefix, s);
		text_buf_printf(&b, "route=%s\n", s);
		if (!routes[i].negative)
			mesh_text_key_line(&b, "holder", routes[i].holder);
		text_buf_printf(&b, "negative=%s\nseq=%llu\n", routes[i].negative ? "true" : "false",
				(unsigned long long)routes[i].seq);
	}
	*out = NULL;
	*len = 0;
	return text_buf_finish(&b, out, len);
}

static int find_counter(const char *k, size_t kn)
{
	for (size_t i = 0; i < mesh_text_n_counters; i++)
		if (key_is(k, kn, mesh_text_counters[i].key))
			return (int)i;
	return -1;
}

static bool parse_bool(const char *v, size_t n, bool *out)
{
	if (n == 4 && !memcmp(v, "true", 4))
		*out = true;
	else if (n == 5 && !memcmp(v, "false", 5))
		*out = false;
	else
		return false;
	return true;
}

/* A route block ended: a holder, or negative, never both. */
static int finish_route(const struct mesh_route *r, bool has_holder, const char **why)
{
	if (r->negative == has_holder) {
		*why = has_holder ? "a negative route with a holder" : "a route without a holder";
		return -EINVAL;
	}
	return 0;
}

/* One line of a route block. Unknown keys are skipped. */
static int route_line(struct mesh_route *r, bool *has_holder, const char *k, size_t kn,
		      const char *v, size_t vn, const char **why)
{
	if (key_is(k, kn, "holder")) {
		if (*has_holder || !parse_key_hex(v, vn, r->holder)) {
			*why = "bad holder (want one key of 64 hex digits)";
			return -EINVAL;
		}
		*has_holder = true;
	} else if (key_is(k, kn, "negative")) {
		if (!parse_bool(v, vn, &r->negative)) {
			*why = "bad negative (want true or false)";
			return -EINVAL;
		}
	} else if (key_is(k, kn, "seq")) {
		if (!text_parse_u64(v, vn, UINT64_MAX, &r->seq)) {
			*why = "bad seq";
			return -EINVAL;
		}
	}
	return 0;
}

/* One line before the routes. Unknown keys are skipped. */
static int show_line(struct mesh_text_show *s, bool *has_mode, const char *k, size_t kn,
		     const char *v, size_t vn, const char **why)
{
	int c;

	if (key_is(k, kn, "mode")) {
		if (*has_mode || !parse_mode(v, vn, &s->cfg.mode)) {
			*why = "bad mode";
			return -EINVAL;
		}
		*has_mode = true;
	} else if (key_is(k, kn, "prefix")) {
		return add_prefix(s->cfg.prefixes, &s->cfg.n_prefixes, v, vn, why);
	} else if (key_is(k, kn, "lease_key")) {
		if (s->cfg.has_lease_key || !parse_key_hex(v, vn, s->cfg.lease_key)) {
			*why = "bad lease_key (want one key of 64 hex digits)";
			return -EINVAL;
		}
		s->cfg.has_lease_key = true;
	} else if (key_is(k, kn, "routes_truncated")) {
		if (!parse_bool(v, vn, &s->truncated)) {
			*why = "bad routes_truncated (want true or false)";
			return -EINVAL;
		}
	} else if ((c = find_counter(k, kn)) >= 0) {
		if (!text_parse_u64(v, vn, UINT64_MAX, counter_at(&s->stats, (size_t)c))) {
			*why = "bad counter value";
			return -EINVAL;
		}
	}
	return 0;
}

int mesh_text_parse_show(const char *text, size_t len, struct mesh_text_show *out,
			 const char **why)
{
	const char *line, *v, *unused;
	size_t off = 0, n, kn, vn, cap = 0;
	struct mesh_route *r = NULL, *grown;
	bool has_mode = false, has_holder = false;
	struct ip_prefix a;
	int ret;

	if (!why)
		why = &unused;
	memset(out, 0, sizeof(*out));
	while (text_next_line(text, len, &off, &line, &n)) {
		if (!text_split_kv(line, n, &kn, &v, &vn)) {
			*why = "a line without '='";
			ret = -EPROTO;
			goto fail;
		}
		if (key_is(line, kn, "route")) {
			if (r && (ret = finish_route(r, has_holder, why)))
				goto fail;
			if ((ret = ip_prefix_parse(v, vn, MESH_TEXT_CIDR, &a, why)))
				goto fail;
			if (out->n_routes == MESH_TEXT_MAX_ROUTES) {
				*why = "more routes than 1000";
				ret = -E2BIG;
				goto fail;
			}
			if (out->n_routes == cap) {
				cap = cap ? 2 * cap : 16;
				grown = realloc(out->routes, cap * sizeof(*grown));
				if (!grown) {
					*why = "out of memory";
					ret = -ENOMEM;
					goto fail;
				}
				out->routes = grown;
			}
			r = &out->routes[out->n_routes++];
			memset(r, 0, sizeof(*r));
			r->prefix = a;
			has_holder = false;
			continue;
		}
		ret = r ? route_line(r, &has_holder, line, kn, v, vn, why)
			: show_line(out, &has_mode, line, kn, v, vn, why);
		if (ret)
			goto fail;
	}
	if (r && (ret = finish_route(r, has_holder, why)))
		goto fail;
	if (!has_mode) {
		*why = "no mode";
		ret = -EINVAL;
		goto fail;
	}
	if (!out->n_routes) {
		free(out->routes);
		out->routes = NULL;
	}
	return 0;
fail:
	free(out->routes);
	memset(out, 0, sizeof(*out));
	return ret;
}

void mesh_text_show_free(struct mesh_text_show *show)
{
	free(show->routes);
	memset(show, 0, sizeof(*show));
}

/* ---- mesh config file -------------------------------------------------- */

/* "Prefix = a, b, c": each comma-separated item in turn. */
static int config_prefixes(struct mesh_config *cfg, const char *v, size_t vn,
			   const char **why)
{
	const char *item, *comma;
	size_t in;
	int ret;

	for (;;) {
		comma = memchr(v, ',', vn);
		item = v;
		in = comma ? (size_t)(comma - v) : vn;
		text_trim(&item, &in);
		if (!in) {
			*why = "empty item in a list";
			return -EINVAL;
		}
		ret = add_prefix(cfg->prefixes, &cfg->n_prefixes, item, in, why);
		if (ret || !comma)
			return ret;
		vn -= (size_t)(comma - v) + 1;
		v = comma + 1;
	}
}

int mesh_text_parse_config(const char *text, size_t len, struct mesh_config *cfg, int *line,
			   const char **why)
{
	struct mesh_config c;
	const char *l, *hash, *v, *unused;
	size_t off = 0, ln, kn, vn;
	int lineno = 0, section_line = 0, dummy, ret = -EINVAL;
	bool has_mode = false;

	if (!why)
		why = &unused;
	if (!line)
		line = &dummy;
	*line = 0;
	memset(&c, 0, sizeof(c));
	if (len > MESH_TEXT_MAX_FILE) {
		*why = "file larger than 1 MiB";
		return -E2BIG;
	}
	while (text_next_line(text, len, &off, &l, &ln)) {
		*line = ++lineno;
		if (memchr(l, '\0', ln)) {
			*why = "a NUL byte";
			return -EINVAL;
		}
		hash = memchr(l, '#', ln);
		if (hash)
			ln = (size_t)(hash - l);
		text_trim(&l, &ln);
		if (!ln)
			continue;
		if (l[0] == '[') {
			if (ln != 6 || strncasecmp(l, "[Mesh]", 6)) {
				*why = "unknown section (only [Mesh])";
				return -EINVAL;
			}
			if (section_line) {
				*why = "a second [Mesh] section";
				return -EINVAL;
			}
			section_line = lineno;
			continue;
		}
		if (!text_split_kv(l, ln, &kn, &v, &vn)) {
			*why = "a line without '='";
			return -EINVAL;
		}
		text_trim(&l, &kn);
		text_trim(&v, &vn);
		if (!section_line) {
			*why = "a key outside the [Mesh] section";
			return -EINVAL;
		}
		if (!vn) {
			*why = "empty value";
			return -EINVAL;
		}
		if (kn == 4 && !strncasecmp(l, "Mode", 4)) {
			if (has_mode) {
				*why = "Mode given twice";
				return -EINVAL;
			}
			if (!parse_mode(v, vn, &c.mode)) {
				*why = "Mode must be off, unicast or multicast";
				return -EINVAL;
			}
			has_mode = true;
		} else if (kn == 6 && !strncasecmp(l, "Prefix", 6)) {
			if ((ret = config_prefixes(&c, v, vn, why)))
				return ret;
		} else if (kn == 8 && !strncasecmp(l, "LeaseKey", 8)) {
			if (c.has_lease_key) {
				*why = "LeaseKey given twice";
				return -EINVAL;
			}
			if (mesh_lease_parse_key(v, vn, c.lease_key)) {
				*why = "LeaseKey must be an Ed25519 public key in base64 (weft lease pubkey)";
				return -EINVAL;
			}
			c.has_lease_key = true;
		} else {
			*why = "unknown key (Mode, Prefix or LeaseKey)";
			return -EINVAL;
		}
	}
	*line = section_line;
	if (!section_line) {
		*why = "no [Mesh] section";
		return -EINVAL;
	}
	if (!has_mode) {
		*why = "no Mode";
		return -EINVAL;
	}
	if (c.mode != MESH_OFF && !c.n_prefixes) {
		*why = "a mesh needs at least one Prefix";
		return -EINVAL;
	}
	*line = 0;
	*cfg = c;
	return 0;
}

/* ---- VM files ---------------------------------------------------------- */

/* The next blank-separated word of [*s, *s + *n). */
static bool next_word(const char **s, size_t *n, const char **w, size_t *wn)
{
	while (*n && text_is_blank(**s)) {
		(*s)++;
		(*n)--;
	}
	if (!*n)
		return false;
	*w = *s;
	while (*n && !text_is_blank(**s)) {
		(*s)++;
		(*n)--;
	}
	*wn = (size_t)(*s - *w);
	return true;
}

static bool listed(const struct mesh_text_vm *vms, size_t n, const struct ip_prefix *a)
{
	for (size_t i = 0; i < n; i++)
		if (ip_prefix_listed(vms[i].addrs, vms[i].n_addrs, a))
			return true;
	return false;
}

/* The port named [w, w + wn) in vms, added at the end when new. */
static int vm_port(struct mesh_text_vm **vms, size_t *count, size_t *cap, const char *w,
		   size_t wn, struct mesh_text_vm **out, const char **why)
{
	struct mesh_text_vm *grown;

	if (!port_name_ok(w, wn)) {
		*why = "bad port name (1-15 of a-z A-Z 0-9 . - _)";
		return -EINVAL;
	}
	for (size_t i = *count; i-- > 0;) {
		if (strlen((*vms)[i].port) == wn && !memcmp((*vms)[i].port, w, wn)) {
			*out = &(*vms)[i];
			return 0;
		}
	}
	if (*count == PORT_MAX) {
		*why = "more than 256 ports";
		return -E2BIG;
	}
	if (*count == *cap) {
		*cap = *cap ? 2 * *cap : 8;
		grown = realloc(*vms, *cap * sizeof(*grown));
		if (!grown) {
			*why = "out of memory";
			return -ENOMEM;
		}
		*vms = grown;
	}
	*out = &(*vms)[(*count)++];
	memset(*out, 0, sizeof(**out));
	memcpy((*out)->port, w, wn);
	return 0;
}

int mesh_text_parse_vm_file(const char *text, size_t len, struct mesh_text_vm **out, size_t *n,
			    int *line, const char **why)
{
	struct mesh_text_vm *vms = NULL, *vm;
	const char *l, *hash, *w, *unused;
	size_t off = 0, ln, wn, count = 0, cap = 0;
	int lineno = 0, dummy, ret;
	struct ip_prefix a;

	if (!why)
		why = &unused;
	if (!line)
		line = &dummy;
	*line = 0;
	if (len > MESH_TEXT_MAX_FILE) {
		*why = "file larger than 1 MiB";
		ret = -E2BIG;
		goto fail;
	}
	while (text_next_line(text, len, &off, &l, &ln)) {
		*line = ++lineno;
		if (memchr(l, '\0', ln)) {
			*why = "a NUL byte";
			ret = -EINVAL;
			goto fail;
		}
		hash = memchr(l, '#', ln);
		if (hash)
			ln = (size_t)(hash - l);
		if (!next_word(&l, &ln, &w, &wn))
			continue;
		if ((ret = vm_port(&vms, &count, &cap, w, wn, &vm, why)))
			goto fail;
		while (next_word(&l, &ln, &w, &wn)) {
			if ((ret = ip_prefix_parse(w, wn, MESH_TEXT_CIDR, &a, why)))
				goto fail;
			ret = -EINVAL;
			if (listed(vms, count, &a)) {
				*why = "address listed twice";
				goto fail;
			}
			if (vm->n_addrs == PORT_MAX_ADDRS) {
				*why = "more than 16 addresses for one port";
				goto fail;
			}
			vm->addrs[vm->n_addrs++] = a;
		}
	}
	*line = 0;
	*out = vms;
	*n = count;
	return 0;
fail:
	free(vms);
	*out = NULL;
	*n = 0;
	return ret;
}
